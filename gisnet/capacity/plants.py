"""Treatment plants against their design flow: the 3-consecutive-month rule and the 80 % line.

A plant's flow is, in order: the mean of ``capacity.plant_months`` consecutive
complete calendar months of its monthly flows (:func:`plant_window`, basis
``monthly_3mo``); else its reported average flow (``avg_flow``); else the
sewage accumulated down the network to its node (``accumulated``). Which
window decides is the profile's ``capacity.plant_basis``: ``latest`` (the
default: the last ``plant_months`` months of the record, how the plant
operates now, as Berlin's "a wastewater treatment facility operating in excess
of 80% design flow capacity" reads) or ``worst`` (the highest window in the
whole record). The latest window must be complete: with one of its months
missing the answer is "cannot say" (basis ``months_missing``, the months named
in ``missing_months``, ``over_threshold`` null), never an older window's "below".
The worst window is always kept as history columns (``worst_*``). The ratio to
design flow is over the profile's ``capacity.plant_threshold`` (0.80) when it
is in excess of it (``capacity.plant_strict``), judged by
:func:`gisnet.rules.exceeds`.

Units: plant flows in MGD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..profile.sections import PLANT_BASES
from ..rules import exceeds
from ..units import MGD_TO_GPD
from .network import Accumulation, Network

__all__ = ["PLANT_BASES", "PLANT_COLUMNS", "PlantWindows", "cannot_say", "plant_basis",
           "plant_layer", "plant_window", "plant_windows"]

#: Columns of the ``plants`` result layer (plus geometry).
PLANT_COLUMNS = ["plant_id", "name", "node_id", "design_flow_mgd", "avg_flow_mgd", "ratio",
                 "threshold", "over_threshold", "basis", "window_basis", "window",
                 "window_months", "gaps", "months", "worst_window", "worst_avg_flow_mgd",
                 "worst_ratio", "worst_over_threshold", "reported_avg_flow_mgd",
                 "accumulated_flow_mgd", "missing_months", "section"]


@dataclass(frozen=True)
class PlantWindows:
    """The latest and the worst window of ``k`` consecutive complete months of one plant.

    Attributes
    ----------
    k
        Window length in months.
    latest_mgd, latest
        Mean flow (MGD, NaN if no complete window) and months (``YYYY-MM``, in
        order; empty if none) of the most recent window.
    worst_mgd, worst
        The same for the window with the highest mean (the earliest of equals).
    gaps
        Months missing (or without a value) between the first and last month given.
    months
        Number of months with a value.
    latest_missing
        Months of the latest window (the last ``k`` months of the record) that
        have no value: then ``latest_mgd`` is NaN and ``latest`` empty (no older
        window stands in for it).
    """

    k: int
    latest_mgd: float
    latest: tuple[str, ...]
    worst_mgd: float
    worst: tuple[str, ...]
    gaps: tuple[str, ...] = field(default=())
    months: int = 0
    latest_missing: tuple[str, ...] = field(default=())

    def pick(self, which: str) -> tuple[float, tuple[str, ...]]:
        """``(mean_mgd, months)`` of the ``latest`` or the ``worst`` window."""
        if which not in PLANT_BASES:
            raise ValueError(f"plant basis must be one of {', '.join(PLANT_BASES)}, not {which!r}")
        return (self.latest_mgd, self.latest) if which == "latest" else \
            (self.worst_mgd, self.worst)


def _span(months: tuple[str, ...]) -> str:
    return f"{months[0]}..{months[-1]}" if months else ""


def plant_windows(months: pd.DataFrame, k: int = 3, through: str | None = None
                  ) -> PlantWindows:
    """The latest and the worst ``k`` consecutive complete months of a plant's flows.

    A month is complete when it has a value; a window never spans a missing
    month. Several rows of one month are averaged. The latest window is the last
    ``k`` months of the record (ending at ``through`` when that is later than the
    plant's last month): when one of them is missing there is no latest window,
    and the months are named (``latest_missing``).

    Parameters
    ----------
    months
        ``month`` (``YYYY-MM``) and ``avg_flow_mgd`` rows of one plant.
    k
        Window length in months.
    through
        The last month of the record (``YYYY-MM``; e.g. the latest month of the
        whole ``plant_flows`` table): a plant whose flows stop before it misses
        the months after.

    Returns
    -------
    PlantWindows

    Examples
    --------
    >>> m = pd.DataFrame({"month": ["2025-01", "2025-02", "2025-03", "2025-04"],
    ...                   "avg_flow_mgd": [0.5, 1.2, 1.1, 1.0]})
    >>> w = plant_windows(m)
    >>> round(w.latest_mgd, 6), w.latest, round(w.worst_mgd, 6), w.worst[0]
    (1.1, ('2025-02', '2025-03', '2025-04'), 1.1, '2025-02')
    """
    per = pd.PeriodIndex(pd.to_datetime(months["month"].astype(str), format="%Y-%m"), freq="M")
    vals = pd.Series(pd.to_numeric(months["avg_flow_mgd"], errors="coerce").to_numpy(),
                     index=per)
    vals = vals.groupby(level=0).mean()
    nan = float("nan")
    if vals.empty:
        return PlantWindows(k, nan, (), nan, ())
    end = vals.index.max()
    if through is not None:
        end = max(end, pd.Period(str(through), freq="M"))
    full = pd.period_range(min(vals.index.min(), end - (k - 1)), end, freq="M")
    s = vals.reindex(full)
    given = s.index >= vals.index.min()
    gaps = tuple(str(p) for p in s.index[s.isna() & given])
    n = int(s.notna().sum())
    latest_missing = tuple(str(p) for p in s.index[-k:][s.iloc[-k:].isna().to_numpy()])
    roll = s.rolling(k, min_periods=k).mean()
    ok = roll.notna().to_numpy()
    if not ok.any():
        return PlantWindows(k, nan, (), nan, (), gaps, n, latest_missing)

    def window(end: int) -> tuple[str, ...]:
        return tuple(str(p) for p in s.index[end - k + 1:end + 1])

    last = len(s) - 1
    worst = int(np.nanargmax(roll.to_numpy()))
    latest_mgd = nan if latest_missing else float(roll.iloc[last])
    latest = () if latest_missing else window(last)
    return PlantWindows(k, latest_mgd, latest, float(roll.iloc[worst]), window(worst), gaps, n,
                        latest_missing)


def plant_window(months: pd.DataFrame, k: int = 3, which: str = "latest"
                 ) -> tuple[float, str, list[str], int]:
    """Mean of the latest (or worst) ``k`` consecutive complete months of a plant's flows.

    Parameters
    ----------
    months
        ``month`` (``YYYY-MM``) and ``avg_flow_mgd`` rows of one plant.
    k
        Window length in months.
    which
        ``latest`` (the most recent window) or ``worst`` (the highest mean); see
        :data:`PLANT_BASES`.

    Returns
    -------
    (mean_mgd, window, gaps, n_months)
        The k-month mean (NaN if no complete window), the window as
        ``YYYY-MM..YYYY-MM``, the months missing (or without a value) between
        the first and last month given, and the number of months with a value.
        A window never spans a gap.

    Examples
    --------
    >>> m = pd.DataFrame({"month": ["2025-01", "2025-02", "2025-03", "2025-04", "2025-05"],
    ...                   "avg_flow_mgd": [0.5, 1.2, 1.1, 1.0, 0.6]})
    >>> mean, window, gaps, n = plant_window(m)
    >>> round(mean, 6), window, gaps, n
    (0.9, '2025-03..2025-05', [], 5)
    >>> round(plant_window(m, which="worst")[0], 6), plant_window(m, which="worst")[1]
    (1.1, '2025-02..2025-04')
    """
    w = plant_windows(months, k)
    mean, used = w.pick(which)
    return mean, _span(used), list(w.gaps), w.months


def cannot_say(plant_id: Any, missing: str, k: int) -> str:
    """The answer for a plant whose latest window misses months: "cannot say", naming them."""
    return (f"plant {plant_id}: cannot say whether it operates in excess of its threshold: "
            f"months missing {missing.replace(',', ', ')} (the latest {k} months must all be "
            "reported)")


def _number(x: Any) -> float:
    """A value as float, NaN when missing or not a number."""
    return pd.to_numeric(pd.Series([x]), errors="coerce").iloc[0]


def plant_basis(profile: Any) -> str:
    """The profile's ``capacity.plant_basis`` (``latest`` when it gives none)."""
    return str(profile.capacity.plant_basis or "latest")


def plant_layer(town: Any, net: Network, acc: Accumulation) -> gpd.GeoDataFrame:
    """The ``plants`` result layer: each plant's flow against its design flow.

    Parameters
    ----------
    town
        The town: ``plants`` layer (optional), ``plant_flows`` (monthly flows,
        optional) and ``profile.capacity`` (``plant_threshold``,
        ``plant_months``, ``plant_strict``, ``plant_basis``, ``plant_section``).
    net, acc
        The network arrays and the accumulated flows (for plants without
        monthly or reported flows).

    Returns
    -------
    geopandas.GeoDataFrame
        Columns :data:`PLANT_COLUMNS` and geometry, one row per plant (empty
        when the town has no plants). ``avg_flow_mgd``, ``ratio`` and
        ``over_threshold`` follow the profile's ``plant_basis`` (``window_basis``,
        months used in ``window`` and ``window_months``); the worst window of
        the record is in ``worst_window``, ``worst_avg_flow_mgd``,
        ``worst_ratio`` and ``worst_over_threshold`` whatever the basis.
    """
    layer = town.layers.get("plants")
    crs = town.crs
    if layer is None or len(layer) == 0:
        return gpd.GeoDataFrame({c: [] for c in PLANT_COLUMNS},
                                geometry=gpd.GeoSeries([], crs=crs), crs=crs)
    cap = town.profile.capacity
    thr = float(cap.plant_threshold)
    k = int(cap.plant_months)
    strict = bool(cap.plant_strict)
    which = plant_basis(town.profile)
    monthly = town.plant_flows
    through = None
    if monthly is not None and len(monthly):
        through = str(pd.PeriodIndex(pd.to_datetime(monthly["month"].astype(str), format="%Y-%m"),
                                     freq="M").max())
    rows = []
    for rec in layer.itertuples(index=False):
        pid = str(rec.plant_id)
        node = pid if pid in net.node_idx else (
            str(rec.node_id) if getattr(rec, "node_id", None) is not None
            and str(rec.node_id) in net.node_idx else None)
        accum = float("nan")
        if node is not None:
            accum = float(acc.node_flow[acc.rep[net.node_idx[node]], :2].sum()) / MGD_TO_GPD
        design = _number(getattr(rec, "design_flow_mgd", None))
        reported = _number(getattr(rec, "avg_flow_mgd", None))
        flow, basis = float("nan"), ""
        w = PlantWindows(k, float("nan"), (), float("nan"), ())
        used: tuple[str, ...] = ()
        missing: tuple[str, ...] = ()
        if monthly is not None and len(monthly):
            mine = monthly[monthly["plant_id"].astype(str) == pid]
            if len(mine):
                w = plant_windows(mine, k, through)
                flow, used = w.pick(which)
                if np.isfinite(flow):
                    basis = f"monthly_{k}mo"
                elif which == "latest" and w.latest_missing:
                    # the latest months are the answer's basis: with one missing gisnet
                    # cannot say, and no older window or other figure stands in
                    missing, basis = w.latest_missing, "months_missing"
        if not basis and np.isfinite(reported):
            flow, basis = float(reported), "avg_flow"
        if not basis and np.isfinite(accum) and accum > 0:
            # 0 accumulated is no flow data (no parcels, no flows), never "0 %"
            flow, basis = accum, "accumulated"
        ok = design > 0
        ratio = flow / design if np.isfinite(flow) and ok else float("nan")
        over: bool | None = (None if missing or not np.isfinite(ratio)
                             else exceeds(ratio, thr, strict))
        worst_ratio = w.worst_mgd / design if np.isfinite(w.worst_mgd) and ok else float("nan")
        rows.append({
            "plant_id": pid, "name": getattr(rec, "name", None), "node_id": node,
            "design_flow_mgd": design, "avg_flow_mgd": flow, "ratio": ratio, "threshold": thr,
            "over_threshold": over, "basis": basis or "none",
            "window_basis": which if basis.startswith("monthly") else "",
            "window": _span(used), "window_months": ",".join(used),
            "gaps": ",".join(w.gaps), "months": w.months,
            "worst_window": _span(w.worst), "worst_avg_flow_mgd": w.worst_mgd,
            "worst_ratio": worst_ratio,
            "worst_over_threshold": exceeds(worst_ratio, thr, strict),
            "reported_avg_flow_mgd": reported, "accumulated_flow_mgd": accum,
            "missing_months": ",".join(missing), "section": cap.plant_section,
            "geometry": rec.geometry,
        })
    out = gpd.GeoDataFrame(rows, columns=[*PLANT_COLUMNS, "geometry"], geometry="geometry",
                           crs=crs)
    out["over_threshold"] = out["over_threshold"].astype("boolean")  # null: unknown
    return out
