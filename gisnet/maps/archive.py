"""A layer's tiles as a PMTiles v3 archive: each tile gzip-compressed (:func:`gzip_tile`),
written atomically (:func:`write_archive`) and read back (:func:`read_tile`).

:mod:`gisnet.maps.tiles` cuts the tiles; this module holds their bytes.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from isal import igzip

from ..output import atomic_path, remember_sha256

__all__ = ["GZIP_LEVEL", "gzip_tile", "read_tile", "write_archive"]

#: gzip level of the tiles in an archive (ISA-L's levels: 0-3).
GZIP_LEVEL = 2


def gzip_tile(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    """A tile's bytes as a gzip stream (the archive's ``tile_compression``), made with
    ISA-L (``isal.igzip``, levels 0-3) with no time in its header: the same bytes for
    the same tile. Any gzip reader inflates it (the browser, :mod:`gzip`). On the
    18,001 tiles of a generated county (452 MB of MVT), ISA-L's level 2 took 1.1 s
    where zlib's level 5 took 6.8 s, for 164 MB instead of 145 MB
    (``scripts/bench_tile_gzip.py``, ``docs/performance.md``)."""
    return igzip.compress(data, compresslevel=level, mtime=0)


def write_archive(path: str | os.PathLike[str], tiles: Mapping[tuple[int, int, int], bytes],
                  metadata: Mapping[str, Any], *, compressed: bool = False) -> int:
    """Write ``tiles`` (MVT; gzip-compressed already when ``compressed``, else
    compressed here) as a PMTiles v3 archive, gzip tiles; returns its size in bytes.

    The archive is written atomically (a reader never sees half of it), straight
    into its temporary file.
    """
    from pmtiles.tile import Compression, TileType, zxy_to_tileid
    from pmtiles.writer import Writer

    ids = sorted((zxy_to_tileid(z, x, y), (z, x, y)) for z, x, y in tiles)
    b = metadata.get("bounds") or [[-85, -180], [85, 180]]
    zooms = [z for z, _, _ in tiles] or [0]
    header = {
        "tile_type": TileType.MVT, "tile_compression": Compression.GZIP,
        "min_zoom": min(zooms), "max_zoom": max(zooms),
        "min_lon_e7": int(b[0][1] * 1e7), "min_lat_e7": int(b[0][0] * 1e7),
        "max_lon_e7": int(b[1][1] * 1e7), "max_lat_e7": int(b[1][0] * 1e7),
        "center_zoom": max(zooms),
        "center_lon_e7": int((b[0][1] + b[1][1]) / 2 * 1e7),
        "center_lat_e7": int((b[0][0] + b[1][0]) / 2 * 1e7),
    }
    with atomic_path(Path(path), "tile archive") as tmp:
        with open(tmp, "wb") as f:
            w = Writer(f)
            for tid, key in ids:
                data = tiles[key]
                w.write_tile(tid, data if compressed else gzip_tile(data))
            w.finalize(header, dict(metadata))
        size = tmp.stat().st_size
    remember_sha256(Path(path))  # (a run's archive, hashed on the thread that cut it)
    return size


def read_tile(archive: str | os.PathLike[str], z: int, x: int, y: int) -> dict[str, Any] | None:
    """A tile of a PMTiles archive decoded with ``mapbox_vector_tile`` (y down), or None."""
    import mapbox_vector_tile
    from pmtiles.reader import MmapSource, Reader

    with open(archive, "rb") as f:
        data = Reader(MmapSource(f)).get(z, x, y)
    if data is None:
        return None
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return mapbox_vector_tile.decode(data, default_options={"y_coord_down": True})
