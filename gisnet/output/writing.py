"""Writing results: the GeoPackage, table files, atomic writes, never over an input.

:func:`write_results` writes result layers to ``gisnet-results.gpkg``
atomically (a temporary copy in the same folder, then ``os.replace``);
:func:`write_tables` writes them as CSV / GeoJSON / GeoParquet files beside
it. :func:`atomic_path` and :func:`atomic_write_text` write any other output
file the same way, and :func:`refuse_input_as_output` keeps every output off
the town's input files.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import shapely

from ..errors import ConfigError, LayerError
from ..town import Town
from ._testhooks import kill_point
from .cells import write_csv, xlsx_row
from .guard import PROJECT_FILE, RESULTS_FILE, guard_outputs, input_files
from .metadata import describe_gpkg, layer_docs
from .qgis_project import project_bytes
from .styles import write_styles

log = logging.getLogger(__name__)

#: Re-exported: the results file name and the town's inputs (:mod:`gisnet.output.guard`).
__all__ = ["RESULTS_FILE", "atomic_path", "atomic_write_text", "ensure_out_dir", "input_files",
           "planned_outputs", "refuse_input_as_output", "refuse_inputs_as_outputs", "write_project",
           "write_results", "write_tables", "write_workbook"]

def _cannot_write(path: Path, exc: OSError, what: str) -> ConfigError:
    """The ConfigError for an output that cannot be written (read-only folder, a file
    where a folder should be, a folder where a file should be, disk full)."""
    reason = exc.strerror or str(exc)
    where = Path(exc.filename) if exc.filename else path
    if where != path:
        reason = f"{reason}: {where}"
    return ConfigError(f"cannot write {what}: {reason}", path=path)


def refuse_inputs_as_outputs(outputs: Iterable[str | os.PathLike[str]], town: Town,
                             *inputs: str | os.PathLike[str] | None,
                             what: str = "output file") -> None:
    """Raise :class:`ConfigError` naming both paths when any of ``outputs`` would
    hurt a town: one of the town's input files or their sidecars
    (:func:`input_files`, with ``inputs``), an input of a town on disk, an
    existing town file or layer (:func:`gisnet.output.guard.guard_outputs`, the
    one check of every writer, without ``--force``). Call it before writing anything.
    """
    guard_outputs(outputs, town=town, inputs=inputs, what=what)


def refuse_input_as_output(path: str | Path, town: Town, *inputs: str | Path,
                           what: str = "output file") -> None:
    """:func:`refuse_inputs_as_outputs` of one output ``path``."""
    refuse_inputs_as_outputs([path], town, *inputs, what=what)


def ensure_out_dir(out_dir: str | os.PathLike[str], what: str = "output folder") -> Path:
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
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.p{os.getpid()}.", suffix=".tmp",
                                        dir=path.parent)
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


def write_project(gpkg: str | Path, path: str | Path | None = None) -> Path:
    """Write the QGIS project of the GeoPackage ``gpkg`` (:mod:`gisnet.output.qgis_project`),
    atomically.

    Parameters
    ----------
    gpkg
        The results GeoPackage.
    path
        The project file (default ``gisnet.qgz`` beside ``gpkg``); it names the
        GeoPackage by a relative path, so the two stay in one folder.

    Returns
    -------
    pathlib.Path
        The project file.
    """
    gpkg = Path(gpkg)
    target = Path(path) if path is not None else gpkg.parent / PROJECT_FILE
    data = project_bytes(gpkg, target.name)
    with atomic_path(target, "QGIS project") as tmp:
        tmp.write_bytes(data)
    return target


def write_results(out_dir: str | Path, layers: Mapping[str, pd.DataFrame], *,
                  file_name: str = RESULTS_FILE) -> Path:
    """Write result layers into ``out_dir/gisnet-results.gpkg``, atomically.

    Layers named here replace layers of the same name; other layers already in
    the file are kept. Beside ``gisnet-results.gpkg`` the QGIS project
    ``gisnet.qgz`` is written again (:func:`write_project`). The work happens on
    a temporary copy in ``out_dir`` which then replaces the file with
    :func:`os.replace`, so a reader never
    sees a half-written file and a failure leaves the old file as it was.

    Parameters
    ----------
    out_dir
        Output folder (created if needed).
    layers
        Layer name -> GeoDataFrame (written with its CRS) or DataFrame without
        geometry (written as an attribute table).
    file_name
        The GeoPackage's name in ``out_dir`` (default ``gisnet-results.gpkg``).

    Returns
    -------
    pathlib.Path
        The GeoPackage.
    """
    out = ensure_out_dir(out_dir)
    target = out / file_name
    if target.is_dir():
        raise ConfigError("cannot write results: it is an existing folder", path=target)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".gisnet-results-p{os.getpid()}-", suffix=".gpkg",
                                        dir=out)
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
            write_layer(tmp, name, df)
            existing.add(name)
        describe_gpkg(tmp, layers)
        write_styles(tmp, layers)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if file_name == RESULTS_FILE:
        write_project(target)
    log.info("wrote %d layers to %s", len(layers), target)
    return target


def gpkg_ready(df: pd.DataFrame) -> pd.DataFrame:
    """Columns GeoPackage can store. Nullable booleans and integers are written as
    they are (GeoPackage BOOLEAN / INTEGER columns holding NULL); only a column
    that is null in every row, whose type cannot be known, becomes text."""
    df = df.copy(deep=False)  # copy-on-write: the caller's frame is left as it is
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.BooleanDtype | pd.Int64Dtype) and s.isna().all():
            df[c] = s.astype(object).where(s.notna(), None)
    return df


#: Decimals kept in written files, by column-name suffix: feet to 0.1 ft, gallons
#: per day to whole gallons, MGD to 0.001 MGD (1,000 gpd). Ratios (``utilization``,
#: ``ratio``, ``peaking_factor``) are written unrounded: readers (QGIS, ``gisnet
#: map``) compare them with the ordinance's thresholds, and a rounded ratio can land
#: on the threshold it exceeds (0.800004 -> 0.8000 is not "in excess of 80%") or
#: shift a map's 0.1 % label from the one drawn from the results in memory.
#: Elevations (``rim_ft``, ``invert_ft``, ``up_invert_ft``, ``down_invert_ft``) keep
#: 0.01 ft, as surveyed: slopes are worked from their differences.
ROUND_SUFFIX: dict[str, int] = {"rim_ft": 2, "invert_ft": 2, "_ft": 1, "_gpd": 0, "_mgd": 3}


def rounded(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its measured values rounded for the files (GeoPackage and
    tables): ``_ft`` to 0.1 (elevations to 0.01), ``_gpd`` to whole gallons,
    ``_mgd`` to 0.001 (see
    :data:`ROUND_SUFFIX`). Only float columns are rounded; the in-memory results
    keep every digit, so decisions (within the distance, over the threshold) are
    taken on the exact numbers.
    """
    todo = {}
    for c in df.columns:
        if isinstance(c, str) and pd.api.types.is_float_dtype(df[c]):
            d = next((d for sfx, d in ROUND_SUFFIX.items() if c.endswith(sfx)), None)
            if d is not None:
                todo[c] = d
    if not todo:
        return df
    df = df.copy(deep=False)  # copy-on-write: the caller's frame is left as it is
    for c, d in todo.items():
        df[c] = df[c].round(d)
    return df


#: Layers whose findings have places of several geometry types (points, lines)
#: and are written as one Point layer: each row at its shape's representative
#: point, the whole shape kept as WKT in ``geometry_wkt`` (see :func:`file_form`).
POINT_LAYERS = ("quality", "worklist")
#: Decimals of the coordinates in written WKT (0.001 CRS unit).
WKT_DECIMALS = 3


def file_form(layer: str, df: pd.DataFrame) -> pd.DataFrame:
    """``layer`` as the files hold it (GeoPackage and tables).

    Values are :func:`rounded`. A layer of :data:`POINT_LAYERS` gets one geometry
    type, Point (a GeoPackage layer of mixed types opens in QGIS as one sub-layer
    per type): the representative point of each row's shape
    (``shapely.point_on_surface``: a point is kept, a line gets a point on it),
    null where the row has no place, and the whole shape in ``geometry_wkt``
    (WKT in the working CRS; :func:`gisnet.maps.read_results` reads it back).
    """
    df = rounded(df)
    if layer in POINT_LAYERS and isinstance(df, gpd.GeoDataFrame) \
            and df.geometry.name in df.columns and "geometry_wkt" not in df.columns:
        geoms = np.array(df.geometry.array, dtype=object)  # a copy: blanks set below
        geoms[shapely.is_missing(geoms) | shapely.is_empty(geoms)] = None
        wkt = shapely.to_wkt(geoms, rounding_precision=WKT_DECIMALS)
        points = shapely.point_on_surface(geoms)
        gname, crs = df.geometry.name, df.crs
        attrs = pd.DataFrame(df.drop(columns=gname)).assign(geometry_wkt=wkt)
        df = gpd.GeoDataFrame(attrs, geometry=gpd.GeoSeries(points, index=df.index, crs=crs,
                                                            name=gname), crs=crs)
    return df


def write_layer(path: Path, name: str, df: pd.DataFrame) -> None:
    """Write one layer into the GeoPackage ``path`` (replacing a layer of that name).

    A GeoDataFrame is written with its geometry and CRS (through Arrow), a DataFrame as an
    attribute table (see :func:`gpkg_ready` for the column types), values
    rounded by :func:`rounded`.
    """
    df = gpkg_ready(file_form(name, df))
    kw: dict[str, Any] = {}
    if not isinstance(df, gpd.GeoDataFrame):
        df = pd.DataFrame(df)
    elif df.geometry.name in df.columns and not df.geometry.notna().any():
        # no geometry to tell the type by (an empty list, say: no parcel is overdue):
        # the documented one, so that QGIS styles it and a later run keeps the type
        kw["geometry_type"] = documented_geometry_type(name)
    # Arrow: the columns go to GDAL in one batch instead of feature by feature (about
    # twice as fast on a million parcels); GDAL writes each layer in one transaction
    # and builds its spatial index once, at the end of the layer.
    pyogrio.write_dataframe(df, path, layer=name, driver="GPKG", use_arrow=True, **kw)


def documented_geometry_type(layer: str) -> str:
    """The first geometry type docs/results.md gives ``layer`` (``Polygon``), else
    ``Unknown``."""
    doc = layer_docs().get(layer)
    col = doc.column("geometry") if doc is not None else None
    if col is None:
        return "Unknown"
    kinds = [t.strip() for t in col.type.split(",") if t.strip() and t.strip() != "null"]
    return kinds[0] if kinds else "Unknown"


#: Table formats :func:`write_tables` writes, with their file suffix.
TABLE_FORMATS: dict[str, str] = {"csv": ".csv", "geojson": ".geojson", "parquet": ".parquet",
                                 "xlsx": ".xlsx"}
#: The workbook ``xlsx`` writes in the tables folder: one sheet per layer.
WORKBOOK_FILE = "gisnet-results.xlsx"
#: Characters an Excel cell holds at most.
EXCEL_CELL_MAX = 32_767


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
      Parquet);
    - ``xlsx``: one workbook ``tables/gisnet-results.xlsx`` (:data:`WORKBOOK_FILE`)
      with one sheet per layer (see :func:`write_workbook`).

    CSV files are UTF-8 with a byte-order mark, so Excel reads "§" as "§".
    CSV and XLSX cells are spreadsheet-safe (:mod:`gisnet.output.cells`): text
    that a spreadsheet would run as a formula (``=...``, ``@...``) is written as
    text, numbers as numbers.

    Every layer is in its file form, as in the GeoPackage (:func:`file_form`:
    values rounded, ``quality`` as points with the whole shape in
    ``geometry_wkt``, which the CSV then does not add again).

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
    if "xlsx" in formats:
        path = folder / WORKBOOK_FILE
        with atomic_path(path, "xlsx workbook") as tmp:
            write_workbook(tmp, layers)
        written.append(path)
        kill_point("tables")
    for name, df in layers.items():
        geo = isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns
        df = df.copy(deep=False)
        df.attrs = {}  # in-memory metadata (graph internals) is not part of the table
        df = file_form(name, df)
        for fmt in formats:
            if fmt == "xlsx":
                continue  # the workbook above
            path = folder / f"{name}{TABLE_FORMATS[fmt]}"
            if fmt == "geojson" and not geo:
                continue  # an attribute table has no GeoJSON form; CSV/Parquet carry it
            with atomic_path(path, f"{fmt} table") as tmp:
                if fmt == "csv":
                    table = pd.DataFrame(df.drop(columns=df.geometry.name)) if geo else df
                    if geo and "geometry_wkt" not in table.columns:
                        table = table.assign(geometry_wkt=shapely.to_wkt(
                            df.geometry.values, rounding_precision=WKT_DECIMALS))
                    write_csv(table, tmp, encoding="utf-8-sig")
                elif fmt == "geojson":
                    g = df.to_crs(4326) if df.crs is not None else df
                    g.to_file(tmp, driver="GeoJSON", engine="pyogrio")
                else:
                    df.to_parquet(tmp, index=False)
            written.append(path)
            kill_point("tables")
    return written


def _cell(v: Any) -> Any:
    """A value openpyxl can write: missing -> None, numpy scalars -> Python,
    time zones dropped (Excel has none), anything else -> its text."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, np.generic):
        v = v.item()
        if isinstance(v, float) and v != v:
            return None
    if isinstance(v, pd.Timestamp):
        v = v.tz_localize(None) if v.tzinfo is not None else v
        return v.to_pydatetime()
    if isinstance(v, bool | int | float | str):
        if isinstance(v, str) and len(v) > EXCEL_CELL_MAX:
            return v[: EXCEL_CELL_MAX - 40] + " ... (cut: see the GeoPackage)"
        return v
    return str(v)


def workbook_header(layer: str, columns: Iterable[str]) -> list[str]:
    """The header of a layer's sheet: each column's label with its unit from
    the results schema (docs/results.md; ``Distance (ft)``), its name where it has none;
    ``geometry_wkt`` is ``Geometry (WKT, working CRS)``."""
    doc = layer_docs().get(layer)
    out = []
    for c in columns:
        col = doc.column(c) if doc is not None else None
        if c == "geometry_wkt":
            out.append("Geometry (WKT, working CRS)")
        elif col is not None:
            out.append(col.label)
        else:
            out.append(c)
    return out


def write_workbook(path: str | Path, layers: Mapping[str, pd.DataFrame]) -> Path:
    """Write ``layers`` into the Excel workbook ``path``: one sheet per layer in
    its file form (:func:`file_form`: values rounded), the geometry as WKT in the
    working CRS (last column), a header of labels with units
    (:func:`workbook_header`), the header row frozen; and a sheet ``columns``
    listing each sheet's columns with name, label, unit and meaning.

    A cell holds at most 32,767 characters: a longer WKT is cut, with a note.
    Text that a spreadsheet would run as a formula is a string cell
    (:func:`gisnet.output.cells.xlsx_row`).
    """
    try:
        from openpyxl import Workbook
    except ImportError as exc:  # a dependency, but an environment may lack it
        raise ConfigError("writing xlsx tables needs openpyxl (pip install 'openpyxl>=3.1')"
                          ) from exc

    wb = Workbook(write_only=True)
    dictionary: list[list[Any]] = []
    docs = layer_docs()
    for name, df in layers.items():
        df = df.copy(deep=False)
        df.attrs = {}
        df = file_form(name, df)
        if isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns:
            table = pd.DataFrame(df.drop(columns=df.geometry.name))
            if "geometry_wkt" not in table.columns:
                table["geometry_wkt"] = shapely.to_wkt(df.geometry.values,
                                                       rounding_precision=WKT_DECIMALS)
        else:
            table = pd.DataFrame(df)
        ws = wb.create_sheet(title=name[:31])
        ws.freeze_panes = "A2"
        header = workbook_header(name, table.columns)
        ws.append(xlsx_row(ws, header))
        for row in table.itertuples(index=False, name=None):
            ws.append(xlsx_row(ws, [_cell(v) for v in row]))
        doc = docs.get(name)
        for c, label in zip(table.columns, header, strict=True):
            col = doc.column("geometry" if c == "geometry_wkt" else c) if doc else None
            dictionary.append([name[:31], c, label, col.unit if col else "",
                               col.meaning if col else ""])
    ws = wb.create_sheet(title="columns")
    ws.freeze_panes = "A2"
    ws.append(["sheet", "column", "label", "unit", "meaning"])
    for r in dictionary:
        ws.append(xlsx_row(ws, r))
    wb.save(path)
    return Path(path)


def planned_outputs(out_dir: str | Path, *, tables: Iterable[str] = (), pages: Iterable[str] = (),
                    layer_names: Iterable[str] = ()) -> list[Path]:
    """Every path :func:`gisnet.pipeline.run` may write in ``out_dir``: the GeoPackage, the
    manifest, the staging and ``tables`` folders, each table file of
    ``layer_names`` and each of the ``pages`` (names, without ``.html``)."""
    from . import MANIFEST_FILE, TABLE_FORMATS, WORKBOOK_FILE

    out = Path(out_dir)
    paths = [out, out / RESULTS_FILE, out / MANIFEST_FILE]
    if tables:
        paths.append(out / "tables")
        paths += [out / "tables" / f"{name}{TABLE_FORMATS[fmt]}"
                  for name in layer_names for fmt in tables
                  if fmt in TABLE_FORMATS and fmt != "xlsx"]
        if "xlsx" in tables:  # one workbook, a sheet per layer
            paths.append(out / "tables" / WORKBOOK_FILE)
    paths += [out / f"{name}.html" for name in pages]
    return paths
