"""Reading docs/results.md, the reference of every result layer and column.

docs/results.md documents every column of every result layer (one ``## `layer```
section each: prose, then a ``| column | type | unit | meaning |`` table, then
any vocabulary tables). It is the source: ``scripts/make_results_schema.py``
turns it into the package data ``gisnet/data/results_schema.json`` that
:mod:`gisnet.output.metadata` reads at run time, and the tests read it here to
check the code and the JSON against it. Not part of the package: an installed
gisnet never reads the Markdown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gisnet.output.metadata import SCHEMA_FORMAT, Column, LayerDoc

ROOT = Path(__file__).resolve().parents[1]
#: The reference document.
RESULTS_DOC = ROOT / "docs" / "results.md"
#: The package data made from it.
SCHEMA_JSON = ROOT / "gisnet" / "data" / "results_schema.json"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _unquote(cell: str) -> str:
    return cell.strip().strip("`")


def parse_tables(text: str) -> dict[str, dict[str, list[list[str]]]]:
    """Tables of the document by ``## `section``` and first header cell.

    Parameters
    ----------
    text
        The Markdown.

    Returns
    -------
    dict
        ``{section: {first_header: rows}}``, each row a list of cells with
        backticks around a cell removed; the separator line is skipped.
        Sections whose heading is not a single backquoted name (``## CRS and
        units``) are skipped.
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
    (Markdown backquotes removed).

    Parameters
    ----------
    text
        The Markdown.

    Returns
    -------
    dict
        Section name -> its paragraph.
    """
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


def parse_layers(text: str) -> dict[str, LayerDoc]:
    """The layers of a results document: the sections with a ``column`` table.

    Parameters
    ----------
    text
        The Markdown.

    Returns
    -------
    dict
        Layer name -> :class:`gisnet.output.metadata.LayerDoc`, in document
        order; a column's meaning has its Markdown backquotes removed.
    """
    tables, intros = parse_tables(text), parse_intros(text)
    out = {}
    for name, t in tables.items():
        if "column" not in t:
            continue
        cols = tuple(Column(*(r + [""] * 4)[:3], (r + [""] * 4)[3].replace("`", ""))
                     for r in t["column"])
        out[name] = LayerDoc(name, intros.get(name, ""), cols)
    return out


def schema_json(text: str) -> str:
    """The package data ``results_schema.json`` for the results document ``text``.

    Parameters
    ----------
    text
        The Markdown of docs/results.md.

    Returns
    -------
    str
        JSON (UTF-8 text, one trailing newline, deterministic): ``format``,
        ``source`` and ``layers``: per layer in document order its
        ``description`` and ``columns`` (``name``, ``type``, ``unit``,
        ``meaning``), the form :func:`gisnet.output.metadata.parse_schema`
        reads.
    """
    layers = {
        name: {"description": doc.description,
               "columns": [{"name": c.name, "type": c.type, "unit": c.unit,
                            "meaning": c.meaning} for c in doc.columns]}
        for name, doc in parse_layers(text).items()
    }
    doc = {"format": SCHEMA_FORMAT,
           "source": "docs/results.md (generated by scripts/make_results_schema.py; "
                     "edit the document, not this file)",
           "layers": layers}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
