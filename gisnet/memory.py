"""Memory a finished step no longer holds, given back to the system.

The analyses of a big town make and drop many short-lived buffers (Arrow reads,
GEOS shapes of the measured geometries, numpy temporaries). CPython, GEOS and
numpy free them through the C library's ``malloc``, and glibc keeps freed pages
in its heaps for reuse instead of returning them: a county's run held about
0.5 GB more after loading than its layers need (``docs/performance.md``).
:func:`release` asks glibc to return what it holds free (``malloc_trim``); it
takes milliseconds and changes nothing else. Elsewhere (macOS, Windows, musl)
it does nothing.

:func:`long_lived` keeps what is alive when a run starts (the town's layers: a
county's 3.5 million shapes, each an object the cyclic garbage collector tracks) out
of the collector's full passes for the run's time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

__all__ = ["FULL_COLLECTION_AFTER", "long_lived", "release"]


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


def release(collect: bool = False) -> None:
    """Return the C heap's free memory to the system (glibc), else nothing;
    ``collect``: first free what only reference cycles keep (``gc.collect``: a
    networkx graph let go, its dictionaries referring to each other)."""
    if collect:
        gc.collect()
    fn = _trim()
    if fn is not None:
        fn(0)


#: Full collections' threshold within :func:`long_lived` (young collections between
#: two full ones: they then wait for :func:`release` with ``collect``).
FULL_COLLECTION_AFTER = 1_000_000


@contextmanager
def long_lived() -> Iterator[None]:
    """Within: every object alive on entry is left out of the cyclic garbage
    collector's passes (``gc.freeze``), and the collector makes no full collection
    of its own (:data:`FULL_COLLECTION_AFTER`); the young generations are collected as
    before. On exit the objects and the threshold are handed back.

    CPython walks every tracked object at each full collection, and it makes one
    whenever the objects made since the last are a quarter of those that survived it:
    a county run making its graph, connection points and paths beside the town's
    millions of shapes spent 5.6 s of its main thread in 18 full collections, all of
    which found nothing to free but the last, the networkx graph let go
    (``docs/performance.md``); :meth:`gisnet.pipeline.Results.release_follow_ups`
    collects it when it lets it go. The town's layers hold no reference cycle: what of
    them a run lets go is freed when its last reference goes, frozen or not.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(threshold[0], threshold[1], FULL_COLLECTION_AFTER)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
