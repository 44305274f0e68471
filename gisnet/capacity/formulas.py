"""The hydraulic formulas, each checkable by hand: Manning full flow and Harmon peaking.

US customary units throughout: diameters in inches, slopes in ft/ft, flows in
cubic feet per second (cfs); :data:`gisnet.units.CFS_TO_GPD` converts to gpd.

Sources
-------
Manning full flow
    Manning's formula in US units, ``Q = (1.486 / n) A R^(2/3) S^(1/2)``
    (cfs, ft, ft/ft), as in ASCE MOP 60 / WEF MOP FD-5 *Gravity Sanitary
    Sewer Design and Construction*. For a circular pipe flowing full
    ``A = pi D^2 / 4`` and ``R = A / (pi D) = D / 4``. Check value (the
    design notes): 8 in, n 0.013, S 0.004 -> 0.764 cfs (about 494,000 gpd).
Harmon peaking
    Harmon (1918), "Forecasting sewage at Toledo under dry-weather
    conditions", *Engineering News-Record* 80; the ratio of peak hourly to
    average daily flow of the Ten States Standards (*Recommended Standards for
    Wastewater Facilities*): ``PF = (18 + sqrt(P)) / (4 + sqrt(P))``, P in
    thousands of persons served. Both shipped profiles cap it at 4.0
    (``flow.peaking_cap``) and floor it at 1.0 (``flow.peaking_min``).

Which peaking formula applies is the profile's ``flow.peaking_formula``;
:data:`PEAKING_FORMULAS` lists the ones implemented here, exactly those
:mod:`gisnet.profile` accepts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigError

__all__ = ["MANNING_K", "PEAKING_FORMULAS", "harmon_peaking_factor", "manning_full_flow_cfs",
           "min_slope_ft_per_ft", "peaking_factor"]

#: (1.486 / 4^(2/3)) * pi / 4: Manning full-flow Q_cfs = K / n * D_ft^(8/3) * S^(1/2).
MANNING_K = 1.486 * np.pi / 4.0 / 4.0 ** (2.0 / 3.0)

#: Values of ``flow.peaking_formula`` implemented (as :data:`gisnet.profile.PEAKING_FORMULAS`).
PEAKING_FORMULAS = ("harmon", "none")


def manning_full_flow_cfs(diameter_in: Any, slope: Any, n: Any = 0.013) -> Any:
    """Full-pipe capacity of circular pipes by Manning's formula, US units.

    ``Q = (1.486 / n) A R^(2/3) S^(1/2)`` with ``A = pi D^2 / 4`` and
    ``R = D / 4``, i.e. ``0.46318 / n * D_ft^(8/3) * S^(1/2)``.

    Parameters
    ----------
    diameter_in
        Inside diameter, inches (scalar or array).
    slope
        Slope, ft/ft (scalar or array, broadcast against ``diameter_in``).
    n
        Manning roughness (scalar or array), default 0.013.

    Returns
    -------
    float or numpy.ndarray
        Capacity in cubic feet per second. NaN (never 0) where the diameter is
        missing or not positive, or the slope is missing, zero or adverse.

    Examples
    --------
    >>> round(float(manning_full_flow_cfs(8, 0.004)), 3)
    0.764
    """
    d = np.asarray(diameter_in, dtype="float64")
    s = np.asarray(slope, dtype="float64")
    nn = np.asarray(n, dtype="float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (d > 0) & (s > 0) & (nn > 0)
        q = np.where(
            ok,
            MANNING_K / np.where(ok, nn, 1.0) * (np.where(ok, d, 0.0) / 12.0) ** (8.0 / 3.0)
            * np.sqrt(np.where(ok, s, 0.0)),
            np.nan,
        )
    return float(q) if q.ndim == 0 else q


def harmon_peaking_factor(
    population: Any, cap: float | None = 4.0, minimum: float | None = None
) -> Any:
    """Harmon (Ten States Standards) peaking factor ``(18 + sqrt(P)) / (4 + sqrt(P))``.

    Parameters
    ----------
    population
        Persons served upstream (scalar or array); ``P`` in the formula is this
        divided by 1,000. Negative or missing populations count as 0.
    cap
        Upper bound of the factor (default 4.0; the formula gives 4.5 at P=0).
        None for no cap.
    minimum
        Lower bound of the factor, if the profile sets one.

    Returns
    -------
    float or numpy.ndarray
        Dimensionless peaking factor.

    Examples
    --------
    >>> round(float(harmon_peaking_factor(1_000)), 4)    # P = 1: 19 / 5
    3.8
    >>> round(float(harmon_peaking_factor(10_000)), 4)   # P = 10 thousand
    2.9547
    """
    p = np.asarray(population, dtype="float64")
    p = np.where(np.isfinite(p) & (p > 0), p, 0.0) / 1000.0
    r = np.sqrt(p)
    pf = (18.0 + r) / (4.0 + r)
    if cap is not None:
        pf = np.minimum(pf, cap)
    if minimum is not None:
        pf = np.maximum(pf, minimum)
    return float(pf) if pf.ndim == 0 else pf


def peaking_factor(population: Any, flow: Any) -> np.ndarray:
    """The profile's peaking factor for each upstream population.

    Parameters
    ----------
    population
        Persons served upstream (array).
    flow
        The profile's ``[flow]`` section: ``peaking_formula`` (one of
        :data:`PEAKING_FORMULAS`), ``peaking_cap``, ``peaking_min``.

    Returns
    -------
    numpy.ndarray
        Dimensionless factors (1.0 everywhere for ``none``).

    Raises
    ------
    ConfigError
        A formula that is not implemented (the profile loader rejects it first).
    """
    formula = flow.peaking_formula
    if formula == "harmon":
        return np.asarray(harmon_peaking_factor(population, cap=flow.peaking_cap,
                                                minimum=flow.peaking_min), dtype="float64")
    if formula == "none":
        return np.ones_like(np.asarray(population, dtype="float64"))
    raise ConfigError(f"unknown flow.peaking_formula {formula!r} "
                      f"({', '.join(PEAKING_FORMULAS)})", layer="profile")


def min_slope_ft_per_ft(diameter_in: np.ndarray, table_pct: Any) -> np.ndarray:
    """Minimum slope (ft/ft) of each pipe from a table of percent by diameter.

    Parameters
    ----------
    diameter_in
        Pipe diameters, inches.
    table_pct
        Diameter (in) -> minimum slope (%), the profile's
        ``capacity.min_slope_pct``.

    Returns
    -------
    numpy.ndarray
        The entry of the largest tabulated diameter not above each pipe's
        diameter, in ft/ft; NaN below the table or without a diameter.

    Examples
    --------
    >>> min_slope_ft_per_ft(np.array([8.0, 9.0, 6.0]), {8: 0.40, 10: 0.28})
    array([0.004, 0.004,   nan])
    """
    diam = np.asarray(diameter_in, dtype="float64")
    table = {float(k): float(v) for k, v in dict(table_pct or {}).items()}
    out = np.full(diam.shape, np.nan)
    if not table:
        return out
    ds = np.array(sorted(table))
    vals = np.array([table[d] for d in ds]) / 100.0
    pos = np.searchsorted(ds, diam, side="right") - 1
    ok = np.isfinite(diam) & (pos >= 0)
    out[ok] = vals[pos[ok]]
    return out
