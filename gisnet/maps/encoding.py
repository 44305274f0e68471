"""Formatting and compact encoding of map layers.

The helpers here (``column``, ``fmt_number`` ...) are shared by the page
modules of :mod:`gisnet.maps`; only :func:`encode_layer`, :func:`encode_coords`,
:func:`format_value`, :class:`Prop` and :data:`DISPLAY_CRS` are re-exported by
the package.

A layer goes to the page as ``{"n", "g", "c", "k"}``: geometry in EPSG:4326
with coordinates delta-encoded in the polyline scheme, properties as columns
(numbers with a display format, few-valued text as a dictionary, one-valued
columns once). ``gisnet/static/gisnet-maps.js`` decodes it into GeoJSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import shapely

from ..errors import ConfigError
from ..labels import EMPTY, LIST_COLUMNS, VALUE_LABELS, WORDED_COLUMNS, column_label, value_label
from ..units import feet_per_unit

DISPLAY_CRS = "EPSG:4326"


def is_missing(v: Any) -> bool:
    """None, NA, NaN or blank text: a value the data does not have."""
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and v.strip() == ""


def blank_texts(texts: Collection[str]) -> np.ndarray:
    """Which of ``texts`` (distinct texts, none missing) are blank: empty or only
    whitespace, as :func:`is_missing` says of text."""
    return np.fromiter((not t or t.isspace() for t in texts), dtype=bool, count=len(texts))


def per_value(s: pd.Series, fn: Any, *, text_as_is: bool = False) -> Sequence[Any]:
    """``[fn(v) for v in s]`` with ``fn`` called once per distinct value (missing
    values -> None): a county's million rows hold few distinct statuses or dates.
    Object columns of mixed kinds (``True`` and ``1`` are equal keys to a hash table)
    go value by value. ``text_as_is``: ``fn`` gives text back unchanged, so a text
    column (a million distinct ids) needs only its blanks found, and comes back as
    :class:`TextCodes` (no Python string made for its values)."""
    kind = pd.api.types.infer_dtype(s, skipna=True)
    if s.dtype == object and kind not in ("string", "empty"):
        return [None if is_missing(v) else fn(v) for v in s.tolist()]
    if text_as_is and kind == "string":
        made = TextCodes.of_text(s)
        if made is not None:
            return made
    try:
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
    except TypeError:  # unhashable values
        return [None if is_missing(v) else fn(v) for v in s.tolist()]
    table = np.empty(len(uniques) + 1, dtype=object)
    if text_as_is and kind == "string":
        u = np.asarray(uniques, dtype=object)
        table[:-1] = u
        table[np.flatnonzero(blank_texts(u))] = None
    else:
        table[:-1] = [None if is_missing(v) else fn(v) for v in uniques.tolist()]
    table[-1] = None
    return table[codes].tolist()


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """A column, or an all-missing one if the frame has none."""
    if name in df.columns:
        return df[name]
    return pd.Series([None] * len(df), index=df.index, dtype=object)


def numbers(s: pd.Series) -> np.ndarray:
    """A column as floats (text that is not a number -> NaN)."""
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


@dataclass
class Prop:
    """A numeric property: values (rounded floats, NaN where missing) and how to show them.

    ``fmt`` is ``("n", decimals, unit)`` (thousands separators, unit) or
    ``("p", decimals)`` (a ratio shown as a percentage). The page formats the
    numbers, so the file carries ``74.5`` rather than ``"74.5 ft"``. ``values``
    is a float array (a list of floats or None is taken too): a county's
    million rows as 8 bytes each, not a million Python objects.
    """

    values: np.ndarray | list[float | None]
    fmt: tuple[Any, ...]

    def floats(self) -> np.ndarray:
        """The values as a float array (NaN where missing)."""
        if isinstance(self.values, np.ndarray) and self.values.dtype.kind == "f":
            return self.values
        return np.array([np.nan if v is None else float(v) for v in self.values], dtype=float)


#: Every character Python's ``str.isspace()`` and ``str.strip()`` take for white space,
#: as a character class of RE2 (Arrow's regular expressions).
SPACE_CLASS = "".join(f"\\x{{{ord(c):x}}}" for c in map(chr, range(0x10000)) if c.isspace())
#: RE2: a text that is empty or only white space (:func:`blank_texts`).
BLANK_TEXT = f"^[{SPACE_CLASS}]*$"


class TextCodes(Sequence[Any]):
    """A text property held as a code per row into its distinct values (-1 = missing).

    A tiled layer's properties wait in memory while every page is built and the
    archives are cut; a million-row text column as a Python list holds a million
    string objects (about 70 MB), as codes 4 MB plus its distinct values in one Arrow
    array (``uniques``, in order of first appearance: about 15 bytes a value). It reads
    as the sequence it was made from (a missing value, None or NaN, reads None).
    """

    __slots__ = ("codes", "uniques")

    def __init__(self, codes: np.ndarray, uniques: Any):
        self.codes = codes
        #: The distinct texts, an Arrow ``large_string`` array.
        self.uniques = uniques if isinstance(uniques, pa.Array) else \
            pa.array(np.asarray(uniques, dtype=object), type=pa.large_string())

    @staticmethod
    def _code_dtype(n: int) -> Any:
        return np.int32 if n < 2 ** 31 - 1 else np.int64

    @classmethod
    def of(cls, values: Any) -> TextCodes | None:
        """``values`` as codes when every value is text or missing, else None."""
        arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) \
            else values.astype(object, copy=False)
        if arr.ndim != 1 or pd.api.types.infer_dtype(arr, skipna=True) not in ("string",
                                                                                "empty"):
            return None
        codes, uniques = pd.factorize(pd.Series(arr, dtype=object), use_na_sentinel=True)
        return cls(codes.astype(cls._code_dtype(len(uniques))), np.asarray(uniques, dtype=object))

    @classmethod
    def of_text(cls, s: pd.Series) -> TextCodes | None:
        """A column of text (each value text or missing) as codes, its blank texts
        (:func:`blank_texts`) missing, made by Arrow: no Python string per row or per
        distinct value. The codes and texts are those :meth:`of` gives for the column's
        values with the blanks made None. None when Arrow does not take the column
        as text."""
        try:
            arr = pa.array(s, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            return None
        enc = pc.dictionary_encode(arr)  # distinct texts in order of first appearance
        texts = enc.dictionary
        codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        blank = pc.match_substring_regex(texts, BLANK_TEXT).to_numpy(zero_copy_only=False)
        if blank.any():
            new = np.where(blank, -1, np.cumsum(~blank) - 1)
            codes = np.where(codes >= 0, new[np.maximum(codes, 0)], -1)
            texts = texts.filter(pa.array(~blank))
        return cls(codes.astype(cls._code_dtype(len(texts))), texts.cast(pa.large_string()))

    def texts(self, which: np.ndarray | None = None) -> np.ndarray:
        """The distinct texts (those at positions ``which``) as Python strings."""
        u = self.uniques if which is None else \
            self.uniques.take(pa.array(np.asarray(which, dtype=np.int64)))
        return np.asarray(u.to_pylist(), dtype=object)

    def __len__(self) -> int:
        return len(self.codes)

    def _table(self) -> np.ndarray:
        table = np.empty(len(self.uniques) + 1, dtype=object)
        table[:-1] = self.texts()
        return table  # the last entry (code -1) None

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self._table()[self.codes[i]].tolist()
        c = int(self.codes[i])
        return None if c < 0 else self.uniques[c].as_py()

    def __iter__(self) -> Any:
        return iter(self._table()[self.codes].tolist())


def format_value(v: Any, fmt: Sequence[Any] | None) -> Any:
    """Display text of one value, as the page shows it (None -> ``—``,
    :data:`gisnet.labels.EMPTY`)."""
    if is_missing(v):
        return EMPTY
    if not fmt:
        return v
    if fmt[0] == "p":
        return f"{float(v) * 100:.{fmt[1]}f} %"
    unit = f" {fmt[2]}" if len(fmt) > 2 and fmt[2] else ""
    return f"{float(v):,.{fmt[1]}f}{unit}"


def fmt_number(s: pd.Series, decimals: int = 1, unit: str = "") -> Prop:
    """Numbers rounded to ``decimals``, shown with thousands separators and a unit."""
    return Prop(np.round(numbers(s), decimals), ("n", decimals, unit))


def fmt_pct(s: pd.Series, decimals: int = 1) -> Prop:
    """Ratios shown as percentages with ``decimals`` decimals."""
    return Prop(np.round(numbers(s), decimals + 2), ("p", decimals))


def fmt_bool(s: pd.Series) -> Sequence[str | None]:
    """Booleans as ``yes``/``no`` (text kept as it is, missing -> None)."""
    return per_value(s, lambda v: v if isinstance(v, str) else "yes" if bool(v) else "no")


def fmt_text(s: pd.Series) -> Sequence[str | None]:
    """Values as text (missing -> None)."""
    return per_value(s, str, text_as_is=True)


#: Column-name unit suffix -> (decimals shown, unit label).
_UNIT_FORMATS: dict[str, tuple[int, str]] = {
    "_ft": (1, "ft"), "_in": (0, "in"), "_gpd": (0, "gpd"), "_mgd": (3, "MGD"),
    "_cfs": (3, "cfs"), "_fps": (2, "ft/s"), "_days": (0, "days"), "_pct": (2, "%"),
    "_acres": (1, "acres"),
}


def fmt_auto(name: str, s: pd.Series) -> Prop | Sequence[Any]:
    """Format a column by its name's unit suffix (``_ft``, ``_gpd`` ...); code values
    (``status``, ``measure``, ``flags`` ...) in words (:func:`gisnet.labels.value_label`)."""
    for suffix, (digits, unit) in _UNIT_FORMATS.items():
        if name.endswith(suffix):
            return fmt_number(s, digits, unit)
    if name in ("utilization", "ratio", "threshold") or name.startswith(
            ("utilization_", "ratio_")):
        return fmt_pct(s)
    if name == "slope" or name.startswith("slope_") or name == "min_slope":
        return fmt_number(s, 4, "ft/ft")
    if pd.api.types.is_bool_dtype(s.dtype):
        return fmt_bool(s)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return per_value(s, lambda v: v.strftime("%Y-%m-%d"))
    if pd.api.types.is_integer_dtype(s.dtype):
        return fmt_number(s, 0)
    if pd.api.types.is_numeric_dtype(s.dtype):
        return fmt_number(s, 2)
    if name in VALUE_LABELS or name in WORDED_COLUMNS or name in LIST_COLUMNS:
        return per_value(s, lambda v: value_label(name, v))
    return per_value(s, lambda v: "yes" if v is True else "no" if v is False else str(v),
                     text_as_is=True)


def field_label(name: str) -> str:
    """A popup label for a column (:func:`gisnet.labels.column_label` without the
    unit: the popup's values carry it)."""
    return column_label(name, unit=False)


_WORDS = {True: ("1", "true", "yes", "y", "t"), False: ("0", "false", "no", "n", "f")}


def _is(s: pd.Series, value: bool) -> np.ndarray:
    """Where a boolean column (bool, 0/1, yes/no text) holds ``value``; missing -> False."""
    out = np.zeros(len(s), dtype=bool)
    for i, v in enumerate(s.tolist()):
        if is_missing(v):
            continue
        out[i] = (v.strip().lower() in _WORDS[value]) if isinstance(v, str) else bool(v) == value
    return out


def is_true(s: pd.Series) -> np.ndarray:
    """Boolean column (bool, 0/1, yes/no text) as a numpy bool array; missing -> False."""
    return _is(s, True)


def is_false(s: pd.Series) -> np.ndarray:
    """Where a boolean column is explicitly false; missing -> False."""
    return _is(s, False)


# ---------------------------------------------------------------------------------------------
# layer encoding
# ---------------------------------------------------------------------------------------------
_FAMILY = {0: "point", 4: "point", 1: "line", 2: "line", 5: "line", 3: "polygon", 6: "polygon"}


def encode_coords(coords: np.ndarray, precision: int) -> str:
    """Lon/lat pairs as one delta + zigzag + base-64 text (the Google polyline scheme).

    Each coordinate is rounded to ``precision`` decimals, stored as the
    difference from the previous coordinate of the layer (x and y apart), and
    written 5 bits per character (``chr(63 + chunk)``, bit 0x20 = more chunks
    follow), low bits first. A coordinate then costs 2-4 characters instead of
    the 10-11 of GeoJSON text. ``gisnet-maps.js`` decodes it.
    """
    if len(coords) == 0:
        return ""
    q = np.round(np.asarray(coords, dtype=float) * 10.0**precision).astype(np.int64)
    d = np.diff(q, axis=0, prepend=np.zeros((1, 2), dtype=np.int64)).reshape(-1)
    z = np.where(d < 0, ~(d << 1), d << 1).astype(np.int64)
    k = np.arange(7)
    chunks = (z[:, None] >> (5 * k[None, :])) & 31
    need = np.ones(len(z), dtype=np.int64)
    for i in range(1, 7):
        need[(z >> (5 * i)) > 0] = i + 1
    mask = k[None, :] < need[:, None]
    cont = (k[None, :] < (need - 1)[:, None]).astype(np.int64) * 32
    chars = (chunks | cont) + 63
    return chars[mask].astype(np.uint8).tobytes().decode("ascii")


def _geometry_block(geoms: np.ndarray, precision: int) -> dict[str, Any]:
    """Encoded geometry of one layer (all of one family) or GeoJSON for mixed layers."""
    types = shapely.get_type_id(geoms)
    fams = {_FAMILY.get(int(t), "mixed") for t in np.unique(types)}
    if len(fams) != 1 or "mixed" in fams:
        texts = shapely.to_geojson(shapely.transform(geoms, lambda c: np.round(c, precision)))
        cut = re.compile(r"(\.\d{" + str(precision) + r"})\d+")
        return {"t": "geojson", "g": [json.loads(cut.sub(r"\1", g)) for g in texts]}
    fam = fams.pop()
    block: dict[str, Any] = {"t": fam, "s": precision}
    if fam == "point":
        pts = geoms.copy()
        multi = types == 4
        if multi.any():
            pts[multi] = shapely.point_on_surface(pts[multi])
        block["e"] = encode_coords(shapely.get_coordinates(pts), precision)
        return block
    parts, pidx = shapely.get_parts(geoms, return_index=True)
    nparts = np.bincount(pidx, minlength=len(geoms))
    if (nparts != 1).any():
        block["p"] = nparts.tolist()
    if fam == "line":
        counts = shapely.get_num_coordinates(parts)
        block["c"] = counts.tolist()
        block["e"] = encode_coords(shapely.get_coordinates(parts), precision)
        return block
    rings, ridx = shapely.get_rings(parts, return_index=True)
    nrings = np.bincount(ridx, minlength=len(parts))
    if (nrings != 1).any():
        block["r"] = nrings.tolist()
    counts = shapely.get_num_coordinates(rings)
    coords = shapely.get_coordinates(rings)
    # drop the closing coordinate of each ring (Leaflet closes polygons itself)
    ends = np.cumsum(counts) - 1
    keep = np.ones(len(coords), dtype=bool)
    keep[ends] = False
    block["c"] = (counts - 1).tolist()
    block["e"] = encode_coords(coords[keep], precision)
    return block


def _props_block(props: Mapping[str, Any], idx: np.ndarray) -> tuple[list[Any], dict[str, Any]]:
    """Columns ``[name, fmt, dictionary, values]`` and constants (one-valued columns)."""
    cols: list[Any] = []
    consts: dict[str, Any] = {}
    for name, col in props.items():
        fmt = col.fmt if isinstance(col, Prop) else None
        if isinstance(col, Prop):
            f = col.floats()[idx]
            vals = [None if math.isnan(v) else v for v in f.tolist()]
        else:
            vals = [None if is_missing(v) else (v.item() if isinstance(v, np.generic) else v)
                    for v in np.asarray(list(col), dtype=object)[idx]]
        if not vals:
            continue
        distinct = set(vals)
        if len(distinct) == 1:
            only = next(iter(distinct))
            if only is not None:
                consts[name] = format_value(only, fmt)
            continue
        dictionary = None
        if fmt is None and all(isinstance(v, str) or v is None for v in vals) and \
                len(distinct) <= max(2, len(vals) // 3):
            dictionary = sorted(v for v in distinct if v is not None)
            pos = {v: i for i, v in enumerate(dictionary)}
            vals = [None if v is None else pos[v] for v in vals]
        cols.append([name, list(fmt) if fmt else None, dictionary, vals])
    return cols, consts


def encode_layer(
    gdf: gpd.GeoDataFrame,
    props: Mapping[str, Any] | None = None,
    *,
    precision: int = 6,
    simplify_ft: float = 0.0,
    ft_per_unit: float | None = None,
) -> tuple[str, int]:
    """One layer for the page: geometry in EPSG:4326, compactly encoded, and its properties.

    Parameters
    ----------
    gdf
        Features in any CRS (normally the projected working CRS).
    props
        Property name -> one value per row of ``gdf``: a list of text (or
        None), or a :class:`Prop` of numbers with their display format. Missing
        values are shown as "unknown". A column with one value everywhere is
        kept once (as a layer constant); text columns with few distinct values
        are stored as a dictionary plus indexes.
    precision
        Decimals kept in lon/lat (6 = about 0.1 m, 5 = about 1 m).
    simplify_ft
        Douglas-Peucker tolerance in feet, applied in the source CRS before
        reprojection (topology preserved). 0 = none.
    ft_per_unit
        Feet per unit of the source CRS (default: from the CRS).

    Returns
    -------
    (json_text, n_features)
        ``{"n", "g": geometry block, "c": columns, "k": constants}``; rows with a
        missing or empty geometry are dropped. Geometry blocks: ``t`` family
        (point/line/polygon), ``e`` encoded coordinates (:func:`encode_coords`),
        ``p`` parts per feature, ``r`` rings per polygon, ``c`` coordinates per
        line or ring (rings without their closing point); or ``t="geojson"``
        with ``g`` GeoJSON geometries for a layer of mixed geometry types.
    """
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    keep = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    idx = np.flatnonzero(keep)
    geoms = geoms[idx]
    crs = gdf.crs
    if crs is None:
        raise ConfigError("layer has no CRS; cannot place it on a web map")
    if simplify_ft > 0 and crs.is_projected and len(geoms):
        if ft_per_unit is None:
            ft_per_unit = feet_per_unit(crs)
        geoms = shapely.simplify(geoms, simplify_ft / ft_per_unit, preserve_topology=True)
    if len(geoms):
        geoms = np.asarray(gpd.GeoSeries(geoms, crs=crs).to_crs(DISPLAY_CRS).array, dtype=object)
        gblock = _geometry_block(geoms, precision)
    else:
        gblock = {"t": "point", "s": precision, "e": ""}
    cols, consts = _props_block(props or {}, idx)
    out = {"n": len(idx), "g": gblock, "c": cols, "k": consts}
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False), len(idx)
