"""The directed sewer graph, built from canonical layers, with a quality report.

:func:`build_sewer_graph` turns a town's mains (and, when given, manholes and
plants) into a :class:`networkx.MultiDiGraph` whose edges point in the
direction of flow, and records every decision it made and every problem it saw
as :class:`gisnet.report.Finding` objects in ``G.graph["report"]``.

How the graph is made
---------------------
1. Pipe ends are taken with numpy (one array of ``2 n`` points).
2. Ends within the snap tolerance of a manhole or plant join it (nearest
   structure, ``STRtree.query_nearest``); the other ends are clustered with
   each other (``STRtree`` ``dwithin`` pairs, then connected components), each
   cluster becoming a junction node ``J000001`` ... Coordinates are never
   rounded: rounding is not snapping.
3. A node lying within the tolerance of another pipe's interior splits that
   pipe there (a "T"): the pieces keep the ``main_id``; the upstream piece is
   keyed ``main_id`` and the later ones ``main_id@2``, ``main_id@3`` ...
4. Outlets, one for every piece: plants (pipe ends snapped onto them, or the
   plant joined to the end of the piece it serves), outfall-kind structures,
   the town's ``outlet_nodes``; a piece without one drains to its lowest
   structure or its end nearest the network, reported as assumed.
5. Direction, in order of trust: the ``from_node`` / ``to_node`` ids, start/end
   inverts, upstream/downstream inverts matched to the network, structure
   elevations, the shortest network path to the piece's outlet, the drawing.
   Each edge records its ``direction_source``; every disagreement becomes a
   finding (grouped per kind).

Nothing is dropped: cycles are kept and reported with their main ids.

Finding kinds
-------------
``cycle``, ``no_outlet``, ``disconnected_piece``, ``adverse_slope``,
``flat_slope``, ``slope_mismatch``, ``dangling_end``, ``duplicate_id`` (only
when the layers did not come through the loader, which reports those),
``missing_diameter``, ``gap_snapped``, ``gap_not_snapped``, ``t_split``,
``reversed_pipe``, ``direction_conflict``, ``excluded_main``, plus
``node_id_mismatch`` (from/to ids naming other nodes than the pipe's ends),
``outlet_not_connected``,
``plant_not_connected``, ``isolated_structure`` (a manhole no pipe reaches),
``kind_assumed`` (mains without a kind treated as sanitary), ``drainage`` (how
much drains to a plant, how much to an assumed outlet), ``plant_gap``,
``outlet_assumed``, ``duplicate_structure``, ``collapsed_main``,
``direction_assumed`` and ``away_from_outlet``.

Stages (one module each, each a function returning a small frozen dataclass)
---------------------------------------------------------------------------
=====================  ===============================================================
module                 stage
=====================  ===============================================================
:mod:`.inputs`         layers, CRS, tolerances, outlet nodes, eligible kinds
:mod:`.prepare`        mains as lines with ids and rule flags; manholes and plants
:mod:`.snapping`       node assignment: pipe ends to structures or junctions
:mod:`.splits`         T splits, and the edges the mains are cut into
:mod:`.outlets`        an outlet for every piece: plants, outfalls, named or assumed
:mod:`.direction`      direction of flow from every clue in order of trust, slopes
:mod:`.clues`          invert matching, structure elevations, shortest-path distances
:mod:`.assemble`       the networkx MultiDiGraph and its attributes
:mod:`.quality`        findings about mains (slopes, kind_assumed, excluded_main)
:mod:`.topology`       findings about the network (cycles, dangling ends, pieces)
:mod:`.layers`         graph_to_gdfs, graph_from_gdfs, graph_summary, quality_gdf
:mod:`.build`          :func:`build_sewer_graph`: the stages in order (with the
                       graph's layers: :func:`build_sewer_graph_and_layers`)
:mod:`.table`          the graph just built as columns in its own order, for the
                       steps that read every edge (:func:`build_graph_parts`)
:mod:`.snap`           vectorised clustering and component labelling
=====================  ===============================================================
"""

from __future__ import annotations

from ..rules import DEFAULT_SNAP_TOLERANCE_FT
from .assemble import EDGE_COLUMNS, NODE_COLUMNS
from .build import build_sewer_graph, build_sewer_graph_and_layers
from .layers import graph_from_gdfs, graph_summary, graph_to_gdfs, quality_gdf
from .outlets import OUTLET_KINDS
from .quality import SLOPE_MISMATCH_ABS, SLOPE_MISMATCH_REL
from .snapping import GAP_REPORT_MIN_FT

__all__ = [
    "DEFAULT_SNAP_TOLERANCE_FT",
    "EDGE_COLUMNS",
    "GAP_REPORT_MIN_FT",
    "NODE_COLUMNS",
    "OUTLET_KINDS",
    "SLOPE_MISMATCH_ABS",
    "SLOPE_MISMATCH_REL",
    "build_sewer_graph",
    "build_sewer_graph_and_layers",
    "graph_from_gdfs",
    "graph_summary",
    "graph_to_gdfs",
    "quality_gdf",
]
