"""``gisnet export-swmm``: the town's network and average flows as a SWMM model."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_town_options, load_town, progress, say


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "export-swmm",
        help="write the network with its average dry-weather flows as a SWMM model",
        description="Write gisnet's sewer network as a SWMM 5 input file: conduits with the "
        "profile's Manning n, junctions with inverts and rims, the plants and outfalls as "
        "outfalls, each connection point's average flow as a constant dry-weather inflow.",
    )
    add_town_options(p)
    p.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="the SWMM input file to write (.inp)")
    p.add_argument("--routing", choices=("KINWAVE", "DYNWAVE"),
                   help="flow routing (default: kinematic wave unless a node splits the flow)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..output.writing import atomic_write_text, refuse_input_as_output
    from ..swmm import export_town, inp_text

    out = args.out
    args.out = None  # not a results folder
    town = load_town(args)
    refuse_input_as_output(out, town, what="SWMM model")
    _, ex = export_town(town, routing=args.routing, progress=lambda m: progress(args, m))
    atomic_write_text(out, inp_text(ex), "SWMM model")
    for n in ex.notes:
        say(args, f"note: {n}")
    say(args, f"wrote {len(ex.conduits)} conduit(s), {len(ex.pumps)} pump(s), "
              f"{len(ex.junctions)} junction(s), {len(ex.outfalls)} outfall(s), "
              f"{len(ex.dwf)} dry-weather inflow(s) ({ex.dwf['flow_gpd'].sum():,.0f} gpd) "
              f"to {out}")
    return 0
