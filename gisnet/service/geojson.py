"""GeoJSON in the HTTP service: request CRSs and geometry, and response bytes.

Responses are encoded by :mod:`gisnet.serialize` (one encoder for the
service and the command line); this module reads what requests send: a CRS
name, GeoJSON features, and reprojects them to the town's working CRS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS, Transformer
from shapely.geometry import shape
from shapely.geometry.base import BaseGeometry

from ..serialize import WGS84, crs_name
from .errors import RequestError
from .limits import ServiceLimits, check_batch, check_vertices

#: Longest CRS text accepted (a WKT2 or PROJJSON definition is a few kB)
MAX_CRS_CHARS = 20_000

# The forms of CRS a request may give. Anything else would be searched for as a
# CRS name in PROJ's database, which takes over a second per unknown name.
_CRS_FORMS = re.compile(
    r"""\d+                                   # an EPSG code
      | [A-Za-z][A-Za-z0-9_-]*:[A-Za-z0-9_.+-]+  # AUTHORITY:CODE (EPSG:2260, OGC:CRS84)
      | urn:ogc:def:crs:.+                     # an OGC URN
      | https?://www\.opengis\.net/def/crs/.+  # an OGC URI
      | \+.+                                  # a PROJ string
      | [A-Z][A-Z0-9_]*\s*\[.+                 # WKT
      | \{.+                                  # PROJJSON
    """, re.VERBOSE | re.DOTALL)


@lru_cache(maxsize=64)
def parse_crs(text: str | None, field: str = "crs") -> CRS:
    """The CRS named by a request.

    Accepted: an EPSG code (``2260``), ``AUTHORITY:CODE`` (``EPSG:2260``,
    ``OGC:CRS84``), an OGC URN or URI, a PROJ string, WKT or PROJJSON, of at
    most :data:`MAX_CRS_CHARS` characters. CRS *names* (``WGS 84``) are not:
    PROJ searches its database for a name, over a second per unknown one.

    Parameters
    ----------
    text
        The CRS as given; None means EPSG:4326 (an empty text is refused).
    field
        Request field name used in the error message.

    Raises
    ------
    RequestError
        If the text is none of those forms, or pyproj does not know the CRS.
    """
    if text is None:
        return WGS84
    s = str(text).strip()
    if not s:
        raise RequestError(field, "empty; name a CRS (EPSG:4326 ...) or leave it out for "
                                  "EPSG:4326")
    shown = repr(s) if len(s) <= 80 else repr(s[:60]) + f"... ({len(s)} characters)"
    if len(s) > MAX_CRS_CHARS:
        raise RequestError(field, f"{shown} is longer than {MAX_CRS_CHARS} characters")
    if not _CRS_FORMS.fullmatch(s):
        raise RequestError(field, f"{shown} is not a CRS: give EPSG:code (or another "
                                  "AUTHORITY:code), a code, a PROJ string, WKT or PROJJSON")
    try:
        return CRS.from_user_input(int(s) if s.isdigit() else s)
    except Exception as exc:  # pyproj raises CRSError (a plain Exception subclass)
        raise RequestError(field, f"{shown} is not a coordinate reference system pyproj "
                                  f"knows ({exc.__class__.__name__})") from None


# ---------------------------------------------------------------------------
# Input: GeoJSON features with a CRS
# ---------------------------------------------------------------------------


GEOMETRY_TYPES = ("Point", "MultiPoint", "LineString", "MultiLineString", "Polygon",
                  "MultiPolygon")
#: Geometry a request may send as a parcel or a building: a point or an area
POINTS_AND_AREAS = ("Point", "Polygon", "MultiPolygon")

# how deep the positions lie in ``coordinates``, by geometry type
_POSITION_DEPTH = {"Point": 0, "MultiPoint": 1, "LineString": 1, "MultiLineString": 2,
                   "Polygon": 2, "MultiPolygon": 3}


def feature_items(value: Any, *, field: str = "features") -> list[tuple[str, Any,
                                                                         dict[str, Any],
                                                                         str | None]]:
    """Each feature of request GeoJSON, unparsed: ``(where, geometry, properties, id)``.

    Accepts a FeatureCollection, a Feature, a bare geometry, or a list of
    Features/geometries. ``where`` names the geometry in the request, e.g.
    ``features.features[3].geometry``; ``geometry`` is the GeoJSON object as
    sent (not yet checked).

    Raises
    ------
    RequestError
        Naming the offending element.
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
    out: list[tuple[str, Any, dict[str, Any], str | None]] = []
    for i, item in enumerate(items):
        where = f"{prefix}[{i}]" if prefix else field
        if not isinstance(item, dict):
            raise RequestError(where, "expected a GeoJSON object")
        if item.get("type") == "Feature":
            p = item.get("properties")
            p = {} if p is None else p
            if not isinstance(p, dict):
                raise RequestError(f"{where}.properties", "properties must be an object")
            fid = item.get("id")
            if fid is not None and (isinstance(fid, bool) or not isinstance(fid, str | int)):
                raise RequestError(f"{where}.id", "a Feature id is a string or an integer")
            out.append((f"{where}.geometry", item.get("geometry"), p,
                        None if fid is None else str(fid)))
        else:
            out.append((where, item, {}, None))
    if not out:
        raise RequestError(field, "no features given")
    return out


def _positions(g: Any) -> list[Any]:
    """The positions of a GeoJSON geometry object as sent (lists, unchecked)."""
    t = g.get("type") if isinstance(g, dict) else None
    depth = _POSITION_DEPTH.get(t) if isinstance(t, str) else None
    coords = g.get("coordinates") if isinstance(g, dict) else None
    if depth is None or not isinstance(coords, list):
        return []
    level = [coords]
    for _ in range(depth):
        level = [c for lst in level for c in lst if isinstance(c, list)]
    return level


def count_vertices(g: Any) -> int:
    """Number of positions (vertices) in a GeoJSON geometry object, without building it.

    The lists are descended as the type says; nothing is converted or built.
    Malformed coordinates count what can be counted; :func:`check_positions`
    or building the geometry reports them.
    """
    return len(_positions(g))


def check_positions(g: Any, where: str) -> None:
    """422 naming ``where`` unless every position of GeoJSON geometry ``g`` is 2 or 3
    numbers (JSON ``true`` would otherwise be taken as 1) and every ring of a polygon
    holds at least 4 positions (RFC 7946 3.1.6)."""
    t = g.get("type") if isinstance(g, dict) else None
    depth = _POSITION_DEPTH.get(t) if isinstance(t, str) else None
    if depth is not None and depth >= 2 and isinstance(g.get("coordinates"), list):
        rings = [g["coordinates"]]
        for _ in range(depth - 1):
            rings = [c for lst in rings for c in lst if isinstance(c, list)]
        if any(len(r) < 4 for r in rings):
            raise RequestError(where, "invalid coordinates: a polygon ring needs at least 4 "
                                      "positions, the last equal to the first")
    positions = _positions(g)
    # the common case in C loops: every length 2 or 3, every value an int or a float
    if (set(map(len, positions)) <= {2, 3}
            and set(map(type, chain.from_iterable(positions))) <= {int, float}):
        return
    for i, p in enumerate(positions):
        if not 2 <= len(p) <= 3 or not all(type(v) is float or type(v) is int for v in p):
            shown = json.dumps(p)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise RequestError(where, f"invalid coordinates: position {i} is {shown} (a "
                                      "position is 2 or 3 numbers)")


def check_types(items: Sequence[tuple[str, Any, Any, Any]], types: Sequence[str]) -> None:
    """422 naming the first geometry of ``items`` (see :func:`feature_items`) whose
    GeoJSON ``type`` is not one of ``types``."""
    allowed = set(types)
    for where, g, _, _ in items:
        t = g.get("type") if isinstance(g, dict) else None
        if not isinstance(t, str) or t not in allowed:  # (a list or object is unhashable)
            got = (f"a {t}" if isinstance(t, str) and t in _POSITION_DEPTH
                   else f"type {t!r}" if isinstance(g, dict) else "null" if g is None
                   else f"a JSON {type(g).__name__}")
            raise RequestError(where, f"expected a GeoJSON geometry of type "
                                      f"{', '.join(types)}; got {got}")


def parse_features(value: Any, *, field: str = "features",
                   types: Sequence[str] = GEOMETRY_TYPES,
                   limits: ServiceLimits | None = None) -> tuple[list[BaseGeometry],
                                                                 list[str | None],
                                                                 list[dict[str, Any]]]:
    """Geometries, ids and properties from request GeoJSON.

    The geometry types, the vertex count (``limits.max_vertices``, all
    features together) and the positions (2 or 3 numbers each) are checked on
    the GeoJSON as sent, before any geometry is built.

    Parameters
    ----------
    value
        A FeatureCollection, a Feature, a bare geometry, or a list of
        Features/geometries.
    field
        The request field holding ``value``, for error messages.
    types
        The geometry types accepted.
    limits
        Limits to apply (``max_batch`` features, ``max_vertices``); None: none.

    Returns
    -------
    (geometries, ids, properties)
        ``ids`` holds each feature's ``id`` (or None).

    Raises
    ------
    RequestError
        422 naming the offending element, e.g. ``features[3].geometry``, and
        for a wrong type the types accepted.
    TooLargeError
        413 naming ``max_batch`` or ``max_vertices``.
    """
    items = feature_items(value, field=field)
    if limits is not None:
        check_batch(len(items), limits, field)
    check_types(items, types)
    if limits is not None:
        check_vertices(sum(count_vertices(g) for _, g, _, _ in items), limits, field)
    for where, g, _, _ in items:
        check_positions(g, where)
    geoms = [_geometry(g, where) for where, g, _, _ in items]
    return geoms, [fid for *_, fid in items], [p for _, _, p, _ in items]


def _geometry(g: dict[str, Any], where: str) -> BaseGeometry:
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


#: Request points and geometry must lie within this distance (feet) of the bounding
#: box of the town's mains: farther is almost always a point in another CRS than the
#: one named, or x and y swapped.
TOWN_MARGIN_FT = 2640.0


def town_box(town: Any, crs: CRS) -> tuple[float, float, float, float]:
    """Where request coordinates in ``crs`` (x, y order) may lie: the bounding box of
    the mains grown by :data:`TOWN_MARGIN_FT`, drawn in ``crs`` (densified, so its
    bounding box there holds the whole grown box); the whole range of longitude and
    latitude for a town without mains. A town without its layers (served from a run's
    results) gives the extent in ``town.settings.extra["mains_bounds"]``."""
    mains = town.layers.get("mains")
    # a town served from a run's results holds the mains' extent, not the mains
    held = (town.settings.extra.get("mains_bounds") if getattr(town, "settings", None)
            else None)
    if (mains is None or not len(mains)) and not held:
        return (-180.0, -90.0, 180.0, 90.0) if crs.is_geographic else (-1e15, -1e15, 1e15,
                                                                         1e15)
    m = TOWN_MARGIN_FT / town.ft_per_unit
    x0, y0, x1, y1 = (shapely.total_bounds(np.asarray(mains.geometry.array, dtype=object))
                      if mains is not None and len(mains) else (float(v) for v in held or ()))
    box = shapely.segmentize(shapely.box(x0 - m, y0 - m, x1 + m, y1 + m),
                             max(x1 - x0, y1 - y0) / 16 + m)
    xy = shapely.get_coordinates(box)
    working = CRS.from_user_input(town.crs)
    if not crs.equals(working):
        tr = Transformer.from_crs(working, crs, always_xy=True)
        xs, ys = tr.transform(xy[:, 0], xy[:, 1])
        xy = np.column_stack([xs, ys])
    return (float(xy[:, 0].min()), float(xy[:, 1].min()), float(xy[:, 0].max()),
            float(xy[:, 1].max()))


def check_in_town(xy: np.ndarray, crs: CRS, town: Any, field: str) -> None:
    """:class:`RequestError` (422) naming ``field`` when a coordinate (rows of ``xy``,
    x and y in ``crs``) lies outside :func:`town_box`."""
    if not len(xy):
        return
    x0, y0, x1, y1 = town_box(town, crs)
    bad = ~((xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1))
    if bad.any():
        x, y = xy[np.flatnonzero(bad)[0]]
        raise RequestError(field, f"({x:.10g}, {y:.10g}) is outside the town: coordinates "
                                  f"in {crs_name(crs)} must lie in x {x0:.10g}..{x1:.10g}, "
                                  f"y {y0:.10g}..{y1:.10g} (the mains' extent and "
                                  f"{TOWN_MARGIN_FT:,.0f} ft around it); is the CRS right, "
                                  "and x before y?")
