"""Control manholes: the first public, active manhole downstream of each tap.

Poughkeepsie § 168-22.5J: where no control manhole was required, the control
manhole is "the nearest downstream manhole in the public sewer from the point
at which the building sewer is connected". The **control manhole of a tap** on
edge ``u -> v`` is ``v`` if ``v`` is a manhole, else the first manhole on the
primary-outflow chain from ``v`` (see :mod:`.index`). A tap at distance 0 on an
edge whose upstream node ``u`` is a manhole connects into that manhole, whose
control manhole is then ``u`` itself. Junctions, fittings, cleanouts and
private or inactive manholes are passed over. The profile's
``control_manhole.section`` is cited on every row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import geopandas as gpd
import networkx as nx
import numpy as np

from ..errors import ConfigError
from .index import DownstreamIndex
from .paths import edge_indices, path_lines
from .points import connection_points

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

#: Columns of the ``control_manholes`` layer (plus geometry, the tap point).
CONTROL_COLUMNS = [
    "building_id",
    "parcel_id",
    "user_id",
    "main_id",
    "tap_distance_ft",
    "control_manhole_id",
    "plant_id",
    "path_length_ft",
    "plant_path_length_ft",
    "source",
    "section",
]


def control_manholes(
    town: Town | None,
    G: nx.MultiDiGraph,
    *,
    points: gpd.GeoDataFrame | None = None,
    index: DownstreamIndex | None = None,
    paths: bool = True,
) -> dict[str, gpd.GeoDataFrame]:
    """Control manhole, plant served and path length of every connection point.

    Parameters
    ----------
    town
        Loaded town; needed only when ``points`` is not given (and for the
        profile's section).
    G
        Sewer graph.
    points
        Output of :func:`connection_points` (computed if None).
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.
    paths
        Also build the ``control_paths`` lines (skip for speed).

    Returns
    -------
    dict
        ``control_manholes``: ``building_id, parcel_id, user_id, main_id,
        tap_distance_ft, control_manhole_id, plant_id, path_length_ft`` (tap to
        control manhole along the pipes, ft), ``plant_path_length_ft`` (tap to
        the outlet, ft), ``source``, ``section``, tap point geometry.
        ``control_paths``: the same ids and ``path_length_ft`` with the line
        from the tap to the control manhole (working CRS).
    """
    idx = DownstreamIndex.of(G, index)
    if points is None:
        if town is None:
            raise ConfigError("control_manholes needs a town or connection points")
        points = connection_points(town, G, index=idx)
    points = points.reset_index(drop=True)
    edge = edge_indices(idx, points)
    tap_ft = points["tap_distance_ft"].to_numpy(dtype=float)
    mh, mh_ft, out, out_ft = idx.tap_targets(edge, np.nan_to_num(tap_ft))
    nodes = idx.nodes
    mh_id = np.where(mh >= 0, nodes[np.maximum(mh, 0)], None)
    plant = np.where(out >= 0, nodes[np.maximum(out, 0)], None)
    section = None if town is None else town.profile.control_manhole.section
    result = gpd.GeoDataFrame(
        {
            "building_id": points["building_id"].to_numpy(dtype=object),
            "parcel_id": points["parcel_id"].to_numpy(dtype=object),
            "user_id": points["user_id"].to_numpy(dtype=object),
            "main_id": points["main_id"].to_numpy(dtype=object),
            "tap_distance_ft": tap_ft,
            "control_manhole_id": mh_id,
            "plant_id": plant,
            "path_length_ft": mh_ft,
            "plant_path_length_ft": out_ft,
            "source": points["source"].to_numpy(dtype=object),
            "section": section,
        },
        geometry=points.geometry.to_numpy(),
        crs=idx.crs,
    )
    nomh = (edge >= 0) & (mh < 0)
    if nomh.any() and town is not None:
        town.report.add(
            "no_control_manhole", "warning",
            f"{int(nomh.sum())} connection point(s) reach no public active manhole downstream",
            layer="mains",
        )
    out_layers = {"control_manholes": result}
    if paths:
        e = np.maximum(edge, 0)
        frac = np.where(
            idx.edges.length_ft[e] > 0, np.nan_to_num(tap_ft) / idx.edges.length_ft[e], 0.0
        )
        lines = path_lines(idx, np.where(edge >= 0, edge, -1), np.clip(frac, 0, 1),
                           points.geometry.to_numpy(), mh)
        cp = result[["building_id", "parcel_id", "user_id", "control_manhole_id",
                     "path_length_ft"]].copy()
        out_layers["control_paths"] = gpd.GeoDataFrame(
            cp, geometry=gpd.GeoSeries(lines, crs=idx.crs), crs=idx.crs
        )
    return out_layers
