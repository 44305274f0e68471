#!/usr/bin/env python
"""Benchmark: the tiles' compression, zlib's level 5 against ISA-L's level 2.

Every tile of the archives in ``RUN/tiles/`` (a finished ``gisnet run`` with tiled
pages) is inflated, then deflated again with zlib's level 5 (``gzip.compress``, what
the archives held before) and with ISA-L's level 2
(:func:`gisnet.maps.archive.gzip_tile`): seconds and bytes of each, each stream
checked to inflate back to its tile. Run under the shared lock::

    flock /tmp/gisnet-bench.lock .venv/bin/python scripts/bench_tile_gzip.py maps-county

Figures go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path


def _tiles(run: Path) -> dict[str, float]:
    from pmtiles.reader import MmapSource, all_tiles

    from gisnet.maps.archive import GZIP_LEVEL, gzip_tile

    raw: list[bytes] = []
    for path in sorted((run / "tiles").glob("*.pmtiles")):
        with open(path, "rb") as f:
            raw.extend(gzip.decompress(data) for _, data in all_tiles(MmapSource(f)))
    out: dict[str, float] = {"tiles": len(raw), "raw_mb": sum(map(len, raw)) / 1e6}
    for name, fn in (("zlib_5", lambda d: gzip.compress(d, compresslevel=5, mtime=0)),
                     (f"isal_{GZIP_LEVEL}", gzip_tile)):
        t = time.perf_counter()
        made = [fn(d) for d in raw]
        out[f"{name}_s"] = round(time.perf_counter() - t, 2)
        out[f"{name}_mb"] = round(sum(map(len, made)) / 1e6, 2)
        assert all(gzip.decompress(m) == d for m, d in zip(made, raw, strict=True)), name
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a gisnet run's output folder with tiles/")
    args = ap.parse_args(argv)
    print(json.dumps(_tiles(args.run)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
