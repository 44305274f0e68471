"""Stage 7: the networkx MultiDiGraph, its node and edge attributes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .columns import none_for_nan, shared_values
from .direction import Direction
from .inputs import GraphInputs
from .outlets import Outlets
from .prepare import Mains, Structures
from .splits import Edges

#: Node attributes, in the column order of the ``graph_nodes`` layer.
NODE_COLUMNS: tuple[str, ...] = (
    "node_id", "kind", "x", "y", "public", "active", "is_manhole", "outlet",
    "plant_id", "rim_ft", "invert_ft", "source",
)
#: Edge attributes, in the column order of the ``graph_edges`` layer.
EDGE_COLUMNS: tuple[str, ...] = (
    "edge_key", "main_id", "part", "from_node", "to_node", "length_ft", "diameter_in",
    "slope", "slope_stored", "slope_computed", "up_invert_ft", "down_invert_ft",
    "material", "kind", "owner", "status", "street", "public", "active", "gravity",
    "eligible", "direction_source",
)


@dataclass
class GraphColumns:
    """The graph's nodes and edges as columns (lists of the attribute values the
    graph holds, in the order they are added): what :func:`assemble_graph` fills the
    graph with, and what :func:`gisnet.graph.layers.layers_from_columns` makes the
    ``graph_nodes`` and ``graph_edges`` layers of without reading the graph back."""

    node_ids: list[Any]
    nodes: dict[str, list[Any]]
    u: list[Any]
    v: list[Any]
    keys: list[Any]
    edges: dict[str, list[Any]]
    #: Each edge's ends as positions in ``node_ids`` (None: found from the ids,
    #: :func:`gisnet.graph.table.end_positions`).
    u_pos: np.ndarray | None = field(default=None, repr=False)
    v_pos: np.ndarray | None = field(default=None, repr=False)
    #: :func:`gisnet.graph.table.edge_order`, once made (the layers and the table both
    #: read it).
    order: Any = field(default=None, repr=False)


def assemble_graph(inp: GraphInputs, mains: Mains, structures: Structures, nodes_xy: np.ndarray,
                   direction: Direction, edges: Edges, outlets: Outlets,
                   columns: GraphColumns | None = None) -> nx.MultiDiGraph:
    """The graph: used nodes with :data:`NODE_COLUMNS`, edges keyed by
    ``edges.key`` with :data:`EDGE_COLUMNS` and ``geometry``; ``G.graph`` has
    ``crs``, ``ft_per_unit``, ``outlets`` and ``snap_tolerance_ft``. ``columns``:
    :func:`graph_columns` of the same stages, when the caller has them."""
    c = columns if columns is not None else graph_columns(mains, structures, nodes_xy,
                                                          direction, edges, outlets)
    nkeys = list(c.nodes)
    node_rows = [(n, dict(zip(nkeys, vals, strict=True)))
                 for n, vals in zip(c.node_ids, zip(*c.nodes.values(), strict=True),
                                    strict=True)]
    ekeys = list(c.edges)
    edge_rows = zip(c.u, c.v, c.keys,
                    (dict(zip(ekeys, vals, strict=True))
                     for vals in zip(*c.edges.values(), strict=True)), strict=True)
    G: nx.MultiDiGraph = nx.MultiDiGraph(
        crs=inp.crs,
        ft_per_unit=inp.ft_per_unit,
        outlets=sorted(outlets.node_id[np.flatnonzero(outlets.outlet)].tolist()),
        snap_tolerance_ft=inp.tolerance_ft,
    )
    fill_graph(G, node_rows, edge_rows)
    return G


def graph_columns(mains: Mains, structures: Structures, nodes_xy: np.ndarray,
                  direction: Direction, edges: Edges, outlets: Outlets) -> GraphColumns:
    """The used nodes' and the edges' attributes as :class:`GraphColumns`."""
    nodes = np.flatnonzero(outlets.used)
    ns = structures.count
    is_s = nodes < ns
    s_idx = np.where(is_s, nodes, 0)
    public = np.where(is_s, structures.public[s_idx] if ns else True, True)
    active = np.where(is_s, structures.active[s_idx] if ns else True, True)
    kind = outlets.node_kind[nodes]
    is_mh = (kind == "manhole") & public & active
    rim = np.where(is_s, structures.rim[s_idx] if ns else np.nan, np.nan)
    inv = np.where(is_s, structures.inv[s_idx] if ns else np.nan, np.nan)
    src = np.where(is_s, structures.source[s_idx] if ns else "junction", "junction")
    xy = nodes_xy[nodes]
    ncols = {
        "kind": shared_values(kind),
        "x": xy[:, 0].tolist(),
        "y": xy[:, 1].tolist(),
        "public": public.astype(bool).tolist(),
        "active": active.astype(bool).tolist(),
        "is_manhole": is_mh.astype(bool).tolist(),
        "outlet": outlets.outlet[nodes].astype(bool).tolist(),
        "plant_id": shared_values(outlets.plant_of[nodes]),
        "rim_ft": none_for_nan(rim),
        "invert_ft": none_for_nan(inv),
        "source": shared_values(src),
    }
    nid = outlets.node_id
    m = edges.main
    ecols = {
        "main_id": mains.main_id[m].tolist(),
        "part": edges.part.tolist(),
        "length_ft": edges.length_ft.tolist(),
        "diameter_in": none_for_nan(mains.diameter[m]),
        "slope": none_for_nan(direction.slope[m]),
        "slope_stored": none_for_nan(mains.slope_stored[m]),
        "slope_computed": none_for_nan(direction.slope_computed[m]),
        "up_invert_ft": none_for_nan(edges.up_invert),
        "down_invert_ft": none_for_nan(edges.down_invert),
        "material": shared_values(mains.material[m]),
        "kind": shared_values(mains.kind[m]),
        "owner": shared_values(mains.owner[m]),
        "status": shared_values(mains.status[m]),
        "street": shared_values(mains.street[m]),
        "public": mains.public[m].tolist(),
        "active": mains.active[m].tolist(),
        "gravity": mains.gravity[m].tolist(),
        "eligible": mains.eligible[m].tolist(),
        "direction_source": shared_values(direction.source[m]),
        "geometry": list(edges.geom),
    }
    # the used nodes in index order: an edge end's position among them by a search
    u_pos, v_pos = (np.minimum(np.searchsorted(nodes, e), max(len(nodes) - 1, 0))
                    for e in (edges.u, edges.v))
    found = len(nodes) > 0 and bool((nodes[u_pos] == edges.u).all()
                                    and (nodes[v_pos] == edges.v).all())
    return GraphColumns(nid[nodes].tolist(), ncols, nid[edges.u].tolist(),
                        nid[edges.v].tolist(), edges.key.tolist(), ecols,
                        u_pos=u_pos if found else None, v_pos=v_pos if found else None)


def fill_graph(G: nx.MultiDiGraph, node_rows: Iterable[tuple[Any, dict[str, Any]]],
               edge_rows: Iterable[tuple[Any, Any, Any, dict[str, Any]]]) -> None:
    """Add nodes and keyed edges in bulk.

    For a plain :class:`networkx.MultiDiGraph` (dict factories) this fills the
    adjacency dicts directly, exactly as ``add_edge`` would (one key dict
    shared by ``_succ[u][v]`` and ``_pred[v][u]``), about ten times faster
    than ``add_edges_from`` at 300,000 edges; the attribute dicts are used
    as given, not copied. Every edge end must be among ``node_rows``.
    Any other graph class goes through the public API.
    """
    plain = type(G) is nx.MultiDiGraph and all(
        getattr(G, f) is dict for f in (
            "node_dict_factory", "node_attr_dict_factory", "adjlist_outer_dict_factory",
            "adjlist_inner_dict_factory", "edge_key_dict_factory", "edge_attr_dict_factory"))
    if not plain:  # pragma: no cover - subclasses with their own factories
        G.add_nodes_from(node_rows)
        # types-networkx gives MultiGraph.add_edges_from Graph's signature: no (u, v, key, data)
        G.add_edges_from(edge_rows)  # type: ignore[arg-type]
        return
    # networkx's adjacency dicts (documented for subclasses), not in types-networkx
    node, succ, pred = G._node, G._succ, G._pred  # type: ignore[attr-defined]
    for n, attrs in node_rows:
        node[n] = attrs
        succ[n] = {}
        pred[n] = {}
    for u, v, k, d in edge_rows:
        kd = succ[u].get(v)
        if kd is None:
            kd = succ[u][v] = {}
            pred[v][u] = kd
        kd[k] = d
    nx._clear_cache(G)
