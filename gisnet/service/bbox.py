"""A collection's bbox search that holds its shapes' bounds, not the shapes.

An OGC ``items?bbox=`` search finds the rows whose shape intersects the box, in
CRS84. A shapely ``STRtree`` of the shapes in CRS84 holds one GEOS object a row
(a county's million parcels: 0.5 GB beside the table). :class:`BoundsIndex` holds
instead each shape's CRS84 bounds, packed into a two-level tree of
:data:`NODE` entries a node (sort-tile-recursive order, as GEOS packs its own),
and no shape: a search takes the rows whose bounds meet the box's, accepts without
a test, when the box is its own envelope (a rectangle, a segment or a point), those
whose bounds show a vertex in it (:func:`_decided`), and asks the collection for
the others' shapes in CRS84 (made from its table's rows and reprojected per
search: a few a search, across the box's corners) to test them with
``shapely.intersects``.
The rows found are those ``STRtree.query(box, predicate="intersects")`` finds
(missing and empty shapes have no bounds and are never found).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import shapely

#: Entries a node of the packed tree (items a leaf, leaves a parent).
NODE = 64


class BoundsIndex:
    """The packed bounds of a collection's shapes in CRS84.

    Parameters
    ----------
    parts
        The shapes in CRS84, a chunk at a time (arrays of shapely geometries, None
        where missing), in row order.
    shapes_of
        The shapes in CRS84 of the rows at the positions given (an int64 array), as
        ``parts`` gave them: called by a search for the rows whose bounds alone do
        not decide.
    """

    def __init__(self, parts: Iterable[np.ndarray],
                 shapes_of: Callable[[np.ndarray], np.ndarray]) -> None:
        self.shapes_of = shapes_of
        bounds = [shapely.bounds(g) for g in parts]
        b = np.concatenate(bounds) if bounds else np.empty((0, 4))
        rows = np.flatnonzero(np.isfinite(b).all(axis=1))
        b = b[rows]
        # sort-tile-recursive: slices by centre x, each sorted by centre y
        n = len(rows)
        leaves = math.ceil(n / NODE)
        per_slice = max(1, math.ceil(math.sqrt(leaves))) * NODE
        by_x = np.argsort((b[:, 0] + b[:, 2]) / 2, kind="stable")
        slice_of = np.empty(n, dtype=np.int64)
        slice_of[by_x] = np.arange(n) // per_slice
        order = np.lexsort(((b[:, 1] + b[:, 3]) / 2, slice_of))
        self.rows = rows[order]
        self.items = b[order]
        self.leaves = _node_bounds(self.items)
        self.parents = _node_bounds(self.leaves)

    def query(self, box: shapely.Geometry) -> np.ndarray:
        """Row positions (ascending) whose shape intersects ``box`` (CRS84)."""
        x0, y0, x1, y1 = shapely.bounds(box)
        return self._search(x0, y0, x1, y1, box,
                            bool(shapely.equals(box, shapely.envelope(box))))

    def query_bounds(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        """Row positions (ascending) whose shape intersects the rectangle ``x0`` to
        ``x1``, ``y0`` to ``y1`` (CRS84, ``x0 <= x1``, ``y0 <= y1``; a segment or a
        point when of no width or height): :meth:`query` of that box, which is made
        only when a shape is to be tested (the common page asks no shapely call)."""
        return self._search(x0, y0, x1, y1, None, True)

    def _search(self, x0: float, y0: float, x1: float, y1: float,
                box: shapely.Geometry | None, rect: bool) -> np.ndarray:
        if not len(self.rows) or not np.isfinite([x0, y0, x1, y1]).all():
            return np.empty(0, dtype=np.int64)
        hit = _meets(self.parents, np.arange(len(self.parents)), x0, y0, x1, y1)
        hit = _meets(self.leaves, _children(hit, len(self.leaves)), x0, y0, x1, y1)
        hit = _meets(self.items, _children(hit, len(self.items)), x0, y0, x1, y1)
        b = self.items[hit]
        # a shape's bounds decide only when the box is its own bounds
        inside = _decided(b, x0, y0, x1, y1) if rect else np.zeros(len(hit), dtype=bool)
        rows = self.rows[hit]
        test = rows[~inside]
        if len(test):
            if box is None:
                box = rectangle(x0, y0, x1, y1)
            test = test[shapely.intersects(self.shapes_of(test), box)]
        return np.sort(np.concatenate([rows[inside], test]))

    def nbytes(self) -> int:
        """Bytes held."""
        return int(self.rows.nbytes + self.items.nbytes + self.leaves.nbytes
                   + self.parents.nbytes)


def rectangle(x0: float, y0: float, x1: float, y1: float) -> shapely.Geometry:
    """The box ``x0`` to ``x1``, ``y0`` to ``y1`` (``x0 <= x1``, ``y0 <= y1``): a
    polygon, or a segment or a point when of no width or height."""
    if x0 < x1 and y0 < y1:
        return shapely.box(x0, y0, x1, y1)
    return shapely.envelope(shapely.multipoints([[x0, y0], [x1, y1]]))


def _decided(b: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Which shapes, of bounds ``b`` (each meeting the box's), intersect the box
    ``x0, y0, x1, y1`` (edges included) by their bounds alone.

    A shape's bounds are reached by its own vertices: a vertex lies at its least y
    (and one at its greatest), with an x within its bounds. A shape whose x range
    lies within the box's and whose least or greatest y does too has that vertex in
    the box; the same with x and y swapped. A shape within the box is one of these.
    The others (across a corner of the box, or from one side of it to the other)
    are left for a test of their shape."""
    in_x = (b[:, 0] >= x0) & (b[:, 2] <= x1)
    in_y = (b[:, 1] >= y0) & (b[:, 3] <= y1)
    y_end = ((b[:, 1] >= y0) & (b[:, 1] <= y1)) | ((b[:, 3] >= y0) & (b[:, 3] <= y1))
    x_end = ((b[:, 0] >= x0) & (b[:, 0] <= x1)) | ((b[:, 2] >= x0) & (b[:, 2] <= x1))
    return (in_x & y_end) | (in_y & x_end)


def _node_bounds(b: np.ndarray) -> np.ndarray:
    """The bounds of each run of :data:`NODE` consecutive entries of ``b``."""
    if not len(b):
        return np.empty((0, 4))
    starts = np.arange(0, len(b), NODE)
    return np.column_stack([np.minimum.reduceat(b[:, 0], starts),
                            np.minimum.reduceat(b[:, 1], starts),
                            np.maximum.reduceat(b[:, 2], starts),
                            np.maximum.reduceat(b[:, 3], starts)])


def _children(nodes: np.ndarray, n: int) -> np.ndarray:
    """The positions (of ``n``) of the entries under ``nodes``."""
    if not len(nodes):
        return np.empty(0, dtype=np.int64)
    start = nodes * NODE
    size = np.minimum(start + NODE, n) - start
    return np.repeat(start - np.cumsum(size) + size, size) + np.arange(int(size.sum()))


def _meets(b: np.ndarray, at: np.ndarray, x0: float, y0: float, x1: float,
           y1: float) -> np.ndarray:
    """Those of ``at`` whose bounds in ``b`` meet the box's (edges included)."""
    s = b[at]
    return at[(s[:, 0] <= x1) & (s[:, 2] >= x0) & (s[:, 1] <= y1) & (s[:, 3] >= y0)]
