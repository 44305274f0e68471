"""``gisnet run``: the whole job on a town — tables, GeoPackage and web maps."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..labels import UNKNOWN_FLOW
from ..serialize import dumps_text
from . import common


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="analyse a town and write maps and tables (--sample: the bundled sample town)",
        description="Load the town, build the sewer graph, answer every question "
        "(obligations, control manholes, capacity) and write DIR/gisnet-results.gpkg "
        "and the web maps, or, with --out postgresql://..., every result layer as "
        "a PostGIS table (one transaction). The whole set is written in a staging "
        "folder and published in one step with DIR/gisnet-manifest.json; an output "
        "that would overwrite an input file is refused. The connection register of the "
        "output (DIR/gisnet-register.gpkg, or the schema's register table; created when "
        "absent, never rewritten) is read first: notices served, grounds and connections "
        "recorded there change the answer. The layer changes says what changed since the "
        "previous run into the same output, overdue which deadlines have passed.",
    )
    common.add_town_options(p, writes=True, database=True)
    common.add_page_options(p)
    p.add_argument("--no-maps", action="store_true", help="write tables only")
    p.add_argument("--tiles", choices=("auto", "always", "never"), default="auto",
                   help="draw the big layers (parcels, mains ...) from vector tiles in "
                        "DIR/tiles/, for `gisnet serve --maps DIR`: auto = when the town "
                        "has over 75,000 parcels (default), always, never")
    p.add_argument("--tables", action="append", default=[], metavar="FORMAT",
                   choices=("csv", "geojson", "parquet", "xlsx"),
                   help="also write every result layer as DIR/tables/<layer>.<format> "
                        "(csv with WKT geometry, UTF-8 with a BOM for Excel; geojson in "
                        "EPSG:4326; parquet) or, for xlsx, one sheet per layer in "
                        "DIR/tables/gisnet-results.xlsx; repeatable")
    p.add_argument("--lock-timeout", type=float, metavar="S", default=None,
                   help="with a PostGIS --out: seconds to wait for another client's lock on "
                        "the previous tables before stopping with an error naming it "
                        "(default: the town file's [output] lock_timeout_s, else 5)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..memory import long_lived
    from ..pipeline import run as run_pipeline
    from ..progress import reporter

    rep = reporter(quiet=getattr(args, "quiet", False))
    try:
        common.resolve_town_source(args)
        # (the layers read: millions of shapes the collector would walk again and again)
        with rep.step("load", f"loading town from {args.layers or 'the layers given'}"), \
                long_lived():
            town = common.load_town(args, announce=False)
        if args.lock_timeout is not None:
            from ..output.postgis import lock_timeout_of

            town.settings.extra["output_lock_timeout_s"] = lock_timeout_of(
                town, args.lock_timeout)
        out = args.out if args.out is not None else town.settings.extra.get("output")
        out = out if out is not None else common.DEFAULT_OUT
        res = run_pipeline(town, out, self_contained=not args.cdn,
                           maps=not args.no_maps, tables=tuple(args.tables),
                           progress=rep, inputs=profile_file(args), tiles=args.tiles,
                           release_inputs=True)
    finally:
        rep.close()
    # kept to the end of the process (gisnet.cli.main ends it without taking them apart)
    args.results = res
    s = res.summary()
    if args.json:
        common.say(args, dumps_text(s))
        return 0
    common.say(args, format_summary(s))
    return 0


def profile_file(args: argparse.Namespace) -> list[Path]:
    """The ``--profile`` file, when the option names a file rather than a built-in."""
    p = getattr(args, "profile", None)
    return [Path(p)] if p and Path(p).is_file() else []


def format_summary(s: dict) -> str:
    """The run summary as a few readable lines."""
    lines = [f"gisnet run: {s['town']} (profile {s['profile']}, CRS {s['crs']})"]
    lines.append("  layers: " + ", ".join(f"{k} {v}" for k, v in s["layers"].items()))
    g = s["graph"]
    lines.append(f"  graph: {g['nodes']} nodes, {g['edges']} pipes, {g['pieces']} piece(s), "
                 f"{g['outlets']} outlet(s), {g['cycles']} cycle(s)")
    if g.get("findings"):
        lines.append("  data quality: " + ", ".join(f"{k} {v}" for k, v in g["findings"].items()))
    if "obligations" in s:
        lines.append("  obligations: " + ", ".join(f"{k} {v}" for k, v in s["obligations"].items()))
    if "control_manholes" in s:
        c = s["control_manholes"]
        lines.append(f"  control manholes: {c['connection_points']} connection points -> "
                     f"{c['distinct_manholes']} manholes ({c['unresolved']} unresolved)")
    if "industrial_users" in s:
        u = s["industrial_users"]
        lines.append(f"  industrial users: {u['users']}, significant (40 CFR 403.3(v)): {u['siu']}"
                     + (f"; other dischargers (not industrial): {u['dischargers']}"
                        if u.get("dischargers") else ""))
    if "pipes" in s:
        p = s["pipes"]
        lines.append(f"  pipes: {p['pipes']}, over threshold {p['over_threshold']}, "
                     f"surcharged {p['surcharged']}, "
                     f"no capacity (zero/adverse slope) {p['no_capacity']}, "
                     f"capacity unknown (no diameter/slope) {p.get('capacity_unknown', 0)}"
                     + (f", diameter assumed (largest upstream) {p['diameter_assumed']}"
                        if p.get("diameter_assumed") else ""))
    for pl in s.get("plants", []):
        if pl.get("missing_months"):
            lines.append(f"  plant {pl['plant_id']}: cannot say: months missing "
                         f"{pl['missing_months']}")
            continue
        if pl["ratio"] is None or pl.get("over_threshold") is None:
            lines.append(f"  plant {pl['plant_id']}: {UNKNOWN_FLOW} (no plant flows, no "
                         "reported average flow, no parcel flows reaching it)")
            continue
        flag = " OVER THRESHOLD" if pl["over_threshold"] else ""
        lines.append(f"  plant {pl['plant_id']}: {pl['ratio']:.1%} of design flow "
                     f"({pl['basis']}){flag}")
    if s.get("worklist"):
        lines.append(f"  worklist: {len(s['worklist'])} fix(es) ranked (layer worklist; "
                     "gisnet validate prints them); first: " + s["worklist"][0])
    if "changes" in s:
        lines.append(f"  changes since the previous run: {s['changes']}; overdue: "
                     f"{s.get('overdue', 0)}; register: {s.get('register', '')}")
    for name, why in s.get("not_computed", {}).items():
        lines.append(f"  not computed: {name}: {why}")
    lines.append("  wrote: " + ", ".join(_grouped(s["files"])))
    return "\n".join(lines)


#: A folder of more written files than this is one entry of the summary's ``wrote``.
LISTED_PER_FOLDER = 12


def _grouped(files: list[str]) -> list[str]:
    """The written files as the summary lists them: each by its path, but a folder of
    more than :data:`LISTED_PER_FOLDER` (a tiled town's search index: thousands of
    shards) as ``folder/ (N files: n .ext, ...)``; ``--json`` lists every file."""
    by_dir: dict[str, list[str]] = {}
    for f in files:
        by_dir.setdefault(str(Path(f).parent), []).append(f)
    out: list[str] = []
    for folder, names in by_dir.items():
        if len(names) <= LISTED_PER_FOLDER:
            out.extend(names)
            continue
        exts: dict[str, int] = {}
        for n in names:
            ext = Path(n).suffix or "(none)"
            exts[ext] = exts.get(ext, 0) + 1
        kinds = ", ".join(f"{k:,} {e}" for e, k in sorted(exts.items()))
        out.append(f"{folder}{os.sep} ({len(names):,} files: {kinds})")
    return out
