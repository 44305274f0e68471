"""``gisnet trace``: downstream from a parcel or point, or upstream from a manhole."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..serialize import dumps_text, to_jsonable
from .common import add_town_options, build_graph, load_town_for_point, say


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "trace",
        help="trace downstream from a parcel or point, or upstream from a manhole",
        description="Downstream (--parcel, --point): the connection point, the control "
        "manhole (first public, active manhole downstream of the tap), the plant and the "
        "pipes to it with lengths in feet. Upstream (--manhole ID --upstream): every pipe, "
        "parcel, building and industrial user draining to the manhole. With --point, --crs "
        "is the CRS of the point (the town keeps its working CRS).",
    )
    add_town_options(p)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--parcel", metavar="ID", help="trace downstream from this parcel")
    where.add_argument("--point", metavar="X,Y", help="trace downstream from this point")
    where.add_argument("--manhole", metavar="ID", help="manhole to trace (with --upstream)")
    p.add_argument("--upstream", action="store_true",
                   help="with --manhole: everything draining to it")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)
    return p


def _records(gdf: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON records, without the geometry (working CRS coordinates)."""
    return to_jsonable(pd.DataFrame(gdf).drop(columns="geometry", errors="ignore"))


def run(args: argparse.Namespace) -> int:
    from ..tracing import trace_downstream, trace_upstream

    if args.manhole and not args.upstream:
        raise ConfigError("--manhole needs --upstream (downstream traces start at --parcel "
                          "or --point)")
    if args.upstream and not args.manhole:
        raise ConfigError("--upstream needs --manhole ID")
    town, point, point_crs = load_town_for_point(args)
    G = build_graph(args, town)
    if args.manhole:
        res = trace_upstream(town, G, args.manhole)
        if args.json:
            out: dict[str, Any] = {k: _records(gdf) for k, gdf in res.items()}
            out["totals"] = dict(res["pipes"].attrs)
            say(args, dumps_text(out, indent=1))
            return 0
        pipes = res["pipes"]
        say(args, f"upstream of {args.manhole}: {len(pipes)} pipes "
                  f"({pipes['length_ft'].sum():,.0f} ft), {len(res['parcels'])} parcels, "
                  f"{len(res['buildings'])} buildings, {len(res['users'])} industrial users")
        skipped = [] if len(pipes) else [k for _, _, k in G.in_edges(args.manhole, keys=True)]
        if skipped:
            say(args, f"  not followed (storm, inactive or otherwise not carrying sewage): "
                      f"{', '.join(map(str, skipped))}")
        for k, v in res["pipes"].attrs.items():
            say(args, f"total {k}: {v:,.0f}")
        for r in res["users"].itertuples():
            flow = getattr(r, "process_flow_gpd", None)
            flow_s = "unknown" if flow is None or flow != flow else f"{flow:,.0f} gpd"
            say(args, f"  user {r.user_id}: {getattr(r, 'name', '') or ''} process flow "
                      f"{flow_s}, tap on {r.main_id}")
        return 0
    res = trace_downstream(town, G, parcel_id=args.parcel, point=point, crs=point_crs)
    c = res["connection"].iloc[0]
    if args.json:
        out = {k: v for k, v in res.items() if k not in ("connection", "path")}
        out["connection"] = {k: v for k, v in c.items() if k != "geometry"}
        out["connection"]["x"], out["connection"]["y"] = c.geometry.x, c.geometry.y
        out["path"] = _records(res["path"])
        say(args, dumps_text(out, indent=1))
        return 0
    say(args, f"connection point: main {c['main_id']} at {c['tap_distance_ft']:,.1f} ft from "
              f"its upstream end ({c['source']}; {c['offset_ft']:,.1f} ft from the feature)")
    cm = res["control_manhole_id"]
    if cm is None:
        say(args, "control manhole: none reached downstream")
    else:
        say(args, f"control manhole: {cm} ({res['control_length_ft']:,.1f} ft along the pipes)")
    end = "plant " + str(res["plant_id"]) if res["reaches_outlet"] else "end of the chain " \
        "(no outlet reached)"
    say(args, f"downstream to {end}: {len(res['path'])} pipes, {res['length_ft']:,.1f} ft")
    for r in res["path"].itertuples():
        say(args, f"  {r.seq:>4} {r.main_id:<14} {r.edge_u} -> {r.edge_v}  "
                  f"{r.length_ft:>9,.1f} ft  cum {r.cum_length_ft:>10,.1f} ft")
    return 0
