"""The whole job on one town: graph, every analysis, the results GeoPackage, the maps.

``gisnet run`` is :func:`run`; the HTTP service and tests use :func:`analyse`
for the same tables without writing anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import networkx as nx
import pandas as pd

from .town import Town

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass
class Results:
    """Everything :func:`analyse` computed for one town.

    Attributes
    ----------
    town
        The loaded town.
    graph
        The directed sewer graph.
    layers
        Result layers by name, as written to ``gisnet-results.gpkg``.
    capacity
        The :class:`gisnet.capacity.CapacityResult` (reused by what-if).
    index
        The :class:`gisnet.tracing.DownstreamIndex` (reused by traces).
    points
        Connection points (taps) of every building, parcel and user.
    timings_s
        Seconds spent in each step.
    """

    town: Town
    graph: nx.MultiDiGraph
    layers: dict[str, pd.DataFrame]
    capacity: Any
    index: Any
    points: gpd.GeoDataFrame
    timings_s: dict[str, float] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def _noop(_: str) -> None:
    return None


def analyse(town: Town, *, progress: Progress | None = None) -> Results:
    """Run every analysis on a loaded town, in pipeline order.

    Parameters
    ----------
    town
        A town from :func:`gisnet.io.load_town`.
    progress
        Called with a short message before each step.

    Returns
    -------
    Results
        Graph, result layers (``quality``, ``graph_nodes``, ``graph_edges``,
        ``obligations``, ``obligation_evidence``, ``connection_zone``,
        ``frontage``, ``control_manholes``, ``control_paths``,
        ``sampling_plan`` when there are users, ``pipes_capacity``, ``plants``).
    """
    from .capacity import compute_capacity
    from .graph import build_sewer_graph, graph_to_gdfs, quality_gdf
    from .obligations import compute_obligations, connection_zone, frontage
    from .sampling import sampling_plan
    from .tracing import DownstreamIndex, connection_points, control_manholes

    say = progress or _noop
    timings: dict[str, float] = {}
    layers: dict[str, pd.DataFrame] = {}

    def step(name: str, message: str) -> float:
        say(message)
        return time.perf_counter()

    t = step("graph", "building the sewer graph")
    G = build_sewer_graph(town)
    nodes, edges = graph_to_gdfs(G)
    layers["graph_nodes"], layers["graph_edges"] = nodes, edges
    timings["graph"] = time.perf_counter() - t

    t = step("obligations", "measuring connection obligations")
    layers.update(compute_obligations(town))
    layers["connection_zone"] = connection_zone(town)
    layers["frontage"] = frontage(town)
    timings["obligations"] = time.perf_counter() - t

    t = step("tracing", "finding connection points and control manholes")
    index = DownstreamIndex(G)
    points = connection_points(town, G, index=index)
    layers.update(control_manholes(town, G, points=points, index=index))
    if town.layer("users") is not None and len(town.layers["users"]):
        layers["sampling_plan"] = sampling_plan(town, G, index=index, points=points)
    timings["tracing"] = time.perf_counter() - t

    t = step("capacity", "accumulating flows and checking capacity")
    capacity = compute_capacity(town, G, points=points, index=index)
    layers.update(capacity.layers())
    timings["capacity"] = time.perf_counter() - t

    extra = town.report
    cap_report = getattr(capacity, "report", None)
    if cap_report is not None and len(cap_report):
        from .report import Report

        extra = Report(list(town.report.findings) + list(cap_report.findings))
    layers["quality"] = quality_gdf(G, extra=extra)
    return Results(town, G, layers, capacity, index, points, timings)


def run(
    town: Town,
    out_dir: str | Path,
    *,
    self_contained: bool = False,
    maps: bool = True,
    tables: tuple[str, ...] = (),
    progress: Progress | None = None,
) -> Results:
    """Analyse a town and write ``gisnet-results.gpkg`` and the web maps.

    Parameters
    ----------
    town
        A town from :func:`gisnet.io.load_town`.
    out_dir
        Output folder (created if needed).
    self_contained
        Write map pages whose scripts and styles are inside the page.
    maps
        Write the web maps as well as the GeoPackage.
    tables
        Also write every layer as these table formats (``csv``, ``geojson``,
        ``parquet``) under ``out_dir/tables`` (see :func:`gisnet.io.write_tables`).
    progress
        Called with a short message before each step.
    """
    from .io import write_results, write_tables

    say = progress or _noop
    res = analyse(town, progress=progress)
    out = Path(out_dir)
    say(f"writing {out / 'gisnet-results.gpkg'}")
    t = time.perf_counter()
    res.files.append(write_results(out, res.layers))
    if tables:
        say(f"writing {', '.join(tables)} tables")
        res.files.extend(write_tables(out, res.layers, tables))
    res.timings_s["write"] = time.perf_counter() - t
    if maps:
        from .maps import write_maps

        say("writing web maps")
        t = time.perf_counter()
        res.files.extend(write_maps(town, res.layers, out, self_contained=self_contained))
        res.timings_s["maps"] = time.perf_counter() - t
    return res


def summary(res: Results) -> dict[str, Any]:
    """Headline figures of a run, for ``gisnet run`` and ``GET /town``."""
    from .graph import graph_summary
    from .io import crs_label

    town = res.town
    L = res.layers
    out: dict[str, Any] = {
        "town": town.name,
        "profile": getattr(town.profile, "id", str(town.profile)),
        "crs": crs_label(town.crs),
        "layers": {role: len(gdf) for role, gdf in town.layers.items()},
        "graph": graph_summary(res.graph),
    }
    q = L.get("quality")
    if q is not None:
        out["quality"] = q.groupby("severity").size().to_dict() if len(q) else {}
    ob = L.get("obligations")
    if ob is not None and len(ob):
        out["obligations"] = ob["status"].value_counts().sort_index().to_dict()
    cm = L.get("control_manholes")
    if cm is not None and len(cm):
        out["control_manholes"] = {
            "connection_points": len(cm),
            "distinct_manholes": int(cm["control_manhole_id"].nunique()),
            "unresolved": int(cm["control_manhole_id"].isna().sum()),
        }
    sp = L.get("sampling_plan")
    if sp is not None and len(sp) and "siu" in sp:
        out["industrial_users"] = {"users": len(sp), "siu": int(sp["siu"].sum())}
    pc = L.get("pipes_capacity")
    if pc is not None and len(pc):
        out["pipes"] = {
            "pipes": len(pc),
            "over_threshold": int(pc["over_threshold"].fillna(False).astype(bool).sum()),
            "surcharged": int(pc["surcharged"].fillna(False).astype(bool).sum()),
            "no_capacity": int(pc["capacity_gpd"].isna().sum()),
        }
    pl = L.get("plants")
    if pl is not None and len(pl):
        out["plants"] = [
            {k: (None if pd.isna(v) else v) for k, v in row.items()}
            for row in pl[["plant_id", "design_flow_mgd", "avg_flow_mgd", "ratio",
                           "over_threshold", "basis"]].to_dict("records")
        ]
    out["timings_s"] = {k: round(v, 3) for k, v in res.timings_s.items()}
    out["files"] = [str(p) for p in res.files]
    return out
