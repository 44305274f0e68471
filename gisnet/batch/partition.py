"""A town bigger than one worker: the parcel-level steps in spatial partitions.

:func:`analyse_partitioned` runs the steps that go parcel by parcel — the
nearest eligible main, the connection obligations (with their evidence) and
the connection points with their control manholes — on a Dask cluster, with
the parcels cut into ``partitions`` spatial partitions by
``dask_geopandas`` (``spatial_shuffle(by="hilbert")``: parcels close on the
map share a partition). The answers are the one-process answers
(:func:`gisnet.pipeline.analyse`), row for row once sorted (:func:`sort_rows`).

How each partition gets what it needs
-------------------------------------
* **The network stays whole.** The sewer graph (``build_sewer_graph``), its
  downstream index (:class:`gisnet.tracing.DownstreamIndex`) and the town's
  network layers (mains, manholes, plants, district) are scattered once to
  the workers; each partition task on a worker reads the same copy. The
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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

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


# ---------------------------------------------------------------------------
# on the workers
# ---------------------------------------------------------------------------


def _ids(df: gpd.GeoDataFrame) -> np.ndarray:
    return df["parcel_id"].astype(str).to_numpy()


def _bounds(df: gpd.GeoDataFrame) -> np.ndarray:
    return df.total_bounds if len(df) else np.full(4, np.nan)


def _clip(df: gpd.GeoDataFrame, box: Sequence[float]) -> gpd.GeoDataFrame:
    """Rows of ``df`` whose geometry meets ``box``."""
    if not len(df):
        return df
    hit = df.sindex.query(shapely.box(*box), predicate="intersects")
    return df.iloc[np.sort(hit)]


@dataclass
class _Context:
    """What every partition task reads, scattered once: the town's network
    layers (parcel-side layers empty: each task gets its own) and the downstream
    index with its graph."""

    town: Any
    index: Any

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
        Number of spatial partitions of the parcels (Hilbert order).
    graph
        The town's sewer graph (built here when None).
    control_paths
        Build the ``control_paths`` lines.

    Returns
    -------
    PartitionedResult
        ``obligations``, ``obligation_evidence``, ``control_manholes`` and
        ``control_paths``: the rows :func:`gisnet.pipeline.analyse` gives.
    """
    import dask
    import dask_geopandas

    from ..graph import build_sewer_graph
    from ..tracing import DownstreamIndex

    G = build_sewer_graph(town) if graph is None else graph
    parcels = town.layers["parcels"].reset_index(drop=True)
    h_u = halo_ft(town) / float(town.ft_per_unit)
    n = max(1, min(int(partitions), max(1, len(parcels))))
    with dask.config.set({"dataframe.convert-string": False}):  # keep the columns' types
        ddf = dask_geopandas.from_geopandas(parcels, npartitions=n)
        ddf = ddf.spatial_shuffle(by="hilbert", npartitions=n)
    parts = client.compute(ddf.to_delayed())
    ids = client.gather([client.submit(_ids, p, pure=False) for p in parts])
    parcel_part = pd.Series(np.repeat(np.arange(len(ids)), [len(x) for x in ids]),
                            index=np.concatenate(ids) if ids else [])
    owner = owners(town, parcel_part)
    rest = {k: (v.iloc[:0] if k == "parcels" or k in CLIPPED_ROLES else v)
            for k, v in town.layers.items()}
    bare = replace(town, layers=rest, report=Report())
    G_f = client.scatter(G)
    idx_f = client.submit(DownstreamIndex.of, G_f, pure=False)
    ctx_f = client.submit(_Context, client.scatter(bare, broadcast=True), idx_f, pure=False)
    del parcel_part, ids
    boxes = client.gather([client.submit(_bounds, p, pure=False) for p in parts])
    wide = [b + np.array([-2 * h_u, -2 * h_u, 2 * h_u, 2 * h_u]) for b in boxes]
    tasks = []
    for i, p in enumerate(parts):
        if not np.all(np.isfinite(boxes[i])):
            continue
        halos = [client.submit(_clip, q, wide[i], pure=False) for j, q in enumerate(parts)
                 if j != i and np.all(np.isfinite(boxes[j])) and _overlap(boxes[j], wide[i])]
        side = {r: _clip(town.layers[r], wide[i]).reset_index(drop=True)
                for r in CLIPPED_ROLES if town.layer(r) is not None}
        own = {r: town.layers[r][where == i].reset_index(drop=True)
               for r, where in owner.items()}
        side_f, own_f = client.scatter([side, own], hash=False)  # (a dict would be keys)
        tasks.append(client.submit(_partition_task, p, halos, ctx_f, side_f, own_f,
                                   control_paths, pure=False))
    sizes = client.gather([client.submit(len, p, pure=False) for p in parts])
    del parts
    out = client.gather(tasks)
    return PartitionedResult(
        obligations=_concat([o["obligations"] for o in out]),
        obligation_evidence=_concat([o["obligation_evidence"] for o in out]),
        control_manholes=_concat([o["control_manholes"] for o in out]),
        control_paths=_concat([o["control_paths"] for o in out]) if control_paths else None,
        partitions=[int(s) for s in sizes], halo_ft=halo_ft(town))


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3])


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
