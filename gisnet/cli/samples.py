"""``gisnet samples``: check lab results against the profile's limits."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_town_options, build_graph, load_town, say


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "samples",
        help="check sample results (CSV) against the limits; name upstream suspects",
        description="Check a CSV of results (columns manhole_id,datetime,parameter,value,"
        "unit) against the profile's limits, the hourly rule and the slug rule; for each "
        "finding list the industrial users upstream of the manhole, largest process flow "
        "first. A limit on the sewage as it arrives at the treatment plant is a violation "
        "only at the plant (or on the flow-weighted plant average); a result above it at a "
        "user's manhole is a screening exceedance. A result above normal strength is the "
        "basis of surcharge, not a violation. Unknown parameters and units and malformed "
        "rows are reported. Exit status 1 when something exceeds a limit (a violation).",
    )
    p.add_argument("csv", type=Path, help="results file")
    add_town_options(p)
    p.add_argument("--csv-out", type=Path, metavar="PATH", help="also write the findings as CSV")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..sampling import check_samples

    town = load_town(args)
    if args.csv_out:
        from ..output import refuse_input_as_output

        refuse_input_as_output(args.csv_out, town, args.csv, what="findings CSV")
    G = build_graph(args, town)
    res = check_samples(town, G, args.csv)
    if args.csv_out:
        from ..output import atomic_path
        from ..output.cells import write_csv

        with atomic_path(args.csv_out, "findings CSV") as tmp:
            write_csv(res, tmp)
    labels = {"exceedance": "EXCEEDANCE", "screening_exceedance": "SCREENING",
              "above_normal_strength": "ABOVE NORMAL STRENGTH"}
    counts = res["kind"].value_counts()
    say(args, f"{counts.get('exceedance', 0)} exceedance(s), "
              f"{counts.get('screening_exceedance', 0)} screening exceedance(s), "
              f"{counts.get('above_normal_strength', 0)} above normal strength, "
              f"{counts.get('narrative', 0)} narrative, "
              f"{counts.get('problem', 0)} problem(s) in {args.csv}")
    for kind, label in labels.items():
        for r in res[res["kind"] == kind].itertuples():
            say(args, f"{label} {r.manhole_id} {r.start:%Y-%m-%d %H:%M}: {r.message} "
                      f"[{r.section}] (lines {r.lines})")
            say(args, f"  upstream users: {r.suspects or 'none known'}")
    for r in res[res["kind"] == "narrative"].itertuples():
        say(args, f"NARRATIVE {r.parameter} ({r.rule}): {r.message} (lines {r.lines})")
    for r in res[res["kind"] == "problem"].itertuples():
        say(args, f"PROBLEM {r.rule}: {r.message}")
    return 1 if counts.get("exceedance", 0) else 0
