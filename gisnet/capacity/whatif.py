"""What one proposed connection changes downstream, and the approvals it triggers.

:func:`whatif` adds a proposed average flow at a connection point and
recomputes only the pipes downstream of it from a stored
:class:`~gisnet.capacity.pipes.CapacityResult` (the result is not modified):
the flow share reaching each pipe is propagated in topological order, then
peak flow and utilization are worked again for those pipes alone, as a full
recomputation would. :func:`approvals` applies the profile's ``[[approvals]]``
rules to the proposal.

Units: flows in gpd, plant flows in MGD.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from ..errors import ConfigError, NotFoundError, TopologyError
from ..rules import exceeds
from ..tracing import DownstreamIndex, trace_downstream
from ..units import MGD_TO_GPD
from .formulas import peaking_factor
from .pipes import CapacityResult
from .plants import cannot_say

__all__ = ["PLANT_DELTA_COLUMNS", "WhatIfResult", "approvals", "whatif"]

log = logging.getLogger(__name__)

#: Columns of :attr:`WhatIfResult.plants`.
PLANT_DELTA_COLUMNS = [
    "plant_id", "design_flow_mgd", "basis", "window_basis", "window", "avg_flow_mgd_before",
    "avg_flow_mgd_after",
    "ratio_before", "ratio_after", "over_threshold_before", "over_threshold_after",
    "crosses_threshold", "missing_months", "section"]


@dataclass
class WhatIfResult:
    """What one proposed connection changes downstream.

    Attributes
    ----------
    flow_gpd, industrial
        The proposed average flow (gpd) and whether it is industrial wastewater.
    connection
        The connection point: ``parcel_id, main_id, edge_key, x, y,
        tap_distance_ft, source``.
    control_manhole
        First public, active manhole downstream of the connection point.
    pipes
        Every downstream pipe that receives the flow, in flow order, with
        ``*_before`` / ``*_after`` flows and utilization (working CRS).
    crossings
        Main ids of the pipes that go from at or below the threshold to over it.
    plants
        Plants reached: ratio before and after, over before and after, on the
        same flow as the ``plants`` layer (the profile's ``capacity.plant_basis``:
        ``window_basis`` and the months in ``window``).
    plant_crossings
        Plant ids that go from at or below the plant threshold to over it.
    approvals
        Approvals and reviews the profile's rules trigger: ``id, trigger,
        authority, section, text, reason``.
    threshold
        The pipes' utilization threshold used (profile, 0.80).
    notes
        Anything the engineer should know (cycles crossed, splits).
    """

    flow_gpd: float
    industrial: bool
    connection: dict[str, Any]
    control_manhole: str | None
    pipes: gpd.GeoDataFrame
    crossings: list[str]
    plants: pd.DataFrame
    plant_crossings: list[str]
    approvals: list[dict[str, Any]]
    threshold: float
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (pipes without geometry)."""
        pipes = pd.DataFrame(self.pipes.drop(columns="geometry", errors="ignore"))
        return {
            "flow_gpd": self.flow_gpd,
            "industrial": self.industrial,
            "connection": self.connection,
            "control_manhole": self.control_manhole,
            "threshold": self.threshold,
            "pipes": _records(pipes),
            "crossings": list(self.crossings),
            "plants": _records(self.plants),
            "plant_crossings": list(self.plant_crossings),
            "approvals": list(self.approvals),
            "notes": list(self.notes),
        }


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict(orient="records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and not np.isfinite(v):
                v = None
            clean[k] = v
        out.append(clean)
    return out


def _float(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


# --------------------------------------------------------------------------- where


def _locate(town: Any, G: nx.MultiDiGraph, result: CapacityResult, index: DownstreamIndex,
            parcel_id: Any, point: Any, crs: Any) -> dict[str, Any]:
    """The connection point of a parcel (its first building's, as
    :mod:`gisnet.tracing` takes it) or of a point projected onto the nearest main."""
    if (parcel_id is None) == (point is None):
        raise ConfigError("give exactly one of a parcel id or a point")
    if parcel_id is not None:
        pid = str(parcel_id)
        pts = result.points
        sel = pts[(pts["parcel_id"].astype("string") == pid)
                  & (pts["user_id"].isna() if "user_id" in pts else True)]
        if sel.empty:
            if pid not in set(result.flows["parcel_id"]):
                raise NotFoundError(f"no parcel {pid}", layer="parcels", feature=pid)
            raise NotFoundError(f"parcel {pid} has no connection point on an eligible main",
                                layer="parcels", feature=pid)
        tapped = sel[sel["edge_key"].notna()]
        if tapped.empty:  # every building sewer of the parcel is unresolved
            reasons = sel["reason"].dropna() if "reason" in sel else sel.iloc[:0, 0]
            why = reasons.iloc[0] if len(reasons) else "its building sewer reaches no main"
            raise NotFoundError(f"parcel {pid} has no connection point: {why}",
                                layer="parcels", feature=pid)
        row = tapped.iloc[0]  # first connected building in layer order, as gisnet.tracing does
        geom = row.get("geometry")
        return {
            "parcel_id": pid,
            "building_id": None if pd.isna(row.get("building_id")) else str(row["building_id"]),
            "main_id": str(row.get("main_id", "")),
            "edge_key": str(row["edge_key"]),
            "x": None if geom is None else float(geom.x),
            "y": None if geom is None else float(geom.y),
            "tap_distance_ft": _float(row.get("tap_distance_ft")),
            "source": row.get("source", "projected"),
        }
    tr = trace_downstream(town, G, point=point, crs=crs, index=index)
    cp = tr["connection"].iloc[0]
    geom = cp.get("geometry")
    return {
        "parcel_id": None,
        "building_id": None,
        "main_id": str(cp.get("main_id")),
        "edge_key": str(cp.get("edge_key")),
        "x": None if geom is None else float(geom.x),
        "y": None if geom is None else float(geom.y),
        "tap_distance_ft": _float(cp.get("tap_distance_ft")),
        "source": "point",
    }


# --------------------------------------------------------------------------- propagation


@dataclass
class _Reach:
    """The share of the added flow reaching each downstream edge and node."""

    edge_share: dict[int, float]
    node_share: dict[int, float]
    nodes: list[int]
    notes: list[str]


def _propagate(result: CapacityResult, e0: int) -> _Reach:
    """Carry a unit of flow entering edge ``e0`` downstream in topological order
    (a heap by level), splitting it as the accumulation did."""
    net, acc = result.network, result.accumulation
    notes: list[str] = []
    edge_share: dict[int, float] = {}
    node_share: dict[int, float] = {}
    start = int(acc.rep[net.u[e0]])
    if acc.computed[e0]:
        edge_share[e0] = 1.0
        start = int(acc.rep[net.v[e0]])
    elif acc.in_cycle[e0]:
        notes.append(f"the connection is on pipe {net.main_id[e0]}, inside a cycle: "
                     "its own flow is not computed")
    else:
        raise TopologyError(f"pipe {net.main_id[e0]} carries no sanitary flow",
                            layer="mains", feature=net.main_id[e0])
    node_share[start] = 1.0
    heap = [(int(acc.node_level[start]), start)]
    reached: list[int] = []
    while heap:
        _, x = heapq.heappop(heap)
        share = node_share[x]
        reached.append(x)
        es = acc.out_edges(x)
        if es.size > 1:
            notes.append(f"the flow splits at node {net.nodes[x]} between pipes "
                         f"{', '.join(net.keys[es])} by full-flow capacity")
        for e in es:
            s = share * float(acc.frac[e])
            edge_share[int(e)] = s
            y = int(acc.rep[net.v[e]])
            if y in node_share:
                node_share[y] += s
            else:
                node_share[y] = s
                heapq.heappush(heap, (int(acc.node_level[y]), y))
    cyc_reps = {int(acc.rep[net.u[e]]) for e in np.flatnonzero(acc.in_cycle)}
    for x in reached:
        if x in cyc_reps:
            notes.append(f"the flow passes through a cycle at node {net.nodes[x]}: "
                         "the cycle's pipes are not computed")
    return _Reach(edge_share, node_share, reached, notes)


def _pipe_rows(result: CapacityResult, reach: _Reach, delta: np.ndarray, G: nx.MultiDiGraph
               ) -> tuple[gpd.GeoDataFrame, list[str]]:
    """The downstream pipes before and after, in flow order, and notes."""
    net, acc = result.network, result.accumulation
    flow_cfg = result.profile.flow
    idx = np.fromiter(reach.edge_share, dtype=np.int64, count=len(reach.edge_share))
    share = np.fromiter(reach.edge_share.values(), dtype="float64", count=len(reach.edge_share))
    order = np.argsort(acc.node_level[acc.rep[net.u[idx]]], kind="stable")
    idx, share = idx[order], share[order]
    before = acc.edge_flow[idx]
    after = before + share[:, None] * delta[None, :]
    cap = result.capacity_gpd[idx]
    pk_b = before[:, 0] * peaking_factor(before[:, 2], flow_cfg) + before[:, 1]
    pk_a = after[:, 0] * peaking_factor(after[:, 2], flow_cfg) + after[:, 1]
    thr = float(result.profile.capacity.utilization_threshold)
    with np.errstate(invalid="ignore", divide="ignore"):
        ub, ua = pk_b / cap, pk_a / cap
    ob, oa = exceeds(ub, thr), exceeds(ua, thr)
    crs_g = G.graph.get("crs")
    pipes = gpd.GeoDataFrame({
        "order": np.arange(len(idx)),
        "main_id": net.main_id[idx],
        "edge_key": net.keys[idx],
        "share": share,
        "capacity_gpd": cap,
        "avg_flow_gpd_before": before[:, 0] + before[:, 1],
        "avg_flow_gpd_after": after[:, 0] + after[:, 1],
        "peak_flow_gpd_before": pk_b,
        "peak_flow_gpd_after": pk_a,
        "utilization_before": ub,
        "utilization_after": ua,
        "over_threshold_before": ob,
        "over_threshold_after": oa,
        "crosses_threshold": ~ob & oa,
    }, geometry=gpd.GeoSeries([net.geometry[i] for i in idx], crs=crs_g), crs=crs_g)
    notes = []
    if np.any(~np.isfinite(cap)):
        bad = net.main_id[idx][~np.isfinite(cap)]
        notes.append(f"no capacity known for downstream pipe(s) {', '.join(bad[:10])}")
    return pipes, notes


def _plant_rows(result: CapacityResult, reach: _Reach, flow_gpd: float) -> pd.DataFrame:
    """The plants the flow reaches, their ratio to design flow before and after.

    "Before" is the plant's flow in the ``plants`` layer, on the profile's
    ``capacity.plant_basis`` (by default the latest complete months); the
    proposal's average flow is added to it.
    """
    net, acc = result.network, result.accumulation
    cap = result.profile.capacity
    pthr = float(cap.plant_threshold)
    strict = bool(cap.plant_strict)
    reached = {int(x): float(reach.node_share[x]) for x in reach.nodes}
    rows = []
    for rec in result.plants.itertuples(index=False):
        if rec.node_id is None or rec.node_id not in net.node_idx:
            continue
        r = int(acc.rep[net.node_idx[rec.node_id]])
        if r not in reached:
            continue
        add_mgd = reached[r] * flow_gpd / MGD_TO_GPD
        base = float(rec.avg_flow_mgd)
        design = float(rec.design_flow_mgd)
        rb = base / design if design > 0 else float("nan")
        ra = (base + add_mgd) / design if design > 0 else float("nan")
        missing = str(getattr(rec, "missing_months", "") or "")
        over_b: bool | None = None if missing else exceeds(rb, pthr, strict)
        over_a: bool | None = None if missing else exceeds(ra, pthr, strict)
        rows.append({
            "plant_id": rec.plant_id, "design_flow_mgd": design, "basis": rec.basis,
            "window_basis": rec.window_basis, "window": rec.window,
            "avg_flow_mgd_before": base, "avg_flow_mgd_after": base + add_mgd,
            "ratio_before": rb, "ratio_after": ra, "over_threshold_before": over_b,
            "over_threshold_after": over_a,
            "crosses_threshold": bool(over_b is False and over_a),
            "missing_months": missing, "section": rec.section,
        })
    return pd.DataFrame(rows, columns=PLANT_DELTA_COLUMNS)


# --------------------------------------------------------------------------- what-if


def whatif(town: Any, G: nx.MultiDiGraph, result: CapacityResult, *, parcel_id: Any = None,
           point: Any = None, crs: Any = None, flow_gpd: float, industrial: bool = False,
           index: DownstreamIndex | None = None, preliminary_treatment: bool = False,
           cooling_water: bool = False) -> WhatIfResult:
    """What a proposed connection changes, recomputing only the downstream path.

    Parameters
    ----------
    town, G
        The town and its sewer graph (the same as for ``result``).
    result
        The precomputed :func:`gisnet.capacity.compute_capacity` result; it is
        not modified. Its profile gives the thresholds, peaking and approvals.
    parcel_id
        The parcel to connect (at its connection point), or
    point, crs
        An ``(x, y)`` point and its CRS (default the town's working CRS).
    flow_gpd
        Proposed average daily flow, gpd (> 0).
    industrial
        Industrial wastewater: added without peaking and triggers the
        profile's ``industrial`` approvals (a connection that is not triggers
        the ``domestic`` ones: Berlin's 30-day application).
    preliminary_treatment
        Preliminary treatment is required (Poughkeepsie § 168-22.5G(4), in the
        opinion of the Superintendent): triggers ``preliminary_treatment``
        approvals (§ 168-22.5G(4)(d), plans to NYSDEC). Not given, a flow the
        local review covers gets a note that they would apply.
    cooling_water
        The discharge includes industrial cooling water (trigger ``cooling_water``,
        § 168-22.2E: specific approval of the Town Board).
    index
        The :class:`gisnet.tracing.DownstreamIndex` of ``G`` (default
        ``result.index``): the control manhole and the point's location.

    Returns
    -------
    WhatIfResult

    Raises
    ------
    NotFoundError
        Unknown parcel, or no connection point.
    ConfigError
        Flow not positive, neither/both of parcel and point, or an index of
        another graph.
    """
    if not (flow_gpd is not None and np.isfinite(flow_gpd) and flow_gpd > 0):
        raise ConfigError(f"flow_gpd must be a positive number, not {flow_gpd!r}")
    flow_gpd = float(flow_gpd)
    if index is None:
        index = result.index
    if index.G is not G:
        raise ConfigError("the DownstreamIndex given was built for another graph")
    net = result.network
    conn = _locate(town, G, result, index, parcel_id, point, crs)
    e0 = net.key_idx.get(conn["edge_key"])
    if e0 is None:
        raise NotFoundError(f"edge {conn['edge_key']} of the connection point is not in the graph",
                            layer="mains", feature=conn["edge_key"])
    # First public active manhole at or below the pipe's downstream end (the node
    # itself if it is one), as gisnet.tracing defines the control manhole.
    mh = index.first_manhole(net.nodes[int(net.v[e0])], include_self=True)
    control = None if mh is None else str(mh)
    delta = np.array([0.0, flow_gpd, 0.0]) if industrial else \
        np.array([flow_gpd, 0.0, flow_gpd / float(result.profile.flow.gpd_per_person)])

    reach = _propagate(result, e0)
    pipes, pipe_notes = _pipe_rows(result, reach, delta, G)
    crossings = [str(x) for x in pipes.loc[pipes["crosses_threshold"], "main_id"]]
    plants = _plant_rows(result, reach, flow_gpd)
    plant_crossings = [str(p) for p in plants.loc[plants["crosses_threshold"], "plant_id"]]
    notes = reach.notes + pipe_notes
    if plants.empty:
        notes.append("the flow reaches no treatment plant in the plants layer")
    triggered = approvals(result.profile, flow_gpd, industrial, plants,
                          preliminary_treatment=preliminary_treatment,
                          cooling_water=cooling_water)
    notes += conditional_notes(result.profile, flow_gpd, triggered, preliminary_treatment)
    return WhatIfResult(
        flow_gpd=flow_gpd, industrial=bool(industrial), connection=conn,
        control_manhole=control, pipes=pipes, crossings=crossings,
        plants=plants, plant_crossings=plant_crossings,
        approvals=triggered,
        threshold=float(result.profile.capacity.utilization_threshold),
        notes=list(dict.fromkeys(notes)),
    )


def approvals(profile: Any, flow_gpd: float, industrial: bool, plants: pd.DataFrame, *,
              preliminary_treatment: bool = False, cooling_water: bool = False
              ) -> list[dict[str, Any]]:
    """The profile's ``[[approvals]]`` a proposed connection triggers, with the reason.

    Parameters
    ----------
    profile
        The jurisdiction profile (``profile.approvals``,
        ``profile.capacity.plant_threshold``).
    flow_gpd
        The proposed average flow, gpd. Triggers ``flow_over`` and
        ``review_flow_over`` when strictly over the rule's ``flow_gpd``.
    industrial
        Industrial wastewater (trigger ``industrial``; otherwise ``domestic``).
    preliminary_treatment, cooling_water
        Preliminary treatment is required; industrial cooling water is discharged
        (triggers of the same names).
    plants
        The plants reached (:attr:`WhatIfResult.plants`): trigger
        ``plant_over`` when one is over its threshold before or after; where
        one's latest months are missing (``missing_months``) gisnet cannot say,
        and the approval is listed with that reason.

    Returns
    -------
    list of dict
        ``id, trigger, authority, section, text, reason``, in profile order
        (and ``lead_days`` where the rule sets the days before the connection
        by which to apply).
    """
    plant_thr = float(profile.capacity.plant_threshold)
    out = []
    for a in profile.approvals:
        trig = str(a.trigger)
        reason = None
        if trig in ("flow_over", "review_flow_over"):
            if a.flow_gpd is not None and flow_gpd > float(a.flow_gpd):
                reason = f"{flow_gpd:,.0f} gpd is over {float(a.flow_gpd):,.0f} gpd"
        elif trig == "plant_over":
            over = plants[plants["over_threshold_before"].fillna(False).astype(bool)
                          | plants["over_threshold_after"].fillna(False).astype(bool)]
            unknown = plants[plants["missing_months"].fillna("").astype(str) != ""]
            if not len(over) and len(unknown):
                p = unknown.iloc[0]
                reason = cannot_say(p["plant_id"], str(p["missing_months"]),
                                    int(profile.capacity.plant_months))
            elif len(over):
                p = over.iloc[0]
                when = "already operates" if p["over_threshold_before"] else "would operate"
                months = (f", {p['window_basis']} months {p['window']}"
                          if p.get("window") else f", by {p['basis']}")
                reason = (f"plant {p['plant_id']} {when} in excess of {plant_thr:.0%} of design "
                          f"flow ({p['ratio_before']:.1%} before, {p['ratio_after']:.1%} after"
                          f"{months})")
        elif trig == "industrial":
            if industrial:
                reason = "industrial wastewater"
        elif trig == "domestic":
            if not industrial:
                reason = "a service producing domestic wastewater only (not industrial)"
        elif trig == "preliminary_treatment":
            if preliminary_treatment:
                reason = "preliminary treatment is required"
        elif trig == "cooling_water":
            if cooling_water:
                reason = "the discharge includes industrial cooling water"
        else:
            log.warning("approval %s has unknown trigger %r", a.id, trig)
            continue
        if reason:
            entry = {"id": a.id, "trigger": trig, "authority": a.authority,
                     "section": a.section, "text": a.text, "reason": reason}
            if a.lead_days is not None:
                entry["reason"] = (f"{reason}: apply at least {a.lead_days} days before the "
                                   "service connection")
                entry["lead_days"] = a.lead_days
            out.append(entry)
    return out


def conditional_notes(profile: Any, flow_gpd: float, triggered: list[dict[str, Any]],
                      preliminary_treatment: bool) -> list[str]:
    """Approvals that hang on a decision not given: where the local review covers the
    flow but preliminary treatment was not said to be required, the plans approval
    (Poughkeepsie § 168-22.5G(4)(d)) applies only if the reviewer requires it."""
    if preliminary_treatment or not any(a["trigger"] == "review_flow_over" for a in triggered):
        return []
    return [f"if preliminary treatment is required ({a.section}), {a.text} "
            f"({a.authority})" for a in profile.approvals_for("preliminary_treatment")]
