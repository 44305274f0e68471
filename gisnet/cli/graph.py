"""``gisnet graph``: build the directed sewer graph and write it with its quality report.

Writes the layers ``graph_nodes``, ``graph_edges`` and ``quality`` (the
loader's findings followed by the graph's) into ``OUT/gisnet-results.gpkg``
and prints a summary: nodes, edges, pieces, outlets, cycles and the number of
findings of each kind.
"""

from __future__ import annotations

import argparse

from ..rules import DEFAULT_PLANT_TOLERANCE_FT
from ..serialize import dumps_text
from .common import add_town_options, load_town, progress, say


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "graph",
        help="build the directed sewer graph and its data-quality report",
        description="Snap the mains to the manholes and to each other, split mains at "
                    "T connections, orient every main (from/to ids, inverts, digitised "
                    "order) and write graph_nodes, graph_edges and quality to "
                    "OUT/gisnet-results.gpkg.",
    )
    add_town_options(p, writes=True)
    p.add_argument("--plant-tolerance-ft", type=float, metavar="FT",
                   help="how far a plant may be from the nearest node and still be snapped "
                        "to it (default: the town file's plant_tolerance_ft, else "
                        f"{DEFAULT_PLANT_TOLERANCE_FT:g} ft)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..graph import build_sewer_graph, graph_summary
    from ..output import write_results
    from ..pipeline import analyse

    progress(args, f"reading {args.layers}")
    town = load_town(args)
    progress(args, "building the sewer graph")
    G = build_sewer_graph(town, snap_tolerance_ft=args.snap_tolerance_ft,
                          plant_tolerance_ft=args.plant_tolerance_ft)
    res = analyse(town, graph=G, only={"quality"})
    quality = res.quality
    assert quality is not None  # the step asked for (never caught: strict)
    progress(args, f"writing {args.out}")
    path = write_results(args.out, res.layers())
    summary = graph_summary(G)
    if args.json:
        say(args, dumps_text({"town": town.name, "results": str(path), **summary}))
        return 0
    say(args, f"{town.name}: sewer graph at {summary['snap_tolerance_ft']:g} ft snap tolerance")
    outs = list(map(str, G.graph["outlets"]))
    outlets = (", ".join(outs[:10]) + (f" and {len(outs) - 10} more" if len(outs) > 10 else "")
               ) or "none"
    say(args, f"  {summary['nodes']} nodes, {summary['edges']} edges ({summary['mains']} mains, "
              f"{summary['length_ft'] / 5280:.1f} mi), {summary['pieces']} piece(s), "
              f"outlets: {outlets}, {summary['cycles']} cycle(s)")
    if summary["findings"]:
        say(args, "  findings: " + ", ".join(f"{k} {v}" for k, v in summary["findings"].items()))
    else:
        say(args, "  no findings")
    say(args, f"  wrote graph_nodes, graph_edges, quality ({len(quality)} rows) to {path}")
    return 0
