"""``gisnet notices``: notice letters and evidence packets, one PDF per parcel.

By default for every parcel an order may be written for (obligation status
``required`` with its ground recorded); with ``--parcel ID`` for those parcels
(an id that is no order is refused). ``--candidates`` writes the staff list of
the parcels the town could order once a ground is recorded, instead. Writes
``notice-<parcel>.pdf`` per parcel, ``notices.pdf`` (all of them),
``notices.csv`` (UTF-8 with a BOM) and ``notices.xlsx`` (mail merge) into
``--out`` (default ``maps/notices``), all at once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import DEFAULT_OUT, add_town_options, load_town, out_target, progress, say

DEFAULT_NOTICES_OUT = Path("maps") / "notices"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "notices",
        help="notice letters and evidence packets (PDF per parcel, combined PDF, CSV/XLSX)",
        description="Write a printable order for every parcel the ordinance lets the town "
                    "order to connect on a ground recorded (status required), or for the "
                    "parcels named with --parcel: the letter (an editable template), the "
                    "rule in the ordinance's words, the measured distance and how it was "
                    "measured, the deadline, and a map of the measurement. One PDF per "
                    "parcel, one combined "
                    "PDF and a mail-merge table (CSV with BOM, XLSX).",
    )
    add_town_options(p)
    p.add_argument("--out", type=Path, default=DEFAULT_NOTICES_OUT, metavar="DIR",
                   help="output folder of the notices (default: maps/notices)")
    p.add_argument("--parcel", action="append", metavar="ID", dest="parcel_list",
                   help="a packet for this parcel (repeatable); default: every parcel the "
                        "town could order to connect")
    p.add_argument("--notice-date", metavar="YYYY-MM-DD",
                   help="date of the notices; deadlines count from it (default: today)")
    p.add_argument("--candidates", action="store_true",
                   help="write the staff list of parcels the town could order but no letter "
                        "is written for (no ground recorded, or a person must decide) to "
                        "DIR/candidates.csv, instead of the letters")
    p.add_argument("--template", type=Path, metavar="FILE",
                   help="letter template (default: the town file's [notices] template, else "
                        "the profile's shipped one)")
    p.add_argument("--register", type=out_target, default=None, metavar="DIR|URL",
                   help="the output whose connection register is read (notices served, "
                        "grounds, connections) and receives each letter as drafted: a "
                        "folder (its gisnet-register.gpkg) or postgresql://...; default the "
                        "town file's [output] path, else maps/")
    p.add_argument("--assume-abutting", action="store_true",
                   help="without a streets layer, treat parcels within the distance as "
                        "abutting")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..extras import require
    from ..notices import write_candidates, write_notices
    from ..notices.packets import parse_date
    from ..notices.template import find_template, load_template
    from ..pipeline import analyse

    require("pdf", "gisnet notices")
    notice_date = parse_date(args.notice_date)
    # the template is checked before anything is loaded or analysed
    tpl = load_template(args.template) if args.template is not None else None
    town = load_town(args)
    from ..register import add_entries, apply_register, read_register, register_place

    where = args.register if args.register is not None else town.settings.extra.get("output")
    where = where if where is not None else DEFAULT_OUT
    town = apply_register(town, read_register(where), where=register_place(where))
    tpl = tpl if tpl is not None else find_template(town)
    progress(args, "measuring obligations")
    res = analyse(town, only=["obligations"], parcels=args.parcel_list,
                  assume_abutting=args.assume_abutting)
    if args.candidates:
        path = write_candidates(town, res, args.out)
        say(args, f"staff list of candidates (no letter written): {path}")
        return 0
    progress(args, f"writing notices to {args.out}")
    ns = write_notices(town, res, args.out, parcels=args.parcel_list,
                       notice_date=notice_date, template=tpl)
    from ..notices.writing import drafted_entries

    ids = add_entries(where, drafted_entries(ns), town=town)
    notes = list(ns.notes)
    if args.notice_date is None:
        notes.insert(0, f"notice date {notice_date.isoformat()} (today; give --notice-date "
                        "to change; deadlines count from it)")
    for note in notes:
        say(args, f"assumed: {note}")
    say(args, f"{len(ns.packets)} notice packet(s) dated {notice_date.isoformat()} in "
              f"{args.out}:")
    for path in ns.files:
        if not path.name.startswith("notice-"):
            say(args, f"  {path}")
    if ids:
        say(args, f"  {len(ids)} letter(s) entered in the register {register_place(where)} as "
                  f"drafted (entries {ids[0]}-{ids[-1]}); record each one served with 'gisnet "
                  "register add --event served --parcel ID --letter LETTER --date D'")
    for pid, why in ns.failed:
        print(f"gisnet: error: parcel {pid[:100]}: no notice written: {why}", file=sys.stderr)
    if ns.failed:
        print(f"gisnet: error: {len(ns.failed)} of {len(ns.failed) + len(ns.packets)} notice "
              "packet(s) could not be written (the others were); exit status 1",
              file=sys.stderr)
        return 1
    return 0
