"""The register written out for staff: a CSV (UTF-8 with a BOM) or an XLSX workbook
with labelled headers (:func:`gisnet.labels.column_label`) and date cells."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..errors import ConfigError
from ..labels import column_label
from ..output.cells import write_csv, write_xlsx
from ..output.writing import atomic_path
from .entries import live

#: Date columns of the register.
DATE_COLUMNS = ("event_date",)


def register_table(reg: pd.DataFrame) -> pd.DataFrame:
    """The register as staff read it: every entry, with a ``void`` column (True for an
    entry a later ``void`` entry cancels)."""
    alive = set(live(reg)["entry_id"].tolist()) if len(reg) else set()
    out = reg.copy()
    out["void"] = [e not in alive and ev != "void"
                   for e, ev in zip(reg["entry_id"], reg["event"], strict=True)]
    return out


def write_register_file(reg: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write the register to ``path`` (``.csv`` or ``.xlsx``), atomically.

    Raises
    ------
    ConfigError
        Another file type.
    """
    path = Path(path)
    kind = path.suffix.lower()
    if kind not in (".csv", ".xlsx"):
        raise ConfigError("the register is exported as .csv or .xlsx", path=path)
    table = register_table(reg)
    header = [column_label(c) for c in table.columns]
    with atomic_path(path, "register export") as tmp:
        if kind == ".csv":
            out = table.copy()
            out.columns = header
            write_csv(out, tmp, encoding="utf-8-sig")
        else:
            write_xlsx(tmp, [("register", header, table)], dates=DATE_COLUMNS)
    return path
