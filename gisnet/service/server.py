"""The HTTP server of ``gisnet serve``: uvicorn with read deadlines.

uvicorn closes a kept-alive connection that stays idle between requests
(``timeout_keep_alive``), but it has no deadline for *reading* a request: a
connection that never sends anything, or sends its headers or body a byte at
a time, is held open for ever (the "slowloris" attack), and each one holds a
socket and its buffers. :class:`ReadDeadlineProtocol` is uvicorn's h11
protocol with two deadlines, taken from
:class:`~gisnet.service.limits.ServiceLimits`:

``header_timeout_s``
    The request line and headers must be complete within this many seconds
    of the connection opening (or, on a kept-alive connection, of the first
    byte of the next request). A connection that sent part of a request is
    answered ``408`` (JSON naming ``header_timeout_s``) and closed; a new
    connection that sent nothing is closed without an answer.
``body_timeout_s``
    The body must be complete within this many seconds of the headers
    (``408`` naming ``body_timeout_s``, then closed; the application sees the
    client disconnect).

Both are totals, not gaps between bytes, so trickling cannot extend them. The
request head is also bounded in size (``max_header_bytes``, h11's buffer
limit: ``431``). The pure-Python h11 parser is used, whatever else is
installed, since the deadlines read its state.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..extras import needs_extra
from ..serialize import dumps

with needs_extra("service", "the HTTP server (gisnet serve)"):
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
from .limits import ServiceLimits


def _raw_response(status: int, reason: str, body: dict[str, Any]) -> bytes:
    """A complete HTTP/1.1 response that closes the connection, written without h11
    (whose state may not allow a response yet)."""
    data = dumps(body)
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\nconnection: close\r\n\r\n").encode() + data


class ReadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines for reading a request's head and body.

    Parameters
    ----------
    limits
        ``header_timeout_s``, ``body_timeout_s`` and ``max_header_bytes`` are
        read from it; the rest are uvicorn's (``config``, ...).
    """

    def __init__(self, *args: Any, limits: ServiceLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._deadline: asyncio.TimerHandle | None = None
        self._phase: str | None = None  # "head", "body" or None (nothing being read)

    # -- the phase of the request being read, from h11's state ------------------

    def _reading(self) -> str | None:
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return "body"
        if state is h11.IDLE and (self._phase == "head" or self.conn.trailing_data[0]):
            return "head"  # a new connection, or a partial request head buffered
        return None

    def _update(self) -> None:
        phase = self._reading()
        if phase == self._phase:
            return  # a deadline runs from the start of its phase, not from the last byte
        self._cancel()
        self._phase = phase
        if phase is not None and not self.transport.is_closing():
            seconds = (self.limits.header_timeout_s if phase == "head"
                       else self.limits.body_timeout_s)
            self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        started = self.conn.their_state is not h11.IDLE or self.conn.trailing_data[0]
        cycle = self.cycle
        if started and not (cycle is not None and cycle.response_started
                            and phase == "body"):
            name = "header_timeout_s" if phase == "head" else "body_timeout_s"
            limit = getattr(self.limits, name)
            what = "request line and headers" if phase == "head" else "request body"
            self.transport.write(_raw_response(408, "Request Timeout", {
                "detail": f"{what} not received within {limit:g} s ({name})",
                "field": "headers" if phase == "head" else "body",
                "limit": limit, "limit_name": name}))
        self.transport.close()  # connection_lost tells a running request it is gone

    # -- uvicorn's protocol callbacks ---------------------------------------------

    # (uvicorn's H11Protocol narrows asyncio.Protocol's BaseTransport the same way)
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # a new connection: its first request head is due within header_timeout_s
        self._phase = "head"
        self._deadline = self.loop.call_later(self.limits.header_timeout_s, self._expired,
                                              "head")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._update()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._update()  # a pipelined request may have been parsed

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse: JSON 431 for a head over ``max_header_bytes``,
        else JSON 400; then closed."""
        self._cancel()
        if len(self.conn.trailing_data[0]) > self.limits.max_header_bytes:
            limit = self.limits.max_header_bytes
            self.transport.write(_raw_response(431, "Request Header Fields Too Large", {
                "detail": f"request line and headers over {limit} bytes (max_header_bytes)",
                "field": "headers", "limit": limit, "limit_name": "max_header_bytes"}))
        else:
            self.transport.write(_raw_response(400, "Bad Request", {
                "detail": "invalid HTTP request (malformed request line or headers)",
                "field": "request"}))
        self.transport.close()


#: Connections the kernel holds for the server before it accepts them: those made
#: while the town is loaded wait there (:func:`listen`).
BACKLOG = 2048


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening, made before the town is
    loaded and handed to :meth:`uvicorn.Server.run`: an address that cannot be
    listened on (a port in use, a host not of this machine) is a ConfigError at once,
    not after a county's load, and a client that connects while the town loads
    waits in the backlog and is answered once the server runs, not refused.
    ``port`` 0 takes a free port (``sock.getsockname()[1]``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        hint = (" (another server listens there: give another --port)"
                if exc.errno in (98, 48, 10048) else "")  # EADDRINUSE: Linux, BSD, Windows
        raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}{hint}") from None
    sock.set_inheritable(True)
    return sock


#: Seconds between the server's returns of the memory its requests freed to the system
#: (:func:`gisnet.memory.release`, on a worker thread; only after requests were served).
#: glibc keeps what a request frees in the arena of the thread that freed it: a county's
#: server held 0.3 GB more after its pages than with two arenas (docs/performance.md).
TRIM_EVERY_S = 10


class _Server(uvicorn.Server):
    """uvicorn's server calling ``on_started`` once it accepts connections, and giving
    back the memory its requests freed every :data:`TRIM_EVERY_S` seconds."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None) -> None:
        super().__init__(config)
        self.on_started = on_started
        self._trimmed_at = 0  # requests served at the last return

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.on_started is not None:
            self.on_started()

    async def on_tick(self, counter: int) -> bool:  # every 0.1 s
        if counter and counter % (TRIM_EVERY_S * 10) == 0:
            served = self.server_state.total_requests
            if served != self._trimmed_at:
                self._trimmed_at = served
                asyncio.get_running_loop().run_in_executor(None, self.give_back)
        return await super().on_tick(counter)

    def give_back(self) -> None:
        """Return the memory the requests freed to the system (on a worker thread)."""
        from ..memory import release

        release()


def make_server(app: Any, *, host: str, port: int, limits: ServiceLimits,
                access_log: bool = False, log_level: str = "warning",
                on_started: Callable[[], None] | None = None) -> uvicorn.Server:
    """A uvicorn server for ``app`` that enforces the read limits of ``limits``.

    Parameters
    ----------
    app
        The ASGI application (:func:`gisnet.service.create_app`).
    host, port
        Where to listen (unless ``run`` is given the socket of :func:`listen`).
    limits
        ``header_timeout_s``, ``body_timeout_s``, ``keep_alive_s`` and
        ``max_header_bytes`` are applied here.
    access_log, log_level
        uvicorn's logging.
    on_started
        Called on the server's loop once it accepts connections (what is said to
        the user then, and work that should not slow its start).

    Returns
    -------
    uvicorn.Server
        Not started: ``server.run()`` (or ``server.run(sockets=[listen(host,
        port)])``) serves until interrupted.
    """
    protocol = functools.partial(ReadDeadlineProtocol, limits=limits)
    config = uvicorn.Config(
        app, host=host, port=port, access_log=access_log, log_level=log_level,
        lifespan="off", backlog=BACKLOG,
        # uvicorn's annotations are narrower than it is: any protocol factory is
        # called like the class, and the keep-alive goes to loop.call_later (a float)
        http=protocol,  # type: ignore[arg-type]
        timeout_keep_alive=limits.keep_alive_s,  # type: ignore[arg-type]
        h11_max_incomplete_event_size=limits.max_header_bytes,
    )
    return _Server(config, on_started)
