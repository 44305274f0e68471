"""Benchmark the HTTP service on a city-scale town, on 127.0.0.1 only.

Starts a server in a subprocess (``gisnet serve --layers DIR``, ``gisnet serve
--results DIR`` (a finished run's folder: what needs the input layers is skipped),
or by default
a synthetic city built in memory with :func:`gisnet.testing.synthetic.make_town`),
then:

1. single-parcel ``GET /parcels/{id}/obligation`` and ``GET
   /trace/downstream?parcel={id}`` over N concurrent keep-alive connections
   (random parcel ids, seeded), measured by an asyncio raw-socket HTTP/1.1
   client written here, twice: closed loop (each connection sends its next
   request when the last one is answered: the most the server can do) and
   open loop at ``--rate`` requests/s (latency from each request's scheduled
   time); requests/s, latency p50/p90/p99/max, non-200 count; then the
   closed loop again with ``wrk`` when it is installed;
2. batches: ``POST /obligations`` and ``POST /control-manholes`` with 10,000
   ids, timed end to end (request sent -> body received and parsed).

Run it under the shared lock (it saturates both cores)::

    flock /tmp/gisnet-bench.lock /work/venv/bin/python scripts/bench_service.py

Figures go to docs/performance.md (## Service) by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------


def serve_synthetic(args: argparse.Namespace) -> None:
    """Child process: build a synthetic city in memory and serve it."""
    import logging

    import uvicorn
    from pyproj import CRS

    from gisnet.profile import load_profile
    from gisnet.service import ServiceLimits, TownState, create_app
    from gisnet.testing.synthetic import make_town
    from gisnet.town import Town
    from gisnet.units import feet_per_unit

    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    layers = make_town(args.parcels, args.mains, seed=args.seed, irregular=args.irregular)
    crs = CRS.from_user_input("EPSG:2260")
    town = Town(name=f"synthetic city {args.parcels}", crs=crs, ft_per_unit=feet_per_unit(crs),
                layers=layers, profile=load_profile(args.profile))
    t1 = time.perf_counter()
    state = TownState.from_town(town)
    state.timings_s = {"make_town": t1 - t0, **state.timings_s}
    app = create_app(state, ServiceLimits(max_batch=args.max_batch))
    print(json.dumps({"ready_s": time.perf_counter() - t0, "timings_s": state.timings_s}),
          file=sys.stderr, flush=True)
    # the loaded state lives as long as the process: keep it out of the cyclic
    # garbage collector's full passes, which otherwise show as latency spikes
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host="127.0.0.1", port=args.port, access_log=False, log_level="warning",
                lifespan="off")


def report_memory(proc: subprocess.Popen, results: dict[str, object]) -> None:
    """The server's resident and peak memory (``/proc/PID/status``), printed and kept."""
    status_file = Path(f"/proc/{proc.pid}/status")
    if status_file.exists():
        mem = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status_file.read_text(), re.M))
        results["server_memory_mb"] = {k: round(int(v) / 1024) for k, v in mem.items()}
        print(f"server memory: {results['server_memory_mb']}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(args: argparse.Namespace, port: int) -> subprocess.Popen:
    if args.results:
        cmd = [sys.executable, "-m", "gisnet", "serve", "--results", str(args.results),
               "--port", str(port), "--max-batch", str(args.max_batch)]
    elif args.layers:
        cmd = [sys.executable, "-m", "gisnet", "serve", "--layers", str(args.layers),
               "--port", str(port), "--max-batch", str(args.max_batch)]
        if args.profile:
            cmd += ["--profile", args.profile]
    else:
        cmd = [sys.executable, __file__, "_serve", "--parcels", str(args.parcels),
               "--port", str(port), "--seed", str(args.seed), "--max-batch",
               str(args.max_batch), "--profile", args.profile]
        if args.irregular:
            cmd.append("--irregular")
        if args.mains:
            cmd += ["--mains", str(args.mains)]
    fd, log_path = tempfile.mkstemp(prefix="gisnet-serve-", suffix=".log")
    with os.fdopen(fd, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.startup_timeout:
        if proc.poll() is not None:
            raise SystemExit(f"server exited:\n{Path(log_path).read_text()}")
        try:
            status, _ = asyncio.run(_one("127.0.0.1", port, "GET", "/health"))
            if status == 200 and args.results:  # the hot tables are serialized after
                while "serialized" not in Path(log_path).read_text():  # it listens
                    time.sleep(0.5)
            if status == 200:
                print(f"server ready in {time.perf_counter() - t0:.1f} s "
                      f"({Path(log_path).read_text().strip()[-400:]})")
                return proc
        except OSError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("server did not start in time")


# ---------------------------------------------------------------------------
# a small HTTP/1.1 keep-alive client
# ---------------------------------------------------------------------------


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    chunked = False
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            length = int(v.strip())
        elif k == b"transfer-encoding" and b"chunked" in v.lower():
            chunked = True
    if length is not None:
        return status, await reader.readexactly(length)
    if chunked:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return status, body
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    return status, await reader.read()


def _request(method: str, path: str, body: bytes | None = None) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + (body or b"")


async def _one(host: str, port: int, method: str, path: str,
               body: bytes | None = None) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(_request(method, path, body))
        await writer.drain()
        return await _read_response(reader)
    finally:
        writer.close()


async def _load(port: int, paths: list[str], connections: int, duration: float
                ) -> dict[str, float]:
    """Closed loop: each connection sends the next request when the last answered."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration
    counter = 0

    async def worker(seed: int) -> None:
        nonlocal errors, counter
        rng = random.Random(seed)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < stop:
                path = paths[rng.randrange(len(paths))]
                t = time.perf_counter()
                writer.write(_request("GET", path))
                status, body = await _read_response(reader)
                latencies.append(time.perf_counter() - t)
                counter += 1
                if status != 200 or not body.startswith(b"{"):
                    errors += 1
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(connections)))
    elapsed = time.perf_counter() - t0
    lat = np.array(latencies) * 1000.0
    return {
        "requests": len(lat),
        "seconds": round(elapsed, 2),
        "req_per_s": round(len(lat) / elapsed, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 2),
        "p90_ms": round(float(np.percentile(lat, 90)), 2),
        "p99_ms": round(float(np.percentile(lat, 99)), 2),
        "max_ms": round(float(lat.max()), 2),
        "errors": errors,
    }


async def _load_rate(port: int, paths: list[str], connections: int, duration: float,
                     rate: float) -> dict[str, float]:
    """Open loop: ``rate`` requests/s spread evenly over the connections.

    Latency counts from each request's scheduled send time, so a slow answer
    that delays the next request on its connection is charged to that request
    too (no coordinated omission).
    """
    latencies: list[float] = []
    errors = 0
    interval = connections / rate
    t_start = time.perf_counter() + 0.1
    t_end = t_start + duration

    async def worker(i: int) -> None:
        nonlocal errors
        rng = random.Random(1000 + i)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        k = 0
        try:
            while True:
                scheduled = t_start + i / rate + k * interval
                if scheduled >= t_end:
                    break
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                writer.write(_request("GET", paths[rng.randrange(len(paths))]))
                status, body = await _read_response(reader)
                latencies.append(time.perf_counter() - scheduled)
                if status != 200 or not body.startswith(b"{"):
                    errors += 1
                k += 1
        finally:
            writer.close()

    await asyncio.gather(*(worker(i) for i in range(connections)))
    elapsed = time.perf_counter() - t_start
    lat = np.array(latencies) * 1000.0
    return {
        "offered_per_s": rate,
        "requests": len(lat),
        "req_per_s": round(len(lat) / elapsed, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 2),
        "p90_ms": round(float(np.percentile(lat, 90)), 2),
        "p99_ms": round(float(np.percentile(lat, 99)), 2),
        "max_ms": round(float(lat.max()), 2),
        "errors": errors,
    }


def run_wrk(port: int, paths: list[str], connections: int, duration: float) -> dict | None:
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        plist = Path(d) / "paths.txt"
        plist.write_text("\n".join(paths))
        script = Path(d) / "paths.lua"
        script.write_text(
            f'local paths = {{}}\nfor line in io.lines("{plist}") do paths[#paths + 1] = line end\n'
            "math.randomseed(1)\n"
            "request = function()\n"
            '  return wrk.format("GET", paths[math.random(#paths)])\nend\n'
        )
        out = subprocess.run([wrk, "-t1", f"-c{connections}", f"-d{int(duration)}s", "--latency",
                              "-s", str(script), f"http://127.0.0.1:{port}"],
                             capture_output=True, text=True, check=True).stdout

    def ms(text: str) -> float:
        v = float(re.match(r"([\d.]+)", text).group(1))
        return v / 1000 if text.endswith("us") else v * 1000 if text.endswith("s") and \
            not text.endswith("ms") else v

    pct = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)", out, re.M))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors:.*", out)
    return {"req_per_s": rps, "p50_ms": ms(pct["50"]), "p90_ms": ms(pct["90"]),
            "p99_ms": ms(pct["99"]), "non_2xx": int(non2xx.group(1)) if non2xx else 0,
            "socket_errors": sock.group(0) if sock else "none"}


async def _batch(port: int, path: str, key: str, ids: list[str], repeat: int
                 ) -> dict[str, object]:
    body = json.dumps({key: ids}).encode()
    times = []
    n_features = 0
    for _ in range(repeat):
        t = time.perf_counter()
        status, data = await _one("127.0.0.1", port, "POST", path, body)
        fc = json.loads(data)
        times.append(time.perf_counter() - t)
        if status != 200:
            raise SystemExit(f"{path}: {status} {data[:300]!r}")
        n_features = len(fc["features"])
    return {"ids": len(ids), "features": n_features, "request_bytes": len(body),
            "response_bytes": len(data), "seconds": [round(x, 3) for x in times],
            "median_s": round(float(np.median(times)), 3)}


async def _library_calls(port: int, pids: list[str], polygons: list[dict], repeat: int
                         ) -> dict[str, object]:
    """Sequential timings of the endpoints that call the library per request."""
    from urllib.parse import quote

    import shapely.geometry

    counts: dict[str, int] = {}
    served: list[str] = []  # parcels with a connection point
    for pid in pids:
        status, data = await _one("127.0.0.1", port, "GET",
                                  f"/trace/downstream?parcel={quote(pid, safe='')}")
        mh = json.loads(data).get("control_manhole_id") if status == 200 else None
        if mh:
            counts[mh] = counts.get(mh, 0) + 1
            served.append(pid)
    pids = served
    ranked = sorted(counts, key=lambda k: (-counts[k], k))
    pts = [shapely.geometry.shape(f["geometry"]).representative_point() for f in polygons]
    cases = {
        f"GET /manholes/{{id}}/upstream (busiest of a sample, {ranked[0]})":
            lambda i: ("GET", f"/manholes/{quote(ranked[0], safe='')}/upstream", None),
        "GET /manholes/{id}/upstream (median of a sample)":
            lambda i: ("GET", f"/manholes/{quote(ranked[len(ranked) // 2], safe='')}/upstream",
                       None),
        "GET /trace/downstream?x=&y= (lon/lat)":
            lambda i: ("GET", f"/trace/downstream?x={pts[i].x}&y={pts[i].y}", None),
        "POST /whatif parcel, 12,000 gpd":
            lambda i: ("POST", "/whatif", json.dumps({"parcel_id": pids[i],
                                                      "flow_gpd": 12000}).encode()),
        "POST /whatif lon/lat point, 30,000 gpd industrial":
            lambda i: ("POST", "/whatif", json.dumps({"point": [pts[i].x, pts[i].y],
                                                      "flow_gpd": 30000,
                                                      "industrial": True}).encode()),
        "POST /control-manholes, 1,000 lon/lat points":
            lambda i: ("POST", "/control-manholes", json.dumps(
                {"features": [{"type": "Point", "coordinates": [p.x, p.y]}
                              for p in pts[:1000]]}).encode()),
        "GET /pipes?min_utilization=0.8":
            lambda i: ("GET", "/pipes?min_utilization=0.8", None),
    }
    out: dict[str, object] = {}
    for label, make in cases.items():
        times, size = [], 0
        for i in range(repeat):
            method, path, body = make(i)
            t = time.perf_counter()
            status, data = await _one("127.0.0.1", port, method, path, body)
            json.loads(data)
            times.append(time.perf_counter() - t)
            if status != 200:
                raise SystemExit(f"{label}: {status} {data[:300]!r}")
            size = len(data)
        out[label] = {"median_ms": round(float(np.median(times)) * 1000, 1),
                      "response_bytes": size}
        print(f"{label}: {out[label]}", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", nargs="?", default="bench", choices=("bench", "_serve"))
    p.add_argument("--layers", type=Path, help="serve this town folder with `gisnet serve`")
    p.add_argument("--results", type=Path,
                   help="serve this finished run's folder with `gisnet serve --results`")
    p.add_argument("--parcels", type=int, default=57_000, help="synthetic city parcels")
    p.add_argument("--mains", type=int, default=20_000, help="synthetic city mains")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--profile", default="poughkeepsie-fourth-ward")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--duration", type=float, default=15.0, help="seconds per load phase")
    p.add_argument("--rate", type=float, default=500.0,
                   help="offered requests/s of the open-loop phase (default 500)")
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--max-batch", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--startup-timeout", type=float, default=600.0)
    p.add_argument("--irregular", action="store_true",
                   help="synthetic city with jittered lots and curved streets")
    p.add_argument("--no-wrk", action="store_true")
    args = p.parse_args()
    if args.mode == "_serve":
        serve_synthetic(args)
        return

    port = args.port or free_port()
    proc = start_server(args, port)
    try:
        _, data = asyncio.run(_one("127.0.0.1", port, "GET", "/town"))
        info = json.loads(data)
        print(json.dumps({k: info[k] for k in ("name", "layers", "graph", "results",
                                                "unavailable", "startup_s")}, indent=1))
        _, data = asyncio.run(_one("127.0.0.1", port, "GET", "/parcels"))
        pids = json.loads(data)["parcel_ids"]
        rng = random.Random(args.seed)
        sample = rng.sample(pids, min(len(pids), 20_000))
        from urllib.parse import quote

        phases = {
            "obligation": [f"/parcels/{quote(i, safe='')}/obligation" for i in sample],
            "trace": [f"/trace/downstream?parcel={quote(i, safe='')}" for i in sample],
        }
        results: dict[str, object] = {"cpu_count": os.cpu_count(), "parcels": len(pids)}
        for name, paths in phases.items():
            asyncio.run(_load(port, paths, args.connections, 2.0))  # warm-up
            r = asyncio.run(_load(port, paths, args.connections, args.duration))
            print(f"{name} (python client, closed loop, {args.connections} conns): {r}",
                  flush=True)
            results[f"{name}_closed"] = r
            r = asyncio.run(_load_rate(port, paths, args.connections, args.duration, args.rate))
            print(f"{name} (python client, open loop {args.rate:g}/s, {args.connections} "
                  f"conns): {r}", flush=True)
            results[f"{name}_rate"] = r
            if not args.no_wrk:
                w = run_wrk(port, paths, args.connections, args.duration)
                if w:
                    print(f"{name} (wrk -t1 -c{args.connections}): {w}", flush=True)
                    results[f"{name}_wrk"] = w
        batch_ids = rng.sample(pids, min(len(pids), args.batch))
        for path, key in (("/obligations", "parcel_ids"), ("/control-manholes", "parcel_ids")):
            r = asyncio.run(_batch(port, path, key, batch_ids, args.repeat))
            print(f"POST {path} {len(batch_ids)} ids: {r}", flush=True)
            results[f"batch{path}"] = r
        if args.results:  # request geometry needs the town's input layers
            report_memory(proc, results)
            print(json.dumps(results))
            return
        # the same parcels as lon/lat GeoJSON polygons: measured per request
        _, data = asyncio.run(_one("127.0.0.1", port, "POST", "/obligations",
                                   json.dumps({"parcel_ids": batch_ids}).encode()))
        feats = [{"type": "Feature", "id": f["properties"]["parcel_id"], "properties": {},
                  "geometry": f["geometry"]} for f in json.loads(data)["features"]]
        body = json.dumps({"features": {"type": "FeatureCollection", "features": feats},
                           "crs": "EPSG:4326"}).encode()
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            status, data = asyncio.run(_one("127.0.0.1", port, "POST", "/obligations", body))
            n = len(json.loads(data)["features"])
            times.append(time.perf_counter() - t)
            if status != 200:
                raise SystemExit(f"geometry batch: {status} {data[:300]!r}")
        r = {"features": n, "request_bytes": len(body), "seconds": [round(x, 3) for x in times],
             "median_s": round(float(np.median(times)), 3)}
        print(f"POST /obligations {len(feats)} GeoJSON polygons: {r}", flush=True)
        results["batch/obligations-geojson"] = r
        results["per_request_library_calls"] = asyncio.run(
            _library_calls(port, sample[:300], feats[:1000], args.repeat))
        report_memory(proc, results)
        _, data = asyncio.run(_one("127.0.0.1", port, "GET", "/pipes?min_utilization=0.8"))
        results["pipes_over_0.8"] = len(json.loads(data)["features"])
        print(json.dumps(results))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
