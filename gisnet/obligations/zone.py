"""The connection zone: the area within the ordinance's distance of an eligible main."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import shapely

from ..rules import is_active, is_public
from ..town import Town
from .measuring import check_town, eligible_mask


def connection_zone(town: Town) -> gpd.GeoDataFrame:
    """The area within the profile's distance of the eligible mains.

    With ``include_manholes`` the public, active manholes are buffered too.
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
    zone = shapely.union_all(shapely.buffer(geoms, d_u, quad_segs=16)) if len(geoms) else \
        shapely.Polygon()
    area_acres = shapely.area(zone) * town.ft_per_unit ** 2 / 43_560.0
    return gpd.GeoDataFrame(
        {"distance_ft": [float(con.distance_ft)], "measure": [con.measure],
         "section": [con.section], "profile": [town.profile.id], "mains_count": [count],
         "area_acres": [float(area_acres)]},
        geometry=gpd.GeoSeries([zone], crs=town.crs), crs=town.crs,
    )
