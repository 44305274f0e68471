"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..errors import ConfigError
from ..schema import ROLES
from ..townfile import TOWN_FILE, default_layers_dir

DEFAULT_OUT = Path("maps")


def out_target(text: str) -> Path | str:
    """``--out``: a folder, or a database URL (``postgresql://...``) kept as written."""
    from ..io.postgis import is_database

    return text if is_database(text) else Path(text)


def add_town_options(p: argparse.ArgumentParser, *, writes: bool = False,
                     database: bool = False) -> None:
    """--layers, --profile, --engine, --crs, --snap-tolerance-ft, --ROLE PATH,
    --quiet/--verbose, and --out for commands that write (``database``: ``--out``
    may be a PostGIS URL, default None: the town file's ``[output]``, else maps/)."""
    g = p.add_argument_group("town")
    g.add_argument("--layers", type=Path, default=None, metavar="DIR",
                   help="folder holding the town's gisnet.toml (default: the current folder, "
                        "which must hold one; write it with 'gisnet init')")
    g.add_argument("--sample", action="store_true",
                   help="use the sample town bundled with gisnet (to edit a copy: "
                        "'gisnet sample DIR')")
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
    if writes and database:
        p.add_argument("--out", type=out_target, default=None, metavar="DIR|URL",
                       help="output folder, or a PostGIS database "
                            "postgresql://user@host:port/db?schema=NAME (default: the town "
                            "file's [output] path, else maps/)")
    elif writes:
        p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                       help="output folder (default: maps/); results go to DIR/gisnet-results.gpkg")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")


def add_page_options(p: argparse.ArgumentParser, what: str = "map pages") -> None:
    """--cdn (and --self-contained, kept as a no-op alias of the default): the pages are
    self-contained unless --cdn; read ``not args.cdn``."""
    p.add_argument("--cdn", action="store_true",
                   help=f"{what}: load Leaflet from a CDN (smaller files, but blank "
                        "without a network); by default every script and stylesheet is "
                        "inside the page, which renders offline (only the base map tiles "
                        "need a network)")
    p.add_argument("--self-contained", action="store_true",
                   help="accepted for compatibility and ignored: pages are self-contained "
                        "by default (see --cdn)")


def overrides(args: argparse.Namespace) -> dict[str, str]:
    """Role -> path given on the command line."""
    return {r: getattr(args, f"path_{r}") for r in ROLES if getattr(args, f"path_{r}", None)}


def resolve_town_source(args: argparse.Namespace) -> None:
    """Settle ``args.layers``: the town folder a command reads, never a silent default.

    ``--sample`` is the bundled sample town; ``--layers DIR`` is DIR; else the
    current folder when it holds a ``gisnet.toml``; else, with layer paths
    (``--parcels`` ...), a town made of those paths alone (``args.layers``
    None). With none of these it is a :class:`~gisnet.errors.ConfigError`
    saying how to start.
    """
    if not hasattr(args, "path_mains") or getattr(args, "town_source_resolved", False):
        return  # a command without town options, or settled already
    if getattr(args, "maps", None) is not None:
        return  # gisnet serve --maps DIR: pages and tiles only, no town
    if getattr(args, "results", None) is not None:
        return  # gisnet serve --results DIR: a finished run's results, no town loaded
    args.town_source_resolved = True
    if getattr(args, "sample", False):
        if args.layers is not None:
            raise ConfigError("give either --sample or --layers DIR, not both")
        args.layers = default_layers_dir()
        return
    if args.layers is not None:
        return
    if (Path.cwd() / TOWN_FILE).is_file():
        args.layers = Path(".")
        return
    if overrides(args):
        return
    cmd = getattr(args, "command", None) or "run"
    raise ConfigError(
        f"no {TOWN_FILE} in this folder ({Path.cwd()}) and no --layers DIR: run "
        f"'gisnet init' here to write one for the layers in this folder, or "
        f"'gisnet {cmd} --sample' for the bundled sample town ('gisnet sample DIR' "
        f"copies it out to edit)")


def load_town(args: argparse.Namespace, *, announce: bool = True):  # -> Town
    """Load the town named by the common options (``announce``: a progress line
    first; ``gisnet run`` reports the load through its own progress display)."""
    from ..io import load_town as _load
    from ..output import RESULTS_FILE, refuse_input_as_output

    resolve_town_source(args)
    if announce:
        progress(args, f"loading town from {args.layers or 'the layers given'}")
    town = _load(
        args.layers,
        profile=args.profile,
        overrides=overrides(args),
        engine=args.engine,
        crs=args.crs,
        snap_tolerance_ft=args.snap_tolerance_ft,
    )
    if getattr(args, "out", None) is not None and isinstance(args.out, Path):
        refuse_input_as_output(Path(args.out) / RESULTS_FILE, town, what="results GeoPackage")
    return town


def progress(args: argparse.Namespace, message: str) -> None:
    """A progress line on stderr, only on a terminal and unless --quiet."""
    if not getattr(args, "quiet", False) and sys.stderr.isatty():
        print(f"... {message}", file=sys.stderr, flush=True)


def say(args: argparse.Namespace, text: str) -> None:
    """Print a result line on stdout unless --quiet (flushed: a log watcher sees it at once)."""
    if not getattr(args, "quiet", False):
        print(text, flush=True)


def parse_point(text: str) -> tuple[float, float]:
    """``X,Y`` from the command line as two floats."""
    from ..errors import ConfigError

    try:
        x, y = (float(t) for t in text.split(","))
    except ValueError:
        raise ConfigError(f"--point must be X,Y (two numbers), not {text!r}") from None
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ConfigError(f"--point must be X,Y (two finite numbers), not {text!r}")
    return x, y


def load_town_for_point(args: argparse.Namespace):  # -> (Town, point | None, crs | None)
    """Load the town for a command taking ``--point X,Y``.

    With ``--point``, ``--crs`` names the point's CRS and the town keeps its own
    working CRS; without it, ``--crs`` is the working CRS as everywhere else.
    """
    import copy

    point = parse_point(args.point) if getattr(args, "point", None) else None
    point_crs = None
    town_args = args
    if point is not None and args.crs:
        point_crs = args.crs
        town_args = copy.copy(args)
        town_args.crs = None
    return load_town(town_args), point, point_crs


def build_graph(args: argparse.Namespace, town):  # -> nx.MultiDiGraph
    """The town's sewer graph, with a progress line."""
    from ..graph import build_sewer_graph

    progress(args, "building sewer graph")
    return build_sewer_graph(town)


def pct(x: float | None) -> str:
    """A ratio as a percentage, or "unknown" for a missing or non-finite value."""
    import math

    return "unknown" if x is None or not math.isfinite(x) else f"{x:.1%}"
