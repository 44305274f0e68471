"""The hourly rule of Poughkeepsie § 168-22.5C(9), by the reading the profile names.

"At no time shall the hourly concentration be three times the average
concentration": "the average concentration" is either the average the table
above it lists for the substance (``listed_average``: a cap, three times 1 ppm
copper = 3 ppm), or the 24-hour average measured at the same point
(``measured_average``: an hour of 0.6 ppm copper among hours of 0.1 ppm is
then a violation though copper's limit is 1 ppm). The profile's ``[limits]
hourly_reading`` chooses (default ``listed_average``); each row says which in
its ``basis`` and message. docs/readings.md gives both readings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..rules import exceeds
from .findings import event, fmt_time, name_baseline
from .parameters import Limit

#: The reading taken when the profile names none.
DEFAULT_READING = "listed_average"


def reading(lim: Any) -> str:
    """The profile's reading of the hourly rule (``[limits] hourly_reading``)."""
    return lim.hourly_reading or DEFAULT_READING


def hourly_params(limits: dict[str, list[Limit]], section: str | None) -> set[str]:
    """Parameters the hourly rule measures: those limited in its section (every
    concentration when no limit cites it)."""
    params = {p for p, ls in limits.items() if any(x.section == section for x in ls)}
    return params or {p for p, ls in limits.items() if ls[0].dimension == "concentration"}


def listed_average(limits: list[Limit], section: str | None) -> Limit | None:
    """The listed average limit of a parameter the hourly rule is read against: its
    limit in the hourly rule's section (an average), else its first maximum."""
    with_max = [x for x in limits if x.max is not None and x.basis != "normal_strength"]
    cited = [x for x in with_max if x.section == section]
    chosen = cited or with_max
    return chosen[0] if chosen else None


def span_note(times: np.ndarray) -> str:
    """``; its results span 6.0 h of the 24`` for a short 24-hour period."""
    hours = (times[-1] - times[0]) / np.timedelta64(1, "h")
    return f"; its results span {hours:.1f} h of the 24" if hours < 20 else ""


def hourly_events(lim: Any, limits: list[Limit], g: pd.DataFrame, vals: np.ndarray,
                  times: np.ndarray, period: np.ndarray, unit: str, kind: str,
                  common: dict[str, Any]) -> list[dict[str, Any]]:
    """Clock hours at or above ``hourly_max_over_average`` x the average the reading takes.

    Parameters
    ----------
    lim
        The profile's ``[limits]``.
    limits
        The parameter's limits.
    g, vals, times, period
        One point's results of the parameter (time order), their values in
        ``unit``, times and 24-hour periods.
    kind
        ``exceedance``, or ``screening_exceedance`` away from where the rule applies.
    common
        Columns every row of the group shares.
    """
    factor = float(lim.hourly_max_over_average)
    how = reading(lim)
    section = str(lim.hourly_section)
    hour = pd.to_datetime(times).floor("h").to_numpy()
    out: list[dict[str, Any]] = []
    screening = ("; the rule is on the sewage as it arrives at the treatment plant, not a "
                 "violation at a user's manhole")
    if how == "listed_average":
        listed = listed_average(limits, lim.hourly_section)
        if listed is None or listed.max is None or not listed.max > 0:
            return out
        avg = float(listed.max)
        for h in np.unique(hour):
            in_h = hour == h
            m = float(vals[in_h].mean())
            if not exceeds(m, factor * avg, strict=False):
                continue
            msg = (f"hourly (reading: listed average): {common['parameter']} mean {m:g} {unit} "
                   f"in the hour from {fmt_time(h)} is {m / avg:.2f} x the average {avg:g} "
                   f"{unit} listed in {listed.section}; limit {factor:g} x = "
                   f"{factor * avg:g} {unit}")
            if kind == "screening_exceedance":
                msg = "screening: " + msg + screening
            ev = event(kind, "hourly", g[in_h], m, unit, factor * avg, unit, section, msg, h,
                       h + np.timedelta64(59, "m"), basis="listed_average", **common)
            ev["baseline"] = avg
            out.append(ev)
        return out
    for k in np.unique(period):
        sel = period == k
        if sel.sum() < 2:
            continue
        avg = float(vals[sel].mean())
        if not avg > 0:
            continue
        t = times[sel]
        for h in np.unique(hour[sel]):
            in_h = sel & (hour == h)
            m = float(vals[in_h].mean())
            if not exceeds(m, factor * avg, strict=False):
                continue
            msg = (f"hourly (reading: measured average): {common['parameter']} mean {m:g} "
                   f"{unit} in the hour from {fmt_time(h)} is {m / avg:.2f} x the 24-hour "
                   f"average {avg:.4g} {unit} at the same point ({int(sel.sum())} result(s) "
                   f"{fmt_time(t[0])}..{fmt_time(t[-1])}{span_note(t)}; limit {factor:g} x)")
            if kind == "screening_exceedance":
                msg = "screening: " + msg + screening
            ev = event(kind, "hourly", g[in_h], m, unit, factor * avg, unit, section, msg, h,
                       h + np.timedelta64(59, "m"), basis="measured_average", **common)
            name_baseline(ev, g[sel], avg)
            out.append(ev)
    return out
