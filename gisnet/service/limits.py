"""Request limits of the HTTP service.

What one request may cost is bounded before any analysis runs: the body's
bytes (413, checked on ``Content-Length`` and while streaming), its JSON
nesting depth (422), the ids or features in a batch (413) and the vertices of
its geometry (413). Slow clients are bounded by read deadlines enforced by the
server (:mod:`gisnet.service.server`): the request head within
``header_timeout_s``, the body within ``body_timeout_s`` (408, then closed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError
from ..serialize import dumps
from .errors import TooLargeError

JSON = "application/json"


@dataclass(frozen=True)
class ServiceLimits:
    """Request limits of the service.

    Attributes
    ----------
    max_body_bytes
        Largest request body accepted, in bytes (413 beyond).
    max_batch
        Most ids or features one batch request may carry (413 beyond).
    max_vertices
        Most coordinate positions (vertices) the geometry of one request may
        hold, all features together (413 beyond, before any geometry is built).
    max_json_depth
        Deepest nesting of arrays and objects in a JSON body (422 beyond).
        GeoJSON needs 9 levels (a MultiPolygon in a FeatureCollection).
    header_timeout_s
        Seconds a client has to send the request line and headers, counted from
        the connection opening or from the first byte of a later request on a
        kept-alive connection (408 and closed beyond; an idle new connection is
        closed without an answer).
    body_timeout_s
        Seconds a client has to send the whole body once the headers are in
        (408 and closed beyond).
    keep_alive_s
        Seconds an idle kept-alive connection stays open between requests.
    max_header_bytes
        Largest request line plus headers, in bytes (431 beyond).
    cors_origins
        Web origins (``https://maps.example.gov``) whose pages may call the
        service from a browser; empty: none (same-origin only).
    """

    max_body_bytes: int = 16 * 1024 * 1024
    max_batch: int = 20_000
    max_vertices: int = 100_000
    max_json_depth: int = 32
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    keep_alive_s: float = 5.0
    max_header_bytes: int = 16 * 1024
    cors_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_batch", "max_vertices", "max_json_depth",
                     "header_timeout_s", "body_timeout_s", "keep_alive_s",
                     "max_header_bytes"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise ConfigError(f"service limit {name} = {value!r} must be a positive "
                                  "finite number")

    def public(self) -> dict[str, int | float]:
        """The limits a client may need to know (``GET /town``)."""
        return {"max_body_bytes": self.max_body_bytes, "max_batch": self.max_batch,
                "max_vertices": self.max_vertices, "max_json_depth": self.max_json_depth,
                "header_timeout_s": self.header_timeout_s,
                "body_timeout_s": self.body_timeout_s, "keep_alive_s": self.keep_alive_s,
                "max_header_bytes": self.max_header_bytes}


def check_batch(n: int, limits: ServiceLimits, field: str) -> None:
    """Raise :class:`TooLargeError` (413) when a batch of ``n`` items in ``field``
    exceeds ``limits.max_batch``."""
    if n > limits.max_batch:
        raise TooLargeError(f"batch of {n} items in {field!r} exceeds the limit of "
                            f"{limits.max_batch} (max_batch)", limit=limits.max_batch,
                            field=field, limit_name="max_batch")


def check_vertices(n: int, limits: ServiceLimits, field: str) -> None:
    """Raise :class:`TooLargeError` (413) when request geometry in ``field`` holds
    ``n`` vertices, more than ``limits.max_vertices``."""
    if n > limits.max_vertices:
        raise TooLargeError(f"geometry of {n} vertices in {field!r} exceeds the limit of "
                            f"{limits.max_vertices} (max_vertices)",
                            limit=limits.max_vertices, field=field, limit_name="max_vertices")


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
                    raise TooLargeError(self._body(received)["detail"], limit=limit,
                                        field="body", limit_name="max_body_bytes")
            return msg

        await self.app(scope, limited, send)

    def _body(self, size: int) -> dict[str, Any]:
        return {"detail": f"request body of {size} bytes exceeds the limit of "
                          f"{self.max_bytes} bytes (max_body_bytes)",
                "limit": self.max_bytes, "limit_name": "max_body_bytes", "field": "body"}


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = dumps(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", JSON.encode()),
                            (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})
