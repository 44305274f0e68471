"""OGC API - Features on the service, against the requirements of the conformance
classes it declares (docs/service.md lists them): Part 1 core, GeoJSON, OAS 3.0 and
Part 2 CRS. Checked with an in-process client, and end to end with GDAL's OAPIF
driver (an independent OGC API client) reading a served collection as a layer.
"""

from __future__ import annotations

import json
import urllib.parse
import warnings
from pathlib import Path

import geopandas as gpd
import numpy as np
import pyogrio
import pytest
import shapely
from pyproj import CRS, Transformer
from servers import gisnet_serve

from gisnet.io import load_town
from gisnet.service import TownState, create_app
from gisnet.service.ogc import CONFORMANCE, CRS84_URI

with warnings.catch_warnings():
    # Starlette >= 1.x prefers the httpx2 package and warns when it finds httpx
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
EPSG = "http://www.opengis.net/def/crs/EPSG/0/{}"


@pytest.fixture(scope="module")
def state(sample_dir):
    return TownState.from_town(load_town(sample_dir))


@pytest.fixture(scope="module")
def client(state):
    return TestClient(create_app(state))


def test_landing_page_links(client):
    """/req/core/root-success: links self, service-desc, conformance, data."""
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    links = {ln["rel"]: ln for ln in r.json()["links"]}
    assert {"self", "service-desc", "conformance", "data"} <= set(links)
    assert links["service-desc"]["type"].startswith("application/vnd.oai.openapi+json")
    for rel in ("service-desc", "conformance", "data"):
        assert client.get(links[rel]["href"]).status_code == 200, rel


def test_conformance_and_api_definition(client):
    """/req/core/conformance-success and /req/oas30/oas-definition-1: an OpenAPI 3.0
    document describing every OGC path."""
    assert client.get("/conformance").json()["conformsTo"] == CONFORMANCE
    api = client.get("/api").json()
    assert api["openapi"].startswith("3.0")
    for p in ("/", "/conformance", "/collections", "/collections/{collectionId}",
              "/collections/{collectionId}/items",
              "/collections/{collectionId}/items/{featureId}"):
        assert p in api["paths"], p
    params = {p["name"] for p in api["paths"]["/collections/{collectionId}/items"]["get"]
              ["parameters"]}
    assert {"limit", "bbox", "crs", "bbox-crs", "offset"} <= params
    text = json.dumps(api)
    assert '"type": "null"' not in text and '"const"' not in text  # 3.1-only forms gone
    # the existing routes are untouched
    assert client.get("/health").status_code == 200
    assert client.get("/openapi.json").json()["openapi"].startswith("3.1")


def test_every_result_and_input_layer_is_a_collection(client, state):
    cols = client.get("/collections").json()["collections"]
    ids = [c["id"] for c in cols]
    want = [n for n in state.tables if n != "parcels"] + \
        [f"input_{r}" for r in state.town.layers]
    assert ids == want
    for c in cols:
        assert c["itemType"] == "feature"
        assert {ln["rel"] for ln in c["links"]} >= {"self", "items"}
        assert c["crs"][0] == CRS84_URI and c["storageCrs"] == EPSG.format(2260)
        one = client.get(f"/collections/{c['id']}").json()
        assert one["id"] == c["id"]


def test_collection_extent_is_the_layers_bounds_in_crs84(client, state):
    for name in ("obligations", "input_mains", "pipes_capacity"):
        gdf = (state.town.layers["mains"] if name == "input_mains"
               else state.tables[name].gdf)
        want = gdf.to_crs("OGC:CRS84").total_bounds
        got = client.get(f"/collections/{name}").json()["extent"]["spatial"]
        assert got["crs"] == CRS84_URI
        assert np.allclose(got["bbox"][0], want, rtol=0, atol=1e-9)


def _pages(client, url: str) -> list[dict]:
    feats = []
    while url:
        r = client.get(url)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["numberReturned"] == len(body["features"])
        feats += body["features"]
        nxt = [ln["href"] for ln in body["links"] if ln["rel"] == "next"]
        url = nxt[0] if nxt else None
    return feats


def test_paging_covers_every_parcel_exactly_once(client, state):
    """/req/core/fc-links, fc-response: next links walk all 3,000 obligations once."""
    n = len(state.tables["obligations"])
    assert n == 3000
    first = client.get("/collections/obligations/items?limit=250").json()
    assert first["numberMatched"] == n and first["numberReturned"] == 250
    assert not [ln for ln in first["links"] if ln["rel"] == "prev"]
    feats = _pages(client, "/collections/obligations/items?limit=250")
    ids = [f["id"] for f in feats]
    assert ids == list(range(1, n + 1))
    assert [f["properties"]["parcel_id"] for f in feats] == \
        state.tables["obligations"].gdf["parcel_id"].tolist()
    last = client.get("/collections/obligations/items?limit=250&offset=2750").json()
    prev = [ln["href"] for ln in last["links"] if ln["rel"] == "prev"]
    assert "offset=2500" in prev[0] and not [ln for ln in last["links"] if ln["rel"] == "next"]
    # the default page is 10, and a page past the end is empty
    assert client.get("/collections/obligations/items").json()["numberReturned"] == 10
    assert client.get("/collections/obligations/items?offset=5000").json()["features"] == []


def test_item_ids_are_stable_and_fetchable(client):
    page = client.get("/collections/obligations/items?limit=5&offset=100").json()
    for f in page["features"]:
        one = client.get(f"/collections/obligations/items/{f['id']}").json()
        assert one["id"] == f["id"] and one["properties"] == f["properties"]
        assert one["geometry"] == f["geometry"]
        assert {ln["rel"] for ln in one["links"]} >= {"self", "collection"}
    assert client.get("/collections/obligations/items/0").status_code == 404
    assert client.get("/collections/obligations/items/3001").status_code == 404
    assert client.get("/collections/nope/items").status_code == 404


def test_bbox_equals_shapely_intersects(client, state):
    gdf = state.tables["obligations"].gdf.to_crs("OGC:CRS84")
    x0, y0, x1, y1 = gdf.total_bounds
    box = (x0 + (x1 - x0) * 0.3, y0 + (y1 - y0) * 0.4, x0 + (x1 - x0) * 0.55,
           y0 + (y1 - y0) * 0.6)
    want = np.flatnonzero(gdf.intersects(shapely.box(*box)).to_numpy()) + 1
    assert 0 < len(want) < len(gdf)
    got = _pages(client, "/collections/obligations/items?limit=1000&bbox="
                 + ",".join(repr(float(v)) for v in box))
    assert [f["id"] for f in got] == want.tolist()
    # the same box in the working CRS (bbox-crs): the box's projected outline
    t = Transformer.from_crs("OGC:CRS84", "EPSG:2260", always_xy=True)
    bx0, by0 = t.transform(box[0], box[1])
    bx1, by1 = t.transform(box[2], box[3])
    work = state.tables["obligations"].gdf
    want2 = np.flatnonzero(work.intersects(shapely.box(bx0, by0, bx1, by1)).to_numpy()) + 1
    got2 = _pages(client, f"/collections/obligations/items?limit=1000&bbox={bx0},{by0},"
                  f"{bx1},{by1}&bbox-crs={urllib.parse.quote(EPSG.format(2260))}")
    assert [f["id"] for f in got2] == want2.tolist()


def test_property_filter_equals_a_query(client, state):
    df = state.tables["obligations"].gdf
    want = (np.flatnonzero((df["status"] == "required").to_numpy()) + 1).tolist()
    got = _pages(client, "/collections/obligations/items?status=required&limit=100")
    assert [f["id"] for f in got] == want and want
    both = _pages(client, "/collections/obligations/items?status=required&measure="
                  + str(df["measure"].iloc[0]) + "&limit=100")
    assert len(both) == int(((df["status"] == "required")
                             & (df["measure"] == df["measure"].iloc[0])).sum())
    r = client.get("/collections/obligations/items?colour=red")
    assert r.status_code == 400 and "unknown parameter" in r.json()["detail"]
    for bad in ("limit=0", "limit=x", "offset=-1", "bbox=1,2,3", "limit=10001",
                "offset=10000001", "crs="):
        assert client.get(f"/collections/obligations/items?{bad}").status_code == 400, bad


@pytest.mark.parametrize("code", [2260, 4326, 3857])
def test_crs_answers_equal_pyproj(client, state, code):
    """Part 2 /req/crs/fc-crs-valid-value, ogc-crs-header: coordinates are the pyproj
    transform (in the CRS's axis order: EPSG:4326 is lat, lon) and Content-Crs says so."""
    uri = EPSG.format(code)
    r = client.get(f"/collections/input_manholes/items?limit=20&crs={urllib.parse.quote(uri)}")
    assert r.status_code == 200
    assert r.headers["content-crs"] == f"<{uri}>"
    mh = state.town.layers["manholes"]
    t = Transformer.from_crs(mh.crs, CRS.from_epsg(code))  # authority axis order
    for f in r.json()["features"]:
        p = mh.geometry.iloc[f["id"] - 1]
        assert np.allclose(f["geometry"]["coordinates"], t.transform(p.x, p.y),
                           rtol=0, atol=1e-6)
    default = client.get("/collections/input_manholes/items?limit=1")
    assert default.headers["content-crs"] == f"<{CRS84_URI}>"
    p = mh.geometry.iloc[0]
    lon, lat = Transformer.from_crs(mh.crs, "OGC:CRS84", always_xy=True).transform(p.x, p.y)
    assert np.allclose(default.json()["features"][0]["geometry"]["coordinates"], (lon, lat),
                       atol=1e-9)
    bad = client.get(f"/collections/input_manholes/items?crs={EPSG.format(32618)}")
    assert bad.status_code == 400


def test_results_layer_pages_and_points_to_the_collection(client):
    r = client.get("/results/obligations?limit=20&offset=40")
    body = r.json()
    assert (body["numberMatched"], body["numberReturned"], len(body["features"])) == \
        (3000, 20, 20)
    assert "/collections/obligations/items" in r.headers["link"]
    whole = client.get("/results/plants").json()
    assert "numberMatched" not in whole and whole["features"]




@pytest.mark.slow
def test_gdal_oapif_client_reads_a_collection(sample_dir, state):
    """GDAL's OGC API - Features driver (an independent client, as QGIS's provider)
    lists the collections of ``gisnet serve`` and reads one whole, paging itself;
    the same URL is a layer path gisnet reads (``OAPIF:http://...``)."""
    if "OAPIF" not in pyogrio.list_drivers():
        pytest.skip("this GDAL has no OAPIF driver")
    with gisnet_serve(["--layers", str(sample_dir)]) as (base, _):
        names = [n for n, _ in pyogrio.list_layers(f"OAPIF:{base}")]
        assert "obligations" in names and "input_parcels" in names
        got = pyogrio.read_dataframe(f"OAPIF:{base}", layer="obligations")
        want = state.tables["obligations"].gdf
        assert len(got) == len(want) == 3000
        assert got["parcel_id"].tolist() == want["parcel_id"].tolist()
        assert got["status"].tolist() == want["status"].tolist()
        assert np.allclose(gpd.GeoSeries(got.geometry).to_crs(2260).area,
                           want.area, rtol=1e-6)
        # and as a gisnet layer source
        from gisnet.io.reading import read_layer

        mains = read_layer(f"OAPIF:{base}", layer="input_mains", role="mains")
        assert len(mains) == len(state.town.layers["mains"])


@pytest.mark.parametrize("held_as_wkb", [False, True])
def test_extent_and_bbox_of_a_layer_of_many_chunks(held_as_wkb):
    """A collection's extent is the CRS84 bounds of all its shapes, found a chunk at a
    time without holding them in CRS84; a bbox search then builds its index and finds
    what a brute-force intersects finds. The same whether the table holds its
    shapes or their WKB."""
    import pyarrow as pa

    from gisnet.service.ogc import CRS84, Collection
    from gisnet.service.tables import PACK_CHUNK_ROWS, LayerLater, ResultTable, Shapes

    rng = np.random.default_rng(5)
    n = 2 * PACK_CHUNK_ROWS + 77
    xy = rng.uniform([600_000, 980_000], [700_000, 1_080_000], size=(n, 2))
    gdf = gpd.GeoDataFrame({"parcel_id": [f"P{i}" for i in range(n)]},
                           geometry=shapely.buffer(shapely.points(xy), 20, quad_segs=1),
                           crs="EPSG:2260")
    gdf.loc[7, "geometry"] = None
    layer = (LayerLater(gdf.drop(columns="geometry"),
                        Shapes(pa.array(shapely.to_wkb(gdf.geometry.array), pa.binary()),
                               gdf.crs))
             if held_as_wkb else gdf)
    table = ResultTable("obligations", layer, ("parcel_id",), eager=False)
    coll = Collection("obligations", table, "Obligations", "", CRS("EPSG:2260"))
    lonlat = np.asarray(gdf.geometry.to_crs("OGC:CRS84").array, dtype=object)
    shown = lonlat[~(shapely.is_missing(lonlat) | shapely.is_empty(lonlat))]
    assert coll.extent() == [float(v) for v in shapely.total_bounds(shown)]
    assert coll._index is None and (table._gdf is None) == held_as_wkb
    x0, y0, x1, y1 = coll.extent()
    box = [x0 + (x1 - x0) * 0.4, y0 + (y1 - y0) * 0.4, x0 + (x1 - x0) * 0.45,
           y0 + (y1 - y0) * 0.47]
    want = np.flatnonzero(shapely.intersects(lonlat, shapely.box(*box)))
    # by the box's bounds (the CRS84 of the collection's list), and by its shape
    got = coll.select(box, CRS84, {})
    assert len(want) > 10 and got.tolist() == want.tolist()
    assert coll.select(box, CRS.from_user_input("OGC:CRS84"), {}).tolist() == want.tolist()
    assert coll._index is not None and (table._gdf is None) == held_as_wkb
    # the rows a search tests are made in CRS84 exactly as the extent's and index's
    rows = np.array([n - 1, 0, 7, 9000, 20_000])
    made = coll._crs84_at(rows)
    assert made[2] is None and shapely.equals_exact(made[[0, 1, 3, 4]],
                                                    lonlat[rows[[0, 1, 3, 4]]], 0).all()
    assert shapely.equals_exact(table.geometry_at(rows[[0, 1, 3, 4]]),
                                gdf.geometry.array[rows[[0, 1, 3, 4]]], 0).all()


def test_the_bounds_index_finds_what_an_strtree_finds():
    """The bbox search's index (bounds, no shapes held) finds, for boxes,
    points, segments, a turned polygon and a box across the antimeridian, the rows
    shapely's STRtree finds with the predicate intersects; missing and empty shapes
    are never found."""
    from gisnet.service.bbox import NODE, BoundsIndex

    rng = np.random.default_rng(11)
    n = 5 * NODE * NODE + 13  # three levels' worth, the last nodes short
    xy = rng.uniform([-179.9, -60], [179.9, 60], size=(n, 2))
    kind = rng.integers(0, 3, n)
    step = np.array([0.7, 0.3])
    shapes = np.where(kind == 0, shapely.buffer(shapely.points(xy), 0.4, quad_segs=2),
                      np.where(kind == 1, shapely.linestrings(np.stack([xy, xy + step], axis=1)),
                               shapely.points(xy)))
    shapes[[3, 500, n - 1]] = None
    shapes[[4, 900]] = shapely.from_wkt("POLYGON EMPTY")
    shapes[5] = shapely.box(170, 10, 180, 12)
    asked = []

    def shapes_of(rows):
        asked.append(rows)
        return shapes[rows]

    index = BoundsIndex([shapes[a:a + 7000] for a in range(0, n, 7000)], shapes_of)
    tree = shapely.STRtree(shapes)
    boxes = [shapely.box(x, y, x + w, y + h) for x, y, w, h in
             rng.uniform([-179, -59, 0.1, 0.1], [170, 50, 9, 9], size=(30, 4))]
    boxes += [shapely.Point(xy[10]), shapely.Point(float(xy[11, 0]), float(xy[11, 1]) + 1e-9),
              shapely.LineString([(0, -70), (0, 70)]), shapely.box(-180, -90, 180, 90),
              shapely.affinity.rotate(shapely.box(-20, -20, 20, 20), 30),
              shapely.union(shapely.box(175, 5, 180, 15), shapely.box(-180, 5, -170, 15)),
              shapely.box(0, 80, 10, 85)]
    for box in boxes:
        want = np.sort(tree.query(box, predicate="intersects"))
        got = index.query(box)
        assert got.tolist() == want.tolist(), box.wkt[:60]
        if shapely.equals(box, shapely.envelope(box)):  # a rectangle, segment or point
            assert index.query_bounds(*box.bounds).tolist() == want.tolist(), box.wkt[:60]
    # the shapes are asked for only where the bounds do not decide: none for a box
    # around them all; for a box, only rows whose bounds hold one of its corners or
    # reach across it
    asked.clear()
    assert len(index.query(shapely.box(-200, -100, 200, 100))) == n - 5 and not asked
    for box in boxes[:30]:
        asked.clear()
        index.query(box)
        if not asked:
            continue
        x0, y0, x1, y1 = box.bounds
        b = shapely.bounds(shapes[asked[0]])
        across_x = (b[:, 0] < x0) & (b[:, 2] > x1)
        across_y = (b[:, 1] < y0) & (b[:, 3] > y1)
        corner = (((b[:, 0] < x0) & (b[:, 2] >= x0)) | ((b[:, 0] <= x1) & (b[:, 2] > x1))) & \
                 (((b[:, 1] < y0) & (b[:, 3] >= y0)) | ((b[:, 1] <= y1) & (b[:, 3] > y1)))
        assert len(asked) == 1 and (across_x | across_y | corner).all(), box.wkt
    # a shape across a box's corner, and a two-part shape whose parts lie either side
    # of it, are tested, not taken by their bounds
    tricky = np.array([shapely.LineString([(0, 2), (2, 0)]),
                       shapely.MultiPoint([(-1, 0.5), (2, 0.5)]),
                       shapely.LineString([(-1, 0.5), (2, 0.5)]),
                       shapely.LineString([(0.5, -1), (0.5, 0.2)])], dtype=object)
    small = BoundsIndex([tricky], lambda rows: tricky[rows])
    want = np.flatnonzero(shapely.intersects(tricky, shapely.box(0, 0, 1, 1)))
    assert small.query(shapely.box(0, 0, 1, 1)).tolist() == want.tolist() == [0, 2, 3]


def test_items_pages_are_made_on_at_most_page_threads_at_once(state, monkeypatch):
    """Many items pages asked at once are made at most PAGE_THREADS at a time (a page
    holds the GIL between short releases: more threads than that only wait), and
    every one is answered."""
    import asyncio
    import threading
    import time

    import httpx

    from gisnet.service import ogc

    app = create_app(state)
    lock, now, most = threading.Lock(), [0], [0]
    made = ogc.Collection.fragments

    def counted(self, pos, crs):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.02)
        try:
            return made(self, pos, crs)
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(ogc.Collection, "fragments", counted)

    async def ask() -> list[int]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://gisnet") as cl:
            rs = await asyncio.gather(*[
                cl.get(f"/collections/obligations/items?limit=5&offset={5 * i}")
                for i in range(12)])
        return [r.status_code for r in rs]

    assert asyncio.run(ask()) == [200] * 12
    assert most[0] == ogc.PAGE_THREADS
