"""Big-town (tiled) pages answer a lookup: in Chromium, on a synthetic town of 50,000
parcels with tiled pages served by ``gisnet serve --maps``, three random parcels are
each found by the search box (by id, and by address) from the search index beside the
tiles, the map zooms to each and opens its popup; and a real click on each parcel
opens that parcel's popup, not the connection zone's over it.

The town is generated once per test session under a temporary folder. Needs Debian's
``chromium`` and ``chromium-driver``; skipped without them.
"""

from __future__ import annotations

import random
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
#: As small as the claim allows: a tiled town of 50,000 parcels.
PARCELS = 50_000
POPUP = ("var p=document.querySelector('.leaflet-popup-content');"
         "return p&&p.innerText.indexOf(arguments[0])>=0?p.innerText:null;")


@pytest.fixture(scope="session")
def big_town(tmp_path_factory) -> Iterator[tuple[str, object, Path]]:
    """The town's pages (``--tiles always``) served by ``gisnet serve --maps``."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("chromium and chromium-driver are not installed (/usr/bin)")
    from gisnet.cli import main
    from gisnet.maps.pages import read_results
    from gisnet.testing.synthetic import make_town, write_town

    root = tmp_path_factory.mktemp("big-town")
    write_town(make_town(PARCELS, 15_000, seed=23), root / "town", name="big")
    out = root / "maps"
    assert main(["run", "--layers", str(root / "town"), "--out", str(out), "--tiles",
                 "always", "-q"]) == 0
    ob = read_results(out)["obligations"]
    assert len(ob) >= PARCELS
    port = free_port()
    srv = subprocess.Popen([sys.executable, "-m", "gisnet", "serve", "--maps", str(out),
                            "--port", str(port)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        srv.stdout.readline()
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/maps", ob, out
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


def _wait(d, script: str, *args, timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(d, timeout, poll_frequency=0.05).until(
        lambda drv: drv.execute_script(script, *args))


def _search(d, text: str, want: str) -> str:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d.execute_script("gisnet.map.closePopup();")
    box = d.find_element(By.CSS_SELECTOR, ".gisnet-search-input")
    box.clear()
    box.send_keys(text, Keys.ENTER)
    return _wait(d, POPUP, want)


@pytest.mark.parametrize("page", ["obligations", "index"])
def test_search_finds_and_a_click_opens_three_random_parcels(big_town, driver, page,
                                                             artifacts: Path):
    import geopandas as gpd
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By

    from gisnet.labels import status_label

    base, ob, out = big_town
    d = driver
    d.get(f"{base}/{page}.html")
    _wait(d, "return window.gisnet && window.gisnet.ready;")
    tiled = d.execute_script(
        "var o=[];Object.keys(gisnet.specs).forEach(function(k){var s=gisnet.specs[k];"
        "if(s.data&&s.data.tiled&&s.data.tiled.search){o.push(k);}});return o;")
    statuses = [s for s in ob["status"].unique() if f"parcels_{s}" in tiled]
    assert statuses, tiled  # the big status classes come from tiles, with the index
    html = (out / f"{page}.html").read_text(encoding="utf-8")
    pool = ob[ob["status"].isin(statuses)]
    picks = random.Random(2026).sample(range(len(pool)), 3)
    zone = d.execute_script("var z=gisnet.layers.connection_zone;"
                            "return !!z && gisnet.map.hasLayer(z);")
    for i in picks:
        row = pool.iloc[i]
        pid, address = str(row["parcel_id"]), str(row["address"])
        assert f'"{pid}"' not in html  # not inside the page: the index finds it
        # search by id: zoomed to the parcel, its popup from its tile
        text = _search(d, pid, f"Parcel {pid}")
        assert status_label(row["status"]).lower() in text.lower()
        assert d.execute_script("return gisnet.map.getZoom();") == 18
        # by its address (an exact value first), and by the start of it (a prefix)
        text = _search(d, address, address)
        assert "Parcel " in text
        start = address[: max(len(address) - 3, 4)].rstrip()
        text = _search(d, start, start)
        assert "Parcel " in text
        # a real click on the parcel opens its own popup (not the connection zone's)
        d.execute_script("gisnet.map.closePopup();")
        p = gpd.GeoSeries([row.geometry.representative_point()], crs=ob.crs).to_crs(4326)
        latlon = [p.iloc[0].y, p.iloc[0].x]
        d.execute_script("gisnet.map.setView(arguments[0], 18, {animate: false});", latlon)
        el = d.find_element(By.CSS_SELECTOR, ".folium-map")
        deadline = time.time() + 30
        while True:  # until the parcel's tile has loaded
            # the parcel where the window shows the map (a map taller than the window, as
            # on the index page, has its centre below the fold, out of a real click's
            # reach); its place in the window read afresh before each click, since the
            # page may scroll or the map pan between tries
            xy = d.execute_script(
                "var m=gisnet.map,r=arguments[1].getBoundingClientRect(),"
                "cx=(Math.max(r.left,0)+Math.min(r.right,window.innerWidth))/2-r.left,"
                "cy=(Math.max(r.top,0)+Math.min(r.bottom,window.innerHeight))/2-r.top,"
                "p=m.latLngToContainerPoint(arguments[0]);"
                "m.panBy([p.x-cx,p.y-cy],{animate:false});"
                "p=m.latLngToContainerPoint(arguments[0]);"
                "r=arguments[1].getBoundingClientRect();"
                "return [r.left+p.x,r.top+p.y,window.innerWidth,window.innerHeight];",
                latlon, el)
            assert 0 <= xy[0] < xy[2] and 0 <= xy[1] < xy[3], xy  # inside the window
            click = ActionBuilder(d)
            click.pointer_action.move_to_location(int(xy[0]), int(xy[1]))
            click.pointer_action.click()
            click.perform()
            try:
                text = _wait(d, POPUP, f"Parcel {pid}", timeout=2)
                break
            except Exception:
                got = d.execute_script("var p=document.querySelector("
                                       "'.leaflet-popup-content');return p?p.innerText:null;")
                assert got is None or "Parcel" in got, got  # never the zone's popup
                assert time.time() < deadline, f"no popup of {pid}: {got}"
        assert status_label(row["status"]).lower() in text.lower()
    d.save_screenshot(str(artifacts / f"tiles_search_{page}.png"))
    if page == "obligations":
        assert zone  # the zone was on the map, over the parcels, all along
