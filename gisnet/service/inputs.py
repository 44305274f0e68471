"""What requests send, turned into library inputs: bodies, query values, geometry.

Request geometry becomes canonical layers in the town's working CRS
(:func:`as_parcels`, :func:`as_buildings`, :func:`sub_town`); query values
are checked and a bad one is a 422 naming the field (:class:`RequestError`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr
from pyproj import CRS
from shapely.geometry import Point
from shapely.geometry.base import BaseGeometry

from ..report import Report
from ..schema import column_names
from ..town import Town
from .errors import RequestError, ServiceUnavailable, UnknownIdError
from .geojson import (
    POINTS_AND_AREAS,
    check_in_town,
    check_types,
    feature_items,
    parse_crs,
    parse_features,
    to_working_crs,
)
from .limits import ServiceLimits

GEOJSON = "application/geo+json"
JSON = "application/json"

# ---------------------------------------------------------------------------
# Request bodies
# ---------------------------------------------------------------------------

IdList = list[StrictStr | StrictInt]  # strict: 1.0 or true is not an id


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObligationsRequest(_Body):
    """Parcels by id, or arbitrary GeoJSON points/polygons (in ``crs``)."""

    parcel_ids: IdList | None = Field(None, description="parcel ids (from the parcels layer)")
    features: Any = Field(None, description="GeoJSON FeatureCollection, Feature, geometry or "
                                            "list of them, measured as parcels: Point, "
                                            "Polygon or MultiPolygon only")
    crs: str | None = Field(None, description="CRS of `features` (default EPSG:4326)")


class ControlManholesRequest(_Body):
    """Buildings, parcels or industrial users by id, or GeoJSON points (in ``crs``)."""

    parcel_ids: IdList | None = None
    building_ids: IdList | None = None
    user_ids: IdList | None = None
    features: Any = Field(None, description="GeoJSON buildings: Point, Polygon or "
                                            "MultiPolygon only")
    crs: str | None = Field(None, description="CRS of `features` (default EPSG:4326)")


#: Largest flow a what-if may propose, gallons per day (1,000 MGD): far beyond any one
#: connection, and small enough that no sum downstream can overflow to infinity
MAX_FLOW_GPD = 1e9


class WhatIfRequest(_Body):
    """A proposed connection: where, how much, and whether industrial."""

    parcel_id: str | int | None = Field(None, description="connect this parcel")
    point: list[float] | dict[str, Any] | None = Field(
        None, description="or connect at this point: [x, y] or a GeoJSON Point, in `crs`")
    crs: str | None = Field(None, description="CRS of `point` (default EPSG:4326)")
    flow_gpd: float = Field(..., gt=0, le=MAX_FLOW_GPD, allow_inf_nan=False,
                            description="proposed average daily flow, gallons per day "
                                        "(at most 1e9)")
    industrial: bool = Field(False, strict=True,
                             description="industrial wastewater (Berlin: state approval)")
    preliminary_treatment: bool = Field(
        False, strict=True,
        description="preliminary treatment is required (Poughkeepsie § 168-22.5G(4)(d): "
                    "NYSDEC review of the plans)")
    cooling_water: bool = Field(
        False, strict=True,
        description="the discharge includes industrial cooling water (Poughkeepsie "
                    "§ 168-22.2E: Town Board approval)")


# ---------------------------------------------------------------------------
# Query values
# ---------------------------------------------------------------------------


def query_param(name: str, description: str, typ: str = "string") -> dict[str, Any]:
    """An OpenAPI query parameter (for routes that read the query string directly)."""
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": typ}}


CRS_PARAM = query_param("crs", "CRS of the response geometry (default EPSG:4326), "
                               "e.g. EPSG:2260")
PATH_PARCEL = {"name": "parcel_id", "in": "path", "required": True,
               "description": "parcel id", "schema": {"type": "string"}}


def q_float(q: Any, name: str) -> float | None:
    """A finite number from the query string, or None; 422 naming it otherwise."""
    v = q.get(name)
    if v is None:
        return None
    try:
        f = float(v)
    except ValueError:
        raise RequestError(name, f"{v!r} is not a number") from None
    if not math.isfinite(f):
        raise RequestError(name, f"{v!r} is not a finite number")
    return f


def no_unknown(q: Any, known: tuple[str, ...]) -> None:
    """422 for a query parameter not in ``known``."""
    for k in q:
        if k not in known:
            raise RequestError(k, f"unknown parameter (expected {', '.join(known)})")


def ids_of(values: list[str | int] | None) -> list[str]:
    """Request ids as strings."""
    return [] if values is None else [str(v) for v in values]


# ---------------------------------------------------------------------------
# Request geometry
# ---------------------------------------------------------------------------


def input_points(town: Town, features: Any, crs_text: str | None, limits: ServiceLimits,
                 types: tuple[str, ...] = POINTS_AND_AREAS,
                 ) -> tuple[gpd.GeoSeries, list[str], list[dict]]:
    """Request GeoJSON -> geometries in the working CRS, ids, properties.

    The feature count (``max_batch``), the geometry types (``types``) and the
    vertex count (``max_vertices``) are checked before any geometry is built;
    then the CRS, the coordinates and their transformation.
    """
    geoms, ids, props = parse_features(features, field="features", types=types,
                                       limits=limits)
    in_crs = parse_crs(crs_text, "crs")
    work = to_working_crs(geoms, in_crs, CRS.from_user_input(town.crs), "features")
    check_in_town(shapely.get_coordinates(np.asarray(list(geoms), dtype=object)), in_crs,
                  town, "features")
    named = [i if i is not None else f"input-{n + 1}" for n, i in enumerate(ids)]
    return work, named, props


def point_of(value: Any, crs_text: str | None, town: Town) -> Any:
    """``[x, y]`` or a GeoJSON Point (or a Feature holding one) in ``crs_text``, inside
    the town (:func:`~gisnet.service.geojson.check_in_town`), as a point in the
    working CRS; 422 naming ``point`` for anything else."""
    if isinstance(value, list):
        if len(value) != 2:
            raise RequestError("point", "expected [x, y]")
        geom: BaseGeometry = Point(value)
        if not np.isfinite(value).all():
            raise RequestError("point", "coordinates must be finite numbers")
    else:
        extra = (sorted(map(str, set(value) - {"type", "coordinates"}))
                 if isinstance(value, dict) and value.get("type") == "Point" else [])
        if extra:
            raise RequestError("point", f"a Point has 'type' and 'coordinates' only, not "
                                        f"{', '.join(map(repr, extra))}")
        items = feature_items(value, field="point")
        if len(items) != 1:
            raise RequestError("point", f"expected one Point, got {len(items)} features")
        check_types(items, ("Point",))
        geoms, _, _ = parse_features(value, field="point", types=("Point",))
        geom = geoms[0]
    in_crs = parse_crs(crs_text, "crs")
    work = to_working_crs([geom], in_crs, CRS.from_user_input(town.crs), "point").iloc[0]
    check_in_town(shapely.get_coordinates(geom)[:1], in_crs, town, "point")
    return work


def _as_layer(role: str, id_col: str, town: Town, geoms: gpd.GeoSeries,
              ids: list[str]) -> gpd.GeoDataFrame:
    cols: dict[str, Any] = {c: [None] * len(ids) for c in column_names(role)}
    cols[id_col] = ids
    return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries(geoms.values, crs=town.crs),
                            crs=town.crs)


def as_parcels(town: Town, geoms: gpd.GeoSeries, ids: list[str]) -> gpd.GeoDataFrame:
    """Request geometry as a canonical parcels layer (polygons) in the working CRS."""
    return _as_layer("parcels", "parcel_id", town, geoms, ids)


def as_buildings(town: Town, geoms: gpd.GeoSeries, ids: list[str]) -> gpd.GeoDataFrame:
    """Request geometry as a canonical buildings layer in the working CRS."""
    return _as_layer("buildings", "building_id", town, geoms, ids)


def sub_town(town: Town, **layers: gpd.GeoDataFrame) -> Town:
    """A copy of ``town`` whose parcels/buildings are replaced by request geometry.

    The mains, manholes, profile and settings are shared (read-only); the copy
    has its own report, so per-request findings never touch the loaded town.
    """
    new = {k: v for k, v in town.layers.items() if k not in ("parcels", "buildings",
                                                            "laterals", "users")}
    empty = gpd.GeoDataFrame({c: pd.Series([], dtype=object) for c in column_names("parcels")},
                             geometry=gpd.GeoSeries([], crs=town.crs), crs=town.crs)
    new["parcels"] = layers.get("parcels", empty)
    if "buildings" in layers:
        new["buildings"] = layers["buildings"]
    return dataclasses.replace(town, layers=new, report=Report())


# ---------------------------------------------------------------------------
# Map files
# ---------------------------------------------------------------------------

MAP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
MAP_TYPES = {".html": "text/html; charset=utf-8", ".png": "image/png",
             ".json": JSON, ".geojson": GEOJSON, ".js": "text/javascript",
             ".css": "text/css"}


#: The run's manifest (:data:`gisnet.output.publish.MANIFEST_FILE`), served without
#: the server's paths.
MANIFEST_NAME = "gisnet-manifest.json"


def map_response(path: Path) -> Any:
    """The response serving map file ``path`` (found by :func:`map_path`).

    The run's manifest names the town file by its absolute path on the server;
    it is served with that path cut to the file's name (``town_file``). Other
    files are served as they are.
    """
    from fastapi.responses import FileResponse, Response

    if path.name == MANIFEST_NAME:
        import json

        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ServiceUnavailable(f"map {path.name!r} cannot be read (damaged: not "
                                     "UTF-8 JSON)") from None
        if isinstance(doc, dict) and isinstance(doc.get("town_file"), str):
            doc["town_file"] = Path(doc["town_file"]).name
        return Response(json.dumps(doc, indent=2).encode(), media_type=JSON)
    return FileResponse(path, media_type=MAP_TYPES[path.suffix])


def map_path(out_dir: Path | None, name: str) -> Path:
    """The file ``name`` inside ``out_dir``; 404 for anything else (no traversal)."""
    if out_dir is None:
        raise UnknownIdError("name", "no map folder configured", feature=name)
    if not MAP_NAME.match(name) or ".." in name:
        raise UnknownIdError("name", f"map {name!r} not found", feature=name)
    if Path(name).suffix == "":
        name += ".html"
    root = out_dir.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_file() or path.suffix not in MAP_TYPES:
        raise UnknownIdError("name", f"map {name!r} not found", feature=name)
    return path
