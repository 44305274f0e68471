"""Vectorised snapping helpers for the sewer graph: components, clusters, labels.

Everything here works on numpy arrays of coordinates in the working CRS and
returns integer arrays; no Python loop runs per pipe or per pipe end.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import shapely
from numpy.typing import NDArray

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


def component_labels(n: int, i: IntArray, j: IntArray) -> IntArray:
    """Connected components of an undirected graph given as an edge list.

    Parameters
    ----------
    n
        Number of vertices (0 .. n-1).
    i, j
        Edge end vertices, equal length.

    Returns
    -------
    numpy.ndarray
        ``labels[v]`` = the smallest vertex index in ``v``'s component, so the
        labelling is deterministic and independent of edge order.

    Notes
    -----
    Min-label hooking with pointer jumping, fully vectorised: each round
    hooks every root to the smallest root it touches, then compresses paths.
    Rounds needed grow with the logarithm of component diameter.

    Examples
    --------
    >>> component_labels(5, np.array([0, 3]), np.array([1, 4])).tolist()
    [0, 0, 2, 3, 3]
    """
    lab = np.arange(n, dtype=np.int64)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    keep = i != j
    i, j = i[keep], j[keep]
    if len(i) == 0:
        return lab
    while True:
        li, lj = lab[i], lab[j]
        m = np.minimum(li, lj)
        new = lab.copy()
        np.minimum.at(new, li, m)
        np.minimum.at(new, lj, m)
        while True:
            nxt = new[new]
            if np.array_equal(nxt, new):
                break
            new = nxt
        if np.array_equal(new, lab):
            return lab
        lab = new


def cluster_points(xy: FloatArray, tolerance: float) -> IntArray:
    """Cluster points lying within ``tolerance`` of each other (transitively).

    Parameters
    ----------
    xy
        ``(n, 2)`` coordinates, working CRS units.
    tolerance
        Join distance in the same units (``dwithin``: distance <= tolerance).

    Returns
    -------
    numpy.ndarray
        Cluster label per point: the smallest index of a point in its cluster.
        Rounding is not used: two points 0.01 apart on either side of a
        rounding boundary still cluster.
    """
    n = len(xy)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    pts = cast(np.ndarray, shapely.points(xy))  # (n, 2) coordinates: n points
    tree = shapely.STRtree(pts)
    if tolerance > 0:
        pairs = tree.query(pts, predicate="dwithin", distance=tolerance)
    else:
        pairs = tree.query(pts, predicate="intersects")
    return component_labels(n, pairs[0], pairs[1])


def compact(labels: IntArray) -> tuple[IntArray, IntArray]:
    """Renumber labels 0..k-1 in order of first appearance.

    Returns
    -------
    (codes, first)
        ``codes[i]`` the new label of item i; ``first[c]`` the index of the
        first item with new label c.
    """
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inv].astype(np.int64), first[order].astype(np.int64)
