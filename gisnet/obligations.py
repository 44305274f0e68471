"""Who must connect: connection-distance obligations, connection zone, frontage.

Each parcel is measured the way the town's profile (``[connection]``) says:

``property_line``
    planar distance from the parcel polygon to the nearest eligible main's
    centreline (0 when they touch), as Poughkeepsie § 168-22.2G measures.
``building``
    straight-line distance from the building footprint (or point) to the
    centreline, as Berlin sec. 16-50 measures. Without a buildings layer the
    parcel stands in for its building and the result is ``approximate``; the
    building is then at least as far as the parcel, and at most the parcel
    distance plus the parcel's bounding-box diagonal, so a result is left to
    ``review`` only when those two bounds fall either side of the limit.
    With several buildings on a parcel the nearest is measured; where the rule
    covers newly constructed buildings only, the newest building within the
    limit of the sewer in the street the parcel abuts is measured instead (an
    old house near the street does not hide a new building behind it).

Only eligible mains count: public, active, gravity (kind != force) mains of a
kind in the profile's ``eligible_kinds``. Storm, private, inactive, abandoned,
proposed and force mains never make a parcel ``required``.

The abutting test: the parcel (within ``abutting_tolerance_ft``) touches a
street or right-of-way that holds an eligible main. Streets may be polygons or
centrelines; centrelines are widened by ``width_ft / 2`` (the profile's
``default_street_width_ft`` where the width is missing). A street holds a
main that runs along it: it covers the main, or two of the main's points at
1/4, 1/2 and 3/4 of its length; where those points cannot settle it, the
street holds the main if half of the main, or a stretch longer than 2 street
widths, lies in it (one long main through several street segments). A main
merely crossing a street or ending in an intersection does not make that
street sewered. The test is run for the parcels not already connected (for
connected parcels ``abuts_sewered_street`` is null). Without a streets layer
the test is skipped and each reason says so.

"Within N ft" is ``<=`` N ft, tested on the distance in feet with a tolerance
of :data:`DISTANCE_TOLERANCE_FT` (a distance that prints as 300.00 ft is
within 300 ft, whatever the CRS's foot).

Units: every distance is in feet (``*_ft``), converted from the working CRS's
unit with ``town.ft_per_unit``; coordinates (``nearest_x`` ...) are in the
town's working CRS.

Nearest mains are found for all parcels at once with
:meth:`shapely.STRtree.query_nearest` (split over threads: shapely releases
the GIL); ties are resolved by the lowest ``main_id`` so results are
deterministic.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise, repeat
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from shapely import STRtree

from .errors import ConfigError, CRSError, NotFoundError
from .schema import column_names
from .town import Town

log = logging.getLogger(__name__)

#: Tolerance (ft) of the ``<=`` distance test: half a hundredth of a foot.
DISTANCE_TOLERANCE_FT = 0.005
#: A street "holds" a main when this fraction of the main lies in it ...
HOLD_FRACTION = 0.5
#: ... or a stretch longer than this many street widths does.
HOLD_WIDTHS = 2.0

STATUSES = ("connected", "required", "not_required", "review")

OBLIGATION_COLUMNS = [
    "parcel_id", "building_id", "main_id", "distance_ft", "within_distance",
    "abuts_sewered_street", "status", "deadline_days", "septic_deadline", "measure",
    "section", "reason", "approximate", "distance_limit_ft", "abutting_main_id",
    "abutting_distance_ft", "nearest_x", "nearest_y", "from_x", "from_y", "built_date",
    "sewer_available_date", "profile",
]


# --------------------------------------------------------------------------- helpers


class _Clock:
    """Wall-clock seconds of consecutive phases (for the debug log and benchmarks)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self.t, 3)
        self.t = now

    def __str__(self) -> str:
        return ", ".join(f"{k} {v:.2f} s" for k, v in self.laps.items())


def default_threads() -> int:
    """Threads used for the nearest-main search (2 on a 2-core machine)."""
    return max(1, min(4, os.cpu_count() or 1))


def _chunked(n: int, threads: int, func: Callable[[int, int], Any]) -> list[Any]:
    """Run ``func(lo, hi)`` over ``range(n)`` in chunks, on ``threads`` threads."""
    if n == 0:
        return []
    if threads <= 1 or n < 20_000:
        return [func(0, n)]
    nchunks = threads * 4
    bounds = np.linspace(0, n, nchunks + 1).astype(int)
    with ThreadPoolExecutor(max_workers=threads) as ex:
        futs = [ex.submit(func, int(lo), int(hi)) for lo, hi in pairwise(bounds) if hi > lo]
        return [f.result() for f in futs]


def nearest(
    sources: np.ndarray,
    targets: np.ndarray,
    target_rank: np.ndarray,
    *,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest target of every source geometry, ties resolved by lowest rank.

    Parameters
    ----------
    sources, targets
        Arrays of shapely geometries in one projected CRS.
    target_rank
        Integer rank of each target (e.g. the order of its id); among targets
        at the same distance the lowest rank wins.
    threads
        Threads to split the sources over (default :func:`default_threads`).

    Returns
    -------
    (index, distance)
        Per source: position of the nearest target (-1 when the source is empty
        or there are no targets) and the distance in CRS units (NaN then).
    """
    n = len(sources)
    out_j = np.full(n, -1, dtype=np.int64)
    out_d = np.full(n, np.nan)
    if n == 0 or len(targets) == 0:
        return out_j, out_d
    tree = STRtree(targets)

    def work(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        (ii, jj), d = tree.query_nearest(sources[lo:hi], all_matches=True, return_distance=True)
        return ii + lo, jj, d

    parts = _chunked(n, threads or default_threads(), work)
    ii = np.concatenate([p[0] for p in parts])
    jj = np.concatenate([p[1] for p in parts])
    dd = np.concatenate([p[2] for p in parts])
    if len(ii) > 1 and (np.any(np.diff(ii) <= 0)):  # ties (all_matches): keep the lowest rank
        order = np.lexsort((target_rank[jj], ii))
        ii, jj, dd = ii[order], jj[order], dd[order]
        first = np.r_[True, ii[1:] != ii[:-1]]
        ii, jj, dd = ii[first], jj[first], dd[first]
    out_j[ii] = jj
    out_d[ii] = dd
    return out_j, out_d


def _threaded_pairs(func: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray,
                    b: np.ndarray, threads: int) -> np.ndarray:
    """A vectorised shapely binary function over aligned arrays, on threads."""
    parts = _chunked(len(a), threads, lambda lo, hi: func(a[lo:hi], b[lo:hi]))
    if not parts:
        return np.empty(0, dtype=object)
    return np.concatenate(parts)


def _threaded_query(tree: STRtree, geoms: np.ndarray, threads: int,
                    distance: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (input index, tree index) within ``distance`` (CRS units; 0: intersecting),
    the query split over threads."""
    def work(lo: int, hi: int) -> np.ndarray:
        if distance > 0:
            r = tree.query(geoms[lo:hi], predicate="dwithin", distance=distance)
        else:
            r = tree.query(geoms[lo:hi], predicate="intersects")
        r[0] += lo
        return r

    parts = _chunked(len(geoms), threads, work)
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    r = np.concatenate(parts, axis=1)
    return r[0], r[1]


def _expand_pairs(p: np.ndarray, s: np.ndarray, hs: np.ndarray, hm: np.ndarray,
                  n_streets: int) -> tuple[np.ndarray, np.ndarray]:
    """Join (parcel, street) with (street, main) on the street: (parcel, main) pairs.

    A parcel abutting two streets that hold the same main gets the pair twice;
    that does not change the nearest.
    """
    order = np.argsort(hs, kind="stable")
    hs, hm = hs[order], hm[order]
    start = np.searchsorted(hs, np.arange(n_streets))
    count = np.bincount(hs, minlength=n_streets)
    c = count[s]
    pp = np.repeat(p, c)
    # position of each expanded row inside its street's block of mains
    offs = np.arange(len(pp)) - np.repeat(np.cumsum(c) - c, c)
    mm = hm[np.repeat(start[s], c) + offs]
    return pp, mm


def _bool_col(df: pd.DataFrame, col: str, default: bool) -> np.ndarray:
    if col not in df.columns:
        return np.full(len(df), default)
    return df[col].astype("boolean").fillna(default).to_numpy(dtype=bool)


def _text(s: pd.Series) -> pd.Series:
    """A text column as object dtype with None for missing."""
    return s.astype(object).where(s.notna(), None)


def eligible_mask(mains: gpd.GeoDataFrame, profile: Any) -> np.ndarray:
    """Mains that count for connection: public, active, gravity, eligible kind.

    ``public`` and ``active`` are the loader's columns when present, else
    derived from ``owner`` (not private) and ``status`` (active or null).
    """
    kinds = set(profile.connection.eligible_kinds) - {"force"}
    if "public" in mains.columns:
        public = _bool_col(mains, "public", True)
    else:
        public = (_text(mains["owner"]).str.lower() != "private").to_numpy(dtype=bool)
    if "active" in mains.columns:
        active = _bool_col(mains, "active", True)
    else:
        st = _text(mains["status"])
        active = (st.isna() | (st.str.lower() == "active")).to_numpy(dtype=bool)
    kind = _text(mains["kind"]).fillna("unknown").str.lower()
    ok = kind.isin(sorted(kinds)).to_numpy(dtype=bool)
    geom_ok = ~(shapely.is_missing(mains.geometry.values) | shapely.is_empty(mains.geometry.values))
    return public & active & ok & geom_ok


def _check_town(town: Town) -> None:
    if town.crs is None or not town.crs.is_projected:
        raise CRSError("obligations need a projected working CRS (distances in feet)",
                       layer="parcels")
    if town.profile is None or isinstance(town.profile, str):
        from .profile import DEFAULT_PROFILE, load_profile

        name = town.profile or DEFAULT_PROFILE
        if town.profile is None:
            log.warning("town %s names no jurisdiction profile; using %s", town.name, name)
        town.profile = load_profile(name)


def _select_parcels(town: Town, parcels: Any) -> gpd.GeoDataFrame:
    base = town.layers["parcels"]
    if parcels is None:
        return base.reset_index(drop=True)
    if isinstance(parcels, gpd.GeoDataFrame):
        out = parcels
        if out.crs is not None and town.crs is not None and not out.crs.equals(town.crs):
            out = out.to_crs(town.crs)
        for c in column_names("parcels"):
            if c not in out.columns:
                out = out.assign(**{c: None})
        return out.reset_index(drop=True)
    if isinstance(parcels, str):
        parcels = [parcels]
    ids = [str(p) for p in parcels]
    have = base["parcel_id"].astype(str)
    missing = sorted(set(ids) - set(have))
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise NotFoundError(f"{len(missing)} parcel id(s) not in the parcels layer: {shown}",
                            layer="parcels", feature=missing[0])
    return base[have.isin(ids).to_numpy()].reset_index(drop=True)


def _street_areas(town: Town, tol_units: float, *, near: STRtree | None = None,
                  threads: int = 1) -> tuple[np.ndarray, np.ndarray] | None:
    """Street areas (polygons; centrelines widened) and their width in CRS units.

    With ``near`` (a tree of parcels), only the streets within reach of those
    parcels are built; the others are None.
    """
    streets = town.layer("streets")
    if streets is None or len(streets) == 0:
        return None
    prof = town.profile.connection
    width_ft = (streets["width_ft"].astype("float64") if "width_ft" in streets.columns
                else pd.Series(np.nan, index=streets.index))
    width_ft = width_ft.where(width_ft > 0, prof.default_street_width_ft).to_numpy()
    width_u = width_ft / town.ft_per_unit
    g = np.asarray(streets.geometry.values, dtype=object)
    keep = ~(shapely.is_missing(g) | shapely.is_empty(g))
    if near is not None:
        reach = float(np.max(width_u)) / 2.0 + tol_units * 2 + 1e-6
        sk, _ = _threaded_query(near, g, threads, distance=reach)
        close = np.zeros(len(g), dtype=bool)
        close[sk] = True
        keep &= close
    areas = np.full(len(g), None, dtype=object)
    gt = shapely.get_type_id(g)
    is_line = keep & np.isin(gt, (1, 2, 5))  # LineString, LinearRing, MultiLineString
    areas[keep] = g[keep]
    if is_line.any():
        areas[is_line] = shapely.buffer(g[is_line], width_u[is_line] / 2.0, cap_style="flat")
    ok = ~(shapely.is_missing(areas) | shapely.is_empty(areas))
    return np.where(ok, areas, None), width_u


def _holding_pairs(areas: np.ndarray, width_u: np.ndarray, mains: np.ndarray,
                   threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(street, main) index pairs where the street holds the main.

    A street holds a main that it covers, or when two of the main's points at
    1/4, 1/2 and 3/4 of its length lie in it (a main crossing the street, or
    ending in an intersection, has at most one). Pairs the samples cannot
    settle (one point inside; or none inside but a main longer than four times
    :data:`HOLD_WIDTHS` street widths) are measured exactly: held when at least
    half of the main, or a stretch longer than :data:`HOLD_WIDTHS` street
    widths, lies in the street (e.g. a long main through several segments).
    """
    if len(areas) == 0 or len(mains) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    si, mi = _threaded_query(STRtree(mains), areas, threads)
    shapely.prepare(areas)
    held = shapely.covers(areas[si], mains[mi])
    rest = np.flatnonzero(~held)
    if len(rest):
        um, inv = np.unique(mi[rest], return_inverse=True)
        fr = np.array([0.25, 0.5, 0.75])
        pts = _chunked(len(um), threads, lambda lo, hi: shapely.get_coordinates(
            shapely.line_interpolate_point(np.repeat(mains[um[lo:hi]], 3),
                                           np.tile(fr, hi - lo), normalized=True)))
        xy = np.concatenate(pts).reshape(len(um), 3, 2)[inv]  # per rest pair
        ar = areas[si[rest]]
        inside = sum(shapely.contains_xy(ar, xy[:, q, 0], xy[:, q, 1]).astype(int)
                     for q in range(3))
        held[rest] = inside >= 2
        # measured exactly: pairs the samples cannot settle. With no sample inside,
        # the part inside (a convex street) lies within a quarter of the main, too
        # short to hold it unless the main is longer than 4 x HOLD_WIDTHS widths.
        mlen = shapely.length(mains[mi[rest]])
        w = width_u[si[rest]]
        ex = rest[(inside == 1) | ((inside == 0) & (mlen > 4 * HOLD_WIDTHS * w))]
        if len(ex):
            r_m, r_s = mains[mi[ex]], areas[si[ex]]
            inter = shapely.length(_threaded_pairs(shapely.intersection, r_m, r_s, threads))
            mlen = shapely.length(r_m)
            held[ex] = (inter > 0) & (inter >= np.minimum(HOLD_FRACTION * mlen,
                                                           HOLD_WIDTHS * width_u[si[ex]]))
    return si[held], mi[held]


# --------------------------------------------------------------------------- measuring


def _building_rows(parcels: gpd.GeoDataFrame, b: gpd.GeoDataFrame) -> np.ndarray:
    """Row of the parcel each building stands on (-1 for none): by ``parcel_id``,
    else the parcel holding a point on the building's surface."""
    n = len(parcels)
    pgeom = parcels.geometry.values
    bgeom = b.geometry.values
    row = np.full(len(b), -1, dtype=np.int64)
    if "parcel_id" in b.columns:
        pos = pd.Series(np.arange(n), index=parcels["parcel_id"].astype(str).to_numpy())
        pos = pos[~pos.index.duplicated()]
        bp = _text(b["parcel_id"])
        has = bp.notna().to_numpy()
        row[has] = pos.reindex(bp[has].astype(str).to_numpy()).fillna(-1).to_numpy(np.int64)
    need = (row < 0) & ~(shapely.is_missing(bgeom) | shapely.is_empty(bgeom))
    if need.any():  # buildings without a (known) parcel id: the parcel holding them
        pts = shapely.point_on_surface(bgeom[need])
        bi, pi = STRtree(pgeom).query(pts, predicate="within")
        first = np.unique(bi, return_index=True)[1]
        idx = np.flatnonzero(need)
        row[idx[bi[first]]] = pi[first]
    return row


def _measured(town: Town, parcels: gpd.GeoDataFrame, measure: str
              ) -> tuple[np.ndarray, pd.DataFrame]:
    """Geometry to measure from, one per parcel row or one per building.

    Returns the geometries and a frame aligned with them: ``row`` (parcel row),
    ``building_id``, ``built_date``, ``approximate``.
    """
    n = len(parcels)
    pgeom = parcels.geometry.values
    buildings = town.layer("buildings")
    if measure != "building" or buildings is None:
        meta = pd.DataFrame({
            "row": np.arange(n), "building_id": pd.Series([None] * n, dtype=object),
            "built_date": pd.Series(pd.NaT, index=range(n), dtype="datetime64[ms]"),
            "approximate": np.full(n, measure == "building"),
        })
        if buildings is not None:  # the property line is measured; note the buildings
            b = buildings.reset_index(drop=True)
            row = _building_rows(parcels, b)
            ok = row >= 0
            bid = _text(b["building_id"]).to_numpy(dtype=object)[ok]
            first = pd.DataFrame({"row": row[ok], "bid": bid}).sort_values(
                ["row", "bid"], kind="stable").drop_duplicates("row")
            meta.loc[first["row"].to_numpy(), "building_id"] = first["bid"].to_numpy()
            meta["no_building"] = meta["building_id"].isna().to_numpy()
        return np.asarray(pgeom, dtype=object), meta
    b = buildings.reset_index(drop=True)
    bgeom = b.geometry.values
    row = _building_rows(parcels, b)
    keep = row >= 0
    meta = pd.DataFrame({
        "row": row[keep],
        "building_id": _text(b["building_id"]).to_numpy()[keep],
        "built_date": (b["built_date"].astype("datetime64[ms]").to_numpy()[keep]
                       if "built_date" in b.columns else np.full(keep.sum(), np.datetime64("NaT"))),
        "approximate": np.zeros(keep.sum(), dtype=bool),
    })
    geoms = np.asarray(bgeom, dtype=object)[keep]
    # parcels with no building: measured from the parcel, flagged
    empty = np.setdiff1d(np.arange(n), meta["row"].to_numpy())
    if len(empty):
        extra = pd.DataFrame({
            "row": empty, "building_id": pd.Series([None] * len(empty), dtype=object),
            "built_date": pd.Series(pd.NaT, index=range(len(empty)), dtype="datetime64[ms]"),
            "approximate": np.ones(len(empty), dtype=bool),
        })
        extra["no_building"] = True
        meta["no_building"] = False
        meta = pd.concat([meta, extra], ignore_index=True)
        geoms = np.concatenate([geoms, np.asarray(pgeom, dtype=object)[empty]])
    return geoms, meta


# --------------------------------------------------------------------------- main API


def compute_obligations(
    town: Town,
    *,
    parcels: Any = None,
    assume_abutting: bool = False,
    threads: int | None = None,
) -> dict[str, gpd.GeoDataFrame]:
    """Connection obligations of every parcel, by the town profile's measure.

    Parameters
    ----------
    town
        A loaded town (projected working CRS, profile with ``[connection]``).
    parcels
        None for every parcel; an iterable of parcel ids (unknown ids raise
        :class:`NotFoundError`); or a canonical parcels GeoDataFrame (e.g.
        geometry given to the HTTP service).
    assume_abutting
        Without a streets layer, treat parcels within the distance as
        abutting (status ``required``) instead of ``review``.
    threads
        Threads for the nearest-main search (default :func:`default_threads`).

    Returns
    -------
    dict
        ``obligations``: one row per parcel (parcel polygon geometry) with the
        columns of :data:`OBLIGATION_COLUMNS`; ``obligation_evidence``: one
        LineString per measured parcel joining the two nearest points (from
        the parcel/building to the main), with ``parcel_id``, ``building_id``,
        ``main_id``, ``distance_ft``, ``measure``, ``section``, ``status``.

    Raises
    ------
    CRSError
        The town's working CRS is not projected.
    NotFoundError
        A parcel id asked for does not exist.
    """
    _check_town(town)
    threads = threads or default_threads()
    prof = town.profile
    con = prof.connection
    fpu = float(town.ft_per_unit)
    limit_ft = float(con.distance_ft)
    measure = con.measure
    P = _select_parcels(town, parcels)
    n = len(P)
    pgeom = np.asarray(P.geometry.values, dtype=object)

    mains = town.layers["mains"].reset_index(drop=True)
    elig = eligible_mask(mains, prof)
    M = mains[elig].reset_index(drop=True)
    mgeom = np.asarray(M.geometry.values, dtype=object)
    mids = M["main_id"].astype(str).to_numpy()
    mrank = np.argsort(np.argsort(mids, kind="stable"), kind="stable")
    log.info("obligations: %d parcels, %d of %d mains eligible (%s)", n, len(M), len(mains),
             ", ".join(con.eligible_kinds))

    clock = _Clock()
    # ---- distances: one nearest search for every measured geometry
    geoms, meta = _measured(town, P, measure)
    j, d_u = nearest(geoms, mgeom, mrank, threads=threads)
    meta["j"] = j
    meta["distance_ft"] = d_u * fpu
    meta["geom_pos"] = np.arange(len(meta))
    all_geoms, all_meta = geoms, meta
    if measure == "building":  # one row per parcel: its nearest building (then lowest id)
        bid = meta["building_id"].astype(object).fillna("").astype(str).to_numpy()
        order = np.lexsort((bid, np.nan_to_num(meta["distance_ft"].to_numpy(), nan=np.inf),
                            meta["row"].to_numpy()))
        meta = meta.iloc[order]
        meta = meta[~meta["row"].duplicated()]
    else:
        meta = meta.sort_values("row", kind="stable")
    geoms = geoms[meta["geom_pos"].to_numpy()]
    meta = meta.reset_index(drop=True)
    if "no_building" not in meta.columns:
        meta["no_building"] = False
    j = meta["j"].to_numpy()
    dist_ft = meta["distance_ft"].to_numpy()
    found = j >= 0

    clock.lap("nearest")
    # ---- connected: parcels.connected, or a lateral serves the parcel
    connected, connected_by = _connected(town, P)
    clock.lap("connected")
    # ---- abutting test, for the parcels not connected
    tol_u = con.abutting_tolerance_ft / fpu
    abut = pd.array([pd.NA] * n, dtype="boolean")
    abut_j = np.full(n, -1, dtype=np.int64)
    abut_d = np.full(n, np.nan)
    cand = np.flatnonzero(~connected & found)
    st = town.layer("streets")
    have_streets = con.require_abutting and st is not None and len(st) > 0
    if have_streets and len(cand):
        ctree = STRtree(pgeom[cand])
        # widen only the streets near the parcels tested, unless that is most of them
        near = ctree if len(cand) < 0.2 * n else None
        areas, width_u = _street_areas(town, tol_u, near=near, threads=threads)  # type: ignore[misc]
        # streets each candidate parcel touches (street -> parcels: only streets are
        # prepared; a hair over the tolerance: GEOS may measure 5 ft as 5.000000000000001)
        sk, pc = _threaded_query(ctree, areas, threads, distance=tol_u * (1 + 1e-9) + 1e-9)
        touched = np.unique(sk)
        hs, mi = _holding_pairs(areas[touched], width_u[touched], mgeom, threads)
        si = touched[hs]
        sewered = np.zeros(len(areas), dtype=bool)
        sewered[si] = True
        hit = sewered[sk]
        abut_np = np.zeros(n, dtype=bool)
        abut_np[cand[pc[hit]]] = True
        abut = pd.array(abut_np, dtype="boolean")
        untested = np.ones(n, dtype=bool)
        untested[cand] = False
        abut[untested] = pd.NA
        # candidate mains: those held by a street the parcel abuts
        pp, mm = _expand_pairs(cand[pc[hit]], sk[hit], si, mi, len(areas))
        if len(pp):
            dd = _threaded_pairs(shapely.distance, geoms[pp], mgeom[mm], threads) * fpu
            order = np.lexsort((mrank[mm], dd, pp))  # per parcel: nearest, then lowest id
            pp, mm, dd = pp[order], mm[order], dd[order]
            first = np.r_[True, pp[1:] != pp[:-1]]
            abut_j[pp[first]] = mm[first]
            abut_d[pp[first]] = dd[first]

    clock.lap("abutting")
    if measure == "building" and con.applies_to == "new_buildings" and len(all_meta) > n:
        meta, geoms, abut_d = _newest_building(meta, geoms, all_meta, all_geoms, abut_j,
                                               mgeom, fpu, limit_ft, con.unknown_age)
        j = meta["j"].to_numpy()
        dist_ft = meta["distance_ft"].to_numpy()
        found = j >= 0
        clock.lap("newest building")
    # ---- evidence: the two nearest points
    lines = np.full(n, None, dtype=object)
    if found.any():
        lines[found] = _threaded_pairs(shapely.shortest_line, geoms[found], mgeom[j[found]],
                                       threads)
    coords = np.full((n, 4), np.nan)
    if found.any():  # shortest lines are two-point LineStrings: (from, to)
        coords[found] = shapely.get_coordinates(lines[found]).reshape(-1, 4)

    clock.lap("evidence")
    # ---- within the distance (with the approximate-measure bounds)
    approx = meta["approximate"].to_numpy(dtype=bool)
    lim = limit_ft + DISTANCE_TOLERANCE_FT
    within_lo = found & (dist_ft <= lim)            # lower bound within
    upper_ft = dist_ft.copy()
    if approx.any():
        b = shapely.bounds(pgeom[approx])
        diag = np.hypot(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) * fpu
        upper_ft[approx] = dist_ft[approx] + diag
    within_hi = found & (upper_ft <= lim)           # surely within
    uncertain = within_lo & ~within_hi               # approximate, straddles the limit
    within = pd.array(within_lo, dtype="boolean")
    within[uncertain] = pd.NA
    within[~found] = pd.NA

    # ---- age of the building (Berlin: newly constructed buildings)
    built = pd.to_datetime(meta["built_date"]).to_numpy()
    avail = _availability(P, M, j, abut_j)
    new_from = con.new_construction_from
    is_new = np.full(n, False)
    age_known = np.full(n, False)
    has_b = ~pd.isna(built)
    has_a = ~pd.isna(avail)
    k = has_b & has_a
    is_new[k] = built[k] >= avail[k]
    age_known |= k
    if new_from is not None:
        nf = np.datetime64(new_from, "ms")
        kk = has_b
        is_new[kk] |= built[kk] >= nf
        age_known |= kk

    res = _decide(
        town=town, n=n, found=found, dist_ft=dist_ft, within_lo=within_lo, uncertain=uncertain,
        approx=approx, upper_ft=upper_ft, abut=abut, abut_j=abut_j, abut_d=abut_d,
        have_streets=have_streets,
        assume_abutting=assume_abutting, connected=connected, connected_by=connected_by,
        no_building=meta["no_building"].to_numpy(dtype=bool), is_new=is_new,
        age_known=age_known, avail=avail, septic=_septic(P), mids=mids, j=j,
        land_use=_text(P["land_use"]).to_numpy(dtype=object),
    )

    septic_deadline = res.pop("septic_deadline")
    out = pd.DataFrame({
        "parcel_id": _text(P["parcel_id"]).to_numpy(),
        "building_id": meta["building_id"].to_numpy(dtype=object),
        "main_id": np.where(found, mids[np.maximum(j, 0)] if len(mids) else None, None),
        "distance_ft": dist_ft,
        "within_distance": within,
        "abuts_sewered_street": abut,
        # (object dtype: no copy of a million reasons into Arrow strings)
        "status": pd.Series(res["status"], dtype=object),
        "deadline_days": res["deadline_days"],
        "septic_deadline": septic_deadline,
        "measure": measure,
        "section": pd.Series(res["section"], dtype=object),
        "reason": pd.Series(res["reason"], dtype=object),
        "approximate": approx,
        "distance_limit_ft": limit_ft,
        "abutting_main_id": np.where(abut_j >= 0, mids[np.maximum(abut_j, 0)]
                                     if len(mids) else None, None),
        "abutting_distance_ft": abut_d,
        "nearest_x": coords[:, 2],
        "nearest_y": coords[:, 3],
        "from_x": coords[:, 0],
        "from_y": coords[:, 1],
        "built_date": pd.to_datetime(meta["built_date"]).astype("datetime64[ms]").to_numpy(),
        "sewer_available_date": avail,
        "profile": prof.id,
    })
    out = out[OBLIGATION_COLUMNS]
    ob = gpd.GeoDataFrame(out, geometry=gpd.GeoSeries(pgeom, crs=town.crs), crs=town.crs)
    ev = gpd.GeoDataFrame(
        out.loc[found, ["parcel_id", "building_id", "main_id", "distance_ft", "measure",
                        "section", "status"]].reset_index(drop=True),
        geometry=gpd.GeoSeries(lines[found], crs=town.crs), crs=town.crs,
    )
    clock.lap("age+decide+tables")
    log.debug("obligations timings: %s", clock)
    counts = ob["status"].value_counts().to_dict()
    log.info("obligations: %s", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return {"obligations": ob, "obligation_evidence": ev}


def _newest_building(meta: pd.DataFrame, geoms: np.ndarray, all_meta: pd.DataFrame,
                     all_geoms: np.ndarray, abut_j: np.ndarray, mgeom: np.ndarray,
                     fpu: float, limit_ft: float, unknown_age: str | None
                     ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Under a rule for newly constructed buildings, the building each parcel is
    judged by: its newest building within the limit of the sewer in the street it
    abuts (of its nearest sewer when it abuts none), not an older one nearer.

    ``meta``/``geoms`` hold one row per parcel (its nearest building); ``all_*``
    every measured building. Unknown built dates rank as ``unknown_age`` treats
    them (newest unless "existing"). Returns the chosen rows, their geometries and
    their distances (ft) to the abutting main (NaN where the parcel abuts none).
    """
    rows = all_meta["row"].to_numpy()
    aj = abut_j[rows]
    d_sel = all_meta["distance_ft"].to_numpy(dtype=float).copy()
    has = aj >= 0
    d_ab = np.full(len(rows), np.nan)
    if has.any():
        d_ab[has] = shapely.distance(all_geoms[has], mgeom[aj[has]]) * fpu
        d_sel[has] = d_ab[has]
    d_sel = np.nan_to_num(d_sel, nan=np.inf)
    inside = d_sel <= limit_ft + DISTANCE_TOLERANCE_FT
    bd = all_meta["built_date"].astype("datetime64[ms]").to_numpy()
    nat = pd.isna(bd)
    age = np.where(nat, -np.inf if unknown_age == "existing" else np.inf,
                   bd.astype("datetime64[ms]").astype(np.int64).astype(float))
    age = np.where(inside, age, 0.0)  # beyond the limit: the nearest one, as before
    bid = all_meta["building_id"].astype(object).fillna("").astype(str).to_numpy()
    order = np.lexsort((bid, d_sel, -age, ~inside, rows))
    first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
    first = first[np.argsort(rows[first], kind="stable")]
    out = all_meta.iloc[first].reset_index(drop=True)
    for c in meta.columns:  # columns added after the nearest search (no_building ...)
        if c not in out.columns:
            out[c] = meta[c].to_numpy()
    return out[meta.columns], all_geoms[first], d_ab[first]


def _connected(town: Town, P: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    n = len(P)
    by = np.full(n, None, dtype=object)
    flag = _bool_col(P, "connected", False) if "connected" in P.columns else np.zeros(n, bool)
    by[flag] = "Already connected: the parcels layer marks it connected."
    lat = town.layer("laterals")
    if lat is None or len(lat) == 0 or n == 0:
        return flag, by
    lat = lat.reset_index(drop=True)
    lid = _text(lat["lateral_id"]).fillna("?").astype(str).to_numpy()
    hit_rows: list[np.ndarray] = []
    hit_lat: list[np.ndarray] = []
    pos = pd.Series(np.arange(n), index=P["parcel_id"].astype(str).to_numpy())
    pos = pos[~pos.index.duplicated()]
    lp = _text(lat["parcel_id"]) if "parcel_id" in lat.columns else pd.Series([None] * len(lat))
    has = lp.notna().to_numpy()
    if has.any():
        r = pos.reindex(lp[has].astype(str).to_numpy()).to_numpy()
        ok = ~np.isnan(r)
        hit_rows.append(r[ok].astype(np.int64))
        hit_lat.append(np.flatnonzero(has)[ok])
    geo = ~has & ~(shapely.is_missing(lat.geometry.values) | shapely.is_empty(lat.geometry.values))
    if geo.any():
        # the parcel the lateral comes from: the one holding its house end (the end
        # farther from the mains), not every parcel the line crosses on its way
        li, pi = STRtree(np.asarray(P.geometry.values, dtype=object)).query(
            _house_ends(town, np.asarray(lat.geometry.values[geo], dtype=object)),
            predicate="intersects")
        hit_rows.append(pi)
        hit_lat.append(np.flatnonzero(geo)[li])
    if hit_rows:
        rows = np.concatenate(hit_rows)
        lats = np.concatenate(hit_lat)
        order = np.lexsort((lid[lats], rows))
        rows, lats = rows[order], lats[order]
        first = np.r_[True, rows[1:] != rows[:-1]] if len(rows) else np.zeros(0, bool)
        rows, lats = rows[first], lats[first]
        new = ~flag[rows]
        by[rows[new]] = np.array([f"Already connected: lateral {x} serves it."
                                  for x in lid[lats[new]]], dtype=object)
        flag = flag.copy()
        flag[rows] = True
    return flag, by


def _house_ends(town: Town, lines: np.ndarray) -> np.ndarray:
    """The house end of each lateral: of its first and last points, the one
    farther from the nearest main (any main of the mains layer)."""
    starts = shapely.get_point(lines, 0)
    ends = shapely.get_point(lines, -1)
    mg = np.asarray(town.layers["mains"].geometry.values, dtype=object)
    mg = mg[~(shapely.is_missing(mg) | shapely.is_empty(mg))]
    if len(mg) == 0:
        return starts
    tree = STRtree(mg)
    _, d_start = tree.query_nearest(starts, return_distance=True, all_matches=False)
    _, d_end = tree.query_nearest(ends, return_distance=True, all_matches=False)
    return np.where(d_end > d_start, ends, starts)


def _septic(P: gpd.GeoDataFrame) -> pd.arrays.BooleanArray:
    if "septic" not in P.columns:
        return pd.array([pd.NA] * len(P), dtype="boolean")
    return pd.array(P["septic"].astype("boolean").to_numpy(), dtype="boolean")


def _availability(P: gpd.GeoDataFrame, M: gpd.GeoDataFrame, j: np.ndarray,
                  abut_j: np.ndarray) -> np.ndarray:
    """Date the sewer became available: parcels.sewer_available_date, else the
    install date of the (abutting, else nearest) main."""
    n = len(P)
    out = np.full(n, np.datetime64("NaT", "ms"))
    if "sewer_available_date" in P.columns:
        out = pd.to_datetime(P["sewer_available_date"]).astype("datetime64[ms]").to_numpy()
    if "install_date" in M.columns and len(M):
        inst = pd.to_datetime(M["install_date"]).astype("datetime64[ms]").to_numpy()
        jj = np.where(abut_j >= 0, abut_j, j)
        fill = pd.isna(out) & (jj >= 0)
        out = out.copy()
        out[fill] = inst[jj[fill]]
    return out


def _ft_text(x: np.ndarray) -> np.ndarray:
    """Distances as text, ``123.4 ft`` (vectorised)."""
    x = np.asarray(x, dtype=float)
    txt = np.empty(len(x), dtype=object)
    # (numpy's float -> str conversion is several times slower than str.format)
    txt[:] = [f"{v:.1f} ft" for v in x.tolist()]
    txt[np.isnan(x)] = "? ft"
    return txt


def _join(parts: tuple[Any, ...], mask: np.ndarray | None = None) -> np.ndarray:
    """Row-wise concatenation of string arrays and constants (one ``str.join`` per
    row: repeated array ``+`` would copy each growing text once per part)."""
    k = int(mask.sum()) if mask is not None else len(next(
        p for p in parts if isinstance(p, np.ndarray)))
    cols = [(p[mask] if mask is not None else p).tolist() if isinstance(p, np.ndarray)
            else repeat(p, k) for p in parts]
    out = np.empty(k, dtype=object)
    out[:] = ["".join(t) for t in zip(*cols, strict=True)]
    return out


class _Reasons:
    """Status, section, deadlines and reasons filled case by case with masks.

    Each case applies to the parcels its mask selects that no earlier case
    has decided (first match wins), so the order of :meth:`case` calls is the
    order of the rules.
    """

    def __init__(self, n: int, section: str) -> None:
        self.open = np.ones(n, dtype=bool)
        self.status = np.full(n, "not_required", dtype=object)
        self.section = np.full(n, section, dtype=object)
        self.deadline = np.full(n, -1, dtype=np.int64)
        self.reason = np.full(n, None, dtype=object)
        self.n = n

    def case(self, mask: np.ndarray, status: str, *parts: Any, deadline: int | None = None,
             section: str | None = None) -> np.ndarray:
        m = mask & self.open
        if not m.any():
            return m
        self.open &= ~m
        self.status[m] = status
        if deadline is not None:
            self.deadline[m] = deadline
        if section is not None:
            self.section[m] = section
        if len(parts) == 1 and isinstance(parts[0], np.ndarray):
            self.reason[m] = parts[0][m]
            return m
        self.reason[m] = _join(parts, m)
        return m


def _choose(mask: np.ndarray, yes: str, no: str) -> np.ndarray:
    """An object array of two strings by a mask (``np.where`` on Python strings
    would build a fixed-width unicode array as wide as the longer one)."""
    out = np.full(len(mask), no, dtype=object)
    out[mask] = yes
    return out


def _decide(**k: Any) -> dict[str, Any]:
    """Status, section, deadlines and the one-sentence reason of every parcel.

    Vectorised over parcels: every rule is a boolean mask (see :class:`_Reasons`).
    """
    town: Town = k["town"]
    con = town.profile.connection
    n = k["n"]
    limit = float(con.distance_ft)
    lim = limit + DISTANCE_TOLERANCE_FT
    L = f"{limit:g} ft"
    measure_txt = "property line" if con.measure == "property_line" else "building"
    sec = con.section
    mids, j = k["mids"], k["j"]
    found, dist, within_lo, uncertain = k["found"], k["dist_ft"], k["within_lo"], k["uncertain"]
    approx, abut, abut_j, abut_d = k["approx"], k["abut"], k["abut_j"], k["abut_d"]
    abut_np = abut.fillna(False).to_numpy(dtype=bool)
    have_streets = k["have_streets"] and con.require_abutting
    is_new, age_known, avail = k["is_new"], k["age_known"], k["avail"]
    septic = k["septic"].fillna(False).to_numpy(dtype=bool)
    years = con.septic_max_years
    unknown_age = con.unknown_age or "review"
    R = _Reasons(n, sec)
    conn_by = np.asarray(k["connected_by"], dtype=object)
    R.case(k["connected"], "connected", conn_by)
    # the texts below are only built for the parcels still to decide
    need = R.open & found
    ix = np.flatnonzero(need)

    def part(values: Any) -> np.ndarray:
        out = np.full(n, "", dtype=object)
        out[ix] = values
        return out

    approx_n = approx[ix]
    approx_note = part(_choose(approx_n, " (no buildings layer: measured from the parcel; "
                               "the building is at least as far)", ""))
    upper_s = part(_ft_text(k["upper_ft"][ix]))
    m_s = part(mids[j[ix]] if len(mids) else "")
    d_s = part(_ft_text(dist[ix]))
    am_s = part(mids[np.maximum(abut_j[ix], 0)] if len(mids) else "")
    ad_s = part(_ft_text(abut_d[ix]))
    other = (abut_np & (abut_j >= 0) & (abut_j != j))[ix]
    from_n = _choose(approx_n, "the parcel, standing in for the building",
                     f"the {measure_txt}")
    where_n = _join(("main ", m_s[ix], " is ", d_s[ix], " from ", from_n))
    if other.any():
        where_n[other] = _join((where_n[other], "; the sewer in the street it abuts is main ",
                                am_s[ix][other], " at ", ad_s[ix][other]))
    where = part(where_n)
    from_txt = part(from_n)
    if have_streets:
        abut_txt = "on a street it abuts"
    elif con.require_abutting:
        abut_txt = "abutting assumed (no streets layer)"
    else:
        abut_txt = "abutting not required by the profile"

    if len(mids) == 0:
        R.case(~found, "not_required", "No eligible public sanitary gravity main in the town, "
               f"so nothing requires a connection under {sec}.")
    R.case(~found, "review", "The parcel has no usable geometry, so it could not be measured.")
    unoccupied = tuple(con.unoccupied_land_uses or ())
    idle = k["no_building"] & np.isin(k["land_use"], unoccupied)
    if unoccupied:
        R.case(idle, "not_required", "No building on the parcel and its land use is ",
               part(k["land_use"][ix]), f": {sec} applies to property used for human "
               "occupancy, employment or recreation (main ", m_s, " is ", d_s, " from the "
               "parcel).")
    if con.measure == "building":
        # an occupied land use with no footprint: more likely a gap in the buildings
        # layer than an empty lot, so a person checks it
        occupied = k["no_building"] & ~idle & ~pd.isna(k["land_use"])
        R.case(occupied, "review", "Land use is ", part(k["land_use"][ix]), " but the "
               f"buildings layer shows no building on the parcel; {sec} measures from the "
               "building: check the buildings layer (the parcel is ", d_s, " from main ",
               m_s, ").")
        R.case(k["no_building"], "not_required", f"No building on the parcel; {sec} measures "
               "from the building (the parcel is ", d_s, " from main ", m_s, ").")
    R.case(~within_lo, "not_required", "Nearest eligible main ", m_s, " is ", d_s,
           " from ", from_txt, f", beyond the {L} of {sec}", approx_note, ".")
    if have_streets:
        # a main across the lot itself (an easement) may be a right-of-way in the
        # ordinance's sense: not for gisnet to decide
        R.case(~abut_np & (dist <= 0.01), "review", "Main ", m_s, " runs through or along "
               "the parcel (0 ft), but the parcel abuts no street holding a public sanitary "
               f"sewer: if the main lies in an easement or right-of-way across the lot, {sec} "
               "applies; check.")
        R.case(~abut_np, "not_required", f"Within {L} (", where, "), but the parcel abuts no "
               f"street or right-of-way holding a public sanitary sewer ({sec}).")
        R.case(~(abut_d <= lim), "not_required", f"Within {L} (", where, "), but the sewer in "
               "the street it abuts (main ", am_s, ") is ", ad_s, f" away, beyond {L} ({sec}).")
    elif con.require_abutting and not k["assume_abutting"]:
        R.case(np.ones(n, bool), "review", f"Within {L} (", where, "), but the abutting test "
               "was skipped (no streets layer): check that the parcel abuts the street holding "
               f"the sewer ({sec}).")
    R.case(uncertain, "review", f"Possibly within {L} (", where, "; without a buildings "
           "layer the building may be up to ", upper_s, f" away): measure the building to "
           f"decide ({sec}).")

    septic_deadline = np.full(n, np.datetime64("NaT", "ms"))
    if con.applies_to == "new_buildings":
        new = age_known & is_new
        if unknown_age == "new":
            new = new | ~age_known
        R.case(new, "required", _choose(age_known, "Newly constructed building",
                                        "Building of unknown age treated as newly "
                                        "constructed"),
               f" within {L} (", where, f", {abut_txt}): connect within {con.deadline_days} "
               f"days after official notice ({sec}).", deadline=con.deadline_days)
        existing = age_known & ~is_new
        if unknown_age == "existing":
            existing = existing | ~age_known
        dated = ~pd.isna(avail)
        if years:
            septic_deadline = _add_years(avail, years)
            dl_s = pd.Series(septic_deadline).dt.strftime("%Y-%m-%d").fillna("").to_numpy(
                dtype=object)
            plumbing = _choose(septic, "existing plumbing (septic)", "existing plumbing")
            m_dated = R.case(
                existing & dated, "required", f"Existing building within {L} (", where,
                f", {abut_txt}); {sec} covers newly constructed buildings, so the ",
                plumbing, " must connect by ", dl_s, f", {years} years after the sewer "
                "became available, or sooner if the City finds the septic system a health "
                f"hazard ({con.septic_section}).", section=con.septic_section)
            R.case(existing, "review", f"Existing building within {L} (", where,
                   f", {abut_txt}); {sec} covers newly constructed buildings and the date the "
                   f"sewer became available is unknown, so the {years}-year limit cannot be "
                   f"dated ({con.septic_section}).", section=con.septic_section)
            if_existing = np.where(dated, "; if it is existing, it must connect by " + dl_s
                                   + f" ({con.septic_section})", "").astype(object)
        else:
            R.case(existing, "not_required", f"Existing building within {L} (", where,
                   f", {abut_txt}); {sec} covers newly constructed buildings only.")
            if_existing = np.full(n, "", dtype=object)
            m_dated = np.zeros(n, dtype=bool)
        m_unknown = R.case(np.ones(n, bool), "review", f"Within {L} (", where,
                           f", {abut_txt}), but whether the building is newly constructed "
                           f"({sec}) cannot be told: its built date or the date the sewer "
                           "became available is missing", if_existing, ".")
        keep = m_dated | (m_unknown & dated)
        septic_deadline = np.where(keep, septic_deadline, np.datetime64("NaT", "ms"))
    else:
        notice = f" {con.notice_condition}" if con.notice_condition else ""
        septic_txt = _choose(septic, " The parcel is on a private system"
                             + (f"; {con.septic_rule}" if con.septic_rule else "."), "")
        R.case(np.ones(n, bool), "required", f"Within {L} (", where, f", {abut_txt}): connect "
               f"within {con.deadline_days} days after official notice ({sec}).{notice}",
               septic_txt, deadline=con.deadline_days)
    deadline = pd.array(R.deadline, dtype="Int64")
    deadline[R.deadline < 0] = pd.NA
    return {"status": R.status, "section": R.section, "deadline_days": deadline,
            "septic_deadline": septic_deadline.astype("datetime64[ms]"), "reason": R.reason}


def _add_years(d: np.ndarray, years: int) -> np.ndarray:
    """Dates plus whole calendar years (29 February -> 28 February), NaT kept."""
    s = pd.Series(pd.to_datetime(d))
    out = s + pd.DateOffset(years=years)
    return out.astype("datetime64[ms]").to_numpy()


# --------------------------------------------------------------------------- zone


def connection_zone(town: Town) -> gpd.GeoDataFrame:
    """The area within the profile's distance of the eligible mains.

    With ``include_manholes`` the public, active manholes are buffered too.
    Under the ``property_line`` measure a parcel that touches the zone is
    within the distance; under ``building`` a building inside it is.

    Returns
    -------
    geopandas.GeoDataFrame
        One row: ``distance_ft``, ``measure``, ``section``, ``profile``,
        ``mains_count``, ``area_acres``; (Multi)Polygon in the working CRS.
    """
    _check_town(town)
    con = town.profile.connection
    mains = town.layers["mains"]
    geoms = np.asarray(mains.geometry.values[eligible_mask(mains, town.profile)], dtype=object)
    count = len(geoms)
    mh = town.layer("manholes")
    if con.include_manholes and mh is not None and len(mh):
        ok = _bool_col(mh, "public", True) & _bool_col(mh, "active", True)
        geoms = np.concatenate([geoms, np.asarray(mh.geometry.values[ok], dtype=object)])
    d_u = con.distance_ft / town.ft_per_unit
    zone = shapely.union_all(shapely.buffer(geoms, d_u, quad_segs=16)) if len(geoms) else \
        shapely.Polygon()
    area_acres = shapely.area(zone) * town.ft_per_unit ** 2 / 43_560.0
    return gpd.GeoDataFrame(
        {"distance_ft": [float(con.distance_ft)], "measure": [con.measure],
         "section": [con.section], "profile": [town.profile.id], "mains_count": [count],
         "area_acres": [float(area_acres)]},
        geometry=gpd.GeoSeries([zone], crs=town.crs), crs=town.crs,
    )


# --------------------------------------------------------------------------- frontage


def _corridors(town: Town, M: gpd.GeoDataFrame, *, fallback_all: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The street strips each main runs in.

    Returns ``(main_index, strip, approximate)``: one row per strip piece (a
    main running through several street segments has several), and per main
    whether its strip is approximate. With streets, a strip is the street area
    (grown by the abutting tolerance) within a street width of the main, cut
    square at the main's ends; a main in no street has no strip unless
    ``fallback_all``. Without streets (or as the fallback) the strip is the
    profile's default street width centred on the main (``approximate``).
    """
    con = town.profile.connection
    fpu = town.ft_per_unit
    tol_u = con.abutting_tolerance_ft / fpu
    mgeom = np.asarray(M.geometry.values, dtype=object)
    n = len(mgeom)
    half = con.default_street_width_ft / 2.0 / fpu + tol_u
    streets = _street_areas(town, tol_u)
    if streets is None:
        strips = shapely.buffer(mgeom, half, cap_style="flat") if n else mgeom
        return np.arange(n), np.asarray(strips, dtype=object), np.ones(n, dtype=bool)
    areas, width_u = streets
    si, mi = _holding_pairs(areas, width_u, mgeom)
    grown = shapely.buffer(areas[si], tol_u) if tol_u > 0 else areas[si]
    reach = shapely.buffer(mgeom[mi], width_u[si] + tol_u, cap_style="flat")
    cm, cg = mi, np.asarray(shapely.intersection(grown, reach), dtype=object)
    approx = np.zeros(n, dtype=bool)
    if fallback_all:
        none = np.setdiff1d(np.arange(n), mi)
        if len(none):
            cm = np.concatenate([cm, none])
            cg = np.concatenate([cg, np.asarray(
                shapely.buffer(mgeom[none], half, cap_style="flat"), dtype=object)])
            approx[none] = True
    return cm, cg, approx


def _frontage_pairs(town: Town, P: gpd.GeoDataFrame, M: gpd.GeoDataFrame,
                    cm: np.ndarray, cg: np.ndarray) -> pd.DataFrame:
    """Front footage of every (parcel, main) pair along the main, in feet.

    The parcel boundary inside the main's street strip is projected onto the
    main; the frontage is the length of main it spans (so the short ends of
    side lot lines that dip into the strip add nothing, and overlapping strip
    pieces count once).
    """
    empty = pd.DataFrame({"p": np.empty(0, np.int64), "m": np.empty(0, np.int64),
                          "frontage_ft": np.empty(0)})
    ok = ~(shapely.is_missing(cg) | shapely.is_empty(cg)) if len(cg) else np.zeros(0, bool)
    if not ok.any() or len(P) == 0:
        return empty
    cm, cg = cm[ok], cg[ok]
    bnd = shapely.boundary(np.asarray(P.geometry.values, dtype=object))
    pi, ci = STRtree(cg).query(bnd, predicate="intersects")
    if len(pi) == 0:
        return empty
    mi = cm[ci]
    pieces = shapely.intersection(bnd[pi], cg[ci])
    xy, k = shapely.get_coordinates(pieces, return_index=True)
    if len(k) == 0:
        return empty
    mgeom = np.asarray(M.geometry.values, dtype=object)
    loc = shapely.line_locate_point(mgeom[mi[k]], shapely.points(xy))
    s = pd.DataFrame({"p": pi[k], "m": mi[k], "loc": loc}).groupby(["p", "m"])["loc"].agg(
        ["min", "max"]).reset_index()
    df = pd.DataFrame({"p": s["p"].to_numpy(), "m": s["m"].to_numpy(),
                       "frontage_ft": (s["max"] - s["min"]).to_numpy() * town.ft_per_unit})
    return df[df["frontage_ft"] > DISTANCE_TOLERANCE_FT].reset_index(drop=True)


def frontage(town: Town) -> gpd.GeoDataFrame:
    """Front footage of each parcel along sewered streets.

    A street is sewered where it holds an eligible main (see the module
    notes); each parcel's frontage along each such main is the length of main
    its boundary spans inside the street strip, summed over the mains. Without
    a streets layer a strip of the profile's default street width centred on
    each main stands in for the street and the result is ``approximate``.

    Returns
    -------
    geopandas.GeoDataFrame
        Parcels with frontage: ``parcel_id``, ``frontage_ft``, ``mains``
        (comma-separated main ids), ``approximate``, ``section``, and the parcel
        geometry.
    """
    _check_town(town)
    P = town.layers["parcels"].reset_index(drop=True)
    mains = town.layers["mains"]
    M = mains[eligible_mask(mains, town.profile)].reset_index(drop=True)
    cm, cg, approx = _corridors(town, M, fallback_all=False)
    pairs = _frontage_pairs(town, P, M, cm, cg)
    mids = M["main_id"].astype(str).to_numpy()
    pairs["main_id"] = mids[pairs["m"].to_numpy()] if len(pairs) else []
    pairs["approximate"] = approx[pairs["m"].to_numpy()] if len(pairs) else []
    g = pairs.sort_values(["p", "main_id"]).groupby("p").agg(
        frontage_ft=("frontage_ft", "sum"), mains=("main_id", ",".join),
        approximate=("approximate", "any"))
    rows = g.index.to_numpy(dtype=np.int64)
    return gpd.GeoDataFrame(
        {"parcel_id": _text(P["parcel_id"]).to_numpy()[rows],
         "frontage_ft": g["frontage_ft"].to_numpy(dtype=float),
         "mains": g["mains"].to_numpy(dtype=object),
         "approximate": g["approximate"].to_numpy(dtype=bool),
         "section": town.profile.connection.frontage_section},
        geometry=gpd.GeoSeries(P.geometry.values[rows], crs=town.crs), crs=town.crs,
    )


def frontage_shares(town: Town, main_id: str, cost: float) -> pd.DataFrame:
    """Each abutting parcel's pro-rata share of a main's cost by front footage.

    Berlin's rule for sewers laid at the City's expense (the profile's
    ``frontage_section``): abutting owners pay their pro rata share of the
    line, based on street front footage.

    Parameters
    ----------
    town
        The town.
    main_id
        The main (any main of the mains layer; a warning is logged when it is
        not an eligible public sanitary main).
    cost
        Cost of the line, in dollars.

    Returns
    -------
    pandas.DataFrame
        ``main_id``, ``parcel_id``, ``frontage_ft``, ``share`` (fraction),
        ``share_usd``, ``approximate``, ``section``; sorted by parcel id. The
        shares sum to ``cost``.

    Raises
    ------
    NotFoundError
        No main with that id.
    ConfigError
        Negative or non-finite cost.
    """
    _check_town(town)
    if not np.isfinite(cost) or cost < 0:
        raise ConfigError(f"cost must be a non-negative number of dollars, not {cost!r}")
    mains = town.layers["mains"].reset_index(drop=True)
    hit = mains["main_id"].astype(str) == str(main_id)
    if not hit.any():
        raise NotFoundError(f"main {main_id!r} not found", layer="mains", feature=main_id)
    if not eligible_mask(mains, town.profile)[hit.to_numpy()].any():
        log.warning("main %s is not an eligible public sanitary gravity main", main_id)
    M = mains[hit].reset_index(drop=True).iloc[:1]
    cm, cg, approx = _corridors(town, M, fallback_all=True)
    P = town.layers["parcels"].reset_index(drop=True)
    pairs = _frontage_pairs(town, P, M, cm, cg)
    total = float(pairs["frontage_ft"].sum())
    share = pairs["frontage_ft"].to_numpy() / total if total > 0 else np.zeros(len(pairs))
    out = pd.DataFrame({
        "main_id": str(main_id),
        "parcel_id": _text(P["parcel_id"]).to_numpy()[pairs["p"].to_numpy()],
        "frontage_ft": pairs["frontage_ft"].to_numpy(),
        "share": share,
        "share_usd": share * float(cost),
        "approximate": bool(approx[0]),
        "section": town.profile.connection.frontage_section,
    })
    return out.sort_values("parcel_id", kind="stable").reset_index(drop=True)


def select_ids(values: Iterable[Any]) -> list[str]:
    """Parcel ids as strings, without blanks or repeats, in order."""
    seen: dict[str, None] = {}
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        s = str(v).strip()
        if s:
            seen.setdefault(s, None)
    return list(seen)
