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

A source is only read, never written: every read runs in a READ ONLY
transaction with a statement timeout (:data:`READ_TIMEOUT_S`), statements go
over the extended protocol (one statement per message), a ``where`` must be
one SQL expression and an SQL layer one query (:func:`sql_problem`: no ``;``
outside quotes, no comment, balanced parentheses), checked before connecting.

Writing the results to PostGIS is :mod:`gisnet.output.postgis`.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
import shapely
from pyproj import CRS

from ..errors import GisnetError, LayerError
from ..extras import needs_extra

if TYPE_CHECKING:  # pragma: no cover
    pass

log = logging.getLogger(__name__)

#: What needs the ``postgis`` extra, in its error message.
POSTGIS_FEATURE = "reading or writing PostGIS"

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
#: Seconds one read statement may run before the server cancels it.
READ_TIMEOUT_S = 600
#: How a quoted part of SQL begins: a string ('...', E'...'), an identifier ("..."),
#: a dollar-quoted string ($tag$...$tag$).
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def sql_problem(text: str, *, query: bool) -> str | None:
    """Why ``text`` is not one SQL expression (``query`` False: a ``where``) or one
    query (``query`` True: an SQL layer), or None when it is.

    Quoted strings, identifiers and dollar-quoted strings are skipped; outside
    them a ``;`` (a second statement; a query may end with one), a comment
    (``--``, ``/*``) or unbalanced parentheses (a ``where`` closing gisnet's
    ``WHERE (...)``) is refused. The server then parses the text inside a READ
    ONLY transaction, so even what slipped past could not write.

    Examples
    --------
    >>> sql_problem("kind = 'a;b'", query=False) is None
    True
    >>> sql_problem("1=1; DELETE FROM mains", query=False)
    "holds a ';' outside quotes: one SQL condition only, never a second statement"
    """
    body = text.rstrip()
    if query:
        body = body.rstrip(";").rstrip() if body.endswith(";") else body
    depth = 0
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch in "'\"":
            escapes = ch == "'" and i > 0 and body[i - 1] in "eE" and (
                i == 1 or not (body[i - 2].isalnum() or body[i - 2] == "_"))
            j = i + 1
            while j < n:
                if escapes and body[j] == "\\":
                    j += 2
                    continue
                if body[j] == ch:
                    if j + 1 < n and body[j + 1] == ch:  # '' or "" inside
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                return f"has an unclosed {ch} quote"
            i = j + 1
            continue
        m = _DOLLAR.match(body, i) if ch == "$" else None
        if m and not (i > 0 and (body[i - 1].isalnum() or body[i - 1] == "_")):
            end = body.find(m.group(0), m.end())
            if end < 0:
                return f"has an unclosed {m.group(0)} quote"
            i = end + len(m.group(0))
            continue
        if ch == ";":
            return ("holds a ';' outside quotes: one SQL " + ("query" if query else "condition")
                    + " only, never a second statement")
        if body.startswith(("--", "/*"), i):
            return "holds an SQL comment (-- or /*): write the condition without one"
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return "closes a parenthesis it did not open"
        i += 1
    if depth:
        return "leaves a parenthesis open"
    if not body.strip():
        return "is empty"
    return None


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
            error: type[GisnetError] = LayerError, read_only: bool = False) -> Iterator[Any]:
    """A psycopg connection to ``db``; a failure is ``error`` naming the source
    (password removed), never a traceback.

    ``read_only``: every transaction of the session is READ ONLY (the session's
    default too, so not even a smuggled ``COMMIT`` opens a writable one) and a
    statement runs at most :data:`READ_TIMEOUT_S` seconds."""
    with needs_extra("postgis", POSTGIS_FEATURE):
        import psycopg
    try:
        conn = psycopg.connect(db.dsn, connect_timeout=20, application_name="gisnet")
    except psycopg.Error as exc:
        raise error(f"cannot connect to the {what}: {detail(exc)}", path=db.shown,
                    layer=role) from None
    if read_only:
        try:
            conn.read_only = True
            conn.execute("SET default_transaction_read_only = on")
            conn.execute(f"SET statement_timeout = '{int(READ_TIMEOUT_S)}s'")
        except psycopg.Error as exc:
            conn.close()
            raise error(f"cannot open a read-only session on the {what}: {detail(exc)}",
                        path=db.shown, layer=role) from None
    try:
        yield conn
    finally:
        conn.close()


def detail(exc: BaseException) -> str:
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
    with needs_extra("postgis", POSTGIS_FEATURE):
        from psycopg import sql

    db = parse_database(source)
    name = layer if layer is not None else db.table
    if name is None or isinstance(name, int):
        raise LayerError("a database source needs its table, view or SQL query: "
                         "layer = \"schema.table\" or layer = \"SELECT ...\"",
                         path=db.shown, layer=role)
    name = str(name)
    is_query = bool(_QUERY.match(name))
    problem = sql_problem(name, query=True) if is_query else None
    if problem is None and where is not None:
        problem = sql_problem(where, query=False)
        problem = None if problem is None else f"where = {where!r} {problem}"
    elif problem is not None:
        problem = f"the SQL layer {problem}"
    if problem is not None:
        raise LayerError(problem, path=db.shown, layer=role)
    rel: sql.Composable
    if is_query:
        rel = sql.SQL("({})").format(sql.SQL(name.rstrip().rstrip(";")))
    elif "." not in name and db.schema:
        rel = sql.Identifier(db.schema, name.strip('"'))
    else:
        rel = _relation(name)
    base = sql.SQL("SELECT * FROM {} AS src").format(rel)
    if where:
        base = sql.SQL("{} WHERE ({})").format(base, sql.SQL(where))
    what = f"{'query' if is_query else name}" + (f" with where = {where!r}" if where else "")
    with connect(db, role=role, read_only=True) as conn:
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT oid, typname FROM pg_type "
                            "WHERE typname IN ('geometry', 'geography')")
                geo_oids = dict(cur.fetchall())
                cur.execute(sql.SQL("{} LIMIT 0").format(base), prepare=True)
                desc = list(cur.description or [])
                key = None if is_query else _single_key(cur, name, db.schema)
                cols = [d.name for d in desc]
                geom_cols = [d.name for d in desc if d.type_code in geo_oids]
                if not geom_cols and not geo_oids:
                    log.info("%s: the database has no PostGIS extension", db.shown)
                items: list[sql.Composable] = []
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
                    sql.SQL(", ").join(items), base, order), prepare=True)
                rows = cur.fetchall()
                srid = 0
                if geom_cols:
                    cur.execute(sql.SQL("SELECT ST_SRID({0}) FROM ({1}) AS q WHERE {0} IS NOT "
                                        "NULL LIMIT 1").format(sql.Identifier(geom_cols[0]),
                                                               base), prepare=True)
                    got = cur.fetchone()
                    srid = int(got[0]) if got else 0
                crs = _crs_of(cur, srid)
        except LayerError:
            raise
        except Exception as exc:  # psycopg raises many classes; all mean "unreadable"
            raise LayerError(f"cannot read {what}: {detail(exc)}", path=db.shown,
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
