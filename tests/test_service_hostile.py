"""Hostile requests against the HTTP service: each gets the documented status and
a JSON error naming the field (and the limit, where one is exceeded), never a
400 "error parsing the body", a 500 or a traceback.

The corpus is generated here (nothing is committed as files) and sent to a
service over a real town (the synthetic town of ``gisnet.testing.synthetic``,
analysed by the pipeline), in process. Slow clients are tested with real
sockets against a real server on 127.0.0.1 (:func:`gisnet.service.server.make_server`)
with sub-second deadlines. docs/reliability.md lists the categories.
"""

from __future__ import annotations

import contextlib
import json
import math
import selectors
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyproj import CRS, Transformer

from gisnet.profile import load_profile
from gisnet.service import ServiceLimits, TownState, create_app
from gisnet.service.body import json_depth, parse_json_body
from gisnet.service.errors import RequestError
from gisnet.service.geojson import count_vertices
from gisnet.service.server import make_server
from gisnet.testing.synthetic import make_town
from gisnet.town import Town

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

CRS_FT = "EPSG:2260"
LIMITS = ServiceLimits(max_body_bytes=256 * 1024, max_batch=50, max_vertices=2_000)
JSON_CT = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def town_state(tmp_path_factory) -> TownState:
    """A 200-parcel synthetic town analysed by the pipeline, with a map folder and a
    file beside it that must never be served."""
    root = tmp_path_factory.mktemp("hostile")
    maps = root / "maps"
    maps.mkdir()
    (maps / "obligations.html").write_text("<html>obligations</html>")
    (root / "secret.html").write_text("outside the map folder")
    tiles = maps / "tiles"  # archives that cannot be read: 503 naming the archive
    tiles.mkdir()
    (tiles / "broken.pmtiles").write_bytes(b"not a tile archive " * 20)
    (tiles / "empty.pmtiles").write_bytes(b"")
    (tiles / "truncated.pmtiles").write_bytes(b"PMTiles\x03" + b"\x00" * 40)
    # the run's manifest names the town file by its absolute path on the server
    (maps / "gisnet-manifest.json").write_text(json.dumps(
        {"format": 1, "town": "synthetic", "town_file": str(root / "town" / "gisnet.toml"),
         "files": {}}))
    town = Town(name="synthetic", crs=CRS.from_user_input(CRS_FT),
                ft_per_unit=1200 / 3937 / 0.3048, layers=make_town(200, seed=1),
                profile=load_profile("poughkeepsie-fourth-ward"))
    st = TownState.from_town(town, out_dir=maps)
    # Poughkeepsie: no frontage charge; no plant analyses for § 168-22.5D
    assert list(st.unavailable) == ["frontage", "plant_increase"]
    return st


@pytest.fixture(scope="module")
def client(town_state) -> Iterator[TestClient]:
    with TestClient(create_app(town_state, LIMITS), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture(scope="module")
def here(town_state) -> tuple[float, float]:
    """Longitude, latitude of the first parcel's centroid (inside the town)."""
    c = town_state.town.layers["parcels"].geometry.iloc[0].centroid
    return Transformer.from_crs(CRS_FT, 4326, always_xy=True).transform(c.x, c.y)


# ---------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    """One hostile request and what it must give.

    ``body`` is bytes, a JSON-able value, or a function of the town's
    (lon, lat) returning either; ``limit_name`` is None when no limit applies.
    """

    id: str
    method: str
    path: str
    body: Any = None
    headers: dict[str, str] | None = None
    status: int = 422
    field: str | None = None
    limit_name: str | None = None


def _ring(x: float, y: float, n: int, r: float = 1e-4) -> list[list[float]]:
    """A closed ring of ``n`` positions (n - 1 distinct) around (x, y), in degrees."""
    pts = [[x + r * math.cos(2 * math.pi * k / (n - 1)),
            y + r * math.sin(2 * math.pi * k / (n - 1))] for k in range(n - 1)]
    return [*pts, pts[0]]


def _polygon(x: float, y: float, n: int) -> dict[str, Any]:
    return {"type": "Polygon", "coordinates": [_ring(x, y, n)]}


def _line(x: float, y: float) -> dict[str, Any]:
    return {"type": "LineString", "coordinates": [[x, y], [x + 1e-3, y]]}


def _fc(*geoms: dict[str, Any]) -> dict[str, Any]:
    return {"type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": g} for g in geoms]}


def _nested(depth: int) -> bytes:
    return b'{"parcel_ids": ["P0000001"], "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


BIG = LIMITS.max_body_bytes
ITEMS = "/collections/obligations/items"
CORPUS = [
    # -- damaged tile archives, pages and tiles that are not there ---------------------
    Hostile("damaged-archive-tile", "GET", "/tiles/broken/0/0/0.mvt", status=503),
    Hostile("empty-archive-tile", "GET", "/tiles/empty/3/1/1.mvt", status=503),
    Hostile("truncated-archive-tile", "GET", "/tiles/truncated/0/0/0.mvt", status=503),
    Hostile("damaged-archive-file", "GET", "/maps/tiles/broken.pmtiles", status=503),
    Hostile("unknown-tile-layer", "GET", "/tiles/nothing/0/0/0.mvt", status=404),
    Hostile("unknown-map", "GET", "/maps/nothing.html", status=404, field="name"),
    # -- paging caps -------------------------------------------------------------------
    Hostile("ogc-limit-over-the-cap", "GET", ITEMS + "?limit=10001", status=400,
            field="limit"),
    Hostile("ogc-limit-1e9", "GET", ITEMS + "?limit=1e9", status=400, field="limit"),
    Hostile("ogc-limit-of-5000-digits", "GET", ITEMS + "?limit=" + "9" * 5000, status=400,
            field="limit"),
    Hostile("ogc-offset-over-the-cap", "GET", ITEMS + "?offset=10000001", status=400,
            field="offset"),
    Hostile("ogc-empty-limit", "GET", ITEMS + "?limit=", status=400, field="limit"),
    Hostile("results-limit-over-the-cap", "GET", "/results/obligations?limit=10001",
            field="limit"),
    Hostile("results-offset-over-the-cap", "GET", "/results/obligations?offset=10000001",
            field="offset"),
    Hostile("ogc-crs-not-a-crs", "GET", ITEMS + "?crs=AAA", status=400, field="crs"),
    # -- values the OpenAPI document excludes ----------------------------------------
    Hostile("empty-crs", "GET", "/plants?crs=", field="crs"),
    Hostile("boolean-id", "POST", "/obligations", {"parcel_ids": [True]},
            field="parcel_ids[0]"),
    Hostile("float-id", "POST", "/control-manholes", {"user_ids": [1.0]}, field="user_ids[0]"),
    Hostile("industrial-as-number", "POST", "/whatif",
            {"parcel_id": "P0000001", "flow_gpd": 10, "industrial": 0}, field="industrial"),
    Hostile("feature-properties-false", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Feature", "properties": False,
                                       "geometry": {"type": "Point", "coordinates": [x, y]}}},
            field="features.properties"),
    Hostile("feature-id-an-object", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Feature", "id": {"a": 1}, "properties": {},
                                       "geometry": {"type": "Point", "coordinates": [x, y]}}},
            field="features.id"),
    Hostile("ring-of-three-positions", "POST", "/obligations",
            lambda x, y: {"features": {"type": "MultiPolygon",
                                       "coordinates": [[[[x, y], [x, y], [x, y]]]]}},
            field="features"),
    Hostile("geometry-type-an-object", "POST", "/whatif",
            lambda x, y: {"point": {"type": {}, "coordinates": [x, y]}, "flow_gpd": 10},
            field="point"),
    Hostile("whatif-point-with-extra-member", "POST", "/whatif",
            lambda x, y: {"point": {"type": "Point", "coordinates": [x, y], "z": 1},
                          "flow_gpd": 10}, field="point"),
    Hostile("whatif-point-outside-the-town", "POST", "/whatif",
            {"point": [0.0, 0.0], "flow_gpd": 10}, field="point"),
    Hostile("polygon-outside-the-town", "POST", "/obligations",
            {"features": _polygon(10.0, 10.0, 5)}, field="features"),
    Hostile("explicit-null-crs-and-parcel-ids", "POST", "/obligations",
            {"parcel_ids": None, "features": None}, field="parcel_ids"),
    # -- path traversal and odd paths ---------------------------------------------------
    Hostile("traversal-encoded-slash", "GET", "/maps/..%2Fsecret.html", status=404,
            field="path"),
    Hostile("traversal-encoded-dots", "GET", "/maps/%2e%2e%2fsecret.html", status=404,
            field="path"),
    Hostile("traversal-backslash", "GET", "/maps/..%5csecret.html", status=404, field="name"),
    Hostile("traversal-absolute", "GET", "/maps/%2Fetc%2Fpasswd", status=404, field="path"),
    Hostile("traversal-dotdot-name", "GET", "/maps/%2e%2e", status=404, field="name"),
    Hostile("traversal-hidden-file", "GET", "/maps/.secret.html", status=404, field="name"),
    Hostile("traversal-nul-byte", "GET", "/maps/obligations.html%00.png", status=404,
            field="name"),
    Hostile("traversal-sibling-file", "GET", "/maps/secret.html", status=404, field="name"),
    Hostile("traversal-in-parcel-id", "GET", "/parcels/..%2F..%2Fetc%2Fpasswd/obligation",
            status=404, field="parcel_id"),
    Hostile("traversal-in-layer", "GET", "/results/..%2Fparcels", status=404, field="path"),
    Hostile("unknown-route", "GET", "/admin", status=404, field="path"),
    Hostile("wrong-method", "DELETE", "/town", status=405, field="method"),
    # -- oversized bodies, batches and geometry ---------------------------------------
    Hostile("body-over-max-body-bytes", "POST", "/obligations",
            {"parcel_ids": ["P" * 100] * (BIG // 100)}, status=413, field="body",
            limit_name="max_body_bytes"),
    Hostile("batch-over-max-batch", "POST", "/obligations",
            {"parcel_ids": [f"P{i:07d}" for i in range(51)]}, status=413, field="parcel_ids",
            limit_name="max_batch"),
    Hostile("building-ids-over-max-batch", "POST", "/control-manholes",
            {"building_ids": ["B"] * 51}, status=413, field="building_ids",
            limit_name="max_batch"),
    Hostile("features-over-max-batch", "POST", "/obligations",
            lambda x, y: {"features": [{"type": "Point", "coordinates": [x, y]}] * 51},
            status=413, field="features", limit_name="max_batch"),
    Hostile("polygon-over-max-vertices", "POST", "/obligations",
            lambda x, y: {"features": _polygon(x, y, 2_001)}, status=413, field="features",
            limit_name="max_vertices"),
    Hostile("many-polygons-over-max-vertices", "POST", "/control-manholes",
            lambda x, y: {"features": _fc(*[_polygon(x, y, 101)] * 20)}, status=413,
            field="features", limit_name="max_vertices"),
    Hostile("multipolygon-over-max-vertices", "POST", "/obligations",
            lambda x, y: {"features": {"type": "MultiPolygon",
                                       "coordinates": [[_ring(x, y, 1_001)]] * 2}},
            status=413, field="features", limit_name="max_vertices"),
    # -- bodies that are not (RFC 8259) JSON ---------------------------------------------
    Hostile("truncated-json", "POST", "/obligations", b'{"parcel_ids": ["P0000001"',
            field="body"),
    Hostile("trailing-garbage", "POST", "/obligations", b'{"parcel_ids": []} trailing',
            field="body"),
    Hostile("latin1-in-a-string", "POST", "/obligations", b'{"parcel_ids": ["Caf\xe9"]}',
            field="parcel_ids[0]"),
    Hostile("latin1-in-a-key", "POST", "/obligations", b'{"parcel_ids": [], "\xff": 1}',
            field="\\udcff"),
    Hostile("not-utf8-outside-strings", "POST", "/obligations", b'{"parcel_ids": \xff}',
            field="body"),
    Hostile("utf16-body", "POST", "/obligations",
            '{"parcel_ids": ["P0000001"]}'.encode("utf-16"), field="body"),
    Hostile("utf8-bom", "POST", "/obligations",
            b'\xef\xbb\xbf{"parcel_ids": ["P0000001"]}', field="body"),
    Hostile("lone-surrogate-escape", "POST", "/obligations", b'{"parcel_ids": ["\\ud800"]}',
            field="parcel_ids[0]"),
    Hostile("nesting-over-max-json-depth", "POST", "/obligations", _nested(40),
            field="body", limit_name="max_json_depth"),
    Hostile("nesting-100k-deep", "POST", "/obligations", b"[" * 60_000 + b"]" * 60_000,
            field="body", limit_name="max_json_depth"),
    Hostile("nesting-in-feature-properties", "POST", "/obligations",
            lambda x, y: json.dumps({"features": {
                "type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]},
                "properties": {"p": json.loads("[" * 40 + "]" * 40)}}}).encode(),
            field="body", limit_name="max_json_depth"),
    Hostile("integer-of-5000-digits", "POST", "/obligations",
            b'{"parcel_ids": [' + b"9" * 5000 + b"]}", field="body"),
    Hostile("top-level-array", "POST", "/obligations", ["P0000001"], field="body"),
    Hostile("empty-json-body", "POST", "/obligations", b"", headers=JSON_CT, field="body"),
    Hostile("unknown-body-field", "POST", "/obligations", {"parcel_ids": [], "admin": True},
            field="admin"),
    # -- NaN, Infinity and overflowing numbers ------------------------------------------
    Hostile("nan-id", "POST", "/obligations", b'{"parcel_ids": ["P0000001", NaN]}',
            field="parcel_ids[1]"),
    Hostile("infinity-flow", "POST", "/whatif",
            b'{"parcel_id": "P0000001", "flow_gpd": Infinity}', field="flow_gpd"),
    Hostile("minus-infinity-coordinate", "POST", "/obligations",
            b'{"features": {"type": "Point", "coordinates": [-Infinity, 41.67]}}',
            field="features.coordinates[0]"),
    Hostile("overflowing-coordinate", "POST", "/obligations",
            b'{"features": {"type": "Point", "coordinates": [1e400, 41.67]}}',
            field="features"),
    Hostile("overflowing-flow", "POST", "/whatif",
            b'{"parcel_id": "P0000001", "flow_gpd": 1e400}', field="flow_gpd"),
    Hostile("nan-query-number", "GET", "/trace/downstream?x=nan&y=41.67", field="x"),
    Hostile("infinite-min-utilization", "GET", "/pipes?min_utilization=inf",
            field="min_utilization"),
    # -- negative, zero, huge and non-numeric flows ------------------------------------
    Hostile("negative-flow", "POST", "/whatif", {"parcel_id": "P0000001", "flow_gpd": -5},
            field="flow_gpd"),
    Hostile("zero-flow", "POST", "/whatif", {"parcel_id": "P0000001", "flow_gpd": 0},
            field="flow_gpd"),
    Hostile("flow-over-1e9-gpd", "POST", "/whatif",
            {"parcel_id": "P0000001", "flow_gpd": 1.7e308}, field="flow_gpd"),
    Hostile("flow-as-text", "POST", "/whatif", {"parcel_id": "P0000001", "flow_gpd": "lots"},
            field="flow_gpd"),
    # -- geometry of the wrong type ----------------------------------------------------
    Hostile("linestring-obligations", "POST", "/obligations",
            lambda x, y: {"features": _line(x, y)}, field="features"),
    Hostile("multipoint-obligations", "POST", "/obligations",
            lambda x, y: {"features": {"type": "MultiPoint", "coordinates": [[x, y]] * 3}},
            field="features"),
    Hostile("linestring-in-collection-control", "POST", "/control-manholes",
            lambda x, y: {"features": _fc({"type": "Point", "coordinates": [x, y]},
                                          _line(x, y))},
            field="features.features[1].geometry"),
    Hostile("geometrycollection", "POST", "/obligations",
            lambda x, y: {"features": {"type": "GeometryCollection", "geometries": []}},
            field="features"),
    Hostile("invented-type", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Circle", "coordinates": [x, y], "r": 5}},
            field="features"),
    Hostile("type-not-text", "POST", "/obligations",
            lambda x, y: {"features": {"type": ["Point"], "coordinates": [x, y]}},
            field="features"),
    Hostile("type-an-object-in-collection", "POST", "/control-manholes",
            lambda x, y: {"features": _fc({"type": {"Point": 1}, "coordinates": [x, y]})},
            field="features.features[0].geometry"),
    Hostile("null-geometry", "POST", "/control-manholes",
            {"features": [{"type": "Feature", "properties": {}, "geometry": None}]},
            field="features[0].geometry"),
    Hostile("polygon-as-whatif-point", "POST", "/whatif",
            lambda x, y: {"point": _polygon(x, y, 5), "flow_gpd": 100}, field="point"),
    Hostile("ragged-coordinates", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Polygon",
                                       "coordinates": [[[x, y], [x, y, 1, 2, 3], [x]]]}},
            field="features"),
    Hostile("boolean-coordinates", "POST", "/control-manholes",
            {"features": {"type": "Point", "coordinates": [True, False]}}, field="features"),
    Hostile("string-coordinates-in-a-ring", "POST", "/obligations",
            lambda x, y: {"features": _fc({"type": "Polygon", "coordinates": [
                [[x, y], [x + 1e-4, y], [str(x), str(y + 1e-4)], [x, y]]]})},
            field="features.features[0].geometry"),
    # -- coordinate reference systems --------------------------------------------------
    Hostile("crs-epsg-0", "GET", "/parcels/P0000001/obligation?crs=EPSG:0", field="crs"),
    Hostile("crs-proj-garbage", "GET", "/plants?crs=%2Bproj%3Dnowhere", field="crs"),
    Hostile("crs-10k-characters", "GET", "/plants?crs=" + "A" * 10_000, field="crs"),
    Hostile("crs-unknown-name", "GET", "/plants?crs=Nowhere%20Grid", field="crs"),
    Hostile("crs-of-30k-characters-in-body", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Point", "coordinates": [x, y]},
                          "crs": "PROJCS[" + "A" * 30_000 + "]"}, field="crs"),
    Hostile("body-crs-unknown", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Point", "coordinates": [x, y]},
                          "crs": "EPSG:999999"}, field="crs"),
    Hostile("latitude-over-90", "POST", "/obligations",
            lambda x, y: {"features": {"type": "Point", "coordinates": [x, 91.0]}},
            field="features"),
    Hostile("longitude-out-of-range", "GET", "/trace/downstream?x=1e30&y=1e30", field="x"),
    Hostile("point-far-outside-the-network", "GET",
            "/trace/downstream?x=1e30&y=1e30&point_crs=EPSG:2260", field="x"),
    # -- unknown ids -------------------------------------------------------------------
    Hostile("unknown-parcel", "GET", "/parcels/NO-SUCH/obligation", status=404,
            field="parcel_id"),
    Hostile("unknown-parcel-trace", "GET", "/trace/downstream?parcel=NO-SUCH", status=404,
            field="parcel"),
    Hostile("unknown-manhole", "GET", "/manholes/NO-SUCH/upstream", status=404,
            field="manhole_id"),
    Hostile("unknown-main", "GET", "/pipes?main_id=NO-SUCH", status=404, field="main_id"),
    Hostile("unknown-layer", "GET", "/results/no_such_layer", status=404, field="layer"),
    Hostile("unknown-row-id", "GET", "/results/obligations?parcel_id=NO-SUCH", status=404,
            field="parcel_id"),
    Hostile("unknown-whatif-parcel", "POST", "/whatif",
            {"parcel_id": "NO-SUCH", "flow_gpd": 100}, status=404, field="parcel_id"),
    Hostile("unknown-query-parameter", "GET", "/trace/downstream?parcel=P0000001&debug=1",
            field="debug"),
    # -- wrong content types -----------------------------------------------------------
    Hostile("text-plain", "POST", "/obligations", b'{"parcel_ids": []}',
            headers={"content-type": "text/plain"}, status=415, field="content-type"),
    Hostile("no-content-type", "POST", "/obligations", b'{"parcel_ids": []}', headers={},
            status=415, field="content-type"),
    Hostile("form-urlencoded", "POST", "/whatif", b"parcel_id=P0000001&flow_gpd=10",
            headers={"content-type": "application/x-www-form-urlencoded"}, status=415,
            field="content-type"),
    Hostile("multipart", "POST", "/obligations", b"--x\r\n\r\n--x--",
            headers={"content-type": "multipart/form-data; boundary=x"}, status=415,
            field="content-type"),
    Hostile("json-in-utf16-charset", "POST", "/obligations",
            '{"parcel_ids": []}'.encode("utf-16"),
            headers={"content-type": "application/json; charset=utf-16"}, status=415,
            field="content-type"),
]


def _send(client: TestClient, case: Hostile, here: tuple[float, float]):
    body = case.body(*here) if callable(case.body) else case.body
    headers = dict(JSON_CT) if case.headers is None else case.headers
    if body is None:
        return client.request(case.method, case.path, headers=case.headers)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.request(case.method, case.path, content=content, headers=headers)


def test_the_corpus_is_large_and_covers_every_category():
    assert len(CORPUS) >= 30
    assert len({c.id for c in CORPUS}) == len(CORPUS)
    statuses = {c.status for c in CORPUS}
    assert statuses == {400, 404, 405, 413, 415, 422, 503}
    assert {c.limit_name for c in CORPUS} >= {"max_body_bytes", "max_batch", "max_vertices",
                                              "max_json_depth"}


def server_paths(town_state) -> list[str]:
    """Absolute paths of the server's own folders: none may appear in an answer."""
    maps = town_state.out_dir.resolve()
    return [str(p) for p in (maps, maps.parent, Path.cwd(), Path.home())]


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.id)
def test_hostile_request_gets_its_status_and_names_the_field(client, here, case, town_state):
    r = _send(client, case, here)
    for path in server_paths(town_state):
        assert path not in r.text, (path, r.text)
    assert r.status_code == case.status, r.text
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()
    assert isinstance(err["detail"], str) and err["detail"]
    assert "Traceback" not in r.text and "error parsing the body" not in r.text
    assert err.get("field") == case.field, err
    assert err.get("limit_name") == case.limit_name, err
    if case.limit_name:
        limit = getattr(LIMITS, case.limit_name)
        assert err["limit"] == limit
        assert f"({case.limit_name})" in err["detail"]
    assert b"outside the map folder" not in r.content


def test_wrong_geometry_type_names_the_types_allowed(client, here):
    r = client.post("/obligations", json={"features": _line(*here)})
    assert r.status_code == 422
    assert r.json()["detail"] == ("features: expected a GeoJSON geometry of type Point, "
                                  "Polygon, MultiPolygon; got a LineString")
    r = client.post("/whatif", json={"point": _polygon(*here, 5), "flow_gpd": 100})
    assert r.json()["detail"] == "point: expected a GeoJSON geometry of type Point; got a Polygon"


def test_limits_are_inclusive_and_one_more_is_refused(client, here):
    """At each limit the request is answered; one over, it is refused."""
    x, y = here
    at = client.post("/obligations", json={"features": _polygon(x, y, 2_000)})
    assert at.status_code == 200, at.text
    assert at.json()["features"][0]["properties"]["parcel_id"] == "input-1"
    assert client.post("/obligations",
                       json={"features": _polygon(x, y, 2_001)}).status_code == 413
    ids = {"parcel_ids": [f"P{i:07d}" for i in range(1, 51)]}
    assert client.post("/obligations", json=ids).status_code == 200
    ok = client.post("/obligations", content=_nested(32), headers=JSON_CT)
    assert ok.status_code == 422 and ok.json()["field"] == "x"  # parsed: only 'x' is wrong
    deep = client.post("/obligations", content=_nested(33), headers=JSON_CT)
    assert deep.json()["limit_name"] == "max_json_depth"


def test_json_media_types_and_utf8_charset_are_accepted(client):
    body = b'{"parcel_ids": ["P0000001"]}'
    for ctype in ("application/json", "application/geo+json",
                  "application/json; charset=UTF-8", "application/json;charset=utf8"):
        r = client.post("/obligations", content=body, headers={"content-type": ctype})
        assert r.status_code == 200, (ctype, r.text)
        assert r.json()["features"][0]["properties"]["parcel_id"] == "P0000001"


def test_crs_forms_accepted_and_names_refused_before_proj_searches_for_them(client):
    """An unknown CRS *name* costs PROJ over a second of database search, so only
    codes and definitions are taken; each form below gives the same answer."""
    want = client.get("/plants", params={"crs": "EPSG:2260"}).json()["features"]
    for crs in ("2260", "epsg:2260", "urn:ogc:def:crs:EPSG::2260",
                "http://www.opengis.net/def/crs/EPSG/0/2260", CRS.from_epsg(2260).to_wkt(),
                CRS.from_epsg(2260).to_json()):
        r = client.get("/plants", params={"crs": crs})
        assert r.status_code == 200 and r.json()["features"] == want, crs[:40]
    r = client.get("/plants", params={"crs": "NAD83 / New York East (ftUS)"})
    assert r.status_code == 422 and "is not a CRS" in r.json()["detail"]


def test_non_ascii_ids_in_utf8_are_looked_up_not_refused(client):
    r = client.post("/obligations", content='{"parcel_ids": ["Café"]}'.encode(),
                    headers=JSON_CT)
    assert r.status_code == 200 and r.json()["not_found"] == ["Café"]


def test_the_streamed_body_over_the_limit_names_it(client):
    def chunks():
        yield b'{"parcel_ids": ['
        for _ in range(BIG // 10 + 1):
            yield b'"P000001",'
        yield b'"P1"]}'

    r = client.post("/obligations", content=chunks(), headers=JSON_CT)
    assert r.status_code == 413
    assert r.json()["limit_name"] == "max_body_bytes" and r.json()["field"] == "body"


# ---------------------------------------------------------------------------
# the decoder on its own
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [(b"1", 0), (b"{}", 1), (b'{"a": "[[[[", "b": [[1]]}', 3), (b'["\\"]]]"]', 1),
     (b'["\\\\", [[]]]', 3), (b'[["\\\\\\"[[["]]', 2), (b"[" * 50 + b"]" * 50, 50)],
)
def test_json_depth_skips_brackets_inside_strings(text, depth):
    assert json_depth(text) == depth
    if depth < 100:
        # the same as a recursive walk of the decoded value
        def walk(v):
            kids = v.values() if isinstance(v, dict) else v if isinstance(v, list) else []
            return (1 + max((walk(k) for k in kids), default=0)
                    if isinstance(v, (dict, list)) else 0)
        assert walk(json.loads(text)) == depth


def test_parse_json_body_names_the_path_of_a_bad_value():
    with pytest.raises(RequestError) as e:
        parse_json_body(b'{"a": [1, {"b": [0, NaN]}]}', 32)
    assert e.value.field == "a[1].b[1]" and "NaN" in e.value.message
    with pytest.raises(RequestError) as e:
        parse_json_body(b'{"a": {"b": "\xc3("}}', 32)
    assert e.value.field == "a.b" and "offset 13" in e.value.message
    assert parse_json_body('{"é": ["ü"]}'.encode(), 32) == {"é": ["ü"]}


def test_vertices_are_counted_without_building_geometry():
    ring = [[0, 0], [1, 0], [1, 1], [0, 0]]
    assert count_vertices({"type": "Point", "coordinates": [1, 2]}) == 1
    assert count_vertices({"type": "LineString", "coordinates": ring}) == 4
    assert count_vertices({"type": "Polygon", "coordinates": [ring, ring]}) == 8
    assert count_vertices({"type": "MultiPolygon", "coordinates": [[ring], [ring, ring]]}) == 12
    assert count_vertices({"type": "Polygon", "coordinates": "nonsense"}) == 0
    assert count_vertices(None) == 0


def test_a_position_must_be_two_or_three_numbers():
    from gisnet.service.geojson import check_positions

    check_positions({"type": "Point", "coordinates": [1.5, 2, 3]}, "f")
    for bad in ([True, 1], [1], [1, 2, 3, 4], ["1", 2], [None, 2]):
        with pytest.raises(RequestError, match="position 0 is"):
            check_positions({"type": "Point", "coordinates": bad}, "f")
    ring = [[0, 0], [1, 0], [1, False], [0, 0]]
    with pytest.raises(RequestError, match=r"position 2 is \[1, false\]"):
        check_positions({"type": "Polygon", "coordinates": [ring]}, "f")


# ---------------------------------------------------------------------------
# slow clients: real sockets against a real server
# ---------------------------------------------------------------------------

SLOW = ServiceLimits(header_timeout_s=0.5, body_timeout_s=0.5, keep_alive_s=0.5,
                     max_header_bytes=4096)


@pytest.fixture(scope="module")
def live(town_state) -> Iterator[int]:
    """A real server (uvicorn with gisnet's read deadlines) on 127.0.0.1; its port."""
    server = make_server(create_app(town_state, SLOW), host="127.0.0.1", port=0, limits=SLOW)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(10)


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setblocking(False)
    return s


def _until_closed(socks: list[socket.socket], seconds: float,
                  tick: Callable[[float], None] | None = None) -> list[tuple[float, bytes]]:
    """Read every socket until the server closes it, or ``seconds`` pass; call
    ``tick(elapsed)`` about every 0.1 s. Returns, per socket, the
    :func:`time.monotonic` at which it was closed (``inf``: still open) and
    the bytes received."""
    t0 = time.monotonic()
    got = {s: bytearray() for s in socks}
    closed: dict[socket.socket, float] = {}
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    next_tick = 0.0
    try:
        while len(closed) < len(socks) and time.monotonic() - t0 < seconds:
            if tick and time.monotonic() - t0 >= next_tick:
                tick(time.monotonic() - t0)
                next_tick += 0.1
            for key, _ in sel.select(timeout=0.02):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except ConnectionResetError:
                    data = b""
                if data:
                    got[s] += data
                else:
                    closed[s] = time.monotonic()
                    sel.unregister(s)
    finally:
        sel.close()
        for s in socks:
            s.close()
    return [(closed.get(s, math.inf), bytes(got[s])) for s in socks]


#: A deadline of 0.5 s must close the connection after at least 0.5 s and (with
#: room for a loaded machine) well before the loops give up
EARLIEST, LATEST = 0.49, 2.0


def _json_of(response: bytes) -> dict[str, Any]:
    _, _, body = response.partition(b"\r\n\r\n")
    return json.loads(body)


def test_many_clients_trickling_headers_are_answered_408_and_closed(live):
    n = 100
    opened, socks = [], []
    for _ in range(n):
        opened.append(time.monotonic())
        socks.append(_connect(live))
    for s in socks:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: gisnet\r\n")
    healthy: list[float] = []

    def trickle(elapsed: float) -> None:
        for s in socks:
            with contextlib.suppress(OSError):  # already closed by the server
                s.sendall(b"X-Slow: 1\r\n")  # never the blank line that ends the head
        if 0.2 < elapsed < 0.4 and not healthy:  # the service still answers others
            t = time.monotonic()
            with socket.create_connection(("127.0.0.1", live), timeout=5) as c:
                c.sendall(b"GET /health HTTP/1.1\r\nHost: gisnet\r\nConnection: close\r\n\r\n")
                reply = b""
                while chunk := c.recv(65536):
                    reply += chunk
            assert reply.startswith(b"HTTP/1.1 200")
            healthy.append(time.monotonic() - t)

    results = _until_closed(socks, 4.0, trickle)
    assert healthy and healthy[0] < 1.0
    for t_open, (when, data) in zip(opened, results, strict=True):
        # the deadline is 0.5 s from the connection opening, however often bytes come
        assert EARLIEST <= when - t_open <= LATEST, when - t_open
        assert data.startswith(b"HTTP/1.1 408 ")
        err = _json_of(data)
        assert err["field"] == "headers" and err["limit_name"] == "header_timeout_s"
        assert err["limit"] == 0.5


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(live):
    t_open = time.monotonic()
    [(when, data)] = _until_closed([_connect(live)], 4.0)
    assert EARLIEST <= when - t_open <= LATEST and data == b""


def test_a_body_trickled_past_the_deadline_is_answered_408(live):
    s = _connect(live)
    s.sendall(b"POST /obligations HTTP/1.1\r\nHost: gisnet\r\n"
              b"Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
    t_head = time.monotonic()

    def trickle(elapsed: float) -> None:
        with contextlib.suppress(OSError):
            s.sendall(b" ")

    [(when, data)] = _until_closed([s], 4.0, trickle)
    assert EARLIEST <= when - t_head <= LATEST
    assert data.startswith(b"HTTP/1.1 408 ")
    err = _json_of(data)
    assert err["field"] == "body" and err["limit_name"] == "body_timeout_s"


def test_a_request_sent_in_pieces_within_the_deadlines_is_answered(live):
    body = b'{"parcel_ids": ["P0000001"]}'
    pieces = [b"POST /obligations HTTP/1.1\r\nHost: gisnet\r\n",
              b"Content-Type: application/json\r\nConnection: close\r\n",
              b"Content-Length: %d\r\n\r\n" % len(body), body[:10], body[10:]]
    s = _connect(live)
    for p in pieces:
        s.sendall(p)
        time.sleep(0.05)
    [(_, data)] = _until_closed([s], 4.0)
    assert data.startswith(b"HTTP/1.1 200 ")
    assert _json_of(data)["features"][0]["properties"]["parcel_id"] == "P0000001"


def test_a_kept_alive_connection_is_closed_after_keep_alive_s(live):
    s = _connect(live)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: gisnet\r\n\r\n")
    t_sent = time.monotonic()
    [(when, data)] = _until_closed([s], 4.0)
    assert data.startswith(b"HTTP/1.1 200 ")
    assert EARLIEST - 0.1 <= when - t_sent <= LATEST  # idle 0.5 s after the answer


def test_a_request_head_over_max_header_bytes_is_431(live):
    s = _connect(live)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: gisnet\r\nX-Big: " + b"a" * 5000)
    [(_, data)] = _until_closed([s], 4.0)
    assert data.startswith(b"HTTP/1.1 431 ")
    err = _json_of(data)
    assert err["limit_name"] == "max_header_bytes" and err["limit"] == 4096


def test_a_malformed_request_line_is_a_json_400(live):
    s = _connect(live)
    s.sendall(b"HELLO THERE\r\n\r\n")
    [(_, data)] = _until_closed([s], 4.0)
    assert data.startswith(b"HTTP/1.1 400 ")
    assert _json_of(data)["field"] == "request"


@pytest.mark.parametrize("path", ["/maps/../secret.html", "/maps/../../secret.html",
                                  "/maps/./../secret.html", "/maps//secret.html"])
def test_raw_traversal_paths_are_404(live, path):
    s = _connect(live)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: gisnet\r\nConnection: close\r\n\r\n".encode())
    [(_, data)] = _until_closed([s], 4.0)
    assert data.startswith(b"HTTP/1.1 404 "), data[:200]
    assert b"outside the map folder" not in data



def test_the_server_gives_back_freed_memory_only_after_serving(town_state, monkeypatch):
    """Every TRIM_EVERY_S seconds the server hands gisnet.memory.release to a worker
    thread, but only when requests were served since the last time."""
    import gisnet.service.server as srv

    calls: list[str] = []
    monkeypatch.setattr(srv, "TRIM_EVERY_S", 0.2)
    server = make_server(create_app(town_state, SLOW), host="127.0.0.1", port=0, limits=SLOW)
    server.give_back = lambda: calls.append(threading.current_thread().name)  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        time.sleep(0.7)
        assert calls == []  # nothing served: nothing given back
        s = _connect(port)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: gisnet\r\nConnection: close\r\n\r\n")
        [(_, data)] = _until_closed([s], 4.0)
        assert data.startswith(b"HTTP/1.1 200 ")
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.7)
        assert len(calls) == 1 and calls[0] not in ("MainThread", thread.name)  # a worker
    finally:
        server.should_exit = True
        thread.join(10)
