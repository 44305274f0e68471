"""Stage 4: the direction of flow in each main, and its inverts and slope that way.

In order of trust: the ``from_node`` / ``to_node`` ids (when they name the
pipe's end nodes), the inverts (the lower end is downstream), the digitised
direction. Every disagreement becomes a finding (``node_id_mismatch``,
``direction_conflict``) and every reversal a ``reversed_pipe``.

Inverts are read by what their columns mean (:data:`gisnet.schema.INVERT_COLUMNS`,
``[layers.mains] inverts`` in the town file):

- ``upstream_downstream`` (UPELEV/DOWNELEV, US_INV/DS_INV ...): the values
  belong to the pipe's upstream and downstream ends, whichever way the line is
  drawn. Where the node ids give the direction, they are taken as they are and
  cannot contradict it (an upstream invert below the downstream one is an
  adverse slope, which capacity reports). Without node ids nothing says which
  drawn end is upstream; they are then taken at the drawn start/end, the usual
  convention of a layer digitised in the flow direction.
- ``start_end`` (START_INV/END_INV, FROM_INV/TO_INV ...): the values belong to
  the first and last vertex; they tell the direction (the lower end is
  downstream), follow the pipe when it is reversed, and a disagreement with the
  node ids is a ``direction_conflict``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..labels import DIRECTION_SOURCE_LABELS
from ..report import Finding
from .prepare import Mains
from .snapping import Nodes

#: How a ``direction_source`` reads in a message (the one vocabulary's words).
SOURCE_TEXT = DIRECTION_SOURCE_LABELS


@dataclass(frozen=True, eq=False)
class Direction:
    """Per main: ``flip`` (drawn against the flow), ``source`` (``node_ids``,
    ``inverts`` or ``digitized``), inverts up/down in flow direction, and the
    slope (computed from inverts and length where both inverts are known, else
    the stored one)."""

    flip: np.ndarray
    source: np.ndarray
    up_invert: np.ndarray
    down_invert: np.ndarray
    slope_computed: np.ndarray
    slope: np.ndarray
    findings: tuple[Finding, ...]


def invert_pairs(mains: Mains, meanings: tuple[str, str]) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Each main's two inverts and whether they are upstream/downstream values.

    Parameters
    ----------
    mains
        The prepared mains (``up_inv``/``down_inv`` and ``start_inv``/``end_inv``).
    meanings
        How the up/down columns and the start/end columns are read (each
        ``upstream_downstream`` or ``start_end``).

    Returns
    -------
    (a, b, by_flow)
        ``a``/``b``: the up/down columns' values where either is given, else the
        start/end columns'; ``by_flow``: True where ``a``/``b`` are the upstream/
        downstream inverts, False where they sit at the first/last vertex.
    """
    has_ud = ~np.isnan(mains.up_inv) | ~np.isnan(mains.down_inv)
    a = np.where(has_ud, mains.up_inv, mains.start_inv)
    b = np.where(has_ud, mains.down_inv, mains.end_inv)
    by_flow = np.where(has_ud, meanings[0] == "upstream_downstream",
                       meanings[1] == "upstream_downstream")
    return a, b, by_flow.astype(bool)


def resolve_direction(mains: Mains, nodes: Nodes, ft_per_unit: float,
                      inverts: tuple[str, str] = ("start_end", "start_end")) -> Direction:
    """Decide each main's direction of flow from its node ids, inverts or drawing.

    ``inverts`` says how the up/down and the start/end invert columns are read
    (see the module docstring and :func:`invert_pairs`).
    """
    u0 = nodes.end_node[0::2]
    v0 = nodes.end_node[1::2]
    uid = nodes.node_id[u0]
    vid = nodes.node_id[v0]
    fr, to = mains.from_id, mains.to_id
    up_inv, down_inv, by_flow = invert_pairs(mains, inverts)
    fwd = (fr == uid) | (to == vid)
    rev = (fr == vid) | (to == uid)
    ids_given = pd.notna(fr) | pd.notna(to)
    ids_ok = fwd ^ rev
    inv_ok = ~np.isnan(up_inv) & ~np.isnan(down_inv) & (up_inv != down_inv)
    inv_fwd = up_inv > down_inv  # read at the drawn ends: the first vertex is higher
    # upstream/downstream values where the ids give the direction: no reading by position
    named = by_flow & ids_ok
    source = np.where(ids_ok, "node_ids", np.where(inv_ok, "inverts", "digitized"))
    flip = np.where(ids_ok, rev, np.where(inv_ok, ~inv_fwd, False)).astype(bool)
    mid, lines = mains.main_id, mains.lines
    found: list[Finding] = []
    # from/to ids that name other nodes than the ones the pipe's ends meet
    up_id = np.where(flip, vid, uid)
    dn_id = np.where(flip, uid, vid)
    bad_from = pd.notna(fr) & (fr != up_id)
    bad_to = pd.notna(to) & (to != dn_id)
    for k in np.flatnonzero(ids_given & (bad_from | bad_to | (fwd & rev))).tolist():
        if fwd[k] and rev[k]:
            why = f"both ends meet {uid[k]}/{vid[k]}, so they do not tell its direction"
        else:
            why = f"its ends meet {up_id[k]} -> {dn_id[k]}"
        found.append(Finding(
            "node_id_mismatch", "warning",
            f"main {mid[k]} names from/to nodes {fr[k]} -> {to[k]}, but {why}; "
            f"direction from {SOURCE_TEXT[source[k]]}", "mains", mid[k], lines[k]))
    for k in np.flatnonzero(ids_ok & inv_ok & ~named & (fwd != inv_fwd)).tolist():
        found.append(Finding(
            "direction_conflict", "warning",
            f"main {mid[k]}: from/to nodes say {fr[k]} -> {to[k]} but the inverts "
            f"({up_inv[k]:g} ft, {down_inv[k]:g} ft) say the opposite; "
            "the node ids are followed", "mains", mid[k], lines[k]))
    for k in np.flatnonzero(flip).tolist():
        why = ("its from/to node ids" if source[k] == "node_ids"
               else f"its inverts (up {up_inv[k]:g} ft < down {down_inv[k]:g} ft)")
        found.append(Finding(
            "reversed_pipe", "info",
            f"main {mid[k]} is drawn against the flow given by {why}; reversed",
            "mains", mid[k], lines[k]))
    # inverts and slope in flow direction (upstream/downstream values stay as named)
    up = np.where(named, up_inv, np.where(flip, down_inv, up_inv))
    down = np.where(named, down_inv, np.where(flip, up_inv, down_inv))
    length_ft = mains.length * ft_per_unit
    with np.errstate(divide="ignore", invalid="ignore"):
        computed = np.where(length_ft > 0, (up - down) / length_ft, np.nan)
    return Direction(
        flip=flip,
        source=source.astype(object),
        up_invert=up,
        down_invert=down,
        slope_computed=computed,
        slope=np.where(np.isnan(computed), mains.slope_stored, computed),
        findings=tuple(found),
    )
