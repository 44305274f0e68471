"""The search index of tiled pages: every id and address of the tiled layers, beside
the tiles.

A tiled page (:mod:`gisnet.maps.tiled`) holds only the small layers; its search
box would find only what is inside the page. So :func:`write_search_index` writes,
next to the archives, an index of the values of each tiled layer's search columns
(``parcel_id``, ``address``, ``node_id`` ...) with a point inside each feature:

``tiles/search.json``
    ``{"format": 1, "prefix": 2, "layers": [layer keys], "fields": [column names],
    "shards": {shard: entries}}``;
``tiles/search-<hex>.json``
    one shard: ``[[value, layer, field, lon, lat], ...]`` (``layer`` and ``field``
    index the lists above), sorted by the lower-cased value. A value goes to the
    shard named by its first lower-cased characters: :data:`PREFIX` of them, one
    more while a shard would hold over :data:`MAX_SHARD` values (ids sharing a
    long prefix, ``P000123``); ``<hex>`` is the shard's UTF-8 in hexadecimal, a
    safe file name.

The page (``gisnet-maps.js``) fetches the manifest once, then the shards that can
hold what was typed (a shard whose name starts with it, or that it starts with),
keeps the entries that start with it (the exact ones first), zooms to the first,
waits for its tile and opens the feature's popup from the tile's properties. It
asks for more characters rather than fetch more than 50,000 entries. ``gisnet
serve --maps`` serves the files as it serves the archives. A shard holds at most
2,000 entries (about 100 KB) unless 12 characters cannot tell them apart.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import shapely

from .encoding import TextCodes

__all__ = ["INDEX_FILE", "PREFIX", "SearchLayer", "shard_file", "write_search_index"]

#: The manifest of the index, in the tiles folder.
INDEX_FILE = "search.json"
#: Characters of a value that name its shard (at least).
PREFIX = 2
#: A shard of more entries is split by one more character ...
MAX_SHARD = 2_000
#: ... up to this many characters.
MAX_DEPTH = 12
_FORMAT = 1


@dataclass
class SearchLayer:
    """One tiled layer's searchable values: its key, geometry and search columns."""

    key: str
    gdf: gpd.GeoDataFrame
    columns: dict[str, Sequence[Any]]


def shard_file(shard: str) -> str:
    """The file name of a shard: ``search-<hex of its UTF-8>.json``."""
    return f"search-{shard.encode('utf-8').hex()}.json"


def _points(gdf: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Longitude and latitude (6 decimals) of a point inside each feature (NaN where none)."""
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    ok = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    pts = np.full(len(geoms), None, dtype=object)
    pts[ok] = shapely.point_on_surface(geoms[ok])
    s = gpd.GeoSeries(pts, crs=gdf.crs)
    if gdf.crs is not None:
        s = s.to_crs("EPSG:4326")
    xy = np.full((len(geoms), 2), np.nan)
    if ok.any():
        xy[ok] = shapely.get_coordinates(np.asarray(s.array, dtype=object)[ok])
    return np.round(xy[:, 0], 6), np.round(xy[:, 1], 6)


def _texts(values: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """A search column as a code per row into its distinct texts (``str(v).strip()``);
    -1 where the value is missing (None, NaN) or its text empty."""
    if isinstance(values, TextCodes):
        codes, uniques = values.codes, values.uniques
    else:
        made = TextCodes.of(values)
        if made is not None:
            codes, uniques = made.codes, made.uniques
        else:  # numbers or mixed values: the text of each
            text = pd.Series([None if v is None or (isinstance(v, float) and np.isnan(v))
                              else str(v) for v in values], dtype=object)
            c, u = pd.factorize(text, use_na_sentinel=True)
            codes, uniques = c, np.asarray(u, dtype=object)
    stripped = [str(u).strip() for u in uniques]
    # strip() can make two distinct values one text: one code per text
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(t, len(first)) if t else -1 for t in stripped] + [-1],
                     dtype=np.int64)
    out = remap[np.where(codes < 0, len(stripped), codes)]
    return out, list(first)


def _decimals(x: np.ndarray) -> pa.Array:
    """``repr`` of each float of ``x`` (values rounded to 6 decimals, as
    :func:`_points` gives them), as JSON writes them.

    ``np.round(v, 6)`` is the double nearest ``n / 10**6`` for the integer ``n =
    rint(v * 10**6)``; for ``1e-4 <= |v| < 1e16`` its shortest repr is that decimal with
    the trailing zeros of its fraction dropped (one kept: ``-73.0``). Other values
    (none for longitudes and latitudes outside a few metres of 0°) take Python's repr.
    """
    n = np.rint(x * 1e6).astype(np.int64)
    a = np.abs(n)
    whole = pc.cast(pa.array(a // 1_000_000), pa.string())
    frac = pc.utf8_slice_codeunits(pc.cast(pa.array(a % 1_000_000 + 1_000_000), pa.string()),
                                   1, 7)
    frac = pc.utf8_rtrim(frac, characters="0")
    frac = pc.if_else(pc.equal(pc.utf8_length(frac), 0), "0", frac)
    sign = pa.array(np.where(np.signbit(x), "-", ""))
    out = pc.binary_join_element_wise(sign, whole, ".", frac, "")
    odd = np.nonzero((np.abs(x) < 1e-4) & (x != 0))[0]
    if len(odd):
        fixed = out.to_numpy(zero_copy_only=False).astype(object)
        fixed[odd] = [repr(float(v)) for v in x[odd]]
        out = pa.array(fixed, type=pa.string())
    return out


def _common_prefix(lows: list[str], lens: np.ndarray) -> np.ndarray:
    """For sorted distinct texts, the characters each shares with the one before it (to
    :data:`MAX_DEPTH` + 1; 0 for the first)."""
    width = MAX_DEPTH + 1
    out = np.zeros(len(lows), dtype=np.int64)
    step = 1 << 20
    for a in range(1, len(lows), step):  # a block at a time: 4 bytes a character
        b = min(len(lows), a + step)
        m = np.array(lows[a - 1:b], dtype=f"U{width}").view(np.uint32).reshape(-1, width)
        eq = m[1:] == m[:-1]
        k = np.where(eq.all(axis=1), width, eq.argmin(axis=1))
        out[a:b] = np.minimum(k, np.minimum(lens[a - 1:b - 1], lens[a:b]))
    return out


def _shard_ranges(lows: list[str], weight: np.ndarray) -> list[tuple[int, int, str]]:
    """The shards of :data:`MAX_SHARD` entries or fewer, as ``(first, end, key)`` ranges
    of the sorted distinct lower-cased texts ``lows`` (``weight``: entries of each).

    A shard is named by the first :data:`PREFIX` characters of its texts; one with
    more than :data:`MAX_SHARD` entries is split by one more character (to
    :data:`MAX_DEPTH`), a text no longer than the shard's name staying in it. Texts
    sharing a prefix are a run of the sorted texts, so each split is a cut of the run
    where the next text shares fewer characters with the one before it.
    """
    lens = np.array([len(t) for t in lows], dtype=np.int64)
    lcp = _common_prefix(lows, lens)
    cw = np.concatenate([[0], np.cumsum(weight)])
    out: list[tuple[int, int, str]] = []

    def runs(a: int, b: int, d: int) -> list[tuple[int, int]]:
        cuts = a + 1 + np.nonzero(lcp[a + 1:b] < d)[0]
        edges = [a, *cuts.tolist(), b]
        return list(itertools.pairwise(edges))

    todo = [(a, b, min(PREFIX, int(lens[a]))) for a, b in runs(0, len(lows), PREFIX)]
    while todo:
        a, b, d = todo.pop()
        key = lows[a][:d]
        if cw[b] - cw[a] <= MAX_SHARD or d >= MAX_DEPTH or d < PREFIX:
            out.append((a, b, key))
            continue
        if lens[a] == d:  # the text that is the shard's name stays in it
            out.append((a, a + 1, key))
            a += 1
            if a == b:
                continue
        todo.extend((x, y, d + 1) for x, y in runs(a, b, d + 1))
    out.sort()
    return out


#: Entries made into JSON and written at a time (shards are never cut).
_WRITE_ROWS = 1 << 18


def write_search_index(tiles_dir: Path, layers: Sequence[SearchLayer]) -> dict[str, Any] | None:
    """Write the index of ``layers`` into ``tiles_dir`` (see the module docstring).

    Every step but the distinct texts' own (strip, lower case, JSON string) is over
    arrays: the entries as codes into the distinct texts, sorted with one
    ``lexsort``, shards as runs of the sorted distinct texts, each entry's JSON made
    with Arrow's string kernels a block of shards at a time and a shard's file one
    slice of that block's bytes.

    Parameters
    ----------
    tiles_dir
        The folder of the archives (``DIR/tiles``).
    layers
        The tiled layers with search columns; a value that is missing or empty is
        left out.

    Returns
    -------
    dict or None
        ``{"url": "tiles/search.json", "entries": N}``, or None when there is
        nothing to index.
    """
    keys: list[str] = []
    fields: list[str] = []
    vocab: dict[str, int] = {}
    parts: list[tuple[np.ndarray, int, int, np.ndarray, np.ndarray]] = []
    for lyr in layers:
        if not lyr.columns or not len(lyr.gdf):
            continue
        lon, lat = _points(lyr.gdf)
        placed = ~np.isnan(lon)
        li = len(keys)
        keys.append(lyr.key)
        for col, values in lyr.columns.items():
            if col not in fields:
                fields.append(col)
            codes, texts = _texts(values)
            ids = np.array([vocab.setdefault(t, len(vocab)) for t in texts] + [-1],
                           dtype=np.int64)[codes]
            rows = np.nonzero((ids >= 0) & placed)[0]
            parts.append((ids[rows], li, fields.index(col), lon[rows], lat[rows]))
    n = sum(len(p[0]) for p in parts)
    if not n:
        return None
    gid = np.concatenate([p[0] for p in parts])
    layer = np.concatenate([np.full(len(p[0]), p[1], dtype=np.int64) for p in parts])
    field = np.concatenate([np.full(len(p[0]), p[2], dtype=np.int64) for p in parts])
    lon = np.concatenate([p[3] for p in parts])
    lat = np.concatenate([p[4] for p in parts])
    del parts
    texts = list(vocab)
    del vocab
    lows = pa.array([t.lower() for t in texts], type=pa.string())
    low_rank = pc.rank(lows, sort_keys="ascending",
                       tiebreaker="dense").to_numpy().astype(np.int64) - 1
    text_rank = pc.rank(pa.array(texts, type=pa.string()), sort_keys="ascending",
                        tiebreaker="dense").to_numpy().astype(np.int64) - 1
    sorted_lows = np.empty(int(low_rank.max()) + 1, dtype=object)
    sorted_lows[low_rank] = lows.to_numpy(zero_copy_only=False)
    del lows
    entry_low = low_rank[gid]
    # as each shard's entries were sorted by (lower case, layer, field, text), in the
    # order they were met where all four are equal
    order = np.lexsort((np.arange(n), text_rank[gid], field, layer, entry_low))
    del text_rank
    shards = _shard_ranges(sorted_lows.tolist(),
                           np.bincount(entry_low, minlength=len(sorted_lows)))
    del sorted_lows
    # where each shard's entries start in the sorted entries
    starts = np.searchsorted(entry_low[order], [a for a, _b, _k in shards], side="left")
    ends = np.append(starts[1:], n)
    escaped = pa.array([encode_basestring(t) for t in texts], type=pa.string())
    del texts
    tiles_dir.mkdir(parents=True, exist_ok=True)
    names = {shard_file(key) for _a, _b, key in shards}
    for old in tiles_dir.glob("search-*.json"):  # shards of an earlier index
        if old.name not in names:
            old.unlink(missing_ok=True)
    small = [pa.scalar(str(i)) for i in range(max(len(keys), len(fields)))]
    s = 0
    while s < len(shards):
        e = s + 1  # whole shards, about _WRITE_ROWS entries
        while e < len(shards) and ends[e] - starts[s] <= _WRITE_ROWS:
            e += 1
        take = order[starts[s]:ends[e - 1]]
        rows = pc.binary_join_element_wise(
            "[", escaped.take(pa.array(gid[take])), ",",
            pc.take(pa.array(small), pa.array(layer[take])), ",",
            pc.take(pa.array(small), pa.array(field[take])), ",",
            _decimals(lon[take]), ",", _decimals(lat[take]), "],", "")
        offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32)[
            rows.offset:rows.offset + len(rows) + 1]
        data = rows.buffers()[2]
        base = starts[s]
        for i in range(s, e):
            first, last = offsets[starts[i] - base], offsets[ends[i] - base]
            body = data[first:last - 1].to_pybytes()  # without the last row's comma
            (tiles_dir / shard_file(shards[i][2])).write_bytes(b"[" + body + b"]")
        s = e
    counts = {key: int(ends[i] - starts[i]) for i, (_a, _b, key) in enumerate(shards)}
    manifest = {"format": _FORMAT, "prefix": PREFIX, "layers": keys, "fields": fields,
                "shards": dict(sorted(counts.items()))}
    (tiles_dir / INDEX_FILE).write_text(json.dumps(manifest, separators=(",", ":"),
                                                   ensure_ascii=False), encoding="utf-8")
    return {"url": f"{tiles_dir.name}/{INDEX_FILE}", "entries": n}
