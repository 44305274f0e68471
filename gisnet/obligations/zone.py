"""The connection zone: the area within the ordinance's distance of an eligible main."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import geopandas as gpd
import numpy as np
import shapely

from ..rules import is_active, is_public
from ..threads import default_threads
from ..town import Town
from .measuring import check_town, eligible_mask

#: Buffers per tile of :func:`tiled_union` (a few thousand: each tile's union is
#: small and quick, and the tiles' pieces are few enough to merge in one union).
TILE_BUFFERS = 5_000
#: Grid cells across the buffer distance for the interior squares of
#: :func:`buffer_union` (a cell's diagonal is 0.24 of the distance), at most.
CELLS_PER_DISTANCE = 6
#: At most this many grid cells (a distance transform takes 16 bytes a cell): a
#: wider town gets bigger cells, up to a third of the distance; wider still, its
#: buffers are unioned one by one (:func:`tiled_union`).
MAX_CELLS = 8_000_000


def tiled_union(geoms: np.ndarray, *, threads: int | None = None,
                per_tile: int = TILE_BUFFERS,
                each: Callable[[np.ndarray], np.ndarray] | None = None) -> shapely.Geometry:
    """The union of ``geoms`` (of ``each(geoms)``), by square tiles of their
    centroids, on threads.

    The geometries are grouped into a square grid of about ``per_tile`` each
    (by centroid, so each geometry is in one tile), each tile is unioned on its
    own (the tiles on ``threads`` threads: GEOS releases the GIL), then the
    tiles' unions are unioned. Union is associative, so the result covers the
    same area as ``shapely.union_all(geoms)``; only the order of the work differs.
    With ``each`` (a vectorised shapely function, e.g. a buffer), each tile's
    geometries go through it just before their union: only one tile's buffers
    are held at a time, not the whole town's.
    """
    n = len(geoms)
    if n == 0:
        return shapely.Polygon()
    if each is None:
        def each(g: np.ndarray) -> np.ndarray:
            return g
    k = int(np.sqrt(n / per_tile))
    if k <= 1:
        return shapely.union_all(each(geoms))
    c = shapely.get_coordinates(shapely.centroid(geoms))
    lo, hi = c.min(axis=0), c.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ij = np.minimum(((c - lo) / span * k).astype(np.int64), k - 1)
    cell = ij[:, 0] * k + ij[:, 1]
    order = np.argsort(cell, kind="stable")
    cs = cell[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    ends = np.r_[starts[1:], n]
    with ThreadPoolExecutor(max_workers=threads or default_threads()) as ex:
        parts = list(ex.map(lambda se: shapely.union_all(each(geoms[order[se[0]:se[1]]])),
                            zip(starts, ends, strict=True)))
    return shapely.union_all(np.asarray(parts, dtype=object))


def buffer_union(geoms: np.ndarray, distance: float, *, quad_segs: int = 16,
                 threads: int | None = None, per_tile: int = TILE_BUFFERS
                 ) -> shapely.Geometry:
    """The union of the buffers of ``geoms`` (lines and points) by ``distance``.

    A town of few geometries (at most four tiles of ``per_tile``) is
    :func:`tiled_union` of their buffers. In a bigger one most buffers lie deep
    inside the others' and only cost the union time: a grid of squares a sixth
    of the distance wide is laid over the town, the squares wholly inside some
    buffer found from the distance of each square to the nearest line (a
    distance transform of the grid), and a geometry whose buffer lies inside
    those squares (measured the same way) is left out of the union; the squares
    take its place (:func:`interior_squares`). The squares keep a margin of at
    least a twentieth of the distance from the zone's edge, so the edge is made
    of the kept buffers' edges alone: the same polygon as the union of every
    buffer, its coordinates agreeing to floating-point noise. On a generated
    county's 300,000 mains: 3,392 buffers kept, 13.0 -> 1.1 s of one core.
    """
    def each(g: np.ndarray) -> np.ndarray:
        return shapely.buffer(g, distance, quad_segs=quad_segs)

    inner = None
    if int(np.sqrt(len(geoms) / per_tile)) > 1 and distance > 0:
        inner = interior_squares(geoms, distance, quad_segs=quad_segs)
    if inner is None:
        return tiled_union(geoms, threads=threads, per_tile=per_tile, each=each)
    squares, kept = inner
    edge = tiled_union(geoms[kept], threads=threads, per_tile=per_tile, each=each)
    return shapely.union_all(np.asarray([edge, squares], dtype=object))


def interior_squares(geoms: np.ndarray, distance: float, *, quad_segs: int = 16
                     ) -> tuple[shapely.Geometry, np.ndarray] | None:
    """Grid squares inside the union of the buffers of ``geoms``, and which of
    ``geoms`` have a buffer not wholly inside those squares (a boolean mask).

    Each line is sampled at most a cell apart (points as they are) and the grid's
    cells holding a sample are marked; ``scipy.ndimage.distance_transform_edt``
    gives every cell's distance to the nearest marked cell. A cell whose centre is
    within ``r`` of a marked cell's centre lies within ``r`` plus a cell's
    diagonal of a line: it is inside that line's buffer when that is less than the
    distance less what GEOS's buffer gives up (its arcs are chords, a
    ``quad_segs`` arc's sagitta, and its input lines are simplified by a
    hundredth of the distance) and a margin of a twentieth of the distance. A
    geometry is left out when every sample is farther than the distance, half
    the sampling step and a cell's diagonal from every cell not inside: every
    point of its buffer then lies in a square inside. None when the geometries are
    not all points and lines or the grid would be too big (:data:`MAX_CELLS`).
    """
    from scipy.ndimage import distance_transform_edt

    parts, owner = shapely.get_parts(geoms, return_index=True)
    if not np.isin(shapely.get_type_id(parts), (0, 1, 2)).all() or not len(parts):
        return None
    x0, y0, x1, y1 = shapely.total_bounds(parts)
    if not np.isfinite([x0, y0, x1, y1]).all():
        return None
    wide = 2 * distance * (1 + 2 / 3)  # the grid's margins, for cells up to a third
    s = max(distance / CELLS_PER_DISTANCE,
            float(np.sqrt((x1 - x0 + wide) * (y1 - y0 + wide) / MAX_CELLS)))
    pad = distance + 2 * s
    nx, ny = int(np.ceil((x1 - x0 + 2 * pad) / s)), int(np.ceil((y1 - y0 + 2 * pad) / s))
    if s > distance / 3 or nx * ny > MAX_CELLS:
        return None
    gx, gy = x0 - pad, y0 - pad
    coords, at = shapely.get_coordinates(parts, return_index=True)
    # the samples: each segment's ends and points at most a cell apart
    seg = np.flatnonzero(at[1:] == at[:-1])
    a, b = coords[seg], coords[seg + 1]
    pieces = np.maximum(np.ceil(np.hypot(*(b - a).T) / s), 1).astype(np.int64)
    which = np.repeat(np.arange(len(seg)), pieces + 1)
    t = (np.arange(len(which)) - np.repeat(np.cumsum(pieces + 1) - pieces - 1, pieces + 1)) \
        / pieces[which]
    alone = np.flatnonzero(np.bincount(at, minlength=len(parts)) == 1)  # points
    lone = np.isin(at, alone)
    samples = np.concatenate([a[which] + t[:, None] * (b - a)[which], coords[lone]])
    whose = owner[np.concatenate([at[seg][which], at[lone]])]
    del which, t, a, b
    ci = np.clip(((samples[:, 0] - gx) / s).astype(np.int64), 0, nx - 1)
    cj = np.clip(((samples[:, 1] - gy) / s).astype(np.int64), 0, ny - 1)
    del samples
    free = np.ones((ny, nx), dtype=bool)
    free[cj, ci] = False
    diagonal = s * np.sqrt(2.0)
    given_up = distance * (1 - np.cos(np.pi / (4 * quad_segs))) + 0.01 * distance
    # (cells at most a third of the distance wide: still more than 0.4 of it)
    reach = distance - given_up - distance / 20 - diagonal  # cell centre to a marked one
    inside = distance_transform_edt(free) * s <= reach
    del free
    clear = distance_transform_edt(inside)[cj, ci] * s > distance + s / 2 + diagonal
    kept = np.zeros(len(geoms), dtype=bool)
    kept[whose[~clear]] = True
    # the squares inside, as one rectangle per run of them along each row
    edges = np.diff(np.pad(inside, ((0, 0), (1, 1))).astype(np.int8), axis=1)
    row, c0 = np.nonzero(edges == 1)
    c1 = np.nonzero(edges == -1)[1]
    xs, ys = gx + np.arange(nx + 1) * s, gy + np.arange(ny + 1) * s
    squares = shapely.union_all(shapely.box(xs[c0], ys[row], xs[c1], ys[row + 1]))
    return squares, kept


def connection_zone(town: Town) -> gpd.GeoDataFrame:
    """The area within the profile's distance of the eligible mains.

    With ``include_manholes`` the public, active manholes are buffered too. The
    buffers are unioned by tiles (:func:`tiled_union`: the union of a county's
    300,000 buffers at once grows faster than linearly), the interior of a big
    town's zone as grid squares (:func:`buffer_union`).
    Under the ``property_line`` measure a parcel that touches the zone is
    within the distance; under ``building`` a building inside it is.

    Returns
    -------
    geopandas.GeoDataFrame
        One row: ``distance_ft``, ``measure``, ``section``, ``profile``,
        ``mains_count``, ``area_acres``; (Multi)Polygon in the working CRS.
    """
    check_town(town)
    con = town.profile.connection
    mains = town.layers["mains"]
    geoms = np.asarray(mains.geometry.values[eligible_mask(mains, town.profile)], dtype=object)
    count = len(geoms)
    mh = town.layer("manholes")
    if con.include_manholes and mh is not None and len(mh):
        ok = is_public(mh) & is_active(mh)
        geoms = np.concatenate([geoms, np.asarray(mh.geometry.values[ok], dtype=object)])
    d_u = con.distance_ft / town.ft_per_unit
    # the buffers made tile by tile (on the tiles' threads), grouped by the
    # centroids of the mains and manholes they are made from
    zone = buffer_union(geoms, d_u, quad_segs=16)
    area_acres = shapely.area(zone) * town.ft_per_unit ** 2 / 43_560.0
    return gpd.GeoDataFrame(
        {"distance_ft": [float(con.distance_ft)], "measure": [con.measure],
         "section": [con.section], "profile": [town.profile.id], "mains_count": [count],
         "area_acres": [float(area_acres)]},
        geometry=gpd.GeoSeries([zone], crs=town.crs), crs=town.crs,
    )
