"""Flow through a weir, orifice or outlet at a given head, and the head a flow needs.

The equations are SWMM 5's for a free discharge (SWMM Reference Manual Vol. II,
"Flow regulators"; downstream submergence is not modelled), in feet and cfs:

- **orifice** of opening height ``D`` (Geom1), area ``A`` and discharge
  coefficient ``Cd``: full orifice flow ``Q = Cd A sqrt(2 g h)``. A *bottom*
  orifice flows as a weir while the head is below its critical height
  ``hc = Cd / 0.414 * A / P`` (``A / P`` = ``D / 4`` for a circular opening,
  ``D W / (2 (D + W))`` for a rectangular one), ``Q = Cd A sqrt(2 g hc)
  (h / hc) ** 1.5``; above it, ``h`` is the head over the opening. A *side*
  orifice is partly submerged while the water is below its crown,
  ``Q = Cd A sqrt(2 g D / 2) f ** 1.5`` with ``f = h / D``; above, the head is
  measured to its centre line, ``h - D / 2``;
- **weir** of length ``L`` (Geom2) and coefficient ``Cw``: transverse and
  roadway ``Q = Cw L h ** 1.5``, side flow ``Cw L h ** (5/3)``, V-notch
  ``Cw S h ** 2.5`` (``S`` the side slope, Geom2 / (2 Geom1)), trapezoidal
  ``Cw L h ** 1.5 + Cw2 S h ** 2.5`` (``S`` = Geom3);
- **outlet**: functional ``Q = C h ** B``, tabular by its rating curve (ft, cfs).

:func:`head_for_flow` inverts them by bisection: the head above the crest (or
offset) at which the link passes a flow, which decides whether the other links
at the node stay dry.
"""

from __future__ import annotations

import math

import numpy as np

from .sections import full_area_radius

__all__ = ["G_FT_S2", "head_for_flow", "regulator_flow_cfs"]

#: Acceleration of gravity (ft/s^2), SWMM's value.
G_FT_S2 = 32.2
#: Heads above which a bisection gives up (ft): no regulator passes a dry-weather flow so high.
MAX_HEAD_FT = 1000.0


def _rating(text: str) -> np.ndarray | None:
    try:
        v = np.asarray([float(t) for t in str(text).split()], dtype=float)
    except ValueError:
        return None
    if v.size < 4 or v.size % 2:
        return None
    return v.reshape(-1, 2)


def regulator_flow_cfs(kind: str, rtype: str, shape: str, geom: np.ndarray, coeff: float,
                       coeff2: float, expon: float, rating: str | None, head_ft: float
                       ) -> float:
    """Flow (cfs) through a regulator with ``head_ft`` of water above its crest or offset
    (NaN when its parameters are not known)."""
    h = max(float(head_ft), 0.0)
    kind = str(kind).lower()
    rtype = str(rtype or "").upper()
    g1, g2, g3, g4 = (float(x) for x in geom)
    if kind == "orifice":
        area, _ = full_area_radius(str(shape).upper(), g1, g2, g3, g4)
        if not (area > 0 and g1 > 0 and coeff > 0):
            return math.nan
        c_orif = coeff * area * math.sqrt(2.0 * G_FT_S2)
        if rtype == "BOTTOM":
            a_over_p = g1 / 4.0 if str(shape).upper() == "CIRCULAR" else \
                g1 * g2 / (2.0 * (g1 + g2))
            hc = coeff / 0.414 * a_over_p
            if h < hc:
                return c_orif * math.sqrt(hc) * (h / hc) ** 1.5
            return c_orif * math.sqrt(h)
        if h < g1:  # side orifice, inlet partly submerged
            return c_orif * math.sqrt(g1 / 2.0) * (h / g1) ** 1.5
        return c_orif * math.sqrt(h - g1 / 2.0)
    if kind == "weir":
        if not coeff > 0:
            return math.nan
        if rtype in ("TRANSVERSE", "ROADWAY"):
            return coeff * g2 * h ** 1.5 if g2 > 0 else math.nan
        if rtype == "SIDEFLOW":
            return coeff * g2 * h ** (5.0 / 3.0) if g2 > 0 else math.nan
        if rtype == "V-NOTCH":
            return coeff * g2 / (2.0 * g1) * h ** 2.5 if g1 > 0 and g2 > 0 else math.nan
        if rtype == "TRAPEZOIDAL":
            return coeff * g2 * h ** 1.5 + (coeff2 or 0.0) * g3 * h ** 2.5
        return math.nan
    if kind == "outlet":
        if rtype.startswith("FUNCTIONAL"):
            return coeff * h ** expon if coeff > 0 and expon > 0 else math.nan
        if rtype.startswith("TABULAR"):
            c = _rating(rating) if rating is not None else None
            if c is None:
                return math.nan
            return float(np.interp(h, c[:, 0], c[:, 1]))
    return math.nan


def head_for_flow(kind: str, rtype: str, shape: str, geom: np.ndarray, coeff: float,
                  coeff2: float, expon: float, rating: str | None, q_cfs: float) -> float:
    """The head (ft above the crest or offset) at which the regulator passes ``q_cfs``;
    NaN when its parameters are not known or it cannot pass that flow."""
    def flow(h: float) -> float:
        return regulator_flow_cfs(kind, rtype, shape, geom, coeff, coeff2, expon, rating, h)

    if not q_cfs > 0:
        return 0.0
    hi = 1.0
    while True:
        q = flow(hi)
        if not math.isfinite(q) or hi > MAX_HEAD_FT:
            return math.nan
        if q >= q_cfs:
            break
        hi *= 2.0
    lo = 0.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if flow(mid) < q_cfs:
            lo = mid
        else:
            hi = mid
    return hi
