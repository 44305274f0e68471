"""``write_notices``: the packets, the combined PDF and the mail-merge tables, all at once.

Everything is written into a staging folder inside the output folder and
published in one step with a manifest (:mod:`gisnet.output.publish`): a run
killed half-way leaves the previous notices as they were. The output folder
is never a gisnet run's results folder (publishing would remove that run's
files) and no file written is one of the town's inputs or the template.
"""

from __future__ import annotations

import csv
import datetime as dt
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError, NotFoundError
from ..extras import needs_extra
from ..figures.maps import result_layers
from ..output.cells import csv_text, write_xlsx
from ..output.publish import (
    MANIFEST_FILE,
    make_manifest,
    new_run_id,
    publish,
    read_manifest_file,
    staging_area,
)
from ..output.writing import EXCEL_CELL_MAX, RESULTS_FILE, refuse_inputs_as_outputs
from .packets import Packet, build_packets, candidates, select_rows
from .template import Template, find_template, shorten
from .terms import letter_blocks

log = logging.getLogger(__name__)

COMBINED_FILE = "notices.pdf"
#: The staff list of parcels the town could order once a ground is recorded.
CANDIDATES_CSV = "candidates.csv"
CSV_FILE = "notices.csv"
XLSX_FILE = "notices.xlsx"
#: Columns of the mail-merge table (CSV and XLSX), in order.
MERGE_COLUMNS = ("letter_id", "parcel_id", "owner_name", "mailing_address", "address",
                 "status", "status_label", "section", "distance_ft", "measured_from",
                 "main_id", "notice_date", "notice_served", "deadline_days", "deadline_date",
                 "overdue_since", "file")
#: Date columns of the mail-merge table (date cells in the XLSX).
MERGE_DATES = ("notice_date", "notice_served", "deadline_date", "overdue_since")


@dataclass
class NoticeSet:
    """What :func:`write_notices` wrote.

    Attributes
    ----------
    out
        The output folder.
    packets
        One per parcel, in parcel-id order.
    files
        The files published (packets, combined PDF, tables, manifest).
    template
        The letter template used.
    notice_date
        The date of the notices.
    notes
        Assumptions to say once (the notice date when it was today's, the template's origin).
    failed
        ``(parcel id, reason)`` of each parcel whose packet could not be written;
        the other packets are written all the same, and these parcels are not in
        the tables or the combined PDF.
    """

    out: Path
    packets: list[Packet]
    files: list[Path]
    template: Template
    notice_date: dt.date
    notes: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def table(self) -> pd.DataFrame:
        """The mail-merge table (one row per packet)."""
        return merge_table(self.packets)


def merge_table(packets: list[Packet]) -> pd.DataFrame:
    """One row per packet, columns :data:`MERGE_COLUMNS`."""
    rows = []
    for p in packets:
        v = p.values
        rows.append({
            "letter_id": v.get("letter_id") or None, "parcel_id": p.parcel_id,
            "owner_name": v["owner_name"], "mailing_address": v.get("mailing_address"),
            "address": v["address"],
            "status": p.status, "status_label": v["status_label"], "section": v["section"],
            "distance_ft": None if p.distance_ft is None else round(p.distance_ft, 1),
            "measured_from": v["measured_from"], "main_id": v["main_id"],
            "notice_date": v["notice_date"], "notice_served": v["notice_served"] or None,
            "deadline_days": p.deadline_days,
            "deadline_date": v["deadline_date"] or None,
            "overdue_since": v["overdue_since"] or None, "file": p.file_name,
        })
    table = pd.DataFrame(rows, columns=list(MERGE_COLUMNS))
    table["deadline_days"] = table["deadline_days"].astype("Int64")
    return table


def _cell(v: Any) -> Any:
    """A table value as written: missing -> None, numpy scalars -> Python."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    return v.item() if hasattr(v, "item") else v


def _write_csv(path: Path, table: pd.DataFrame) -> None:
    """UTF-8 with a BOM, so that Excel reads "§" as written; text a spreadsheet
    would run as a formula gets a leading apostrophe (:func:`gisnet.output.cells.csv_text`)."""
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([csv_text(c) for c in table.columns])
        for row in table.itertuples(index=False, name=None):
            w.writerow(["" if _cell(v) is None else csv_text(_cell(v)) for v in row])


def _write_xlsx(path: Path, table: pd.DataFrame) -> None:
    """The mail-merge workbook: headers the labels of :mod:`gisnet.labels` (``Deadline``,
    ``Distance (ft)``; the CSV keeps the column names as merge-field names), dates as
    date cells (:data:`MERGE_DATES`), text a spreadsheet would run as a formula a
    string cell (:func:`gisnet.output.cells.write_xlsx`)."""
    from ..labels import column_label

    cells = table.copy()
    for c in cells.columns:
        if c not in MERGE_DATES and cells[c].dtype == object:
            cells[c] = [_xlsx_value(_cell(v)) for v in cells[c]]
    write_xlsx(path, [("notices", [column_label(c) for c in cells.columns], cells)],
               dates=MERGE_DATES)


def _xlsx_value(v: Any) -> Any:
    """A cell holds at most 32,767 characters: a longer text is cut, with a note
    (the CSV keeps it whole)."""
    if isinstance(v, str) and len(v) > EXCEL_CELL_MAX:
        return v[: EXCEL_CELL_MAX - 40] + " ... (cut: see notices.csv)"
    return v


def _check_out(out: Path) -> None:
    man = read_manifest_file(out) if out.is_dir() else None
    if man is not None and (RESULTS_FILE in man["files"]
                            or not any(str(f).startswith("notice") for f in man["files"])):
        raise ConfigError("this folder holds another gisnet output (its manifest lists "
                          f"{next(iter(man['files']), 'other files')}); write the notices to "
                          "a folder of their own (default maps/notices)", path=out)


def write_notices(town: Any, results: Any, out: str | os.PathLike[str], *,
                  parcels: Iterable[str] | None = None, notice_date: dt.date | None = None,
                  template: str | os.PathLike[str] | Template | None = None,
                  figures: bool = True, blocks: dict[str, str] | None = None) -> NoticeSet:
    """Write a notice packet per parcel, a combined PDF and the mail-merge tables.

    Parameters
    ----------
    town
        The loaded town.
    results
        :class:`gisnet.pipeline.Results` with the obligations analysis, or a
        mapping with the ``obligations`` and ``obligation_evidence`` layers.
    out
        The output folder (created; a folder of its own, e.g. ``maps/notices``).
    parcels
        Parcel ids to write orders for (default: every parcel an order may be written
        for, :func:`gisnet.notices.packets.is_order`; an id that is none is an error).
    notice_date
        The date of the notices (default today; the deadline counts from it).
    template
        A letter template file, or one loaded and checked already (default:
        :func:`gisnet.notices.template.find_template`).
    figures
        Draw the map of each packet.
    blocks
        The letter's blocks (signatory, title, contact, penalty, appeal), overriding the
        town file's ``[notices]`` (:func:`gisnet.notices.terms.letter_blocks`).

    A packet that cannot be written (its figure or PDF fails) is reported in
    :attr:`NoticeSet.failed` and logged; it never costs the other packets.

    Returns
    -------
    NoticeSet
        The packets and the files written.
    """
    from .figure import figure_png, notice_figure
    from .pdf import packet_story, pdf_values, write_pdf

    with needs_extra("pdf", "gisnet notices"):
        import matplotlib  # noqa: F401 - the letters' figures and fonts
        import reportlab  # noqa: F401 - the letters
        from pypdf import PdfWriter

    out = Path(out)
    notes: list[str] = []
    if notice_date is None:
        notice_date = dt.date.today()
        notes.append(f"notice date {notice_date.isoformat()} (today; deadlines count from it)")
    tpl = template if isinstance(template, Template) else find_template(town, template)
    if tpl.origin in ("profile", "generic"):
        why = ("shipped for the profile" if tpl.origin == "profile"
               else "generic: no template is shipped for this profile")
        notes.append(f"letter template {tpl.path} ({why})")
    layers = result_layers(results)
    ob = layers.get("obligations")
    if ob is None:
        raise NotFoundError("the results hold no obligations layer: run the obligations "
                            "analysis first")
    rows = select_rows(ob, parcels)
    packets = build_packets(town, rows, notice_date, letter_blocks(town, blocks))
    run_id = new_run_id()
    for k, p in enumerate(packets, start=1):  # the id the register and the letter share
        p.values["letter_id"] = letter_id(run_id, k)
    if parcels is None:
        staff = len(candidates(ob))
        if staff:
            notes.append(f"{staff} parcel(s) within the distance get no letter: no ground "
                         "for notice is recorded, or a person must decide first (gisnet "
                         "notices --candidates lists them)")
    names = [p.file_name for p in packets] + [COMBINED_FILE, CSV_FILE, XLSX_FILE, MANIFEST_FILE]
    refuse_inputs_as_outputs([out / n for n in names], town, tpl.path, what="notice file")
    _check_out(out)
    ev = layers.get("obligation_evidence")
    lines = ({} if ev is None or not len(ev) else
             dict(zip(ev["parcel_id"].astype(str), ev.geometry, strict=False)))
    geoms = dict(zip(rows["parcel_id"].astype(str), rows.geometry, strict=False))
    bids = dict(zip(rows["parcel_id"].astype(str), rows.get("building_id", [None] * len(rows)),
                    strict=False))
    footer = (f"{town.name}. Measured by gisnet from the town's GIS layers with the "
              f"{town.profile.profile.id} profile ({town.profile.profile.ordinance}).")
    with staging_area(out, run_id) as stage:
        failed: list[tuple[str, str]] = []
        written: list[Packet] = []
        for p in packets:
            try:
                png = None
                if figures:
                    fig = notice_figure(town, geoms[p.parcel_id], lines.get(p.parcel_id),
                                        pdf_values(p.values), p.status, bids.get(p.parcel_id))
                    png = figure_png(fig)
                story = packet_story(tpl, p.values, png, footer,
                                     measured=lines.get(p.parcel_id) is not None)
                write_pdf(stage / p.file_name, [story],
                          title=f"Notice: parcel {shorten(p.parcel_id, 100)}")
                written.append(p)
            except Exception as exc:  # one parcel's failure never costs the other letters
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                log.error("parcel %s: no notice written: %s", shorten(p.parcel_id, 100), reason)
                failed.append((p.parcel_id, reason))
                (stage / p.file_name).unlink(missing_ok=True)
        packets = written
        if packets:  # (a PDF of no pages is no PDF a reader opens)
            merged = PdfWriter()
            for p in packets:
                merged.append(str(stage / p.file_name))
            merged.add_metadata({"/Title": f"Notices ({len(packets)}), {town.name}",
                                 "/Creator": "gisnet"})
            with (stage / COMBINED_FILE).open("wb") as fh:
                merged.write(fh)
        else:
            notes.append("no parcel selected: no packets and no combined PDF; the tables "
                         "hold their header only")
        table = merge_table(packets)
        _write_csv(stage / CSV_FILE, table)
        _write_xlsx(stage / XLSX_FILE, table)
        manifest = make_manifest(stage, run_id=run_id, town=town)
        files = publish(stage, out, manifest, town)
    log.info("notices: %d packet(s) in %s", len(packets), out)
    return NoticeSet(out, packets, files, tpl, notice_date, notes, failed)


def letter_id(run_id: str, k: int) -> str:
    """The id of the ``k``-th letter of a ``gisnet notices`` run: ``N`` + the run's
    UTC date and time + its random suffix + the letter's number
    (``N20260301T091403Z-1a2b3c4d-0001``)."""
    return f"N{run_id}-{k:04d}"


def drafted_entries(ns: NoticeSet, entered_by: str | None = None) -> list[Any]:
    """The register entries of the letters written: one ``drafted`` entry per packet,
    dated the notice date, naming its letter id and file."""
    from ..register import Entry

    return [Entry(parcel_id=p.parcel_id, event="drafted", event_date=ns.notice_date,
                  letter_id=p.values.get("letter_id") or None,
                  note=f"{p.file_name}; deadline {p.deadline_date.isoformat()}"
                  if p.deadline_date is not None else p.file_name, entered_by=entered_by)
            for p in ns.packets]


def write_candidates(town: Any, results: Any, out: str | os.PathLike[str]) -> Path:
    """Write the staff list of parcels the town could order but writes no letter for.

    The list (:func:`gisnet.notices.packets.candidates`) goes to
    ``out/candidates.csv`` (UTF-8 with a BOM); the file is written atomically.

    Returns
    -------
    Path
        The file written.
    """
    layers = result_layers(results)
    ob = layers.get("obligations")
    if ob is None:
        raise NotFoundError("the results hold no obligations layer: run the obligations "
                            "analysis first")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / CANDIDATES_CSV
    refuse_inputs_as_outputs([path], town, None, what="candidates file")
    tmp = path.with_name(path.name + ".tmp")
    _write_csv(tmp, candidates(ob))
    os.replace(tmp, path)
    return path
