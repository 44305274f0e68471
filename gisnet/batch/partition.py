"""A town bigger than one worker: the parcel-level steps in spatial partitions.

:func:`analyse_partitioned` runs the steps that go parcel by parcel — the
nearest eligible main, the connection obligations (with their evidence) and
the connection points with their control manholes — on a Dask cluster, with
the parcels cut into ``partitions`` spatial partitions in Hilbert order
(:func:`hilbert_partitions`, the order of dask-geopandas'
``spatial_shuffle(by="hilbert")``: parcels close on the map share a
partition). The answers are the one-process answers
(:func:`gisnet.pipeline.analyse`), row for row once sorted (:func:`sort_rows`).

How each partition gets what it needs
-------------------------------------
* **The network stays whole.** The sewer graph (``build_sewer_graph``), its
  downstream index (:class:`gisnet.tracing.DownstreamIndex`) and the town's
  network layers (mains, manholes, plants, district) are scattered once and
  copied to every worker, each holding one copy that its partition tasks
  read. The
  nearest main of a parcel is therefore found among *all* mains, so it never
  depends on where the partition was cut.
* **Parcel-side layers travel with a halo.** Each partition's bounding box is
  widened by the halo ``H`` (:func:`halo_ft`: the ordinance's connection
  distance or the street reach of the abutting test, whichever is larger, plus
  a margin), and the partition takes, besides its own (core) parcels, the
  parcels of the other partitions within ``2 H`` of its box (the fabric the
  abutting test and the building sewers look at), and the buildings,
  laterals, streets and users within ``2 H``. Everything a rule looks at
  around a core parcel lies within ``H`` of it.
* **A worker holds one partition at a time.** The client cuts the partitions
  (it has the town loaded) and sends a partition's layers straight to a
  worker when that worker is free for it; they are released once its rows
  are back. (Cutting them with dask-geopandas' shuffle on the workers put
  every partition and its copies in the workers' memory at once.)
* **Each row is answered once.** Obligations are computed for the core
  parcels only (``compute_obligations(parcels=ids)``); connection points for
  the core parcels and the buildings and users that belong to them (by
  ``parcel_id``; a building or user naming no parcel belongs to the parcel
  its point lies in, else to the first partition).

The town-level steps (graph, connection zone, frontage, capacity, quality)
are not partitioned: they run whole, as :func:`gisnet.pipeline.analyse` does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..errors import ConfigError
from ..report import Report

log = logging.getLogger(__name__)

#: Roles that go whole to every worker (the network and the district).
WHOLE_ROLES = ("mains", "manholes", "plants", "district")
#: Roles clipped to each partition's box widened by twice the halo.
CLIPPED_ROLES = ("buildings", "laterals", "streets", "users")
#: Added to the halo, in feet (rounding, snapping and a street's far side).
HALO_MARGIN_FT = 50.0


def halo_ft(town: Any) -> float:
    """The halo of a partition, in feet: the larger of the connection distance and
    the abutting test's reach (the default street width plus the abutting
    tolerance), plus :data:`HALO_MARGIN_FT`."""
    con = town.profile.connection
    reach = float(con.default_street_width_ft) + float(con.abutting_tolerance_ft)
    return max(float(con.distance_ft), reach) + HALO_MARGIN_FT


@dataclass
class PartitionedResult:
    """The parcel-level layers of a partitioned run.

    Attributes
    ----------
    obligations, obligation_evidence, control_manholes, control_paths
        As the one-process layers of the same names, rows in partition order
        (sort with :func:`sort_rows` to compare).
    partitions
        Parcels per partition (core parcels).
    halo_ft
        The halo used.
    """

    obligations: gpd.GeoDataFrame
    obligation_evidence: gpd.GeoDataFrame
    control_manholes: gpd.GeoDataFrame
    control_paths: gpd.GeoDataFrame | None
    partitions: list[int]
    halo_ft: float

    def layers(self) -> dict[str, pd.DataFrame]:
        """The layers by name (``control_paths`` when built)."""
        out = {"obligations": self.obligations, "obligation_evidence": self.obligation_evidence,
               "control_manholes": self.control_manholes}
        if self.control_paths is not None:
            out["control_paths"] = self.control_paths
        return out


def sort_rows(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """A layer's rows in a fixed order (by ``parcel_id``, ``building_id``,
    ``user_id``, then every other column as text, the geometry as WKT last),
    index reset: how a partitioned and a one-process layer are compared."""
    geom = df.geometry.name if isinstance(df, gpd.GeoDataFrame) else None
    cols = [c for c in df.columns if c != geom]
    first = [c for c in ("parcel_id", "building_id", "user_id") if c in cols]
    keys = pd.DataFrame({c: df[c].astype(str) for c in first + [c for c in cols
                                                                if c not in first]})
    if geom is not None:
        keys["~geometry"] = shapely.to_wkt(np.asarray(df.geometry.values, dtype=object))
    order = keys.sort_values(list(keys.columns), kind="mergesort").index
    return df.loc[order].reset_index(drop=True)


def _ids(df: gpd.GeoDataFrame) -> np.ndarray:
    return df["parcel_id"].astype(str).to_numpy()


def _bounds(df: gpd.GeoDataFrame) -> np.ndarray:
    return df.total_bounds if len(df) else np.full(4, np.nan)


def _clip(df: gpd.GeoDataFrame, box: np.ndarray) -> gpd.GeoDataFrame:
    """Rows of ``df`` whose geometry meets ``box`` (xmin, ymin, xmax, ymax)."""
    if not len(df):
        return df
    hit = df.sindex.query(shapely.box(*box), predicate="intersects")
    return df.iloc[np.sort(hit)]


# ---------------------------------------------------------------------------
# on the workers
# ---------------------------------------------------------------------------


#: What the parcel-level steps read from the graph's edges once its downstream index
#: is built (the words for a main a lateral cannot tap); a worker's graph keeps only these.
WORKER_EDGE_ATTRS = ("kind", "active", "gravity", "status", "main_id")


def worker_graph(G: Any) -> Any:
    """The graph as a partition task needs it once the downstream index is built:
    every node, edge and key, in the same order, edges with only
    :data:`WORKER_EDGE_ATTRS`, nodes with none, ``G.graph`` without its quality
    report. (At a county's 300,000 mains the full attribute dictionaries are the
    larger part of the network a worker holds.)"""
    import networkx as nx

    H: nx.MultiDiGraph = nx.MultiDiGraph()
    H.graph.update({k: v for k, v in G.graph.items() if k != "report"})
    H.add_nodes_from(G.nodes)
    # types-networkx gives MultiGraph.add_edges_from Graph's signature: no (u, v, key, data)
    H.add_edges_from((u, v, k, {a: d[a] for a in WORKER_EDGE_ATTRS if a in d})  # type: ignore[misc]
                     for u, v, k, d in G.edges(keys=True, data=True))
    return H


@dataclass
class _Context:
    """What every partition task reads, copied once to each worker: the town's
    network layers (parcel-side layers empty: each task gets its own) and the
    downstream index with its (:func:`worker_graph`) graph."""

    town: Any
    index: Any

    @classmethod
    def build(cls, town: Any, G: Any) -> _Context:
        """The index of ``G``, then ``G`` replaced in it by its :func:`worker_graph`."""
        from ..tracing import DownstreamIndex

        index = DownstreamIndex(G)
        index.G = worker_graph(G)
        return cls(town, index)

    @property
    def graph(self) -> Any:
        """The sewer graph (the index's own: the tracing functions check it is the same)."""
        return self.index.G


def _partition_task(core: gpd.GeoDataFrame, halos: list[gpd.GeoDataFrame], ctx: _Context,
                    side: dict[str, gpd.GeoDataFrame], own: dict[str, gpd.GeoDataFrame],
                    paths: bool) -> dict[str, pd.DataFrame]:
    """The parcel-level layers of one partition's core parcels.

    ``side``: the buildings, laterals, streets and users within twice the halo of
    the partition's box; ``own``: the buildings and users that belong to its parcels.
    """
    from ..obligations import compute_obligations
    from ..tracing import connection_points, control_manholes

    town = ctx.town
    core = core.reset_index(drop=True)
    parcels = pd.concat([core, *halos], ignore_index=True) if halos else core
    layers = {**town.layers, **side}
    layers["parcels"] = gpd.GeoDataFrame(parcels, geometry=core.geometry.name, crs=town.crs)
    sub = replace(town, layers=layers, report=Report())
    ob = compute_obligations(sub, parcels=[str(x) for x in core["parcel_id"]])
    del sub, layers, parcels
    # connection points: the core parcels, and the buildings and users that belong to them
    mine_layers = {**town.layers, **side, **own}
    mine_layers["parcels"] = gpd.GeoDataFrame(core, geometry=core.geometry.name, crs=town.crs)
    mine = replace(town, layers=mine_layers, report=Report())
    pts = connection_points(mine, ctx.graph, index=ctx.index)
    cm = control_manholes(mine, ctx.graph, points=pts, index=ctx.index, paths=paths)
    return {**ob, **cm}


def owners(town: Any, parcel_part: pd.Series) -> dict[str, np.ndarray]:
    """The partition each building and user belongs to: its parcel's (by
    ``parcel_id``; a user naming only a building, that building's), else the
    partition of the parcel its point lies in, else partition 0.

    Parameters
    ----------
    town
        The town.
    parcel_part
        Partition of each parcel, indexed by ``parcel_id`` (text).
    """
    parcels = town.layers["parcels"]
    out: dict[str, np.ndarray] = {}
    for role in ("buildings", "users"):
        df = town.layer(role)
        if df is None or not len(df):
            continue
        part = np.zeros(len(df), dtype=np.int64)
        pid = df["parcel_id"].astype(object) if "parcel_id" in df else \
            pd.Series([None] * len(df), dtype=object)
        pid = pid.where(pid.notna(), None)
        if role == "users" and "buildings" in out and "building_id" in df:
            bpart = pd.Series(out["buildings"], index=town.layers["buildings"]["building_id"]
                              .astype(str).to_numpy())
            bpart = bpart[~bpart.index.duplicated()]
            bid = df["building_id"].astype(object)
            via_b = bid.notna() & pid.isna()
            got = bid[via_b].astype(str).map(bpart)
            part[np.flatnonzero(via_b.to_numpy())] = got.fillna(0).to_numpy(dtype=np.int64)
            known = pid.notna() | via_b
        else:
            known = pid.notna()
        named = pid.notna().to_numpy()
        part[named] = pid[named].astype(str).map(parcel_part).fillna(0).to_numpy(dtype=np.int64)
        rest = np.flatnonzero(~known.to_numpy())
        if len(rest) and len(parcels):
            pts = shapely.centroid(np.asarray(df.geometry.values, dtype=object)[rest])
            qi, pi = parcels.sindex.query(pts, predicate="intersects")
            first = pd.Series(pi, index=qi).groupby(level=0).min()
            ids = parcels["parcel_id"].astype(str).to_numpy()[first.to_numpy()]
            part[rest[first.index.to_numpy()]] = pd.Series(ids).map(parcel_part).fillna(0) \
                .to_numpy(dtype=np.int64)
        out[role] = part
    return out


# ---------------------------------------------------------------------------
# on the client
# ---------------------------------------------------------------------------


def hilbert_partitions(parcels: gpd.GeoDataFrame, partitions: int) -> np.ndarray:
    """The partition of each parcel: the parcels in Hilbert order of their boxes'
    centres (``GeoSeries.hilbert_distance`` over the layer's bounds, level 16,
    as dask-geopandas' ``spatial_shuffle(by="hilbert")`` sorts them) cut into
    ``partitions`` runs of equal length (ties in order of the rows). A parcel
    without a geometry is in partition 0.

    Returns
    -------
    numpy.ndarray
        int64, one per row of ``parcels``.
    """
    n = len(parcels)
    part = np.zeros(n, dtype=np.int64)
    k = max(1, min(int(partitions), n))
    geoms = parcels.geometry
    has = (~(geoms.isna() | geoms.is_empty)).to_numpy()
    if not has.any():
        return part
    code = geoms[has].hilbert_distance(total_bounds=geoms[has].total_bounds, level=16)
    rows = np.flatnonzero(has)[np.argsort(code.to_numpy(), kind="stable")]
    for i, run in enumerate(np.array_split(rows, k)):
        part[run] = i
    return part


def analyse_partitioned(town: Any, *, client: Any, partitions: int, graph: Any = None,
                        control_paths: bool = True) -> PartitionedResult:
    """The parcel-level layers of a town, computed in spatial partitions on Dask.

    Parameters
    ----------
    town
        A loaded town (:func:`gisnet.io.load_town`).
    client
        A ``distributed.Client``.
    partitions
        Number of spatial partitions of the parcels (Hilbert order,
        :func:`hilbert_partitions`).
    graph
        The town's sewer graph (built here when None).
    control_paths
        Build the ``control_paths`` lines.

    Returns
    -------
    PartitionedResult
        ``obligations``, ``obligation_evidence``, ``control_manholes`` and
        ``control_paths``: the rows :func:`gisnet.pipeline.analyse` gives.

    Raises
    ------
    ConfigError
        The cluster has no workers.

    Notes
    -----
    What a worker holds: the network (scattered once: the graph, its downstream
    index, the network layers) and, only while it runs one partition, that
    partition's parcels with their halo and its parcel-side layers. The client
    sends a partition when a worker is free for it, so no worker holds the
    parcels of partitions it is not running.
    """
    from ..extras import needs_extra
    from ..graph import build_sewer_graph

    with needs_extra("dask", "a partitioned run on Dask"):
        from distributed import as_completed

    G = build_sewer_graph(town) if graph is None else graph
    parcels = town.layers["parcels"].reset_index(drop=True)
    h_u = halo_ft(town) / float(town.ft_per_unit)
    part = hilbert_partitions(parcels, partitions)
    k = int(part.max()) + 1 if len(part) else 1
    parcel_part = pd.Series(part, index=_ids(parcels))
    owner = owners(town, parcel_part)
    del parcel_part
    network = {r: v for r, v in town.layers.items()
               if r != "parcels" and r not in CLIPPED_ROLES}
    bare = replace(town, layers=network, report=Report())
    # the network once per worker: built into one context on one worker, then copied
    # to the others (a task then needs only its partition moved to where it runs)
    workers = client.scheduler_info()["workers"]
    if not workers:
        raise ConfigError("the Dask cluster has no workers to run the partitions on")
    first = sorted(workers)[:1]
    [G_f, bare_f] = client.scatter([G, bare], workers=first, hash=False)
    ctx_f = client.submit(_Context.build, bare_f, G_f, pure=False)
    client.replicate([ctx_f])
    del G_f, bare_f

    def payload(i: int) -> dict[str, Any]:
        core = parcels[part == i]
        box = _bounds(core) + np.array([-2 * h_u, -2 * h_u, 2 * h_u, 2 * h_u])
        near = _clip(parcels, box)
        halo = near[part[near.index.to_numpy()] != i]
        side = {r: _clip(town.layers[r], box).reset_index(drop=True)
                for r in CLIPPED_ROLES if town.layer(r) is not None}
        own = {r: town.layers[r][rows == i].reset_index(drop=True)
               for r, rows in owner.items()}
        return {"core": core, "halos": [halo] if len(halo) else [], "side": side, "own": own}

    # one slot per worker thread; a partition is built and sent when a slot is free
    free = [a for a, w in sorted(workers.items())
            for _ in range(max(1, int(w.get("nthreads") or 1)))]
    sizes = np.bincount(part, minlength=k).tolist()
    todo = [i for i in range(k) if sizes[i]]
    out: dict[int, dict[str, pd.DataFrame]] = {}
    running: dict[Any, tuple[int, Any, str]] = {}
    done = as_completed()

    def start(i: int, where: str) -> None:
        [data] = client.scatter([payload(i)], workers=[where], hash=False)  # (a dict: keys)
        f = client.submit(_run_partition, data, ctx_f, control_paths, workers=[where],
                          allow_other_workers=True, pure=False)
        running[f] = (i, data, where)
        done.add(f)

    while todo and free:
        start(todo.pop(0), free.pop(0))
    for f in done:
        i, data, where = running.pop(f)
        out[i] = f.result()
        f.release()
        data.release()
        if todo:
            start(todo.pop(0), where)
    ctx_f.release()
    parts = [out[i] for i in sorted(out)]
    return PartitionedResult(
        obligations=_concat([o["obligations"] for o in parts]),
        obligation_evidence=_concat([o["obligation_evidence"] for o in parts]),
        control_manholes=_concat([o["control_manholes"] for o in parts]),
        control_paths=_concat([o["control_paths"] for o in parts]) if control_paths else None,
        partitions=sizes, halo_ft=halo_ft(town))


def _run_partition(data: dict[str, Any], ctx: _Context, paths: bool) -> dict[str, pd.DataFrame]:
    return _partition_task(data["core"], data["halos"], ctx, data["side"], data["own"], paths)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None]
    if not frames:
        return gpd.GeoDataFrame()
    out = pd.concat(frames, ignore_index=True)
    for c in out.columns:  # a column all null in one partition keeps the others' type
        kinds = {f[c].dtype for f in frames if len(f) and c in f and f[c].notna().any()}
        if len(kinds) == 1 and out[c].dtype != next(iter(kinds)):
            out[c] = out[c].astype(next(iter(kinds)))
    first = frames[0]
    if isinstance(first, gpd.GeoDataFrame):
        return gpd.GeoDataFrame(out, geometry=first.geometry.name, crs=first.crs)
    return out
