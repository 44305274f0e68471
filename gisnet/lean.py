"""What a run that ends with itself lets go of as soon as nothing after reads it.

``gisnet run`` (:func:`gisnet.pipeline.run` with ``release_inputs``) holds a
county's layers and results at once; these let go of what no later step reads:
the buildings' polygons once the obligations are measured
(:func:`buildings_as_points`), the buildings' points and attributes but for the few
rows later steps read once the control step is done (:func:`buildings_read_later`),
the other input layers nothing after the analyses reads but for their count of
features (:func:`counted_only`, from :func:`gisnet.pipeline.unread_shapes_as_points`),
the control paths made only once the capacity step is done (:func:`paths_after_capacity`),
and result layers the
GeoPackage's writer already holds when nothing else reads them
(:func:`empty_written`); the connection points but for the columns the capacity
step reads, once the control step is done (:func:`points_for_capacity`); with
maps, the evidence but for the rows the pages draw, once written
(:func:`evidence_for_maps`), and every result layer and the town's layers once
the GeoPackage is written and the pages are built, before their tiles are cut
(:func:`release_drawn`). See ``docs/performance.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from .memory import release
from .threads import chunked, default_threads

if TYPE_CHECKING:  # pragma: no cover
    from .town import Town

__all__ = ["CAPACITY_READS", "RELEASED_ONCE_WRITTEN", "RESULT_FIELDS", "building_centroids",
           "buildings_as_points",
           "buildings_read_later", "counted_only", "empty_written", "evidence_for_maps",
           "paths_after_capacity", "points_for_capacity", "release_drawn"]

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
    shapes = geoms[ok]

    def points(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        part = shapes[lo:hi]
        return (shapely.get_coordinates(shapely.centroid(part)),
                shapely.get_coordinates(shapely.point_on_surface(part)))

    parts = chunked(len(shapes), default_threads(), points)  # GEOS leaves the GIL
    centre = np.concatenate([c for c, _ in parts]) if parts else np.empty((0, 2))
    inside = np.concatenate([i for _, i in parts]) if parts else np.empty((0, 2))
    parts.clear()
    shapes = shapes[:0]  # the polygons' last references but the layer's
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


def building_centroids(town: Town) -> np.ndarray | None:
    """:func:`buildings_as_points`, then each building's centroid as a point (None for
    a building without a shape); None when it gives nothing. The control step's
    ``building_points``, made on a background thread while the graph is built
    (:func:`gisnet.pipeline.analyse`)."""
    made = buildings_as_points(town)
    return None if made is None else made()


def points_for_capacity(control: Any, town: Town | None = None) -> pd.DataFrame | None:
    """The connection points of ``control`` (a :class:`gisnet.results.ControlResult`)
    with only :data:`CAPACITY_READS`, and the control result let go of them: their
    tap points and other columns (about 0.3 GB for a county's million) are read by
    no later step of a run that ends with itself (follow-up questions are given up
    with :meth:`gisnet.pipeline.Results.release_follow_ups` after the capacity step).
    With ``town``, its buildings keep only what the later steps read
    (:func:`buildings_read_later`)."""
    if town is not None:
        buildings_read_later(town, control)
    points = None if control is None else control.points
    if points is None:
        return None
    slim = pd.DataFrame({c: points[c] for c in CAPACITY_READS if c in points})
    control.points = None
    release()
    return slim


def buildings_read_later(town: Town, control: Any) -> None:
    """Once the control step is done, keep of the town's buildings (their points, see
    :func:`buildings_as_points`) only what later steps of a run that ends with itself
    read: every row (the summary and the manifest count them) with its
    ``building_id``, and the point of the buildings

    - a finding of the town's report names (the worklist places a finding without a
      shape of its own at the features it names, :mod:`gisnet.worklist`; the capacity
      step's findings name no building);
    - whose sewer is unresolved, and those of the sampling plan (the sampling page
      draws them at their building, :mod:`gisnet.maps.sampling`).

    The other points and columns go: about 0.15 GB for a county's million buildings,
    held through the capacity step and the pages otherwise."""
    from .io.ids import in_ids
    from .worklist import finding_ids  # as the worklist reads them

    b = town.layers.get("buildings")
    if not isinstance(b, gpd.GeoDataFrame) or "building_id" not in b.columns \
            or b.geometry.name not in b.columns or not len(b):
        return
    wanted = [pd.Series(finding_ids([f.feature_id for f in town.report.findings]), dtype=object)]
    for layer in ("control_manholes", "sampling_plan"):
        df = None if control is None else getattr(control, layer, None)
        if df is None or "building_id" not in df.columns:
            continue
        rows = df if layer == "sampling_plan" or "source" not in df.columns else \
            df[(df["source"].astype(object) == "unresolved").to_numpy()]
        wanted.append(rows["building_id"].dropna().astype(object))
    ids = b["building_id"]
    keep = in_ids(ids.astype(str), pd.concat(wanted, ignore_index=True).astype(str))
    name, crs = b.geometry.name, b.crs
    geoms = np.full(len(b), None, dtype=object)
    geoms[keep] = np.asarray(b.geometry.array, dtype=object)[keep]
    del b
    town.layers["buildings"] = gpd.GeoDataFrame(
        {"building_id": ids}, geometry=gpd.GeoSeries(geoms, index=ids.index, crs=crs,
                                                     name=name), crs=crs)
    release()


#: Input layers no step after the analyses reads but for their count of features (the
#: run's summary and the manifest's ``town_info``): the quality step's worklist is the
#: last to read them (the shapes of the features its findings name).
COUNTED_ONLY = ("streets", "laterals")


def counted_only(town: Town) -> None:
    """Hold each layer of :data:`COUNTED_ONLY` as as many rows without columns or shapes
    (a missing geometry each): a county's 167,000 streets were about 30 MB as points."""
    for role in COUNTED_ONLY:
        gdf = town.layers.get(role)
        if isinstance(gdf, gpd.GeoDataFrame) and len(gdf):
            crs = gdf.crs
            town.layers[role] = gpd.GeoDataFrame(
                geometry=gpd.GeoSeries(np.full(len(gdf), None, dtype=object), crs=crs),
                crs=crs)
    release()


def paths_after_capacity(res: Any) -> bool:
    """Make the control paths a run asked for later (``analyse_control(paths="later")``)
    once the capacity step is done and its arrays are let go
    (:meth:`gisnet.pipeline.Results.release_follow_ups` with ``graph=False``): a
    county's million path lines (about 0.3 GB) are then not made at the end of the
    control step, where every other layer and the control step's own arrays are held
    (the run's peak). They need only the downstream index's arrays; their time is
    the control step's. Whether there were paths to make."""
    c = res.control
    if c is None or c.make_paths is None:
        return False
    t = time.perf_counter()
    c.paths_now()
    res.timings_s["control"] = res.timings_s.get("control", 0.0) + time.perf_counter() - t
    return True


#: The fields of :class:`gisnet.pipeline.Results` holding result layers.
RESULT_FIELDS = ("graph_nodes", "graph_edges", "obligations", "control", "capacity", "quality",
                 "worklist", "overdue", "changes")


def release_drawn(res: Any, layers: dict[str, Any]) -> dict[str, Any]:
    """Let go of every result layer (those of ``res``, a :class:`gisnet.pipeline.Results`,
    and the dict ``layers`` of them) and of the town's layers, once the GeoPackage is
    written and the pages are built: the tile archives then read only what the pages
    kept of them (each tiled layer's shapes and properties). A county's result frames
    and input attributes are about 1.5 GB (``docs/performance.md``).

    :meth:`~gisnet.pipeline.Results.summary` keeps its figures. Returns the town's
    record for the run's manifest (:func:`gisnet.output.town_record.town_record`),
    made before the layers go."""
    from .output.town_record import town_record

    town = res.town
    info = town_record(town, {u.analysis: u.reason for u in res.unavailable})
    res.keep_summary()
    layers.clear()
    for name in RESULT_FIELDS:
        setattr(res, name, None)
    town.layers.clear()
    release()
    return info


def evidence_for_maps(res: Any) -> None:
    """Once the GeoPackage's writer has the ``obligation_evidence`` layer, keep of it
    only the rows the obligations page draws: those of the parcels it marks for
    attention (:data:`gisnet.labels.ATTENTION_STATUSES`), every row when there are
    none (:func:`gisnet.maps.obligations.obligation_layers`). A county's evidence is
    a line for each of a million parcels (about 0.3 GB), of which the page draws the
    few thousand that need attention. The columns stay."""
    from .io.ids import in_ids
    from .labels import ATTENTION_STATUSES

    ob = None if res.obligations is None else res.obligations.obligations
    ev = None if res.obligations is None else res.obligations.evidence
    if ob is None or ev is None or not len(ev) or "parcel_id" not in ev.columns \
            or "status" not in ob.columns or "parcel_id" not in ob.columns:
        return
    marked = ob.loc[ob["status"].astype(object).isin(ATTENTION_STATUSES).to_numpy(), "parcel_id"]
    if not len(marked):
        return
    # (a row without a parcel id stays: the page decides on it)
    keep = in_ids(ev["parcel_id"].astype(str), marked.astype(str)) | \
        ev["parcel_id"].isna().to_numpy()
    if keep.all():
        return
    res.obligations.evidence = ev[keep].copy(deep=True)  # a slice would keep the rows
    release()
