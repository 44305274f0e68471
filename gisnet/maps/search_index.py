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
from concurrent.futures import Future, ThreadPoolExecutor
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

from ..output import remember_bytes
from .encoding import SPACE_CLASS, TextCodes

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


def _inner_points(gdfs: Sequence[gpd.GeoDataFrame]) -> list[np.ndarray]:
    """A point inside each feature of each frame (``shapely.point_on_surface``; NaN
    where the feature has no geometry), as (n, 2) coordinates in the frame's CRS.

    A shape that several layers hold (a county's parcels are drawn whole and again by
    their status) is the same Python object in each: its point is found once. A point
    is its own (its coordinates, not a copy of it made first).
    """
    geoms = [np.asarray(g.geometry.array, dtype=object) for g in gdfs]
    oks = [~(shapely.is_missing(g) | shapely.is_empty(g)) for g in geoms]
    have = [g[ok] for g, ok in zip(geoms, oks, strict=True)]
    out = [np.full((len(g), 2), np.nan) for g in geoms]
    every = np.concatenate(have) if have else np.zeros(0, dtype=object)
    if not len(every):
        return out
    # (every object is alive here, so no two share an id)
    ids = np.fromiter(map(id, every), dtype=np.int64, count=len(every))
    _, first, again = np.unique(ids, return_index=True, return_inverse=True)
    shapes = every[first]
    xy = np.empty((len(shapes), 2))
    pt = shapely.get_type_id(shapes) == 0
    xy[pt] = shapely.get_coordinates(shapes[pt])
    xy[~pt] = shapely.get_coordinates(shapely.point_on_surface(shapes[~pt]))
    xy = xy[again.reshape(-1)]
    at = 0
    for o, ok, h in zip(out, oks, have, strict=True):
        o[ok] = xy[at:at + len(h)]
        at += len(h)
    return out


def _points(gdf: gpd.GeoDataFrame, inner: np.ndarray | None = None) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Longitude and latitude (6 decimals) of a point inside each feature (NaN where none);
    ``inner``: those points in the frame's CRS (:func:`_inner_points`), when found.

    The points' coordinates go through PROJ as arrays: the transformation
    :meth:`geopandas.GeoSeries.to_crs` makes (``always_xy``), without making the
    points again in degrees.
    """
    xy = inner if inner is not None else _inner_points([gdf])[0]
    ok = ~np.isnan(xy[:, 0])
    if ok.any() and gdf.crs is not None:
        from pyproj import CRS, Transformer

        to = CRS.from_user_input("EPSG:4326")
        if not CRS.from_user_input(gdf.crs).equals(to):
            tr = Transformer.from_crs(gdf.crs, to, always_xy=True)
            xy[:, 0], xy[:, 1] = tr.transform(xy[:, 0], xy[:, 1])
    return np.round(xy[:, 0], 6), np.round(xy[:, 1], 6)


def _places(lon: np.ndarray, lat: np.ndarray) -> pa.Array:
    """``lon,lat`` of each point as JSON writes the two numbers (null where none)."""
    ok = ~np.isnan(lon)
    out = pa.nulls(len(lon), pa.string())
    if ok.any():
        text = pc.binary_join_element_wise(_decimals(lon[ok]), _decimals(lat[ok]), ",")
        out = pc.replace_with_mask(out, pa.array(ok), text)
    return out


#: A text with white space (what Python's ``str.strip()`` takes away) at an end, in RE2.
_EDGE_SPACE = f"^[{SPACE_CLASS}]|[{SPACE_CLASS}]$"
#: What JSON escapes in a string (``ensure_ascii=False``).
_ESCAPED = r'["\\\x{0}-\x{1f}]'


def _python_where(arr: pa.Array, mask: pa.Array, fn: Any,
                  source: pa.Array | None = None) -> pa.Array:
    """``arr`` where ``mask`` is false, ``fn`` of ``source`` (default ``arr``), in
    Python, where it is true."""
    idx = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    if not len(idx):
        return arr
    src = arr if source is None else source
    fixed = pa.array([fn(v) for v in src.take(pa.array(idx)).to_pylist()], type=pa.string())
    return pc.replace_with_mask(arr, mask, fixed)


def _texts(values: Sequence[Any]) -> tuple[np.ndarray, pa.Array]:
    """A search column as a code per row into its distinct values' texts
    (``str(v).strip()``, empty for a value with none); -1 where the value is missing
    (None, NaN)."""
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
    arr = uniques.cast(pa.string()) if isinstance(uniques, pa.Array) else \
        pa.array(uniques, type=pa.string(), from_pandas=True)
    # Python strips the few with white space at an end (its own idea of white space)
    arr = _python_where(arr, pc.match_substring_regex(arr, _EDGE_SPACE), str.strip)
    return np.asarray(codes, dtype=np.int64), arr


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


def _common_prefix(lows: pa.Array, lens: np.ndarray) -> np.ndarray:
    """For sorted distinct texts, the characters each shares with the one before it (to
    :data:`MAX_DEPTH` + 1; 0 for the first)."""
    width = MAX_DEPTH + 1
    heads = pc.utf8_slice_codeunits(lows, 0, width)
    out = np.zeros(len(lows), dtype=np.int64)
    step = 1 << 20
    for a in range(1, len(lows), step):  # a block at a time: 4 bytes a character
        b = min(len(lows), a + step)
        block = heads.slice(a - 1, b - a + 1).to_numpy(zero_copy_only=False)
        m = block.astype(f"U{width}").view(np.uint32).reshape(-1, width)
        eq = m[1:] == m[:-1]
        k = np.where(eq.all(axis=1), width, eq.argmin(axis=1))
        out[a:b] = np.minimum(k, np.minimum(lens[a - 1:b - 1], lens[a:b]))
    return out


def _shard_ranges(lows: pa.Array, weight: np.ndarray) -> list[tuple[int, int, str]]:
    """The shards of :data:`MAX_SHARD` entries or fewer, as ``(first, end, key)`` ranges
    of the sorted distinct lower-cased texts ``lows`` (``weight``: entries of each).

    A shard is named by the first :data:`PREFIX` characters of its texts; one with
    more than :data:`MAX_SHARD` entries is split by one more character (to
    :data:`MAX_DEPTH`), a text no longer than the shard's name staying in it. Texts
    sharing a prefix are a run of the sorted texts, so each split is a cut of the run
    where the next text shares fewer characters with the one before it.
    """
    lens = pc.utf8_length(lows).to_numpy().astype(np.int64)
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
        key = lows[a].as_py()[:d]
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


def _blocks(starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """Runs ``[s, e)`` of whole shards of about :data:`_WRITE_ROWS` entries (a shard
    bigger than that alone)."""
    out = []
    s = 0
    while s < len(starts):
        e = s + 1
        while e < len(starts) and ends[e] - starts[s] <= _WRITE_ROWS:
            e += 1
        out.append((s, e))
        s = e
    return out


def _write_shards(tiles_dir: Path, rows: pa.Array,
                  shards: list[tuple[str, int, int]]) -> None:
    """Write each shard ``(key, first, end)`` of ``rows`` (each entry's JSON and a
    comma) as one slice of their bytes."""
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32)[
        rows.offset:rows.offset + len(rows) + 1]
    data = rows.buffers()[2]
    for key, first, end in shards:
        body = b"[" + data[offsets[first]:offsets[end] - 1].to_pybytes() + b"]"
        path = tiles_dir / shard_file(key)  # (not the block's last comma)
        path.write_bytes(body)
        remember_bytes(path, body)  # hashed here for the manifest, not read back


#: Entries made into JSON and written at a time (shards are never cut).
_WRITE_ROWS = 1 << 18
#: The sort keys of an entry are packed into one integer of fewer bits than this.
_KEY_BITS = 63


def write_search_index(tiles_dir: Path, layers: Sequence[SearchLayer]) -> dict[str, Any] | None:
    """Write the index of ``layers`` into ``tiles_dir`` (see the module docstring).

    Every step but the distinct texts' own (strip, lower case, JSON string) is over
    arrays: the entries as codes into the distinct texts, sorted with one stable
    ``argsort`` of their four keys packed into one integer, shards as runs of the
    sorted distinct texts, each entry's JSON made with Arrow's string kernels a block
    of shards at a time and a shard's file one slice of that block's bytes.

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
    parts: list[tuple[np.ndarray, int, int, np.ndarray]] = []
    chunks: list[pa.Array] = []
    places: list[pa.Array] = []
    base = at = 0
    layers = [lyr for lyr in layers if lyr.columns and len(lyr.gdf)]
    inner = _inner_points([lyr.gdf for lyr in layers])
    for lyr in layers:
        lon, lat = _points(lyr.gdf, inner.pop(0))
        placed = ~np.isnan(lon)
        places.append(_places(lon, lat))  # once a feature, for each of its columns
        li = len(keys)
        keys.append(lyr.key)
        for col, values in lyr.columns.items():
            if col not in fields:
                fields.append(col)
            codes, texts = _texts(values)
            rows = np.flatnonzero((codes >= 0) & placed)
            parts.append((codes[rows] + base, li, fields.index(col), rows + at))
            chunks.append(texts)
            base += len(texts)
        at += len(lon)
    place = pa.chunked_array(places, type=pa.string()).combine_chunks()
    del places
    # one id per distinct text, over every column's distinct values
    coded = pa.chunked_array(chunks, type=pa.string()).combine_chunks().dictionary_encode()
    del chunks
    texts = coded.dictionary
    of_unique = coded.indices.to_numpy().astype(np.int64)
    keep = (pc.utf8_length(texts).to_numpy() > 0)[of_unique]  # an empty text: no entry
    for k, p in enumerate(parts):
        ok = keep[p[0]]
        parts[k] = (of_unique[p[0][ok]], p[1], p[2], p[3][ok])
    del coded, of_unique, keep
    n = sum(len(p[0]) for p in parts)
    if not n:
        return None
    wide = np.int32 if max(base, at) < 2 ** 31 else np.int64
    gid = np.concatenate([p[0] for p in parts]).astype(wide)
    narrow = np.int8 if max(len(keys), len(fields)) < 128 else np.int64
    layer = np.concatenate([np.full(len(p[0]), p[1], dtype=narrow) for p in parts])
    field = np.concatenate([np.full(len(p[0]), p[2], dtype=narrow) for p in parts])
    spot = np.concatenate([p[3] for p in parts]).astype(wide)
    del parts
    # only the texts of some entry
    used = np.bincount(gid, minlength=len(texts)) > 0
    gid = (np.cumsum(used) - 1).astype(wide)[gid]
    texts = texts.filter(pa.array(used))
    del used
    # lower case: Arrow's for ASCII, Python's for the rest (Unicode's special cases)
    lows = _python_where(pc.utf8_lower(texts), pc.invert(pc.string_is_ascii(texts)), str.lower,
                         source=texts)
    low_rank = pc.rank(lows, sort_keys="ascending",
                       tiebreaker="dense").to_numpy().astype(wide) - 1
    text_rank = pc.rank(texts, sort_keys="ascending",
                        tiebreaker="dense").to_numpy().astype(wide) - 1
    n_low = int(low_rank.max()) + 1
    first_of = np.empty(n_low, dtype=np.int64)
    first_of[low_rank] = np.arange(len(low_rank))
    sorted_lows = lows.take(pa.array(first_of))
    del lows, first_of
    entry_low = low_rank[gid]
    # as each shard's entries were sorted by (lower case, layer, field, text), in the
    # order they were met where all four are equal (a stable sort)
    bits = [int(x).bit_length() for x in (n_low, len(keys), len(fields), len(text_rank))]
    if sum(bits) < _KEY_BITS:  # the four keys as one integer
        key = entry_low.astype(np.int64) << (bits[1] + bits[2] + bits[3])
        key |= layer.astype(np.int64) << (bits[2] + bits[3])
        key |= field.astype(np.int64) << bits[3]
        key |= text_rank[gid].astype(np.int64)
        order = np.argsort(key, kind="stable")
        del key
    else:
        order = np.lexsort((text_rank[gid], field, layer, entry_low))
    del text_rank
    shards = _shard_ranges(sorted_lows, np.bincount(entry_low, minlength=n_low))
    del sorted_lows
    # where each shard's entries start in the sorted entries
    starts = np.searchsorted(entry_low[order], [a for a, _b, _k in shards], side="left")
    ends = np.append(starts[1:], n)
    escaped = _python_where(pc.binary_join_element_wise('"', texts, '"', ""),
                            pc.match_substring_regex(texts, _ESCAPED),
                            lambda q: encode_basestring(q[1:-1]))
    del texts
    tiles_dir.mkdir(parents=True, exist_ok=True)
    names = {shard_file(key) for _a, _b, key in shards}
    for old in tiles_dir.glob("search-*.json"):  # shards of an earlier index
        if old.name not in names:
            old.unlink(missing_ok=True)
    small = pa.array([str(i) for i in range(max(len(keys), len(fields)))])
    # the files are written on a thread while the next block's JSON is made
    with ThreadPoolExecutor(1, thread_name_prefix="gisnet-search") as files:
        pending: list[Future[None]] = []
        for s, e in _blocks(starts, ends):
            take = order[starts[s]:ends[e - 1]]
            rows = pc.binary_join_element_wise(
                "[", escaped.take(pa.array(gid[take])), ",",
                pc.take(small, pa.array(layer[take])), ",",
                pc.take(small, pa.array(field[take])), ",",
                place.take(pa.array(spot[take])), "],", "")
            for f in pending:
                f.result()  # one block waits to be written at most
            pending = [files.submit(_write_shards, tiles_dir, rows,
                                    [(shards[i][2], starts[i] - starts[s], ends[i] - starts[s])
                                     for i in range(s, e)])]
        for f in pending:
            f.result()
    counts = {key: int(ends[i] - starts[i]) for i, (_a, _b, key) in enumerate(shards)}
    manifest = {"format": _FORMAT, "prefix": PREFIX, "layers": keys, "fields": fields,
                "shards": dict(sorted(counts.items()))}
    (tiles_dir / INDEX_FILE).write_text(json.dumps(manifest, separators=(",", ":"),
                                                   ensure_ascii=False), encoding="utf-8")
    return {"url": f"{tiles_dir.name}/{INDEX_FILE}", "entries": n}
