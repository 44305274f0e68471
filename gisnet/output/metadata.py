"""What the result layers mean, from docs/results.md, for the GeoPackage's metadata.

docs/results.md documents every column of every result layer (one ``## `layer```
section each: prose, then a ``| column | type | unit | meaning |`` table). It is
the one source of truth: ``tests/test_results_schema.py`` checks the code
against it with :func:`parse_tables`, and :func:`describe_gpkg` copies it into
the GeoPackage, so QGIS (and any GeoPackage reader) shows what each layer and
column means:

- ``gpkg_contents.description``: the layer's prose paragraph;
- ``gpkg_data_columns`` (the GeoPackage schema extension): per column a human
  label with its unit (``name`` and ``title``: ``Distance (ft)``) and the
  meaning (``description``); GDAL (and so QGIS) shows the label as the field's
  alias.
"""

from __future__ import annotations

import functools
import logging
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..labels import SUFFIX_UNITS, column_label

__all__ = ["RESULTS_DOC", "SUFFIX_UNITS", "Column", "LayerDoc", "describe_gpkg",
           "layer_docs", "parse_intros", "parse_layers", "parse_tables"]

log = logging.getLogger(__name__)

#: The reference document (in the source tree, beside the package).
RESULTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"



def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _unquote(cell: str) -> str:
    return cell.strip().strip("`")


def parse_tables(text: str) -> dict[str, dict[str, list[list[str]]]]:
    """Tables of the document by ``## `section``` and first header cell.

    Returns ``{section: {first_header: rows}}``, each row a list of cells with
    backticks removed; the separator line is skipped. Sections whose heading is
    not a single backquoted name (``## CRS and units``) are skipped.
    """
    out: dict[str, dict[str, list[list[str]]]] = {}
    section = None
    header: str | None = None
    for line in text.splitlines():
        m = re.match(r"^## `(\w+)`\s*$", line)
        if m:
            section, header = m.group(1), None
            out[section] = {}
            continue
        if line.startswith("## "):
            section, header = None, None
            continue
        if section is None:
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = [_unquote(c) for c in _cells(line)]
        if header is None:
            header = cells[0]
            out[section][header] = []
        elif not set(line.replace("|", "").strip()) <= set("-: "):
            out[section][header].append(cells)
    return out


def parse_intros(text: str) -> dict[str, str]:
    """Each ``## `section```'s prose before its first table, as one line of text
    (Markdown backquotes removed)."""
    out: dict[str, str] = {}
    section = None
    words: list[str] = []
    for line in [*text.splitlines(), "## end"]:
        if line.startswith("## ") or (section is not None and line.startswith("|")):
            if section is not None:
                out[section] = " ".join(words).replace("`", "").strip()
            m = re.match(r"^## `(\w+)`\s*$", line)
            section = m.group(1) if m and line.startswith("## ") and m.group(1) not in out \
                else None
            words = []
            continue
        if section is not None and line.strip():
            words.append(line.strip())
    return out


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


def parse_layers(text: str) -> dict[str, LayerDoc]:
    """The layers of a results document (sections with a ``column`` table)."""
    tables, intros = parse_tables(text), parse_intros(text)
    out = {}
    for name, t in tables.items():
        if "column" not in t:
            continue
        cols = tuple(Column(c[0], c[1], c[2], c[3].replace("`", ""))
                     for c in (r + [""] * 4 for r in t["column"]))
        out[name] = LayerDoc(name, intros.get(name, ""), cols)
    return out


@functools.cache
def layer_docs() -> dict[str, LayerDoc]:
    """The result layers documented in docs/results.md (empty, with a log line,
    where the document is not beside the package, as in an installed wheel)."""
    try:
        text = RESULTS_DOC.read_text(encoding="utf-8")
    except OSError:
        log.info("%s not found: the GeoPackage is written without layer and column "
                 "descriptions", RESULTS_DOC)
        return {}
    return parse_layers(text)


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
