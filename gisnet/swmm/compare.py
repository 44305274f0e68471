"""``gisnet check-swmm``: gisnet's flows and capacities against SWMM's own run.

:func:`run_swmm` runs an input file with pyswmm (the SWMM 5 engine of
swmm-toolkit) and returns each link's final (steady) flow, its largest depth
over full depth and whether it ran full; :func:`comparison_layer` joins that
with gisnet's ``pipes_capacity`` into the ``swmm_comparison`` layer, and
every flow difference above :data:`FLOW_RTOL` is a finding with its
explanation (a loop, a split, a non-gravity link or storage upstream).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from ..errors import GisnetError
from ..extras import needs_extra
from ..report import Report
from ..units import CFS_TO_GPD
from .exporting import SwmmExport

__all__ = ["COMPARISON_COLUMNS", "FLOW_RTOL", "SwmmRun", "below", "comparison_layer",
           "finished_errors", "run_swmm"]

#: Relative flow difference above which gisnet and SWMM disagree (1 %).
FLOW_RTOL = 0.01
#: Depth over full depth at which a conduit runs full (surcharged).
FULL = 0.999
COMPARISON_COLUMNS = ["main_id", "edge_key", "from_node", "to_node", "avg_flow_gpd",
                      "swmm_flow_gpd", "flow_diff_pct", "capacity_gpd", "utilization",
                      "avg_utilization", "swmm_capacity_ratio", "swmm_surcharged",
                      "explanation", "geometry"]


@dataclass
class SwmmRun:
    """What a SWMM run gave: per link ``flow_gpd`` (final step),
    ``max_depth_ratio``, ``surcharged``; the continuity errors (%)."""

    links: pd.DataFrame
    flow_routing_error_pct: float
    runoff_error_pct: float


def run_swmm(inp: str | Path, full_depth_ft: dict[str, float]) -> SwmmRun:
    """Run a SWMM model to its end and read every link.

    Parameters
    ----------
    inp
        The input file (its report and output files are written beside it).
    full_depth_ft
        Conduit name -> full depth (Geom1), for the capacity ratio.

    Raises
    ------
    GisnetError
        SWMM reports an input error (the message names it).
    """
    with needs_extra("swmm", "running SWMM (gisnet check-swmm)"):
        from pyswmm import Links, Simulation
        from pyswmm.swmm5 import SWMMException

    ratio: dict[str, float] = {}
    try:
        with Simulation(str(inp)) as sim:
            links = list(Links(sim))
            names = [lk.linkid for lk in links]
            depth_max = np.zeros(len(links))
            conduit = np.array([n in full_depth_ft for n in names])
            full = np.array([full_depth_ft.get(n, np.nan) for n in names])
            sim.step_advance(300)
            for _ in sim:
                d = np.array([lk.depth for lk in links])
                depth_max = np.maximum(depth_max, d)
            flows = np.array([lk.flow for lk in links])
            runoff_err, routing_err = finished_errors(sim)
    except (SWMMException, Exception) as exc:  # swmm-toolkit raises plain Exception
        if isinstance(exc, GisnetError):
            raise
        raise GisnetError(f"SWMM cannot run {Path(inp).name}: "
                          f"{' '.join(str(exc).split())}") from None
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(conduit, depth_max / full, np.nan)
    ratio = dict(zip(names, r, strict=True))
    df = pd.DataFrame({"name": names, "flow_gpd": flows * CFS_TO_GPD,
                       "max_depth_ratio": [ratio[n] for n in names],
                       "surcharged": np.where(conduit, r >= FULL, False)})
    return SwmmRun(df, routing_err, runoff_err)


def finished_errors(sim) -> tuple[float, float]:
    """Runoff and flow routing continuity errors (%) of a pyswmm run, read once SWMM has
    ended it: SWMM totals them when the run ends, so read during the run they are 0.
    The values equal the report's (``.rpt``) "Continuity Error (%)" lines."""
    model = sim._model  # pyswmm's toolkit handle: end the run, then read the totals
    model.swmm_end()
    sim._isStarted = False
    err = model.swmm_getMassBalErr()
    model.swmm_report()
    return float(err[0]), float(err[1])


def below(G: nx.MultiDiGraph, sources: set) -> dict:
    """Every node downstream of (or at) a source -> the source it was reached from,
    in one breadth-first pass from all sources at once."""
    origin = {n: n for n in sources if n in G}
    queue = deque(origin)
    while queue:
        n = queue.popleft()
        for m in G.successors(n):
            if m not in origin:
                origin[m] = origin[n]
                queue.append(m)
    return origin


def _explain(G: nx.MultiDiGraph, pipes: pd.DataFrame, ex: SwmmExport, diff: np.ndarray
             ) -> np.ndarray:
    """Why each differing pipe differs: the pipe's own flag, else a split, a loop or
    a non-gravity link upstream (one pass over the graph per cause)."""
    flags = pipes["flags"].astype(str).to_numpy()
    u = pipes["from_node"].to_numpy(object)
    split = below(G, set(u[np.char.find(flags.astype(str), "flow_split") >= 0]))
    cycle = below(G, set(u[np.char.find(flags.astype(str), "cycle") >= 0]))
    pump = below(G, set(ex.pumps["to_node"]) if len(ex.pumps) else set())
    out = np.full(len(pipes), "", dtype=object)
    for i in np.flatnonzero(diff):
        if "cycle" in flags[i]:
            out[i] = "loop: gisnet computes no flow in a cycle, SWMM routes it"
        elif "flow_split" in flags[i]:
            out[i] = (f"split at node {u[i]}: gisnet shares the flow by full-flow capacity, "
                      "SWMM by the hydraulics")
        elif u[i] in split:
            out[i] = f"downstream of a split at node {split[u[i]]}"
        elif u[i] in cycle:
            out[i] = f"downstream of a loop through node {cycle[u[i]]}"
        elif u[i] in pump:
            out[i] = "downstream of a non-gravity link (ideal pump in SWMM)"
        else:
            out[i] = "not explained by a loop, split or pump: SWMM not yet steady, or storage"
    return out


def comparison_layer(G: nx.MultiDiGraph, pipes: gpd.GeoDataFrame, ex: SwmmExport,
                     run: SwmmRun, report: Report) -> gpd.GeoDataFrame:
    """The ``swmm_comparison`` layer: one row per exported conduit.

    Findings ``swmm_flow_difference`` (warning, one per differing pipe, with
    its explanation) go to ``report``.
    """
    names = set(ex.conduits["name"])
    p = pipes[pipes["edge_key"].isin(names)].reset_index(drop=True)
    sw = run.links.set_index("name")
    q = sw["flow_gpd"].reindex(p["edge_key"]).to_numpy(float)
    g = p["avg_flow_gpd"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(np.maximum(np.abs(g), np.abs(q)) > 0,
                       (q - g) / np.maximum(np.abs(g), np.abs(q)), 0.0)
        avg_util = g / p["capacity_gpd"].to_numpy(float)
    diff = ~np.isfinite(rel) | (np.abs(rel) > FLOW_RTOL)
    expl = _explain(G, p, ex, diff)
    out = gpd.GeoDataFrame({
        "main_id": p["main_id"], "edge_key": p["edge_key"], "from_node": p["from_node"],
        "to_node": p["to_node"], "avg_flow_gpd": g, "swmm_flow_gpd": q,
        "flow_diff_pct": rel * 100.0, "capacity_gpd": p["capacity_gpd"].to_numpy(float),
        "utilization": p["utilization"].to_numpy(float), "avg_utilization": avg_util,
        "swmm_capacity_ratio": sw["max_depth_ratio"].reindex(p["edge_key"]).to_numpy(float),
        "swmm_surcharged": sw["surcharged"].reindex(p["edge_key"]).fillna(False)
        .to_numpy(bool),
        "explanation": expl}, geometry=p.geometry.to_numpy(), crs=pipes.crs)
    for i in np.flatnonzero(diff):
        report.add("swmm_flow_difference", "warning",
                   f"pipe {p.at[i, 'edge_key']}: gisnet {g[i]:,.0f} gpd, SWMM {q[i]:,.0f} gpd "
                   f"({rel[i] * 100:+.1f} %): {expl[i]}", layer="mains",
                   feature_id=str(p.at[i, "edge_key"]))
    return out[COMPARISON_COLUMNS]
