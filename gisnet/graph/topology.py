"""Stage 8b: topology findings of the assembled graph.

``dangling_end`` (a junction end meeting nothing), ``gap_not_snapped`` (a
dangling end just beyond the tolerance of a node or pipe), ``cycle`` (kept,
with their main ids), ``no_outlet`` and ``disconnected_piece``.
"""

from __future__ import annotations

from typing import cast

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import Point
from shapely.geometry.base import BaseGeometry

from ..report import Finding
from .inputs import GraphInputs
from .outlets import Outlets
from .prepare import Mains
from .snap import component_labels
from .snapping import Nodes
from .splits import Edges


def topology_findings(G: nx.MultiDiGraph, inp: GraphInputs, mains: Mains, nodes: Nodes,
                      edges: Edges, outlets: Outlets) -> list[Finding]:
    """Dangling ends and near misses, cycles, nodes without an outlet, and
    pieces connected to no outlet, in that order."""
    nn = len(nodes)
    u, v = edges.u, edges.v
    node_id, node_kind, node_xy = outlets.node_id, outlets.node_kind, nodes.node_xy
    deg = np.bincount(u, minlength=nn) + np.bincount(v, minlength=nn)
    junction = np.zeros(nn, dtype=bool)
    junction[nodes.structure_count:] = True
    junction &= node_kind == "junction"
    mains_at = mains.main_id[edges.main]
    # dangling ends
    dang = np.flatnonzero(junction & (deg == 1) & ~outlets.real)
    edge_of = np.full(nn, -1, dtype=np.int64)
    edge_of[u] = np.arange(len(u))
    edge_of[v] = np.arange(len(v))
    found = []
    for nd in dang.tolist():
        e = edge_of[nd]
        found.append(Finding(
            "dangling_end", "warning",
            f"{'upstream' if u[e] == nd else 'downstream'} end of main {mains_at[e]} "
            f"meets no manhole and no other pipe (node {node_id[nd]})",
            "mains", mains_at[e], Point(node_xy[nd])))
    found += near_misses(inp, mains, nodes, edges, outlets, dang, edge_of)
    found += cycles(G, nodes, edges, outlets)
    found += unreached(nodes, edges, outlets)
    found += disconnected_pieces(mains, nodes, edges, outlets)
    return found


def near_misses(inp: GraphInputs, mains: Mains, nodes: Nodes, edges: Edges, outlets: Outlets,
                dang: np.ndarray, edge_of: np.ndarray) -> list[Finding]:
    """Dangling ends lying within twice the tolerance of another node (named
    first: the manhole it was meant to reach) or else of another pipe."""
    if len(dang) == 0:
        return []
    node_xy, used = nodes.node_xy, outlets.used
    limit = 2 * inp.tol
    # (n, 2) coordinates: n points (shapely's stubs cannot tell them from one)
    pts = cast(np.ndarray, shapely.points(node_xy[dang]))
    node_pool = np.flatnonzero(used)
    node_pool = np.concatenate([node_pool, np.flatnonzero(~used[: nodes.structure_count])])
    ntree = shapely.STRtree(cast(np.ndarray, shapely.points(node_xy[node_pool])))
    best_d = np.full(len(dang), np.inf)
    best_what: list[str | None] = [None] * len(dang)
    pi, ti = ntree.query(pts, predicate="dwithin", distance=limit)
    keep = node_pool[ti] != dang[pi]
    pi, ti = pi[keep], ti[keep]
    d = shapely.distance(pts[pi], shapely.points(node_xy[node_pool[ti]]))
    for a, t, dist in zip(pi.tolist(), ti.tolist(), d.tolist(), strict=True):
        if dist < best_d[a]:
            best_d[a] = dist
            nd = node_pool[t]
            best_what[a] = f"{outlets.node_kind[nd]} {outlets.node_id[nd]}"
    # a pipe is named only where no node lies within reach
    todo = ~np.isfinite(best_d)
    if todo.any():
        ltree = shapely.STRtree(edges.geom)
        pi, ti = ltree.query(pts[todo], predicate="dwithin", distance=limit)
        pi = np.flatnonzero(todo)[pi]
        keep = ti != edge_of[dang[pi]]
        pi, ti = pi[keep], ti[keep]
        d = shapely.distance(pts[pi], edges.geom[ti])
        for a, t, dist in zip(pi.tolist(), ti.tolist(), d.tolist(), strict=True):
            if dist < best_d[a]:
                best_d[a] = dist
                best_what[a] = f"main {mains.main_id[edges.main[t]]}"
    mains_at = mains.main_id[edges.main]
    found = []
    for a in np.flatnonzero(np.isfinite(best_d)).tolist():
        nd = dang[a]
        e = edge_of[nd]
        found.append(Finding(
            "gap_not_snapped", "warning",
            f"end of main {mains_at[e]} stops {best_d[a] * inp.ft_per_unit:.2f} ft from "
            f"{best_what[a]}, beyond the {inp.tolerance_ft:g} ft snap tolerance; not joined",
            "mains", mains_at[e], Point(node_xy[nd])))
    return found


def cycles(G: nx.MultiDiGraph, nodes: Nodes, edges: Edges, outlets: Outlets) -> list[Finding]:
    """One ``cycle`` per strongly connected component with an edge inside."""
    nn = len(nodes)
    u, v = edges.u, edges.v
    nid = outlets.node_id
    core = peel(nn, v, u, peel(nn, u, v, outlets.used.copy()))
    sub = G.subgraph(nid[core].tolist()) if core.any() else nx.MultiDiGraph()
    found = []
    # nodes in sorted order, not set order: the cycle's geometry must not
    # depend on string hashing
    for comp in sorted(sorted(c) for c in nx.strongly_connected_components(sub)):
        if len(comp) == 1:
            (x,) = comp
            if not G.has_edge(x, x):
                continue
        members = set(comp)
        inside = [d for a in comp for b, ks in G.adj[a].items() if b in members
                  for d in ks.values()]
        ids = sorted({d["main_id"] for d in inside})
        geom = lines_geometry([d["geometry"] for d in inside])
        found.append(Finding(
            "cycle", "warning",
            f"cycle of {len(ids)} main(s): {', '.join(ids[:10])}"
            f"{f' and {len(ids) - 10} more' if len(ids) > 10 else ''}; all kept, flow "
            "around it is undetermined", "mains", ",".join(ids), geom))
    return found


def reaching(nn: int, u: np.ndarray, v: np.ndarray, outs: np.ndarray) -> np.ndarray:
    """Per node: a path of edges ``u -> v`` leads from it to one of ``outs``
    (frontier by frontier, vectorised)."""
    reach = np.zeros(nn, dtype=bool)
    if len(outs):
        order = np.argsort(v, kind="stable")
        starts = np.searchsorted(v[order], np.arange(nn + 1))
        pred = u[order]
        frontier = outs
        reach[outs] = True
        while len(frontier):
            idx = np.unique(gather(pred, starts, frontier))
            idx = idx[~reach[idx]]
            reach[idx] = True
            frontier = idx
    return reach


def drainage_finding(nodes: Nodes, edges: Edges, outlets: Outlets) -> Finding:
    """The one ``drainage`` finding: how much of the network (nodes, and mains
    by length) drains to a plant, outfall or named outlet, how much only to an
    assumed outlet, and how much to none."""
    nn = len(nodes)
    real = reaching(nn, edges.u, edges.v, np.flatnonzero(outlets.real))
    anyo = reaching(nn, edges.u, edges.v, np.flatnonzero(outlets.outlet))
    used = outlets.used
    n = int(used.sum())
    a = int((used & real).sum())
    b = int((used & anyo & ~real).sum())
    c = n - a - b
    length = edges.length_ft
    la = float(length[real[edges.v]].sum())
    lb = float(length[anyo[edges.v] & ~real[edges.v]].sum())
    total = float(length.sum()) or 1.0

    def pct(x: float, of: float) -> str:
        return f"{100 * x / of:.1f} %" if of else "0 %"

    return Finding(
        "drainage", "info",
        f"{a:,} of {n:,} nodes ({pct(a, n)}; {pct(la, total)} of the pipe length) drain to a "
        f"plant or outfall; {b:,} ({pct(b, n)}; {pct(lb, total)}) only to an assumed outlet "
        f"(see plant_gap, outlet_assumed, terminal_outlets); {c:,} ({pct(c, n)}) to none",
        "mains", None, None)


def unreached(nodes: Nodes, edges: Edges, outlets: Outlets) -> list[Finding]:
    """One ``no_outlet`` per used node with no path to an outlet."""
    nn = len(nodes)
    reach = reaching(nn, edges.u, edges.v, np.flatnonzero(outlets.outlet))
    lost = np.flatnonzero(outlets.used & ~reach)
    sc = nodes.structure_count
    return [Finding("no_outlet", "warning", f"{kind} {name} has no path to a plant or outfall",
                    "manholes" if nd < sc else "mains", name, pt)
            for nd, kind, name, pt in zip(lost.tolist(), outlets.node_kind[lost].tolist(),
                                          outlets.node_id[lost].tolist(),
                                          cast(np.ndarray,
                                               shapely.points(nodes.node_xy[lost])).tolist(),
                                          strict=True)]


def disconnected_pieces(mains: Mains, nodes: Nodes, edges: Edges,
                        outlets: Outlets) -> list[Finding]:
    """One ``disconnected_piece`` per weak component connected to no outlet
    (when the network has no outlet at all: every piece but the largest)."""
    nn = len(nodes)
    u, v = edges.u, edges.v
    lab = component_labels(nn, u, v)
    pieces, inv, ecount = np.unique(lab[u], return_inverse=True, return_counts=True)
    if len(pieces) <= 1:
        return []
    mains_at = mains.main_id[edges.main]
    plen = np.bincount(inv, weights=edges.length_ft)
    main_piece = int(np.lexsort((-plen, -ecount))[0])
    has_out = np.zeros(nn, dtype=bool)
    has_out[lab[outlets.real & outlets.used]] = True
    members = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[members], np.arange(len(pieces) + 1))
    any_outlet = bool(has_out.any())
    found = []
    for p in range(len(pieces)):
        # a piece with its own outlet is a network of its own (a storm
        # system to its outfall); without any outlet, the largest
        # piece is the network and the others are disconnected
        if has_out[pieces[p]] or (not any_outlet and p == main_piece):
            continue
        es = members[bounds[p]:bounds[p + 1]]
        ids = sorted(set(mains_at[es].tolist()))
        nodes_in = len(np.unique(np.concatenate([u[es], v[es]])))
        found.append(Finding(
            "disconnected_piece", "warning",
            f"piece of {len(ids)} main(s), {nodes_in} node(s), "
            f"{plen[p]:.0f} ft, connected to no outlet"
            f"{'' if any_outlet else ' and not to the largest piece'}: "
            f"{', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}",
            "mains", ",".join(ids), lines_geometry(edges.geom[es])))
    return found


def lines_geometry(geoms) -> BaseGeometry | None:
    """One geometry for a finding about several edges: a MultiLineString of
    their line parts; any part that is not a line (an edge collapsed to a point
    by snapping, a collection) is kept in a GeometryCollection instead of
    failing. None when there is nothing."""
    arr = np.array([g for g in geoms if g is not None], dtype=object)
    parts = shapely.get_parts(arr) if len(arr) else arr
    parts = parts[~shapely.is_empty(parts)] if len(parts) else parts
    if len(parts) == 0:
        return None
    kind = shapely.get_type_id(parts)
    for i in np.flatnonzero(kind == 2):  # LinearRing -> LineString
        parts[i] = shapely.LineString(shapely.get_coordinates(parts[i]))
    kind = shapely.get_type_id(parts)
    # (casts: from a 1-d array of parts shapely makes one geometry)
    if (kind == 1).all():
        return cast(shapely.MultiLineString, shapely.multilinestrings(parts))
    return cast(shapely.GeometryCollection, shapely.geometrycollections(parts))


def peel(nn: int, u: np.ndarray, v: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Nodes left after repeatedly removing nodes with no incoming edge.

    Kahn's algorithm run frontier by frontier with numpy over the edges
    ``u -> v`` among ``alive`` nodes; what is left lies on a cycle or
    downstream of one. Run again with ``(v, u)`` to also strip what lies
    downstream, leaving cycles and what lies between them.
    """
    keep = alive[u] & alive[v]
    uu, vv = u[keep], v[keep]
    indeg = np.bincount(vv, minlength=nn)
    order = np.argsort(uu, kind="stable")
    heads = vv[order]
    starts = np.searchsorted(uu[order], np.arange(nn + 1))
    left = alive.copy()
    frontier = np.flatnonzero(alive & (indeg == 0))
    while len(frontier):
        left[frontier] = False
        h = gather(heads, starts, frontier)
        if len(h) == 0:
            break
        uh, cnt = np.unique(h, return_counts=True)
        indeg[uh] -= cnt
        frontier = uh[indeg[uh] == 0]
    return left


def gather(pred: np.ndarray, starts: np.ndarray, frontier: np.ndarray) -> np.ndarray:
    """Concatenate ``pred[starts[x]:starts[x+1]]`` for every x, vectorised."""
    lo = starts[frontier]
    hi = starts[frontier + 1]
    cnt = hi - lo
    total = int(cnt.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    return pred[np.arange(total) + offs]
