#!/usr/bin/env python
"""Benchmark ``gisnet batch`` on Dask against ``gisnet run`` town by town.

Usage (run under the shared benchmark lock)::

    # a region of generated towns (sizes spread evenly between --min and --max parcels)
    flock /tmp/gisnet-bench.lock python scripts/bench_batch.py make-region \
        --towns 20 --min 20000 --max 60000 --out bench-data/region

    # side by side: each town with `gisnet run` in one process, one after the other,
    # then `gisnet batch` of the whole region on a LocalCluster of 2 workers
    flock /tmp/gisnet-bench.lock python scripts/bench_batch.py overhead \
        bench-data/region --workers 2 [--no-maps]

    # the partitioned large-town path: peak memory per worker with N partitions
    # against the one-process run of the same town, results compared
    flock /tmp/gisnet-bench.lock python scripts/bench_batch.py partition \
        bench-data/county --partitions 4 --workers 2

``make-region`` writes one town folder per town with
:func:`gisnet.testing.synthetic.make_town` / ``write_town`` (the generator of
``scripts/make_city.py``; seed = town number). ``overhead`` runs each town
with ``python -m gisnet run`` as a subprocess (its own process, as a user
would) and times it, then times ``python -m gisnet batch`` on the region, and
prints one JSON line: the sum of the single-process times, the batch wall
time, and the ratio batch / (sum / workers) the budget is stated in.
``partition`` runs the town in one process (peak RSS of that process) and
with :func:`gisnet.batch.partition.analyse_partitioned` on a LocalCluster
(peak RSS of each worker, sampled), and checks the parcel-level tables are
identical.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_region(a: argparse.Namespace) -> int:
    from gisnet.testing.synthetic import make_town, write_town

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [round(a.min + (a.max - a.min) * k / max(1, a.towns - 1))
             for k in range(a.towns)]
    for k, n in enumerate(sizes, start=1):
        name = f"town{k:02d}"
        t = time.perf_counter()
        # each town in its own place (origins 20 miles apart), its own seed
        layers = make_town(n, seed=k, crs=a.crs,
                           origin=(600000.0 + 105600.0 * (k % 5), 900000.0 + 105600.0 * (k // 5)))
        write_town(layers, out / name, fmt=a.format, profile=a.profile, name=name)
        print(f"{out / name}: {n:,} parcels ({time.perf_counter() - t:.1f} s)", flush=True)
    return 0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}".rstrip(os.pathsep)
    return env


def overhead(a: argparse.Namespace) -> int:
    region = Path(a.region)
    towns = sorted(p for p in region.iterdir() if (p / "gisnet.toml").is_file())
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    single: dict[str, float] = {}
    extra = ["--no-maps"] if a.no_maps else []
    cpu0 = _cpu()
    for t in towns:
        s = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(t), "--out",
                        str(work / "single" / t.name), "-q", *extra], check=True, env=_env())
        single[t.name] = time.perf_counter() - s
        print(f"gisnet run {t.name}: {single[t.name]:.1f} s", flush=True)
    cpu1 = _cpu()
    s = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gisnet", "batch", str(region), "--out",
                           str(work / "batch"), "--workers", str(a.workers), "-q", "--force",
                           *extra], env=_env())
    batch_s = time.perf_counter() - s
    cpu2 = _cpu()
    total = sum(single.values())
    ideal = total / a.workers
    tasks, busy = _task_times(work / "batch" / "region-summary.csv")
    print(json.dumps({
        "bench": "batch_overhead", "towns": len(towns), "workers": a.workers,
        "maps": not a.no_maps, "single_sum_s": round(total, 1),
        "single_s": {k: round(v, 1) for k, v in single.items()},
        "batch_s": round(batch_s, 1), "ideal_s": round(ideal, 1),
        "task_s": tasks, "worker_busy_s": busy,
        # CPU seconds of the machine (all processes) and of this benchmark's own processes
        # in each phase: the difference is other work sharing the cores
        "single_cpu_s": _cpu_delta(cpu0, cpu1), "batch_cpu_s": _cpu_delta(cpu1, cpu2),
        "ratio_to_ideal": round(batch_s / ideal, 3), "budget": 1.15,
        "batch_exit": proc.returncode, "machine": platform.platform(),
        "cpus": os.cpu_count()}), flush=True)
    return 0


def _cpu() -> tuple[float, float, float]:
    """CPU seconds so far: of the whole machine (every process, from /proc/stat), of
    this process's finished children and their descendants, and stolen by the host."""
    import psutil

    t = psutil.cpu_times()
    machine = t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0) \
        + getattr(t, "softirq", 0.0)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return machine, ru.ru_utime + ru.ru_stime, getattr(t, "steal", 0.0)


def _cpu_delta(a: tuple[float, ...], b: tuple[float, ...]) -> dict[str, float]:
    return {"machine": round(b[0] - a[0], 1), "ours": round(b[1] - a[1], 1),
            "steal": round(b[2] - a[2], 1)}


def _task_times(csv: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Each town's time inside its batch task (``time_total_s``: start-up excluded)
    and the seconds each worker was busy with towns, from the region summary."""
    import csv as csvmod

    if not csv.is_file():
        return {}, {}
    tasks: dict[str, float] = {}
    busy: dict[str, float] = {}
    with csv.open(encoding="utf-8") as f:
        for row in csvmod.DictReader(f):
            secs = float(row["time_total_s"] or 0)
            tasks[row["town"]] = round(secs, 1)
            busy[row["worker"]] = round(busy.get(row["worker"], 0.0) + secs, 1)
    return tasks, busy


class _Sampler:
    """Peak RSS of a set of processes, sampled every ``every`` seconds."""

    def __init__(self, pids_fn, every: float = 0.2) -> None:
        self.pids_fn, self.every = pids_fn, every
        self.peak: dict[int, int] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            for pid in self.pids_fn():
                try:
                    rss = psutil.Process(pid).memory_info().rss
                except psutil.Error:
                    continue
                self.peak[pid] = max(self.peak.get(pid, 0), rss)
            self._stop.wait(self.every)

    def __enter__(self) -> _Sampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def partition(a: argparse.Namespace) -> int:
    if a.child:
        return _partition_child(a)
    # the one-process run in its own process: its peak RSS is ru_maxrss of that child
    s = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "partition", a.town, "--child", "--out",
                           a.out], env=_env(), capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        return proc.returncode
    one = json.loads(proc.stdout.strip().splitlines()[-1])
    one_s = time.perf_counter() - s
    from gisnet.batch import close_client, make_client
    from gisnet.batch.partition import analyse_partitioned
    from gisnet.io import load_town

    client = make_client(workers=a.workers)  # as gisnet batch starts its local cluster
    pids = list(client.run(os.getpid).values())
    town = load_town(a.town)
    with _Sampler(lambda: pids) as sampler:
        t = time.perf_counter()
        part = analyse_partitioned(town, client=client, partitions=a.partitions)
        part_s = time.perf_counter() - t
    client_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    same = _compare(part, Path(a.out) / "one-process.parquet")
    print(json.dumps({
        "bench": "batch_partition", "town": a.town, "parcels": len(town.layers["parcels"]),
        "partitions": a.partitions, "workers": a.workers,
        "one_process_peak_mb": round(one["peak_rss"] / 2**20),
        "one_process_s": round(one["seconds"], 1), "one_process_total_s": round(one_s, 1),
        "worker_peak_mb": sorted(round(v / 2**20) for v in sampler.peak.values()),
        "client_peak_mb": round(client_rss / 2**20), "partitioned_s": round(part_s, 1),
        "identical": same}), flush=True)
    close_client(client)
    return 0


def _partition_child(a: argparse.Namespace) -> int:
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    t = time.perf_counter()
    town = load_town(a.town)
    res = analyse(town, only=("obligations", "control"))
    secs = time.perf_counter() - t
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    layers = res.layers()
    for name in ("obligations", "obligation_evidence", "control_manholes"):
        layers[name].to_parquet(out / f"one-process-{name}.parquet")
    (out / "one-process.parquet").touch()
    print(json.dumps({"seconds": secs,
                      "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
    return 0


def _compare(part, marker: Path) -> bool:
    import geopandas as gpd
    from pandas.testing import assert_frame_equal

    from gisnet.batch.partition import sort_rows

    ok = True
    for name, df in part.layers().items():
        path = marker.parent / f"one-process-{name}.parquet"
        if not path.exists():
            continue
        want = gpd.read_parquet(path)
        mine = marker.parent / f"partitioned-{name}.parquet"
        df.to_parquet(mine)  # both through the same round trip
        df = gpd.read_parquet(mine)
        try:
            assert_frame_equal(sort_rows(name, df), sort_rows(name, want), check_dtype=False)
        except AssertionError as exc:
            print(f"{name} differs: {str(exc)[:400]}", file=sys.stderr)
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-region")
    m.add_argument("--towns", type=int, default=20)
    m.add_argument("--min", type=int, default=20_000)
    m.add_argument("--max", type=int, default=60_000)
    m.add_argument("--out", default=str(ROOT / "bench-data" / "region"))
    m.add_argument("--format", choices=("shp", "gpkg"), default="gpkg")
    m.add_argument("--crs", default="EPSG:2260")
    m.add_argument("--profile", default="poughkeepsie-fourth-ward")
    o = sub.add_parser("overhead")
    o.add_argument("region")
    o.add_argument("--workers", type=int, default=2)
    o.add_argument("--no-maps", action="store_true")
    o.add_argument("--work", default="/tmp/gisnet-bench-batch")
    q = sub.add_parser("partition")
    q.add_argument("town")
    q.add_argument("--partitions", type=int, default=4)
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--out", default="/tmp/gisnet-bench-partition")
    q.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    return {"make-region": make_region, "overhead": overhead, "partition": partition}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
