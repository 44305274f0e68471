#!/usr/bin/env python
"""Time reading a synthetic town's shapefiles with both engines.

Writes (once) a 50,000-parcel / 20,000-main town as shapefiles under
``bench-data/io-city-<parcels>-<mains>/`` with :func:`gisnet.testing.synthetic.make_town`,
then times, for ``pyogrio`` (Arrow) and ``fiona``:

* the raw read of the parcels and mains files (:func:`gisnet.io.read_layer`);
* the whole :func:`gisnet.io.load_town` (every layer, mapped, checked,
  canonical), and checks that both engines give identical canonical layers.

Run by hand, under the benchmark lock::

    flock /tmp/gisnet-bench.lock /work/venv/bin/python scripts/bench_io.py

Figures go to docs/performance.md (``## I/O``).
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import time
from pathlib import Path

import pyogrio
from geopandas.testing import assert_geodataframe_equal

from gisnet.io import load_town, read_layer
from gisnet.testing.synthetic import make_town, write_town

ROOT = Path(__file__).resolve().parents[1]


def best_of(n: int, fn):  # type: ignore[no-untyped-def]
    """Run ``fn`` n times; return (best seconds, last result)."""
    best, out = float("inf"), None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parcels", type=int, default=50_000)
    p.add_argument("--mains", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3, help="runs per pyogrio timing (best kept)")
    p.add_argument("--fiona-repeat", type=int, default=1, help="runs per fiona timing")
    p.add_argument("--regenerate", action="store_true", help="rewrite the town files")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)

    town_dir = ROOT / "bench-data" / f"io-city-{a.parcels}-{a.mains}"
    if a.regenerate or not (town_dir / "gisnet.toml").exists():
        t0 = time.perf_counter()
        layers = make_town(a.parcels, a.mains, seed=0)
        write_town(layers, town_dir, fmt="shp", name=town_dir.name)
        print(f"generated {town_dir} in {time.perf_counter() - t0:.1f} s")
    sizes = {f.name: f.stat().st_size for f in town_dir.iterdir()}
    counts = {r: pyogrio.read_info(town_dir / f"{r}.shp")["features"]
              for r in ("parcels", "mains", "buildings", "manholes", "streets", "users")
              if (town_dir / f"{r}.shp").exists()}
    print(f"town: {town_dir.relative_to(ROOT)}  features: {counts}  "
          f"files: {sum(sizes.values()) / 1e6:.1f} MB")
    print(f"python {platform.python_version()}, pyogrio {pyogrio.__version__} "
          f"(GDAL {pyogrio.__gdal_version_string__})")

    results: dict[str, dict[str, float]] = {}
    towns = {}
    for engine, n in (("pyogrio", a.repeat), ("fiona", a.fiona_repeat)):
        r: dict[str, float] = {}
        for role in ("parcels", "mains"):
            r[f"read {role}"], _ = best_of(
                n, lambda role=role, engine=engine: read_layer(town_dir / f"{role}.shp",
                                                               engine=engine, role=role))
        r["load_town (all layers)"], towns[engine] = best_of(
            n, lambda engine=engine: load_town(town_dir, engine=engine))
        results[engine] = r
    for role in towns["pyogrio"].layers:
        assert_geodataframe_equal(towns["pyogrio"].layers[role], towns["fiona"].layers[role])
    print("canonical layers identical between engines: yes")

    print()
    print("| step | pyogrio (Arrow), s | fiona, s | fiona / pyogrio |")
    print("|---|---:|---:|---:|")
    for step in results["pyogrio"]:
        po, fi = results["pyogrio"][step], results["fiona"][step]
        print(f"| {step} | {po:.2f} | {fi:.2f} | {fi / po:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
