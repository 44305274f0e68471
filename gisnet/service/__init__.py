"""The HTTP service: one process loads a town once and answers from memory.

``gisnet serve`` builds a :class:`TownState` (the town and every result of
:func:`gisnet.pipeline.analyse`, the same sequence ``gisnet run`` runs) and
serves it with FastAPI on uvicorn. The state is read-only after loading, so
concurrent requests are safe.

Single-id lookups (``GET /parcels/{id}/obligation``, ``GET
/trace/downstream?parcel=``) are dictionary lookups into the precomputed
tables, whose rows were serialized to GeoJSON (EPSG:4326) at startup; a
response is a join of byte strings. Questions about arbitrary geometry (a
point, a polygon, a what-if) call the library per request.

Responses are GeoJSON in EPSG:4326 unless ``?crs=`` names another CRS; feature
properties are the columns of the results GeoPackage layer of the same name,
with the same units (``distance_ft``, ``flow_gpd`` ...). Both are encoded by
:mod:`gisnet.serialize`.

Errors are JSON ``{"detail": ..., "field": ...}`` and never a traceback: an
unknown id is 404 naming the parameter, a malformed parameter or body 422
naming the field, a body that is not JSON 415, a body over
``max_body_bytes``, a batch over ``max_batch`` items or geometry over
``max_vertices`` vertices 413 naming the limit, an analysis the town cannot
support (e.g. no plants) 503. Slow clients get 408 from the server
(docs/reliability.md lists every hostile request and its answer).

Modules: :mod:`~gisnet.service.state` (the town state),
:mod:`~gisnet.service.tables` (indexed, pre-serialized result layers),
:mod:`~gisnet.service.app` and :mod:`~gisnet.service.routes` (the application
and its route groups), :mod:`~gisnet.service.body` (JSON bodies, decoded and
checked), :mod:`~gisnet.service.inputs` and :mod:`~gisnet.service.geojson`
(what requests send), :mod:`~gisnet.service.limits` and
:mod:`~gisnet.service.errors`, :mod:`~gisnet.service.server` (uvicorn with
read deadlines, for ``gisnet serve``), :mod:`~gisnet.service.openapi` (the
OpenAPI document: every status, one error schema, the town's CRSs and extent).
"""

from __future__ import annotations

from ..extras import needs_extra

with needs_extra("service", "the HTTP service (gisnet serve)"):
    from .app import create_app
    from .errors import (
        LimitError,
        RequestError,
        ServiceUnavailable,
        TooLargeError,
        UnknownIdError,
        UnsupportedMediaType,
    )
    from .inputs import GEOJSON, JSON
    from .limits import ServiceLimits
    from .state import TownState
    from .tables import SERVED_EAGERLY, TABLE_KEYS, ResultTable

__all__ = [
    "GEOJSON",
    "JSON",
    "SERVED_EAGERLY",
    "TABLE_KEYS",
    "LimitError",
    "RequestError",
    "ResultTable",
    "ServiceLimits",
    "ServiceUnavailable",
    "TooLargeError",
    "TownState",
    "UnknownIdError",
    "UnsupportedMediaType",
    "create_app",
]
