"""Reading a town's layers into the canonical model, and writing results.

:func:`load_town` reads every layer named in a town's ``gisnet.toml``
(:mod:`gisnet.townfile`), maps its columns to the canonical schema
(:mod:`gisnet.schema`), converts units (diameter mm -> in, slope percent ->
ft/ft), normalises coded values, repairs or drops what cannot be used, and
reprojects everything to one projected working CRS. Every decision and every
flaw becomes a :class:`~gisnet.report.Finding` in ``town.report``; input that
cannot be used raises a :class:`~gisnet.errors.GisnetError` naming the file,
the layer, the feature and the problem. Input files are only ever read.

CRS policy
----------
The working CRS is, in order: the ``crs`` argument, the town file's ``crs``,
the CRS of the first layer that is projected (mains first), else the UTM zone
estimated from the data. A layer with no CRS takes the one its town-file entry
names (``[layers.ROLE] crs``), else the town's ``crs``; with neither it is a
:class:`~gisnet.errors.CRSError`. Geographic input is reprojected and
reported; Z and M coordinates are dropped with a note.

:func:`write_results` writes result layers to ``gisnet-results.gpkg``
atomically (a temporary copy in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from . import schema
from .errors import ConfigError, CRSError, GisnetError, LayerError, SchemaError
from .report import Report
from .town import Town, TownSettings
from .townfile import LayerSpec, TownFile, find_town_file, match_columns, read_town_file
from .units import feet_per_unit

log = logging.getLogger(__name__)

ENGINES = ("pyogrio", "fiona")
_ASSUMED = "gisnet_crs_assumed"
_NO_GEOMETRY = "gisnet_no_geometry"
RESULTS_FILE = "gisnet-results.gpkg"
DEFAULT_SNAP_TOLERANCE_FT = 1.0
#: How many ids a finding's message lists before "and N more".
MAX_IDS_IN_MESSAGE = 10

#: Columns where a negative number cannot be right (elevations and slopes can be).
NONNEGATIVE = {
    "diameter_in", "design_flow_mgd", "avg_flow_mgd", "flow_gpd", "process_flow_gpd",
    "width_ft", "dwelling_units", "bedrooms",
}
#: Units a text value may carry, per column: token -> factor to the canonical unit.
#: ``None`` keeps the configured source unit (a plain number).
_INCH = {"in": 1.0, "inch": 1.0, "inches": 1.0, '"': 1.0, "''": 1.0,
         "mm": 1 / 25.4, "millimeter": 1 / 25.4, "millimeters": 1 / 25.4,
         "millimetre": 1 / 25.4, "millimetres": 1 / 25.4}
_FEET = {"ft": 1.0, "feet": 1.0, "foot": 1.0, "'": 1.0}
_TEXT_UNITS: dict[str, dict[str, float]] = {
    "diameter_in": _INCH,
    "slope": {"%": 0.01, "percent": 0.01, "ft/ft": 1.0},
    "up_invert_ft": _FEET, "down_invert_ft": _FEET, "rim_ft": _FEET, "invert_ft": _FEET,
    "width_ft": _FEET,
    "design_flow_mgd": {"mgd": 1.0}, "avg_flow_mgd": {"mgd": 1.0},
    "flow_gpd": {"gpd": 1.0}, "process_flow_gpd": {"gpd": 1.0},
}
_NUM_RE = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z%\"'/]+)?\s*$", re.IGNORECASE)
_THOUSANDS_RE = re.compile(r"^\s*-?\d{1,3}(,\d{3})+(\.\d+)?\s*$")
_TRUE = {"y", "yes", "true", "t", "1", "x", "on"}
_FALSE = {"n", "no", "false", "f", "0", "off"}
_FAMILY = {
    "Point": "point", "MultiPoint": "point",
    "LineString": "line", "MultiLineString": "line", "LinearRing": "line",
    "Polygon": "polygon", "MultiPolygon": "polygon",
    "GeometryCollection": "collection",
}


@dataclass
class LayerInfo:
    """What was read for one layer role (kept in ``town.settings.extra["layer_info"]``).

    Attributes
    ----------
    role, path, layer, where
        What was read and how it was filtered.
    engine
        ``pyogrio`` or ``fiona``.
    source_crs
        The CRS the features were in (as read or as assumed), as a string.
    crs_assumed
        True when the source had no CRS and the town file's was used.
    features_read
        Features the source returned (after ``where``).
    features_kept
        Rows of the canonical layer (after dropping and exploding).
    mapping
        Canonical column -> source column (None when missing).
    geometry_types
        Geometry type -> count as read.
    """

    role: str
    path: str
    layer: str | int | None
    where: str | None
    engine: str
    source_crs: str | None
    crs_assumed: bool = False
    features_read: int = 0
    features_kept: int = 0
    mapping: dict[str, str | None] = field(default_factory=dict)
    geometry_types: dict[str, int] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        """Canonical columns with no source column."""
        return [c for c, s in self.mapping.items() if s is None]


# --------------------------------------------------------------------------- reading


def _sidecar(path: Path, ext: str) -> Path | None:
    for cand in (path.with_suffix(ext), path.with_suffix(ext.upper())):
        if cand.exists():
            return cand
    return None


def _check_shape_file_length(path: Path, role: str | None) -> None:
    """Refuse a truncated (or foreign) ``.shp``/``.shx``.

    Both files start with a 100-byte header whose bytes 0-3 hold the file code
    9994 and bytes 24-27 the file length in 16-bit words (big-endian). GDAL
    reads a truncated ``.shp`` without complaint, silently returning only the
    features before the cut, so the length is checked here.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise LayerError(f"cannot read: {exc.strerror or exc}", path=path, layer=role) from exc
    if len(head) < 100 or int.from_bytes(head[0:4], "big") != 9994:
        raise LayerError(f"not a shapefile: the {path.suffix} header is missing or damaged",
                         path=path, layer=role)
    declared = int.from_bytes(head[24:28], "big") * 2
    if size < declared:
        raise LayerError(f"shapefile is truncated: its header says {declared:,} bytes, the "
                         f"file holds {size:,}; copy it again from the source",
                         path=path, layer=role)


def _check_dbf_length(path: Path, role: str | None) -> None:
    """Refuse a truncated ``.dbf``: its header holds the record count (bytes 4-7)
    and the header and record lengths (bytes 8-9, 10-11, little-endian), and GDAL
    silently reads only the records before a cut."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(32)
    except OSError as exc:
        raise LayerError(f"cannot read: {exc.strerror or exc}", path=path, layer=role) from exc
    if len(head) < 32:
        raise LayerError("attribute table (.dbf) header is missing or damaged", path=path,
                         layer=role)
    n = int.from_bytes(head[4:8], "little")
    declared = int.from_bytes(head[8:10], "little") + n * int.from_bytes(head[10:12], "little")
    if size < declared:
        raise LayerError(f"attribute table is truncated: its header says {n:,} records, "
                         f"{declared:,} bytes; the file holds {size:,}; copy it again from "
                         "the source", path=path, layer=role)


def read_layer(
    path: str | Path,
    *,
    layer: str | int | None = None,
    where: str | None = None,
    engine: str = "pyogrio",
    crs: Any = None,
    role: str | None = None,
) -> gpd.GeoDataFrame:
    """Read one OGR source as it is (source columns, source geometry).

    Parameters
    ----------
    path
        Shapefile, GeoPackage, GeoJSON, TopoJSON, FileGDB folder or any other
        source GDAL reads.
    layer
        Layer name or index in a multi-layer source (default: the first).
    where
        OGR SQL attribute filter, e.g. ``"TYPE = 'Sanitary'"``.
    engine
        ``"pyogrio"`` (with Arrow, the default) or ``"fiona"``.
    crs
        CRS to assume when the source has none; ignored (with a log message)
        when the source has one.
    role
        Layer role, used in messages only.

    Returns
    -------
    geopandas.GeoDataFrame
        The features in the source CRS (or ``crs`` when the source has none).

    Raises
    ------
    LayerError
        Missing path, shapefile without ``.shx``/``.dbf``, unreadable source,
        bad ``where``.
    CRSError
        No CRS in the source (e.g. a shapefile without ``.prj``) and none given,
        or lon/lat assumed for coordinates that cannot be lon/lat.
    ConfigError
        Unknown engine.
    """
    path = Path(path)
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if not path.exists():
        raise LayerError("file not found", path=path, layer=role)
    if path.suffix.lower() == ".shp":
        for ext, what in ((".shx", "shape index"), (".dbf", "attribute table")):
            if _sidecar(path, ext) is None:
                raise LayerError(f"shapefile is missing its {ext} file ({what}); "
                                 f"copy all the shapefile's files together", path=path, layer=role)
        for part in (path, _sidecar(path, ".shx")):
            _check_shape_file_length(part, role)
        _check_dbf_length(_sidecar(path, ".dbf"), role)
        if _sidecar(path, ".prj") is None and crs is None:
            raise CRSError("shapefile is missing its .prj file, so its CRS is unknown; add the "
                           ".prj or name the CRS with crs = \"EPSG:...\" in the town file",
                           path=path, layer=role)
    try:
        # GDAL's and the engines' warnings (e.g. "more than one layer found", the
        # first one read) go to the log with the file and role, not raw to stderr
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if engine == "pyogrio":
                import pyogrio

                gdf = pyogrio.read_dataframe(path, layer=layer, where=where, use_arrow=True)
            else:
                gdf = gpd.read_file(path, engine="fiona", layer=layer, where=where)
        for w in caught:
            log.warning("%s: %s: %s", role or "layer", path, str(w.message).strip())
    except GisnetError:
        raise
    except Exception as exc:  # GDAL/fiona/pyogrio raise many classes; all mean "unreadable"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        what = f" with where = {where!r}" if where else ""
        raise LayerError(f"cannot read{what}: {detail}", path=path, layer=role) from exc
    if not isinstance(gdf, gpd.GeoDataFrame):  # a table without geometry (CSV, DBF ...)
        gdf = gpd.GeoDataFrame(gdf, geometry=gpd.GeoSeries([None] * len(gdf)), crs=crs)
        gdf.attrs[_NO_GEOMETRY] = True
        return gdf
    if gdf.crs is None:
        if crs is None:
            raise CRSError("source has no CRS; name it with crs = \"EPSG:...\" on this layer in "
                           "the town file", path=path, layer=role)
        gdf = gdf.set_crs(crs)
        gdf.attrs[_ASSUMED] = True
        _check_lonlat(gdf, path, role)
    elif crs is not None and CRS.from_user_input(crs) != gdf.crs:
        log.info("%s: source CRS %s kept; the town file's %s is for sources without one",
                 path, gdf.crs.to_string(), crs)
    return gdf


def _check_lonlat(gdf: gpd.GeoDataFrame, path: Path, role: str | None) -> None:
    """An assumed geographic CRS must fit the coordinates."""
    if gdf.crs is None or not gdf.crs.is_geographic or gdf.geometry.isna().all():
        return
    minx, miny, maxx, maxy = gdf.total_bounds
    if not np.isfinite([minx, miny, maxx, maxy]).all():
        return
    if min(minx, miny) < -360 or maxx > 360 or maxy > 90.5:
        raise CRSError(f"coordinates ({minx:.0f}, {miny:.0f}) .. ({maxx:.0f}, {maxy:.0f}) are "
                       f"not longitude/latitude, but {gdf.crs.to_string()} was named for them",
                       path=path, layer=role)


# --------------------------------------------------------------------------- helpers


def _ids_text(ids: Any) -> str:
    ids = [str(i) for i in ids]
    shown = ", ".join(ids[:MAX_IDS_IN_MESSAGE])
    more = len(ids) - MAX_IDS_IN_MESSAGE
    return shown + (f" and {more} more" if more > 0 else "")


def _as_text(s: pd.Series) -> pd.Series:
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


class _Layer:
    """Turns one raw layer into a canonical one, recording findings."""

    def __init__(self, raw: gpd.GeoDataFrame, spec: LayerSpec, report: Report,
                 info: LayerInfo) -> None:
        self.raw = raw
        self.spec = spec
        self.role = spec.role
        self.report = report
        self.info = info
        self.pos = np.arange(len(raw))  # raw row position of each output row

    def add(self, kind: str, severity: str, message: str, ids: Any = None) -> None:
        fid = None if ids is None else ",".join(str(i) for i in ids)
        self.report.add(kind, severity, f"{self.role}: {message}", layer=self.role,
                        feature_id=fid)

    # ---- ids ---------------------------------------------------------------
    def source_ids(self) -> pd.Series:
        src = self.info.mapping.get(schema.ID_COLUMN[self.role])
        rows = pd.Series([f"{self.role}:{i + 1}" for i in range(len(self.raw))], dtype="str")
        if src is None:
            self.add("generated_id", "info",
                     f"no id column; ids made from row numbers ({rows.iloc[0]} ...)")
            return rows
        ids = _as_text(self.raw[src].reset_index(drop=True))
        missing = ids.isna()
        if missing.any():
            self.add("missing_id", "warning",
                     f"{int(missing.sum())} features have no {src}; ids made from row numbers: "
                     f"{_ids_text(rows[missing])}", rows[missing])
        return ids.fillna(rows)

    # ---- geometry ----------------------------------------------------------
    def geometry(self, ids: pd.Series) -> np.ndarray:
        role, allowed = self.role, schema.GEOMETRY[self.role]
        geoms = np.asarray(self.raw.geometry.array, dtype=object)
        names = shapely.get_type_id(geoms)
        tnames = pd.Series(self.raw.geometry.geom_type).fillna("None")
        self.info.geometry_types = {str(k): int(v) for k, v in tnames.value_counts().items()}
        # null / empty
        null = shapely.is_missing(geoms) | shapely.is_empty(geoms)
        if null.all() and "none" not in allowed:
            want = " or ".join(allowed)
            raise LayerError(f"no feature has a geometry ({role} must be {want}s)",
                             path=self.spec.path, layer=role)
        if null.any() and "none" not in allowed:
            self.add("null_geometry", "warning",
                     f"{int(null.sum())} features with null or empty geometry dropped: "
                     f"{_ids_text(ids[null])}", ids[null])
            keep = ~null
        else:
            keep = np.ones(len(geoms), bool)
        # Z / M
        zm = shapely.has_z(geoms) | shapely.has_m(geoms)
        if zm.any():
            self.add("z_dropped", "info",
                     f"Z/M coordinates dropped from {int(zm.sum())} features (2-D analysis)")
            geoms = shapely.force_2d(geoms)
        # family
        fam = np.array([_FAMILY.get(t, "none") for t in tnames.to_numpy()], dtype=object)
        wrong = keep & ~null & ~np.isin(fam, list(allowed))
        if wrong.any():
            kinds = ", ".join(sorted(set(tnames[wrong])))
            want = " or ".join(f"{a}s" for a in allowed)
            if wrong.sum() == (keep & ~null).sum():
                first = ids[np.flatnonzero(wrong)[0]]
                raise LayerError(f"{kinds} geometries where {role} must be {want} "
                                 f"(all {int(wrong.sum())} features, e.g. {first})",
                                 path=self.spec.path, layer=role)
            self.add("wrong_geometry_type", "warning",
                     f"{int(wrong.sum())} features of type {kinds} dropped ({role} must be "
                     f"{want}): {_ids_text(ids[wrong])}", ids[wrong])
            keep &= ~wrong
        # validity
        valid = shapely.is_valid(geoms)
        bad = keep & ~null & ~valid
        if bad.any():
            poly = bad & (fam == "polygon")
            if poly.any():
                fixed = shapely.make_valid(geoms[poly], method="structure", keep_collapsed=False)
                geoms[poly] = fixed
                gone = shapely.is_empty(fixed)
                self.add("invalid_geometry_repaired", "warning",
                         f"{int(poly.sum())} invalid polygons repaired with make_valid: "
                         f"{_ids_text(ids[poly])}", ids[poly])
                if gone.any():
                    idx = np.flatnonzero(poly)[gone]
                    keep[idx] = False
                    self.add("invalid_geometry_dropped", "warning",
                             f"{len(idx)} polygons collapsed to nothing when repaired, dropped: "
                             f"{_ids_text(ids[idx])}", ids[idx])
            other = bad & (fam != "polygon")
            if other.any():
                keep &= ~other
                self.add("invalid_geometry_dropped", "warning",
                         f"{int(other.sum())} degenerate geometries (e.g. a line with fewer "
                         f"than two distinct points) dropped: {_ids_text(ids[other])}",
                         ids[other])
        return geoms, keep, names

    def explode(self, geoms: np.ndarray, keep: np.ndarray, ids: pd.Series
                ) -> tuple[np.ndarray, pd.Series]:
        """Single-part geometries for point and line roles (polygons keep their parts)."""
        self.pos = np.flatnonzero(keep)
        geoms = geoms[keep]
        ids = ids[keep].reset_index(drop=True)
        if len(geoms) == 0:
            return geoms, ids
        tid = shapely.get_type_id(geoms)
        multiline = tid == 5
        if multiline.any():  # parts that join end to end (same direction) are one line
            merged = shapely.line_merge(geoms[multiline], directed=True)
            geoms[multiline] = merged
            tid = shapely.get_type_id(geoms)
        multi = np.isin(tid, (4, 5))
        if not multi.any():
            return geoms, ids
        nparts = shapely.get_num_geometries(geoms)
        several = multi & (nparts > 1)
        parts, idx = shapely.get_parts(geoms, return_index=True)
        partno = np.arange(len(idx)) - np.searchsorted(idx, idx)
        new_ids = ids.to_numpy(dtype=object)[idx].copy()
        sev = several[idx]
        new_ids[sev] = [f"{i}:{p + 1}" for i, p in zip(new_ids[sev], partno[sev], strict=True)]
        if several.any():
            self.add("multipart_exploded", "info",
                     f"{int(several.sum())} multi-part features split into single parts "
                     f"(ids suffixed :1, :2 ...): {_ids_text(ids[several])}", ids[several])
        self.pos = self.pos[idx]
        return parts, pd.Series(new_ids, dtype="str")

    # ---- attributes --------------------------------------------------------
    def column(self, col: schema.Column, ids: pd.Series) -> pd.Series:
        src = self.info.mapping[col.name]
        n = len(self.pos)
        if src is None:
            raw = pd.Series([None] * n, dtype=object)
        else:
            raw = self.raw[src].iloc[self.pos].reset_index(drop=True)
        if col.name in self.spec.values and src is not None:
            vmap = {str(k).strip().lower(): v for k, v in self.spec.values[col.name].items()}
            txt = _as_text(raw).str.lower()
            hit = txt.map(vmap)
            raw = raw.astype(object).where(hit.isna(), hit)
        out = self.convert(col, raw, ids)
        if col.name in self.spec.defaults:
            d = self.spec.defaults[col.name]
            nulls = out.isna()
            if nulls.any():
                fill = self.convert(col, pd.Series([d], dtype=object), pd.Series(["default"]))
                out = out.where(~nulls, fill.iloc[0])
                self.add("default_applied", "info",
                         f"{col.name} = {d!r} (town-file default) given to {int(nulls.sum())} "
                         f"features that had none")
        key = (self.role, col.name)
        if key in schema.VALUE_ALIASES:
            out = self.normalise(col.name, out, schema.VALUE_ALIASES[key], ids)
        return out

    def normalise(self, name: str, s: pd.Series, aliases: Mapping[str, tuple[str, ...]],
                  ids: pd.Series) -> pd.Series:
        lookup = {a.lower(): canon for canon, al in aliases.items() for a in al}
        lookup.update({c: c for c in aliases})
        low = s.str.lower()
        out = low.map(lookup)
        unknown = low.notna() & out.isna()
        fallback = "unknown" if name == "kind" else None
        if unknown.any():
            vals = s[unknown].value_counts()
            listing = ", ".join(f"{v!r} ({c})" for v, c in vals.items())
            where = "set to 'unknown'" if fallback else "treated as not given"
            self.add("unknown_value", "warning",
                     f"{name} values not recognised ({where}; map them in "
                     f"[layers.{self.role}.values.{name}]): {listing}", ids[unknown])
        if fallback:
            out = out.fillna(fallback)
        return out.astype("str")

    def convert(self, col: schema.Column, raw: pd.Series, ids: pd.Series) -> pd.Series:
        if col.dtype == "str":
            return _as_text(raw).astype("str")
        if col.dtype in ("float", "int"):
            return self.numbers(col, raw, ids)
        if col.dtype == "bool":
            return self.booleans(col, raw, ids)
        if col.dtype == "date":
            return self.dates(col, raw, ids)
        raise SchemaError(f"unknown dtype {col.dtype!r} of {col.name}")  # pragma: no cover

    def _bad(self, kind: str, col: str, mask: pd.Series, raw: pd.Series, ids: pd.Series,
             what: str) -> None:
        vals = ", ".join(repr(v) for v in pd.unique(raw[mask].astype(str))[:5])
        self.add(kind, "warning",
                 f"{col}: {int(mask.sum())} {what} ({vals}) set to missing: {_ids_text(ids[mask])}",
                 ids[mask])

    def numbers(self, col: schema.Column, raw: pd.Series, ids: pd.Series) -> pd.Series:
        name = col.name
        factor = 1.0
        if name == "diameter_in" and self.spec.diameter_units == "mm":
            factor = 1 / 25.4
        if name == "slope" and self.spec.slope_units == "percent":
            factor = 0.01
        if pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
            v = raw.astype(float) * factor
        else:
            txt = _as_text(raw)
            txt = txt.where(~txt.fillna("").str.match(_THOUSANDS_RE), txt.str.replace(",", ""))
            parts = txt.str.extract(_NUM_RE)
            num = pd.to_numeric(parts[0], errors="coerce")
            unit = parts[1].str.lower()
            units = _TEXT_UNITS.get(name, {})
            ufac = unit.map(units)
            bad_unit = unit.notna() & ufac.isna()
            v = (num * ufac.fillna(factor)).where(~bad_unit).astype(float)
            bad = txt.notna() & v.isna()
            if bad.any():
                self._bad("non_numeric", name, bad, txt, ids,
                          "values that are not an unambiguous number")
        neg = (v < 0) if name in NONNEGATIVE else pd.Series(False, index=v.index)
        if name == "diameter_in":
            neg = v <= 0
        if neg.any():
            self._bad("negative_value", name, neg, v, ids,
                      "zero or negative values" if name == "diameter_in" else "negative values")
            v = v.where(~neg)
        if col.dtype == "int":
            frac = v.notna() & (np.floor(v) != v)
            if frac.any():
                self._bad("non_integer", name, frac, v, ids, "non-whole values")
                v = v.where(~frac)
            return v.round().astype("Int64")
        return v.astype("float64")

    def booleans(self, col: schema.Column, raw: pd.Series, ids: pd.Series) -> pd.Series:
        if pd.api.types.is_bool_dtype(raw):
            return raw.astype("boolean")
        txt = _as_text(raw).str.lower()
        out = pd.Series(pd.NA, index=txt.index, dtype="boolean")
        out[txt.isin(_TRUE)] = True
        out[txt.isin(_FALSE)] = False
        bad = txt.notna() & out.isna()
        if bad.any():
            self._bad("bad_value", col.name, bad, txt, ids, "values that are not yes/no")
        return out

    def dates(self, col: schema.Column, raw: pd.Series, ids: pd.Series) -> pd.Series:
        if pd.api.types.is_datetime64_any_dtype(raw):
            s = raw
            if getattr(s.dt, "tz", None) is not None:
                s = s.dt.tz_convert("UTC").dt.tz_localize(None)
            return s.astype("datetime64[ms]")
        txt = _as_text(raw)
        year = txt.str.fullmatch(r"(1[6-9]|20|21)\d\d").fillna(False).astype(bool)
        out = pd.to_datetime(txt.where(~year, txt + "-01-01"), errors="coerce", format="ISO8601")
        rest = txt.notna() & out.isna()
        if rest.any():
            out = out.fillna(pd.to_datetime(txt.where(rest), errors="coerce", format="%m/%d/%Y"))
        if getattr(out.dt, "tz", None) is not None:
            out = out.dt.tz_convert("UTC").dt.tz_localize(None)
        bad = txt.notna() & out.isna()
        if bad.any():
            self._bad("bad_value", col.name, bad, txt, ids, "values that are not dates")
        return out.astype("datetime64[ms]")

    def extras(self, used: set[str]) -> dict[str, pd.Series]:
        """Unmapped source columns, kept under their source names, in canonical dtypes."""
        reserved = {c.lower() for c in schema.column_names(self.role)}
        reserved |= {"geometry", "public", "active"}
        out: dict[str, pd.Series] = {}
        for c in self.raw.columns:
            if c == self.raw.geometry.name or c in used or c.lower() in reserved:
                continue
            s = self.raw[c].iloc[self.pos].reset_index(drop=True)
            if pd.api.types.is_bool_dtype(s):
                s = s.astype("boolean")
            elif pd.api.types.is_integer_dtype(s):
                s = s.astype("Int64")
            elif pd.api.types.is_float_dtype(s):
                s = s.astype("float64")
            elif pd.api.types.is_datetime64_any_dtype(s):
                if getattr(s.dt, "tz", None) is not None:
                    s = s.dt.tz_convert("UTC").dt.tz_localize(None)
                s = s.astype("datetime64[ms]")
            else:
                s = s.astype("str")
            out[c] = s
        return out


def _unique_ids(ids: pd.Series) -> tuple[pd.Series, list[str]]:
    """Suffix repeated ids with #2, #3 ... (first keeps its id)."""
    dup = ids.duplicated(keep=False)
    if not dup.any():
        return ids, []
    originals = sorted(set(ids[dup]))
    n = ids.groupby(ids).cumcount() + 1
    out = ids.where(n == 1, ids + "#" + n.astype(str))
    taken = set(ids[~dup])
    while out.duplicated().any() or (set(out[n > 1]) & taken):
        clash = out.duplicated(keep="first") | ((n > 1) & out.isin(taken))
        out = out.where(~clash, out + "#" + n.astype(str))
        taken = set(out[~clash])
    return out.astype("str"), originals


def canonical_layer(
    raw: gpd.GeoDataFrame,
    spec: LayerSpec,
    working_crs: CRS,
    report: Report,
    info: LayerInfo | None = None,
) -> gpd.GeoDataFrame:
    """Map one raw layer to its role's canonical schema in the working CRS.

    Parameters
    ----------
    raw
        The layer as read by :func:`read_layer` (it must have a CRS).
    spec
        Its town-file entry (role, column and value mappings, units).
    working_crs
        Projected CRS to reproject to.
    report
        Findings are added here.
    info
        Filled with what was read (a new one is made when None).

    Returns
    -------
    geopandas.GeoDataFrame
        Canonical columns (see :mod:`gisnet.schema`), ``public``/``active`` on
        mains and manholes, then unmapped source columns; RangeIndex; unique ids.

    Raises
    ------
    SchemaError
        A column mapping names a column the source does not have.
    LayerError
        Every feature has the wrong geometry type.
    """
    role = spec.role
    if info is None:
        info = LayerInfo(role, str(spec.path), spec.layer, spec.where, "pyogrio",
                         None if raw.crs is None else raw.crs.to_string())
    info.features_read = len(raw)
    raw = raw.reset_index(drop=True)
    try:
        info.mapping = match_columns(role, [c for c in raw.columns if c != raw.geometry.name],
                                     spec.columns)
    except SchemaError as exc:
        raise SchemaError(exc.message, path=spec.path, layer=role) from None
    L = _Layer(raw, spec, report, info)
    ids = L.source_ids()
    geoms, keep, _ = L.geometry(ids)
    geoms, ids = L.explode(geoms, keep, ids)
    cols: dict[str, Any] = {}
    idcol = schema.ID_COLUMN[role]
    for col in schema.columns(role):
        cols[col.name] = ids if col.name == idcol else L.column(col, ids)
    uids, dups = _unique_ids(cols[idcol])
    if dups:
        L.add("duplicate_id", "warning",
              f"{len(dups)} ids used by more than one feature; all kept, later ones suffixed "
              f"#2, #3 ...: {_ids_text(dups)}", dups)
    cols[idcol] = uids
    if role in ("mains", "manholes"):
        cols["public"] = ~(cols["owner"] == "private").fillna(False).astype(bool)
        cols["active"] = (cols["status"].isna() | (cols["status"] == "active")).astype(bool)
    used = {s for s in info.mapping.values() if s is not None}
    cols.update(L.extras(used))
    read_crs = CRS.from_user_input(raw.crs) if raw.crs is not None else working_crs
    src_crs = read_crs.to_2d() if len(read_crs.axis_info) > 2 else read_crs
    if raw.attrs.get(_NO_GEOMETRY):
        src_crs = working_crs
    gdf = gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries(geoms, crs=src_crs), crs=src_crs)
    if src_crs != working_crs and not raw.attrs.get(_NO_GEOMETRY):
        gdf = gdf.to_crs(working_crs)
        how = "geographic (lon/lat) input" if src_crs.is_geographic else "input"
        report.add("reprojected", "info",
                   f"{role}: {how} in {crs_label(read_crs)} reprojected to "
                   f"{crs_label(working_crs)}", layer=role)
    info.features_kept = len(gdf)
    return gdf


def crs_label(crs: Any) -> str:
    """``EPSG:nnnn (name)`` for a CRS with an EPSG code, else its name."""
    c = CRS.from_user_input(crs)
    code = c.to_epsg()
    return f"EPSG:{code} ({c.name})" if code else f"{c.name} (no EPSG code)"


def empty_layer(role: str, crs: CRS) -> gpd.GeoDataFrame:
    """A canonical layer with no features (every canonical column, right dtypes)."""
    dt = {"str": "str", "float": "float64", "int": "Int64", "bool": "boolean",
          "date": "datetime64[ms]"}
    cols = {c.name: pd.Series([], dtype=dt[c.dtype]) for c in schema.columns(role)}
    if role in ("mains", "manholes"):
        cols["public"] = pd.Series([], dtype=bool)
        cols["active"] = pd.Series([], dtype=bool)
    return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries([], crs=crs), crs=crs)


# --------------------------------------------------------------------------- town


def _choose_crs(crs_arg: Any, tf: TownFile, raw: dict[str, gpd.GeoDataFrame],
                report: Report) -> CRS:
    if crs_arg is not None or tf.crs is not None:
        given = crs_arg if crs_arg is not None else tf.crs
        try:
            c = CRS.from_user_input(given)
        except Exception as exc:
            raise CRSError(f"working CRS {given!r} is not a CRS pyproj knows ({exc})",
                           path=tf.path) from None
        if not c.is_projected:
            raise CRSError(f"working CRS {given} is not projected; name a projected CRS "
                           f"(State Plane, UTM)", path=tf.path)
        src = "--crs" if crs_arg is not None else "the town file"
        report.add("working_crs", "info", f"working CRS {crs_label(c)}, from {src}")
        return c
    order = [r for r in ("mains", *schema.ROLES) if r in raw]
    order = [r for r in order if raw[r].crs is not None]
    if not order:
        raise CRSError("cannot choose a working CRS: no layer has geometry; name crs in the "
                       "town file", path=tf.path)
    for role in order:
        c = raw[role].crs
        if c.is_projected:
            c = c.to_2d() if len(c.axis_info) > 2 else c
            report.add("working_crs", "info",
                       f"working CRS {crs_label(c)}, the CRS of the {role} layer")
            return c
    role = order[0]
    g = raw[role]
    g = g[~(g.geometry.isna() | g.geometry.is_empty)]
    if g.empty:
        raise CRSError("cannot choose a working CRS: no layer is projected and the "
                       f"{role} layer has no geometry; name crs in the town file", path=tf.path)
    c = g.set_crs(g.crs.to_2d(), allow_override=True).estimate_utm_crs()
    report.add("working_crs", "info",
               f"working CRS {crs_label(c)}, the UTM zone estimated from the {role} "
               f"layer because no layer is projected and the town file names no crs")
    return c


def _load_profile(name: str | None) -> Any:
    if name is None:
        return None
    if importlib.util.find_spec("gisnet.profile") is None:
        return name
    from . import profile as _profile  # type: ignore[attr-defined]

    return _profile.load_profile(name)


def read_plant_flows(path: Path) -> pd.DataFrame:
    """Monthly plant flows: CSV with ``plant_id``, ``month`` (YYYY-MM), ``avg_flow_mgd``.

    Raises
    ------
    LayerError
        Missing file, missing column, or a row with a bad month or flow.
    """
    if not path.is_file():
        raise LayerError("file not found", path=path, layer="plant_flows")
    try:
        df = pd.read_csv(path, dtype={"plant_id": "str", "month": "str"})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise LayerError(f"cannot read CSV: {exc}", path=path, layer="plant_flows") from None
    df.columns = [c.strip().lower() for c in df.columns]
    need = ["plant_id", "month", "avg_flow_mgd"]
    miss = [c for c in need if c not in df.columns]
    if miss:
        raise LayerError(f"missing column(s) {', '.join(miss)}; need {', '.join(need)}",
                         path=path, layer="plant_flows")
    month = df["month"].astype("str").str.strip()
    flow = pd.to_numeric(df["avg_flow_mgd"], errors="coerce")
    bad = ~month.str.fullmatch(r"\d{4}-(0[1-9]|1[0-2])").fillna(False).astype(bool)
    bad |= flow.isna() | (flow < 0) | df["plant_id"].isna()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LayerError(f"row {i + 2}: needs a plant_id, a month YYYY-MM and avg_flow_mgd >= 0 "
                         f"(got {df.iloc[i][need].tolist()})", path=path, layer="plant_flows",
                         feature=df["plant_id"].iloc[i])
    return pd.DataFrame({"plant_id": df["plant_id"].astype("str").str.strip(),
                         "month": month, "avg_flow_mgd": flow.astype(float)})


def load_town(
    layers_dir: str | Path | None,
    *,
    profile: str | None = None,
    overrides: Mapping[str, str | Path] | None = None,
    engine: str = "pyogrio",
    crs: Any = None,
    snap_tolerance_ft: float | None = None,
) -> Town:
    """Read a town: every layer of its ``gisnet.toml``, canonical and in one projected CRS.

    Parameters
    ----------
    layers_dir
        Folder holding ``gisnet.toml`` (or the town file itself); None means
        the default (:func:`gisnet.townfile.default_layers_dir`).
    profile
        Profile name or path; overrides the town file's ``profile``.
    overrides
        Role -> path to read instead of the town file's (``--mains PATH``);
        relative paths are relative to the current folder. With overrides, a
        folder without a town file is allowed.
    engine
        ``"pyogrio"`` (Arrow) or ``"fiona"``; both give identical layers.
    crs
        Working CRS (projected); overrides the town file's.
    snap_tolerance_ft
        Snap tolerance in feet; overrides the town file's (default 1 ft).

    Returns
    -------
    Town
        ``town.layers[role]`` canonical GeoDataFrames in ``town.crs``; a town
        without ``parcels`` or ``mains`` gets an empty canonical layer for it
        and a ``missing_layer`` warning. ``town.settings.extra["layer_info"]``
        holds a :class:`LayerInfo` per role.

    Raises
    ------
    ConfigError, LayerError, SchemaError, CRSError
        With file, layer, feature and problem, for input that cannot be used.
    """
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if snap_tolerance_ft is not None and not (np.isfinite(snap_tolerance_ft)
                                              and snap_tolerance_ft >= 0):
        raise ConfigError(f"snap tolerance must be a number of feet >= 0, not "
                          f"{snap_tolerance_ft!r}")
    overrides = dict(overrides or {})
    try:
        tf = read_town_file(layers_dir)
    except ConfigError:
        base = Path(layers_dir) if layers_dir is not None else None
        if not overrides or (base is not None and _has_town_file(base)):
            raise
        tf = TownFile(path=None)  # a town given entirely on the command line
    for role, p in overrides.items():
        if role not in schema.ROLES:
            raise ConfigError(f"unknown layer role {role!r}; roles are: {', '.join(schema.ROLES)}")
        path = Path(p).expanduser().resolve()
        old = tf.layers.get(role)
        tf.layers[role] = (replace(old, path=path, layer=None, where=None) if old else
                           LayerSpec(role=role, path=path, slope_units=tf.slope_units,
                                     diameter_units=tf.diameter_units))
    if not tf.layers:
        raise ConfigError("the town file names no layers ([layers.parcels], [layers.mains] ...)",
                          path=tf.path)
    report = Report()
    raw: dict[str, gpd.GeoDataFrame] = {}
    infos: dict[str, LayerInfo] = {}
    for role, spec in tf.layers.items():
        assumed = spec.crs if spec.crs is not None else tf.crs
        g = read_layer(spec.path, layer=spec.layer, where=spec.where, engine=engine,
                       crs=assumed, role=role)
        if len(g) == 0:
            what = f"no features match where = {spec.where!r}" if spec.where else "no features"
            raise LayerError(f"empty layer: {what}", path=spec.path, layer=role)
        infos[role] = LayerInfo(role, str(spec.path), spec.layer, spec.where, engine,
                                None if g.crs is None else g.crs.to_string(),
                                crs_assumed=bool(g.attrs.get(_ASSUMED)))
        raw[role] = g
        if infos[role].crs_assumed:
            report.add("crs_assumed", "info",
                       f"{role}: source has no CRS; {crs_label(g.crs)} from the town file "
                       f"assumed", layer=role)
        log.debug("read %s: %d features from %s", role, len(g), spec.path)
    working = _choose_crs(crs, tf, raw, report)
    layers: dict[str, gpd.GeoDataFrame] = {}
    for role, spec in tf.layers.items():
        layers[role] = canonical_layer(raw[role], spec, working, report, infos[role])
    for role in schema.REQUIRED_ROLES:
        if role not in layers:
            layers[role] = empty_layer(role, working)
            need = "sewer analyses (graph, obligations, capacity)" if role == "mains" else \
                "obligations and flows"
            report.add("missing_layer", "warning",
                       f"{role}: no {role} layer; {need} need one", layer=role)
    plant_flows = read_plant_flows(tf.plant_flows) if tf.plant_flows is not None else None
    if plant_flows is not None and "plants" in layers:
        unknown = sorted(set(plant_flows["plant_id"]) - set(layers["plants"]["plant_id"]))
        if unknown:
            report.add("unknown_plant", "warning",
                       f"plant_flows: plant ids not in the plants layer: {_ids_text(unknown)}",
                       layer="plants", feature_id=",".join(unknown))
    prof = _load_profile(profile if profile is not None else tf.profile)
    settings = TownSettings(
        snap_tolerance_ft=(snap_tolerance_ft if snap_tolerance_ft is not None else
                           tf.snap_tolerance_ft if tf.snap_tolerance_ft is not None else
                           DEFAULT_SNAP_TOLERANCE_FT),
        plant_tolerance_ft=tf.plant_tolerance_ft,
        outlet_nodes=tf.outlet_nodes,
        slope_units=tf.slope_units,
        diameter_units=tf.diameter_units,
        manning_n_by_material=tf.manning_n_by_material,
        extra={"layer_info": infos, "town_file": tf.path, "plant_flows_file": tf.plant_flows},
    )
    name = tf.name or (tf.path.parent.name if tf.path is not None else "town")
    return Town(
        name=name,
        crs=working,
        ft_per_unit=feet_per_unit(working),
        layers=layers,
        profile=prof,
        settings=settings,
        report=report,
        plant_flows=plant_flows,
        source_dir=tf.path.parent if tf.path is not None else None,
        sources={r: str(s.path) for r, s in tf.layers.items()},
    )


def _has_town_file(p: Path) -> bool:
    """True when ``p`` is, or is a folder holding, a town file."""
    try:
        find_town_file(p)
    except ConfigError:
        return False
    return True


# --------------------------------------------------------------------------- writing


def _cannot_write(path: Path, exc: OSError, what: str) -> ConfigError:
    """The ConfigError for an output that cannot be written (read-only folder, a file
    where a folder should be, a folder where a file should be, disk full)."""
    reason = exc.strerror or str(exc)
    where = Path(exc.filename) if getattr(exc, "filename", None) else path
    if where != path:
        reason = f"{reason}: {where}"
    return ConfigError(f"cannot write {what}: {reason}", path=path)


#: Files that belong to a shapefile: writing any of them would change the layer.
_SHAPEFILE_PARTS = (".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx",
                    ".shp.xml")


def input_files(town: Town) -> set[Path]:
    """Every file ``town`` was read from: layers (with a shapefile's sidecars),
    the town file and the plant-flows table; resolved paths."""
    found: set[Path] = set()
    extra = getattr(town.settings, "extra", None) or {}
    paths = [*town.sources.values(), extra.get("town_file"), extra.get("plant_flows_file")]
    for p in paths:
        if p is None:
            continue
        p = Path(p).resolve()
        found.add(p)
        if p.suffix.lower() == ".shp":
            base = p.with_suffix("")
            for ext in _SHAPEFILE_PARTS:
                found.update({Path(f"{base}{ext}"), Path(f"{base}{ext.upper()}")})
    return found


def refuse_input_as_output(path: str | Path, town: Town, *inputs: str | Path,
                           what: str = "output file") -> None:
    """Raise :class:`ConfigError` when the output ``path`` is one of the town's
    input files (see :func:`input_files`) or one of ``inputs``: gisnet never
    modifies its input."""
    target = Path(path).resolve()
    if target in input_files(town) | {Path(i).resolve() for i in inputs}:
        raise ConfigError(f"refusing to write the {what} over an input file; name another "
                          "path", path=path)


def ensure_out_dir(out_dir: str | Path, what: str = "output folder") -> Path:
    """Create the output folder ``out_dir`` if needed.

    Raises
    ------
    ConfigError
        ``out_dir`` (or a parent) is an existing regular file, or the folder
        cannot be created (permissions).
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{what} is an existing file, not a folder", path=out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(out, exc, what) from exc
    return out


@contextmanager
def atomic_path(path: str | Path, what: str = "output file") -> Iterator[Path]:
    """Write a file atomically: yield a temporary path in the same folder, then
    :func:`os.replace` it onto ``path`` when the block succeeds.

    A reader never sees a half-written file, and a failure leaves an old
    ``path`` as it was (the temporary file is removed). The folder is created
    if needed. The file gets mode 0644: it is an output meant to be shared.

    Parameters
    ----------
    path
        The file to write.
    what
        What the file is, for the error message (``"findings CSV"``).

    Raises
    ------
    ConfigError
        ``path`` is a folder, its folder cannot be created or written, or
        writing fails with an OS error.

    Examples
    --------
    >>> with atomic_path(out / "shares.csv", "shares CSV") as tmp:  # doctest: +SKIP
    ...     df.to_csv(tmp, index=False)
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"cannot write {what}: it is an existing folder", path=path)
    ensure_out_dir(path.parent, f"folder of the {what}")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _cannot_write(path, exc, what) from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp makes 0600
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _cannot_write(path, exc, what) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str, what: str = "output file") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`atomic_path`."""
    with atomic_path(path, what) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_results(out_dir: str | Path, layers: Mapping[str, pd.DataFrame]) -> Path:
    """Write result layers into ``out_dir/gisnet-results.gpkg``, atomically.

    Layers named here replace layers of the same name; other layers already in
    the file are kept. The work happens on a temporary copy in ``out_dir``
    which then replaces the file with :func:`os.replace`, so a reader never
    sees a half-written file and a failure leaves the old file as it was.

    Parameters
    ----------
    out_dir
        Output folder (created if needed).
    layers
        Layer name -> GeoDataFrame (written with its CRS) or DataFrame without
        geometry (written as an attribute table).

    Returns
    -------
    pathlib.Path
        The GeoPackage.
    """
    import pyogrio

    out = ensure_out_dir(out_dir)
    target = out / RESULTS_FILE
    if target.is_dir():
        raise ConfigError("cannot write results: it is an existing folder", path=target)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=".gisnet-results-", suffix=".gpkg", dir=out)
    except OSError as exc:
        raise _cannot_write(target, exc, "results") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if target.exists():
            shutil.copyfile(target, tmp)
        else:
            tmp.unlink()
        try:
            with warnings.catch_warnings(record=True) as caught:  # GDAL's, to the log
                warnings.simplefilter("always")
                existing = ({str(n) for n, _ in pyogrio.list_layers(tmp)} if tmp.exists()
                            else set())
            for w in caught:
                log.warning("%s: %s", target, str(w.message).strip())
        except pyogrio.errors.DataSourceError as exc:
            detail = str(exc).strip().splitlines()[0].replace(str(tmp), str(target))
            raise LayerError(f"the existing results GeoPackage cannot be read ({detail}); "
                             "move it away (gisnet replaces only its own layers in it)",
                             path=target) from exc
        for name, df in layers.items():
            # GDAL's GPKG driver replaces a layer of the same name and keeps the others
            _write_one(tmp, name, df)
            existing.add(name)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    log.info("wrote %d layers to %s", len(layers), target)
    return target


def _prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Columns GeoPackage can store. Nullable booleans and integers are written as
    they are (GeoPackage BOOLEAN / INTEGER columns holding NULL); only a column
    that is null in every row, whose type cannot be known, becomes text."""
    df = df.copy()
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.BooleanDtype | pd.Int64Dtype) and s.isna().all():
            df[c] = s.astype(object).where(s.notna(), None)
    return df


def _write_one(path: Path, name: str, df: pd.DataFrame) -> None:
    import pyogrio

    df = _prepare(df)
    if isinstance(df, gpd.GeoDataFrame):
        pyogrio.write_dataframe(df, path, layer=name, driver="GPKG")
    else:
        pyogrio.write_dataframe(pd.DataFrame(df), path, layer=name, driver="GPKG")


#: Table formats :func:`write_tables` writes, with their file suffix.
TABLE_FORMATS: dict[str, str] = {"csv": ".csv", "geojson": ".geojson", "parquet": ".parquet"}


def write_tables(
    out_dir: str | Path, layers: Mapping[str, pd.DataFrame], formats: Any
) -> list[Path]:
    """Write each result layer as a table file beside the GeoPackage, atomically.

    ``out_dir/tables/<layer>.<suffix>`` per layer and format:

    - ``csv``: attributes, plus the geometry as WKT in the working CRS
      (column ``geometry_wkt``);
    - ``geojson``: RFC 7946, so coordinates are reprojected to EPSG:4326;
      attributes and units as in the GeoPackage;
    - ``parquet``: GeoParquet in the working CRS (attribute tables as plain
      Parquet).

    Parameters
    ----------
    out_dir
        Output folder (created if needed).
    layers
        Layer name -> GeoDataFrame or DataFrame, as for :func:`write_results`.
    formats
        Iterable of names from :data:`TABLE_FORMATS`.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Raises
    ------
    ConfigError
        An unknown format, or a folder that cannot be written.
    """
    formats = list(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in TABLE_FORMATS]
    if unknown:
        raise ConfigError(f"unknown table format(s) {', '.join(map(repr, unknown))}; "
                          f"choose from {', '.join(TABLE_FORMATS)}")
    folder = ensure_out_dir(Path(out_dir) / "tables", "tables folder")
    written: list[Path] = []
    for name, df in layers.items():
        geo = isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns
        df = df.copy(deep=False)
        df.attrs = {}  # in-memory metadata (graph internals) is not part of the table
        for fmt in formats:
            path = folder / f"{name}{TABLE_FORMATS[fmt]}"
            if fmt == "geojson" and not geo:
                continue  # an attribute table has no GeoJSON form; CSV/Parquet carry it
            with atomic_path(path, f"{fmt} table") as tmp:
                if fmt == "csv":
                    table = pd.DataFrame(df.drop(columns=df.geometry.name)) if geo else df
                    if geo:
                        table = table.assign(geometry_wkt=shapely.to_wkt(
                            df.geometry.values, rounding_precision=3))
                    table.to_csv(tmp, index=False)
                elif fmt == "geojson":
                    g = df.to_crs(4326) if df.crs is not None else df
                    g.to_file(tmp, driver="GeoJSON", engine="pyogrio")
                else:
                    df.to_parquet(tmp, index=False)
            written.append(path)
    return written
