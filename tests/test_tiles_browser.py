"""Browser test of the tiled pages at city scale: ``gisnet map all --tiles always``,
``gisnet serve --maps DIR`` on a free port, headless Chromium opens the
obligations and index pages from the server, waits for the tiles, zooms to street
level and checks parcels are drawn in their status colour (pixels of
protomaps-leaflet's canvases) and that a click on a tiled parcel opens its popup.
Records the time to first draw (tests/_artifacts/tiles_browser.json).

Needs Debian's ``chromium`` and ``chromium-driver``; skipped without them.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parents[1]

#: Pixels of each colour drawn by the tiled layers (canvases of the tiles pane).
COUNT_COLOURS = """
var want = arguments[0], counts = {}, total = 0;
Object.keys(want).forEach(function (k) { counts[k] = 0; });
document.querySelectorAll('.leaflet-gisnetTiles-pane canvas').forEach(function (c) {
  if (!c.width || !c.height) { return; }
  var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (var i = 0; i < d.length; i += 4) {
    if (d[i + 3] < 10) { continue; }
    total++;
    Object.keys(want).forEach(function (k) {
      var w = want[k];
      if (Math.abs(d[i] - w[0]) < 12 && Math.abs(d[i + 1] - w[1]) < 12 &&
          Math.abs(d[i + 2] - w[2]) < 12) { counts[k]++; }
    });
  }
});
return {counts: counts, total: total};
"""


@pytest.fixture(scope="module")
def city_maps(tmp_path_factory) -> Iterator[tuple[str, object, dict]]:
    """A synthetic city (20,000 parcels) with tiled pages, served by ``gisnet serve --maps``."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("chromium and chromium-driver are not installed (/usr/bin)")
    from gisnet.cli import main
    from gisnet.testing.synthetic import make_town, write_town

    root = tmp_path_factory.mktemp("tiled-city")
    layers_dir = root / "city"
    write_town(make_town(20_000, 6_000, seed=11), layers_dir, name="city")
    out = root / "maps"
    assert main(["run", "--layers", str(layers_dir), "--out", str(out), "--tiles", "always",
                 "-q"]) == 0
    assert (out / "tiles" / "parcels_connected.pmtiles").is_file()
    from gisnet.maps.pages import read_results

    ob = read_results(out)["obligations"]
    port = free_port()
    srv = subprocess.Popen([sys.executable, "-m", "gisnet", "serve", "--maps", str(out),
                            "--port", str(port)], stdout=subprocess.PIPE, text=True,
                           cwd=ROOT)
    try:
        line = srv.stdout.readline()
        assert f"http://127.0.0.1:{port}/maps/index.html" in line  # the URL to open
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/maps", ob, {"out": out}
    finally:
        srv.terminate()
        srv.wait(10)
        srv.stdout.close()


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gisnet-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync", "--window-size=1400,900",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    d.set_page_load_timeout(60)
    try:
        yield d
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _rgb(hex_colour: str) -> list[int]:
    h = hex_colour.lstrip("#")
    return [int(h[i:i + 2], 16) for i in (0, 2, 4)]


def _wait(d, script: str, *args, timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(d, timeout, poll_frequency=0.05).until(
        lambda drv: drv.execute_script(script, *args))


FIRST_DRAW = """
var g = window.gisnet; if (!g || !g.ready) { return null; }
var keys = Object.keys(g.layers).filter(function (k) {
  return g.layers[k].gisnetTiled && g.map.hasLayer(g.layers[k]); });
if (!keys.length) { return null; }
for (var i = 0; i < keys.length; i++) { if (!(keys[i] in g.firstDraw)) { return null; } }
return {keys: keys, ms: Math.max.apply(null, keys.map(function (k) { return g.firstDraw[k]; }))};
"""
ZOOM = """
var g = window.gisnet, t0 = performance.now();
var keys = Object.keys(g.layers).filter(function (k) {
  return g.layers[k].gisnetTiled && g.map.hasLayer(g.layers[k]); });
window.__zoom = {keys: keys, done: {}};
keys.forEach(function (k) { g.layers[k].once("load", function () {
  window.__zoom.done[k] = performance.now() - t0; }); });
g.map.setView(arguments[0], arguments[1], {animate: false});
"""
ZOOM_DONE = """
var z = window.__zoom;
for (var i = 0; i < z.keys.length; i++) { if (!(z.keys[i] in z.done)) { return null; } }
return Math.max.apply(null, z.keys.map(function (k) { return z.done[k]; }).concat([0]));
"""


def _parcel_latlon(ob, status: str) -> tuple[str, list[float]]:
    import geopandas as gpd

    row = ob[ob["status"] == status].iloc[len(ob[ob["status"] == status]) // 2]
    p = gpd.GeoSeries([row.geometry.representative_point()], crs=ob.crs).to_crs("EPSG:4326")
    return str(row["parcel_id"]), [p.iloc[0].y, p.iloc[0].x]


@pytest.mark.parametrize("page", ["obligations", "index"])
def test_tiled_page_draws_parcels_by_status(city_maps, driver, page, artifacts: Path):
    from gisnet.palettes import STATUS_COLOURS

    base, ob, _ = city_maps
    d = driver
    d.get_log("browser")
    d.get(f"{base}/{page}.html")
    first = _wait(d, FIRST_DRAW)
    errors = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"
              and not any(h in e["message"] for h in ("tile.openstreetmap.org",
                                                      "basemaps.cartocdn.com", "favicon"))]
    assert errors == []
    specs = d.execute_script(
        "var o={};Object.keys(gisnet.specs).forEach(function(k){var s=gisnet.specs[k];"
        "o[k]={tiled:!!(s.data&&s.data.tiled),n:s.data?s.data.n:null};});return o;")
    counts = ob["status"].value_counts()
    for st, n in counts.items():
        key = f"parcels_{st}"
        assert key in specs, key
        if n >= 5000:  # big layers come from tiles, with the count of the result
            assert specs[key] == {"tiled": True, "n": int(n)}
    # street level on a connected parcel, with only the status layers on
    status = counts.index[0]
    pid, latlon = _parcel_latlon(ob, status)
    d.execute_script(
        "var g=gisnet;Object.keys(g.layers).forEach(function(k){var l=g.layers[k];"
        "if(k.indexOf('parcels_')===0){if(!g.map.hasLayer(l)){l.addTo(g.map);}}"
        "else if(g.map.hasLayer(l)){g.map.removeLayer(l);}});")
    d.execute_script(ZOOM, latlon, 18)
    zoom_ms = _wait(d, ZOOM_DONE)
    colours = {st: _rgb(STATUS_COLOURS[st]) for st in counts.index}
    px = d.execute_script(COUNT_COLOURS, colours)
    assert px["total"] > 10_000  # parcels drawn, not a blank canvas
    assert px["counts"][status] > 0.3 * px["total"], px
    d.save_screenshot(str(artifacts / f"tiles_{page}_street.png"))
    # a click on the parcel opens its popup from the tile's properties
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    el = d.find_element(By.CSS_SELECTOR, ".folium-map")
    xy = d.execute_script("var g=gisnet,p=g.map.latLngToContainerPoint(arguments[0]),"
                          "s=g.map.getSize();return [p.x-s.x/2,p.y-s.y/2];", latlon)
    ActionChains(d).move_to_element_with_offset(el, int(xy[0]), int(xy[1])).click().perform()
    text = _wait(d, "var p=document.querySelector('.leaflet-popup-content');"
                    "return p?p.innerText:null;")
    assert f"Parcel {pid}" in text
    from gisnet.labels import status_label

    assert status_label(status).lower() in text.lower()
    dist = ob.loc[ob["parcel_id"].astype(str) == pid, "distance_ft"].iloc[0]
    assert f"{dist:,.1f} ft" in text
    rec = artifacts / "tiles_browser.json"
    old = json.loads(rec.read_text()) if rec.is_file() else {}
    old[page] = {"first_draw_s": round(first["ms"] / 1000, 2),
                 "zoom_to_street_s": round(zoom_ms / 1000, 2), "tiled_layers": first["keys"]}
    rec.write_text(json.dumps(old, indent=1))
