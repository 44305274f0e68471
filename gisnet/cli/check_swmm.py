"""``gisnet check-swmm``: gisnet's flows and capacities against SWMM's own run."""

from __future__ import annotations

import argparse
import sys

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
        "1 %% are findings, explained. When the town came from a SWMM model (--model, or "
        "the model import-swmm remembered in the town file), SWMM also runs that model in "
        "dry weather and swmm_original_comparison compares each link's average flow; "
        "differences over 5 %% are findings, each with its reason. Exit status: 0 when "
        "every check ran; 1 when SWMM refuses to run the original model (the comparison "
        "with it could not be made: SWMM's error and its report are named; the export "
        "and its continuity are still checked and written); 2 on bad input or when SWMM "
        "refuses gisnet's own export.",
    )
    add_town_options(p, writes=True)
    p.add_argument("--routing", choices=("KINWAVE", "DYNWAVE"),
                   help="flow routing (default: kinematic wave unless a node splits the flow)")
    p.add_argument("--model", metavar="ORIGINAL.inp",
                   help="the SWMM model the town came from (default: the town file's "
                   "[swmm] model, written by import-swmm)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..errors import ConfigError
    from ..extras import require
    from ..output import write_results
    from ..output.writing import ensure_out_dir
    from ..pipeline import analyse
    from ..swmm import FLOW_RTOL, check_original, check_town
    from ..swmm.original import OriginalRefused

    require("swmm", "gisnet check-swmm", ["pyswmm"])
    town = load_town(args)
    original = args.model or town.settings.extra.get("swmm_model")
    if original is not None and not Path(original).is_file():
        raise ConfigError(f"SWMM model {original}: no such file ("
                          + ("--model" if args.model else "the town file's [swmm] model") + ")")
    out = ensure_out_dir(args.out)
    res = analyse(town, only={"capacity"}, control_paths=False,
                  progress=lambda m: progress(args, m))
    layer, run_, ex, report = check_town(town, out / INP_FILE, routing=args.routing,
                                         results=res)
    layers = {"swmm_comparison": layer}
    refused: OriginalRefused | None = None
    if original is not None:
        try:
            olayer, agr, orun, _ = check_original(town, original, out, results=res)
            layers["swmm_original_comparison"] = olayer
        except OriginalRefused as exc:
            refused = exc
    # only its own layers: a run's quality layer in the same file stays as it is; the
    # findings are logged (stderr) and their explanations are in the layers
    path = write_results(args.out, layers)
    diff = layer["flow_diff_pct"].abs() > FLOW_RTOL * 100
    say(args, f"SWMM ({ex.routing}): continuity error {run_.flow_routing_error_pct:.3f} % "
              f"(routing), {len(layer)} conduit(s) compared")
    say(args, f"flows within {FLOW_RTOL:.0%}: {int((~diff).sum())}; differing: {int(diff.sum())} "
              f"({len(report)} finding(s) swmm_flow_difference)")
    sur = int(layer["swmm_surcharged"].sum())
    say(args, f"surcharged in SWMM: {sur}; largest depth/full depth "
              f"{layer['swmm_capacity_ratio'].max():.2f}")
    if refused is not None:
        # not quiet: the comparison the user asked for failed, and the status says so
        print(f"comparison with the original model {refused.model} could not be made: "
              f"SWMM refuses to run it (dry-weather copy {refused.inp}): "
              + "; ".join(refused.errors) + f" (SWMM's report: {refused.rpt}); "
              "no swmm_original_comparison written; exit status 1", file=sys.stderr)
    elif original is not None:
        say(args, f"original model {Path(original).name} in dry weather (SWMM continuity "
                  f"error {orun.flow_routing_error_pct:.3f} % routing): " + agr.text())
    say(args, f"wrote {out / INP_FILE} and {', '.join(layers)} to {path}")
    return 1 if refused is not None else 0
