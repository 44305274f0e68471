"""The features of a layer to cut into tiles, held and handed out in bounded memory.

:func:`gisnet.maps.tiles.layer_tiles` cuts the detail zoom (every feature) block of
tiles by block of tiles: :func:`detail_blocks` makes the blocks from each feature's
tile range, :class:`Mercator` holds the layer in EPSG:3857 (polygons and points as
their coordinates only) and rebuilds the features a block needs.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import shapely

from .mvt import _spread

#: Features reprojected to EPSG:3857 at once (their coordinates), and bounds computed
#: from rebuilt geometries at once.
REPROJECT_FEATURES = 131_072


def detail_blocks(tx0: np.ndarray, tx1: np.ndarray, ty0: np.ndarray, ty1: np.ndarray,
                  limit: int) -> list[tuple[int, int, int, int]]:
    """Windows ``(x0, x1, y0, y1)`` of tiles that together cover every tile once, each
    reached by ``limit`` (feature, tile) pairs or fewer where it can be.

    ``tx0 .. ty1`` are each feature's tile columns and rows (inclusive). A window
    is a run of whole columns or, where one column is reached by more than
    ``limit`` pairs, a run of rows of that column (a single tile reached more
    often is a window of its own). Windows come in tile order (column, then row):
    consecutive runs of tile ids ``x * 2**z + y``.
    """
    if len(tx0) == 0:
        return []
    lo, hi = int(tx0.min()), int(tx1.max())
    ny = ty1 - ty0 + 1
    # pairs per column: each feature adds its rows to each of its columns
    per_col = (np.bincount(tx0 - lo, weights=ny, minlength=hi - lo + 2)
               - np.bincount(tx1 - lo + 1, weights=ny, minlength=hi - lo + 2)).astype(np.int64)
    cum = np.cumsum(np.cumsum(per_col)[:-1])
    blocks: list[tuple[int, int, int, int]] = []
    i, ncol = 0, hi - lo + 1
    while i < ncol:
        base = int(cum[i - 1]) if i else 0
        j = int(np.searchsorted(cum, base + limit, side="right"))
        if j > i:
            blocks.append((lo + i, lo + j - 1, int(ty0.min()), int(ty1.max())))
            i = j
            continue
        # one column reached by more than limit pairs: runs of its rows
        x = lo + i
        on = np.flatnonzero((tx0 <= x) & (tx1 >= x))
        rlo, rhi = int(ty0[on].min()), int(ty1[on].max())
        per_row = np.bincount(ty0[on] - rlo, minlength=rhi - rlo + 2) \
            - np.bincount(ty1[on] - rlo + 1, minlength=rhi - rlo + 2)
        rcum = np.cumsum(np.cumsum(per_row)[:-1])
        r = 0
        while r < rhi - rlo + 1:
            rbase = int(rcum[r - 1]) if r else 0
            s = max(int(np.searchsorted(rcum, rbase + limit, side="right")), r + 1)
            blocks.append((x, x, rlo + r, rlo + s - 1))
            r = s
        i += 1
    return blocks


class Mercator:
    """A layer's features in EPSG:3857, as :meth:`geopandas.GeoSeries.to_crs` gives them
    (a multi-point as a point on it), and each one's bounds.

    ``whole``: the geometries are made once and held. Otherwise only the reprojected
    coordinates are held (16 bytes a vertex, a fraction of the GEOS geometries) and
    :meth:`take` rebuilds the features asked for: the coordinates of every feature go
    through PROJ once, a few features at a time (:data:`REPROJECT_FEATURES`), the
    geometries are built block by block. Bounds are the coordinates' minimum and
    maximum where that is the geometry's envelope (points, lines, polygons without
    holes: GEOS's envelope of a polygon is its shell's), else those of the rebuilt
    geometry. Each feature's coordinates are the same whichever features go with it.
    """

    def __init__(self, geoms: np.ndarray, crs: Any, family: str, *, whole: bool) -> None:
        from pyproj import CRS, Transformer

        self.geoms, self.crs, self.family = geoms, crs, family
        self.whole: np.ndarray | None = None
        self.xy: np.ndarray | None = None
        #: Points (family point) and polygons without holes (family polygon) whose
        #: coordinates are all finite: what :meth:`coords` gives is the whole feature
        #: (None: no feature is read from its coordinates alone).
        self.simple: np.ndarray | None = None
        n = len(geoms)
        target = CRS.from_user_input("EPSG:3857")
        if whole:
            self.whole = self._to_crs(np.arange(n))
            self.bounds = shapely.bounds(self.whole)
            return
        self.bounds = np.empty((n, 4))
        if CRS.from_user_input(crs).is_exact_same(target) or shapely.has_z(geoms).any():
            # to_crs itself, a chunk at a time (here and again block by block)
            for s0 in range(0, n, REPROJECT_FEATURES):
                i = np.arange(s0, min(n, s0 + REPROJECT_FEATURES))
                self.bounds[i] = shapely.bounds(self.take(i))
            return
        # what GeoSeries.to_crs does (geopandas.array.transform), coordinates only
        tr = Transformer.from_crs(crs, target, always_xy=True)
        ncoord = shapely.get_num_coordinates(geoms).astype(np.int64)
        self.start = np.cumsum(ncoord) - ncoord
        self.ncoord = ncoord
        xy = np.empty((int(ncoord.sum()), 2))
        odd = np.zeros(n, dtype=bool)
        for s0 in range(0, n, REPROJECT_FEATURES):
            s1 = min(n, s0 + REPROJECT_FEATURES)
            c = shapely.get_coordinates(geoms[s0:s1])
            x, y = tr.transform(c[:, 0], c[:, 1])
            c0 = int(self.start[s0])
            xy[c0:c0 + len(c), 0], xy[c0:c0 + len(c), 1] = x, y
            st = self.start[s0:s1] - c0
            self.bounds[s0:s1] = np.column_stack([
                np.minimum.reduceat(x, st), np.minimum.reduceat(y, st),
                np.maximum.reduceat(x, st), np.maximum.reduceat(y, st)])
            odd[s0:s1] = np.logical_or.reduceat(~(np.isfinite(x) & np.isfinite(y)), st)
        self.xy = xy
        tid = shapely.get_type_id(geoms)
        poly = np.flatnonzero(tid == 3)
        odd |= ~np.isin(tid, (0, 1, 2, 3, 5))  # multi-points and -polygons, collections
        odd[poly[shapely.get_num_interior_rings(geoms[poly]) > 0]] = True
        odd |= ncoord == 0
        if family in ("point", "polygon"):
            self.simple = ~odd & (tid == (0 if family == "point" else 3))
        exact = np.flatnonzero(odd)
        for s0 in range(0, len(exact), REPROJECT_FEATURES):
            i = exact[s0:s0 + REPROJECT_FEATURES]
            self.bounds[i] = shapely.bounds(self.take(i))

    def _to_crs(self, i: np.ndarray) -> np.ndarray:
        g = np.asarray(gpd.GeoSeries(self.geoms[i], crs=self.crs).to_crs("EPSG:3857").array,
                       dtype=object)
        return self._points(g)

    def _points(self, g: np.ndarray) -> np.ndarray:
        if self.family == "point":
            multi = shapely.get_type_id(g) == 4
            if multi.any():
                g[multi] = shapely.point_on_surface(g[multi])
        return g

    def coords(self, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The EPSG:3857 coordinates of features ``i`` (as ``shapely.get_coordinates`` of
        :meth:`take` gives them, a ring's closing one included) and each one's count."""
        assert self.xy is not None  # (features read from their coordinates: simple)
        size = self.ncoord[i]
        return self.xy[_spread(self.start[i], size)], size

    def take(self, i: np.ndarray) -> np.ndarray:
        """Features ``i`` (positions, increasing) in EPSG:3857 (all of them: the held
        array itself)."""
        if self.whole is not None:
            return self.whole if len(i) == len(self.whole) else self.whole[i]
        if self.xy is None:
            return self._to_crs(i)
        return self._points(shapely.set_coordinates(self.geoms[i], self.coords(i)[0]))


def orient_rings(coords: np.ndarray, ring: np.ndarray, sizes: np.ndarray,
                 exterior: np.ndarray) -> np.ndarray:
    """Rings' coordinates (``ring``: each one's ring, of ``sizes``), exteriors turned
    clockwise and holes counter-clockwise (y up)."""
    if len(coords):
        # shoelace: twice the signed area of each ring (y up: > 0 counter-clockwise)
        x, y = coords[:, 0], coords[:, 1]
        same = np.r_[ring[1:] == ring[:-1], False]
        cross = np.where(same, x * np.roll(y, -1) - np.roll(x, -1) * y, 0.0)
        area2 = np.bincount(ring, weights=cross, minlength=len(sizes))
        flip = np.where(exterior, area2 > 0, area2 < 0)
        if flip.any():
            start = np.cumsum(sizes) - sizes
            i = np.arange(len(coords))
            r = ring
            rev = flip[r]
            src = np.where(rev, start[r] + (start[r] + sizes[r] - 1 - i), i)
            coords = coords[src]
    return coords


def merged_parts(rank: np.ndarray, n_first: int, first: tuple[np.ndarray, ...],
                 then: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parts of two sets of pieces (``(xy, part_sizes, part_piece)`` each; the
    ``n_first`` pieces of ``first``, then those of ``then``) in the pieces' order:
    ``rank`` is each piece's place."""
    xy = np.concatenate([first[0], then[0]])
    sizes = np.concatenate([first[1], then[1]])
    piece = np.concatenate([rank[first[2]], rank[n_first + then[2]]])
    order = np.argsort(piece, kind="stable")  # a piece's parts keep their order
    start = np.cumsum(sizes) - sizes
    return xy[_spread(start[order], sizes[order])], sizes[order], piece[order]


__all__ = ["REPROJECT_FEATURES", "Mercator", "detail_blocks", "merged_parts", "orient_rings"]
