"""The ``gisnet`` command line: a thin layer over the library.

Each subcommand lives in its own module ``gisnet.cli.<name>`` exposing
``add_parser(subparsers)`` (which sets ``func``) and ``run(args) -> int``.
A :class:`gisnet.errors.GisnetError` becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys

from ..errors import GisnetError

#: Subcommand modules, in the order ``gisnet --help`` lists them.
COMMANDS = (
    "init",
    "sample",
    "run",
    "validate",
    "graph",
    "obligations",
    "frontage",
    "trace",
    "sampling_plan",
    "samples",
    "capacity",
    "whatif",
    "map",
    "figure",
    "notices",
    "register",
    "serve",
    "import_swmm",
    "export_swmm",
    "check_swmm",
    "batch",
)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="gisnet",
        description="Sewer-network answers from a town's GIS layers.",
    )
    parser.add_argument("--version", action="version", version=f"gisnet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        modname = f"{__name__}.{name}"
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name == modname:
                continue
            raise
        mod.add_parser(sub)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _configure_logging(args: argparse.Namespace) -> None:
    quiet = getattr(args, "quiet", False)
    verbose = getattr(args, "verbose", False)
    level = logging.ERROR if quiet else (logging.DEBUG if verbose else logging.WARNING)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("gisnet: %(levelname)s: %(message)s"))
    root = logging.getLogger("gisnet")
    root.handlers = [h for h in root.handlers if not isinstance(h, _StderrHandler)]
    root.addHandler(handler)
    root.setLevel(level)


def _join_negative_points(argv: list[str]) -> list[str]:
    """``--point -73.9,41.7`` as ``--point=-73.9,41.7``: argparse takes a value
    starting with ``-`` for an option unless it is a plain number, so western
    longitudes (and negative X) would be a usage error."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a == "--point" and nxt is not None and len(nxt) > 1 and nxt[0] == "-" \
                and (nxt[1].isdigit() or nxt[1] == "."):
            out.append(f"--point={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _exit_now(rc: int) -> None:
    """End the process now, its output flushed and its log closed, without freeing
    its objects one by one: what a run kept (``args.results``: a county's millions of
    shapes and rows) would take the interpreter a second or two to take apart, after
    every file is written and published."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
            stream.flush()
    os._exit(rc)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gisnet`` console script."""
    parser = build_parser()
    args = parser.parse_args(_join_negative_points(sys.argv[1:] if argv is None else argv))
    _configure_logging(args)
    try:
        from .common import resolve_town_source

        resolve_town_source(args)
        rc = int(args.func(args) or 0)
        if argv is None and getattr(args, "results", None) is not None:
            _exit_now(rc)  # the process's own command, its work done and published
        return rc
    except GisnetError as exc:
        print(f"gisnet: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gisnet: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
