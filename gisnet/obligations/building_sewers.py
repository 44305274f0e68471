"""Building sewers: which buildings a lateral reaches, stubs, and shared building sewers.

Poughkeepsie § 168-22.4D: "A separate independent building sewer shall be
provided for every building except where one building stands at the rear of
another on an interior lot and no sewer is available or can be constructed to
the rear building through an adjoining alley, courtyard or driveway. Under such
conditions, the building sewer from the front building may be extended to the
rear building."

A lateral *reaches* a building when its house end lies within the profile's
``building_sewer_reach_ft`` of the building's footprint (Poughkeepsie: the
building sewer begins "five feet outside the inner face of the building wall",
§ 168-22.1A BUILDING DRAIN; default the town's snap tolerance). It *serves*
the nearest footprint within that reach of each of its vertices (its ends and
bends: a building sewer extended from the front building to the rear one turns
at the front building). A line skimming a neighbour's corner between two
vertices serves nothing there, and a house end at a wall two row houses share
serves one of them, not both.
Only footprints (polygons) can be tested; a lateral near point buildings only,
or in a town without a buildings layer, counts as it is drawn.

- A lateral that reaches no footprint is a ``stub_lateral``: it does not make
  the parcel connected; the parcel's ``connected`` / ``septic`` data decides.
- A lateral (all parts of one lateral id) serving two or more buildings is a
  ``shared_building_sewer``. It is allowed (the rear-building exception,
  ``rear_building_section``) only where it serves two buildings of one lot,
  the lot is an interior lot and the rear building has no street frontage of
  its own: every street the lot abuts is reached from the rear building only
  past the front building (the shortest line from the rear building to each
  such street passes within the reach of the front building). gisnet cannot
  see alleys, courtyards or driveways that are not in the streets layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd
import shapely
from shapely import STRtree

from ..town import Town
from .spatial import text_values
from .streets import street_areas


@dataclass
class SharedSewer:
    """One building sewer serving several buildings.

    Attributes
    ----------
    lateral_id
        The lateral (its id without the ``:k`` suffix of an exploded multi-part line).
    building_ids
        The buildings it serves, front building first where the exception holds.
    parcel_ids
        The parcels they stand on (None: a building on no parcel).
    allowed
        The rear-building exception holds.
    why
        Why it holds or does not (one clause).
    geometry
        The lateral's line(s).
    """

    lateral_id: str
    building_ids: list[str]
    parcel_ids: list[str | None]
    allowed: bool
    why: str
    geometry: object = None


@dataclass
class BuildingSewers:
    """What the laterals of a town reach.

    Attributes
    ----------
    tested
        Footprints were there to test the laterals against.
    reach_ft
        The reach used.
    counts
        Per lateral row: it connects (reaches a building, or could not be tested).
    stubs
        Ids of the laterals that reach no building.
    shared
        The shared building sewers.
    shared_parcels
        Parcel id -> the sentence about its shared building sewer.
    """

    tested: bool
    reach_ft: float
    counts: np.ndarray
    stubs: list[str] = field(default_factory=list)
    shared: list[SharedSewer] = field(default_factory=list)
    shared_parcels: dict[str, str] = field(default_factory=dict)


def reach_ft(town: Town) -> float:
    """How close a lateral's house end must come to a footprint to reach it (ft)."""
    r = town.profile.connection.building_sewer_reach_ft
    if r is None:
        r = town.settings.snap_tolerance_ft
    return float(r)


def building_sewers(town: Town) -> BuildingSewers:
    """Test every lateral against the building footprints.

    A lateral reaches a building when either of its ends lies within the reach
    of a footprint (its other end lies on the main, in the street); one whose
    ends are nearer a point building than any footprint cannot be tested and
    counts as drawn.

    Parameters
    ----------
    town
        The town (laterals, buildings, parcels, streets layers).
    """
    lat = town.layer("laterals")
    n = 0 if lat is None else len(lat)
    r_ft = reach_ft(town)
    counts = np.ones(n, dtype=bool)
    b = town.layer("buildings")
    if lat is None or n == 0 or b is None or len(b) == 0:
        return BuildingSewers(False, r_ft, counts)
    b = b.reset_index(drop=True)
    bgeom = np.asarray(b.geometry.values, dtype=object)
    poly = np.isin(shapely.get_type_id(bgeom), (3, 6))
    if not poly.any():
        return BuildingSewers(False, r_ft, counts)
    lat = lat.reset_index(drop=True)
    lgeom = np.asarray(lat.geometry.values, dtype=object)
    r_u = r_ft / town.ft_per_unit
    fp = np.flatnonzero(poly)
    tree = STRtree(bgeom[fp])
    every = STRtree(bgeom)
    ends = np.concatenate([shapely.get_point(lgeom, 0), shapely.get_point(lgeom, -1)])
    hi, _ = tree.query(ends, predicate="dwithin", distance=r_u)
    reaches = np.zeros(n, dtype=bool)
    reaches[hi % n] = True
    counts = reaches.copy()
    miss = np.flatnonzero(~reaches)
    if len(miss) and not poly.all():  # nearer a point building: cannot be tested
        k = every.nearest(np.concatenate([ends[miss], ends[miss + n]]))
        counts[miss] = ~(poly[k[:len(miss)]] & poly[k[len(miss):]])
    # served: the nearest footprint within reach of each vertex of the line (its ends
    # and bends), so a line skimming a neighbour's corner between vertices does not
    # count, and a wall shared by two row houses gives one building, not both
    pts, li = shapely.get_coordinates(lgeom, return_index=True)
    vpts = cast(np.ndarray, shapely.points(pts))  # (n, 2) coordinates: n points
    vi, bj = tree.query(vpts, predicate="dwithin", distance=r_u)
    if len(vi):  # the nearest footprint of each vertex (ties: the lower position)
        d = shapely.distance(vpts[vi], bgeom[fp[bj]])
        order = np.lexsort((bj, d, vi))
        vi, bj = vi[order], bj[order]
        first = np.r_[True, vi[1:] != vi[:-1]]
        vi, bj = vi[first], bj[first]
    li = li[vi]
    lid = text_values(lat["lateral_id"]).fillna("?").astype(str).to_numpy()
    stubs = sorted({lid[i] for i in np.flatnonzero(~counts)})
    out = BuildingSewers(True, r_ft, counts, stubs)
    # served buildings per lateral id (all parts of one id together)
    bid = text_values(b["building_id"]).fillna("?").astype(str).to_numpy()
    bpar = (text_values(b["parcel_id"]).astype(object).to_numpy() if "parcel_id" in b.columns
            else np.full(len(b), None, dtype=object))
    keep = counts[li]
    base = pd.Series(lid).str.replace(r":\d+$", "", regex=True).to_numpy(dtype=object)
    pairs = [pd.DataFrame({"lat": base[li[keep]], "b": fp[bj[keep]]})]
    # the named building counts too (a lateral may be drawn to its house end only)
    if "building_id" in lat.columns:
        named = pd.Series(text_values(lat["building_id"]).to_numpy(dtype=object))
        at = named.map(pd.Series(np.arange(len(bid)), index=bid).groupby(level=0).first())
        ok = counts & at.notna().to_numpy()
        pairs.append(pd.DataFrame({"lat": base[ok], "b": at[ok].to_numpy(dtype=np.int64)}))
    pairs_df = pd.concat(pairs, ignore_index=True).drop_duplicates()
    size = pairs_df.groupby("lat")["b"].transform("size")
    pairs_df = pairs_df[size.to_numpy() >= 2]
    if not len(pairs_df):
        return out
    fix_parcels(town, bgeom, bpar)
    ctx = StreetContext.of(town)
    where = pd.Series(np.arange(len(base))).groupby(base).agg(list)
    for lateral, members in pairs_df.groupby("lat", sort=True)["b"]:
        rows = sorted(members.tolist(), key=lambda k: bid[k])
        s = rear_exception(ctx, str(lateral), rows, bgeom, bid, bpar, r_u)
        s.geometry = shapely.union_all(lgeom[where[lateral]])
        out.shared.append(s)
        for p in dict.fromkeys(s.parcel_ids):
            if p is not None:
                out.shared_parcels[str(p)] = sentence(town, s)
    return out


def fix_parcels(town: Town, bgeom: np.ndarray, bpar: np.ndarray) -> None:
    """Fill the parcel of buildings that name none: the parcel holding them (in place)."""
    need = np.array([p is None for p in bpar], dtype=bool)
    P = town.layers.get("parcels")
    if not need.any() or P is None or not len(P):
        return
    pts = shapely.point_on_surface(bgeom[need])
    pi, qi = STRtree(np.asarray(P.geometry.values, dtype=object)).query(pts, predicate="within")
    pid = text_values(P["parcel_id"]).to_numpy(dtype=object)
    idx = np.flatnonzero(need)
    bpar[idx[pi]] = pid[qi]


@dataclass
class StreetContext:
    """What the rear-building test reads, built once: the lots by id, the street areas
    and a tree over them, the abutting tolerance (CRS units)."""

    lots: dict[str, shapely.Geometry]
    streets: np.ndarray | None
    tree: STRtree | None
    tol_u: float

    @classmethod
    def of(cls, town: Town) -> StreetContext:
        P = town.layers["parcels"]
        lots = dict(zip(text_values(P["parcel_id"]).astype(str), P.geometry.values,
                        strict=True))
        tol_u = town.profile.connection.abutting_tolerance_ft / town.ft_per_unit
        areas = street_areas(town, tol_u)
        if areas is None:
            return cls(lots, None, None, tol_u)
        g = np.asarray([a for a in areas[0] if a is not None], dtype=object)
        return cls(lots, g, STRtree(g), tol_u)


def rear_exception(ctx: StreetContext, lateral: str, rows: list[int], bgeom: np.ndarray,
                   bid: np.ndarray, bpar: np.ndarray, r_u: float) -> SharedSewer:
    """Does the rear-building exception of a shared building sewer hold?"""
    ids = [str(bid[k]) for k in rows]
    pars = [None if bpar[k] is None else str(bpar[k]) for k in rows]

    def no(why: str) -> SharedSewer:
        return SharedSewer(lateral, ids, pars, False, why)

    if len(rows) != 2:
        return no(f"it serves {len(rows)} buildings; the exception lets the front building's "
                  "sewer be extended to one rear building")
    if pars[0] is None or pars[0] != pars[1]:
        return no("the buildings stand on different lots")
    lot = ctx.lots.get(pars[0])
    if lot is None:
        return no("their lot is not in the parcels layer")
    if ctx.streets is None or ctx.tree is None:
        return no("without a streets layer gisnet cannot tell an interior lot or the front "
                  "building")
    near = ctx.tree.query(lot, predicate="dwithin", distance=ctx.tol_u)
    streets = list(ctx.streets[np.sort(near)])
    if not streets:
        return no("the lot abuts no street in the streets layer")
    street = shapely.union_all(streets)
    d = [shapely.distance(bgeom[k], street) for k in rows]
    front, rear = (rows[0], rows[1]) if d[0] <= d[1] else (rows[1], rows[0])
    screen = shapely.buffer(bgeom[front], r_u)
    for s in streets:
        line = shapely.shortest_line(bgeom[rear], s)
        if not shapely.intersects(line, screen) or shapely.distance(bgeom[rear], s) <= \
                shapely.distance(bgeom[front], s):
            return no(f"building {bid[rear]} is not behind building {bid[front]} from every "
                      "street the lot abuts (a corner or through lot, or side by side)")
    return SharedSewer(lateral, [str(bid[front]), str(bid[rear])], pars, True,
                       f"building {bid[rear]} stands at the rear of building {bid[front]} on "
                       "an interior lot, with no street frontage of its own")


def sentence(town: Town, s: SharedSewer) -> str:
    """The finding's sentence about one shared building sewer."""
    con = town.profile.connection
    served = ", ".join(s.building_ids)
    if con.separate_building_sewer_section is None:
        return (f"Building sewer (lateral {s.lateral_id}) serves buildings {served}; the "
                "profile sets no separate-building-sewer rule.")
    if s.allowed:
        return (f"Building sewer (lateral {s.lateral_id}) serves buildings {served}: allowed, "
                f"{s.why} ({con.rear_building_section or con.separate_building_sewer_section} "
                "rear-building exception).")
    return (f"Building sewer (lateral {s.lateral_id}) serves buildings {served}, but "
            f"{con.separate_building_sewer_section} requires a separate independent building "
            f"sewer for every building: {s.why}.")
