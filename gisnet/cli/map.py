"""``gisnet map NAME``: write web map pages from the results GeoPackage.

Reads the result layers already in ``OUT/gisnet-results.gpkg`` (written by
``gisnet run``, ``graph``, ``obligations``, ``sampling-plan``, ``capacity``),
loads the town for its name, profile and base layers, and writes
``OUT/NAME.html`` (or every page whose inputs exist, for ``all``).
"""

from __future__ import annotations

import argparse

from .common import add_page_options, add_town_options, load_town, progress, say

NAMES = ("network", "obligations", "sampling", "capacity", "index", "all")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "map",
        help="write web map pages (network, obligations, sampling, capacity, index, all)",
        description="Write planners' web maps from the layers of OUT/gisnet-results.gpkg. "
                    "Pages carry their scripts and render offline unless --cdn.",
    )
    p.add_argument("name", choices=NAMES, metavar="NAME",
                   help="page to write: " + ", ".join(NAMES))
    add_page_options(p)
    p.add_argument("--tiles", choices=("auto", "always", "never"), default="auto",
                   help="draw the big layers (parcels, mains ...) from vector tiles in "
                        "DIR/tiles/, for `gisnet serve --maps DIR`: auto = when the town "
                        "has over 75,000 parcels (default), always, never")
    add_town_options(p, writes=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..errors import NotFoundError
    from ..maps import PAGES, read_results, write_maps
    from ..output import RESULTS_FILE, check_manifest, refuse_inputs_as_outputs, update_manifest
    from .run import profile_file

    results = read_results(args.out)  # completes an interrupted publish first
    stale = check_manifest(args.out, [RESULTS_FILE])
    for line in stale:
        warn(f"{Path(args.out) / RESULTS_FILE} does not match "
             f"{Path(args.out) / 'gisnet-manifest.json'} ({line}); the pages written now "
             "follow the GeoPackage and the manifest is left as it is")
    progress(args, f"reading {args.layers}")
    town = load_town(args)
    names = PAGES if args.name == "all" else (args.name,)
    refuse_inputs_as_outputs([Path(args.out) / f"{n}.html" for n in names], town,
                             *profile_file(args), what="map page")
    progress(args, f"writing {', '.join(names)} to {args.out}")
    paths = write_maps(town, results, args.out, self_contained=not args.cdn,
                       names=names, tiles=args.tiles)
    if paths and not stale:
        update_manifest(args.out, paths)
    if not paths:
        raise NotFoundError(
            f"no inputs for the {args.name} map in {args.out}; run the analysis first "
            "(gisnet run, or the command that writes its layers)", path=args.out)
    for path in paths:
        say(args, f"{path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def warn(text: str) -> None:
    """A warning line on stderr (always: it says the outputs do not belong together)."""
    import sys

    print(f"gisnet: WARNING: {text}", file=sys.stderr)
