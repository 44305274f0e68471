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

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import shapely

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


def _shards(entries: list[list[Any]]) -> dict[str, list[list[Any]]]:
    """Entries by shard: the lower-cased prefix of :data:`PREFIX` characters, one
    character longer (to :data:`MAX_DEPTH`) while a shard holds more than
    :data:`MAX_SHARD` entries; a value shorter than its shard's split stays in it."""
    todo: list[tuple[str, list[list[Any]]]] = []
    first: dict[str, list[list[Any]]] = {}
    for e in entries:
        first.setdefault(e[0].lower()[:PREFIX], []).append(e)
    todo.extend(first.items())
    out: dict[str, list[list[Any]]] = {}
    while todo:
        key, group = todo.pop()
        depth = len(key)
        if len(group) <= MAX_SHARD or depth >= MAX_DEPTH or depth < PREFIX:
            out[key] = group
            continue
        deeper: dict[str, list[list[Any]]] = {}
        for e in group:
            deeper.setdefault(e[0].lower()[:depth + 1], []).append(e)
        stay = deeper.pop(key, [])
        if stay:
            out[key] = stay
        todo.extend(deeper.items())
    return out


def write_search_index(tiles_dir: Path, layers: Sequence[SearchLayer]) -> dict[str, Any] | None:
    """Write the index of ``layers`` into ``tiles_dir`` (see the module docstring).

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
    entries: list[list[Any]] = []
    for lyr in layers:
        if not lyr.columns or not len(lyr.gdf):
            continue
        lon, lat = _points(lyr.gdf)
        li = len(keys)
        keys.append(lyr.key)
        for col, values in lyr.columns.items():
            if col not in fields:
                fields.append(col)
            fi = fields.index(col)
            for i, v in enumerate(values):
                if v is None or (isinstance(v, float) and np.isnan(v)) or np.isnan(lon[i]):
                    continue
                text = str(v).strip()
                if not text:
                    continue
                entries.append([text, li, fi, float(lon[i]), float(lat[i])])
    if not entries:
        return None
    shards = _shards(entries)
    tiles_dir.mkdir(parents=True, exist_ok=True)
    names = {shard_file(shard) for shard in shards}
    for old in tiles_dir.glob("search-*.json"):  # shards of an earlier index
        if old.name not in names:
            old.unlink(missing_ok=True)
    n = 0
    for shard, group in shards.items():
        group.sort(key=lambda e: (e[0].lower(), e[1], e[2], e[0]))
        n += len(group)
        (tiles_dir / shard_file(shard)).write_text(
            json.dumps(group, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
    manifest = {"format": _FORMAT, "prefix": PREFIX, "layers": keys, "fields": fields,
                "shards": {s: len(e) for s, e in sorted(shards.items())}}
    (tiles_dir / INDEX_FILE).write_text(json.dumps(manifest, separators=(",", ":"),
                                                   ensure_ascii=False), encoding="utf-8")
    return {"url": f"{tiles_dir.name}/{INDEX_FILE}", "entries": n}
