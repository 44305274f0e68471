"""``gisnet register add|list|export``: the connection register staff keep.

The register belongs to an output (``--out DIR``: ``DIR/gisnet-register.gpkg``;
``--out postgresql://...``: the schema's ``register`` table; default the town
file's ``[output] path``, else ``maps/``). ``add`` appends one entry (the only way
gisnet changes the register, besides ``gisnet notices`` entering its letters as
drafted); ``list`` prints the entries; ``export`` writes them to a CSV or XLSX
file (labelled headers, real dates). No town is loaded.
"""

from __future__ import annotations

import argparse
import getpass
import os
from pathlib import Path

from ..errors import ConfigError
from . import common

#: Where a register is when neither --out nor a town file's [output] names one.
DEFAULT_REGISTER_OUT = common.DEFAULT_OUT


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "register",
        help="the connection register: record notices served, grounds, receipts, "
             "inspections and connections; list or export it",
        description="The connection register kept beside a run's results "
                    "(DIR/gisnet-register.gpkg, or the table register of a PostGIS output "
                    "schema). Every run into that output reads it: a notice served sets "
                    "the parcel's notice date, a health hazard or highway program is a "
                    "ground for notice, a connection makes the parcel connected. gisnet "
                    "only ever appends to it.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = actions.add_parser("add", help="append one entry",
                           description="Append one entry to the register (one transaction).")
    _where(a)
    from ..register.entries import EVENTS, GROUNDS

    a.add_argument("--parcel", required=True, metavar="ID", help="parcel id")
    a.add_argument("--event", required=True, choices=EVENTS,
                   help="what happened (served, received, inspected and connected need "
                        "--date)")
    a.add_argument("--date", metavar="YYYY-MM-DD", help="the day it happened")
    a.add_argument("--ground", action="append", choices=GROUNDS, default=[],
                   help="with --event served: the ground of the notice (repeatable)")
    a.add_argument("--letter", metavar="ID", help="the letter concerned (its letter id)")
    a.add_argument("--void", type=int, metavar="ENTRY",
                   help="with --event void: the entry number it cancels")
    a.add_argument("--note", metavar="TEXT", help="a note")
    a.add_argument("--by", metavar="NAME", help="who enters it (default: the user name)")
    a.set_defaults(func=run_add)
    ls = actions.add_parser("list", help="print the entries",
                            description="Print the register's entries (every one, voided "
                                        "ones marked).")
    _where(ls)
    ls.add_argument("--parcel", metavar="ID", help="only this parcel's entries")
    ls.add_argument("--json", action="store_true", help="as JSON")
    ls.set_defaults(func=run_list)
    ex = actions.add_parser("export", help="write the entries to a CSV or XLSX file",
                            description="Write the register to FILE (.csv: UTF-8 with a BOM; "
                                        ".xlsx: labelled headers and date cells).")
    _where(ex)
    ex.add_argument("file", type=Path, metavar="FILE", help="the .csv or .xlsx to write")
    ex.set_defaults(func=run_export)


def _where(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=common.out_target, default=None, metavar="DIR|URL",
                   help="the output the register belongs to: a folder (its "
                        "gisnet-register.gpkg) or postgresql://...?schema=NAME (its register "
                        "table); default the town file's [output] path, else maps/")
    p.add_argument("--layers", type=Path, default=None, metavar="DIR",
                   help="the town folder whose gisnet.toml names the output (default: the "
                        "current folder)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def register_out(args: argparse.Namespace) -> Path | str:
    """The output whose register a command uses: ``--out``, else the town file's
    ``[output] path``, else ``maps/``."""
    if getattr(args, "out", None) is not None:
        return args.out
    from ..townfile import TOWN_FILE, read_town_file

    folder = args.layers if getattr(args, "layers", None) is not None else Path(".")
    tf = Path(folder) / TOWN_FILE
    if tf.is_file():
        out = read_town_file(tf).output
        if out is not None:
            return common.out_target(str(out))
    return DEFAULT_REGISTER_OUT


def run_add(args: argparse.Namespace) -> int:
    from ..register import Entry, add_entries, register_place
    from ..register.entries import as_date

    if args.ground and args.event != "served":
        raise ConfigError("--ground belongs to --event served (record a ground alone as "
                          "--event health_hazard or --event highway_program)")
    if (args.void is not None) != (args.event == "void"):
        raise ConfigError("--event void needs --void ENTRY, and --void needs --event void")
    try:
        when = as_date(args.date)
    except ValueError as exc:
        raise ConfigError(f"--date: {exc}") from None
    out = register_out(args)
    entry = Entry(parcel_id=args.parcel.strip(), event=args.event, event_date=when,
                  notice_ground=";".join(args.ground) or None, letter_id=args.letter,
                  refers_to=args.void, note=args.note, entered_by=args.by or _user())
    (eid,) = add_entries(out, [entry])
    common.say(args, f"register {register_place(out)}: entry {eid} added "
                     f"({entry.event} {entry.parcel_id}"
                     + (f" {entry.event_date.isoformat()}" if entry.event_date else "") + ")")
    return 0


def _user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no user name known (some containers)
        return os.environ.get("USERNAME") or None


def run_list(args: argparse.Namespace) -> int:
    from ..register import live, read_register
    from ..serialize import dumps_text

    reg = read_register(register_out(args))
    if args.parcel:
        reg = reg[reg["parcel_id"] == args.parcel.strip()]
    alive = set(live(reg)["entry_id"].tolist()) if len(reg) else set()
    if args.json:
        rows = reg.assign(event_date=[None if d is None else d.isoformat()
                                      for d in reg["event_date"]],
                          void=[e not in alive and ev != "void" for e, ev in
                                zip(reg["entry_id"], reg["event"], strict=True)])
        common.say(args, dumps_text(rows.to_dict("records")))
        return 0
    if not len(reg):
        common.say(args, "the register holds no entries")
        return 0
    for r in reg.to_dict("records"):
        bits = [f"{r['entry_id']:>5}", str(r["parcel_id"]), r["event"],
                "" if r["event_date"] is None else r["event_date"].isoformat()]
        for k in ("notice_ground", "letter_id", "refers_to", "note"):
            v = r.get(k)
            if v is not None and str(v) not in ("", "nan", "None", "<NA>"):
                bits.append(f"{k}={v}")
        bits.append(f"({r.get('entered_by') or '?'} {r.get('entered_at') or ''})")
        if r["entry_id"] not in alive and r["event"] != "void":
            bits.append("[void]")
        common.say(args, "  ".join(b for b in bits if b))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from ..output import guard_outputs
    from ..register import read_register
    from ..register.export import write_register_file

    reg = read_register(register_out(args))
    guard_outputs([args.file], what="register export")
    path = write_register_file(reg, args.file)
    common.say(args, f"{len(reg)} register entr(y/ies) written to {path}")
    return 0

