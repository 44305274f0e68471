"""Result layers held by the HTTP service, indexed by id and pre-serialized."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from ..serialize import WGS84, feature_collection, feature_fragments
from .errors import ServiceUnavailable


def group_positions(values: np.ndarray) -> dict[str, np.ndarray]:
    """Positions of each distinct value (as text), in order of first appearance, each
    group's positions ascending; what ``Series.groupby(values, sort=False).indices``
    gives, without pandas' per-element access to text backed by Arrow."""
    codes, uniques = pd.factorize(np.array([v if isinstance(v, str) else str(v)
                                            for v in values], dtype=object))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    names = np.asarray(uniques, dtype=object)
    return {str(names[i]): order[bounds[i]:bounds[i + 1]] for i in range(len(names))}


class ResultTable:
    """One result layer, indexed by its id columns and pre-serialized.

    Parameters
    ----------
    name
        Layer name as in the results GeoPackage (``obligations`` ...).
    gdf
        The layer, geometry in the town's working CRS (or a plain DataFrame).
    keys
        Columns to index for lookups (those present are used).
    eager
        Serialize every row now (else on first use).

    Notes
    -----
    Every row is serialized once to a GeoJSON Feature in EPSG:4326; a lookup
    in that CRS joins the stored bytes. Other CRSs reproject the selected
    rows per request.
    """

    def __init__(self, name: str, gdf: pd.DataFrame, keys: Sequence[str] = (), *,
                 eager: bool = True) -> None:
        self.name = name
        self.gdf = gdf.reset_index(drop=True)
        self.crs: CRS | None = (CRS.from_user_input(gdf.crs)
                                if isinstance(gdf, gpd.GeoDataFrame) and gdf.crs is not None
                                else None)
        self.index: dict[str, dict[str, np.ndarray]] = {}
        for k in keys:
            if k in self.gdf.columns:
                col = self.gdf[k]
                ok = col.notna().to_numpy()
                pos = np.flatnonzero(ok)
                ids = col[ok].astype(object).to_numpy()
                self.index[k] = {i: pos[p] for i, p in group_positions(ids).items()}
        self._wgs84: list[bytes] | None = None
        self._lock = threading.Lock()
        if eager:
            self._serialized()

    def serialize(self) -> None:
        """Serialize every row now, if not done yet (thread-safe)."""
        self._serialized()

    def _serialized(self) -> list[bytes]:
        """Every row as a GeoJSON feature in EPSG:4326 (built once)."""
        if self._wgs84 is None:
            with self._lock:
                if self._wgs84 is None:
                    self._wgs84 = feature_fragments(self._in_crs(self.gdf, WGS84))
        return self._wgs84

    def __len__(self) -> int:
        return len(self.gdf)

    def _in_crs(self, df: pd.DataFrame, crs: CRS) -> pd.DataFrame:
        if self.crs is None or not isinstance(df, gpd.GeoDataFrame) or not len(df):
            return df
        return df if self.crs.equals(crs) else df.to_crs(crs)

    def lookup(self, key: str, value: str) -> np.ndarray | None:
        """Row positions whose ``key`` column equals ``value`` (None if none)."""
        idx = self.index.get(key)
        if idx is None:
            raise ServiceUnavailable(f"layer {self.name!r} has no {key!r} column")
        return idx.get(value)

    def lookup_many(self, key: str, values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Row positions of many ids, in the order asked, and the ids not found."""
        idx = self.index.get(key)
        if idx is None:
            raise ServiceUnavailable(f"layer {self.name!r} has no {key!r} column")
        found: list[np.ndarray] = []
        missing: list[str] = []
        for v in values:
            p = idx.get(v)
            if p is None:
                missing.append(v)
            else:
                found.append(p)
        pos = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
        return pos, missing

    def fragments(self, positions: Sequence[int] | np.ndarray, crs: CRS) -> list[bytes]:
        """Serialized features of the given rows in ``crs``."""
        if crs.equals(WGS84):
            frags = self._serialized()
            return [frags[i] for i in positions]
        sub = self.gdf.iloc[np.asarray(positions, dtype=np.int64)]
        return feature_fragments(self._in_crs(sub, crs))

    def collection(self, positions: Sequence[int] | np.ndarray, crs: CRS,
                   extra: dict[str, Any] | None = None) -> bytes:
        """A FeatureCollection of the given rows in ``crs``."""
        return feature_collection(self.fragments(positions, crs), crs, extra)

    def all_positions(self) -> np.ndarray:
        return np.arange(len(self.gdf))


#: Lookup keys of each result layer.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "sampling_plan": ("user_id", "control_manhole_id"),
    "frontage": ("parcel_id",),
    "graph_nodes": ("node_id",),
    "graph_edges": ("main_id",),
    "obligations": ("parcel_id", "building_id"),
    "obligation_evidence": ("parcel_id", "building_id"),
    "control_manholes": ("parcel_id", "building_id", "user_id", "control_manhole_id"),
    "control_paths": ("parcel_id", "building_id", "user_id"),
    "pipes_capacity": ("main_id",),
    "plants": ("plant_id",),
}


#: Tables whose rows are answered by the hot endpoints: serialized at startup.
SERVED_EAGERLY = frozenset({"obligations", "control_manholes", "control_paths",
                            "pipes_capacity", "plants"})
