"""FastAPI routes, request models, limits and error handling of :mod:`gisnet.service`."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from pyproj import CRS
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import __version__
from ._service_geojson import (
    RequestError,
    TooLargeError,
    crs_name,
    dumps,
    feature_collection,
    parse_crs,
    parse_features,
    to_jsonable,
    to_working_crs,
)
from .errors import (
    ConfigError,
    CRSError,
    GisnetError,
    LayerError,
    NotFoundError,
    SchemaError,
    TopologyError,
)
from .service import (
    _MAP_NAME,
    _MAP_TYPES,
    GEOJSON,
    JSON,
    ServiceLimits,
    TownState,
)

log = logging.getLogger("gisnet.service")

CRS_QUERY = Query(None, description="CRS of the response geometry (default EPSG:4326), "
                                    "e.g. EPSG:2260")

# ---------------------------------------------------------------------------
# Request bodies
# ---------------------------------------------------------------------------

IdList = list[str | int]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObligationsRequest(_Body):
    """Parcels by id, or arbitrary GeoJSON points/polygons (in ``crs``)."""

    parcel_ids: IdList | None = Field(None, description="parcel ids (from the parcels layer)")
    features: Any = Field(None, description="GeoJSON FeatureCollection, Feature, geometry or "
                                            "list of them: points are treated as buildings, "
                                            "polygons as parcels")
    crs: str | None = Field(None, description="CRS of `features` (default EPSG:4326)")


class ControlManholesRequest(_Body):
    """Buildings, parcels or industrial users by id, or GeoJSON points (in ``crs``)."""

    parcel_ids: IdList | None = None
    building_ids: IdList | None = None
    user_ids: IdList | None = None
    features: Any = Field(None, description="GeoJSON points (buildings) or polygons")
    crs: str | None = Field(None, description="CRS of `features` (default EPSG:4326)")


class WhatIfRequest(_Body):
    """A proposed connection: where, how much, and whether industrial."""

    parcel_id: str | int | None = Field(None, description="connect this parcel")
    point: list[float] | dict[str, Any] | None = Field(
        None, description="or connect at this point: [x, y] or a GeoJSON Point, in `crs`")
    crs: str | None = Field(None, description="CRS of `point` (default EPSG:4326)")
    flow_gpd: float = Field(..., gt=0, allow_inf_nan=False,
                            description="proposed average daily flow, gallons per day")
    industrial: bool = Field(False, description="industrial wastewater (Berlin: state approval)")


# ---------------------------------------------------------------------------
# Limits and errors
# ---------------------------------------------------------------------------


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_bytes`` with 413, before reading them
    when ``Content-Length`` says so, else as soon as the stream passes it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    size = int(value)
                except ValueError:
                    size = -1
                if size > self.max_bytes:
                    await _send_json(send, 413, self._body(size))
                    return
        received = 0
        limit = self.max_bytes

        async def limited() -> Message:
            nonlocal received
            msg = await receive()
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > limit:
                    raise StarletteHTTPException(413, self._body(received)["detail"])
            return msg

        await self.app(scope, limited, send)

    def _body(self, size: int) -> dict[str, Any]:
        return {"detail": f"request body of {size} bytes exceeds the limit of "
                          f"{self.max_bytes} bytes (max_body_bytes)",
                "limit": self.max_bytes, "field": "body"}


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = dumps(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", JSON.encode()),
                            (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})


def _status(exc: GisnetError) -> int:
    code = getattr(exc, "status_code", None)
    if code:
        return int(code)
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, (CRSError, ConfigError, SchemaError, LayerError, TopologyError)):
        return 422
    return 422


_UNION_TAGS = {"str", "int", "float", "bool", "list", "dict", "none"}


def _field_name(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        where = parts.pop(0)
        if not parts:
            return str(where)
    out = ""
    for p in parts:
        if isinstance(p, str) and (p in _UNION_TAGS or "[" in p or "-" in p):
            continue  # pydantic names the union member tried (``str``, ``list[float]``)
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        errors = []
        for e in exc.errors():
            f = _field_name(tuple(e.get("loc", ())))
            msg = e.get("msg", "invalid")
            if e.get("type") == "json_invalid":
                f, msg = "body", f"malformed JSON ({e.get('ctx', {}).get('error', msg)})"
            if e.get("type") == "extra_forbidden":
                msg = "unknown field"
            if not any(e2["field"] == f for e2 in errors):  # one per field (unions)
                errors.append({"field": f, "message": msg})
        first = errors[0] if errors else {"field": "request", "message": "invalid"}
        body = {"detail": f"{first['field']}: {first['message']}", "field": first["field"],
                "errors": errors}
        return Response(dumps(body), status_code=422, media_type=JSON)

    @app.exception_handler(GisnetError)
    async def _gisnet(request: Request, exc: GisnetError) -> Response:
        status = _status(exc)
        body: dict[str, Any] = {"detail": str(exc)}
        fld = getattr(exc, "field", None)
        if fld:
            body["field"] = fld
        if isinstance(exc, TooLargeError):
            body["limit"] = exc.limit
        return Response(dumps(body), status_code=status, media_type=JSON)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        body: dict[str, Any] = {"detail": exc.detail}
        if exc.status_code == 413:
            body["field"] = "body"
        return Response(dumps(body), status_code=exc.status_code, media_type=JSON,
                        headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:  # pragma: no cover
        log.exception("internal error answering %s %s", request.method, request.url.path)
        return Response(dumps({"detail": f"internal error ({exc.__class__.__name__}); "
                                         "see the server log"}),
                        status_code=500, media_type=JSON)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _query(name: str, description: str, typ: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": typ}}


_CRS_PARAM = _query("crs", "CRS of the response geometry (default EPSG:4326), e.g. EPSG:2260")
_PATH_PARCEL = {"name": "parcel_id", "in": "path", "required": True,
                "description": "parcel id", "schema": {"type": "string"}}


def _q_float(q: Any, name: str) -> float | None:
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


def _no_unknown(q: Any, known: tuple[str, ...]) -> None:
    for k in q:
        if k not in known:
            raise RequestError(k, f"unknown parameter (expected {', '.join(known)})")


def _geo(content: bytes) -> Response:
    return Response(content, media_type=GEOJSON)


def _json(obj: Any) -> Response:
    return Response(dumps(obj), media_type=JSON)


def _ids(values: list[str | int] | None) -> list[str]:
    return [] if values is None else [str(v) for v in values]


def _check_batch(n: int, limits: ServiceLimits, field: str) -> None:
    if n > limits.max_batch:
        raise TooLargeError(f"batch of {n} items in {field!r} exceeds the limit of "
                            f"{limits.max_batch} (max_batch)", limit=limits.max_batch,
                            field=field)


def _input_points(state: TownState, features: Any, crs_text: str | None,
                  limits: ServiceLimits) -> tuple[gpd.GeoSeries, list[str], list[dict]]:
    """Request GeoJSON -> geometries in the working CRS, ids, properties."""
    if isinstance(features, dict) and isinstance(features.get("features"), list):
        _check_batch(len(features["features"]), limits, "features")
    elif isinstance(features, list):
        _check_batch(len(features), limits, "features")
    in_crs = parse_crs(crs_text, "crs")
    geoms, ids, props = parse_features(features, field="features")
    work = to_working_crs(geoms, in_crs, CRS.from_user_input(state.town.crs), "features")
    ids = [i if i is not None else f"input-{n + 1}" for n, i in enumerate(ids)]
    return work, ids, props


# ---------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------


def build_app(state: TownState, limits: ServiceLimits) -> FastAPI:
    """Build the FastAPI app (see :func:`gisnet.service.create_app`)."""
    app = FastAPI(
        title="gisnet",
        version=__version__,
        description=("Sewer-network answers for one loaded town: connection obligations, "
                     "control manholes and traces, pipe and plant capacity, what-if. "
                     "Geometry is GeoJSON in EPSG:4326 unless `crs` says otherwise; "
                     "columns and units are those of the results GeoPackage."),
    )
    app.state.gisnet = state
    app.state.limits = limits
    app.add_middleware(BodyLimitMiddleware, max_bytes=limits.max_body_bytes)
    if limits.cors_origins:  # a town's web viewer on another origin
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(limits.cors_origins),
                           allow_methods=["GET", "POST"], allow_headers=["Content-Type"])
    _install_error_handlers(app)
    town = state.town
    work_crs = CRS.from_user_input(town.crs)
    up_points = state.points

    # -- town ---------------------------------------------------------------

    @app.get("/health", summary="Liveness and the loaded town")
    async def health() -> Response:
        return _json({"status": "ok", "town": town.name, "version": __version__})

    @app.get("/town", summary="Layers, counts, profile and data-quality summary")
    async def town_info() -> Response:
        info = state.summary()
        info["limits"] = {"max_body_bytes": limits.max_body_bytes,
                          "max_batch": limits.max_batch}
        return _json(info)

    # -- obligations --------------------------------------------------------

    @app.get("/parcels", summary="Every parcel id of the town, in layer order")
    async def parcel_ids() -> Response:
        tab = state.table("parcels")
        ids = tab.gdf["parcel_id"].astype(object).where(tab.gdf["parcel_id"].notna(), None)
        return _json({"count": len(ids), "parcel_ids": ids.tolist()})

    # The two single-parcel lookups read their query string directly: FastAPI's
    # per-request parameter machinery costs more than the lookup itself. Their
    # parameters are declared for the OpenAPI description by hand.

    @app.get("/parcels/{parcel_id:path}/obligation", summary="One parcel's obligation",
             response_class=Response,
             openapi_extra={"parameters": [_PATH_PARCEL, _CRS_PARAM]})
    async def parcel_obligation(request: Request) -> Response:
        parcel_id = request.path_params["parcel_id"]
        out_crs = parse_crs(request.query_params.get("crs"))
        tab = state.table("obligations")
        pos = tab.lookup("parcel_id", parcel_id)
        if pos is None:
            raise NotFoundError(f"parcel {parcel_id!r} not found", layer="parcels",
                                feature=parcel_id)
        return _geo(tab.collection(pos, out_crs))

    @app.post("/obligations", summary="Obligations of many parcels, or of given geometry",
              response_class=Response)
    def obligations(body: ObligationsRequest, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        if (body.parcel_ids is None) == (body.features is None):
            raise RequestError("parcel_ids", "give either 'parcel_ids' or 'features'")
        if body.parcel_ids is not None:
            ids = _ids(body.parcel_ids)
            _check_batch(len(ids), limits, "parcel_ids")
            tab = state.table("obligations")
            pos, missing = tab.lookup_many("parcel_id", ids)
            return _geo(tab.collection(pos, out_crs, {"not_found": missing}))
        state.require("obligations")
        geoms, ids, _props = _input_points(state, body.features, body.crs, limits)
        from .obligations import compute_obligations

        parcels = _as_parcels(town, geoms, ids)
        res = compute_obligations(town, parcels=parcels)
        return _geo(_layer_geojson(res["obligations"], out_crs))

    # -- tracing ------------------------------------------------------------

    @app.get("/trace/downstream", summary="Connection point, control manhole, plant and path "
                                          "downstream of a parcel or a point",
             response_class=Response,
             openapi_extra={"parameters": [
                 _query("parcel", "parcel id (answered from the precomputed tables)"),
                 _query("x", "x (easting or longitude) in `crs`", "number"),
                 _query("y", "y (northing or latitude) in `crs`", "number"),
                 _query("crs", "CRS of x, y and of the response geometry (default "
                               "EPSG:4326), e.g. EPSG:2260"),
                 _query("point_crs", "CRS of x, y when it differs from `crs`")]})
    async def trace_downstream(request: Request) -> Response:
        q = request.query_params
        _no_unknown(q, ("parcel", "x", "y", "point_crs", "crs"))
        out_crs = parse_crs(q.get("crs"))
        state.require("tracing")
        parcel = q.get("parcel")
        x, y = _q_float(q, "x"), _q_float(q, "y")
        if parcel is not None:
            if x is not None or y is not None:
                raise RequestError("parcel", "give either 'parcel' or 'x' and 'y', not both")
            return _geo(_parcel_trace(state, parcel, out_crs))
        if x is None or y is None:
            raise RequestError("parcel" if x is None and y is None else ("y" if y is None
                                                                          else "x"),
                               "give 'parcel', or both 'x' and 'y'")
        in_crs = (parse_crs(q.get("point_crs"), "point_crs") if "point_crs" in q
                  else out_crs)

        def run() -> Response:
            from shapely.geometry import Point

            from .tracing import trace_downstream as _trace

            pt = to_working_crs([Point(x, y)], in_crs, work_crs, "x").iloc[0]
            res = _trace(town, state.G, point=(pt.x, pt.y), index=state.index)
            return _json({"query": {"x": x, "y": y, "point_crs": crs_name(in_crs)},
                          **to_jsonable(res, out_crs, work_crs)})

        return await run_in_threadpool(run)

    @app.get("/manholes/{manhole_id:path}/upstream",
             summary="Everything that drains to a manhole: pipes, parcels, buildings, users",
             response_class=Response)
    def manhole_upstream(manhole_id: str, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        state.require("tracing")
        if manhole_id not in state.G:
            raise NotFoundError(f"manhole {manhole_id!r} not found", layer="manholes",
                                feature=manhole_id)
        from .tracing import trace_upstream

        res = trace_upstream(town, state.G, manhole_id, points=up_points, index=state.index)
        return _json({"manhole_id": manhole_id, **to_jsonable(res, out_crs, work_crs)})

    @app.post("/control-manholes", summary="Control manholes of many buildings/parcels/users, "
                                           "or of given points", response_class=Response)
    def control_manholes(body: ControlManholesRequest, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        state.require("tracing")
        given = [(k, v) for k, v in (("parcel_ids", body.parcel_ids),
                                     ("building_ids", body.building_ids),
                                     ("user_ids", body.user_ids),
                                     ("features", body.features)) if v is not None]
        if len(given) != 1:
            raise RequestError("parcel_ids", "give exactly one of 'parcel_ids', "
                                             "'building_ids', 'user_ids' or 'features'")
        key, value = given[0]
        if key != "features":
            ids = _ids(value)
            _check_batch(len(ids), limits, key)
            tab = state.table("control_manholes")
            pos, missing = tab.lookup_many(key[:-1], ids)
            return _geo(tab.collection(pos, out_crs, {"not_found": missing}))
        geoms, ids, _props = _input_points(state, value, body.crs, limits)
        from . import tracing

        sub = _sub_town(town, buildings=_as_buildings(town, geoms, ids))
        pts = tracing.connection_points(sub, state.G, index=state.index)
        res = tracing.control_manholes(sub, state.G, points=pts, index=state.index)
        return _geo(_layer_geojson(res["control_manholes"], out_crs))

    # -- capacity -----------------------------------------------------------

    @app.get("/pipes", summary="Pipe capacity and utilization (layer pipes_capacity)",
             response_class=Response)
    async def pipes(
        min_utilization: float | None = Query(None, ge=0, allow_inf_nan=False,
                                              description="only pipes at or above this "
                                                          "peak-flow/capacity ratio"),
        main_id: str | None = Query(None, description="only this main"),
        crs: str | None = CRS_QUERY,
    ) -> Response:
        out_crs = parse_crs(crs)
        tab = state.table("pipes_capacity")
        if main_id is not None:
            pos = tab.lookup("main_id", main_id)
            if pos is None:
                raise NotFoundError(f"main {main_id!r} not found", layer="mains",
                                    feature=main_id)
        elif min_utilization is not None:
            u = pd.to_numeric(tab.gdf["utilization"], errors="coerce").to_numpy(dtype=float)
            pos = np.flatnonzero(u >= min_utilization)  # NaN (no capacity) never passes
        else:
            pos = tab.all_positions()
        return _geo(tab.collection(pos, out_crs))

    @app.get("/plants", summary="Treatment plants: flow against design flow (layer plants)",
             response_class=Response)
    async def plants(crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        tab = state.table("plants")
        return _geo(tab.collection(tab.all_positions(), out_crs))

    @app.post("/whatif", summary="What one proposed connection changes downstream",
              response_class=Response)
    def whatif(body: WhatIfRequest, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        state.require("capacity")
        if (body.parcel_id is None) == (body.point is None):
            raise RequestError("parcel_id", "give either 'parcel_id' or 'point'")
        from .capacity import whatif as _whatif

        kwargs: dict[str, Any] = {"flow_gpd": body.flow_gpd, "industrial": body.industrial}
        if body.parcel_id is not None:
            pid = str(body.parcel_id)
            if not state.parcel_known(pid):
                raise NotFoundError(f"parcel {pid!r} not found", layer="parcels", feature=pid)
            kwargs["parcel_id"] = pid
        else:
            pt = _point(body.point, body.crs, work_crs)
            kwargs["point"] = (pt.x, pt.y)
        res = _whatif(town, state.G, state.capacity,
                      **kwargs)
        data = to_jsonable(res.to_dict(), out_crs, work_crs)
        # the pipes with their geometry, and the tap in the response CRS
        data["pipes"] = to_jsonable(res.pipes, out_crs, work_crs)
        conn = data.get("connection") or {}
        if conn.get("x") is not None and conn.get("y") is not None:
            from shapely.geometry import Point

            g = to_jsonable(Point(conn["x"], conn["y"]), out_crs, work_crs)
            conn["x"], conn["y"] = g["coordinates"]
            conn["crs"] = crs_name(out_crs)
        return _json(data)

    # -- any result layer ---------------------------------------------------

    @app.get("/results", summary="The result layers held (as in gisnet-results.gpkg)")
    async def results_index() -> Response:
        return _json({"layers": {name: {"features": len(t), "keys": list(t.index)}
                                 for name, t in state.tables.items() if name != "parcels"}})

    @app.get("/results/{layer}", summary="A whole result layer, or its rows with a given id",
             response_class=Response,
             openapi_extra={"parameters": [
                 {"name": "layer", "in": "path", "required": True, "schema": {"type": "string"},
                  "description": "layer name, e.g. sampling_plan, frontage, quality"},
                 _query("ID_COLUMN", "rows whose id column (one of the layer's `keys` in "
                                     "GET /results, e.g. parcel_id) equals this value"),
                 _CRS_PARAM]})
    async def result_layer(request: Request) -> Response:
        name = request.path_params["layer"]
        if name == "parcels" or name not in state.tables:
            raise NotFoundError(f"result layer {name!r} not found (see GET /results)",
                                layer=name)
        tab = state.tables[name]
        q = request.query_params
        _no_unknown(q, ("crs", *tab.index))
        out_crs = parse_crs(q.get("crs"))
        keys = [k for k in tab.index if k in q]
        if len(keys) > 1:
            raise RequestError(keys[1], "filter by one id column at a time")
        if keys:
            pos = tab.lookup(keys[0], q[keys[0]])
            if pos is None:
                raise NotFoundError(f"no {name} row with {keys[0]} {q[keys[0]]!r}",
                                    layer=name, feature=q[keys[0]])
        else:
            pos = tab.all_positions()
        return await run_in_threadpool(lambda: _geo(tab.collection(pos, out_crs)))

    # -- maps ---------------------------------------------------------------

    @app.get("/maps", summary="The generated maps that can be fetched")
    async def maps_index() -> Response:
        d = state.out_dir
        names = sorted(p.name for p in d.iterdir()
                       if p.is_file() and p.suffix in _MAP_TYPES) if d and d.is_dir() else []
        return _json({"maps": names})

    @app.get("/maps/{name}", summary="A generated map page (from the output folder)")
    async def map_file(name: str) -> Response:
        path = _map_path(state.out_dir, name)
        return FileResponse(path, media_type=_MAP_TYPES[path.suffix])

    return app


# ---------------------------------------------------------------------------
# Glue between request geometry and the library
# ---------------------------------------------------------------------------


def _map_path(out_dir: Path | None, name: str) -> Path:
    """The file ``name`` inside ``out_dir``; 404 for anything else (no traversal)."""
    if out_dir is None:
        raise NotFoundError("no map folder configured", feature=name)
    if not _MAP_NAME.match(name) or ".." in name:
        raise NotFoundError(f"map {name!r} not found", feature=name)
    if Path(name).suffix == "":
        name += ".html"
    root = out_dir.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_file() or path.suffix not in _MAP_TYPES:
        raise NotFoundError(f"map {name!r} not found", path=None, feature=name)
    return path


def _point(value: Any, crs_text: str | None, work_crs: CRS) -> Any:
    from shapely.geometry import Point

    if isinstance(value, list):
        if len(value) != 2:
            raise RequestError("point", "expected [x, y]")
        geom = Point(value)
        if not np.isfinite(value).all():
            raise RequestError("point", "coordinates must be finite numbers")
    else:
        geoms, _, _ = parse_features(value, field="point")
        geom = geoms[0]
        if geom.geom_type != "Point":
            raise RequestError("point", f"expected a Point, got a {geom.geom_type}")
    return to_working_crs([geom], parse_crs(crs_text, "crs"), work_crs, "point").iloc[0]


def _layer_geojson(gdf: pd.DataFrame, crs: CRS) -> bytes:
    from ._service_geojson import feature_fragments

    if isinstance(gdf, gpd.GeoDataFrame) and gdf.crs is not None and len(gdf):
        gdf = gdf.to_crs(crs)
    return feature_collection(feature_fragments(gdf), crs)


def _as_parcels(town: Any, geoms: gpd.GeoSeries, ids: list[str]) -> gpd.GeoDataFrame:
    """Request geometry as a canonical parcels layer (polygons) in the working CRS."""
    from .schema import column_names

    cols = {c: [None] * len(ids) for c in column_names("parcels")}
    cols["parcel_id"] = ids
    return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries(geoms.values, crs=town.crs),
                            crs=town.crs)


def _as_buildings(town: Any, geoms: gpd.GeoSeries, ids: list[str]) -> gpd.GeoDataFrame:
    """Request geometry as a canonical buildings layer in the working CRS."""
    from .schema import column_names

    cols = {c: [None] * len(ids) for c in column_names("buildings")}
    cols["building_id"] = ids
    return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries(geoms.values, crs=town.crs),
                            crs=town.crs)



def _sub_town(town: Any, **layers: gpd.GeoDataFrame) -> Any:
    """A copy of ``town`` whose parcels/buildings are replaced by request geometry.

    The mains, manholes, profile and settings are shared (read-only); the copy
    has its own report, so per-request findings never touch the loaded town.
    """
    import dataclasses

    from .report import Report
    from .schema import column_names

    new = {k: v for k, v in town.layers.items() if k not in ("parcels", "buildings",
                                                            "laterals", "users")}
    empty = gpd.GeoDataFrame({c: pd.Series([], dtype=object) for c in column_names("parcels")},
                             geometry=gpd.GeoSeries([], crs=town.crs), crs=town.crs)
    new["parcels"] = layers.get("parcels", empty)
    if "buildings" in layers:
        new["buildings"] = layers["buildings"]
    return dataclasses.replace(town, layers=new, report=Report())


def _parcel_trace(state: TownState, parcel: str, crs: CRS) -> bytes:
    """Downstream trace of a parcel from the precomputed tables.

    See :meth:`TownState.parcel_trace` for what it holds; this adds the
    ``connection`` and ``path`` FeatureCollections in ``crs``.
    """
    found = state.parcel_trace(parcel)
    if found is None:
        raise NotFoundError(f"parcel {parcel!r} not found", layer="parcels", feature=parcel)
    head, pos, ppos = found
    cm = state.table("control_manholes")
    paths = state.table("control_paths")
    return (head[:-1] + b',"connection":' + cm.collection(pos, crs)
            + b',"path":' + paths.collection(ppos, crs) + b"}")
