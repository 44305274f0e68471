"""``gisnet sampling-plan``: control manholes of every building and industrial user."""

from __future__ import annotations

import argparse

from .common import add_town_options, load_town, progress, say


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "sampling-plan",
        help="control manholes of every building and user; SIU status of industrial users",
        description="Find each building's connection point and control manhole (the first "
        "public, active manhole downstream), and for each industrial user its control "
        "manhole, plant, Significant Industrial User status (40 CFR 403.3(v)) and local "
        "review flag; write the control_manholes, control_paths and sampling_plan layers.",
    )
    add_town_options(p, writes=True)
    p.add_argument("--no-paths", action="store_true",
                   help="skip the control_paths line layer (faster on large towns)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..output import write_results
    from ..pipeline import analyse

    town = load_town(args)
    res = analyse(town, only={"control"}, control_paths=not args.no_paths,
                  progress=lambda m: progress(args, m))
    assert res.control is not None  # the step asked for (strict: it raises or gives one)
    layers = res.control.layers()
    path = write_results(args.out, layers)
    cm = res.control.control_manholes
    plan = res.control.sampling_plan
    found = cm["control_manhole_id"].notna()
    say(args, f"connection points: {len(cm)} ({int((cm['source'] == 'lateral').sum())} by "
              f"lateral), {int(found.sum())} with a control manhole, "
              f"{int((~found).sum())} without")
    if plan is not None and len(plan):
        say(args, f"industrial users: {len(plan)}, significant (SIU): {int(plan['siu'].sum())}, "
                  f"for local review: {int(plan['review'].sum())}")
        for r in plan.itertuples():
            flags = ", ".join(x for x in (r.siu_reason if r.siu else "",
                                          r.review_reason if r.review else "") if x)
            say(args, f"  {r.user_id:<10} control manhole {r.control_manhole_id or '-':<12} "
                      f"plant {r.plant_id or '-':<8} {'SIU' if r.siu else '   '} "
                      f"{'REVIEW' if r.review else '      '} {flags}")
    for u in res.unavailable:
        say(args, f"{u.analysis.replace('_', ' ')}: not available: {u.reason}")
    written = ", ".join(layers)
    say(args, f"wrote {written} to {path}")
    return 0
