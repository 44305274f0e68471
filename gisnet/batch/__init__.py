"""Many towns at once on Dask: ``gisnet batch REGION --out DIR``.

A region (:mod:`~gisnet.batch.region`) is a folder of town folders or a
``region.toml``. Each town is one Dask task (:mod:`~gisnet.batch.task`) that
reads its layers where it runs, writes ``DIR/<town>/`` exactly as ``gisnet
run`` does (:func:`gisnet.pipeline.run`) and returns one summary row; the
region summary and index page are :mod:`~gisnet.batch.summary`; scheduling,
progress and failures are :mod:`~gisnet.batch.runner`; what is skipped on a
re-run is :mod:`~gisnet.batch.state`. A town too big for one worker runs its
parcel-level steps in spatial partitions on the cluster
(:func:`~gisnet.batch.partition.analyse_partitioned`, a Python API).

This package sits above :mod:`gisnet.pipeline` and calls only its public
functions (and the public API of the analyses).
"""

from __future__ import annotations

from .partition import PartitionedResult, analyse_partitioned, halo_ft, sort_rows
from .region import REGION_FILE, Region, TownEntry, load_region
from .runner import BatchResult, close_client, default_workers, make_client, run_region
from .task import DONE, FAILED, UNCHANGED, Options, run_town

__all__ = [
    "DONE", "FAILED", "REGION_FILE", "UNCHANGED", "BatchResult", "Options",
    "PartitionedResult", "Region", "TownEntry", "analyse_partitioned", "close_client",
    "default_workers", "halo_ft", "load_region", "make_client", "run_region", "run_town",
    "sort_rows",
]
