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


class IdIndex:
    """Row positions of each id of a column (ids as text), held as flat arrays.

    A county's result layers are indexed by a million ids a column, a dozen
    columns in all: a dict of one position array per id costs about 250 MB a
    column (a Python string, an array object and a dict entry per id); this holds
    the ids once as Arrow text with a sorted 64-bit hash of each, and every id's
    positions in one array (about 50 MB). :meth:`get` finds an id by its hash
    (Python's, of this process) and compares the text, so two ids with one hash are
    still told apart.
    """

    __slots__ = ("_bounds", "_by_hash", "_hashes", "_ids", "_rows")

    def __init__(self, values: np.ndarray, positions: np.ndarray):
        texts = np.array([v if isinstance(v, str) else str(v) for v in values], dtype=object)
        codes, uniques = pd.factorize(texts)
        del texts
        order = np.argsort(codes, kind="stable")
        self._rows = np.asarray(positions, dtype=np.int64)[order]
        self._bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
        del codes, order
        # Python's own hash of each text (this process's: the index lives and dies with it)
        hashes = np.fromiter((hash(u) for u in uniques), dtype=np.int64, count=len(uniques))
        self._by_hash = np.argsort(hashes, kind="stable")
        self._hashes = hashes[self._by_hash]
        self._ids = pd.array(np.asarray(uniques, dtype=object), dtype="str")

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, value: str) -> np.ndarray | None:
        """The positions of ``value``'s rows, ascending, or None when no row has it."""
        h = hash(value)
        lo = int(np.searchsorted(self._hashes, h, side="left"))
        hi = int(np.searchsorted(self._hashes, h, side="right"))
        for j in range(lo, hi):
            i = int(self._by_hash[j])
            if self._ids[i] == value:
                return self._rows[self._bounds[i]:self._bounds[i + 1]]
        return None


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
        self.index: dict[str, IdIndex] = {}
        for k in keys:
            if k in self.gdf.columns:
                col = self.gdf[k]
                ok = col.notna().to_numpy()
                self.index[k] = IdIndex(col[ok].astype(object).to_numpy(), np.flatnonzero(ok))
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
