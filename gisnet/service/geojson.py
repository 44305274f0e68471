"""GeoJSON in the HTTP service: request CRSs and geometry, and response bytes.

Responses are encoded by :mod:`gisnet.serialize` (one encoder for the
service and the command line); this module reads what requests send: a CRS
name, GeoJSON features, and reprojects them to the town's working CRS.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS
from shapely.geometry import shape
from shapely.geometry.base import BaseGeometry

from ..serialize import WGS84, crs_name
from .errors import RequestError


@lru_cache(maxsize=64)
def parse_crs(text: str | None, field: str = "crs") -> CRS:
    """The CRS named by a request (``EPSG:2260``, ``2260``, a WKT or PROJ string).

    Parameters
    ----------
    text
        The CRS as given; None or empty means EPSG:4326.
    field
        Request field name used in the error message.

    Raises
    ------
    RequestError
        If pyproj does not know the CRS.
    """
    if text is None or str(text).strip() == "":
        return WGS84
    s = str(text).strip()
    try:
        return CRS.from_user_input(int(s) if s.isdigit() else s)
    except Exception as exc:  # pyproj raises CRSError (a plain Exception subclass)
        raise RequestError(field, f"{s!r} is not a coordinate reference system pyproj knows "
                                  f"({exc.__class__.__name__})") from None


# ---------------------------------------------------------------------------
# Input: GeoJSON features with a CRS
# ---------------------------------------------------------------------------


def parse_features(value: Any, *, field: str = "features") -> tuple[list[BaseGeometry],
                                                                    list[str | None],
                                                                    list[dict[str, Any]]]:
    """Geometries, ids and properties from request GeoJSON.

    Accepts a FeatureCollection, a Feature, a bare geometry, or a list of
    Features/geometries.

    Returns
    -------
    (geometries, ids, properties)
        ``ids`` holds each feature's ``id`` (or None).

    Raises
    ------
    RequestError
        Naming the offending element, e.g. ``features[3].geometry``.
    """
    if isinstance(value, dict):
        t = value.get("type")
        if t == "FeatureCollection":
            items = value.get("features")
            if not isinstance(items, list):
                raise RequestError(f"{field}.features", "a FeatureCollection needs a "
                                                        "'features' list")
            prefix = f"{field}.features"
        else:
            items, prefix = [value], None
    elif isinstance(value, list):
        items, prefix = value, field
    else:
        raise RequestError(field, "expected GeoJSON: a FeatureCollection, a Feature, a "
                                  "geometry or a list of them")
    geoms: list[BaseGeometry] = []
    ids: list[str | None] = []
    props: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"{prefix}[{i}]" if prefix else field
        if not isinstance(item, dict):
            raise RequestError(where, "expected a GeoJSON object")
        if item.get("type") == "Feature":
            g = item.get("geometry")
            p = item.get("properties") or {}
            if not isinstance(p, dict):
                raise RequestError(f"{where}.properties", "properties must be an object")
            fid = item.get("id")
            gwhere = f"{where}.geometry"
        else:
            g, p, fid, gwhere = item, {}, None, where
        geoms.append(_geometry(g, gwhere))
        ids.append(None if fid is None else str(fid))
        props.append(p)
    if not geoms:
        raise RequestError(field, "no features given")
    return geoms, ids, props


_GEOM_TYPES = {"Point", "MultiPoint", "LineString", "MultiLineString", "Polygon",
               "MultiPolygon"}


def _geometry(g: Any, where: str) -> BaseGeometry:
    if not isinstance(g, dict) or g.get("type") not in _GEOM_TYPES:
        raise RequestError(where, "expected a GeoJSON geometry of type "
                                  + ", ".join(sorted(_GEOM_TYPES)))
    try:
        geom = shape(g)
    except Exception as exc:  # shapely raises various errors on bad coordinates
        raise RequestError(where, f"invalid {g.get('type')} coordinates ({exc})") from None
    if geom.is_empty:
        raise RequestError(where, "empty geometry")
    if not np.isfinite(shapely.get_coordinates(geom)).all():
        raise RequestError(where, "coordinates must be finite numbers")
    return geom


def to_working_crs(geoms: Sequence[BaseGeometry], crs: CRS, working_crs: CRS,
                   field: str = "features") -> gpd.GeoSeries:
    """Reproject request geometries from ``crs`` to the town's working CRS.

    Raises
    ------
    RequestError
        If the coordinates cannot be transformed (e.g. latitude > 90).
    """
    s = gpd.GeoSeries(list(geoms), crs=crs)
    if crs.is_geographic:
        xy = shapely.get_coordinates(np.asarray(s.values, dtype=object))
        if len(xy) and ((np.abs(xy[:, 1]) > 90).any() or (np.abs(xy[:, 0]) > 360).any()):
            raise RequestError(field, f"coordinates out of range for {crs_name(crs)} "
                                      "(longitude, latitude in degrees expected)")
    out = s.to_crs(working_crs)
    if not np.isfinite(shapely.get_coordinates(np.asarray(out.values, dtype=object))).all():
        raise RequestError(field, f"coordinates cannot be transformed from {crs_name(crs)} "
                                  f"to the town CRS {crs_name(working_crs)}")
    return out
