"""Measuring: the eligible mains, what is measured from, and the facts about each parcel.

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
    limit of the sewer in the street the parcel abuts is measured instead
    (:func:`newest_building`).

Besides distances this module finds the other facts the rules read: whether
a parcel is already connected (:func:`connected`), the date the sewer became
available (:func:`availability`) and whether its building is new
(:func:`building_age`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from shapely import STRtree

from ..errors import CRSError
from ..io.ids import first_positions
from ..rules import is_eligible_for_connection, within
from ..town import Town
from .spatial import flag_values, text_values

if TYPE_CHECKING:  # pragma: no cover
    from ..profile import Profile


def check_town(town: Town) -> None:
    """Refuse a town whose working CRS is not projected (distances must be in feet).

    Raises
    ------
    CRSError
        No CRS, or a geographic one.
    """
    if town.crs is None or not town.crs.is_projected:
        raise CRSError("obligations need a projected working CRS (distances in feet)",
                       layer="parcels")


def eligible_mask(mains: gpd.GeoDataFrame, profile: Profile) -> np.ndarray:
    """Mains an obligation is measured to: eligible for connection and with a geometry.

    Eligibility is :func:`gisnet.rules.is_eligible_for_connection` with the
    profile's ``connection.eligible_kinds`` (public, active, gravity, an
    eligible kind; a main of unknown kind counts as sanitary, as in the
    graph's ``eligible`` edge attribute); a main without geometry cannot be
    measured to.
    """
    g = mains.geometry.values
    has_geometry = ~(shapely.is_missing(g) | shapely.is_empty(g))
    return is_eligible_for_connection(mains, profile.connection.eligible_kinds) & has_geometry


@dataclass
class EligibleMains:
    """The eligible mains, re-indexed 0..k-1 (positions used everywhere below).

    Attributes
    ----------
    frame
        The eligible rows of the mains layer.
    geoms
        Their geometries.
    ids
        Their ``main_id`` as text.
    rank
        Rank of each id in text order: ties between mains at the same
        distance go to the lowest id.
    total
        Number of mains in the layer (eligible or not).
    """

    frame: gpd.GeoDataFrame
    geoms: np.ndarray
    ids: np.ndarray
    rank: np.ndarray
    total: int

    @classmethod
    def of(cls, town: Town) -> EligibleMains:
        mains = town.layers["mains"].reset_index(drop=True)
        M = mains[eligible_mask(mains, town.profile)].reset_index(drop=True)
        ids = M["main_id"].astype(str).to_numpy()
        rank = np.argsort(np.argsort(ids, kind="stable"), kind="stable")
        return cls(M, np.asarray(M.geometry.values, dtype=object), ids, rank, len(mains))

    def id_at(self, j: np.ndarray) -> np.ndarray:
        """Main id at each position, None where the position is -1."""
        j = np.asarray(j)
        if not len(self.ids):
            return np.full(len(j), None, dtype=object)
        out = self.ids[np.maximum(j, 0)].astype(object)
        out[j < 0] = None
        return out


def building_rows(parcels: gpd.GeoDataFrame, b: gpd.GeoDataFrame) -> np.ndarray:
    """Row of the parcel each building stands on (-1 for none): by ``parcel_id``,
    else the parcel holding a point on the building's surface."""
    n = len(parcels)
    pgeom = parcels.geometry.values
    bgeom = b.geometry.values
    row = np.full(len(b), -1, dtype=np.int64)
    if "parcel_id" in b.columns and isinstance(b["parcel_id"].dtype, pd.StringDtype) \
            and isinstance(parcels["parcel_id"].dtype, pd.StringDtype):
        row[:] = first_positions(parcels["parcel_id"], b["parcel_id"])  # as Arrow codes
    elif "parcel_id" in b.columns:
        pos = pd.Series(np.arange(n), index=parcels["parcel_id"].astype(str).to_numpy())
        pos = pos[~pos.index.duplicated()]
        bp = text_values(b["parcel_id"])
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


def measured_geometries(town: Town, parcels: gpd.GeoDataFrame, measure: str,
                        rows: np.ndarray | None = None) -> tuple[np.ndarray, pd.DataFrame]:
    """Geometry to measure from, one per parcel row or one per building.

    ``rows``: :func:`building_rows` of ``parcels`` and the town's buildings, when
    the caller has them (made here when None).

    Returns the geometries and a frame aligned with them: ``row`` (parcel row),
    ``building_id``, ``built_date``, ``approximate``, ``no_building``.
    """
    n = len(parcels)
    pgeom = parcels.geometry.values
    buildings = town.layer("buildings")
    if measure != "building" or buildings is None:
        meta = pd.DataFrame({
            "row": np.arange(n), "building_id": pd.Series([None] * n, dtype=object),
            "built_date": pd.Series(pd.NaT, index=range(n), dtype="datetime64[ms]"),
            "approximate": np.full(n, measure == "building"),
            "no_building": np.zeros(n, dtype=bool),
            "use": pd.Series([None] * n, dtype=object),
        })
        if buildings is not None:  # the property line is measured; note the buildings
            b = buildings.reset_index(drop=True)
            row = building_rows(parcels, b) if rows is None else rows
            ok = row >= 0
            bid = text_values(b["building_id"]).to_numpy(dtype=object)[ok]
            use = text_values(b["use"]).to_numpy(dtype=object)[ok] if "use" in b.columns \
                else np.full(int(ok.sum()), None, dtype=object)
            first = pd.DataFrame({"row": row[ok], "bid": bid, "use": use}).sort_values(
                ["row", "bid"], kind="stable").drop_duplicates("row")
            meta.loc[first["row"].to_numpy(), "building_id"] = first["bid"].to_numpy()
            meta.loc[first["row"].to_numpy(), "use"] = first["use"].to_numpy()
            meta["no_building"] = meta["building_id"].isna().to_numpy()
        return np.asarray(pgeom, dtype=object), meta
    b = buildings.reset_index(drop=True)
    bgeom = b.geometry.values
    row = building_rows(parcels, b) if rows is None else rows
    keep = row >= 0
    meta = pd.DataFrame({
        "row": row[keep],
        "building_id": text_values(b["building_id"]).to_numpy()[keep],
        "built_date": (b["built_date"].astype("datetime64[ms]").to_numpy()[keep]
                       if "built_date" in b.columns else np.full(keep.sum(), np.datetime64("NaT"))),
        "approximate": np.zeros(keep.sum(), dtype=bool),
        "no_building": np.zeros(keep.sum(), dtype=bool),
        "use": (text_values(b["use"]).to_numpy(dtype=object)[keep] if "use" in b.columns
                else np.full(int(keep.sum()), None, dtype=object)),
    })
    geoms = np.asarray(bgeom, dtype=object)[keep]
    # parcels with no building: measured from the parcel, flagged
    empty = np.setdiff1d(np.arange(n), meta["row"].to_numpy())
    if len(empty):
        extra = pd.DataFrame({
            "row": empty, "building_id": pd.Series([None] * len(empty), dtype=object),
            "built_date": pd.Series(pd.NaT, index=range(len(empty)), dtype="datetime64[ms]"),
            "approximate": np.ones(len(empty), dtype=bool),
            "no_building": np.ones(len(empty), dtype=bool),
            "use": pd.Series([None] * len(empty), dtype=object),
        })
        meta = pd.concat([meta, extra], ignore_index=True)
        geoms = np.concatenate([geoms, np.asarray(pgeom, dtype=object)[empty]])
    return geoms, meta


def is_one_of(value: object, codes: tuple[str, ...]) -> bool:
    """A use equal to one of ``codes``, or beginning with one and ``_`` (case-insensitive)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    s = str(value).strip().lower()
    return any(s == c or s.startswith(c + "_") for c in (c.strip().lower() for c in codes))


def accessory_only(town: Town, parcels: gpd.GeoDataFrame, accessory_uses: tuple[str, ...],
                   rows: np.ndarray | None = None) -> np.ndarray:
    """Parcels whose every building has an accessory use (garage, shed ...).

    The buildings layer's ``use`` decides: a building is accessory when its use is
    one of ``accessory_uses`` (or begins with one and ``_``); a building with no
    use recorded is not (it counts as used for occupancy). A parcel with no
    building, or a town with no buildings layer or no ``use`` column, is never
    accessory-only.
    """
    n = len(parcels)
    out = np.zeros(n, dtype=bool)
    buildings = town.layer("buildings")
    if buildings is None or not accessory_uses or "use" not in buildings.columns:
        return out
    b = buildings.reset_index(drop=True)
    row = building_rows(parcels, b) if rows is None else rows  # (as measured_geometries)
    ok = row >= 0
    if not ok.any():
        return out
    # each distinct use judged once (a county has a million buildings, a few uses)
    codes, uniques = pd.factorize(text_values(b["use"]), use_na_sentinel=True)
    judged = np.array([is_one_of(u, accessory_uses) for u in uniques] + [False], dtype=bool)
    acc = judged[codes]  # -1 (no use recorded) takes the last: not accessory
    every = pd.Series(acc[ok]).groupby(row[ok]).all()
    out[every.index[every.to_numpy()].to_numpy(dtype=np.int64)] = True
    return out


def nearest_per_parcel(meta: pd.DataFrame, geoms: np.ndarray, measure: str
                       ) -> tuple[pd.DataFrame, np.ndarray]:
    """One measured row per parcel, in parcel order: under the ``building``
    measure its nearest building (ties: lowest building id)."""
    if measure == "building":
        bid = meta["building_id"].astype(object).fillna("").astype(str).to_numpy()
        order = np.lexsort((bid, np.nan_to_num(meta["distance_ft"].to_numpy(), nan=np.inf),
                            meta["row"].to_numpy()))
        meta = meta.iloc[order]
        meta = meta[~meta["row"].duplicated()]
    else:
        meta = meta.sort_values("row", kind="stable")
    geoms = geoms[meta["geom_pos"].to_numpy()]
    return meta.reset_index(drop=True), geoms


def newest_building(meta: pd.DataFrame, all_meta: pd.DataFrame, all_geoms: np.ndarray,
                    abut_j: np.ndarray, mgeom: np.ndarray, fpu: float, limit_ft: float,
                    unknown_age: str | None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Under a rule for newly constructed buildings, the building each parcel is
    judged by: its newest building within the limit of the sewer in the street it
    abuts (of its nearest sewer when it abuts none), not an older one nearer.

    ``meta`` holds one row per parcel (its nearest building); ``all_*`` every
    measured building. Unknown built dates rank as ``unknown_age`` treats them
    (newest unless "existing"). Returns the chosen rows, their geometries and
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
    inside = within(d_sel, limit_ft)
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
    for c in meta.columns:  # columns added after the nearest search
        if c not in out.columns:
            out[c] = meta[c].to_numpy()
    return out[meta.columns], all_geoms[first], d_ab[first]


def connected(town: Town, P: gpd.GeoDataFrame, counts: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Parcels already connected, and the sentence saying how.

    A parcel is connected when the parcels layer marks it ``connected``, or a
    lateral serves it: the lateral names it (``parcel_id``), or, without a
    name, the lateral's house end lies in it. ``counts`` (per lateral row)
    leaves out the laterals that do not connect a building (stubs, see
    :mod:`gisnet.obligations.building_sewers`).
    """
    n = len(P)
    by = np.full(n, None, dtype=object)
    flag = flag_values(P, "connected", False)
    by[flag] = "Already connected: the parcels layer marks it connected."
    lat = town.layer("laterals")
    if lat is None or len(lat) == 0 or n == 0:
        return flag, by
    lat = lat.reset_index(drop=True)
    if counts is not None:
        lat = lat[np.asarray(counts, dtype=bool)].reset_index(drop=True)
        if not len(lat):
            return flag, by
    lid = text_values(lat["lateral_id"]).fillna("?").astype(str).to_numpy()
    hit_rows: list[np.ndarray] = []
    hit_lat: list[np.ndarray] = []
    pos = pd.Series(np.arange(n), index=P["parcel_id"].astype(str).to_numpy())
    pos = pos[~pos.index.duplicated()]
    lp = (text_values(lat["parcel_id"]) if "parcel_id" in lat.columns
          else pd.Series([None] * len(lat)))
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
            house_ends(town, np.asarray(lat.geometry.values[geo], dtype=object)),
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


def house_ends(town: Town, lines: np.ndarray) -> np.ndarray:
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


def septic(P: gpd.GeoDataFrame) -> np.ndarray:
    """Parcels on a private system (``septic``; unknown reads as not)."""
    return flag_values(P, "septic", False)


def availability(P: gpd.GeoDataFrame, M: gpd.GeoDataFrame, j: np.ndarray,
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


def building_age(built: np.ndarray, available: np.ndarray,
                 new_construction_from: dt.date | None) -> tuple[np.ndarray, np.ndarray]:
    """Whether each building is newly constructed, and whether that is known.

    A building is new when it was built on or after the date the sewer became
    available, or on or after the profile's ``new_construction_from`` date.

    Returns
    -------
    (is_new, age_known)
    """
    n = len(built)
    is_new = np.full(n, False)
    age_known = np.full(n, False)
    has_b = ~pd.isna(built)
    has_a = ~pd.isna(available)
    k = has_b & has_a
    is_new[k] = built[k] >= available[k]
    age_known |= k
    if new_construction_from is not None:
        nf = np.datetime64(new_construction_from, "ms")
        is_new[has_b] |= built[has_b] >= nf
        age_known |= has_b
    return is_new, age_known
