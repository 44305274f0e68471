"""The plant's monthly increase of SS, BOD and grease (Poughkeepsie § 168-22.5D).

"Notwithstanding the provisions of § 168-22.5C, any discharge into the public
sewer of wastes with a concentration of suspended solids, BOD or grease, that
causes at the sewage works a monthly increase in the average daily analysis of
any of these constituents in excess of 2% of the annual daily average for the
previous year is prohibited."

The numbers are the profile's ``[monthly_increase]`` (absent: not checked). The
plant-flow table carries each month's average daily analysis at the plant, one
column per constituent (``ss_mg_l`` ...). For every plant, month and constituent
with a value, the **annual daily average for the previous year** is the mean of
the previous calendar year's twelve monthly average daily analyses, each month
counting once (not weighted by its days or its flow); with any of those twelve
months missing gisnet cannot say, and names them. The **monthly increase** is
read by the profile's ``reading``:

- ``over_annual_average`` (default): the month's average daily analysis less
  that annual daily average;
- ``over_previous_month``: the month's less the month before's (which must be
  reported too).

Either way the increase is compared with ``max_increase_pct`` (2 %) of the
annual daily average, "in excess of" being strictly more
(:func:`gisnet.rules.exceeds`). The clause prohibits a *discharge that causes*
the rise; gisnet sees only the plant, so a rise in excess is something to
investigate (which users discharge the constituent), never a violation by a
named user.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..rules import exceeds

__all__ = ["MONTHLY_INCREASE_COLUMNS", "monthly_increase_layer"]

#: Columns of the ``plant_increase`` result layer (plus geometry).
MONTHLY_INCREASE_COLUMNS = [
    "plant_id", "month", "constituent", "value_mg_l", "previous_year", "annual_avg_mg_l",
    "reading", "compared_with", "compared_mg_l", "increase_mg_l", "increase_pct",
    "max_increase_pct", "over_limit", "status", "missing_months", "section", "message",
]

#: What each constituent is called in messages.
_WORDS = {"ss": "suspended solids", "bod": "BOD", "grease": "grease"}


def _empty(crs: Any) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame({c: pd.Series([], dtype=_dtype(c)) for c in MONTHLY_INCREASE_COLUMNS},
                            geometry=gpd.GeoSeries([], crs=crs), crs=crs)


def _dtype(column: str) -> str:
    if column.endswith(("_mg_l", "_pct")):
        return "float64"
    if column == "over_limit":
        return "boolean"
    return "object"


def monthly_increase_layer(town: Any) -> tuple[gpd.GeoDataFrame, str | None]:
    """The ``plant_increase`` layer, and why the rule was not checked (None if it was).

    Parameters
    ----------
    town
        The town: ``profile.monthly_increase`` (the rule, or None), ``plant_flows``
        (with ``<constituent>_mg_l`` columns) and the ``plants`` layer (the rows'
        points; a plant of the table missing there has no geometry).

    Returns
    -------
    (GeoDataFrame, str or None)
        Columns :data:`MONTHLY_INCREASE_COLUMNS` and the plant's point, one row per
        plant, month and constituent with an analysis, in that order; and the
        reason nothing was checked (no such rule in the profile, no plant-flow
        table, none of the constituents' columns), or None.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from gisnet.profile import load_profile
    >>> months = [f"2024-{m:02d}" for m in range(1, 13)] + ["2025-01"]
    >>> flows = pd.DataFrame({"plant_id": "P", "month": months, "avg_flow_mgd": 1.0,
    ...                       "bod_mg_l": [200.0] * 12 + [204.5]})
    >>> town = SimpleNamespace(profile=load_profile("poughkeepsie-fourth-ward"),
    ...                        plant_flows=flows, layers={}, crs="EPSG:2260")
    >>> layer, why = monthly_increase_layer(town)
    >>> r = layer.iloc[-1]
    >>> r["month"], float(r["annual_avg_mg_l"]), float(r["increase_mg_l"]), r["status"]
    ('2025-01', 200.0, 4.5, 'over')
    """
    rule = town.profile.monthly_increase
    crs = town.crs
    if rule is None:
        return _empty(crs), (f"the profile {town.profile.id} has no rule on the plant's "
                             "monthly increase of a constituent: not checked")
    flows = town.plant_flows
    columns = {c: f"{c}_mg_l" for c in rule.constituents}
    if flows is None or not len(flows):
        return _empty(crs), (f"no plant_flows table: {rule.section} (the plant's monthly "
                             "average daily analyses) is not checked")
    present = {c: col for c, col in columns.items() if col in flows.columns}
    if not present:
        return _empty(crs), (f"plant_flows has no {', '.join(columns.values())} column: "
                             f"{rule.section} (the plant's monthly average daily analyses) "
                             "is not checked")
    reading = str(rule.reading or "over_annual_average")
    pct = float(rule.max_increase_pct)
    points: dict[str, Any] = {}
    plants = town.layers.get("plants")
    if plants is not None and len(plants):
        points = dict(zip(plants["plant_id"].astype(str), plants.geometry, strict=True))
    rows: list[dict[str, Any]] = []
    for pid, mine in flows.groupby(flows["plant_id"].astype(str), sort=True):
        per = pd.PeriodIndex(pd.to_datetime(mine["month"].astype(str), format="%Y-%m"),
                             freq="M")
        for c, col in present.items():
            vals = pd.Series(mine[col].to_numpy(dtype=float), index=per).dropna()
            for month, value in vals.sort_index().items():
                rows.append(_row(str(pid), c, month, float(value), vals, reading, pct,
                                 rule.section, points.get(str(pid))))
    if not rows:
        return _empty(crs), None
    out = gpd.GeoDataFrame(rows, columns=[*MONTHLY_INCREASE_COLUMNS, "geometry"],
                           geometry="geometry", crs=crs)
    for c in MONTHLY_INCREASE_COLUMNS:
        out[c] = out[c].astype(_dtype(c))
    order = {c: i for i, c in enumerate(rule.constituents)}
    out["_o"] = out["constituent"].map(order)
    out = out.sort_values(["plant_id", "month", "_o"], kind="stable").drop(columns="_o")
    return out.reset_index(drop=True), None


def _row(pid: str, constituent: str, month: pd.Period, value: float, vals: pd.Series,
         reading: str, pct: float, section: str, point: Any) -> dict[str, Any]:
    """One plant, month and constituent."""
    year = month.year - 1
    year_months = pd.period_range(f"{year}-01", f"{year}-12", freq="M")
    need = list(year_months)
    prev = month - 1
    if reading == "over_previous_month" and prev not in year_months:
        need.append(prev)  # February and later: the month before is in this year
    missing = [str(m) for m in need if m not in vals.index]
    word = _WORDS.get(constituent, constituent)
    row: dict[str, Any] = {
        "plant_id": pid, "month": str(month), "constituent": constituent,
        "value_mg_l": value, "previous_year": str(year), "annual_avg_mg_l": np.nan,
        "reading": reading, "compared_with": "", "compared_mg_l": np.nan,
        "increase_mg_l": np.nan, "increase_pct": np.nan, "max_increase_pct": pct,
        "over_limit": None, "status": "cannot_say", "missing_months": ",".join(missing),
        "section": section, "geometry": point,
    }
    if missing:
        row["message"] = (f"plant {pid} {month} {word}: cannot say: months missing "
                          f"{', '.join(missing)} (the annual daily average for {year} needs "
                          "its 12 months" + (", and the increase the month before"
                                             if str(prev) in missing else "") + ")")
        return row
    annual = float(vals.loc[year_months].mean())
    if reading == "over_previous_month":
        compared, label = float(vals.loc[prev]), str(prev)
    else:
        compared, label = annual, f"{year} annual daily average"
    increase = value - compared
    allowed = annual * pct / 100.0
    over = bool(exceeds(increase, allowed))
    row.update(annual_avg_mg_l=annual, compared_with=label, compared_mg_l=compared,
               increase_mg_l=increase,
               increase_pct=increase / annual * 100.0 if annual > 0 else np.nan,
               over_limit=over, status="over" if over else "not_over")
    share = f"{row['increase_pct']:+.3g} %" if annual > 0 else "an increase over nil"
    if reading == "over_previous_month":
        what = (f"plant {pid} {month} {word}: {value:g} mg/L, {increase:+.4g} mg/L over "
                f"{label} ({compared:.4g} mg/L) = {share} of the {year} annual daily "
                f"average {annual:.4g} mg/L")
    else:
        what = (f"plant {pid} {month} {word}: {value:g} mg/L, {increase:+.4g} mg/L over "
                f"the {label} {annual:.4g} mg/L ({share})")
    if over:
        row["message"] = (f"{what}: in excess of {pct:g} % ({section}, read as "
                          f"{reading}): investigate which users discharge {word} to plant "
                          f"{pid}; the rule prohibits the discharge that causes it, and "
                          "the plant's analyses alone name no user")
    else:
        row["message"] = f"{what}: not in excess of {pct:g} % ({section}, read as {reading})"
    return row
