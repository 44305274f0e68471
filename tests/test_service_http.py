"""The HTTP service over real HTTP: ``gisnet serve`` in a subprocess on
127.0.0.1, against the bundled sample town, compared with the library and the
command line answering the same questions."""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.slow

MAX_BATCH = 100
MAX_BODY_MB = 0.25


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def maps_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("serve")
    out = root / "maps"
    out.mkdir()
    (out / "index.html").write_text("<!doctype html><title>gisnet maps</title>")
    (root / "secret.html").write_text("outside the map folder")
    return out


@pytest.fixture(scope="module")
def town_dir(request) -> Path:
    """The sample town, or the town folder named by GISNET_SERVICE_TEST_LAYERS."""
    other = os.environ.get("GISNET_SERVICE_TEST_LAYERS")
    if other:
        return Path(other)
    return request.getfixturevalue("sample_dir")


@pytest.fixture(scope="module")
def server(town_dir, maps_dir):
    port = _free_port()
    cmd = [sys.executable, "-m", "gisnet", "serve", "--layers", str(town_dir),
           "--out", str(maps_dir), "--host", "127.0.0.1", "--port", str(port),
           "--max-batch", str(MAX_BATCH), "--max-body-mb", str(MAX_BODY_MB), "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"gisnet serve exited {proc.returncode}: {proc.stderr.read()}")
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("gisnet serve did not answer /health within 300 s")
            time.sleep(0.3)
        with httpx.Client(base_url=base, timeout=60) as client:
            client.port = port  # type: ignore[attr-defined]
            yield client
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture(scope="module")
def lib(town_dir):
    """The same questions answered by the library in this process."""
    from gisnet.capacity import compute_capacity
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town
    from gisnet.obligations import compute_obligations
    from gisnet.tracing import DownstreamIndex, connection_points, control_manholes

    town = load_town(town_dir)
    G = build_sewer_graph(town)
    idx = DownstreamIndex(G)
    pts = connection_points(town, G, index=idx)
    out = {"town": town, "G": G, "index": idx, "points": pts}
    out.update(compute_obligations(town))
    out.update(control_manholes(town, G, points=pts, index=idx))
    out["capacity"] = compute_capacity(town, G, points=pts)
    return out


def _cli(layers: Path, *args: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "gisnet", *args, "--layers", str(layers),
                        "--json", "-q"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _same(a, b, *, rel=1e-9) -> bool:
    """A JSON value equals a library value (NaN/None/NaT alike, floats close)."""
    if b is None or (not isinstance(b, (str, bytes, list, dict)) and pd.isna(b)):
        return a is None
    if isinstance(b, (pd.Timestamp, np.datetime64)):
        return a is not None and pd.Timestamp(a) == pd.Timestamp(b)
    if isinstance(b, (bool, np.bool_)):
        return a is bool(b)
    if isinstance(b, (int, float, np.integer, np.floating)):
        return a is not None and math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9)
    return a == b


def _assert_rows_equal(features: list[dict], gdf: gpd.GeoDataFrame) -> None:
    assert len(features) == len(gdf)
    want = gdf.to_crs(4326)
    for f, (_, row) in zip(features, want.iterrows(), strict=True):
        props = f["properties"]
        assert set(props) == set(c for c in gdf.columns if c != gdf.geometry.name)
        for col, v in props.items():
            assert _same(v, row[col]), (col, v, row[col])
        got = shapely.geometry.shape(f["geometry"]) if f["geometry"] else None
        if row.geometry is None or row.geometry.is_empty:
            assert got is None or got.is_empty
        else:
            assert got.equals_exact(row.geometry, 1e-9), (got.wkt[:80], row.geometry.wkt[:80])


def _sample_ids(df: pd.DataFrame, col: str, n: int) -> list[str]:
    ids = df[col].dropna().astype(str).drop_duplicates().to_numpy()
    step = max(1, len(ids) // n)
    return [str(i) for i in ids[::step][:n]]


# ---------------------------------------------------------------------------
# town
# ---------------------------------------------------------------------------


def test_health_and_town_over_http(server, lib):
    assert server.get("/health").json()["status"] == "ok"
    info = server.get("/town").json()
    town, G = lib["town"], lib["G"]
    assert info["name"] == town.name
    assert info["profile"]["id"] == town.profile.id
    assert {k: v["features"] for k, v in info["layers"].items()} == \
        {k: len(v) for k, v in town.layers.items()}
    assert info["graph"]["nodes"] == G.number_of_nodes()
    assert info["graph"]["edges"] == G.number_of_edges()
    assert info["unavailable"] == {}
    assert info["results"]["obligations"] == len(lib["obligations"])
    assert info["quality"]["findings"] >= len(G.graph["report"])
    assert server.get("/openapi.json").json()["info"]["title"] == "gisnet"


# ---------------------------------------------------------------------------
# obligations
# ---------------------------------------------------------------------------


def test_parcel_obligations_equal_the_library(server, lib):
    ob = lib["obligations"]
    for pid in _sample_ids(ob, "parcel_id", 25):
        r = server.get(f"/parcels/{pid}/obligation")
        assert r.status_code == 200, r.text
        _assert_rows_equal(r.json()["features"], ob[ob["parcel_id"].astype(str) == pid])


def test_parcel_obligation_in_the_working_crs(server, lib):
    ob = lib["obligations"]
    pid = _sample_ids(ob, "parcel_id", 1)[0]
    fc = server.get(f"/parcels/{pid}/obligation", params={"crs": "EPSG:2260"}).json()
    want = ob[ob["parcel_id"].astype(str) == pid].geometry.iloc[0]
    got = shapely.geometry.shape(fc["features"][0]["geometry"])
    assert got.equals_exact(want, 1e-6)
    assert fc["crs"]["properties"]["name"] == "EPSG:2260"


def test_batch_obligations_equal_the_library(server, lib):
    ob = lib["obligations"]
    ids = _sample_ids(ob, "parcel_id", MAX_BATCH)
    r = server.post("/obligations", json={"parcel_ids": ids})
    assert r.status_code == 200
    assert r.json()["not_found"] == []
    want = pd.concat([ob[ob["parcel_id"].astype(str) == i] for i in ids])
    _assert_rows_equal(r.json()["features"], want)


def test_obligations_of_geojson_polygons_equal_those_of_the_parcels(server, lib):
    """Parcels sent back as lon/lat GeoJSON polygons are measured as the parcels."""
    ob = lib["obligations"]
    parcels = lib["town"].layers["parcels"]
    ids = _sample_ids(ob, "parcel_id", 20)
    sel = parcels[parcels["parcel_id"].astype(str).isin(ids)].to_crs(4326)
    fc = json.loads(sel[["parcel_id", "geometry"]].to_json())
    for f, pid in zip(fc["features"], sel["parcel_id"], strict=True):
        f["id"] = str(pid)
    r = server.post("/obligations", json={"features": fc, "crs": "EPSG:4326"})
    assert r.status_code == 200, r.text
    got = {f["properties"]["parcel_id"]: f["properties"] for f in r.json()["features"]}
    assert set(got) == set(ids)
    for pid in ids:
        row = ob[ob["parcel_id"].astype(str) == pid].iloc[0]
        # lon/lat round trip moves vertices by far less than 0.01 ft
        assert got[pid]["main_id"] == row["main_id"]
        assert math.isclose(got[pid]["distance_ft"], row["distance_ft"], abs_tol=0.01)


# ---------------------------------------------------------------------------
# tracing
# ---------------------------------------------------------------------------


def test_parcel_trace_equals_the_library_and_the_cli(server, lib, town_dir):
    from gisnet.tracing import trace_downstream

    cm = lib["control_manholes"]
    ids = _sample_ids(cm[cm["user_id"].isna() & cm["control_manhole_id"].notna()],
                      "parcel_id", 15)
    for pid in ids:
        r = server.get("/trace/downstream", params={"parcel": pid})
        assert r.status_code == 200, r.text
        got = r.json()
        want = trace_downstream(lib["town"], lib["G"], parcel_id=pid, index=lib["index"])
        for k in ("control_manhole_id", "plant_id", "control_length_ft", "length_ft",
                  "reaches_outlet"):
            assert _same(got[k], want[k], rel=1e-9), (pid, k, got[k], want[k])
        tap = shapely.geometry.shape(got["connection"]["features"][0]["geometry"])
        want_tap = want["connection"].to_crs(4326).geometry.iloc[0]
        assert tap.distance(want_tap) < 1e-9
    cli = _cli(town_dir, "trace", "--parcel", ids[0])
    got = server.get("/trace/downstream", params={"parcel": ids[0]}).json()
    assert got["control_manhole_id"] == cli["control_manhole_id"]
    assert got["plant_id"] == cli["plant_id"]
    assert math.isclose(got["length_ft"], cli["length_ft"], rel_tol=1e-9)


def test_point_trace_equals_the_library(server, lib):
    from gisnet.tracing import trace_downstream

    b = lib["town"].layers["buildings"].iloc[[3, 40, 400]]
    for geom in b.geometry.centroid.to_crs(4326):
        r = server.get("/trace/downstream", params={"x": geom.x, "y": geom.y,
                                                   "point_crs": "EPSG:4326"})
        assert r.status_code == 200, r.text
        got = r.json()
        want = trace_downstream(lib["town"], lib["G"], point=(geom.x, geom.y),
                                crs="EPSG:4326", index=lib["index"])
        assert got["control_manhole_id"] == want["control_manhole_id"]
        assert got["plant_id"] == want["plant_id"]
        assert [f["properties"]["main_id"] for f in got["path"]["features"]] == \
            want["path"]["main_id"].tolist()
        assert math.isclose(got["length_ft"], want["length_ft"], rel_tol=1e-6)


def test_upstream_equals_the_library_and_the_cli(server, lib, town_dir):
    from gisnet.tracing import trace_upstream

    cm = lib["control_manholes"]
    mh = cm["control_manhole_id"].dropna().value_counts().index[0]  # the busiest
    r = server.get(f"/manholes/{mh}/upstream")
    assert r.status_code == 200, r.text
    got = r.json()
    want = trace_upstream(lib["town"], lib["G"], mh, points=lib["points"])
    for part in ("pipes", "parcels", "buildings", "users"):
        assert len(got[part]["features"]) == len(want[part]), part
    assert [f["properties"]["main_id"] for f in got["pipes"]["features"]] == \
        want["pipes"]["main_id"].tolist()
    assert sorted(f["properties"]["parcel_id"] for f in got["parcels"]["features"]) == \
        sorted(want["parcels"]["parcel_id"].astype(str))
    cli = _cli(town_dir, "trace", "--manhole", str(mh), "--upstream")
    assert [p["main_id"] for p in cli["pipes"]] == \
        [f["properties"]["main_id"] for f in got["pipes"]["features"]]


def test_control_manholes_batch_equals_the_library(server, lib):
    cm = lib["control_manholes"]
    bids = _sample_ids(cm, "building_id", 50)
    r = server.post("/control-manholes", json={"building_ids": bids})
    assert r.status_code == 200
    want = pd.concat([cm[cm["building_id"].astype(str) == b] for b in bids])
    _assert_rows_equal(r.json()["features"], want)


def test_control_manholes_of_points_equal_those_of_the_buildings(server, lib):
    """Building centroids sent as lon/lat points get the buildings' control manholes."""
    cm = lib["control_manholes"]
    proj = cm[(cm["source"] == "projected") & cm["building_id"].notna()]
    bids = _sample_ids(proj, "building_id", 30)
    b = lib["town"].layers["buildings"]
    b = b[b["building_id"].astype(str).isin(bids)]
    pts = b.geometry.centroid.to_crs(4326)
    feats = [{"type": "Feature", "id": str(i), "properties": {},
              "geometry": {"type": "Point", "coordinates": [p.x, p.y]}}
             for i, p in zip(b["building_id"], pts, strict=True)]
    r = server.post("/control-manholes", json={"features": feats})
    assert r.status_code == 200, r.text
    got = {f["properties"]["building_id"]: f["properties"]["control_manhole_id"]
           for f in r.json()["features"]}
    want = dict(zip(proj["building_id"].astype(str), proj["control_manhole_id"], strict=True))
    assert got == {k: want[k] for k in got} and set(got) == set(bids)


# ---------------------------------------------------------------------------
# capacity
# ---------------------------------------------------------------------------


def test_pipes_over_threshold_equal_the_library(server, lib):
    pipes = lib["capacity"].pipes
    r = server.get("/pipes", params={"min_utilization": 0.8})
    assert r.status_code == 200
    want = pipes[pd.to_numeric(pipes["utilization"]) >= 0.8]
    _assert_rows_equal(r.json()["features"], want)
    assert len(server.get("/pipes").json()["features"]) == len(pipes)


def test_plants_equal_the_library(server, lib):
    r = server.get("/plants")
    _assert_rows_equal(r.json()["features"], lib["capacity"].plants)


def test_whatif_equals_the_cli(server, lib, town_dir):
    ob = lib["obligations"]
    pid = _sample_ids(ob[ob["status"] != "not_required"], "parcel_id", 3)[1]
    r = server.post("/whatif", json={"parcel_id": pid, "flow_gpd": 12000})
    assert r.status_code == 200, r.text
    got = r.json()
    cli = _cli(town_dir, "whatif", "--parcel", pid, "--flow-gpd", "12000")
    for k in ("flow_gpd", "industrial", "control_manhole", "crossings", "plant_crossings",
              "approvals", "threshold", "notes"):
        assert got[k] == cli[k], k
    assert [f["properties"]["main_id"] for f in got["pipes"]["features"]] == \
        [p["main_id"] for p in cli["pipes"]]
    for f, p in zip(got["pipes"]["features"], cli["pipes"], strict=True):
        for k, v in p.items():
            if isinstance(v, float):
                assert math.isclose(f["properties"][k], v, rel_tol=1e-9), k
    assert got["connection"]["edge_key"] == cli["connection"]["edge_key"]


def test_industrial_whatif_at_a_point(server, lib):
    b = lib["town"].layers["buildings"].geometry.centroid.to_crs(4326).iloc[10]
    r = server.post("/whatif", json={"point": [b.x, b.y], "crs": "EPSG:4326",
                                     "flow_gpd": 30000, "industrial": True})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["industrial"] is True
    assert got["connection"]["crs"] == "EPSG:4326"
    tap = shapely.Point(got["connection"]["x"], got["connection"]["y"])
    assert tap.distance(b) < 0.01  # degrees: the tap is near the building
    assert any(a["trigger"] in ("industrial", "review_flow_over") for a in got["approvals"])


# ---------------------------------------------------------------------------
# maps, errors, limits, concurrency
# ---------------------------------------------------------------------------


def _raw_get(port: int, path: str) -> tuple[int, bytes]:
    """GET with the path sent exactly as given (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_maps_served_and_traversal_refused(server):
    r = server.get("/maps/index.html")
    assert r.status_code == 200 and "gisnet maps" in r.text
    assert server.get("/maps").json() == {"maps": ["index.html"]}
    for path in ("/maps/../secret.html", "/maps/..%2Fsecret.html", "/maps/%2e%2e/secret.html",
                 "/maps/..%5csecret.html", "/maps/%2Fetc%2Fpasswd", "/maps/secret.html"):
        status, body = _raw_get(server.port, path)
        assert status == 404, path
        assert b"outside the map folder" not in body


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field", "words"),
    [
        ("GET", "/parcels/NO-SUCH-PARCEL/obligation", None, 404, None, "NO-SUCH-PARCEL"),
        ("GET", "/parcels/P1/obligation?crs=EPSG:0", None, 422, "crs", "EPSG:0"),
        ("GET", "/manholes/NO-SUCH-MH/upstream", None, 404, None, "NO-SUCH-MH"),
        ("GET", "/trace/downstream?x=1", None, 422, "y", "both"),
        ("GET", "/trace/downstream?parcel=NO-SUCH-PARCEL", None, 404, None, "NO-SUCH-PARCEL"),
        ("GET", "/pipes?min_utilization=high", None, 422, "min_utilization", "number"),
        ("GET", "/pipes?main_id=NO-SUCH-MAIN", None, 404, None, "NO-SUCH-MAIN"),
        ("POST", "/obligations", b'{"parcel_ids": [', 422, "body", "malformed JSON"),
        ("POST", "/obligations", b'{"parcel_ids": 5}', 422, "parcel_ids", "list"),
        ("POST", "/control-manholes", b'{"features": [{"type": "Point"}]}', 422,
         "features[0]", "coordinates"),
        ("POST", "/whatif", b'{"parcel_id": "x"}', 422, "flow_gpd", "required"),
        ("POST", "/whatif", b'{"parcel_id": "x", "flow_gpd": 0}', 422, "flow_gpd",
         "greater than 0"),
        ("POST", "/whatif", b'{"parcel_id": "NO-SUCH-PARCEL", "flow_gpd": 10}', 404, None,
         "NO-SUCH-PARCEL"),
    ],
)
def test_malformed_requests_over_http(server, method, path, body, status, field, words):
    r = server.request(method, path, content=body,
                       headers={"content-type": "application/json"} if body else None)
    assert r.status_code == status, r.text
    data = r.json()
    assert words in data["detail"], data
    if field:
        assert data["field"] == field
    assert "Traceback" not in r.text


def test_batch_over_the_limit_is_413_naming_it(server):
    r = server.post("/obligations", json={"parcel_ids": [f"P{i}" for i in range(MAX_BATCH + 1)]})
    assert r.status_code == 413
    assert r.json()["limit"] == MAX_BATCH
    assert f"limit of {MAX_BATCH}" in r.json()["detail"]
    r = server.post("/control-manholes", json={"building_ids": ["B"] * (MAX_BATCH + 1)})
    assert r.status_code == 413 and r.json()["field"] == "building_ids"


def test_body_over_the_limit_is_413(server):
    limit = int(MAX_BODY_MB * 1024 * 1024)
    body = json.dumps({"parcel_ids": ["x" * 1000] * (limit // 1000 + 10)}).encode()
    r = server.post("/obligations", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert f"limit of {limit} bytes" in r.json()["detail"]


def test_unknown_route_and_method_are_not_500(server):
    assert server.get("/nowhere").status_code == 404
    assert server.delete("/town").status_code == 405


def test_concurrent_requests_get_the_sequential_answers(server, lib):
    ob = lib["obligations"]
    ids = _sample_ids(ob, "parcel_id", 50)
    expected = {i: server.get(f"/parcels/{i}/obligation").content for i in ids}
    results: dict[str, bytes] = {}
    errors: list[BaseException] = []
    base = str(server.base_url)

    def one(pid: str) -> None:
        try:
            with httpx.Client(base_url=base, timeout=60) as c:
                for path in (f"/parcels/{pid}/obligation", f"/trace/downstream?parcel={pid}"):
                    resp = c.get(path)
                    assert resp.status_code in (200, 404)
                results[pid] = c.get(f"/parcels/{pid}/obligation").content
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert results == expected
