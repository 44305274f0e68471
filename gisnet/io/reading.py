"""Reading one OGR source as it is: engines, ``where`` filters, the CRS of a layer.

:func:`read_layer` reads a shapefile, GeoPackage, GeoJSON, FileGDB ... with
pyogrio (Arrow) or fiona and checks what GDAL would silently get wrong (a
truncated shapefile, a missing ``.prj``, lon/lat assumed for projected
coordinates). A source that is not a local file is read as written: a GDAL
virtual path (``/vsizip/``, ``/vsicurl/``), a URL (a GeoJSON file, ``WFS:``
or ``OAPIF:`` services) through GDAL, and a PostgreSQL database (``PG:``,
``postgresql://``) through :func:`gisnet.io.postgis.read_postgis` (the wheels'
GDAL has no PostgreSQL driver). Messages name a source with its password
removed (:func:`gisnet.io.postgis.redact`). :func:`read_plant_flows` reads the
monthly plant-flow CSV. Input files are only ever read.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from ..errors import ConfigError, CRSError, GisnetError, LayerError
from ..schema import ALTERNATIVES
from ..townfile import file_problem, is_virtual_source
from .extent import check_crs_fits
from .postgis import is_database, read_postgis, redact

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The reading engines :func:`read_layer` takes.
ENGINES = ("pyogrio", "fiona")
#: ``GeoDataFrame.attrs`` key set by :func:`read_layer` when the source had no
#: CRS and the given one was assumed.
CRS_ASSUMED_ATTR = "gisnet_crs_assumed"
#: ``GeoDataFrame.attrs`` key set by :func:`read_layer` for a table without
#: geometry (CSV, DBF ...), given null geometries.
NO_GEOMETRY_ATTR = "gisnet_no_geometry"


@dataclass
class LayerInfo:
    """What was read for one layer role (kept in ``town.settings.extra["layer_info"]``).

    Attributes
    ----------
    role, path, layer, where
        What was read and how it was filtered.
    engine
        ``pyogrio`` or ``fiona``; ``memory`` for a GeoDataFrame given to
        :meth:`gisnet.town.Town.from_frames`.
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
        """Canonical columns with no source column (a column whose alternative is
        mapped, :data:`gisnet.schema.ALTERNATIVES`, is not missing)."""
        return [c for c, s in self.mapping.items() if s is None
                and not any(self.mapping.get(a) for a in ALTERNATIVES.get(c, ()))]




def _sidecar(path: Path, ext: str) -> Path | None:
    for cand in (path.with_suffix(ext), path.with_suffix(ext.upper())):
        if cand.exists() or cand.is_symlink():
            return cand
    return None


def _check_counts(shx: Path, dbf: Path, role: str | None) -> None:
    """The ``.dbf`` must hold one record per shape of the ``.shx``.

    The ``.shx`` holds an 8-byte entry per shape after its 100-byte header; the
    ``.dbf`` header its record count (bytes 4-7). GDAL reads the shorter of the
    two without a word, silently losing features (or their attributes).
    """
    shapes = (shx.stat().st_size - 100) // 8
    with dbf.open("rb") as fh:
        records = int.from_bytes(fh.read(8)[4:8], "little")
    if shapes != records:
        raise LayerError(f"the shapefile's parts disagree: {shx.name} indexes {shapes:,} "
                         f"shapes but {dbf.name} says it holds {records:,} records; copy all "
                         "the shapefile's files again from the source", path=dbf, layer=role)


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


def check_shapefile(path: Path, role: str | None = None) -> None:
    """Refuse a shapefile GDAL would read wrongly or not at all: a missing
    ``.shx``/``.dbf``, a part that is no regular file (a FIFO would block), a
    truncated ``.shp``/``.shx``/``.dbf``, parts that disagree on the count.

    Raises
    ------
    LayerError
        Naming the part and the problem.
    """
    shx, dbf = _sidecar(path, ".shx"), _sidecar(path, ".dbf")
    if shx is None or dbf is None:
        ext, what = (".shx", "shape index") if shx is None else (".dbf", "attribute table")
        raise LayerError(f"shapefile is missing its {ext} file ({what}); "
                         f"copy all the shapefile's files together", path=path, layer=role)
    for ext in (".shx", ".dbf", ".prj", ".cpg"):
        side = _sidecar(path, ext)
        problem = None if side is None else file_problem(side)
        if problem is not None:
            raise LayerError(problem, path=side, layer=role)
    for part in (path, shx):
        _check_shape_file_length(part, role)
    _check_dbf_length(dbf, role)
    _check_counts(shx, dbf, role)


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
        source GDAL reads: also ``/vsizip/...``, ``/vsicurl/...``, a URL,
        ``WFS:``/``OAPIF:`` services, and a PostgreSQL database (``PG:...``,
        ``postgresql://...``, read by :func:`gisnet.io.postgis.read_postgis`).
    layer
        Layer name or index in a multi-layer source (default: the first); for
        a database a table, view or SQL query.
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
    virtual = is_virtual_source(path)
    path = Path(path) if not virtual else str(path)
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    shown = redact(path) if virtual else path
    if isinstance(path, Path):  # not virtual
        problem = file_problem(path, folder_ok=True)
        if problem is not None:
            raise LayerError(problem, path=path, layer=role)
        if path.is_dir() and layer is None and path.suffix.lower() != ".gdb":
            raise LayerError("is a folder; a layer path must name a file (or a .gdb), or "
                             "say which layer of the folder with layer = \"...\"",
                             path=path, layer=role)
    if isinstance(path, Path) and path.suffix.lower() == ".shp":
        check_shapefile(path, role)
        if _sidecar(path, ".prj") is None and crs is None:
            raise CRSError("shapefile is missing its .prj file, so its CRS is unknown; add the "
                           ".prj or name the CRS with crs = \"EPSG:...\" in the town file",
                           path=path, layer=role)
    if virtual and is_database(path):
        gdf = read_postgis(path, layer=layer, where=where, role=role)
    else:
        gdf = _read_ogr(path, shown, layer=layer, where=where, engine=engine, role=role)
    if not isinstance(gdf, gpd.GeoDataFrame):  # a table without geometry (CSV, DBF ...)
        gdf = gpd.GeoDataFrame(gdf, geometry=gpd.GeoSeries([None] * len(gdf)), crs=crs)
        gdf.attrs[NO_GEOMETRY_ATTR] = True
        return gdf
    prj = _sidecar(path, ".prj") if isinstance(path, Path) and path.suffix.lower() == ".shp" \
        else None
    if gdf.crs is None and prj is not None:
        raise CRSError("the .prj is not a CRS GDAL can read; fix it, or delete it and name the "
                       "CRS with crs = \"EPSG:...\" in the town file", path=prj, layer=role)
    if gdf.crs is None and len(gdf) == 0:  # no features: the loader says "empty layer"
        return gdf
    if gdf.crs is None:
        if crs is None:
            raise CRSError("source has no CRS; name it with crs = \"EPSG:...\" on this layer in "
                           "the town file", path=shown, layer=role)
        gdf = gdf.set_crs(crs)
        gdf.attrs[CRS_ASSUMED_ATTR] = True
        _check_lonlat(gdf, shown, role)
        check_crs_fits(np.asarray(gdf.geometry.array, dtype=object), gdf.crs, shown, role,
                       by="the town file names for it")
    else:
        if crs is not None and CRS.from_user_input(crs) != gdf.crs:
            log.info("%s: source CRS %s kept; the town file's %s is for sources without one",
                     shown, gdf.crs.to_string(), crs)
        check_crs_fits(np.asarray(gdf.geometry.array, dtype=object), gdf.crs, shown, role)
    return gdf


def _read_ogr(path: str | Path, shown: str | Path, *, layer: str | int | None,
              where: str | None, engine: str, role: str | None) -> pd.DataFrame:
    """One layer through GDAL (pyogrio or fiona); failures as :class:`LayerError`."""

    def read() -> pd.DataFrame:
        if engine == "pyogrio":
            import pyogrio

            return pyogrio.read_dataframe(path, layer=layer, where=where, use_arrow=True)
        return gpd.read_file(path, engine="fiona", layer=layer, where=where)

    try:
        if getattr(_reader, "index", None) is not None:
            gdf = read()  # one of read_all's reads: its warnings are caught there
        else:
            # GDAL's and the engines' warnings (e.g. "more than one layer found", the
            # first one read) go to the log with the file and role, not raw to stderr
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                gdf = read()
            for w in caught:
                log.warning("%s: %s: %s", role or "layer", shown,
                            redact(str(w.message).strip()))
    except GisnetError:
        raise
    except Exception as exc:  # GDAL/fiona/pyogrio raise many classes; all mean "unreadable"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        what = f" with where = {where!r}" if where else ""
        raise LayerError(f"cannot read{what}: {redact(detail)}", path=shown,
                         layer=role) from None
    return gdf


#: The read of :func:`read_all` a thread is doing (``index``), for its warnings.
_reader = threading.local()


def read_all(reads: Sequence[tuple[str | None, Any, Callable[[], T]]],
             threads: int) -> list[T]:
    """Run the reads ``(role, shown path, fn)`` on ``threads`` threads (GDAL reads
    different files at once; pyogrio's Arrow reads leave the GIL while GDAL works:
    a county's five layer files in 7.8 s on two threads against 12.1 s one after
    the other) and return their results in order.

    The first read to fail, in order, raises its error (the reads not started
    yet are cancelled). ``warnings.catch_warnings`` is not thread-safe, so the
    warnings of every thread are caught here, once, and logged as
    :func:`read_layer` logs them, with the role and path of the read that raised
    them.
    """
    if threads <= 1 or len(reads) <= 1:
        return [fn() for _, _, fn in reads]
    caught: list[tuple[int | None, str]] = []
    lock = threading.Lock()

    def keep(message: Any, *_args: Any, **_kw: Any) -> None:
        with lock:
            caught.append((getattr(_reader, "index", None), str(message).strip()))

    def run(i: int, fn: Callable[[], T]) -> T:
        _reader.index = i
        try:
            return fn()
        finally:
            _reader.index = None

    out: list[T] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = keep
            with ThreadPoolExecutor(threads, thread_name_prefix="gisnet-read") as ex:
                futures = [ex.submit(run, i, fn) for i, (_, _, fn) in enumerate(reads)]
                try:
                    out.extend(f.result() for f in futures)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        for i, msg in sorted(caught, key=lambda c: -1 if c[0] is None else c[0]):
            role, shown = (None, "") if i is None else reads[i][:2]
            log.warning("%s: %s: %s", role or "layer", shown, redact(msg))
    return out


def _check_lonlat(gdf: gpd.GeoDataFrame, path: str | Path, role: str | None) -> None:
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


def crs_label(crs: Any) -> str:
    """``EPSG:nnnn (name)`` for a CRS with an EPSG code, else its name."""
    c = CRS.from_user_input(crs)
    code = c.to_epsg()
    return f"EPSG:{code} ({c.name})" if code else f"{c.name} (no EPSG code)"



def read_plant_flows(path: Path) -> pd.DataFrame:
    """Monthly plant flows: CSV with ``plant_id``, ``month`` (YYYY-MM), ``avg_flow_mgd``,
    and optional monthly average daily analyses ``<constituent>_mg_l`` (:func:`check_plant_flows`).

    Raises
    ------
    LayerError
        Missing file, missing column, or a row with a bad month or flow.
    """
    problem = file_problem(path)
    if problem is not None:
        raise LayerError(problem, path=path, layer="plant_flows")
    try:
        df = pd.read_csv(path, dtype={"plant_id": "str", "month": "str"})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise LayerError(f"cannot read CSV: {exc}", path=path, layer="plant_flows") from None
    return check_plant_flows(df, path)


def check_plant_flows(df: pd.DataFrame, path: Path | str) -> pd.DataFrame:
    """Monthly plant flows read from a CSV or given as a DataFrame, checked and typed.

    Parameters
    ----------
    df
        Columns ``plant_id``, ``month`` (``YYYY-MM``), ``avg_flow_mgd`` (any case), and
        optionally the month's average daily analyses at the plant, one column per
        constituent named ``<constituent>_mg_l`` (``ss_mg_l``, ``bod_mg_l``,
        ``grease_mg_l``): numbers >= 0 in mg/L, blank where not reported.
    path
        The CSV, or how the table is named, for messages (rows are counted as
        a CSV's lines: the header is line 1).

    Returns
    -------
    pandas.DataFrame
        ``plant_id`` (text), ``month`` (text), ``avg_flow_mgd`` (float, MGD), then each
        ``*_mg_l`` column given (float, mg/L, NaN where blank).

    Raises
    ------
    LayerError
        A missing column, a row with a bad month or flow, a month given twice, an
        analysis that is not a number >= 0 (naming the row and the column).

    Examples
    --------
    >>> t = pd.DataFrame({"plant_id": ["P"], "month": ["2025-01"], "avg_flow_mgd": [1.0],
    ...                   "BOD_mg_L": ["180"]})
    >>> check_plant_flows(t, "flows.csv").columns.tolist()
    ['plant_id', 'month', 'avg_flow_mgd', 'bod_mg_l']
    """
    df = df.reset_index(drop=True)
    df.columns = [str(c).strip().lower() for c in df.columns]
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
    out = pd.DataFrame({"plant_id": df["plant_id"].astype("str").str.strip(),
                        "month": month, "avg_flow_mgd": flow.astype(float)})
    for col in [c for c in df.columns if re.fullmatch(r"[a-z][a-z0-9_]*_mg_l", c)]:
        raw = df[col]
        text = raw.astype("str").str.strip()
        blank = raw.isna() | text.eq("")
        val = pd.to_numeric(raw.where(~blank), errors="coerce")
        wrong = (~blank & (val.isna() | ~np.isfinite(val))) | (val < 0)
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise LayerError(f"row {i + 2}, column {col}: {raw.iloc[i]!r} is not an average "
                             "daily analysis in mg/L (a number >= 0, or blank when not "
                             "reported)", path=path, layer="plant_flows",
                             feature=df["plant_id"].iloc[i])
        out[col] = val.astype(float)
    twice = out.duplicated(["plant_id", "month"], keep=False)
    if twice.any():
        i = int(np.flatnonzero(twice)[0])
        pid, mon = out["plant_id"].iloc[i], out["month"].iloc[i]
        same = out[(out["plant_id"] == pid) & (out["month"] == mon)]
        rows = ", ".join(str(r + 2) for r in same.index)
        flows = ", ".join(f"{v:g}" for v in same["avg_flow_mgd"])
        raise LayerError(f"month {mon} is given {len(same)} times for plant {pid} (rows {rows}: "
                         f"{flows} mgd); give each month once", path=path, layer="plant_flows",
                         feature=pid)
    return out


