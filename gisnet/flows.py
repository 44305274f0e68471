"""Design flow of every parcel: the average daily sewage it sends, in gpd.

One function, :func:`parcel_flows`, used by capacity (flows accumulated down
the network) and by the upstream trace (the flow of each parcel above a
manhole). It reads the profile's ``[flow]`` section and the parcels layer and
nothing else; it imports neither :mod:`gisnet.capacity` nor
:mod:`gisnet.tracing`.

Units: flows in gallons per day (gpd), population in persons, population
equivalents (PE) as flow / ``flow.gpd_per_pe``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FLOW_COLUMNS", "parcel_flows"]

#: Columns of :func:`parcel_flows`, in order.
FLOW_COLUMNS = ["parcel_id", "avg_flow_gpd", "population", "pe", "basis", "sewered"]


def _num(s: pd.Series | None, n: int) -> np.ndarray:
    """A column as float64 (non-numbers and a missing column -> NaN)."""
    if s is None:
        return np.full(n, np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def _flag(parcels: pd.DataFrame, col: str) -> np.ndarray:
    """A boolean column (missing column or value -> False)."""
    if col not in parcels:
        return np.zeros(len(parcels), dtype=bool)
    return parcels[col].astype("boolean").fillna(False).to_numpy(dtype=bool)


def parcel_flows(town: Any) -> pd.DataFrame:
    """Average daily flow of every parcel, its population and population equivalents.

    The basis, in order: metered ``flow_gpd`` (``metered``); bedrooms times the
    profile's ``flow.gpd_per_bedroom`` (``bedrooms``); dwelling units times
    ``flow.gpd_per_dwelling_unit`` (else ``persons_per_dwelling_unit`` x
    ``gpd_per_person``) (``dwelling_units``); the profile's
    ``[flow.land_use_gpd]`` for the parcel's land use (``land_use``); else 0
    (``none``). Parcels marked ``septic`` and not ``connected`` discharge
    nothing to the sewer: they keep their design flow here but
    ``sewered=False``.

    Parameters
    ----------
    town
        A :class:`gisnet.town.Town` with a ``parcels`` layer and a loaded
        profile (``town.profile.flow``).

    Returns
    -------
    pandas.DataFrame
        ``parcel_id, avg_flow_gpd, population, pe, basis, sewered``, in parcel
        order. ``population`` = flow / ``gpd_per_person`` (the equivalent
        population that Harmon peaking uses), ``pe`` = flow / ``gpd_per_pe``.

    Examples
    --------
    Three bedrooms at Berlin's 150 gpd per bedroom: 450 gpd, 4.5 persons at
    100 gpd per person.
    """
    parcels = town.layers["parcels"]
    n = len(parcels)
    flow_cfg = town.profile.flow
    gpp = float(flow_cfg.gpd_per_person)
    gppe = float(flow_cfg.gpd_per_pe)
    per_bed = flow_cfg.gpd_per_bedroom
    per_du = flow_cfg.gpd_per_dwelling_unit
    if per_du is None and flow_cfg.persons_per_dwelling_unit is not None:
        per_du = float(flow_cfg.persons_per_dwelling_unit) * gpp
    lu_table = {str(k).strip().lower(): float(v)
                for k, v in dict(flow_cfg.land_use_gpd or {}).items()}

    metered = _num(parcels.get("flow_gpd"), n)
    beds = _num(parcels.get("bedrooms"), n)
    dus = _num(parcels.get("dwelling_units"), n)
    if "land_use" in parcels:
        lu = parcels["land_use"].astype("string").str.strip().str.lower()
        lu_flow = lu.map(lu_table).to_numpy(dtype="float64", na_value=np.nan)
    else:
        lu_flow = np.full(n, np.nan)

    flow = np.zeros(n)
    basis = np.full(n, "none", dtype=object)
    todo = np.ones(n, dtype=bool)
    # (basis, values, gpd per unit, zero counts): a meter or a land use may say
    # 0 gpd; 0 bedrooms or dwelling units says nothing and falls through.
    candidates: list[tuple[str, np.ndarray, float, bool]] = [("metered", metered, 1.0, True)]
    if per_bed is not None:
        candidates.append(("bedrooms", beds, float(per_bed), False))
    if per_du is not None:
        candidates.append(("dwelling_units", dus, float(per_du), False))
    candidates.append(("land_use", lu_flow, 1.0, True))
    for name, values, factor, zero_counts in candidates:
        ok = todo & np.isfinite(values) & (values >= 0)
        if not zero_counts:
            ok &= values > 0
        flow[ok] = values[ok] * factor
        basis[ok] = name
        todo &= ~ok

    return pd.DataFrame({
        "parcel_id": parcels["parcel_id"].astype("str").array,  # text held by Arrow
        "avg_flow_gpd": flow,
        "population": flow / gpp,
        "pe": flow / gppe,
        "basis": basis,
        "sewered": ~_flag(parcels, "septic") | _flag(parcels, "connected"),
    })
