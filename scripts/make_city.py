#!/usr/bin/env python
"""Write a synthetic city for benchmarks: ``bench-data/<name>/`` + ``gisnet.toml``.

Examples
--------
python scripts/make_city.py --parcels 50000 --mains 20000 --name city
python scripts/make_city.py --parcels 1000000 --mains 300000 --format gpkg --name county

The layers come from :func:`gisnet.testing.synthetic.make_town` (deterministic for a
seed); ``bench-data/`` is git-ignored.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from gisnet.testing.synthetic import make_town, write_town

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parcels", type=int, default=50_000, help="number of parcels (default 50000)")
    p.add_argument("--mains", type=int, default=None,
                   help="number of mains (default: one per sewered street block)")
    p.add_argument("--format", choices=("shp", "gpkg"), default="shp")
    p.add_argument("--name", default=None, help="folder name under bench-data/ "
                   "(default city-<parcels>)")
    p.add_argument("--out", type=Path, default=None, help="parent folder (default bench-data/)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--crs", default="EPSG:2260")
    p.add_argument("--irregular", action="store_true", help="jittered lots, curved streets")
    p.add_argument("--laterals", action="store_true", help="also write a laterals layer")
    p.add_argument("--profile", default="poughkeepsie-fourth-ward")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("pyogrio").setLevel(logging.WARNING)
    name = a.name or f"city-{a.parcels}"
    out = (a.out or ROOT / "bench-data") / name
    t0 = time.perf_counter()
    layers = make_town(a.parcels, a.mains, seed=a.seed, crs=a.crs, irregular=a.irregular,
                       laterals=a.laterals)
    t1 = time.perf_counter()
    path = write_town(layers, out, fmt=a.format, profile=a.profile, name=name)
    t2 = time.perf_counter()
    counts = ", ".join(f"{k} {len(v):,}" for k, v in layers.items())
    print(f"{path}: {counts}; generated in {t1 - t0:.1f} s, written in {t2 - t1:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
