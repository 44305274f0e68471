"""Result layers held by the HTTP service, indexed by id and pre-serialized.

A county's served tables are a million rows each: the service holds their
repeated text as categories (:func:`compact_text`), their ids as flat arrays
(:class:`IdIndex`) and their rows serialized once, compressed a block of rows
at a time (:class:`PackedRows`), so what it holds stays near the size of the
results GeoPackage rather than several times it. A layer served from a run's
results may hold its shapes as the WKB they were read as (:class:`Shapes`), made
into geometries for the rows a request or a packed chunk needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyproj import CRS

from ..serialize import WGS84, feature_collection, feature_fragments
from .errors import ServiceUnavailable


class IdIndex:
    """Row positions of each id of a column (ids as text), held as flat arrays.

    A county's result layers are indexed by a million ids a column, a dozen
    columns in all: a dict of one position array per id costs about 250 MB a
    column (a Python string, an array object and a dict entry per id); this holds
    the ids once as UTF-8 text end to end with a sorted 64-bit hash of each, and every id's
    positions in one array (about 50 MB). :meth:`get` finds an id by its hash
    (Python's, of this process) and compares the text, so two ids with one hash are
    still told apart.
    """

    __slots__ = ("_bounds", "_by_hash", "_hashes", "_offsets", "_rows", "_text")

    def __init__(self, values: np.ndarray, positions: np.ndarray):
        texts = np.array([v if isinstance(v, str) else str(v) for v in values], dtype=object)
        codes, uniques = pd.factorize(texts)
        del texts
        order = np.argsort(codes, kind="stable")
        pos = np.asarray(positions, dtype=np.int64)
        # positions as 32-bit integers while a table has fewer than 2**31 rows
        small = np.int32 if len(pos) == 0 or int(pos.max()) < 2**31 - 1 else np.int64
        self._rows = pos[order].astype(small)
        self._bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1)).astype(small)
        del codes, order, pos
        # Python's own hash of each text (this process's: the index lives and dies with it)
        hashes = np.fromiter((hash(u) for u in uniques), dtype=np.int64, count=len(uniques))
        self._by_hash = np.argsort(hashes, kind="stable").astype(small)
        self._hashes = hashes[self._by_hash]
        # the ids' UTF-8 text end to end, and where each begins (compared as bytes)
        words = [u.encode("utf-8", "surrogatepass") for u in uniques]
        sizes = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        wide = np.int64 if sizes.sum() >= 2**31 - 1 else np.int32
        self._offsets = np.zeros(len(words) + 1, dtype=wide)
        np.cumsum(sizes, out=self._offsets[1:])
        self._text = b"".join(words)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def get(self, value: str) -> np.ndarray | None:
        """The positions of ``value``'s rows, ascending, or None when no row has it."""
        h = hash(value)
        lo = int(np.searchsorted(self._hashes, h, side="left"))
        hi = int(np.searchsorted(self._hashes, h, side="right"))
        if lo == hi:
            return None
        word = value.encode("utf-8", "surrogatepass")
        for j in range(lo, hi):
            i = int(self._by_hash[j])
            if self._text[self._offsets[i]:self._offsets[i + 1]] == word:
                return self._rows[self._bounds[i]:self._bounds[i + 1]]
        return None


#: Rows of a :class:`PackedRows` block (compressed together, decompressed together).
PACK_ROWS = 32
#: Codec of the blocks: LZ4 through pyarrow (a county's GeoJSON rows are about 7.5
#: times smaller; a block of 32 rows is back in about 5 µs).
PACK_CODEC = "lz4"
#: Rows serialized at a time while packing (bounds the text held at once: a county's
#: obligations packed 65,536 rows at a time peaked 0.5 GB above what they left held;
#: 16,384 at a time, the heap trimmed after each chunk, 0.1 GB, in about the same time).
PACK_CHUNK_ROWS = 16_384


class PackedRows:
    """Serialized rows (bytes each) held compressed, :data:`PACK_ROWS` at a time.

    A served county's GeoJSON rows are several gigabytes of text, each row read
    by a lookup a few at a time; held as LZ4 blocks of 32 rows (pyarrow's codec)
    they take about an eighth of that, and a row is taken back by decompressing
    its block. The bytes given back are the bytes packed.
    """

    __slots__ = ("_blocks", "_ends", "_n")

    def __init__(self, chunks: Iterator[list[bytes]] | Sequence[list[bytes]] = ()) -> None:
        self._blocks: list[bytes] = []
        self._ends: list[np.ndarray] = []  # per block: each row's end in the block
        self._n = 0
        for chunk in chunks:
            self.extend(chunk)

    def extend(self, rows: list[bytes]) -> None:
        """Add rows (every chunk but the last a multiple of :data:`PACK_ROWS` long)."""
        if self._n % PACK_ROWS:
            raise ValueError("rows added after a short block")
        for a in range(0, len(rows), PACK_ROWS):
            part = rows[a:a + PACK_ROWS]
            data = b"".join(part)
            self._blocks.append(pa.compress(data, codec=PACK_CODEC, asbytes=True))
            self._ends.append(np.cumsum([len(r) for r in part], dtype=np.uint32))
        self._n += len(rows)

    def __len__(self) -> int:
        return self._n

    def _block(self, b: int) -> bytes:
        ends = self._ends[b]
        return pa.decompress(self._blocks[b], decompressed_size=int(ends[-1]),
                             codec=PACK_CODEC, asbytes=True)

    def __getitem__(self, i: int) -> bytes:
        return self.take([i])[0]

    def take(self, positions: Sequence[int] | np.ndarray) -> list[bytes]:
        """The rows at ``positions``, in that order (each block decompressed once)."""
        out: list[bytes] = []
        opened: dict[int, bytes] = {}
        for i in positions:
            i = int(i)
            if not 0 <= i < self._n:
                raise IndexError(i)
            b, j = divmod(i, PACK_ROWS)
            data = opened.get(b)
            if data is None:
                if len(opened) > 64:
                    opened.clear()
                data = opened[b] = self._block(b)
            ends = self._ends[b]
            out.append(data[int(ends[j - 1]) if j else 0:int(ends[j])])
        return out

    def nbytes(self) -> int:
        """Bytes held (compressed blocks and row ends)."""
        return sum(len(b) for b in self._blocks) + sum(e.nbytes for e in self._ends)


def pack_rows(df: pd.DataFrame, serialize: Callable[[pd.DataFrame], list[bytes]]) -> PackedRows:
    """``serialize`` applied to ``df`` :data:`PACK_CHUNK_ROWS` rows at a time, packed
    (:func:`pack_slices`)."""
    return pack_slices(len(df), lambda a, b: serialize(df.iloc[a:b]))


def pack_slices(n: int, serialize: Callable[[int, int], list[bytes]]) -> PackedRows:
    """``serialize(a, b)`` (rows ``a`` to ``b`` of ``n``, serialized) over
    :data:`PACK_CHUNK_ROWS` rows at a time, packed; the C heap trimmed after each chunk
    (:func:`gisnet.memory.release`: the chunk's text, freed between the packed blocks
    kept, is otherwise held as the heap's)."""
    from ..memory import release

    def chunks() -> Iterator[list[bytes]]:
        for a in range(0, n, PACK_CHUNK_ROWS):
            yield serialize(a, min(a + PACK_CHUNK_ROWS, n))
            if a + PACK_CHUNK_ROWS < n:
                release()

    return PackedRows(chunks())


class Shapes:
    """A layer's shapes held as the WKB they were read as (one Arrow array copied out of
    the read's batches, which hold the other columns too), made into geometries per
    use: the rows of a request, a chunk at a time for packing, all at once for what
    needs them all (a collection's tree). A county's million paths or evidence lines
    are then not made at the start, nor held as geometries unless asked for whole."""

    __slots__ = ("crs", "wkb")

    def __init__(self, wkb: pa.ChunkedArray | pa.Array, crs: Any) -> None:
        self.wkb = _own(wkb)
        self.crs = crs

    def __len__(self) -> int:
        return len(self.wkb)

    def take(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """The geometries at ``positions`` (None where missing)."""
        return _geometries(self.wkb.take(pa.array(np.asarray(positions, dtype=np.int64))))

    def slice(self, a: int, b: int) -> np.ndarray:
        """The geometries of rows ``a`` to ``b``."""
        return _geometries(self.wkb.slice(a, b - a))

    def all(self) -> np.ndarray:
        return _geometries(self.wkb)

    def subset(self, positions: np.ndarray) -> Shapes:
        """The shapes at ``positions``, still as WKB."""
        return Shapes(self.wkb.take(pa.array(np.asarray(positions, dtype=np.int64))), self.crs)


def _own(wkb: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A copy of ``wkb`` as one array in buffers of its own (a take from a chunked
    array joins its chunks first: a copy of the whole layer per request), with 64-bit
    offsets (joined beyond 2 GB)."""
    chunks = wkb.chunks if isinstance(wkb, pa.ChunkedArray) else [wkb]
    if pa.types.is_binary(wkb.type):
        chunks = [c.cast(pa.large_binary()) for c in chunks]
    if not chunks:
        return pa.array([], type=pa.large_binary() if pa.types.is_binary(wkb.type)
                        else wkb.type)
    return pa.concat_arrays(chunks)


def _geometries(wkb: pa.Array) -> np.ndarray:
    import shapely

    return shapely.from_wkb(wkb.to_numpy(zero_copy_only=False))


class LayerLater:
    """A layer read with its shapes left as WKB (:class:`Shapes`): its other columns
    (``frame``), the shapes to be its last column, ``geometry``."""

    __slots__ = ("frame", "shapes")

    def __init__(self, frame: pd.DataFrame, shapes: Shapes) -> None:
        self.frame, self.shapes = frame, shapes

    def __len__(self) -> int:
        return len(self.frame)

    def whole(self) -> gpd.GeoDataFrame:
        """The layer as a frame, its shapes made."""
        return gpd.GeoDataFrame(self.frame, geometry=self.shapes.all(), crs=self.shapes.crs)


def text_objects(s: pd.Series) -> pd.Series:
    """Arrow-backed text (as pyogrio reads it) as Python objects, None for null, with
    one string object per distinct value shared by its rows: a county's columns of
    repeated text cost a pointer a row, and no row's string is made only to be
    dropped again (which leaves the allocator's pages held)."""
    arr = pa.array(s.array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    words = np.empty(len(enc.dictionary) + 1, dtype=object)
    words[:-1] = enc.dictionary.to_pylist()
    codes = pc.fill_null(enc.indices, len(words) - 1).to_numpy(zero_copy_only=False)
    return pd.Series(words[codes], index=s.index, dtype=object, name=s.name)


#: A text column is held as categories when it has at most this share of distinct values.
CATEGORY_SHARE = 0.5
#: pandas' Arrow-backed text (``str``), NaN for a missing value: the ids' dtype.
ARROW_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)


def objects(s: pd.Series) -> np.ndarray:
    """A column's values as Python objects, None where missing (text held as
    categories or Arrow text reads NaN where missing)."""
    return s.astype(object).where(s.notna(), None).to_numpy(dtype=object)


def compact_arrow_text(s: pd.Series) -> pd.Series:
    """Arrow-backed text (as pyogrio reads it) held as :func:`compact_text` holds
    :func:`text_objects` of it, made from the Arrow array without a Python string
    per row: a categorical when at most :data:`CATEGORY_SHARE` of the values are
    distinct (categories in order of first appearance, as ``pd.factorize`` gives
    them), else a copy of the column as pandas' ``str``. A frame of fewer than two
    rows is not compacted (:func:`compact_text`): its text as Python objects."""
    n = len(s)
    if n < 2:
        return text_objects(s)
    arr = pa.array(s.array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    if len(enc.dictionary) > CATEGORY_SHARE * n:  # ids, as pandas' str
        # copied: text pyogrio read refers to its whole batch's memory (the batch's
        # shapes as WKB among it), which a column of it would keep held
        own = pc.take(arr, pa.array(np.arange(n)))
        return pd.Series(own.to_pandas(types_mapper=lambda _t: ARROW_TEXT), index=s.index,
                         name=s.name)
    codes = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False)
    cats = pd.Index(enc.dictionary.to_pylist(), dtype=object)
    return pd.Series(pd.Categorical.from_codes(codes, categories=cats), index=s.index,
                     name=s.name)


def compact_text(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each text column of Python strings held compactly: repeated values
    (statuses, sections, reasons, ids shared by many rows) as a categorical, a small
    code per row (a county's ``obligations`` holds "§ ..." a million times); the
    rest (ids) as Arrow-backed text (pandas' ``str``, as the analyses hold it) instead
    of a Python string per row. Values, nulls and the GeoJSON the rows serialize to
    are unchanged."""
    n = len(df)
    if n < 2:
        return df
    out = None
    for c in df.columns:
        s = df[c]
        if not pd.api.types.is_object_dtype(s.dtype):
            continue
        vals = s.to_numpy()
        kinds = {type(v) for v in vals[:1000]} | {type(v) for v in vals[-1000:]}
        if not kinds <= {str, type(None)}:
            continue
        codes, uniques = pd.factorize(vals, use_na_sentinel=True)
        if not all(isinstance(u, str) for u in uniques):
            continue
        if out is None:
            out = df.copy(deep=False)
        if len(uniques) > CATEGORY_SHARE * n:  # ids: Arrow text, as the analyses hold it
            out[c] = s.astype("str")
        else:
            out[c] = pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))
    return df if out is None else out


class ResultTable:
    """One result layer, indexed by its id columns and pre-serialized.

    Parameters
    ----------
    name
        Layer name as in the results GeoPackage (``obligations`` ...).
    gdf
        The layer, geometry in the town's working CRS (or a plain DataFrame).
    keys
        Columns to index for lookups (those present are used).
    eager
        Serialize every row now (else on first use).

    Notes
    -----
    Every row is serialized once to a GeoJSON Feature in EPSG:4326 and held
    packed (:class:`PackedRows`); a lookup in that CRS joins the stored bytes.
    While the rows are being packed (:attr:`packing`), and in other CRSs, the
    selected rows are serialized per request: ``gisnet serve --results`` answers
    while it packs the hot tables. Repeated text is held as categories
    (:func:`compact_text`).
    """

    def __init__(self, name: str, gdf: pd.DataFrame | LayerLater, keys: Sequence[str] = (),
                 *, eager: bool = True) -> None:
        self.name = name
        frame = compact_text((gdf.frame if isinstance(gdf, LayerLater) else gdf)
                             .reset_index(drop=True))
        # a layer whose shapes are held as WKB: its frame without them until asked for whole
        self._shapes = gdf.shapes if isinstance(gdf, LayerLater) else None
        self._frame: pd.DataFrame | None = frame if self._shapes is not None else None
        self._gdf: pd.DataFrame | None = None if self._shapes is not None else frame
        crs = self._shapes.crs if self._shapes is not None else getattr(gdf, "crs", None)
        self.crs: CRS | None = (CRS.from_user_input(crs)
                                if crs is not None and (self._shapes is not None
                                                        or isinstance(gdf, gpd.GeoDataFrame))
                                else None)
        self._shapes_lock = threading.Lock()
        # the id columns looked up by, each indexed on first use (:meth:`id_index`)
        self.index: dict[str, IdIndex | None] = {k: None for k in keys if k in frame.columns}
        self._wgs84: PackedRows | None = None
        #: True while the rows are being packed, or are to be (``gisnet serve --results``
        #: packs the hot tables once it listens): a request meanwhile serializes its rows
        self.packing = False
        self._lock = threading.Lock()
        self._index_lock = threading.Lock()
        if eager:
            self._serialized()

    @property
    def gdf(self) -> pd.DataFrame:
        """The layer (a GeoDataFrame when it has shapes); shapes held as WKB are made
        now, once (thread-safe)."""
        if self._gdf is None:
            with self._shapes_lock:
                if self._gdf is None:
                    assert self._frame is not None and self._shapes is not None
                    self._gdf = LayerLater(self._frame, self._shapes).whole()
                    self._shapes = self._frame = None
        return self._gdf

    @property
    def frame(self) -> pd.DataFrame:
        """The layer's columns, its shapes among them only if made (:attr:`gdf`): for
        what reads the other columns (ids, filters, counts)."""
        f = self._frame
        return self.gdf if f is None else f

    @property
    def geometry_name(self) -> str | None:
        """The shapes' column, or None when the layer has none."""
        if self._shapes is not None:
            return "geometry"
        g = self.gdf
        return g.geometry.name if isinstance(g, gpd.GeoDataFrame) \
            and g.geometry.name in g.columns else None

    def geometry_chunks(self, rows: int = PACK_CHUNK_ROWS) -> Iterator[gpd.GeoSeries]:
        """Every shape (in :attr:`crs`), ``rows`` at a time: shapes held as WKB are made
        a chunk at a time and not held (what reads them all, a collection's extent, its
        CRS84 tree or its style, holds at most a chunk of them besides its own)."""
        for a in range(0, len(self), rows):
            b = min(a + rows, len(self))
            shapes = self._shapes
            if shapes is None or self._gdf is not None:
                yield self.gdf.geometry.iloc[a:b]
            else:
                yield gpd.GeoSeries(shapes.slice(a, b), crs=shapes.crs)

    def geometry_at(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """The shapes (in :attr:`crs`, an array of its own, None where missing) of the
        rows at ``positions``, made of these rows only while the layer's are held as
        WKB."""
        pos = np.asarray(positions, dtype=np.int64)
        shapes = self._shapes
        if shapes is None or self._gdf is not None:
            return np.array(self.gdf.geometry.array[pos], dtype=object)
        return shapes.take(pos)

    def rows(self, positions: Sequence[int] | np.ndarray) -> pd.DataFrame:
        """The rows at ``positions``, shapes made of these rows only while the layer's
        are held as WKB (as :attr:`gdf` ``.iloc`` gives them)."""
        pos = np.asarray(positions, dtype=np.int64)
        shapes, f = self._shapes, self._frame
        if shapes is None or f is None:
            return self.gdf.iloc[pos]
        return gpd.GeoDataFrame(f.iloc[pos], geometry=shapes.take(pos), crs=shapes.crs)

    def row_slice(self, a: int, b: int) -> pd.DataFrame:
        """Rows ``a`` to ``b`` (as :meth:`rows`)."""
        shapes, f = self._shapes, self._frame
        if shapes is None or f is None:
            return self.gdf.iloc[a:b]
        return gpd.GeoDataFrame(f.iloc[a:b], geometry=shapes.slice(a, b), crs=shapes.crs)

    def serialize(self) -> None:
        """Serialize every row now, if not done yet (thread-safe)."""
        self._serialized()

    def _serialized(self) -> PackedRows:
        """Every row as a GeoJSON feature in EPSG:4326 (built once, packed; shapes held
        as WKB made a chunk at a time)."""
        if self._wgs84 is None:
            with self._lock:
                if self._wgs84 is None:
                    self.packing = True
                    self._wgs84 = pack_slices(len(self), lambda a, b: feature_fragments(
                        self._in_crs(self.row_slice(a, b), WGS84)))
        return self._wgs84

    def __len__(self) -> int:
        return len(self.frame)

    def _in_crs(self, df: pd.DataFrame, crs: CRS) -> pd.DataFrame:
        if self.crs is None or not isinstance(df, gpd.GeoDataFrame) or not len(df):
            return df
        return df if self.crs.equals(crs) else df.to_crs(crs)

    def id_index(self, key: str) -> IdIndex:
        """The index of id column ``key``, built on first use (thread-safe): a county's
        table is looked up by one or two of its id columns, and an index costs about
        40 bytes a row."""
        if key not in self.index:
            raise ServiceUnavailable(f"layer {self.name!r} has no {key!r} column")
        idx = self.index[key]
        if idx is None:
            with self._index_lock:
                idx = self.index[key]
                if idx is None:
                    col = self.frame[key]
                    ok = col.notna().to_numpy()
                    idx = self.index[key] = IdIndex(col[ok].astype(object).to_numpy(),
                                                    np.flatnonzero(ok))
        return idx

    def lookup(self, key: str, value: str) -> np.ndarray | None:
        """Row positions whose ``key`` column equals ``value`` (None if none)."""
        return self.id_index(key).get(value)

    def lookup_many(self, key: str, values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Row positions of many ids, in the order asked, and the ids not found."""
        idx = self.id_index(key)
        found: list[np.ndarray] = []
        missing: list[str] = []
        for v in values:
            p = idx.get(v)
            if p is None:
                missing.append(v)
            else:
                found.append(p)
        pos = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
        return pos, missing

    def fragments(self, positions: Sequence[int] | np.ndarray, crs: CRS) -> list[bytes]:
        """Serialized features of the given rows in ``crs``: in EPSG:4326 the packed
        rows (packed on first use), but while they are being packed (or are to be:
        :attr:`packing`) and in other CRSs the rows serialized now (the same bytes)."""
        if crs is WGS84 or crs.equals(WGS84):
            packed = self._wgs84
            if packed is not None:
                return packed.take(positions)
            if not self.packing:
                return self._serialized().take(positions)
            crs = WGS84  # being packed (or to be): these rows now
        return feature_fragments(self._in_crs(self.rows(positions), crs))

    def collection(self, positions: Sequence[int] | np.ndarray, crs: CRS,
                   extra: dict[str, Any] | None = None) -> bytes:
        """A FeatureCollection of the given rows in ``crs``."""
        return feature_collection(self.fragments(positions, crs), crs, extra)

    def all_positions(self) -> np.ndarray:
        return np.arange(len(self))


#: Lookup keys of each result layer.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "sampling_plan": ("user_id", "control_manhole_id"),
    "frontage": ("parcel_id",),
    "graph_nodes": ("node_id",),
    "graph_edges": ("main_id",),
    "obligations": ("parcel_id", "building_id"),
    "obligation_evidence": ("parcel_id", "building_id"),
    "control_manholes": ("parcel_id", "building_id", "user_id", "control_manhole_id"),
    "control_paths": ("parcel_id", "building_id", "user_id"),
    "pipes_capacity": ("main_id",),
    "plants": ("plant_id",),
}


#: The id columns the hot endpoints look up by: indexed at startup (the rest on first use).
HOT_KEYS: dict[str, tuple[str, ...]] = {
    "obligations": ("parcel_id",),
    "control_manholes": ("parcel_id",),
    "pipes_capacity": ("main_id",),
    "plants": ("plant_id",),
}

#: Tables whose rows are answered by the hot endpoints: serialized at startup.
SERVED_EAGERLY = frozenset({"obligations", "control_manholes", "control_paths",
                            "pipes_capacity", "plants"})
