"""``gisnet whatif``: what one proposed connection changes downstream."""

from __future__ import annotations

import argparse

from ..serialize import dumps_text
from .common import (
    add_page_options,
    add_town_options,
    load_town_for_point,
    pct,
    progress,
    say,
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "whatif",
        help="add a proposed flow at a parcel or point and see what crosses the threshold",
        description="Add a proposed average flow at a parcel's connection point (or at a "
        "point projected onto the nearest eligible main) and report the connection point, "
        "the control manhole, every downstream pipe's utilization before and after, the "
        "pipes and plant that cross the threshold and the approvals the profile triggers. "
        "With --point, --crs is the CRS of the point (the town keeps its working CRS).",
    )
    add_town_options(p, writes=True)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--parcel", metavar="ID", help="parcel to connect")
    where.add_argument("--point", metavar="X,Y", help="point to connect (see --crs)")
    p.add_argument("--flow-gpd", type=float, required=True, metavar="GPD",
                   help="proposed average daily flow, gallons per day")
    p.add_argument("--industrial", action="store_true", help="the flow is industrial wastewater")
    p.add_argument("--preliminary-treatment", action="store_true",
                   help="preliminary treatment is required (Poughkeepsie § 168-22.5G(4))")
    p.add_argument("--cooling-water", action="store_true",
                   help="the discharge includes industrial cooling water (§ 168-22.2E)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--map", action="store_true", help="also write OUT/whatif.html")
    add_page_options(p, "with --map, a page")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..capacity import whatif
    from ..pipeline import analyse

    town, point, point_crs = load_town_for_point(args)
    done = analyse(town, only={"capacity"}, control_paths=False,
                   progress=lambda m: progress(args, m))
    G, res = done.graph, done.capacity
    assert G is not None  # the capacity step builds the graph (strict: or raises)
    w = whatif(town, G, res, parcel_id=args.parcel, point=point, crs=point_crs,
               flow_gpd=args.flow_gpd, industrial=args.industrial,
               preliminary_treatment=args.preliminary_treatment,
               cooling_water=args.cooling_water)
    if args.map:
        from ..maps import whatif_map
        from ..output import ensure_out_dir

        ensure_out_dir(args.out)
        whatif_map(town, w, args.out / "whatif.html", self_contained=not args.cdn)
    if args.json:
        say(args, dumps_text(w.to_dict()))
        return 0
    c = w.connection
    kind = "industrial " if w.industrial else ""
    say(args, f"proposed {kind}flow: {w.flow_gpd:,.0f} gpd")
    who = f"parcel {c['parcel_id']}" if c.get("parcel_id") else "point"
    at = f" at ({c['x']:.1f}, {c['y']:.1f})" if c.get("x") is not None else ""
    dist = (f", {c['tap_distance_ft']:.1f} ft from its upstream end"
            if c.get("tap_distance_ft") is not None else "")
    say(args, f"connection point: {who} on main {c['main_id']} (edge {c['edge_key']}){dist}{at}")
    say(args, f"control manhole: {w.control_manhole or 'none found downstream'}")
    say(args, f"downstream pipes (peak utilization before -> after, threshold "
              f"{w.threshold:.0%}):")
    for r in w.pipes.itertuples():
        mark = "  CROSSES" if r.crosses_threshold else ("  over" if r.over_threshold_after
                                                       else "")
        say(args, f"  {r.main_id:<14} {pct(r.utilization_before):>7} -> "
                  f"{pct(r.utilization_after):>7}{mark}")
    say(args, "pipes crossing the threshold: " + (", ".join(w.crossings) or "none"))
    for r in w.plants.itertuples():
        mark = " CROSSES" if r.crosses_threshold else (" over" if r.over_threshold_after else "")
        if r.missing_months:
            say(args, f"plant {r.plant_id}: cannot say: months missing {r.missing_months}")
            continue
        say(args, f"plant {r.plant_id}: {pct(r.ratio_before)} -> {pct(r.ratio_after)} of "
                  f"design flow ({r.basis}){mark}")
    if w.approvals:
        say(args, "approvals and reviews triggered:")
        for a in w.approvals:
            say(args, f"  - {a['authority']}: {a['reason']} [{a['section']}]")
            say(args, f"    {a['text']}")
    else:
        say(args, "approvals and reviews triggered: none")
    for n in w.notes:
        say(args, f"note: {n}")
    if args.map:
        say(args, f"wrote {args.out / 'whatif.html'}")
    return 0
