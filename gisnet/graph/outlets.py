"""Stage 6: outlets. Where the network ends: plants, outfalls and named outlet nodes.

Plants are outlets where pipe ends snapped onto them, or where the plant
snaps to the nearest node within the plant tolerance (or the node its
``node_id`` names; each snap is reported with its distance as
``plant_snapped``); outfall-kind structures are outlets; so are the town's
``outlet_nodes``. A town with no plant layer, no outfall and no outlet
nodes named has its terminal nodes (pipe ends no pipe leaves) as outlets,
reported once as ``terminal_outlets``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import shapely
from shapely.geometry import Point

from ..errors import ConfigError
from ..report import Finding
from .inputs import GraphInputs
from .prepare import Structures
from .snapping import Nodes
from .splits import Edges

#: Structure kinds that end the network.
OUTLET_KINDS = ("plant", "outfall")


@dataclass(frozen=True, eq=False)
class Outlets:
    """Per node: final ``node_id`` / ``node_kind`` (a junction a plant snapped to
    takes the plant's id and kind), ``used`` (an edge touches it), ``outlet``,
    ``plant_of`` (the plant id of a plant node, else None) and ``terminal``
    (an outlet only because the network has no other: see
    :func:`terminal_outlets`; the topology findings still call its pipe end
    dangling)."""

    node_id: np.ndarray
    node_kind: np.ndarray
    used: np.ndarray
    outlet: np.ndarray
    plant_of: np.ndarray
    findings: tuple[Finding, ...]
    terminal: np.ndarray

    @property
    def real(self) -> np.ndarray:
        """Outlets that are plants, outfalls or named nodes (not terminal nodes)."""
        return self.outlet & ~self.terminal


def find_outlets(inp: GraphInputs, structures: Structures, nodes: Nodes,
                 edges: Edges) -> Outlets:
    """Mark the outlets, snapping plants no pipe end reached to a node.

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
    used = np.zeros(nn, dtype=bool)
    used[edges.u] = True
    used[edges.v] = True
    outlet = used & np.isin(node_kind, OUTLET_KINDS)
    plant_of = np.full(nn, None, dtype=object)
    plant_of[:sc] = structures.plant_id
    index = {nid: i for i, nid in enumerate(node_id.tolist())}
    outdeg = np.bincount(edges.u, minlength=nn)
    renames: dict[int, int] = {}
    found: list[Finding] = []
    # plants that no pipe end reached: snap the plant to a node
    for s in np.flatnonzero(structures.source == "plants").tolist():
        if used[s]:
            continue
        pid = structures.plant_id[s]
        named = structures.plant_named_node.get(s)
        target = None
        if named is not None:
            target = index.get(named)
            if target is None or not used[target]:
                found.append(Finding("plant_not_connected", "warning",
                                     f"plant {pid} names node {named}, which no main reaches",
                                     "plants", pid, structures.geom[s]))
                target = None
        if target is None and named is None:
            cand = np.flatnonzero(used)
            if len(cand):
                # (n, 2) coordinates: n points (the stubs cannot tell them from one)
                tree = shapely.STRtree(cast(np.ndarray, shapely.points(node_xy[cand])))
                hits, dist = tree.query_nearest(structures.geom[s], return_distance=True,
                                                all_matches=True)
                d = float(dist[0]) if len(dist) else np.inf
                if d <= inp.plant_tol:
                    hit_nodes = cand[hits]
                    sinks = hit_nodes[outdeg[hit_nodes] == 0]
                    target = int((sinks if len(sinks) else hit_nodes).min())
                    found.append(Finding(
                        "plant_snapped", "info",
                        f"plant {pid} joined to node {node_id[target]}, "
                        f"{d * inp.ft_per_unit:.1f} ft away (plant tolerance "
                        f"{inp.plant_tolerance_ft:g} ft)", "plants", pid, structures.geom[s]))
                else:
                    fpu = inp.ft_per_unit
                    nearest = node_id[cand[hits[0]]]
                    found.append(Finding(
                        "plant_not_connected", "warning",
                        f"plant {pid} is {d * fpu:.1f} ft from the nearest node "
                        f"({nearest}), beyond the {inp.plant_tol * fpu:g} ft "
                        "tolerance; it is no outlet", "plants", pid, structures.geom[s]))
        if target is None:
            continue
        outlet[target] = True
        plant_of[target] = pid
        if target >= sc and target not in renames:
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
    real = outlet.copy()
    if inp.plants is None and not inp.outlet_nodes and not (outlet & used).any():
        found += terminal_outlets(outlet, used, outdeg, node_id, node_xy, "no plant layer")
    return Outlets(node_id=node_id, node_kind=node_kind, used=used, outlet=outlet,
                   plant_of=plant_of, findings=tuple(found), terminal=outlet & ~real)


def terminal_outlets(outlet: np.ndarray, used: np.ndarray, outdeg: np.ndarray,
                     node_id: np.ndarray, node_xy: np.ndarray, why: str) -> list[Finding]:
    """A network with no outlet and no plant layer: every terminal node
    (reached by a pipe, left by none) becomes an outlet, in place; one
    ``terminal_outlets`` finding saying ``why``."""
    term = np.flatnonzero(used & (outdeg[: len(used)] == 0) & ~outlet)
    if len(term) == 0:
        return []
    outlet[term] = True
    ids = node_id[term].tolist()
    shown = ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10
                                             else "")
    return [Finding("terminal_outlets", "info",
                    f"{why}: the {len(ids)} terminal node(s) of the network (pipe "
                    f"ends no pipe leaves) are taken as its outlets: {shown}", "mains",
                    ",".join(map(str, ids)),
                    cast(shapely.MultiPoint, shapely.multipoints(node_xy[term])))]
