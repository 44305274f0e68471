"""Benchmark the web maps: page sizes, build time and browser load time.

Scales: ``sample`` (layers/sample, the full pipeline) and ``city`` (a synthetic
town of 50,000 parcels and 20,000 mains from gisnet.testing.synthetic.make_town, the
full pipeline). Pages are written self-contained under bench-data/maps-<scale>/
and opened from disk in headless Chromium (Debian's chromium + chromium-driver);
load time = from navigation start until gisnet's layers are on the map
(``performance.now()`` when the page's init finishes).

Run by hand, under the shared lock:

    flock /tmp/gisnet-bench.lock /work/venv/bin/python scripts/bench_maps.py [sample] [city]

Prints a Markdown table (the one in docs/maps.md); with GISNET_BENCH_TIMINGS=1 also
the milliseconds each layer spends decoding, building and being added to the map.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(scale: str, out: Path) -> tuple[list[Path], float, float]:
    from gisnet import maps
    from gisnet.pipeline import analyse

    t0 = time.perf_counter()
    if scale == "sample":
        from gisnet.io import load_town

        town = load_town(ROOT / "layers" / "sample")
    else:
        from gisnet.profile import load_profile
        from gisnet.testing.synthetic import make_town
        from gisnet.town import Town
        from gisnet.units import feet_per_unit

        layers = make_town(50_000, 20_000, seed=7)
        crs = layers["parcels"].crs
        town = Town(name="Synthetic city (50,000 parcels, 20,000 mains)", crs=crs,
                    ft_per_unit=feet_per_unit(crs), layers=layers,
                    profile=load_profile("poughkeepsie-fourth-ward"))
    res = analyse(town)
    t_analyse = time.perf_counter() - t0
    t0 = time.perf_counter()
    paths = maps.write_maps(town, res.layers(), out, self_contained=True)
    return paths, t_analyse, time.perf_counter() - t0


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
    d.set_page_load_timeout(300)
    return d, profile


def load_time(d, page: Path) -> tuple[float, int]:
    from selenium.webdriver.support.ui import WebDriverWait

    d.get("about:blank")
    t0 = time.perf_counter()
    d.get(page.resolve().as_uri())
    WebDriverWait(d, 300, poll_frequency=0.05).until(
        lambda drv: drv.execute_script("return !!(window.gisnet && window.gisnet.ready)"))
    wall = time.perf_counter() - t0
    # time from navigation start to the layers drawn, measured by the page itself
    # (the wall clock also waits for offline tile requests to fail)
    ms = d.execute_script("return window.gisnet.readyMs")
    elapsed = ms / 1000.0 if ms is not None else wall
    if os.environ.get("GISNET_BENCH_TIMINGS"):
        t = d.execute_script("return window.gisnet.timings")
        print(page.name, {k: {s: round(v) for s, v in x.items()} for k, x in t.items()},
              file=sys.stderr)
    n = d.execute_script(
        "var n=0;Object.keys(window.gisnet.layers).forEach(function(k){"
        "n+=window.gisnet.layers[k].getLayers().length;});return n;")
    return elapsed, int(n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scales", nargs="*", default=["sample", "city"],
                    choices=["sample", "city"])
    ap.add_argument("--repeat", type=int, default=3, help="browser loads per page (median)")
    args = ap.parse_args(argv)
    rows = []
    d, profile = browser()
    try:
        for scale in args.scales:
            out = ROOT / "bench-data" / f"maps-{scale}"
            paths, t_an, t_maps = build(scale, out)
            print(f"{scale}: analyses {t_an:.1f} s, all pages written in {t_maps:.1f} s",
                  file=sys.stderr)
            for p in paths:
                times = []
                for _ in range(args.repeat):
                    t, n = load_time(d, p)
                    times.append(t)
                times.sort()
                rows.append((scale, p.name, p.stat().st_size / 1e6, n, times[len(times) // 2]))
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print("| scale | page | size (MB) | features | load in Chromium (s, median) |")
    print("|---|---|---:|---:|---:|")
    for scale, name, mb, n, t in rows:
        print(f"| {scale} | {name} | {mb:.2f} | {n:,} | {t:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
