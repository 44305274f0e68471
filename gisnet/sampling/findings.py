"""The rows :func:`gisnet.sampling.check_samples` returns: columns and builders.

Each row is a finding (``exceedance``, ``screening_exceedance``,
``above_normal_strength``), a ``narrative`` (a standard in words only) or a
``problem``; the columns are
:data:`CHECK_COLUMNS`, documented in docs/results.md ("Sample checks").
Concentrations in mg/L, temperature in °F, pH in standard units.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: Columns of the sample-check table, in order.
CHECK_COLUMNS = [
    "kind", "rule", "basis", "point", "manhole_id", "plant_id", "parameter", "start", "end",
    "duration_min", "n_samples", "value", "unit", "limit", "limit_unit", "baseline",
    "baseline_n", "baseline_lines", "baseline_start", "baseline_end", "section", "message",
    "lines", "suspects", "suspect_user_ids",
]

#: Row kinds: the findings, a violation first, and the problems with the input.
KINDS = ("exceedance", "screening_exceedance", "above_normal_strength", "narrative", "problem")


def lines(g: pd.DataFrame) -> str:
    """The file line numbers of some results, comma-separated."""
    return ",".join(str(int(x)) for x in g["line"])


def row(kind: str, rule: str, **kw: Any) -> dict[str, Any]:
    """A row with every column, None where not given."""
    r: dict[str, Any] = dict.fromkeys(CHECK_COLUMNS)
    r.update(kind=kind, rule=rule, **kw)
    return r


def event(kind: str, rule: str, g: pd.DataFrame, value: float, unit: str, limit: float,
          limit_unit: str, section: str, message: str, t0: Any, t1: Any, **kw: Any
          ) -> dict[str, Any]:
    """A finding over the results ``g`` from ``t0`` to ``t1``."""
    t0, t1 = pd.Timestamp(t0), pd.Timestamp(t1)
    return row(kind, rule, start=t0, end=t1, duration_min=(t1 - t0).total_seconds() / 60.0,
               n_samples=len(g), value=float(value), unit=unit, limit=float(limit),
               limit_unit=limit_unit, section=section, message=message, lines=lines(g), **kw)


def name_baseline(ev: dict[str, Any], g: pd.DataFrame, value: float) -> None:
    """Name the results an average (``value``) was formed from in a finding."""
    t = pd.to_datetime(g["datetime"])
    ev.update(baseline=float(value), baseline_n=len(g), baseline_lines=lines(g),
              baseline_start=t.min(), baseline_end=t.max())


def fmt_time(t: Any) -> str:
    """A time as ``YYYY-MM-DD HH:MM``."""
    return f"{pd.Timestamp(t):%Y-%m-%d %H:%M}"


def user_labels(users: pd.DataFrame) -> tuple[str, str]:
    """Industrial users as text (``U1 Plating Co (30,000 gpd); ...``) and their ids."""
    names = []
    for _, u in users.iterrows():
        f = u.get("process_flow_gpd")
        label = str(u["user_id"])
        nm = u.get("name")
        if nm is not None and pd.notna(nm) and str(nm) != label:
            label += f" {nm}"
        label += f" ({f:,.0f} gpd)" if f is not None and pd.notna(f) else \
            " (process flow unknown)"
        names.append(label)
    return "; ".join(names), ",".join(str(x) for x in users["user_id"])
