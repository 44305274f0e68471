"""PostGIS in and out, on a real server (tests/pg.py starts a throw-away cluster).

The sample town is loaded into PostGIS as its shapefiles read, then:
- read back through ``PG:``/``postgresql://`` layer paths (town file and
  ``--mains`` overrides, a view, a SQL query) it gives the same results, row for
  row, as the shapefiles;
- ``gisnet run --out postgresql://...`` writes tables equal to the GeoPackage's
  layers, with a primary key, a GiST index, the SRID, column comments and a
  ``gisnet_runs`` row;
- a run killed in the middle of writing leaves the previous tables whole;
- no password ever appears in a message.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pg
import pyogrio
import pytest
import shapely

from gisnet.errors import LayerError
from gisnet.io import load_town
from gisnet.io.postgis import parse_database, redact
from gisnet.io.reading import read_layer
from gisnet.output._testhooks import KILL_HOOK
from gisnet.pipeline import analyse

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    c = pg.start_cluster()
    try:
        layers = {p.stem: pyogrio.read_dataframe(p) for p in sorted(SAMPLE.glob("*.shp"))}
        pg.load_layers(c, layers, schema="sample")
        yield c
    finally:
        pg.stop_cluster(c)


def pg_town_file(folder: Path, source: str) -> Path:
    """The sample town file with every shapefile replaced by its PostGIS table."""
    text = (SAMPLE / "gisnet.toml").read_text()
    text = re.sub(r'path = "(\w+)\.shp"',
                  lambda m: f'path = "{source}"\nlayer = "sample.{m.group(1)}"', text)
    text = text.replace('path = "plant_flows.csv"', f'path = "{SAMPLE / "plant_flows.csv"}"')
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gisnet.toml").write_text(text)
    return folder


@pytest.fixture(scope="module")
def shapefile_results():
    return analyse(load_town(SAMPLE)).layers()


def assert_same_layers(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert list(a) == list(b)
    for name in a:
        x, y = a[name], b[name]
        assert list(x.columns) == list(y.columns), name
        assert len(x) == len(y), name
        if isinstance(x, gpd.GeoDataFrame):
            gx, gy = np.asarray(x.geometry.array), np.asarray(y.geometry.array)
            assert bool(np.all(shapely.equals_exact(gx, gy, 0) | (shapely.is_missing(gx) &
                                                                  shapely.is_missing(gy)))), name
            x, y = pd.DataFrame(x.drop(columns=x.geometry.name)), \
                pd.DataFrame(y.drop(columns=y.geometry.name))
        pd.testing.assert_frame_equal(x.reset_index(drop=True), y.reset_index(drop=True),
                                      check_exact=True, obj=name)


def test_sample_town_from_postgis_gives_the_shapefile_results(cluster, tmp_path,
                                                              shapefile_results):
    for source in (cluster.pg, cluster.url):
        town = load_town(pg_town_file(tmp_path / source[:2], source))
        assert {r: len(g) for r, g in town.layers.items()} == \
            {r: len(g) for r, g in load_town(SAMPLE).layers.items()}
        assert_same_layers(shapefile_results, analyse(town).layers())


def test_a_mains_override_reads_postgis(cluster, shapefile_results):
    town = load_town(SAMPLE, overrides={"mains": cluster.pg + " tables=sample.mains"})
    assert town.sources["mains"] == cluster.pg + " tables=sample.mains"
    ref = load_town(SAMPLE)
    a, b = town.layers["mains"], ref.layers["mains"]
    assert list(a["main_id"]) == list(b["main_id"])
    assert bool(a.geometry.geom_equals_exact(b.geometry, 0).all())


def test_view_and_query_as_layer(cluster):
    with cluster.connect() as conn:
        cols = [r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema='sample' "
            "AND table_name='parcels'")]
        key = next(c for c in cols if c.upper() == "PRINT_KEY")
        conn.execute(f'CREATE OR REPLACE VIEW sample.some_parcels AS SELECT * FROM '
                     f'sample.parcels WHERE "{key}" LIKE \'%-10-1%\'')
    shp = pyogrio.read_dataframe(SAMPLE / "parcels.shp")
    want = shp[shp[key].str.contains("-10-1")].reset_index(drop=True)
    view = read_layer(cluster.url, layer="sample.some_parcels")
    query = read_layer(cluster.pg, layer=f'SELECT * FROM sample.parcels WHERE "{key}" '
                                         f"LIKE '%-10-1%' ORDER BY fid")
    where = read_layer(cluster.pg, layer="sample.parcels", where=f"\"{key}\" LIKE '%-10-1%'")
    assert 0 < len(want) < len(shp)
    none = read_layer(cluster.pg, layer="sample.parcels", where="false")
    assert len(none) == 0  # an empty answer is the loader's 'empty layer', not a CRS error
    for got in (view, where):
        assert sorted(got[key]) == sorted(want[key])
        assert got.crs.to_epsg() == 2260
    # the query keeps its fid column (it is no table's key): everything else as the file
    assert list(query[key]) == list(want[key]) and query.crs == shp.crs
    assert bool(where.geometry.geom_equals_exact(want.geometry, 0).all())


@pytest.mark.parametrize("form", ["url", "pg", "pg-quoted", "query"])
def test_no_password_in_any_message(cluster, form):
    secret = "Hunter2-xyzzy"
    source = {
        "url": cluster.url.replace("postgres@", f"postgres:{secret}@"),
        "pg": f"{cluster.pg} password={secret}",
        "pg-quoted": f"{cluster.pg} password='{secret} with space'",
        "query": cluster.url + f"?password={secret}&sslmode=disable",
    }[form]
    with pytest.raises(LayerError) as e:  # wrong password: the server refuses it
        read_layer(source, layer="sample.parcels", role="parcels")
    msg = str(e.value)
    assert secret not in msg and "with space" not in msg
    assert "***" in msg and "password authentication failed" in msg
    # through the command line: one line, exit 2, no password
    r = subprocess.run([sys.executable, "-m", "gisnet", "validate", "--layers", str(SAMPLE),
                        "--mains", source], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2, r.stderr
    assert secret not in r.stderr + r.stdout and "Traceback" not in r.stderr


def test_no_such_table_names_the_source(cluster):
    with pytest.raises(LayerError, match=r"postgres@127\.0\.0\.1.*mains.*nope"):
        read_layer(cluster.url, layer="sample.nope", role="mains")
    with pytest.raises(LayerError, match="needs its table"):
        read_layer(cluster.url, role="mains")


def test_redact_and_parse():
    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("PG:dbname=x password='a b' host=h") == "PG:dbname=x password=*** host=h"
    assert redact("https://u:pw@host/wfs?x=1") == "https://u:***@host/wfs?x=1"
    d = parse_database("postgresql://u@h:5/db?schema=gis&sslmode=require")
    assert (d.schema, d.dsn) == ("gis", "postgresql://u@h:5/db?sslmode=require")
    d = parse_database("PG:dbname=db tables=a.b schemas=s")
    assert (d.dsn, d.table, d.schema) == ("dbname=db", "a.b", "s")


# --------------------------------------------------------------------------- output


def _gisnet_run(out: str, *extra: str, env: dict[str, str] | None = None):
    return subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(SAMPLE),
                           "--out", out, "--no-maps", "-q", *extra], capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _tables(cluster, schema: str) -> dict[str, pd.DataFrame]:
    from gisnet.io.postgis import read_postgis

    with cluster.connect() as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name NOT IN ('gisnet_runs', 'register') ORDER BY 1", (schema,))]
    return {n: read_postgis(cluster.url, layer=f"{schema}.{n}") for n in names}


def test_results_written_to_postgis_equal_the_geopackage(cluster, tmp_path):
    r = _gisnet_run(f"{cluster.url}?schema=results")
    assert r.returncode == 0, r.stderr
    assert _gisnet_run(str(tmp_path / "out")).returncode == 0
    gpkg = tmp_path / "out" / "gisnet-results.gpkg"
    want = {n: pyogrio.read_dataframe(gpkg, layer=n) for n, _ in pyogrio.list_layers(gpkg)
            if n != "layer_styles"}  # QGIS styles table of the GeoPackage
    got = _tables(cluster, "results")
    assert sorted(got) == sorted(want)
    for name in want:
        w, g = want[name], got[name]
        assert list(g.columns) == list(w.columns), name
        if isinstance(w, gpd.GeoDataFrame) and w.geometry.name in w:
            if len(w):  # (an empty table has no row to read its SRID from: changes, overdue)
                assert g.crs.to_epsg() == w.crs.to_epsg() == 2260
            gw, gg = np.asarray(w.geometry.array), np.asarray(g.geometry.array)
            assert bool(np.all(shapely.equals_exact(gw, gg, 0)
                               | (shapely.is_missing(gw) & shapely.is_missing(gg)))), name
            w, g = pd.DataFrame(w.drop(columns="geometry")), pd.DataFrame(
                g.drop(columns="geometry"))
        for col in w.columns:
            a, b = w[col], g[col]
            if pd.api.types.is_datetime64_any_dtype(a) or pd.api.types.is_datetime64_any_dtype(b):
                a = pd.to_datetime(a).astype("datetime64[ns]")
                b = pd.to_datetime(b).astype("datetime64[ns]")
                assert a.equals(b), (name, col)
                continue
            same = (a.astype(object).where(a.notna(), None).tolist()
                    == b.astype(object).where(b.notna(), None).tolist())
            assert same, (name, col)
    with cluster.connect() as conn:
        # primary key, GiST index and SRID on every table with geometry
        rows = conn.execute("""
            SELECT c.relname, (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid
                                AND i.indisprimary),
                   (SELECT count(*) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                    JOIN pg_am am ON am.oid = ic.relam WHERE i.indrelid = c.oid
                    AND am.amname = 'gist'),
                   (SELECT srid FROM geometry_columns g WHERE g.f_table_schema = 'results'
                    AND g.f_table_name = c.relname)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'results' AND c.relkind = 'r'""").fetchall()
        info = {r[0]: r[1:] for r in rows}
        assert set(info) == set(want) | {"gisnet_runs", "register"}
        for name in want:
            pk, gist, srid = info[name]
            assert pk == 1, name
            if srid is not None:
                assert (gist, srid) == (1, 2260), name
        comment = conn.execute(
            "SELECT col_description('results.obligations'::regclass, a.attnum) FROM "
            "pg_attribute a WHERE a.attrelid = 'results.obligations'::regclass "
            "AND a.attname = 'distance_ft'").fetchone()[0]
        assert comment.endswith("[ft]") and "distance" in comment
        run = conn.execute("SELECT gisnet_version, town, profile, srid, layers, town_file "
                           "FROM results.gisnet_runs").fetchall()
        assert len(run) == 1
        version, town, profile, srid, layers, town_file = run[0]
        assert version and town == "Spackenkill sample town (synthetic)"
        assert (profile, srid) == ("poughkeepsie-fourth-ward", 2260)
        assert layers == {n: len(df) for n, df in want.items()}
        assert Path(town_file).resolve() == (SAMPLE / "gisnet.toml").resolve()


def _snapshot(cluster, schema: str) -> dict[str, list]:
    with cluster.connect() as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "ORDER BY 1", (schema,))]
        return {n: conn.execute(f'SELECT md5(string_agg(t::text, \'|\' ORDER BY t::text)), '
                                f'count(*) FROM "{schema}"."{n}" t').fetchall()
                for n in names}


def test_a_run_killed_mid_write_leaves_the_previous_results_whole(cluster):
    url = f"{cluster.url}?schema=killed"
    assert _gisnet_run(url).returncode == 0
    before = _snapshot(cluster, "killed")
    assert len(before) > 5
    # another profile gives other results; killed after its second table is written
    for point in ("postgis", "postgis-commit"):
        r = _gisnet_run(url, "--profile", "berlin-nh", env={KILL_HOOK: point})
        assert r.returncode == -signal.SIGKILL, r.stderr
        assert _snapshot(cluster, "killed") == before, point
    r = _gisnet_run(url, "--profile", "berlin-nh")
    assert r.returncode == 0, r.stderr
    after = _snapshot(cluster, "killed")
    # Berlin charges by street front footage: its run has a frontage table too
    assert set(after) == set(before) | {"frontage"} and after != before
    assert after["obligations"] != before["obligations"]
    with cluster.connect() as conn:
        assert [r[0] for r in conn.execute(
            "SELECT profile FROM killed.gisnet_runs ORDER BY finished_at")] == \
            ["poughkeepsie-fourth-ward", "berlin-nh"]
    # a Poughkeepsie run after it leaves no Berlin frontage behind
    assert _gisnet_run(url).returncode == 0
    assert set(_snapshot(cluster, "killed")) == set(before)


def test_town_file_output_and_bad_output(cluster, tmp_path):
    folder = tmp_path / "town"
    text = (SAMPLE / "gisnet.toml").read_text().replace(
        'path = "', f'path = "{SAMPLE}/') + f'\n[output]\npath = "{cluster.url}?schema=tf"\n'
    folder.mkdir()
    (folder / "gisnet.toml").write_text(text)
    r = subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(folder), "-q",
                        "--no-maps"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert len(_snapshot(cluster, "tf")) > 5
    secret = "Pw-Never-Shown"
    bad = cluster.url.replace("postgres@", f"postgres:{secret}@") + "?schema=x"
    r = _gisnet_run(bad)
    assert r.returncode == 2 and secret not in r.stderr and "***" in r.stderr, r.stderr
    r = _gisnet_run(f"{cluster.url}?schema=x", "--tables", "csv")
    assert r.returncode == 2 and "--tables" in r.stderr
    # the schema holding the input layers (a table "plants" among them) is refused whole
    before = _snapshot(cluster, "sample")
    r = _gisnet_run(f"{cluster.url}?schema=sample")
    assert r.returncode == 2 and "no gisnet run wrote" in r.stderr and "plants" in r.stderr
    assert _snapshot(cluster, "sample") == before


def test_no_password_in_run_summary(cluster, tmp_path):
    """A password in the URL (the right one) is used, and never printed or stored."""
    from pg import PASSWORD

    url = cluster.url.replace("postgres@", f"postgres:{PASSWORD}@") + "?schema=s"
    r = subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(SAMPLE),
                        "--no-maps", "--json", "--out", url], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT),
                                         "PGPASSFILE": str(tmp_path / "none")})
    assert r.returncode == 0, r.stderr
    assert PASSWORD not in r.stdout + r.stderr and "postgres:***@" in r.stdout
    with cluster.connect() as conn:
        dump = str(conn.execute("SELECT * FROM s.gisnet_runs").fetchall())
    assert PASSWORD not in dump


def test_missing_server_skips_but_fails_under_ci(monkeypatch):
    """Without the PostgreSQL binaries the database tests skip with the reason, except
    under CI=true, where the missing server is a failure."""
    monkeypatch.setattr(pg, "pg_bin", lambda: None)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL server binaries not found"):
        pg.need_postgres()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must install"):
        pg.need_postgres()


# --------------------------------------------------------------------------- hostile


#: The ``where`` that once deleted every row of the source table and committed.
PAYLOAD = "1=1; DELETE FROM mains; COMMIT; SELECT 1"


def _count(cluster, table: str) -> int:
    with cluster.connect() as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@pytest.fixture
def public_mains(cluster):
    """A copy of the sample mains as ``public.mains`` (what the payload names)."""
    with cluster.connect() as conn:
        conn.execute("DROP TABLE IF EXISTS public.mains")
        conn.execute("CREATE TABLE public.mains AS SELECT * FROM sample.mains")
    n = _count(cluster, "public.mains")
    assert n > 100
    return n


def test_a_where_cannot_write_to_the_source(cluster, tmp_path, public_mains, capsys):
    """The payload is refused before connecting: one line naming the source (without
    its password), the layer and the problem; exit 2; every row still there."""
    from gisnet.cli import main

    folder = pg_town_file(tmp_path / "town", cluster.url.replace(
        "postgres@", f"postgres:{pg.PASSWORD}@"))
    tf = folder / "gisnet.toml"
    tf.write_text(tf.read_text().replace('layer = "sample.mains"',
                                         f'layer = "mains"\nwhere = "{PAYLOAD}"'))
    capsys.readouterr()
    rc = main(["validate", "--layers", str(folder)])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("gisnet: error:")]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert re.search(r"postgres:\*\*\*@127\.0\.0\.1.*: layer 'mains': where = '1=1; DELETE "
                     r"FROM mains; COMMIT; SELECT 1' holds a ';' outside quotes", lines[0])
    assert pg.PASSWORD not in err
    assert _count(cluster, "public.mains") == public_mains


def test_what_slips_past_the_check_still_cannot_write(cluster, public_mains, monkeypatch):
    """Defence in depth: with the text check switched off, the payload reaches the
    server and still writes nothing (one statement per message); a function that
    deletes, called from a where, fails in the READ ONLY transaction; a
    data-modifying WITH as an SQL layer is refused."""
    import gisnet.io.postgis as pgio

    monkeypatch.setattr(pgio, "sql_problem", lambda text, query: None)
    with pytest.raises(LayerError, match="cannot read mains with where"):
        read_layer(cluster.url, layer="mains", where=PAYLOAD, role="mains")
    monkeypatch.undo()
    with cluster.connect() as conn:  # a function that writes, called from a where
        conn.execute("CREATE OR REPLACE FUNCTION public.wipe() RETURNS int LANGUAGE sql "
                     "AS 'DELETE FROM public.mains; SELECT 1'")
    with pytest.raises(LayerError, match="cannot execute DELETE in a read-only transaction"):
        read_layer(cluster.url, layer="mains", where="public.wipe() = 1", role="mains")
    with pytest.raises(LayerError, match="cannot read query"):
        read_layer(cluster.url, layer="WITH d AS (DELETE FROM mains RETURNING *) "
                                      "SELECT * FROM d", role="mains")
    with pytest.raises(LayerError, match="SQL layer holds a ';'"):
        read_layer(cluster.url, layer="SELECT * FROM mains; DROP TABLE mains", role="mains")
    with pytest.raises(LayerError, match="closes a parenthesis"):
        read_layer(cluster.url, layer="mains", where="true) OR (true", role="mains")
    assert _count(cluster, "public.mains") == public_mains
    # a ';' inside a string is text, not a second statement
    got = read_layer(cluster.url, layer="mains", where="'a;b' = 'a;b'", role="mains")
    assert len(got) == public_mains


def test_a_locked_previous_table_neither_hangs_the_write_nor_blocks_readers(
        cluster, monkeypatch):
    """Another client holds a previous table (idle in transaction): the write takes
    its locks with NOWAIT, so a reader arriving meanwhile is answered at once; once
    the client lets go the write completes; still held after the lock timeout, the
    write stops with one error naming the relation and the client, tables unchanged."""
    import threading
    import types

    import gisnet.output.postgis as pgout
    from gisnet.errors import ConfigError

    town = load_town(SAMPLE)
    url = f"{cluster.url}?schema=locked"

    def layers(n: int) -> dict[str, gpd.GeoDataFrame]:
        return {"obligations": gpd.GeoDataFrame(
            {"parcel_id": [f"P{i}" for i in range(n)]},
            geometry=gpd.points_from_xy(range(n), range(n)), crs=town.crs)}

    pgout.write_postgis(url, layers(2), town, run_id="r1", version="t")
    tried = threading.Event()
    real_sleep = pgout.time.sleep
    monkeypatch.setattr(pgout, "time", types.SimpleNamespace(
        monotonic=pgout.time.monotonic, sleep=lambda s: (tried.set(), real_sleep(s))))
    holder = cluster.connect()
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM locked.obligations")
        failure: list[BaseException] = []

        def write() -> None:
            try:
                pgout.write_postgis(url, layers(3), town, run_id="r2", version="t",
                                    lock_timeout_s=120)
            except BaseException as exc:  # reported below
                failure.append(exc)

        t = threading.Thread(target=write)
        t.start()
        assert tried.wait(120), "the write never met the lock"
        with cluster.connect() as reader:  # not queued behind the write
            reader.execute("SET lock_timeout = '10s'")
            assert reader.execute("SELECT count(*) FROM locked.obligations").fetchone() == (2,)
        holder.execute("COMMIT")
        t.join(120)
        assert not t.is_alive() and not failure, failure
        assert _count(cluster, "locked.obligations") == 3
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM locked.obligations")
        with pytest.raises(ConfigError) as e:
            pgout.write_postgis(url, layers(5), town, run_id="r3", version="t",
                                lock_timeout_s=0.5)
        msg = str(e.value)
        assert re.search(r"relation locked\.obligations is locked by another client \(held "
                         r"by pid \d+, .*idle in transaction", msg), msg
        assert "\n" not in msg and "postgres@127.0.0.1" in msg
        holder.execute("COMMIT")
    finally:
        holder.close()
    assert _count(cluster, "locked.obligations") == 3


def test_lock_timeout_from_the_town_file_and_the_flag(tmp_path):
    from gisnet.errors import ConfigError
    from gisnet.output.postgis import LOCK_TIMEOUT_S, lock_timeout_of
    from gisnet.townfile import read_town_file

    tf = tmp_path / "gisnet.toml"
    tf.write_text("[output]\nlock_timeout_s = 2.5\n", encoding="utf-8")
    assert read_town_file(tf).output_lock_timeout_s == 2.5
    tf.write_text("[output]\nlock_timeout_s = -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"output\.lock_timeout_s.*> 0"):
        read_town_file(tf)
    assert lock_timeout_of(None) == LOCK_TIMEOUT_S
    with pytest.raises(ConfigError, match="lock timeout"):
        lock_timeout_of(None, float("nan"))
