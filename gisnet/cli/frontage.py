"""``gisnet frontage``: street front footage, and pro-rata shares of a main's cost."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..errors import ConfigError
from .common import add_town_options, load_town, say


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "frontage",
        help="front footage along sewered streets; pro-rata shares of a main's cost",
        description="With --main and --cost: each abutting parcel's share of the main's cost "
                    "by street front footage (Berlin's rule for sewers laid at the City's "
                    "expense). Without --main: the frontage of every parcel along sewered "
                    "streets, written as the frontage layer of OUT/gisnet-results.gpkg.",
    )
    add_town_options(p, writes=True)
    p.add_argument("--main", metavar="ID", help="the main whose cost is shared")
    p.add_argument("--cost", type=float, metavar="USD", help="cost of the main, in dollars")
    p.add_argument("--csv", type=Path, metavar="PATH", help="also write the shares as CSV")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..obligations import frontage, frontage_shares

    if (args.main is None) != (args.cost is None):
        raise ConfigError("give --main and --cost together")
    if args.cost is not None and (not math.isfinite(args.cost) or args.cost < 0):
        raise ConfigError(f"--cost must be a non-negative number of dollars, not {args.cost}")
    town = load_town(args)
    if args.csv:
        from ..output import refuse_input_as_output

        refuse_input_as_output(args.csv, town, what="shares CSV")
    if args.main is None:
        from ..output import write_results

        f = frontage(town)
        path = write_results(args.out, {"frontage": f})
        say(args, f"{len(f)} parcels front on sewered streets, {f['frontage_ft'].sum():,.1f} ft "
                  f"in all; wrote frontage to {path}")
        return 0
    s = frontage_shares(town, args.main, args.cost)
    if args.csv:
        from ..output import atomic_path
        from ..output.cells import write_csv

        with atomic_path(args.csv, "shares CSV") as tmp:
            write_csv(s, tmp)
    sec = town.profile.connection.frontage_section or "(the profile names no section)"
    if s.empty:
        say(args, f"main {args.main}: no parcel fronts on it")
        return 0
    approx = " (approximate: no street holds it, so a default-width strip was used)" \
        if bool(s["approximate"].iloc[0]) else ""
    say(args, f"main {args.main}: ${args.cost:,.2f} shared by {len(s)} parcels over "
              f"{s['frontage_ft'].sum():,.1f} ft of frontage{approx}; {sec}")
    w = max(9, *(len(str(x)) for x in s["parcel_id"]))
    say(args, f"{'parcel_id':<{w}}  {'frontage_ft':>12}  {'share':>8}  {'share_usd':>14}")
    for r in s.itertuples():
        say(args, f"{r.parcel_id!s:<{w}}  {r.frontage_ft:>12,.1f}  {r.share:>8.2%}  "
                  f"{r.share_usd:>14,.2f}")
    if args.csv:
        say(args, f"wrote {args.csv}")
    return 0
