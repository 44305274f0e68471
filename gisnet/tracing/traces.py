"""Traces: from a parcel or a point down to the plant, and up from a manhole.

- :func:`trace_downstream`: the pipes from a connection point (a parcel's, or a
  point projected onto the nearest eligible main) along the primary outflow
  to the outlet, with the control manhole and the plant served.
- :func:`trace_upstream`: everything that drains to a manhole (pipes, parcels,
  buildings, industrial users), the suspects when a sample there fails.

Geometry is in the graph's working CRS, lengths in feet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer

from ..errors import ConfigError, CRSError, NotFoundError
from ..flows import parcel_flows
from .control import owner_manholes, owner_rows
from .index import DownstreamIndex, carries_flow
from .paths import edge_indices, edge_rows, tail_coords
from .points import connection_points, features_to_connect, locate_taps

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town


#: How far (ft) outside the extent of the sewer mains a point may lie and still be traced.
POINT_MARGIN_FT = 5280.0


def _point_in_town(idx: DownstreamIndex, point: tuple[float, float],
                   crs: Any) -> tuple[float, float]:
    """``point`` in the working CRS, refused when it is not finite or lies more than
    :data:`POINT_MARGIN_FT` outside the bounding box of the mains (most often a
    point given in another CRS than the one named)."""
    x, y = (float(v) for v in point)
    if not (np.isfinite(x) and np.isfinite(y)):
        raise ConfigError(f"point ({x}, {y}) must have finite coordinates")
    if crs is not None:
        try:
            pcrs = CRS.from_user_input(crs)
        except Exception as exc:  # pyproj.exceptions.CRSError
            raise CRSError(f"point CRS {crs!r} is not a CRS pyproj knows") from exc
        if pcrs != CRS.from_user_input(idx.crs):
            tr = Transformer.from_crs(pcrs, idx.crs, always_xy=True)
            x, y = tr.transform(x, y)
            if not (np.isfinite(x) and np.isfinite(y)):
                raise CRSError(f"point {point} cannot be projected from {crs} to the "
                               f"working CRS (outside the CRS's area of use?)")
    geoms = idx.edges.geometry
    if len(geoms):
        x0, y0, x1, y1 = shapely.total_bounds(geoms)
        dx = max(x0 - x, 0.0, x - x1)
        dy = max(y0 - y, 0.0, y - y1)
        off_ft = float(np.hypot(dx, dy)) * idx.ft_per_unit
        if off_ft > POINT_MARGIN_FT:
            given = f" (given in {crs})" if crs is not None else ""
            raise ConfigError(
                f"point {point}{given} is at ({x:,.1f}, {y:,.1f}) in the working CRS, "
                f"{off_ft:,.0f} ft outside the sewer network (x {x0:,.0f}..{x1:,.0f}, "
                f"y {y0:,.0f}..{y1:,.0f}); is the point in the CRS named, and X before Y?")
    return x, y


def trace_downstream(
    town: Town,
    G: nx.MultiDiGraph,
    *,
    parcel_id: Any = None,
    point: tuple[float, float] | None = None,
    crs: Any = None,
    index: DownstreamIndex | None = None,
) -> dict[str, Any]:
    """Trace from a parcel or a point downstream to the plant.

    Parameters
    ----------
    town, G
        Loaded town and its sewer graph.
    parcel_id
        Trace from this parcel's connection point (its first building in
        layer order, else the parcel itself).
    point
        Or from this point ``(x, y)``, projected onto the nearest eligible main.
    crs
        CRS of ``point`` (default: the town's working CRS), e.g. ``EPSG:4326``.
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.

    Returns
    -------
    dict
        ``connection`` (one-row GeoDataFrame of the connection point),
        ``control_manhole_id`` (an owner-installed control manhole of the
        parcel's building, § 168-22.5K, overrides the first public manhole
        downstream), ``plant_id``, ``control_length_ft`` (tap to control
        manhole through any private mains; None for an owner manhole),
        ``length_ft`` (tap to the outlet, or to the end of the
        chain), ``reaches_outlet`` (bool), ``path`` (GeoDataFrame of the pipes
        from the tap downstream, in order, the first cut at the tap, with
        ``seq`` and ``cum_length_ft``; working CRS).

    Raises
    ------
    NotFoundError
        Unknown parcel, or nothing tappable (the message gives the reason,
        e.g. the building's lateral ends on no public or private main).
    ConfigError
        Neither or both of ``parcel_id`` and ``point``.
    """
    if (parcel_id is None) == (point is None):
        raise ConfigError("give exactly one of a parcel id or a point")
    idx = DownstreamIndex.of(G, index)
    if parcel_id is not None:
        feats = features_to_connect(town)
        sel = feats[feats["parcel_id"].astype(object) == parcel_id]
        if not len(sel):
            raise NotFoundError(f"parcel {parcel_id!r} not found", layer="parcels",
                                feature=parcel_id)
        feats = sel.iloc[[0]].reset_index(drop=True)
    else:
        assert point is not None  # exactly one of parcel_id and point, checked above
        x, y = _point_in_town(idx, point, crs)
        feats = pd.DataFrame({"building_id": [None], "parcel_id": [None], "user_id": [None],
                              "point": np.array([shapely.Point(x, y)], dtype=object)})
    # A bare point has no building or parcel a lateral could belong to.
    laterals = town.layer("laterals") if parcel_id is not None else None
    conn, _ = locate_taps(idx, feats, laterals)
    if conn["edge_key"].isna().all():
        why = conn["reason"].iloc[0] if len(conn) else None
        raise NotFoundError(why or "no eligible public sanitary main to connect to",
                            layer="mains")
    edge = edge_indices(idx, conn)
    tap_ft = conn["tap_distance_ft"].to_numpy(dtype=float)
    mh, mh_ft, out, _out_ft = idx.tap_targets(edge, tap_ft)
    e0 = int(edge[0])
    # pipes in order: the tap edge cut at the tap, then the primary chain
    chain = idx.chain_edges(int(idx.edges.v[e0]))
    path = edge_rows(idx, [e0, *chain])
    g0 = idx.edges.geometry[e0]
    f0 = tap_ft[0] / idx.edges.length_ft[e0] if idx.edges.length_ft[e0] > 0 else 0.0
    tail, _ = tail_coords(idx, np.array([e0]), np.array([f0]), conn.geometry.to_numpy()[:1])
    path.loc[0, "length_ft"] = max(idx.edges.length_ft[e0] - tap_ft[0], 0.0)
    path.loc[0, "geometry"] = shapely.linestrings(tail) if len(tail) >= 2 else g0
    path.insert(0, "seq", np.arange(len(path)))
    path["cum_length_ft"] = path["length_ft"].cumsum()
    end = int(idx.edges.v[chain[-1]]) if chain else int(idx.edges.v[e0])
    reaches = bool(idx.is_outlet[end])
    control = None if mh[0] < 0 else idx.nodes[mh[0]]
    control_ft = None if mh[0] < 0 else float(mh_ft[0])
    owner, _ = owner_rows(conn, owner_manholes(town, report=False))
    if owner[0] is not None:  # § 168-22.5K: the owner's manhole in the building sewer
        control, control_ft = owner[0], None
    return {
        "connection": conn,
        "control_manhole_id": control,
        "plant_id": None if out[0] < 0 else idx.nodes[out[0]],
        "control_length_ft": control_ft,
        "length_ft": float(path["length_ft"].sum()),
        "reaches_outlet": reaches,
        "path": path,
    }


def upstream_edges(
    G: nx.MultiDiGraph, node_id: Any, *, index: DownstreamIndex | None = None
) -> list[tuple[Any, Any, Any]]:
    """Every edge ``(u, v, key)`` whose flow can reach ``node_id``, each once.

    One breadth-first search over reversed edges (all out-edges at a split
    count: flow may go either way); a loop terminates because each node is
    expanded once. Only pipes that carry sanitary flow are followed
    (:func:`gisnet.rules.carries_sanitary_flow`: not storm, not inactive).

    Parameters
    ----------
    G
        Sewer graph.
    node_id
        The node (manhole) to trace up from.
    index
        A :class:`DownstreamIndex` of ``G`` whose edge flags to reuse (faster);
        without one each level's in-edges are judged from their attributes.
    """
    idx = None if index is None else DownstreamIndex.of(G, index)
    seen = {node_id}
    level = [node_id]
    out: list[tuple[Any, Any, Any]] = []
    while level:  # level by level: the order of a FIFO breadth-first search
        cand = [(u, v, k, d) for v in level for u, _, k, d in G.in_edges(v, keys=True, data=True)]
        flows: list[Any] | np.ndarray
        if idx is not None:
            flows = [idx.edges.flowing[idx.edge_index[(u, v, k)]] for u, v, k, _ in cand]
        else:
            flows = carries_flow(d for *_, d in cand)
        level = []
        for (u, v, k, _), f in zip(cand, flows, strict=True):
            if not f:
                continue
            out.append((u, v, k))
            if u not in seen:
                seen.add(u)
                level.append(u)
    return out


def trace_upstream(
    town: Town,
    G: nx.MultiDiGraph,
    manhole_id: Any,
    *,
    points: gpd.GeoDataFrame | None = None,
    index: DownstreamIndex | None = None,
) -> dict[str, gpd.GeoDataFrame]:
    """Everything that drains to a manhole: pipes, parcels, buildings, users.

    The suspects when a sample at that manhole fails. A connection point
    drains to the manhole when its tap lies on one of the upstream pipes.

    Parameters
    ----------
    town, G
        Loaded town and its sewer graph.
    manhole_id
        Node id of the manhole (or any node).
    points
        :func:`connection_points` output to reuse.
    index
        A :class:`DownstreamIndex` of ``G`` to reuse.

    Returns
    -------
    dict
        ``pipes`` (each upstream pipe once, working CRS), ``parcels``,
        ``buildings`` and ``users`` (rows of the town's layers, with the
        ``main_id`` tapped). ``users`` is sorted by ``process_flow_gpd``,
        largest first. ``parcels`` carries ``avg_flow_gpd`` (sewered design or
        metered flow, :func:`gisnet.flows.parcel_flows`). Totals
        (``process_flow_gpd`` of the users, ``avg_flow_gpd`` of the parcels)
        are in ``result["pipes"].attrs``.

    Raises
    ------
    NotFoundError
        If the manhole is not a node of the graph.
    """
    if manhole_id not in G:
        raise NotFoundError(f"manhole {manhole_id!r} is not in the sewer graph",
                            layer="manholes", feature=manhole_id)
    idx = DownstreamIndex.of(G, index)
    edges = upstream_edges(G, manhole_id, index=idx)
    eidx = [idx.edge_index[k] for k in edges]
    pipes = edge_rows(idx, eidx)
    if points is None:
        points = connection_points(town, G, index=idx)
    # edge keys are unique in the graph (main ids, split pieces suffixed @2 ...)
    drains = points["edge_key"].astype(object).isin({k for _, _, k in edges}).to_numpy()
    hit = points[drains]
    # a tap at distance 0 into the manhole itself also drains to it
    at_mh = (points["edge_u"].astype(object) == manhole_id) & (points["tap_distance_ft"] <= 0)
    if idx.is_manhole[idx.node_index[manhole_id]]:
        hit = pd.concat([hit, points[at_mh & ~drains]])
    res: dict[str, gpd.GeoDataFrame] = {"pipes": pipes}
    for role, col in (("parcels", "parcel_id"), ("buildings", "building_id"),
                      ("users", "user_id")):
        layer = town.layer(role)
        if layer is None:
            res[role] = gpd.GeoDataFrame(geometry=gpd.GeoSeries([], crs=idx.crs), crs=idx.crs)
            continue
        tap = hit.dropna(subset=[col]).drop_duplicates(col).set_index(col)["main_id"]
        ids = layer[col].astype(object)
        sel = layer[ids.isin(set(tap.index))].copy()
        sel["main_id"] = sel[col].astype(object).map(tap)
        if role == "users" and "process_flow_gpd" in sel:
            sel = sel.sort_values("process_flow_gpd", ascending=False, na_position="last",
                                  kind="stable")
        res[role] = sel.reset_index(drop=True)
    totals = {}
    if "process_flow_gpd" in res["users"]:
        totals["process_flow_gpd"] = float(res["users"]["process_flow_gpd"].fillna(0).sum())
    if len(res["parcels"]) and "parcel_id" in res["parcels"]:
        flows = _parcel_flows(town)
        ids = res["parcels"]["parcel_id"].astype(object)
        pf = ids.map(flows["avg_flow_gpd"])
        res["parcels"]["avg_flow_gpd"] = pf.astype(float)
        # a septic parcel not connected has a tap location but sends nothing
        res["parcels"]["sewered"] = ids.map(flows["sewered"]).fillna(False).astype(bool)
        totals["avg_flow_gpd"] = float(pf.fillna(0).sum())
    pipes.attrs.update(totals)
    return res


def _parcel_flows(town: Town) -> pd.DataFrame:
    """Average daily sewered flow (gpd) and whether the parcel is sewered, per
    parcel id, from :func:`gisnet.flows.parcel_flows` (design flows of the profile)."""
    f = parcel_flows(town)
    sewered = f["sewered"].to_numpy(dtype=bool)
    return pd.DataFrame(
        {"avg_flow_gpd": np.where(sewered, f["avg_flow_gpd"].to_numpy(float), 0.0),
         "sewered": sewered},
        index=f["parcel_id"].astype(object).to_numpy(),
    )
