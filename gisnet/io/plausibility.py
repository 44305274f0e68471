"""Plausibility of the mains' numbers, judged from the data's own evidence.

Values are never changed here: a value outside what a sewer main can be gets
a finding naming the mains, and a column that looks as if it were in another
unit than the town file says gets one finding naming the likely unit.

=========================  ==================================================
``implausible_diameter``   a diameter outside :data:`DIAMETER_RANGE_IN`
``diameter_unit_mixup``    most diameters are out of range, and in the other
                           unit (mm <-> in) they would be ordinary pipe sizes
``implausible_slope``      a stored slope steeper than :data:`MAX_SLOPE`
``slope_unit_mixup``       most stored slopes are steeper than that, and as
                           percent they would be ordinary
=========================  ==================================================
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..units import MM_PER_IN
from .notes import LayerNotes, ids_text

#: Diameters a sewer main can have, inches (a 2-in pressure lateral .. a 12-ft trunk).
DIAMETER_RANGE_IN = (2.0, 144.0)
#: Slope (ft/ft) above which a sewer main is not plausible (a 1:2 grade).
MAX_SLOPE = 0.5


def _share_fitting(v: np.ndarray, factor: float, lo: float, hi: float) -> float:
    w = v * factor
    return float(((w >= lo) & (w <= hi)).mean()) if len(v) else 0.0


def check_diameters(d: pd.Series, ids: pd.Series, units: str, notes: LayerNotes) -> None:
    """Findings for diameters (inches, as converted) outside :data:`DIAMETER_RANGE_IN`.

    When more than half of the known diameters are out of range on the same
    side and at least 90 % of those would be in range in the other unit, one
    ``diameter_unit_mixup`` names the likely unit (``units`` is what the town
    file said); otherwise each out-of-range diameter is ``implausible_diameter``.
    """
    lo, hi = DIAMETER_RANGE_IN
    v = d.to_numpy(dtype=float, na_value=np.nan)
    known = np.isfinite(v)
    if not known.any():
        return
    big = known & (v > hi)
    small = known & (v < lo)
    for side, factor, said, likely in ((big, 1 / MM_PER_IN, "inches", "millimetres"),
                                       (small, MM_PER_IN, "millimetres", "inches")):
        if side.sum() * 2 > known.sum() and _share_fitting(v[side], factor, lo, hi) >= 0.9:
            med = float(np.median(v[side]))
            key = "diameter = \"mm\"" if likely == "millimetres" else "diameter = \"in\""
            notes.add("diameter_unit_mixup", "warning",
                      f"diameter_in: {int(side.sum())} of {int(known.sum())} diameters are "
                      f"outside {lo:g}-{hi:g} in (median {med:g} in, read as {said}); in "
                      f"{likely} they are ordinary pipe sizes (median {med * factor:.3g} in), "
                      f"so the column is likely in {likely}: set {key} under [units] or "
                      f"[layers.{notes.role}.units]; values used as read: {ids_text(ids[side])}",
                      ids[side])
            known &= ~side
    bad = known & ((v > hi) | (v < lo))
    if bad.any():
        vals = ", ".join(f"{x:g}" for x in pd.unique(v[bad])[:5])
        notes.add("implausible_diameter", "warning",
                  f"diameter_in: {int(bad.sum())} diameters outside {lo:g}-{hi:g} in ({vals}); "
                  f"used as read, check them: {ids_text(ids[bad])}", ids[bad])


def check_slopes(s: pd.Series, ids: pd.Series, units: str, notes: LayerNotes) -> None:
    """Findings for stored slopes (ft/ft, as converted) steeper than :data:`MAX_SLOPE`.

    When most known slopes are that steep and the town file says ``ft/ft``,
    the one ``slope_unit_mixup`` finding says they are likely percent.
    """
    v = s.to_numpy(dtype=float, na_value=np.nan)
    known = np.isfinite(v)
    steep = known & (np.abs(v) > MAX_SLOPE)
    if not steep.any():
        return
    if units == "ft/ft" and steep.sum() * 2 > known.sum() and \
            _share_fitting(np.abs(v[steep]), 0.01, 0.0, MAX_SLOPE) >= 0.9:
        notes.add("slope_unit_mixup", "warning",
                  f"slope: {int(steep.sum())} of {int(known.sum())} stored slopes are steeper "
                  f"than {MAX_SLOPE:g} ft/ft (median {float(np.median(np.abs(v[steep]))):g}); "
                  "as percent they are ordinary, so the column is likely in percent: set "
                  "slope = \"percent\" under [units]; values used as read: "
                  f"{ids_text(ids[steep])}", ids[steep])
        return
    vals = ", ".join(f"{x:g}" for x in pd.unique(v[steep])[:5])
    notes.add("implausible_slope", "warning",
              f"slope: {int(steep.sum())} stored slopes steeper than {MAX_SLOPE:g} ft/ft "
              f"({vals}); used as read, check them: {ids_text(ids[steep])}", ids[steep])


def check_mains(cols: dict[str, pd.Series], ids: pd.Series, diameter_units: str,
                slope_units: str, notes: LayerNotes) -> None:
    """All plausibility findings of a mains layer's canonical columns."""
    if "diameter_in" in cols:
        check_diameters(cols["diameter_in"], ids, diameter_units, notes)
    if "slope" in cols:
        check_slopes(cols["slope"], ids, slope_units, notes)
