"""The GeoPackage's layers written by a child process (see :class:`gisnet.output.gpkg.GpkgWriter`).

pyogrio holds the GIL while GDAL writes a layer (16 of the 22 s a county's 1.4 GB
GeoPackage takes), so a thread writing the GeoPackage stops the analyses and the
maps of the same run. The child is ``python -m gisnet.output.gpkg_child``, started with
:mod:`subprocess` rather than :mod:`multiprocessing` (a spawned child imports the
caller's main module again: a script without a ``__main__`` guard would run twice).

A thread of the parent turns each layer into an Arrow table
(:func:`to_arrow`) and sends it on the child's standard input as
one pickled message ``(path, layer name, table, (geometry column, CRS) or None)``;
the child writes it (:func:`write_from_arrow`) and answers on its
standard output ``("ok", GDAL's warnings)`` or ``("error", exception)``. ``None``,
or the end of its input (the parent died), ends the child.
"""

from __future__ import annotations

import logging
import pickle
import queue
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..errors import ConfigError
from .writing import file_form, gpkg_ready, write_layer

log = logging.getLogger(__name__)


class ChildWriter:
    """The parent's end: :meth:`put` layers (written in that order by the child, one
    at a time, while the caller goes on), then :meth:`finish`.

    Parameters
    ----------
    path
        The GeoPackage.
    convert
        ``convert(name, frame)`` -> ``(table, geometry)`` for the child, or None
        for a layer the child cannot take: those are left in :attr:`left` for the
        caller to write once the child has finished.
    """

    def __init__(self, path: Path, convert: Callable[[str, Any], Any]):
        self.path = path
        self.convert = convert
        self.left: list[tuple[str, Any]] = []
        self.messages: list[str] = []
        self.error: BaseException | None = None
        self._todo: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self.proc = subprocess.Popen([sys.executable, "-m", "gisnet.output.gpkg_child"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # PIPE, above
        self._to_child: IO[bytes] = self.proc.stdin
        self._from_child: IO[bytes] = self.proc.stdout
        self._thread = threading.Thread(target=self._feed, name="gisnet-gpkg", daemon=True)
        self._thread.start()

    def put(self, name: str, df: Any) -> None:
        """Queue a layer (the frame must not change until :meth:`finish`)."""
        self._todo.put((name, df))

    def _gone(self) -> ConfigError:
        return ConfigError("the GeoPackage writer process ended without finishing (exit "
                           f"status {self.proc.poll()}; killed, or out of memory?)",
                           path=self.path)

    def _feed(self) -> None:
        while True:
            item = self._todo.get()
            if item is None:
                return
            if self.error is not None:
                continue  # after a failure: drain the queue, write nothing more
            name, df = item
            del item
            try:
                arrow = self.convert(name, df)
                if arrow is None:
                    self.left.append((name, df))
                    continue
                del df
                try:
                    pickle.dump((str(self.path), name, *arrow), self._to_child, protocol=5)
                    self._to_child.flush()
                    del arrow
                    status, value = pickle.load(self._from_child)
                except (OSError, EOFError, pickle.UnpicklingError) as exc:
                    raise self._gone() from exc
                if status == "error":
                    raise value
                self.messages.extend(value)
            except BaseException as exc:  # kept, raised by finish()
                self.error = exc

    def finish(self) -> list[str]:
        """Wait for every queued layer; GDAL's warnings. Raises what the child raised."""
        self._todo.put(None)
        self._thread.join()
        self._stop()
        if self.error is not None:
            raise self.error
        return self.messages

    def _stop(self) -> None:
        try:
            if self.proc.poll() is None:
                pickle.dump(None, self._to_child)
                self._to_child.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._from_child.close()

    def abort(self) -> None:
        """Stop the child now (the run failed): nothing more is written."""
        self.error = self.error or ConfigError("aborted", path=self.path)
        self.proc.kill()
        self._todo.put(None)
        self._thread.join()
        self._stop()


def to_arrow(name: str, df: pd.DataFrame) -> tuple[Any, tuple[str, Any] | None] | None:
    """Layer ``name`` as the GeoPackage holds it (:func:`file_form`, :func:`gpkg_ready`)
    in an Arrow table (the geometry as WKB) and (geometry column, CRS), or None when
    a column will not go into Arrow."""
    import pyarrow as pa

    df = gpkg_ready(file_form(name, df))
    geom = None
    if isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns:
        gname = df.geometry.name
        geom = (gname, df.crs)
        df = pd.DataFrame(df, copy=False).assign(
            **{gname: shapely.to_wkb(np.asarray(df[gname].array, dtype=object))})
    try:
        return pa.Table.from_pandas(df, preserve_index=False), geom
    except (pa.ArrowException, TypeError, ValueError):
        return None


def write_from_arrow(path: str, name: str, table: Any,
                     geom: tuple[str, Any] | None) -> list[str]:
    """The frame of :func:`to_arrow` back (columns backed by the Arrow table, not
    copied into Python objects), written by :func:`write_layer` (in the writer
    child, :mod:`gisnet.output.gpkg_child`); returns GDAL's warnings."""
    df = table.to_pandas(types_mapper=pd.ArrowDtype)
    del table
    if geom is not None:
        gname, crs = geom
        df[gname] = gpd.GeoSeries(shapely.from_wkb(df[gname].to_numpy(dtype=object, na_value=None)),
                                  index=df.index, crs=crs)
        df = gpd.GeoDataFrame(df, geometry=gname, crs=crs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_layer(Path(path), name, df)
    return [str(w.message).strip() for w in caught]


def main() -> int:
    """The child's loop: a layer in, written, its answer out."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # standard output carries the answers only
    # GDAL's warnings go back to the parent's log (write_from_arrow); nothing else
    # of this process reaches the user's terminal
    warnings.simplefilter("ignore")
    while True:
        try:
            msg = pickle.load(inp)
        except EOFError:
            return 0
        if msg is None:
            return 0
        path, name, table, geom = msg
        del msg
        try:
            answer: tuple[str, Any] = ("ok", write_from_arrow(path, name, table, geom))
        except Exception as exc:  # sent to the parent, raised there
            answer = ("error", exc)
        del table
        try:
            data = pickle.dumps(answer)
        except Exception as exc:  # an exception that does not pickle
            data = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        try:
            out.write(data)
            out.flush()
        except (BrokenPipeError, OSError):  # the parent is gone: nothing left to do
            return 1


if __name__ == "__main__":
    sys.exit(main())
