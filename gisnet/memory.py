"""Memory a finished step no longer holds, given back to the system.

The analyses of a big town make and drop many short-lived buffers (Arrow reads,
GEOS shapes of the measured geometries, numpy temporaries). CPython, GEOS and
numpy free them through the C library's ``malloc``, and glibc keeps freed pages
in its heaps for reuse instead of returning them: a county's run held about
0.5 GB more after loading than its layers need (``docs/performance.md``).
:func:`release` asks glibc to return what it holds free (``malloc_trim``); it
takes milliseconds and changes nothing else. Elsewhere (macOS, Windows, musl)
it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any

__all__ = ["release"]


@cache
def _trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim  # glibc only
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def release() -> None:
    """Return the C heap's free memory to the system (glibc), else nothing."""
    fn = _trim()
    if fn is not None:
        fn(0)
