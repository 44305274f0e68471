"""``gisnet obligations``: which parcels must connect to the public sewer, and by when."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..obligations import STATUSES
from .common import add_town_options, load_town, progress, say


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "obligations",
        help="who must connect: distance to the public sewer by the profile's measure",
        description="Measure every parcel (or the listed ones) to the nearest eligible public "
                    "sanitary main the way the jurisdiction profile says (property line or "
                    "building), apply the abutting test, and give status, deadline, section "
                    "and reason. Writes the layers obligations, obligation_evidence, "
                    "connection_zone and frontage to OUT/gisnet-results.gpkg; with --parcel, "
                    "prints one parcel's answer instead.",
    )
    add_town_options(p, writes=True)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--parcel-ids", type=Path, metavar="CSV", dest="parcel_ids",
                   help="only these parcels: a CSV with a parcel_id column (or ids in its "
                        "first column). '--parcels ids.csv' does the same when the CSV has no "
                        "geometry column (otherwise --parcels names the parcels layer)")
    g.add_argument("--parcel", metavar="ID", help="one parcel, printed readably (writes nothing)")
    p.add_argument("--assume-abutting", action="store_true",
                   help="without a streets layer, treat parcels within the distance as "
                        "abutting (required) instead of review")
    p.set_defaults(func=run)


def read_ids(path: Path) -> list[str]:
    """Parcel ids from a CSV: the ``parcel_id`` column, else the first column."""
    from ..obligations import select_ids

    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise ConfigError(f"cannot read parcel list: {exc.strerror or exc}", path=path) from exc
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"parcel list is not a UTF-8 CSV file: {exc}", path=path) from None
    if not rows:
        raise ConfigError("parcel list is empty", path=path)
    header = [h.strip().lower() for h in rows[0]]
    if "parcel_id" in header:
        k = header.index("parcel_id")
        body = rows[1:]
    else:
        k = 0
        body = rows
    ids = select_ids(r[k] for r in body if len(r) > k)
    if not ids:
        raise ConfigError("parcel list holds no ids", path=path)
    return ids


_GEOMETRY_HEADERS = {"wkt", "geometry", "geom", "the_geom", "x", "y", "lon", "lat", "longitude",
                     "latitude", "wkb"}


def _id_list_path(args: argparse.Namespace) -> Path | None:
    """The parcel-id CSV given by --parcel-ids, or by --parcels when it is an id list.

    ``--parcels`` is also the common option naming the parcels *layer*; a CSV
    with no geometry column cannot be a layer, so there it means an id list
    (and the parcels layer comes from the town file).
    """
    if args.parcel_ids is not None:
        return Path(args.parcel_ids)
    path = getattr(args, "path_parcels", None)
    if not path or Path(path).suffix.lower() != ".csv":
        return None
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), [])
    except OSError as exc:
        raise ConfigError(f"cannot read parcel list: {exc.strerror or exc}", path=path) from exc
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"parcel list is not a UTF-8 CSV file: {exc}", path=path) from None
    if {h.strip().lower() for h in header} & _GEOMETRY_HEADERS:
        return None
    args.path_parcels = None
    return Path(path)


def _fmt(v: Any, unit: str = "") -> str:
    import pandas as pd

    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:,.2f}{unit}"
    if isinstance(v, pd.Timestamp):
        return v.strftime("%Y-%m-%d")
    return f"{v}{unit}"


def describe(r: Any) -> str:
    """One obligation row as readable lines."""
    lines = [
        f"parcel            {r['parcel_id']}",
        f"status            {r['status']}",
        f"reason            {r['reason']}",
        f"measure           {r['measure']}" + (" (approximate: measured from the parcel)"
                                              if bool(r["approximate"]) else ""),
        f"building          {_fmt(r['building_id'])}",
        f"nearest main      {_fmt(r['main_id'])}",
        f"distance          {_fmt(r['distance_ft'], ' ft')} (limit {r['distance_limit_ft']:g} ft;"
        f" within: {_fmt(r['within_distance'])})",
        f"nearest points    from ({_fmt(r['from_x'])}, {_fmt(r['from_y'])}) "
        f"to ({_fmt(r['nearest_x'])}, {_fmt(r['nearest_y'])}) [working CRS]",
        f"abuts sewered st. {_fmt(r['abuts_sewered_street'])}"
        + (f" (main {r['abutting_main_id']}, {_fmt(r['abutting_distance_ft'], ' ft')})"
           if isinstance(r["abutting_main_id"], str) else ""),
        f"section           {_fmt(r['section'])}",
        "deadline          " + (f"{int(r['deadline_days'])} days after official notice"
                                 if _fmt(r["deadline_days"]) != "-" else "-"),
        f"septic deadline   {_fmt(r['septic_deadline'])}",
        f"profile           {r['profile']}",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..obligations import compute_obligations
    from ..output import write_results
    from ..pipeline import analyse

    id_path = _id_list_path(args)
    if id_path is not None and args.parcel is not None:
        raise ConfigError("give either --parcel or a parcel-id list, not both")
    town = load_town(args)
    if args.parcel is not None:
        res = compute_obligations(town, parcels=[args.parcel],
                                  assume_abutting=args.assume_abutting)
        ob = res["obligations"]
        say(args, describe(ob.iloc[0]))
        return 0
    ids = read_ids(id_path) if id_path is not None else None
    result = analyse(town, only={"obligations"}, parcels=ids,
                     assume_abutting=args.assume_abutting,
                     progress=lambda m: progress(args, m)).obligations
    assert result is not None  # the step asked for (strict: it raises or gives one)
    path = write_results(args.out, result.layers())
    ob = result.obligations
    counts = ob["status"].value_counts()
    summary = ", ".join(f"{s} {int(counts.get(s, 0))}" for s in STATUSES if counts.get(s, 0))
    prof = town.profile
    say(args, f"{len(ob)} parcels under {prof.id} ({prof.connection.distance_ft:g} ft from the "
              f"{prof.connection.measure.replace('_', ' ')}, {prof.connection.section}): "
              f"{summary}")
    say(args, f"wrote {', '.join(result.layers())} to {path}")
    return 0
