"""Writing a run's results: files, the GeoPackage, PostGIS, and publishing them whole.

Input files are never written: every writer checks its outputs first
(:func:`guard_outputs`: never over an input, an existing town file or layer only
with ``--force``), and every file is written beside its target and renamed into
place (:func:`atomic_path`).

=====================================  ============================================
:mod:`gisnet.output.writing`           results GeoPackage, table files, atomic
                                       writes, outputs kept off the inputs
:mod:`gisnet.output.gpkg`              the GeoPackage layer by layer as the
                                       analyses end (:class:`GpkgWriter`)
:mod:`gisnet.output.gpkg_child`        the child process that writes it for a
                                       big town while the run goes on
:mod:`gisnet.output.metadata`          what each layer and column means (the
                                       results schema shipped with the package)
:mod:`gisnet.output.styles`            QGIS default styles (``layer_styles``)
:mod:`gisnet.output.qgis_project`      the QGIS project ``gisnet.qgz`` of the
                                       results GeoPackage
:mod:`gisnet.output.pg_styles`         ``layer_styles`` rows for PostGIS output
:mod:`gisnet.output.publish`           a run's outputs all or nothing: staging
                                       folder, one publish step,
                                       ``gisnet-manifest.json``
:mod:`gisnet.output.postgis`           every result layer into PostGIS in one
                                       transaction, locks taken without queueing
:mod:`gisnet.output.guard`             the one output check of every writer
                                       (:func:`guard_outputs`)
:mod:`gisnet.output.cells`             spreadsheet-safe text in CSV and XLSX
=====================================  ============================================
"""

from __future__ import annotations

from .gpkg import GpkgWriter, write_gpkg
from .guard import Output, guard_outputs
from .publish import (
    MANIFEST_FILE,
    check_manifest,
    make_manifest,
    new_run_id,
    publish,
    read_manifest,
    recover,
    remember_bytes,
    remember_sha256,
    remove_leftovers,
    staging_area,
    update_manifest,
)
from .writing import (
    RESULTS_FILE,
    TABLE_FORMATS,
    WORKBOOK_FILE,
    atomic_path,
    atomic_write_text,
    ensure_out_dir,
    input_files,
    planned_outputs,
    refuse_input_as_output,
    refuse_inputs_as_outputs,
    write_project,
    write_results,
    write_tables,
)

__all__ = [
    "MANIFEST_FILE",
    "RESULTS_FILE",
    "TABLE_FORMATS",
    "WORKBOOK_FILE",
    "GpkgWriter",
    "Output",
    "atomic_path",
    "atomic_write_text",
    "check_manifest",
    "ensure_out_dir",
    "guard_outputs",
    "input_files",
    "make_manifest",
    "new_run_id",
    "planned_outputs",
    "publish",
    "read_manifest",
    "recover",
    "refuse_input_as_output",
    "refuse_inputs_as_outputs",
    "remember_bytes",
    "remember_sha256",
    "remove_leftovers",
    "staging_area",
    "update_manifest",
    "write_gpkg",
    "write_project",
    "write_results",
    "write_tables",
]
