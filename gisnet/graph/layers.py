"""Stage 9: the graph as GeoDataFrames and back, its summary and its quality layer.

:func:`graph_to_gdfs` gives the ``graph_nodes`` / ``graph_edges`` layers,
:func:`graph_from_gdfs` rebuilds the graph from them, :func:`graph_summary`
has the headline figures and :func:`quality_gdf` the ``quality`` layer.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..errors import CRSError, LayerError
from ..report import Report
from ..units import feet_per_unit
from .assemble import EDGE_COLUMNS, NODE_COLUMNS, GraphColumns, fill_graph
from .columns import none_for_nan
from .table import TABLE_EDGE_ATTRS, TABLE_NODE_ATTRS, GraphTable, edge_order, graph_table


class GraphMeta:
    """Graph-level values carried in ``gdf.attrs``; shared, never deep-copied."""

    def __init__(self, snap_tolerance_ft: float | None, report: Report | None,
                 outlets: list[str]) -> None:
        self.snap_tolerance_ft = snap_tolerance_ft
        self.report = report
        self.outlets = outlets

    def __deepcopy__(self, memo: dict[int, Any]) -> GraphMeta:
        return self


def graph_to_gdfs(G: nx.MultiDiGraph) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """The graph as two GeoDataFrames, the ``graph_nodes`` and ``graph_edges`` layers.

    Parameters
    ----------
    G
        A graph from :func:`build_sewer_graph` (or :func:`graph_from_gdfs`).

    Returns
    -------
    (nodes, edges)
        ``nodes``: ``node_id`` + :data:`NODE_COLUMNS`, Point geometry at
        ``(x, y)``. ``edges``: ``edge_key`` (the edge key), ``main_id``,
        ``part``, ``from_node`` / ``to_node`` (as resolved: flow direction),
        the other :data:`EDGE_COLUMNS`, LineString geometry in flow direction.
        Both in ``G.graph["crs"]``; default RangeIndex. Attributes a graph
        carries beyond these become extra columns.
    """
    node_ids = list(G.nodes)
    ndata = [G.nodes[n] for n in node_ids]
    extra_n = sorted(set().union(*ndata) - set(NODE_COLUMNS))
    ncols = pd.concat([pd.DataFrame({"node_id": node_ids}),
                       _records(ndata, NODE_COLUMNS[1:] + tuple(extra_n))], axis=1)
    rows = list(G.edges(keys=True, data=True))
    edata = [r[3] for r in rows]
    extra_e = sorted(set().union(*edata) - set(EDGE_COLUMNS) - {"geometry"})
    ends = {"edge_key": [r[2] for r in rows], "from_node": [r[0] for r in rows],
            "to_node": [r[1] for r in rows]}
    attrs = _records(edata, tuple(c for c in EDGE_COLUMNS + tuple(extra_e) if c not in ends))
    edf = pd.DataFrame({c: ends[c] if c in ends else attrs[c]
                        for c in EDGE_COLUMNS + tuple(extra_e)})
    return _as_layers(ncols, edf, [d.get("geometry") for d in edata], G)


def layers_from_columns(c: GraphColumns, G: nx.MultiDiGraph
                        ) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame] | None:
    """:func:`graph_to_gdfs` of a graph just assembled from the columns ``c``
    (:func:`gisnet.graph.assemble.graph_columns`), made from the columns instead of
    read back from the graph's dictionaries: the same frames, rows in the order the
    graph gives them (nodes as added; edges by their upstream node, then by the
    first edge to each downstream node, then as added). None when the columns do
    not map one to one onto the graph (repeated node ids or edge keys): then read
    the graph. (The graph's edges are not counted: ``G`` must be the graph just
    filled from ``c``.)"""
    m = len(c.keys)
    if len(c.node_ids) != len(G) or set(c.nodes) != set(NODE_COLUMNS[1:]) or \
            set(c.edges) != set(EDGE_COLUMNS) - {"edge_key", "from_node", "to_node"} \
            | {"geometry"}:
        return None
    order = edge_order(c)  # the order networkx walks its adjacency in
    if order is None:
        return None
    ncols = pd.concat([pd.DataFrame({"node_id": c.node_ids}),
                       pd.DataFrame({k: c.nodes[k] for k in NODE_COLUMNS[1:]})], axis=1)

    def ordered(values: list[Any]) -> list[Any]:
        held = np.empty(m, dtype=object)
        held[:] = values
        return held[order].tolist()  # the same objects, as a list (pandas infers its type)

    table = {"edge_key": c.keys, "from_node": c.u, "to_node": c.v, **c.edges}
    edf = pd.DataFrame({k: ordered(table[k]) for k in EDGE_COLUMNS})
    return _as_layers(ncols, edf, ordered(c.edges["geometry"]), G)


def _as_layers(ncols: pd.DataFrame, edf: pd.DataFrame, egeom: list[Any], G: nx.MultiDiGraph
               ) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """The two layers from their attribute frames: each node a point at its ``x``,
    ``y``, each edge its line, both in the graph's CRS with its :class:`GraphMeta`."""
    crs = G.graph.get("crs")
    ngeom = shapely.points(np.column_stack([
        np.asarray(ncols["x"], dtype=float), np.asarray(ncols["y"], dtype=float)])
    ) if len(ncols) else np.empty(0, dtype=object)
    nodes = gpd.GeoDataFrame(ncols, geometry=gpd.GeoSeries(ngeom, crs=crs), crs=crs)
    edges = gpd.GeoDataFrame(edf, geometry=gpd.GeoSeries(egeom, crs=crs), crs=crs)
    meta = GraphMeta(G.graph.get("snap_tolerance_ft"), G.graph.get("report"),
                     list(G.graph.get("outlets") or []))
    nodes.attrs["gisnet_graph"] = meta
    edges.attrs["gisnet_graph"] = meta
    return nodes, edges


def _records(dicts: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """``columns`` of a list of attribute dicts, as ``pd.DataFrame({c: [d.get(c) for d
    in dicts]})`` gives them (None where a dict lacks the key), built by pandas in one
    pass where every dict holds every column (the graph's own columns)."""
    if dicts and all(c in dicts[0] for c in columns) and \
            all(len(d) == len(dicts[0]) for d in dicts) and \
            len(set().union(*dicts)) == len(dicts[0]):
        return pd.DataFrame.from_records(dicts, columns=list(columns))
    return pd.DataFrame({c: [d.get(c) for d in dicts] for c in columns})


def column_values(s: pd.Series) -> list[Any]:
    """Column values as Python objects, None for missing."""
    if pd.api.types.is_bool_dtype(s.dtype):
        return [bool(x) for x in s.tolist()]
    if pd.api.types.is_float_dtype(s.dtype):
        return none_for_nan(s.to_numpy(dtype=float, na_value=np.nan))
    if pd.api.types.is_integer_dtype(s.dtype):
        return [None if pd.isna(x) else int(x) for x in s.tolist()]
    if _text_only(s.dtype):  # nulls are the only missing values: set where they are
        out = s.astype(object).tolist()
        for i in np.flatnonzero(s.isna().to_numpy()).tolist():
            out[i] = None
        return out
    return [None if (x is None or (isinstance(x, float) and np.isnan(x)) or x is pd.NA)
            else x for x in s.astype(object).tolist()]


def _text_only(dtype: Any) -> bool:
    """Whether a column of ``dtype`` holds nothing but text and nulls: pandas' text
    dtypes (Arrow-backed or not; not ``object``), and categories of such text."""
    if isinstance(dtype, pd.CategoricalDtype):
        return _text_only(dtype.categories.dtype) or (
            len(dtype.categories) > 0 and pd.api.types.infer_dtype(dtype.categories) == "string")
    return pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype)


def graph_from_gdfs(
    nodes: gpd.GeoDataFrame,
    edges: gpd.GeoDataFrame,
    *,
    report: Report | None = None,
    snap_tolerance_ft: float | None = None,
) -> nx.MultiDiGraph:
    """Rebuild the graph from its two layers (inverse of :func:`graph_to_gdfs`):
    :func:`graph_parts_from_gdfs`' graph."""
    return graph_parts_from_gdfs(nodes, edges, report=report,
                                 snap_tolerance_ft=snap_tolerance_ft)[0]


def graph_parts_from_gdfs(
    nodes: gpd.GeoDataFrame,
    edges: gpd.GeoDataFrame,
    *,
    report: Report | None = None,
    snap_tolerance_ft: float | None = None,
) -> tuple[nx.MultiDiGraph, GraphTable | None]:
    """Rebuild the graph from its two layers (inverse of :func:`graph_to_gdfs`).

    Parameters
    ----------
    nodes, edges
        The ``graph_nodes`` and ``graph_edges`` layers (from
        :func:`graph_to_gdfs`, or read back from the results GeoPackage).
    report, snap_tolerance_ft
        Graph-level values; default those carried in ``nodes.attrs`` by
        :func:`graph_to_gdfs`, else an empty report and None.

    Returns
    -------
    networkx.MultiDiGraph
        Same nodes, edges, keys and attributes. ``G.graph["outlets"]`` is
        rebuilt from the ``outlet`` column, ``ft_per_unit`` from the CRS.
    GraphTable or None
        The graph's :class:`~gisnet.graph.table.GraphTable` of the attributes
        :data:`gisnet.graph.table.TABLE_NODE_ATTRS` / ``TABLE_EDGE_ATTRS`` (for the
        downstream index and the capacity network, as a run's graph step gives it),
        from the columns the graph was filled with; None when the layers lack one of
        them or do not map one to one onto the graph.

    Raises
    ------
    LayerError
        A required column (``node_id``, ``edge_key``, ``from_node``,
        ``to_node``) is missing, or an edge names an unknown node.
    CRSError
        The layers have no CRS.
    """
    for col, gdf, layer in (("node_id", nodes, "graph_nodes"), ("edge_key", edges, "graph_edges"),
                            ("from_node", edges, "graph_edges"), ("to_node", edges, "graph_edges")):
        if col not in gdf.columns:
            raise LayerError(f"column {col!r} is missing", layer=layer)
    crs = nodes.crs if nodes.crs is not None else edges.crs
    if crs is None:
        raise CRSError("the graph layers have no CRS", layer="graph_nodes")
    crs = CRS.from_user_input(crs)
    meta = nodes.attrs.get("gisnet_graph")
    if report is None:
        report = meta.report if isinstance(meta, GraphMeta) and meta.report is not None \
            else Report()
    if snap_tolerance_ft is None and isinstance(meta, GraphMeta):
        snap_tolerance_ft = meta.snap_tolerance_ft
    ncols = [c for c in nodes.columns if c not in ("node_id", nodes.geometry.name)]
    nvals = {c: column_values(nodes[c]) for c in ncols}
    ids = column_values(nodes["node_id"])
    node_rows = [(n, dict(zip(ncols, vals, strict=True)))
                 for n, vals in zip(ids, zip(*nvals.values(), strict=True), strict=True)] \
        if ncols else [(n, {}) for n in ids]
    known = set(ids)
    ecols = [c for c in edges.columns
             if c not in ("edge_key", "from_node", "to_node", edges.geometry.name)]
    evals = {c: column_values(edges[c]) for c in ecols}
    evals["geometry"] = np.asarray(edges.geometry.values, dtype=object).tolist()
    fr = column_values(edges["from_node"])
    to = column_values(edges["to_node"])
    unknown = [x for x in set(fr) | set(to) if x not in known]
    if unknown:
        raise LayerError(f"edges name {len(unknown)} node(s) missing from the nodes layer",
                         layer="graph_edges", feature=sorted(map(str, unknown))[0])
    keys = column_values(edges["edge_key"])
    names = list(evals)
    edge_rows = [(a, b, k, dict(zip(names, vals, strict=True)))
                 for a, b, k, vals in zip(fr, to, keys, zip(*evals.values(), strict=True),
                                          strict=True)]
    outlets = sorted(n for n, d in node_rows if d.get("outlet"))
    G: nx.MultiDiGraph = nx.MultiDiGraph(crs=crs, ft_per_unit=feet_per_unit(crs),
                                         outlets=outlets, snap_tolerance_ft=snap_tolerance_ft)
    G.graph["report"] = report
    if len(known) == len(ids) and len(set(keys)) == len(keys):
        fill_graph(G, node_rows, edge_rows)  # one dict per node and edge: filled in bulk
    else:  # a node or a key twice: networkx merges their attributes
        G.add_nodes_from(node_rows)
        # types-networkx gives MultiGraph.add_edges_from Graph's signature: no (u, v, key, data)
        G.add_edges_from(edge_rows)  # type: ignore[arg-type]
    del node_rows, edge_rows
    columns = GraphColumns(node_ids=ids, nodes=nvals, u=fr, v=to, keys=keys, edges=evals)
    return G, graph_table(G, columns, node_names=TABLE_NODE_ATTRS,
                          edge_names=TABLE_EDGE_ATTRS)


def graph_summary(G: nx.MultiDiGraph) -> dict[str, Any]:
    """Headline figures of a sewer graph for ``gisnet run`` / ``gisnet validate``.

    Returns
    -------
    dict
        ``nodes``, ``edges``, ``mains`` (distinct main ids), ``pieces`` (weakly
        connected), ``outlets``, ``cycles``, ``length_ft`` (total),
        ``snap_tolerance_ft`` and ``findings`` (count per finding kind).
    """
    report = G.graph.get("report") or Report()
    counts = report.counts()
    mains = set()
    lengths: list[float] = []
    for _, _, k, d in G.edges(keys=True, data=True):  # one walk of the edges for all three
        mains.add(d.get("main_id", k))
        lengths.append(float(d.get("length_ft") or 0.0))
    n_edges, length = len(lengths), sum(lengths)
    return {
        "nodes": G.number_of_nodes(),
        "edges": n_edges,
        "mains": len(mains),
        "pieces": nx.number_weakly_connected_components(G) if len(G) else 0,
        "outlets": len(G.graph.get("outlets") or ()),
        "cycles": counts.get("cycle", 0),
        "length_ft": round(length, 1),
        "snap_tolerance_ft": G.graph.get("snap_tolerance_ft"),
        "findings": dict(sorted(counts.items())),
    }


def quality_gdf(G: nx.MultiDiGraph, extra: Report | None = None) -> gpd.GeoDataFrame:
    """The ``quality`` layer: ``extra``'s findings (e.g. the loader's) then the graph's."""
    rep = Report()
    if extra is not None:
        rep.extend(extra.findings)
    rep.extend((G.graph.get("report") or Report()).findings)
    return rep.to_gdf(G.graph.get("crs"))

