"""What a run that ends with itself lets go of as soon as nothing after reads it.

``gisnet run`` (:func:`gisnet.pipeline.run` with ``release_inputs``) holds a
county's layers and results at once; these let go of what no later step reads:
the buildings' polygons once the obligations are measured
(:func:`buildings_as_points`; the other input shapes nothing after the analyses
measures go in :func:`gisnet.pipeline.unread_shapes_as_points`), and result layers the
GeoPackage's writer already holds when nothing else reads them
(:func:`empty_written`); the connection points but for the columns the capacity
step reads, once the control step is done (:func:`points_for_capacity`). See
``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from .memory import release

if TYPE_CHECKING:  # pragma: no cover
    from .town import Town

__all__ = ["CAPACITY_READS", "RELEASED_ONCE_WRITTEN", "buildings_as_points", "empty_written",
           "points_for_capacity"]

#: The columns of the connection points the capacity step reads
#: (:func:`gisnet.capacity.compute_capacity`: which parcel or user taps which edge).
CAPACITY_READS = ("parcel_id", "user_id", "edge_key")


#: Result layers no step reads after the one that makes them: ``(layer, part,
#: field)`` of :class:`Results` (part None: a field of the results themselves),
#: emptied once written (``release_written``). The graph's layers are made from the
#: graph, which the later steps read instead.
RELEASED_ONCE_WRITTEN = (("graph_nodes", None, "graph_nodes"),
                         ("graph_edges", None, "graph_edges"),
                         ("obligation_evidence", "obligations", "evidence"),
                         ("control_paths", "control", "control_paths"))


def empty_written(res: Any) -> None:
    """Replace each layer of :data:`RELEASED_ONCE_WRITTEN` by a frame of no rows with
    its columns (a copy: a slice would keep the rows' arrays), and give the memory
    back once the writer has let go of them."""
    for _layer, part, name in RELEASED_ONCE_WRITTEN:
        holder = res if part is None else getattr(res, part)
        df = None if holder is None else getattr(holder, name)
        if df is not None and len(df):
            setattr(holder, name, df.iloc[:0].copy(deep=True))
    release()


def buildings_as_points(town: Town) -> Callable[[], Any] | None:
    """Let go of the buildings' polygons before the control step: each is replaced
    by the point inside it that the maps draw (as :func:`gisnet.pipeline.unread_shapes_as_points`
    does), and what the control step measures from, each building's centroid, is
    kept as coordinates. Returns a function giving the centroids as points (None
    for a building without a shape), called when the step needs them; None when
    the town has no buildings, or no polygons among them.

    Both points are taken as coordinates before the polygons go and made into
    shapes after, so that the new shapes take the memory the polygons held."""
    b = town.layers.get("buildings")
    if not isinstance(b, gpd.GeoDataFrame) or not len(b) or b.geometry.name not in b.columns:
        return None
    name, crs = b.geometry.name, b.crs
    geoms = np.asarray(b.geometry.array, dtype=object)
    ok = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    if (shapely.get_type_id(geoms[ok]) == 0).all():
        return None
    centre = shapely.get_coordinates(shapely.centroid(geoms[ok]))
    inside = shapely.get_coordinates(shapely.point_on_surface(geoms[ok]))
    kept = geoms.copy()  # missing and empty shapes stay as they are
    kept[ok] = None
    column = list(b.columns).index(name)
    attrs = pd.DataFrame(b.drop(columns=name))
    del b, geoms
    town.layers["buildings"] = None  # the polygons go here (the key keeps its place)
    release()
    kept[ok] = shapely.points(inside)
    del inside
    attrs.insert(column, name, gpd.GeoSeries(kept, index=attrs.index, crs=crs))
    town.layers["buildings"] = gpd.GeoDataFrame(attrs, geometry=name, crs=crs)

    def centroids() -> Any:
        out = np.full(len(ok), None, dtype=object)
        out[ok] = shapely.points(centre)
        return out

    return centroids


def points_for_capacity(control: Any) -> pd.DataFrame | None:
    """The connection points of ``control`` (a :class:`gisnet.results.ControlResult`)
    with only :data:`CAPACITY_READS`, and the control result let go of them: their
    tap points and other columns (about 0.3 GB for a county's million) are read by
    no later step of a run that ends with itself (follow-up questions are given up
    with :meth:`gisnet.pipeline.Results.release_follow_ups` after the capacity step)."""
    points = None if control is None else control.points
    if points is None:
        return None
    slim = pd.DataFrame({c: points[c] for c in CAPACITY_READS if c in points})
    control.points = None
    release()
    return slim
