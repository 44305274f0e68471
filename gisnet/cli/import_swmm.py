"""``gisnet import-swmm``: a SWMM model as a town folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import say


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "import-swmm",
        help="write a town folder (GeoPackage + gisnet.toml) from a SWMM model",
        description="Read a SWMM 5 input file and write its conduits, links, nodes, "
        "subcatchments and dry-weather inflows as gisnet layers (model names kept as ids) "
        "with a gisnet.toml that 'gisnet run --layers DIR' reads as it is.",
    )
    p.add_argument("model", type=Path, help="the SWMM input file (.inp)")
    p.add_argument("dir", type=Path, help="town folder to write")
    p.add_argument("--crs", required=False, metavar="CRS",
                   help="CRS of the model's coordinates (SWMM files carry none): required")
    p.add_argument("--profile", metavar="P", required=False,
                   help="jurisdiction profile the town file names (built-in name or path)")
    p.add_argument("--force", action="store_true",
                   help="replace the town file (and swmm.gpkg) of a town already in DIR; the "
                        "layers that town reads are never replaced")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..extras import require
    from ..profile import builtin_profiles, load_profile
    from ..swmm import model_crs, model_layers, read_model, write_town

    require("swmm", "gisnet import-swmm", ["swmmio"])

    if not args.profile:
        raise ConfigError("give --profile NAME for the town file, with NAME one of "
                          f"{', '.join(builtin_profiles())} or the path of a profile TOML")
    load_profile(args.profile)
    model = read_model(args.model)
    crs = model_crs(model, args.crs)
    res = model_layers(model, crs)
    path = write_town(model, res, args.dir, args.profile, force=args.force)
    m = res.layers["mains"]
    say(args, f"{args.model.name}: {len(model.conduits)} conduit(s), {len(model.links)} other "
              f"link(s), {len(model.nodes)} node(s), {len(model.subcatchments)} "
              f"subcatchment(s), {len(model.dwf)} dry-weather inflow(s); flow units "
              f"{model.flow_units}")
    for n in res.notes:
        say(args, f"note: {n}")
    say(args, f"wrote {len(m)} mains, {len(res.layers['manholes'])} structures, "
              f"{len(res.layers['parcels'])} parcels and {path}")
    return 0
