"""``gisnet validate``: what was read, mapped and found, per layer.

Exit status 0 when the town is usable (warnings allowed), 2 when it is not.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..errors import GisnetError
from .common import add_town_options, load_town, progress


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check a town's layers: what was read, mapped, missing, and every problem",
        description="Read the town's layers and print, per layer: the source, features read "
                    "and kept, the column mapping (canonical <- source), missing columns and "
                    "every finding. Exit 0 when usable (warnings allowed), 2 when not.",
    )
    add_town_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--graph", action=argparse.BooleanOptionalAction, default=True,
                   help="build the sewer graph and include its data-quality findings "
                        "(default; --no-graph checks the layers only)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..validate import error_report, validate_town

    progress(args, f"reading {args.layers}")
    # the report below prints every finding; do not log them a second time
    report_log = logging.getLogger("gisnet.report")
    saved = report_log.level
    if not args.verbose:
        report_log.setLevel(logging.ERROR)
    try:
        town = load_town(args)
        extra = G = None
        if args.graph and len(town.layers["mains"]):
            from ..graph import build_sewer_graph

            progress(args, "building the sewer graph")
            G = build_sewer_graph(town)
            extra = G.graph["report"]
    except GisnetError as exc:
        if not args.json:
            raise
        print(error_report(exc, town=str(args.layers)).to_json())
        print(f"gisnet: error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        report_log.setLevel(saved)
    report = validate_town(town, extra, graph=G)
    if args.json:
        print(report.to_json())
    elif not args.quiet:
        print(report.to_text())
    return report.exit_code
