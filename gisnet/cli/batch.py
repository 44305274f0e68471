"""``gisnet batch``: every town of a region on Dask, and a region summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import common


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch",
        help="run every town of a region (a folder of town folders or a region.toml) on Dask",
        description="Run every town of REGION (validate, graph, every analysis, outputs in "
        "DIR/<town>/ exactly as 'gisnet run --out DIR/<town>' writes them), each town one "
        "Dask task, then write the region summary (DIR/region-summary.gpkg and .csv) and "
        "the index page DIR/region.html. A town whose inputs and gisnet version are "
        "unchanged since its last run is skipped (--force to redo). Exit status 2 when "
        "any town failed (the others finish; the summary names the error).",
    )
    p.add_argument("region", type=Path, metavar="REGION",
                   help="a folder of town folders (each with a gisnet.toml) or a region.toml")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="start a local Dask cluster of N worker processes, one thread each "
                        "(default: one per core)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="use an existing Dask cluster (tcp://host:8786)")
    p.add_argument("--force", action="store_true", help="run every town, even unchanged ones")
    p.add_argument("--no-maps", action="store_true",
                   help="no web maps (towns and the region index page)")
    p.add_argument("--self-contained", action="store_true",
                   help="map pages with their scripts inside, for offline use")
    p.add_argument("--tables", action="append", default=[], metavar="FORMAT",
                   choices=("csv", "geojson", "parquet", "xlsx"),
                   help="also write each town's layers as tables (as 'gisnet run --tables')")
    g2 = p.add_argument_group("overrides for every town (win over region.toml)")
    g2.add_argument("--profile", metavar="P", help="jurisdiction profile: name or file")
    g2.add_argument("--crs", metavar="CRS", help="working CRS")
    g2.add_argument("--snap-tolerance-ft", type=float, metavar="FT", help="snap tolerance")
    g2.add_argument("--engine", choices=("pyogrio", "fiona"), default=None,
                    help="OGR reading engine")
    p.add_argument("--json", action="store_true", help="print the summary rows as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..extras import require

    require("dask", "gisnet batch")
    from ..batch import FAILED, Options, load_region, run_region
    from ..batch.runner import progress_printer
    from ..serialize import dumps_text

    prof = args.profile
    if prof and Path(prof).is_file():
        prof = str(Path(prof).resolve())
    region = load_region(args.region, overrides={
        "profile": prof, "crs": args.crs, "snap_tolerance_ft": args.snap_tolerance_ft,
        "engine": args.engine})
    for skipped in region.skipped:
        common.progress(args, f"{skipped}: no gisnet.toml, not a town; skipped")
    options = Options(maps=not args.no_maps, self_contained=args.self_contained,
                      tables=tuple(args.tables), force=args.force)
    res = run_region(region, args.out, options=options, workers=args.workers,
                     scheduler=args.scheduler, listener=progress_printer(args.quiet))
    if args.json:
        rows = [{k: v for k, v in r.items() if k != "geometry"} for r in res.rows]
        common.say(args, dumps_text({"region": region.name, "towns": rows,
                                     "files": [str(f) for f in res.files],
                                     "seconds": round(res.seconds, 2)}))
    else:
        common.say(args, f"gisnet batch: {region.name}: {len(res.rows)} towns, "
                         f"{res.count('done')} ran, {res.count('unchanged')} unchanged, "
                         f"{res.count(FAILED)} failed, in {res.seconds:.1f} s")
        common.say(args, "  wrote: " + ", ".join(str(f) for f in res.files))
    for r in res.failed:
        print(f"gisnet: error: town {r['town']}: {r['error']}", file=sys.stderr)
    if res.failed:
        print(f"gisnet: error: {len(res.failed)} of {len(res.rows)} towns failed "
              "(see the summary); exit status 2", file=sys.stderr)
        return 2
    return 0
