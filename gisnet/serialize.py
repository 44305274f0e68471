"""One serializer for everything gisnet prints or serves: plain JSON and GeoJSON.

- :func:`to_jsonable`: any result value (dicts, lists, numpy/pandas scalars,
  dates, frames, geometries) as plain JSON data: NaN/NA/NaT -> ``None``, numpy
  scalars -> Python, dates -> ISO 8601, DataFrames -> lists of records,
  GeoDataFrames -> GeoJSON FeatureCollections.
- :func:`dumps` / :func:`dumps_text`: that data as JSON bytes (compact, for the
  HTTP service) or text (indented, for ``--json`` on the command line).
- :func:`feature_fragments`, :func:`feature_collection`, :func:`to_geojson`:
  the GeoJSON FeatureCollection encoder, in EPSG:4326 per RFC 7946 unless a
  CRS is named (then the collection carries the pre-RFC ``crs`` member GDAL
  and QGIS read). Feature properties are the layer's columns, as written to
  the results GeoPackage (same names, same units).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from datetime import date, datetime, time
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS
from shapely.geometry.base import BaseGeometry

#: The CRS of GeoJSON (RFC 7946).
WGS84 = CRS.from_epsg(4326)

#: orjson's ``dumps`` where it is installed (optional: several times faster for the
#: per-request JSON parts), else None.
_fast_dumps: Callable[[Any], bytes] | None = None
try:
    import orjson

    _fast_dumps = orjson.dumps
except ImportError:  # pragma: no cover - depends on the environment
    pass

__all__ = ["WGS84", "crs_name", "dumps", "dumps_text", "feature_collection",
           "feature_fragments", "to_geojson", "to_jsonable"]


def crs_name(crs: CRS) -> str:
    """``EPSG:nnnn`` when the CRS has an EPSG code, else its PROJ/WKT name."""
    epsg = crs.to_epsg()
    return f"EPSG:{epsg}" if epsg else crs.to_string()


# ---------------------------------------------------------------------------
# Plain JSON data
# ---------------------------------------------------------------------------


def _scalar(v: Any) -> Any:
    """A scalar as a JSON value (None for NaN/NA/NaT and infinities)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (np.datetime64, np.timedelta64)):
        v = pd.Timestamp(v) if isinstance(v, np.datetime64) else pd.Timedelta(v)
        return None if pd.isna(v) else v.isoformat()
    if isinstance(v, np.generic):
        v = v.item()
        if isinstance(v, (bytes, bytearray)):
            return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, int):
        return v
    if v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (pd.Timestamp, datetime, date, time)):
        return v.isoformat()
    if isinstance(v, pd.Timedelta):
        return v.isoformat()
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return str(v)


def to_jsonable(value: Any, *, crs: CRS | None = None, working_crs: Any = None) -> Any:
    """A value as plain JSON data (dict, list, str, int, float, bool, None).

    Parameters
    ----------
    value
        Dicts, lists, tuples and sets (recursively), numpy and pandas scalars,
        dates, DataFrames (-> list of records), GeoDataFrames (-> a GeoJSON
        FeatureCollection, see :func:`to_geojson`), shapely geometries (-> a
        GeoJSON geometry), or objects with a ``to_dict()``.
    crs
        CRS of the GeoJSON output (default EPSG:4326, RFC 7946).
    working_crs
        CRS of bare shapely geometries in ``value`` (reprojected to ``crs``);
        None leaves their coordinates as they are.

    Returns
    -------
    Any
        NaN, NA, NaT and infinities are ``None``; numpy scalars are Python
        numbers; dates and times are ISO 8601 strings.
    """
    return _conv(value, WGS84 if crs is None else crs, working_crs)


def _conv(v: Any, crs: CRS, working_crs: Any) -> Any:
    t = type(v)
    if t is str or t is bool or t is int or v is None:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _conv(x, crs, working_crs) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_conv(x, crs, working_crs) for x in v]
    if isinstance(v, np.ndarray):
        return [_conv(x, crs, working_crs) for x in v.tolist()]
    if isinstance(v, gpd.GeoDataFrame):
        return json.loads(to_geojson(v, crs))
    if isinstance(v, pd.DataFrame):
        return [_conv(r, crs, working_crs) for r in v.to_dict(orient="records")]
    if isinstance(v, pd.Series):
        return _conv(v.to_dict(), crs, working_crs)
    if isinstance(v, BaseGeometry):
        if working_crs is not None:
            v = gpd.GeoSeries([v], crs=working_crs).to_crs(crs).iloc[0]
        return json.loads(shapely.to_geojson(v))
    if hasattr(v, "to_dict") and not isinstance(v, type):
        return _conv(v.to_dict(), crs, working_crs)
    return _scalar(v)


def dumps(value: Any) -> bytes:
    """``value`` (see :func:`to_jsonable`) as compact JSON bytes."""
    data = to_jsonable(value)
    if _fast_dumps is not None:
        return _fast_dumps(data)
    return json.dumps(data, allow_nan=False, separators=(",", ":")).encode()


def dumps_text(value: Any, indent: int | None = 2) -> str:
    """``value`` (see :func:`to_jsonable`) as indented JSON text, for the command line."""
    return json.dumps(to_jsonable(value), indent=indent, allow_nan=False)


# ---------------------------------------------------------------------------
# GeoJSON
# ---------------------------------------------------------------------------


def feature_fragments(gdf: pd.DataFrame) -> list[bytes]:
    """Each row of a (Geo)DataFrame as one GeoJSON Feature, serialized.

    Vectorised: geometries through :func:`shapely.to_geojson`, properties through
    pandas' C JSON writer, joined per row. Every non-geometry column becomes a
    property under its own name; NaN becomes ``null``; dates are ISO 8601.

    Parameters
    ----------
    gdf
        Rows to serialize; its geometry must already be in the output CRS.
        A plain DataFrame gives features with ``"geometry": null``.
    """
    n = len(gdf)
    if n == 0:
        return []
    if isinstance(gdf, gpd.GeoDataFrame) and gdf.geometry.name in gdf.columns:
        geom_col = gdf.geometry.name
        geoms = shapely.to_geojson(np.asarray(gdf.geometry.values, dtype=object))
        props = gdf.drop(columns=[geom_col])
    else:
        geoms = np.full(n, None, dtype=object)
        props = gdf
    props = pd.DataFrame(props)
    geo_cols = [c for c, t in props.dtypes.items() if isinstance(t, gpd.array.GeometryDtype)]
    if geo_cols:  # other geometry-typed columns cannot go through to_json: write them as WKT
        props = props.copy()
        for col in geo_cols:
            props[col] = shapely.to_wkt(np.asarray(props[col].values, dtype=object))
    props = props.reset_index(drop=True)
    if props.shape[1] == 0:
        lines = ["{}"] * n
    else:
        text = props.to_json(orient="records", lines=True, date_format="iso",
                             double_precision=15, default_handler=str)
        lines = text.rstrip("\n").split("\n")
    return [('{"type":"Feature","geometry":' + (g if g is not None else "null")
             + ',"properties":' + p + "}").encode()
            for g, p in zip(geoms, lines, strict=True)]


def feature_collection(fragments: Iterable[bytes], crs: CRS | None = None,
                       extra: dict[str, Any] | None = None) -> bytes:
    """Join feature fragments (:func:`feature_fragments`) into a FeatureCollection.

    When ``crs`` is not EPSG:4326 the collection carries a ``crs`` member
    (the pre-RFC 7946 named-CRS form GDAL and QGIS read). ``extra`` adds
    top-level members (e.g. ``not_found``).
    """
    head = b'{"type":"FeatureCollection"'
    if crs is not None and crs is not WGS84 and not crs.equals(WGS84):
        head += b',"crs":' + dumps({"type": "name", "properties": {"name": crs_name(crs)}})
    if extra:
        for k, v in extra.items():
            head += b"," + dumps(str(k)) + b":" + dumps(v)
    return head + b',"features":[' + b",".join(fragments) + b"]}"


def to_geojson(gdf: pd.DataFrame, crs: CRS | None = None,
               extra: dict[str, Any] | None = None) -> bytes:
    """A whole (Geo)DataFrame as a FeatureCollection, reprojected to ``crs``.

    Parameters
    ----------
    gdf
        The layer (geometry in any CRS it declares).
    crs
        Output CRS; default EPSG:4326 (RFC 7946).
    extra
        Top-level members to add.
    """
    out_crs = WGS84 if crs is None else crs
    if isinstance(gdf, gpd.GeoDataFrame) and gdf.crs is not None and len(gdf) \
            and not CRS.from_user_input(gdf.crs).equals(out_crs):
        gdf = gdf.to_crs(out_crs)
    return feature_collection(feature_fragments(gdf), out_crs, extra)
