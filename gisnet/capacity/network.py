"""The sewer graph as integer arrays, the flow tapped into each pipe, and its accumulation.

Three stages, each a function returning a small dataclass or frame:

1. :func:`graph_arrays` -- one pass over the graph into parallel arrays
   (:class:`Network`: edge ``i`` runs from node ``u[i]`` to node ``v[i]``).
2. :func:`edge_inflows` -- the domestic flow, industrial flow and population
   tapped into each edge by the parcels and users connected to it;
   :func:`node_inflows` -- those of the parcels whose ``outlet_node`` names a
   node of the graph, which enter the network at that node (a SWMM model's
   [DWF] inflow: SWMM adds it at the node, so the pipes arriving there do
   not carry it and the links leaving it do).
3. :func:`accumulate` -- one topological pass, level by level in numpy,
   carrying domestic flow, industrial flow and population down the graph
   (:class:`Accumulation`). At a node with several outgoing pipes the flow is
   split in proportion to full-flow capacity. Cycles are found first; each is
   contracted to one node so that everything downstream is still computed, and
   its own pipes are marked not computed.

Units: flows in gpd, population in persons.
"""

from __future__ import annotations

import gc
import operator
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..flows import parcel_flows
from ..graph.table import GraphTable
from ..io.ids import first_positions
from ..rules import carries_sanitary_flow

__all__ = ["NODE_COLUMN", "Accumulation", "Network", "accumulate", "edge_inflows",
           "graph_arrays", "node_inflows", "parcels_at_nodes", "sanitary_flow_edges"]

#: The parcels' column naming the node where a parcel's flow enters the network.
NODE_COLUMN = "outlet_node"


# --------------------------------------------------------------------------- graph arrays


@dataclass
class Network:
    """The graph as integer arrays (edge i: ``u[i] -> v[i]``), in the graph's edge order.

    Attributes
    ----------
    nodes, node_idx
        Node ids, and id -> position.
    keys, key_idx
        Edge keys (str), and key -> position.
    u, v
        Tail and head node position of every edge.
    main_id, diameter_in, length_ft, up_inv, down_inv, stored_slope, material, kind
        The edges' attributes (inverts in ft, slope in ft/ft; NaN where missing).
    active, gravity
        Edge flags (a missing flag reads as True).
    geometry
        The edges' lines (working CRS).
    """

    nodes: list[Any]
    node_idx: dict[Any, int]
    keys: np.ndarray          # edge keys (object)
    key_idx: dict[str, int]
    u: np.ndarray
    v: np.ndarray
    main_id: np.ndarray
    diameter_in: np.ndarray
    length_ft: np.ndarray
    up_inv: np.ndarray
    down_inv: np.ndarray
    stored_slope: np.ndarray
    material: np.ndarray
    kind: np.ndarray
    active: np.ndarray
    gravity: np.ndarray
    geometry: list[Any]


_EDGE_ATTRS = ("main_id", "diameter_in", "length_ft", "up_invert_ft", "down_invert_ft", "slope",
               "material", "kind", "active", "gravity", "geometry")


_get_attrs = operator.itemgetter(*_EDGE_ATTRS)


def _floats(values: Any) -> np.ndarray:
    try:
        return np.array(values, dtype="float64")  # None -> NaN
    except (TypeError, ValueError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce") \
            .to_numpy(dtype="float64", na_value=np.nan)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small tuples
    (it otherwise rescans them all repeatedly: ~40 % of the time here)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def graph_arrays(G: nx.MultiDiGraph, table: GraphTable | None = None) -> Network:
    """One pass over the graph's adjacency into parallel arrays.

    Parameters
    ----------
    G
        The sewer graph (:func:`gisnet.graph.build_sewer_graph`).
    table
        The graph's :class:`~gisnet.graph.table.GraphTable` (the graph as just built,
        unchanged): its columns are used instead of the graph's dictionaries.

    Returns
    -------
    Network

    Raises
    ------
    ConfigError
        If ``table`` was made for another graph.
    """
    if table is not None:
        if not table.is_of(G):
            raise ConfigError("the graph table given was made for another graph")
        return _network(table.nodes, table.u, table.v, table.keys,
                        [table.edge_values(a) for a in _EDGE_ATTRS])
    with _gc_paused():
        return _graph_arrays(G)


def _graph_arrays(G: nx.MultiDiGraph) -> Network:
    nodes = list(G.nodes)
    node_idx = {nd: i for i, nd in enumerate(nodes)}
    us: list[int] = []
    vs: list[int] = []
    ks: list[Any] = []
    data: list[tuple[Any, ...]] = []
    # networkx's own adjacency dict: its public views (G.adj, G.edges) cost 2-3x
    # the time of this loop, the largest part of compute_capacity on a big town.
    for u, nbrs in G._succ.items():  # type: ignore[attr-defined]  # not in types-networkx
        iu = node_idx[u]
        for v, kd in nbrs.items():
            iv = node_idx[v]
            for k, d in kd.items():
                us.append(iu)
                vs.append(iv)
                ks.append(k)
                try:
                    data.append(_get_attrs(d))
                except KeyError:
                    data.append(tuple(map(d.get, _EDGE_ATTRS)))
    cols = list(zip(*data, strict=True)) if data else [()] * len(_EDGE_ATTRS)
    return _network(nodes, us, vs, ks, cols, node_idx)


def _network(nodes: list[Any], us: Any, vs: Any, ks: Any, cols: Sequence[Any],
             node_idx: dict[Any, int] | None = None) -> Network:
    """The :class:`Network` of the edges' ends (node positions), keys and
    :data:`_EDGE_ATTRS` values (a sequence each, in edge order)."""
    if node_idx is None:
        node_idx = {nd: i for i, nd in enumerate(nodes)}
    keys = np.array([str(k) for k in ks], dtype=object)
    mids = np.array([str(k) if m is None else str(m) for m, k in zip(cols[0], ks, strict=True)],
                    dtype=object)

    def flag(values: Any) -> np.ndarray:  # missing -> True
        return np.array([x is None or bool(x) for x in values], dtype=bool)

    return Network(
        nodes=nodes, node_idx=node_idx, keys=keys,
        key_idx={k: i for i, k in enumerate(keys)},
        u=np.array(us, dtype=np.int64), v=np.array(vs, dtype=np.int64), main_id=mids,
        diameter_in=_floats(cols[1]), length_ft=_floats(cols[2]), up_inv=_floats(cols[3]),
        down_inv=_floats(cols[4]), stored_slope=_floats(cols[5]),
        material=np.array(cols[6], dtype=object), kind=np.array(cols[7], dtype=object),
        active=flag(cols[8]), gravity=flag(cols[9]), geometry=list(cols[10]),
    )


def sanitary_flow_edges(net: Network) -> np.ndarray:
    """Edges that carry sanitary flow (:func:`gisnet.rules.carries_sanitary_flow`:
    active, and sanitary, combined or force; a main of unknown kind is sanitary).

    The rule is applied once per distinct (kind, active) pair, not per edge: a
    town has a handful of pairs and hundreds of thousands of edges.
    """
    codes, kinds = pd.factorize(pd.Series(net.kind, dtype=object), use_na_sentinel=False)
    table = pd.DataFrame({"kind": np.repeat(np.asarray(kinds, dtype=object), 2),
                          "active": np.tile([False, True], len(kinds))})
    pair = codes.astype(np.int64) * 2 + net.active.astype(np.int64)
    return np.asarray(carries_sanitary_flow(table), dtype=bool)[pair]


# --------------------------------------------------------------------------- inflows


def _ids(values: Any) -> np.ndarray:
    """Ids as an object array of str, None where missing."""
    arr = pd.Series(values, dtype=object).to_numpy(dtype=object)
    miss = pd.isna(arr)
    if pd.api.types.infer_dtype(arr, skipna=True) in ("string", "empty"):
        out = arr.copy()
    else:
        out = np.empty(len(arr), dtype=object)
        out[:] = [None if m else str(x) for x, m in zip(arr.tolist(), miss.tolist(), strict=True)]
    out[miss] = None
    return out


def _text_ids(values: pd.Series) -> pd.Series:
    """Ids as text (pandas' ``str``, held by Arrow), NA where missing: the values of
    :func:`_ids` without a Python string per row when they are text already."""
    if isinstance(values.dtype, pd.StringDtype):
        return values.reset_index(drop=True).astype("str")
    return pd.Series(_ids(values), dtype="str")


def _no_ids(n: int) -> pd.Series:
    return pd.Series(pd.array([None] * n, dtype="str"))


def _numbers(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def edge_inflows(town: Any, points: pd.DataFrame, flows: pd.DataFrame | None = None
                 ) -> pd.DataFrame:
    """Flow tapped into each graph edge by the parcels and users connected to it.

    A parcel's flow is shared equally among its connection points (one per
    building); a user's ``process_flow_gpd`` enters at the user's own point
    as industrial flow (not peaked, no population).

    Parameters
    ----------
    town
        The town (parcels, optional users layer).
    points
        Connection points as from :func:`gisnet.tracing.connection_points`:
        at least ``parcel_id``, ``user_id`` and ``edge_key``.
    flows
        Parcel flows (default: :func:`gisnet.flows.parcel_flows`).

    Returns
    -------
    pandas.DataFrame
        Indexed by edge key: ``dom_gpd, ind_gpd, population`` (gpd, gpd, persons).
    """
    if flows is None:
        flows = parcel_flows(town)
    n = len(points)
    pid = _text_ids(points["parcel_id"]) if "parcel_id" in points else _no_ids(n)
    uid = _text_ids(points["user_id"]) if "user_id" in points else _no_ids(n)
    ekey = _text_ids(points["edge_key"]) if "edge_key" in points else _no_ids(n)
    has_edge = ekey.notna().to_numpy(dtype=bool)
    # edge keys as codes (first-seen order, Arrow's dictionary encoding): no Python
    # string per connection point
    codes, uniq = pd.factorize(ekey, use_na_sentinel=True)
    out = np.zeros((len(uniq), 3))

    # Parcels: flow / number of the parcel's points, domestic.
    prc = has_edge & uid.isna().to_numpy(dtype=bool) & pid.notna().to_numpy(dtype=bool)
    if prc.any():
        fl = flows[flows["sewered"].to_numpy(dtype=bool)]
        # each point's parcel among the flows' (the first row of a parcel id), as codes
        pos = first_positions(_text_ids(fl["parcel_id"]), pid[prc])
        pcode, _ = pd.factorize(pid[prc])
        share = np.bincount(pcode)[pcode].astype("float64")
        f = np.where(pos >= 0, fl["avg_flow_gpd"].to_numpy(dtype="float64")[pos], 0.0) / share
        p = np.where(pos >= 0, fl["population"].to_numpy(dtype="float64")[pos], 0.0) / share
        c = codes[prc]
        out[:, 0] += np.bincount(c, weights=f, minlength=len(uniq))
        out[:, 2] += np.bincount(c, weights=p, minlength=len(uniq))
    users = town.layers.get("users")
    usr = has_edge & uid.notna().to_numpy(dtype=bool)
    if users is not None and usr.any() and "process_flow_gpd" in users:
        uf = pd.Series(_numbers(users["process_flow_gpd"]),
                       index=pd.Index(_ids(users["user_id"]), dtype=object))
        uf = uf[~uf.index.duplicated()]
        pos = uf.index.get_indexer(pd.Index(uid[usr].to_numpy(dtype=object), dtype=object))
        q = np.where(pos >= 0, np.nan_to_num(uf.to_numpy()[pos]), 0.0)
        out[:, 1] += np.bincount(codes[usr], weights=q, minlength=len(uniq))
    return pd.DataFrame(out, index=pd.Index(np.asarray(uniq, dtype=object), dtype=object,
                                            name="edge_key"),
                        columns=["dom_gpd", "ind_gpd", "population"])


def parcels_at_nodes(parcels: pd.DataFrame | None, nodes: Any) -> pd.DataFrame:
    """Parcels whose flow enters the network at a node: ``parcel_id, node_id`` of
    each parcel whose ``outlet_node`` (:data:`NODE_COLUMN`) is given, and
    ``known``: whether that node is one of ``nodes`` (the graph's node ids, as
    str). A SWMM model's [DWF] inflows are such parcels (:mod:`gisnet.swmm`).

    >>> p = pd.DataFrame({"parcel_id": ["a", "b", "c"], "outlet_node": ["N1", None, "N9"]})
    >>> parcels_at_nodes(p, ["N1", "N2"]).to_dict("list")
    {'parcel_id': ['a', 'c'], 'node_id': ['N1', 'N9'], 'known': [True, False]}
    """
    cols = ["parcel_id", "node_id", "known"]
    if parcels is None or NODE_COLUMN not in parcels or "parcel_id" not in parcels:
        return pd.DataFrame(columns=cols)
    node = _ids(parcels[NODE_COLUMN])
    given = pd.notna(node)
    if given.any():
        stripped = np.array([str(x).strip() for x in node[given]], dtype=object)
        given[np.flatnonzero(given)[stripped == ""]] = False
    pid = _ids(parcels["parcel_id"])[given]
    node = np.array([str(x).strip() for x in node[given]], dtype=object)
    known = pd.Index(node, dtype=object).isin(pd.Index([str(x) for x in nodes], dtype=object))
    return pd.DataFrame({"parcel_id": pid, "node_id": node, "known": known}, columns=cols)


def node_inflows(at_nodes: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    """Flow entering the network at each node by the parcels of :func:`parcels_at_nodes`
    (``known`` ones only): their sewered design flow, domestic, with its population.

    Returns
    -------
    pandas.DataFrame
        Indexed by node id: ``dom_gpd, ind_gpd, population`` (gpd, gpd, persons;
        ``ind_gpd`` is 0: a user's process flow enters at its connection point).
    """
    cols = ["dom_gpd", "ind_gpd", "population"]
    at = at_nodes[at_nodes["known"].to_numpy(dtype=bool)] if len(at_nodes) else at_nodes
    fl = flows[flows["sewered"].to_numpy(dtype=bool)].drop_duplicates("parcel_id")
    fl = fl.set_index(pd.Index(_ids(fl["parcel_id"]), dtype=object))
    pid = pd.Index(_ids(at["parcel_id"]) if len(at) else [], dtype=object)
    q = fl["avg_flow_gpd"].reindex(pid).fillna(0.0).to_numpy(dtype="float64")
    p = fl["population"].reindex(pid).fillna(0.0).to_numpy(dtype="float64")
    out = pd.DataFrame({"dom_gpd": q, "ind_gpd": np.zeros(len(q)), "population": p},
                       index=pd.Index(at["node_id"].to_numpy(dtype=object) if len(at) else [],
                                      dtype=object, name="node_id"))
    return out.groupby(level=0, sort=True)[cols].sum()


# --------------------------------------------------------------------------- levels


def _gather(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenate the index ranges [starts[i], starts[i] + counts[i])."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum(counts)
    offs = np.repeat(starts - (ends - counts), counts)
    return offs + np.arange(total, dtype=np.int64)


def _csr(u: np.ndarray, edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Out-edges grouped by tail node: (edge ids ordered by tail, offsets of length n+1)."""
    order = edges[np.argsort(u[edges], kind="stable")]
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u[order], minlength=n), out=off[1:])
    return order, off


def _levels(u: np.ndarray, v: np.ndarray, edges: np.ndarray, n: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Kahn's algorithm level by level over ``edges``.

    Returns node levels (-1 for nodes never freed: in or below a cycle) and
    edge levels (-1 likewise).
    """
    order, off = _csr(u, edges, n)
    indeg = np.bincount(v[edges], minlength=n)
    node_level = np.full(n, -1, dtype=np.int64)
    edge_level = np.full(len(u), -1, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    lvl = 0
    while frontier.size:
        node_level[frontier] = lvl
        es = order[_gather(off[frontier], off[frontier + 1] - off[frontier])]
        if es.size == 0:
            break
        edge_level[es] = lvl
        heads, cnt = np.unique(v[es], return_counts=True)
        indeg[heads] -= cnt
        frontier = heads[indeg[heads] == 0]
        lvl += 1
    return node_level, edge_level


# --------------------------------------------------------------------------- accumulation


@dataclass
class Accumulation:
    """Result of :func:`accumulate` (arrays aligned with the graph's edges).

    Attributes
    ----------
    edge_flow
        (m, 3) domestic gpd, industrial gpd and population leaving each edge
        at its downstream end (NaN where not computed).
    node_flow
        (n, 3) the same arriving at each node, its own node inflow included
        (for a contracted cycle, at its representative node).
    computed
        Edges whose flow was accumulated (flow-carrying and not in a cycle).
    in_cycle
        Edges inside a cycle.
    frac
        Share of the flow arriving at its tail node that each edge carries.
    rep
        Node -> representative node (itself unless in a cycle).
    node_level
        Topological level of every (representative) node.
    out_order, out_off
        Out-edges of every representative node (CSR), flow edges only.
    cycles
        Main ids of each cycle's pipes.
    splits
        Nodes with several outgoing pipes: ``node_id, main_ids, fractions, basis``.
    """

    edge_flow: np.ndarray
    node_flow: np.ndarray
    computed: np.ndarray
    in_cycle: np.ndarray
    frac: np.ndarray
    rep: np.ndarray
    node_level: np.ndarray
    out_order: np.ndarray
    out_off: np.ndarray
    cycles: list[list[str]]
    splits: pd.DataFrame

    def out_edges(self, x: int) -> np.ndarray:
        """Flow edges leaving representative node ``x``."""
        return self.out_order[self.out_off[x]:self.out_off[x + 1]]


def _contract_cycles(net: Network, fe: np.ndarray, left: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Representative node of every node (cycles contracted to their smallest
    node), the edges inside a cycle, and each cycle's main ids.

    Only the edges ``left`` that Kahn's algorithm could not free are searched.
    """
    n, m = len(net.nodes), len(net.u)
    rep = np.arange(n, dtype=np.int64)
    in_cycle = np.zeros(m, dtype=bool)
    if not left.size:
        return rep, in_cycle, []
    H: nx.DiGraph = nx.DiGraph()
    H.add_edges_from(zip(net.u[left].tolist(), net.v[left].tolist(), strict=True))
    for comp in nx.strongly_connected_components(H):
        if len(comp) == 1:
            (x,) = comp
            if not H.has_edge(x, x):
                continue
        c = np.fromiter(comp, dtype=np.int64)
        rep[c] = c.min()
    in_cycle[fe] = (rep[net.u[fe]] == rep[net.v[fe]]) & (
        (rep[net.u[fe]] != net.u[fe]) | (rep[net.v[fe]] != net.v[fe])
        | (net.u[fe] == net.v[fe]))
    groups: dict[int, list[str]] = {}
    for e in np.flatnonzero(in_cycle):
        groups.setdefault(int(rep[net.u[e]]), []).append(str(net.main_id[e]))
    return rep, in_cycle, [sorted(set(g)) for g in groups.values()]


def _split_fractions(net: Network, ru: np.ndarray, dag: np.ndarray, capacity: np.ndarray,
                     out_order: np.ndarray, out_off: np.ndarray
                     ) -> tuple[np.ndarray, pd.DataFrame]:
    """Share of each node's outflow taken by each of its out-edges (by full-flow
    capacity; equal when any capacity is unknown), and the split nodes."""
    n, m = len(net.nodes), len(net.u)
    frac = np.zeros(m)
    cnt = np.bincount(ru[dag], minlength=n)
    capd = capacity[dag]
    nan = ~np.isfinite(capd)
    csum = np.bincount(ru[dag], weights=np.where(nan, 0.0, capd), minlength=n)
    nnan = np.bincount(ru[dag], weights=nan.astype(float), minlength=n)
    t = ru[dag]
    equal = (nnan[t] > 0) | (csum[t] <= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac[dag] = np.where(equal, 1.0 / cnt[t], capd / csum[t])
    srows = []
    for x in np.flatnonzero(cnt > 1):
        es = out_order[out_off[x]:out_off[x + 1]]
        srows.append({
            "node_id": str(net.nodes[x]),
            "main_ids": ",".join(str(k) for k in net.keys[es]),
            "fractions": ",".join(f"{frac[e]:.4f}" for e in es),
            "basis": "equal (capacity unknown)" if (nnan[x] > 0 or csum[x] <= 0)
            else "full-flow capacity",
        })
    return frac, pd.DataFrame(srows, columns=["node_id", "main_ids", "fractions", "basis"])


def _decide_splits(rule: Callable[[int, np.ndarray, float], tuple[np.ndarray, str]],
                   es: np.ndarray, ru: np.ndarray, node_flow: np.ndarray, out_order: np.ndarray,
                   out_off: np.ndarray, frac: np.ndarray, basis: dict[int, str]) -> None:
    """Shares of the splits whose out-edges are ``es`` (one level), by ``rule``,
    from the flow now arriving at each node."""
    tails = np.unique(ru[es])
    for x in tails[(out_off[tails + 1] - out_off[tails]) > 1].tolist():
        outs = out_order[out_off[x]:out_off[x + 1]]
        share, why = rule(x, outs, float(node_flow[x, 0] + node_flow[x, 1]))
        frac[outs] = share
        basis[x] = why


def _split_table(net: Network, frac: np.ndarray, basis: dict[int, str], out_order: np.ndarray,
                 out_off: np.ndarray) -> pd.DataFrame:
    rows = []
    for x, why in basis.items():
        es = out_order[out_off[x]:out_off[x + 1]]
        rows.append({"node_id": str(net.nodes[x]),
                     "main_ids": ",".join(str(k) for k in net.keys[es]),
                     "fractions": ",".join(f"{frac[e]:.4f}" for e in es), "basis": why})
    return pd.DataFrame(rows, columns=["node_id", "main_ids", "fractions", "basis"])


def accumulate(net: Network, local: np.ndarray, flow_edge: np.ndarray, capacity: np.ndarray,
               rule: Callable[[int, np.ndarray, float], tuple[np.ndarray, str]] | None = None,
               node_local: np.ndarray | None = None) -> Accumulation:
    """Carry flows and population down the graph in one topological pass.

    Parameters
    ----------
    net
        Graph arrays (:func:`graph_arrays`).
    local
        (m, 3) domestic gpd, industrial gpd and population tapped into each edge.
    flow_edge
        Edges that carry sanitary flow (:func:`sanitary_flow_edges`).
    capacity
        Full-flow capacity of each edge (any unit; NaN unknown), used to split
        the flow at nodes with several outgoing pipes when ``rule`` is None.
    rule
        Decides the shares at a split once the flow arriving there is known:
        ``rule(node, out_edges, avg_gpd) -> (shares, basis)``
        (:class:`gisnet.capacity.splits.SplitRule`); None: by full-flow capacity.
    node_local
        (n, 3) the same entering the network at each node (:func:`node_inflows`):
        added to the flow arriving there before it is shared among the links
        leaving the node, as SWMM adds a node's inflow; the pipes arriving at
        the node do not carry it. None: no node inflow.

    Returns
    -------
    Accumulation
    """
    n, m = len(net.nodes), len(net.u)
    fe = np.flatnonzero(flow_edge)
    node_level, edge_level = _levels(net.u, net.v, fe, n)
    rep, in_cycle, cycles = _contract_cycles(net, fe, fe[edge_level[fe] < 0])
    ru, rv = rep[net.u], rep[net.v]
    dag = fe[~in_cycle[fe]]
    if cycles:
        node_level, edge_level = _levels(ru, rv, dag, n)
    out_order, out_off = _csr(ru, dag, n)
    frac, splits = _split_fractions(net, ru, dag, capacity, out_order, out_off)
    basis: dict[int, str] = {}

    # Local inflow of cycle edges arrives at the cycle's representative node, a node's
    # own inflow at the node (its representative).
    node_flow = np.zeros((n, 3))
    if node_local is not None:
        np.add.at(node_flow, rep, node_local)
    cyc = np.flatnonzero(in_cycle)
    if cyc.size:
        np.add.at(node_flow, ru[cyc], local[cyc])
    edge_flow = np.full((m, 3), np.nan)
    lv = edge_level[dag]
    order = dag[np.argsort(lv, kind="stable")]
    bounds = np.searchsorted(lv[np.argsort(lv, kind="stable")], np.arange(lv.max() + 2)) \
        if dag.size else np.array([0])
    for i in range(len(bounds) - 1):
        es = order[bounds[i]:bounds[i + 1]]
        if es.size == 0:
            continue
        if rule is not None:
            _decide_splits(rule, es, ru, node_flow, out_order, out_off, frac, basis)
        val = local[es] + node_flow[ru[es]] * frac[es, None]
        edge_flow[es] = val
        np.add.at(node_flow, rv[es], val)
    computed = np.zeros(m, dtype=bool)
    computed[dag] = True
    if basis:
        splits = _split_table(net, frac, basis, out_order, out_off)
    return Accumulation(edge_flow, node_flow, computed, in_cycle, frac, rep, node_level,
                        out_order, out_off, cycles, splits)
