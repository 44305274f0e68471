"""``gisnet init``: write a commented ``gisnet.toml`` for the layers in a folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import say


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init",
        help="look at the layers in a folder and write its gisnet.toml (every guess marked)",
        description="Inspect every layer in DIR (shapefiles, GeoPackage layers, GeoJSON, "
                    "FileGDB), propose a role for each, map its columns by alias, list the "
                    "distinct values of its coded columns with the canonical value chosen, "
                    "and write DIR/gisnet.toml with each guess marked '# guess'.",
    )
    p.add_argument("dir", nargs="?", type=Path, default=Path("."), metavar="DIR",
                   help="folder holding the layers (default: the current folder)")
    p.add_argument("--profile", metavar="P",
                   help="jurisdiction profile to write: built-in name or path to a profile "
                        "TOML (default: a guess, marked as such)")
    p.add_argument("--force", action="store_true", help="replace an existing gisnet.toml")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write the town file here instead of DIR/gisnet.toml "
                        "(layer paths then point back to DIR)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..init import init_town, summary_lines

    path, proposal = init_town(args.dir, profile=args.profile, force=args.force, out=args.out)
    say(args, f"gisnet init: {len(proposal.layers)} layer(s) in {args.dir}")
    for line in summary_lines(proposal):
        say(args, line)
    say(args, f"wrote {path}; check the lines marked '# guess', then: gisnet run"
              + ("" if path.parent.resolve() == Path.cwd().resolve()
                 else f" --layers {path.parent}"))
    return 0
