"""The downstream index: first manhole, plant served and path lengths of every node.

The graph follows ``docs/architecture.md`` ("Sewer graph"): edges
``(u, v, key=main_id)`` in flow direction, node attribute ``is_manhole``
(public, active manhole structure) and ``outlet``. The **primary out-edge** of
a node (where its flow is followed downstream) is, among its out-edges that
carry sanitary flow (:func:`gisnet.rules.carries_sanitary_flow`: active and not
storm; a main of unknown kind counts as sanitary), the one of largest diameter
(unknown diameter counts as smallest); ties go to the smallest edge key. Outlet
nodes have no out-edge. A node with no such out-edge is terminal.

Lengths are in feet (``*_ft``), converted with ``G.graph["ft_per_unit"]``.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
import shapely

from .. import rules
from ..errors import ConfigError, NotFoundError, TopologyError
from ..graph.table import GraphTable

log = logging.getLogger(__name__)


def carries_flow(attrs: Iterable[Mapping[str, Any]]) -> np.ndarray:
    """Whether each edge, given by its attribute dict, carries sanitary flow.

    The rule is :func:`gisnet.rules.carries_sanitary_flow` (active, and of a
    kind other than storm; an unknown kind counts as sanitary) applied to the
    edges' ``kind`` and ``active`` attributes.
    """
    kind: list[Any] = []
    active: list[Any] = []
    for a in attrs:
        kind.append(a.get("kind"))
        active.append(a.get("active"))
    return _carries_flow(kind, active)


def _carries_flow(kind: Any, active: Any) -> np.ndarray:
    """:func:`carries_flow` of the edges' ``kind`` and ``active`` values."""
    df = pd.DataFrame({"kind": pd.Series(kind, dtype=object),
                       "active": pd.Series(active, dtype=object)})
    return np.asarray(rules.carries_sanitary_flow(df), dtype=bool)



def _flag(value: Any) -> bool:
    """A boolean edge flag; a missing one (None/NaN) counts as True."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return bool(value)


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
class EdgeArrays:
    """The graph's edges as parallel arrays (edge index = position)."""

    u: np.ndarray  # int node index
    v: np.ndarray  # int node index
    key: np.ndarray  # object: edge key
    main_id: np.ndarray  # object
    length_ft: np.ndarray  # float
    diameter_in: np.ndarray  # float (NaN unknown)
    eligible: np.ndarray  # bool: the graph's ``eligible`` attribute (tappable)
    flowing: np.ndarray  # bool: carries sanitary flow (:func:`carries_flow`)
    geometry: np.ndarray  # shapely LineStrings, working CRS
    public: np.ndarray  # bool: the graph's ``public`` attribute (owner not private)
    gravity: np.ndarray  # bool: the graph's ``gravity`` attribute (not a force main)

    @property
    def private_main(self) -> np.ndarray:
        """Private mains a building sewer may drain into: not public, carrying
        sanitary flow (active, not storm) by gravity. A lateral ending on one
        gives a ``private_main`` tap (Berlin sec. 16-70(c): the branch lines of
        a development are the private sewer lateral)."""
        return ~self.public & self.flowing & self.gravity


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
    entry, entry_ft
        For each node, the first node at or after it where the flow enters
        the public sewer (a public active manhole, or a node whose primary
        out-edge is a public main), -1 if the chain never does; and the
        length (ft) of private pipe from the node to it. For a node on a
        private main this is where the building sewer ends (Poughkeepsie
        § 168-22.5J, "the point at which the building sewer is connected").
    manhole_cyclic, outlet_cyclic, entry_cyclic
        Chain enters a cycle with no manhole / no outlet / no public main on it.

    Examples
    --------
    >>> idx = DownstreamIndex(G)                       # doctest: +SKIP
    >>> idx.first_manhole("J000012")                   # doctest: +SKIP
    'MH-0042'
    """

    def __init__(self, G: nx.MultiDiGraph, *, table: GraphTable | None = None) -> None:
        if not isinstance(G, nx.MultiDiGraph):
            raise TopologyError("the sewer graph must be a networkx MultiDiGraph")
        if table is not None and not table.is_of(G):
            raise ConfigError("the graph table given was made for another graph")
        self.G = G
        self.crs = G.graph.get("crs")
        self.ft_per_unit = float(G.graph.get("ft_per_unit", 1.0))
        tol = G.graph.get("snap_tolerance_ft")
        self.snap_tolerance_ft = (rules.DEFAULT_SNAP_TOLERANCE_FT if tol is None
                                  else float(tol))
        nodes = list(G.nodes) if table is None else table.nodes
        self.nodes = np.empty(len(nodes), dtype=object)
        self.nodes[:] = nodes
        self.node_index: dict[Any, int] = {n: i for i, n in enumerate(nodes)}
        outlets = set(G.graph.get("outlets") or ())
        if table is None:
            ndata = G.nodes
            manhole: Iterable[Any] = (ndata[n].get("is_manhole", False) for n in nodes)
            outlet: Iterable[Any] = (ndata[n].get("outlet", False) for n in nodes)
        else:
            manhole, outlet = table.node_values["is_manhole"], table.node_values["outlet"]
        self.is_manhole = np.fromiter((bool(x) for x in manhole), bool, len(nodes))
        self.is_outlet = np.fromiter(
            (bool(x) or n in outlets for x, n in zip(outlet, nodes, strict=True)), bool,
            len(nodes))
        self.edges = self._edge_arrays(G) if table is None else self._table_arrays(table)
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
        # where the flow enters the public sewer: a public active manhole, or a
        # node whose primary out-edge is a public main
        nxt_pub = np.zeros(len(nodes), bool)
        nxt_pub[has] = self.edges.public[self.next_edge[has]]
        self.entry, self.entry_ft, self.entry_cyclic = _resolve(
            self.next_node, step, self.is_manhole | nxt_pub
        )
        log.debug(
            "downstream index: %d nodes, %d edges, %d without a manhole downstream",
            len(nodes), len(self.edges.u), int((self.manhole < 0).sum()),
        )

    @functools.cached_property
    def edge_index(self) -> dict[tuple[Any, Any, Any], int]:
        """Edge index of each ``(u, v, key)``, made when first asked: the control step
        finds its points' edges as codes (:func:`gisnet.tracing.paths.edge_indices`),
        and a county's 300,000 keys are about 60 MB of tuples."""
        nodes = self.nodes
        return {(nodes[a], nodes[b], k): i for i, (a, b, k) in enumerate(
            zip(self.edges.u, self.edges.v, self.edges.key, strict=True))}

    # -- construction -----------------------------------------------------

    def _edge_arrays(self, G: nx.MultiDiGraph) -> EdgeArrays:
        idx = self.node_index
        rows = list(G.edges(keys=True, data=True))
        m = len(rows)
        u = np.fromiter((idx[r[0]] for r in rows), np.int64, m)
        v = np.fromiter((idx[r[1]] for r in rows), np.int64, m)
        key = np.empty(m, dtype=object)
        key[:] = [r[2] for r in rows]
        return self._arrays(
            u, v, key, main_id=[r[3].get("main_id", r[2]) for r in rows],
            geometry=[r[3].get("geometry") for r in rows],
            length_ft=[r[3].get("length_ft", np.nan) for r in rows],
            diameter_in=[r[3].get("diameter_in") for r in rows],
            eligible=[r[3].get("eligible", False) for r in rows],
            kind=[r[3].get("kind") for r in rows], active=[r[3].get("active") for r in rows],
            public=[r[3].get("public") for r in rows],
            gravity=[r[3].get("gravity") for r in rows])

    def _table_arrays(self, t: GraphTable) -> EdgeArrays:
        """:meth:`_edge_arrays` from the graph's table (every attribute present)."""
        return self._arrays(t.u, t.v, t.keys, **{name: t.edge_values(name) for name in (
            "main_id", "geometry", "length_ft", "diameter_in", "eligible", "kind", "active",
            "public", "gravity")})

    def _arrays(self, u: np.ndarray, v: np.ndarray, key: np.ndarray, *, main_id: Any,
                geometry: Any, length_ft: Any, diameter_in: Any, eligible: Any, kind: Any,
                active: Any, public: Any, gravity: Any) -> EdgeArrays:
        """The edges' arrays from their attribute values (a sequence each, in edge order)."""
        m = len(u)
        mids = np.empty(m, dtype=object)
        mids[:] = main_id
        geom = np.empty(m, dtype=object)
        geom[:] = geometry
        length = np.array(length_ft, dtype=float)
        missing = ~np.isfinite(length)
        if missing.any():
            length[missing] = shapely.length(geom[missing].astype(object)) * self.ft_per_unit
        diam = np.array([np.nan if d is None else d for d in diameter_in], dtype=float)
        elig = np.fromiter((bool(x) for x in eligible), bool, m)
        flowing = _carries_flow(kind, active)
        pub = np.fromiter((_flag(x) for x in public), bool, m)
        grav = np.fromiter((_flag(x) for x in gravity), bool, m)
        return EdgeArrays(u, v, key, mids, length, diam, elig, flowing, geom, pub, grav)

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

    @classmethod
    def of(cls, G: nx.MultiDiGraph, index: DownstreamIndex | None = None, *,
           table: GraphTable | None = None) -> DownstreamIndex:
        """``index`` if given (it must have been built for ``G``), else a new index of ``G``
        (read from ``table``, the graph's :class:`~gisnet.graph.table.GraphTable`, when
        given).

        Raises
        ------
        ConfigError
            If ``index`` was built for another graph.
        """
        if index is None:
            return cls(G, table=table)
        if index.G is not G:
            raise ConfigError("the DownstreamIndex given was built for another graph")
        return index

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

        A tap on a public main: the first public active manhole downstream
        (``u`` itself for a tap at distance 0 into a manhole ``u``). A tap on a
        private main: the first public active manhole at or after the node
        where its flow enters the public sewer (:attr:`entry`); private
        manholes on the private mains are passed over (a public, active
        manhole met on them is where the flow enters the public sewer).

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
        mh, mh_ft, out, out_ft, _, _ = self.connection_targets(edge, tap_ft)
        return mh, mh_ft, out, out_ft

    def connection_targets(
        self, edge: np.ndarray, tap_ft: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`tap_targets` plus where each tap's flow enters the public sewer.

        Returns
        -------
        manhole, manhole_ft, outlet, outlet_ft, entry, private_ft
            As :meth:`tap_targets`; ``entry`` is the node index where the flow
            enters the public sewer (-1 for a tap on a public main, and for a
            private tap whose mains never reach the public sewer);
            ``private_ft`` the length (ft) along private mains from the tap to
            ``entry`` (0 for a tap on a public main, NaN when never entering).
        """
        edge = np.asarray(edge, dtype=np.int64)
        tap = np.asarray(tap_ft, dtype=float)
        ok = edge >= 0
        e = np.maximum(edge, 0)
        e_arr = self.edges
        v = e_arr.v[e]
        u = e_arr.u[e]
        rest = np.maximum(e_arr.length_ft[e] - tap, 0.0)
        private = ok & ~e_arr.public[e]
        at_u = ok & ~private & (tap <= 0.0) & self.is_manhole[u]
        ent = np.where(private, self.entry[v], -1)
        ent_ok = ent >= 0
        ent0 = np.maximum(ent, 0)
        start = np.where(private, ent0, v)  # node from which the public part runs
        pre_ft = np.where(private, np.where(ent_ok, rest + self.entry_ft[v], np.nan), rest)
        mh = np.where(ok & (~private | ent_ok), self.manhole[start], -1)
        mh_ft = np.where(mh >= 0, pre_ft + self.manhole_ft[start], np.nan)
        mh = np.where(at_u, u, mh)
        mh_ft = np.where(at_u, 0.0, mh_ft)
        out = np.where(ok, self.outlet[v], -1)
        out_ft = np.where(ok, rest + self.outlet_ft[v], np.nan)
        private_ft = np.where(private, pre_ft, np.where(ok, 0.0, np.nan))
        return mh, mh_ft, out, out_ft, ent, private_ft
