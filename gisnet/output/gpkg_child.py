"""The GeoPackage's layers written by a child process (see :class:`gisnet.output.gpkg.GpkgWriter`).

pyogrio holds the GIL while GDAL writes a layer (16 of the 22 s a county's 1.4 GB
GeoPackage takes), so a thread writing the GeoPackage stops the analyses and the
maps of the same run. The child is ``python -m gisnet.output.gpkg_child``, started with
:mod:`subprocess` rather than :mod:`multiprocessing` (a spawned child imports the
caller's main module again: a script without a ``__main__`` guard would run twice).

A thread of the parent turns each layer's attributes into an Arrow table
(:func:`to_arrow`) and sends the layer on the child's standard input as a pickled
header ``(path, layer name, geometry column/type/CRS)`` followed by an Arrow IPC
stream of record batches, the geometry turned into WKB a batch at a time
(:func:`send`); the child hands the stream to GDAL's Arrow writer as it arrives
(:func:`write_stream`: the shapes are not rebuilt in the child, and neither process
holds a layer's WKB whole) and answers on its
standard output ``("ok", GDAL's warnings)`` or ``("error", exception)``, read by a
second thread of the parent: the next layer is made into Arrow while the child still
writes the last. ``None``,
or the end of its input (the parent died), ends the child.
"""

from __future__ import annotations

import contextlib
import logging
import os
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
from ..memory import release
from .wkb import wkb_array
from .writing import file_form, gpkg_ready

log = logging.getLogger(__name__)


#: The pipe to the child, where the system lets it be set (Linux's default most
#: unprivileged processes may ask for): fewer wake-ups of the child for 1.4 GB.
PIPE_BYTES = 1 << 20


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
        #: layers sent whose answer is still to be read (None: no more)
        self._sent: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen([sys.executable, "-m", "gisnet.output.gpkg_child"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # PIPE, above
        self._to_child: IO[bytes] = self.proc.stdin
        self._from_child: IO[bytes] = self.proc.stdout
        with contextlib.suppress(AttributeError, OSError):  # Linux: a 1 MB pipe, not 64 KB
            import fcntl

            fcntl.fcntl(self._to_child.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self._thread = threading.Thread(target=self._feed, name="gisnet-gpkg", daemon=True)
        self._answers = threading.Thread(target=self._read, name="gisnet-gpkg-answers",
                                         daemon=True)
        self._thread.start()
        self._answers.start()

    def put(self, name: str, df: Any) -> None:
        """Queue a layer (the frame must not change until :meth:`finish`)."""
        self._todo.put((name, df))

    def _gone(self) -> ConfigError:
        return ConfigError("the GeoPackage writer process ended without finishing (exit "
                           f"status {self.proc.poll()}; killed, or out of memory?)",
                           path=self.path)

    def _feed(self) -> None:
        """Each queued layer made into Arrow and sent; the next one is made while the
        child still writes the last (its answer read by :meth:`_read`)."""
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
                    send(self._to_child, str(self.path), name, arrow)
                except OSError as exc:
                    raise self._gone() from exc
                self._sent.put(name)
                del arrow
                release()
            except BaseException as exc:  # kept, raised by finish()
                self.error = self.error or exc

    def _read(self) -> None:
        """The child's answer to each layer sent, in order: GDAL's warnings kept, the
        first error kept for :meth:`finish`."""
        while self._sent.get() is not None:
            try:
                status, value = pickle.load(self._from_child)
            except (OSError, EOFError, pickle.UnpicklingError, ValueError):
                self.error = self.error or self._gone()
                return
            if status == "error":
                self.error = self.error or value
            else:
                self.messages.extend(value)

    def finish(self) -> list[str]:
        """Wait for every queued layer; GDAL's warnings. Raises what the child raised."""
        self._todo.put(None)
        self._thread.join()
        self._sent.put(None)
        self._answers.join()
        self._stop()
        if self.error is not None:
            raise self.error
        return self.messages

    def _stop(self) -> None:
        try:
            if self.proc.poll() is None:
                pickle.dump(None, self._to_child)
        except OSError:
            pass
        # closed whether or not the child is alive (a killed child's pipe too); the
        # last bytes to a dead child fail, the pipe is closed all the same
        with contextlib.suppress(OSError):
            self._to_child.close()
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
        self._sent.put(None)
        self._answers.join()
        self._stop()


#: Rows of a layer sent to the child in one Arrow record batch: the geometry is
#: turned into WKB a batch at a time, and the child hands GDAL a batch at a time,
#: so neither process holds a layer's WKB (or its shapes rebuilt) whole.
BATCH_ROWS = 65_536


class ArrowLayer:
    """A layer in the form GDAL's Arrow writer takes: the attribute columns with
    their Arrow schema (made into Arrow a batch at a time), the geometry kept as
    shapes until each batch is sent (as WKB), and what ``pyogrio.write_arrow`` needs
    to know of the geometry (its column, type and CRS, decided as
    ``pyogrio.write_dataframe`` decides them for a GeoPackage)."""

    def __init__(self, attributes: pd.DataFrame, columns: Any, geometry: np.ndarray | None,
                 position: int, meta: dict[str, Any]):
        self.attributes = attributes
        self.columns = columns  # the attributes' Arrow schema
        self.geometry = geometry
        self.position = position
        self.meta = meta

    def schema(self) -> Any:
        import pyarrow as pa

        if self.geometry is None:
            return self.columns
        return self.columns.insert(self.position,
                                   pa.field(self.meta["geometry_name"], pa.binary()))

    def batches(self, rows: int = BATCH_ROWS) -> Any:
        """Record batches of at most ``rows`` rows (at least one, for the schema): the
        text of a million rows is never held as Arrow whole beside the frame."""
        import pyarrow as pa

        schema = self.schema()
        n = len(self.attributes)
        for i in range(0, max(n, 1), rows):
            part = pa.Table.from_pandas(self.attributes.iloc[i:i + rows],
                                        schema=self.columns, preserve_index=False)
            cols = [c.combine_chunks() for c in part.columns]
            if self.geometry is not None:  # (numpy's WKB: shapely's bytes, not its GIL)
                cols.insert(self.position, wkb_array(self.geometry[i:i + rows]))
            yield pa.RecordBatch.from_arrays(cols, schema=schema)


#: shapely's geometry type ids and GDAL's names of them.
_TYPE_NAMES = {0: "Point", 1: "LineString", 2: "LineString", 3: "Polygon", 4: "MultiPoint",
               5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}


def _geometry_type(geoms: np.ndarray, layer: str) -> tuple[str | None, bool]:
    """The layer's geometry type for GDAL, and whether single parts are written as
    multi-part: one type as it is; a single and a multi type of one family (Polygon
    and MultiPolygon) as the multi type (a GeoPackage layer holds one type); other
    mixes ``Unknown``; a layer with no shape at all the type docs/results.md gives
    it. `` Z`` when every shape has a Z; None when only some have (a GeoPackage
    refuses the mix: :func:`write_layer` says so)."""
    from .writing import documented_geometry_type

    present = ~shapely.is_missing(geoms)
    if not present.any():
        return documented_geometry_type(layer), False
    solid = geoms[present & ~shapely.is_empty(geoms)]
    z = shapely.has_z(solid)
    has_z = bool(z.any())
    if has_z and not z.all():
        return None, False
    types = {_TYPE_NAMES[int(k)] for k in np.unique(shapely.get_type_id(geoms[present]))}
    promote = False
    if len(types) == 1:
        gtype = types.pop()
    elif len(types) == 2 and any({s, "Multi" + s} == types
                                 for s in ("Point", "LineString", "Polygon")):
        gtype = next(t for t in types if t.startswith("Multi"))
        promote = True
    else:
        gtype = "Unknown"
    if has_z and gtype != "Unknown":
        gtype += " Z"
    return gtype, promote


def _as_multi(geoms: np.ndarray) -> np.ndarray:
    """Single-part shapes as multi-part shapes of one part (the others as they are)."""
    out = geoms.copy()
    kind = shapely.get_type_id(geoms)
    for single, make in ((0, shapely.multipoints), (1, shapely.multilinestrings),
                         (3, shapely.multipolygons)):
        at = np.flatnonzero(kind == single)
        if len(at):
            out[at] = make(geoms[at], indices=np.arange(len(at)))  # one part each
    return out


def _crs_text(crs: Any) -> str | None:
    if not crs:
        return None
    epsg = crs.to_epsg()
    return f"EPSG:{epsg}" if epsg else crs.to_wkt("WKT1_GDAL")


def _attribute_table(df: pd.DataFrame) -> tuple[pd.DataFrame, Any]:
    """The attribute columns, and their Arrow schema, typed as GDAL's Arrow writer
    wants them: datetimes that may carry several UTC offsets as text marked
    ``DateTime`` (GDAL keeps the offsets), values Arrow cannot type as text, columns
    with no type (null in every row) as text. The schema is inferred from the whole
    frame (no values converted); the rows become Arrow a batch at a time
    (:meth:`ArrowLayer.batches`). Raises what Arrow raises for a column it cannot
    take at all."""
    import pyarrow as pa

    df = pd.DataFrame(df, copy=False)
    as_datetime: list[str] = []
    for name, dtype in df.dtypes.items():
        if dtype == "object":
            inferred = pd.api.types.infer_dtype(df[name])
            if inferred == "string":
                continue
            if inferred == "datetime":
                df[name] = df[name].astype("string")
                as_datetime.append(str(name))
            else:
                try:
                    pa.Schema.from_pandas(df[[name]])
                except pa.ArrowInvalid:
                    df[name] = df[name].astype("string")
        elif isinstance(dtype, pd.DatetimeTZDtype) and str(dtype.tz) != "UTC":
            df[name] = df[name].astype("string")
            as_datetime.append(str(name))
    schema = pa.Schema.from_pandas(df, preserve_index=False)
    fields = []
    for f in schema:
        if pa.types.is_null(f.type):
            f = f.with_type(pa.string())
        elif pa.types.is_dictionary(f.type) and pa.types.is_null(f.type.value_type):
            f = f.with_type(pa.dictionary(f.type.index_type, pa.string()))
        if f.name in as_datetime:
            f = f.with_metadata({"GDAL:OGR:type": "DateTime"})
        fields.append(f)
    return df, pa.schema(fields, metadata=schema.metadata)


def to_arrow(name: str, df: pd.DataFrame) -> ArrowLayer | None:
    """Layer ``name`` as the GeoPackage holds it (:func:`file_form`, :func:`gpkg_ready`)
    in the form the child writes (:class:`ArrowLayer`), or None when a column will
    not go into Arrow."""
    import pyarrow as pa

    df = gpkg_ready(file_form(name, df))
    geoms = None
    position = 0
    meta: dict[str, Any] = {"geometry_name": None, "geometry_type": None, "crs": None}
    if isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns:
        gname = df.geometry.name
        position = list(df.columns).index(gname)
        geoms = np.asarray(df[gname].array, dtype=object)
        gtype, promote = _geometry_type(geoms, name)
        if gtype is None:
            return None  # written by write_layer, which gives GDAL's error
        if promote:
            geoms = _as_multi(geoms)
        meta = {"geometry_name": gname, "geometry_type": gtype, "crs": _crs_text(df.crs)}
        df = pd.DataFrame(df, copy=False).drop(columns=[gname])
    try:
        attributes, columns = _attribute_table(df)
        if len(attributes):  # a column Arrow cannot take at all fails before the stream
            pa.Table.from_pandas(attributes.iloc[:1], schema=columns, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    return ArrowLayer(attributes, columns, geoms, position, meta)


def send(out: IO[bytes], path: str, name: str, layer: ArrowLayer) -> None:
    """One layer to the child: a pickled header, then an Arrow IPC stream of its
    record batches (written as they are made)."""
    import pyarrow as pa

    pickle.dump((path, name, layer.meta), out, protocol=5)
    with pa.ipc.new_stream(out, layer.schema()) as stream:
        for batch in layer.batches():
            stream.write_batch(batch)
    out.flush()


def write_stream(path: str, name: str, meta: dict[str, Any], reader: Any) -> list[str]:
    """Write the record batches of ``reader`` as layer ``name`` of the GeoPackage
    ``path`` (``pyogrio.write_arrow``, GDAL taking a batch at a time: the shapes are
    never rebuilt here); returns GDAL's warnings."""
    import pyogrio

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if meta["geometry_name"] is None:
            pyogrio.write_arrow(reader, path, layer=name, driver="GPKG")
        else:
            pyogrio.write_arrow(reader, path, layer=name, driver="GPKG", **meta)
    return [str(w.message).strip() for w in caught]


class Flusher:
    """The layers written so far sent to disk on a thread of the child (``fsync``) while
    the next is written, so that the flush before publishing finds little left: on a
    county, the 1.4 GB file was otherwise all flushed at the end, 0.8 s with the run
    waiting. One flush at a time; a flush asked for while one runs starts when it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wanted: set[str] = set()
        self._thread: threading.Thread | None = None

    def flush(self, path: str) -> None:
        with self._lock:
            self._wanted.add(path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gisnet-flush",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._thread = None
                    return
                path = self._wanted.pop()
            with contextlib.suppress(OSError):  # (gone, or no flush there: the final
                fd = os.open(path, os.O_RDONLY)  # one, before publishing, says so)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def wait(self) -> None:
        """Let the flush under way end (the child's exit)."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join()


def main() -> int:
    """The child's loop: a layer in, written, its answer out."""
    import pyogrio

    # The child writes only a GeoPackage being staged (GpkgWriter's path in the run's
    # staging folder): publishing flushes it to disk (fsync) before it is moved into
    # place, and a file left half-written is never published. SQLite's own flushes
    # at each transaction's end are then waits that buy nothing.
    pyogrio.set_gdal_config_options({"OGR_SQLITE_SYNCHRONOUS": "OFF"})
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # standard output carries the answers only
    # GDAL's warnings go back to the parent's log (write_stream); nothing else
    # of this process reaches the user's terminal
    warnings.simplefilter("ignore")
    flusher = Flusher()
    try:
        return _loop(inp, out, flusher)
    finally:
        flusher.wait()


def _loop(inp: IO[bytes], out: IO[bytes], flusher: Flusher) -> int:
    import pyarrow as pa

    while True:
        try:
            msg = pickle.load(inp)
        except EOFError:
            return 0
        if msg is None:
            return 0
        path, name, meta = msg
        del msg
        reader = pa.ipc.open_stream(inp)
        try:
            answer: tuple[str, Any] = ("ok", write_stream(path, name, meta, reader))
            flusher.flush(path)
        except Exception as exc:  # sent to the parent, raised there
            answer = ("error", exc)
            try:  # the rest of the layer's stream, to reach the next message
                for _ in reader:
                    pass
            except Exception:  # the stream went to GDAL: nothing of it is left
                pass
        del reader
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
