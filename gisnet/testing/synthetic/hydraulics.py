"""Pipe sizing and tree arithmetic for the synthetic towns.

Manning full-pipe capacity, Harmon peaking at 100 gpd per person, the standard
diameters with their minimum slopes, and vectorised sums along a drainage tree
(pointer doubling, level-by-level accumulation).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ...units import CFS_TO_GPD

#: Standard pipe diameters (in) and their minimum slopes (ft/ft)
#: (Ten States / NH Env-Wq 704.04 up to 36 in, extrapolated above).
DIAMETERS_IN = np.array(
    [8, 10, 12, 15, 18, 21, 24, 27, 30, 36, 42, 48, 54, 60, 72, 84, 96, 108, 120], dtype=float
)
MIN_SLOPE = np.array(
    [0.0040, 0.0028, 0.0022, 0.0015, 0.0012, 0.0010, 0.0008, 0.00067, 0.0006, 0.0005,
     0.0004, 0.00035, 0.0003, 0.00028, 0.00025, 0.00022, 0.0002, 0.00018, 0.00016]
)
#: Manning n used for sizing (design value for every material).
MANNING_N = 0.013
#: Flow sizing: a pipe is chosen so that its peak flow is at most this
#: fraction of its full-flow capacity.
DESIGN_UTILIZATION = 0.6


def manning_capacity_gpd(diameter_in: ArrayLike, slope: ArrayLike,
                         n: float = MANNING_N) -> np.ndarray:
    """Full-pipe Manning capacity of circular pipes, gpd.

    ``Q_cfs = 0.46318 / n * D_ft**(8/3) * S**0.5`` (US units), times 646,317.
    """
    d_ft = np.asarray(diameter_in, dtype=float) / 12.0
    s = np.clip(np.asarray(slope, dtype=float), 0.0, None)
    return 0.46318 / n * d_ft ** (8.0 / 3.0) * np.sqrt(s) * CFS_TO_GPD


def harmon_peaking(avg_gpd: np.ndarray, cap: float = 4.0) -> np.ndarray:
    """Harmon peaking factor for an average flow (gpd), at 100 gpd per person."""
    p_thousands = np.asarray(avg_gpd, dtype=float) / 100.0 / 1000.0
    sq = np.sqrt(p_thousands)
    return np.minimum((18.0 + sq) / (4.0 + sq), cap)



# ----------------------------------------------------------------------------
# Tree arithmetic (pointer doubling, level-by-level accumulation)
# ----------------------------------------------------------------------------


def path_sums(nxt: np.ndarray, value: np.ndarray, root: int) -> np.ndarray:
    """Sum of ``value`` over each node's path to ``root`` (root's value excluded).

    ``nxt[i]`` is the downstream node of ``i`` (``nxt[root] == root``) and
    ``value[i]`` the value of the pipe leaving ``i``. Pointer doubling:
    O(n log depth) vectorised.
    """
    acc = np.asarray(value, dtype=float).copy()
    acc[root] = 0.0
    ptr = nxt.copy()
    while True:
        done = ptr == root
        if done.all():
            return acc
        acc = acc + acc[ptr]
        ptr = ptr[ptr]


def accumulate(nxt: np.ndarray, load: np.ndarray, root: int) -> np.ndarray:
    """Each node's own load plus everything upstream of it (tree, one pass per level)."""
    depth = path_sums(nxt, np.ones(len(nxt)), root).astype(np.int64)
    order = np.argsort(-depth, kind="stable")
    d_sorted = depth[order]
    acc = np.asarray(load, dtype=float).copy()
    cuts = np.flatnonzero(np.diff(d_sorted)) + 1
    for grp in np.split(order, cuts):
        if depth[grp[0]] == 0:
            break
        np.add.at(acc, nxt[grp], acc[grp])
    return acc


