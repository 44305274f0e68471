"""A finished run read from PostGIS (``gisnet serve --results postgresql://...?schema=NAME``).

``gisnet run --out postgresql://...`` writes every result layer as a table of one
schema (:func:`gisnet.output.postgis.write_postgis`: a ``fid`` primary key in the
run's row order, the geometry in ``geom`` with the working CRS's EPSG code as
SRID) and a row of ``gisnet_runs`` with the run's ``town_info``. This module
reads that back for :func:`gisnet.service.stored.read_results`:
:func:`check_results_schema` checks the schema's newest ``gisnet_runs`` row as a
folder's manifest is checked (its ``town_info`` record, the gisnet version, every
table it lists there with the row count it recorded) and :func:`read_table` reads
a table as pyogrio reads the same layer of the results GeoPackage through Arrow
(columns in order, Arrow types mapped from the column types, the geometry from
WKB as ``geometry``, rows in ``fid`` order), so that the folder and the database
share everything after.

Everything is read in one READ ONLY, REPEATABLE READ transaction
(:func:`gisnet.io.postgis.connect` with ``read_only``: a statement timeout too):
the check and the tables see one snapshot. Counting a table takes the lock every
reader takes, so a run that swaps its tables meanwhile waits for the read
(``--lock-timeout``); a run that committed between the snapshot and a table's
count shows as that table's changed count.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import shapely
from pyproj import CRS

from .. import __version__
from ..errors import ConfigError
from ..extras import needs_extra
from ..io.postgis import (
    DEFAULT_SCHEMA,
    FID,
    GEOM,
    POSTGIS_FEATURE,
    RUNS_TABLE,
    Database,
    connect,
    detail,
    parse_database,
)
from ..output.town_record import TOWN_INFO_FORMAT

#: Rows fetched from the server at a time (a server-side cursor), each batch made
#: into Arrow columns at once: the Python objects of one batch only are held.
FETCH_ROWS = 50_000

#: Arrow type of each PostgreSQL column type gisnet writes (``pg_type``) or may meet;
#: another type is read as its text. Integers are 64-bit (``bigint``), as
#: GeoPackage's INTEGER64; times to the millisecond, as pyogrio reads GeoPackage's.
ARROW_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int2": pa.int64(), "int4": pa.int64(), "int8": pa.int64(),
    "float4": pa.float64(), "float8": pa.float64(), "numeric": pa.float64(),
    "text": pa.string(), "varchar": pa.string(), "bpchar": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC"),
    "geometry": pa.binary(),
}


def _ident(schema: str, table: str) -> str:
    """``"schema"."table"`` for ``to_regclass``."""
    return '"{}"."{}"'.format(schema.replace('"', '""'), table.replace('"', '""'))


# ---------------------------------------------------------------------------
# the gisnet_runs row
# ---------------------------------------------------------------------------


def newest_run(cur: Any, db: Database, schema: str) -> dict[str, Any]:
    """The newest row of ``schema.gisnet_runs``, every column (a ``gisnet_runs``
    written before ``town_info`` was recorded has no such key).

    Raises
    ------
    ConfigError
        No such schema, no ``gisnet_runs`` table, no row: naming the database.
    """
    from psycopg import sql

    cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
    if cur.fetchone() is None:
        default = "" if db.schema else " (the default: the URL names no ?schema=)"
        raise ConfigError(f"the database has no schema {schema}{default}: give the ?schema= "
                          "that `gisnet run --out postgresql://...` wrote to", path=db.shown)
    cur.execute("SELECT to_regclass(%s) IS NOT NULL", (_ident(schema, RUNS_TABLE),))
    if not cur.fetchone()[0]:
        raise ConfigError(f"schema {schema} has no {RUNS_TABLE} table: it holds no results "
                          "of `gisnet run --out postgresql://...`", path=db.shown)
    cur.execute(sql.SQL("SELECT to_jsonb(r) FROM {} AS r ORDER BY r.finished_at DESC, "
                        "r.run_id DESC LIMIT 1").format(sql.Identifier(schema, RUNS_TABLE)))
    got = cur.fetchone()
    if got is None:
        raise ConfigError(f"{schema}.{RUNS_TABLE} records no run", path=db.shown)
    return dict(got[0])


def _utc(text: Any) -> str | None:
    """``finished_at`` (ISO text with an offset, as ``to_jsonb`` writes it) in UTC to
    the second, as a folder manifest's ``created_utc``."""
    if text is None:
        return None
    t = _dt.datetime.fromisoformat(str(text))
    return t.astimezone(_dt.UTC).isoformat(timespec="seconds")


def check_results_schema(cur: Any, db: Database, schema: str) -> dict[str, Any]:
    """The newest run of ``schema``, checked, as a folder's manifest holds it
    (``run_id``, ``created_utc``, ``gisnet_version``, ``town``, ``profile_id``,
    ``town_info``) with its ``layers`` (table -> rows) and ``srid``.

    Checked: the row has a ``town_info`` record of the known format and was written
    by this gisnet version; every table it lists is there with the rows it recorded.

    Raises
    ------
    ConfigError
        What is wrong, naming the database, the run and the table.
    """
    from psycopg import sql

    row = newest_run(cur, db, schema)
    run = row.get("run_id")
    info = row.get("town_info")
    if not isinstance(info, dict) or info.get("format") != TOWN_INFO_FORMAT:
        raise ConfigError(f"run {run} in {schema}.{RUNS_TABLE} has no town_info record of "
                          f"format {TOWN_INFO_FORMAT} (written by gisnet before serving "
                          "results from PostGIS was added, or changed since); run `gisnet "
                          "run` again", path=db.shown)
    version = row.get("gisnet_version")
    if version != __version__:
        raise ConfigError(f"run {run} in schema {schema} was written by gisnet {version}, "
                          f"this is gisnet {__version__}: run `gisnet run` again with this "
                          "version", path=db.shown)
    counts = row.get("layers")
    if not isinstance(counts, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in counts.values()):
        raise ConfigError(f"run {run} in {schema}.{RUNS_TABLE} has no table of its layers "
                          "and their rows", path=db.shown)
    for name, n in sorted(counts.items()):
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (_ident(schema, name),))
        if not cur.fetchone()[0]:
            raise ConfigError(f"table {schema}.{name} is missing: run {run} wrote it with "
                              f"{n} rows ({RUNS_TABLE} lists it); run `gisnet run` again",
                              path=db.shown)
        cur.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, name)))
        got = int(cur.fetchone()[0])
        if got != n:
            raise ConfigError(f"table {schema}.{name} has {got} rows, run {run} wrote {n} "
                              f"(as {RUNS_TABLE} records): changed since the run; run "
                              "`gisnet run` again", path=db.shown)
    return {"run_id": run, "created_utc": _utc(row.get("finished_at")),
            "gisnet_version": version, "town": row.get("town"),
            "profile_id": row.get("profile"), "town_info": info, "layers": counts,
            "srid": row.get("srid")}


# ---------------------------------------------------------------------------
# the tables
# ---------------------------------------------------------------------------


def _columns(cur: Any, schema: str, table: str) -> list[tuple[str, str]]:
    """``(name, type name)`` of a table's columns, in order."""
    cur.execute("SELECT a.attname, t.typname FROM pg_attribute a "
                "JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = to_regclass(%s) "
                "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (_ident(schema, table),))
    return [(str(n), str(t)) for n, t in cur.fetchall()]


def _srid(cur: Any, schema: str, table: str, column: str) -> int:
    """The SRID the geometry column is declared with (0 when it is not)."""
    cur.execute("SELECT srid FROM geometry_columns WHERE f_table_schema = %s AND "
                "f_table_name = %s AND f_geometry_column = %s", (schema, table, column))
    got = cur.fetchone()
    return int(got[0]) if got and got[0] else 0


def _arrow_column(values: list[Any], typ: pa.DataType) -> pa.Array:
    """One fetched column as an Arrow array of ``typ`` (times cut to milliseconds)."""
    if pa.types.is_floating(typ):
        values = [None if v is None else float(v) for v in values]  # numeric: Decimal
    arr = pa.array(values, type=typ)
    if pa.types.is_timestamp(typ):
        arr = arr.cast(pa.timestamp("ms", tz=typ.tz), safe=False)
    return arr


def _schema_of(names: Sequence[str], types: Sequence[pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(n, pa.timestamp("ms", tz=t.tz) if pa.types.is_timestamp(t)
                               else t) for n, t in zip(names, types, strict=True)])


def _batches(conn: Any, query: Any, types: Sequence[pa.DataType],
             schema: pa.Schema) -> Iterable[pa.RecordBatch]:
    """The rows of ``query`` as record batches, :data:`FETCH_ROWS` at a time."""
    with conn.cursor(name="gisnet_results", binary=True) as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(query)
        while rows := cur.fetchmany(FETCH_ROWS):
            cols = list(zip(*rows, strict=True))
            yield pa.RecordBatch.from_arrays(
                [_arrow_column(list(c), t) for c, t in zip(cols, types, strict=True)],
                schema=schema)


def read_table(conn: Any, schema: str, table: str, *, srid: int | None = None
               ) -> pd.DataFrame:
    """A result table as pyogrio reads the same layer of the results GeoPackage
    (``use_arrow``): its columns but ``fid`` in order, as the Arrow types of
    :data:`ARROW_TYPES` made into pandas (text as ``str``, an integer or boolean
    column holding a null as float or object, times as ``datetime64[ms]``, in UTC
    when the column has a zone and a value), the
    ``geom`` column last, from WKB, as ``geometry`` in the CRS of its SRID (else
    ``srid``, the run's); rows in ``fid`` order. ``conn`` is in a transaction (the
    rows come through a server-side cursor).

    Raises
    ------
    ConfigError
        The table has no ``fid`` key (not written by ``gisnet run``).
    """
    from psycopg import sql

    with conn.cursor() as cur:
        cols = _columns(cur, schema, table)
        if FID not in [c for c, _t in cols]:
            raise ConfigError(f"table {schema}.{table} has no {FID!r} column (the row "
                              "order `gisnet run` writes)")
        geoms = [c for c, t in cols if t == "geometry"]
        geom = GEOM if GEOM in geoms else (geoms[0] if geoms else None)
        code = _srid(cur, schema, table, geom) if geom is not None else 0
    attrs = [(c, t) for c, t in cols if c not in (FID, geom)]
    if not attrs and geom is None:  # a table of its key alone: no column to read
        return pd.DataFrame()
    items: list[sql.Composable] = []
    types: list[pa.DataType] = []
    for c, t in attrs:
        ident = sql.Identifier(c)
        if t == "geometry":  # a second geometry column: as text (GeoPackage has one)
            items.append(sql.SQL("ST_AsText({0}) AS {0}").format(ident))
        elif t in ARROW_TYPES:
            items.append(ident)
        else:
            items.append(sql.SQL("{0}::text AS {0}").format(ident))
        types.append(ARROW_TYPES[t] if t in ARROW_TYPES and t != "geometry" else pa.string())
    names = [c for c, _t in attrs]
    if geom is not None:
        items.append(sql.SQL("ST_AsBinary({})").format(sql.Identifier(geom)))
        types.append(pa.binary())
        names.append(GEOM)
    query = sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
        sql.SQL(", ").join(items), sql.Identifier(schema, table), sql.Identifier(FID))
    arrow = _schema_of(names, types)
    got = pa.Table.from_batches(list(_batches(conn, query, types, arrow)), schema=arrow)
    df = got.to_pandas(self_destruct=True)
    del got
    for c, t in attrs:
        if t == "timestamptz" and df[c].isna().all():  # GeoPackage keeps no zone of its
            df[c] = df[c].dt.tz_localize(None)         # own: pyogrio reads it from a value
    if geom is None:
        return df
    wkb = df.pop(GEOM).to_numpy(dtype=object)
    code = code or int(srid or 0)
    crs = CRS.from_epsg(code) if code else None
    shapes = shapely.from_wkb(np.asarray(wkb, dtype=object))
    return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries(shapes, index=df.index, crs=crs),
                            crs=crs)


# ---------------------------------------------------------------------------
# the whole read
# ---------------------------------------------------------------------------


def read_results_database(url: Any, names: Sequence[str], timings: dict[str, float]
                          ) -> tuple[dict[str, Any], dict[str, pd.DataFrame], str]:
    """The newest run of a PostGIS schema, checked (:func:`check_results_schema`),
    and its tables of ``names`` that the run wrote (:func:`read_table`, as read
    from the GeoPackage), in ``names`` order; with where they were read, for
    messages (password removed). ``timings`` gets ``check`` and ``read`` (s).

    Raises
    ------
    ConfigError
        Cannot connect (the database named, password removed), the check fails,
        a table cannot be read.
    """
    import time

    with needs_extra("postgis", POSTGIS_FEATURE):
        import psycopg

    db = parse_database(url)
    schema = db.schema or DEFAULT_SCHEMA
    where = f"{db.shown} (schema {schema})"
    with connect(db, what="results database", error=ConfigError, read_only=True) as conn:
        try:
            conn.commit()  # the session's settings; then one snapshot for all of it
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            with conn.transaction():
                t = time.perf_counter()
                with conn.cursor() as cur:
                    man = check_results_schema(cur, db, schema)
                timings["check"] = time.perf_counter() - t
                t = time.perf_counter()
                layers: dict[str, pd.DataFrame] = {}
                for name in names:
                    if name in man["layers"]:
                        layers[name] = read_table(conn, schema, name, srid=man["srid"])
                timings["read"] = time.perf_counter() - t
        except ConfigError as exc:
            if exc.path is not None:
                raise
            raise ConfigError(exc.message, path=db.shown) from None
        except psycopg.Error as exc:
            raise ConfigError(f"cannot read the results in schema {schema}: {detail(exc)}",
                              path=db.shown) from None
    return man, layers, where

