"""``gisnet check-swmm``: gisnet's flows and capacities against SWMM's own run."""

from __future__ import annotations

import argparse

from .common import add_town_options, load_town, progress, say

INP_FILE = "gisnet-swmm.inp"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "check-swmm",
        help="export the network to SWMM, run it, and compare flows and capacities",
        description="Export the town as a SWMM model (DIR/gisnet-swmm.inp), run it with the "
        "SWMM 5 engine (pyswmm), and write the swmm_comparison layer: per conduit gisnet's "
        "accumulated average flow against SWMM's steady flow, gisnet's Manning capacity and "
        "utilization against SWMM's depth over full depth and surcharge; differences over "
        "1 %% are findings, explained.",
    )
    add_town_options(p, writes=True)
    p.add_argument("--routing", choices=("KINWAVE", "DYNWAVE"),
                   help="flow routing (default: kinematic wave unless a node splits the flow)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..extras import require
    from ..output import write_results
    from ..output.writing import ensure_out_dir
    from ..swmm import FLOW_RTOL, check_town

    require("swmm", "gisnet check-swmm", ["pyswmm"])
    town = load_town(args)
    out = ensure_out_dir(args.out)
    layer, run_, ex, report = check_town(town, out / INP_FILE, routing=args.routing,
                                         progress=lambda m: progress(args, m))
    # only its own layer: a run's quality layer in the same file stays as it is; the
    # findings are logged (stderr) and their explanations are in the layer
    path = write_results(args.out, {"swmm_comparison": layer})
    diff = layer["flow_diff_pct"].abs() > FLOW_RTOL * 100
    say(args, f"SWMM ({ex.routing}): continuity error {run_.flow_routing_error_pct:.3f} % "
              f"(routing), {len(layer)} conduit(s) compared")
    say(args, f"flows within {FLOW_RTOL:.0%}: {int((~diff).sum())}; differing: {int(diff.sum())} "
              f"({len(report)} finding(s) swmm_flow_difference)")
    sur = int(layer["swmm_surcharged"].sum())
    say(args, f"surcharged in SWMM: {sur}; largest depth/full depth "
              f"{layer['swmm_capacity_ratio'].max():.2f}")
    say(args, f"wrote {out / INP_FILE} and swmm_comparison to {path}")
    return 0
