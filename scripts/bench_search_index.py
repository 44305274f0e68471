#!/usr/bin/env python
"""Time and peak memory of the search index of tiled pages
(:func:`gisnet.maps.search_index.write_search_index`).

Usage::

    # once: the search layers of a town, as the run hands them to the index
    python scripts/bench_search_index.py save bench-data/county /tmp/search-county.pkl
    # then, each in a fresh process
    python scripts/bench_search_index.py write /tmp/search-county.pkl
    python scripts/bench_search_index.py write /tmp/search-county.pkl --profile  # cProfile

``save`` loads the town, runs :func:`gisnet.pipeline.analyse`, builds the pages with
``tiles="always"`` (no archive is cut) and pickles the layers the index is made of.
``write`` loads them, writes the index into a temporary folder once and prints one
JSON line: ``seconds`` (wall), ``cpu_seconds``, ``entries``, ``files``, the resident set
size when it starts and the peak above it (``/proc/self/status`` every 5 ms).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path


class _Saved(Exception):
    pass


def save(town_dir: Path, out: Path) -> None:
    import gisnet.maps.tiled as tiled
    from gisnet.io import load_town
    from gisnet.maps import write_maps
    from gisnet.pipeline import analyse

    town = load_town(town_dir)
    layers = analyse(town).layers()

    def index(tiles_dir, search_layers):  # type: ignore[no-untyped-def]
        with open(out, "wb") as f:
            pickle.dump(list(search_layers), f, protocol=pickle.HIGHEST_PROTOCOL)
        raise _Saved

    tiled.write_search_index = index  # type: ignore[assignment]
    tiled.Tiler._cut = lambda self, *a: (None, {})  # type: ignore[assignment,method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            write_maps(town, layers, tmp, tiles="always")
        except _Saved:
            print(f"saved {out}", file=sys.stderr)


def write(path: Path, profile: bool) -> None:
    from gisnet.maps.search_index import write_search_index
    from gisnet.testing.memory import PeakRss

    with open(path, "rb") as f:
        layers = pickle.load(f)
    with PeakRss() as mem, tempfile.TemporaryDirectory() as tmp:
        t, c = time.perf_counter(), time.process_time()
        if profile:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.enable()
        got = write_search_index(Path(tmp) / "tiles", layers)
        if profile:
            pr.disable()
            pstats.Stats(pr, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        files = len(list((Path(tmp) / "tiles").iterdir()))
    print(json.dumps({"seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                      "entries": (got or {}).get("entries", 0), "files": files,
                      "rss_start_mb": round(mem.start_mb), "rss_peak_above_start_mb":
                      round(mem.peak_mb - mem.start_mb)}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("town", type=Path)
    s.add_argument("out", type=Path)
    w = sub.add_parser("write")
    w.add_argument("pickle", type=Path)
    w.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "save":
        save(a.town, a.out)
    else:
        write(a.pickle, a.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
