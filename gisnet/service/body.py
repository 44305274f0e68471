"""JSON request bodies: read, checked and decoded once, before FastAPI sees them.

FastAPI answers a body it cannot decode with 400 "There was an error parsing
the body" (bytes that are not UTF-8, nesting deep enough to exhaust the
recursion limit, integers over Python's digit limit). Every route of the
service is a :class:`JSONBodyRoute`: a route that takes a body reads it
first, refuses what is not JSON (415, ``field: "content-type"``), and decodes
it with :func:`parse_json_body`, whose errors are 422 naming the field where
one is known (``parcel_ids[0]``) and ``body`` otherwise. FastAPI then
validates the decoded value as usual.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Coroutine
from email.message import Message
from typing import Any

import numpy as np
from fastapi import Request, Response
from fastapi.routing import APIRoute

from .errors import LimitError, RequestError, UnsupportedMediaType
from .limits import ServiceLimits

# a \uD800-\uDFFF escape: a UTF-16 surrogate, which no Unicode text holds alone
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# +1 for an opening bracket, -1 for a closing one, by byte value
_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[[ord("["), ord("{")]] = 1
_BRACKET_STEP[[ord("]"), ord("}")]] = -1


def json_depth(data: bytes) -> int:
    """Deepest nesting of arrays and objects in JSON text ``data``.

    Vectorised, so no parser recursion is needed to know the depth: the
    brackets are found with a lookup table, those inside strings dropped (a
    bracket is inside a string when an odd number of unescaped quotes precede
    it; a quote is escaped when an odd run of backslashes precedes it), and the
    rest summed in order. Exact for valid JSON; for invalid JSON an estimate,
    and the parser reports the error.
    """
    b = np.frombuffer(data, dtype=np.uint8)
    step = _BRACKET_STEP[b]
    brackets = np.flatnonzero(step)
    if brackets.size == 0:
        return 0
    quotes = np.flatnonzero(b == ord('"'))
    after_backslash = quotes[quotes > 0]
    after_backslash = after_backslash[b[after_backslash - 1] == ord("\\")]
    if after_backslash.size:
        backslashes = np.flatnonzero(b == ord("\\"))
        starts = np.r_[True, np.diff(backslashes) != 1]
        run_start = backslashes[starts][np.cumsum(starts) - 1]
        run = after_backslash - run_start[np.searchsorted(backslashes, after_backslash - 1)]
        quotes = np.setdiff1d(quotes, after_backslash[run % 2 == 1], assume_unique=True)
    outside = np.searchsorted(quotes, brackets) % 2 == 0
    return int(np.cumsum(step[brackets[outside]], dtype=np.int64).max(initial=0))


class _NonFinite:
    """Stands for ``NaN``, ``Infinity`` or ``-Infinity`` in decoded JSON until
    its place is found and reported."""

    def __init__(self, name: str) -> None:
        self.name = name


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _find(value: Any, bad: Callable[[Any], bool], where: str = "") -> tuple[str, Any] | None:
    """The first key or value (depth first) for which ``bad`` holds, and its path."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        here, v = stack.pop()
        if bad(v):
            return here, v
        if isinstance(v, dict):
            items = list(v.items())
            for k, x in reversed(items):
                if bad(k):
                    return _path(here, k), k
                stack.append((_path(here, k), x))
        elif isinstance(v, list):
            stack.extend((_path(here, i), x) for i, x in reversed(list(enumerate(v))))
    return None


def _field(path: str) -> str:
    """A path for an error message: lone surrogates (from bytes that were not UTF-8)
    shown as ``\\udcff`` escapes, since no encoder can write them."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8") or "body"


def _has_surrogate(v: Any) -> bool:
    return isinstance(v, str) and any("\ud800" <= ch <= "\udfff" for ch in v)


def parse_json_body(data: bytes, max_depth: int) -> Any:
    """Decode a JSON request body, refusing what is not RFC 8259 JSON.

    Parameters
    ----------
    data
        The body's bytes.
    max_depth
        Deepest nesting of arrays and objects accepted.

    Returns
    -------
    Any
        The decoded value.

    Raises
    ------
    RequestError
        422: bytes that are not UTF-8, a lone UTF-16 surrogate (``\\ud800``),
        ``NaN`` or ``Infinity``, malformed JSON, an integer over 4,300
        digits; naming the field (``parcel_ids[0]``) where the value lies in
        one, else ``body``.
    LimitError
        422 naming ``max_json_depth``: nesting deeper than ``max_depth``.
    """
    utf8_error: str | None = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf8_error = (f"byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8 "
                      "(JSON bodies must be UTF-8)")
        # invalid bytes become lone surrogates, so the string holding them can be found
        text = data.decode("utf-8", "surrogateescape")
    depth = json_depth(data)
    if depth > max_depth:
        raise LimitError("body", f"JSON nested {depth} levels deep; the limit is {max_depth} "
                                 "(max_json_depth)", limit=max_depth,
                         limit_name="max_json_depth")
    constants: list[str] = []

    def constant(name: str) -> _NonFinite:
        constants.append(name)
        return _NonFinite(name)

    try:
        value = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        if utf8_error:
            raise RequestError("body", utf8_error) from None
        raise RequestError("body", f"malformed JSON ({exc.msg}: line {exc.lineno} "
                                   f"column {exc.colno})") from None
    except RecursionError:  # not reached below max_json_depth; kept as a guard
        raise RequestError("body", "malformed JSON (nested too deeply)") from None
    except ValueError:  # the only other: an integer over sys.get_int_max_str_digits()
        raise RequestError("body", "malformed JSON (an integer of more than "
                                   f"{sys.get_int_max_str_digits()} digits)") from None
    if constants:
        found = _find(value, lambda v: isinstance(v, _NonFinite))
        where, v = found if found else ("body", _NonFinite(constants[0]))
        raise RequestError(_field(where), f"{v.name} is not a JSON number (RFC 8259); "
                                          "send a finite number")
    if utf8_error or _SURROGATE_ESCAPE.search(data):
        found = _find(value, _has_surrogate)
        if utf8_error:
            raise RequestError(_field(found[0] if found else ""), utf8_error)
        if found:
            raise RequestError(_field(found[0]), "a lone UTF-16 surrogate (\\ud800-\\udfff) "
                                                 "is not a Unicode character")
    return value


def _is_json(content_type: str) -> tuple[bool, str | None]:
    """Whether a Content-Type names JSON, and its charset parameter."""
    msg = Message()
    msg["content-type"] = content_type
    sub = msg.get_content_subtype()
    ok = msg.get_content_maintype() == "application" and (sub == "json"
                                                            or sub.endswith("+json"))
    charset = msg.get_param("charset")
    return ok, charset if isinstance(charset, str) else None


class JSONBodyRequest(Request):
    """A request whose JSON body may already be decoded (see :class:`JSONBodyRoute`)."""

    decoded: Any = None
    has_decoded: bool = False

    async def json(self) -> Any:
        """The body decoded by :func:`parse_json_body` (once)."""
        if not self.has_decoded:
            limits: ServiceLimits = self.app.state.limits
            self.decoded = parse_json_body(await self.body(), limits.max_json_depth)
            self.has_decoded = True
        return self.decoded


class JSONBodyRoute(APIRoute):
    """An API route that reads, checks and decodes its JSON body itself.

    Errors raised here reach the service's exception handlers (FastAPI's own
    body reading would turn any of them into a bare 400).
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def read_json_first(request: Request) -> Response:
            req = JSONBodyRequest(request.scope, request.receive)
            ctype = req.headers.get("content-type")
            data = await req.body()
            if data:
                if ctype is None:
                    raise UnsupportedMediaType("content-type", "missing; send the body as "
                                                               "application/json")
                ok, charset = _is_json(ctype)
                if not ok:
                    raise UnsupportedMediaType("content-type", f"{ctype!r} is not JSON; send "
                                                               "the body as application/json")
                if charset is not None and charset.lower().replace("-", "") != "utf8":
                    raise UnsupportedMediaType("content-type", f"charset {charset!r}: JSON "
                                                               "bodies must be UTF-8")
                await req.json()
            return await handler(req)

        return read_json_first
