"""Paths along the pipes: edges of connection points, tap-to-manhole lines, pipe rows.

Shared by the control manholes (:mod:`.control`) and the traces
(:mod:`.traces`). Node and edge indices are those of a
:class:`~gisnet.tracing.index.DownstreamIndex`; geometry is in its working CRS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..io.ids import first_positions
from ..threads import chunked, default_threads
from .index import DownstreamIndex


@dataclass(frozen=True)
class Chains:
    """What :func:`path_lines` walks of a :class:`DownstreamIndex`: its edge arrays,
    nodes and primary chains, without the graph the index was built from (which may
    then go before the lines are made)."""

    edges: Any
    nodes: np.ndarray
    next_edge: np.ndarray
    next_node: np.ndarray

    @classmethod
    def of(cls, idx: DownstreamIndex) -> Chains:
        return cls(idx.edges, idx.nodes, idx.next_edge, idx.next_node)


def edge_indices(idx: DownstreamIndex, points: pd.DataFrame) -> np.ndarray:
    """Edge index of each connection point (-1 where it has none)."""
    n = len(points)
    out = np.full(n, -1, dtype=np.int64)
    cols = [points[c] for c in ("edge_u", "edge_v", "edge_key")]
    keyed = pd.Index(idx.edges.key)
    if keyed.is_unique:  # graph-wide unique keys (main ids): one vectorised lookup
        if all(isinstance(c.dtype, pd.StringDtype) for c in cols) \
                and _all_text(idx.nodes) and _all_text(idx.edges.key):
            # text held by Arrow: matched as codes (no Python string per point)
            pu, pv, e = (first_positions(pd.Series(u, dtype=c.dtype), c) for u, c in zip(
                (idx.nodes, idx.nodes, idx.edges.key), cols, strict=True))
            hit = e >= 0
            eh = e[hit]
            same = (idx.edges.u[eh] == pu[hit]) & (idx.edges.v[eh] == pv[hit])
        else:
            ku, kv, kk = (c.to_numpy(dtype=object) for c in cols)
            e = keyed.get_indexer(pd.Index(kk, dtype=object))
            hit = e >= 0
            eh = e[hit]
            same = (idx.nodes[idx.edges.u[eh]] == ku[hit]) & \
                (idx.nodes[idx.edges.v[eh]] == kv[hit])
        rows = np.flatnonzero(hit)[same]
        out[rows] = eh[same]
    todo = np.flatnonzero((out < 0) & cols[2].notna().to_numpy(dtype=bool))
    if len(todo):
        get = idx.edge_index.get
        ku, kv, kk = (c.iloc[todo].to_numpy(dtype=object) for c in cols)
        out[todo] = [get((u, v, k), -1) for u, v, k in zip(ku, kv, kk, strict=True)]
    return out


def _all_text(values: np.ndarray) -> bool:
    return pd.api.types.infer_dtype(values, skipna=False) in ("string", "empty")


def tail_coords(idx: DownstreamIndex | Chains, edge: np.ndarray, frac: np.ndarray,
                taps: np.ndarray):
    """Coordinates of each tap edge from the tap to its downstream end.

    Returns (coords (k, 2), owner row per coordinate), rows in order."""
    geoms = idx.edges.geometry[edge]
    xy, own = shapely.get_coordinates(geoms, return_index=True)
    if not len(xy):
        return np.empty((0, 2)), np.empty(0, np.int64)
    seg = np.zeros(len(xy))
    same = np.zeros(len(xy), bool)
    same[1:] = own[1:] == own[:-1]
    d = np.hypot(*(xy[1:] - xy[:-1]).T)
    seg[1:] = np.where(same[1:], d, 0.0)
    # distance along each edge, summed within the edge only: a global running sum
    # minus its value at the edge's start would round differently depending on
    # which edges are traced together, and a tap on a vertex must not
    along = pd.Series(seg).groupby(own, sort=False).cumsum().to_numpy()
    total = shapely.length(geoms)[own]
    f = np.where(total > 0, along / np.where(total > 0, total, 1.0), 1.0)
    keep = f > frac[own]
    last = np.ones(len(xy), bool)
    last[:-1] = ~same[1:]
    keep |= last
    tap_xy = shapely.get_coordinates(taps)
    coords = np.concatenate([tap_xy, xy[keep]])
    owner = np.concatenate([np.arange(len(edge)), own[keep]])
    order = np.argsort(owner, kind="stable")
    return coords[order], owner[order]


#: Rows whose path lines are made together: what :func:`path_lines` holds at once is
#: a few arrays of the vertices of this many paths (at a county's million
#: connection points, all at once, the vertex arrays were about 0.7 GB).
PATH_CHUNK_ROWS = 65_536


def path_lines(
    idx: DownstreamIndex | Chains,
    edge: np.ndarray,
    frac: np.ndarray,
    taps: np.ndarray,
    target: np.ndarray,
) -> np.ndarray:
    """Lines from each tap along its edge and then the primary chain to the
    node ``target`` (node index). Rows with target -1 get None.

    Made :data:`PATH_CHUNK_ROWS` rows at a time, the chunks on
    :func:`gisnet.threads.default_threads` threads (numpy and GEOS leave the GIL for
    most of the work): each row's line depends on that row alone, so the lines are
    the same however the rows are cut and whichever thread makes them."""
    n = len(edge)
    lines = np.empty(n, dtype=object)

    starts = range(0, n, PATH_CHUNK_ROWS)

    def chunks(lo: int, hi: int) -> None:
        for start in starts[lo:hi]:
            cut = slice(start, start + PATH_CHUNK_ROWS)
            lines[cut] = _path_lines(idx, edge[cut], frac[cut], taps[cut], target[cut])

    chunked(len(starts), default_threads(), chunks, min_n=2)
    return lines


def _path_lines(
    idx: DownstreamIndex | Chains,
    edge: np.ndarray,
    frac: np.ndarray,
    taps: np.ndarray,
    target: np.ndarray,
) -> np.ndarray:
    n = len(edge)
    lines = np.empty(n, dtype=object)
    rows = np.flatnonzero((edge >= 0) & (target >= 0))
    if not len(rows):
        return lines
    tc, towner = tail_coords(idx, edge[rows], frac[rows], taps[rows])
    parts_xy = [tc]
    parts_row = [towner]
    parts_seq = [np.zeros(len(towner), np.int64)]
    cur = idx.edges.v[edge[rows]]
    tgt = target[rows]
    local = np.arange(len(rows))
    active = cur != tgt
    # a tap at distance 0 into manhole u: no path
    at_u = idx.edges.u[edge[rows]] == tgt
    active &= ~at_u
    step = 0
    limit = len(idx.nodes) + 1
    while active.any() and step < limit:
        step += 1
        a = np.flatnonzero(active)
        e = idx.next_edge[cur[a]]
        xy, own = shapely.get_coordinates(idx.edges.geometry[e], return_index=True)
        first = np.ones(len(own), bool)
        first[1:] = own[1:] != own[:-1]
        parts_xy.append(xy[~first])
        parts_row.append(local[a][own[~first]])
        parts_seq.append(np.full((~first).sum(), step, np.int64))
        cur[a] = idx.next_node[cur[a]]
        active[a] = cur[a] != tgt[a]
    xy = np.concatenate(parts_xy)
    row = np.concatenate(parts_row)
    seq = np.concatenate(parts_seq)
    order = np.lexsort((seq, row))  # stable within (row, seq): vertex order kept
    xy, row = xy[order], row[order]
    counts = np.bincount(row, minlength=len(rows))
    good = (counts >= 2) & ~at_u
    keep = good[row]
    rank = np.cumsum(good) - 1  # shapely wants indices 0..k-1 without gaps
    made = shapely.linestrings(xy[keep], indices=rank[row[keep]])
    which = rows[np.flatnonzero(good)]
    # drop zero-length paths (tap exactly on the manhole)
    made = np.asarray(made, dtype=object)
    zero = shapely.length(made) <= 0
    made[zero] = None
    lines[which] = made
    return lines



def edge_rows(idx: DownstreamIndex, edges: list[int] | np.ndarray) -> gpd.GeoDataFrame:
    e = np.asarray(edges, dtype=np.int64)
    E = idx.edges
    return gpd.GeoDataFrame(
        {
            "main_id": E.main_id[e],
            "edge_u": idx.nodes[E.u[e]],
            "edge_v": idx.nodes[E.v[e]],
            "edge_key": E.key[e],
            "length_ft": E.length_ft[e],
            "diameter_in": E.diameter_in[e],
        },
        geometry=gpd.GeoSeries(E.geometry[e], crs=idx.crs),
        crs=idx.crs,
    )
