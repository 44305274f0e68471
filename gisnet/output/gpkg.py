"""The results GeoPackage, written layer by layer as the analyses end.

:func:`write_gpkg` writes a dict of layers; :class:`GpkgWriter` takes them as they
become ready and, with ``process=True``, has a child process
(:mod:`gisnet.output.gpkg_child`) do GDAL's part while the caller goes on.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ._testhooks import kill_point
from .metadata import describe_gpkg
from .styles import write_styles
from .writing import RESULTS_FILE, write_layer, write_project

log = logging.getLogger(__name__)


def write_gpkg(path: str | Path, layers: Mapping[str, pd.DataFrame], *,
               process: bool = False) -> Path:
    """Write ``layers`` into a new GeoPackage ``path`` (in a staging folder: the
    file is private until published, so it is written in place), layers in
    name order; ``process``: GDAL writes them in a child process
    (:class:`GpkgWriter`)."""
    with GpkgWriter(path, process=process) as w:
        return w.close(layers)


class GpkgWriter:
    """A new GeoPackage written layer by layer, as the layers become ready.

    :meth:`add` writes the layers it has not written yet (in name order);
    :meth:`close` writes the rest and the GeoPackage's metadata (layer
    descriptions, :func:`gisnet.output.metadata.describe_gpkg`; QGIS styles,
    :func:`gisnet.output.styles.write_styles`), and, for ``gisnet-results.gpkg``,
    the QGIS project ``gisnet.qgz`` beside it
    (:func:`gisnet.output.writing.write_project`). The file's layers are in the order
    they were added: ``gisnet run`` adds each analysis's layers when it ends,
    always in the same order.

    With ``process=True``, GDAL writes the layers in a child process
    (:mod:`gisnet.output.gpkg_child`) while the caller goes on: pyogrio holds the GIL
    while GDAL writes, so a thread writing the GeoPackage would stop the analyses
    and the maps. A thread of this process turns each layer into Arrow
    (:func:`~gisnet.output.gpkg_child.to_arrow`: ``pyarrow.Table.from_pandas``,
    which keeps the pandas dtypes, the geometry type and CRS decided as
    :func:`write_layer` decides them) and streams it to the child in record batches,
    the geometry as WKB a batch at a time; the child hands the stream to GDAL's Arrow
    writer, so the file holds what this process would write.
    A layer Arrow cannot hold is written by this process once the child has
    finished. Frames given to :meth:`add` must not change afterwards.
    """

    def __init__(self, path: str | Path, *, process: bool = False, digest: bool = False):
        self.path = Path(path)
        #: Hash the file once it is closed (:func:`gisnet.output.publish.remember_sha256`:
        #: the manifest's hash is then made on the thread that closes the writer).
        self.digest = digest
        self.path.unlink(missing_ok=True)
        self.written: list[str] = []
        #: Rows of each layer, as it was given.
        self.rows: dict[str, int] = {}
        self._caught: list[warnings.WarningMessage] = []
        self._child = None
        if process:
            from .gpkg_child import ChildWriter, to_arrow

            self._child = ChildWriter(self.path, to_arrow)

    def _write_here(self, name: str, df: pd.DataFrame) -> None:
        with warnings.catch_warnings(record=True) as caught:  # GDAL's, to the log
            warnings.simplefilter("always")
            write_layer(self.path, name, df)
        self._caught.extend(caught)

    def add(self, layers: Mapping[str, pd.DataFrame]) -> None:
        """Write (or queue for the child) the layers of ``layers`` not written yet."""
        for name in sorted(set(layers) - set(self.written)):
            self.written.append(name)
            self.rows[name] = len(layers[name])
            if self._child is not None:
                self._child.put(name, layers[name])
            else:
                self._write_here(name, layers[name])
                kill_point("gpkg")

    def close(self, layers: Mapping[str, pd.DataFrame]) -> Path:
        """Write the rest of ``layers`` (every result layer), wait for the child, and
        write the metadata of every layer."""
        self.add(layers)
        messages = []
        if self._child is not None:
            child, self._child = self._child, None
            messages = child.finish()
            for name, df in child.left:  # what Arrow cannot hold, written here
                self._write_here(name, df)
            kill_point("gpkg")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            describe_gpkg(self.path, layers)
            write_styles(self.path, layers)
            if self.path.name == RESULTS_FILE:  # gisnet.qgz beside it
                write_project(self.path)
        for m in messages + [str(w.message).strip() for w in self._caught + caught]:
            log.warning("%s: %s", self.path, m)
        if self.digest:
            from .publish import remember_sha256

            remember_sha256(self.path)
        return self.path

    def __enter__(self) -> GpkgWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._child is not None:  # not closed: the run failed
            self._child.abort()
            self._child = None


__all__ = ["GpkgWriter", "write_gpkg"]
