"""``gisnet serve --results postgresql://...?schema=NAME``: a run written into PostGIS
serves as the same run written into a folder (tests/pg.py starts a throw-away server).

The sample town is run once into a folder and once into a schema. The layers read
from the schema are the frames read from the GeoPackage (columns, types, CRS,
nulls, row order, values: exactly), the ``gisnet_runs`` row's ``town_info`` is the
manifest's, and every route family of tests/test_service_results.py answers the
same from both, to the last digit (both hold the same rounded values). A schema
that cannot be served is refused with one error naming the database (password
removed) and the problem: a run recorded before ``town_info`` was, a table whose
row count changed or that is gone, another gisnet version, no ``gisnet_runs``, no
schema, no server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import warnings

import numpy as np
import pandas as pd
import pg
import pytest
import shapely
from servers import free_port, gisnet_serve
from test_service_results import _compare, _ids

from gisnet.errors import ConfigError
from gisnet.io import load_town
from gisnet.output.publish import MANIFEST_FILE
from gisnet.output.writing import RESULTS_FILE
from gisnet.pipeline import run as run_town
from gisnet.service import ServiceLimits, TownState, create_app
from gisnet.service.stored import NOT_FROM_RESULTS, SERVED_LAYERS, read_layers, read_results

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    c = pg.start_cluster()
    try:
        yield c
    finally:
        pg.stop_cluster(c)


def _url(cluster, schema: str) -> str:
    return f"{cluster.url}?schema={schema}"


def _same_frame(got, want, name: str) -> None:
    """The same columns, dtypes, CRS, row count, shapes (exactly) and values."""
    assert list(got.columns) == list(want.columns), name
    assert [str(t) for t in got.dtypes] == [str(t) for t in want.dtypes], name
    assert got.crs == want.crs, name
    assert len(got) == len(want), name
    gw, gg = np.asarray(want.geometry.array), np.asarray(got.geometry.array)
    assert bool(np.all(shapely.equals_exact(gw, gg, 0)
                       | (shapely.is_missing(gw) & shapely.is_missing(gg)))), name
    pd.testing.assert_frame_equal(pd.DataFrame(got.drop(columns="geometry")),
                                  pd.DataFrame(want.drop(columns="geometry")),
                                  check_exact=True, obj=name)


@pytest.fixture(scope="module")
def served(cluster, sample_dir, tmp_path_factory):
    """The sample run into a folder and into schema ``served``; a client of the state
    read from each ("live": the folder, "stored": the schema, as
    tests/test_service_results.py's helpers name them)."""
    base = tmp_path_factory.mktemp("serve-results-pg")
    folder = base / "run"
    run_town(load_town(sample_dir), folder, maps=False)
    run_town(load_town(sample_dir), _url(cluster, "served"), maps=False)
    from_folder = TownState.from_results(folder)
    from_db = TownState.from_results(_url(cluster, "served"), out_dir=base / "no-maps")
    limits = ServiceLimits()
    return {"live": TestClient(create_app(from_folder, limits)),
            "stored": TestClient(create_app(from_db, limits)),
            "live_state": from_folder, "stored_state": from_db, "folder": folder}


def _same(served, method: str, path: str, status: int = 200, **kw) -> dict:
    """The answer from the schema is the answer from the folder, value for value (with
    HTTP ``status``, both)."""
    a = getattr(served["stored"], method)(path, **kw)
    b = getattr(served["live"], method)(path, **kw)
    assert (a.status_code, path) == (b.status_code, path), (a.text[:300], b.text[:300])
    assert b.status_code == status, (path, b.text[:300])
    moved: set[str] = set()
    _compare(a.json(), b.json(), path, moved)
    # nothing moved: no rounded number, and no quality/worklist shape (SHAPES_AS_WKT,
    # compared by kind only between a run and its town) either
    assert not moved, (path, moved)
    return b.json()


# --------------------------------------------------------------------------- the read


def test_tables_read_from_postgis_are_the_geopackage_layers(served, cluster):
    folder = served["folder"]
    want = read_layers(folder / RESULTS_FILE)
    got = read_results(_url(cluster, "served"))["layers"]
    assert list(got) == list(want) == [n for n in SERVED_LAYERS if n in want]
    for name, w in want.items():
        g = got[name]
        assert type(g) is type(w), name
        assert w.crs.to_epsg() == 2260, name
        _same_frame(g, w, name)
    # nulls, booleans and dates of the sample are there to be compared
    ob = want["obligations"]
    assert ob["abuts_sewered_street"].isna().any() and ob["notice_date"].notna().any()
    assert str(ob["notice_date"].dtype).startswith("datetime64")


def test_gisnet_runs_records_the_manifests_town_info(served, cluster):
    man = json.loads((served["folder"] / MANIFEST_FILE).read_text(encoding="utf-8"))
    with cluster.connect() as conn:
        info, layers = conn.execute("SELECT town_info, layers FROM served.gisnet_runs").fetchone()
    assert info == man["town_info"]
    assert info["layers"] and info["profile"] and info["crs"]
    run = served["stored_state"].run
    assert run["gisnet_version"] == man["gisnet_version"]
    assert (run["town"], run["profile_id"]) == (man["town"], man["profile_id"])
    assert run["created_utc"].endswith("+00:00") and run["run_id"] != man["run_id"]
    assert {k: v for k, v in layers.items() if k in SERVED_LAYERS} == \
        {k: len(v) for k, v in served["live_state"].tables.items() if k != "parcels"}


# --------------------------------------------------------------------------- the routes


def test_result_layers_parcels_pipes_plants_are_the_same(served):
    for path in ("/health", "/parcels", "/results", "/pipes", "/pipes?min_utilization=0.5",
                 "/plants", "/labels", "/conformance"):
        _same(served, "get", path)
    for name in served["live_state"].tables:
        if name != "parcels":
            _same(served, "get", f"/results/{name}")
            _same(served, "get", f"/results/{name}?limit=7&offset=3&crs=EPSG:2260")


def test_town_summary_is_the_same(served):
    a = served["stored"].get("/town").json()
    b = served["live"].get("/town").json()
    sa, sb = a.pop("startup_s"), b.pop("startup_s")
    assert a == b
    assert set(NOT_FROM_RESULTS) <= set(a["unavailable"])
    assert set(sa) == set(sb) and {"check", "read", "graph", "index"} <= set(sa)


def test_parcel_lookups_and_downstream_traces_are_the_same(served):
    pids = _ids(served, "obligations", "parcel_id", 40)
    assert len(pids) == 40
    for pid in pids:
        _same(served, "get", f"/parcels/{pid}/obligation")
        _same(served, "get", f"/trace/downstream?parcel={pid}")
    _same(served, "post", "/obligations", json={"parcel_ids": [*pids, "nope"]})
    cm = served["live_state"].tables["control_manholes"].gdf.dropna(subset=["geometry"])
    for g in cm.geometry.iloc[:: max(1, len(cm) // 15)]:
        _same(served, "get", f"/trace/downstream?x={g.x + 7}&y={g.y - 4}&crs=EPSG:2260")
    ll = cm.to_crs(4326).geometry.iloc[5]
    _same(served, "get", f"/trace/downstream?x={ll.x}&y={ll.y}")
    _same(served, "get", "/trace/downstream?x=0&y=0&crs=EPSG:2260", 422)


def test_control_manholes_by_id_are_the_same(served):
    for key, col in (("parcel_ids", "parcel_id"), ("building_ids", "building_id"),
                     ("user_ids", "user_id")):
        ids = _ids(served, "control_manholes", col, 30)
        assert ids
        _same(served, "post", "/control-manholes", json={key: [*ids, "x?"]})


def test_whatif_is_the_same(served):
    pids = _ids(served, "obligations", "parcel_id", 25,
                lambda g: g["status"] != "not_required")
    for i, pid in enumerate(pids):
        _same(served, "post", "/whatif", json={"parcel_id": pid, "flow_gpd": 400.0 * (i + 1),
                                               "industrial": i % 3 == 0})
    cm = served["live_state"].tables["control_manholes"].gdf.dropna(subset=["geometry"])
    for g in cm.geometry.iloc[:: max(1, len(cm) // 10)]:
        _same(served, "post", "/whatif", json={"point": [g.x + 3, g.y + 3], "crs": "EPSG:2260",
                                               "flow_gpd": 25_000})
    _same(served, "post", "/whatif", 404, json={"parcel_id": "no such parcel", "flow_gpd": 10})


def test_ogc_collections_are_the_same(served):
    cols = _same(served, "get", "/collections")["collections"]
    assert cols
    for c in cols:
        cid = c["id"]
        if cid.startswith("input_"):  # the town's own layers: not in the results
            _same(served, "get", f"/collections/{cid}", 503)
            continue
        _same(served, "get", f"/collections/{cid}")
        items = _same(served, "get", f"/collections/{cid}/items?limit=5")
        for f in items["features"][:2]:
            _same(served, "get", f"/collections/{cid}/items/{f['id']}")
    r = served["stored"].get("/collections/input_parcels")
    assert r.status_code == 503 and "input layer" in r.text


def test_what_results_cannot_answer_is_503_from_both(served):
    mh = served["live_state"].tables["control_manholes"].gdf["control_manhole_id"].dropna()
    _same(served, "get", f"/manholes/{mh.iloc[0]}/upstream", 503)
    feat = {"type": "Feature", "properties": {"id": "new"},
            "geometry": {"type": "Point", "coordinates": [656000.0, 1033800.0]}}
    for route in ("/obligations", "/control-manholes"):
        body = {"features": {"type": "FeatureCollection", "features": [feat]},
                "crs": "EPSG:2260"}
        _same(served, "post", route, 503, json=body)


# --------------------------------------------------------------------------- the command


def test_the_command_serves_the_schema_and_the_maps_of_out(served, cluster, tmp_path):
    maps = tmp_path / "maps"
    maps.mkdir()
    (maps / "index.html").write_text("<html>the maps</html>", encoding="utf-8")
    url = cluster.url.replace("postgres@", f"postgres:{pg.PASSWORD}@") + "?schema=served"
    with gisnet_serve(["--results", url, "--out", str(maps)]) as (base, _proc):
        with urllib.request.urlopen(base + "/town", timeout=30) as r:
            town = json.loads(r.read())
        with urllib.request.urlopen(base + "/maps/index.html", timeout=30) as r:
            page = r.read().decode()
    want = served["live"].get("/town").json()
    assert town["results"] == want["results"] and town["layers"] == want["layers"]
    assert page == "<html>the maps</html>"
    # the GDAL-style PG: string names the same schema
    state = TownState.from_results(f"{cluster.pg} schemas=served", out_dir=tmp_path)
    assert state.run == served["stored_state"].run


# --------------------------------------------------------------------------- refused


def _run_into(cluster, sample_dir, schema: str) -> None:
    run_town(load_town(sample_dir), _url(cluster, schema), maps=False)


def _refused(cluster, schema: str, match: str) -> str:
    with pytest.raises(ConfigError, match=match) as e:
        TownState.from_results(_url(cluster, schema), out_dir=".")
    msg = str(e.value)
    assert msg.startswith(_url(cluster, schema) + ": ") and "\n" not in msg, msg
    return msg


def test_a_run_recorded_before_town_info_is_refused_and_a_new_run_adds_it(
        cluster, sample_dir):
    """A gisnet_runs table of an earlier gisnet has no town_info column: refused; the
    next run adds the column (earlier rows keep a null) and is served."""
    _run_into(cluster, sample_dir, "old")
    with cluster.connect() as conn:
        conn.execute("ALTER TABLE old.gisnet_runs DROP COLUMN town_info")
    _refused(cluster, "old", r"run \S+ in old\.gisnet_runs has no town_info record of "
                             r"format 1 \(written by gisnet before .*run `gisnet run` again")
    _run_into(cluster, sample_dir, "old")
    with cluster.connect() as conn:
        rows = conn.execute("SELECT run_id, town_info IS NULL FROM old.gisnet_runs "
                            "ORDER BY finished_at").fetchall()
    assert [null for _run, null in rows] == [True, False]
    state = TownState.from_results(_url(cluster, "old"), out_dir=".")
    assert state.run["run_id"] == rows[-1][0]  # the newest run
    # the newest row without its record is refused again
    with cluster.connect() as conn:
        conn.execute("UPDATE old.gisnet_runs SET town_info = '{\"format\": 0}'::jsonb "
                     "WHERE run_id = %s", (rows[-1][0],))
    _refused(cluster, "old", "has no town_info record of format 1")


def test_a_changed_or_missing_table_and_another_version_are_refused(
        cluster, sample_dir, served):
    _run_into(cluster, sample_dir, "changed")
    n = len(read_layers(served["folder"] / RESULTS_FILE)["obligations"])
    with cluster.connect() as conn:
        conn.execute("DELETE FROM changed.obligations WHERE fid IN "
                     "(SELECT fid FROM changed.obligations ORDER BY fid DESC LIMIT 2)")
    msg = _refused(cluster, "changed", "changed since the run")
    assert f"table changed.obligations has {n - 2} rows, run " in msg
    assert f" wrote {n} (as gisnet_runs records)" in msg
    # a layer no longer served from the folder either (changes) counts as well
    with cluster.connect() as conn:
        conn.execute("INSERT INTO changed.obligations SELECT * FROM served.obligations "
                     "ORDER BY fid DESC LIMIT 2")
        conn.execute("DROP TABLE changed.changes")
    _refused(cluster, "changed", r"table changed\.changes is missing: run \S+ wrote it "
                                 r"with 0 rows")
    with cluster.connect() as conn:
        conn.execute("CREATE TABLE changed.changes (fid bigint PRIMARY KEY)")
        conn.execute("UPDATE changed.gisnet_runs SET gisnet_version = '0.0.1'")
    _refused(cluster, "changed", r"written by gisnet 0\.0\.1, this is gisnet")
    with cluster.connect() as conn:
        conn.execute("UPDATE changed.gisnet_runs SET gisnet_version = %s",
                     (served["stored_state"].run["gisnet_version"],))
    assert TownState.from_results(_url(cluster, "changed"), out_dir=".").run["run_id"]


def test_no_gisnet_runs_no_schema_no_server_name_the_database(cluster):
    with cluster.connect() as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS bare")
        conn.execute("CREATE TABLE IF NOT EXISTS bare.obligations (fid bigint)")
    _refused(cluster, "bare", "schema bare has no gisnet_runs table")
    _refused(cluster, "nowhere", "the database has no schema nowhere")
    with cluster.connect() as conn:
        conn.execute("CREATE TABLE bare.gisnet_runs (run_id text, finished_at timestamptz)")
    _refused(cluster, "bare", "bare.gisnet_runs records no run")
    # the command: exit 2, one line naming the database without its password
    secret = "Not-The-Pw-42"
    dead = free_port()  # nothing listens there
    for url, says in (
            (_url(cluster, "bare"), "no run"),
            (_url(cluster, "nowhere"), "no schema nowhere"),
            (cluster.url.replace("postgres@", f"postgres:{secret}@") + "?schema=served",
             "password authentication failed"),
            (f"postgresql://postgres:{secret}@127.0.0.1:{dead}/town?schema=served",
             "cannot connect to the results database"),
            (f"{cluster.pg} password={secret} schemas=served", "password authentication")):
        r = subprocess.run([sys.executable, "-m", "gisnet", "serve", "--results", url,
                            "--port", "0"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONWARNINGS": "ignore"})
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2, r.stderr
        assert len(lines) == 1 and says in lines[0] and "Traceback" not in r.stderr, r.stderr
        assert secret not in r.stderr + r.stdout and "127.0.0.1" in lines[0], r.stderr
        if secret in url:
            assert "***" in lines[0], lines[0]


# --------------------------------------------------------------------------- the reader


def test_the_read_is_one_read_only_snapshot(cluster, served, monkeypatch):
    """The check and the tables are read in one READ ONLY, REPEATABLE READ transaction
    with a statement timeout: a write there fails, naming the database."""
    import gisnet.service.stored_pg as spg

    real = spg.check_results_schema
    seen: dict[str, str] = {}

    def writing(cur, db, schema):
        for name in ("transaction_isolation", "transaction_read_only", "statement_timeout"):
            cur.execute(f"SHOW {name}")
            seen[name] = cur.fetchone()[0]
        man = real(cur, db, schema)
        cur.execute("CREATE TABLE served.intruder (a int)")
        return man

    monkeypatch.setattr(spg, "check_results_schema", writing)
    with pytest.raises(ConfigError, match="cannot execute CREATE TABLE in a read-only "
                                          "transaction") as e:
        TownState.from_results(_url(cluster, "served"), out_dir=".")
    assert str(e.value).startswith(cluster.url)
    assert seen == {"transaction_isolation": "repeatable read", "transaction_read_only": "on",
                    "statement_timeout": "10min"}


def test_every_column_type_reads_as_pyogrio_reads_the_geopackage(cluster, tmp_path):
    """A layer with every kind of column gisnet writes (nullable booleans and integers,
    times with and without a zone, text with quotes and line ends, an all-null
    column, a null shape), written as ``gisnet run`` writes it to each, reads from
    PostGIS as pyogrio reads it from the GeoPackage; empty, too."""
    import geopandas as gpd
    import pyogrio

    from gisnet.output.postgis import copy_table
    from gisnet.output.writing import file_form, gpkg_ready, write_layer
    from gisnet.service.stored_pg import read_table

    n = 7
    rng = np.random.default_rng(3)
    frame = gpd.GeoDataFrame({
        "flag": rng.random(n) > 0.5,
        "maybe": pd.array([True, None, False, True, None, False, True], dtype="boolean"),
        "count": rng.integers(-5, 10**12, n),
        "some": pd.array([1, None, 3, None, 5, 6, 2**40], dtype="Int64"),
        "length_ft": np.where(rng.random(n) > 0.3, rng.random(n) * 1e4, np.nan),
        "ratio": rng.random(n) / 3,
        "text": ["a", None, "", "comma, \"quote\"", "line\nend", "§ 168-22.2G", "ü"],
        "at": pd.to_datetime(["2024-01-01T10:00:00Z", None, "2024-05-01T00:00:00.125Z",
                              "1999-12-31T23:59:59Z", None, "2030-06-30T12:00:00Z",
                              "2024-02-29T00:00:00Z"], utc=True, format="ISO8601"),
        "day": pd.to_datetime(["2009-07-01", None, "2026-03-02", None, "2000-01-01",
                               "2024-12-31", "1970-01-01"]).astype("datetime64[ms]"),
        "nothing": [None] * n,
        "never": pd.Series([pd.NaT] * n, dtype="datetime64[ms, UTC]"),
    }, geometry=[shapely.Point(i, 2 * i) if i != 3 else None for i in range(n)],
        crs="EPSG:2260")
    with cluster.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS kinds")
        for name, df in (("every", frame), ("none", frame.iloc[:0])):
            cur.execute(f"DROP TABLE IF EXISTS kinds.{name}")
            copy_table(cur, "kinds", name, gpkg_ready(file_form(name, df)), 2260)
            write_layer(tmp_path / "kinds.gpkg", name, df)
    with cluster.connect() as conn, conn.transaction():  # (a server-side cursor's)
        for name in ("every", "none"):
            want = pyogrio.read_dataframe(tmp_path / "kinds.gpkg", layer=name, use_arrow=True)
            got = read_table(conn, "kinds", name)
            if name == "every":  # (a zone kept where a value has it)
                assert str(got.dtypes["at"]) == "datetime64[ms, UTC]"
                assert got["text"].tolist()[2:5] == ["", 'comma, "quote"', "line\nend"]
            _same_frame(got, want, name)
