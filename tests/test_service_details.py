# ruff: noqa: F811  (the fixtures imported from test_service_hostile are parameters here)
"""The service's details, each also a case of the hostile corpus
(``tests/test_service_hostile.py``): no answer shows the server's paths, links
come from the configured base URL whatever the ``Host`` header, a damaged tile
archive is a 503 naming it, ``limit`` and ``offset`` have documented caps, the
``quality`` collection is points (one geometry type per collection), and every
error status of the OpenAPI document uses its one error schema.
"""

from __future__ import annotations

import time
import warnings

import pytest
from test_service_hostile import (  # noqa: F401  (module fixtures)
    CORPUS,
    ITEMS,
    LIMITS,
    client,
    server_paths,
    town_state,
)

from gisnet.service import ServiceLimits, create_app

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient



def test_no_answer_shows_the_servers_paths(client, town_state):
    """The manifest is served with the town file's name only; /town names each layer's
    source relative to the town's folder; the error bodies (corpus above) hold none."""
    r = client.get("/maps/gisnet-manifest.json")
    assert r.status_code == 200 and r.json()["town_file"] == "gisnet.toml"
    for path in ["/maps/gisnet-manifest.json", "/town", "/maps", "/results/quality",
                 "/collections/quality/items?limit=100", "/openapi.json", "/api",
                 "/tiles/broken/0/0/0.mvt", "/tiles/nothing/1/1/1.mvt", "/maps/nothing"]:
        body = client.get(path).text
        for p in server_paths(town_state):
            assert p not in body, (path, p)


def test_public_source_is_relative_to_the_town_folder(tmp_path):
    from gisnet.service.state import public_source

    town = tmp_path / "town"
    assert public_source(str(town / "mains.shp"), town) == "mains.shp"
    assert public_source(str(town / "gis" / "mains.gpkg"), town) == "gis/mains.gpkg"
    assert public_source(str(tmp_path / "elsewhere" / "roads.shp"), town) == "roads.shp"
    assert public_source("PG:dbname=gis", town) == "PG:dbname=gis"
    assert public_source("OAPIF:https://gis.example.gov/", town) == \
        "OAPIF:https://gis.example.gov/"
    assert public_source(None, town) is None


def test_a_damaged_archive_is_503_naming_it_and_a_whole_one_is_served(client, tmp_path):
    r = client.get("/tiles/broken/0/0/0.mvt")
    assert r.status_code == 503
    assert "'broken.pmtiles' cannot be read" in r.json()["detail"]
    assert "Traceback" not in r.text


def test_links_come_from_the_base_url_never_from_the_host_header(town_state):
    base = "https://gis.example.gov/sewer"
    with TestClient(create_app(town_state, LIMITS, base_url=base + "/")) as c:
        for path in ["/", "/collections", "/collections/obligations",
                     "/collections/obligations/items?limit=5&offset=5",
                     "/collections/obligations/items/3"]:
            r = c.get(path, headers={"Host": "evil.example"})
            assert r.status_code == 200, path
            hrefs = [ln["href"] for ln in r.json().get("links", [])]
            hrefs += [ln["href"] for col in r.json().get("collections", [])
                      for ln in col["links"]]
            assert hrefs and all(h.startswith(base + "/") for h in hrefs), (path, hrefs)
            assert "evil.example" not in r.text
        link = c.get("/results/plants", headers={"Host": "evil.example"}).headers["link"]
        assert link.startswith(f"<{base}/collections/plants/items>")
    from gisnet.errors import ConfigError
    from gisnet.service.app import base_url_of

    for bad in ("ftp://x", "http://", "https://a.b/?q=1", "http://u:p@a.b", "http://a:x/"):
        with pytest.raises(ConfigError):
            base_url_of(bad)


def test_limit_and_offset_caps_are_inclusive(client):
    r = client.get(f"{ITEMS}?limit=10000&offset=0")
    assert r.status_code == 200 and r.json()["numberReturned"] == 200
    r = client.get(f"{ITEMS}?limit=1&offset=10000000")
    assert r.status_code == 200 and r.json()["numberReturned"] == 0
    r = client.get(f"{ITEMS}?limit=10001")
    assert r.status_code == 400 and "at most 10,000" in r.json()["detail"]
    assert client.get("/results/obligations?limit=10000").json()["numberReturned"] == 200


def test_quality_is_served_as_points_with_the_shape_as_wkt(client, town_state):
    import shapely

    q = town_state.tables["quality"].gdf
    feats = client.get("/collections/quality/items?limit=10000").json()["features"]
    assert len(feats) == len(q)
    for f, g in zip(feats, q.geometry, strict=True):
        if g is None or g.is_empty:
            assert f["geometry"] is None and f["properties"]["shape_wkt"] is None
        else:
            assert f["geometry"]["type"] == "Point"
            shape = shapely.from_wkt(f["properties"]["shape_wkt"])
            assert shape.equals_exact(g, 1e-6)
    # every collection holds one geometry family (or none), as OGC clients need
    families = {"Point": "point", "MultiPoint": "point", "LineString": "line",
                "MultiLineString": "line", "Polygon": "area", "MultiPolygon": "area"}
    for cid in [c["id"] for c in client.get("/collections").json()["collections"]]:
        page = client.get(f"/collections/{cid}/items?limit=10000").json()["features"]
        kinds = {families[f["geometry"]["type"]] for f in page if f["geometry"]}
        assert len(kinds) <= 1, (cid, kinds)


def test_validation_of_a_batch_of_bad_ids_lists_100_and_is_quick(town_state):
    limits = ServiceLimits(max_batch=20_000)
    with TestClient(create_app(town_state, limits)) as c:
        t0 = time.perf_counter()
        r = c.post("/obligations", json={"parcel_ids": [None, False] * 10_000})
        took = time.perf_counter() - t0
    assert r.status_code == 422 and r.json()["field"] == "parcel_ids[0]"
    assert len(r.json()["errors"]) == 100
    assert took < 5, took  # was quadratic: over 10 s


def test_every_error_status_of_the_openapi_document_uses_the_error_schema(client):
    doc = client.get("/openapi.json").json()
    assert "Error" in doc["components"]["schemas"]
    seen = set()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for status, resp in op["responses"].items():
                if int(status) >= 400:
                    seen.add(int(status))
                    assert resp["content"]["application/json"]["schema"] == \
                        {"$ref": "#/components/schemas/Error"}, (method, path, status)
    assert seen == {400, 404, 413, 415, 422, 503}
    # every hostile answer's status is documented for its route (templated paths matched)
    for case in CORPUS:
        if case.status in (405,):
            continue
        path = case.path.split("?")[0]
        ops = [op for p, o in doc["paths"].items() for m, op in o.items()
               if m == case.method.lower() and _matches(p, path)]
        if ops:
            assert any(str(case.status) in op["responses"] for op in ops), case.id


def _matches(template: str, path: str) -> bool:
    import re

    pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template))
    return re.fullmatch(pattern, path) is not None
