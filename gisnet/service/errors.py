"""Errors of the HTTP service and the status each one answers with.

Errors are JSON ``{"detail": ..., "field": ...}`` and never a traceback: an
unknown id is 404, a malformed parameter or body 422 naming the field (a body
nested deeper than ``max_json_depth`` also names the limit), a body that is not
JSON 415, a body over ``max_body_bytes``, a batch over ``max_batch`` items or
geometry over ``max_vertices`` vertices 413 naming the limit, an analysis the
town cannot support (e.g. no plants) 503. The limits are
:class:`~gisnet.service.limits.ServiceLimits`.
"""

from __future__ import annotations

from pathlib import PurePath

from ..errors import GisnetError, NotFoundError


class RequestError(GisnetError):
    """A request parameter or body field is malformed (HTTP 422).

    Parameters
    ----------
    field
        The request field concerned, e.g. ``crs``, ``features[3].geometry``.
    message
        What is wrong with it.
    """

    status_code = 422

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message, feature=None)

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class UnknownIdError(NotFoundError):
    """An id the request names does not exist (HTTP 404).

    Parameters
    ----------
    field
        The request parameter holding the id (``parcel_id``, ``main_id``, ``name`` ...).
    message
        What was not found.
    **where
        ``layer``, ``feature`` (see :class:`~gisnet.errors.GisnetError`).
    """

    def __init__(self, field: str, message: str, **where: str | None) -> None:
        self.field = field
        super().__init__(message, **where)


class LimitError(RequestError):
    """A request field is refused because it exceeds a configured limit (HTTP 422).

    Parameters
    ----------
    field
        The request field concerned (``body`` for the body as a whole).
    message
        What is wrong, naming the limit.
    limit
        The configured value that was exceeded.
    limit_name
        Its name in :class:`~gisnet.service.limits.ServiceLimits`.
    """

    def __init__(self, field: str, message: str, *, limit: float, limit_name: str) -> None:
        self.limit = limit
        self.limit_name = limit_name
        super().__init__(field, message)


class TooLargeError(GisnetError):
    """A body, a batch or request geometry exceeds a configured limit (HTTP 413).

    ``limit`` is the configured value, ``limit_name`` its name in
    :class:`~gisnet.service.limits.ServiceLimits`, ``field`` the request field.
    """

    status_code = 413

    def __init__(self, message: str, *, limit: int, field: str | None = None,
                 limit_name: str | None = None) -> None:
        self.limit = limit
        self.limit_name = limit_name
        self.field = field
        super().__init__(message)


class UnsupportedMediaType(RequestError):
    """A request body is not JSON (HTTP 415); ``field`` is ``content-type``."""

    status_code = 415


class ServiceUnavailable(GisnetError):
    """An analysis could not be computed for this town (HTTP 503)."""

    status_code = 503


def public_message(exc: GisnetError) -> str:
    """The error's text for a client: as ``str(exc)``, but a file it names is given
    by its name alone, never by the server's absolute path."""
    if not exc.path:
        return str(exc)
    saved = exc.path
    try:
        exc.path = PurePath(saved).name or None
        return str(exc)
    finally:
        exc.path = saved


def http_status(exc: GisnetError) -> int:
    """The HTTP status of a gisnet error: its own ``status_code``, 404 for
    :class:`~gisnet.errors.NotFoundError`, else 422 (the request or the data
    it names cannot be used)."""
    if isinstance(exc, (RequestError, TooLargeError, ServiceUnavailable)):
        return exc.status_code
    if isinstance(exc, NotFoundError):
        return 404
    return 422
