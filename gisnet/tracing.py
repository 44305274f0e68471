"""Connection points, control manholes and traces over the sewer graph.

Poughkeepsie § 168-22.5J: where no control manhole was required, the control
manhole is "the nearest downstream manhole in the public sewer from the point
at which the building sewer is connected". This module finds that point (the
*tap*) for every building, parcel and industrial user, and answers "first
public, active manhole downstream", "plant served" and the path lengths for
every node of the graph in one vectorised pass, so that a building's answer is
a lookup.

Conventions
-----------
- All geometry is in the graph's working CRS (``G.graph["crs"]``, the town's
  CRS); every length is in feet (``*_ft``), converted with
  ``G.graph["ft_per_unit"]``.
- The graph follows ``docs/architecture.md`` ("Sewer graph"): edges
  ``(u, v, key=main_id)`` in flow direction, node attribute ``is_manhole``
  (public, active manhole structure) and ``outlet``.
- **Primary out-edge** of a node (where its flow is followed downstream): among
  its out-edges that are active and not storm, the one of largest diameter
  (unknown diameter counts as smallest); ties go to the smallest edge key.
  Outlet nodes have no out-edge. A node with no such out-edge is terminal.
- **Control manhole of a tap** on edge ``u -> v``: ``v`` if ``v`` is a manhole,
  else the first manhole on the primary-outflow chain from ``v``. A tap at
  distance 0 on an edge whose upstream node ``u`` is a manhole connects into
  that manhole, whose control manhole is then ``u`` itself. Junctions,
  fittings, cleanouts and private or inactive manholes are passed over.
- Only *eligible* edges (public, active, gravity, sanitary/combined) are ever
  tapped; storm, private and inactive mains never are.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer

from .errors import ConfigError, CRSError, NotFoundError, TopologyError

if TYPE_CHECKING:  # pragma: no cover
    from .town import Town

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
]

#: Columns of the ``control_manholes`` layer (plus geometry, the tap point).
CONTROL_COLUMNS = [
    "building_id",
    "parcel_id",
    "user_id",
    "main_id",
    "tap_distance_ft",
    "control_manhole_id",
    "plant_id",
    "path_length_ft",
    "plant_path_length_ft",
    "source",
    "section",
]

_NOT_FLOWING_KINDS = {"storm"}


# ---------------------------------------------------------------------------
# The downstream index
# ---------------------------------------------------------------------------


def _resolve(next_node: np.ndarray, step_ft: np.ndarray, stop: np.ndarray):
    """Follow ``next_node`` pointers from every node to the first ``stop`` node.

    Pointer jumping (doubling) over int indices: O(n log d) numpy work where d
    is the longest chain, no Python loop over nodes.

    Parameters
    ----------
    next_node
        int array, next hop of each node, -1 for terminal nodes.
    step_ft
        float array, length (ft) of the hop from each node to its next.
    stop
        bool array, nodes where the walk stops (the node itself counts).

    Returns
    -------
    target : int array
        The first stop node at or after each node, -1 if the chain ends at a
        terminal non-stop node or runs into a cycle with no stop node.
    dist_ft : float array
        Chain length (ft) from each node to its target, NaN where no target.
    cyclic : bool array
        True where the chain never ends (enters a cycle with no stop node).
    """
    n = len(next_node)
    ar = np.arange(n)
    fixed = stop | (next_node < 0)
    ptr = np.where(fixed, ar, next_node)
    w = np.where(fixed, 0.0, step_ft).astype(float)
    for _ in range(max(1, math.ceil(math.log2(n + 1)) + 1)):
        nptr = ptr[ptr]
        if np.array_equal(nptr, ptr):
            break
        w = w + w[ptr]
        ptr = nptr
    ended = fixed[ptr]
    found = ended & stop[ptr]
    target = np.where(found, ptr, -1)
    dist = np.where(found, w, np.nan)
    return target, dist, ~ended


@dataclass
class _Edges:
    """The graph's edges as parallel arrays (edge index = position)."""

    u: np.ndarray  # int node index
    v: np.ndarray  # int node index
    key: np.ndarray  # object: edge key
    main_id: np.ndarray  # object
    length_ft: np.ndarray  # float
    diameter_in: np.ndarray  # float (NaN unknown)
    eligible: np.ndarray  # bool
    flowing: np.ndarray  # bool: active and not storm
    geometry: np.ndarray  # shapely LineStrings, working CRS


class DownstreamIndex:
    """First manhole, plant served and path lengths downstream of every node.

    Built in one vectorised pass: each node's primary out-edge (see module
    notes) becomes an int pointer, and pointer jumping resolves, for every
    node at once, the first public active manhole and the outlet reached along
    the primary-outflow chain, with chain lengths in feet. Nodes whose chain
    runs into a cycle without a manhole (or outlet) get none and are flagged
    in ``manhole_cyclic`` / ``outlet_cyclic``; nothing is dropped.

    Parameters
    ----------
    G
        Sewer graph per ``docs/architecture.md`` (MultiDiGraph, flow u -> v).

    Attributes
    ----------
    nodes
        Node ids (object array); a node's int index is its position.
    next_edge, next_node
        Primary out-edge index and its downstream node index (-1: terminal).
    manhole
        For each node, index of the first manhole at or after it (the node
        itself if it is one), -1 if none.
    manhole_ft
        Chain length in feet from the node to that manhole (NaN if none).
    outlet, outlet_ft
        Same for the outlet (plant/outfall) the chain ends at.
    manhole_cyclic, outlet_cyclic
        Chain enters a cycle with no manhole / no outlet on it.

    Examples
    --------
    >>> idx = DownstreamIndex(G)                       # doctest: +SKIP
    >>> idx.first_manhole("J000012")                   # doctest: +SKIP
    'MH-0042'
    """

    def __init__(self, G: nx.MultiDiGraph) -> None:
        if not isinstance(G, nx.MultiDiGraph):
            raise TopologyError("the sewer graph must be a networkx MultiDiGraph")
        self.G = G
        self.crs = G.graph.get("crs")
        self.ft_per_unit = float(G.graph.get("ft_per_unit", 1.0))
        tol = G.graph.get("snap_tolerance_ft")
        self.snap_tolerance_ft = 1.0 if tol is None else float(tol)
        nodes = list(G.nodes)
        self.nodes = np.empty(len(nodes), dtype=object)
        self.nodes[:] = nodes
        self.node_index: dict[Any, int] = {n: i for i, n in enumerate(nodes)}
        outlets = set(G.graph.get("outlets") or ())
        ndata = G.nodes
        self.is_manhole = np.fromiter(
            (bool(ndata[n].get("is_manhole", False)) for n in nodes), bool, len(nodes)
        )
        self.is_outlet = np.fromiter(
            (bool(ndata[n].get("outlet", False)) or n in outlets for n in nodes), bool, len(nodes)
        )
        self.edges = self._edge_arrays(G)
        self.edge_index: dict[tuple[Any, Any, Any], int] = {
            (nodes[a], nodes[b], k): i
            for i, (a, b, k) in enumerate(
                zip(self.edges.u, self.edges.v, self.edges.key, strict=True))
        }
        self.next_edge, self.next_node = self._primary_out_edges()
        step = np.zeros(len(nodes))
        has = self.next_edge >= 0
        step[has] = self.edges.length_ft[self.next_edge[has]]
        self.manhole, self.manhole_ft, self.manhole_cyclic = _resolve(
            self.next_node, step, self.is_manhole
        )
        self.outlet, self.outlet_ft, self.outlet_cyclic = _resolve(
            self.next_node, step, self.is_outlet
        )
        log.debug(
            "downstream index: %d nodes, %d edges, %d without a manhole downstream",
            len(nodes), len(self.edges.u), int((self.manhole < 0).sum()),
        )

    # -- construction -----------------------------------------------------

    def _edge_arrays(self, G: nx.MultiDiGraph) -> _Edges:
        idx = self.node_index
        rows = list(G.edges(keys=True, data=True))
        m = len(rows)
        u = np.fromiter((idx[r[0]] for r in rows), np.int64, m)
        v = np.fromiter((idx[r[1]] for r in rows), np.int64, m)
        key = np.empty(m, dtype=object)
        key[:] = [r[2] for r in rows]
        main_id = np.empty(m, dtype=object)
        main_id[:] = [r[3].get("main_id", r[2]) for r in rows]
        geom = np.empty(m, dtype=object)
        geom[:] = [r[3].get("geometry") for r in rows]
        length = np.array([r[3].get("length_ft", np.nan) for r in rows], dtype=float)
        missing = ~np.isfinite(length)
        if missing.any():
            length[missing] = shapely.length(geom[missing].astype(object)) * self.ft_per_unit
        diam = np.array(
            [np.nan if r[3].get("diameter_in") is None else r[3]["diameter_in"] for r in rows],
            dtype=float,
        )
        eligible = np.fromiter((bool(r[3].get("eligible", False)) for r in rows), bool, m)
        flowing = np.fromiter(
            (
                r[3].get("active", True) is not False
                and str(r[3].get("kind") or "").lower() not in _NOT_FLOWING_KINDS
                for r in rows
            ),
            bool,
            m,
        )
        return _Edges(u, v, key, main_id, length, diam, eligible, flowing, geom)

    def _primary_out_edges(self) -> tuple[np.ndarray, np.ndarray]:
        e = self.edges
        n = len(self.nodes)
        next_edge = np.full(n, -1, dtype=np.int64)
        cand = np.flatnonzero(e.flowing & ~self.is_outlet[e.u])
        if len(cand):
            df = pd.DataFrame(
                {
                    "e": cand,
                    "u": e.u[cand],
                    "d": np.nan_to_num(e.diameter_in[cand], nan=-np.inf),
                    "k": [str(k) for k in e.key[cand]],
                }
            )
            df = df.sort_values(["u", "d", "k"], ascending=[True, False, True], kind="stable")
            first = df.drop_duplicates("u", keep="first")
            next_edge[first["u"].to_numpy()] = first["e"].to_numpy()
        next_node = np.where(next_edge >= 0, e.v[np.maximum(next_edge, 0)], -1)
        return next_edge, next_node

    # -- lookups ----------------------------------------------------------

    def _node(self, node_id: Any) -> int:
        try:
            return self.node_index[node_id]
        except KeyError:
            raise NotFoundError(f"node {node_id!r} is not in the sewer graph", layer="graph",
                                feature=node_id) from None

    def first_manhole(self, node_id: Any, *, include_self: bool = False) -> Any:
        """Id of the first public active manhole downstream of a node.

        ``include_self=False`` (the default) starts from the node's primary
        out-edge; ``True`` returns the node itself if it is a manhole.
        None if the chain reaches no manhole.
        """
        i = self._node(node_id)
        if not include_self:
            i = self.next_node[i]
            if i < 0:
                return None
        m = self.manhole[i]
        return None if m < 0 else self.nodes[m]

    def outlet_of(self, node_id: Any) -> Any:
        """Id of the outlet (plant/outfall) the node's chain reaches, or None."""
        o = self.outlet[self._node(node_id)]
        return None if o < 0 else self.nodes[o]

    def edge_of(self, u: Any, v: Any, key: Any) -> int:
        """Edge index of ``(u, v, key)``."""
        try:
            return self.edge_index[(u, v, key)]
        except KeyError:
            raise NotFoundError(f"edge {u}->{v} ({key}) is not in the sewer graph",
                                layer="graph", feature=key) from None

    def chain_edges(self, start: int, stop: int = -1) -> list[int]:
        """Edge indices along the primary chain from node index ``start`` until
        node index ``stop`` (or the end of the chain; a cycle ends it)."""
        out: list[int] = []
        seen = set()
        i = start
        while i >= 0 and i != stop and i not in seen:
            seen.add(i)
            e = self.next_edge[i]
            if e < 0:
                break
            out.append(int(e))
            i = int(self.next_node[i])
        return out

    def tap_targets(
        self, edge: np.ndarray, tap_ft: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Control manhole and outlet of taps, vectorised.

        Parameters
        ----------
        edge
            Edge index of each tap (-1 for none).
        tap_ft
            Distance (ft) of each tap along its edge from the upstream end.

        Returns
        -------
        manhole, manhole_ft, outlet, outlet_ft
            Node indices (-1 none) and path lengths in feet from the tap.
        """
        edge = np.asarray(edge, dtype=np.int64)
        ok = edge >= 0
        e = np.maximum(edge, 0)
        e_arr = self.edges
        v = e_arr.v[e]
        u = e_arr.u[e]
        rest = np.maximum(e_arr.length_ft[e] - np.asarray(tap_ft, dtype=float), 0.0)
        at_u = ok & (np.asarray(tap_ft, dtype=float) <= 0.0) & self.is_manhole[u]
        mh = np.where(ok, self.manhole[v], -1)
        mh_ft = np.where(ok, rest + self.manhole_ft[v], np.nan)
        mh = np.where(at_u, u, mh)
        mh_ft = np.where(at_u, 0.0, mh_ft)
        out = np.where(ok, self.outlet[v], -1)
        out_ft = np.where(ok, rest + self.outlet_ft[v], np.nan)
        return mh, mh_ft, out, out_ft


def _index(G: nx.MultiDiGraph, index: DownstreamIndex | None) -> DownstreamIndex:
    if index is None:
        return DownstreamIndex(G)
    if index.G is not G:
        raise ConfigError("the DownstreamIndex given was built for another graph")
    return index


# ---------------------------------------------------------------------------
# Connection points
# ---------------------------------------------------------------------------


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


def _project(index: DownstreamIndex, points: np.ndarray):
    """Project points onto their nearest eligible edge.

    Returns edge index (-1 where no point or no eligible edge), fraction along
    the edge (0..1 from its upstream end), tap point and offset (ft) from the
    point to its tap. Ties between equidistant edges go to the lowest edge
    index (deterministic).
    """
    n = len(points)
    edge = np.full(n, -1, dtype=np.int64)
    frac = np.full(n, np.nan)
    taps = np.empty(n, dtype=object)
    offset = np.full(n, np.nan)
    elig = np.flatnonzero(index.edges.eligible)
    has = np.flatnonzero(~shapely.is_missing(points.astype(object)))
    if not len(elig) or not len(has):
        return edge, frac, taps, offset
    geoms = index.edges.geometry[elig]
    tree = shapely.STRtree(geoms)
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


#: Above this many points the nearest-main query is split over two threads
#: (shapely releases the GIL; measured about 2x on 2 cores).
THREADED_QUERY_MIN = 100_000


def _query_nearest(tree: shapely.STRtree, pts: np.ndarray):
    """``tree.query_nearest(pts, all_matches=True, return_distance=True)``,
    in two threads for large inputs. Returns ((query idx, tree idx), dist)."""
    if len(pts) < THREADED_QUERY_MIN:
        return tree.query_nearest(pts, all_matches=True, return_distance=True)
    from concurrent.futures import ThreadPoolExecutor

    half = len(pts) // 2
    chunks = [(0, pts[:half]), (half, pts[half:])]
    with ThreadPoolExecutor(max_workers=2) as ex:
        parts = list(ex.map(
            lambda c: tree.query_nearest(c[1], all_matches=True, return_distance=True), chunks))
    qi = np.concatenate([p[0][0] + off for p, (off, _) in zip(parts, chunks, strict=True)])
    ti = np.concatenate([p[0][1] for p in parts])
    dist = np.concatenate([p[1] for p in parts])
    return (qi, ti), dist


def _lateral_taps(index: DownstreamIndex, laterals: gpd.GeoDataFrame):
    """Tap of each lateral: of its two ends, the one nearer an eligible edge,
    projected onto that edge. Returns (edge, frac, taps, offset_ft, house_end)."""
    geoms = laterals.geometry.to_numpy()
    n = len(geoms)
    starts = shapely.get_point(geoms, 0)
    ends = shapely.get_point(geoms, -1)
    both = np.concatenate([starts, ends])
    edge, frac, taps, offset = _project(index, both)
    off = np.where(np.isnan(offset), np.inf, offset)
    use_end = off[n:] < off[:n]
    pick = np.where(use_end, np.arange(n) + n, np.arange(n))
    house = np.where(use_end, starts, ends)
    return edge[pick], frac[pick], taps[pick], offset[pick], house


def _id_series(gdf: gpd.GeoDataFrame | None, col: str) -> pd.Series:
    if gdf is None or col not in gdf:
        return pd.Series([None] * (0 if gdf is None else len(gdf)), dtype=object)
    s = gdf[col].astype(object)
    return s.where(s.notna(), None).reset_index(drop=True)


def _features(town: Town) -> pd.DataFrame:
    """Rows to connect: each building, each parcel without a building."""
    parcels = town.layers["parcels"]
    buildings = town.layer("buildings")
    frames = []
    b_parcel = pd.Series([], dtype=object)
    if buildings is not None and len(buildings):
        pts = _as_points(buildings.geometry.to_numpy(), polygon_point="centroid")
        b_parcel = _id_series(buildings, "parcel_id")
        missing = b_parcel.isna().to_numpy() & ~shapely.is_missing(pts.astype(object))
        if missing.any() and len(parcels):
            # building without a parcel id: the parcel its point lies in
            qi, pi = parcels.sindex.query(pts[missing], predicate="intersects")
            fill = pd.Series(parcels["parcel_id"].to_numpy()[pi], index=qi)
            fill = fill[~fill.index.duplicated()]
            idx = np.flatnonzero(missing)
            b_parcel = b_parcel.copy()
            b_parcel.iloc[idx[fill.index.to_numpy()]] = fill.to_numpy()
        frames.append(
            pd.DataFrame(
                {
                    "building_id": _id_series(buildings, "building_id"),
                    "parcel_id": b_parcel,
                    "user_id": None,
                    "point": pts,
                }
            )
        )
    with_bldg = set(b_parcel.dropna())
    p_ids = _id_series(parcels, "parcel_id")
    lone = ~p_ids.isin(with_bldg).to_numpy()
    if lone.any():
        pts = _as_points(parcels.geometry.to_numpy()[lone], polygon_point="representative")
        frames.append(
            pd.DataFrame(
                {"building_id": None, "parcel_id": p_ids[lone].to_numpy(), "user_id": None,
                 "point": pts}
            )
        )
    if not frames:
        return pd.DataFrame(columns=["building_id", "parcel_id", "user_id", "point"])
    return pd.concat(frames, ignore_index=True)


def _empty_points(crs: Any) -> gpd.GeoDataFrame:
    df = pd.DataFrame({c: pd.Series([], dtype=object) for c in POINT_COLUMNS})
    return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries([], crs=crs), crs=crs)


def _locate(
    index: DownstreamIndex, feats: pd.DataFrame, laterals: gpd.GeoDataFrame | None
) -> gpd.GeoDataFrame:
    """Taps for feature rows (``building_id, parcel_id, user_id, point``).

    Returns the points and the ids of laterals that do not end on an eligible
    main (not used)."""
    n = len(feats)
    edge = np.full(n, -1, dtype=np.int64)
    frac = np.full(n, np.nan)
    taps = np.empty(n, dtype=object)
    offset = np.full(n, np.nan)
    source = np.full(n, None, dtype=object)
    off_main: list[Any] = []
    if laterals is not None and len(laterals) and n:
        le, lf, lt, lo, house = _lateral_taps(index, laterals)
        lat = pd.DataFrame(
            {
                "building_id": _id_series(laterals, "building_id"),
                "parcel_id": _id_series(laterals, "parcel_id"),
                "i": np.arange(len(laterals)),
            }
        )
        # a lateral gives the tap only if its main end lies on an eligible
        # main (within the snap tolerance); one drawn to a storm, private or
        # inactive main does not, and its building is projected instead
        on_main = (le >= 0) & (np.nan_to_num(lo, nan=np.inf) <= index.snap_tolerance_ft)
        off_main = _id_series(laterals, "lateral_id")[~on_main].tolist() \
            if "lateral_id" in laterals else [str(i) for i in np.flatnonzero(~on_main)]
        lat = lat[on_main]
        assigned = np.full(n, -1, dtype=np.int64)
        # 1. by building id; 2. by parcel id (a rear building shares the front
        # building's sewer); first lateral in layer order wins.
        for col in ("building_id", "parcel_id"):
            look = lat.dropna(subset=[col]).drop_duplicates(col).set_index(col)["i"]
            if not len(look):
                continue
            keys = feats[col].to_numpy()
            hit = pd.Series(keys).map(look).to_numpy()
            take = (assigned < 0) & pd.notna(hit)
            assigned[take] = hit[take].astype(np.int64)
        got = assigned >= 0
        a = assigned[got]
        edge[got], frac[got], taps[got], offset[got] = le[a], lf[a], lt[a], lo[a]
        # offset of a lateral tap: from the feature point along the lateral's
        # straight line is not meaningful; report the tap's distance from the
        # lateral's house end instead.
        offset[got] = shapely.distance(house[a], lt[a]) * index.ft_per_unit
        source[got] = "lateral"
    todo = np.flatnonzero(edge < 0)
    if len(todo):
        pe, pf, pt, po = _project(index, feats["point"].to_numpy()[todo])
        edge[todo], frac[todo], taps[todo], offset[todo] = pe, pf, pt, po
        source[todo[pe >= 0]] = "projected"
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
            "building_id": feats["building_id"].to_numpy(dtype=object),
            "parcel_id": feats["parcel_id"].to_numpy(dtype=object),
            "user_id": feats["user_id"].to_numpy(dtype=object),
            "main_id": _col(E.main_id[e]),
            "edge_u": _col(nodes[E.u[e]]),
            "edge_v": _col(nodes[E.v[e]]),
            "edge_key": _col(E.key[e]),
            "tap_distance_ft": np.where(ok, frac * E.length_ft[e], np.nan),
            "offset_ft": offset,
            "source": source,
        },
        geometry=gpd.GeoSeries(taps, crs=index.crs),
        crs=index.crs,
    )
    return gdf, off_main


def connection_points(
    town: Town, G: nx.MultiDiGraph, *, index: DownstreamIndex | None = None
) -> gpd.GeoDataFrame:
    """The point where each building sewer joins the public sewer (the tap).

    One row per building, one per parcel without a building, and one per
    industrial user. With a laterals layer, a building's tap is the end of its
    lateral (matched by ``building_id``, else by ``parcel_id``) lying on an
    eligible main, within the graph's snap tolerance, projected onto that
    main; a lateral ending elsewhere (on a storm, private or inactive main) is
    not used and reported (``lateral_off_main``). Otherwise the
    building's centroid (a parcel's representative point) is projected onto
    the nearest eligible main (``STRtree.query_nearest``, vectorised;
    equidistant mains: the first in graph edge order). Storm, private,
    inactive and force mains are never tapped. A user takes its building's tap
    (by ``building_id``), else its parcel's first, else its own geometry's.

    Parameters
    ----------
    town
        Loaded town (layers in the working CRS).
    G
        Sewer graph of the town.
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.

    Returns
    -------
    GeoDataFrame
        ``building_id, parcel_id, user_id, main_id, edge_u, edge_v, edge_key,
        tap_distance_ft`` (ft along the edge from its upstream end),
        ``offset_ft`` (ft from the feature point, or lateral house end, to the
        tap), ``source`` (``lateral`` | ``projected`` | null when nothing is
        tappable) and the tap point geometry (working CRS).
    """
    idx = _index(G, index)
    feats = _features(town)
    laterals = town.layer("laterals")
    pts, off_main = _locate(idx, feats, laterals)
    if off_main:
        town.report.add(
            "lateral_off_main", "warning",
            f"{len(off_main)} lateral(s) do not end on an eligible public sanitary main "
            f"(within {idx.snap_tolerance_ft:g} ft; e.g. drawn to a storm, private or inactive "
            "main); their buildings were projected onto the nearest eligible main instead",
            layer="laterals", feature_id=",".join(str(x) for x in off_main[:50]),
        )
    users = town.layer("users")
    if users is not None and len(users):
        pts = pd.concat([pts, _user_points(idx, users, pts, laterals, town)], ignore_index=True)
    if not len(pts):
        return _empty_points(idx.crs)
    out = gpd.GeoDataFrame(pts, geometry="geometry", crs=idx.crs)
    none = out["source"].isna()
    if none.any():
        town.report.add(
            "no_connection_point", "warning",
            f"{int(none.sum())} building(s)/parcel(s)/user(s) could not be given a connection "
            "point (no geometry or no eligible public sanitary main)",
            layer="buildings",
        )
    log.info("connection points: %d (%d by lateral)", len(out),
             int((out["source"] == "lateral").sum()))
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
    by_b = pts.dropna(subset=["building_id"]).drop_duplicates("building_id").set_index(
        "building_id")[cols[1:]] if len(pts) else None
    by_p = pts.dropna(subset=["parcel_id"]).drop_duplicates("parcel_id").set_index(
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
    if own:
        geoms = users.geometry.to_numpy() if users.geometry is not None else None
        if geoms is not None:
            feats = pd.DataFrame(
                {"building_id": ub.iloc[own].to_numpy(dtype=object),
                 "parcel_id": up.iloc[own].to_numpy(dtype=object),
                 "user_id": uid.iloc[own].to_numpy(dtype=object),
                 "point": _as_points(geoms[own], polygon_point="representative")}
            )
            located, _ = _locate(idx, feats, laterals)
            for j, i in enumerate(own):
                for c in cols:
                    out.at[i, c] = located.iloc[j][c]
    for c in ("tap_distance_ft", "offset_ft"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    return out


# ---------------------------------------------------------------------------
# Control manholes
# ---------------------------------------------------------------------------


def _edge_indices(idx: DownstreamIndex, points: pd.DataFrame) -> np.ndarray:
    """Edge index of each connection point (-1 where it has none)."""
    n = len(points)
    ku = points["edge_u"].to_numpy(dtype=object)
    kv = points["edge_v"].to_numpy(dtype=object)
    kk = points["edge_key"].to_numpy(dtype=object)
    out = np.full(n, -1, dtype=np.int64)
    keyed = pd.Index(idx.edges.key)
    if keyed.is_unique:  # graph-wide unique keys (main ids): one vectorised lookup
        e = keyed.get_indexer(kk)
        hit = e >= 0
        eh = e[hit]
        same = (idx.nodes[idx.edges.u[eh]] == ku[hit]) & (idx.nodes[idx.edges.v[eh]] == kv[hit])
        rows = np.flatnonzero(hit)[same]
        out[rows] = eh[same]
    todo = np.flatnonzero((out < 0) & pd.notna(kk))
    get = idx.edge_index.get
    for i in todo:
        out[i] = get((ku[i], kv[i], kk[i]), -1)
    return out


def _tail_coords(idx: DownstreamIndex, edge: np.ndarray, frac: np.ndarray, taps: np.ndarray):
    """Coordinates of each tap edge from the tap to its downstream end.

    Returns (coords (k, 2), owner row per coordinate), rows in order."""
    geoms = idx.edges.geometry[edge]
    xy, own = shapely.get_coordinates(geoms, return_index=True)
    if not len(xy):
        return np.empty((0, 2)), np.empty(0, np.int64)
    seg = np.zeros(len(xy))
    same = np.zeros(len(xy), bool)
    same[1:] = own[1:] == own[:-1]
    d = np.hypot(*(xy[1:] - xy[:-1]).T)
    seg[1:] = np.where(same[1:], d, 0.0)
    cum = np.cumsum(seg)
    start = np.zeros(len(xy), bool)
    start[0] = True
    start[1:] = ~same[1:]
    base = np.maximum.accumulate(np.where(start, cum, 0.0))
    along = cum - base
    total = shapely.length(geoms)[own]
    f = np.where(total > 0, along / np.where(total > 0, total, 1.0), 1.0)
    keep = f > frac[own]
    last = np.ones(len(xy), bool)
    last[:-1] = ~same[1:]
    keep |= last
    tap_xy = shapely.get_coordinates(taps)
    coords = np.concatenate([tap_xy, xy[keep]])
    owner = np.concatenate([np.arange(len(edge)), own[keep]])
    order = np.argsort(owner, kind="stable")
    return coords[order], owner[order]


def _path_lines(
    idx: DownstreamIndex,
    edge: np.ndarray,
    frac: np.ndarray,
    taps: np.ndarray,
    target: np.ndarray,
) -> np.ndarray:
    """Lines from each tap along its edge and then the primary chain to the
    node ``target`` (node index). Rows with target -1 get None."""
    n = len(edge)
    lines = np.empty(n, dtype=object)
    rows = np.flatnonzero((edge >= 0) & (target >= 0))
    if not len(rows):
        return lines
    tc, towner = _tail_coords(idx, edge[rows], frac[rows], taps[rows])
    parts_xy = [tc]
    parts_row = [towner]
    parts_seq = [np.zeros(len(towner), np.int64)]
    cur = idx.edges.v[edge[rows]]
    tgt = target[rows]
    local = np.arange(len(rows))
    active = cur != tgt
    # a tap at distance 0 into manhole u: no path
    at_u = idx.edges.u[edge[rows]] == tgt
    active &= ~at_u
    step = 0
    limit = len(idx.nodes) + 1
    while active.any() and step < limit:
        step += 1
        a = np.flatnonzero(active)
        e = idx.next_edge[cur[a]]
        xy, own = shapely.get_coordinates(idx.edges.geometry[e], return_index=True)
        first = np.ones(len(own), bool)
        first[1:] = own[1:] != own[:-1]
        parts_xy.append(xy[~first])
        parts_row.append(local[a][own[~first]])
        parts_seq.append(np.full((~first).sum(), step, np.int64))
        cur[a] = idx.next_node[cur[a]]
        active[a] = cur[a] != tgt[a]
    xy = np.concatenate(parts_xy)
    row = np.concatenate(parts_row)
    seq = np.concatenate(parts_seq)
    order = np.lexsort((seq, row))  # stable within (row, seq): vertex order kept
    xy, row = xy[order], row[order]
    counts = np.bincount(row, minlength=len(rows))
    good = (counts >= 2) & ~at_u
    keep = good[row]
    rank = np.cumsum(good) - 1  # shapely wants indices 0..k-1 without gaps
    made = shapely.linestrings(xy[keep], indices=rank[row[keep]])
    which = rows[np.flatnonzero(good)]
    # drop zero-length paths (tap exactly on the manhole)
    made = np.asarray(made, dtype=object)
    zero = shapely.length(made) <= 0
    made[zero] = None
    lines[which] = made
    return lines


def control_manholes(
    town: Town | None,
    G: nx.MultiDiGraph,
    *,
    points: gpd.GeoDataFrame | None = None,
    index: DownstreamIndex | None = None,
    paths: bool = True,
) -> dict[str, gpd.GeoDataFrame]:
    """Control manhole, plant served and path length of every connection point.

    Parameters
    ----------
    town
        Loaded town; needed only when ``points`` is not given (and for the
        profile's section).
    G
        Sewer graph.
    points
        Output of :func:`connection_points` (computed if None).
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.
    paths
        Also build the ``control_paths`` lines (skip for speed).

    Returns
    -------
    dict
        ``control_manholes``: ``building_id, parcel_id, user_id, main_id,
        tap_distance_ft, control_manhole_id, plant_id, path_length_ft`` (tap to
        control manhole along the pipes, ft), ``plant_path_length_ft`` (tap to
        the outlet, ft), ``source``, ``section``, tap point geometry.
        ``control_paths``: the same ids and ``path_length_ft`` with the line
        from the tap to the control manhole (working CRS).
    """
    idx = _index(G, index)
    if points is None:
        if town is None:
            raise ConfigError("control_manholes needs a town or connection points")
        points = connection_points(town, G, index=idx)
    points = points.reset_index(drop=True)
    edge = _edge_indices(idx, points)
    tap_ft = points["tap_distance_ft"].to_numpy(dtype=float)
    mh, mh_ft, out, out_ft = idx.tap_targets(edge, np.nan_to_num(tap_ft))
    nodes = idx.nodes
    mh_id = np.where(mh >= 0, nodes[np.maximum(mh, 0)], None)
    plant = np.where(out >= 0, nodes[np.maximum(out, 0)], None)
    section = _control_section(town)
    result = gpd.GeoDataFrame(
        {
            "building_id": points["building_id"].to_numpy(dtype=object),
            "parcel_id": points["parcel_id"].to_numpy(dtype=object),
            "user_id": points["user_id"].to_numpy(dtype=object),
            "main_id": points["main_id"].to_numpy(dtype=object),
            "tap_distance_ft": tap_ft,
            "control_manhole_id": mh_id,
            "plant_id": plant,
            "path_length_ft": mh_ft,
            "plant_path_length_ft": out_ft,
            "source": points["source"].to_numpy(dtype=object),
            "section": section,
        },
        geometry=points.geometry.to_numpy(),
        crs=idx.crs,
    )
    nomh = (edge >= 0) & (mh < 0)
    if nomh.any() and town is not None:
        town.report.add(
            "no_control_manhole", "warning",
            f"{int(nomh.sum())} connection point(s) reach no public active manhole downstream",
            layer="mains",
        )
    out_layers = {"control_manholes": result}
    if paths:
        e = np.maximum(edge, 0)
        frac = np.where(
            idx.edges.length_ft[e] > 0, np.nan_to_num(tap_ft) / idx.edges.length_ft[e], 0.0
        )
        lines = _path_lines(idx, np.where(edge >= 0, edge, -1), np.clip(frac, 0, 1),
                            points.geometry.to_numpy(), mh)
        cp = result[["building_id", "parcel_id", "user_id", "control_manhole_id",
                     "path_length_ft"]].copy()
        out_layers["control_paths"] = gpd.GeoDataFrame(
            cp, geometry=gpd.GeoSeries(lines, crs=idx.crs), crs=idx.crs
        )
    return out_layers


def _control_section(town: Town | None) -> str | None:
    prof = getattr(town, "profile", None) if town is not None else None
    sec = _profile_get(prof, "control_manhole", "section")
    return None if sec is None else str(sec)


def _profile_get(profile: Any, section: str, key: str, default: Any = None) -> Any:
    """``profile[section][key]`` for a profile object, mapping or None."""
    if profile is None:
        return default
    part: Any = None
    if isinstance(profile, dict):
        part = profile.get(section)
    else:
        part = getattr(profile, section, None)
        if part is None and hasattr(profile, "get"):
            part = profile.get(section)
        if part is None:
            for attr in ("data", "raw", "rules"):
                d = getattr(profile, attr, None)
                if isinstance(d, dict) and section in d:
                    part = d[section]
                    break
    if part is None:
        return default
    if isinstance(part, dict):
        return part.get(key, default)
    return getattr(part, key, default)


# ---------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------


def _edge_rows(idx: DownstreamIndex, edges: list[int] | np.ndarray) -> gpd.GeoDataFrame:
    e = np.asarray(edges, dtype=np.int64)
    E = idx.edges
    return gpd.GeoDataFrame(
        {
            "main_id": E.main_id[e],
            "edge_u": idx.nodes[E.u[e]],
            "edge_v": idx.nodes[E.v[e]],
            "edge_key": E.key[e],
            "length_ft": E.length_ft[e],
            "diameter_in": E.diameter_in[e],
        },
        geometry=gpd.GeoSeries(E.geometry[e], crs=idx.crs),
        crs=idx.crs,
    )


#: How far (ft) outside the extent of the sewer mains a point may lie and still be traced.
POINT_MARGIN_FT = 5280.0


def _point_in_town(idx: DownstreamIndex, point: tuple[float, float],
                   crs: Any) -> tuple[float, float]:
    """``point`` in the working CRS, refused when it is not finite or lies more than
    :data:`POINT_MARGIN_FT` outside the bounding box of the mains (most often a
    point given in another CRS than the one named)."""
    x, y = (float(v) for v in point)
    if not (np.isfinite(x) and np.isfinite(y)):
        raise ConfigError(f"point ({x}, {y}) must have finite coordinates")
    if crs is not None:
        try:
            pcrs = CRS.from_user_input(crs)
        except Exception as exc:  # pyproj.exceptions.CRSError
            raise CRSError(f"point CRS {crs!r} is not a CRS pyproj knows") from exc
        if pcrs != CRS.from_user_input(idx.crs):
            tr = Transformer.from_crs(pcrs, idx.crs, always_xy=True)
            x, y = tr.transform(x, y)
            if not (np.isfinite(x) and np.isfinite(y)):
                raise CRSError(f"point {point} cannot be projected from {crs} to the "
                               f"working CRS (outside the CRS's area of use?)")
    geoms = idx.edges.geometry
    if len(geoms):
        x0, y0, x1, y1 = shapely.total_bounds(geoms)
        dx = max(x0 - x, 0.0, x - x1)
        dy = max(y0 - y, 0.0, y - y1)
        off_ft = float(np.hypot(dx, dy)) * idx.ft_per_unit
        if off_ft > POINT_MARGIN_FT:
            given = f" (given in {crs})" if crs is not None else ""
            raise ConfigError(
                f"point {point}{given} is at ({x:,.1f}, {y:,.1f}) in the working CRS, "
                f"{off_ft:,.0f} ft outside the sewer network (x {x0:,.0f}..{x1:,.0f}, "
                f"y {y0:,.0f}..{y1:,.0f}); is the point in the CRS named, and X before Y?")
    return x, y


def trace_downstream(
    town: Town,
    G: nx.MultiDiGraph,
    *,
    parcel_id: Any = None,
    point: tuple[float, float] | None = None,
    crs: Any = None,
    index: DownstreamIndex | None = None,
) -> dict[str, Any]:
    """Trace from a parcel or a point downstream to the plant.

    Parameters
    ----------
    town, G
        Loaded town and its sewer graph.
    parcel_id
        Trace from this parcel's connection point (its first building in
        layer order, else the parcel itself).
    point
        Or from this point ``(x, y)``, projected onto the nearest eligible main.
    crs
        CRS of ``point`` (default: the town's working CRS), e.g. ``EPSG:4326``.
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.

    Returns
    -------
    dict
        ``connection`` (one-row GeoDataFrame of the connection point),
        ``control_manhole_id``, ``plant_id``, ``control_length_ft`` (tap to
        control manhole), ``length_ft`` (tap to the outlet, or to the end of the
        chain), ``reaches_outlet`` (bool), ``path`` (GeoDataFrame of the pipes
        from the tap downstream, in order, the first cut at the tap, with
        ``seq`` and ``cum_length_ft``; working CRS).

    Raises
    ------
    NotFoundError
        Unknown parcel, or nothing tappable.
    ConfigError
        Neither or both of ``parcel_id`` and ``point``.
    """
    if (parcel_id is None) == (point is None):
        raise ConfigError("give exactly one of a parcel id or a point")
    idx = _index(G, index)
    if parcel_id is not None:
        feats = _features(town)
        sel = feats[feats["parcel_id"].astype(object) == parcel_id]
        if not len(sel):
            raise NotFoundError(f"parcel {parcel_id!r} not found", layer="parcels",
                                feature=parcel_id)
        feats = sel.iloc[[0]].reset_index(drop=True)
    else:
        x, y = _point_in_town(idx, point, crs)  # type: ignore[arg-type]
        feats = pd.DataFrame({"building_id": [None], "parcel_id": [None], "user_id": [None],
                              "point": np.array([shapely.Point(x, y)], dtype=object)})
    # A bare point has no building or parcel a lateral could belong to.
    laterals = town.layer("laterals") if parcel_id is not None else None
    conn, _ = _locate(idx, feats, laterals)
    if conn["source"].isna().all():
        raise NotFoundError("no eligible public sanitary main to connect to", layer="mains")
    edge = _edge_indices(idx, conn)
    tap_ft = conn["tap_distance_ft"].to_numpy(dtype=float)
    mh, mh_ft, out, _out_ft = idx.tap_targets(edge, tap_ft)
    e0 = int(edge[0])
    # pipes in order: the tap edge cut at the tap, then the primary chain
    chain = idx.chain_edges(int(idx.edges.v[e0]))
    path = _edge_rows(idx, [e0, *chain])
    g0 = idx.edges.geometry[e0]
    f0 = tap_ft[0] / idx.edges.length_ft[e0] if idx.edges.length_ft[e0] > 0 else 0.0
    tail, _ = _tail_coords(idx, np.array([e0]), np.array([f0]), conn.geometry.to_numpy()[:1])
    path.loc[0, "length_ft"] = max(idx.edges.length_ft[e0] - tap_ft[0], 0.0)
    path.loc[0, "geometry"] = shapely.linestrings(tail) if len(tail) >= 2 else g0
    path.insert(0, "seq", np.arange(len(path)))
    path["cum_length_ft"] = path["length_ft"].cumsum()
    end = int(idx.edges.v[chain[-1]]) if chain else int(idx.edges.v[e0])
    reaches = bool(idx.is_outlet[end])
    return {
        "connection": conn,
        "control_manhole_id": None if mh[0] < 0 else idx.nodes[mh[0]],
        "plant_id": None if out[0] < 0 else idx.nodes[out[0]],
        "control_length_ft": None if mh[0] < 0 else float(mh_ft[0]),
        "length_ft": float(path["length_ft"].sum()),
        "reaches_outlet": reaches,
        "path": path,
    }


def upstream_edges(G: nx.MultiDiGraph, node_id: Any) -> list[tuple[Any, Any, Any]]:
    """Every edge ``(u, v, key)`` whose flow can reach ``node_id``, each once.

    One breadth-first search over reversed edges (all out-edges at a split
    count: flow may go either way); a loop terminates because each node is
    expanded once. Storm and inactive pipes are not followed.
    """
    seen = {node_id}
    queue = deque([node_id])
    out: list[tuple[Any, Any, Any]] = []
    while queue:
        v = queue.popleft()
        for u, _, k, d in G.in_edges(v, keys=True, data=True):
            if d.get("active", True) is False or str(d.get("kind") or "").lower() in \
                    _NOT_FLOWING_KINDS:
                continue
            out.append((u, v, k))
            if u not in seen:
                seen.add(u)
                queue.append(u)
    return out


def trace_upstream(
    town: Town,
    G: nx.MultiDiGraph,
    manhole_id: Any,
    *,
    points: gpd.GeoDataFrame | None = None,
    index: DownstreamIndex | None = None,
) -> dict[str, gpd.GeoDataFrame]:
    """Everything that drains to a manhole: pipes, parcels, buildings, users.

    The suspects when a sample at that manhole fails. A connection point
    drains to the manhole when its tap lies on one of the upstream pipes.

    Parameters
    ----------
    town, G
        Loaded town and its sewer graph.
    manhole_id
        Node id of the manhole (or any node).
    points
        :func:`connection_points` output to reuse.
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.

    Returns
    -------
    dict
        ``pipes`` (each upstream pipe once, working CRS), ``parcels``,
        ``buildings`` and ``users`` (rows of the town's layers, with the
        ``main_id`` tapped). ``users`` is sorted by ``process_flow_gpd``,
        largest first. ``parcels`` carries ``avg_flow_gpd`` (sewered design or
        metered flow, :func:`gisnet.capacity.parcel_flows`). Totals
        (``process_flow_gpd`` of the users, ``avg_flow_gpd`` of the parcels)
        are in ``result["pipes"].attrs``.

    Raises
    ------
    NotFoundError
        If the manhole is not a node of the graph.
    """
    if manhole_id not in G:
        raise NotFoundError(f"manhole {manhole_id!r} is not in the sewer graph",
                            layer="manholes", feature=manhole_id)
    idx = _index(G, index)
    edges = upstream_edges(G, manhole_id)
    eidx = [idx.edge_index[k] for k in edges]
    pipes = _edge_rows(idx, eidx)
    if points is None:
        points = connection_points(town, G, index=idx)
    # edge keys are unique in the graph (main ids, split pieces suffixed @2 ...)
    drains = points["edge_key"].astype(object).isin({k for _, _, k in edges}).to_numpy()
    hit = points[drains]
    # a tap at distance 0 into the manhole itself also drains to it
    at_mh = (points["edge_u"].astype(object) == manhole_id) & (points["tap_distance_ft"] <= 0)
    if idx.is_manhole[idx.node_index[manhole_id]]:
        hit = pd.concat([hit, points[at_mh & ~drains]])
    res: dict[str, gpd.GeoDataFrame] = {"pipes": pipes}
    for role, col in (("parcels", "parcel_id"), ("buildings", "building_id"),
                      ("users", "user_id")):
        layer = town.layer(role)
        if layer is None:
            res[role] = gpd.GeoDataFrame(geometry=gpd.GeoSeries([], crs=idx.crs), crs=idx.crs)
            continue
        tap = hit.dropna(subset=[col]).drop_duplicates(col).set_index(col)["main_id"]
        ids = layer[col].astype(object)
        sel = layer[ids.isin(set(tap.index))].copy()
        sel["main_id"] = sel[col].astype(object).map(tap)
        if role == "users" and "process_flow_gpd" in sel:
            sel = sel.sort_values("process_flow_gpd", ascending=False, na_position="last",
                                  kind="stable")
        res[role] = sel.reset_index(drop=True)
    totals = {}
    if "process_flow_gpd" in res["users"]:
        totals["process_flow_gpd"] = float(res["users"]["process_flow_gpd"].fillna(0).sum())
    if len(res["parcels"]) and "parcel_id" in res["parcels"]:
        flows = _parcel_flows(town)
        if flows is not None:
            ids = res["parcels"]["parcel_id"].astype(object)
            pf = ids.map(flows["avg_flow_gpd"])
            res["parcels"]["avg_flow_gpd"] = pf.astype(float)
            # a septic parcel not connected has a tap location but sends nothing
            res["parcels"]["sewered"] = ids.map(flows["sewered"]).fillna(False).astype(bool)
            totals["avg_flow_gpd"] = float(pf.fillna(0).sum())
    pipes.attrs.update(totals)
    return res


def _parcel_flows(town: Town) -> pd.DataFrame | None:
    """Average daily sewered flow (gpd) and whether the parcel is sewered, per
    parcel id, from :mod:`gisnet.capacity` (design flows of the profile)."""
    try:
        from .capacity import parcel_flows
    except ImportError:  # pragma: no cover - capacity is part of the package
        return None
    f = parcel_flows(town)
    sewered = f["sewered"].to_numpy(dtype=bool)
    return pd.DataFrame(
        {"avg_flow_gpd": np.where(sewered, f["avg_flow_gpd"].to_numpy(float), 0.0),
         "sewered": sewered},
        index=f["parcel_id"].astype(object).to_numpy(),
    )
