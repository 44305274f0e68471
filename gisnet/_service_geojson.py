"""GeoJSON in and out for the HTTP service: serialization and input parsing.

Result layers are turned into GeoJSON feature fragments once, at startup, so
that answering a lookup is joining pre-made byte strings. Properties are the
layer's columns as written to the results GeoPackage (same names, same units);
geometry is reprojected from the town's working CRS to the response CRS
(EPSG:4326 unless the request names another).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS
from shapely.geometry import shape
from shapely.geometry.base import BaseGeometry

from .errors import GisnetError

#: The default response CRS (RFC 7946 GeoJSON).
WGS84 = CRS.from_epsg(4326)

try:  # orjson is optional: several times faster for the per-request JSON parts
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


class RequestError(GisnetError):
    """A request parameter or body field is malformed (HTTP 422).

    Parameters
    ----------
    field
        The request field concerned, e.g. ``crs``, ``features[3].geometry``.
    message
        What is wrong with it.
    """

    status_code = 422

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message, feature=None)

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class TooLargeError(GisnetError):
    """A body or batch exceeds a configured limit (HTTP 413)."""

    status_code = 413

    def __init__(self, message: str, *, limit: int, field: str | None = None) -> None:
        self.limit = limit
        self.field = field
        super().__init__(message)


# ---------------------------------------------------------------------------
# CRS
# ---------------------------------------------------------------------------


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


def crs_name(crs: CRS) -> str:
    """``EPSG:nnnn`` when the CRS has an EPSG code, else its PROJ/WKT name."""
    epsg = crs.to_epsg()
    return f"EPSG:{epsg}" if epsg else crs.to_string()


# ---------------------------------------------------------------------------
# Output: JSON encoding
# ---------------------------------------------------------------------------


def _default(obj: Any) -> Any:
    """JSON fallback for numpy, pandas, dates and geometries."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (datetime, date, pd.Timestamp)):
        return obj.isoformat()
    if obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, BaseGeometry):
        return json.loads(shapely.to_geojson(obj))
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def _finite(obj: Any) -> Any:
    """Replace non-finite floats (NaN, inf) by None, recursively (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def dumps(obj: Any) -> bytes:
    """Serialize plain data (dicts, lists, numpy/pandas scalars) to JSON bytes.

    NaN and infinities become ``null``.
    """
    if _orjson is not None:
        return _orjson.dumps(
            _finite(obj), default=_default,
            option=_orjson.OPT_SERIALIZE_NUMPY | _orjson.OPT_NON_STR_KEYS,
        )
    return json.dumps(_finite(obj), default=_default, allow_nan=False,
                      separators=(",", ":")).encode()


def feature_fragments(gdf: pd.DataFrame) -> list[bytes]:
    """Each row of a (Geo)DataFrame as one GeoJSON Feature, serialized.

    Vectorised: geometries through :func:`shapely.to_geojson`, properties through
    pandas' C JSON writer, joined per row. Every non-geometry column becomes a
    property under its own name; NaN becomes ``null``; dates are ISO 8601.

    Parameters
    ----------
    gdf
        Rows to serialize; its geometry must already be in the response CRS.
        A plain DataFrame gives features with ``"geometry": null``.
    """
    n = len(gdf)
    if n == 0:
        return []
    if isinstance(gdf, gpd.GeoDataFrame) and gdf._geometry_column_name in gdf.columns:
        geom_col = gdf.geometry.name
        geoms = shapely.to_geojson(np.asarray(gdf.geometry.values, dtype=object))
        props = gdf.drop(columns=[geom_col])
    else:
        geoms = np.full(n, None, dtype=object)
        props = gdf
    # other geometry-typed columns cannot go through to_json: write them as WKT
    props = pd.DataFrame(props).copy() if _has_geometry_columns(props) else pd.DataFrame(props)
    for col in props.columns:
        if isinstance(props[col].dtype, gpd.array.GeometryDtype):
            props[col] = shapely.to_wkt(np.asarray(props[col].values, dtype=object))
    props = props.reset_index(drop=True)
    if props.shape[1] == 0:
        lines = ["{}"] * n
    else:
        text = props.to_json(orient="records", lines=True, date_format="iso",
                             double_precision=15, default_handler=str)
        lines = text.rstrip("\n").split("\n")
    out = []
    for g, p in zip(geoms, lines, strict=True):
        out.append(('{"type":"Feature","geometry":' + (g if g is not None else "null")
                    + ',"properties":' + p + "}").encode())
    return out


def _has_geometry_columns(df: pd.DataFrame) -> bool:
    return any(isinstance(t, gpd.array.GeometryDtype) for t in df.dtypes)


def feature_collection(fragments: Iterable[bytes], crs: CRS | None = None,
                       extra: dict[str, Any] | None = None) -> bytes:
    """Join feature fragments into a FeatureCollection.

    When ``crs`` is not EPSG:4326 the collection carries a ``crs`` member
    (the pre-RFC 7946 named-CRS form GDAL and QGIS read).
    """
    head = b'{"type":"FeatureCollection"'
    if crs is not None and not crs.equals(WGS84):
        head += b',"crs":' + dumps({"type": "name", "properties": {"name": crs_name(crs)}})
    if extra:
        for k, v in extra.items():
            head += b"," + dumps(k) + b":" + dumps(v)
    return head + b',"features":[' + b",".join(fragments) + b"]}"


def gdf_to_geojson(gdf: pd.DataFrame, crs: CRS) -> bytes:
    """A whole (Geo)DataFrame as a FeatureCollection in ``crs``."""
    if isinstance(gdf, gpd.GeoDataFrame) and gdf.crs is not None and len(gdf):
        gdf = gdf.to_crs(crs)
    return feature_collection(feature_fragments(gdf), crs)


def to_jsonable(obj: Any, crs: CRS, working_crs: CRS) -> Any:
    """Turn a library result (dicts of GeoDataFrames, geometries, scalars) into
    plain JSON data, reprojecting geometry from ``working_crs`` to ``crs``.

    GeoDataFrames become FeatureCollections, DataFrames lists of records,
    shapely geometries GeoJSON geometries.
    """
    if isinstance(obj, gpd.GeoDataFrame):
        return json.loads(gdf_to_geojson(obj, crs))
    if isinstance(obj, pd.DataFrame):
        return json.loads(obj.to_json(orient="records", date_format="iso",
                                      double_precision=15, default_handler=str))
    if isinstance(obj, pd.Series):
        return to_jsonable(obj.to_dict(), crs, working_crs)
    if isinstance(obj, BaseGeometry):
        g = gpd.GeoSeries([obj], crs=working_crs).to_crs(crs).iloc[0]
        return json.loads(shapely.to_geojson(g))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, crs, working_crs) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, crs, working_crs) for v in obj]
    if hasattr(obj, "to_dict") and not isinstance(obj, type):
        return to_jsonable(obj.to_dict(), crs, working_crs)
    return obj


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
