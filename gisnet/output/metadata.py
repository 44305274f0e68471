"""What the result layers mean, for the GeoPackage's metadata: the results schema.

docs/results.md documents every column of every result layer; it is the one
source of truth, and ``scripts/make_results_schema.py`` turns it into the
package data ``gisnet/data/results_schema.json`` (a test keeps the two equal).
This module reads only that JSON, through :mod:`importlib.resources`, so an
installed gisnet needs no docs/ folder; a missing or damaged JSON is a
:class:`~gisnet.errors.ConfigError`, never silently empty descriptions.
:func:`describe_gpkg` copies it into the GeoPackage, so QGIS (and any
GeoPackage reader) shows what each layer and column means:

- ``gpkg_contents.description``: the layer's prose paragraph;
- ``gpkg_data_columns`` (the GeoPackage schema extension): per column a human
  label with its unit (``name`` and ``title``: ``Distance (ft)``) and the
  meaning (``description``); GDAL (and so QGIS) shows the label as the field's
  alias.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..labels import SUFFIX_UNITS, column_label

__all__ = ["SCHEMA_FORMAT", "SCHEMA_RESOURCE", "SUFFIX_UNITS", "Column", "LayerDoc",
           "column_aliases", "describe_gpkg", "layer_docs", "parse_schema"]

#: The results schema in the package (``gisnet/data/results_schema.json``).
SCHEMA_RESOURCE = ("data", "results_schema.json")
#: The version of its form; :func:`parse_schema` refuses any other.
SCHEMA_FORMAT = 1
_FIELDS = ("name", "type", "unit", "meaning")


@dataclass(frozen=True)
class Column:
    """One documented column: name, type, unit (``—`` for none), meaning."""

    name: str
    type: str
    unit: str
    meaning: str

    @property
    def file_only(self) -> bool:
        """The column exists only in the written files (its meaning starts
        ``files only:``), not in ``Results.layers``."""
        return self.meaning.startswith("files only:")

    @property
    def label(self) -> str:
        """A human label with the unit (:func:`gisnet.labels.column_label`):
        ``distance_ft`` -> ``Distance (ft)``, ``utilization`` -> ``Utilization
        (ratio)``, ``status`` -> ``Status``."""
        numeric = self.type in ("real", "integer")
        return column_label(self.name, unit=self.unit if numeric else None)


@dataclass(frozen=True)
class LayerDoc:
    """One documented layer: its description and its columns in order."""

    name: str
    description: str
    columns: tuple[Column, ...]

    def column(self, name: str) -> Column | None:
        """The documented column ``name``, or None."""
        return next((c for c in self.columns if c.name == name), None)


def _damaged(source: str, problem: str) -> ConfigError:
    return ConfigError(f"the results schema of this gisnet install is damaged: {problem}; "
                       f"reinstall gisnet (or, in a checkout, run python "
                       f"scripts/make_results_schema.py)", path=source)


def _text(value: Any, source: str, where: str) -> str:
    if not isinstance(value, str):
        raise _damaged(source, f"{where} is not text")
    return value


def parse_schema(text: str, source: str = "results_schema.json") -> dict[str, LayerDoc]:
    """The layers of a results schema JSON (the form ``scripts/make_results_schema.py``
    writes).

    Parameters
    ----------
    text
        The JSON text: ``{"format": 1, "layers": {name: {"description": ...,
        "columns": [{"name", "type", "unit", "meaning"}, ...]}}}``.
    source
        Where it came from, for the error message.

    Returns
    -------
    dict
        Layer name -> :class:`LayerDoc`, in the file's order.

    Raises
    ------
    ConfigError
        The text is not JSON, is of another format, or a layer or column is
        not what the form says (the message names the file, layer and column).
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise _damaged(source, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != SCHEMA_FORMAT:
        raise _damaged(source, f"not a results schema of format {SCHEMA_FORMAT}")
    layers = doc.get("layers")
    if not isinstance(layers, dict) or not layers:
        raise _damaged(source, "it lists no layers")
    out = {}
    for name, layer in layers.items():
        if not isinstance(layer, dict) or not isinstance(layer.get("columns"), list) \
                or not layer["columns"]:
            raise _damaged(source, f"layer {name!r} has no columns")
        desc = _text(layer.get("description"), source, f"the description of layer {name!r}")
        cols = []
        for i, col in enumerate(layer["columns"], 1):
            if not isinstance(col, dict) or set(col) != set(_FIELDS):
                raise _damaged(source, f"column {i} of layer {name!r} is not "
                                       f"{{{', '.join(_FIELDS)}}}")
            cols.append(Column(*(_text(col[f], source, f"{f} of column {i} of layer {name!r}")
                                 for f in _FIELDS)))
        out[name] = LayerDoc(name, desc, tuple(cols))
    return out


@functools.cache
def layer_docs() -> dict[str, LayerDoc]:
    """The result layers of the package's results schema (from docs/results.md).

    Returns
    -------
    dict
        Layer name -> :class:`LayerDoc`.

    Raises
    ------
    ConfigError
        The JSON is missing from the install or damaged.
    """
    node = resources.files("gisnet").joinpath(*SCHEMA_RESOURCE)
    source = f"gisnet/{'/'.join(SCHEMA_RESOURCE)}"
    try:
        text = node.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _damaged(source, "the file is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _damaged(source, f"it cannot be read ({exc})") from None
    return parse_schema(text, str(node))


def column_aliases(layer: str, columns: Iterable[str],
                   docs: dict[str, LayerDoc] | None = None) -> dict[str, str]:
    """The alias of each documented column of ``layer`` among ``columns``: its label
    with its unit (:attr:`Column.label`), the column's own name where two labels
    would be equal (as ``gpkg_data_columns`` holds them: its names are unique).

    Parameters
    ----------
    layer
        The result layer.
    columns
        The columns present, in order (the geometry column is not aliased).
    docs
        The layer documentation (default :func:`layer_docs`).

    Returns
    -------
    dict
        Column -> alias, in the order of ``columns``; empty for an undocumented layer.
    """
    docs = layer_docs() if docs is None else docs
    doc = docs.get(layer)
    if doc is None:
        return {}
    present = set(columns)
    used: set[str] = set()
    out = {}
    for c in doc.columns:
        if c.name not in present or c.name == "geometry":
            continue
        label = c.label if c.label not in used else c.name
        used.add(label)
        out[c.name] = label
    return {c: out[c] for c in columns if c in out}


_DATA_COLUMNS_DDL = """
CREATE TABLE IF NOT EXISTS gpkg_data_columns (
  table_name TEXT NOT NULL,
  column_name TEXT NOT NULL,
  name TEXT,
  title TEXT,
  description TEXT,
  mime_type TEXT,
  constraint_name TEXT,
  CONSTRAINT pk_gdc PRIMARY KEY (table_name, column_name),
  CONSTRAINT gdc_tn UNIQUE (table_name, name)
)"""


def describe_gpkg(path: str | Path, layers: Iterable[str],
                  docs: dict[str, LayerDoc] | None = None) -> int:
    """Write the descriptions of ``layers`` into the GeoPackage ``path``.

    Sets ``gpkg_contents.description`` of each documented layer and replaces its
    rows of ``gpkg_data_columns`` (created with its ``gpkg_extensions`` row if
    absent) with one row per documented column present in the table: ``name``
    and ``title`` the column's label with its unit, ``description`` its meaning.
    Layers the document does not list are left as they are.

    Parameters
    ----------
    path
        A GeoPackage gisnet is writing (not yet published).
    layers
        Names of the layers to describe.
    docs
        The layer documentation (default :func:`layer_docs`).

    Returns
    -------
    int
        The number of column rows written.
    """
    docs = layer_docs() if docs is None else docs
    todo = [docs[n] for n in layers if n in docs]
    if not todo:
        return 0
    n = 0
    con = sqlite3.connect(path)
    try:
        with con:
            con.execute(_DATA_COLUMNS_DDL)
            con.execute("CREATE TABLE IF NOT EXISTS gpkg_extensions (table_name TEXT, "
                        "column_name TEXT, extension_name TEXT NOT NULL, definition TEXT NOT "
                        "NULL, scope TEXT NOT NULL, CONSTRAINT ge_tce UNIQUE (table_name, "
                        "column_name, extension_name))")
            if not con.execute("SELECT 1 FROM gpkg_extensions WHERE table_name = "
                               "'gpkg_data_columns' AND extension_name = 'gpkg_schema'"
                               ).fetchone():
                con.execute("INSERT INTO gpkg_extensions VALUES ('gpkg_data_columns', NULL, "
                            "'gpkg_schema', 'http://www.geopackage.org/spec121/#extension_"
                            "schema', 'read-write')")
            for doc in todo:
                present = {r[1] for r in con.execute(f'PRAGMA table_info("{doc.name}")')}
                if not present:
                    continue
                con.execute("UPDATE gpkg_contents SET description = ? WHERE table_name = ?",
                            (doc.description, doc.name))
                con.execute("DELETE FROM gpkg_data_columns WHERE table_name = ?", (doc.name,))
                geom = con.execute("SELECT column_name FROM gpkg_geometry_columns WHERE "
                                   "table_name = ?", (doc.name,)).fetchone()
                used: set[str] = set()
                for c in doc.columns:
                    col = geom[0] if c.name == "geometry" and geom else c.name
                    if col not in present:
                        continue
                    label = c.label if c.label not in used else c.name
                    used.add(label)
                    con.execute("INSERT INTO gpkg_data_columns (table_name, column_name, name, "
                                "title, description) VALUES (?, ?, ?, ?, ?)",
                                (doc.name, col, label, label, c.meaning))
                    n += 1
    finally:
        con.close()
    return n
