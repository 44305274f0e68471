"""The clues the direction stage reads, each one vectorised over all mains.

:func:`match_inverts` places upstream/downstream invert values (given without
node ids) on the pipe's drawn ends by matching them to the values of the
other pipes and the manhole at each end; :func:`elevation_clue` compares
the structures' inverts (else rims) at a pipe's two ends; :func:`ground_clue`
the ground an elevation raster gives them;
:func:`outlet_distances` measures every node's network distance to its
piece's outlet, in one multi-source shortest-path pass.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

#: Invert values (ft) closer than this do not tell one placement from the other.
MATCH_EPS_FT = 0.01
#: A node with more pipe ends than this is left out of the invert matching
#: (a plant every line was snapped to says nothing about one pipe).
MATCH_MAX_ENDS = 24


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query ``q`` the positions ``lo[q] .. hi[q] - 1``: (query, position)."""
    cnt = hi - lo
    q = np.repeat(np.arange(len(lo)), cnt)
    total = int(cnt.sum())
    if total == 0:
        return q, np.zeros(0, dtype=np.int64)
    offs = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    return q, np.arange(total) + offs


def _nearest_value(q_node: np.ndarray, q_val: np.ndarray, q_owner: np.ndarray,
                   r_node: np.ndarray, r_val: np.ndarray, r_owner: np.ndarray) -> np.ndarray:
    """Per query: the smallest ``|q_val - r_val|`` over reference values at the
    same node from another owner (inf where there is none)."""
    out = np.full(len(q_node), np.inf)
    if len(q_node) == 0 or len(r_node) == 0:
        return out
    order = np.argsort(r_node, kind="stable")
    rn, rv, ro = r_node[order], r_val[order], r_owner[order]
    lo = np.searchsorted(rn, q_node, side="left")
    hi = np.searchsorted(rn, q_node, side="right")
    q, pos = _expand(lo, hi)
    ok = ro[pos] != q_owner[q]
    q, pos = q[ok], pos[ok]
    np.minimum.at(out, q, np.abs(q_val[q] - rv[pos]))
    return out


def match_inverts(start: np.ndarray, end: np.ndarray, a: np.ndarray, b: np.ndarray,
                  todo: np.ndarray, known_start: np.ndarray, known_end: np.ndarray,
                  node_invert: np.ndarray) -> np.ndarray:
    """Which drawn end of each pipe its upstream invert belongs to.

    The downstream invert of one pipe meets the upstream invert of the next at
    their shared node (and both meet the manhole's invert there): for each
    pipe in ``todo`` the two placements of its values ``a`` (upstream) and
    ``b`` (downstream) on its drawn ends are scored by how far each value lies
    from the nearest other value at that end's node, and the closer placement
    wins. Two passes: the second also uses the values the first placed.

    Parameters
    ----------
    start, end
        Node index of each pipe's drawn first and last vertex.
    a, b
        Upstream and downstream invert values (ft), NaN where missing.
    todo
        The pipes to place (both values known, nothing else decides them).
    known_start, known_end
        Invert values already known at the drawn ends (NaN where not): pipes
        whose inverts sit at the drawn ends, or whose direction the node ids give.
    node_invert
        Invert of the structure at each node (NaN where none).

    Returns
    -------
    numpy.ndarray
        Per pipe ``+1`` (the upstream invert is at the drawn start: drawn in
        the flow direction), ``-1`` (at the drawn end: drawn against it) or
        ``0`` (not told: outside ``todo``, or no value to match, or a tie).
    """
    n = len(start)
    deg = np.bincount(np.concatenate([start, end]), minlength=len(node_invert))
    crowded = deg > MATCH_MAX_ENDS
    placed = np.zeros(n, dtype=np.int64)
    todo = todo & ~np.isnan(a) & ~np.isnan(b) & (a != b)
    mh = np.flatnonzero(~np.isnan(node_invert))
    for _ in range(2):
        undecided = todo & (placed == 0)
        idx = np.flatnonzero(undecided)
        if len(idx) == 0:
            break
        fwd_s = np.where(placed > 0, a, b)
        fwd_e = np.where(placed > 0, b, a)
        ks = np.where(placed != 0, fwd_s, known_start)
        ke = np.where(placed != 0, fwd_e, known_end)
        # reference values per node: known values at pipe ends, both values of
        # the pipes still to place, the structure's invert (owner -1)
        pipes = np.arange(n)
        und = np.flatnonzero(undecided)
        r_node = np.concatenate([start, end, start[und], start[und], end[und], end[und], mh])
        r_val = np.concatenate([ks, ke, a[und], b[und], a[und], b[und], node_invert[mh]])
        r_owner = np.concatenate([pipes, pipes, und, und, und, und, np.full(len(mh), -1)])
        ok = ~np.isnan(r_val) & ~crowded[r_node]
        r_node, r_val, r_owner = r_node[ok], r_val[ok], r_owner[ok]
        # four queries per pipe: a or b at the start, a or b at the end
        q_node = np.concatenate([start[idx], start[idx], end[idx], end[idx]])
        q_val = np.concatenate([a[idx], b[idx], a[idx], b[idx]])
        q_owner = np.concatenate([idx, idx, idx, idx])
        d = _nearest_value(q_node, q_val, q_owner, r_node, r_val, r_owner).reshape(4, -1)
        # a side with no reference value scores both placements alike
        d_sa, d_sb, d_ea, d_eb = d
        side_s = np.isfinite(d_sa) & np.isfinite(d_sb)
        side_e = np.isfinite(d_ea) & np.isfinite(d_eb)
        fwd = np.where(side_s, d_sa, 0.0) + np.where(side_e, d_eb, 0.0)
        rev = np.where(side_s, d_sb, 0.0) + np.where(side_e, d_ea, 0.0)
        told = (side_s | side_e) & (np.abs(fwd - rev) > MATCH_EPS_FT)
        placed[idx[told]] = np.where(fwd[told] < rev[told], 1, -1)
    return placed


def elevation_clue(start: np.ndarray, end: np.ndarray, node_invert: np.ndarray,
                   node_rim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The structures' elevations at a pipe's two ends: the lower end is downstream.

    Inverts are compared with inverts and rims with rims (never one with the
    other); the inverts where both ends have one, else the rims.

    Returns
    -------
    (sign, which)
        ``sign``: ``+1`` drawn in the flow direction (the start is higher),
        ``-1`` drawn against it, ``0`` not told; ``which``: ``"invert"``,
        ``"rim"`` or ``""`` per pipe.
    """
    si, ei = node_invert[start], node_invert[end]
    sr, er = node_rim[start], node_rim[end]
    inv_ok = ~np.isnan(si) & ~np.isnan(ei) & (si != ei)
    rim_ok = ~inv_ok & ~np.isnan(sr) & ~np.isnan(er) & (sr != er)
    sign = np.where(inv_ok, np.where(si > ei, 1, -1),
                    np.where(rim_ok, np.where(sr > er, 1, -1), 0)).astype(np.int64)
    which = np.where(inv_ok, "invert", np.where(rim_ok, "rim", "")).astype(object)
    return sign, which


def ground_clue(start: np.ndarray, end: np.ndarray, node_rim: np.ndarray,
                node_ground: np.ndarray, min_drop_ft: float) -> np.ndarray:
    """The ground at a pipe's two ends, where an elevation raster gave one of
    them: the lower end is downstream when the ground falls ``min_drop_ft`` at least.

    Parameters
    ----------
    start, end
        Node index of each pipe's drawn first and last vertex.
    node_rim
        Recorded rim (ft) per node (NaN where none): ground too.
    node_ground
        Ground (ft) read from the raster per node (NaN where none).
    min_drop_ft
        The least fall that tells (a flat raster tells nothing).

    Returns
    -------
    numpy.ndarray
        Per pipe ``+1`` (the start is higher: drawn in the flow direction), ``-1``
        (drawn against it) or ``0`` (not told: no raster value at either end, a
        value missing at one, or a fall under ``min_drop_ft``).

    Examples
    --------
    >>> import numpy as np
    >>> nan = np.nan
    >>> ground_clue(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([nan, nan, 90.0]),
    ...             np.array([100.0, 94.0, nan]), 5.0).tolist()
    [1, 0, 1]
    """
    g = np.where(np.isnan(node_rim), node_ground, node_rim)
    from_raster = ~np.isnan(node_ground)
    s, e = g[start], g[end]
    ok = (from_raster[start] | from_raster[end]) & ~np.isnan(s) & ~np.isnan(e) \
        & (np.abs(s - e) >= min_drop_ft)
    return np.where(ok, np.where(s > e, 1, -1), 0).astype(np.int64)


def outlet_distances(nn: int, u: np.ndarray, v: np.ndarray, length_ft: np.ndarray,
                     known: np.ndarray, outlets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's network distance (ft) to the nearest outlet, in one
    multi-source shortest-path pass (Dijkstra from all outlets at once).

    Parameters
    ----------
    nn
        Number of nodes.
    u, v
        Edge ends; where ``known`` the flow runs ``u -> v``, elsewhere either way.
    length_ft
        Edge lengths (a tiny length is added so no edge weighs nothing).
    known
        Edges whose direction another clue decided: walked from the outlet
        upstream only (``v`` to ``u``).
    outlets
        Outlet node indices.

    Returns
    -------
    (along, anyway)
        ``along``: distances walking decided pipes only against their flow
        (inf where the outlet cannot be reached so); ``anyway``: distances on
        the undirected network.
    """
    w = np.asarray(length_ft, dtype=float) + 1e-6
    inf = np.full(nn, np.inf)
    if len(outlets) == 0 or len(u) == 0:
        return inf, inf.copy()

    def run(rows: np.ndarray, cols: np.ndarray, ww: np.ndarray) -> np.ndarray:
        # parallel edges: keep the shortest (a CSR matrix would add them up)
        order = np.lexsort((ww, cols, rows))
        rows, cols, ww = rows[order], cols[order], ww[order]
        first = np.ones(len(rows), dtype=bool)
        first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        m = csr_matrix((ww[first], (rows[first], cols[first])), shape=(nn, nn))
        return dijkstra(m, directed=True, indices=outlets, min_only=True)

    free = ~known
    # walking upstream from the outlets: a decided pipe u -> v is walked v -> u
    rows = np.concatenate([v, u[free]])
    cols = np.concatenate([u, v[free]])
    along = run(rows, cols, np.concatenate([w, w[free]]))
    anyway = run(np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([w, w]))
    return along, anyway
