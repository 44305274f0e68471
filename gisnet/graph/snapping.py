"""Stage 2: node assignment. Every pipe end joins a structure or a junction.

An end within the snap tolerance of a manhole or plant joins it (the nearest
manhole, else the nearest plant); the other ends are clustered with each
other (``STRtree`` ``dwithin`` pairs, then connected components), each cluster
becoming a junction node ``J000001`` ... Coordinates are never rounded:
rounding is not snapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd
import shapely
from shapely.geometry import LineString, Point

from ..report import Finding
from .prepare import Mains, Structures
from .snap import cluster_points, compact, component_labels

#: Snapped gaps shorter than this (feet) are digitising noise, not reported.
GAP_REPORT_MIN_FT = 0.01


@dataclass(frozen=True, eq=False)
class Nodes:
    """The nodes: structures ``0 .. structures.count - 1``, then junctions.

    ``end_node[e]`` is the node of pipe end ``e`` (``2 k`` the start of main
    ``k``, ``2 k + 1`` its end) and ``end_gap[e]`` how far it was moved (CRS
    units).
    """

    node_id: np.ndarray
    node_kind: np.ndarray
    node_xy: np.ndarray
    structure_count: int
    junction_count: int
    end_node: np.ndarray
    end_gap: np.ndarray
    findings: tuple[Finding, ...]
    merged_into: np.ndarray

    @property
    def merged(self) -> np.ndarray:
        """Structures merged into another one (True per structure index)."""
        return self.merged_into != np.arange(self.structure_count)

    def __len__(self) -> int:
        return len(self.node_id)


def snap_ends(mains: Mains, structures: Structures, tol: float, ft_per_unit: float) -> Nodes:
    """Assign every pipe end a node: a structure within ``tol`` (CRS units), else
    a junction shared by all ends clustered within ``tol``; report the gaps
    snapped (``gap_snapped``, per end, beyond :data:`GAP_REPORT_MIN_FT`)."""
    ends = mains.ends
    m = len(ends)
    sc = structures.count
    end_node = np.full(m, -1, dtype=np.int64)
    end_gap = np.zeros(m)
    end_pts = cast(np.ndarray, shapely.points(ends))  # (n, 2) coordinates: n points
    merged_into, found = merge_structures(structures, tol, ft_per_unit)
    if sc:
        reps = np.flatnonzero(merged_into == np.arange(sc))
        tree = shapely.STRtree(structures.geom[reps])
        if tol > 0:
            qi, ti = tree.query(end_pts, predicate="dwithin", distance=tol)
        else:
            qi, ti = tree.query(end_pts, predicate="intersects")
        ti = reps[ti]
        dist = shapely.distance(end_pts[qi], structures.geom[ti])
        # nearest manhole per end, else the nearest plant (an end inside a
        # plant site polygon but near a manhole there joins the manhole);
        # ties: the first structure in layer order
        is_plant = structures.source[ti] == "plants"
        order = np.lexsort((ti, dist, is_plant, qi))
        qi, ti, dist = qi[order], ti[order], dist[order]
        first = np.ones(len(qi), dtype=bool)
        first[1:] = qi[1:] != qi[:-1]
        end_node[qi[first]] = ti[first]
        end_gap[qi[first]] = dist[first]
    free = np.flatnonzero(end_node < 0)
    labels = cluster_points(ends[free], tol)
    codes, first = compact(labels)
    jc = len(first)
    end_node[free] = sc + codes
    j_xy = ends[free[first]]
    end_gap[free] = np.hypot(*(ends[free] - j_xy[codes]).T)
    node_xy = np.concatenate([structures.xy, j_xy]) if sc else j_xy
    taken = set(structures.ids.tolist())
    mark = ""
    jid = [f"J{i + 1:06d}" for i in range(jc)]
    while taken.intersection(jid):  # a structure is named like a junction: J000001~, ~~ ...
        mark += "~"  # ends: each round makes the ids longer than the one before
        jid = [f"J{i + 1:06d}{mark}" for i in range(jc)]
    node_id = np.concatenate([structures.ids, np.array(jid, dtype=object)])
    node_kind = np.concatenate([structures.kind, np.full(jc, "junction", dtype=object)])
    # gaps snapped (reported per end, beyond digitising noise)
    gap_ft = end_gap * ft_per_unit
    for e in np.flatnonzero(gap_ft > GAP_REPORT_MIN_FT).tolist():
        k, side = divmod(e, 2)
        nd = end_node[e]
        what = "junction" if nd >= sc else node_kind[nd]
        found.append(Finding(
            "gap_snapped", "info",
            f"{'start' if side == 0 else 'end'} of main {mains.main_id[k]} snapped "
            f"{gap_ft[e]:.2f} ft to {what} {node_id[nd]}",
            "mains", mains.main_id[k], LineString([ends[e], node_xy[nd]])))
    return Nodes(node_id=node_id, node_kind=node_kind, node_xy=node_xy, structure_count=sc,
                 junction_count=jc, end_node=end_node, end_gap=end_gap, findings=tuple(found),
                 merged_into=merged_into)


def merge_structures(structures: Structures, tol: float,
                     ft_per_unit: float) -> tuple[np.ndarray, list[Finding]]:
    """Structures of one kind lying within ``tol`` of each other (transitively)
    become one node: the first of them in layer order.

    Returns
    -------
    (merged_into, findings)
        ``merged_into[s]``: the structure ``s`` is merged into (itself when it
        is kept); one ``duplicate_structure`` finding per group, naming the
        merged ids, the kept one first.
    """
    sc = structures.count
    merged_into = np.arange(sc, dtype=np.int64)
    if sc < 2:
        return merged_into, []
    group = pd.factorize(pd.Series(structures.source.astype(str))
                         + "|" + pd.Series(structures.kind.astype(str)))[0]
    # one clustering of all structures; pairs of different kinds are not joined
    pts = cast(np.ndarray, shapely.points(structures.xy))  # (n, 2) coordinates: n points
    tree = shapely.STRtree(pts)
    if tol > 0:
        i, j = tree.query(pts, predicate="dwithin", distance=tol)
    else:
        i, j = tree.query(pts, predicate="intersects")
    keep = (i != j) & (group[i] == group[j])
    if not keep.any():
        return merged_into, []
    merged_into = component_labels(sc, i[keep], j[keep])
    dup = np.flatnonzero(merged_into != np.arange(sc))
    reps, members = np.unique(merged_into[dup], return_inverse=True)
    order = np.argsort(members, kind="stable")
    bounds = np.searchsorted(members[order], np.arange(len(reps) + 1))
    ids, xy = structures.ids, structures.xy
    found = []
    for r in range(len(reps)):
        rep = int(reps[r])
        others = dup[order[bounds[r]:bounds[r + 1]]]
        far = float(np.hypot(*(xy[others] - xy[rep]).T).max()) * ft_per_unit
        names = [str(ids[rep]), *map(str, ids[others].tolist())]
        found.append(Finding(
            "duplicate_structure", "warning",
            f"{len(names)} {structures.kind[rep]}s at one spot (within {far:.2f} ft): "
            f"{', '.join(names[:10])}{' ...' if len(names) > 10 else ''}; merged into one "
            f"node {names[0]}: delete the duplicates", str(structures.source[rep]),
            ",".join(names), Point(xy[rep])))
    return merged_into, found
