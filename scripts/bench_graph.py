"""Benchmark gisnet.graph.build_sewer_graph on generated networks.

Generates synthetic towns with ``gisnet.testing.synthetic.make_town`` (cached as
GeoParquet under ``bench-data/graph_<n>/``), then builds the sewer graph of
each in a fresh child process and reports wall time and peak resident memory
of that process during the build (sampled every 5 ms from /proc), with the
resident memory of the loaded layers before the build for reference.

Run by hand, under the shared benchmark lock::

    flock /tmp/gisnet-bench.lock python scripts/bench_graph.py            # 20k and 300k
    flock /tmp/gisnet-bench.lock python scripts/bench_graph.py 20000 --repeat 3

Target (issue: directed sewer graph): 300,000 mains in at most 10 s and 3 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench-data"
ROLES = ("mains", "manholes", "plants")


def generate(n_mains: int, *, irregular: bool, seed: int) -> Path:
    """Write the graph layers of a synthetic town with ``n_mains`` mains (cached)."""
    tag = f"graph_{n_mains}{'_irr' if irregular else ''}_s{seed}"
    folder = DATA / tag
    if all((folder / f"{r}.parquet").exists() for r in ROLES):
        return folder
    from gisnet.testing.synthetic import make_town

    t = time.perf_counter()
    layers = make_town(3 * n_mains, n_mains, seed=seed, irregular=irregular)
    folder.mkdir(parents=True, exist_ok=True)
    for r in ROLES:
        layers[r].to_parquet(folder / f"{r}.parquet")
    print(f"generated {n_mains:,} mains in {time.perf_counter() - t:.1f} s -> {folder}",
          file=sys.stderr)
    return folder


def _rss_mb() -> float:
    """Current resident set size of this process, MB (Linux /proc)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


class _PeakSampler(threading.Thread):
    """Samples the resident set size every 5 ms; ``peak`` is the largest seen."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = _rss_mb()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.005):
            self.peak = max(self.peak, _rss_mb())


def messy(layers: dict) -> dict:
    """The same network as a town without attributes would hand it over: no
    from/to ids, no inverts, no plant, 1 % of the manholes missing (seeded).
    Direction then comes from the digitised order and every node drains
    nowhere, so the report path (one finding per node) is exercised."""
    import numpy as np

    m = layers["mains"].copy()
    m["from_node"] = None
    m["to_node"] = None
    m["up_invert_ft"] = np.nan
    m["down_invert_ft"] = np.nan
    mh = layers["manholes"]
    keep = np.random.default_rng(0).random(len(mh)) > 0.01
    return {"mains": m, "manholes": mh[keep].reset_index(drop=True)}


def child(folder: Path, tolerance_ft: float, make_messy: bool) -> None:
    """Build once and print one JSON line (runs in a fresh process)."""
    import gc

    import geopandas as gpd

    from gisnet.graph import build_sewer_graph, graph_summary

    layers = {r: gpd.read_parquet(folder / f"{r}.parquet") for r in ROLES}
    if make_messy:
        layers = messy(layers)
    gc.collect()
    rss_before = _rss_mb()
    sampler = _PeakSampler()
    sampler.start()
    t = time.perf_counter()
    G = build_sewer_graph(layers, snap_tolerance_ft=tolerance_ft)
    seconds = time.perf_counter() - t
    sampler.stop.set()
    sampler.join()
    peak = max(sampler.peak, _rss_mb())
    s = graph_summary(G)
    print(json.dumps({
        "mains": len(layers["mains"]), "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak), "rss_before_build_mb": round(rss_before),
        "nodes": s["nodes"], "edges": s["edges"], "pieces": s["pieces"],
        "outlets": s["outlets"], "findings": sum(s["findings"].values()),
    }))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="*", type=int, default=[20_000, 300_000],
                   help="numbers of mains (default: 20000 300000)")
    p.add_argument("--repeat", type=int, default=1, help="builds per size (fresh process each)")
    p.add_argument("--tolerance-ft", type=float, default=1.0)
    p.add_argument("--irregular", action="store_true", help="jittered, curved street grid")
    p.add_argument("--messy", action="store_true",
                   help="strip ids, inverts, the plant and 1%% of manholes before building")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.tolerance_ft, args.messy)
        return 0
    print("| mains | build s (best of runs) | peak RSS during build MB | RSS before build MB | "
          "nodes | "
          "edges | pieces | findings |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        folder = generate(n, irregular=args.irregular, seed=args.seed)
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(folder),
                 "--tolerance-ft", str(args.tolerance_ft)] + (["--messy"] if args.messy else []),
                check=True, capture_output=True, text=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        best = min(runs, key=lambda r: r["seconds"])
        secs = ", ".join(f"{r['seconds']:.2f}" for r in runs)
        print(f"| {best['mains']:,} | {best['seconds']:.2f} ({secs}) | "
              f"{max(r['peak_rss_mb'] for r in runs):,} | {best['rss_before_build_mb']:,} | "
              f"{best['nodes']:,} | {best['edges']:,} | {best['pieces']} | {best['findings']} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
