"""Throughput of the OGC API - Features items pages next to single-parcel lookups.

Serves a town (``gisnet serve --layers DIR``, default the sample town) and runs
the closed-loop keep-alive load of scripts/bench_service.py over N connections:

1. ``GET /parcels/{id}/obligation`` (random parcel ids): today's single-parcel figure;
2. ``GET /collections/obligations/items?limit=100&offset=K`` (random pages);
3. the same pages with ``crs=EPSG:2260`` (reprojected per request).

Run it under the shared lock (it saturates both cores)::

    flock /tmp/gisnet-bench.lock python scripts/bench_ogc.py --layers layers/sample

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=Path, default=ROOT / "layers" / "sample")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    ns = argparse.Namespace(layers=args.layers, profile=None, max_batch=20_000,
                            startup_timeout=600.0)
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
        out = {"parcels": n, "connections": args.connections}
        for name, paths in (("single_parcel", single), ("items_limit_100", pages),
                            ("items_limit_100_epsg2260", epsg)):
            asyncio.run(bs._load(port, paths, 5, 2.0))  # warm up
            out[name] = asyncio.run(bs._load(port, paths, args.connections, args.duration))
            print(name, out[name], flush=True)
        print(json.dumps(out, indent=2))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
