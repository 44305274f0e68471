"""Stage 5: outlets. Where each piece of the network ends.

Every piece of network gets an outlet, and the report says which are assumed:

- a plant some pipe end snapped onto (within the snap tolerance), an
  outfall-kind structure, or a node the town names in ``outlet_nodes``;
- a plant no pipe end reached joins the end of one piece: the piece whose
  end (a node with one pipe) lies nearest the plant, unless a piece with at
  least :data:`MUCH_LARGER` times its nodes has an end nearly as close (within
  the plant tolerance of that distance, or twice it) (a plant is never joined to a small fragment
  beside the network it serves). Within the plant tolerance it is
  ``plant_snapped`` (the gap reported); beyond it the piece's end is taken
  as the outlet and the gap's length is a ``plant_gap`` to fix (the outlet
  is *assumed*); a plant whose chosen piece has an outlet already, or that
  names a node no main reaches, is ``plant_not_connected``;
- a piece still without an outlet drains to its lowest structure where
  two or more of its structures have inverts (else rims, else the ground
  the town's elevation raster gives), else to its end nearest the network
  that has an outlet: an ``outlet_assumed`` finding each, with the gap to the
  network.

A town with no plant layer, no outfall and no outlet nodes named has its
terminal nodes (pipe ends no pipe leaves, once the direction is known) as
outlets, reported once as ``terminal_outlets`` (:func:`terminal_outlets`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import shapely
from shapely.geometry import LineString, Point

from ..errors import ConfigError
from ..report import Finding
from .inputs import GraphInputs
from .prepare import Structures
from .snap import component_labels
from .snapping import Nodes
from .splits import Edges, Pieces

#: Structure kinds that end the network.
OUTLET_KINDS = ("plant", "outfall")
#: A plant joins a piece this many times larger (in nodes) than the nearest
#: piece, when that piece's end lies within the plant tolerance of the
#: nearest distance.
MUCH_LARGER = 10


@dataclass(frozen=True, eq=False)
class Outlets:
    """Per node: final ``node_id`` / ``node_kind`` (a junction a plant snapped to
    takes the plant's id and kind), ``used`` (an edge touches it), ``outlet``,
    ``plant_of`` (the plant id of a plant node or of the end a plant was
    joined to, else None), ``assumed`` (an outlet only by assumption: a plant
    beyond the tolerance, a piece's lowest node or its end nearest the
    network, a terminal node) and ``piece`` (the piece label of each node)."""

    node_id: np.ndarray
    node_kind: np.ndarray
    used: np.ndarray
    outlet: np.ndarray
    plant_of: np.ndarray
    findings: tuple[Finding, ...]
    assumed: np.ndarray
    piece: np.ndarray
    terminal_mode: bool = False

    @property
    def real(self) -> np.ndarray:
        """Outlets that are plants, outfalls or named nodes (not assumed ones)."""
        return self.outlet & ~self.assumed


def _piece_best(lab: np.ndarray, d: np.ndarray, node: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per piece label: the smallest distance and its node (ties: lowest node)."""
    order = np.lexsort((node, d, lab))
    first = np.ones(len(order), dtype=bool)
    first[1:] = lab[order][1:] != lab[order][:-1]
    pick = order[first]
    return lab[pick], d[pick], node[pick]


def find_outlets(inp: GraphInputs, structures: Structures, nodes: Nodes,
                 pieces: Pieces) -> Outlets:
    """An outlet for every piece of network (see the module docstring).

    Raises
    ------
    ConfigError
        An outlet node id that is neither a structure nor a node of the graph.
    """
    sc = structures.count
    node_id = nodes.node_id.copy()
    node_kind = nodes.node_kind.copy()
    node_xy = nodes.node_xy
    nn = len(node_id)
    fpu = inp.ft_per_unit
    u, v = pieces.u, pieces.v
    used = np.zeros(nn, dtype=bool)
    used[u] = True
    used[v] = True
    outlet = used & np.isin(node_kind, OUTLET_KINDS)
    assumed = np.zeros(nn, dtype=bool)
    plant_of = np.full(nn, None, dtype=object)
    plant_of[:sc] = structures.plant_id
    lab = component_labels(nn, u, v)
    size = np.bincount(lab[used], minlength=nn)
    deg = np.bincount(u, minlength=nn) + np.bincount(v, minlength=nn)
    # candidate ends: nodes with one pipe; a piece without one offers all its nodes
    has_end = np.zeros(nn, dtype=bool)
    has_end[lab[used & (deg == 1)]] = True
    cand = np.flatnonzero(used & ((deg == 1) | ~has_end[lab]))
    cand_pts = shapely.points(node_xy[cand])
    index = {nid: i for i, nid in enumerate(node_id.tolist())}
    renames: dict[int, int] = {}
    found: list[Finding] = []
    for s in np.flatnonzero(structures.source == "plants").tolist():
        if used[s] or nodes.merged[s]:
            continue
        pid = structures.plant_id[s]
        named = structures.plant_named_node.get(s)
        if named is not None:
            target = index.get(named)
            if target is None or not used[target]:
                found.append(Finding("plant_not_connected", "warning",
                                     f"plant {pid} names node {named}, which no main reaches",
                                     "plants", pid, structures.geom[s]))
                continue
            d = 0.0
        else:
            if len(cand) == 0:
                continue
            pl, pd_, pn = _piece_best(lab[cand], shapely.distance(structures.geom[s], cand_pts),
                                      cand)
            p0 = int(np.argmin(pd_))
            # "nearly as close": within the plant tolerance, or twice the distance, of the nearest
            near = np.flatnonzero(pd_ <= max(pd_[p0] + inp.plant_tol, 2 * pd_[p0]))
            p1 = int(near[np.lexsort((pd_[near], -size[pl[near]]))[0]])
            chosen = p1 if size[pl[p1]] >= MUCH_LARGER * size[pl[p0]] else p0
            target, d = int(pn[chosen]), float(pd_[chosen])
            piece_nodes = int(size[pl[chosen]])
            what = (f"the {piece_nodes:,}-node piece"
                    + (f" (a {int(size[pl[p0]]):,}-node fragment lies nearer, "
                       f"{pd_[p0] * fpu:.1f} ft)" if chosen != p0 else ""))
            if d > inp.plant_tol:
                if (outlet & (lab == pl[chosen])).any():
                    found.append(Finding(
                        "plant_not_connected", "warning",
                        f"plant {pid} is {d * fpu:.1f} ft from the nearest pipe end "
                        f"({node_id[target]}), beyond the {inp.plant_tolerance_ft:g} ft "
                        "tolerance, and that piece has an outlet; it is no outlet", "plants",
                        pid, structures.geom[s]))
                    continue
                assumed[target] = True
                found.append(Finding(
                    "plant_gap", "warning",
                    f"{what} ends {d * fpu:,.0f} ft from plant {pid} (beyond the "
                    f"{inp.plant_tolerance_ft:g} ft plant tolerance): its end "
                    f"{node_id[target]} is taken as its outlet; draw the pipe to the plant",
                    "plants", pid, LineString([node_xy[target],
                                               shapely.get_coordinates(
                                                   shapely.point_on_surface(
                                                       structures.geom[s]))[0]])))
            else:
                found.append(Finding(
                    "plant_snapped", "info",
                    f"plant {pid} joined to node {node_id[target]} of {what}, "
                    f"{d * fpu:.1f} ft away (plant tolerance {inp.plant_tolerance_ft:g} ft)",
                    "plants", pid, structures.geom[s]))
        outlet[target] = True
        plant_of[target] = pid
        if not assumed[target] and target >= sc and target not in renames:
            renames[target] = s
            node_kind[target] = "plant"
    # a junction a plant snapped to takes the plant's id; the plant's own
    # (unused) structure node gives it up
    for target, s in renames.items():
        key = str(structures.ids[s])
        node_id[s] = f"{key}~unused"
        node_id[target] = key
    index = {nid: i for i, nid in enumerate(node_id.tolist())}
    for name in inp.outlet_nodes:
        i = index.get(name)
        if i is None:
            raise ConfigError(f"outlet node {name!r} is neither a manhole/plant id nor a "
                              "node of the sewer graph", layer="mains", feature=name)
        if not used[i]:
            found.append(Finding(
                "outlet_not_connected", "warning",
                f"outlet node {name} named in the town settings is reached by no main "
                f"within {inp.tolerance_ft:g} ft", "manholes", name, Point(node_xy[i])))
            continue
        outlet[i] = True
    terminal_mode = inp.plants is None and not inp.outlet_nodes and not (outlet & used).any()
    if not terminal_mode:
        found += piece_outlets(inp, structures, nodes, lab, size, used, outlet, assumed, cand,
                               node_id)
    return Outlets(node_id=node_id, node_kind=node_kind, used=used, outlet=outlet,
                   plant_of=plant_of, findings=tuple(found), assumed=assumed, piece=lab,
                   terminal_mode=terminal_mode)


def piece_outlets(inp: GraphInputs, structures: Structures, nodes: Nodes, lab: np.ndarray,
                  size: np.ndarray, used: np.ndarray, outlet: np.ndarray, assumed: np.ndarray,
                  cand: np.ndarray, node_id: np.ndarray) -> list[Finding]:
    """Give each piece without an outlet one (in place): its lowest structure
    where elevations exist, else its end nearest the network with an outlet."""
    nn = len(lab)
    has_out = np.zeros(nn, dtype=bool)
    has_out[lab[outlet & used]] = True
    lost = used & ~has_out[lab]
    if not lost.any() or not has_out.any():
        return []
    fpu = inp.ft_per_unit
    node_xy = nodes.node_xy
    found: list[Finding] = []
    sc = structures.count
    ground = np.where(np.isnan(structures.rim), structures.ground_ft, structures.rim)
    for col, what in ((structures.inv, "invert"), (structures.rim, "rim"),
                      (ground, "ground (rim or elevation raster)")):
        elev = np.full(nn, np.nan)
        elev[:sc] = col
        at = np.flatnonzero(lost & ~np.isnan(elev) & ~has_out[lab])
        # the lowest of two or more structures (one alone is no lowest)
        at = at[np.bincount(lab[at], minlength=nn)[lab[at]] >= 2]
        if len(at) == 0:
            continue
        pl, low, pn = _piece_best(lab[at], elev[at], at)
        for p, z, nd in zip(pl.tolist(), low.tolist(), pn.tolist(), strict=True):
            outlet[nd] = assumed[nd] = has_out[p] = True
            found.append(Finding(
                "outlet_assumed", "warning",
                f"the {int(size[p]):,}-node piece reaches no plant or outfall: it is taken to "
                f"drain at its lowest structure {node_id[nd]} ({what} {z:g} ft)", "manholes",
                node_id[nd], Point(node_xy[nd])))
    c = cand[~has_out[lab[cand]]]
    main = np.flatnonzero(used & has_out[lab])
    if len(c) == 0 or len(main) == 0:
        return found
    tree = shapely.STRtree(cast(np.ndarray, shapely.points(node_xy[main])))
    ci, mi = tree.query_nearest(shapely.points(node_xy[c]), all_matches=False)
    d = np.hypot(*(node_xy[c[ci]] - node_xy[main[mi]]).T)
    to = np.full(len(c), -1, dtype=np.int64)
    to[ci] = main[mi]
    dist = np.full(len(c), np.inf)
    dist[ci] = d
    pl, pd_, pn = _piece_best(lab[c], dist, c)
    where = {int(x): int(t) for x, t in zip(c.tolist(), to.tolist(), strict=True)}
    for p, dd, nd in zip(pl.tolist(), pd_.tolist(), pn.tolist(), strict=True):
        outlet[nd] = assumed[nd] = True
        near = where[nd]
        found.append(Finding(
            "outlet_assumed", "warning",
            f"the {int(size[p]):,}-node piece reaches no plant or outfall: it is taken to "
            f"drain at its end {node_id[nd]}, {dd * fpu:,.1f} ft from node {node_id[near]} of "
            "the network; join it or name its outlet", "mains",
            f"{node_id[nd]},{node_id[near]}", LineString([node_xy[nd], node_xy[near]])))
    return found


def terminal_outlets(outlets: Outlets, edges: Edges, node_xy: np.ndarray,
                     why: str = "no plant layer") -> Outlets:
    """A network with no outlet and no plant layer: every terminal node
    (reached by a pipe, left by none) becomes an assumed outlet; one
    ``terminal_outlets`` finding saying ``why``."""
    used = outlets.used
    outdeg = np.bincount(edges.u, minlength=len(used))
    term = np.flatnonzero(used & (outdeg[: len(used)] == 0) & ~outlets.outlet)
    if len(term) == 0:
        return outlets
    outlet = outlets.outlet.copy()
    assumed = outlets.assumed.copy()
    outlet[term] = assumed[term] = True
    node_id = outlets.node_id
    ids = node_id[term].tolist()
    shown = ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10
                                             else "")
    f = Finding("terminal_outlets", "info",
                f"{why}: the {len(ids)} terminal node(s) of the network (pipe "
                f"ends no pipe leaves) are taken as its outlets: {shown}", "mains",
                ",".join(map(str, ids)),
                cast(shapely.MultiPoint, shapely.multipoints(node_xy[term])))
    return replace(outlets, outlet=outlet, assumed=assumed,
                   findings=(*outlets.findings, f))
