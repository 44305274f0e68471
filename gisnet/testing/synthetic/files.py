"""Writing a synthetic town folder: source files (shapefile or GeoPackage) plus
``gisnet.toml``, byte-identical whenever they are written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

#: Canonical column -> source column written to files, per role: LGIM-style
#: names of at most 10 characters, so shapefiles keep them whole.
SOURCE_COLUMNS: dict[str, dict[str, str]] = {
    "mains": {
        "main_id": "FACILITYID", "diameter_in": "DIAMETER", "material": "MATERIAL",
        "up_invert_ft": "UPELEV", "down_invert_ft": "DOWNELEV", "slope": "SLOPE",
        "from_node": "FROMMH", "to_node": "TOMH", "kind": "WATERTYPE", "owner": "OWNEDBY",
        "status": "ACTIVEFLAG", "street": "LOCDESC", "install_date": "INSTALLDAT",
    },
    "manholes": {
        "node_id": "FACILITYID", "rim_ft": "RIMELEV", "invert_ft": "INVERTELEV",
        "kind": "MANHOLETYP", "owner": "OWNEDBY", "status": "ACTIVEFLAG",
        "control_for": "CTRL_FOR",
    },
    "plants": {
        "plant_id": "FACILITYID", "name": "NAME", "design_flow_mgd": "DESIGNFLOW",
        "avg_flow_mgd": "AVGFLOW", "node_id": "NODE_ID",
    },
    "parcels": {
        "parcel_id": "PARCEL_ID", "address": "ADDRESS", "land_use": "LAND_USE",
        "dwelling_units": "UNITS", "bedrooms": "BEDROOMS", "flow_gpd": "WATER_GPD",
        "septic": "SEPTIC", "connected": "CONNECTED", "sewer_available_date": "SEWERDATE",
        "notice_date": "NOTICEDATE", "health_hazard": "HEALTHHAZ",
    },
    "buildings": {
        "building_id": "BLDG_ID", "parcel_id": "PARCEL_ID", "built_date": "YEAR_BUILT",
        "use": "BLDG_USE",
    },
    "streets": {"street_id": "STREET_ID", "name": "NAME", "width_ft": "ROW_WIDTH"},
    "laterals": {
        "lateral_id": "FACILITYID", "parcel_id": "PARCEL_ID", "building_id": "BLDG_ID",
        "main_id": "MAIN_ID",
    },
    "users": {
        "user_id": "PERMIT_NO", "name": "NAME", "parcel_id": "PARCEL_ID",
        "building_id": "BLDG_ID", "process_flow_gpd": "PROC_GPD", "categorical": "CAT_IU",
        "industrial": "INDUSTRIAL", "sic_code": "SIC",
    },
    "district": {"district_id": "DISTRICT", "name": "NAME"},
}

#: A fixed DBF "last update" date (YY-1900, MM, DD) so shapefiles are
#: byte-identical whenever they are written.
_DBF_DATE = bytes([126, 1, 1])


def to_source(gdf: gpd.GeoDataFrame, role: str,
              columns: dict[str, str] | None = None) -> gpd.GeoDataFrame:
    """A canonical layer as a source file would hold it.

    Renames canonical columns to ``columns`` (default :data:`SOURCE_COLUMNS`),
    drops the loader-derived ``public``/``active``, writes dates as ISO text
    (``YYYY-MM-DD``; shapefiles have no date-time type) and drops columns that
    are null everywhere.
    """
    columns = SOURCE_COLUMNS[role] if columns is None else columns
    df = gdf.drop(columns=[c for c in ("public", "active") if c in gdf.columns])
    data: dict[str, object] = {}
    for c in df.columns:
        if c == df.geometry.name:
            continue
        s = df[c]
        if s.isna().all():
            continue
        if pd.api.types.is_datetime64_any_dtype(s):
            s = s.dt.strftime("%Y-%m-%d").astype(object).where(s.notna(), None)
        elif isinstance(s.dtype, pd.BooleanDtype):
            s = s.astype(object).where(s.notna(), None) if s.isna().any() else s.astype(bool)
        elif isinstance(s.dtype, pd.Int64Dtype):
            s = s.astype("float64") if s.isna().any() else s.astype(np.int64)
        elif isinstance(s.dtype, pd.StringDtype):
            s = s.astype(object).where(s.notna(), None)
        data[columns.get(c, c)] = s.to_numpy()
    return gpd.GeoDataFrame(data, geometry=df.geometry.to_numpy(), crs=df.crs)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))


def _toml_key(k: str) -> str:
    bare = k.replace("_", "").isalnum() and k.isascii() and k[:1].isalpha()
    return k if bare else json.dumps(k)


def write_town_file(path: Path, top: dict[str, object], layers: dict[str, dict[str, Any]],
                    header: str = "") -> None:
    """Write a ``gisnet.toml``: top-level keys, then one table per layer role.

    ``layers[role]`` holds ``path`` (and optional plain keys) plus optional
    sub-tables ``columns``, ``values`` (column -> {source: canonical}) and
    ``defaults``.
    """
    out = [header.rstrip() + "\n"] if header else []
    tables = {k: v for k, v in top.items() if isinstance(v, dict)}
    for k, v in top.items():
        if not isinstance(v, dict):
            out.append(f"{_toml_key(k)} = {_toml_value(v)}\n")
    for k, tbl in tables.items():
        out.append(f"\n[{_toml_key(k)}]\n")
        out.extend(f"{_toml_key(a)} = {_toml_value(b)}\n" for a, b in tbl.items())
    for role, spec in layers.items():
        out.append(f"\n[layers.{role}]\n")
        for k, v in spec.items():
            if not isinstance(v, dict):
                out.append(f"{_toml_key(k)} = {_toml_value(v)}\n")
        for sub in ("columns", "defaults"):
            if spec.get(sub):
                out.append(f"[layers.{role}.{sub}]\n")
                out.extend(f"{_toml_key(a)} = {_toml_value(b)}\n"
                           for a, b in spec[sub].items())
        for col, vmap in spec.get("values", {}).items():
            out.append(f"[layers.{role}.values.{_toml_key(col)}]\n")
            out.extend(f"{_toml_key(str(a))} = {_toml_value(b)}\n" for a, b in vmap.items())
    path.write_text("".join(out), encoding="utf-8")


def write_layer(gdf: gpd.GeoDataFrame, path: Path, *, layer: str | None = None) -> None:
    """Write one source layer (shapefile or GeoPackage layer) reproducibly.

    Shapefiles get a fixed DBF date stamp so the same data gives the same
    bytes on any day.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".shp":
        for ext in (".shp", ".shx", ".dbf", ".prj", ".cpg"):
            path.with_suffix(ext).unlink(missing_ok=True)
        gdf.to_file(path, engine="pyogrio", encoding="UTF-8", layer_options={"RESIZE": "YES"})
        with open(path.with_suffix(".dbf"), "r+b") as f:
            f.seek(1)
            f.write(_DBF_DATE)
    else:
        gdf.to_file(path, layer=layer, engine="pyogrio")


def write_town(
    layers: dict[str, gpd.GeoDataFrame],
    out_dir: str | Path,
    *,
    fmt: str = "shp",
    profile: str = "poughkeepsie-fourth-ward",
    name: str | None = None,
    snap_tolerance_ft: float = 1.0,
    columns: dict[str, dict[str, str]] | None = None,
) -> Path:
    """Write canonical layers as a town folder: source files plus ``gisnet.toml``.

    Parameters
    ----------
    layers
        Role -> canonical GeoDataFrame (as from :func:`make_town`), one CRS.
    out_dir
        Folder to write (created; files of the same names are replaced).
    fmt
        ``shp`` (one shapefile per role) or ``gpkg`` (one ``town.gpkg``, a
        layer per role).
    profile, name, snap_tolerance_ft
        Written to the town file.
    columns
        Role -> canonical -> source column names (default :data:`SOURCE_COLUMNS`).

    Returns
    -------
    pathlib.Path
        The ``gisnet.toml`` written.
    """
    if fmt not in ("shp", "gpkg"):
        raise ValueError(f"format must be 'shp' or 'gpkg', not {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    columns = SOURCE_COLUMNS if columns is None else columns
    crs = next(iter(layers.values())).crs
    gpkg = out / "town.gpkg"
    if fmt == "gpkg":
        gpkg.unlink(missing_ok=True)
    specs: dict[str, dict[str, object]] = {}
    for role, gdf in layers.items():
        src = to_source(gdf, role, columns[role])
        if fmt == "shp":
            write_layer(src, out / f"{role}.shp")
            spec: dict[str, object] = {"path": f"{role}.shp"}
        else:
            write_layer(src, gpkg, layer=role)
            spec = {"path": "town.gpkg", "layer": role}
        spec["columns"] = {c: s for c, s in columns[role].items() if s in src.columns}
        specs[role] = spec
    top: dict[str, object] = {"name": name or out.name, "profile": profile,
                              "crs": crs.to_string() if crs is not None else None,
                              "snap_tolerance_ft": float(snap_tolerance_ft)}
    top = {k: v for k, v in top.items() if v is not None}
    path = out / "gisnet.toml"
    write_town_file(path, top, specs,
                    header="# Synthetic town written by gisnet.testing.synthetic")
    return path


# ----------------------------------------------------------------------------
