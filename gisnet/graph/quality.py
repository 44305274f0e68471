"""Stage 8a: findings about the mains themselves and about unreached manholes.

``missing_diameter``, ``adverse_slope``, ``flat_slope``, ``implausible_slope`` (from
inverts; stored slopes are checked by the loader), ``slope_mismatch``,
``kind_assumed`` (once, :func:`gisnet.rules.unknown_kind_message`),
``excluded_main`` (why :func:`gisnet.rules.is_eligible_for_connection` says
no) and ``isolated_structure``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from shapely.geometry import Point

from .. import rules
from ..io.plausibility import MAX_SLOPE
from ..report import Finding
from .direction import Direction
from .outlets import Outlets
from .prepare import Mains, Structures

#: Stored and computed slope disagree when they differ by more than both of
#: these: an absolute difference (ft/ft) and a fraction of the computed slope.
SLOPE_MISMATCH_ABS = 0.0005
SLOPE_MISMATCH_REL = 0.10
#: At most this many main ids are named in the ``kind_assumed`` finding.
KIND_ASSUMED_MAX_IDS = 50


def main_findings(mains: Mains, direction: Direction) -> list[Finding]:
    """Missing diameters, adverse / flat slopes and stored-vs-computed slope mismatches."""
    mid, lines = mains.main_id, mains.lines
    found = [Finding("missing_diameter", "warning", f"main {mid[k]} has no diameter",
                     "mains", mid[k], lines[k])
             for k in np.flatnonzero(~(mains.diameter > 0)).tolist()]
    grav = mains.gravity
    s = direction.slope
    src = np.where(np.isnan(direction.slope_computed), "stored", "from inverts")
    for k in np.flatnonzero(grav & (s < 0)).tolist():
        found.append(Finding(
            "adverse_slope", "warning",
            f"main {mid[k]} slopes uphill in its flow direction ({s[k]:.4f} ft/ft, "
            f"{src[k]}); it gets no capacity", "mains", mid[k], lines[k]))
    for k in np.flatnonzero(grav & (s == 0)).tolist():
        found.append(Finding(
            "flat_slope", "warning",
            f"main {mid[k]} is flat (slope 0, {src[k]}); it gets no capacity",
            "mains", mid[k], lines[k]))
    steep = grav & np.isnan(mains.slope_stored) & (np.abs(s) > MAX_SLOPE)
    for k in np.flatnonzero(steep).tolist():  # stored slopes: the loader checks them
        found.append(Finding(
            "implausible_slope", "warning",
            f"main {mid[k]}: its inverts and length give a slope of {s[k]:.3f} ft/ft, "
            f"steeper than {MAX_SLOPE:g} ft/ft; used as computed, check the inverts",
            "mains", mid[k], lines[k]))
    st, co = mains.slope_stored, direction.slope_computed
    both = ~np.isnan(st) & ~np.isnan(co)
    diff = np.abs(np.abs(st) - np.abs(co))
    bad = both & (diff > SLOPE_MISMATCH_ABS) & (diff > SLOPE_MISMATCH_REL * np.abs(co))
    for k in np.flatnonzero(bad).tolist():
        found.append(Finding(
            "slope_mismatch", "warning",
            f"main {mid[k]}: stored slope {st[k]:.4f} ft/ft, but the inverts and "
            f"length give {co[k]:.4f} ft/ft; the computed slope is used",
            "mains", mid[k], lines[k]))
    return found


def kind_findings(mains: Mains, eligible_kinds: Iterable[str]) -> list[Finding]:
    """The one ``kind_assumed`` finding (mains of unknown kind), then one
    ``excluded_main`` per main :func:`gisnet.rules.is_eligible_for_connection`
    rejects, saying which of its tests failed."""
    mid, lines = mains.main_id, mains.lines
    found: list[Finding] = []
    unknown = np.flatnonzero(mains.kind_unknown)
    if len(unknown):
        named = ",".join(mid[unknown[:KIND_ASSUMED_MAX_IDS]].tolist())
        more = ",..." if len(unknown) > KIND_ASSUMED_MAX_IDS else ""
        found.append(Finding("kind_assumed", "info", rules.unknown_kind_message(len(unknown)),
                             "mains", named + more, None))
    kinds = tuple(k for k in eligible_kinds if k not in rules.NON_GRAVITY_KINDS)
    for k in np.flatnonzero(~mains.eligible).tolist():
        why = [reason for reason in (_kind_reason(mains, k, kinds),
                                     None if mains.public[k] else _owner_reason(mains, k),
                                     None if mains.active[k]
                                     else f"status {mains.status[k] or 'inactive'}"
                                     + _unrecognised(mains.status[k], rules.STATUS_VALUES))
               if reason]
        found.append(Finding(
            "excluded_main", "info",
            f"main {mid[k]} ({', '.join(why)}) is excluded from public-sewer questions",
            "mains", mid[k], lines[k]))
    return found


def _unrecognised(value: object, known: tuple[str, ...]) -> str:
    """`` (not recognised)`` after an owner or status value gisnet does not know."""
    text = "" if value is None else str(value).strip().lower()
    return " (not recognised)" if text and text not in known else ""


def _owner_reason(mains: Mains, k: int) -> str:
    """Why main ``k``'s owner keeps it out: private, or a value not recognised."""
    mark = _unrecognised(mains.owner[k], rules.OWNER_VALUES)
    return f"owner {mains.owner[k]}{mark}" if mark else "private"


def _kind_reason(mains: Mains, k: int, eligible_kinds: tuple[str, ...]) -> str | None:
    """Why main ``k``'s kind keeps it out (not gravity, or not an eligible kind), if it does."""
    kind = mains.effective_kind[k]
    if mains.gravity[k] and kind in eligible_kinds:
        return None
    if mains.kind_unknown[k]:
        return f"kind unknown, read as {kind}"
    return f"kind {kind}"


def isolated_structures(structures: Structures, outlets: Outlets,
                        tolerance_ft: float, merged: np.ndarray | None = None) -> list[Finding]:
    """One ``isolated_structure`` per manhole that no main reaches (a duplicate
    ``merged`` into another structure is not one: ``duplicate_structure`` names it)."""
    sc = structures.count
    if not sc:
        return []
    used = outlets.used[:sc] | (merged if merged is not None else False)
    return [Finding("isolated_structure", "info",
                    f"{structures.kind[s]} {structures.ids[s]} is not reached by any main "
                    f"within {tolerance_ft:g} ft", "manholes", structures.ids[s],
                    Point(structures.xy[s]))
            for s in np.flatnonzero(~used & (structures.source == "manholes")).tolist()]
