"""Diameters assumed for pipes that have none: the largest diameter upstream.

A gravity sewer is not made smaller downstream (sewer design standards, such as
the "Ten States Standards", do not let its size decrease in the direction of
flow), so the largest diameter upstream of a pipe is taken as a lower bound of
its own. A town that asks
(``assume_diameters = "largest_upstream"`` in its ``gisnet.toml``) gives every
flow-carrying pipe without a diameter that bound, so the flows accumulated to it
still meet a capacity; each such pipe is flagged ``diameter_assumed``.

One pass in topological order over the directed network (cycles contracted to one
node: every pipe of a cycle is upstream of every other), level by level in numpy,
never a search per pipe.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .network import Network

__all__ = ["ASSUME_LARGEST_UPSTREAM", "assume_diameters"]

#: The town-file value of ``assume_diameters`` this module implements.
ASSUME_LARGEST_UPSTREAM = "largest_upstream"


def _strong_components(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Strongly connected component of every node (linear time, scipy)."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    adj = csr_matrix((np.ones(len(u), dtype=np.int8), (u, v)), shape=(n, n))
    _, labels = connected_components(adj, directed=True, connection="strong")
    return labels.astype(np.int64)


def assume_diameters(net: Network, flow_edge: np.ndarray, known: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The diameter of every edge, a pipe without one given the largest upstream.

    Parameters
    ----------
    net
        The graph arrays (:func:`gisnet.capacity.network.graph_arrays`).
    flow_edge
        Edges that carry sanitary flow (:func:`gisnet.capacity.network.sanitary_flow_edges`):
        diameters are carried through these only, and only these are given one.
    known
        Edges whose cross-section is known (a non-circular section given by its
        dimensions counts even without ``diameter_in``); default: a diameter > 0.

    Returns
    -------
    diameters : numpy.ndarray
        Inches: the edge's own diameter where it has one (> 0), else the largest
        diameter of any flow edge upstream of it (in a cycle: of the cycle and
        everything upstream of it); NaN where nothing upstream has a diameter.
    assumed : numpy.ndarray of bool
        Edges whose diameter was assumed here.
    """
    n, m = len(net.nodes), len(net.u)
    d = np.asarray(net.diameter_in, dtype="float64").copy()
    own = np.isfinite(d) & (d > 0)
    need = ~own if known is None else ~np.asarray(known, dtype=bool)
    fe = np.flatnonzero(np.asarray(flow_edge, dtype=bool))
    if not m or not fe.size:
        return d, np.zeros(m, dtype=bool)
    comp = _strong_components(net.u[fe], net.v[fe], n)
    cu, cv = comp[net.u[fe]], comp[net.v[fe]]
    k = int(comp.max()) + 1
    # Largest diameter reaching each component: first its own pipes' (a cycle's pipes
    # are all upstream of each other), then level by level down the condensed DAG.
    up = np.full(k, -np.inf)
    inside = cu == cv
    np.maximum.at(up, cu[inside], np.where(own[fe[inside]], d[fe[inside]], -np.inf))
    between = np.flatnonzero(~inside)
    bu, bv = cu[between], cv[between]
    indeg = np.bincount(bv, minlength=k)
    order = between[np.argsort(bu, kind="stable")]
    off = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(bu, minlength=k), out=off[1:])
    frontier = np.flatnonzero(indeg == 0)
    while frontier.size:
        counts = off[frontier + 1] - off[frontier]
        if not counts.sum():
            break
        starts = np.repeat(off[frontier] - np.concatenate(([0], np.cumsum(counts)[:-1])),
                           counts)
        es = order[starts + np.arange(int(counts.sum()))]
        e = fe[es]
        carried = np.maximum(up[cu[es]], np.where(own[e], d[e], -np.inf))
        np.maximum.at(up, cv[es], carried)
        heads, cnt = np.unique(cv[es], return_counts=True)
        indeg[heads] -= cnt
        frontier = heads[indeg[heads] == 0]
    given = up[cu]
    take = need[fe] & np.isfinite(given)
    assumed = np.zeros(m, dtype=bool)
    assumed[fe[take]] = True
    d[fe[take]] = given[take]
    return d, assumed
