"""How many threads gisnet's own parallel steps use.

The nearest-main searches, the connection zone's tiled union, the street
frontage intersections and the connection points' nearest query split their
work over :func:`default_threads` threads (shapely releases the GIL). In one
process that is the machine's cores (at most :data:`MAX_THREADS`); where
several gisnet processes share the cores — the workers of ``gisnet batch`` on
one machine — each should use only its share, or they crowd each other out.

The limit is, in order: the innermost :func:`thread_limit` in effect (what a
batch task sets), else the environment variable :data:`THREADS_ENV`
(``GISNET_THREADS=1``), else the cores this process may run on. Results never
depend on it, only the speed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from itertools import pairwise
from typing import Any

import numpy as np

__all__ = ["MAX_THREADS", "MIN_THREADED", "THREADS_ENV", "available_cores", "chunked",
           "default_threads", "in_background", "thread_limit"]

#: At most this many threads for one step (the measured gain stops at about 4).
MAX_THREADS = 4
#: Inputs shorter than this run on one thread in :func:`chunked` (splitting costs more
#: than it saves).
MIN_THREADED = 20_000
#: Environment variable capping gisnet's threads (a positive integer).
THREADS_ENV = "GISNET_THREADS"

_limit: ContextVar[int | None] = ContextVar("gisnet_thread_limit", default=None)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """Threads for one of gisnet's parallel steps (2 on a 2-core machine).

    :func:`thread_limit` when in effect, else ``GISNET_THREADS`` when set to a
    positive integer, else :func:`available_cores`; never more than
    :data:`MAX_THREADS`.
    """
    n = _limit.get()
    if n is None:
        env = os.environ.get(THREADS_ENV, "").strip()
        n = int(env) if env.isdigit() and int(env) > 0 else available_cores()
    return max(1, min(MAX_THREADS, n))


@contextmanager
def thread_limit(n: int | None) -> Iterator[None]:
    """Within the block, :func:`default_threads` is ``n`` (None: no change).

    Examples
    --------
    >>> with thread_limit(1):
    ...     default_threads()
    1
    """
    if n is None:
        yield
        return
    if n < 1:
        raise ValueError(f"a thread limit must be at least 1, not {n}")
    token = _limit.set(int(n))
    try:
        yield
    finally:
        _limit.reset(token)


def in_background(fn: Callable[[], Any], *, threads: int | None = None
                  ) -> Callable[[], Any]:
    """Start ``fn()`` on a thread of its own now; returns the call that waits for it
    and gives its result (or raises what it raised). ``threads``: the
    :func:`thread_limit` ``fn`` runs under (1: a long job kept to one core beside the
    steps that follow, on the core they leave free).

    For work that releases the GIL (GEOS) run beside a step that holds it (the
    graph's Python): the two share the cores instead of taking turns. The thread
    runs in a copy of the caller's context, so a :func:`thread_limit` in effect
    holds inside it too. A daemon thread: a run that fails meanwhile does not wait
    for it. With one thread to use (:func:`default_threads` 1: ``GISNET_THREADS=1``,
    a batch worker's share) nothing starts: ``fn`` runs when its result is asked for,
    on the caller's thread.

    Examples
    --------
    >>> later = in_background(lambda: sum(range(10)))
    >>> later()
    45
    """
    out: dict[str, Any] = {}
    if threads is not None:
        inner = fn

        def fn() -> Any:
            with thread_limit(threads):
                return inner()

    if default_threads() < 2:
        def later() -> Any:
            if "value" not in out:
                out["value"] = fn()
            return out["value"]

        return later
    ctx = copy_context()

    def work() -> None:
        try:
            out["value"] = ctx.run(fn)
        except BaseException as exc:  # raised again in the caller's thread
            out["error"] = exc

    t = threading.Thread(target=work, name="gisnet-background", daemon=True)
    t.start()

    def result() -> Any:
        t.join()
        if "error" in out:
            raise out["error"]
        return out["value"]

    return result


def chunked(n: int, threads: int, func: Callable[[int, int], Any], *,
            min_n: int = MIN_THREADED) -> list[Any]:
    """Run ``func(lo, hi)`` over ``range(n)`` in chunks, on ``threads`` threads; the
    results in the order of the chunks (one chunk when ``threads`` is 1 or ``n`` is
    under ``min_n``)."""
    if n == 0:
        return []
    if threads <= 1 or n < min_n:
        return [func(0, n)]
    bounds = np.linspace(0, n, threads * 4 + 1).astype(int)
    with ThreadPoolExecutor(max_workers=threads) as ex:
        futs = [ex.submit(func, int(lo), int(hi)) for lo, hi in pairwise(bounds) if hi > lo]
        return [f.result() for f in futs]
