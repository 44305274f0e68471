"""Attribute values of one canonical column: value maps, units, dtypes, defaults, codes.

:func:`column_values` turns the source column mapped to a canonical column
(:mod:`gisnet.schema`) into that column's values, in this order:

1. the town file's value map (``[layers.ROLE.values.COLUMN]``), case-insensitive;
2. conversion to the column's dtype: numbers in the canonical unit (diameter
   mm -> in, slope percent -> ft/ft, ``"8 in"``/``"200 mm"``/``"1,234"`` text),
   yes/no booleans, ISO, ``MM/DD/YYYY`` or year-only dates;
3. the town file's default for nulls (``[layers.ROLE.defaults]``);
4. normalisation of coded text to its canonical value set
   (:data:`gisnet.schema.VALUE_ALIASES`; an unknown or missing ``kind``
   becomes ``unknown``, :data:`gisnet.schema.VALUE_FALLBACK`).

Every value that cannot be used is set to missing and reported as a finding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import schema
from ..errors import SchemaError
from ..townfile import LayerSpec
from ..units import MM_PER_IN
from .notes import LayerNotes, ids_text

#: Columns where a negative number cannot be right (elevations and slopes can be).
NONNEGATIVE = {
    "diameter_in", "design_flow_mgd", "avg_flow_mgd", "flow_gpd", "process_flow_gpd",
    "width_ft", "dwelling_units", "bedrooms",
}
_INCH = {"in": 1.0, "inch": 1.0, "inches": 1.0, '"': 1.0, "''": 1.0,
         "mm": 1 / MM_PER_IN, "millimeter": 1 / MM_PER_IN, "millimeters": 1 / MM_PER_IN,
         "millimetre": 1 / MM_PER_IN, "millimetres": 1 / MM_PER_IN}
_FEET = {"ft": 1.0, "feet": 1.0, "foot": 1.0, "'": 1.0}
#: Units a text value may carry, per column: token -> factor to the canonical unit.
#: A plain number is in the configured source unit.
TEXT_UNITS: dict[str, dict[str, float]] = {
    "diameter_in": _INCH,
    "slope": {"%": 0.01, "percent": 0.01, "ft/ft": 1.0},
    "up_invert_ft": _FEET, "down_invert_ft": _FEET, "rim_ft": _FEET, "invert_ft": _FEET,
    "width_ft": _FEET,
    "design_flow_mgd": {"mgd": 1.0}, "avg_flow_mgd": {"mgd": 1.0},
    "flow_gpd": {"gpd": 1.0}, "process_flow_gpd": {"gpd": 1.0},
}
_NUM_RE = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z%\"'/]+)?\s*$", re.IGNORECASE)
#: A number :data:`_NUM_RE` reads without a unit, in ASCII digits (Arrow's expressions).
_PLAIN_NUM = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_THOUSANDS_RE = re.compile(r"^\s*-?\d{1,3}(,\d{3})+(\.\d+)?\s*$")
#: Text read as true / false in a boolean column (lower case).
TRUE_TEXT = {"y", "yes", "true", "t", "1", "x", "on"}
FALSE_TEXT = {"n", "no", "false", "f", "0", "off"}


def as_text(s: pd.Series) -> pd.Series:
    """Source values as stripped text (ints without '.0'), nulls and '' as NA."""
    if pd.api.types.is_bool_dtype(s):
        out = s.map({True: "true", False: "false"})
    elif pd.api.types.is_integer_dtype(s):
        out = s.astype("Int64").astype("str")
    elif pd.api.types.is_float_dtype(s):
        v = s.astype(float)
        integral = np.isfinite(v) & (np.floor(v) == v) & (v.abs() < 1e15)
        out = pd.Series(
            np.where(integral, v.fillna(0).astype(np.int64).astype(str), v.astype(str)),
            index=s.index,
        ).where(v.notna())
    elif pd.api.types.is_datetime64_any_dtype(s):
        out = s.dt.strftime("%Y-%m-%d")
    else:
        out = s.astype("str")  # nulls (None, NaN, NA) stay null
    out = out.astype("str").str.strip()
    return out.where(out.notna() & (out != ""))


def column_values(col: schema.Column, raw: pd.Series | None, spec: LayerSpec,
                  ids: pd.Series, notes: LayerNotes) -> pd.Series:
    """The values of one canonical column, from its source column.

    Parameters
    ----------
    col
        The canonical column.
    raw
        The source column's values, one per output row (RangeIndex), or None
        when the source has no column for it (then all are null, and only the
        town file's default can fill them).
    spec
        The layer's town-file entry (value maps, defaults, source units).
    ids
        Feature ids of the rows, for findings.
    notes
        Findings go here.

    Returns
    -------
    pandas.Series
        Values in the column's canonical dtype (``str``, ``float64``,
        ``Int64``, ``boolean``, ``datetime64[ms]``).
    """
    if raw is None:  # every value missing: one converted, then repeated
        one = convert(col, pd.Series([None], dtype=object), spec, ids[:1], notes)
        out = pd.Series(one.array.take(np.zeros(len(ids), dtype=np.intp)))
    else:
        if col.name in spec.values:
            vmap = {str(k).strip().lower(): v for k, v in spec.values[col.name].items()}
            hit = as_text(raw).str.lower().map(vmap)
            raw = raw.astype(object).where(hit.isna(), hit)
        out = convert(col, raw, spec, ids, notes)
    if col.name in spec.defaults:
        d = spec.defaults[col.name]
        nulls = out.isna()
        if nulls.any():
            fill = convert(col, pd.Series([d], dtype=object), spec, pd.Series(["default"]), notes)
            out = out.where(~nulls, fill.iloc[0])
            notes.add("default_applied", "info",
                      f"{col.name} = {d!r} (town-file default) given to {int(nulls.sum())} "
                      f"features that had none")
    key = (notes.role, col.name)
    if key in schema.VALUE_ALIASES:
        out = normalise(col.name, out, schema.VALUE_ALIASES[key], ids, notes)
    return out


def normalise(name: str, s: pd.Series, aliases: Mapping[str, tuple[str, ...]],
              ids: pd.Series, notes: LayerNotes) -> pd.Series:
    """Coded text to its canonical value (``aliases``: canonical -> source spellings).

    A value no alias matches is reported. A column with a fallback
    (:data:`gisnet.schema.VALUE_FALLBACK`: ``kind`` -> ``unknown``) takes it
    where the value is unknown or missing; a column of
    :data:`gisnet.schema.VALUE_KEPT_WHEN_UNRECOGNISED` (``owner``, ``status``)
    keeps the value as written (a main with it is not known to be public or in
    service); any other column is null there.
    """
    lookup = {a.lower(): canon for canon, al in aliases.items() for a in al}
    lookup.update({c: c for c in aliases})
    low = s.str.lower()
    out = low.map(lookup)
    unknown = low.notna() & out.isna()
    fallback = schema.VALUE_FALLBACK.get(name)
    kept = name in schema.VALUE_KEPT_WHEN_UNRECOGNISED
    if unknown.any():
        vals = s[unknown].value_counts()
        listing = ", ".join(f"{v!r} ({c})" for v, c in vals.items())
        where = f"set to {fallback!r}" if fallback else "treated as not given"
        if kept:
            what = "public" if name == "owner" else "in service"
            then = ("it orders nobody to connect and parcels near it alone are 'review'"
                    if notes.role == "mains" else "it is no control manhole")
            where = f"kept as written: such a feature is not known to be {what}, so {then}"

        notes.add("unknown_value", "warning",
                  f"{name} values not recognised ({where}; map them in "
                  f"[layers.{notes.role}.values.{name}]): {listing}", ids[unknown])
    if fallback:
        out = out.fillna(fallback)
    elif kept:
        out = out.where(~unknown, s)
    return out.astype("str")


def convert(col: schema.Column, raw: pd.Series, spec: LayerSpec, ids: pd.Series,
            notes: LayerNotes) -> pd.Series:
    """Source values to the column's canonical dtype (and unit)."""
    if col.dtype == "str":
        return as_text(raw).astype("str")
    if col.dtype in ("float", "int"):
        return to_numbers(col, raw, spec, ids, notes)
    if col.dtype == "bool":
        return to_booleans(col, raw, ids, notes)
    if col.dtype == "date":
        return to_dates(col, raw, ids, notes)
    raise SchemaError(f"unknown dtype {col.dtype!r} of {col.name}")  # pragma: no cover


def _report_bad(notes: LayerNotes, kind: str, col: str, mask: pd.Series, raw: pd.Series,
                ids: pd.Series, what: str) -> None:
    vals = ", ".join(repr(v) for v in pd.unique(raw[mask].astype(str))[:5])
    notes.add(kind, "warning",
              f"{col}: {int(mask.sum())} {what} ({vals}) set to missing: {ids_text(ids[mask])}",
              ids[mask])


def to_numbers(col: schema.Column, raw: pd.Series, spec: LayerSpec, ids: pd.Series,
               notes: LayerNotes) -> pd.Series:
    """Numbers in the canonical unit; text may carry a unit (:data:`TEXT_UNITS`)."""
    name = col.name
    factor = 1.0
    if name == "diameter_in" and spec.diameter_units == "mm":
        factor = 1 / MM_PER_IN
    if name == "slope" and spec.slope_units == "percent":
        factor = 0.01
    if pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
        v = raw.astype(float) * factor
    else:
        txt = as_text(raw)
        # a plain number in ASCII digits, the most common text by far, is what the
        # patterns below would make of it, found by Arrow's regular expressions
        # instead of Python's one value at a time
        plain = txt.str.fullmatch(_PLAIN_NUM).fillna(False).to_numpy(dtype=bool)
        other = ~plain & txt.notna().to_numpy(dtype=bool)  # (a missing value stays missing)
        v = pd.Series(np.nan, index=txt.index)
        v[plain] = pd.to_numeric(txt[plain], errors="coerce") * factor
        if other.any():
            rest = txt[other]
            rest = rest.where(~rest.fillna("").str.match(_THOUSANDS_RE),
                              rest.str.replace(",", ""))
            parts = rest.str.extract(_NUM_RE)
            num = pd.to_numeric(parts[0], errors="coerce")
            unit = parts[1].str.lower()
            ufac = unit.map(TEXT_UNITS.get(name, {}))
            bad_unit = unit.notna() & ufac.isna()
            v[other] = (num * ufac.fillna(factor)).where(~bad_unit).astype(float)
        v = v.astype(float)
        bad = txt.notna() & v.isna()
        if bad.any():
            _report_bad(notes, "non_numeric", name, bad, txt, ids,
                        "values that are not an unambiguous number")
    neg = (v < 0) if name in NONNEGATIVE else pd.Series(False, index=v.index)
    if name == "diameter_in":
        neg = v <= 0
    if neg.any():
        _report_bad(notes, "negative_value", name, neg, v, ids,
                    "zero or negative values" if name == "diameter_in" else "negative values")
        v = v.where(~neg)
    if col.dtype == "int":
        frac = v.notna() & (np.floor(v) != v)
        if frac.any():
            _report_bad(notes, "non_integer", name, frac, v, ids, "non-whole values")
            v = v.where(~frac)
        return v.round().astype("Int64")
    return v.astype("float64")


def to_booleans(col: schema.Column, raw: pd.Series, ids: pd.Series,
                notes: LayerNotes) -> pd.Series:
    """Yes/no values (:data:`TRUE_TEXT`, :data:`FALSE_TEXT`) as nullable booleans."""
    if pd.api.types.is_bool_dtype(raw):
        return raw.astype("boolean")
    txt = as_text(raw).str.lower()
    out = pd.Series(pd.NA, index=txt.index, dtype="boolean")
    out[txt.isin(TRUE_TEXT)] = True
    out[txt.isin(FALSE_TEXT)] = False
    bad = txt.notna() & out.isna()
    if bad.any():
        _report_bad(notes, "bad_value", col.name, bad, txt, ids, "values that are not yes/no")
    return out


def to_dates(col: schema.Column, raw: pd.Series, ids: pd.Series,
             notes: LayerNotes) -> pd.Series:
    """Dates (``datetime64[ms]``, UTC-naive): ISO 8601, ``MM/DD/YYYY`` or a year."""
    if pd.api.types.is_datetime64_any_dtype(raw):
        s = raw
        if getattr(s.dt, "tz", None) is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        return s.astype("datetime64[ms]")
    txt = as_text(raw)
    year = txt.str.fullmatch(r"(1[6-9]|20|21)\d\d").fillna(False).astype(bool)
    out = pd.to_datetime(txt.where(~year, txt + "-01-01"), errors="coerce", format="ISO8601")
    rest = txt.notna() & out.isna()
    if rest.any():
        out = out.fillna(pd.to_datetime(txt.where(rest), errors="coerce", format="%m/%d/%Y"))
    if getattr(out.dt, "tz", None) is not None:
        out = out.dt.tz_convert("UTC").dt.tz_localize(None)
    bad = txt.notna() & out.isna()
    if bad.any():
        _report_bad(notes, "bad_value", col.name, bad, txt, ids, "values that are not dates")
    return out.astype("datetime64[ms]")
