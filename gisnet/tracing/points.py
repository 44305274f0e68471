"""Connection points: where each building sewer joins the sewer (the *tap*).

A building's tap is the end of its lateral lying on an eligible main or on a
private main (source ``lateral`` / ``private_main``); a building with no
lateral has its centroid (a parcel's representative point) projected onto the
nearest eligible main (``projected``); a building whose lateral reaches neither
is ``unresolved``, with the reason. *Eligible* is the graph's ``eligible`` edge
attribute, set by :mod:`gisnet.graph` with
:func:`gisnet.rules.is_eligible_for_connection` (public, active, gravity, of a
kind the profile's ``connection.eligible_kinds`` names). A *private main* is a
main not owned by the public that carries sanitary flow by gravity
(:attr:`~gisnet.tracing.index.EdgeArrays.private_main`): the branch lines of
an apartment complex, industrial park or private street. Poughkeepsie
§ 168-22.5J measures from "the point at which the building sewer is
connected" to the public sewer; for a tap on a private main that point is
where the private mains enter the public sewer, found downstream by
:meth:`~gisnet.tracing.index.DownstreamIndex.connection_targets`. Storm,
inactive and force mains are never tapped. Geometry is in the graph's working
CRS, lengths in feet.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely

from ..io.ids import in_ids
from ..threads import chunked, default_threads
from .index import DownstreamIndex

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

#: Columns of :func:`connection_points`.
POINT_COLUMNS = [
    "building_id",
    "parcel_id",
    "user_id",
    "main_id",
    "edge_u",
    "edge_v",
    "edge_key",
    "tap_distance_ft",
    "offset_ft",
    "source",
    "reason",
]

#: ``source`` of a connection point: how its tap was found.
SOURCES = ("lateral", "private_main", "projected", "unresolved")


def _as_points(geoms: np.ndarray, *, polygon_point: str) -> np.ndarray:
    """Points for features: points as they are, lines/polygons by centroid or
    representative point (``polygon_point``)."""
    geoms = np.asarray(geoms, dtype=object)
    out = np.empty(len(geoms), dtype=object)
    if not len(geoms):
        return out
    missing = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    tid = shapely.get_type_id(geoms)
    pts = tid == 0
    out[pts] = geoms[pts]
    other = ~pts & ~missing
    if other.any():
        fn = shapely.centroid if polygon_point == "centroid" else shapely.point_on_surface
        out[other] = fn(geoms[other])
    out[missing] = None
    return out


def _project(index: DownstreamIndex, points: np.ndarray, candidates: np.ndarray | None = None):
    """Project points onto their nearest candidate edge (default: eligible edges).

    Returns edge index (-1 where no point or no candidate edge), fraction along
    the edge (0..1 from its upstream end), tap point and offset (ft) from the
    point to its tap. Ties between equidistant edges go to the lowest edge
    index (deterministic).
    """
    n = len(points)
    edge = np.full(n, -1, dtype=np.int64)
    frac = np.full(n, np.nan)
    taps = np.empty(n, dtype=object)
    offset = np.full(n, np.nan)
    elig = np.flatnonzero(index.edges.eligible if candidates is None else candidates)
    has = np.flatnonzero(~shapely.is_missing(points.astype(object)))
    if not len(elig) or not len(has):
        return edge, frac, taps, offset
    geoms = index.edges.geometry[elig]
    tree = shapely.STRtree(geoms, node_capacity=NEAREST_NODE_CAPACITY)
    (qi, ti), dist = _query_nearest(tree, points[has])
    order = np.lexsort((ti, qi))  # per query the lowest tree index first
    qi, ti, dist = qi[order], ti[order], dist[order]
    first = np.ones(len(qi), bool)
    first[1:] = qi[1:] != qi[:-1]
    rows = has[qi[first]]
    e = elig[ti[first]]
    edge[rows] = e
    g = index.edges.geometry[e]
    f = shapely.line_locate_point(g, points[rows], normalized=True)
    frac[rows] = f
    taps[rows] = shapely.line_interpolate_point(g, f, normalized=True)
    offset[rows] = dist[first] * index.ft_per_unit
    return edge, frac, taps, offset


#: Children per node of the tree the nearest edge is searched in (shapely's default
#: is 10). GEOS's nearest search compares the point with every child of each node it
#: opens: with 4, the county's 970,202 building centroids took 1.94 s on one thread
#: against its 300,000 mains instead of 3.38 s, and found the same edges (with the same
#: distances); building the tree takes about as long. (GEOS's ``all_matches`` can miss an
#: edge exactly as near as the one found, which ones depending on the tree's shape: none
#: did among those points; the obligations' parcels keep shapely's default, where some
#: did.)
NEAREST_NODE_CAPACITY = 4

#: Above this many points the nearest-main query is split over
#: :func:`gisnet.threads.default_threads` threads (shapely releases the GIL;
#: measured about 2x on 2 cores).
THREADED_QUERY_MIN = 100_000


def _query_nearest(tree: shapely.STRtree, pts: np.ndarray):
    """``tree.query_nearest(pts, all_matches=True, return_distance=True)``,
    on several threads for large inputs. Returns ((query idx, tree idx), dist)."""
    parts = chunked(len(pts), default_threads(), lambda lo, hi: (lo, tree.query_nearest(
        pts[lo:hi], all_matches=True, return_distance=True)), min_n=THREADED_QUERY_MIN)
    if len(parts) <= 1:
        return parts[0][1] if parts else tree.query_nearest(pts, all_matches=True,
                                                             return_distance=True)
    qi = np.concatenate([(pairs[0] + lo) for lo, (pairs, _) in parts])
    ti = np.concatenate([pairs[1] for _, (pairs, _) in parts])
    dist = np.concatenate([d for _, (_, d) in parts])
    return (qi, ti), dist


def _lateral_taps(index: DownstreamIndex, laterals: gpd.GeoDataFrame):
    """Tap of each lateral: of its two ends, the one nearer an eligible or a
    private main, projected onto that main. Returns (edge, frac, taps,
    offset_ft, house_end, ends) with ``ends`` both end points (2n: starts, ends)."""
    geoms = laterals.geometry.to_numpy()
    n = len(geoms)
    starts = shapely.get_point(geoms, 0)
    ends = shapely.get_point(geoms, -1)
    both = np.concatenate([starts, ends])
    tappable = index.edges.eligible | index.edges.private_main
    edge, frac, taps, offset = _project(index, both, tappable)
    off = np.where(np.isnan(offset), np.inf, offset)
    use_end = off[n:] < off[:n]
    pick = np.where(use_end, np.arange(n) + n, np.arange(n))
    house = np.where(use_end, starts, ends)
    return edge[pick], frac[pick], taps[pick], offset[pick], house, both


def _main_words(attrs: dict[str, Any]) -> str:
    """Why a main cannot take a building sewer, in words (``storm main``, ...)."""
    why = []
    kind = attrs.get("kind")
    if kind == "storm":
        why.append("a storm main")
    active, gravity = attrs.get("active"), attrs.get("gravity")
    if active is not None and not bool(active):
        why.append(f"{attrs.get('status') or 'inactive'}")
    if gravity is not None and not bool(gravity):
        why.append("a force main")
    if not why:
        why.append(f"of kind {kind}, not a sewer the profile's connection rule counts")
    return ", ".join(why)


def _off_main_reasons(index: DownstreamIndex, ids: list[Any], both: np.ndarray,
                      rows: np.ndarray) -> list[str]:
    """Reason each lateral (positions ``rows``) reaches no public or private main:
    what its end nearest any main of the graph lies on, and how far."""
    n = len(both) // 2
    out: list[str] = []
    geoms = index.edges.geometry
    if not len(rows):
        return out
    if not len(geoms):
        return [f"lateral {ids[i]} ends on no main (the sewer graph has none)" for i in rows]
    pts = np.concatenate([both[rows], both[rows + n]])
    ok = ~shapely.is_missing(pts.astype(object))
    dist = np.full(len(pts), np.inf)
    near = np.full(len(pts), -1, dtype=np.int64)
    if ok.any():
        tree = shapely.STRtree(geoms)
        (qi, ti), d_u = tree.query_nearest(pts[ok], return_distance=True)
        first = np.ones(len(qi), bool)
        first[1:] = qi[1:] != qi[:-1]
        at = np.flatnonzero(ok)[qi[first]]
        dist[at] = d_u[first] * index.ft_per_unit
        near[at] = ti[first]
    k = len(rows)
    end = np.where(dist[k:] < dist[:k], np.arange(k) + k, np.arange(k))
    tol = index.snap_tolerance_ft
    E = index.edges
    for j, i in enumerate(rows):
        e, d = int(near[end[j]]), float(dist[end[j]])
        lid = ids[i]
        if e < 0:
            out.append(f"lateral {lid} has no geometry")
        elif d > tol:
            out.append(f"lateral {lid} ends {d:,.1f} ft from the nearest main ({E.main_id[e]}), "
                       f"beyond the {tol:g} ft snap tolerance: it reaches no public or "
                       "private sanitary main")
        else:
            attrs = index.G.edges[index.nodes[E.u[e]], index.nodes[E.v[e]], E.key[e]]
            out.append(f"lateral {lid} ends on main {E.main_id[e]} ({_main_words(attrs)}): "
                       "neither a public sanitary main nor a private main that carries "
                       "sanitary flow")
    return out


def _id_series(gdf: gpd.GeoDataFrame | None, col: str) -> pd.Series:
    if gdf is None or col not in gdf:
        return pd.Series([None] * (0 if gdf is None else len(gdf)), dtype=object)
    s = gdf[col].astype(object)
    return s.where(s.notna(), None).reset_index(drop=True)


def _id_text(gdf: gpd.GeoDataFrame | None, col: str) -> pd.Series:
    """``gdf[col]`` as it is held when it is text already (pandas' ``str``, Arrow:
    no Python string per row), else as :func:`_id_series` gives it."""
    if gdf is not None and col in gdf and isinstance(gdf[col].dtype, pd.StringDtype):
        return gdf[col].reset_index(drop=True)
    return _id_series(gdf, col)


def held_values(s: pd.Series) -> Any:
    """A column's values for a new frame, as they are held: text already in pandas'
    text dtype stays there (no Python string made per row); anything else as
    objects, for the frame to infer its dtype."""
    if isinstance(s.dtype, pd.StringDtype):
        return s.array
    return s.to_numpy(dtype=object)


def _none_like(s: pd.Series, n: int) -> Any:
    """``n`` missing values in ``s``'s kind: text missing when ``s`` is text."""
    if isinstance(s.dtype, pd.StringDtype):
        return pd.array(np.full(n, None, dtype=object), dtype=s.dtype)
    return None


def _asheld_values(s: pd.Series, like: pd.Series) -> pd.Series:
    """``s`` (a few ids) in ``like``'s dtype when that is text, to be matched
    against it by Arrow."""
    if isinstance(like.dtype, pd.StringDtype) and not isinstance(s.dtype, pd.StringDtype):
        return s.dropna().astype(object).map(str).astype(like.dtype)
    return s


def features_to_connect(town: Town, *, building_points: np.ndarray | None = None
                        ) -> pd.DataFrame:
    """Rows to connect: each building, each parcel without a building.

    ``building_points``: each building's centroid, made before its shape was let go
    (:func:`gisnet.pipeline.analyse` with ``release_inputs``); default the centroid
    of each building's geometry."""
    parcels = town.layers["parcels"]
    buildings = town.layer("buildings")
    frames = []
    b_parcel = pd.Series([], dtype=object)
    if buildings is not None and len(buildings):
        if building_points is not None and len(building_points) != len(buildings):
            raise ValueError(f"{len(building_points)} building points for "
                             f"{len(buildings)} buildings")
        pts = (_as_points(buildings.geometry.to_numpy(), polygon_point="centroid")
               if building_points is None else building_points)
        b_parcel = _id_text(buildings, "parcel_id")
        missing = b_parcel.isna().to_numpy() & ~shapely.is_missing(pts.astype(object))
        if missing.any() and len(parcels):
            # building without a parcel id: the parcel its point lies in
            qi, pi = parcels.sindex.query(pts[missing], predicate="intersects")
            fill = pd.Series(parcels["parcel_id"].to_numpy()[pi], index=qi)
            fill = fill[~fill.index.duplicated()]
            idx = np.flatnonzero(missing)
            b_parcel = b_parcel.copy()
            b_parcel.iloc[idx[fill.index.to_numpy()]] = fill.to_numpy()
        b_ids = _id_text(buildings, "building_id")
        frames.append(
            pd.DataFrame(
                {
                    "building_id": held_values(b_ids),
                    "parcel_id": held_values(b_parcel),
                    "user_id": _none_like(b_ids, len(b_ids)),
                    "point": pts,
                }
            )
        )
    p_ids = _id_text(parcels, "parcel_id")
    lone = ~in_ids(p_ids, b_parcel)
    if lone.any():
        pts = _as_points(parcels.geometry.to_numpy()[lone], polygon_point="representative")
        k = int(lone.sum())
        frames.append(
            pd.DataFrame(
                {"building_id": _none_like(p_ids, k), "parcel_id": held_values(p_ids[lone]),
                 "user_id": _none_like(p_ids, k), "point": pts}
            )
        )
    if not frames:
        return pd.DataFrame(columns=["building_id", "parcel_id", "user_id", "point"])
    return pd.concat(frames, ignore_index=True)


def _empty_points(crs: Any) -> gpd.GeoDataFrame:
    df = pd.DataFrame({c: pd.Series([], dtype=object) for c in POINT_COLUMNS})
    return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries([], crs=crs), crs=crs)


def locate_taps(
    index: DownstreamIndex, feats: pd.DataFrame, laterals: gpd.GeoDataFrame | None
) -> tuple[gpd.GeoDataFrame, list[Any]]:
    """Taps for feature rows (``building_id, parcel_id, user_id, point``).

    A feature with a lateral (its own, by ``building_id``, else its parcel's,
    by ``parcel_id``: a rear building shares the front building's sewer) is
    tapped where that lateral ends on an eligible main (``lateral``) or a
    private main (``private_main``), within the graph's snap tolerance. A
    feature whose laterals all end elsewhere is ``unresolved``, with the
    reason; it is not projected. A feature without a lateral is projected onto
    the nearest eligible main (``projected``).

    Returns the points and the ids of laterals that end on neither (not used)."""
    n = len(feats)
    edge = np.full(n, -1, dtype=np.int64)
    frac = np.full(n, np.nan)
    taps = np.empty(n, dtype=object)
    offset = np.full(n, np.nan)
    source = np.full(n, None, dtype=object)
    reason = np.full(n, None, dtype=object)
    off_main: list[Any] = []
    dead = np.zeros(n, bool)
    if laterals is not None and len(laterals) and n:
        le, lf, lt, lo, house, both = _lateral_taps(index, laterals)
        lat = pd.DataFrame(
            {
                "building_id": _id_series(laterals, "building_id"),
                "parcel_id": _id_series(laterals, "parcel_id"),
                "i": np.arange(len(laterals)),
            }
        )
        # a lateral gives the tap only if its main end lies on an eligible or a
        # private main (within the snap tolerance); one drawn to a storm,
        # inactive or force main, or ending short of every main, does not
        on_main = (le >= 0) & (np.nan_to_num(lo, nan=np.inf) <= index.snap_tolerance_ft)
        lat_ids = (_id_series(laterals, "lateral_id").tolist() if "lateral_id" in laterals
                   else [str(i) for i in range(len(laterals))])
        off_rows = np.flatnonzero(~on_main)
        off_main = [lat_ids[i] for i in off_rows]
        lat_reason = np.full(len(laterals), None, dtype=object)
        lat_reason[off_rows] = _off_main_reasons(index, lat_ids, both, off_rows)
        assigned = np.full(n, -1, dtype=np.int64)
        unusable = np.full(n, -1, dtype=np.int64)
        # 1. by building id; 2. by parcel id. A lateral on a main wins over one
        # that is not; first in layer order otherwise.
        for col in ("building_id", "parcel_id"):
            keys = pd.Series(feats[col].to_numpy(dtype=object))
            for good, target in ((on_main, assigned), (~on_main, unusable)):
                look = lat[good].dropna(subset=[col]).drop_duplicates(col).set_index(col)["i"]
                if not len(look):
                    continue
                hit = keys.map(look).to_numpy()
                take = (assigned < 0) & (unusable < 0) & pd.notna(hit)
                target[take] = hit[take].astype(np.int64)
        got = assigned >= 0
        a = assigned[got]
        edge[got], frac[got], taps[got], offset[got] = le[a], lf[a], lt[a], lo[a]
        # offset of a lateral tap: from the feature point along the lateral's
        # straight line is not meaningful; report the tap's distance from the
        # lateral's house end instead.
        offset[got] = shapely.distance(house[a], lt[a]) * index.ft_per_unit
        source[got] = np.where(index.edges.public[le[a]], "lateral", "private_main")
        dead = unusable >= 0
        source[dead] = "unresolved"
        reason[dead] = lat_reason[unusable[dead]]
    todo = np.flatnonzero((edge < 0) & ~dead)
    if len(todo):
        pts = feats["point"].to_numpy()[todo]
        pe, pf, pt, po = _project(index, pts)
        edge[todo], frac[todo], taps[todo], offset[todo] = pe, pf, pt, po
        source[todo[pe >= 0]] = "projected"
        none = todo[pe < 0]
        source[none] = "unresolved"
        no_point = shapely.is_missing(pts[pe < 0].astype(object))
        reason[none] = np.where(
            no_point, "no lateral and no geometry to place a connection point",
            "no lateral, and no eligible public sanitary main to project onto")
    ok = edge >= 0
    e = np.maximum(edge, 0)
    E = index.edges
    nodes = index.nodes

    def _col(values: np.ndarray) -> np.ndarray:
        out = np.empty(n, dtype=object)
        out[:] = None
        out[ok] = values[ok]
        return out

    gdf = gpd.GeoDataFrame(
        {
            "building_id": held_values(feats["building_id"]),
            "parcel_id": held_values(feats["parcel_id"]),
            "user_id": held_values(feats["user_id"]),
            "main_id": _col(E.main_id[e]),
            "edge_u": _col(nodes[E.u[e]]),
            "edge_v": _col(nodes[E.v[e]]),
            "edge_key": _col(E.key[e]),
            "tap_distance_ft": np.where(ok, frac * E.length_ft[e], np.nan),
            "offset_ft": offset,
            "source": source,
            "reason": reason,
        },
        geometry=gpd.GeoSeries(taps, crs=index.crs),
        crs=index.crs,
    )
    return gdf, off_main


def connection_points(
    town: Town, G: nx.MultiDiGraph, *, index: DownstreamIndex | None = None,
    building_points: np.ndarray | None = None,
) -> gpd.GeoDataFrame:
    """The point where each building sewer is connected (the tap).

    One row per building, one per parcel without a building, and one per
    industrial user. With a laterals layer, a building's tap is the end of its
    lateral (matched by ``building_id``, else by ``parcel_id``) lying, within
    the graph's snap tolerance, on an eligible main (``source`` ``lateral``) or
    on a private main (``private_main``: the flow is then followed through the
    private mains to the public sewer, see :mod:`.control`), projected onto
    that main. A building whose lateral ends on neither (a storm, inactive or
    force main, or short of every main) is ``unresolved``: no tap, the reason
    in ``reason``, and the laterals reported (``lateral_off_main``). A
    building without a lateral has its centroid (a parcel's representative
    point) projected onto the nearest eligible main (``projected``;
    ``STRtree.query_nearest``, vectorised; equidistant mains: the first in
    graph edge order). A user takes its building's tap (by ``building_id``),
    else its parcel's first, else its own geometry's.

    Parameters
    ----------
    town
        Loaded town (layers in the working CRS).
    G
        Sewer graph of the town.
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.
    building_points
        Each building's centroid, when its shape is no longer held
        (:func:`features_to_connect`).

    Returns
    -------
    GeoDataFrame
        ``building_id, parcel_id, user_id, main_id, edge_u, edge_v, edge_key,
        tap_distance_ft`` (ft along the edge from its upstream end),
        ``offset_ft`` (ft from the feature point, or lateral house end, to the
        tap), ``source`` (one of :data:`SOURCES`), ``reason`` (why an
        ``unresolved`` row has no tap; else null) and the tap point geometry
        (working CRS; null when unresolved).
    """
    idx = DownstreamIndex.of(G, index)
    feats = features_to_connect(town, building_points=building_points)
    laterals = town.layer("laterals")
    pts, off_main = locate_taps(idx, feats, laterals)
    if off_main:
        town.report.add_once(
            "lateral_off_main", "warning",
            f"{len(off_main)} lateral(s) end on no public sanitary main and no private main "
            f"(within {idx.snap_tolerance_ft:g} ft; e.g. drawn to a storm or inactive main, or "
            "short of every main); the buildings they serve are left unresolved, not "
            "projected (control_manholes.reason says why)",
            layer="laterals", feature_id=",".join(str(x) for x in off_main[:50]),
        )
    users = town.layer("users")
    if users is not None and len(users):
        up = _user_points(idx, users, pts, laterals, town)
        for c in ("source", "reason"):  # (text and objects would concatenate as a
            if isinstance(pts[c].dtype, pd.StringDtype):  # Python string per row)
                up[c] = up[c].astype(pts[c].dtype)
        pts = pd.concat([pts, up], ignore_index=True)
    if not len(pts):
        return _empty_points(idx.crs)
    out = gpd.GeoDataFrame(pts, geometry="geometry", crs=idx.crs)
    none = (out["source"] == "unresolved").to_numpy()
    if none.any():
        town.report.add_once(
            "no_connection_point", "warning",
            f"{int(none.sum())} building(s)/parcel(s)/user(s) could not be given a connection "
            "point (a lateral ending on no usable main, no geometry, or no eligible public "
            "sanitary main); control_manholes.reason says which",
            layer="buildings",
        )
    log.info("connection points: %d (%d by lateral, %d through private mains, %d unresolved)",
             len(out), int((out["source"] == "lateral").sum()),
             int((out["source"] == "private_main").sum()), int(none.sum()))
    return out


def _user_points(
    idx: DownstreamIndex,
    users: gpd.GeoDataFrame,
    pts: gpd.GeoDataFrame,
    laterals: gpd.GeoDataFrame | None,
    town: Town,
) -> gpd.GeoDataFrame:
    uid = _id_series(users, "user_id")
    ub = _id_series(users, "building_id")
    up = _id_series(users, "parcel_id")
    cols = [*POINT_COLUMNS, "geometry"]
    # the points of the users' buildings and parcels (a few rows of the town's)
    mine = (in_ids(pts["building_id"], _asheld_values(ub, pts["building_id"]))
            | in_ids(pts["parcel_id"], _asheld_values(up, pts["parcel_id"])))
    near = pts[mine]
    by_b = near.dropna(subset=["building_id"]).drop_duplicates("building_id").set_index(
        "building_id")[cols[1:]] if len(pts) else None
    by_p = near.dropna(subset=["parcel_id"]).drop_duplicates("parcel_id").set_index(
        "parcel_id")[cols[2:]] if len(pts) else None
    rows: list[dict[str, Any]] = []
    own: list[int] = []
    for i in range(len(users)):
        b, p = ub.iloc[i], up.iloc[i]
        if b is not None and by_b is not None and b in by_b.index:
            r = by_b.loc[b].to_dict()
            r["building_id"] = b
        elif p is not None and by_p is not None and p in by_p.index:
            r = by_p.loc[p].to_dict()
            r["building_id"] = b
            r["parcel_id"] = p
        else:
            own.append(i)
            r = {"building_id": b, "parcel_id": p}
        r["user_id"] = uid.iloc[i]
        rows.append(r)
    out = gpd.GeoDataFrame(pd.DataFrame(rows, columns=cols), geometry="geometry", crs=idx.crs)
    for c in ("source", "reason"):
        out[c] = out[c].astype(object).where(out[c].notna(), None)
    if own:
        geoms = users.geometry.to_numpy() if users.geometry is not None else None
        if geoms is not None:
            feats = pd.DataFrame(
                {"building_id": ub.iloc[own].to_numpy(dtype=object),
                 "parcel_id": up.iloc[own].to_numpy(dtype=object),
                 "user_id": uid.iloc[own].to_numpy(dtype=object),
                 "point": _as_points(geoms[own], polygon_point="representative")}
            )
            located, _ = locate_taps(idx, feats, laterals)
            for j, i in enumerate(own):
                for c in cols:
                    out.at[i, c] = located.iloc[j][c]
    for c in ("tap_distance_ft", "offset_ft"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    lost = out["source"].isna().to_numpy()
    if lost.any():
        out.loc[lost, "source"] = "unresolved"
        out.loc[lost, "reason"] = "no building, parcel or geometry to place a connection point"
    for c in ("building_id", "parcel_id", "user_id"):  # as the town's points hold them
        if isinstance(pts[c].dtype, pd.StringDtype):
            out[c] = out[c].astype(pts[c].dtype)
    return out
