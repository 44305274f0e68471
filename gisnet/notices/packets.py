"""Which parcels get a connection order, and what each order says.

An order to connect is written only where the ordinance lets a notice be given
and the ground it stands on is recorded: an ``obligations`` row of status
``required`` with a ``notice_ground`` (:func:`is_order`). Poughkeepsie
§ 168-22.2G: "Such notice shall be given only when it shall be necessary to
eliminate a public health hazard or to promote a highway improvement program";
§ 168-22.3C limits notice to a property on a private system to a health hazard.
Berlin sec. 16-50 orders newly constructed buildings; its existing-plumbing
paragraph orders a resident on a health hazard or by the fifteen-year limit.
Every other parcel the town could still order (``subject_to_notice``, and the
``review`` rows within the distance) is a staff list (:func:`candidates`,
``gisnet notices --candidates``), not a letter. A parcel asked for by id that
is no order is an error naming it, raised before anything is written.

The deadline of an order and its quotations are settled in
:mod:`gisnet.notices.terms`: never before the letter's date nor shorter than
the ordinance's least compliance period; every passage presented as the
ordinance's words is its words.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import labels
from ..errors import ConfigError, NotFoundError
from .terms import deadline, letter_blocks, quotations, quote_for

#: Statuses of the parcels the town could order to connect: orders where a ground is
#: recorded (``required``), the staff list otherwise.
ORDERABLE = ("required", "subject_to_notice")
#: Columns of the staff list of candidates (:func:`candidates`).
CANDIDATE_COLUMNS = ("parcel_id", "address", "owner_name", "status", "status_label",
                     "section", "distance_ft", "main_id", "notice_date", "health_hazard",
                     "highway_program", "why_no_letter", "reason")
#: The owner line of a parcel whose owner the parcels layer does not record.
OWNER_UNKNOWN = "Owner of record"
#: The address of a parcel whose address the parcels layer does not record.
ADDRESS_UNKNOWN = "address not recorded"


def is_order(ob: pd.DataFrame) -> pd.Series:
    """Rows an order to connect may be written for: ``required`` with a recorded ground."""
    ground = ob["notice_ground"] if "notice_ground" in ob.columns else pd.Series(
        None, index=ob.index, dtype=object)
    has = ground.notna() & (ground.astype(str).str.strip() != "")
    return (ob["status"] == "required") & has


def select_rows(ob: pd.DataFrame, parcel_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """The obligations rows that get an order, in parcel-id order.

    Parameters
    ----------
    ob
        The ``obligations`` layer.
    parcel_ids
        Parcels asked for by id (then only these); None: every order (:func:`is_order`).

    Raises
    ------
    NotFoundError
        An id that is no parcel of the layer (the first one named).
    ConfigError
        A parcel asked for that no order may be written for (its status and why).
    """
    orders = is_order(ob)
    if parcel_ids is None:
        rows = ob[orders]
    else:
        ids = list(dict.fromkeys(str(p) for p in parcel_ids))
        have = ob["parcel_id"].astype(str)
        missing = [p for p in ids if p not in set(have)]
        if missing:
            raise NotFoundError(f"parcel {missing[0]!r} is not in the obligations layer"
                                + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))
        asked = have.isin(ids)
        refused = ob[asked & ~orders]
        if len(refused):
            r = refused.iloc[0]
            raise ConfigError(
                f"no connection order may be written for parcel {r['parcel_id']!r} "
                f"({labels.status_label(r['status'])}: {why_no_letter(r)})"
                + (f", nor for {len(refused) - 1} more asked for" if len(refused) > 1 else "")
                + "; nothing was written. `gisnet notices --candidates` lists the parcels "
                "the town could order once a ground is recorded")
        rows = ob[asked]
    return rows.sort_values("parcel_id", kind="stable")


def why_no_letter(row: Any) -> str:
    """Why no order is written for an obligations row, in a sentence for staff."""
    status = str(row.get("status"))
    if status == "subject_to_notice":
        return ("notice may be given only on a ground the ordinance names, and none is "
                "recorded")
    if status == "required":
        return "no ground for the order is recorded"
    if status == "review":
        return "a person must decide first (see the reason)"
    return "the ordinance does not require it to connect"


def candidates(ob: pd.DataFrame) -> pd.DataFrame:
    """The staff list: parcels the town could order, that get no letter yet.

    Every ``subject_to_notice`` row, every ``required`` row with no ground
    recorded, and every ``review`` row within the connection distance; columns
    :data:`CANDIDATE_COLUMNS`, in parcel-id order.
    """
    within = ob["within_distance"].fillna(False).astype(bool)
    pick = ((ob["status"] == "subject_to_notice") | ((ob["status"] == "required")
                                                     & ~is_order(ob))
            | ((ob["status"] == "review") & within))
    rows = ob[pick].sort_values("parcel_id", kind="stable")
    out = pd.DataFrame({
        "parcel_id": rows["parcel_id"].astype(str),
        "address": rows.get("address"), "owner_name": rows.get("owner_name"),
        "status": rows["status"], "status_label": rows["status"].map(labels.status_label),
        "section": rows["section"], "distance_ft": rows["distance_ft"].round(1),
        "main_id": rows["main_id"],
        "notice_date": pd.to_datetime(rows["notice_date"]).dt.strftime("%Y-%m-%d"),
        "health_hazard": rows.get("health_hazard"),
        "highway_program": rows.get("highway_program"),
        "why_no_letter": [why_no_letter(r) for r in rows.to_dict("records")],
        "reason": rows["reason"],
    })
    return out[list(CANDIDATE_COLUMNS)].reset_index(drop=True)


def _text(v: Any) -> str | None:
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    s = str(v).strip()
    return s or None


def _date(v: Any) -> dt.date | None:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    t = pd.Timestamp(v)
    return None if pd.isna(t) else t.date()


def ground_text(profile: Any, ground: str) -> str:
    """The ground of an order in a sentence for the owner."""
    parts = [labels.GROUND_LABELS.get(g, g.replace("_", " "))
             for g in str(ground).split(";") if g.strip()]
    return "; ".join(parts)


def _abutting_text(row: Any) -> str:
    ab = row.get("abuts_sewered_street")
    if ab is True or ab is np.True_:
        how = {"streets": "the streets layer", "parcel_fabric": "the parcel fabric"}.get(
            str(row.get("abutting_method")), "")
        return ("The property abuts a street or right-of-way in which the public sewer lies"
                + (f" (from {how})." if how else "."))
    if ab is False or ab is np.False_:
        return "The property does not abut a street or right-of-way holding the public sewer."
    if str(row.get("abutting_method")) == "assumed":
        return "Abutting a street holding the sewer was assumed (no streets layer)."
    return "Whether the property abuts a street holding the sewer was not tested."


@dataclass(frozen=True)
class Packet:
    """One parcel's packet: the template values and what the figure and tables need."""

    parcel_id: str
    values: dict[str, Any]
    distance_ft: float | None
    deadline_days: int | None
    deadline_date: dt.date | None
    status: str
    file_name: str


def safe_name(parcel_id: str, taken: set[str]) -> str:
    """A file name for a parcel's packet, unique among ``taken`` (added to it)."""
    base = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in parcel_id).strip(".")
    name = f"notice-{base or 'parcel'}.pdf"
    k = 2
    while name.lower() in taken:
        name = f"notice-{base}-{k}.pdf"
        k += 1
    taken.add(name.lower())
    return name


def mailing_addresses(town: Any) -> dict[str, str]:
    """Parcel id -> the owner's mailing address, where the parcels layer maps one
    (canonical ``mailing_address``: ``MAIL_ADDR``, ``OWNER_ADDR``, ...)."""
    parcels = town.layers.get("parcels") if hasattr(town, "layers") else None
    if parcels is None or "mailing_address" not in parcels.columns:
        return {}
    out = {}
    for pid, v in zip(parcels["parcel_id"].astype(str), parcels["mailing_address"],
                      strict=False):
        t = _text(v)
        if t:
            out[pid] = t
    return out


def build_packets(town: Any, rows: pd.DataFrame, notice_date: dt.date,
                  blocks: dict[str, str] | None = None) -> list[Packet]:
    """The order of every row of ``rows`` (obligations rows, :func:`select_rows`).

    Parameters
    ----------
    town
        The loaded town.
    rows
        The rows to write orders for.
    notice_date
        The date of the letters.
    blocks
        The town's blocks (:func:`gisnet.notices.terms.letter_blocks`; default:
        read from the town file).

    Raises
    ------
    ConfigError
        A block is missing, a quotation of the profile is not the ordinance's words, a
        section cited has no quotation, or the profile sets no compliance period: all
        found before anything is written.
    """
    prof = town.profile
    con = prof.connection
    blocks = letter_blocks(town) if blocks is None else blocks
    quotes = quotations(prof) if len(rows) else {}
    taken: set[str] = set()
    mailing = mailing_addresses(town)
    out = []
    for row in rows.drop(columns=[rows.geometry.name] if hasattr(rows, "geometry") else [],
                         errors="ignore").to_dict("records"):
        pid = str(row["parcel_id"])
        dist = row.get("distance_ft")
        dist = None if dist is None or pd.isna(dist) else float(dist)
        due = deadline(row, notice_date, prof)
        served = _date(row.get("notice_date"))
        section = _text(row.get("section")) or con.section
        quote = quote_for(prof, quotes, section)
        measure = _text(row.get("measure")) or con.measure
        measured_from = "property line" if measure == "property_line" else "building"
        measure_text = labels.measure_label(measure)
        if bool(row.get("approximate")):
            measure_text += " (measured from the parcel: no building footprint recorded)"
        limit = row.get("distance_limit_ft")
        limit = float(con.distance_ft if limit is None or pd.isna(limit) else limit)
        values = {
            "parcel_id": pid,
            "address": _text(row.get("address")) or ADDRESS_UNKNOWN,
            "owner_name": _text(row.get("owner_name")) or OWNER_UNKNOWN,
            "mailing_address": (mailing.get(pid) or _text(row.get("address"))
                                or ADDRESS_UNKNOWN),
            "letter_id": "",
            "town": town.name,
            "jurisdiction": prof.profile.jurisdiction,
            "ordinance": prof.profile.ordinance,
            "section": section,
            "rule_text": quote.words,
            "ground_text": ground_text(prof, _text(row.get("notice_ground")) or ""),
            "distance": "not measured" if dist is None else f"{dist:,.1f} ft",
            "distance_limit": f"{limit:,.0f} ft",
            "measured_from": measured_from,
            "measure_text": measure_text,
            "main_id": _text(row.get("main_id")) or labels.EMPTY,
            "abutting_text": _abutting_text(row),
            "status_label": labels.status_label(row.get("status")),
            "reason": _text(row.get("reason")) or "",
            "notice_date": notice_date.isoformat(),
            "notice_served": "" if served is None else served.isoformat(),
            "deadline_days": "" if due.days is None else str(due.days),
            "deadline_date": due.date.isoformat(),
            "deadline_text": due.text,
            "overdue_since": "" if due.overdue_since is None else due.overdue_since.isoformat(),
            **{k: blocks[k] for k in ("signatory", "title", "contact", "penalty", "appeal")},
        }
        out.append(Packet(pid, values, dist, due.days, due.date, str(row.get("status")),
                          safe_name(pid, taken)))
    return out


def parse_date(text: str | None) -> dt.date:
    """``--notice-date YYYY-MM-DD`` (None: today)."""
    if text is None:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--notice-date must be a date YYYY-MM-DD, not {text!r}") from None
