"""Frontage: each parcel's front footage along sewered streets, and pro-rata cost shares.

A street is sewered where it holds an eligible main (see
:mod:`gisnet.obligations.streets`); each parcel's frontage along each such main
is the length of main its boundary spans inside the street strip.
"""

from __future__ import annotations

import logging

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from shapely import STRtree

from ..errors import ConfigError, NotFoundError
from ..rules import DISTANCE_TOLERANCE_FT
from ..town import Town
from .measuring import check_town, eligible_mask
from .spatial import default_threads, text_values, threaded_pairs
from .streets import holding_pairs, street_areas

log = logging.getLogger(__name__)


def corridors(town: Town, M: gpd.GeoDataFrame, *, fallback_all: bool
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
    streets = street_areas(town, tol_u)
    if streets is None:
        strips = shapely.buffer(mgeom, half, cap_style="flat") if n else mgeom
        return np.arange(n), np.asarray(strips, dtype=object), np.ones(n, dtype=bool)
    areas, width_u = streets
    si, mi = holding_pairs(areas, width_u, mgeom)
    grown = shapely.buffer(areas[si], tol_u) if tol_u > 0 else areas[si]
    reach = shapely.buffer(mgeom[mi], width_u[si] + tol_u, cap_style="flat")
    cm = mi
    cg = np.asarray(threaded_pairs(shapely.intersection, np.asarray(grown, dtype=object),
                                   np.asarray(reach, dtype=object), default_threads()),
                    dtype=object)
    approx = np.zeros(n, dtype=bool)
    if fallback_all:
        none = np.setdiff1d(np.arange(n), mi)
        if len(none):
            cm = np.concatenate([cm, none])
            cg = np.concatenate([cg, np.asarray(
                shapely.buffer(mgeom[none], half, cap_style="flat"), dtype=object)])
            approx[none] = True
    return cm, cg, approx


def frontage_pairs(town: Town, P: gpd.GeoDataFrame, M: gpd.GeoDataFrame,
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
    pieces = threaded_pairs(shapely.intersection, bnd[pi], cg[ci], default_threads())
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


def per_parcel(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (parcel, main) pairs summed per parcel, in one pass over the sorted pairs.

    Returns ``(p, frontage_ft, mains, approximate)``: the parcel positions in
    order, the summed frontage, the main ids joined with commas in id order and
    whether any pair is approximate. Most parcels front one main, so only the
    parcels with several have their ids joined in Python.
    """
    if not len(pairs):
        return (np.empty(0, np.int64), np.empty(0), np.empty(0, dtype=object),
                np.empty(0, dtype=bool))
    s = pairs.sort_values(["p", "main_id"], kind="stable")
    p = s["p"].to_numpy(dtype=np.int64)
    mid = s["main_id"].to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
    ends = np.r_[starts[1:], len(p)]
    feet = np.add.reduceat(s["frontage_ft"].to_numpy(dtype=float), starts)
    approximate = np.logical_or.reduceat(s["approximate"].to_numpy(dtype=bool), starts)
    joined = mid[starts].copy()
    for k in np.flatnonzero(ends - starts > 1):
        joined[k] = ",".join(mid[starts[k]:ends[k]])
    return p[starts], feet, joined, approximate


def frontage(town: Town) -> gpd.GeoDataFrame:
    """Front footage of each parcel along sewered streets.

    A street is sewered where it holds an eligible main (see
    :mod:`gisnet.obligations.streets`); each parcel's frontage along each such
    main is the length of main its boundary spans inside the street strip,
    summed over the mains. Without a streets layer a strip of the profile's
    default street width centred on each main stands in for the street and the
    result is ``approximate``.

    Returns
    -------
    geopandas.GeoDataFrame
        Parcels with frontage: ``parcel_id``, ``frontage_ft``, ``mains``
        (comma-separated main ids), ``approximate``, ``section``, and the parcel
        geometry.
    """
    check_town(town)
    P = town.layers["parcels"].reset_index(drop=True)
    mains = town.layers["mains"]
    M = mains[eligible_mask(mains, town.profile)].reset_index(drop=True)
    cm, cg, approx = corridors(town, M, fallback_all=False)
    pairs = frontage_pairs(town, P, M, cm, cg)
    mids = M["main_id"].astype(str).to_numpy()
    pairs["main_id"] = mids[pairs["m"].to_numpy()] if len(pairs) else []
    pairs["approximate"] = approx[pairs["m"].to_numpy()] if len(pairs) else []
    rows, feet, joined, approximate = per_parcel(pairs)
    return gpd.GeoDataFrame(
        {"parcel_id": text_values(P["parcel_id"]).to_numpy()[rows],
         "frontage_ft": feet,
         "mains": joined,
         "approximate": approximate,
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
    check_town(town)
    if not np.isfinite(cost) or cost < 0:
        raise ConfigError(f"cost must be a non-negative number of dollars, not {cost!r}")
    mains = town.layers["mains"].reset_index(drop=True)
    hit = mains["main_id"].astype(str) == str(main_id)
    if not hit.any():
        raise NotFoundError(f"main {main_id!r} not found", layer="mains", feature=main_id)
    if not eligible_mask(mains, town.profile)[hit.to_numpy()].any():
        log.warning("main %s is not an eligible public sanitary gravity main", main_id)
    M = mains[hit].reset_index(drop=True).iloc[:1]
    cm, cg, approx = corridors(town, M, fallback_all=True)
    P = town.layers["parcels"].reset_index(drop=True)
    pairs = frontage_pairs(town, P, M, cm, cg)
    total = float(pairs["frontage_ft"].sum())
    share = pairs["frontage_ft"].to_numpy() / total if total > 0 else np.zeros(len(pairs))
    out = pd.DataFrame({
        "main_id": str(main_id),
        "parcel_id": text_values(P["parcel_id"]).to_numpy()[pairs["p"].to_numpy()],
        "frontage_ft": pairs["frontage_ft"].to_numpy(),
        "share": share,
        "share_usd": share * float(cost),
        "approximate": bool(approx[0]),
        "section": town.profile.connection.frontage_section,
    })
    return out.sort_values("parcel_id", kind="stable").reset_index(drop=True)
