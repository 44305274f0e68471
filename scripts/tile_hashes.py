#!/usr/bin/env python
"""Print the sha256 of every file of a town's map pages and tile archives.

Usage::

    GISNET_THREADS=1 python scripts/tile_hashes.py sample --min-features 1 > before-sample.txt
    GISNET_THREADS=1 python scripts/tile_hashes.py bench-data/t100k > before-t100k.txt
    # ... change the tile cutter, run again, then
    diff before-t100k.txt after-t100k.txt

Loads the town (``sample``: the bundled sample town), runs
:func:`gisnet.pipeline.analyse`, writes the pages with ``tiles="always"`` into a
temporary folder (or ``--out``) and prints one ``sha256  path`` line per file
under it, sorted by path, then the seconds the pages and tiles took on stderr.
Two versions of the tile cutter that write the same bytes print the same lines.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("town", help="town folder (with gisnet.toml), or 'sample'")
    ap.add_argument("--out", type=Path, default=None, help="maps folder (default: temporary)")
    ap.add_argument("--min-features", type=int, default=None,
                    help="tile layers of this many features or more (default: "
                         "gisnet.maps.tiled.TILE_MIN_FEATURES; 1 tiles the sample town's)")
    a = ap.parse_args(argv)

    from gisnet.io import load_town
    from gisnet.maps import write_maps
    from gisnet.pipeline import analyse
    from gisnet.townfile import default_layers_dir

    if a.min_features is not None:
        from gisnet.maps.tiled import Tiler

        Tiler.__init__.__defaults__ = (a.min_features,)
    folder = default_layers_dir() if a.town == "sample" else Path(a.town)
    town = load_town(folder)
    layers = analyse(town).layers()
    with tempfile.TemporaryDirectory(prefix="gisnet-tile-hashes-") as tmp:
        out = a.out or Path(tmp)
        t0 = time.perf_counter()
        write_maps(town, layers, out, tiles="always")
        seconds = time.perf_counter() - t0
        for p in sorted(q for q in out.rglob("*") if q.is_file()):
            print(f"{digest(p)}  {p.relative_to(out).as_posix()}")
    print(f"pages and tiles: {seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
