"""The graph just assembled, as columns in the order networkx walks it.

The steps that read every node and edge of the graph once (the downstream index of
the control step, the capacity step's network arrays) take their values from a
:class:`GraphTable` when the graph was built in the same run: the columns the graph
was filled from (:class:`~gisnet.graph.assemble.GraphColumns`), put in the order
``G.nodes`` and ``G.edges(keys=True)`` give, instead of a walk of 300,000 attribute
dictionaries (about 3 s of a county's run). The values are the very objects the
graph's dictionaries hold, so what the steps compute is the same.

A table describes the graph as assembled: it is only valid while the graph is not
changed, which holds within :func:`gisnet.pipeline.analyse` (no step changes the
graph). Code that changes a graph reads it instead (the steps do when given no table).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from .assemble import GraphColumns

__all__ = ["TABLE_EDGE_ATTRS", "TABLE_NODE_ATTRS", "GraphTable", "edge_order", "end_positions",
           "graph_table"]

#: The node and edge attributes a graph's table holds (:func:`gisnet.graph.build.
#: build_graph_parts`, :func:`gisnet.graph.layers.graph_parts_from_gdfs`): those
#: :class:`gisnet.tracing.DownstreamIndex` and :func:`gisnet.capacity.graph_arrays` read.
TABLE_NODE_ATTRS: tuple[str, ...] = ("is_manhole", "outlet")
TABLE_EDGE_ATTRS: tuple[str, ...] = (
    "main_id", "geometry", "length_ft", "diameter_in", "eligible", "kind", "active",
    "public", "gravity", "up_invert_ft", "down_invert_ft", "slope", "material")


def end_positions(c: GraphColumns) -> tuple[np.ndarray, np.ndarray] | None:
    """Each edge's upstream and downstream node as positions in ``c.node_ids``; None
    when the node ids repeat or an edge end is not among them."""
    n = len(c.node_ids)
    if c.u_pos is not None and c.v_pos is not None:
        if len(set(c.node_ids)) != n:
            return None
        return c.u_pos, c.v_pos
    at = pd.Index(_objects(c.node_ids), dtype=object)  # not made Arrow text and back
    if not at.is_unique:
        return None
    upos, vpos = at.get_indexer(_objects(c.u)), at.get_indexer(_objects(c.v))
    if len(upos) and (upos.min() < 0 or vpos.min() < 0):
        return None
    c.u_pos, c.v_pos = upos, vpos  # found once: the table and the edge order both ask
    return upos, vpos


def _objects(values: list[Any]) -> np.ndarray:
    return np.fromiter(values, dtype=object, count=len(values))  # ids of any kind, kept


def edge_order(c: GraphColumns) -> np.ndarray | None:
    """Positions of ``c``'s edges in the order a graph filled from ``c`` walks them
    (:func:`gisnet.graph.assemble.fill_graph`): by upstream node (in the order the
    nodes were added), then by the first edge to each downstream node, then as added.
    None when the columns do not map one to one onto a graph (repeated node ids or
    edge keys, or an edge end that is not a node). Made once per ``c``."""
    if c.order is None:
        c.order = _edge_order(c)
    return c.order if c.order is not False else None


def _edge_order(c: GraphColumns) -> np.ndarray | bool:
    m, n = len(c.keys), len(c.node_ids)
    ends = end_positions(c) if len(set(c.keys)) == m else None
    if ends is None:
        return False
    upos, vpos = ends
    pair = upos.astype(np.int64) * max(n, 1) + vpos
    _, inverse = np.unique(pair, return_inverse=True)
    first = np.full(inverse.max() + 1 if m else 0, m, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(m))
    return np.lexsort((np.arange(m), first[inverse], upos))


@dataclass(frozen=True, eq=False)
class GraphTable:
    """Some of a graph's node and edge attributes as columns, rows in the graph's own
    order (``G.nodes``; ``G.edges(keys=True)``).

    Attributes
    ----------
    nodes
        Node ids, as ``list(G.nodes)``.
    node_values
        Node attribute name -> its values, one per node of ``nodes``.
    u, v
        Position in ``nodes`` of each edge's upstream and downstream node.
    keys
        Each edge's key (object array).
    """

    nodes: list[Any]
    node_values: Mapping[str, list[Any]]
    u: np.ndarray
    v: np.ndarray
    keys: np.ndarray
    _order: np.ndarray
    _edges: Mapping[str, list[Any]]
    _graph: weakref.ReferenceType[nx.MultiDiGraph]

    def edge_values(self, name: str) -> np.ndarray:
        """The edge attribute ``name`` of every edge, in the graph's order (object
        array of the values the graph's edge dictionaries hold)."""
        held = np.empty(len(self._order), dtype=object)
        held[:] = self._edges[name]
        return held[self._order]

    def edge_names(self) -> list[str]:
        """The edge attributes the table holds."""
        return list(self._edges)

    def is_of(self, G: nx.MultiDiGraph) -> bool:
        """Whether the table was made for the graph ``G`` (the same object, with as
        many nodes)."""
        return self._graph() is G and len(G) == len(self.nodes)


def graph_table(G: nx.MultiDiGraph, c: GraphColumns, *, node_names: Collection[str],
                edge_names: Collection[str]) -> GraphTable | None:
    """The :class:`GraphTable` of ``G``, just filled from the columns ``c``
    (:func:`gisnet.graph.assemble.assemble_graph`), holding the named attributes;
    None when the columns do not map one to one onto the graph (:func:`edge_order`)
    or lack one of the attributes."""
    if len(c.node_ids) != len(G) or any(k not in c.nodes for k in node_names) or \
            any(k not in c.edges for k in edge_names):
        return None
    order = edge_order(c)
    ends = end_positions(c)
    if order is None or ends is None:
        return None
    keys = np.empty(len(order), dtype=object)
    keys[:] = c.keys
    return GraphTable(
        nodes=list(c.node_ids),
        node_values={k: c.nodes[k] for k in node_names},
        u=np.asarray(ends[0], dtype=np.int64)[order],
        v=np.asarray(ends[1], dtype=np.int64)[order],
        keys=keys[order],
        _order=order,
        _edges={k: c.edges[k] for k in edge_names},
        _graph=weakref.ref(G),
    )
