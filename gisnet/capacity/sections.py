"""Cross-sections of conduits: full area, hydraulic radius and normal depth.

gisnet's pipes are circular unless the mains layer says otherwise: a
``shape`` column naming one of SWMM 5's standard shapes, with ``geom1_ft``
(full height) and ``geom2_ft`` ... ``geom4_ft`` as SWMM's [XSECTIONS] Geom2-4
(lengths in feet, side slopes as run / rise), ``barrels``, and for ``CUSTOM``
the shape curve in ``shape_curve`` (``"d1 w1 d2 w2 ..."``: depth / full
height against width / full height, as SWMM's SHAPE curves).

Full-flow capacity is Manning's ``Q = (1.486 / n) A R^(2/3) S^(1/2)`` per
barrel, times the barrels (:func:`full_flow_cfs`). The full area ``A`` and
hydraulic radius ``R = A / P`` of each shape:

- circular, rectangular, triangular, trapezoidal, rectangular-triangular,
  rectangular-round, modified baskethandle, filled circular: from the
  geometry (closed shapes: the whole perimeter; open channels: no top);
- egg, horseshoe, gothic, catenary, semi-elliptical, baskethandle,
  semicircular, and elliptical and arch sections given by their dimensions:
  ``A = a Geom1^2``, ``R = r Geom1`` with SWMM's factors ``a``, ``r``
  (:data:`FACTOR_SHAPES`, the SWMM Reference Manual Vol. II; elliptical by
  the minor axis, arch ``A = a Geom1 Geom2``);
- ``CUSTOM``: the shape curve, area by the trapezoid rule over its points,
  perimeter by the straight segments between them plus the bottom and top
  widths.

Shapes gisnet cannot represent (IRREGULAR and STREET transects, PARABOLIC,
POWER, DUMMY, elliptical and arch pipes named by a size code) are
:data:`UNSUPPORTED`: the SWMM reader refuses them by name.

Normal depth (the depth at which a flow runs uniformly in a conduit,
:func:`normal_depth_ft`) is solved for the shapes with a closed form of area
and perimeter at any depth (circular, rectangular, triangular, trapezoidal);
for the others gisnet takes the crown (the full height) as a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CLOSED_SHAPES", "FACTOR_SHAPES", "OPEN_SHAPES", "SHAPES", "UNSUPPORTED", "Sections",
           "edge_sections", "full_area_radius", "full_flow_cfs", "normal_depth_ft",
           "parse_shape_curve"]

#: Manning's constant in US units (ft^(1/3)/s).
PHI = 1.486
#: SWMM's full-area and full-hydraulic-radius factors: A = a * Geom1^2, R = r * Geom1.
FACTOR_SHAPES = {
    "EGG": (0.5105, 0.1931), "HORSESHOE": (0.8293, 0.2538), "GOTHIC": (0.6554, 0.2269),
    "CATENARY": (0.70277, 0.23172), "SEMIELLIPTICAL": (0.785, 0.242),
    "BASKETHANDLE": (0.7862, 0.2464), "SEMICIRCULAR": (1.2697, 0.2946),
}
CLOSED_SHAPES = ("CIRCULAR", "FORCE_MAIN", "FILLED_CIRCULAR", "RECT_CLOSED", "RECT_TRIANGULAR",
                 "RECT_ROUND", "MODBASKETHANDLE", *FACTOR_SHAPES, "HORIZ_ELLIPSE",
                 "VERT_ELLIPSE", "ARCH", "CUSTOM")
OPEN_SHAPES = ("RECT_OPEN", "TRAPEZOIDAL", "TRIANGULAR")
SHAPES = CLOSED_SHAPES + OPEN_SHAPES
UNSUPPORTED = ("IRREGULAR", "STREET", "PARABOLIC", "POWER", "DUMMY")
#: Which of Geom2, Geom3, Geom4 are lengths (converted with the model's length unit).
GEOM_LENGTHS = {
    "FILLED_CIRCULAR": (True, False, False), "RECT_CLOSED": (True, False, False),
    "RECT_OPEN": (True, False, False), "RECT_TRIANGULAR": (True, True, False),
    "RECT_ROUND": (True, True, False), "MODBASKETHANDLE": (True, True, False),
    "TRAPEZOIDAL": (True, False, False), "TRIANGULAR": (True, False, False),
    "HORIZ_ELLIPSE": (True, False, False), "VERT_ELLIPSE": (True, False, False),
    "ARCH": (True, False, False),
}


def parse_shape_curve(text: Any) -> np.ndarray:
    """A ``shape_curve`` value (``"d1 w1 d2 w2 ..."``) as a (k, 2) array; empty if none."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return np.empty((0, 2))
    v = np.array([float(t) for t in str(text).split()], dtype=float)
    return v.reshape(-1, 2)


def _custom(g1: float, curve: np.ndarray) -> tuple[float, float]:
    d = curve[:, 0]
    w = curve[:, 1]
    if d[0] > 0:  # the curve starts above the invert: a vertical side from zero width
        d = np.concatenate([[0.0], d])
        w = np.concatenate([[w[0]], w])
    if d[-1] < 1.0:
        d = np.concatenate([d, [1.0]])
        w = np.concatenate([w, [w[-1]]])
    area = float(np.sum((w[1:] + w[:-1]) / 2.0 * np.diff(d))) * g1 * g1
    sides = 2.0 * float(np.sum(np.hypot(np.diff(d), np.diff(w) / 2.0)))
    per = (w[0] + sides + w[-1]) * g1
    return area, area / per


def full_area_radius(shape: str, g1: float, g2: float = 0.0, g3: float = 0.0,
                     g4: float = 0.0, curve: np.ndarray | None = None
                     ) -> tuple[float, float]:
    """Full area (ft^2) and hydraulic radius (ft) of one barrel.

    Parameters
    ----------
    shape
        SWMM shape name (:data:`SHAPES`).
    g1, g2, g3, g4
        Geom1-4 (feet; side slopes run / rise).
    curve
        The CUSTOM shape curve ((k, 2): depth / Geom1, width / Geom1).

    Returns
    -------
    (area_ft2, hydraulic_radius_ft)
        NaN, NaN where the geometry is missing or not positive.
    """
    nan = (math.nan, math.nan)
    if not (g1 > 0):
        return nan
    s = shape.upper()
    if s in ("CIRCULAR", "FORCE_MAIN"):
        return math.pi * g1 * g1 / 4.0, g1 / 4.0
    if s in FACTOR_SHAPES:
        a, r = FACTOR_SHAPES[s]
        return a * g1 * g1, r * g1
    if s == "FILLED_CIRCULAR":  # circle of diameter g1 with sediment g2 deep
        if not (0 <= g2 < g1):
            return nan
        rr = g1 / 2.0
        theta = 2.0 * math.acos((rr - g2) / rr) if g2 > 0 else 0.0
        a_seg = rr * rr / 2.0 * (theta - math.sin(theta))
        chord = 2.0 * math.sqrt(max(rr * rr - (rr - g2) ** 2, 0.0))
        area = math.pi * rr * rr - a_seg
        return area, area / (math.pi * g1 - rr * theta + chord)
    if s == "RECT_CLOSED":
        return (g1 * g2, g1 * g2 / (2.0 * (g1 + g2))) if g2 > 0 else nan
    if s == "RECT_OPEN":  # g3: sides left out of the perimeter (0, 1 or 2)
        return (g1 * g2, g1 * g2 / ((2.0 - g3) * g1 + g2)) if g2 > 0 else nan
    if s == "TRIANGULAR":  # g2: top width
        if not g2 > 0:
            return nan
        area = g1 * g2 / 2.0
        return area, area / (2.0 * math.hypot(g1, g2 / 2.0))
    if s == "TRAPEZOIDAL":  # g2 bottom width, g3 g4 side slopes
        area = (g2 + (g3 + g4) / 2.0 * g1) * g1
        per = g2 + g1 * (math.sqrt(1 + g3 * g3) + math.sqrt(1 + g4 * g4))
        return (area, area / per) if area > 0 else nan
    if s == "RECT_TRIANGULAR":  # g2 width, g3 height of the triangular bottom
        if not (g2 > 0 and g3 > 0):
            return nan
        area = g2 * (g1 - g3 / 2.0)
        per = 2.0 * math.hypot(g3, g2 / 2.0) + 2.0 * (g1 - g3) + g2
        return area, area / per
    if s in ("RECT_ROUND", "MODBASKETHANDLE"):  # g2 width, g3 radius of the round part
        if not g2 > 0:
            return nan
        rb = max(g3, g2 / 2.0)
        theta = 2.0 * math.asin(g2 / 2.0 / rb)
        a_round = rb * rb / 2.0 * (theta - math.sin(theta))
        h_round = rb * (1.0 - math.cos(theta / 2.0))
        area = g2 * (g1 - h_round) + a_round
        return area, area / (rb * theta + 2.0 * (g1 - h_round) + g2)
    if s in ("HORIZ_ELLIPSE", "VERT_ELLIPSE"):  # by dimensions: minor axis a factor
        if g3 > 0 or not g2 > 0:
            return nan  # a standard size code: SWMM's table, not represented
        minor = g1 if s == "HORIZ_ELLIPSE" else g2
        return 1.2692 * minor * minor, 0.3061 * minor
    if s == "ARCH":
        if g3 > 0 or not g2 > 0:
            return nan
        return 0.7879 * g1 * g2, 0.2991 * g1
    if s == "CUSTOM":
        if curve is None or len(curve) < 2:
            return nan
        return _custom(g1, curve)
    return nan


def full_flow_cfs(area: Any, radius: Any, slope: Any, n: Any, barrels: Any = 1.0) -> Any:
    """Manning full flow ``barrels * (1.486 / n) A R^(2/3) S^(1/2)`` (cfs); NaN where any
    input is missing or the slope is not positive (never 0)."""
    a, r, s, nn, b = (np.asarray(x, dtype=float) for x in (area, radius, slope, n, barrels))
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (a > 0) & (r > 0) & (s > 0) & (nn > 0)
        q = b * PHI / nn * a * r ** (2.0 / 3.0) * np.sqrt(np.where(s > 0, s, 0.0))
    return np.where(ok, q, np.nan)


def _partial(shape: str, g1: float, g2: float, g3: float, g4: float, y: float
             ) -> tuple[float, float] | None:
    """Area and wetted perimeter at depth ``y``, for the shapes with a closed form."""
    s = shape.upper()
    if s in ("CIRCULAR", "FORCE_MAIN"):
        r = g1 / 2.0
        theta = 2.0 * math.acos(max(-1.0, min(1.0, (r - y) / r)))
        return r * r / 2.0 * (theta - math.sin(theta)), r * theta
    if s in ("RECT_CLOSED", "RECT_OPEN"):
        return g2 * y, g2 + 2.0 * y
    if s == "TRIANGULAR":
        z = g2 / 2.0 / g1
        return z * y * y, 2.0 * y * math.sqrt(1 + z * z)
    if s == "TRAPEZOIDAL":
        return ((g2 + (g3 + g4) / 2.0 * y) * y,
                g2 + y * (math.sqrt(1 + g3 * g3) + math.sqrt(1 + g4 * g4)))
    return None


def normal_depth_ft(shape: str, g1: float, g2: float, g3: float, g4: float, q_cfs: float,
                    slope: float, n: float, barrels: float = 1.0) -> tuple[float, str]:
    """Depth of uniform flow ``q_cfs`` in a conduit, and how it was found.

    Returns ``(depth_ft, basis)``: ``"normal depth"`` (Manning solved by
    bisection on the section factor A R^(2/3), to 0.1 % of the full height),
    ``"crown"`` (a shape without a closed form, or no slope: the full height,
    an upper bound below surcharge) or ``"full"`` (the flow is above the
    conduit's full-flow capacity: at least the crown).
    """
    if not (g1 > 0):
        return math.nan, "crown"
    if q_cfs <= 0:
        return 0.0, "normal depth"
    if not (slope > 0 and n > 0) or _partial(shape, g1, g2, g3, g4, g1 / 2.0) is None:
        return g1, "crown"
    partial = _partial
    target = q_cfs / max(barrels, 1.0) * n / (PHI * math.sqrt(slope))

    def factor(y: float) -> float:
        ap = partial(shape, g1, g2, g3, g4, y)
        assert ap is not None  # the shape has a closed form (checked above)
        a, p = ap
        return a * (a / p) ** (2.0 / 3.0) if p > 0 else 0.0

    full_a, full_r = full_area_radius(shape, g1, g2, g3, g4)
    if target >= full_a * full_r ** (2.0 / 3.0):
        return g1, "full"
    # circular sections carry most just below the crown; search up to where
    # the section factor peaks so that the solution is the lower depth
    top = g1 * (0.938 if shape.upper() in ("CIRCULAR", "FORCE_MAIN") else 1.0)
    if target >= factor(top):
        return top, "normal depth"
    lo, hi = 0.0, top
    while hi - lo > 1e-3 * g1:
        mid = (lo + hi) / 2.0
        if factor(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0, "normal depth"


@dataclass
class Sections:
    """The cross-section of every graph edge (arrays aligned with the edges).

    Attributes
    ----------
    shape
        SWMM shape name (``CIRCULAR`` for a pipe with a diameter and no shape).
    geom
        (m, 4) Geom1-4 (feet; side slopes run / rise).
    barrels
        Barrels (1 where not given).
    area_ft2, radius_ft
        Full area and hydraulic radius of one barrel (NaN unknown).
    curves
        Edge position -> CUSTOM shape curve.
    """

    shape: np.ndarray
    geom: np.ndarray
    barrels: np.ndarray
    area_ft2: np.ndarray
    radius_ft: np.ndarray
    curves: dict[int, np.ndarray]

    def normal_depth(self, e: int, q_cfs: float, slope: float, n: float) -> tuple[float, str]:
        """:func:`normal_depth_ft` of edge ``e``."""
        g1, g2, g3, g4 = (float(v) for v in self.geom[e])
        return normal_depth_ft(str(self.shape[e]), g1, g2, g3, g4, q_cfs, slope, n,
                               float(self.barrels[e]))


def edge_sections(mains: pd.DataFrame | None, main_id: np.ndarray, diameter_in: np.ndarray
                  ) -> Sections:
    """Cross-section of every edge: the mains' ``shape`` and ``geom1_ft``... where
    the layer has them, else circular of the edge's diameter.

    Parameters
    ----------
    mains
        The town's mains layer (or None).
    main_id
        Each edge's main id.
    diameter_in
        Each edge's diameter (inches; NaN unknown).
    """
    m = len(main_id)
    shape = np.full(m, "CIRCULAR", dtype=object)
    geom = np.zeros((m, 4))
    geom[:, 0] = np.asarray(diameter_in, dtype=float) / 12.0
    barrels = np.ones(m)
    curves: dict[int, np.ndarray] = {}
    if mains is not None and len(mains) and "shape" in mains.columns:
        t = mains.drop_duplicates("main_id").set_index(
            mains.drop_duplicates("main_id")["main_id"].astype(str))
        pos = t.index.get_indexer(pd.Index(main_id.astype(str)))
        has = pos >= 0
        sh = t["shape"].reindex(t.index).to_numpy(object)
        for i in np.flatnonzero(has):
            v = sh[pos[i]]
            if isinstance(v, str) and v.strip():
                shape[i] = v.strip().upper()
        for k, col in enumerate(("geom1_ft", "geom2_ft", "geom3_ft", "geom4_ft")):
            if col in t.columns:
                vals = pd.to_numeric(t[col], errors="coerce").to_numpy(float)
                g = np.where(has, vals[np.where(has, pos, 0)], np.nan)
                ok = np.isfinite(g) & ((shape != "CIRCULAR") | (k > 0) | ~(geom[:, 0] > 0))
                geom[ok, k] = g[ok]
        if "barrels" in t.columns:
            b = pd.to_numeric(t["barrels"], errors="coerce").to_numpy(float)
            bb = np.where(has, b[np.where(has, pos, 0)], np.nan)
            barrels = np.where(np.isfinite(bb) & (bb >= 1), bb, 1.0)
        if "shape_curve" in t.columns:
            sc = t["shape_curve"].to_numpy(object)
            for c in np.flatnonzero(has & (shape == "CUSTOM")).tolist():
                curves[c] = parse_shape_curve(sc[pos[c]])
    d = geom[:, 0]
    circ = (shape == "CIRCULAR") | (shape == "FORCE_MAIN")
    with np.errstate(invalid="ignore"):
        area = np.where(circ & (d > 0), np.pi * d * d / 4.0, np.nan)
        rad = np.where(circ & (d > 0), d / 4.0, np.nan)
    for j in np.flatnonzero(~circ).tolist():
        g1, g2, g3, g4 = (float(v) for v in geom[j])
        area[j], rad[j] = full_area_radius(str(shape[j]), g1, g2, g3, g4, curve=curves.get(j))
    return Sections(shape, geom, barrels, area, rad, curves)
