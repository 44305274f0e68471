"""Throughput of the OGC API - Features items pages next to single-parcel lookups.

Serves a town (``gisnet serve --layers DIR``, default the sample town) or a finished
run's results (``--results DIR``, measured once its hot tables are packed) and runs
the closed-loop keep-alive load of scripts/bench_service.py over N connections, then
the same paths under ``wrk`` (one thread, N connections) when it is installed:

1. ``GET /parcels/{id}/obligation`` (random parcel ids): today's single-parcel figure;
2. ``GET /collections/obligations/items?limit=100&offset=K`` (random pages);
3. the same pages with ``crs=EPSG:2260`` (reprojected per request);
4. ``GET /collections/obligations/items?limit=100&bbox=...`` (CRS84 boxes around
   random parcels, each widened until it holds at least 100 parcels).

Run it under the shared lock (it saturates both cores)::

    flock /tmp/gisnet-bench.lock python scripts/bench_ogc.py --layers layers/sample
    flock /tmp/gisnet-bench.lock python scripts/bench_ogc.py --results DIR

Figures go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bench_service as bs  # noqa: E402  (the load client and server starter)


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def bbox_page(base: str, offset: int) -> tuple[str, int]:
    """A page of at most 100 parcels in a CRS84 box around the parcel at ``offset``,
    the box widened until at least 100 parcels intersect it (or it is a degree wide),
    and how many do."""
    items = "/collections/obligations/items"
    feat = get_json(f"{base}{items}?limit=1&offset={offset}")["features"][0]
    x, y = _first_xy(feat["geometry"]["coordinates"])
    half = 0.0005
    while True:
        box = f"{x - half:.6f},{y - half:.6f},{x + half:.6f},{y + half:.6f}"
        matched = get_json(f"{base}{items}?limit=100&bbox={box}")["numberMatched"]
        if matched >= 100 or half > 0.5:
            return f"{items}?limit=100&bbox={box}", int(matched)
        half *= 1.5


def _first_xy(coords: list) -> tuple[float, float]:
    while isinstance(coords[0], list):
        coords = coords[0]
    return float(coords[0]), float(coords[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=Path, default=ROOT / "layers" / "sample")
    p.add_argument("--results", type=Path, help="a folder `gisnet run --out DIR` wrote")
    p.add_argument("--boxes", type=int, default=200, help="bbox pages to draw from")
    p.add_argument("--no-wrk", action="store_true")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    ns = argparse.Namespace(layers=args.layers, results=args.results, profile=None,
                            max_batch=20_000, startup_timeout=600.0)
    port = bs.free_port()
    proc = bs.start_server(ns, port)
    try:
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/parcels") as r:
            body = json.loads(r.read())
        pids = body["parcel_ids"] if isinstance(body, dict) else body
        rng = random.Random(args.seed)
        n = len(pids)
        single = [f"/parcels/{urllib.request.quote(pids[rng.randrange(n)], safe='')}"
                  "/obligation" for _ in range(2000)]
        pages = [f"/collections/obligations/items?limit=100&offset={rng.randrange(0, n, 100)}"
                 for _ in range(2000)]
        epsg = [f"{u}&crs=http://www.opengis.net/def/crs/EPSG/0/2260" for u in pages]
        boxes = [bbox_page(base, rng.randrange(n)) for _ in range(args.boxes)]
        out = {"parcels": n, "connections": args.connections,
               "bbox_features_matched_median": sorted(m for _, m in boxes)[len(boxes) // 2]}
        for name, paths in (("single_parcel", single), ("items_limit_100", pages),
                            ("items_limit_100_epsg2260", epsg),
                            ("items_bbox_limit_100", [u for u, _ in boxes])):
            asyncio.run(bs._load(port, paths, 5, 2.0))  # warm up
            out[name] = asyncio.run(bs._load(port, paths, args.connections, args.duration))
            print(name, out[name], flush=True)
            if not args.no_wrk:
                w = bs.run_wrk(port, paths, args.connections, args.duration)
                if w is not None:
                    out[name + "_wrk"] = w
                    print(f"{name} (wrk -t1 -c{args.connections}): {w}", flush=True)
        bs.report_memory(proc, out)  # after the pages: the bbox pages' trees held too
        print(json.dumps(out, indent=2))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
