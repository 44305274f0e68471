"""QGIS default styles of the results written to PostGIS: rows of ``layer_styles``.

QGIS's PostgreSQL provider (3.22 as later versions) looks for a table named
``layer_styles`` without a schema, so on the connection's ``search_path``:
``public.layer_styles`` for a default setup, whatever schema the layers are in.
It picks the row whose ``f_table_catalog`` (the database), ``f_table_schema``,
``f_table_name`` and ``f_geometry_column`` name the layer, the ``useAsDefault``
one first. :func:`write_pg_styles` writes one such row per result table with
geometry, in the same transaction as the tables, with the QML of the GeoPackage's
styles (:func:`gisnet.output.styles.layer_qml`: the web maps' classes and
colours, field aliases with units):

- the table is created with QGIS's own definition when absent (a ``type``
  column added when an older QGIS made it without one); gisnet's rows leave
  ``type`` null: QGIS 3.22 fills it with the geometry type of the layer's URI
  (``Line``, or ``Unknown geometry`` for a URI that names none) and matches
  ``type = <that> OR type IS NULL``, so only a null matches every way of
  opening the table;
- gisnet's earlier rows (``styleName`` ``gisnet``) of the output schema are
  replaced; a user's own styles are left as they are, and gisnet's row is the
  default only for a layer with no other default;
- a role that may not create a table in ``public`` (PostgreSQL 15 and later
  grant no ``CREATE`` there by default) gets the table in the output schema
  instead, said in a warning: QGIS then finds it only with that schema on its
  ``search_path``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..io.postgis import GEOM
from .styles import STYLE_NAME, STYLES_TABLE, layer_qml

log = logging.getLogger(__name__)

__all__ = ["STYLES_SCHEMA", "write_pg_styles"]

#: The schema QGIS finds ``layer_styles`` in on a default ``search_path``.
STYLES_SCHEMA = "public"
#: QGIS 3.22's definition of the table (its PostgreSQL provider's CREATE TABLE).
_DDL = ("CREATE TABLE IF NOT EXISTS {} (id SERIAL PRIMARY KEY, f_table_catalog varchar, "
        "f_table_schema varchar, f_table_name varchar, f_geometry_column varchar, "
        "styleName text, styleQML xml, styleSLD xml, useAsDefault boolean, description text, "
        "owner varchar(63) DEFAULT CURRENT_USER, ui xml, "
        "update_time timestamp DEFAULT CURRENT_TIMESTAMP, type varchar)")


def _geometry_type(df: pd.DataFrame) -> str | None:
    """The one geometry type of a layer's geometries (``Polygon`` ...), or None."""
    if not isinstance(df, gpd.GeoDataFrame) or df.geometry.name not in df.columns:
        return None
    types = pd.unique(np.asarray(df.geometry.geom_type.dropna(), dtype=object))
    return str(types[0]) if len(types) == 1 else None


def _table(cur: Any, schema: str) -> str:
    """Create (if absent) the styles table in ``schema``, with a ``type`` column."""
    from psycopg import sql

    cur.execute(sql.SQL(_DDL).format(sql.Identifier(schema, STYLES_TABLE)))
    cur.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND "
                "table_name = %s AND column_name = 'type'", (schema, STYLES_TABLE))
    if cur.fetchone() is None:
        cur.execute(sql.SQL("ALTER TABLE {} ADD COLUMN type varchar").format(
            sql.Identifier(schema, STYLES_TABLE)))
    return schema


def write_pg_styles(cur: Any, schema: str, layers: Mapping[str, pd.DataFrame]) -> str:
    """Write the ``layer_styles`` rows of the result tables ``layers`` of ``schema``.

    Parameters
    ----------
    cur
        A psycopg cursor inside the run's transaction (the tables are in place).
    schema
        The output schema holding the tables.
    layers
        Table name -> the frame written (its columns and geometry type decide the
        style; a table without one geometry type gets no row).

    Returns
    -------
    str
        The styles table written, ``schema.layer_styles``.
    """
    import psycopg
    from psycopg import sql

    cur.execute("SAVEPOINT gisnet_styles")
    try:
        where = _table(cur, STYLES_SCHEMA)
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.InvalidSchemaName) as exc:
        cur.execute("ROLLBACK TO SAVEPOINT gisnet_styles")
        log.warning("cannot write %s.%s (%s): the QGIS styles go to %s.%s, which QGIS "
                    "reads only with schema %s on its search_path", STYLES_SCHEMA,
                    STYLES_TABLE, str(exc).strip().splitlines()[0], schema, STYLES_TABLE,
                    schema)
        where = _table(cur, schema)
    cur.execute("RELEASE SAVEPOINT gisnet_styles")
    table = sql.Identifier(where, STYLES_TABLE)
    cur.execute(sql.SQL("DELETE FROM {} WHERE f_table_catalog = current_database() AND "
                        "f_table_schema = %s AND styleName = %s").format(table),
                (schema, STYLE_NAME))
    n = 0
    for name in sorted(layers):
        df = layers[name]
        cols = [str(c) for c in df.columns if not (isinstance(df, gpd.GeoDataFrame)
                                                   and c == df.geometry.name)]
        qml = layer_qml(name, _geometry_type(df), ["fid", *cols])
        if qml is None:
            continue
        cur.execute(sql.SQL(
            "INSERT INTO {} (f_table_catalog, f_table_schema, f_table_name, f_geometry_column, "
            "styleName, styleQML, styleSLD, useAsDefault, description, type) "
            "SELECT current_database(), %s, %s, %s, %s, XMLPARSE(DOCUMENT %s), NULL, "
            "NOT EXISTS (SELECT 1 FROM {} WHERE f_table_catalog = current_database() AND "
            "f_table_schema = %s AND f_table_name = %s AND useAsDefault), %s, NULL"
        ).format(table, table), (schema, name, GEOM, STYLE_NAME, qml, schema, name,
                                 f"gisnet style of {name}"))
        n += 1
    log.info("wrote %d QGIS styles to %s.%s", n, where, STYLES_TABLE)
    return f"{where}.{STYLES_TABLE}"
