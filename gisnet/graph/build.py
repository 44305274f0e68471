"""The graph build: the stages run in order, their findings gathered into one report."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import geopandas as gpd
import networkx as nx

from ..report import Report
from ..town import Town
from .assemble import GraphColumns, assemble_graph, graph_columns
from .direction import orient_edges, resolve_direction
from .inputs import read_inputs
from .layers import graph_to_gdfs, layers_from_columns
from .outlets import find_outlets, terminal_outlets
from .prepare import ground_at_structures, prepare_mains, prepare_structures
from .quality import isolated_structures, kind_findings, main_findings
from .snapping import snap_ends
from .splits import cut_edges, find_t_splits
from .table import TABLE_EDGE_ATTRS, TABLE_NODE_ATTRS, GraphTable, graph_table
from .topology import drainage_finding, topology_findings

log = logging.getLogger(__name__)


def build_sewer_graph(
    town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
    *,
    snap_tolerance_ft: float | None = None,
    outlet_nodes: Iterable[str] | None = None,
    plant_tolerance_ft: float | None = None,
) -> nx.MultiDiGraph:
    """Build the directed sewer graph of a town, with its data-quality report.

    Parameters
    ----------
    town_or_layers
        A loaded :class:`~gisnet.town.Town`, or a mapping role -> canonical
        GeoDataFrame (``mains`` required; ``manholes`` and ``plants``
        optional), all in one projected CRS (taken from the mains).
    snap_tolerance_ft
        Snap tolerance in feet; default the town's setting, else
        :data:`gisnet.rules.DEFAULT_SNAP_TOLERANCE_FT`.
    outlet_nodes
        Node ids that are outlets (overrides the town's ``outlet_nodes``).
    plant_tolerance_ft
        How far (feet) a plant may lie from the nearest node and still be
        snapped to it; default the town's setting, else the snap tolerance.

    Returns
    -------
    networkx.MultiDiGraph
        Edges ``(u, v, key)`` in flow direction, key = ``main_id`` (``main_id@2``
        ... for later pieces of a split main); attributes as in
        :data:`~gisnet.graph.EDGE_COLUMNS` plus ``geometry`` (LineString in flow
        direction, working CRS); ``eligible`` is
        :func:`gisnet.rules.is_eligible_for_connection` with the town profile's
        ``connection.eligible_kinds`` (plain layers:
        :data:`gisnet.rules.DEFAULT_ELIGIBLE_KINDS`). Node attributes as in
        :data:`~gisnet.graph.NODE_COLUMNS` (``x``, ``y`` in the working CRS).
        ``G.graph`` holds ``crs``, ``ft_per_unit``, ``outlets``, ``report`` and
        ``snap_tolerance_ft``.

    Raises
    ------
    LayerError
        No mains, or a main that is not one line.
    CRSError
        Layers without a CRS, in different CRSs, or in a geographic CRS.
    ConfigError
        A negative tolerance, or an outlet node id that is not in the graph.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString
    >>> mains = gpd.GeoDataFrame({"main_id": ["A", "B"]}, geometry=[
    ...     LineString([(0, 0), (100, 0)]), LineString([(100.4, 0), (200, 0)])],
    ...     crs="EPSG:2263")
    >>> G = build_sewer_graph({"mains": mains})
    >>> sorted(k for _, _, k in G.edges(keys=True))
    ['A', 'B']
    >>> G.number_of_nodes()
    3
    """
    return _build(town_or_layers, snap_tolerance_ft, outlet_nodes, plant_tolerance_ft)[0]


def build_sewer_graph_and_layers(
    town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
    *,
    snap_tolerance_ft: float | None = None,
    outlet_nodes: Iterable[str] | None = None,
    plant_tolerance_ft: float | None = None,
) -> tuple[nx.MultiDiGraph, gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """:func:`build_sewer_graph` and the graph's ``graph_nodes`` and ``graph_edges``
    layers, as :func:`~gisnet.graph.graph_to_gdfs` gives them, made from the columns
    the graph is filled from (:func:`~gisnet.graph.layers.layers_from_columns`)
    rather than read back from its dictionaries (3.8 s of a county's 300,000 mains).
    """
    built = build_graph_parts(town_or_layers, snap_tolerance_ft=snap_tolerance_ft,
                              outlet_nodes=outlet_nodes, plant_tolerance_ft=plant_tolerance_ft)
    return built.graph, built.nodes, built.edges


@dataclass
class BuiltGraph:
    """What :func:`build_graph_parts` gives: the graph, its two layers, and the
    :class:`~gisnet.graph.table.GraphTable` of the attributes the downstream index
    and the capacity step read (None when the columns do not map one to one onto
    the graph)."""

    graph: nx.MultiDiGraph
    nodes: gpd.GeoDataFrame
    edges: gpd.GeoDataFrame
    table: GraphTable | None


def build_graph_parts(
    town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
    *,
    snap_tolerance_ft: float | None = None,
    outlet_nodes: Iterable[str] | None = None,
    plant_tolerance_ft: float | None = None,
) -> BuiltGraph:
    """:func:`build_sewer_graph_and_layers`, with the graph's table
    (:data:`TABLE_NODE_ATTRS`, :data:`TABLE_EDGE_ATTRS`) for the steps that read every
    edge: valid while the graph is not changed (:mod:`gisnet.graph.table`)."""
    G, columns = _build(town_or_layers, snap_tolerance_ft, outlet_nodes, plant_tolerance_ft)
    made = layers_from_columns(columns, G)
    table = graph_table(G, columns, node_names=TABLE_NODE_ATTRS,
                        edge_names=TABLE_EDGE_ATTRS)
    del columns
    nodes, edges = made if made is not None else graph_to_gdfs(G)
    return BuiltGraph(G, nodes, edges, table)


def _build(town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
           snap_tolerance_ft: float | None, outlet_nodes: Iterable[str] | None,
           plant_tolerance_ft: float | None) -> tuple[nx.MultiDiGraph, GraphColumns]:
    """The stages in order: the graph, and the columns it was filled from."""
    inp = read_inputs(town_or_layers, snap_tolerance_ft, outlet_nodes, plant_tolerance_ft)
    fpu = inp.ft_per_unit
    report_dups = not inp.from_loader
    mains = prepare_mains(inp.mains, inp.eligible_kinds, report_dups)
    structures = ground_at_structures(prepare_structures(inp.manholes, inp.plants, report_dups),
                                      inp.elevation, inp.crs)
    nodes = snap_ends(mains, structures, inp.tol, fpu)
    splits = find_t_splits(mains, structures, nodes, inp.tol, fpu)
    pieces = cut_edges(mains, nodes, splits, fpu)
    outlets = find_outlets(inp, structures, nodes, pieces)
    direction = resolve_direction(mains, nodes, structures, pieces, outlets.outlet, fpu,
                                  inp.inverts, min_drop_ft=(None if inp.elevation is None
                                                            else inp.elevation.min_drop_ft))
    edges = orient_edges(mains, pieces, direction)
    if outlets.terminal_mode:
        outlets = terminal_outlets(outlets, edges, nodes.node_xy)
    report = Report()
    for stage in (mains, structures, nodes, splits, pieces, outlets, direction):
        report.extend(stage.findings)
    # hundreds of thousands of attribute dicts and findings, none in a
    # reference cycle: the cyclic collector would rescan them again and
    # again while they are made
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        columns = graph_columns(mains, structures, nodes.node_xy, direction, edges, outlets)
        G = assemble_graph(inp, mains, structures, nodes.node_xy, direction, edges, outlets,
                           columns=columns)
        report.extend(main_findings(mains, direction))
        report.extend(kind_findings(mains, inp.eligible_kinds))
        report.extend(isolated_structures(structures, outlets, inp.tolerance_ft,
                                          nodes.merged))
        report.extend(topology_findings(G, inp, mains, nodes, edges, outlets))
        report.findings.insert(0, drainage_finding(nodes, edges, outlets))
    finally:
        if gc_was_on:
            gc.enable()
    G.graph["report"] = report
    counts = report.counts()
    if counts:
        log.info("graph findings: %s", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return G, columns
