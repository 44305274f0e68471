"""A region on Dask: one task per town, progress, the summary at the end.

:func:`run_region` submits :func:`gisnet.batch.task.run_town` once per town
to a ``dask.distributed`` client: a :class:`~distributed.LocalCluster` it
starts (``workers`` processes, one thread each) or an existing scheduler
(``scheduler="tcp://host:8786"``, e.g. started with ``dask-scheduler`` /
``dask-worker``, dask-jobqueue or dask-kubernetes). Each task reads its town
where it runs and returns only its summary row. A town whose worker dies (the
scheduler gives up on the task) is a failed row like any other.

The workers must be able to import gisnet and read the towns' files and the
output folder at the same paths as the client (a shared file system on a
cluster).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..extras import needs_extra
from ..threads import available_cores
from .region import Region, TownEntry
from .task import DONE, FAILED, UNCHANGED, Options, empty_row, run_town

log = logging.getLogger(__name__)

#: Seconds to wait for a scheduler named with ``--scheduler``.
CONNECT_TIMEOUT_S = 20
#: The malloc setting Dask's nanny gives a worker, left out for a local cluster gisnet starts.
TRIM_ENV = "MALLOC_TRIM_THRESHOLD_"


@dataclass
class BatchResult:
    """What :func:`run_region` did.

    Attributes
    ----------
    rows
        One summary row per town, in region order.
    files
        The summary files written.
    dashboard
        The Dask dashboard address (None when the cluster has none).
    seconds
        Wall time of the whole batch.
    """

    rows: list[dict[str, Any]]
    files: list[Path] = field(default_factory=list)
    dashboard: str | None = None
    seconds: float = 0.0

    def count(self, status: str) -> int:
        """Towns with this status."""
        return sum(r["status"] == status for r in self.rows)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Rows of the towns that failed."""
        return [r for r in self.rows if r["status"] == FAILED]


def default_workers() -> int:
    """One worker process per core."""
    return available_cores()


def threads_per_task(client: Any) -> int | None:
    """Threads each town may use for gisnet's parallel steps
    (:attr:`Options.threads <gisnet.batch.task.Options>`): on every machine of the
    cluster its cores divided by the task threads of the workers on it, the
    smallest over the machines, at least 1 (None when no worker answers).

    Two one-thread workers on two cores get 1 each: a town alone in
    ``gisnet run`` uses both cores for its nearest searches, but two towns side
    by side that each did so would share two cores four ways.
    """
    try:
        workers = client.scheduler_info()["workers"]
        cores = client.run(available_cores)
    except Exception:  # pragma: no cover - the towns then use the default
        log.debug("could not ask the workers for their cores", exc_info=True)
        return None
    slots: dict[str, int] = {}
    host_cores: dict[str, int] = {}
    for addr, w in workers.items():
        host = str(w.get("host") or addr.rsplit(":", 1)[0])
        slots[host] = slots.get(host, 0) + max(1, int(w.get("nthreads") or 1))
        host_cores[host] = max(host_cores.get(host, 0), int(cores.get(addr, 1)))
    if not slots:
        return None
    return max(1, min(host_cores[h] // slots[h] for h in slots))


def make_client(*, workers: int | None = None, scheduler: str | None = None,
                memory_limit: str | None = None) -> Any:
    """A ``distributed.Client``: on ``scheduler`` when given, else on a new
    :class:`~distributed.LocalCluster` of ``workers`` processes with one thread
    each (default :func:`default_workers`). The caller closes it (and its cluster).

    Raises
    ------
    ConfigError
        The scheduler cannot be reached, or the cluster cannot start.
    """
    with needs_extra("dask", "gisnet batch"):
        import dask
        from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler at {scheduler} within "
                              f"{CONNECT_TIMEOUT_S} s ({type(exc).__name__}: {exc})") from None
    n = workers or default_workers()
    if n < 1:
        raise ConfigError(f"--workers must be at least 1, not {n}")
    try:
        # glibc's own trimming for the workers (Dask's nanny sets a fixed 64 kB threshold,
        # which also stops glibc from raising its mmap threshold: a town's large arrays were
        # then mapped and unmapped on every allocation, about 5 % of the workers' CPU)
        with dask.config.set({f"distributed.nanny.pre-spawn-environ.{TRIM_ENV}": None}):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR,
                                   memory_limit=memory_limit or "auto")
    except Exception as exc:  # ports, resources: one line, not a traceback
        raise ConfigError(f"cannot start a local Dask cluster of {n} workers "
                          f"({type(exc).__name__}: {exc})") from None
    return Client(cluster)


def close_client(client: Any) -> None:
    """Close a client and the local cluster it started (an external one is left running)."""
    from distributed import LocalCluster

    cluster = client.cluster if isinstance(getattr(client, "cluster", None), LocalCluster) \
        else None
    client.close()
    if cluster is not None:
        cluster.close()


Listener = Callable[[str, dict[str, Any] | None, dict[str, int]], None]


def run_region(region: Region, out_root: str | Path, *, options: Options | None = None,
               client: Any = None, workers: int | None = None, scheduler: str | None = None,
               listener: Listener | None = None) -> BatchResult:
    """Run every town of a region on Dask and write the region summary.

    Parameters
    ----------
    region
        The towns (:func:`gisnet.batch.load_region`).
    out_root
        Output folder; town ``name`` goes to ``out_root/name``.
    options
        How every town runs (:class:`gisnet.batch.task.Options`).
    client
        A ``distributed.Client`` to use (left open); else one is made from
        ``scheduler`` / ``workers`` (:func:`make_client`) and closed at the end.
    listener
        Called with an event (``"start"``, ``"town"``, ``"end"``), the row of
        the town that finished (``"town"``) and the counts so far (``done``,
        ``unchanged``, ``failed``, ``running`` (on a worker now), ``left`` (not
        finished: running or waiting) and ``total``).

    Returns
    -------
    BatchResult
    """
    from ..output.guard import guard_outputs
    from ..output.writing import RESULTS_FILE
    from .summary import INDEX_PAGE, SUMMARY_CSV, SUMMARY_GPKG, write_summary

    with needs_extra("dask", "gisnet batch"):
        from distributed import as_completed

    options = options or Options()
    out = Path(out_root)
    if out.exists() and not out.is_dir():
        raise ConfigError("the output folder is a file", path=out)
    # no output over any town's inputs (each town's own run checks its files again)
    guard_outputs([out / SUMMARY_GPKG, out / SUMMARY_CSV, out / INDEX_PAGE,
                   *(out / e.name / RESULTS_FILE for e in region.towns)],
                  town_dirs=[e.folder for e in region.towns], what="batch output")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    own = client is None
    if own:
        client = make_client(workers=workers, scheduler=scheduler)
    say = listener or (lambda *_: None)
    rows: dict[str, dict[str, Any]] = {}
    counts = {DONE: 0, UNCHANGED: 0, FAILED: 0, "running": 0, "left": len(region.towns),
              "total": len(region.towns)}
    try:
        dashboard = getattr(client, "dashboard_link", None)
        say("start", {"dashboard": dashboard, "workers": _n_workers(client)}, counts)
        if options.threads is None:
            options = replace(options, threads=threads_per_task(client))
        futures = {}
        for entry in region.towns:
            # pure=False: a re-run in one session is a new task (the inputs may have changed);
            # the biggest towns first, so no big town is left running alone at the end
            f = client.submit(run_town, entry, str(out.resolve()), options, pure=False,
                              key=f"gisnet-town-{entry.name}-{time.time_ns()}",
                              priority=input_bytes(entry))
            futures[f] = entry
        for f in as_completed(list(futures)):
            entry = futures[f]
            row = _result(f, entry, out)
            rows[entry.name] = row
            counts[row["status"]] += 1
            counts["left"] -= 1
            counts["running"] = _running(client, futures, counts["left"])
            say("town", row, counts)
            f.release()
        ordered = [rows[e.name] for e in region.towns]
        files = write_summary(out, ordered, region_name=region.name, maps=options.maps,
                              self_contained=options.self_contained)
        res = BatchResult(ordered, files, dashboard, time.perf_counter() - t0)
        say("end", None, counts)
        return res
    finally:
        if own:
            close_client(client)


def input_bytes(entry: TownEntry) -> int:
    """Bytes of a town's input files (0 when its town file cannot be read): the
    order towns are started in, biggest first."""
    from .state import input_paths

    try:
        paths = input_paths(entry)
    except Exception:  # the task itself reports a bad town file
        return 0
    total = 0
    for p in paths:
        if isinstance(p, Path) and p.is_file():
            total += p.stat().st_size
    return total


def _running(client: Any, futures: dict[Any, TownEntry], left: int) -> int:
    """Towns being processed now (the rest of those left are waiting for a worker)."""
    keys = {f.key for f in futures}
    try:
        busy = client.processing()
    except Exception:  # pragma: no cover - informative only
        return left
    return min(left, sum(1 for ks in busy.values() for k in ks if k in keys))


def _n_workers(client: Any) -> int | None:
    try:
        return len(client.scheduler_info()["workers"])
    except Exception:  # pragma: no cover - informative only
        return None


def _result(f: Any, entry: TownEntry, out: Path) -> dict[str, Any]:
    """The row of a finished future; a task that died (its worker killed, the
    scheduler lost) is a failed row."""
    try:
        return f.result()
    except Exception as exc:
        row = empty_row(entry)
        row.update(status=FAILED, out_dir=str(out / entry.name),
                   error=f"the task did not finish: {_why(exc)}")
        return row


def _why(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return ("the worker running it died (out of memory, or killed); "
                "the scheduler gave up on the town")
    return f"{name}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def progress_printer(quiet: bool = False, stream: Any = None) -> Listener:
    """A listener printing the dashboard address and one line per finished town
    (``[done 3 · unchanged 1 · failed 0 · running 2 · waiting 14 of 20] town: status (s)``)."""
    stream = stream or sys.stderr

    def listen(event: str, row: dict[str, Any] | None, counts: dict[str, int]) -> None:
        if quiet:
            return
        if event == "start" and row is not None:
            where = row.get("dashboard") or "no dashboard"
            print(f"gisnet batch: {counts['total']} towns on {row.get('workers')} Dask "
                  f"worker(s); dashboard {where}", file=stream, flush=True)
        elif event == "town" and row is not None:
            what = row["status"]
            if row["status"] == FAILED:
                what += f": {row['error']}"
            secs = row.get("time_total_s")
            took = f" ({secs:.1f} s)" if isinstance(secs, (int, float)) \
                and row["status"] != UNCHANGED else ""
            waiting = counts["left"] - counts["running"]
            print(f"[done {counts[DONE]} · unchanged {counts[UNCHANGED]} · failed "
                  f"{counts[FAILED]} · running {counts['running']} · waiting {waiting} of "
                  f"{counts['total']}] "
                  f"{row['town']}: {what}{took}", file=stream, flush=True)

    return listen
