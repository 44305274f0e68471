"""The abutting test: does a parcel abut a street that holds an eligible main?

Streets may be polygons or centrelines; centrelines are widened by
``width_ft / 2`` (the profile's ``default_street_width_ft`` where the width is
missing). A street *holds* a main that runs along it: it covers the main, or
two of the main's points at 1/4, 1/2 and 3/4 of its length; where those points
cannot settle it, the street holds the main if :data:`HOLD_FRACTION` of the
main, or a stretch longer than :data:`HOLD_WIDTHS` street widths, lies in it
(one long main through several street segments). A main merely crossing a
street or ending in an intersection does not make that street sewered.

A parcel abuts a sewered street when it lies within ``abutting_tolerance_ft``
of a street that holds an eligible main.

Without a streets layer the parcel fabric decides (:func:`fabric_abutting`): the
space between parcels is street or right-of-way, so a parcel abuts the street
of a main when the shortest line from the parcel to the main runs through no
other parcel (through at most :data:`FABRIC_SLIVER_FT` of one: slivers, corners
grazed, digitising gaps), across the street (no longer than a street's width
plus the tolerance) and not past the main's end. Mains lying mostly inside
parcels (easements across lots) hold no street. Each result says which method decided
(:data:`METHODS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import shapely
from shapely import STRtree

from ..town import Town
from .spatial import chunked, expand_pairs, threaded_pairs, threaded_query

#: A street "holds" a main when this fraction of the main lies in it ...
HOLD_FRACTION = 0.5
#: ... or a stretch longer than this many street widths does.
HOLD_WIDTHS = 2.0
#: Without streets: a shortest line from a parcel to a main may run through
#: another parcel for at most this length (ft) and still reach it across the street.
FABRIC_SLIVER_FT = 1.0
#: How ``abuts`` was decided: a streets layer, the parcel fabric (no streets
#: layer), or assumed (no streets layer and the caller asked to assume it).
METHODS = ("streets", "parcel_fabric", "assumed")


def street_areas(town: Town, tol_units: float, *, near: STRtree | None = None,
                 threads: int = 1) -> tuple[np.ndarray, np.ndarray] | None:
    """Street areas (polygons; centrelines widened) and their width in CRS units.

    With ``near`` (a tree of parcels), only the streets within reach of those
    parcels are built; the others are None. None without a streets layer.
    """
    streets = town.layer("streets")
    if streets is None or len(streets) == 0:
        return None
    con = town.profile.connection
    width_ft = (streets["width_ft"].astype("float64") if "width_ft" in streets.columns
                else pd.Series(np.nan, index=streets.index))
    width_ft = width_ft.where(width_ft > 0, con.default_street_width_ft).to_numpy()
    width_u = width_ft / town.ft_per_unit
    g = np.asarray(streets.geometry.values, dtype=object)
    keep = ~(shapely.is_missing(g) | shapely.is_empty(g))
    if near is not None:
        reach = float(np.max(width_u)) / 2.0 + tol_units * 2 + 1e-6
        sk, _ = threaded_query(near, g, threads, distance=reach)
        close = np.zeros(len(g), dtype=bool)
        close[sk] = True
        keep &= close
    areas = np.full(len(g), None, dtype=object)
    gt = shapely.get_type_id(g)
    is_line = keep & np.isin(gt, (1, 2, 5))  # LineString, LinearRing, MultiLineString
    areas[keep] = g[keep]
    if is_line.any():
        areas[is_line] = shapely.buffer(g[is_line], width_u[is_line] / 2.0, cap_style="flat")
    areas[shapely.is_missing(areas) | shapely.is_empty(areas)] = None
    return areas, width_u


def holding_pairs(areas: np.ndarray, width_u: np.ndarray, mains: np.ndarray,
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
    si, mi = threaded_query(STRtree(mains), areas, threads)
    shapely.prepare(areas)
    held = shapely.covers(areas[si], mains[mi])
    rest = np.flatnonzero(~held)
    if len(rest):
        um, inv = np.unique(mi[rest], return_inverse=True)
        fr = np.array([0.25, 0.5, 0.75])
        pts = chunked(len(um), threads, lambda lo, hi: shapely.get_coordinates(
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
            inter = shapely.length(threaded_pairs(shapely.intersection, r_m, r_s, threads))
            mlen = shapely.length(r_m)
            held[ex] = (inter > 0) & (inter >= np.minimum(HOLD_FRACTION * mlen,
                                                           HOLD_WIDTHS * width_u[si[ex]]))
    return si[held], mi[held]


@dataclass
class Abutting:
    """Result of the abutting test, one entry per parcel.

    Attributes
    ----------
    tested
        The test ran: the profile requires abutting and the caller did not ask
        to assume it without a streets layer (False: every ``abuts`` is NA).
    abuts
        The parcel abuts a street holding an eligible main (NA where not tested:
        connected or unmeasured parcels, or no test at all).
    main
        Position (among the eligible mains) of the nearest main held by a street
        the parcel abuts, ties to the lowest id; -1 for none.
    distance_ft
        Distance (ft) from the measured geometry to that main; NaN for none.
    method
        Per parcel, how ``abuts`` was decided (one of :data:`METHODS`); None
        where no test ran for it (connected or unmeasured parcels, or the
        profile does not require abutting).
    """

    tested: bool
    abuts: pd.arrays.BooleanArray
    main: np.ndarray
    distance_ft: np.ndarray
    method: np.ndarray

    @property
    def abuts_mask(self) -> np.ndarray:
        """``abuts`` with NA read as False."""
        return self.abuts.fillna(False).to_numpy(dtype=bool)


def abutting(town: Town, parcels: np.ndarray, measured: np.ndarray, mains: np.ndarray,
             main_rank: np.ndarray, candidates: np.ndarray, *, threads: int,
             assume: bool = False) -> Abutting:
    """Run the abutting test for the parcels at positions ``candidates``.

    With a streets layer the streets decide; without one the parcel fabric
    (:func:`fabric_abutting`), unless ``assume`` (then no test runs and the
    candidates' method is ``assumed``).

    Parameters
    ----------
    town
        The town (its streets layer and the profile's ``[connection]``).
    parcels
        Parcel geometries (all parcels).
    measured
        The geometry measured for each parcel (parcel or building), aligned with
        ``parcels``: distances to the abutting main are taken from it.
    mains, main_rank
        Eligible main geometries and the rank of their ids (ties: lowest).
    candidates
        Positions of the parcels to test (not connected, measured).
    threads
        Threads for the spatial queries.
    assume
        The caller asked to treat parcels as abutting when there is no
        streets layer.
    """
    con = town.profile.connection
    fpu = float(town.ft_per_unit)
    n = len(parcels)
    abut = pd.array([pd.NA] * n, dtype="boolean")
    abut_j = np.full(n, -1, dtype=np.int64)
    abut_d = np.full(n, np.nan)
    method = np.full(n, None, dtype=object)
    st = town.layer("streets")
    have_streets = st is not None and len(st) > 0
    cand = np.asarray(candidates, dtype=np.int64)
    if not con.require_abutting:
        return Abutting(False, abut, abut_j, abut_d, method)
    if not have_streets:
        if assume:
            method[cand] = "assumed"
            return Abutting(False, abut, abut_j, abut_d, method)
        return fabric_abutting(town, parcels, measured, mains, main_rank, cand,
                               threads=threads)
    tested = True
    if not len(cand):
        return Abutting(tested, abut, abut_j, abut_d, method)
    method[cand] = "streets"
    tol_u = con.abutting_tolerance_ft / fpu
    ctree = STRtree(parcels[cand])
    # widen only the streets near the parcels tested, unless that is most of them
    near = ctree if len(cand) < 0.2 * n else None
    found = street_areas(town, tol_u, near=near, threads=threads)
    assert found is not None  # None only without streets, and the town has some (above)
    areas, width_u = found
    # streets each candidate parcel touches (street -> parcels: only streets are
    # prepared; a hair over the tolerance: GEOS may measure 5 ft as 5.000000000000001)
    sk, pc = threaded_query(ctree, areas, threads, distance=tol_u * (1 + 1e-9) + 1e-9)
    touched = np.unique(sk)
    hs, mi = holding_pairs(areas[touched], width_u[touched], mains, threads)
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
    pp, mm = expand_pairs(cand[pc[hit]], sk[hit], si, mi, len(areas))
    if len(pp):
        dd = threaded_pairs(shapely.distance, measured[pp], mains[mm], threads) * fpu
        order = np.lexsort((main_rank[mm], dd, pp))  # per parcel: nearest, then lowest id
        pp, mm, dd = pp[order], mm[order], dd[order]
        first = np.r_[True, pp[1:] != pp[:-1]]
        abut_j[pp[first]] = mm[first]
        abut_d[pp[first]] = dd[first]
    return Abutting(tested, abut, abut_j, abut_d, method)


def street_mains(fabric: np.ndarray, mains: np.ndarray, threads: int = 1) -> np.ndarray:
    """Which mains lie in the space between parcels (street or right-of-way).

    A main lies in a street unless :data:`HOLD_FRACTION` or more of its length
    lies inside parcels' interiors (an easement across lots: it holds no
    street); a main along lot lines lies between parcels.

    Parameters
    ----------
    fabric
        Every parcel of the town (the fabric).
    mains
        Main geometries.
    threads
        Threads for the spatial queries.

    Returns
    -------
    numpy.ndarray
        Boolean per main.
    """
    inside: np.ndarray = np.zeros(len(mains))
    if len(mains) and len(fabric):
        mi, fi = threaded_query(STRtree(fabric), mains, threads)
        if len(mi):
            # inside the parcels' interiors: a main along lot lines (parcels drawn to
            # the street's centre line) lies between parcels
            ln = shapely.length(threaded_pairs(shapely.intersection, mains[mi], fabric[fi],
                                               threads))
            on = shapely.length(threaded_pairs(shapely.intersection, mains[mi],
                                               shapely.boundary(fabric[fi]), threads))
            inside = np.bincount(mi, weights=np.maximum(ln - on, 0.0), minlength=len(mains))
    return inside < HOLD_FRACTION * shapely.length(mains)


def fabric_abutting(town: Town, parcels: np.ndarray, measured: np.ndarray, mains: np.ndarray,
                    main_rank: np.ndarray, cand: np.ndarray, *, threads: int) -> Abutting:
    """The abutting test without a streets layer, from the parcel fabric.

    The space between parcels is street or right-of-way: a parcel abuts the
    street of a main (one in that space: :func:`street_mains`) when the
    shortest line from the parcel to the main

    * runs through the interior of no other parcel of the town for more than
      :data:`FABRIC_SLIVER_FT` (a line that only touches another parcel's
      boundary, runs along one parcel's edge, or grazes a corner, does not
      count), nor along a lot line two parcels share for more than that;
    * crosses the street rather than running along it: it is no longer than
      ``default_street_width_ft + abutting_tolerance_ft`` (with streets, a
      parcel within the tolerance of a street, the main inside it);
    * does not reach the main at one of its ends from more than
      ``abutting_tolerance_ft`` beyond it (a main ending in an intersection
      does not make the street past it sewered, as with streets).

    The abutting main is the nearest of those reached (from the measured
    geometry; ties: lowest id), as with streets.

    All in arrays: one shortest line per (parcel, main) pair, one tree query
    of those lines against the fabric, one intersection per (line, parcel hit).

    Parameters
    ----------
    town, parcels, measured, mains, main_rank, cand, threads
        As for :func:`abutting` (``cand``: the candidate positions).
    """
    fpu = float(town.ft_per_unit)
    n = len(parcels)
    abut_np = np.zeros(n, dtype=bool)
    abut_j = np.full(n, -1, dtype=np.int64)
    abut_d = np.full(n, np.nan)
    method = np.full(n, None, dtype=object)
    method[cand] = "parcel_fabric"
    layer = town.layer("parcels")
    fabric = np.asarray(layer.geometry.values, dtype=object) if layer is not None else parcels
    # each parcel's own place in the fabric (when the parcels are the whole layer)
    whole = len(fabric) == n and bool(np.all(shapely.equals_exact(parcels, fabric, tolerance=0)))
    own = np.arange(n) if whole else np.full(n, -1)
    in_street = np.flatnonzero(street_mains(fabric, mains, threads))
    if len(cand) and len(in_street):
        sm = mains[in_street]
        pg = parcels[cand]
        con = town.profile.connection
        tol_u = con.abutting_tolerance_ft / fpu
        # across the street, not along it: a main in the street a parcel abuts lies
        # within a street's width (+ the tolerance) of it, as with streets
        reach_u = con.default_street_width_ft / fpu + tol_u
        pc, mk = threaded_query(STRtree(sm), pg, threads, distance=reach_u * (1 + 1e-9))
        lines = threaded_pairs(shapely.shortest_line, pg[pc], sm[mk], threads)
        blocked = _past_end(lines, mk, sm, tol_u)
        li, fi = threaded_query(STRtree(fabric), lines, threads)
        other = fi != own[cand[pc[li]]]
        li, fi = li[other], fi[other]
        # through a parcel's interior (the parcel's own line starts on its boundary: 0 ft)
        ln = shapely.length(threaded_pairs(shapely.intersection, lines[li], fabric[fi],
                                           threads))
        sliver_u = FABRIC_SLIVER_FT / fpu
        on = np.zeros(len(li))
        k = np.flatnonzero(ln > sliver_u)  # (the others touch at a point or graze a sliver)
        on[k] = shapely.length(threaded_pairs(shapely.intersection, lines[li[k]],
                                              shapely.boundary(fabric[fi[k]]), threads))
        blocked[li[ln - on > sliver_u]] = True
        # along a lot line: on the edge of two parcels, no gap between them
        along = np.bincount(li[on > sliver_u], minlength=len(lines))
        blocked |= along >= 2
        ok = ~blocked
        pp, mm = cand[pc[ok]], in_street[mk[ok]]
        abut_np[pp] = True
        if len(pp):
            dd = threaded_pairs(shapely.distance, measured[pp], mains[mm], threads) * fpu
            order = np.lexsort((main_rank[mm], dd, pp))
            pp, mm, dd = pp[order], mm[order], dd[order]
            first = np.r_[True, pp[1:] != pp[:-1]]
            abut_j[pp[first]] = mm[first]
            abut_d[pp[first]] = dd[first]
    abut = pd.array(abut_np, dtype="boolean")
    untested = np.ones(n, dtype=bool)
    untested[cand] = False
    abut[untested] = pd.NA
    return Abutting(True, abut, abut_j, abut_d, method)


def _past_end(lines: np.ndarray, mk: np.ndarray, mains: np.ndarray, tol_u: float
              ) -> np.ndarray:
    """Shortest lines that reach a main at one of its ends from beyond it.

    ``lines[i]`` runs from a parcel to ``mains[mk[i]]``. True where the parcel
    lies past the end of the main, along its last segment, by more than
    ``tol_u``: a main ending in an intersection does not make the street on
    the far side of it sewered (as with streets, :func:`holding_pairs`).
    """
    xy = shapely.get_coordinates(lines).reshape(-1, 4)
    frm, to = xy[:, :2], xy[:, 2:]
    past = np.zeros(len(lines), dtype=bool)
    simple = np.flatnonzero(shapely.get_type_id(mains) == 1)  # LineStrings
    for end, prev in ((0, 1), (-1, -2)):
        ends = np.full((len(mains), 2), np.nan)
        pv = np.full((len(mains), 2), np.nan)
        ends[simple] = shapely.get_coordinates(shapely.get_point(mains[simple], end))
        pv[simple] = shapely.get_coordinates(shapely.get_point(mains[simple], prev))
        d = ends - pv
        unit = d / np.hypot(d[:, 0], d[:, 1])[:, None]
        e, u = ends[mk], unit[mk]
        at_end = np.hypot(to[:, 0] - e[:, 0], to[:, 1] - e[:, 1]) <= 1e-6
        along = np.einsum("ij,ij->i", frm - e, u)
        past |= at_end & (along > tol_u)
    return past
