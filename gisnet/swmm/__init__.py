"""SWMM 5 models in and out: import a model as a town, export a town as a model,
and check gisnet's flows against SWMM's own run.

- :mod:`.model`: reading an ``.inp`` file (swmmio) in feet, inches and gpd;
- :mod:`.importing`: the model as canonical layers and a town folder;
- :mod:`.exporting`: the network and its average flows as a SWMM model;
- :mod:`.compare`: running it (pyswmm) and the ``swmm_comparison`` layer;
- :mod:`.original`: SWMM's dry-weather run of the model a town came from, and
  the ``swmm_original_comparison`` layer.

Above the pipeline: :func:`check_town` runs gisnet's capacity analysis first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .compare import COMPARISON_COLUMNS, FLOW_RTOL, SwmmRun, comparison_layer, run_swmm
from .exporting import SwmmExport, export_model, inp_text
from .importing import GPKG_NAME, ImportResult, model_crs, model_layers, write_town
from .model import SwmmModel, read_model
from .original import Agreement, OriginalRun, original_comparison, run_original

__all__ = ["COMPARISON_COLUMNS", "FLOW_RTOL", "GPKG_NAME", "Agreement", "ImportResult",
           "OriginalRun", "SwmmExport", "SwmmModel", "SwmmRun", "check_original", "check_town",
           "comparison_layer", "export_model", "export_town", "inp_text", "model_crs",
           "model_layers", "original_comparison", "read_model", "run_original", "run_swmm",
           "write_town"]


def export_town(town: Any, *, routing: str | None = None, progress=None):
    """gisnet's capacity analysis of a town and its SWMM export.

    Returns ``(results, export)``: the :class:`gisnet.pipeline.Results` (graph and
    capacity) and the :class:`~gisnet.swmm.exporting.SwmmExport`.
    """
    from ..pipeline import analyse

    res = analyse(town, only={"capacity"}, control_paths=False, progress=progress)
    assert res.graph is not None  # the capacity step builds the graph (strict: or raises)
    return res, export_model(town, res.graph, res.capacity, routing=routing)


def check_original(town: Any, model_path: str | Path, work_dir: str | Path, *, results=None,
                   progress=None):
    """gisnet's dry-weather flows against SWMM's run of the model the town came from.

    Returns ``(layer, agreement, run, report)``: the ``swmm_original_comparison``
    layer, the :class:`~gisnet.swmm.original.Agreement`, the
    :class:`~gisnet.swmm.original.OriginalRun` and the findings.
    """
    from ..pipeline import analyse
    from ..report import Report

    if results is None:
        results = analyse(town, only={"capacity"}, control_paths=False, progress=progress)
    run = run_original(model_path, work_dir)
    report = Report()
    layer, agr = original_comparison(results.graph, results.capacity.pipes, run,
                                     read_model(model_path), report)
    return layer, agr, run, report


def check_town(town: Any, inp_path: str | Path, *, routing: str | None = None,
               progress=None, results=None):
    """Export a town, run it in SWMM, compare: ``(layer, run, export, report)``."""
    from ..output.writing import atomic_write_text
    from ..report import Report

    if results is None:
        res, ex = export_town(town, routing=routing, progress=progress)
    else:
        res, ex = results, export_model(town, results.graph, results.capacity, routing=routing)
    atomic_write_text(inp_path, inp_text(ex), "SWMM model")
    run = run_swmm(inp_path, dict(zip(ex.conduits["name"], ex.conduits["geom1_ft"],
                                      strict=True)))
    report = Report()
    layer = comparison_layer(res.graph, res.capacity.pipes, ex, run, report)
    return layer, run, ex, report
