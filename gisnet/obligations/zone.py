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


def connection_zone(town: Town) -> gpd.GeoDataFrame:
    """The area within the profile's distance of the eligible mains.

    With ``include_manholes`` the public, active manholes are buffered too. The
    buffers are unioned by tiles (:func:`tiled_union`: the union of a county's
    300,000 buffers at once grows faster than linearly).
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
    zone = tiled_union(geoms, each=lambda g: shapely.buffer(g, d_u, quad_segs=16))
    area_acres = shapely.area(zone) * town.ft_per_unit ** 2 / 43_560.0
    return gpd.GeoDataFrame(
        {"distance_ft": [float(con.distance_ft)], "measure": [con.measure],
         "section": [con.section], "profile": [town.profile.id], "mains_count": [count],
         "area_acres": [float(area_acres)]},
        geometry=gpd.GeoSeries([zone], crs=town.crs), crs=town.crs,
    )
