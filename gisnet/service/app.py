"""The FastAPI application: middleware, error handlers and the route groups."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .. import __version__
from ..errors import GisnetError
from ..serialize import dumps
from .body import JSONBodyRoute
from .docs import add_docs_routes
from .errors import LimitError, TooLargeError, http_status, public_message
from .inputs import JSON
from .limits import BodyLimitMiddleware, ServiceLimits
from .ogc import add_ogc_routes
from .openapi import install_openapi
from .routes import (
    add_capacity_routes,
    add_obligation_routes,
    add_result_routes,
    add_town_routes,
    add_tracing_routes,
)
from .state import TownState
from .tiles import add_tile_routes

log = logging.getLogger("gisnet.service")

_UNION_TAGS = {"str", "int", "float", "bool", "list", "dict", "none"}
#: Most fields a validation error lists (a batch of 20,000 bad ids names the first 100).
MAX_ERRORS_LISTED = 100


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
        errors: list[dict[str, str]] = []
        seen: set[str] = set()
        for e in exc.errors():
            f = _field_name(tuple(e.get("loc", ())))
            if f in seen:  # one per field (unions)
                continue
            msg = e.get("msg", "invalid")
            if e.get("type") == "json_invalid":
                f, msg = "body", f"malformed JSON ({e.get('ctx', {}).get('error', msg)})"
            if e.get("type") == "extra_forbidden":
                msg = "unknown field"
            seen.add(f)
            errors.append({"field": f, "message": msg})
            if len(errors) == MAX_ERRORS_LISTED:
                break
        first = errors[0] if errors else {"field": "request", "message": "invalid"}
        body = {"detail": f"{first['field']}: {first['message']}", "field": first["field"],
                "errors": errors}
        return Response(dumps(body), status_code=422, media_type=JSON)

    @app.exception_handler(GisnetError)
    async def _gisnet(request: Request, exc: GisnetError) -> Response:
        body: dict[str, Any] = {"detail": public_message(exc)}
        fld = getattr(exc, "field", None)
        if fld:
            body["field"] = fld
        if isinstance(exc, (TooLargeError, LimitError)):
            body["limit"] = exc.limit
            body["limit_name"] = exc.limit_name
        return Response(dumps(body), status_code=http_status(exc), media_type=JSON)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no endpoint at {request.url.path} (see /docs)"
        elif exc.status_code == 405 and detail == "Method Not Allowed":
            detail = f"method {request.method} not allowed on {request.url.path}"
        body: dict[str, Any] = {"detail": detail}
        fld = {404: "path", 405: "method", 413: "body"}.get(exc.status_code)
        if fld:
            body["field"] = fld
        return Response(dumps(body), status_code=exc.status_code, media_type=JSON,
                        headers=getattr(exc, "headers", None))

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, exc: ClientDisconnect) -> Response:
        # the client went away (or was cut off by a read deadline) mid-body: nobody
        # reads this answer, and it is not a server error
        return Response(b"", status_code=499)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:  # pragma: no cover
        log.exception("internal error answering %s %s", request.method, request.url.path)
        return Response(dumps({"detail": f"internal error ({exc.__class__.__name__}); "
                                         "see the server log"}),
                        status_code=500, media_type=JSON)


#: Base URL of the links the service writes when none is configured: the address
#: ``gisnet serve`` listens on by default.
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def base_url_of(text: str) -> str:
    """A base URL for the service's links, checked: ``http(s)://host[:port][/path]``
    without query or fragment, returned without a trailing slash.

    Raises
    ------
    gisnet.errors.ConfigError
        For anything else.
    """
    from urllib.parse import urlsplit

    from ..errors import ConfigError

    try:
        u = urlsplit(text.strip())
        u.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError as exc:
        raise ConfigError(f"base URL {text!r} is not a URL ({exc})") from None
    if u.scheme not in ("http", "https") or not u.hostname or u.query or u.fragment \
            or u.username or u.password:
        raise ConfigError(f"base URL {text!r} must be http(s)://host[:port][/path], without "
                          "credentials, query or fragment")
    return text.strip().rstrip("/")


def create_app(state: TownState, limits: ServiceLimits | None = None, *,
               base_url: str | None = None) -> FastAPI:
    """The FastAPI application answering from ``state``.

    Parameters
    ----------
    state
        The loaded town and its results (read-only from here on).
    limits
        Request limits (:class:`~gisnet.service.limits.ServiceLimits`; its
        defaults: 16 MiB bodies, 20,000 items, 100,000 vertices, JSON 32 levels
        deep). Its read deadlines are enforced by the server
        (:func:`gisnet.service.server.make_server`), not by the application.
    base_url
        The URL clients reach the service at (``https://gis.example.gov/sewer``):
        every link the service writes (the OGC API's ``self``, ``next``,
        ``items`` ...) starts with it, whatever ``Host`` header a request
        carries. Default :data:`DEFAULT_BASE_URL`; ``gisnet serve`` passes
        ``--base-url``, else its listening address.

    Returns
    -------
    fastapi.FastAPI
        OpenAPI description at ``/openapi.json``, docs at ``/docs`` (its
        scripts served by the service itself, no CDN).
    """
    limits = limits or ServiceLimits()
    app = FastAPI(
        title="gisnet",
        version=__version__,
        description=("Sewer-network answers for one loaded town: connection obligations, "
                     "control manholes and traces, pipe and plant capacity, what-if. "
                     "Geometry is GeoJSON in EPSG:4326 unless `crs` says otherwise; "
                     "columns and units are those of the results GeoPackage."),
        docs_url=None, redoc_url=None,  # served without a CDN by add_docs_routes
    )
    app.state.gisnet = state
    app.state.limits = limits
    app.state.base_url = base_url_of(base_url or DEFAULT_BASE_URL)
    app.router.route_class = JSONBodyRoute  # JSON bodies decoded by gisnet (body.py)
    app.add_middleware(BodyLimitMiddleware, max_bytes=limits.max_body_bytes)
    if limits.cors_origins:  # a town's web viewer on another origin
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(limits.cors_origins),
                           allow_methods=["GET", "POST"], allow_headers=["Content-Type"])
    _install_error_handlers(app)
    add_docs_routes(app)
    for add in (add_town_routes, add_obligation_routes, add_tracing_routes,
                add_capacity_routes, add_result_routes, add_ogc_routes):
        add(app, state, limits)
    add_tile_routes(app, state.out_dir)  # tiled map pages (gisnet.service.tiles)
    install_openapi(app, state, limits)  # every status, error body and parameter
    return app
