"""The register's entries: what staff record, checked, and what it changes in a run.

The register is an append-only log: one row per event staff (or ``gisnet
notices``) record about a parcel. gisnet never rewrites or drops a row; a
mistake is corrected with a ``void`` entry naming the entry it cancels
(``refers_to``). Events, in :data:`EVENTS`:

=================  ===========================================================
``drafted``        a letter ``gisnet notices`` wrote (``letter_id``); no effect
                   on the answer until it is served
``served``         official notice served on ``event_date`` (its ``notice_ground``
                   optional: ``health_hazard`` or ``highway_program``)
``received``       the owner received the notice (a return receipt); no effect
``inspected``      an inspection; no effect
``health_hazard``  the private system was found a public health hazard: a ground
``highway_program`` the parcel is in a highway improvement program: a ground
``connected``      the parcel connected on ``event_date``
``note``           a note; no effect
``void``           cancels the entry ``refers_to``
=================  ===========================================================

How entries change the next run's answer (:func:`apply_register`): the
parcel's ``notice_date`` becomes the latest served date, a ground recorded
(by its own event or on a ``served`` entry) sets ``health_hazard`` /
``highway_program``, and ``connected`` makes the parcel connected. The town's
parcels layer is copied, never changed on disk.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError

#: Every event an entry may record, in the order a case goes.
EVENTS: tuple[str, ...] = ("drafted", "served", "received", "inspected", "health_hazard",
                           "highway_program", "connected", "note", "void")
#: Events that need a date.
DATED_EVENTS: frozenset[str] = frozenset({"served", "received", "inspected", "connected"})
#: Grounds an order to connect may stand on, as recorded with a ``served`` entry.
GROUNDS: tuple[str, ...] = ("health_hazard", "highway_program")
#: The register's columns, type and meaning (``entry_id`` is the table's key).
COLUMNS: dict[str, tuple[str, str]] = {
    "entry_id": ("integer", "entry number (1, 2, ...), given by gisnet when the entry is "
                            "added; the table's key"),
    "parcel_id": ("text", "parcel id, as in the parcels layer"),
    "event": ("text", "what happened: " + ", ".join(EVENTS)),
    "event_date": ("date", "the day it happened (required for served, received, inspected "
                           "and connected)"),
    "notice_ground": ("text", "for served: the ground the notice stands on (health_hazard, "
                              "highway_program, ';'-joined); else null"),
    "letter_id": ("text", "the letter concerned (drafted, served, received)"),
    "refers_to": ("integer", "for void: the entry it cancels"),
    "note": ("text", "free text"),
    "entered_by": ("text", "who entered it"),
    "entered_at": ("text", "when it was entered, ISO 8601 UTC (YYYY-MM-DDTHH:MM:SSZ)"),
}
NAMES: tuple[str, ...] = tuple(COLUMNS)


@dataclass
class Entry:
    """One entry to add (``entry_id`` and ``entered_at`` are given when it is added)."""

    parcel_id: str
    event: str
    event_date: dt.date | None = None
    notice_ground: str | None = None
    letter_id: str | None = None
    refers_to: int | None = None
    note: str | None = None
    entered_by: str | None = None

    def check(self, where: str = "register entry") -> None:
        """Raise :class:`ConfigError` naming the problem when the entry is not usable."""
        problem = entry_problem(self.__dict__)
        if problem:
            raise ConfigError(f"{where}: {problem}")

    def row(self, entered_at: str) -> dict[str, Any]:
        """The entry as a register row (without ``entry_id``)."""
        d = {k: getattr(self, k) for k in NAMES if k not in ("entry_id", "entered_at")}
        d["event_date"] = None if self.event_date is None else self.event_date.isoformat()
        d["entered_at"] = entered_at
        return d


def utc_now() -> str:
    """Now, ISO 8601 UTC to the second (``2026-03-01T09:14:03Z``)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _blank(v: Any) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v) \
        or (isinstance(v, str) and not v.strip())


def as_date(v: Any) -> dt.date | None:
    """A register date (``YYYY-MM-DD`` text, a date, a timestamp) as a date; None when blank.

    Raises
    ------
    ValueError
        Not a date.
    """
    if _blank(v):
        return None
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    if isinstance(v, pd.Timestamp):
        return v.date()
    text = str(v).strip()
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        raise ValueError(f"{text!r} is not a date (YYYY-MM-DD)") from None


def entry_problem(row: Mapping[str, Any]) -> str | None:
    """What is wrong with one register row, or None."""
    if _blank(row.get("parcel_id")):
        return "no parcel_id"
    event = row.get("event")
    if _blank(event) or str(event).strip() not in EVENTS:
        return f"event {event!r} is not one of {', '.join(EVENTS)}"
    event = str(event).strip()
    try:
        when = as_date(row.get("event_date"))
    except ValueError as exc:
        return f"event_date: {exc}"
    if event in DATED_EVENTS and when is None:
        return f"a {event} entry needs its event_date (YYYY-MM-DD)"
    if when is not None and event != "drafted" and when > dt.date.today() + dt.timedelta(days=1):
        return f"event_date {when.isoformat()} is in the future"
    ground = row.get("notice_ground")
    if not _blank(ground):
        bad = [g for g in str(ground).split(";") if g.strip() and g.strip() not in GROUNDS]
        if bad:
            return f"notice_ground {bad[0]!r} is not one of {', '.join(GROUNDS)}"
        if event != "served":
            return "notice_ground belongs to a served entry (record a ground alone as a " \
                   "health_hazard or highway_program entry)"
    ref = row.get("refers_to")
    if event == "void":
        if _blank(ref):
            return "a void entry needs refers_to (the entry it cancels)"
        try:
            int(float(str(ref)))
        except (TypeError, ValueError):
            return f"refers_to {ref!r} is not an entry number"
    return None


def checked(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """The register rows read from ``where``, checked: every column present, every
    row usable (a bad row is a :class:`ConfigError` naming the entry and the problem).

    Returns
    -------
    DataFrame
        Columns :data:`NAMES`; ``event_date`` as dates (object), ids as text.
    """
    missing = [c for c in NAMES if c not in df.columns]
    if missing:
        raise ConfigError(f"{where}: the register has no column {missing[0]!r} (columns: "
                          f"{', '.join(NAMES)})")
    out = df[list(NAMES)].copy().reset_index(drop=True)
    dates: list[dt.date | None] = []
    for i, row in enumerate(out.to_dict("records")):
        problem = entry_problem(row)
        if problem:
            eid = row.get("entry_id")
            name = f"entry {eid}" if not _blank(eid) else f"row {i + 1}"
            raise ConfigError(f"{where}: {name} (parcel {row.get('parcel_id')}): {problem}")
        dates.append(as_date(row["event_date"]))
    out["event_date"] = pd.Series(dates, dtype=object)
    out["parcel_id"] = out["parcel_id"].astype(str).str.strip()
    out["event"] = out["event"].astype(str).str.strip()
    return out


def live(entries: pd.DataFrame) -> pd.DataFrame:
    """The entries no ``void`` entry cancels (and no void entries), in entry order."""
    if not len(entries):
        return entries
    void = entries["event"] == "void"
    gone = {int(v) for v in entries.loc[void, "refers_to"].dropna()}
    keep = ~void & ~pd.to_numeric(entries["entry_id"], errors="coerce").isin(gone)
    return entries[keep].sort_values("entry_id", kind="stable")


@dataclass
class ParcelState:
    """What the register says of one parcel (its live entries folded)."""

    served: dt.date | None = None
    grounds: set[str] = field(default_factory=set)
    connected: dt.date | None = None
    letter_id: str | None = None
    entries: list[int] = field(default_factory=list)


def register_state(entries: pd.DataFrame) -> dict[str, ParcelState]:
    """Parcel id -> :class:`ParcelState` from the live entries."""
    out: dict[str, ParcelState] = {}
    for row in live(entries).to_dict("records"):
        st = out.setdefault(str(row["parcel_id"]), ParcelState())
        ev, when = row["event"], row["event_date"]
        st.entries.append(int(row["entry_id"]))
        if not _blank(row.get("letter_id")) and ev in ("drafted", "served"):
            st.letter_id = str(row["letter_id"])
        if ev == "served":
            st.served = when if st.served is None or when > st.served else st.served
            if not _blank(row.get("notice_ground")):
                st.grounds |= {g.strip() for g in str(row["notice_ground"]).split(";")
                               if g.strip()}
        elif ev in GROUNDS:
            st.grounds.add(ev)
        elif ev == "connected":
            st.connected = when
    return out


def apply_register(town: Any, entries: pd.DataFrame | None, *, where: str = "register") -> Any:
    """The town with its register applied to a copy of its parcels layer.

    Parameters
    ----------
    town
        A loaded :class:`gisnet.town.Town` (not changed).
    entries
        The register (:func:`gisnet.register.read_register`); None or empty: ``town``.
    where
        The register's place, for the findings.

    Returns
    -------
    Town
        A shallow copy whose ``parcels`` layer has ``notice_date``, ``health_hazard``,
        ``highway_program`` and ``connected`` set from the register, with findings
        ``register_applied`` (info) and ``register_unknown_parcel`` (warning) added to
        a copy of its report.
    """
    from ..report import Report

    if entries is None or not len(entries):
        return _with(town, entries, where)
    state = register_state(entries)
    parcels = town.layers.get("parcels")
    if parcels is None or not state:
        return _with(town, entries, where)
    P = parcels.copy()
    ids = P["parcel_id"].astype(str)
    pos = {pid: i for i, pid in enumerate(ids)}
    unknown = sorted(pid for pid in state if pid not in pos)
    served = pd.to_datetime(P["notice_date"]).astype("datetime64[ms]").to_numpy().copy()
    hazard = P["health_hazard"].astype("boolean").to_numpy(dtype=object, na_value=None).copy()
    highway = P["highway_program"].astype("boolean").to_numpy(dtype=object,
                                                              na_value=None).copy()
    connected = P["connected"].astype("boolean").to_numpy(dtype=object, na_value=None).copy()
    n_served = n_ground = n_conn = 0
    for pid, st in state.items():
        i = pos.get(pid)
        if i is None:
            continue
        if st.served is not None:
            served[i] = np.datetime64(st.served, "ms")
            n_served += 1
        if "health_hazard" in st.grounds:
            hazard[i] = True
        if "highway_program" in st.grounds:
            highway[i] = True
        n_ground += bool(st.grounds)
        if st.connected is not None:
            connected[i] = True
            n_conn += 1
    P["notice_date"] = served
    P["health_hazard"] = pd.array(hazard, dtype="boolean")
    P["highway_program"] = pd.array(highway, dtype="boolean")
    P["connected"] = pd.array(connected, dtype="boolean")
    out = _with(town, entries, where)
    out.layers = {**town.layers, "parcels": P}
    out.report = Report(list(town.report.findings))
    out.report.add("register_applied", "info",
                   f"{where}: {len(live(entries))} live entr(y/ies) on {len(state)} parcel(s) "
                   f"read: {n_served} notice(s) served, {n_ground} ground(s) recorded, "
                   f"{n_conn} connection(s)", layer="register")
    if unknown:
        shown = ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        out.report.add("register_unknown_parcel", "warning",
                       f"{where}: {len(unknown)} parcel id(s) of the register are not in the "
                       f"parcels layer: {shown}; their entries change nothing",
                       layer="register", feature_id=", ".join(unknown[:50]))
    return out


def _with(town: Any, entries: pd.DataFrame | None, where: str) -> Any:
    """A shallow copy of ``town`` whose settings name the register (``register``,
    ``register_place``): the overdue layer and the run summary read them."""
    import copy
    import dataclasses

    out = copy.copy(town)
    out.settings = dataclasses.replace(town.settings, extra={
        **town.settings.extra, "register": entries, "register_place": where})
    return out


def new_entries(rows: Iterable[Entry], where: str) -> list[Entry]:
    """Check each entry; the first bad one is a :class:`ConfigError`."""
    out = []
    for e in rows:
        e.check(where)
        out.append(e)
    return out
