"""The control stage: connection points, control manholes and the sampling plan.

:func:`analyse_control` is the step ``control`` that :mod:`gisnet.pipeline` runs
after the graph (its result is ``Results.control``). It builds on the graph walks
of :mod:`gisnet.tracing` and the sampling plan of :mod:`gisnet.sampling`; neither
of those imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from .results import ControlResult
from .sampling.plan import sampling_plan
from .tracing import DownstreamIndex, connection_points, control_manholes

if TYPE_CHECKING:  # pragma: no cover
    from .graph.table import GraphTable
    from .town import Town


def analyse_control(
    town: Town, G: nx.MultiDiGraph, *, index: DownstreamIndex | None = None,
    paths: bool | str = True,
    building_points: np.ndarray | Callable[[], np.ndarray | None] | None = None,
    table: GraphTable | None = None,
) -> ControlResult:
    """Connection points, control manholes and paths, and the sampling plan of a town.

    Parameters
    ----------
    town
        Loaded town.
    G
        Its sewer graph (:func:`gisnet.graph.build_sewer_graph`).
    index
        A :class:`~gisnet.tracing.DownstreamIndex` of ``G`` to reuse (built if None).
    paths
        Build the ``control_paths`` lines (False: ``control_paths`` is None;
        ``"later"``: None until :meth:`ControlResult.paths_now`, which needs the index's
        arrays but not the graph).
    building_points
        Each building's centroid, when the buildings' shapes are no longer held
        (:func:`gisnet.tracing.features_to_connect`); or what gives them, called once
        the index is built (a :func:`gisnet.threads.in_background` job of
        :func:`gisnet.lean.building_centroids`, made meanwhile).
    table
        The graph's :class:`~gisnet.graph.table.GraphTable`, for the index (when
        ``index`` is None).

    Returns
    -------
    ControlResult
        ``control_manholes`` and ``control_paths`` (one row per connection
        point, :func:`gisnet.tracing.control_manholes`), ``points``
        (:func:`gisnet.tracing.connection_points`), the ``index`` used, and
        ``sampling_plan`` (:func:`sampling_plan`) when the town has a non-empty
        users layer, else None.
    """
    try:
        idx = DownstreamIndex.of(G, index, table=table)
    finally:  # (a job making the points is waited for, whatever happened)
        if callable(building_points):
            building_points = building_points()
    points = connection_points(town, G, index=idx, building_points=building_points)
    layers = control_manholes(town, G, points=points, index=idx, paths=paths)
    later = layers.get("make_control_paths")
    users = town.layer("users")
    plan = None
    if users is not None and len(users):
        plan = sampling_plan(town, G, index=idx, points=points)
    return ControlResult(
        control_manholes=layers["control_manholes"],
        control_paths=layers.get("control_paths"),
        points=points,
        index=idx,
        sampling_plan=plan,
        make_paths=later,
    )
