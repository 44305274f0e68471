"""The service's OpenAPI description, as the routes really answer.

FastAPI describes what it sees in the route signatures; much of the service
reads its query string by hand, decodes bodies itself and checks what a
signature cannot say (one of two fields, a point inside the town). This module
completes FastAPI's document (:func:`install_openapi`):

- every error response with the status each route can really give (table
  :data:`ERRORS`) and one body schema, ``Error`` (``detail``, and ``field``,
  ``errors``, ``limit``, ``limit_name`` where they apply);
- the media type and shape of every success response;
- the parameters the hand-read routes take, with the values this town accepts:
  the CRSs it serves (``crs``), its collections and result layers, each result
  layer's own id columns (one path per layer, ``/results/obligations`` ...),
  the limits of ``limit`` and ``offset``, and points inside its network for the
  point trace and the what-if;
- request bodies that name their alternatives (``oneOf``: ``parcel_ids`` or
  ``features``) and GeoJSON of the geometry types taken.

The document is built per town, since the CRSs, layers and extent are the
town's. Other values are accepted too where a description says so (any CRS
pyproj knows as ``crs``); the enumerations are the ones every client can rely on.
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pyproj import CRS

from ..serialize import crs_name
from .geojson import town_box
from .inputs import GEOJSON, JSON, MAP_TYPES, MAX_FLOW_GPD
from .limits import ServiceLimits
from .state import TownState

REF = "#/components/schemas/"

#: The error body of every error response.
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string", "description": "what is wrong, in one sentence"},
        "field": {"type": "string", "description": "the request field concerned "
                                                   "(`crs`, `parcel_ids[3]`, `body`, `path` ...)"},
        "errors": {"type": "array", "description": "every field found wrong (validation)",
                   "items": {"type": "object", "required": ["field", "message"],
                             "properties": {"field": {"type": "string"},
                                            "message": {"type": "string"}}}},
        "limit": {"type": "number", "description": "the value of the limit exceeded"},
        "limit_name": {"type": "string", "description": "its name in ServiceLimits "
                                                        "(`max_batch` ...)"},
    },
}

_WHY = {
    400: "a query parameter the OGC API does not take, or a bad value (limit, offset over "
         "their caps, bbox, a CRS not offered)",
    404: "an unknown id, layer, collection, feature, map or tile",
    413: "a body over max_body_bytes, a batch over max_batch, geometry over max_vertices",
    415: "a body that is not JSON (Content-Type), or not UTF-8",
    422: "a malformed parameter or body field (named in `field`)",
    503: "the analysis this answer needs could not be computed for this town, or a map "
         "file is damaged",
}
_POST = (413, 415, 422, 503)
#: (method, path) -> the error statuses it can answer.
ERRORS: dict[tuple[str, str], tuple[int, ...]] = {
    ("get", "/parcels/{parcel_id}/obligation"): (404, 422, 503),
    ("post", "/obligations"): _POST,
    ("get", "/trace/downstream"): (404, 422, 503),
    ("get", "/manholes/{manhole_id}/upstream"): (404, 422, 503),
    ("post", "/control-manholes"): _POST,
    ("get", "/pipes"): (404, 422, 503),
    ("get", "/plants"): (422, 503),
    ("post", "/whatif"): (404, *_POST),
    ("get", "/results/{layer}"): (404, 422, 503),
    ("get", "/maps/{name}"): (404, 503),
    ("get", "/"): (400,),
    ("get", "/collections"): (400,),
    ("get", "/collections/{collectionId}"): (400, 404),
    ("get", "/collections/{collectionId}/items"): (400, 404),
    ("get", "/collections/{collectionId}/items/{featureId}"): (400, 404),
    ("get", "/maps/tiles/{archive}"): (404, 503),
    ("get", "/collections/{collectionId}/styles/gisnet"): (404,),
    ("get", "/tiles/{layer}/{z}/{x}/{y}.mvt"): (404, 422, 503),
}

_OBJECT = {"type": "object"}
_FEATURE_OUT = {"type": "object", "required": ["type", "geometry", "properties"],
                "properties": {"type": {"type": "string", "enum": ["Feature"]},
                               "geometry": {"type": ["object", "null"]},
                               "properties": {"type": ["object", "null"]}}}
_COLLECTION_OUT = {"type": "object", "required": ["type", "features"],
                   "properties": {"type": {"type": "string", "enum": ["FeatureCollection"]},
                                  "features": {"type": "array",
                                               "items": {"$ref": REF + "Feature"}}}}
#: (method, path) -> media type -> schema of the 200 answer (JSON ``{}`` elsewhere).
SUCCESS: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/parcels/{parcel_id}/obligation"): {GEOJSON: {"$ref": REF + "FeatureCollection"}},
    ("post", "/obligations"): {GEOJSON: {"$ref": REF + "FeatureCollection"}},
    ("post", "/control-manholes"): {GEOJSON: {"$ref": REF + "FeatureCollection"}},
    ("get", "/pipes"): {GEOJSON: {"$ref": REF + "FeatureCollection"}},
    ("get", "/plants"): {GEOJSON: {"$ref": REF + "FeatureCollection"}},
    ("get", "/results/{layer}"): {GEOJSON: {"$ref": REF + "FeatureCollection"}},
    ("get", "/trace/downstream"): {GEOJSON: _OBJECT, JSON: _OBJECT},
    ("get", "/collections/{collectionId}/items"): {GEOJSON: {"$ref": REF
                                                             + "FeatureCollection"}},
    ("get", "/collections/{collectionId}/items/{featureId}"): {GEOJSON: {"$ref": REF
                                                                         + "Feature"}},
    ("get", "/maps/{name}"): {t: {} for t in dict.fromkeys(MAP_TYPES.values())},
    ("get", "/collections/{collectionId}/styles/gisnet"): {
        "application/vnd.qgis.qml+xml": {"type": "string"}},
    ("get", "/maps/tiles/{archive}"): {"application/vnd.pmtiles": {}},
    ("get", "/tiles/{layer}/{z}/{x}/{y}.mvt"): {"application/vnd.mapbox-vector-tile": {}},
}


# ---------------------------------------------------------------------------
# the town's CRSs and extent
# ---------------------------------------------------------------------------


def _lonlat_crs() -> list[str]:
    return ["EPSG:4326", "OGC:CRS84"]


def town_crs_names(state: TownState) -> list[str]:
    """The CRSs named in the document's ``crs`` enumerations: EPSG:4326, CRS84, the
    working CRS (when it has a code), EPSG:3857."""
    names = _lonlat_crs()
    work = crs_name(CRS.from_user_input(state.town.crs))
    if ":" in work and work not in names:
        names.append(work)
    names.append("EPSG:3857")
    return list(dict.fromkeys(names))


def _town_box(state: TownState, crs_text: str) -> tuple[float, float, float, float]:
    """Where request coordinates in ``crs_text`` may lie (x, y order): the box the
    service checks them against (:func:`~gisnet.service.geojson.town_box`)."""
    return town_box(state.town, CRS.from_user_input(crs_text))


def _position(box: tuple[float, float, float, float]) -> dict[str, Any]:
    x0, y0, x1, y1 = box
    return {"type": "array", "minItems": 2, "maxItems": 2,
            "prefixItems": [{"type": "number", "minimum": x0, "maximum": x1},
                            {"type": "number", "minimum": y0, "maximum": y1}]}


def geojson_schema(box: tuple[float, float, float, float], types: tuple[str, ...],
                   limits: ServiceLimits) -> dict[str, Any]:
    """GeoJSON of ``types`` (``Point``, ``Polygon``, ``MultiPolygon``) with positions in
    ``box``: a geometry, a Feature, a FeatureCollection or a list of them (at least one,
    at most ``max_batch``; the vertices are bounded by ``max_vertices``, 413 beyond)."""
    pos = _position(box)
    ring = {"type": "array", "minItems": 4, "items": pos}
    coords = {"Point": pos,
              "Polygon": {"type": "array", "minItems": 1, "items": ring},
              "MultiPolygon": {"type": "array", "minItems": 1,
                               "items": {"type": "array", "minItems": 1, "items": ring}}}
    geoms = [{"type": "object", "required": ["type", "coordinates"],
              "properties": {"type": {"type": "string", "enum": [t]},
                             "coordinates": coords[t]}} for t in types]
    geom = geoms[0] if len(geoms) == 1 else {"oneOf": geoms}
    feature = {"type": "object", "required": ["type", "geometry"],
               "properties": {"type": {"type": "string", "enum": ["Feature"]},
                              "id": {"type": ["string", "integer", "null"]},
                              "geometry": geom,
                              "properties": {"type": ["object", "null"]}}}
    fc = {"type": "object", "required": ["type", "features"],
          "properties": {"type": {"type": "string", "enum": ["FeatureCollection"]},
                         "features": {"type": "array", "minItems": 1,
                                      "maxItems": limits.max_batch, "items": feature}}}
    many = {"type": "array", "minItems": 1, "maxItems": limits.max_batch,
            "items": {"oneOf": [geom, feature]}}
    return {"oneOf": [geom, feature, fc, many]}


# ---------------------------------------------------------------------------
# parameters and bodies
# ---------------------------------------------------------------------------


def _crs_param(name: str, names: list[str], desc: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False,
            "description": desc + f"; one of {', '.join(names)} (any other CRS pyproj knows "
                                  "by code, PROJ string, WKT or PROJJSON is accepted too)",
            "schema": {"type": "string", "enum": names}}


def _trace_params(state: TownState, names: list[str]) -> list[dict[str, Any]]:
    """``GET /trace/downstream``: ``parcel``, or ``x`` and ``y`` inside the town in
    ``point_crs`` (else ``crs``), as one form-exploded object so the alternatives
    are stated."""
    crs_enum = {"type": "string", "enum": names}
    alts: list[dict[str, Any]] = [{
        "type": "object", "required": ["parcel"], "additionalProperties": False,
        "properties": {"parcel": {"type": "string", "description": "parcel id"},
                       "crs": crs_enum}}]
    for c in names:
        x0, y0, x1, y1 = _town_box(state, c)
        xy = {"x": {"type": "number", "minimum": x0, "maximum": x1},
              "y": {"type": "number", "minimum": y0, "maximum": y1}}
        lonlat = c in _lonlat_crs()
        alts.append({"type": "object", "required": ["x", "y"] if lonlat and c == "EPSG:4326"
                     else ["x", "y", "crs"], "additionalProperties": False,
                     "properties": {**xy, "crs": {"type": "string", "enum": [c]}}})
        alts.append({"type": "object", "required": ["x", "y", "point_crs"],
                     "additionalProperties": False,
                     "properties": {**xy, "point_crs": {"type": "string", "enum": [c]},
                                    "crs": crs_enum}})
    return [{"name": "trace", "in": "query", "required": True, "style": "form",
             "explode": True,
             "description": "`parcel=ID` (from the precomputed tables), or `x` and `y` "
                            "(easting/longitude, northing/latitude) of a point in the "
                            "town (the mains' extent and half a mile around it), in "
                            "`point_crs` if given, else in `crs` "
                            "(default EPSG:4326); `crs` is the CRS of the answer",
             "schema": {"anyOf": alts}}]


def _body_crs(c: str) -> dict[str, Any]:
    """A body's ``crs`` in the alternative for CRS ``c``; null stands for EPSG:4326."""
    if c == "EPSG:4326":
        return {"type": ["string", "null"], "enum": [c, None]}
    return {"type": "string", "enum": [c]}


def _body_schemas(state: TownState, names: list[str],
                  limits: ServiceLimits) -> dict[str, dict[str, Any]]:
    """The request bodies, with their alternatives and GeoJSON stated."""
    areas = ("Point", "Polygon", "MultiPolygon")
    ids = {"type": "array", "maxItems": limits.max_batch,
           "items": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}
    def with_features(types: tuple[str, ...], base: dict[str, Any]) -> list[dict[str, Any]]:
        alts = []
        for c in names:
            box = _town_box(state, c)
            alts.append({"type": "object", "required": ["features"]
                         + ([] if c == "EPSG:4326" else ["crs"]),
                         "additionalProperties": False,
                         "properties": {**base,
                                        "features": geojson_schema(box, types, limits),
                                        "crs": _body_crs(c)}})
        return alts

    obligations = {"oneOf": [
        {"type": "object", "required": ["parcel_ids"], "additionalProperties": False,
         "properties": {"parcel_ids": ids}},
        *with_features(areas, {})],
        "description": "`parcel_ids`, or `features` (GeoJSON points/polygons measured as "
                       "parcels) in `crs` (default EPSG:4326)"}
    control = {"oneOf": [
        *({"type": "object", "required": [k], "additionalProperties": False,
           "properties": {k: ids}} for k in ("parcel_ids", "building_ids", "user_ids")),
        *with_features(areas, {})],
        "description": "one of `parcel_ids`, `building_ids`, `user_ids`, or `features` "
                       "(GeoJSON buildings) in `crs` (default EPSG:4326)"}
    flow = {"flow_gpd": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_FLOW_GPD,
                         "description": "proposed average daily flow, gallons per day"},
            "industrial": {"type": "boolean", "default": False,
                           "description": "industrial wastewater (the approvals of the "
                                          "profile's `industrial` trigger)"},
            "preliminary_treatment": {
                "type": "boolean", "default": False,
                "description": "preliminary treatment is required (the approvals of the "
                               "profile's `preliminary_treatment` trigger: Poughkeepsie "
                               "§ 168-22.5G(4)(d), NYSDEC review of the plans)"},
            "cooling_water": {
                "type": "boolean", "default": False,
                "description": "the discharge includes industrial cooling water (the "
                               "approvals of the profile's `cooling_water` trigger: "
                               "Poughkeepsie § 168-22.2E, Town Board approval)"}}
    whatif_alts: list[dict[str, Any]] = [
        {"type": "object", "required": ["parcel_id", "flow_gpd"], "additionalProperties": False,
         "properties": {"parcel_id": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                        **flow}}]
    for c in names:
        box = _town_box(state, c)
        point = {"oneOf": [_position(box),
                           {"type": "object", "required": ["type", "coordinates"],
                            "additionalProperties": False,
                            "properties": {"type": {"type": "string", "enum": ["Point"]},
                                           "coordinates": _position(box)}}]}
        whatif_alts.append({"type": "object", "additionalProperties": False,
                            "required": ["point", "flow_gpd"]
                            + ([] if c == "EPSG:4326" else ["crs"]),
                            "properties": {"point": point, **flow,
                                           "crs": _body_crs(c)}})
    whatif = {"oneOf": whatif_alts,
              "description": "`parcel_id`, or `point` ([x, y] or a GeoJSON Point in the "
                             "town: the mains' extent and half a mile around it) in `crs` "
                             "(default EPSG:4326); "
                             "`flow_gpd`, and the flags `industrial`, "
                             "`preliminary_treatment` and `cooling_water`"}
    return {"ObligationsRequest": obligations, "ControlManholesRequest": control,
            "WhatIfRequest": whatif}


def _results_paths(doc: dict[str, Any], state: TownState, names: list[str]) -> None:
    """``/results/{layer}`` as one path per layer held, with the layer's id columns."""
    generic = doc["paths"].get("/results/{layer}", {}).get("get")
    if generic is None:
        return
    for name, tab in state.tables.items():
        if name == "parcels":
            continue
        op = copy.deepcopy(generic)
        op["operationId"] = f"result_layer_{name}"
        op["summary"] = f"The result layer {name}, whole or its rows with one id"
        op["parameters"] = [p for p in op["parameters"] if p["in"] != "path"] + [
            {"name": k, "in": "query", "required": False, "schema": {"type": "string"},
             "description": f"only the rows whose {k} is this (404 if none)"}
            for k in tab.index]
        doc["paths"][f"/results/{name}"] = {"get": op}


def _fix_parameters(op: dict[str, Any], key: tuple[str, str], state: TownState,
                    names: list[str], ogc_crs: list[str], collections: list[str]) -> None:
    params = []
    for p in op.get("parameters", []):
        name = p["name"]
        if key[1] == "/trace/downstream":
            continue
        if name in ("crs", "bbox-crs") and key[1].startswith("/collections"):
            p = {**p, "schema": {"type": "string", "enum": ogc_crs}}
        elif name == "crs":
            p = _crs_param("crs", names, "CRS of the answer's geometry (default EPSG:4326)")
        elif name == "collectionId":
            p = {**p, "schema": {"type": "string", "enum": collections}}
        elif name == "ID_COLUMN":
            continue  # one path per layer lists its id columns (_results_paths)
        elif name == "bbox":
            p = {**p, "schema": {"type": "array", "items": {"type": "number"},
                                 "anyOf": [{"minItems": 4, "maxItems": 4},
                                           {"minItems": 6, "maxItems": 6}]}}
        elif name == "f":
            p = {**p, "schema": {"type": "string", "enum": ["json"]}}
        params.append(p)
    if key[1] == "/trace/downstream":
        params = _trace_params(state, names)
    op["parameters"] = params


def _error(status: int) -> dict[str, Any]:
    return {"description": _WHY[status],
            "content": {JSON: {"schema": {"$ref": REF + "Error"}}}}


def build_openapi(app: FastAPI, state: TownState, limits: ServiceLimits) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``app`` serving ``state`` (see the module docstring)."""
    from .ogc import collections_of, crs_uri

    doc = get_openapi(title=app.title, version=app.version, description=app.description,
                      routes=app.routes)
    names = town_crs_names(state)
    colls = collections_of(state)
    ogc_crs = list(dict.fromkeys(crs_uri(c) for coll in colls.values()
                                 for c in coll.crs_list))
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for gone in ("HTTPValidationError", "ValidationError"):
        schemas.pop(gone, None)
    schemas["Error"] = ERROR_SCHEMA
    schemas["Feature"] = _FEATURE_OUT
    schemas["FeatureCollection"] = _COLLECTION_OUT
    schemas.update(_body_schemas(state, names, limits))
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            key = (method, path)
            _fix_parameters(op, key, state, names, ogc_crs, list(colls))
            ok = op.get("responses", {}).get("200", {"description": "the answer"})
            content = SUCCESS.get(key, {JSON: {}})
            ok["content"] = {t: {"schema": s} for t, s in content.items()}
            responses: dict[str, Any] = {"200": ok}
            if path == "/maps/tiles/{archive}":
                responses["206"] = {"description": "the byte range asked for (Range)",
                                    "content": {"application/vnd.pmtiles": {"schema": {}}}}
            for status in ERRORS.get(key, ()):
                responses[str(status)] = _error(status)
            op["responses"] = responses
    _results_paths(doc, state, names)
    return doc


def install_openapi(app: FastAPI, state: TownState, limits: ServiceLimits) -> None:
    """Make ``app.openapi()`` (``/openapi.json``, and ``/api`` in OpenAPI 3.0) return
    :func:`build_openapi`'s document, built once."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, state, limits)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
