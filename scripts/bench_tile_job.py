#!/usr/bin/env python
"""Peak memory and time of one tile archive job (:func:`gisnet.maps.tiles.write_layer_tiles`).

Usage::

    # once: the inputs of the archives of a town, as the run hands them to the cutter
    python scripts/bench_tile_job.py save bench-data/town300k /tmp/jobs --keys parcels,taps
    # then, each in a fresh process
    python scripts/bench_tile_job.py cut /tmp/jobs/parcels.pkl            # time, RSS
    python scripts/bench_tile_job.py cut /tmp/jobs/parcels.pkl --trace    # numpy peak

``save`` loads the town, runs :func:`gisnet.pipeline.analyse`, builds the pages
with ``tiles="always"`` and pickles each wanted archive's layer and properties
(what :meth:`gisnet.maps.tiled.Tiler.write` hands to ``write_layer_tiles``).

``cut`` loads one job and cuts its archive into a temporary folder, once, and
prints one JSON line: ``seconds`` (wall time of ``write_layer_tiles``; its CPU
time ``cpu_seconds``, the sampler thread's share included), the
resident set size when the job starts and the peak above it (``/proc/self/status``
sampled every 5 ms on a thread, ``rss_peak_above_start_mb``), and with
``--trace`` the peak of the memory ``tracemalloc`` traces above its start
(numpy's arrays and Python objects, not GEOS geometries:
``traced_peak_mb``; tracing slows the job, so its time is not the job's).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path


def save(town_dir: Path, out: Path, keys: set[str]) -> None:
    from gisnet.io import load_town
    from gisnet.maps import write_maps
    from gisnet.maps.tiled import Tiler
    from gisnet.pipeline import analyse

    out.mkdir(parents=True, exist_ok=True)
    town = load_town(town_dir)
    layers = analyse(town).layers()
    orig = Tiler._cut

    def cut(self, token, key, name, style_keys, rank_key, out_dir):  # type: ignore[no-untyped-def]
        if key in keys:
            src = self.sources[token]
            with open(out / f"{key}.pkl", "wb") as f:
                pickle.dump({"gdf": src.gdf, "props": src.props, "name": name,
                             "style_keys": style_keys, "rank_key": rank_key}, f,
                            protocol=pickle.HIGHEST_PROTOCOL)
            print(f"saved {key}: {src.n:,} features", flush=True)
        return orig(self, token, key, name, style_keys, rank_key, out_dir)

    Tiler._cut = cut  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="gisnet-bench-job-") as tmp:
        write_maps(town, layers, Path(tmp), tiles="always")


def cut(job: Path, trace: bool) -> dict:
    import tracemalloc

    from gisnet.maps.tiles import write_layer_tiles
    from gisnet.memory import release
    from gisnet.testing.memory import PeakRss

    with open(job, "rb") as f:
        spec = pickle.load(f)
    release()
    with PeakRss() as mem:
        if trace:
            tracemalloc.start()
        with tempfile.TemporaryDirectory(prefix="gisnet-bench-job-") as tmp:
            t0, c0 = time.perf_counter(), time.process_time()
            st = write_layer_tiles(Path(tmp) / "job.pmtiles", spec["gdf"], spec["props"],
                                   name=spec["name"], style_keys=spec["style_keys"],
                                   rank_key=spec["rank_key"])
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        traced = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
        if trace:
            tracemalloc.stop()
    return {"job": job.stem, "features": st.features, "tiles": st.tiles,
            "archive_mb": round(st.bytes / 1e6, 2), "seconds": round(seconds, 2),
            "cpu_seconds": round(cpu, 2),
            "rss_start_mb": round(mem.start_mb),
            "rss_peak_above_start_mb": round(mem.peak_mb - mem.start_mb),
            "traced_peak_mb": None if traced is None else round(traced)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("town", type=Path)
    s.add_argument("out", type=Path)
    s.add_argument("--keys", default="parcels,taps")
    c = sub.add_parser("cut")
    c.add_argument("job", type=Path)
    c.add_argument("--trace", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "save":
        save(a.town, a.out, set(a.keys.split(",")))
    else:
        print(json.dumps(cut(a.job, a.trace)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
