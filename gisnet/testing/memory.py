"""Memory of a process and the processes it started, read from Linux's ``/proc``
(for the benchmarks and the memory test; not used at run time)."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

__all__ = ["PeakRss", "TreePss", "process_tree", "rss_kb", "tree_pss_kb"]


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the GeoPackage writer, tile workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:  # the process has ended
            pass
    return out


def rss_kb(pid: int) -> int | None:
    """The resident set size of ``pid`` (kB), None once it has ended."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def tree_pss_kb(pid: int) -> int:
    """Proportional set size of ``pid`` and its descendants (kB): pages a child
    shares with its parent after a fork count once, so this is the memory the
    processes hold together."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:  # the process ended between the two reads
            pass
    return total


def _status_kb(pid: int, fields: tuple[str, ...]) -> dict[str, int] | None:
    """The ``fields`` (``RssAnon:`` ...) of ``/proc/<pid>/status`` in kB, None once
    the process has ended."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(fields):
                    name, kb = line.split()[:2]
                    out[name] = int(kb)
    except OSError:
        return None
    return out


def _pss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class TreePss:
    """The proportional set size of a process and its descendants, sampled often
    at little cost to the processes measured.

    Reading ``smaps_rollup`` walks every page table of the process (40-80 ms for a
    4 GB Python process, holding its memory map's lock): read four times a second,
    it takes a sixth of a core from the run it measures. A process that was not
    forked from another shares no anonymous page, so its PSS is its private
    anonymous memory (``RssAnon`` of ``/proc/<pid>/status``, a cheap read) plus its
    share of the file and shared-memory pages it maps (libraries, a file SQLite
    maps). :meth:`sample` adds each process's ``RssAnon`` to that share as last
    read from ``smaps_rollup``, plus whatever its resident file and shared pages
    (``RssFile`` + ``RssShmem``) have grown by since (a page's share is at most the
    page), and the share of a child that has ended (the pages it shared with the
    run are the run's alone): never less than the PSS. ``smaps_rollup`` is read again every
    ``exact_every_s`` seconds and for a process not yet read. ``max_over_kb`` and
    ``max_under_kb`` are the largest differences seen between the two at an exact
    reading (the second 0 while the assumption holds); ``busy_s`` the time spent
    sampling.

    For processes that start by ``subprocess`` (``fork`` + ``exec``); a tree of
    forked workers sharing their parent's pages needs :func:`tree_pss_kb`.
    """

    _FIELDS = ("RssAnon:", "RssFile:", "RssShmem:")

    def __init__(self, pid: int, exact_every_s: float = 5.0):
        self.pid = pid
        self.exact_every_s = exact_every_s
        self.max_over_kb = self.max_under_kb = 0
        self.exact_reads = 0
        self.busy_s = 0.0
        # pid -> (PSS - RssAnon, RssFile + RssShmem) at its last exact read
        self._shared: dict[int, tuple[int, int]] = {}
        self._last_exact = -float("inf")

    def sample(self, now: float) -> int:
        """The tree's PSS (kB) at ``now`` (a monotonic time in seconds)."""
        t = time.perf_counter()
        exact = now - self._last_exact >= self.exact_every_s
        if exact:
            self._last_exact = now
        total = 0
        pids = process_tree(self.pid)
        for gone in set(self._shared) - set(pids):  # its share of the libraries it
            share, _ = self._shared.pop(gone)  # shared with the run becomes the run's
            if self.pid in self._shared and gone != self.pid:
                root, mapped = self._shared[self.pid]
                self._shared[self.pid] = (root + max(0, share), mapped)
        for p in pids:
            st = _status_kb(p, self._FIELDS)
            if st is None:  # ended
                continue
            anon = st.get("RssAnon:", 0)
            mapped = st.get("RssFile:", 0) + st.get("RssShmem:", 0)
            if exact or p not in self._shared:
                pss = _pss_kb(p)
                if pss is None:
                    continue
                self.exact_reads += 1
                if p in self._shared:
                    est = self._estimate(p, anon, mapped)
                    self.max_over_kb = max(self.max_over_kb, est - pss)
                    self.max_under_kb = max(self.max_under_kb, pss - est)
                self._shared[p] = (pss - anon, mapped)
            total += self._estimate(p, anon, mapped)
        self.busy_s += time.perf_counter() - t
        return total

    def _estimate(self, pid: int, anon: int, mapped: int) -> int:
        shared, was = self._shared[pid]
        return anon + shared + max(0, mapped - was)


class PeakRss:
    """This process's resident set size when entered (``start_mb``) and its peak
    while inside (``peak_mb``), sampled on a thread every ``every_s`` seconds
    (a benchmark of one job: ``with PeakRss() as m: job()``, then
    ``m.peak_mb - m.start_mb``)."""

    def __init__(self, every_s: float = 0.005):
        self.every_s = every_s
        self.start_mb = self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _now_mb(self) -> float:
        return (rss_kb(os.getpid()) or 0) / 1024.0

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self._now_mb())
            time.sleep(self.every_s)

    def __enter__(self) -> PeakRss:
        self.start_mb = self.peak_mb = self._now_mb()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_mb = max(self.peak_mb, self._now_mb())
