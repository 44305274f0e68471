"""PostgreSQL/PostGIS as the output of a run (reading a source: :mod:`gisnet.io.postgis`).

:func:`write_postgis` writes every result layer of a run into one schema of a
database (``postgresql://gis@db/town?schema=gisnet``) in ONE transaction: each
layer goes to a new table (``fid`` primary key, ``geom`` with the working CRS
as SRID and a GiST index, column comments from the results schema), then the
old tables are dropped and the new ones renamed, a ``gisnet_runs`` row is added
and the transaction commits. A reader sees the previous run's tables or this
run's, never a mix; a run that dies rolls back and leaves the previous tables
whole.

Another client's open transaction on a previous table (a reader left "idle in
transaction", a long query) would make the swap wait, and every reader that
comes after would queue behind it. So gisnet never queues: it takes the swap's
locks with ``NOWAIT``, retrying for at most the lock timeout (``--lock-timeout``,
the town file's ``[output] lock_timeout_s``, default :data:`LOCK_TIMEOUT_S`),
and then stops with an error naming the relation and the client that holds it;
every other statement of the transaction waits at most as long
(``lock_timeout``). Readers wait only while the swap itself runs.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..errors import ConfigError
from ..extras import needs_extra
from ..io.postgis import (
    DEFAULT_SCHEMA,
    FID,
    GEOM,
    POSTGIS_FEATURE,
    RUNS_TABLE,
    connect,
    detail,
    parse_database,
)
from ._testhooks import kill_point
from .metadata import layer_docs
from .pg_styles import write_pg_styles
from .town_record import town_record
from .writing import file_form, gpkg_ready

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

#: Seconds the swap waits (retrying) for another client's lock on a previous table.
LOCK_TIMEOUT_S = 5.0
#: Seconds between two tries at the swap's locks.
_LOCK_RETRY_S = 0.1


def lock_timeout_of(town: Any, given: float | None = None) -> float:
    """The lock timeout of a write: ``given`` (``--lock-timeout``), else the town
    file's ``[output] lock_timeout_s``, else :data:`LOCK_TIMEOUT_S`.

    Raises
    ------
    ConfigError
        Not a finite number > 0.
    """
    v = given
    if v is None and town is not None:
        v = town.settings.extra.get("output_lock_timeout_s")
    v = LOCK_TIMEOUT_S if v is None else v
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise ConfigError(f"the lock timeout must be a number of seconds > 0, not {v!r}")
    return float(v)


def _holder(cur: Any, schema: str, table: str) -> str:
    """Who holds a lock on ``schema.table``: the other client's pid, application,
    state and since when, for the message (empty when it is gone)."""
    cur.execute("""
        SELECT a.pid, coalesce(nullif(a.application_name, ''), 'no application name'),
               a.state, to_char(a.xact_start, 'YYYY-MM-DD HH24:MI:SS TZ')
        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.relation = to_regclass(%s) AND l.pid <> pg_backend_pid() AND l.granted
        ORDER BY a.xact_start LIMIT 1""", (f'"{schema}"."{table}"',))
    got = cur.fetchone()
    if got is None:
        return ""
    pid, app, state, since = got
    return f" (held by pid {pid}, {app}, {state}" + (f", transaction open since {since}"
                                                     if since else "") + ")"


def lock_for_swap(conn: Any, cur: Any, schema: str, tables: list[str], timeout_s: float,
                  shown: str | None = None) -> None:
    """Take ACCESS EXCLUSIVE locks on ``schema.tables`` without ever queueing.

    Each try locks the tables one by one with ``NOWAIT`` inside a savepoint (a
    table another client holds fails at once, and the savepoint gives back the
    locks taken so far); tries repeat until ``timeout_s`` has passed. Readers
    therefore never wait behind a swap that is itself waiting.

    Raises
    ------
    ConfigError
        A table stayed locked by another client for ``timeout_s``: names the
        table and the client.
    """
    import psycopg
    from psycopg import sql

    deadline = time.monotonic() + timeout_s
    while True:
        blocked = None
        try:
            with conn.transaction():  # a savepoint
                for t in tables:
                    blocked = t
                    cur.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE NOWAIT").format(
                        sql.Identifier(schema, t)))
            return
        except psycopg.errors.LockNotAvailable:
            if time.monotonic() >= deadline:
                who = _holder(cur, schema, blocked or "")
                raise ConfigError(
                    f"relation {schema}.{blocked} is locked by another client{who}; waited "
                    f"{timeout_s:g} s (--lock-timeout, or [output] lock_timeout_s in the "
                    "town file) without making readers queue; the previous tables are "
                    "unchanged: end that transaction and run again", path=shown) from None
            time.sleep(_LOCK_RETRY_S)



def pg_type(s: pd.Series) -> str:
    """The PostgreSQL column type of a pandas column."""
    t = s.dtype
    if pd.api.types.is_bool_dtype(t):
        return "boolean"
    if pd.api.types.is_integer_dtype(t):
        return "bigint"
    if pd.api.types.is_float_dtype(t):
        return "double precision"
    if isinstance(t, pd.DatetimeTZDtype):
        return "timestamptz"
    if pd.api.types.is_datetime64_any_dtype(t):
        return "timestamp"
    return "text"


def _values(s: pd.Series) -> list[Any]:
    """A column as Python values for COPY (NaN/NA -> NULL)."""
    if pd.api.types.is_float_dtype(s.dtype):
        a = s.to_numpy(dtype=float, na_value=np.nan)
        return [None if v != v else v for v in a.tolist()]
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_integer_dtype(s.dtype):
        return [None if v is pd.NA else v for v in s.astype(object).tolist()]
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return [None if pd.isna(v) else v.to_pydatetime() for v in s.tolist()]
    out: list[str | None] = []
    for v in s.tolist():
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(None)
        elif isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, dict, tuple)):
            out.append(json.dumps(v, default=str))
        else:
            out.append(str(v))
    return out


def geometry_type(geoms: np.ndarray) -> str:
    """``geometry(TYPE, ...)`` type of a column: the one type of its geometries, else
    ``Geometry``."""
    present = geoms[~(shapely.is_missing(geoms))]
    kinds = set(shapely.get_type_id(present).tolist()) if len(present) else set()
    names = {0: "Point", 1: "LineString", 3: "Polygon", 4: "MultiPoint",
             5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}
    return names.get(next(iter(kinds)), "Geometry") if len(kinds) == 1 else "Geometry"


def copy_table(cur: Any, schema: str, table: str, df: pd.DataFrame, srid: int,
               *, key: str = FID) -> int:
    """Create ``schema.table`` holding ``df`` and fill it with COPY.

    A ``key`` bigint primary key numbered from 1 in row order (the GeoPackage's
    fid), each column typed by :func:`pg_type`, the geometry in ``geom`` with
    SRID ``srid`` and a GiST index. Returns the rows written.
    """
    from psycopg import sql

    is_geo = isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns
    attrs = pd.DataFrame(df.drop(columns=[df.geometry.name]) if is_geo else df)
    attrs = attrs.reset_index(drop=True)
    names = [str(c) for c in attrs.columns]
    if key in names or (is_geo and GEOM in names):
        raise ConfigError(f"table {table}: a column is named {key!r} or {GEOM!r}, which "
                          "gisnet uses for the key and geometry")
    defs = [sql.SQL("{} bigint NOT NULL").format(sql.Identifier(key))]
    defs += [sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(pg_type(attrs[c])))
             for n, c in zip(names, attrs.columns, strict=True)]
    cols = [sql.Identifier(key)] + [sql.Identifier(n) for n in names]
    columns = [list(range(1, len(attrs) + 1))] + [_values(attrs[c]) for c in attrs.columns]
    if is_geo:
        geoms = np.asarray(df.geometry.array, dtype=object)
        defs.append(sql.SQL("{} geometry({}, {})").format(
            sql.Identifier(GEOM), sql.SQL(geometry_type(geoms)), sql.Literal(srid)))
        cols.append(sql.Identifier(GEOM))
        ewkb = shapely.to_wkb(shapely.set_srid(geoms, srid), hex=True, include_srid=True)
        columns.append(ewkb.tolist())
    ident = sql.Identifier(schema, table)
    cur.execute(sql.SQL("CREATE TABLE {} ({})").format(ident, sql.SQL(", ").join(defs)))
    with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(
            ident, sql.SQL(", ").join(cols))) as copy:
        for row in zip(*columns, strict=True):
            copy.write_row(row)
    cur.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY ({})").format(
        ident, sql.Identifier(f"{table}_pkey"), sql.Identifier(key)))
    if is_geo:
        cur.execute(sql.SQL("CREATE INDEX {} ON {} USING gist ({})").format(
            sql.Identifier(f"{table}_geom_idx"), ident, sql.Identifier(GEOM)))
    return len(attrs)


def comment_table(cur: Any, schema: str, table: str, layer: str, columns: list[str]) -> None:
    """COMMENT ON the table and its columns from the results schema: the layer's
    description; each column's meaning and unit."""
    from psycopg import sql

    doc = layer_docs().get(layer)
    ident = sql.Identifier(schema, table)
    cur.execute(sql.SQL("COMMENT ON COLUMN {}.{} IS {}").format(
        ident, sql.Identifier(FID), sql.Literal("row number (1, 2, ...) in the run's order; "
                                                "the OGC API item id")))
    if doc is None:
        return
    if doc.description:
        cur.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
            ident, sql.Literal(doc.description)))
    for c in columns:
        col = doc.column(c)
        name = GEOM if c == "geometry" else c
        if col is None or name not in [*columns, GEOM]:
            continue
        unit = "" if col.unit in ("—", "-", "") else f" [{col.unit}]"
        cur.execute(sql.SQL("COMMENT ON COLUMN {}.{} IS {}").format(
            ident, sql.Identifier(name), sql.Literal(f"{col.meaning}{unit}")))


def _columns_of(cur: Any, schema: str, table: str) -> list[tuple[str, str]]:
    """``(name, type)`` of a table's columns in order (``format_type``: with the
    geometry's type and SRID)."""
    cur.execute("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped "
                "ORDER BY a.attnum", (f'"{schema}"."{table}"',))
    return [(str(n), str(t)) for n, t in cur.fetchall()]


def dependents(cur: Any, schema: str, table: str) -> list[str]:
    """The views (and materialized views) that read ``schema.table``, qualified names."""
    cur.execute("""
        SELECT DISTINCT v.oid::regclass::text FROM pg_depend d
        JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
        WHERE d.refobjid = to_regclass(%s) AND v.oid <> d.refobjid ORDER BY 1""",
                (f'"{schema}"."{table}"',))
    return [str(r[0]) for r in cur.fetchall()]


def swap_in_place(cur: Any, schema: str, layers: Mapping[str, Any], present: set[str],
                  tag: str, shown: str) -> set[str]:
    """Refill the previous tables whose columns this run's tables repeat exactly, in place.

    A previous table of a layer whose staged table ``<layer>__new_<tag>`` has the same
    columns (names, types, geometry type and SRID) keeps its identity: it is emptied
    (``TRUNCATE``) and filled from the staged table, which is then dropped. A view
    staff made on it stays valid and shows this run's rows; its grants, and
    comments stay. The other layers are dropped and replaced (the caller) — when a
    view depends on such a table, whose columns change, the run stops here naming the
    view, before anything changed.

    Returns
    -------
    set of str
        The layers refilled in place.
    """
    from psycopg import sql

    kept: set[str] = set()
    for name in sorted(layers):
        if name not in present:
            continue
        staged = f"{name}__new_{tag}"
        old, new = _columns_of(cur, schema, name), _columns_of(cur, schema, staged)
        if old == new:
            cols = sql.SQL(", ").join(sql.Identifier(c) for c, _t in new)
            cur.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(schema, name)))
            cur.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(
                sql.Identifier(schema, name), cols, cols, sql.Identifier(schema, staged)))
            cur.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(schema, staged)))
            comment_table(cur, schema, name, name, [c for c, _t in new if c != FID])
            kept.add(name)
            continue
        views = dependents(cur, schema, name)
        if views:
            gone = sorted({c for c, _t in old} - {c for c, _t in new})
            changed = sorted(c for c, t in old if (c, t) not in new and c not in gone)
            what = "; ".join(x for x in (
                f"column(s) {', '.join(gone)} dropped" if gone else "",
                f"column(s) {', '.join(changed)} of another type" if changed else "",
                "column(s) added" if not gone and not changed else "") if x)
            raise ConfigError(
                f"table {schema}.{name} changes its columns in this run ({what}) and "
                f"{', '.join(views)} depend(s) on it; the previous tables are unchanged: "
                "drop the view(s), run again and create them anew on the new columns",
                path=shown)
    return kept


def drop_or_empty(cur: Any, schema: str, table: str) -> None:
    """A previous run's table this run does not write: dropped, or, when a view reads
    it, emptied (the view stays; the table is no longer a result)."""
    from psycopg import sql

    ident = sql.Identifier(schema, table)
    if dependents(cur, schema, table):
        log.warning("%s.%s: not written by this run but read by a view: emptied, not dropped",
                    schema, table)
        cur.execute(sql.SQL("TRUNCATE {}").format(ident))
    else:
        cur.execute(sql.SQL("DROP TABLE {}").format(ident))


def add_town_info_column(cur: Any, schema: str) -> None:
    """Give a ``gisnet_runs`` table written before ``town_info`` was recorded that
    column (its earlier rows keep a null there: ``gisnet serve --results`` refuses
    them, naming the run). Only when it is missing: ``ALTER TABLE`` would wait for
    every reader of the table."""
    from psycopg import sql

    cur.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s "
                "AND table_name = %s AND column_name = 'town_info'", (schema, RUNS_TABLE))
    if cur.fetchone() is None:
        cur.execute(sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS town_info jsonb").format(
            sql.Identifier(schema, RUNS_TABLE)))


def output_srid(crs: Any) -> int:
    """The SRID of the working CRS (its EPSG code).

    Raises
    ------
    ConfigError
        The CRS has no EPSG code.
    """
    code = CRS.from_user_input(crs).to_epsg()
    if not code:
        raise ConfigError("the working CRS has no EPSG code, so PostGIS cannot be given its "
                          "SRID; name one with --crs EPSG:... (or crs in the town file)")
    return int(code)


def write_postgis(url: Any, layers: Mapping[str, pd.DataFrame], town: Town, *,
                  run_id: str, version: str, say: Any = None,
                  lock_timeout_s: float | None = None,
                  unavailable: Mapping[str, str] | None = None) -> str:
    """Write a run's result layers into a PostGIS schema, in one transaction.

    Parameters
    ----------
    url
        ``postgresql://user@host:port/db?schema=NAME`` (or ``PG:... schemas=NAME``);
        the schema is created if absent (default :data:`DEFAULT_SCHEMA`).
    layers
        Layer name -> result layer (``Results.layers()``), written as the
        GeoPackage holds them (:func:`gisnet.output.writing.file_form`).
    town
        The town (working CRS, name, town file, profile) for the SRID and the
        ``gisnet_runs`` row, whose ``town_info``
        (:func:`~gisnet.output.town_record.town_record`, as a folder's manifest
        holds it) is what ``gisnet serve --results postgresql://...`` needs of it.
    run_id, version
        The run's id and gisnet's version, for ``gisnet_runs``.
    say
        Called with a short progress message.
    lock_timeout_s
        Seconds to wait for another client's lock (:func:`lock_timeout_of`:
        default the town file's ``[output] lock_timeout_s``, else 5).
    unavailable
        Analysis -> reason it could not be computed (``Results.unavailable``),
        for ``town_info``.

    Returns
    -------
    str
        The output, password removed, for the summary.

    Raises
    ------
    ConfigError
        Cannot connect or write (the database's message, password removed),
        another client holds a previous table longer than the lock timeout, or
        the working CRS has no EPSG code.
    """
    with needs_extra("postgis", POSTGIS_FEATURE):
        import psycopg
        from psycopg import sql

    db = parse_database(url)
    schema = db.schema or DEFAULT_SCHEMA
    if db.schema is None:
        log.warning("%s names no schema: results go to schema %s (add ?schema=NAME)",
                    db.shown, schema)
    srid = output_srid(town.crs)
    wait_s = lock_timeout_of(town, lock_timeout_s)
    info = town_record(town, unavailable)
    tag = run_id.replace("-", "")[:12].lower()
    with connect(db, what="output database", error=ConfigError) as conn:
        try:
            with conn.transaction(), conn.cursor() as cur:
                # no statement of this transaction waits longer for a lock
                cur.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                    sql.Literal(f"{max(1, round(wait_s * 1000))}ms")))
                cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(schema)))
                cur.execute(sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (run_id text PRIMARY KEY, "
                    "finished_at timestamptz NOT NULL DEFAULT now(), gisnet_version text, "
                    "town text, town_file text, profile text, crs text, srid integer, "
                    "layers jsonb, town_info jsonb)").format(
                        sql.Identifier(schema, RUNS_TABLE)))
                add_town_info_column(cur, schema)
                # every table a gisnet run wrote here (not only the last run's)
                cur.execute(sql.SQL("SELECT layers FROM {}").format(
                    sql.Identifier(schema, RUNS_TABLE)))
                previous = sorted({k for (got,) in cur.fetchall() for k in (got or {})})
                from ..register.store import pg_ensure

                pg_ensure(cur, schema)  # the staff register: created once, never dropped
                cur.execute("SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = %s", (schema,))
                present = {r[0] for r in cur.fetchall()}
                foreign = sorted(set(layers) & present - set(previous))
                if foreign:  # never replace a table gisnet did not write (an input, say)
                    raise ConfigError(f"schema {schema} already holds table(s) "
                                      f"{', '.join(foreign)} that no gisnet run wrote (the "
                                      "town's input?); write the results to another schema "
                                      "(?schema=NAME)", path=db.shown)
                counts: dict[str, int] = {}
                written: dict[str, pd.DataFrame] = {}
                for name in sorted(layers):
                    if say is not None:
                        say(f"writing {name} to {db.shown}")
                    df = gpkg_ready(file_form(name, layers[name]))
                    staged = f"{name}__new_{tag}"
                    counts[name] = copy_table(cur, schema, staged, df, srid)
                    written[name] = df
                    cols = [c for c in df.columns]
                    comment_table(cur, schema, staged, name, [str(c) for c in cols])
                    kill_point("postgis")
                lock_for_swap(conn, cur, schema,
                              sorted((set(layers) | set(previous)) & present), wait_s, db.shown)
                kept = swap_in_place(cur, schema, layers, present, tag, db.shown)
                for name in sorted((set(previous) - set(layers)) & present):
                    drop_or_empty(cur, schema, name)
                for name in sorted(set(layers) - kept):
                    cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                        sql.Identifier(schema, name)))
                    staged = f"{name}__new_{tag}"
                    cur.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                        sql.Identifier(schema, staged), sql.Identifier(name)))
                    cur.execute(sql.SQL("ALTER TABLE {} RENAME CONSTRAINT {} TO {}").format(
                        sql.Identifier(schema, name), sql.Identifier(f"{staged}_pkey"),
                        sql.Identifier(f"{name}_pkey")))
                    if isinstance(layers[name], gpd.GeoDataFrame):
                        cur.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                            sql.Identifier(schema, f"{staged}_geom_idx"),
                            sql.Identifier(f"{name}_geom_idx")))
                write_pg_styles(cur, schema, written)  # QGIS's layer_styles rows
                tf = town.settings.extra.get("town_file")
                cur.execute(sql.SQL(
                    "INSERT INTO {} (run_id, gisnet_version, town, town_file, profile, crs, "
                    "srid, layers, town_info) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)").format(
                        sql.Identifier(schema, RUNS_TABLE)),
                    (run_id, version, town.name, None if tf is None else str(tf),
                     str(town.profile.profile.id), CRS.from_user_input(town.crs).to_string(),
                     srid, json.dumps(counts), json.dumps(info)))
                kill_point("postgis-commit")
        except ConfigError:
            raise
        except psycopg.errors.LockNotAvailable as exc:
            raise ConfigError(f"cannot write the results to schema {schema}: another client "
                              f"holds a lock gisnet needs ({detail(exc)}); waited {wait_s:g} s "
                              "(--lock-timeout, or [output] lock_timeout_s in the town file)",
                              path=db.shown) from None
        except Exception as exc:  # psycopg's many classes: all mean "cannot write"
            raise ConfigError(f"cannot write the results to schema {schema}: {detail(exc)}",
                              path=db.shown) from None
    return f"{db.shown} (schema {schema}: {len(layers)} tables, {RUNS_TABLE})"
