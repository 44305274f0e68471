"""PostgreSQL/PostGIS as a source of layers and as the output of a run.

Reading
-------
A layer path ``PG:dbname=town host=db user=gis`` (libpq keywords, as GDAL
writes them) or ``postgresql://gis@db:5432/town`` names a database; the layer's
``layer`` names a table or view (``schema.table``) or is a SQL query
(``SELECT ...``). The GDAL in the pyogrio and fiona wheels has no PostgreSQL
driver, so gisnet reads PostGIS itself with psycopg 3
(:func:`read_postgis`): geometry as WKB, the SRID from ``spatial_ref_sys``, rows
in primary-key order, the primary key kept out of the columns (as GDAL does).
Credentials come from libpq: ``PGPASSWORD``, ``~/.pgpass`` (``PGPASSFILE``),
a service file (``service=name``, ``PGSERVICE``); a password written in the
source works but is never repeated: every message, log line, manifest and
summary shows :func:`redact` of the source.

Writing
-------
:func:`write_postgis` writes every result layer of a run into one schema of a
database (``postgresql://gis@db/town?schema=gisnet``) in ONE transaction: each
layer goes to a new table (``fid`` primary key, ``geom`` with the working CRS
as SRID and a GiST index, column comments from ``docs/results.md``), then the
old tables are dropped and the new ones renamed, a ``gisnet_runs`` row is added
and the transaction commits. A reader sees the previous run's tables or this
run's, never a mix; a run that dies rolls back and leaves the previous tables
whole.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..errors import ConfigError, LayerError
from .metadata import layer_docs
from .writing import file_form, gpkg_ready, kill_point

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

#: URL schemes libpq takes for a database.
URL_SCHEMES = ("postgresql://", "postgres://")
#: GDAL's PG: options that are not libpq keywords (read by gisnet, not passed on).
GDAL_PG_OPTIONS = ("tables", "schemas", "active_schema")
#: The table a run is recorded in, in the output schema.
RUNS_TABLE = "gisnet_runs"
#: The output schema when the URL names none (said in the run's output).
DEFAULT_SCHEMA = "gisnet"
#: The primary-key and geometry columns of written tables.
FID, GEOM = "fid", "geom"

_PASSWORD_KV = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)")
_URL_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^/@\s:]*:)[^@\s/]*@")
_QUERY = re.compile(r"^\s*(select|with|values|table)\b", re.IGNORECASE)


def is_database(source: Any) -> bool:
    """True for a PostgreSQL source or output: ``PG:...`` or ``postgresql://...``."""
    s = str(source)
    return s.startswith("PG:") or s.lower().startswith(URL_SCHEMES)


def redact(text: Any) -> str:
    """``text`` with every password removed: ``password=...`` keywords (quoted
    or not, also in a URL's query) and the ``user:password@`` of any URL."""
    s = str(text)
    s = _PASSWORD_KV.sub(r"\1***", s)
    return _URL_USERINFO.sub(r"\1***@", s)


@dataclass(frozen=True)
class Database:
    """A database source or output, split into what libpq takes and what gisnet does.

    Attributes
    ----------
    dsn
        The libpq connection string or URL (without gisnet's own options).
    shown
        The source as written, password removed (:func:`redact`), for messages.
    schema
        ``?schema=`` of a URL, ``schemas=``/``active_schema=`` of a ``PG:``
        string, or None.
    table
        ``tables=`` of a ``PG:`` string (or a URL's ``?table=``), or None.
    """

    dsn: str
    shown: str
    schema: str | None = None
    table: str | None = None


def parse_database(source: Any) -> Database:
    """Split a ``PG:`` string or ``postgresql://`` URL (see :class:`Database`)."""
    s = str(source)
    shown = redact(s)
    opts: dict[str, str] = {}
    if s.startswith("PG:"):
        rest = s[3:].strip()
        for key in GDAL_PG_OPTIONS:
            m = re.search(rf"(?:^|\s){key}\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", rest)
            if m:
                opts[key] = m.group(1).strip("'")
                rest = (rest[:m.start()] + " " + rest[m.end():]).strip()
        schema = opts.get("active_schema") or (opts.get("schemas") or "").split(",")[0] or None
        return Database(rest, shown, schema, opts.get("tables"))
    parts = urllib.parse.urlsplit(s)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    keep = []
    for k, v in query:
        if k in ("schema", "table"):
            opts[k] = v
        else:
            keep.append((k, v))
    dsn = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(keep)))
    return Database(dsn, shown, opts.get("schema") or None, opts.get("table") or None)


@contextmanager
def connect(db: Database, *, role: str | None = None, what: str = "source",
            error: type[Exception] = LayerError) -> Iterator[Any]:
    """A psycopg connection to ``db``; a failure is ``error`` naming the source
    (password removed), never a traceback."""
    try:
        import psycopg
    except ImportError as exc:  # a dependency, but an environment may lack it
        raise error(f"reading or writing PostgreSQL needs psycopg 3 ({exc})",
                    path=db.shown, layer=role) from None
    try:
        conn = psycopg.connect(db.dsn, connect_timeout=20, application_name="gisnet")
    except psycopg.Error as exc:
        raise error(f"cannot connect to the {what}: {_detail(exc)}", path=db.shown,
                    layer=role) from None
    try:
        yield conn
    finally:
        conn.close()


def _detail(exc: BaseException) -> str:
    """The first line of a database error, password removed."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return redact(lines[0] if lines else type(exc).__name__)


def _relation(name: str) -> Any:
    """A table or view name (``table`` or ``schema.table``) as a quoted identifier."""
    from psycopg import sql

    parts = [p.strip('"') for p in name.split(".", 1)]
    return sql.Identifier(*parts)


def read_postgis(source: Any, *, layer: str | int | None = None, where: str | None = None,
                 role: str | None = None) -> gpd.GeoDataFrame:
    """Read a PostGIS table, view or SQL query as it is.

    Parameters
    ----------
    source
        ``PG:...`` connection string or ``postgresql://...`` URL.
    layer
        Table or view (``schema.table``; else the source's ``tables=``) or a
        SQL query (``SELECT ...``).
    where
        SQL condition on the table's columns (the town file's ``where``).
    role
        Layer role, for messages.

    Returns
    -------
    geopandas.GeoDataFrame
        Source columns, the first geometry column as geometry (further ones as
        WKT text), CRS from the SRID (None for SRID 0). A table without a
        geometry column gives a plain DataFrame.

    Raises
    ------
    LayerError
        No layer named, cannot connect, no such table, bad query or ``where``.
    """
    from psycopg import sql

    db = parse_database(source)
    name = layer if layer is not None else db.table
    if name is None or isinstance(name, int):
        raise LayerError("a database source needs its table, view or SQL query: "
                         "layer = \"schema.table\" or layer = \"SELECT ...\"",
                         path=db.shown, layer=role)
    name = str(name)
    is_query = bool(_QUERY.match(name))
    if is_query:
        rel = sql.SQL("({})").format(sql.SQL(name.rstrip().rstrip(";")))
    elif "." not in name and db.schema:
        rel = sql.Identifier(db.schema, name.strip('"'))
    else:
        rel = _relation(name)
    base = sql.SQL("SELECT * FROM {} AS src").format(rel)
    if where:
        base = sql.SQL("{} WHERE {}").format(base, sql.SQL(where))
    what = f"{'query' if is_query else name}" + (f" with where = {where!r}" if where else "")
    with connect(db, role=role) as conn:
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT oid, typname FROM pg_type "
                            "WHERE typname IN ('geometry', 'geography')")
                geo_oids = dict(cur.fetchall())
                cur.execute(sql.SQL("{} LIMIT 0").format(base))
                desc = list(cur.description or [])
                key = None if is_query else _single_key(cur, name, db.schema)
                cols = [d.name for d in desc]
                geom_cols = [d.name for d in desc if d.type_code in geo_oids]
                if not geom_cols and not geo_oids:
                    log.info("%s: the database has no PostGIS extension", db.shown)
                items = []
                for d in desc:
                    ident = sql.Identifier(d.name)
                    if d.name == (geom_cols[0] if geom_cols else None):
                        items.append(sql.SQL("ST_AsBinary({0}) AS {0}").format(ident))
                    elif d.name in geom_cols:
                        items.append(sql.SQL("ST_AsText({0}) AS {0}").format(ident))
                    else:
                        items.append(ident)
                order = (sql.SQL(" ORDER BY {}").format(sql.Identifier(key)) if key
                         else sql.SQL(""))
                cur.execute(sql.SQL("SELECT {} FROM ({}) AS q{}").format(
                    sql.SQL(", ").join(items), base, order))
                rows = cur.fetchall()
                srid = 0
                if geom_cols:
                    cur.execute(sql.SQL("SELECT ST_SRID({0}) FROM ({1}) AS q WHERE {0} IS NOT "
                                        "NULL LIMIT 1").format(sql.Identifier(geom_cols[0]),
                                                               base))
                    got = cur.fetchone()
                    srid = int(got[0]) if got else 0
                crs = _crs_of(cur, srid)
        except LayerError:
            raise
        except Exception as exc:  # psycopg raises many classes; all mean "unreadable"
            raise LayerError(f"cannot read {what}: {_detail(exc)}", path=db.shown,
                             layer=role) from None
    df = pd.DataFrame.from_records(rows, columns=cols)
    for d in desc:
        if d.name in geom_cols:
            continue
        s = df[d.name]
        if d.type_code == 1700:  # numeric -> float (Decimal is not a number to pandas)
            df[d.name] = pd.to_numeric(s, errors="coerce").astype(float)
        elif d.type_code in (1082, 1114, 1184):  # date, timestamp, timestamptz
            df[d.name] = pd.to_datetime(s, errors="coerce")
    if key is not None and key in df.columns:
        df = df.drop(columns=[key])
    if not geom_cols:
        return df
    g = geom_cols[0]
    wkb = df[g].map(lambda b: None if b is None else bytes(b)).to_numpy(dtype=object)
    geoms = shapely.from_wkb(wkb)
    attrs = df.drop(columns=[g])
    return gpd.GeoDataFrame(attrs, geometry=gpd.GeoSeries(geoms, index=attrs.index, crs=crs),
                            crs=crs)


def _single_key(cur: Any, name: str, schema: str | None) -> str | None:
    """The table's single-column integer primary key, or None (views, composite keys)."""
    parts = [p.strip('"') for p in name.split(".", 1)]
    ident = ".".join(f'"{p}"' for p in ([schema] if schema and len(parts) == 1 else [])
                     + parts)
    cur.execute("""
        SELECT a.attname FROM pg_index i
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = to_regclass(%s) AND i.indisprimary
          AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)
    """, (ident,))
    got = cur.fetchall()
    return got[0][0] if len(got) == 1 else None


def _crs_of(cur: Any, srid: int) -> CRS | None:
    """The CRS of an SRID: its authority code, else its WKT (None for 0)."""
    if srid <= 0:
        return None
    cur.execute("SELECT auth_name, auth_srid, srtext FROM spatial_ref_sys WHERE srid = %s",
                (srid,))
    got = cur.fetchone()
    if got is None:
        return CRS.from_epsg(srid)
    auth, code, wkt = got
    if auth and code:
        try:
            return CRS.from_user_input(f"{auth}:{code}")
        except Exception:  # an authority pyproj does not know: the WKT says it
            pass
    return CRS.from_wkt(wkt)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


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
    out = []
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
    """COMMENT ON the table and its columns from ``docs/results.md``: the layer's
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
                  run_id: str, version: str, say: Any = None) -> str:
    """Write a run's result layers into a PostGIS schema, in one transaction.

    Parameters
    ----------
    url
        ``postgresql://user@host:port/db?schema=NAME`` (or ``PG:... schemas=NAME``);
        the schema is created if absent (default :data:`DEFAULT_SCHEMA`).
    layers
        Layer name -> result layer (``Results.layers()``), written as the
        GeoPackage holds them (:func:`gisnet.io.writing.file_form`).
    town
        The town (working CRS, name, town file, profile) for the SRID and the
        ``gisnet_runs`` row.
    run_id, version
        The run's id and gisnet's version, for ``gisnet_runs``.
    say
        Called with a short progress message.

    Returns
    -------
    str
        The output, password removed, for the summary.

    Raises
    ------
    ConfigError
        Cannot connect or write (the database's message, password removed), or
        the working CRS has no EPSG code.
    """
    from psycopg import sql

    db = parse_database(url)
    schema = db.schema or DEFAULT_SCHEMA
    if db.schema is None:
        log.warning("%s names no schema: results go to schema %s (add ?schema=NAME)",
                    db.shown, schema)
    srid = output_srid(town.crs)
    tag = run_id.replace("-", "")[:12].lower()
    with connect(db, what="output database", error=ConfigError) as conn:
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(schema)))
                cur.execute(sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (run_id text PRIMARY KEY, "
                    "finished_at timestamptz NOT NULL DEFAULT now(), gisnet_version text, "
                    "town text, town_file text, profile text, crs text, srid integer, "
                    "layers jsonb)").format(sql.Identifier(schema, RUNS_TABLE)))
                cur.execute(sql.SQL("SELECT layers FROM {} ORDER BY finished_at DESC "
                                    "LIMIT 1").format(sql.Identifier(schema, RUNS_TABLE)))
                got = cur.fetchone()
                previous = list((got[0] or {}).keys()) if got else []
                cur.execute("SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = %s", (schema,))
                foreign = sorted(set(layers) & {r[0] for r in cur.fetchall()} - set(previous))
                if foreign:  # never replace a table gisnet did not write (an input, say)
                    raise ConfigError(f"schema {schema} already holds table(s) "
                                      f"{', '.join(foreign)} that no gisnet run wrote (the "
                                      "town's input?); write the results to another schema "
                                      "(?schema=NAME)", path=db.shown)
                counts: dict[str, int] = {}
                for name in sorted(layers):
                    if say is not None:
                        say(f"writing {name} to {db.shown}")
                    df = gpkg_ready(file_form(name, layers[name]))
                    staged = f"{name}__new_{tag}"
                    counts[name] = copy_table(cur, schema, staged, df, srid)
                    cols = [c for c in df.columns]
                    comment_table(cur, schema, staged, name, [str(c) for c in cols])
                    kill_point("postgis")
                for name in sorted(set(layers) | set(previous)):
                    cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                        sql.Identifier(schema, name)))
                for name in sorted(layers):
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
                tf = town.settings.extra.get("town_file")
                cur.execute(sql.SQL(
                    "INSERT INTO {} (run_id, gisnet_version, town, town_file, profile, crs, "
                    "srid, layers) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)").format(
                        sql.Identifier(schema, RUNS_TABLE)),
                    (run_id, version, town.name, None if tf is None else str(tf),
                     str(town.profile.profile.id), CRS.from_user_input(town.crs).to_string(),
                     srid, json.dumps(counts)))
                kill_point("postgis-commit")
        except ConfigError:
            raise
        except Exception as exc:  # psycopg's many classes: all mean "cannot write"
            raise ConfigError(f"cannot write the results to schema {schema}: {_detail(exc)}",
                              path=db.shown) from None
    return f"{db.shown} (schema {schema}: {len(layers)} tables, {RUNS_TABLE})"
