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
        "exceedance list the industrial users upstream of the manhole, largest process "
        "flow first. Unknown parameters and units and malformed rows are reported. Exit "
        "status 1 when something exceeds a limit.",
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
        from ..io import refuse_input_as_output

        refuse_input_as_output(args.csv_out, town, args.csv, what="findings CSV")
    G = build_graph(args, town)
    res = check_samples(town, G, args.csv)
    if args.csv_out:
        from ..io import atomic_path

        with atomic_path(args.csv_out, "findings CSV") as tmp:
            res.to_csv(tmp, index=False)
    exc = res[res["kind"] == "exceedance"]
    prob = res[res["kind"] == "problem"]
    say(args, f"{len(exc)} exceedance(s), {len(prob)} problem(s) in {args.csv}")
    for r in exc.itertuples():
        say(args, f"EXCEEDANCE {r.manhole_id} {r.start:%Y-%m-%d %H:%M}: {r.message} "
                  f"[{r.section}] (lines {r.lines})")
        say(args, f"  upstream users: {r.suspects or 'none known'}")
    for r in prob.itertuples():
        say(args, f"PROBLEM {r.rule}: {r.message}")
    return 1 if len(exc) else 0
