"""PostgreSQL/PostGIS as the output of a run (reading a source: :mod:`gisnet.io.postgis`).

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
from .writing import file_form, gpkg_ready

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)



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
        GeoPackage holds them (:func:`gisnet.output.writing.file_form`).
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
    with needs_extra("postgis", POSTGIS_FEATURE):
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
            raise ConfigError(f"cannot write the results to schema {schema}: {detail(exc)}",
                              path=db.shown) from None
    return f"{db.shown} (schema {schema}: {len(layers)} tables, {RUNS_TABLE})"
