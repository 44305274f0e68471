"""Stage 3 and 5: T splits, and the edges the mains are cut into.

A node lying within the tolerance of another pipe's interior splits that
pipe there (a "T"): the pieces keep the ``main_id``; the upstream piece is
keyed ``main_id`` and the later ones ``main_id@2``, ``main_id@3`` ...
:func:`find_t_splits` finds the cuts, :func:`cut_edges` makes one piece per
stretch between nodes, as drawn (:func:`gisnet.graph.direction.orient_edges`
turns them to the direction of flow once it is known).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from shapely.geometry import Point
from shapely.ops import substring

from ..report import Finding
from .prepare import Mains, Structures
from .snapping import Nodes


@dataclass(frozen=True, eq=False)
class TSplits:
    """``cuts[k]``: the ``(position along the line, node)`` cuts of main ``k``,
    in order along its drawing (positions in CRS units)."""

    cuts: dict[int, list[tuple[float, int]]]
    findings: tuple[Finding, ...]


@dataclass(frozen=True, eq=False)
class Edges:
    """One element per edge, ordered by main then part.

    ``u`` / ``v`` are node indices in flow direction, ``geom`` the piece drawn
    that way, ``main`` the main's index, ``part`` 1 at the upstream piece,
    ``up_invert`` / ``down_invert`` interpolated along the main, ``key`` the
    edge key.
    """

    u: np.ndarray
    v: np.ndarray
    geom: np.ndarray
    main: np.ndarray
    part: np.ndarray
    up_invert: np.ndarray
    down_invert: np.ndarray
    length_ft: np.ndarray
    key: np.ndarray

    def __len__(self) -> int:
        return len(self.u)


def find_t_splits(mains: Mains, structures: Structures, nodes: Nodes, tol: float,
                  ft_per_unit: float) -> TSplits:
    """Cuts of mains whose interior passes within ``tol`` of a node: a node made
    by other pipes' ends, or a manhole no pipe end reached (a main drawn
    straight through its manholes); one ``t_split`` finding per cut."""
    cuts: dict[int, list[tuple[float, int]]] = {}
    sc = structures.count
    end_node, node_xy = nodes.end_node, nodes.node_xy
    used = np.unique(end_node)
    if sc:
        free_mh = np.ones(sc, dtype=bool)
        free_mh[used[used < sc]] = False
        free_mh &= structures.source == "manholes"
        free_mh &= nodes.merged_into == np.arange(sc)  # a merged duplicate is no node
        used = np.union1d(used, np.flatnonzero(free_mh))
    if len(used) == 0:
        return TSplits(cuts, ())
    pts = shapely.points(node_xy[used])
    tree = shapely.STRtree(mains.lines)
    if tol > 0:
        pi, li = tree.query(pts, predicate="dwithin", distance=tol)
    else:
        pi, li = tree.query(pts, predicate="intersects")
    if len(pi) == 0:
        return TSplits(cuts, ())
    node = used[pi]
    own = (end_node[2 * li] == node) | (end_node[2 * li + 1] == node)
    node, li, pi = node[~own], li[~own], pi[~own]
    pos = shapely.line_locate_point(mains.lines[li], pts[pi])
    L = mains.length[li]
    interior = (pos > tol) & (pos < L - tol) & (pos > 0) & (pos < L)
    node, li, pos = node[interior], li[interior], pos[interior]
    for j in np.lexsort((pos, li)).tolist():
        cuts.setdefault(int(li[j]), []).append((float(pos[j]), int(node[j])))
    found = []
    for k, kcuts in cuts.items():
        on = mains.main_id[k]
        for p, nd in kcuts:
            joining = sorted({str(mains.main_id[e // 2])
                              for e in np.flatnonzero(end_node == nd).tolist()})
            gap = shapely.distance(mains.lines[k], Point(node_xy[nd])) * ft_per_unit
            where = (f"where {', '.join(joining)} joins it" if joining
                     else f"where it passes through {nodes.node_kind[nd]} {nodes.node_id[nd]}")
            found.append(Finding(
                "t_split", "info",
                f"main {on} split at {nodes.node_id[nd]} ({p * ft_per_unit:.1f} ft along), "
                f"{where} ({gap:.2f} ft off the line)", "mains", on, Point(node_xy[nd])))
    return TSplits(cuts, tuple(found))


@dataclass(frozen=True, eq=False)
class Pieces:
    """The edges as drawn, before the direction of flow is known.

    One element per piece, ordered by main then drawn sequence: ``u`` / ``v``
    the drawn start and end nodes, ``main`` the main's index, ``seq`` the
    piece's place along the drawing (1 ...) of ``count`` pieces, ``f0`` /
    ``f1`` where it starts and ends along the main (fractions of the drawn
    line), ``length_ft``. ``collapsed``: indices of the mains left out of the
    graph because both their ends joined one node.
    """

    u: np.ndarray
    v: np.ndarray
    geom: np.ndarray
    main: np.ndarray
    seq: np.ndarray
    count: np.ndarray
    f0: np.ndarray
    f1: np.ndarray
    length_ft: np.ndarray
    collapsed: np.ndarray
    findings: tuple[Finding, ...]

    def __len__(self) -> int:
        return len(self.u)


def cut_edges(mains: Mains, nodes: Nodes, splits: TSplits, ft_per_unit: float) -> Pieces:
    """One piece per stretch between nodes, as drawn: unsplit mains vectorised,
    split mains cut in a loop over the split mains only.

    A main that is not split and whose two ends joined one node (two
    duplicate manholes merged under it, or a line drawn from a manhole back to
    it) is left out, with one ``collapsed_main`` finding each: it would be a
    pipe of no length from a node to itself.
    """
    n = len(mains)
    end_node, lines = nodes.end_node, mains.lines
    split = np.zeros(n, dtype=bool)
    if splits.cuts:
        split[list(splits.cuts)] = True
    same = end_node[0::2] == end_node[1::2]
    collapsed = np.flatnonzero(~split & same)
    whole = np.flatnonzero(~split & ~same)
    main = [whole]
    seq = [np.ones(len(whole), dtype=np.int64)]
    npieces = [np.ones(len(whole), dtype=np.int64)]
    u = [end_node[2 * whole]]
    v = [end_node[2 * whole + 1]]
    geoms = [lines[whole]]
    f0 = [np.zeros(len(whole))]
    f1 = [np.ones(len(whole))]
    pm: list[int] = []
    ps: list[int] = []
    pn: list[int] = []
    pu: list[int] = []
    pv: list[int] = []
    pg: list[Any] = []
    pf0: list[float] = []
    pf1: list[float] = []
    for k, kcuts in sorted(splits.cuts.items()):
        line = lines[k]
        L = float(mains.length[k])
        stops = [0.0] + [p for p, _ in kcuts] + [L]
        at = [int(end_node[2 * k])] + [nd for _, nd in kcuts] + [int(end_node[2 * k + 1])]
        cnt = len(stops) - 1
        for i in range(cnt):
            pm.append(k)
            ps.append(i + 1)
            pn.append(cnt)
            pu.append(at[i])
            pv.append(at[i + 1])
            pg.append(substring(line, stops[i], stops[i + 1]))
            pf0.append(stops[i] / L)
            pf1.append(stops[i + 1] / L)
    if pm:
        main.append(np.array(pm, dtype=np.int64))
        seq.append(np.array(ps, dtype=np.int64))
        npieces.append(np.array(pn, dtype=np.int64))
        u.append(np.array(pu, dtype=np.int64))
        v.append(np.array(pv, dtype=np.int64))
        pga = np.empty(len(pg), dtype=object)
        pga[:] = pg
        geoms.append(pga)
        f0.append(np.array(pf0))
        f1.append(np.array(pf1))
    e_main = np.concatenate(main)
    order = np.lexsort((np.concatenate(seq), e_main))
    e_geom = np.concatenate(geoms)[order]
    fpu = ft_per_unit
    found = [Finding(
        "collapsed_main", "warning",
        f"both ends of main {mains.main_id[k]} ({mains.length[k] * fpu:.1f} ft) join node "
        f"{nodes.node_id[end_node[2 * k]]}; left out of the graph (a pipe from a node to "
        "itself: check for duplicate structures or a mis-drawn line)", "mains",
        mains.main_id[k], mains.lines[k]) for k in collapsed.tolist()]
    return Pieces(u=np.concatenate(u)[order], v=np.concatenate(v)[order], geom=e_geom,
                  main=e_main[order], seq=np.concatenate(seq)[order],
                  count=np.concatenate(npieces)[order], f0=np.concatenate(f0)[order],
                  f1=np.concatenate(f1)[order], length_ft=shapely.length(e_geom) * fpu,
                  collapsed=collapsed, findings=tuple(found))
