"""Control manholes: where each building sewer's wastes are sampled.

Poughkeepsie § 168-22.5J: where no control manhole was required, the control
manhole is "the nearest downstream manhole in the public sewer from the point
at which the building sewer is connected". The **control manhole of a tap** on
a public main ``u -> v`` is ``v`` if ``v`` is a public, active manhole, else
the first such manhole on the primary-outflow chain from ``v`` (see
:mod:`.index`); a tap at distance 0 on an edge whose upstream node ``u`` is a
manhole connects into that manhole, whose control manhole is then ``u``
itself. A tap on a **private main** (the branch lines of an apartment complex,
industrial park or private street; Berlin sec. 16-70(c) counts them as the
private sewer lateral) is followed down the private mains to the node where
the flow enters the public sewer, and the control manhole is the first public,
active manhole at or after that node: one pointer-jumping pass of the
:class:`~.index.DownstreamIndex` answers every tap at once. Junctions,
fittings, cleanouts and private or inactive manholes are passed over.

Poughkeepsie § 168-22.5K: "When required by the Superintendent, the owner of
any property served by a building sewer carrying industrial wastes shall
install a suitable control manhole in the building sewer". A manholes row
whose ``control_for`` names a building or an industrial user is that
owner-installed control manhole; it overrides the default for that building
(and its users) or that user, and the row cites the profile's
``control_manhole.owner_manhole_section``. Every other row cites
``control_manhole.section``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from ..errors import ConfigError
from .index import DownstreamIndex
from .paths import Chains, edge_indices, path_lines
from .points import connection_points, held_values

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

#: Columns of the ``control_manholes`` layer (plus geometry, the tap point).
CONTROL_COLUMNS = [
    "building_id",
    "parcel_id",
    "user_id",
    "main_id",
    "tap_distance_ft",
    "control_manhole_id",
    "plant_id",
    "path_length_ft",
    "plant_path_length_ft",
    "source",
    "entry_node_id",
    "private_length_ft",
    "reason",
    "section",
]

#: ``source`` of a control manhole row: how the connection was found.
CONTROL_SOURCES = ("lateral", "private_main", "projected", "owner_manhole", "unresolved")


def owner_manholes(town: Town | None, *, report: bool = True) -> dict[str, Any]:
    """Owner-installed control manholes (§ 168-22.5K), by the id they serve.

    The manholes layer's ``control_for`` column names the building
    (``building_id``) or industrial user (``user_id``) whose building sewer
    the manhole is in. Only active manholes count; the first in layer order
    wins for an id named twice. Rows that cannot be used (inactive, an id
    named by an earlier manhole, an id that is no building and no user) are
    reported once each as ``control_for_unused`` (when ``report``).

    Returns
    -------
    dict
        ``{building_id or user_id: manhole node_id}``.
    """
    if town is None:
        return {}
    mh = town.layer("manholes")
    if mh is None or "control_for" not in mh or not len(mh):
        return {}
    cf = mh["control_for"].astype(object)
    marked = cf.notna() & (cf.astype(str).str.strip() != "")
    if not marked.any():
        return {}
    known: set[Any] = set()
    for role, col in (("buildings", "building_id"), ("users", "user_id")):
        layer = town.layer(role)
        if layer is not None and col in layer:
            known |= set(layer[col].dropna().astype(str))
    active = (mh["active"].astype("boolean").fillna(True).to_numpy(dtype=bool)
              if "active" in mh else np.ones(len(mh), bool))
    out: dict[str, Any] = {}
    for i in np.flatnonzero(marked.to_numpy()):
        key = str(cf.iloc[i]).strip()
        node = mh["node_id"].iloc[i]
        why = None
        if key not in known:
            why = f"{key!r} is no building_id and no user_id of the town"
        elif not active[i]:
            why = f"it is {mh['status'].iloc[i] or 'inactive'}"
        elif key in out:
            why = f"manhole {out[key]} already serves {key}"
        if why is None:
            out[key] = node
            continue
        msg = (f"manhole {node} is marked control_for {key}, but {why}; it is not used as a "
               "control manhole")
        if report and not any(f.message == msg for f in town.report.of_kind(
                "control_for_unused")):  # once, however often the analysis runs
            town.report.add("control_for_unused", "warning", msg, layer="manholes",
                            feature_id=node)
    return out


def owner_rows(points: pd.DataFrame, owners: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Owner manhole (node id, None) and the id it was matched by, per point:
    a user's row by ``user_id``, else by its ``building_id``; a building's by
    ``building_id``."""
    n = len(points)
    node = np.full(n, None, dtype=object)
    by = np.full(n, None, dtype=object)
    if not owners:
        return node, by
    look = pd.Series(owners, dtype=object)
    for col in ("user_id", "building_id"):
        keys = points[col].astype(object)
        keys = keys.where(keys.isna(), keys.astype(str)).to_numpy(dtype=object)
        hit = pd.Series(keys).map(look).to_numpy(dtype=object)
        take = pd.isna(node) & pd.notna(hit)
        node[take] = hit[take]
        by[take] = keys[take]
    return node, by


def _node_or_none(nodes: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``nodes[pos]`` as objects, None where ``pos`` is -1."""
    at = nodes[np.maximum(pos, 0)].astype(object)
    at[pos < 0] = None
    return at


def _reasons(points: pd.DataFrame, source: np.ndarray, mh_id: np.ndarray,
             entry_id: np.ndarray, private_ft: np.ndarray) -> np.ndarray:
    """The ``reason`` column: why a row has its control manhole, or none."""
    n = len(points)
    out = np.full(n, None, dtype=object)
    if "reason" in points:
        given = points["reason"].to_numpy(dtype=object)
        has = pd.notna(given)
        out[has] = given[has]
    main = points["main_id"].to_numpy(dtype=object)
    for i in np.flatnonzero(source == "private_main"):
        out[i] = (f"the building sewer runs {private_ft[i]:,.1f} ft through private main(s) "
                  f"from {main[i]} to {entry_id[i]}, where it enters the public sewer; the "
                  f"control manhole is the first public, active manhole from there")
    for i in np.flatnonzero((source == "unresolved") & pd.isna(out)):
        out[i] = (f"the lateral ends on private main {main[i]}, whose flow never enters the "
                  "public sewer (the private mains end, or run in a cycle, first)")
    none = pd.isna(mh_id) & np.isin(source, ("lateral", "projected", "private_main"))
    for i in np.flatnonzero(none):
        tail = "no public, active manhole downstream of the tap"
        out[i] = tail if out[i] is None else f"{out[i]}; but {tail}"
    return out


def control_manholes(
    town: Town | None,
    G: nx.MultiDiGraph,
    *,
    points: gpd.GeoDataFrame | None = None,
    index: DownstreamIndex | None = None,
    paths: bool | str = True,
) -> dict[str, Any]:
    """Control manhole, plant served and path length of every connection point.

    Parameters
    ----------
    town
        Loaded town; needed when ``points`` is not given, for the profile's
        sections and for owner-installed control manholes (the manholes
        layer's ``control_for``). Without it no owner manhole is applied and
        ``section`` is null.
    G
        Sewer graph.
    points
        Output of :func:`connection_points` (computed if None).
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.
    paths
        Also build the ``control_paths`` lines (skip for speed); ``"later"``
        (:data:`PATHS_LATER`): give instead, under ``make_control_paths``, a function
        that builds them from the index's arrays alone (the graph may go first).

    Returns
    -------
    dict
        ``control_manholes``: ``building_id, parcel_id, user_id, main_id,
        tap_distance_ft, edge_key`` (the graph edge tapped), ``tap_source`` (the
        connection point's own ``source``), ``control_manhole_id, plant_id, path_length_ft`` (tap to
        control manhole along the pipes, private and public, ft),
        ``plant_path_length_ft`` (tap to the outlet, ft), ``source`` (one of
        :data:`CONTROL_SOURCES`), ``entry_node_id`` (where the private mains
        of a ``private_main`` row enter the public sewer), ``private_length_ft``
        (ft along private mains from the tap to that node; 0 on a public
        main), ``reason``, ``section``, tap point geometry.
        ``control_paths``: the same ids, ``source`` and ``path_length_ft``
        with the line from the tap through any private mains to the control
        manhole (working CRS).
    """
    idx = DownstreamIndex.of(G, index)
    if points is None:
        if town is None:
            raise ConfigError("control_manholes needs a town or connection points")
        points = connection_points(town, G, index=idx)
    points = points.reset_index(drop=True)
    edge = edge_indices(idx, points)
    tap_ft = points["tap_distance_ft"].to_numpy(dtype=float)
    mh, mh_ft, out, out_ft, entry, private_ft = idx.connection_targets(
        edge, np.nan_to_num(tap_ft))
    nodes = idx.nodes
    mh_id, plant, entry_id = (_node_or_none(nodes, pos) for pos in (mh, out, entry))
    # one object per distinct text (Arrow text as objects is a string per row)
    codes, kinds = pd.factorize(points["source"], use_na_sentinel=True)
    source = np.append(np.asarray(kinds, dtype=object), "unresolved")[codes]
    # a tap on a private main whose flow never enters the public sewer
    lost = (source == "private_main") & (entry < 0)
    source[lost] = "unresolved"
    reason = _reasons(points, source, mh_id, entry_id, private_ft)
    cm = None if town is None else town.profile.control_manhole
    section = np.full(len(points), None if cm is None else cm.section, dtype=object)
    owner, owner_by = owner_rows(points, owner_manholes(town))
    own = pd.notna(owner)
    if own.any() and cm is not None:
        sec_k = cm.owner_manhole_section or cm.section
        for i in np.flatnonzero(own):
            text = (f"owner-installed control manhole {owner[i]} in the building sewer "
                    f"(manholes.control_for = {owner_by[i]}), {sec_k}")
            reason[i] = text if pd.isna(reason[i]) or source[i] == "private_main" \
                else f"{text}; {reason[i]}"
        mh_id[own] = owner[own]
        mh_ft[own] = np.nan
        mh[own] = -1  # not a node of the chain: no path drawn
        source[own] = "owner_manhole"
        section[own] = sec_k
    result = gpd.GeoDataFrame(
        {
            "building_id": held_values(points["building_id"]),
            "parcel_id": held_values(points["parcel_id"]),
            "user_id": held_values(points["user_id"]),
            "main_id": held_values(points["main_id"]),
            "tap_distance_ft": tap_ft,
            "edge_key": held_values(points["edge_key"]),
            "tap_source": held_values(points["source"]),
            "control_manhole_id": mh_id,
            "plant_id": plant,
            "path_length_ft": mh_ft,
            "plant_path_length_ft": out_ft,
            "source": source,
            "entry_node_id": entry_id,
            "private_length_ft": private_ft,
            "reason": reason,
            "section": section,
        },
        geometry=points.geometry.to_numpy(),
        crs=idx.crs,
    )
    nomh = (edge >= 0) & pd.isna(mh_id)
    if nomh.any() and town is not None:
        town.report.add_once(
            "no_control_manhole", "warning",
            f"{int(nomh.sum())} connection point(s) reach no public active manhole downstream",
            layer="mains",
        )
    out_layers: dict[str, Any] = {"control_manholes": result}
    if paths:
        make = _paths_maker(Chains.of(idx), idx.crs, edge, tap_ft, points.geometry.to_numpy(),
                            mh, result)
        if paths == PATHS_LATER:
            out_layers["make_control_paths"] = make
        else:
            out_layers["control_paths"] = make()
    return out_layers


#: ``paths`` of :func:`control_manholes`: the paths' lines made when asked.
PATHS_LATER = "later"


def _paths_maker(chains: Chains, crs: Any, edge: np.ndarray, tap_ft: np.ndarray,
                 taps: np.ndarray, mh: np.ndarray, result: gpd.GeoDataFrame) -> Any:
    """A function making the ``control_paths`` layer: from each tap along its edge and
    the primary chain to its control manhole (node ``mh``, -1: no line)."""

    def make() -> gpd.GeoDataFrame:
        e = np.maximum(edge, 0)
        length = chains.edges.length_ft[e]
        frac = np.where(length > 0, np.nan_to_num(tap_ft) / length, 0.0)
        lines = path_lines(chains, np.where(edge >= 0, edge, -1), np.clip(frac, 0, 1), taps,
                           mh)
        # a selection, not a copy: pandas copies on write, so a change to either
        # layer later leaves the other as it is
        cp = result[["building_id", "parcel_id", "user_id", "control_manhole_id",
                     "path_length_ft", "source"]]
        return gpd.GeoDataFrame(cp, geometry=gpd.GeoSeries(lines, crs=crs), crs=crs)

    return make
