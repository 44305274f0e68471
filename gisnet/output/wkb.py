"""Shapes as an Arrow array of WKB, the bytes ``shapely.to_wkb`` gives, made by numpy.

The GeoPackage's writer process takes each layer's shapes as WKB
(:mod:`gisnet.output.gpkg_child`). ``shapely.to_wkb`` makes a Python ``bytes`` per
shape, holding the GIL while it does (5 s of a county's run, on the thread that
feeds the writer, against the analyses' own Python). Most layers are of one simple
type: points, lines, polygons without holes, in two dimensions. Their WKB is a short
header and the coordinates, so :func:`wkb_array` writes it for a whole batch into
one buffer with numpy (the headers at their offsets, the coordinates, as
``shapely.get_coordinates`` gives them, in the bytes between) and hands Arrow the
buffers. Anything else (several types, multi-part or curved shapes, Z, empty shapes,
holes, a big-endian machine) goes through ``shapely.to_wkb`` as before. Both give
the same bytes: ``tests/test_wkb.py`` compares them.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import shapely

__all__ = ["wkb_array"]

#: shapely's type id -> (WKB type code, header bytes before the coordinates).
#: Point: byte order, type. LineString: + the number of points. Polygon: + the number
#: of rings (1: no holes) + the ring's number of points.
_SIMPLE = {0: (1, 5), 1: (2, 9), 3: (3, 13)}


def wkb_array(geoms: np.ndarray) -> Any:
    """The shapes ``geoms`` (missing ones as nulls) as a ``pyarrow.binary()`` array of
    their WKB, byte for byte ``shapely.to_wkb(geoms)`` (its defaults: machine byte
    order, no SRID)."""
    import pyarrow as pa

    geoms = np.asarray(geoms, dtype=object)
    made = _simple_wkb(geoms)
    if made is not None:
        return made
    return pa.array(shapely.to_wkb(geoms), type=pa.binary())


def _simple_wkb(geoms: np.ndarray) -> Any:
    """:func:`wkb_array` by numpy, or None when ``geoms`` are not all of one simple
    type (then ``shapely.to_wkb``)."""
    import pyarrow as pa

    if sys.byteorder != "little" or not len(geoms):
        return None
    present = ~shapely.is_missing(geoms)
    shapes = geoms[present]
    if not len(shapes):
        return None
    kinds = shapely.get_type_id(shapes)
    kind = int(kinds[0])
    if kind not in _SIMPLE or not (kinds == kind).all():
        return None
    if shapely.is_empty(shapes).any() or shapely.has_z(shapes).any():
        return None
    if kind == 3 and shapely.get_num_interior_rings(shapes).any():
        return None
    code, head = _SIMPLE[kind]
    counts = shapely.get_num_coordinates(shapes).astype(np.int64)
    coords = shapely.get_coordinates(shapes)
    if len(coords) != counts.sum():  # (cannot be, for these types: the plain way then)
        return None
    lengths = np.zeros(len(geoms), dtype=np.int64)
    lengths[present] = head + 16 * counts
    offsets = np.zeros(len(geoms) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        return None
    headers = np.zeros((len(shapes), head), dtype=np.uint8)
    headers[:, 0] = 1  # little-endian
    headers[:, 1:5] = np.frombuffer(np.array([code], dtype="<u4").tobytes(), dtype=np.uint8)
    if kind == 1:
        headers[:, 5:9] = counts.astype("<u4").view(np.uint8).reshape(-1, 4)
    elif kind == 3:
        headers[:, 5:9] = np.frombuffer(np.array([1], dtype="<u4").tobytes(), dtype=np.uint8)
        headers[:, 9:13] = counts.astype("<u4").view(np.uint8).reshape(-1, 4)
    xy = np.ascontiguousarray(coords, dtype="<f8").view(np.uint8)
    if (counts == counts[0]).all():  # every shape as long: one row of bytes each
        rows = np.empty((len(shapes), head + 16 * int(counts[0])), dtype=np.uint8)
        rows[:, :head] = headers
        rows[:, head:] = xy.reshape(len(shapes), -1)
        data = rows.ravel()
    else:
        data = np.empty(int(offsets[-1]), dtype=np.uint8)
        at = (offsets[:-1][present][:, None] + np.arange(head)).ravel()
        is_head = np.zeros(len(data), dtype=bool)
        is_head[at] = True
        data[at] = headers.ravel()
        # every byte not a header's is a coordinate's, in order: shape by shape, x then y
        data[~is_head] = xy.ravel()
    nulls = int(len(geoms) - present.sum())
    validity = None if nulls == 0 else \
        pa.py_buffer(np.packbits(present, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.binary(), len(geoms),
                                 [validity, pa.py_buffer(offsets.astype(np.int32).tobytes()),
                                  pa.py_buffer(data)], null_count=nulls)
