"""Browser tests of the web maps: headless Chromium, with the network blocked
(every host name resolves to nothing but the loopback address), opens each page
as ``gisnet`` writes it by default from disk, finds no script errors, counts the
features of each layer, sees the page say that the base map could not load,
opens popups by clicking and by searching, checks their words (labels, units,
"—" for empty values, never a raw column name or code), toggles layers and
watches the legend follow, renders the service's ``/docs`` offline, and saves
screenshots under tests/_artifacts/ (listed in docs/maps.md).

Needs Debian's ``chromium`` and ``chromium-driver``; skipped without them.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: Console messages about base-map tiles are expected offline.
TILE_HOSTS = ("tile.openstreetmap.org", "basemaps.cartocdn.com")


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("chromium and chromium-driver are not installed (/usr/bin)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gisnet-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync", "--window-size=1400,900",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                # no network: every host name fails to resolve except the loopback
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    d.set_page_load_timeout(60)
    try:
        yield d
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_page(d, page: Path) -> dict[str, int]:
    """Load a page, wait for the layers, return feature counts per layer."""
    from selenium.webdriver.support.ui import WebDriverWait

    d.get_log("browser")  # drop earlier messages
    d.get(page.resolve().as_uri())
    WebDriverWait(d, 60).until(
        lambda drv: drv.execute_script("return !!(window.gisnet && window.gisnet.ready)"))
    return d.execute_script(
        "var o={};Object.keys(window.gisnet.layers).forEach(function(k){"
        "o[k]=window.gisnet.layers[k].getLayers().length;});return o;")


def severe_errors(d) -> list[str]:
    return [e["message"] for e in d.get_log("browser")
            if e["level"] == "SEVERE" and not any(h in e["message"] for h in TILE_HOSTS)]


def search(d, text: str) -> str:
    """Type into the page's search box, press Find, return the popup's text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d.execute_script("window.gisnet.map.closePopup();")
    WebDriverWait(d, 10).until(
        lambda drv: not drv.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content"))
    box = d.find_element(By.CSS_SELECTOR, ".gisnet-search-input")
    box.clear()
    box.send_keys(text)
    d.find_element(By.CSS_SELECTOR, ".gisnet-search-go").click()
    WebDriverWait(d, 10).until(
        lambda drv: drv.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content"))
    return d.execute_script("return document.querySelector('.leaflet-popup-content').innerText")


def click_feature(d, layer: str) -> str:
    """Click (a real mouse click) on the first feature of a layer; return the popup text."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d.execute_script("window.gisnet.map.closePopup();")
    WebDriverWait(d, 10).until(
        lambda drv: not drv.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content"))
    xy = d.execute_script(
        "var g=window.gisnet, l=g.layers[arguments[0]].getLayers()[0];"
        "var ll=l.getLatLng?l.getLatLng():l.getCenter();g.map.setView(ll,18,{animate:false});"
        "var p=g.map.latLngToContainerPoint(ll);"
        "var s=g.map.getSize();return [p.x-s.x/2,p.y-s.y/2];", layer)
    el = d.find_element(By.CSS_SELECTOR, ".folium-map")
    ActionChains(d).move_to_element_with_offset(el, int(xy[0]), int(xy[1])).click().perform()
    WebDriverWait(d, 10).until(
        lambda drv: drv.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content"))
    return d.execute_script("return document.querySelector('.leaflet-popup-content').innerText")


#: Words a popup must never show: raw column names and codes the labels replace.
RAW_WORDS = re.compile(r"\b(Siu|Review reason|Flags unknown|property_line|subject_to_notice|"
                       r"not_required|outside_district|node_ids|monthly_3mo)\b")


def assert_base_map_failure_is_said(d) -> None:
    """With no network the base map fails: the page says so, draws on a plain
    background, and asked for the tiles with the referrer policy."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(d, 30).until(
        lambda drv: drv.execute_script("return !!document.querySelector('.gisnet-tile-note')"))
    note = d.execute_script("return document.querySelector('.gisnet-tile-note').innerText")
    assert "could not be loaded" in note and "plain background" in note
    assert d.execute_script("return window.gisnet.map.getContainer().classList"
                            ".contains('gisnet-no-tiles')")
    assert d.execute_script("return window.gisnet.tiles.loaded") == 0
    policies = d.execute_script(
        "return Array.from(document.querySelectorAll('img.leaflet-tile'))"
        ".map(function(i){return i.referrerPolicy;});")
    assert policies and set(policies) == {"strict-origin-when-cross-origin"}


def assert_popups_speak_the_vocabulary(d, per_layer: int = 400) -> None:
    """Every popup (up to ``per_layer`` features a layer) shows labels, not column names,
    and "—" for an empty value, never "unknown" or a code."""
    rows = d.execute_script(
        "var out=[],n=arguments[0];Object.keys(window.gisnet.layers).forEach(function(k){"
        "var spec=window.gisnet.specs[k];"
        "window.gisnet.layers[k].getLayers().slice(0,n).forEach(function(l){"
        "var div=document.createElement('div');"
        "div.innerHTML=window.gisnet.popupHtml(spec,l.feature.properties||{});"
        "div.querySelectorAll('tr').forEach(function(tr){"
        "out.push([k,tr.querySelector('th').textContent,tr.querySelector('td').textContent]);"
        "});});});return out;", per_layer)
    assert rows
    bad = [r for r in rows if "_" in r[1] or r[1][:1].islower() or r[2] in ("unknown", "")
           or RAW_WORDS.search(r[1] + " " + r[2])]
    assert not bad, bad[:10]


def legend_titles(d) -> list[str]:
    return d.execute_script(
        "return Array.from(document.querySelectorAll('.gisnet-legend-group'))"
        ".map(function(e){return e.textContent;});")


# --------------------------------------------------------------------------- sample town
@pytest.fixture(scope="module")
def sample_pages(sample_dir: Path, tmp_path_factory) -> tuple[dict, dict[str, Path]]:
    from gisnet import maps
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    town = load_town(sample_dir)
    res = analyse(town)
    out = tmp_path_factory.mktemp("sample-maps")
    paths = maps.write_maps(town, res.layers(), out)  # the default pages
    pages = {p.stem: p for p in paths}
    from gisnet.capacity import whatif

    pts = res.capacity.points
    pid = str(pts.loc[pts["user_id"].isna(), "parcel_id"].dropna().iloc[0])
    w = whatif(town, res.graph, res.capacity, parcel_id=pid, flow_gpd=250_000.0)
    pages["whatif"] = maps.whatif_map(town, w, out / "whatif.html")
    return {**res.layers(), "_whatif": w, "_town": town}, pages


def _located(gdf) -> int:
    import shapely

    g = np.asarray(gdf.geometry.array, dtype=object)
    return int((~(shapely.is_missing(g) | shapely.is_empty(g))).sum())


def expected_counts(layers: dict) -> dict[str, dict[str, int]]:
    """Features each page must show, from the result GeoDataFrames."""
    ob = layers["obligations"]
    status = ob["status"].astype(str)
    cm = layers["control_manholes"]
    plan = layers["sampling_plan"]
    siu = plan["siu"].fillna(False).astype(bool)
    return {
        "network": {"mains": _located(layers["graph_edges"]),
                    "quality": _located(layers["quality"])},
        "obligations": {f"parcels_{s}": int((status == s).sum())
                        for s in ("required", "review", "subject_to_notice", "connected",
                                  "not_required", "outside_district")
                        if (status == s).any()},
        "sampling": {"taps": _located(cm),
                     "control_manholes": int(cm["control_manhole_id"].dropna().nunique()),
                     "siu": int(siu.sum()), "users": int((~siu).sum())},
        "capacity": {"pipes_capacity": _located(layers["pipes_capacity"])},
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["network", "obligations", "sampling", "capacity", "index"])
def test_sample_page_renders_offline_with_every_feature(driver, sample_pages, artifacts, name):
    layers, pages = sample_pages
    counts = open_page(driver, pages[name])
    assert severe_errors(driver) == []
    want = expected_counts(layers)
    checks = want[name] if name != "index" else {k: v for page in want.values()
                                                  for k, v in page.items()}
    for key, n in checks.items():
        if n:
            assert counts.get(key) == n, (name, key, counts)
    assert driver.execute_script("return document.querySelectorAll('.gisnet-legend').length") == 1
    assert driver.execute_script(
        "return document.querySelectorAll('.leaflet-control-scale').length") == 1
    title = driver.execute_script(
        "return document.querySelector('.gisnet-titlebox').textContent")
    assert "rules measured under" in title and "only the base map needs a network" in title
    assert_base_map_failure_is_said(driver)
    assert_popups_speak_the_vocabulary(driver)
    if name == "obligations":
        ob = layers["obligations"]
        # the sample records no notice, hazard or highway program: its parcels within
        # 300 ft on septic are subject to notice (§ 168-22.2G), none is required yet
        row = ob[ob["status"] == "subject_to_notice"].iloc[0]
        text = search(driver, str(row["parcel_id"]))
        assert str(row["parcel_id"]) in text and str(row["section"]) in text
        assert "Connection can be ordered (notice)" in text
        # the address search finds what the network page finds
        parcels = layers["_town"].layers["parcels"]
        at = parcels[parcels["address"].astype(str).str.startswith("115 Cannon")]
        if len(at):
            text = search(driver, "115 Cannon")
            assert "115 Cannon" in text and str(at["parcel_id"].iloc[0]) in text
    elif name == "capacity":
        text = click_feature(driver, "plants")
        assert "Plant" in text
        # a Poughkeepsie town's page speaks of its own ordinance, not of Berlin's
        assert layers["_town"].profile.profile.id == "poughkeepsie-fourth-ward"
        assert "berlin" not in driver.execute_script(
            "return document.body.innerText").lower()
        assert "berlin" not in text.lower()
        parcels = layers["_town"].layers["parcels"]
        addr = str(parcels["address"].dropna().iloc[0])  # every page searches addresses
        text = search(driver, addr)
        assert addr in text and str(parcels["parcel_id"].iloc[0]) in text
    elif name == "sampling":
        text = click_feature(driver, "control_manholes")
        assert "Control manhole" in text and "Taps sampled here" in text
    elif name == "network":
        text = click_feature(driver, "plants")
        assert "Plant" in text
        # the browser's decoded coordinates equal pyproj's lon/lat of the mains' ends
        from pyproj import Transformer

        edges = layers["graph_edges"]
        tr = Transformer.from_crs(edges.crs, "EPSG:4326", always_xy=True)
        ends = driver.execute_script(
            "var o={};window.gisnet.layers.mains.eachLayer(function(l){"
            "var ll=l.getLatLngs(); if(ll.length&&ll[0].lat!==undefined){"
            "var k=l.feature.properties.main_id;(o[k]=o[k]||[]).push([ll[0].lng,ll[0].lat,"
            "ll[ll.length-1].lng,ll[ll.length-1].lat]);}});return o;")
        got = ends
        n_rows = edges["main_id"].astype(str).value_counts()
        checked = 0
        for mid, geom in zip(edges["main_id"].astype(str), edges.geometry, strict=True):
            if mid not in got or len(got[mid]) != 1 or n_rows[mid] != 1 or geom is None \
                    or geom.is_empty:
                continue
            (x0, y0), (x1, y1) = geom.coords[0], geom.coords[-1]
            lon0, lat0 = tr.transform(x0, y0)
            lon1, lat1 = tr.transform(x1, y1)
            np.testing.assert_allclose(got[mid][0], [lon0, lat0, lon1, lat1], atol=6e-7)
            checked += 1
        assert checked > 100
    else:
        parcels = layers["obligations"]
        pid = str(parcels["parcel_id"].iloc[0])
        assert pid in search(driver, pid)
    time.sleep(0.6)  # let the popup's auto-pan finish before the screenshot
    driver.save_screenshot(str(artifacts / f"maps_sample_{name}.png"))
    assert severe_errors(driver) == []


@pytest.mark.slow
def test_index_legend_lists_only_the_layers_shown(driver, sample_pages, artifacts):
    from selenium.webdriver.common.by import By

    _, pages = sample_pages
    open_page(driver, pages["index"])
    expect = driver.execute_script(
        "var g=window.gisnet;return g.legend.filter(function(grp){"
        "return grp.layers.some(function(k){return g.map.hasLayer(g.layers[k]);});})"
        ".map(function(grp){return grp.title;});")
    assert legend_titles(driver) == expect
    hidden = driver.execute_script(
        "var g=window.gisnet;return Object.keys(g.layers).filter(function(k){"
        "return !g.map.hasLayer(g.layers[k]);});")
    assert hidden, "the index page starts with some layers switched off"
    every = driver.execute_script("return window.gisnet.legend.length")
    assert len(expect) < every

    def toggle(name: str) -> None:
        for label in driver.find_elements(By.CSS_SELECTOR, ".leaflet-control-layers label"):
            if label.text.startswith(name + " ("):
                label.find_element(By.CSS_SELECTOR, "input").click()
                return
        raise AssertionError(f"no layer {name!r} in the layer control")

    assert "Control manholes" in legend_titles(driver)
    toggle("Control manholes")
    assert "Control manholes" not in legend_titles(driver)
    toggle("Control manholes")
    assert "Control manholes" in legend_titles(driver)
    # a group several layers share stays while one of them is shown
    toggle("Parcels: connected")
    assert "Parcels by status" in legend_titles(driver)
    toggle("Parcels: connected")
    driver.save_screenshot(str(artifacts / "maps_sample_index_legend.png"))


# --------------------------------------------------------------------------- service docs
@pytest.mark.slow
def test_service_docs_render_offline(driver, sample_dir, tmp_path, artifacts):
    import json
    import urllib.request

    from selenium.webdriver.support.ui import WebDriverWait
    from servers import gisnet_serve

    with gisnet_serve(["--layers", str(sample_dir), "--out", str(tmp_path)]) as (base, _):
        with urllib.request.urlopen(base + "/openapi.json", timeout=10) as r:
            n_ops = sum(len(v) for v in json.load(r)["paths"].values())
        d = driver
        d.get_log("browser")
        d.get(base + "/docs")
        WebDriverWait(d, 60).until(lambda drv: drv.execute_script(
            "return document.querySelectorAll('.swagger-ui .opblock').length") >= n_ops)
        assert "gisnet" in d.execute_script(
            "return document.querySelector('.swagger-ui .title').textContent")
        assert [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"] == []
        time.sleep(0.5)
        d.save_screenshot(str(artifacts / "service_docs_offline.png"))


# --------------------------------------------------------------------------- Bennington
@pytest.mark.slow
def test_bennington_unknown_diameters_show_as_empty(driver, real_data, tmp_path, artifacts):
    from gisnet import maps
    from gisnet.capacity import compute_capacity
    from gisnet.graph import build_sewer_graph, graph_to_gdfs, quality_gdf
    from gisnet.io import load_town

    d = real_data / "bennington_vt_clip"  # around the plant (tests/data/README.md)
    town = load_town(d, overrides={"mains": d / "BenningtonLinearFeatures.geojson",
                                   "manholes": d / "BenningtonPointFeatures.geojson",
                                   "plants": d / "BenningtonWWTF.geojson"},
                     profile="berlin-nh")
    assert town.layers["mains"]["diameter_in"].isna().all()
    G = build_sewer_graph(town)
    nodes, edges = graph_to_gdfs(G)
    cap = compute_capacity(town, G)
    results = {"graph_nodes": nodes, "graph_edges": edges, "quality": quality_gdf(G, town.report),
               **cap.layers()}
    paths = {p.stem: p for p in maps.write_maps(town, results, tmp_path, self_contained=True)}
    assert "network" in paths and "capacity" in paths

    counts = open_page(driver, paths["network"])
    assert severe_errors(driver) == []
    assert counts["mains"] == _located(edges)
    main_id = str(edges["main_id"].iloc[0])
    text = search(driver, main_id)
    assert re.search(r"Diameter\s+\u2014", text), text  # empty: "—"
    time.sleep(0.6)
    driver.save_screenshot(str(artifacts / "maps_bennington_network.png"))

    counts = open_page(driver, paths["capacity"])
    assert severe_errors(driver) == []
    assert counts["pipes_capacity"] == _located(cap.pipes)
    text = search(driver, main_id)
    for label in ("Diameter", "Full-flow capacity", "Utilization"):
        assert re.search(label + r"\s+\u2014", text), text
    assert re.search(r"Average flow\s+\u2014", text), text  # no parcels: flow unknown, not 0
    assert not re.search(r"\b0 in\b", text)
    classes = driver.execute_script(
        "var c={};window.gisnet.layers.pipes_capacity.eachLayer(function(l){"
        "var k=l.feature.properties._c;c[k]=(c[k]||0)+1;});return c;")
    assert classes.get("unknown", 0) == counts["pipes_capacity"]
    panel = driver.execute_script("return document.querySelector('.gisnet-panel').innerText")
    assert "below" not in panel and "unknown" in panel  # no flows: plant state unknown
    time.sleep(0.6)
    driver.save_screenshot(str(artifacts / "maps_bennington_capacity.png"))


@pytest.mark.slow
def test_sample_whatif_page_shows_path_before_and_after(driver, sample_pages, artifacts):
    layers, pages = sample_pages
    w = layers["_whatif"]
    counts = open_page(driver, pages["whatif"])
    assert severe_errors(driver) == []
    n = _located(w.pipes)
    assert n > 0
    assert counts["path_before"] == n and counts["path_after"] == n
    assert counts["proposed"] == 1
    shown = driver.execute_script(
        "return window.gisnet.map.hasLayer(window.gisnet.layers.path_after) && "
        "!window.gisnet.map.hasLayer(window.gisnet.layers.path_before);")
    assert shown
    panel = driver.execute_script(
        "return document.querySelector('.gisnet-panel').innerText")
    assert "250,000 gpd" in panel
    for a in w.approvals:
        assert str(a["section"]) in panel
    text = click_feature(driver, "proposed")
    assert "Proposed flow" in text and "250,000 gpd" in text
    assert_popups_speak_the_vocabulary(driver)
    time.sleep(0.6)
    driver.save_screenshot(str(artifacts / "maps_sample_whatif.png"))
