"""``gisnet capacity``: pipe utilization and plant flow against the thresholds."""

from __future__ import annotations

import argparse

from .common import add_town_options, load_town, pct, progress, say


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "capacity",
        help="flows, full-flow capacity and the 80 %% threshold for every pipe and plant",
        description="Accumulate parcel and industrial flows down the sewer graph, compare "
        "each pipe's peak flow with its Manning full-flow capacity and each plant's "
        "average flow with its design flow; write the pipes_capacity, plants and "
        "plant_increase layers (the plant's monthly increase of SS, BOD and grease where "
        "the profile has such a rule).",
    )
    add_town_options(p, writes=True)
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="list the N most utilized pipes (default 10)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..output import write_results
    from ..pipeline import analyse

    town = load_town(args)
    res = analyse(town, only={"capacity"}, control_paths=False,
                  progress=lambda m: progress(args, m)).capacity
    path = write_results(args.out, res.layers())
    pipes = res.pipes
    cfg = res.cfg
    no_cap = pipes["capacity_gpd"].isna()
    say(args, f"pipes: {len(pipes)} ({int(pipes['computed'].sum())} with flows computed, "
              f"{int(no_cap.sum())} without capacity)")
    say(args, f"over {cfg['utilization_threshold']:.0%}: {int(pipes['over_threshold'].sum())}, "
              f"deficient (> {cfg['deficient']:.0%}): {int(pipes['deficient'].sum())}, "
              f"surcharged (> {cfg['surcharged']:.0%}): {int(pipes['surcharged'].sum())}")
    if len(res.splits):
        say(args, f"flow splits at {len(res.splits)} node(s): "
                  + ", ".join(res.splits["node_id"].head(10)))
    for ids in res.cycles:
        say(args, f"cycle not computed: {', '.join(ids)}")
    top = pipes[pipes["utilization"].notna()].nlargest(max(args.top, 0), "utilization")
    if len(top):
        say(args, "most utilized pipes:")
        for r in top.itertuples():
            say(args, f"  {r.main_id:<14} {r.diameter_in:>5.0f} in  peak {r.peak_flow_gpd:>12,.0f}"
                      f" gpd  capacity {r.capacity_gpd:>12,.0f} gpd  {pct(r.utilization):>7}")
    for r in res.plants.itertuples():
        window = f" ({r.window})" if r.window else ""
        gaps = f"; months missing: {r.gaps}" if r.gaps else ""
        over = "OVER" if r.over_threshold else "below"
        say(args, f"plant {r.plant_id}: {r.avg_flow_mgd:.3f} of {r.design_flow_mgd:.3f} MGD = "
                  f"{pct(r.ratio)} by {r.basis}{window}, {over} {r.threshold:.0%}{gaps}")
    inc = res.plant_increase
    if res.plant_increase_note:
        say(args, f"plant monthly increase: {res.plant_increase_note}")
    elif inc is not None and len(inc):
        over, unsure = inc[inc["status"] == "over"], inc[inc["status"] == "cannot_say"]
        say(args, f"plant monthly increase ({inc['section'].iloc[0]}, read as "
                  f"{inc['reading'].iloc[0]}): {len(inc)} month(s) and constituent(s), "
                  f"{len(over)} in excess of {inc['max_increase_pct'].iloc[0]:g} %, "
                  f"{len(unsure)} cannot say (months missing)")
        for r in over.itertuples():
            say(args, f"  {r.message}")
    say(args, f"wrote {', '.join(res.layers())} to {path}")
    return 0
