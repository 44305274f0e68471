"""OGC API - Features (Part 1 core/GeoJSON/OAS 3.0, Part 2 CRS) on the service.

``/`` (landing page), ``/conformance``, ``/api`` (the OpenAPI 3.0
description), ``/collections``, ``/collections/{id}``,
``/collections/{id}/items`` and ``/collections/{id}/items/{fid}`` for every
result layer (the layers of ``gisnet-results.gpkg``, same names) and every
input layer of the town (``input_parcels``, ``input_mains`` ...), so QGIS's
"OGC API - Features" connection, GDAL's OAPIF driver or any other client can
list and draw them.

Items are GeoJSON features whose ``id`` is the row number from 1, the
GeoPackage ``fid`` and the PostGIS primary key of the same row: stable for a
given run. ``bbox`` (with ``bbox-crs``), ``limit`` (1-10,000, default 10),
``offset`` with ``next``/``prev`` links, ``numberMatched``/``numberReturned``
and equality filters on the queryable columns (text, integer and boolean
columns, e.g. ``status=required``) select rows; ``crs`` names the output CRS
among the collection's ``crs`` list (CRS84 by default; coordinates in the
CRS's own axis order, so ``EPSG:4326`` is latitude, longitude) and the answer
says it in ``Content-Crs``.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
import urllib.parse
import warnings
from collections.abc import Iterator
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from anyio import CapacityLimiter, to_thread
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pyproj import CRS, Transformer

from .. import __version__
from ..output.metadata import layer_docs
from ..serialize import WGS84, dumps, feature_fragments
from .bbox import BoundsIndex, rectangle
from .errors import RequestError, UnknownIdError
from .geojson import parse_crs
from .inputs import GEOJSON, JSON
from .limits import ServiceLimits
from .state import TownState
from .styles import add_style_routes, style_links
from .tables import PackedRows, ResultTable, pack_slices

CONFORMANCE = [
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
    "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
]
CRS84_URI = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
CRS84 = CRS.from_user_input("OGC:CRS84")
#: Prefix of the input layers' collection ids (``input_parcels`` ...).
INPUT_PREFIX = "input_"
LIMIT_DEFAULT, LIMIT_MAX = 10, 10_000
#: Largest ``offset`` accepted (far beyond any layer's row count).
OFFSET_MAX = 10_000_000
_DIGITS = re.compile(r"-?[0-9]+")
OPENAPI_TYPE = "application/vnd.oai.openapi+json;version=3.0"
_FEATURE = b'{"type":"Feature",'


class ParameterError(RequestError):
    """A query parameter OGC API - Features does not accept (HTTP 400, as the
    standard requires; the RPC routes answer 422)."""

    status_code = 400


def crs_uri(crs: CRS) -> str:
    """The OGC URI of a CRS (``http://www.opengis.net/def/crs/EPSG/0/2260``)."""
    if crs.equals(CRS84):
        return CRS84_URI
    auth = crs.to_authority()
    if auth is None:
        return crs.to_wkt()
    name, code = auth
    version = "1.3" if name == "OGC" else "0"
    return f"http://www.opengis.net/def/crs/{name}/{version}/{code}"


def north_first(crs: CRS) -> bool:
    """True when the CRS's first axis is northing/latitude (EPSG:4326 ...)."""
    axes = crs.axis_info
    return bool(axes) and axes[0].direction.lower() in ("north", "south")


class Collection:
    """One layer served as a collection, with its CRS84 geometry, tree and filters
    (built on first use)."""

    def __init__(self, cid: str, table: ResultTable, title: str, description: str,
                 working: CRS) -> None:
        self.id = cid
        self.table = table
        self.title = title
        self.description = description
        geo = table.geometry_name  # the shapes not made for this (ResultTable.frame)
        self.is_geo = geo is not None and table.crs is not None
        self.storage = table.crs if self.is_geo and table.crs is not None else working
        self.crs_list = [CRS84, CRS.from_epsg(4326), self.storage, CRS.from_epsg(3857)]
        uniq: list[CRS] = []
        for c in self.crs_list:
            if not any(c.equals(u) for u in uniq):
                uniq.append(c)
        self.crs_list = uniq
        geo = geo if self.is_geo else None
        self.queryables = [str(c) for c, t in table.frame.dtypes.items() if c != geo
                           and (pd.api.types.is_bool_dtype(t) or pd.api.types.is_integer_dtype(t)
                                or pd.api.types.is_object_dtype(t)
                                or isinstance(t, pd.CategoricalDtype | pd.StringDtype))]
        self._lock = threading.Lock()
        self._extent: list[float] | None = None  # [] when none
        self._index: BoundsIndex | None = None
        self._lonlat: Transformer | None = None  # storage CRS -> CRS84, for the bbox search
        self._text: dict[str, np.ndarray] = {}
        self._storage: PackedRows | None = None

    def __len__(self) -> int:
        return len(self.table)

    def _in_crs84(self) -> Iterator[np.ndarray]:
        """Every shape in CRS84 (lon, lat), a chunk at a time (none held)."""
        for g in self.table.geometry_chunks():
            yield np.asarray(g.to_crs(WGS84).array, dtype=object)

    def _crs84_at(self, positions: np.ndarray) -> np.ndarray:
        """The shapes of the rows at ``positions`` in CRS84, the coordinates those of
        :meth:`_in_crs84` (geopandas' ``to_crs``: the same transformer, ``always_xy``),
        without a GeoSeries' cost per search (a search asks for the few across its corners)."""
        shapes = self.table.geometry_at(positions)
        if shapely.has_z(shapes).any():
            return np.asarray(gpd.GeoSeries(shapes, crs=self.storage).to_crs(WGS84).array,
                              dtype=object)
        if self._lonlat is None:
            self._lonlat = Transformer.from_crs(self.storage, WGS84, always_xy=True)
        xy = shapely.get_coordinates(shapes)
        x, y = self._lonlat.transform(xy[:, 0], xy[:, 1])
        return shapely.set_coordinates(shapes, np.column_stack([x, y]))

    def index(self) -> BoundsIndex:
        """The bbox search's index of the shapes' CRS84 bounds, built once."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    from ..memory import release

                    self._index = BoundsIndex(self._in_crs84(), self._crs84_at)
                    release()
        return self._index

    def _storage_fragments(self) -> PackedRows:
        """Every row serialized in the storage (working) CRS, built on first use: pages in
        that CRS then cost what CRS84 pages cost (other CRSs are serialized per request)."""
        if self._storage is None:
            with self._lock:
                if self._storage is None:
                    self._storage = pack_slices(
                        len(self.table), lambda a, b: feature_fragments(self.table.row_slice(a, b)))
        return self._storage

    def text(self, col: str) -> np.ndarray:
        """A queryable column as text (``true``/``false`` for booleans, None for null)."""
        if col not in self._text:
            s = self.table.frame[col]
            nn = s.dropna()
            if pd.api.types.is_bool_dtype(s.dtype) or (
                    len(nn) and all(isinstance(v, bool | np.bool_) for v in nn)):
                vals = s.map(lambda v: None if pd.isna(v) else ("true" if v else "false"))
            else:
                vals = s.map(lambda v: None if v is None or (not isinstance(v, str) and
                                                             pd.isna(v)) else str(v))
            self._text[col] = vals.to_numpy(dtype=object)
        return self._text[col]

    def extent(self) -> list[float] | None:
        """The CRS84 bounds of the collection's shapes, found once, a chunk of shapes at a
        time (a county's listing would otherwise make every layer's million shapes in
        CRS84 at once)."""
        if not self.is_geo or not len(self):
            return None
        if self._extent is None:
            from ..memory import release

            bounds = []
            for g in self._in_crs84():
                g = g[~(shapely.is_missing(g) | shapely.is_empty(g))]
                if len(g):
                    bounds.append(shapely.total_bounds(g))
            with warnings.catch_warnings():  # all NaN: NaN, as shapely.total_bounds
                warnings.simplefilter("ignore", RuntimeWarning)
                self._extent = [float(v) for v in (*np.nanmin(bounds, axis=0)[:2],
                                                    *np.nanmax(bounds, axis=0)[2:])] \
                    if bounds else []
            release()
        return self._extent or None

    def supported(self, text: str | None, field: str) -> CRS:
        """The CRS a request names (default CRS84), which must be in :attr:`crs_list`."""
        if text is None:
            return CRS84
        t = str(text).strip()
        if not t:
            raise ParameterError(field, "empty; name a CRS of the collection or leave it out "
                                        "for CRS84")
        if t.startswith("[") and t.endswith("]"):  # safe CURIE [EPSG:2260]
            t = t[1:-1]
        try:
            c = CRS84 if t.rstrip("/") in (CRS84_URI, "OGC:CRS84") else parse_crs(t, field)
        except RequestError as exc:  # the OGC API answers 400 for a bad parameter
            raise ParameterError(field, exc.message) from None
        for s in self.crs_list:
            if c.equals(s):
                return s
        raise ParameterError(field, f"{t!r} is not offered by collection {self.id}; use one "
                                  f"of {', '.join(crs_uri(s) for s in self.crs_list)}")

    def select(self, bbox: list[float] | None, bbox_crs: CRS,
               filters: dict[str, str]) -> np.ndarray | range:
        """Row positions matching the bbox (intersects) and the filters, in row order:
        a ``range`` when every row matches (a page of a county's million rows does not
        make a million positions first)."""
        pos: np.ndarray | range = range(len(self))
        if bbox is not None:
            if self.is_geo and bbox_crs is CRS84 and bbox[0] <= bbox[2]:
                # a box in CRS84 not across the antimeridian: searched by its bounds
                # (no shape made unless one is tested)
                r = crs84_bounds(bbox)
                pos = (np.empty(0, dtype=np.int64) if r is None
                       else self.index().query_bounds(*r))
            else:
                box = bbox_in_crs84(bbox, bbox_crs) if self.is_geo else None
                pos = np.empty(0, dtype=np.int64) if box is None else self.index().query(box)
        for col, val in filters.items():
            text = self.text(col)
            pos = (np.flatnonzero(text == val) if isinstance(pos, range)
                   else pos[text[pos] == val])
        return pos

    def fragments(self, pos: np.ndarray, crs: CRS) -> list[bytes]:
        """GeoJSON features of the rows at ``pos`` in ``crs`` (axis order of the CRS),
        each with its ``id`` (row number from 1)."""
        if crs.equals(CRS84) or not self.is_geo:
            frags = self.table.fragments(pos, WGS84)
        elif crs.equals(self.storage) and not north_first(crs):
            frags = self._storage_fragments().take(pos)
        else:
            sub = self.table.rows(pos).to_crs(crs)
            if north_first(crs):
                geoms = shapely.transform(np.asarray(sub.geometry.array, dtype=object),
                                          lambda xy: xy[:, ::-1])
                sub = sub.set_geometry(gpd.GeoSeries(geoms, index=sub.index, crs=crs))
            frags = feature_fragments(sub)
        n = len(_FEATURE)
        return [_FEATURE + b'"id":' + str(int(i) + 1).encode() + b"," + f[n:]
                for i, f in zip(pos, frags, strict=True)]


#: Layers whose findings mix points, lines and empty geometries: served as points.
AS_POINTS = frozenset({"quality"})
#: The property holding the full shape of a layer served as points (WKT, storage CRS).
SHAPE_WKT = "shape_wkt"


def as_points(gdf: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """``gdf`` with each geometry replaced by its representative point (a point on
    it: :func:`shapely.point_on_surface`) and the full shape kept as WKT in
    :data:`SHAPE_WKT` (in the layer's CRS); an empty or missing geometry becomes
    null, its WKT null. OGC clients such as QGIS give a collection one geometry
    type, which a layer of points, lines and empty geometries does not have."""
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    empty = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    wkt = np.full(len(geoms), None, dtype=object)
    pts = np.full(len(geoms), None, dtype=object)
    if (~empty).any():
        wkt[~empty] = shapely.to_wkt(geoms[~empty], rounding_precision=-1)
        pts[~empty] = shapely.point_on_surface(geoms[~empty])
    out = gdf.drop(columns=[gdf.geometry.name])
    out[SHAPE_WKT] = wkt
    return gpd.GeoDataFrame(out, geometry=gpd.GeoSeries(pts, index=gdf.index, crs=gdf.crs),
                            crs=gdf.crs)


def crs84_bounds(bbox: list[float]) -> tuple[float, float, float, float] | None:
    """A CRS84 ``bbox`` whose minx is not over its maxx, clipped to the globe, as the
    bounds of the box searched (minx, miny, maxx, maxy); None when it holds nothing."""
    a, b = max(bbox[0], -180.0), min(bbox[2], 180.0)
    y0, y1 = max(bbox[1], -90.0), min(bbox[3], 90.0)
    return None if y0 > y1 else (min(a, b), y0, max(a, b), y1)


def bbox_in_crs84(bbox: list[float], crs: CRS) -> Any:
    """The area of ``bbox`` (minx, miny, maxx, maxy in ``crs``, its axis order) in CRS84,
    None when it holds nothing. Values beyond the CRS's area of use are clipped to it;
    a box of no width or height is a line or a point; in CRS84 a minx over maxx crosses
    the antimeridian."""
    x0, y0, x1, y1 = bbox
    if crs.equals(CRS84):
        if x0 > x1:  # across the antimeridian
            y0, y1 = max(y0, -90.0), min(y1, 90.0)
            return None if y0 > y1 else shapely.union(shapely.box(x0, y0, 180.0, y1),
                                                       shapely.box(-180.0, y0, x1, y1))
        r = crs84_bounds(bbox)
        return None if r is None else rectangle(*r)
    if north_first(crs):
        x0, y0, x1, y1 = y0, x0, y1, x1
    area = crs.area_of_use
    if area is not None:  # clip to the CRS's area of use, in its own units
        tr = Transformer.from_crs(CRS84, crs, always_xy=True)
        a0, b0, a1, b1 = tr.transform_bounds(*area.bounds, densify_pts=21)
        if all(np.isfinite([a0, b0, a1, b1])):
            x0, y0, x1, y1 = max(x0, a0), max(y0, b0), min(x1, a1), min(y1, b1)
    if x0 > x1 or y0 > y1:
        return None
    ring = shapely.segmentize(rectangle(x0, y0, x1, y1), max(x1 - x0, y1 - y0) / 64 or 1)
    out = gpd.GeoSeries([ring], crs=crs).to_crs(WGS84).iloc[0]
    if out is None or out.is_empty or not np.isfinite(shapely.get_coordinates(out)).all():
        return None
    return out


def collections_of(state: TownState) -> dict[str, Collection]:
    """Every result layer and input layer of the town as a :class:`Collection`;
    the layers of :data:`AS_POINTS` as points (:func:`as_points`)."""
    docs = layer_docs()
    working = CRS.from_user_input(state.town.crs)
    out: dict[str, Collection] = {}
    for name, tab in state.tables.items():
        if name == "parcels":
            continue
        d = docs.get(name)
        desc = d.description if d else ""
        if name in AS_POINTS and isinstance(tab.gdf, gpd.GeoDataFrame) \
                and tab.gdf.crs is not None:
            tab = ResultTable(name, as_points(tab.gdf), eager=False)
            desc += (f" Served as points: each finding at a point on its shape; the whole "
                     f"shape is the property {SHAPE_WKT} (WKT, in the storage CRS).")
        out[name] = Collection(name, tab, name.replace("_", " ").capitalize(), desc, working)
    for role, gdf in state.town.layers.items():
        cid = INPUT_PREFIX + role
        tab = (state.tables["parcels"] if role == "parcels" and "parcels" in state.tables
               else ResultTable(cid, gdf, eager=False))
        out[cid] = Collection(cid, tab, f"Input: {role}",
                              f"the town's {role} layer as gisnet read it (canonical "
                              f"columns, working CRS)", working)
    return out


def _base(request: Request) -> str:
    """The configured base URL of the links (never the request's ``Host``)."""
    return str(request.app.state.base_url)


def _self_url(request: Request) -> str:
    """The request's URL under the configured base URL."""
    q = request.url.query
    return f"{_base(request)}{request.url.path}" + (f"?{q}" if q else "")


def _json(obj: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(obj), media_type=JSON, headers=headers)


def whole_number(q: Any, name: str, default: int, lo: int, hi: int,
                 error: type[RequestError]) -> int:
    """Query parameter ``name`` as a whole number from ``lo`` to ``hi`` (decimal
    digits only), ``default`` when absent or empty; ``error`` naming it otherwise."""
    v = q.get(name)
    if v is None:
        return default
    shown = repr(v) if len(v) <= 40 else repr(v[:30]) + f"... ({len(v)} characters)"
    if not _DIGITS.fullmatch(v) or len(v) > 30:
        raise error(name, f"must be a whole number from {lo} to {hi}, not {shown}")
    n = int(v)
    if n < lo:
        raise error(name, f"must be at least {lo}, not {n}")
    if n > hi:
        raise error(name, f"must be at most {hi:,}, not {n:,}"
                          + (" (the largest page; follow the next links)"
                             if name == "limit" else ""))
    return n


def _int(q: Any, name: str, default: int, lo: int, hi: int) -> int:
    return whole_number(q, name, default, lo, hi, ParameterError)


def _bbox(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        v = [float(t) for t in text.split(",")]
    except ValueError:
        raise ParameterError("bbox", f"must be 4 numbers minx,miny,maxx,maxy, not {text!r}") \
            from None
    if len(v) == 6:  # with heights: drop them
        v = [v[0], v[1], v[3], v[4]]
    if len(v) != 4 or not all(np.isfinite(v)):
        raise ParameterError("bbox", f"must be 4 finite numbers minx,miny,maxx,maxy, "
                                   f"not {text!r}")
    return v


def _f(q: Any) -> None:
    f = q.get("f")
    if f is not None and f.lower() not in ("json", "geojson", "application/json",
                                           "application/geo+json"):
        raise ParameterError("f", f"only json is served, not {f!r}")


def collection_doc(c: Collection, base: str) -> dict[str, Any]:
    url = f"{base}/collections/{c.id}"
    doc: dict[str, Any] = {
        "id": c.id, "title": c.title, "description": c.description,
        "itemType": "feature",
        "links": [{"href": url, "rel": "self", "type": JSON, "title": c.title},
                  {"href": f"{url}/items", "rel": "items", "type": GEOJSON,
                   "title": f"{c.title} (features)"}],
        "crs": [crs_uri(s) for s in c.crs_list],
        "storageCrs": crs_uri(c.storage),
        "numberOfFeatures": len(c),
        "queryables": c.queryables,
    }
    doc["links"] += style_links(c.id, c.table, base)  # its QGIS style, if any
    ext = c.extent()
    if ext is not None:
        doc["extent"] = {"spatial": {"bbox": [ext], "crs": CRS84_URI}}
    return doc


#: Items pages made at once, on as many threads: a page is CPU work holding the GIL
#: between many short releases (numpy masks, shapely calls, packed blocks), and a
#: thread among more than the cores waits for it again at each (a county's bbox page,
#: in-process: 0.56 ms of CPU on one thread, 1.2 ms among 4, 1.8 ms among 16).
PAGE_THREADS = 2


def add_ogc_routes(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """Register the OGC API - Features routes (see the module docstring)."""
    colls = collections_of(state)
    add_style_routes(app, colls)
    pages: list[CapacityLimiter] = []  # made in the server's event loop, on first use

    def get(cid: str) -> Collection:
        c = colls.get(cid)
        if c is None and cid.startswith(INPUT_PREFIX) and cid in state.unavailable:
            state.require(cid)  # an input layer the state does not hold: 503, the reason
        if c is None:
            raise UnknownIdError("collectionId", f"no collection {cid!r} (see /collections)",
                                 layer=cid)
        return c

    @app.get("/", summary="Landing page (OGC API - Features)", tags=["OGC API - Features"])
    async def landing(request: Request) -> Response:
        _f(request.query_params)
        b = _base(request)
        return _json({
            "title": f"gisnet: {state.town.name}",
            "description": "Sewer-network results and input layers of one town "
                           "(OGC API - Features; the gisnet routes are listed at /docs)",
            "links": [
                {"href": f"{b}/", "rel": "self", "type": JSON, "title": "this document"},
                {"href": f"{b}/api", "rel": "service-desc", "type": OPENAPI_TYPE,
                 "title": "the API definition (OpenAPI 3.0)"},
                {"href": f"{b}/docs", "rel": "service-doc", "type": "text/html",
                 "title": "the API documentation"},
                {"href": f"{b}/conformance", "rel": "conformance", "type": JSON,
                 "title": "conformance classes implemented"},
                {"href": f"{b}/collections", "rel": "data", "type": JSON,
                 "title": "the layers (collections)"},
            ]})

    @app.get("/conformance", summary="Conformance classes implemented",
             tags=["OGC API - Features"])
    async def conformance() -> Response:
        return _json({"conformsTo": CONFORMANCE})

    @app.get("/api", summary="The API definition as OpenAPI 3.0",
             tags=["OGC API - Features"], include_in_schema=False)
    async def api() -> Response:
        return Response(dumps(openapi30(app)), media_type=OPENAPI_TYPE)

    @app.get("/collections", summary="Every result and input layer",
             tags=["OGC API - Features"])
    async def collections(request: Request) -> Response:
        _f(request.query_params)
        b = _base(request)
        return _json({"links": [{"href": f"{b}/collections", "rel": "self", "type": JSON}],
                      "collections": [collection_doc(c, b) for c in colls.values()],
                      "crs": [CRS84_URI]})

    @app.get("/collections/{collectionId}", summary="One layer: extent, CRSs, queryables",
             tags=["OGC API - Features"])
    async def collection(collectionId: str, request: Request) -> Response:
        _f(request.query_params)
        return _json(collection_doc(get(collectionId), _base(request)))

    @app.get("/collections/{collectionId}/items", summary="Features of a layer, a page at "
             "a time", tags=["OGC API - Features"], response_class=Response,
             openapi_extra={"parameters": ITEMS_PARAMS})
    async def items(collectionId: str, request: Request) -> Response:
        c = get(collectionId)
        q = request.query_params
        known = {"limit", "offset", "bbox", "bbox-crs", "crs", "f"}
        for k in q:
            if k not in known and k not in c.queryables:
                raise ParameterError(k, f"unknown parameter; use limit, offset, bbox, "
                                      f"bbox-crs, crs, f or a queryable column of {c.id}: "
                                      f"{', '.join(c.queryables)}")
        _f(q)
        limit = _int(q, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX)
        offset = _int(q, "offset", 0, 0, OFFSET_MAX)
        crs = c.supported(q.get("crs"), "crs")
        bbox_crs = c.supported(q.get("bbox-crs"), "bbox-crs")
        bbox = _bbox(q.get("bbox"))
        filters = {k: q[k] for k in q if k in c.queryables}

        def answer() -> Response:
            pos = c.select(bbox, bbox_crs, filters)
            page = np.asarray(pos[offset:offset + limit], dtype=np.int64)
            b = _base(request)
            url = f"{b}/collections/{c.id}/items"
            params = [(k, v) for k, v in q.multi_items() if k != "offset"]

            def link(rel: str, off: int) -> dict[str, str]:
                qs = urllib.parse.urlencode([*params, ("offset", str(off))])
                return {"href": f"{url}?{qs}", "rel": rel, "type": GEOJSON}

            links = [{"href": _self_url(request), "rel": "self", "type": GEOJSON},
                     {"href": f"{b}/collections/{c.id}", "rel": "collection", "type": JSON}]
            if offset + limit < len(pos):
                links.append(link("next", offset + limit))
            if offset > 0:
                links.append(link("prev", max(0, offset - limit)))
            head = dumps({"type": "FeatureCollection",
                          "numberMatched": len(pos), "numberReturned": len(page),
                          "timeStamp": _dt.datetime.now(_dt.UTC).isoformat(
                              timespec="seconds").replace("+00:00", "Z"),
                          "links": links})
            body = head[:-1] + b',"features":[' + b",".join(c.fragments(page, crs)) + b"]}"
            return Response(body, media_type=GEOJSON,
                            headers={"Content-Crs": f"<{crs_uri(crs)}>"})

        if not pages:
            pages.append(CapacityLimiter(PAGE_THREADS))
        return await to_thread.run_sync(answer, limiter=pages[0])

    @app.get("/collections/{collectionId}/items/{featureId}", summary="One feature by id",
             tags=["OGC API - Features"], response_class=Response,
             openapi_extra={"parameters": [CRS_ITEM_PARAM]})
    async def item(collectionId: str, featureId: str, request: Request) -> Response:
        c = get(collectionId)
        q = request.query_params
        for k in q:
            if k not in ("crs", "f"):
                raise ParameterError(k, "unknown parameter; use crs or f")
        _f(q)
        crs = c.supported(q.get("crs"), "crs")
        if not featureId.isdigit() or not 1 <= int(featureId) <= len(c):
            raise UnknownIdError("featureId", f"no feature {featureId!r} in {c.id} (ids are "
                                 f"1 to {len(c)})", layer=c.id, feature=featureId)
        i = int(featureId) - 1
        frag = c.fragments(np.array([i]), crs)[0]
        b = _base(request)
        links = dumps([{"href": f"{b}/collections/{c.id}/items/{featureId}", "rel": "self",
                        "type": GEOJSON},
                       {"href": f"{b}/collections/{c.id}", "rel": "collection",
                        "type": JSON}])
        return Response(frag[:-1] + b',"links":' + links + b"}", media_type=GEOJSON,
                        headers={"Content-Crs": f"<{crs_uri(crs)}>"})


def _param(name: str, desc: str, schema: dict[str, Any], explode: bool = False
           ) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": desc,
            "schema": schema, "style": "form", "explode": explode}


CRS_ITEM_PARAM = _param("crs", "CRS of the answer's coordinates, one of the collection's "
                               "`crs` (default CRS84)", {"type": "string", "format": "uri"})
ITEMS_PARAMS = [
    _param("limit", f"features per page, 1 to {LIMIT_MAX:,} (more is a 400 naming the "
                    "cap; page with the `next` links)",
           {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX, "default": LIMIT_DEFAULT}),
    _param("offset", f"features to skip, 0 to {OFFSET_MAX:,} (more is a 400); the `next` "
                     "link carries it",
           {"type": "integer", "minimum": 0, "maximum": OFFSET_MAX, "default": 0}),
    _param("bbox", "minx,miny,maxx,maxy in bbox-crs (default CRS84): features intersecting",
           {"type": "array", "minItems": 4, "maxItems": 6, "items": {"type": "number"}}),
    _param("bbox-crs", "CRS of bbox, one of the collection's `crs`",
           {"type": "string", "format": "uri"}),
    CRS_ITEM_PARAM,
    _param("f", "format: json (GeoJSON)", {"type": "string", "enum": ["json"]}),
]


def _downgrade(node: Any) -> Any:
    """A JSON schema of OpenAPI 3.1 in the OpenAPI 3.0 dialect (nullable, example)."""
    if isinstance(node, list):
        return [_downgrade(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _downgrade(v) for k, v in node.items()}
    for key in ("anyOf", "oneOf"):
        alts = out.get(key)
        if isinstance(alts, list) and {"type": "null"} in alts:
            rest = [a for a in alts if a != {"type": "null"}]
            out.pop(key)
            if len(rest) == 1:
                out.update(rest[0])
            else:
                out[key] = rest
            out["nullable"] = True
    if out.get("type") == "null":
        out.pop("type")
        out["nullable"] = True
    if isinstance(out.get("type"), list):  # ["object", "null"]
        kinds = [t for t in out["type"] if t != "null"]
        if "null" in out["type"]:
            out["nullable"] = True
        if len(kinds) == 1:
            out["type"] = kinds[0]
        else:
            out.pop("type")
            out["anyOf"] = [{"type": t} for t in kinds]
    if "prefixItems" in out:  # a tuple: 3.0 has none, so the items' union
        items = out.pop("prefixItems")
        out["items"] = items[0] if len(items) == 1 else {"anyOf": items}
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if isinstance(out.get("examples"), list) and "in" not in out:
        ex = out.pop("examples")
        if ex:
            out["example"] = ex[0]
    for k in ("exclusiveMinimum", "exclusiveMaximum"):
        if isinstance(out.get(k), int | float) and not isinstance(out.get(k), bool):
            out["minimum" if k == "exclusiveMinimum" else "maximum"] = out[k]
            out[k] = True
    return out


def openapi30(app: FastAPI) -> dict[str, Any]:
    """The application's OpenAPI description in the OpenAPI 3.0.3 dialect (the OAS
    3.0 conformance class)."""
    doc = dict(app.openapi())
    doc = _downgrade(doc)
    doc["openapi"] = "3.0.3"
    doc.setdefault("info", {})["version"] = __version__
    return doc
