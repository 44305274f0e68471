"""Treatment plants against their design flow: the 3-consecutive-month rule and the 80 % line.

A plant's flow is, in order: the worst mean of ``capacity.plant_months``
consecutive calendar months of its monthly flows (:func:`plant_window`, basis
``monthly_3mo``); else its reported average flow (``avg_flow``); else the
sewage accumulated down the network to its node (``accumulated``). The ratio
to design flow is over the profile's ``capacity.plant_threshold`` (0.80) when
it is in excess of it (``capacity.plant_strict``), judged by
:func:`gisnet.rules.exceeds`.

Units: plant flows in MGD.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..rules import exceeds
from ..units import MGD_TO_GPD
from .network import Accumulation, Network

__all__ = ["PLANT_COLUMNS", "plant_layer", "plant_window"]

#: Columns of the ``plants`` result layer (plus geometry).
PLANT_COLUMNS = ["plant_id", "name", "node_id", "design_flow_mgd", "avg_flow_mgd", "ratio",
                 "threshold", "over_threshold", "basis", "window", "gaps", "months",
                 "reported_avg_flow_mgd", "accumulated_flow_mgd", "section"]


def plant_window(months: pd.DataFrame, k: int = 3) -> tuple[float, str, list[str], int]:
    """Worst mean of ``k`` consecutive calendar months of a plant's monthly flows.

    Parameters
    ----------
    months
        ``month`` (``YYYY-MM``) and ``avg_flow_mgd`` rows of one plant.
    k
        Window length in months.

    Returns
    -------
    (mean_mgd, window, gaps, n_months)
        The highest k-month mean (NaN if no complete window), the window as
        ``YYYY-MM..YYYY-MM``, the months missing (or without a value) between
        the first and last month given, and the number of months with a value.
        A window never spans a gap.

    Examples
    --------
    >>> m = pd.DataFrame({"month": ["2025-01", "2025-02", "2025-03", "2025-04"],
    ...                   "avg_flow_mgd": [0.5, 1.2, 1.1, 1.0]})
    >>> mean, window, gaps, n = plant_window(m)
    >>> round(mean, 6), window, gaps, n
    (1.1, '2025-02..2025-04', [], 4)
    """
    per = pd.PeriodIndex(pd.to_datetime(months["month"].astype(str), format="%Y-%m"), freq="M")
    vals = pd.Series(pd.to_numeric(months["avg_flow_mgd"], errors="coerce").to_numpy(),
                     index=per)
    vals = vals.groupby(level=0).mean()
    if vals.empty:
        return float("nan"), "", [], 0
    full = pd.period_range(vals.index.min(), vals.index.max(), freq="M")
    s = vals.reindex(full)
    gaps = [str(p) for p in s.index[s.isna()]]
    roll = s.rolling(k, min_periods=k).mean()
    if roll.notna().sum() == 0:
        return float("nan"), "", gaps, int(s.notna().sum())
    end = roll.idxmax()
    start = end - (k - 1)
    return float(roll.max()), f"{start}..{end}", gaps, int(s.notna().sum())


def _number(x: Any) -> float:
    """A value as float, NaN when missing or not a number."""
    return pd.to_numeric(pd.Series([x]), errors="coerce").iloc[0]


def plant_layer(town: Any, net: Network, acc: Accumulation) -> gpd.GeoDataFrame:
    """The ``plants`` result layer: each plant's flow against its design flow.

    Parameters
    ----------
    town
        The town: ``plants`` layer (optional), ``plant_flows`` (monthly flows,
        optional) and ``profile.capacity`` (``plant_threshold``,
        ``plant_months``, ``plant_strict``, ``plant_section``).
    net, acc
        The network arrays and the accumulated flows (for plants without
        monthly or reported flows).

    Returns
    -------
    geopandas.GeoDataFrame
        Columns :data:`PLANT_COLUMNS` and geometry, one row per plant (empty
        when the town has no plants).
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
    monthly = town.plant_flows
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
        window, gaps, nmonths, flow, basis = "", [], 0, float("nan"), ""
        if monthly is not None and len(monthly):
            mine = monthly[monthly["plant_id"].astype(str) == pid]
            if len(mine):
                flow, window, gaps, nmonths = plant_window(mine, k)
                if np.isfinite(flow):
                    basis = f"monthly_{k}mo"
        if not basis and np.isfinite(reported):
            flow, basis = float(reported), "avg_flow"
        if not basis and np.isfinite(accum):
            flow, basis = accum, "accumulated"
        ratio = flow / design if np.isfinite(flow) and design > 0 else float("nan")
        over = exceeds(ratio, thr, strict)
        rows.append({
            "plant_id": pid, "name": getattr(rec, "name", None), "node_id": node,
            "design_flow_mgd": design, "avg_flow_mgd": flow, "ratio": ratio, "threshold": thr,
            "over_threshold": over, "basis": basis or "none", "window": window,
            "gaps": ",".join(gaps), "months": nmonths, "reported_avg_flow_mgd": reported,
            "accumulated_flow_mgd": accum, "section": cap.plant_section,
            "geometry": rec.geometry,
        })
    return gpd.GeoDataFrame(rows, columns=[*PLANT_COLUMNS, "geometry"], geometry="geometry",
                            crs=crs)
