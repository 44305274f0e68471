#!/usr/bin/env python
"""Benchmark the whole ``gisnet run`` on towns of several sizes, each in a fresh process.

Usage (county scale under the shared benchmark lock)::

    python scripts/make_city.py --parcels 57000 --name city
    python scripts/make_city.py --parcels 300000 --mains 100000 --name town300k
    python scripts/make_city.py --parcels 1000000 --mains 300000 --name county
    flock /tmp/gisnet-bench.lock python scripts/bench_run.py \
        bench-data/city bench-data/town300k bench-data/county [--maps] [--no-yardsticks]

For each town folder (holding a ``gisnet.toml``) this runs, in child processes:

* ``gisnet run --json --no-maps`` (or with maps, ``--maps``): wall time and CPU time,
  the run's own per-step ``timings_s`` (load from the run's own progress line; the
  GeoPackage is written beside the maps, so the steps add up to more than the wall
  time) and the peak resident set
  size, both from the kernel (``wait4``'s ``ru_maxrss``) and sampled every 0.25 s
  from ``/proc/<pid>/status``, and the proportional set size of the run with its
  GeoPackage writer together (:class:`gisnet.testing.memory.TreePss`: each
  process's private anonymous memory every 0.25 s, its share of the libraries it
  maps read from ``smaps_rollup`` every 5 s and its growth since from the cheap
  counters, never less than the PSS; ``pss_sampler`` gives the sampler's own time and
  the largest differences seen between the two); the run's progress lines
  on stderr (one per finished step) give the resident size at the end of each step
  (``rss_at_step_end_gb``);
* the yardsticks, in one more fresh process: reading the town's layer files alone
  with ``pyogrio.read_dataframe`` (no gisnet), and a bare
  ``geopandas.sjoin_nearest(parcels, mains)`` with a distance column;
* the run's wall time as a multiple of the yardsticks' sum (``ratio_to_yardstick``;
  the goals: at most 5 with maps, 3 without) and whether the peak PSS of the run
  with its children stays within 4 GB (``goals``).

Prints one JSON line per town and a Markdown table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gisnet.testing.memory import TreePss, rss_kb  # noqa: E402

#: The goals of a county run, as multiples of the yardstick measured in the same
#: invocation (reading the layer files + a bare sjoin_nearest): with maps, without
#: maps; and the peak of the run and its child processes together.
GOAL_RATIO_MAPS = 5.0
GOAL_RATIO = 3.0
GOAL_PEAK_GB = 4.0

YARDSTICK = r"""
import json, sys, time, tomllib
from pathlib import Path
import geopandas as gpd
import pyogrio
folder = Path(sys.argv[1])
cfg = tomllib.loads((folder / "gisnet.toml").read_text())
t = time.perf_counter()
frames = {role: pyogrio.read_dataframe(folder / spec["path"])
          for role, spec in cfg["layers"].items()}
read_s = time.perf_counter() - t
parcels, mains = frames["parcels"], frames["mains"]
t = time.perf_counter()
j = gpd.sjoin_nearest(parcels[["geometry"]], mains[["geometry"]], distance_col="d")
sjoin_s = time.perf_counter() - t
print(json.dumps({"read_layers_s": round(read_s, 2), "sjoin_nearest_s": round(sjoin_s, 2),
                  "sjoin_rows": len(j),
                  "features": {k: len(v) for k, v in frames.items()}}))
"""


def measure(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> dict:
    """Run ``cmd`` in ``cwd``; wall time, peak RSS (kernel and sampled), stdout."""
    samples: list[tuple[float, int]] = []
    tree: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd)
    done = threading.Event()
    pss = TreePss(proc.pid)  # smaps_rollup every 5 s: reading it 4 times a second slows the run

    def sample() -> None:
        while not done.is_set():
            kb = rss_kb(proc.pid)
            if kb is not None:
                now = time.perf_counter() - t0
                samples.append((now, kb))
                tree.append((now, pss.sample(now)))
            done.wait(0.25)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    step_rss: dict[str, float] = {}
    step_cpu: dict[str, float] = {}
    step_wall: dict[str, float] = {}

    def read_err() -> None:  # the run's progress lines: RSS when each step ends
        for line in proc.stderr:
            err_chunks.append(line)
            words = line.decode(errors="replace").split()
            if len(words) >= 4 and words[0] == "gisnet:" and words[3] == "s" \
                    and words[2].replace(".", "", 1).isdigit():
                kb = max((k for _, k in samples[-8:]), default=0)
                step_rss[words[1]] = round(kb / 1024 ** 2, 2)
                step_wall[words[1]] = float(words[2])
                cpu = re.search(r"CPU (\d+(?:\.\d+)?) s", line.decode(errors="replace"))
                if cpu:
                    step_cpu[words[1]] = float(cpu.group(1))

    r1 = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)
    r2 = threading.Thread(target=read_err, daemon=True)
    r1.start()
    r2.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    r1.join()
    r2.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_t, peak_kb = max(samples, key=lambda s: s[1]) if samples else (0.0, 0)
    tree_t, tree_kb = max(tree, key=lambda s: s[1]) if tree else (0.0, 0)
    return {"wall_s": round(wall, 2), "rc": proc.returncode,
            "peak_rss_gb": round(usage.ru_maxrss / 1024 ** 2, 2),
            "sampled_peak_rss_gb": round(peak_kb / 1024 ** 2, 2),
            "sampled_peak_at_s": round(peak_t, 1),
            "sampled_peak_tree_pss_gb": round(tree_kb / 1024 ** 2, 2),
            "sampled_peak_tree_at_s": round(tree_t, 1),
            "pss_sampler": {"busy_s": round(pss.busy_s, 2), "exact_reads": pss.exact_reads,
                            "max_over_mb": round(pss.max_over_kb / 1024, 1),
                            "max_under_mb": round(pss.max_under_kb / 1024, 1)},
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "rss_by_step_gb": step_rss,
            "cpu_by_step_s": step_cpu, "wall_by_step_s": step_wall,
            "stdout": b"".join(out_chunks).decode(), "stderr": b"".join(err_chunks).decode()}


def bench_town(folder: Path, *, maps: bool, yardsticks: bool, python: str,
               src: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    with tempfile.TemporaryDirectory(prefix="gisnet-bench-") as out:
        cmd = [python, "-m", "gisnet", "run", "--layers", str(folder), "--out", out, "--json"]
        if not maps:
            cmd.append("--no-maps")
        # run in the source tree: ``python -m`` puts the working folder first on the path
        m = measure(cmd, env, cwd=src)
        if m["rc"] != 0:
            raise SystemExit(f"{folder}: gisnet run failed (exit {m['rc']}):\n{m['stderr']}")
        summary = json.loads(m["stdout"])
        gpkg = Path(out) / "gisnet-results.gpkg"
        gpkg_mb = round(gpkg.stat().st_size / 1e6, 1) if gpkg.exists() else None
    steps = summary["timings_s"]
    row = {"town": folder.name, "parcels": summary["layers"].get("parcels"),
           "mains": summary["layers"].get("mains"), "maps": maps,
           "wall_s": m["wall_s"], "cpu_s": m["cpu_s"],
           # the load step's own line (the GeoPackage is written beside the maps, so
           # the steps' times add up to more than the wall time)
           "load_s": m["wall_by_step_s"].get(
               "load", round(m["wall_s"] - sum(steps.values()), 2)),
           "steps_s": steps, "peak_rss_gb": m["peak_rss_gb"],
           "sampled_peak_rss_gb": m["sampled_peak_rss_gb"],
           "sampled_peak_at_s": m["sampled_peak_at_s"], "gpkg_mb": gpkg_mb,
           "sampled_peak_tree_pss_gb": m["sampled_peak_tree_pss_gb"],
           "sampled_peak_tree_at_s": m["sampled_peak_tree_at_s"],
           "pss_sampler": m["pss_sampler"],
           "rss_at_step_end_gb": m["rss_by_step_gb"], "cpu_s_by_step": m["cpu_by_step_s"]}
    if yardsticks:
        y = measure([python, "-c", YARDSTICK, str(folder)], env)
        if y["rc"] != 0:
            raise SystemExit(f"{folder}: yardstick failed:\n{y['stderr']}")
        row["yardsticks"] = json.loads(y["stdout"])
        row["yardsticks"]["peak_rss_gb"] = y["peak_rss_gb"]
        ys = row["yardsticks"]["read_layers_s"] + row["yardsticks"]["sjoin_nearest_s"]
        row["yardstick_s"] = round(ys, 2)
        row["ratio_to_yardstick"] = round(m["wall_s"] / ys, 2) if ys > 0 else None
        row["cpu_ratio_to_yardstick"] = round(m["cpu_s"] / ys, 2) if ys > 0 else None
    goal = GOAL_RATIO_MAPS if maps else GOAL_RATIO
    row["goals"] = {
        "ratio": goal, "ratio_met": None if "ratio_to_yardstick" not in row
        else row["ratio_to_yardstick"] <= goal,
        "peak_gb": GOAL_PEAK_GB, "peak_met": m["sampled_peak_tree_pss_gb"] <= GOAL_PEAK_GB}
    return row


def table(rows: list[dict]) -> str:
    steps: list[str] = []
    for r in rows:
        steps += [s for s in r["steps_s"] if s not in steps]
    head = ["step"] + [f"{r['town']} ({r['parcels']:,} parcels)" for r in rows]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * len(rows) + "|"]
    lines.append("| load (incl. interpreter start) | "
                 + " | ".join(f"{r['load_s']:.1f} s" for r in rows) + " |")
    for s in steps:
        lines.append(f"| {s} | " + " | ".join(
            f"{r['steps_s'][s]:.1f} s" if s in r["steps_s"] else "-" for r in rows) + " |")
    lines.append("| **whole run (wall)** | " + " | ".join(f"**{r['wall_s']:.1f} s**"
                                                         for r in rows) + " |")
    lines.append("| peak RSS | " + " | ".join(f"{r['peak_rss_gb']:.2f} GB" for r in rows) + " |")
    lines.append("| peak PSS, run and its child processes together (sampled) | " + " | ".join(
        f"{r['sampled_peak_tree_pss_gb']:.2f} GB" for r in rows) + " |")
    lines.append("| GeoPackage | " + " | ".join(f"{r['gpkg_mb']} MB" for r in rows) + " |")
    if all("yardsticks" in r for r in rows):
        lines.append("| yardstick: read the layer files (pyogrio) | " + " | ".join(
            f"{r['yardsticks']['read_layers_s']:.1f} s" for r in rows) + " |")
        lines.append("| yardstick: bare sjoin_nearest(parcels, mains) | " + " | ".join(
            f"{r['yardsticks']['sjoin_nearest_s']:.1f} s" for r in rows) + " |")
        lines.append("| **whole run / yardstick** (goal) | " + " | ".join(
            f"**{r['ratio_to_yardstick']:.2f}** (<= {r['goals']['ratio']:g}: "
            f"{'met' if r['goals']['ratio_met'] else 'not met'})" for r in rows) + " |")
        lines.append("| CPU time of the run / yardstick | " + " | ".join(
            f"{r['cpu_ratio_to_yardstick']:.2f}" for r in rows) + " |")
    lines.append("| peak PSS goal (run + children <= 4 GB) | " + " | ".join(
        "met" if r["goals"]["peak_met"] else "not met" for r in rows) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("towns", nargs="+", type=Path, help="town folders (with gisnet.toml)")
    ap.add_argument("--maps", action="store_true", help="include the web maps")
    ap.add_argument("--no-yardsticks", action="store_true",
                    help="skip reading the layers alone and the bare sjoin_nearest")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the runs")
    ap.add_argument("--src", type=Path, default=ROOT,
                    help="gisnet source tree to run (default this one; another checkout "
                         "gives the figures before a change)")
    args = ap.parse_args(argv)
    rows = []
    for folder in args.towns:
        row = bench_town(folder.resolve(), maps=args.maps, yardsticks=not args.no_yardsticks,
                         python=args.python, src=args.src.resolve())
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
