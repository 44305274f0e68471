"""Memory of a process and the processes it started, read from Linux's ``/proc``
(for the benchmarks and the memory test; not used at run time)."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

__all__ = ["PeakRss", "process_tree", "rss_kb", "tree_pss_kb"]


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
