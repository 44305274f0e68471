"""Threaded STRtree helpers: nearest targets, pairwise shapely functions, joins.

shapely 2 releases the GIL in its vectorised functions, so large inputs are
split into chunks and run on a few threads (:func:`default_threads`, from
:mod:`gisnet.threads`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from shapely import STRtree

from ..threads import chunked, default_threads


class Clock:
    """Wall-clock seconds of consecutive phases (for the debug log and benchmarks)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self.t, 3)
        self.t = now

    def __str__(self) -> str:
        return ", ".join(f"{k} {v:.2f} s" for k, v in self.laps.items())


def nearest(
    sources: np.ndarray,
    targets: np.ndarray,
    target_rank: np.ndarray,
    *,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest target of every source geometry, ties resolved by lowest rank.

    Parameters
    ----------
    sources, targets
        Arrays of shapely geometries in one projected CRS.
    target_rank
        Integer rank of each target (e.g. the order of its id); among targets
        at the same distance the lowest rank wins.
    threads
        Threads to split the sources over (default :func:`default_threads`).

    Returns
    -------
    (index, distance)
        Per source: position of the nearest target (-1 when the source is empty
        or there are no targets) and the distance in CRS units (NaN then).
    """
    n = len(sources)
    out_j = np.full(n, -1, dtype=np.int64)
    out_d = np.full(n, np.nan)
    if n == 0 or len(targets) == 0:
        return out_j, out_d
    tree = STRtree(targets)

    def work(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        (ii, jj), d = tree.query_nearest(sources[lo:hi], all_matches=True, return_distance=True)
        return ii + lo, jj, d

    parts = chunked(n, threads or default_threads(), work)
    ii = np.concatenate([p[0] for p in parts])
    jj = np.concatenate([p[1] for p in parts])
    dd = np.concatenate([p[2] for p in parts])
    if len(ii) > 1 and (np.any(np.diff(ii) <= 0)):  # ties (all_matches): keep the lowest rank
        order = np.lexsort((target_rank[jj], ii))
        ii, jj, dd = ii[order], jj[order], dd[order]
        first = np.r_[True, ii[1:] != ii[:-1]]
        ii, jj, dd = ii[first], jj[first], dd[first]
    out_j[ii] = jj
    out_d[ii] = dd
    return out_j, out_d


def threaded_pairs(func: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray,
                   b: np.ndarray, threads: int) -> np.ndarray:
    """A vectorised shapely binary function over aligned arrays, on threads."""
    parts = chunked(len(a), threads, lambda lo, hi: func(a[lo:hi], b[lo:hi]))
    if not parts:
        return np.empty(0, dtype=object)
    return np.concatenate(parts)


def threaded_query(tree: STRtree, geoms: np.ndarray, threads: int,
                   distance: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (input index, tree index) within ``distance`` (CRS units; 0: intersecting),
    the query split over threads."""
    def work(lo: int, hi: int) -> np.ndarray:
        if distance > 0:
            r = tree.query(geoms[lo:hi], predicate="dwithin", distance=distance)
        else:
            r = tree.query(geoms[lo:hi], predicate="intersects")
        r[0] += lo
        return r

    parts = chunked(len(geoms), threads, work)
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    r = np.concatenate(parts, axis=1)
    return r[0], r[1]


def expand_pairs(p: np.ndarray, s: np.ndarray, hs: np.ndarray, hm: np.ndarray,
                 n_streets: int) -> tuple[np.ndarray, np.ndarray]:
    """Join (parcel, street) with (street, main) on the street: (parcel, main) pairs.

    A parcel abutting two streets that hold the same main gets the pair twice;
    that does not change the nearest.
    """
    order = np.argsort(hs, kind="stable")
    hs, hm = hs[order], hm[order]
    start = np.searchsorted(hs, np.arange(n_streets))
    count = np.bincount(hs, minlength=n_streets)
    c = count[s]
    pp = np.repeat(p, c)
    # position of each expanded row inside its street's block of mains
    offs = np.arange(len(pp)) - np.repeat(np.cumsum(c) - c, c)
    mm = hm[np.repeat(start[s], c) + offs]
    return pp, mm


def text_values(s: pd.Series) -> pd.Series:
    """A text column (ids, land uses) as object dtype with None for missing."""
    return s.astype(object).where(s.notna(), None)


def flag_values(df: pd.DataFrame, col: str, default: bool) -> np.ndarray:
    """A nullable boolean column as a numpy bool array, nulls (or no column) as ``default``."""
    if col not in df.columns:
        return np.full(len(df), default)
    return df[col].astype("boolean").fillna(default).to_numpy(dtype=bool)
