"""In-process tests of the HTTP service (FastAPI TestClient).

The state is built in code from small result tables with the documented
columns, so these tests check the serving layer on its own: lookups,
reprojection, serialization, limits, errors and map files. Answers of the
analyses themselves over real HTTP are in ``test_service_http.py``.
"""

from __future__ import annotations

import json
import math
import os
import warnings

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from pyproj import Transformer
from shapely.geometry import LineString, Point

from gisnet.serialize import feature_fragments
from gisnet.service import ResultTable, ServiceLimits, TownState, create_app
from gisnet.service.geojson import parse_crs
from gisnet.testing import towns
from gisnet.town import Town

with warnings.catch_warnings():
    # Starlette >= 1.x prefers the httpx2 package and warns when it finds httpx
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

CRS_FT = "EPSG:2260"  # NY East, US survey feet
X0, Y0 = 656_000.0, 1_033_800.0  # Town of Poughkeepsie, NY


def _town() -> Town:
    """Raw rows through the loader's canonical mapping (gisnet.testing.towns.make_town)."""
    y = Y0 - 20
    town = towns.make_town({
        "parcels": [towns.parcel(pid, (X0 + x, Y0, X0 + x + 50, Y0 + 100), address=a)
                    for pid, x, a in (("P1", 0, "1 Main St"), ("P2", 60, "3 Main St"),
                                      ("P/3", 120, "5 Main St"))],
        "mains": [towns.main(mid, [(X0 + x, y), (X0 + x + 100, y)], diameter_in=d)
                  for mid, x, d in (("M1", 0, 8.0), ("M2", 100, 8.0), ("M3", 200, 10.0))],
    }, crs=CRS_FT, name="Testville", profile="poughkeepsie-fourth-ward")
    assert town.report.findings == []  # clean input: the loader finds nothing
    town.report.add("gap_snapped", "info", "gap of 0.6 ft snapped", layer="mains",
                    feature_id="M2")
    town.report.add("adverse_slope", "warning", "M3 rises downstream", layer="mains",
                    feature_id="M3")
    return town


def _graph() -> nx.MultiDiGraph:
    """Manholes MH1 -> MH2 -> MH3 -> WWTP under the mains (gisnet.testing.towns.hand_graph)."""
    nodes = {n: {"x": x, "y": Y0 - 20, "kind": "manhole"}
             for n, x in (("MH1", X0), ("MH2", X0 + 100), ("MH3", X0 + 200), ("WWTP", X0 + 300))}
    edges = [("MH1", "MH2", "M1", {}), ("MH2", "MH3", "M2", {}), ("MH3", "WWTP", "M3", {})]
    return towns.hand_graph(nodes, edges, crs=CRS_FT, outlets=["WWTP"])


def _tables(town: Town) -> dict[str, gpd.GeoDataFrame]:
    p = town.layers["parcels"]
    obligations = gpd.GeoDataFrame(
        {
            "parcel_id": ["P1", "P2", "P2", "P/3"],
            "building_id": ["B1", "B2a", "B2b", None],
            "main_id": ["M1", "M1", "M2", "M2"],
            "distance_ft": [20.0, 20.0, 20.000001, 320.25],
            "within_distance": [True, True, True, False],
            "status": ["required", "required", "connected", "not_required"],
            "deadline_days": [30.0, 30.0, 30.0, np.nan],
            "septic_deadline": pd.to_datetime(["2031-05-01", None, None, None]),
            "section": ["§ 168-22.2G"] * 4,
            "reason": ["Within 300 ft of public sewer main M1."] * 4,
        },
        geometry=[p.geometry[0], p.geometry[1], p.geometry[1], p.geometry[2]],
        crs=CRS_FT,
    )
    taps = [Point(X0 + 25, Y0 - 20), Point(X0 + 85, Y0 - 20), Point(X0 + 145, Y0 - 20),
            Point(X0 + 150, Y0 - 20)]
    control = gpd.GeoDataFrame(
        {
            "building_id": ["B1", "B2a", None, None],
            "parcel_id": ["P1", "P2", "P/3", "P2"],
            "user_id": [None, None, None, "U1"],
            "main_id": ["M1", "M1", "M2", "M2"],
            "tap_distance_ft": [25.0, 85.0, 45.0, 50.0],
            "control_manhole_id": ["MH2", "MH2", "MH3", "MH3"],
            "plant_id": ["WWTP", "WWTP", "WWTP", "WWTP"],
            "path_length_ft": [75.0, 15.0, 55.0, 50.0],
            "plant_path_length_ft": [275.0, 215.0, 155.0, 150.0],
        },
        geometry=taps, crs=CRS_FT,
    )
    paths = gpd.GeoDataFrame(
        control[["building_id", "parcel_id", "user_id", "control_manhole_id",
                 "path_length_ft"]].copy(),
        geometry=[LineString([(X0 + 25, Y0 - 20), (X0 + 100, Y0 - 20)]),
                  LineString([(X0 + 85, Y0 - 20), (X0 + 100, Y0 - 20)]),
                  LineString([(X0 + 145, Y0 - 20), (X0 + 200, Y0 - 20)]),
                  LineString([(X0 + 150, Y0 - 20), (X0 + 200, Y0 - 20)])],
        crs=CRS_FT,
    )
    pipes = gpd.GeoDataFrame(
        {"main_id": ["M1", "M2", "M3"], "diameter_in": [8.0, 8.0, 10.0],
         "capacity_gpd": [494_000.0, 494_000.0, np.nan],
         "peak_flow_gpd": [247_000.0, 420_000.0, 500_000.0],
         "utilization": [0.5, 0.8502, np.nan], "over_threshold": [False, True, False]},
        geometry=town.layers["mains"].geometry.to_numpy(), crs=CRS_FT,
    )
    plants = gpd.GeoDataFrame(
        {"plant_id": ["WWTP"], "design_flow_mgd": [2.0], "avg_flow_mgd": [1.5],
         "ratio": [0.75], "over_threshold": [False]},
        geometry=[Point(X0 + 300, Y0 - 20)], crs=CRS_FT,
    )
    return {"obligations": obligations, "control_manholes": control, "control_paths": paths,
            "pipes_capacity": pipes, "plants": plants}


KEYS = {"obligations": ("parcel_id", "building_id"),
        "control_manholes": ("parcel_id", "building_id", "user_id"),
        "control_paths": ("parcel_id", "building_id", "user_id"),
        "pipes_capacity": ("main_id",), "plants": ("plant_id",)}


def _state(tmp_path=None, *, unavailable=None) -> TownState:
    town = _town()
    tabs = {name: ResultTable(name, gdf, KEYS[name]) for name, gdf in _tables(town).items()}
    tabs["parcels"] = ResultTable("parcels", town.layers["parcels"], ("parcel_id",))
    st = TownState(town=town, G=_graph(), tables=tabs, out_dir=tmp_path)
    if unavailable:
        for name in unavailable:
            st.tables.pop(name, None)
        st.unavailable["capacity"] = "town has no plants layer"
    return st


@pytest.fixture
def client(tmp_path) -> TestClient:
    maps = tmp_path / "maps"
    maps.mkdir()
    (maps / "obligations.html").write_text("<html>obligations map</html>")
    (maps / "notes.txt").write_text("not a map")
    (tmp_path / "secret.html").write_text("outside the map folder")
    app = create_app(_state(maps), ServiceLimits(max_body_bytes=4096, max_batch=5))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def _to_lonlat(x: float, y: float) -> tuple[float, float]:
    return Transformer.from_crs(CRS_FT, 4326, always_xy=True).transform(x, y)


# ---------------------------------------------------------------------------
# town
# ---------------------------------------------------------------------------


def test_health_names_the_town(client):
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json()["status"] == "ok" and r.json()["town"] == "Testville"


def test_town_summary_counts_layers_results_and_findings(client):
    info = client.get("/town").json()
    assert info["layers"]["parcels"]["features"] == 3
    assert info["layers"]["mains"]["features"] == 3
    assert info["crs"] == "EPSG:2260"
    assert info["graph"] == {"nodes": 4, "edges": 3, "outlets": 1}
    assert info["results"]["obligations"] == 4
    assert info["quality"]["by_kind"] == {"gap_snapped": 1, "adverse_slope": 1}
    assert info["quality"]["by_severity"] == {"info": 1, "warning": 1}
    assert info["limits"] == {"max_body_bytes": 4096, "max_batch": 5, "max_vertices": 100_000,
                              "max_json_depth": 32, "header_timeout_s": 10.0,
                              "body_timeout_s": 60.0, "keep_alive_s": 5.0,
                              "max_header_bytes": 16384}


def test_openapi_lists_every_endpoint(client):
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/health", "/town", "/parcels/{parcel_id}/obligation", "/obligations",
              "/trace/downstream", "/manholes/{manhole_id}/upstream", "/control-manholes",
              "/pipes", "/plants", "/whatif", "/maps/{name}"):
        assert p in paths, p
    assert client.get("/docs").status_code == 200


def test_labels_are_the_one_vocabulary(client):
    from gisnet.labels import EMPTY, STATUS_LABELS

    body = client.get("/labels").json()
    assert body["values"]["status"] == STATUS_LABELS
    assert body["values"]["status"]["required"] == "Must connect"
    assert body["columns"]["distance_limit_ft"] == "Connection distance (ft)"
    assert body["empty"] == EMPTY
    assert "/labels" in client.get("/openapi.json").json()["paths"]


def test_docs_pages_load_nothing_from_another_host(client):
    import re

    from gisnet.service.docs import ASSETS, ASSETS_PATH

    assert client.get("/redoc").status_code == 404
    for page in ("/docs",):
        r = client.get(page)
        assert r.status_code == 200, page
        urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", r.text)
        urls += re.findall(r"""url:\s*'([^']+)'""", r.text)
        assert urls, page
        assert not [u for u in urls if "//" in u], (page, urls)  # no http(s):// host
        assert "fonts.googleapis" not in r.text
    for name in ASSETS:
        r = client.get(f"{ASSETS_PATH}/{name}")
        assert r.status_code == 200 and len(r.content) > 500, name
    assert "SwaggerUIBundle" in client.get(f"{ASSETS_PATH}/swagger-ui-bundle.js").text
    assert client.get(f"{ASSETS_PATH}/../app.py").status_code == 404
    assert client.get(f"{ASSETS_PATH}/LICENSE").status_code == 404
    assert "/docs" not in client.get("/openapi.json").json()["paths"]


# ---------------------------------------------------------------------------
# single lookups and reprojection
# ---------------------------------------------------------------------------


def test_parcel_obligation_in_wgs84_matches_pyproj(client):
    r = client.get("/parcels/P1/obligation")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/geo+json")
    fc = r.json()
    assert fc["type"] == "FeatureCollection" and "crs" not in fc
    (f,) = fc["features"]
    assert f["properties"]["distance_ft"] == 20.0
    assert f["properties"]["status"] == "required"
    assert f["properties"]["section"] == "§ 168-22.2G"
    assert f["properties"]["septic_deadline"].startswith("2031-05-01")
    ring = f["geometry"]["coordinates"][0]
    # the box's corners, transformed independently with pyproj
    expected = {tuple(round(c, 9) for c in _to_lonlat(x, y))
                for x, y in ((X0, Y0), (X0 + 50, Y0), (X0 + 50, Y0 + 100), (X0, Y0 + 100))}
    assert {tuple(round(c, 9) for c in pt) for pt in ring} == expected


def test_parcel_obligation_in_requested_crs_keeps_working_coordinates(client):
    fc = client.get("/parcels/P1/obligation", params={"crs": "EPSG:2260"}).json()
    assert fc["crs"]["properties"]["name"] == "EPSG:2260"
    xs = sorted({pt[0] for pt in fc["features"][0]["geometry"]["coordinates"][0]})
    assert xs == [X0, X0 + 50]


def test_parcel_with_two_buildings_gives_both_rows_and_nan_is_null(client):
    fc = client.get("/parcels/P2/obligation").json()
    assert [f["properties"]["building_id"] for f in fc["features"]] == ["B2a", "B2b"]
    fc3 = client.get("/parcels/P/3/obligation").json()  # ids may hold a slash
    assert fc3["features"][0]["properties"]["deadline_days"] is None
    assert fc3["features"][0]["properties"]["building_id"] is None


def test_unknown_parcel_is_404_naming_it(client):
    r = client.get("/parcels/NOPE/obligation")
    assert r.status_code == 404
    assert "NOPE" in r.json()["detail"] and "not found" in r.json()["detail"]


def test_bad_crs_is_422_naming_the_field(client):
    r = client.get("/parcels/P1/obligation", params={"crs": "EPSG:999999"})
    assert r.status_code == 422
    assert r.json()["field"] == "crs"
    assert "EPSG:999999" in r.json()["detail"]


# ---------------------------------------------------------------------------
# batches and limits
# ---------------------------------------------------------------------------


def test_batch_obligations_in_request_order_with_not_found(client):
    r = client.post("/obligations", json={"parcel_ids": ["P/3", "X9", "P1"]})
    assert r.status_code == 200
    fc = r.json()
    assert [f["properties"]["parcel_id"] for f in fc["features"]] == ["P/3", "P1"]
    assert fc["not_found"] == ["X9"]


def test_numeric_ids_are_accepted_as_text(client):
    r = client.post("/obligations", json={"parcel_ids": [1]})
    assert r.status_code == 200 and r.json()["not_found"] == ["1"]


def test_batch_over_the_count_limit_is_413_naming_the_limit(client):
    r = client.post("/obligations", json={"parcel_ids": ["P1"] * 6})
    assert r.status_code == 413
    body = r.json()
    assert body["limit"] == 5 and body["field"] == "parcel_ids"
    assert "limit of 5" in body["detail"] and "max_batch" in body["detail"]


def test_body_over_the_size_limit_is_413(client):
    ids = [f"P{i:06d}" for i in range(1000)]  # ~11 kB > 4096 bytes
    r = client.post("/obligations", json={"parcel_ids": ids})
    assert r.status_code == 413
    assert "4096 bytes" in r.json()["detail"] and "max_body_bytes" in r.json()["detail"]


def test_streamed_body_over_the_size_limit_is_413(client):
    def chunks():
        yield b'{"parcel_ids": ['
        for _ in range(600):
            yield b'"P000001",'
        yield b'"P1"]}'

    r = client.post("/obligations", content=chunks(),
                    headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert "max_body_bytes" in r.json()["detail"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ('{"parcel_ids": ["P1"', "body", "malformed JSON"),
        ('{"parcel_ids": "P1"}', "parcel_ids", "valid list"),
        ('{"parcel_ids": [["P1"]]}', "parcel_ids[0]", ""),
        ('{"parcelids": ["P1"]}', "parcelids", "unknown field"),
        ("{}", "parcel_ids", "either"),
        ('{"parcel_ids": ["P1"], "features": []}', "parcel_ids", "either"),
        ('{"features": {"type": "Point", "coordinates": [1]}}', "features", "coordinates"),
    ],
)
def test_malformed_obligations_body_is_422_naming_the_field(client, body, field, words):
    r = client.post("/obligations", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert words in r.json()["detail"]


def test_geojson_features_over_the_count_limit_is_413(client):
    fc = {"type": "FeatureCollection",
          "features": [{"type": "Feature", "properties": {},
                        "geometry": {"type": "Point", "coordinates": [-73.9, 41.67]}}] * 6}
    r = client.post("/obligations", json={"features": fc})
    assert r.status_code == 413 and r.json()["field"] == "features"


def test_geojson_with_out_of_range_latitude_is_422(client):
    geom = {"type": "Point", "coordinates": [-73.9, 141.67]}
    r = client.post("/control-manholes", json={"features": [geom]})
    assert r.status_code == 422
    assert r.json()["field"] == "features" and "out of range" in r.json()["detail"]


def test_geojson_feature_without_geometry_names_the_element(client):
    fc = {"type": "FeatureCollection",
          "features": [{"type": "Feature", "properties": {},
                        "geometry": {"type": "Point", "coordinates": [-73.9, 41.67]}},
                       {"type": "Feature", "properties": {}, "geometry": None}]}
    r = client.post("/control-manholes", json={"features": fc})
    assert r.status_code == 422
    assert r.json()["field"] == "features.features[1].geometry"


# ---------------------------------------------------------------------------
# tracing from the tables
# ---------------------------------------------------------------------------


def test_parcel_trace_from_tables(client):
    r = client.get("/trace/downstream", params={"parcel": "P2"})
    assert r.status_code == 200
    t = r.json()
    assert t["control_manhole_id"] == "MH2" and t["plant_id"] == "WWTP"
    assert t["control_length_ft"] == 15.0 and t["length_ft"] == 215.0
    assert t["reaches_outlet"] is True
    # the user on the parcel is not one of the parcel's building connections
    assert [f["properties"]["building_id"] for f in t["connection"]["features"]] == ["B2a"]
    assert t["path"]["features"][0]["geometry"]["type"] == "LineString"


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({}, 422, "parcel"),
        ({"x": "-73.9"}, 422, "y"),
        ({"y": "41.6"}, 422, "x"),
        ({"x": "abc", "y": "41.6"}, 422, "x"),
        ({"parcel": "P1", "x": "1", "y": "2"}, 422, "parcel"),
        ({"x": "-73.9", "y": "41.6", "point_crs": "nonsense"}, 422, "point_crs"),
        ({"x": "inf", "y": "41.6"}, 422, "x"),
        ({"parcle": "P1"}, 422, "parcle"),
    ],
)
def test_malformed_trace_is_422(client, params, status, field):
    r = client.get("/trace/downstream", params=params)
    assert r.status_code == status, r.text
    assert r.json()["field"] == field


def test_unknown_parcel_trace_is_404(client):
    r = client.get("/trace/downstream", params={"parcel": "NOPE"})
    assert r.status_code == 404 and "NOPE" in r.json()["detail"]


def test_unknown_manhole_is_404(client):
    r = client.get("/manholes/NOPE/upstream")
    assert r.status_code == 404 and "NOPE" in r.json()["detail"]


def test_control_manholes_batch_by_building_id(client):
    r = client.post("/control-manholes", json={"building_ids": ["B2a", "B1", "ZZ"]})
    assert r.status_code == 200
    fc = r.json()
    assert [f["properties"]["control_manhole_id"] for f in fc["features"]] == ["MH2", "MH2"]
    assert fc["not_found"] == ["ZZ"]
    r = client.post("/control-manholes", json={"building_ids": ["B1"], "parcel_ids": ["P1"]})
    assert r.status_code == 422 and r.json()["field"] == "parcel_ids"


# ---------------------------------------------------------------------------
# capacity
# ---------------------------------------------------------------------------


def test_pipes_filtered_by_utilization_excludes_unknown(client):
    fc = client.get("/pipes", params={"min_utilization": 0.8}).json()
    assert [f["properties"]["main_id"] for f in fc["features"]] == ["M2"]
    allp = client.get("/pipes").json()
    assert len(allp["features"]) == 3
    assert allp["features"][2]["properties"]["utilization"] is None


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
def test_bad_min_utilization_is_422(client, value):
    r = client.get("/pipes", params={"min_utilization": value})
    assert r.status_code == 422
    assert r.json()["field"] == "min_utilization"


def test_unknown_main_is_404(client):
    assert client.get("/pipes", params={"main_id": "M9"}).status_code == 404
    assert client.get("/pipes", params={"main_id": "M3"}).json()["features"][0][
        "properties"]["main_id"] == "M3"


def test_plants(client):
    (f,) = client.get("/plants").json()["features"]
    assert f["properties"]["ratio"] == 0.75
    lon, lat = _to_lonlat(X0 + 300, Y0 - 20)
    assert math.isclose(f["geometry"]["coordinates"][0], lon, abs_tol=1e-9)
    assert math.isclose(f["geometry"]["coordinates"][1], lat, abs_tol=1e-9)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"parcel_id": "P1"}, "flow_gpd"),
        ({"parcel_id": "P1", "flow_gpd": -5}, "flow_gpd"),
        ({"parcel_id": "P1", "flow_gpd": "lots"}, "flow_gpd"),
        ({"flow_gpd": 1000}, "parcel_id"),
        ({"parcel_id": "P1", "point": [1, 2], "flow_gpd": 1000}, "parcel_id"),
        ({"parcel_id": "P1", "flow_gpd": 1000, "industrial": "perhaps"}, "industrial"),
        ({"point": [1, 2, 3], "flow_gpd": 1000}, "point"),
    ],
)
def test_malformed_whatif_is_422(client, body, field):
    r = client.post("/whatif", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


def test_whatif_unknown_parcel_is_404(client):
    r = client.post("/whatif", json={"parcel_id": "NOPE", "flow_gpd": 1000})
    assert r.status_code == 404


def test_missing_analysis_is_503_with_the_reason(tmp_path):
    app = create_app(_state(unavailable=("pipes_capacity", "plants")))
    with TestClient(app) as c:
        r = c.get("/pipes")
        assert r.status_code == 503
        assert "no plants layer" in r.json()["detail"]
        assert c.get("/town").json()["unavailable"] == {"capacity": "town has no plants layer"}


# ---------------------------------------------------------------------------
# maps
# ---------------------------------------------------------------------------


def test_map_served_with_and_without_suffix(client):
    for name in ("obligations.html", "obligations"):
        r = client.get(f"/maps/{name}")
        assert r.status_code == 200 and r.text == "<html>obligations map</html>"
        assert r.headers["content-type"].startswith("text/html")
    assert client.get("/maps").json() == {"maps": ["obligations.html"]}


@pytest.mark.parametrize(
    "path",
    ["/maps/secret.html", "/maps/..%2Fsecret.html", "/maps/%2e%2e%2fsecret.html",
     "/maps/notes.txt", "/maps/missing", "/maps/.hidden", "/maps/..", "/maps/%2Fetc%2Fpasswd"],
)
def test_map_path_traversal_is_refused(client, path):
    r = client.get(path)
    if path == "/maps/..":  # the client resolves it to "/": the OGC API landing page
        assert r.status_code == 200 and "conformance" in r.text and "<html" not in r.text
        return
    assert r.status_code == 404
    assert "outside the map folder" not in r.text


# ---------------------------------------------------------------------------
# serialization
# ---------------------------------------------------------------------------


def test_feature_fragments_equal_a_row_by_row_encoding():
    gdf = gpd.GeoDataFrame(
        {"a": [1.5, np.nan, np.inf], "s": ["x\ny", None, "é"], "b": [True, False, True],
         "d": pd.to_datetime(["2020-01-01", None, "2021-02-03"])},
        geometry=[Point(1, 2), None, LineString([(0, 0), (1, 1)])], crs=CRS_FT,
    )
    frags = [json.loads(f) for f in feature_fragments(gdf)]
    expected = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1.0, 2.0]},
         "properties": {"a": 1.5, "s": "x\ny", "b": True, "d": "2020-01-01T00:00:00.000"}},
        {"type": "Feature", "geometry": None,
         "properties": {"a": None, "s": None, "b": False, "d": None}},
        {"type": "Feature",
         "geometry": {"type": "LineString", "coordinates": [[0.0, 0.0], [1.0, 1.0]]},
         "properties": {"a": None, "s": "é", "b": True, "d": "2021-02-03T00:00:00.000"}},
    ]
    assert frags == expected


def test_parse_crs_accepts_codes_and_names():
    assert parse_crs(None).to_epsg() == 4326
    assert parse_crs("2260").to_epsg() == 2260
    assert parse_crs("epsg:2260").to_epsg() == 2260


def test_parcel_ids_listed_in_layer_order(client):
    assert client.get("/parcels").json() == {"count": 3, "parcel_ids": ["P1", "P2", "P/3"]}


def test_serve_command_reports_a_bad_town_without_traceback(tmp_path, capsys):
    from gisnet.cli import main

    assert main(["serve", "--layers", str(tmp_path / "nowhere"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gisnet: error:") and "nowhere" in err
    assert "Traceback" not in err


def test_serve_command_refuses_a_bad_port(tmp_path, capsys):
    from gisnet.cli import main

    assert main(["serve", "--layers", str(tmp_path), "--port", "70000"]) == 2
    assert "--port 70000" in capsys.readouterr().err


@pytest.mark.parametrize("what", [["--sample"], ["--maps", "MAPS"]])
def test_serve_command_says_a_port_in_use_before_loading(tmp_path, capsys, monkeypatch, what):
    """The address is taken before the town is loaded: a port in use is a clear error
    at once (exit 2, no traceback), not after a county's load."""
    import socket

    import gisnet.cli.serve as serve_cli
    from gisnet.cli import main

    (tmp_path / "index.html").write_text("<html></html>")
    args = [str(tmp_path) if a == "MAPS" else a for a in what]
    monkeypatch.setattr(serve_cli, "load_town", lambda *_: pytest.fail("the town was loaded"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        rc = main(["serve", *args, "--host", "127.0.0.1", "--port", str(port)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "give another --port" in err
    assert "Traceback" not in err


def test_serve_command_listens_while_the_town_loads(tmp_path):
    """A client that connects while the town is being loaded is not refused: it waits
    and is answered once the server runs (the `serving` line comes after)."""
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    from servers import free_port

    port = free_port()
    log = tmp_path / "serve.log"
    root = Path(__file__).resolve().parents[1]
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gisnet", "serve", "--sample",
                                 "--host", "127.0.0.1", "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(root)})
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    said = log.read_text()
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    s.settimeout(120)
                    answer = b""
                    while chunk := s.recv(65536):
                        answer += chunk
                    break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        assert "gisnet: serving" not in said  # connected while the town was loading
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert "gisnet: serving Spackenkill" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(30)


def test_results_lists_layers_and_filters_by_id(client):
    layers = client.get("/results").json()["layers"]
    assert layers["control_manholes"]["features"] == 4
    assert "parcels" not in layers
    fc = client.get("/results/control_manholes", params={"building_id": "B2a"}).json()
    assert [f["properties"]["control_manhole_id"] for f in fc["features"]] == ["MH2"]
    assert len(client.get("/results/pipes_capacity").json()["features"]) == 3


@pytest.mark.parametrize(
    ("path", "params", "status", "field"),
    [
        ("/results/nope", {}, 404, None),
        ("/results/parcels", {}, 404, None),
        ("/results/pipes_capacity", {"bogus": "1"}, 422, "bogus"),
        ("/results/control_manholes", {"building_id": "B1", "parcel_id": "P9"}, 404,
         "parcel_id"),  # several id columns: the rows having all of them (no parcel P9)
        ("/results/control_manholes", {"building_id": "B9"}, 404, None),
    ],
)
def test_bad_result_layer_requests(client, path, params, status, field):
    r = client.get(path, params=params)
    assert r.status_code == status, r.text
    if field:
        assert r.json()["field"] == field


def _synthetic_town(n: int = 200) -> Town:
    from gisnet.testing.synthetic import make_town

    return towns.make_town(make_town(n, seed=1), crs=CRS_FT, name="synthetic",
                           profile="poughkeepsie-fourth-ward")


def test_state_from_a_town_serves_the_library_tables():
    from gisnet.obligations import compute_obligations

    town = _synthetic_town()
    st = TownState.from_town(town)
    # Poughkeepsie: no frontage charge; no plant-flow analyses for § 168-22.5D
    assert list(st.unavailable) == ["frontage", "plant_increase"]
    want = compute_obligations(town)["obligations"]
    pid = str(want["parcel_id"].iloc[17])
    with TestClient(create_app(st)) as c:
        (f,) = c.get(f"/parcels/{pid}/obligation", params={"crs": CRS_FT}).json()["features"]
    row = want.iloc[17]
    assert f["properties"]["main_id"] == row["main_id"]
    assert math.isclose(f["properties"]["distance_ft"], row["distance_ft"], rel_tol=1e-12)
    assert f["properties"]["status"] == row["status"]


def test_state_serves_what_succeeded_and_reports_what_failed(monkeypatch):
    import gisnet.pipeline
    from gisnet.errors import TopologyError

    def fail(*args, **kwargs):
        raise TopologyError("no outlet reachable", layer="mains")

    monkeypatch.setattr(gisnet.pipeline, "compute_capacity", fail)
    st = TownState.from_town(_synthetic_town())
    assert {k: v for k, v in st.unavailable.items() if k != "frontage"} == \
        {"capacity": "layer 'mains': no outlet reachable"}
    pid = str(st.town.layers["parcels"]["parcel_id"].iloc[0])
    with TestClient(create_app(st)) as c:
        assert c.get(f"/parcels/{pid}/obligation").status_code == 200
        assert c.get("/trace/downstream", params={"parcel": pid}).status_code == 200
        r = c.get("/plants")
        assert r.status_code == 503 and "no outlet reachable" in r.json()["detail"]
        r = c.post("/whatif", json={"parcel_id": pid, "flow_gpd": 100})
        assert r.status_code == 503


def test_cors_only_for_configured_origins():
    origin = "https://maps.example.gov"
    with TestClient(create_app(_state(), ServiceLimits(cors_origins=(origin,)))) as c:
        r = c.get("/health", headers={"Origin": origin})
        assert r.headers["access-control-allow-origin"] == origin
        r = c.get("/health", headers={"Origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in r.headers
        pre = c.options("/obligations", headers={"Origin": origin,
                                                 "Access-Control-Request-Method": "POST"})
        assert pre.status_code == 200
    with TestClient(create_app(_state())) as c:
        r = c.get("/health", headers={"Origin": origin})
        assert "access-control-allow-origin" not in r.headers


def test_whatif_preliminary_treatment_and_cooling_water_equal_the_cli(sample_dir, capsys):
    """§ 168-22.5G(4)(d): "Plans, specifications and any other pertinent information related
    to the proposed preliminary treatment facilities shall be submitted for approval of the
    Superintendent and the New York State Department of Environmental Conservation."
    § 168-22.2E: "The discharge of industrial cooling water to the area's sewer system is
    not permitted except by specific approval of the Town Board."

    POST /whatif takes the two flags the command line has, and answers as it does."""
    from gisnet.cli import main
    from gisnet.io import load_town
    from gisnet.profile import ordinance_text

    text = " ".join(ordinance_text("poughkeepsie-fourth-ward").split())
    for words in ("Plans, specifications and any other pertinent information related to the "
                  "proposed preliminary treatment facilities shall be submitted for approval "
                  "of the Superintendent and the New York State Department of Environmental "
                  "Conservation.",
                  "The discharge of industrial cooling water to the area's sewer system is "
                  "not permitted except by specific approval of the Town Board."):
        assert words in text
    st = TownState.from_town(load_town(sample_dir))
    pid = str(st.town.layers["parcels"]["parcel_id"].iloc[0])
    body = {"parcel_id": pid, "flow_gpd": 12_000}
    with TestClient(create_app(st)) as c:
        plain = c.post("/whatif", json=body)
        both = c.post("/whatif", json={**body, "preliminary_treatment": True,
                                       "cooling_water": True})
        cool = c.post("/whatif", json={**body, "cooling_water": True})
        bad = c.post("/whatif", json={**body, "cooling_water": "yes"})
    assert plain.status_code == both.status_code == cool.status_code == 200, both.text
    assert bad.status_code == 422 and bad.json()["field"] == "cooling_water"
    ids = [a["id"] for a in plain.json()["approvals"]]
    assert ids == ["superintendent_review_10000_gpd"]  # 12,000 gpd > 10,000 gpd
    got = both.json()
    assert [a["id"] for a in got["approvals"]] == [
        "superintendent_review_10000_gpd", "pretreatment_plans_nysdec",
        "cooling_water_town_board"]
    nysdec, board = got["approvals"][1:]
    assert (nysdec["section"], nysdec["reason"]) == ("§ 168-22.5G(4)(d)",
                                                      "preliminary treatment is required")
    assert (board["authority"], board["section"]) == ("Town Board", "§ 168-22.2E")
    assert [a["id"] for a in cool.json()["approvals"]] == [
        "superintendent_review_10000_gpd", "cooling_water_town_board"]
    # without the flag, the answer notes the NYSDEC review as conditional; with it, not
    assert any("if preliminary treatment is required" in n for n in plain.json()["notes"])
    assert not any("if preliminary treatment is required" in n for n in got["notes"])
    capsys.readouterr()
    assert main(["whatif", "--layers", str(sample_dir), "--parcel", pid, "--flow-gpd",
                 "12000", "--preliminary-treatment", "--cooling-water", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for k in ("flow_gpd", "industrial", "control_manhole", "crossings", "plant_crossings",
              "approvals", "threshold", "notes"):
        assert got[k] == cli[k], k
