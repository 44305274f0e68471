"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..schema import ROLES

DEFAULT_LAYERS = Path("layers") / "sample"
DEFAULT_OUT = Path("maps")


def add_town_options(p: argparse.ArgumentParser, *, writes: bool = False) -> None:
    """--layers, --profile, --engine, --crs, --snap-tolerance-ft, --ROLE PATH,
    --quiet/--verbose, and --out for commands that write."""
    g = p.add_argument_group("town")
    g.add_argument("--layers", type=Path, default=DEFAULT_LAYERS, metavar="DIR",
                   help="folder holding the town's gisnet.toml (default: layers/sample)")
    g.add_argument("--profile", metavar="P",
                   help="jurisdiction profile: built-in name or path to a profile TOML")
    g.add_argument("--engine", choices=("pyogrio", "fiona"), default="pyogrio",
                   help="OGR reading engine (default: pyogrio with Arrow)")
    g.add_argument("--crs", metavar="CRS", help="working CRS (overrides the town file)")
    g.add_argument("--snap-tolerance-ft", type=float, metavar="FT",
                   help="snap tolerance in feet (overrides the town file)")
    for role in ROLES:
        g.add_argument(f"--{role}", metavar="PATH", dest=f"path_{role}",
                       help=f"read the {role} layer from PATH (overrides the town file)")
    if writes:
        p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                       help="output folder (default: maps/); results go to DIR/gisnet-results.gpkg")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")


def overrides(args: argparse.Namespace) -> dict[str, str]:
    """Role -> path given on the command line."""
    return {r: getattr(args, f"path_{r}") for r in ROLES if getattr(args, f"path_{r}", None)}


def load_town(args: argparse.Namespace):  # -> Town
    """Load the town named by the common options."""
    from ..io import load_town as _load

    return _load(
        args.layers,
        profile=args.profile,
        overrides=overrides(args),
        engine=args.engine,
        crs=args.crs,
        snap_tolerance_ft=args.snap_tolerance_ft,
    )


def progress(args: argparse.Namespace, message: str) -> None:
    """A progress line on stderr, only on a terminal and unless --quiet."""
    if not getattr(args, "quiet", False) and sys.stderr.isatty():
        print(f"... {message}", file=sys.stderr, flush=True)


def say(args: argparse.Namespace, text: str) -> None:
    """Print a result line on stdout unless --quiet."""
    if not getattr(args, "quiet", False):
        print(text)
