"""The routes of the HTTP service, by group: town, obligations, tracing, capacity,
result layers and maps. Each ``add_*`` registers its group on the app.

The two single-parcel lookups read their query string directly: FastAPI's
per-request parameter machinery costs more than the lookup itself. Their
parameters are declared for the OpenAPI description by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from fastapi import FastAPI, Query, Request
from fastapi.responses import Response
from pyproj import CRS
from shapely.geometry import Point
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..errors import ConfigError
from ..serialize import crs_name, dumps, to_geojson, to_jsonable
from .errors import RequestError, UnknownIdError
from .geojson import check_in_town, parse_crs, to_working_crs
from .inputs import (
    CRS_PARAM,
    GEOJSON,
    JSON,
    MAP_TYPES,
    PATH_PARCEL,
    ControlManholesRequest,
    ObligationsRequest,
    WhatIfRequest,
    as_buildings,
    as_parcels,
    ids_of,
    input_points,
    map_path,
    map_response,
    no_unknown,
    point_of,
    q_float,
    query_param,
    sub_town,
)
from .limits import ServiceLimits, check_batch
from .ogc import LIMIT_MAX, OFFSET_MAX, whole_number
from .state import TownState

CRS_QUERY = Query(None, description="CRS of the response geometry (default EPSG:4326), "
                                    "e.g. EPSG:2260")


def geo(content: bytes) -> Response:
    """A GeoJSON response."""
    return Response(content, media_type=GEOJSON)


def json_response(obj: Any) -> Response:
    """A JSON response (see :func:`gisnet.serialize.dumps`)."""
    return Response(dumps(obj), media_type=JSON)


# ---------------------------------------------------------------------------
# town
# ---------------------------------------------------------------------------


def add_town_routes(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """``GET /health``, ``GET /town``."""
    town = state.town

    @app.get("/health", summary="Liveness and the loaded town")
    async def health() -> Response:
        return json_response({"status": "ok", "town": town.name, "version": __version__})

    @app.get("/town", summary="Layers, counts, profile and data-quality summary")
    async def town_info() -> Response:
        info = state.summary()
        info["limits"] = limits.public()
        return json_response(info)


# ---------------------------------------------------------------------------
# obligations
# ---------------------------------------------------------------------------


def add_obligation_routes(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """``GET /parcels``, ``GET /parcels/{id}/obligation``, ``POST /obligations``."""
    town = state.town

    @app.get("/parcels", summary="Every parcel id of the town, in layer order")
    async def parcel_ids() -> Response:
        tab = state.table("parcels")
        ids = tab.frame["parcel_id"].astype(object).where(tab.frame["parcel_id"].notna(), None)
        return json_response({"count": len(ids), "parcel_ids": ids.tolist()})

    @app.get("/parcels/{parcel_id:path}/obligation", summary="One parcel's obligation",
             response_class=Response,
             openapi_extra={"parameters": [PATH_PARCEL, CRS_PARAM]})
    async def parcel_obligation(request: Request) -> Response:
        parcel_id = request.path_params["parcel_id"]
        out_crs = parse_crs(request.query_params.get("crs"))
        tab = state.table("obligations")
        pos = tab.lookup("parcel_id", parcel_id)
        if pos is None:
            raise UnknownIdError("parcel_id", f"parcel {parcel_id!r} not found", layer="parcels",
                                 feature=parcel_id)
        return geo(tab.collection(pos, out_crs))

    @app.post("/obligations", summary="Obligations of many parcels, or of given geometry",
              response_class=Response)
    def obligations(body: ObligationsRequest, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        if (body.parcel_ids is None) == (body.features is None):
            raise RequestError("parcel_ids", "give either 'parcel_ids' or 'features'")
        if body.parcel_ids is not None:
            ids = ids_of(body.parcel_ids)
            check_batch(len(ids), limits, "parcel_ids")
            tab = state.table("obligations")
            pos, missing = tab.lookup_many("parcel_id", ids)
            return geo(tab.collection(pos, out_crs, {"not_found": missing}))
        state.require("obligations")
        state.require("obligations_of_geometry")  # 503 when the town's layers are not held
        geoms, ids, _props = input_points(town, body.features, body.crs, limits)
        from ..obligations import compute_obligations

        res = compute_obligations(town, parcels=as_parcels(town, geoms, ids))
        return geo(to_geojson(res["obligations"], out_crs))


# ---------------------------------------------------------------------------
# tracing
# ---------------------------------------------------------------------------


def parcel_trace(state: TownState, parcel: str, crs: CRS) -> bytes:
    """Downstream trace of a parcel from the precomputed tables.

    See :meth:`TownState.parcel_trace` for what it holds; this adds the
    ``connection`` and ``path`` FeatureCollections in ``crs``.
    """
    found = state.parcel_trace(parcel)
    if found is None:
        raise UnknownIdError("parcel", f"parcel {parcel!r} not found", layer="parcels",
                             feature=parcel)
    head, pos, ppos = found
    cm = state.table("control_manholes")
    paths = state.table("control_paths")
    return (head[:-1] + b',"connection":' + cm.collection(pos, crs)
            + b',"path":' + paths.collection(ppos, crs) + b"}")


_TRACE_PARAMS = [
    query_param("parcel", "parcel id (answered from the precomputed tables)"),
    query_param("x", "x (easting or longitude) in `crs`", "number"),
    query_param("y", "y (northing or latitude) in `crs`", "number"),
    query_param("crs", "CRS of x, y and of the response geometry (default EPSG:4326), "
                       "e.g. EPSG:2260"),
    query_param("point_crs", "CRS of x, y when it differs from `crs`"),
]


def add_tracing_routes(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """``GET /trace/downstream``, ``GET /manholes/{id}/upstream``, ``POST /control-manholes``."""
    from .. import tracing

    town = state.town
    work_crs = CRS.from_user_input(town.crs)

    @app.get("/trace/downstream", summary="Connection point, control manhole, plant and path "
                                          "downstream of a parcel or a point",
             response_class=Response, openapi_extra={"parameters": _TRACE_PARAMS})
    async def trace_downstream(request: Request) -> Response:
        q = request.query_params
        no_unknown(q, ("parcel", "x", "y", "point_crs", "crs"))
        out_crs = parse_crs(q.get("crs"))
        state.require("control")
        parcel = q.get("parcel")
        x, y = q_float(q, "x"), q_float(q, "y")
        if parcel is not None:
            if x is not None or y is not None:
                raise RequestError("parcel", "give either 'parcel' or 'x' and 'y', not both")
            return geo(parcel_trace(state, parcel, out_crs))
        if x is None or y is None:
            raise RequestError("parcel" if x is None and y is None else ("y" if y is None
                                                                          else "x"),
                               "give 'parcel', or both 'x' and 'y'")
        in_crs = (parse_crs(q.get("point_crs"), "point_crs") if "point_crs" in q
                  else out_crs)

        def run() -> Response:
            pt = to_working_crs([Point(x, y)], in_crs, work_crs, "x").iloc[0]
            check_in_town(np.array([[x, y]]), in_crs, town, "x")
            try:
                res = tracing.trace_downstream(town, state.G, point=(pt.x, pt.y),
                                               index=state.index)
            except ConfigError as exc:  # the library's word on the point (off the network)
                raise RequestError("x", exc.message) from None
            return json_response({"query": {"x": x, "y": y, "point_crs": crs_name(in_crs)},
                                  **to_jsonable(res, crs=out_crs, working_crs=work_crs)})

        return await run_in_threadpool(run)

    @app.get("/manholes/{manhole_id:path}/upstream",
             summary="Everything that drains to a manhole: pipes, parcels, buildings, users",
             response_class=Response)
    def manhole_upstream(manhole_id: str, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        state.require("control")
        state.require("upstream_trace")  # 503 when the town's layers are not held
        if manhole_id not in state.G:
            raise UnknownIdError("manhole_id", f"manhole {manhole_id!r} not found",
                                 layer="manholes", feature=manhole_id)
        res = tracing.trace_upstream(town, state.G, manhole_id, points=state.points,
                                     index=state.index)
        return json_response({"manhole_id": manhole_id,
                              **to_jsonable(res, crs=out_crs, working_crs=work_crs)})

    @app.post("/control-manholes", summary="Control manholes of many buildings/parcels/users, "
                                           "or of given points", response_class=Response)
    def control_manholes(body: ControlManholesRequest, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        state.require("control")
        given = [(k, v) for k, v in (("parcel_ids", body.parcel_ids),
                                     ("building_ids", body.building_ids),
                                     ("user_ids", body.user_ids),
                                     ("features", body.features)) if v is not None]
        if len(given) != 1:
            raise RequestError("parcel_ids", "give exactly one of 'parcel_ids', "
                                             "'building_ids', 'user_ids' or 'features'")
        key, value = given[0]
        if key != "features":
            ids = ids_of(value)
            check_batch(len(ids), limits, key)
            tab = state.table("control_manholes")
            pos, missing = tab.lookup_many(key[:-1], ids)
            return geo(tab.collection(pos, out_crs, {"not_found": missing}))
        state.require("control_manholes_of_geometry")  # 503 without the town's layers
        geoms, ids, _props = input_points(town, value, body.crs, limits)
        sub = sub_town(town, buildings=as_buildings(town, geoms, ids))
        pts = tracing.connection_points(sub, state.G, index=state.index)
        res = tracing.control_manholes(sub, state.G, points=pts, index=state.index)
        return geo(to_geojson(res["control_manholes"], out_crs))


# ---------------------------------------------------------------------------
# capacity
# ---------------------------------------------------------------------------


def add_capacity_routes(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """``GET /pipes``, ``GET /plants``, ``POST /whatif``."""
    town = state.town
    work_crs = CRS.from_user_input(town.crs)

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
                raise UnknownIdError("main_id", f"main {main_id!r} not found", layer="mains",
                                     feature=main_id)
        elif min_utilization is not None:
            u = pd.to_numeric(tab.frame["utilization"], errors="coerce").to_numpy(dtype=float)
            pos = np.flatnonzero(u >= min_utilization)  # NaN (no capacity) never passes
        else:
            pos = tab.all_positions()
        return geo(tab.collection(pos, out_crs))

    @app.get("/plants", summary="Treatment plants: flow against design flow (layer plants)",
             response_class=Response)
    async def plants(crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        tab = state.table("plants")
        return geo(tab.collection(tab.all_positions(), out_crs))

    @app.post("/whatif", summary="What one proposed connection changes downstream",
              response_class=Response)
    def whatif(body: WhatIfRequest, crs: str | None = CRS_QUERY) -> Response:
        out_crs = parse_crs(crs)
        state.require("capacity")
        if (body.parcel_id is None) == (body.point is None):
            raise RequestError("parcel_id", "give either 'parcel_id' or 'point'")
        from ..capacity import whatif as _whatif

        kwargs: dict[str, Any] = {"flow_gpd": body.flow_gpd, "industrial": body.industrial,
                                  "preliminary_treatment": body.preliminary_treatment,
                                  "cooling_water": body.cooling_water}
        if body.parcel_id is not None:
            pid = str(body.parcel_id)
            if not state.parcel_known(pid):
                raise UnknownIdError("parcel_id", f"parcel {pid!r} not found",
                                     layer="parcels", feature=pid)
            kwargs["parcel_id"] = pid
        else:
            pt = point_of(body.point, body.crs, town)
            kwargs["point"] = (pt.x, pt.y)
        res = _whatif(town, state.G, state.capacity, **kwargs)
        data = to_jsonable(res.to_dict(), crs=out_crs, working_crs=work_crs)
        # the pipes with their geometry, and the tap in the response CRS
        data["pipes"] = to_jsonable(res.pipes, crs=out_crs, working_crs=work_crs)
        conn = data.get("connection") or {}
        if conn.get("x") is not None and conn.get("y") is not None:
            g = to_jsonable(Point(conn["x"], conn["y"]), crs=out_crs, working_crs=work_crs)
            conn["x"], conn["y"] = g["coordinates"]
            conn["crs"] = crs_name(out_crs)
        return json_response(data)


# ---------------------------------------------------------------------------
# any result layer, and the maps
# ---------------------------------------------------------------------------

_LAYER_PARAMS = [
    {"name": "layer", "in": "path", "required": True, "schema": {"type": "string"},
     "description": "layer name, e.g. sampling_plan, frontage, quality"},
    query_param("ID_COLUMN", "rows whose id column (one of the layer's `keys` in "
                             "GET /results, e.g. parcel_id) equals this value"),
    {**query_param("limit", "at most this many rows, 1 to 10,000 (more is a 422 naming the "
                            "cap), with numberMatched/numberReturned; "
                            "/collections/{layer}/items pages with next links"),
     "schema": {"type": "integer", "minimum": 1, "maximum": 10_000}},
    {**query_param("offset", "rows to skip (with limit), 0 to 10,000,000 (more is a 422)"),
     "schema": {"type": "integer", "minimum": 0, "maximum": 10_000_000}},
    CRS_PARAM,
]




def add_result_routes(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """``GET /results``, ``GET /results/{layer}``, ``GET /maps``, ``GET /maps/{name}``."""

    @app.get("/results", summary="The result layers held (as in gisnet-results.gpkg)")
    async def results_index() -> Response:
        return json_response({"layers": {name: {"features": len(t), "keys": list(t.index)}
                                         for name, t in state.tables.items()
                                         if name != "parcels"}})

    @app.get("/results/{layer}", summary="A whole result layer, or its rows with a given id",
             response_class=Response, openapi_extra={"parameters": _LAYER_PARAMS})
    async def result_layer(request: Request) -> Response:
        name = request.path_params["layer"]
        if name in state.unavailable:
            state.table(name)  # a layer this town has no answer for: 503 with the reason
        if name == "parcels" or name not in state.tables:
            raise UnknownIdError("layer", f"result layer {name!r} not found (see GET /results)",
                                 layer=name)
        tab = state.tables[name]
        q = request.query_params
        no_unknown(q, ("crs", "limit", "offset", *tab.index))
        out_crs = parse_crs(q.get("crs"))
        pos = tab.all_positions()
        for k in (k for k in tab.index if k in q):  # every id given: rows with all of them
            found = tab.lookup(k, q[k])
            if found is None:
                raise UnknownIdError(k, f"no {name} row with {k} {q[k]!r}", layer=name,
                                     feature=q[k])
            pos = np.intersect1d(pos, found)
        page, extra = pos, None
        if "limit" in q or "offset" in q:  # a page; /collections/{layer}/items has links
            lim = whole_number(q, "limit", min(len(pos), LIMIT_MAX) or 1, 1, LIMIT_MAX,
                               RequestError)
            off = whole_number(q, "offset", 0, 0, OFFSET_MAX, RequestError)
            page = pos[off:off + lim]
            extra = {"numberMatched": len(pos), "numberReturned": len(page)}
        link = {"Link": f'<{request.app.state.base_url}/collections/{name}/items>; '
                        'rel="alternate"; type="application/geo+json"'}
        return await run_in_threadpool(
            lambda: Response(tab.collection(page, out_crs, extra), media_type=GEOJSON,
                             headers=link))

    @app.get("/maps", summary="The generated maps that can be fetched")
    async def maps_index() -> Response:
        d = state.out_dir
        names = sorted(p.name for p in d.iterdir()
                       if p.is_file() and p.suffix in MAP_TYPES) if d and d.is_dir() else []
        return json_response({"maps": names})

    @app.get("/maps/{name}", summary="A generated map page (from the output folder)")
    async def map_file(name: str) -> Response:
        return map_response(map_path(state.out_dir, name))
