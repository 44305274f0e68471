"""Stage 6: the direction of flow in each main, and its inverts and slope that way.

Every clue is read, in order of trust; the first that tells a main's
direction decides it, and its ``direction_source`` says which:

1. ``node_ids``: the ``from_node`` / ``to_node`` ids, where they name the
   pipe's end nodes;
2. ``inverts``: start/end inverts (values at the first and last vertex): the
   lower end is downstream;
3. ``invert_match``: upstream/downstream inverts without node ids: the values
   belong to the pipe's upstream and downstream ends, but nothing says which
   drawn end is which; they are matched to the network (the downstream invert
   of one pipe meets the upstream invert of the next at their shared node,
   and the manhole's invert there), never to the drawing
   (:func:`~gisnet.graph.clues.match_inverts`);
4. ``pump_station``: a force main with one end at a pump (lift) station
   flows away from it: the station pumps out of its wet well;
5. ``elevations``: the structures at the two ends (manhole inverts, else
   rims): the lower end is downstream (gravity mains only: a force main is
   pumped, its lower end need not be downstream);
6. ``dem_rim``: the ground at the two ends read from the town's elevation
   raster (:func:`~gisnet.graph.prepare.ground_at_structures`, at manholes
   with no recorded rim or invert; a recorded rim at the other end counts as
   ground too), gravity mains only, and only where it falls at least
   ``min_drop_ft`` (:data:`gisnet.rules.DEFAULT_DEM_MIN_DROP_FT` by default):
   the ground is a weaker clue than anything recorded;
7. ``network``: the network's own shape: the pipe flows along the shortest
   network path toward its piece's outlet (one multi-source shortest-path
   pass from every outlet at once; a pipe points from its farther end to its
   nearer end; pipes decided above are walked only against their flow);
8. ``digitized``: the drawing, only where nothing else decides (a pipe whose
   two ends lie equally far from the outlet, or a network without outlets).

Every disagreement between clues is reported once per kind of disagreement
(``direction_conflict``, grouped, naming all the mains); pipes the network
shape or the drawing decided are reported once per source
(``direction_assumed``); a pipe a clue (1-6) turns against its
drawing is a ``reversed_pipe``; ``node_id_mismatch`` names from/to ids that
name other nodes than the pipe's ends.

Inverts are read by what their columns mean (:data:`gisnet.schema.INVERT_COLUMNS`,
``[layers.mains] inverts`` in the town file): ``upstream_downstream``
(UPELEV/DOWNELEV, US_INV/DS_INV ...) values belong to the pipe's upstream and
downstream ends whichever way the line is drawn (an upstream invert below the
downstream one is an adverse slope, which capacity reports); ``start_end``
(START_INV/END_INV, FROM_INV/TO_INV ...) values belong to the first and last
vertex and follow the pipe when it is reversed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import shapely

from .. import rules
from ..io.ids import unique_ids as unique_ids_shared
from ..labels import DIRECTION_SOURCE_LABELS
from ..report import Finding
from .clues import elevation_clue, ground_clue, match_inverts, outlet_distances
from .prepare import Mains, Structures
from .snapping import Nodes
from .splits import Edges, Pieces

#: How a ``direction_source`` reads in a message (the one vocabulary's words).
SOURCE_TEXT = DIRECTION_SOURCE_LABELS
#: Direction sources in order of trust.
SOURCES = ("node_ids", "inverts", "invert_match", "pump_station", "elevations", "dem_rim",
           "network", "digitized")
#: Structure kinds a force main flows away from (the station pumps out of its wet well).
PUMP_KINDS = ("pump_station",)
#: Ids named in a grouped finding's message.
IDS_NAMED = 10
#: A pipe flows away from its outlet when its downstream end is this much
#: farther (ft along the network) from the outlet than its upstream end.
AWAY_MARGIN_FT = 1.0


@dataclass(frozen=True, eq=False)
class Direction:
    """Per main: ``flip`` (drawn against the flow), ``source`` (one of
    :data:`SOURCES`), inverts up/down in flow direction, and the
    slope (computed from inverts and length where both inverts are known, else
    the stored one). Per piece: ``piece_flip``, the main's ``flip`` except on a
    main the network's shape decided, whose pieces each flow toward the outlet
    (a main drawn through the junction that leads to the outlet drains to it
    from both sides)."""

    flip: np.ndarray
    piece_flip: np.ndarray
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


def _named(ids: np.ndarray) -> str:
    shown = ", ".join(map(str, ids[:IDS_NAMED].tolist()))
    return shown + (f" and {len(ids) - IDS_NAMED} more" if len(ids) > IDS_NAMED else "")


def grouped(kind: str, severity: str, text: str, mains: Mains, idx: np.ndarray) -> list[Finding]:
    """One finding about many mains: ``text`` (with ``{n}`` for the count and
    ``{ids}`` for the first ids), all the ids, their lines as one geometry."""
    if len(idx) == 0:
        return []
    ids = mains.main_id[idx]
    return [Finding(kind, severity, text.format(n=len(idx), ids=_named(ids)), "mains",
                    ",".join(map(str, ids.tolist())), shapely.multilinestrings(mains.lines[idx]))]


def node_elevations(structures: Structures, nodes: Nodes) -> tuple[np.ndarray, np.ndarray]:
    """Invert and rim (ft) per node: the structure's, NaN at junctions."""
    nn = len(nodes)
    inv = np.full(nn, np.nan)
    rim = np.full(nn, np.nan)
    sc = structures.count
    inv[:sc] = structures.inv
    rim[:sc] = structures.rim
    return inv, rim


def resolve_direction(mains: Mains, nodes: Nodes, structures: Structures, pieces: Pieces,
                      outlet: np.ndarray, ft_per_unit: float,
                      inverts: tuple[str, str] = ("start_end", "start_end"),
                      min_drop_ft: float | None = None) -> Direction:
    """Decide each main's direction of flow from every clue, in order of trust.

    Parameters
    ----------
    mains, nodes, structures, pieces
        The earlier stages' output (pieces as drawn).
    outlet
        Per node: an outlet (every piece's, see :mod:`.outlets`). Without any
        outlet the network's shape tells nothing and the drawing decides.
    ft_per_unit
        Feet per CRS unit.
    inverts
        How the up/down and the start/end invert columns are read (see the
        module docstring and :func:`invert_pairs`).
    min_drop_ft
        Least fall of the ground (ft) from an elevation raster that decides a
        pipe (``dem_rim``); None: :data:`gisnet.rules.DEFAULT_DEM_MIN_DROP_FT`.
    """
    start = nodes.end_node[0::2]
    end = nodes.end_node[1::2]
    uid = nodes.node_id[start]
    vid = nodes.node_id[end]
    fr, to = mains.from_id, mains.to_id
    a, b, by_flow = invert_pairs(mains, inverts)
    n = len(mains)
    fwd = (fr == uid) | (to == vid)
    rev = (fr == vid) | (to == uid)
    ids_given = pd.notna(fr) | pd.notna(to)
    ids_ok = fwd ^ rev
    both_inv = ~np.isnan(a) & ~np.isnan(b)
    inv_ok = both_inv & (a != b) & ~by_flow
    inv_fwd = a > b  # values at the drawn ends: the first vertex is higher
    source = np.full(n, "digitized", dtype=object)
    flip = np.zeros(n, dtype=bool)
    decided = np.zeros(n, dtype=bool)

    def decide(mask: np.ndarray, name: str, flips: np.ndarray) -> None:
        m = mask & ~decided
        source[m] = name
        flip[m] = flips[m]
        decided[m] = True

    decide(ids_ok, "node_ids", rev)
    decide(inv_ok, "inverts", ~inv_fwd)
    # upstream/downstream values without ids: matched to the network's values
    known_s = np.where(~by_flow, a, np.where(ids_ok & by_flow, np.where(rev, b, a), np.nan))
    known_e = np.where(~by_flow, b, np.where(ids_ok & by_flow, np.where(rev, a, b), np.nan))
    node_inv, node_rim = node_elevations(structures, nodes)
    placed = match_inverts(start, end, a, b, by_flow & ~decided, known_s, known_e, node_inv)
    decide(placed != 0, "invert_match", placed < 0)
    # a force main leaves the pump station at one of its ends
    pumped = ~mains.gravity
    station = np.zeros(len(nodes), dtype=bool)
    for pk in PUMP_KINDS:
        station[:structures.count] |= structures.kind == pk
    if pumped.any():
        decide(pumped & (station[start] != station[end]), "pump_station", station[end])
    elev, which = elevation_clue(start, end, node_inv, node_rim)
    elev[pumped] = 0
    which[pumped] = ""
    trusted = decided.copy()
    decide(elev != 0, "elevations", elev < 0)
    # the ground from the elevation raster: gravity mains, a fall of min_drop_ft at least
    by_ground = np.zeros(n, dtype=bool)
    if len(structures.ground):  # the town has a raster
        ground = np.full(len(nodes), np.nan)
        ground[:structures.count] = structures.ground_ft
        dem = ground_clue(start, end, node_rim, ground,
                          rules.DEFAULT_DEM_MIN_DROP_FT if min_drop_ft is None else min_drop_ft)
        by_ground = (dem != 0) & ~pumped & ~decided
        decide(by_ground, "dem_rim", dem < 0)
    clued = decided.copy()
    # the network's shape: toward the piece's outlet
    outs = np.flatnonzero(outlet)
    nn = len(nodes)
    pm = pieces.main
    pflip = flip[pm]
    fu = np.where(pflip, pieces.v, pieces.u)
    fv = np.where(pflip, pieces.u, pieces.v)
    along, anyway = outlet_distances(nn, fu, fv, pieces.length_ft, decided[pm], outs)
    use_along = np.isfinite(along[start]) & np.isfinite(along[end])
    ds = np.where(use_along, along[start], anyway[start])
    de = np.where(use_along, along[end], anyway[end])
    told = np.isfinite(ds) & np.isfinite(de) & (ds != de)
    decide(told, "network", ds < de)
    # pieces of mains the network's shape decided: each toward the outlet
    pu_, pv_ = pieces.u, pieces.v
    p_along = np.isfinite(along[pu_]) & np.isfinite(along[pv_])
    dpu = np.where(p_along, along[pu_], anyway[pu_])
    dpv = np.where(p_along, along[pv_], anyway[pv_])
    by_net = source[pm] == "network"
    piece_flip = np.where(by_net & np.isfinite(dpu) & np.isfinite(dpv) & (dpu != dpv),
                          dpu < dpv, flip[pm])
    in_graph = np.ones(n, dtype=bool)
    in_graph[pieces.collapsed] = False
    found: list[Finding] = []
    # from/to ids that name other nodes than the ones the pipe's ends meet
    up_id = np.where(flip, vid, uid)
    dn_id = np.where(flip, uid, vid)
    bad_from = pd.notna(fr) & (fr != up_id)
    bad_to = pd.notna(to) & (to != dn_id)
    mid, lines = mains.main_id, mains.lines
    for k in np.flatnonzero(ids_given & (bad_from | bad_to | (fwd & rev))).tolist():
        if fwd[k] and rev[k]:
            why = f"both ends meet {uid[k]}/{vid[k]}, so they do not tell its direction"
        else:
            why = f"its ends meet {up_id[k]} -> {dn_id[k]}"
        found.append(Finding(
            "node_id_mismatch", "warning",
            f"main {mid[k]} names from/to nodes {fr[k]} -> {to[k]}, but {why}; "
            f"direction from {SOURCE_TEXT[source[k]]}", "mains", mid[k], lines[k]))
    found += conflicts(mains, source, flip, ids_ok, inv_ok, inv_fwd, rev, placed, elev, which,
                       trusted)
    # decided pipes that flow away from their outlet by the network's shape
    up_n = np.where(flip, end, start)
    dn_n = np.where(flip, start, end)
    away = clued & in_graph & np.isfinite(anyway[up_n]) \
        & np.isfinite(anyway[dn_n]) & (anyway[dn_n] > anyway[up_n] + AWAY_MARGIN_FT)
    found += grouped("away_from_outlet", "info",
                     "{n} main(s) flow, by their node ids, inverts, pump stations or "
                     "elevations, away from the outlet the network's shortest path leads to (a "
                     "loop, a pump, or a wrong clue): {ids}", mains, np.flatnonzero(away))
    for k in np.flatnonzero(flip & clued).tolist():
        found.append(Finding(
            "reversed_pipe", "info",
            f"main {mid[k]} is drawn against the flow given by {reason(k, source, a, b, which)}; "
            "reversed", "mains", mid[k], lines[k]))
    net = np.flatnonzero(in_graph & (source == "network"))
    found += grouped(
        "direction_assumed", "warning",
        "{n} main(s) have no node ids, inverts or elevations that tell their direction: "
        f"each is taken to flow along the shortest network path to its piece's outlet "
        f"({int(flip[net].sum())} drawn the other way were reversed): {{ids}}", mains, net)
    dig = np.flatnonzero(in_graph & (source == "digitized"))
    found += grouped(
        "direction_assumed", "warning",
        "{n} main(s): nothing but the drawing tells their direction (no node ids, inverts "
        "or elevations, and "
        + ("both ends equally far from the outlet" if len(outs) else "no outlet to flow to")
        + "); taken as drawn: {ids}", mains, dig)
    # inverts and slope in flow direction (upstream/downstream values stay as named)
    up = np.where(by_flow, a, np.where(flip, b, a))
    down = np.where(by_flow, b, np.where(flip, a, b))
    length_ft = mains.length * ft_per_unit
    with np.errstate(divide="ignore", invalid="ignore"):
        computed = np.where(length_ft > 0, (up - down) / length_ft, np.nan)
    return Direction(
        flip=flip,
        piece_flip=piece_flip.astype(bool),
        source=source,
        up_invert=up,
        down_invert=down,
        slope_computed=computed,
        slope=np.where(np.isnan(computed), mains.slope_stored, computed),
        findings=tuple(found),
    )


def reason(k: int, source: np.ndarray, a: np.ndarray, b: np.ndarray, which: np.ndarray) -> str:
    """Why main ``k`` was turned, in words."""
    if source[k] == "node_ids":
        return "its from/to node ids"
    if source[k] == "inverts":
        return f"its inverts (start {a[k]:g} ft < end {b[k]:g} ft)"
    if source[k] == "invert_match":
        return (f"its inverts (upstream {a[k]:g} ft, downstream {b[k]:g} ft) matched to the "
                "pipes and manholes at its ends")
    if source[k] == "pump_station":
        return "the pump station it leaves"
    if source[k] == "dem_rim":
        return "the ground at its ends (the elevation raster)"
    return f"the {which[k]}s of the structures at its ends"


def conflicts(mains: Mains, source: np.ndarray, flip: np.ndarray, ids_ok: np.ndarray,
              inv_ok: np.ndarray, inv_fwd: np.ndarray, rev: np.ndarray, placed: np.ndarray,
              elev: np.ndarray, which: np.ndarray, trusted: np.ndarray) -> list[Finding]:
    """One grouped ``direction_conflict`` per pair of clues that disagree: node
    ids against start/end inverts, and node ids or pipe inverts against the
    structures' inverts."""
    found = grouped(
        "direction_conflict", "warning",
        "{n} main(s): the from/to node ids say one way, the inverts at the drawn ends the "
        "other; the node ids are followed: {ids}", mains,
        np.flatnonzero(ids_ok & inv_ok & (rev == inv_fwd)))
    # rims are not compared: the ground need not fall the way the sewer does
    bad = trusted & (which == "invert") & (elev != 0) & ((elev < 0) != flip)
    found += grouped(
        "direction_conflict", "warning",
        "{n} main(s): the inverts of the structures at their ends say the opposite "
        "of their node ids or inverts, which are followed: {ids}", mains, np.flatnonzero(bad))
    return found


def orient_edges(mains: Mains, pieces: Pieces, direction: Direction) -> Edges:
    """The pieces turned to the direction of flow, with inverts interpolated
    along the main and their edge keys (``main_id``, ``main_id@2`` ...)."""
    e_main, e_seq, e_cnt = pieces.main, pieces.seq, pieces.count
    e_u, e_v, e_geom = pieces.u, pieces.v, pieces.geom
    e_f0, e_f1 = pieces.f0, pieces.f1
    flip = direction.piece_flip
    fu = np.where(flip, e_v, e_u)
    fv = np.where(flip, e_u, e_v)
    if flip.any():
        e_geom = e_geom.copy()
        e_geom[flip] = shapely.reverse(e_geom[flip])
    # parts count from the upstream piece; a main whose pieces flow both ways
    # (toward a junction in its middle) keeps its drawn order
    mflip = direction.flip[e_main]
    mixed = np.zeros(len(direction.flip), dtype=bool)
    mixed[e_main[flip != mflip]] = True
    part = np.where(flip & ~mixed[e_main], e_cnt - e_seq + 1, e_seq)
    # the main's inverts at its drawn ends, interpolated along the drawing
    up, down = direction.up_invert[e_main], direction.down_invert[e_main]
    sv = np.where(mflip, down, up)
    ev = np.where(mflip, up, down)
    both = ~np.isnan(sv) & ~np.isnan(ev)

    def at(f: np.ndarray) -> np.ndarray:
        return np.where(both, sv + (ev - sv) * f,
                        np.where(f == 0, sv, np.where(f == 1, ev, np.nan)))

    e_up = at(np.where(flip, e_f1, e_f0))
    e_down = at(np.where(flip, e_f0, e_f1))
    mid = mains.main_id[e_main]
    key = np.where(part == 1, mid,
                   np.char.add(np.char.add(mid.astype(str), "@"), part.astype(str))).astype(object)
    if len(set(key.tolist())) < len(key):  # a piece's key is another main's id (a main "X@2")
        key = unique_ids_shared(pd.Series(key, dtype=object), keep=part == 1)[0].to_numpy(
            dtype=object)
    order = np.lexsort((part, e_main))
    return Edges(u=fu[order], v=fv[order], geom=e_geom[order], main=e_main[order],
                 part=part[order], up_invert=e_up[order], down_invert=e_down[order],
                 length_ft=pieces.length_ft[order], key=key[order])
