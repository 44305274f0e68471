"""``gisnet figure KIND``: a printable map (PDF or PNG) for a board packet."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_town_options, load_town, progress, say


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ..figures import KINDS, PAGE_SIZES

    p = subparsers.add_parser(
        "figure",
        help="a printable map (obligations, capacity, sampling, network) as PDF or PNG",
        description="Run the analysis KIND needs and write one printable page: title, map, "
                    "legend, scale bar (feet/miles), north arrow, date, data sources and "
                    "profile. No base map tiles: it prints offline.",
    )
    p.add_argument("kind", choices=tuple(KINDS), metavar="KIND",
                   help="what to map: " + ", ".join(KINDS))
    add_town_options(p)
    p.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="the file to write: .pdf or .png")
    p.add_argument("--page", choices=tuple(PAGE_SIZES), default="letter",
                   help="paper size (default: letter)")
    p.add_argument("--landscape", action="store_true", help="landscape orientation")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..extras import require
    from ..figures import KINDS, write_figure
    from ..pipeline import analyse

    require("pdf", "gisnet figure", ["matplotlib"])
    town = load_town(args)
    progress(args, f"running the {KINDS[args.kind]} analysis")
    res = analyse(town, only=[KINDS[args.kind]])
    path = write_figure(town, res, args.kind, args.out, page=args.page,
                        landscape=args.landscape)
    say(args, f"{path} ({args.page}{', landscape' if args.landscape else ''}, "
              f"{path.stat().st_size / 1e3:.0f} kB)")
    return 0
