"""Capacity and utilization of every pipe: :func:`compute_capacity` and :class:`CapacityResult`.

The stages, in order:

1. slope (from inverts, else stored) and Manning full-flow capacity
   (:mod:`.formulas`);
2. parcel flows (:func:`gisnet.flows.parcel_flows`) attached at the connection
   points (:func:`.network.edge_inflows`), or at the node a parcel's
   ``outlet_node`` names (:func:`.network.node_inflows`: an imported SWMM
   [DWF] inflow enters at its node, as in SWMM);
3. accumulation down the graph (:func:`.network.accumulate`);
4. peak flow (the profile's peaking on the domestic part), utilization, the
   threshold flags (:func:`gisnet.rules.exceeds`) and the per-pipe flags;
5. the plants layer (:func:`.plants.plant_layer`).

Units: diameters in inches, lengths in feet, slopes in ft/ft, flows in gpd,
capacities in gpd and cfs, velocities in ft/s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..flows import parcel_flows
from ..graph.table import GraphTable
from ..report import Report
from ..rules import exceeds
from ..tracing import DownstreamIndex, connection_points
from ..units import CFS_TO_GPD
from .diameters import ASSUME_LARGEST_UPSTREAM, assume_diameters
from .formulas import min_slope_ft_per_ft, peaking_factor
from .monthly_increase import monthly_increase_layer
from .network import (
    Accumulation,
    Network,
    accumulate,
    edge_inflows,
    graph_arrays,
    node_inflows,
    parcels_at_nodes,
    sanitary_flow_edges,
)
from .plants import plant_layer
from .sections import edge_sections, full_flow_cfs
from .splits import split_rule

__all__ = ["PIPE_FLAGS", "CapacityResult", "capacity_status", "compute_capacity"]

log = logging.getLogger(__name__)

#: Flags of the ``pipes_capacity`` layer's ``flags`` column, in the order written.
PIPE_FLAGS = ("no_slope", "adverse_slope", "flat_slope", "no_diameter", "diameter_assumed",
              "force_main", "inactive", "no_sanitary_flow", "cycle", "low_velocity",
              "below_min_slope", "flow_split")
#: ``capacity_status`` of a pipe whose full-flow capacity was computed.
COMPUTED = "computed"
#: ``capacity_status`` of a computed pipe whose diameter was assumed.
COMPUTED_ASSUMED = "computed (diameter assumed: largest upstream)"


def _plain(v: Any) -> Any:
    """A table value as a plain Python value (None for missing)."""
    if isinstance(v, np.generic):
        v = v.item()
    return None if pd.isna(v) else v


@dataclass
class CapacityResult:
    """Capacity of every pipe and plant, and what the what-if needs to reuse.

    Attributes
    ----------
    pipes
        Layer ``pipes_capacity`` (one row per graph edge, working CRS).
    plants
        Layer ``plants``.
    splits
        Nodes where the flow is split between outgoing pipes.
    cycles
        Main ids of each cycle (pipes not computed).
    report
        Findings of the capacity run (cycles, splits, unusable pipes).
    points
        The connection points used.
    flows
        Parcel flows used (:func:`gisnet.flows.parcel_flows`).
    index
        The :class:`gisnet.tracing.DownstreamIndex` of the graph (the what-if's
        control manhole and point location).
    profile
        The profile the result was computed with (thresholds and peaking the
        what-if reuses).
    network, accumulation
        The graph arrays and accumulated flows (:mod:`gisnet.capacity.network`).
    capacity_gpd
        Full-flow capacity of each edge of ``network``, gpd (NaN unknown).
    plant_increase
        Layer ``plant_increase``: the plant's monthly increase of each constituent
        against the previous year (Poughkeepsie § 168-22.5D,
        :func:`gisnet.capacity.monthly_increase.monthly_increase_layer`).
    plant_increase_note
        Why that rule was not checked (no such rule in the profile, no analyses in
        the plant-flow table); None when it was.
    """

    pipes: gpd.GeoDataFrame
    plants: gpd.GeoDataFrame
    splits: pd.DataFrame
    cycles: list[list[str]]
    report: Report
    points: pd.DataFrame
    flows: pd.DataFrame
    index: DownstreamIndex = field(repr=False)
    profile: Any = field(repr=False)
    network: Network = field(repr=False)
    accumulation: Accumulation = field(repr=False)
    capacity_gpd: np.ndarray = field(repr=False)
    plant_increase: gpd.GeoDataFrame | None = field(default=None, repr=False)
    plant_increase_note: str | None = None

    def layers(self) -> dict[str, gpd.GeoDataFrame]:
        """The result layers for :func:`gisnet.io.write_results`."""
        out = {"pipes_capacity": self.pipes, "plants": self.plants}
        if self.plant_increase is not None:
            out["plant_increase"] = self.plant_increase
        return out

    def __repr__(self) -> str:
        from ..results import rows_text, short_repr

        p = self.totals.get("pipes", {})
        lines = [f"pipes {p.get('pipes', 0)}: over threshold {p.get('over_threshold', 0)}, "
                 f"surcharged {p.get('surcharged', 0)}, no capacity {p.get('no_capacity', 0)}, "
                 f"capacity unknown {p.get('capacity_unknown', 0)}"]
        pl = self.plants
        if pl is not None and len(pl) and "ratio" in pl.columns:
            lines.append("plants: " + ", ".join(
                f"{pid} {r:.1%} of design flow" if pd.notna(r) else
                f"{pid} cannot say: months missing {mm}" if mm else f"{pid} ratio unknown"
                for pid, r, mm in zip(pl["plant_id"], pl["ratio"],
                                      pl["missing_months"].fillna(""), strict=True)))
        lines.append(f"cycles {len(self.cycles)}, findings {len(self.report)}")
        lines.append("layers: " + rows_text(self.layers()))
        return short_repr("CapacityResult", lines)

    @property
    def totals(self) -> dict[str, Any]:
        """Headline figures: ``pipes`` (pipes, over_threshold, surcharged,
        no_capacity: a zero or adverse slope, capacity_unknown: no diameter or no
        slope, diameter_assumed) and ``plants`` (each plant's flow against design flow);
        a key is left out when its layer is empty."""
        out: dict[str, Any] = {}
        pc = self.pipes
        if pc is not None and len(pc):
            status = pc["capacity_status"].astype(str)
            out["pipes"] = {
                "pipes": len(pc),
                "over_threshold": int(pc["over_threshold"].fillna(False).astype(bool).sum()),
                "surcharged": int(pc["surcharged"].fillna(False).astype(bool).sum()),
                "no_capacity": int(status.str.startswith("none:").sum()),
                "capacity_unknown": int(status.str.startswith("unknown").sum()),
                "diameter_assumed": int((status == COMPUTED_ASSUMED).sum()),
            }
        pl = self.plants
        if pl is not None and len(pl):
            out["plants"] = [
                {k: _plain(v) for k, v in row.items()}
                for row in pl[["plant_id", "design_flow_mgd", "avg_flow_mgd", "ratio",
                               "over_threshold", "basis", "missing_months"]].to_dict("records")
            ]
        return out

    @property
    def cfg(self) -> dict[str, Any]:
        """The profile values the result used, by name (``utilization_threshold``,
        ``deficient``, ``surcharged``, ``plant_threshold``, ``gpd_per_person``...).

        A plain view of ``profile.capacity`` and ``profile.flow``; new code reads
        those by attribute.
        """
        cap, flow = self.profile.capacity, self.profile.flow
        return {
            "manning_n": cap.manning_n, "utilization_threshold": cap.utilization_threshold,
            "deficient": cap.deficient, "surcharged": cap.surcharged,
            "plant_threshold": cap.plant_threshold, "plant_months": cap.plant_months,
            "plant_strict": cap.plant_strict, "plant_section": cap.plant_section,
            "min_velocity_fps": cap.min_velocity_fps, "gpd_per_person": flow.gpd_per_person,
            "gpd_per_pe": flow.gpd_per_pe, "peaking_formula": flow.peaking_formula,
            "peaking_cap": flow.peaking_cap, "peaking_min": flow.peaking_min,
        }


def _manning_n(town: Any, net: Network) -> np.ndarray:
    """Manning n of every edge: the profile's design n, or (when the town asks,
    ``settings.manning_n_by_material``) the as-built n of the pipe's material."""
    cap = town.profile.capacity
    n_arr = np.full(len(net.keys), float(cap.manning_n))
    by_material = {str(k).strip().upper(): float(v)
                   for k, v in dict(cap.manning_n_material or {}).items()}
    if town.settings.manning_n_by_material and by_material:
        mat = pd.Series(net.material, dtype="string").str.strip().str.upper()
        n_mat = mat.map(by_material).to_numpy(dtype="float64", na_value=np.nan)
        n_arr = np.where(np.isfinite(n_mat), n_mat, n_arr)
    return n_arr


def _report_flows(report: Report, town: Any, flows: pd.DataFrame) -> None:
    """Finding ``parcel_flow_unknown``: sewered parcels with no basis for a flow."""
    no_basis = flows["sewered"].to_numpy(dtype=bool) & (flows["basis"] == "none").to_numpy()
    if not no_basis.any():
        return
    ids = flows["parcel_id"].to_numpy(dtype=object)[no_basis]
    parcels = town.layers["parcels"]
    uses = sorted({str(x) for x in parcels.loc[no_basis, "land_use"].dropna()
                   if str(x).strip()}) if "land_use" in parcels else []
    report.add("parcel_flow_unknown", "warning",
               f"{len(ids)} sewered parcel(s) have no metered flow, bedrooms, dwelling "
               "units or a land use in the profile's [flow.land_use_gpd] and count as "
               "0 gpd" + (f" (land uses not in the table: {', '.join(uses[:20])})"
                          if uses else "") + f": {', '.join(map(str, ids[:10]))}",
               layer="parcels", feature_id=",".join(map(str, ids[:200])))


def _local_inflow(report: Report, town: Any, net: Network, points: pd.DataFrame,
                  flows: pd.DataFrame) -> np.ndarray:
    """(m, 3) domestic gpd, industrial gpd and population tapped into each edge;
    finding ``unknown_edge`` for points naming edges not in the graph."""
    inflow = edge_inflows(town, points, flows)
    local = np.zeros((len(net.keys), 3))
    get = net.key_idx.get
    idx = np.fromiter((get(k, -1) for k in inflow.index.to_numpy(dtype=object)), np.int64,
                      len(inflow))
    unknown = inflow.index[idx < 0]
    if len(unknown):
        report.add("unknown_edge", "warning",
                   f"{len(unknown)} connection point(s) name edges not in the graph: "
                   f"{', '.join(map(str, unknown[:10]))}", layer="mains",
                   feature_id=",".join(map(str, unknown[:50])))
    ok = idx >= 0
    local[idx[ok]] = inflow.to_numpy()[ok]
    return local


def _node_inflow(report: Report, town: Any, net: Network, points: pd.DataFrame,
                 flows: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """Parcels whose ``outlet_node`` names a node of the graph enter the network there:
    the connection points left to tap the pipes (those parcels' own taken out; a
    user's process flow stays at its point) and the (n, 3) inflow at each node.
    Said once (finding ``flow_at_node``); an ``outlet_node`` naming no node of the
    graph leaves the parcel at its connection point (finding ``outlet_node_unknown``)."""
    node_local = np.zeros((len(net.nodes), 3))
    at = parcels_at_nodes(town.layers.get("parcels"), net.nodes)
    if not len(at):
        return points, node_local
    known = at["known"].to_numpy(dtype=bool)
    if (~known).any():
        ids = at.loc[~known, "parcel_id"].astype(str).tolist()
        report.add("outlet_node_unknown", "warning",
                   f"{len(ids)} parcel(s) name an outlet_node that is no node of the sewer "
                   "graph; their flow enters at their connection point: "
                   + ", ".join(f"{i} ({n})" for i, n in zip(
                       ids[:10], at.loc[~known, "node_id"].astype(str), strict=False)),
                   layer="parcels", feature_id=",".join(ids[:200]))
    if not known.any():
        return points, node_local
    inflow = node_inflows(at, flows)
    by_name = {str(k): i for i, k in enumerate(net.nodes)}  # node ids as the parcels name them
    idx = np.array([by_name[str(x)] for x in inflow.index], dtype=np.int64)
    node_local[idx] = inflow.to_numpy()
    ids = at.loc[known, "parcel_id"].astype(str).tolist()
    report.add("flow_at_node", "info",
               f"{len(ids)} parcel(s) name the node where their flow enters the network "
               f"(outlet_node; {inflow['dom_gpd'].sum():,.0f} gpd in all): it is added at "
               "that node, so the pipes arriving there do not carry it and the links leaving "
               "it share it; their connection points tap no pipe", layer="parcels",
               feature_id=",".join(ids[:200]))
    if "parcel_id" in points:
        own = points["parcel_id"].astype("string").isin(set(ids)).fillna(False).to_numpy(bool)
        if "user_id" in points:
            own = own & points["user_id"].isna().to_numpy(bool)
        points = points[~own]
    return points, node_local


def _report_accumulation(report: Report, acc: Accumulation) -> None:
    """Findings ``cycle_not_computed`` and ``flow_split``."""
    for ids in acc.cycles:
        report.add("cycle_not_computed", "warning",
                   f"pipes {', '.join(ids)} form a cycle: their flows are not computed; "
                   "everything entering the cycle leaves by its outlets", layer="mains",
                   feature_id=",".join(ids))
    for row in acc.splits.itertuples():
        report.add("flow_split", "info",
                   f"flow at node {row.node_id} is split between pipes {row.main_ids} "
                   f"(fractions {row.fractions}, by {row.basis})", layer="mains",
                   feature_id=row.main_ids)


def _flags(masks: dict[str, np.ndarray], m: int) -> np.ndarray:
    """The ``flags`` column: the names of the masks set on each row, ``;``-joined."""
    flags = np.full(m, "", dtype=object)
    for name, mask in masks.items():
        if mask.any():
            flags[mask] = flags[mask] + (";" + name)
    has = flags != ""
    flags[has] = np.array([f[1:] for f in flags[has]], dtype=object)
    return flags


def _diameters(report: Report, town: Any, net: Network, flow_edge: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each edge's diameter (in), and the edges whose diameter was assumed: the town's
    ``assume_diameters`` (:mod:`.diameters`), said once as the finding ``diameter_assumed``."""
    choice = getattr(town.settings, "assume_diameters", None)
    if choice is None:
        return net.diameter_in, np.zeros(len(net.keys), dtype=bool)
    if choice != ASSUME_LARGEST_UPSTREAM:
        raise ConfigError(f"assume_diameters = {choice!r}: the one choice is "
                          f"{ASSUME_LARGEST_UPSTREAM!r}")
    known = edge_sections(town.layers.get("mains"), net.main_id, net.diameter_in).area_ft2 > 0
    diameter, assumed = assume_diameters(net, flow_edge, known)
    if assumed.any():
        ids = net.keys[assumed]
        report.add("diameter_assumed", "warning",
                   f"{len(ids)} pipe(s) without a diameter take the largest diameter upstream "
                   "of them for their capacity (assume_diameters = \"largest_upstream\" in "
                   f"the town file; flag diameter_assumed): {', '.join(ids[:10])}"
                   + (f" and {len(ids) - 10} more" if len(ids) > 10 else ""),
                   layer="mains", feature_id=",".join(ids[:200]))
    return diameter, assumed


def capacity_status(masks: dict[str, np.ndarray], cap_cfs: np.ndarray) -> np.ndarray:
    """The ``capacity_status`` column: ``computed`` (or ``computed (diameter assumed:
    largest upstream)``), ``none: adverse slope`` / ``none: flat slope`` (Manning
    gives no capacity whatever the diameter), ``unknown: no diameter``, ``unknown:
    no slope``, ``unknown: no diameter, no slope``, ``n/a: force main``, or
    ``unknown`` (a missing roughness or section)."""
    m = len(cap_cfs)
    known = np.isfinite(cap_cfs)
    out = np.full(m, "unknown", dtype=object)
    nd, ns = masks["no_diameter"], masks["no_slope"]
    out[nd] = "unknown: no diameter"
    out[ns] = "unknown: no slope"
    out[nd & ns] = "unknown: no diameter, no slope"
    out[masks["flat_slope"]] = "none: flat slope"
    out[masks["adverse_slope"]] = "none: adverse slope"
    out[known] = COMPUTED
    out[known & masks["diameter_assumed"]] = COMPUTED_ASSUMED
    out[masks["force_main"]] = "n/a: force main"
    return out


def _report_capacity(report: Report, town: Any, net: Network,
                     masks: dict[str, np.ndarray]) -> None:
    """Findings ``no_capacity_adverse_slope``, ``no_capacity_flat_slope`` (Manning gives
    none) and ``capacity_unknown_no_diameter``, ``capacity_unknown_no_slope``."""
    switch = getattr(town.settings, "assume_diameters", None)
    hint = {"no_diameter": " (nothing upstream has a diameter)" if switch else
            "; assume_diameters = \"largest_upstream\" in the town file gives such a pipe "
            "the largest diameter upstream of it"}
    for name, kind, what in (
            ("adverse_slope", "no_capacity_adverse_slope", "have no capacity (adverse slope)"),
            ("flat_slope", "no_capacity_flat_slope", "have no capacity (flat slope)"),
            ("no_diameter", "capacity_unknown_no_diameter", "capacity unknown: no diameter"),
            ("no_slope", "capacity_unknown_no_slope",
             "capacity unknown: no slope (no inverts, no stored slope)")):
        mask = masks[name]
        if name in ("no_diameter", "no_slope"):
            mask = mask & ~masks["adverse_slope"] & ~masks["flat_slope"]
        if mask.any():
            ids = net.keys[mask]
            report.add(kind, "warning",
                       f"{len(ids)} pipe(s) {what}: {', '.join(ids[:10])}"
                       + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
                       + hint.get(name, ""), layer="mains", feature_id=",".join(ids[:200]))


def compute_capacity(town: Any, G: nx.MultiDiGraph, *, points: pd.DataFrame | None = None,
                     index: DownstreamIndex | None = None,
                     table: GraphTable | None = None) -> CapacityResult:
    """Flows accumulated down the network against every pipe's and plant's capacity.

    Parameters
    ----------
    town
        The town (parcels, optional users and plants, profile, settings,
        ``plant_flows``).
    G
        The sewer graph (:func:`gisnet.graph.build_sewer_graph`).
    points
        Connection points (:func:`gisnet.tracing.connection_points`). The
        pipeline passes those it computed; built here when None.
    index
        The :class:`gisnet.tracing.DownstreamIndex` of ``G`` the pipeline
        computed; built here when None. Kept as ``result.index``.
    table
        The graph's :class:`~gisnet.graph.table.GraphTable` when ``G`` was just built
        (:func:`gisnet.graph.build.build_graph_parts`): the edges' values are read
        from it instead of from the graph's dictionaries.

    Returns
    -------
    CapacityResult
        ``.pipes`` (layer ``pipes_capacity``, one row per graph edge, working
        CRS): ``main_id, edge_key, from_node, to_node, diameter_in, length_ft,
        slope`` (ft/ft), ``slope_source`` (inverts | stored | none),
        ``manning_n, capacity_gpd, capacity_cfs`` (full flow, NaN when
        unknown), ``capacity_status`` (:func:`capacity_status`: computed, or why
        not), ``avg_flow_gpd, industrial_flow_gpd, peak_flow_gpd,
        population`` (persons upstream), ``peaking_factor, utilization,
        over_threshold, deficient, surcharged, velocity_fps`` (full flow),
        ``min_slope`` (ft/ft, NaN where the profile tabulates none),
        ``min_slope_ok`` (True where no minimum applies), ``computed`` (flows
        accumulated: False in cycles and for storm/inactive pipes) and
        ``flags`` (``;``-separated, :data:`PIPE_FLAGS`).
        ``.plants`` (layer ``plants``, :func:`gisnet.capacity.plants.plant_layer`).

    Raises
    ------
    ConfigError
        ``index`` was built for another graph, or the profile names a peaking
        formula that is not implemented.

    Notes
    -----
    Slope is ``(up_invert_ft - down_invert_ft) / length_ft`` when both inverts
    and the length exist, else the stored slope. A zero or adverse slope gives
    no capacity, no diameter or no slope an unknown one (NaN, a flag and
    ``capacity_status`` saying which); it is never floored. With the town's
    ``assume_diameters = "largest_upstream"`` a pipe without a diameter takes the
    largest one upstream of it (:mod:`.diameters`; flag ``diameter_assumed``).
    Peak flow = domestic average x peaking factor(upstream population) +
    industrial average. Utilization = peak / full-flow capacity;
    ``over_threshold``, ``deficient`` and ``surcharged`` are strict ``>``
    comparisons with the profile's 0.80 / 0.91 / 1.0, and ``below_min_slope``
    a strict ``<``; a value within :data:`gisnet.rules.LIMIT_RTOL` of its limit
    counts as equal to it (:func:`gisnet.rules.exceeds`).
    """
    if index is None:
        index = DownstreamIndex(G, table=table)
    elif index.G is not G:
        raise ConfigError("the DownstreamIndex given was built for another graph")
    if points is None:
        points = connection_points(town, G, index=index)
    cap = town.profile.capacity
    report = Report()
    net = graph_arrays(G, table)
    m = len(net.keys)

    # Slope and capacity.
    with np.errstate(invalid="ignore", divide="ignore"):
        inv_slope = (net.up_inv - net.down_inv) / net.length_ft
    from_inv = np.isfinite(inv_slope) & (net.length_ft > 0)
    slope = np.where(from_inv, inv_slope, net.stored_slope)
    slope_source = np.where(from_inv, "inverts",
                            np.where(np.isfinite(net.stored_slope), "stored", "none"))
    n_arr = _manning_n(town, net)
    flow_edge = sanitary_flow_edges(net)
    diameter, assumed = _diameters(report, town, net, flow_edge)
    sections = edge_sections(town.layers.get("mains"), net.main_id, diameter)
    cap_cfs = full_flow_cfs(sections.area_ft2, sections.radius_ft, slope, n_arr,
                            sections.barrels)
    cap_cfs = np.where(net.gravity, cap_cfs, np.nan)
    cap_gpd = cap_cfs * CFS_TO_GPD
    with np.errstate(invalid="ignore", divide="ignore"):
        velocity = cap_cfs / (sections.area_ft2 * sections.barrels)
    min_slope = min_slope_ft_per_ft(diameter, cap.min_slope_pct)

    # Flows.
    flows = parcel_flows(town)
    _report_flows(report, town, flows)
    taps, node_local = _node_inflow(report, town, net, points, flows)
    local = _local_inflow(report, town, net, taps, flows)
    stray = (local.sum(axis=1) > 0) & ~flow_edge
    if stray.any():
        report.add("flow_on_excluded_main", "warning",
                   f"{int(stray.sum())} pipe(s) that carry no sanitary flow (storm or inactive) "
                   "have connections; their flow is not carried",
                   layer="mains", feature_id=",".join(net.main_id[stray][:50]))
    rule = split_rule(town, net, cap_cfs, slope, n_arr, sections)
    acc = accumulate(net, local, flow_edge, cap_gpd, rule, node_local)
    _report_accumulation(report, acc)

    dom, ind, pop = acc.edge_flow[:, 0], acc.edge_flow[:, 1], acc.edge_flow[:, 2]
    pf = np.where(acc.computed, peaking_factor(pop, town.profile.flow), np.nan)
    avg = dom + ind
    peak = dom * pf + ind
    with np.errstate(invalid="ignore", divide="ignore"):
        util = peak / cap_gpd

    # Flags: one mask per flag, joined with ";" only where set.
    grav = net.gravity
    cnt = np.diff(acc.out_off)
    low_v = np.isfinite(velocity) & (velocity < float(cap.min_velocity_fps))
    ms_known = np.isfinite(min_slope) & np.isfinite(slope)
    below = ms_known & exceeds(min_slope, slope)
    masks = {
        "no_slope": grav & (slope_source == "none"),
        "adverse_slope": grav & np.isfinite(slope) & (slope < 0),
        "flat_slope": grav & np.isfinite(slope) & (slope == 0),
        "no_diameter": grav & ~(sections.area_ft2 > 0),
        "diameter_assumed": assumed,
        "force_main": ~grav,
        "inactive": ~flow_edge & ~net.active,
        "no_sanitary_flow": ~flow_edge & net.active,
        "cycle": acc.in_cycle,
        "low_velocity": low_v,
        "below_min_slope": below & (slope > 0),
        "flow_split": acc.computed & (cnt[acc.rep[net.u]] > 1),
    }
    flags = _flags(masks, m)
    is_split = masks["flow_split"]
    split_share = np.where(is_split, acc.frac, np.nan)
    node_basis = dict(zip(acc.splits["node_id"], acc.splits["basis"], strict=True))
    split_basis = np.full(m, "", dtype=object)
    for e in np.flatnonzero(is_split).tolist():
        split_basis[e] = node_basis.get(str(net.nodes[acc.rep[net.u[e]]]), "")
    status = capacity_status(masks, cap_cfs)
    _report_capacity(report, town, net, masks)

    thr = float(cap.utilization_threshold)
    over = exceeds(util, thr)
    defi = exceeds(util, float(cap.deficient))
    surc = exceeds(util, float(cap.surcharged))
    node_ids = np.array([str(x) for x in net.nodes], dtype=object)
    crs = G.graph.get("crs")
    pipes = gpd.GeoDataFrame({
        "main_id": net.main_id,
        "edge_key": net.keys,
        "from_node": node_ids[net.u] if m else np.array([], dtype=object),
        "to_node": node_ids[net.v] if m else np.array([], dtype=object),
        "diameter_in": diameter,
        "diameter_source": np.where(assumed, "largest upstream",
                                    np.where(np.isfinite(diameter), "data", "none")),
        "length_ft": net.length_ft,
        "slope": slope,
        "slope_source": slope_source,
        "manning_n": n_arr,
        "capacity_gpd": cap_gpd,
        "capacity_cfs": cap_cfs,
        "capacity_status": status,
        "avg_flow_gpd": avg,
        "industrial_flow_gpd": ind,
        "peak_flow_gpd": peak,
        "population": pop,
        "peaking_factor": pf,
        "utilization": util,
        "over_threshold": over,
        "deficient": defi,
        "surcharged": surc,
        "velocity_fps": velocity,
        "min_slope": min_slope,
        "min_slope_ok": np.where(ms_known, ~below, True) if m else np.array([], dtype=bool),
        "computed": acc.computed,
        "split_share": split_share,
        "split_rule": split_basis,
        "flags": flags,
    }, geometry=gpd.GeoSeries(net.geometry, crs=crs), crs=crs)

    plants = plant_layer(town, net, acc)
    increase, increase_note = monthly_increase_layer(town)
    log.info("capacity: %d pipes, %d over %.2f, %d cycles, %d splits", m, int(over.sum()), thr,
             len(acc.cycles), len(acc.splits))
    return CapacityResult(pipes=pipes, plants=plants, splits=acc.splits, cycles=acc.cycles,
                          report=report, points=points, flows=flows, index=index,
                          profile=town.profile, network=net, accumulation=acc,
                          capacity_gpd=cap_gpd, plant_increase=increase,
                          plant_increase_note=increase_note)
