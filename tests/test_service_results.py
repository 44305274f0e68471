"""``gisnet serve --results DIR``: the service built from a finished run's folder
answers as the service built from the town (every GET route family and what-if),
refuses a folder whose files changed, and serves a run with maps and one without.

Numbers come from the GeoPackage, which keeps feet to 0.1 ft and flows to whole
gallons (gisnet.output.writing.ROUND_SUFFIX); a column's value moves by at
most half its last decimal (``ROUNDED``), and the fields worked from such values
(traces, what-if) are listed in ``MOVES`` with how far. Everything else is equal.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from gisnet.errors import ConfigError
from gisnet.io import load_town
from gisnet.pipeline import run as run_town
from gisnet.service import ServiceLimits, TownState, create_app
from gisnet.service.stored import NOT_FROM_RESULTS
from gisnet.service.tables import LayerLater

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.slow

#: Fields whose value is read from the GeoPackage's rounded columns (or worked from
#: them), and the most they move: a length of one row 0.05 ft, a sum of rounded
#: lengths along a path 0.05 ft a pipe; flows 0.5 gpd a row, a pipe's utilization
#: worked from them a relative 1e-5, a plant's ratio 0.0005 (its flow kept to
#: 0.001 MGD, over a design flow of at least 1 MGD).
MOVES = {
    "tap_distance_ft": (0.051, 0.0), "control_length_ft": (0.051, 0.0),
    "length_ft": (0.051 * 200, 0.0), "cum_length_ft": (0.051 * 200, 0.0),
    "path_length_ft": (0.051, 0.0), "plant_path_length_ft": (0.051, 0.0),
    "avg_flow_gpd_before": (0.51, 0.0), "avg_flow_gpd_after": (0.51, 0.0),
    "peak_flow_gpd_before": (2.0, 0.0), "peak_flow_gpd_after": (2.0, 0.0),
    "capacity_gpd": (0.51, 0.0), "utilization_before": (0.0, 1e-5),
    "utilization_after": (0.0, 1e-5), "ratio_before": (0.0005, 0.0),
    "ratio_after": (0.0005, 0.0), "avg_flow_mgd_before": (0.0006, 0.0),
    "avg_flow_mgd_after": (0.0006, 0.0),
}


#: The rounding of the GeoPackage's columns by name (docs/results.md): half a unit
#: of the last decimal kept, the most a stored value is off the computed one.
ROUNDED = {"rim_ft": 0.005, "invert_ft": 0.005, "_ft": 0.05, "_gpd": 0.5, "_mgd": 0.0005}


#: The shapes of ``quality`` and ``worklist`` rows (points, lines, several at once)
#: are kept in the files as WKT to 0.001 ft; their coordinates, the point OGC serves
#: each at (a point on the shape) and the extent of those points may move with it.
#: Under these keys of those layers only the kind of value is compared.
SHAPES_AS_WKT = {"coordinates", "bbox", "shape_wkt"}


def _loose(where: str) -> bool:
    return any(name in where for name in ("quality", "worklist", "/collections?",
                                          "/collections "))


def _compare(a, b, where: str, moved: set[str], key: str = "") -> None:
    """``a`` (from the results) against ``b`` (from the town): equal, or a float of
    :data:`MOVES` within its bound (its key added to ``moved``). An OGC page's
    ``timeStamp`` is the time of its response, not an answer: only its form is compared."""
    if key == "timeStamp":
        assert isinstance(a, str) and isinstance(b, str) and len(a) == len(b), (where, a, b)
        return
    if key in SHAPES_AS_WKT and _loose(where):
        assert type(a) is type(b), (where, key, a, b)
        if a != b:
            moved.add(key)
        return
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), (where, key, list(a), list(b))
        for k in b:
            _compare(a[k], b[k], where, moved, k)
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), (where, key)
        for x, y in zip(a, b, strict=True):
            _compare(x, y, where, moved, key)
    elif isinstance(b, float) and isinstance(a, int | float) and not isinstance(a, bool) \
            and a != b:
        bound = MOVES.get(key) or next(((half * 1.001, 0.0) for sfx, half in ROUNDED.items()
                                         if key.endswith(sfx)), None)
        assert bound is not None, (where, key, a, b)
        abs_tol, rel_tol = bound
        assert math.isclose(a, b, abs_tol=abs_tol, rel_tol=rel_tol), (where, key, a, b)
        moved.add(key)
    else:
        assert a == b, (where, key, a, b)


@pytest.fixture(scope="module")
def served(tmp_path_factory, sample_dir):
    """The sample town run once without maps and once with; a client of the state
    from each folder and one of the state analysed from the town."""
    base = tmp_path_factory.mktemp("serve-results")
    plain, with_maps = base / "run", base / "run-maps"
    run_town(load_town(sample_dir), plain, maps=False)
    run_town(load_town(sample_dir), with_maps, maps=True, tiles="never")
    live = TownState.from_town(load_town(sample_dir))
    stored = TownState.from_results(plain)
    limits = ServiceLimits()
    return {"live": TestClient(create_app(live, limits)),
            "stored": TestClient(create_app(stored, limits)),
            "maps": TestClient(create_app(TownState.from_results(with_maps), limits)),
            "live_state": live, "stored_state": stored, "plain": plain,
            "with_maps": with_maps}


def _same_answer(served, method: str, path: str, moved: set[str], **kw) -> dict:
    a = getattr(served["stored"], method)(path, **kw)
    b = getattr(served["live"], method)(path, **kw)
    assert (a.status_code, path) == (b.status_code, path), (a.text[:300], b.text[:300])
    _compare(a.json(), b.json(), path, moved)
    return b.json()


def _ids(served, layer: str, col: str, n: int, where=None) -> list[str]:
    g = served["live_state"].tables[layer].gdf
    if where is not None:
        g = g[where(g)]
    ids = g[col].dropna().astype(str).drop_duplicates().tolist()
    return ids[:: max(1, len(ids) // n)][:n]


def test_result_layers_parcels_pipes_plants_are_the_same(served):
    moved: set[str] = set()
    for path in ("/health", "/parcels", "/results", "/pipes", "/pipes?min_utilization=0.5",
                 "/plants", "/labels", "/conformance"):
        _same_answer(served, "get", path, moved)
    for name in served["live_state"].tables:
        if name != "parcels":
            _same_answer(served, "get", f"/results/{name}", moved)
            _same_answer(served, "get", f"/results/{name}?limit=7&offset=3&crs=EPSG:2260",
                         moved)
    # the GeoPackage holds what the run computed: only its rounded columns move
    assert moved and all(k.endswith(tuple(ROUNDED)) for k in moved - SHAPES_AS_WKT)


def test_town_summary_is_the_same_but_what_results_cannot_answer(served):
    a = served["stored"].get("/town").json()
    b = served["live"].get("/town").json()
    for d in (a, b):
        d.pop("startup_s")
    extra = {k: v for k, v in a["unavailable"].items() if k not in b["unavailable"]}
    inputs = {f"input_{role}" for role in b["layers"]}
    assert set(extra) == set(NOT_FROM_RESULTS) | inputs
    a["unavailable"] = {k: v for k, v in a["unavailable"].items() if k not in extra}
    assert a == b


def test_parcel_lookups_and_downstream_traces_are_the_same(served):
    moved: set[str] = set()
    pids = _ids(served, "obligations", "parcel_id", 40)
    for pid in pids:
        _same_answer(served, "get", f"/parcels/{pid}/obligation", moved)
        _same_answer(served, "get", f"/trace/downstream?parcel={pid}", moved)
    _same_answer(served, "post", "/obligations", moved, json={"parcel_ids": [*pids, "nope"]})
    # points: each a few feet off a tap, in the working CRS and in longitude/latitude
    cm = served["live_state"].tables["control_manholes"].gdf.dropna(subset=["geometry"])
    for g in cm.geometry.iloc[:: max(1, len(cm) // 15)]:
        _same_answer(served, "get", f"/trace/downstream?x={g.x + 7}&y={g.y - 4}"
                                    "&crs=EPSG:2260", moved)
    ll = cm.to_crs(4326).geometry.iloc[5]
    _same_answer(served, "get", f"/trace/downstream?x={ll.x}&y={ll.y}", moved)
    _same_answer(served, "get", "/trace/downstream?x=0&y=0&crs=EPSG:2260", moved)  # 422
    assert all(k.endswith(tuple(ROUNDED)) for k in moved)


def test_control_manholes_by_id_are_the_same(served):
    moved: set[str] = set()
    for key, layer, where in (("parcel_ids", "parcel_id", None),
                              ("building_ids", "building_id", None),
                              ("user_ids", "user_id", None)):
        ids = _ids(served, "control_manholes", layer, 30, where)
        assert ids
        _same_answer(served, "post", "/control-manholes", moved, json={key: [*ids, "x?"]})
    assert all(k.endswith(tuple(ROUNDED)) for k in moved)


def test_whatif_is_the_same(served):
    moved: set[str] = set()
    pids = _ids(served, "obligations", "parcel_id", 25,
                lambda g: g["status"] != "not_required")
    for i, pid in enumerate(pids):
        _same_answer(served, "post", "/whatif", moved,
                     json={"parcel_id": pid, "flow_gpd": 400.0 * (i + 1),
                           "industrial": i % 3 == 0})
    cm = served["live_state"].tables["control_manholes"].gdf.dropna(subset=["geometry"])
    for g in cm.geometry.iloc[:: max(1, len(cm) // 10)]:
        _same_answer(served, "post", "/whatif", moved,
                     json={"point": [g.x + 3, g.y + 3], "crs": "EPSG:2260",
                           "flow_gpd": 25_000})
    _same_answer(served, "post", "/whatif", moved, json={"parcel_id": "no such parcel",
                                                          "flow_gpd": 10})
    # the flows and capacities the what-if starts from are the GeoPackage's
    assert moved and moved <= set(MOVES)


def test_ogc_collections_are_the_same_but_the_input_layers(served):
    moved: set[str] = set()
    a = served["stored"].get("/collections").json()
    b = served["live"].get("/collections").json()
    b["collections"] = [c for c in b["collections"] if not c["id"].startswith("input_")]
    _compare(a, b, "/collections ", moved)
    for c in b["collections"]:
        cid = c["id"]
        _same_answer(served, "get", f"/collections/{cid}", moved)
        items = _same_answer(served, "get", f"/collections/{cid}/items?limit=5", moved)
        for f in items["features"][:2]:
            _same_answer(served, "get", f"/collections/{cid}/items/{f['id']}", moved)
    r = served["stored"].get("/collections/input_parcels")
    assert r.status_code == 503 and "input layer" in r.text


def test_the_shapes_held_as_wkb_are_not_made_whole_by_what_reads_rows(served):
    """Lookups, the parcels' ids, collection documents, their QGIS styles, pages in
    CRS84, in the storage CRS and by bbox, and the packing of the hot tables: none
    makes a layer's shapes held as WKB into a million geometries held."""
    from fastapi.testclient import TestClient

    from gisnet.service.stored import SHAPES_LATER

    state = TownState.from_results(served["plain"])
    client = TestClient(create_app(state, ServiceLimits()))
    lazy = [*SHAPES_LATER, "parcels"]
    assert all(state.tables[n]._gdf is None for n in lazy)
    pid = client.get("/parcels").json()["parcel_ids"][0]
    assert client.get(f"/parcels/{pid}/obligation").status_code == 200
    assert client.get("/trace/downstream", params={"parcel": pid}).status_code == 200
    storage = state.tables["obligations"].crs.to_epsg()
    for cid in ("obligations", "obligation_evidence", "control_paths"):
        doc = client.get(f"/collections/{cid}").json()
        assert any(lk["rel"] == "describedby" for lk in doc["links"])
        assert client.get(f"/collections/{cid}/styles/gisnet").status_code == 200
        x0, y0, x1, y1 = doc["extent"]["spatial"]["bbox"][0]
        for q in ("limit=3", f"limit=3&crs=http://www.opengis.net/def/crs/EPSG/0/{storage}",
                  f"limit=3&bbox={x0},{y0},{x1},{y1}"):
            r = client.get(f"/collections/{cid}/items?{q}")
            assert r.status_code == 200 and r.json()["features"], (cid, q)
    state.warm()
    assert all(state.tables[n]._gdf is None for n in lazy)


def test_what_results_cannot_answer_is_503_with_the_reason(served):
    mh = served["live_state"].tables["control_manholes"].gdf["control_manhole_id"].dropna()
    path = f"/manholes/{mh.iloc[0]}/upstream"
    assert served["live"].get(path).status_code == 200
    r = served["stored"].get(path)
    assert r.status_code == 503 and "parcels, buildings and users" in r.text
    feat = {"type": "Feature", "properties": {"id": "new"},
            "geometry": {"type": "Point", "coordinates": [656000.0, 1033800.0]}}
    for route in ("/obligations", "/control-manholes"):
        body = {"features": {"type": "FeatureCollection", "features": [feat]},
                "crs": "EPSG:2260"}
        r = served["stored"].post(route, json=body)
        assert r.status_code == 503, (route, r.text)
        assert served["live"].post(route, json=body).status_code == 200


def test_a_run_with_maps_serves_them(served):
    maps = served["maps"].get("/maps").json()["maps"]
    assert "index.html" in maps
    assert served["maps"].get("/maps/index.html").status_code == 200
    assert "index.html" not in served["stored"].get("/maps").json()["maps"]
    moved: set[str] = set()
    a = served["maps"].get("/results/obligations").json()
    _compare(a, served["live"].get("/results/obligations").json(), "maps", moved)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_changed_file_or_manifest_is_refused_naming_it(served, tmp_path):
    gp = _copy(served["plain"], tmp_path / "gpkg")
    with open(gp / "gisnet-results.gpkg", "r+b") as fh:  # one byte of the file
        fh.seek(5000)
        b = fh.read(1)
        fh.seek(5000)
        fh.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(ConfigError, match="changed since run") as e:
        TownState.from_results(gp)
    assert "gisnet-results.gpkg" in str(e.value)

    # cut short: its layers cannot be read, and it is said to be changed, not damaged
    cut = _copy(served["plain"], tmp_path / "cut")
    gpkg = cut / "gisnet-results.gpkg"
    os.truncate(gpkg, gpkg.stat().st_size // 2)
    with pytest.raises(ConfigError, match="changed since run") as e:
        TownState.from_results(cut)
    assert "gisnet-results.gpkg" in str(e.value)

    bad = _copy(served["plain"], tmp_path / "manifest")
    (bad / "gisnet-manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot be read") as e:
        TownState.from_results(bad)
    assert "gisnet-manifest.json" in str(e.value)

    old = _copy(served["plain"], tmp_path / "version")
    man = json.loads((old / "gisnet-manifest.json").read_text(encoding="utf-8"))
    man["gisnet_version"] = "0.0.1"
    (old / "gisnet-manifest.json").write_text(json.dumps(man), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"gisnet 0\.0\.1"):
        TownState.from_results(old)

    none = tmp_path / "empty"
    none.mkdir()
    with pytest.raises(ConfigError, match="no run manifest"):
        TownState.from_results(none)

    # the command: exit 2, the file named, no traceback
    r = subprocess.run([sys.executable, "-m", "gisnet", "serve", "--results", str(gp),
                        "--port", "0"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.returncode == 2, r.stderr
    assert "gisnet-results.gpkg" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "gisnet", "serve", "--results", str(gp),
                        "--sample"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--sample" in r.stderr and "Traceback" not in r.stderr


def test_a_results_file_gdal_cannot_open_is_named(tmp_path):
    from gisnet.service.stored import LayerReader

    junk = tmp_path / "gisnet-results.gpkg"
    junk.write_bytes(b"not a GeoPackage" * 64)
    with pytest.raises(ConfigError, match="cannot be read") as e:
        LayerReader(junk)
    assert "gisnet-results.gpkg" in str(e.value)


def test_layers_are_read_in_their_served_order_whichever_is_read_first(served):
    from gisnet.service.stored import READ_FIRST, SERVED_LAYERS, LayerReader

    gpkg = served["plain"] / "gisnet-results.gpkg"
    reader = LayerReader(gpkg)
    assert reader.get("no_such_layer") is None
    first = reader.get(READ_FIRST[0])
    layers = reader.all()
    assert list(layers) == [n for n in SERVED_LAYERS if n in layers]
    assert layers[READ_FIRST[0]] is first
    assert {"graph_nodes", "graph_edges", "obligations", "control_paths"} <= set(layers)


def test_the_caller_reads_the_layers_the_thread_has_not_begun(served, monkeypatch):
    """While the reading thread is busy, the caller reads the layers queued behind
    it (from the end of the queue) instead of waiting; each layer is read once and
    is the same frame whoever read it."""
    import threading

    import pyogrio

    from gisnet.service.stored import LayerReader, _restore

    gpkg = served["plain"] / "gisnet-results.gpkg"
    read = LayerReader._read
    by: dict[str, list[str]] = {}
    begun, go = threading.Event(), threading.Event()
    order: list[str] = []

    def held(self, name):
        by.setdefault(name, []).append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            begun.set()
            assert go.wait(60)
        elif name == order[1]:  # the caller has taken all the rest: let the thread go on
            go.set()
        return read(self, name)

    monkeypatch.setattr(LayerReader, "_read", held)
    reader = LayerReader(gpkg)
    order.extend(reader.order)
    assert begun.wait(60)  # the thread is on the first layer, held
    layers = reader.all()
    assert {n: len(who) for n, who in by.items()} == dict.fromkeys(order, 1)
    assert by[order[0]][0].startswith("gisnet-read")
    assert all(by[n] == ["MainThread"] for n in order[1:])
    for name in ("obligations", "control_paths", order[0]):
        want = _restore(name, pyogrio.read_dataframe(gpkg, layer=name, use_arrow=True))
        got = layers[name]
        got = got.whole() if isinstance(got, LayerLater) else got
        assert got.equals(want), name


def test_layers_read_with_their_shapes_later_are_pyogrios_frames(served):
    """The layers whose shapes are held as WKB (SHAPES_LATER): made whole, each is the
    frame pyogrio reads (columns in order, dtypes, values, CRS); a table of one answers
    its rows with shapes made of those rows only, and the same bytes as the table made
    whole; the shapes are made whole only when asked for."""
    import pyogrio

    from gisnet.serialize import WGS84
    from gisnet.service.stored import SHAPES_LATER, LayerReader, _restore
    from gisnet.service.tables import ResultTable

    gpkg = served["plain"] / "gisnet-results.gpkg"
    layers = LayerReader(gpkg).all()
    for name in SHAPES_LATER:
        later = layers[name]
        assert isinstance(later, LayerLater) and "geometry" not in later.frame
        want = _restore(name, pyogrio.read_dataframe(gpkg, layer=name, use_arrow=True))
        whole = later.whole()
        assert list(whole.columns) == list(want.columns) and whole.crs == want.crs
        assert whole.equals(want), name
        table = ResultTable(name, later, ("parcel_id",), eager=False)
        made = ResultTable(name, want, ("parcel_id",), eager=False)
        assert table._gdf is None and len(table) == len(want)
        pos = [len(want) - 1, 0, len(want) // 2]
        assert table.rows(pos).equals(made.gdf.iloc[pos])
        assert table.fragments(pos, WGS84) == made.fragments(pos, WGS84)
        assert list(table.lookup("parcel_id", str(want["parcel_id"].dropna().iloc[0]))) \
            == list(made.lookup("parcel_id", str(want["parcel_id"].dropna().iloc[0])))
        assert table._gdf is None  # none of the above made the shapes whole
        assert table.gdf.equals(made.gdf) and table._shapes is None


def test_answers_before_and_after_the_hot_tables_are_packed_are_the_same(served):
    """``serve --results`` answers while it packs its hot tables: each request's rows
    serialized then, the packed rows after, byte for byte."""
    from gisnet.service.tables import SERVED_EAGERLY

    state = TownState.from_results(served["plain"])
    client = TestClient(create_app(state, ServiceLimits()))
    hot = [n for n in SERVED_EAGERLY if n in state.tables]
    assert hot and all(state.tables[n].packing for n in hot)
    pids = _ids(served, "obligations", "parcel_id", 25)
    paths = [p for pid in pids for p in (f"/parcels/{pid}/obligation",
                                         f"/trace/downstream?parcel={pid}")]
    paths += [f"/results/{n}?limit=50&offset=10" for n in hot]
    before = [client.get(p).content for p in paths]
    assert all(state.tables[n]._wgs84 is None for n in hot)  # none packed by a request
    assert state.warm() > 0
    assert all(state.tables[n]._wgs84 is not None for n in hot)
    assert [client.get(p).content for p in paths] == before


@pytest.mark.parametrize("values", [
    ["a", "b", "a", None, "a", "b"],      # repeated: categories
    ["u1", "u2", "u3", None],             # ids: Arrow text
    [None, None, None, None],             # nothing but nulls
])
def test_connection_points_text_is_as_from_python_strings(values):
    """The connection points' text columns made by Arrow from the layer as held are
    what a frame of the same values as Python strings holds (dtype and values)."""
    import geopandas as gpd
    import numpy as np
    import pandas as pd

    from gisnet.service.stored import _as_text
    from gisnet.service.tables import compact_arrow_text

    held = compact_arrow_text(pd.Series(values, dtype="str"))
    want = gpd.GeoDataFrame({"v": np.array(values, dtype=object)})["v"]
    got = pd.DataFrame({"v": _as_text(held)})["v"]
    assert got.dtype == want.dtype
    assert got.astype(object).where(got.notna(), None).tolist() == values


def test_pipes_share_the_graph_edges_shapes_only_where_equal():
    """A pipe whose line is its edge's, vertex for vertex, holds the edge's shape
    object; one that differs in a vertex, has Z, names no edge, or is in another CRS
    keeps its own."""
    import geopandas as gpd
    from shapely.geometry import LineString

    from gisnet.service.stored import share_shapes

    line = [(0.0, 0.0), (100.0, 0.5)]
    edges = gpd.GeoDataFrame(
        {"edge_key": ["a", "b", "c", "d"]},
        geometry=[LineString(line), LineString([(1, 1), (2, 2)]),
                  LineString([(0, 0, 1), (1, 1, 1)]), LineString([(5, 5), (6, 6)])],
        crs="EPSG:2260")
    pipes = gpd.GeoDataFrame(
        {"edge_key": ["b", "a", "c", "x", "d"]},
        geometry=[LineString([(1, 1), (2, 2.000001)]), LineString(line),
                  LineString([(0, 0, 1), (1, 1, 1)]), LineString(line),
                  LineString([(5, 5), (6, 6)])],
        crs="EPSG:2260")
    before = pipes.geometry.to_wkb().tolist()
    assert share_shapes(pipes, edges) == 2
    got = pipes.geometry.values
    assert got[1] is edges.geometry.values[0] and got[4] is edges.geometry.values[3]
    assert all(got[i] is not g for i in (0, 2, 3) for g in edges.geometry.values)
    assert pipes.geometry.to_wkb().tolist() == before  # the same shapes
    other = pipes.to_crs("EPSG:4326")
    assert share_shapes(other, edges) == 0
    twice = gpd.GeoDataFrame({"edge_key": ["a", "a"]}, geometry=[LineString(line)] * 2,
                             crs="EPSG:2260")
    assert share_shapes(pipes.copy(), twice) == 0  # a key given twice: no shape shared
