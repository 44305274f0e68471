"""Request limits of the HTTP service: body size and batch count (413 beyond)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
    cors_origins
        Web origins (``https://maps.example.gov``) whose pages may call the
        service from a browser; empty: none (same-origin only).
    """

    max_body_bytes: int = 16 * 1024 * 1024
    max_batch: int = 20_000
    cors_origins: tuple[str, ...] = ()


def check_batch(n: int, limits: ServiceLimits, field: str) -> None:
    """Raise :class:`TooLargeError` (413) when a batch of ``n`` items in ``field``
    exceeds ``limits.max_batch``."""
    if n > limits.max_batch:
        raise TooLargeError(f"batch of {n} items in {field!r} exceeds the limit of "
                            f"{limits.max_batch} (max_batch)", limit=limits.max_batch,
                            field=field)


def batch_size(features: Any) -> int | None:
    """Number of features in request GeoJSON (a FeatureCollection or a list), if known."""
    if isinstance(features, dict) and isinstance(features.get("features"), list):
        return len(features["features"])
    if isinstance(features, list):
        return len(features)
    return None


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
