"""QGIS styles for the results GeoPackage: the ``layer_styles`` table.

QGIS looks for a table ``layer_styles`` in a GeoPackage and applies the row of
a layer marked ``useAsDefault`` when the layer is opened. :func:`write_styles`
writes one row per result layer with geometry, its ``styleQML`` a renderer in
the web maps' classes and colours:

- ``obligations``: categorized by ``status`` (:data:`STATUS_COLOURS`);
- ``pipes_capacity``: categorized by the utilization class
  (:data:`UTIL_CLASSES`), computed by :data:`PIPE_CLASS_EXPRESSION` from the
  layer's own ``over_threshold`` / ``deficient`` / ``surcharged`` booleans
  (decided by gisnet on the unrounded numbers), ``capacity_gpd``,
  ``utilization`` and ``flags``, as ``gisnet.maps.capacity.classify_pipes`` does;
- ``quality``: categorized by ``severity`` (:data:`SEVERITY_COLOURS`);
- every other layer: one simple symbol (:data:`SIMPLE_COLOURS`).

Each style also carries the layer's field aliases (``<aliases>``: each column's
label with its unit, :func:`gisnet.output.metadata.column_aliases`, the words of
``gpkg_data_columns``), so QGIS 3.22, whose GDAL does not read
``gpkg_data_columns``, shows labelled fields too. The same XML goes into the
QGIS project (:mod:`gisnet.output.qgis_project`) and PostGIS's ``layer_styles``
(:mod:`gisnet.output.pg_styles`).

The colour tables are :mod:`gisnet.palettes` (the maps and figures use them too),
and the category labels are :mod:`gisnet.labels`' (the words of the web maps'
legends); tests/test_gpkg_metadata.py checks that the two agree.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

from ..labels import SEVERITY_LABELS, STATUS_LABELS
from ..palettes import SEVERITY_COLOURS, SIMPLE_COLOURS, STATUS_COLOURS, UTIL_CLASSES
from .metadata import column_aliases

#: The utilization class of a ``pipes_capacity`` row, as a QGIS expression (also
#: valid SQLite, which the tests evaluate it with).
PIPE_CLASS_EXPRESSION = (
    "CASE WHEN \"capacity_gpd\" <= 0 OR (\"utilization\" IS NULL AND "
    "(lower(\"flags\") LIKE '%adverse%' OR lower(\"flags\") LIKE '%flat%' OR "
    "lower(\"flags\") LIKE '%zero%')) THEN 'nocapacity' "
    "WHEN \"surcharged\" THEN 'surcharged' WHEN \"deficient\" THEN 'deficient' "
    "WHEN \"over_threshold\" THEN 'threshold' WHEN \"utilization\" IS NULL THEN 'unknown' "
    "ELSE 'ok' END")
#: Layer -> (attribute or expression, {value: (colour, label)}) of the categorized ones.
CATEGORIZED: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "obligations": ("status", {k: (c, STATUS_LABELS[k]) for k, c in STATUS_COLOURS.items()}),
    "pipes_capacity": (PIPE_CLASS_EXPRESSION, UTIL_CLASSES),
    "quality": ("severity", {k: (c, SEVERITY_LABELS[k]) for k, c in SEVERITY_COLOURS.items()}),
}
#: The name of gisnet's style rows.
STYLE_NAME = "gisnet"
#: The table QGIS reads styles from.
STYLES_TABLE = "layer_styles"
#: The style categories gisnet's styles hold (QGIS applies only these from them).
STYLE_CATEGORIES = "Symbology|Fields"

_DDL = """
CREATE TABLE IF NOT EXISTS layer_styles (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  f_table_catalog TEXT(256),
  f_table_schema TEXT(256),
  f_table_name TEXT(256),
  f_geometry_column TEXT(256),
  styleName TEXT(30),
  styleQML TEXT,
  styleSLD TEXT,
  useAsDefault BOOLEAN,
  description TEXT,
  owner TEXT(30),
  ui TEXT(30),
  update_time DATETIME
)"""


def _rgba(colour: str, alpha: int = 255) -> str:
    h = colour.lstrip("#")
    return ",".join(str(int(h[i:i + 2], 16)) for i in (0, 2, 4)) + f",{alpha}"


def _kind(geometry_type: str) -> str | None:
    """``marker``, ``line`` or ``fill`` for a GeoPackage geometry type name."""
    g = geometry_type.upper()
    if "POINT" in g:
        return "marker"
    if "LINE" in g:
        return "line"
    if "POLYGON" in g:
        return "fill"
    return None


def _symbol(parent: ET.Element, name: str, kind: str, colour: str) -> None:
    sym = ET.SubElement(parent, "symbol", type=kind, name=name, alpha="1",
                        clip_to_extent="1", force_rhr="0")
    if kind == "marker":
        cls, props = "SimpleMarker", {"name": "circle", "color": _rgba(colour), "size": "2.4",
                                      "outline_color": "35,35,35,255", "outline_width": "0.2"}
    elif kind == "line":
        cls, props = "SimpleLine", {"line_color": _rgba(colour), "line_width": "0.66",
                                    "line_style": "solid", "capstyle": "round"}
    else:
        cls, props = "SimpleFill", {"color": _rgba(colour, 150), "style": "solid",
                                    "outline_color": _rgba(colour), "outline_width": "0.26"}
    lay = ET.SubElement(sym, "layer", {"class": cls, "enabled": "1", "pass": "0",
                                       "locked": "0"})
    opts = ET.SubElement(lay, "Option", type="Map")
    for k, v in props.items():  # QGIS >= 3.26 reads Option, older versions prop
        ET.SubElement(opts, "Option", type="QString", name=k, value=v)
    for k, v in props.items():
        ET.SubElement(lay, "prop", k=k, v=v)


def style_children(layer: str, geometry_type: str | None,
                   columns: Sequence[str] = ()) -> list[ET.Element]:
    """The elements of ``layer``'s style: the renderer (for a layer with geometry)
    and the field aliases of ``columns`` (those the results schema documents).

    Parameters
    ----------
    layer
        The result layer's name.
    geometry_type
        A geometry type name (``POLYGON``, ``LineString`` ...), or None for a
        table without geometry.
    columns
        The layer's columns in the file, in order.

    Returns
    -------
    list of xml.etree.ElementTree.Element
        ``renderer-v2`` (absent for a table) and ``aliases`` (absent without
        documented columns), to put inside a ``<qgis>`` or ``<maplayer>`` element.
    """
    out: list[ET.Element] = []
    kind = _kind(geometry_type) if geometry_type else None
    if kind is not None:
        if layer in CATEGORIZED:
            attr, classes = CATEGORIZED[layer]
            r = ET.Element("renderer-v2", type="categorizedSymbol", attr=attr,
                           symbollevels="0", enableorderby="0", forceraster="0")
            cats = ET.SubElement(r, "categories")
            syms = ET.SubElement(r, "symbols")
            for i, (value, (colour, label)) in enumerate(classes.items()):
                ET.SubElement(cats, "category", render="true", symbol=str(i), value=value,
                              label=label, type="string")
                _symbol(syms, str(i), kind, colour)
        else:
            r = ET.Element("renderer-v2", type="singleSymbol", symbollevels="0",
                           enableorderby="0", forceraster="0")
            syms = ET.SubElement(r, "symbols")
            _symbol(syms, "0", kind, SIMPLE_COLOURS.get(layer, "#555555"))
        out.append(r)
    aliases = column_aliases(layer, columns)
    if aliases:
        al = ET.Element("aliases")
        for i, col in enumerate(columns):
            if col in aliases:
                ET.SubElement(al, "alias", field=col, index=str(i), name=aliases[col])
        out.append(al)
    return out


def geometry_code(geometry_type: str | None) -> str:
    """QGIS's ``layerGeometryType`` of a geometry type name: 0 point, 1 line,
    2 polygon, 4 none."""
    kind = _kind(geometry_type) if geometry_type else None
    return {"marker": "0", "line": "1", "fill": "2"}.get(kind or "", "4")


def layer_qml(layer: str, geometry_type: str | None, columns: Sequence[str] = ()) -> str | None:
    """The QML style of ``layer`` with geometry ``geometry_type`` (a geometry type
    name) and ``columns`` (for the field aliases), or None for an attribute table
    (QGIS keeps no styles of tables in ``layer_styles``)."""
    if geometry_type is None or _kind(geometry_type) is None:
        return None
    root = ET.Element("qgis", version="3.22.0", styleCategories=STYLE_CATEGORIES)
    root.extend(style_children(layer, geometry_type, columns))
    ET.SubElement(root, "layerGeometryType").text = geometry_code(geometry_type)
    body = ET.tostring(root, encoding="unicode")
    return "<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>\n" + body


def write_styles(path: str | Path, layers: Iterable[str],
                 descriptions: Mapping[str, str] | None = None) -> int:
    """Write the ``layer_styles`` rows of ``layers`` into the GeoPackage ``path``.

    Replaces gisnet's earlier rows of those layers (``styleName`` ``gisnet``) and
    leaves every other row (a user's own styles) as it is; gisnet's row is the
    default (``useAsDefault``) only when the layer has no other default. The
    table is registered in ``gpkg_contents`` as an attribute table, as QGIS
    registers it: GDAL lists it among the layers (:data:`STYLES_TABLE`), and
    readers of the results skip it. ``update_time`` is left null so that two
    runs write equal tables.

    Returns
    -------
    int
        The number of styles written.
    """
    descriptions = descriptions or {}
    n = 0
    con = sqlite3.connect(path)
    try:
        with con:
            con.execute(_DDL)
            if not con.execute("SELECT 1 FROM gpkg_contents WHERE table_name = ?",
                               (STYLES_TABLE,)).fetchone():
                con.execute("INSERT INTO gpkg_contents (table_name, data_type, identifier, "
                            "description) VALUES (?, 'attributes', ?, ?)",
                            (STYLES_TABLE, STYLES_TABLE, "QGIS layer styles (gisnet writes "
                             "one per result layer, in the web maps' colours)"))
            for layer in layers:
                row = con.execute("SELECT column_name, geometry_type_name FROM "
                                  "gpkg_geometry_columns WHERE table_name = ?",
                                  (layer,)).fetchone()
                con.execute("DELETE FROM layer_styles WHERE f_table_name = ? AND styleName = ?",
                            (layer, STYLE_NAME))
                columns = [r[1] for r in con.execute(f'PRAGMA table_info("{layer}")')]
                qml = layer_qml(layer, row[1], columns) if row else None
                if qml is None:
                    continue
                other_default = con.execute(
                    "SELECT 1 FROM layer_styles WHERE f_table_name = ? AND useAsDefault",
                    (layer,)).fetchone()
                con.execute(
                    "INSERT INTO layer_styles (f_table_catalog, f_table_schema, f_table_name, "
                    "f_geometry_column, styleName, styleQML, styleSLD, useAsDefault, "
                    "description, owner, ui) VALUES ('', '', ?, ?, ?, ?, '', ?, ?, 'gisnet', '')",
                    (layer, row[0], STYLE_NAME, qml, 0 if other_default else 1,
                     descriptions.get(layer, f"gisnet style of {layer}")))
                n += 1
    finally:
        con.close()
    return n
