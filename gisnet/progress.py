"""Progress of a long run on stderr: a live bar on a terminal, one line per step otherwise.

:func:`gisnet.pipeline.analyse` and :func:`gisnet.pipeline.run` report each step
through a :class:`Reporter`:

- on a terminal (:func:`reporter` with ``stderr`` a TTY) a ``rich`` progress bar
  shows the steps done of the steps planned, the running step with what it works
  on (``measuring connection obligations (1,000,000 parcels)``) and the elapsed
  time, and each finished step leaves a line with its time;
- otherwise (a log file, a pipe, CI) one line per finished step with its wall
  and CPU time, ``gisnet: obligations 12.3 s (1,000,000 parcels; CPU 15.1 s)``;
- quiet: nothing.

Progress goes to stderr only, so ``--json`` output on stdout is unchanged.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

#: What :func:`as_reporter` accepts: a reporter, a callable taking the message of
#: each step before it runs (the older form), or None (nothing reported).
ProgressLike = Any


class Reporter:
    """Reports steps; the base class reports nothing (``-q``).

    Use :meth:`step` around each step::

        with rep.step("obligations", "measuring connection obligations", count=n,
                      unit="parcels"):
            ...
    """

    def __init__(self) -> None:
        self.timings_s: dict[str, float] = {}
        #: CPU seconds of the process (every thread) in each step
        self.cpu_s: dict[str, float] = {}

    def plan(self, steps: int) -> None:
        """Say how many steps are coming (the bar's total)."""

    @contextmanager
    def step(self, name: str, message: str, *, count: int | None = None,
             unit: str = "") -> Iterator[None]:
        """Time the block as step ``name``; ``message`` says what it does, ``count``
        ``unit`` how much it works on (shown with the step)."""
        t = time.perf_counter()
        c = time.process_time()
        self.started(name, message, count, unit)
        ok = False
        try:
            yield
            ok = True
        finally:
            s = time.perf_counter() - t
            self.timings_s[name] = s
            self.cpu_s[name] = time.process_time() - c
            self.finished(name, message, count, unit, s, ok)

    def started(self, name: str, message: str, count: int | None, unit: str) -> None:
        """A step begins."""

    def finished(self, name: str, message: str, count: int | None, unit: str,
                 seconds: float, ok: bool) -> None:
        """A step ends (``ok`` False: it raised)."""

    def close(self) -> None:
        """Stop the display (a terminal's live bar)."""


def counted(count: int | None, unit: str) -> str:
    """``1,000,000 parcels``, or empty without a count."""
    return "" if count is None else f"{count:,} {unit}".strip()


class CallbackReporter(Reporter):
    """Calls ``fn(message)`` before each step (the form the other commands and
    the service pass)."""

    def __init__(self, fn: Callable[[str], None]) -> None:
        super().__init__()
        self.fn = fn

    def started(self, name: str, message: str, count: int | None, unit: str) -> None:
        self.fn(message)


class LineReporter(Reporter):
    """One line per step finished without error on ``stream`` (stderr when not a
    terminal); a step that raised leaves no line: its error is the one line."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream

    def finished(self, name: str, message: str, count: int | None, unit: str,
                 seconds: float, ok: bool) -> None:
        if not ok:
            return  # the error says what failed, in its one line
        what = counted(count, unit)
        tail = f" ({what}; CPU {self.cpu_s.get(name, 0.0):.1f} s)" if what else \
            f" (CPU {self.cpu_s.get(name, 0.0):.1f} s)"
        print(f"gisnet: {name} {seconds:.1f} s{tail}",
              file=self.stream or sys.stderr, flush=True)


class TerminalReporter(Reporter):
    """A ``rich`` progress bar: steps done of steps planned, the running step and
    its count, elapsed time; a line with its time for each finished step."""

    def __init__(self, console: Any = None) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = console or Console(stderr=True)
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("steps"), TimeElapsedColumn(),
                            console=self.console, transient=True)
        self.task: Any = None
        self.total: int | None = None

    def plan(self, steps: int) -> None:
        self.total = steps + len(self.timings_s)  # with the steps already done (load)
        if self.task is not None:
            self.bar.update(self.task, total=self.total)

    def started(self, name: str, message: str, count: int | None, unit: str) -> None:
        what = counted(count, unit)
        text = f"{message} ({what})" if what else message
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task(text, total=self.total)
        else:
            self.bar.update(self.task, description=text)

    def finished(self, name: str, message: str, count: int | None, unit: str,
                 seconds: float, ok: bool) -> None:
        what = counted(count, unit)
        mark = "[green]✓[/green]" if ok else "[red]✗[/red]"
        self.bar.console.print(f"{mark} {name:<12} {seconds:7.1f} s"
                               + (f"  {what}" if what else ""), highlight=False)
        if self.task is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None


def reporter(*, quiet: bool = False, stream: IO[str] | None = None,
             terminal: bool | None = None) -> Reporter:
    """The reporter for a command: nothing when ``quiet``; a live bar when
    ``stream`` (default stderr) is a terminal (or ``terminal`` True); else one
    line per finished step."""
    if quiet:
        return Reporter()
    out = stream or sys.stderr
    tty = terminal if terminal is not None else bool(getattr(out, "isatty", lambda: False)())
    if tty:
        from rich.console import Console

        return TerminalReporter(Console(file=out, force_terminal=True)
                                if stream is not None else None)
    return LineReporter(out)


def as_reporter(progress: ProgressLike) -> Reporter:
    """A :class:`Reporter` for what :func:`gisnet.pipeline.analyse` was given."""
    if isinstance(progress, Reporter):
        return progress
    if progress is None:
        return Reporter()
    if callable(progress):
        return CallbackReporter(progress)
    raise TypeError(f"progress must be a Reporter, a callable or None, not {progress!r}")
