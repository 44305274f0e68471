#!/usr/bin/env python
"""Benchmark how ``gisnet serve --results DIR`` starts: when it says it serves, when it
first answers, how it answers while it packs its hot tables, and its memory.

Usage (under the shared benchmark lock; ``DIR`` a folder ``gisnet run`` wrote)::

    flock /tmp/gisnet-bench.lock python scripts/bench_serve_start.py DIR [--port 8765]

Starts the command (the ``gisnet`` next to this Python), stamps each of its lines that
matter (``serving``, ``serialized``, errors) with the seconds since it was started and
the server's ``VmRSS`` / ``VmHWM`` from ``/proc/<pid>/status`` (GB = 10^6 kB), and from
the start runs one client on one connection at a time (a closed loop,
Python's ``urllib``): a seeded random parcel's ``/parcels/{id}/obligation`` then its
``/trace/downstream?parcel={id}``, reporting each ``--every`` seconds the answers, their
median and largest latency and the status codes (refused connections counted as
such; the server takes its address before it loads, so the first request waits
there until it is answered). The parcel ids are read from the results GeoPackage's
``obligations`` layer. It stops ``--after`` seconds after the ``serialized`` line.
Linux only (``/proc``).

Figures go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path


def memory(pid: int) -> str:
    """``VmRSS`` and ``VmHWM`` of a process, in GB (10^6 kB)."""
    got = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(("VmRSS", "VmHWM")):
                    key, value = line.split(":")
                    got[key] = int(value.split()[0]) / 1e6
    except OSError:
        return "(ended)"
    return ", ".join(f"{k} {v:.2f} GB" for k, v in sorted(got.items()))


def parcel_ids(results: Path, n: int, seed: int) -> list[str]:
    """``n`` parcel ids of the results' obligations layer, drawn with ``seed``."""
    uri = f"file:{results / 'gisnet-results.gpkg'}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        ids = [r[0] for r in db.execute("SELECT parcel_id FROM obligations")]
    rng = random.Random(seed)
    return [str(rng.choice(ids)) for _ in range(n)]


class Client:
    """One connection at a time, asking a parcel's obligation and trace in turn."""

    def __init__(self, base: str, ids: list[str], t0: float, every: float) -> None:
        self.base, self.ids, self.t0, self.every = base, ids, t0, every
        self.stop = threading.Event()
        self.first: float | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def ask(self, path: str) -> str:
        try:
            with urllib.request.urlopen(self.base + path, timeout=600) as r:
                r.read()
                return str(r.status)
        except urllib.error.HTTPError as exc:
            return str(exc.code)
        except OSError as exc:
            reason = getattr(exc, "reason", exc)
            return "refused" if isinstance(reason, ConnectionRefusedError) else type(exc).__name__

    def run(self) -> None:
        lat: list[float] = []
        codes: dict[str, int] = {}
        last = time.perf_counter()
        i = 0
        while not self.stop.is_set():
            pid = self.ids[i % len(self.ids)]
            i += 1
            for path in (f"/parcels/{pid}/obligation", f"/trace/downstream?parcel={pid}"):
                a = time.perf_counter()
                code = self.ask(path)
                lat.append(time.perf_counter() - a)
                codes[code] = codes.get(code, 0) + 1
                if code == "200" and self.first is None:
                    self.first = time.perf_counter() - self.t0
                    print(f"{self.first:7.1f} s  first answer", flush=True)
                if code == "refused":
                    time.sleep(0.01)
            now = time.perf_counter()
            if now - last >= self.every:
                lat.sort()
                print(f"{now - self.t0:7.1f} s  client: {len(lat)} answers in "
                      f"{now - last:.1f} s, median {lat[len(lat) // 2] * 1000:.1f} ms, "
                      f"max {lat[-1] * 1000:.0f} ms, {codes}", flush=True)
                lat, codes, last = [], {}, now


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path, help="a folder `gisnet run --out DIR` wrote")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--every", type=float, default=5.0, help="seconds per client report")
    p.add_argument("--after", type=float, default=6.0,
                   help="seconds to go on after the hot tables are packed")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    ids = parcel_ids(args.results, 10_000, args.seed)
    gisnet = Path(sys.executable).with_name("gisnet")
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(gisnet), "serve", "--results", str(args.results),
                             "--port", str(args.port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    client = Client(f"http://127.0.0.1:{args.port}", ids, t0, args.every)
    client.thread.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            failed = line.startswith(("gisnet: error", "ERROR", "Traceback"))
            if failed or "serving" in line or "serialized" in line:
                print(f"{time.perf_counter() - t0:7.1f} s  {line[:140]}  "
                      f"[{memory(proc.pid)}]", flush=True)
            if failed or "serialized" in line:
                break
        time.sleep(args.after)
        print(f"{time.perf_counter() - t0:7.1f} s  end  [{memory(proc.pid)}]", flush=True)
    finally:
        client.stop.set()
        proc.terminate()
        proc.wait()
    return 0 if client.first is not None else 1


if __name__ == "__main__":
    sys.exit(main())
