"""Which parcels get a notice packet, and what each packet says.

The default selection (:data:`ORDERABLE`) is every parcel the town could
order to connect. Poughkeepsie § 168-22.2G: the owner of property "abutting
on any street, alley or right-of-way, in which there is now located ... a
public sanitary sewer ... is hereby required ... to connect ... within 30 days
after the date of official notice to do so, provided that said public sewer
is within 300 feet of the property line"; Berlin sec. 16-50: buildings "shall
be connected with the public sewer within ninety (90) days after the date of
official notice to do so; provided that such public sewer is within two
hundred (200) feet of the building". Those are the parcels the obligations
analysis marks ``required`` (within the distance, abutting, not connected,
covered by the rule: notice may be served now) and ``subject_to_notice``
(within, abutting, not connected, but Poughkeepsie's notice "shall be given
only when it shall be necessary to eliminate a public health hazard or to
promote a highway improvement program" and no such ground is recorded yet).
Parcels asked for by id get a packet whatever their status.

The deadline of a packet (:func:`deadline`): where official notice was
served before (the row's ``notice_date`` and ``deadline_date``), the date that
notice set; else the notice date + the ``deadline_days`` of the parcel's row
where the rule runs from official notice; else the row's ``septic_deadline``
(Berlin's existing-plumbing date); else none applies.
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

#: Statuses of the parcels the town could order to connect (the default selection).
ORDERABLE = ("required", "subject_to_notice")
#: The owner line of a parcel whose owner the parcels layer does not record.
OWNER_UNKNOWN = "Owner of record"
#: The address of a parcel whose address the parcels layer does not record.
ADDRESS_UNKNOWN = "address not recorded"


def select_rows(ob: pd.DataFrame, parcel_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """The obligations rows that get a packet, in parcel-id order.

    Parameters
    ----------
    ob
        The ``obligations`` layer.
    parcel_ids
        Parcels asked for by id (then only these); None: every parcel whose
        status is in :data:`ORDERABLE`.

    Raises
    ------
    NotFoundError
        An id that is no parcel of the layer (the first one named).
    """
    if parcel_ids is None:
        rows = ob[ob["status"].isin(ORDERABLE)]
    else:
        ids = list(dict.fromkeys(str(p) for p in parcel_ids))
        have = ob["parcel_id"].astype(str)
        missing = [p for p in ids if p not in set(have)]
        if missing:
            raise NotFoundError(f"parcel {missing[0]!r} is not in the obligations layer"
                                + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))
        rows = ob[have.isin(ids)]
    return rows.sort_values("parcel_id", kind="stable")


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


def deadline(row: Any, notice_date: dt.date) -> tuple[int | None, dt.date | None, str]:
    """``(days, date, sentence)`` of a packet's deadline (module docstring)."""
    days = row.get("deadline_days")
    served, due_served = _date(row.get("notice_date")), _date(row.get("deadline_date"))
    if served is not None and due_served is not None:  # notice served before: it runs
        return (int(days) if days is not None and not pd.isna(days) else None), due_served, (
            f"Official notice was served on {served.isoformat()}: the connection was due "
            f"within {int(days)} days, by {due_served.isoformat()}." if days is not None
            and not pd.isna(days) else f"Connect by {due_served.isoformat()}.")
    if days is not None and days is not pd.NA and not (isinstance(days, float)
                                                       and np.isnan(days)):
        days = int(days)
        due = notice_date + dt.timedelta(days=days)
        return days, due, (f"Connect within {days} days after the date of this notice "
                           f"({notice_date.isoformat()}): by {due.isoformat()}.")
    septic = _date(row.get("septic_deadline"))
    if septic is not None:
        return None, septic, (f"Connect by {septic.isoformat()} (the date the ordinance sets "
                              "for existing plumbing).")
    return None, None, "No deadline applies to this parcel under the rule."


def rule_text(connection: Any, section: str | None) -> str:
    """The rule of ``section`` in the ordinance's words, from the profile's ``[connection]``.

    The connection section gives the properties covered (``applies_to_text``),
    the rule (``text``) and its notice condition; the private-system sections
    give ``septic_rule``.
    """
    c = connection
    if section and section in {c.septic_section, c.septic_notice_section} and c.septic_rule:
        return str(c.septic_rule)
    parts = []
    if c.applies_to_text:
        parts.append(str(c.applies_to_text).strip().rstrip(",;"))
    if c.text:
        parts.append(str(c.text).strip())
    text = " ... ".join(parts) if parts else f"within {c.distance_ft:g} ft of the public sewer"
    text = text.rstrip(".") + "."
    if c.notice_condition:
        text += " " + str(c.notice_condition).strip()
    return text


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


def build_packets(town: Any, rows: pd.DataFrame, notice_date: dt.date) -> list[Packet]:
    """The packet of every row of ``rows`` (obligations rows, :func:`select_rows`)."""
    prof = town.profile
    con = prof.connection
    taken: set[str] = set()
    out = []
    for row in rows.drop(columns=[rows.geometry.name] if hasattr(rows, "geometry") else [],
                         errors="ignore").to_dict("records"):
        pid = str(row["parcel_id"])
        dist = row.get("distance_ft")
        dist = None if dist is None or pd.isna(dist) else float(dist)
        days, due, sentence = deadline(row, notice_date)
        served = _date(row.get("notice_date"))
        section = _text(row.get("section")) or con.section
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
            "town": town.name,
            "jurisdiction": prof.profile.jurisdiction,
            "ordinance": prof.profile.ordinance,
            "section": section,
            "rule_text": rule_text(con, section),
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
            "deadline_days": "" if days is None else str(days),
            "deadline_date": "" if due is None else due.isoformat(),
            "deadline_text": sentence,
        }
        out.append(Packet(pid, values, dist, days, due, str(row.get("status")),
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
