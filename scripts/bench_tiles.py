#!/usr/bin/env python
"""Benchmark of the tiled map pages: tile generation, page load and zoom in Chromium.

Examples
--------
flock /tmp/gisnet-bench.lock python scripts/make_city.py --parcels 1000000 \
    --mains 300000 --name county
flock /tmp/gisnet-bench.lock python scripts/bench_tiles.py bench-data/county
python scripts/bench_tiles.py bench-data/county --out bench-data/county-tiled --reuse

Loads the town, runs the analyses (:func:`gisnet.pipeline.analyse`, no
GeoPackage), writes the pages with ``tiles="always"`` and reports each tile
archive (features, tiles, MB, seconds). Then serves the folder with
``gisnet serve --maps`` on a free port and, in headless Chromium, opens each
page: *initial view* is from navigation start until every tiled layer shown
has drawn its tiles (protomaps-leaflet's ``load`` event, timed by the page);
*zoom* is from a ``setView`` to zoom 17 on a parcel until the same. Median of
``--repeat`` loads, each in a fresh browser profile (no cache).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Waits until every tiled layer on the map has drawn (its first ``load``), returns ms.
WAIT_FIRST_DRAW = """
var g = window.gisnet; if (!g || !g.ready) { return null; }
var keys = Object.keys(g.layers).filter(function (k) {
  return g.layers[k].gisnetTiled && g.map.hasLayer(g.layers[k]); });
for (var i = 0; i < keys.length; i++) { if (!(keys[i] in g.firstDraw)) { return null; } }
var t = keys.map(function (k) { return g.firstDraw[k]; });
return {keys: keys, ms: Math.max.apply(null, t.concat([g.readyMs]))};
"""
#: Zooms to arguments[0] ([lat, lon]) at zoom arguments[1]; window.__zoom gets the times.
START_ZOOM = """
var g = window.gisnet, t0 = performance.now();
var keys = Object.keys(g.layers).filter(function (k) {
  return g.layers[k].gisnetTiled && g.map.hasLayer(g.layers[k]); });
window.__zoom = {keys: keys, done: {}};
keys.forEach(function (k) { g.layers[k].once("load", function () {
  window.__zoom.done[k] = performance.now() - t0; }); });
g.map.setView(arguments[0], arguments[1], {animate: false});
return keys;
"""
ZOOM_DONE = """
var z = window.__zoom; if (!z) { return null; }
for (var i = 0; i < z.keys.length; i++) { if (!(z.keys[i] in z.done)) { return null; } }
var t = z.keys.map(function (k) { return z.done[k]; });
return Math.max.apply(null, t.concat([0]));
"""


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gisnet-bench-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync", "--window-size=1400,900",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    d.set_page_load_timeout(120)
    return d, profile


def measure(url: str, street: list[float], zoom: int = 17) -> tuple[float, float]:
    """Initial view and zoom-to-street times (s) of one page in a fresh browser."""
    from selenium.webdriver.support.ui import WebDriverWait

    d, profile = browser()
    try:
        d.get(url)
        first = WebDriverWait(d, 120, poll_frequency=0.02).until(
            lambda drv: drv.execute_script(WAIT_FIRST_DRAW))
        d.execute_script(START_ZOOM, street, zoom)
        ms = WebDriverWait(d, 120, poll_frequency=0.02).until(
            lambda drv: drv.execute_script(ZOOM_DONE))
        return first["ms"] / 1000.0, ms / 1000.0
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def street_point(town) -> list[float]:
    """[lat, lon] of the parcel nearest the middle of the town."""
    import geopandas as gpd
    import shapely

    parcels = town.layers["parcels"]
    b = parcels.total_bounds
    mid = shapely.Point((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
    i = int(shapely.STRtree(parcels.geometry.array).nearest(mid))
    p = gpd.GeoSeries([parcels.geometry.iloc[i].representative_point()],
                      crs=parcels.crs).to_crs("EPSG:4326").iloc[0]
    return [p.y, p.x]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("layers", type=Path, help="town folder (with gisnet.toml)")
    ap.add_argument("--out", type=Path, default=None,
                    help="maps folder (default: bench-data/<town>-tiled)")
    ap.add_argument("--pages", default="obligations,index",
                    help="pages to open in Chromium (comma-separated)")
    ap.add_argument("--reuse", action="store_true",
                    help="pages already written in --out: only the browser part")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in ("gisnet.maps.tiled",):
        logging.getLogger(name).setLevel(logging.INFO)
    out = a.out or ROOT / "bench-data" / f"{a.layers.name}-tiled"

    from gisnet.io import load_town

    t0 = time.perf_counter()
    town = load_town(a.layers)
    t_load = time.perf_counter() - t0
    print(f"{town.name}: {len(town.layers['parcels']):,} parcels, "
          f"{len(town.layers['mains']):,} mains; loaded in {t_load:.1f} s", flush=True)
    if not a.reuse:
        from gisnet.maps import write_maps
        from gisnet.maps.tiled import Tiler
        from gisnet.pipeline import analyse

        t0 = time.perf_counter()
        res = analyse(town)
        print(f"analyses: {time.perf_counter() - t0:.1f} s", flush=True)
        layers = res.layers()
        stats: dict = {}
        orig_write = Tiler.write

        def write(self, pages, out_dir):  # keep the per-layer figures
            r = orig_write(self, pages, out_dir)
            stats.update(r)
            return r

        Tiler.write = write  # type: ignore[method-assign]
        t0 = time.perf_counter()
        paths = write_maps(town, layers, out, tiles="always")
        t_maps = time.perf_counter() - t0
        print(f"pages and tiles written in {t_maps:.1f} s "
              f"(tiles {sum(s.seconds for s in stats.values()):.1f} s)")
        print("| layer | features | tiles | MB | s |\n|---|---:|---:|---:|---:|")
        for key, s in stats.items():
            print(f"| {key} | {s.features:,} | {s.tiles:,} | {s.bytes / 1e6:.1f} | "
                  f"{s.seconds:.1f} |")
        print(f"total: {sum(s.bytes for s in stats.values()) / 1e6:.1f} MB of tiles; pages "
              + ", ".join(f"{p.name} {p.stat().st_size / 1e6:.2f} MB" for p in paths))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        print(f"peak RSS {peak:.1f} GB", flush=True)
        del res, layers
    street = street_point(town)
    del town
    port = free_port()
    srv = subprocess.Popen([sys.executable, "-m", "gisnet", "serve", "--maps", str(out),
                            "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        print(srv.stdout.readline().strip(), flush=True)
        time.sleep(0.5)
        rows = {}
        for page in a.pages.split(","):
            url = f"http://127.0.0.1:{port}/maps/{page}.html"
            runs = [measure(url, street) for _ in range(a.repeat)]
            first = statistics.median(r[0] for r in runs)
            zoom = statistics.median(r[1] for r in runs)
            rows[page] = {"initial_view_s": round(first, 2), "zoom_to_street_s": round(zoom, 2),
                          "runs": [[round(x, 2) for x in r] for r in runs]}
            print(f"{page}.html: initial view {first:.2f} s, zoom to street level "
                  f"{zoom:.2f} s (median of {a.repeat})", flush=True)
        print(json.dumps(rows))
    finally:
        srv.terminate()
        srv.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
