"""The HTTP service: one process loads a town once and answers from memory.

``gisnet serve`` builds a :class:`TownState` (the town, its sewer graph, the
downstream index and every result table, computed once by the same library
functions the command line calls) and serves it with FastAPI on uvicorn.
The state is read-only after loading, so concurrent requests are safe.

Single-id lookups (``GET /parcels/{id}/obligation``, ``GET
/trace/downstream?parcel=``) are dictionary lookups into the precomputed
tables, whose rows were serialized to GeoJSON (EPSG:4326) at startup; a
response is a join of byte strings. Questions about arbitrary geometry (a
point, a polygon, a what-if) call the library per request.

Responses are GeoJSON in EPSG:4326 unless ``?crs=`` names another CRS; feature
properties are the columns of the results GeoPackage layer of the same name,
with the same units (``distance_ft``, ``flow_gpd`` ...).

Errors are JSON ``{"detail": ..., "field": ...}`` and never a traceback: an
unknown id is 404, a malformed parameter or body 422 naming the field, a body
over ``max_body_bytes`` or a batch over ``max_batch`` items 413 naming the
limit, an analysis the town cannot support (e.g. no plants) 503.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from ._service_geojson import (
    WGS84,
    RequestError,
    TooLargeError,
    crs_name,
    dumps,
    feature_collection,
    feature_fragments,
)
from .errors import GisnetError

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    from fastapi import FastAPI

    from .town import Town

log = logging.getLogger(__name__)

GEOJSON = "application/geo+json"
JSON = "application/json"

__all__ = [
    "RequestError",
    "ResultTable",
    "ServiceLimits",
    "ServiceUnavailable",
    "TooLargeError",
    "TownState",
    "create_app",
]


class ServiceUnavailable(GisnetError):
    """An analysis could not be computed for this town (HTTP 503)."""

    status_code = 503


@dataclass(frozen=True)
class ServiceLimits:
    """Request limits of the service.

    Attributes
    ----------
    max_body_bytes
        Largest request body accepted, in bytes (413 beyond).
    max_batch
        Most ids or features one batch request may carry (413 beyond).
    cors_origins
        Web origins (``https://maps.example.gov``) whose pages may call the
        service from a browser; empty: none (same-origin only).
    """

    max_body_bytes: int = 16 * 1024 * 1024
    max_batch: int = 20_000
    cors_origins: tuple[str, ...] = ()


# ---------------------------------------------------------------------------
# Result tables
# ---------------------------------------------------------------------------


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
                ids = col[ok].astype(str).to_numpy()
                # .indices gives positions into `pos`; map them back to row numbers
                groups = pd.Series(pos).groupby(ids, sort=False).indices
                self.index[k] = {str(i): pos[p] for i, p in groups.items()}
        self._wgs84: list[bytes] | None = None
        self._lock = threading.Lock()
        if eager:
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


# ---------------------------------------------------------------------------
# Town state
# ---------------------------------------------------------------------------


@dataclass
class TownState:
    """Everything the service answers from, computed once at startup.

    Attributes
    ----------
    town
        The loaded town (working CRS ``town.crs``).
    G
        The directed sewer graph.
    tables
        Result layer name -> :class:`ResultTable`.
    index
        The tracing downstream index, if tracing is available.
    points
        Connection points of every building/parcel/user, if available.
    capacity
        The capacity result (``.pipes``, ``.plants``), if available.
    unavailable
        Analysis name -> reason it could not be computed.
    out_dir
        Folder of generated maps served by ``GET /maps/{name}``.
    timings_s
        Seconds spent on each startup step.
    """

    town: Town
    G: nx.MultiDiGraph
    tables: dict[str, ResultTable] = field(default_factory=dict)
    index: Any = None
    points: gpd.GeoDataFrame | None = None
    capacity: Any = None
    unavailable: dict[str, str] = field(default_factory=dict)
    out_dir: Path | None = None
    timings_s: dict[str, float] = field(default_factory=dict)
    _parcel_traces: dict[str, tuple[bytes, np.ndarray, np.ndarray]] | None = field(
        default=None, repr=False)
    _summary: dict[str, Any] | None = field(default=None, repr=False)

    # -- construction -------------------------------------------------------

    @classmethod
    def load(cls, layers_dir: str | Path, *, profile: str | None = None,
             out_dir: str | Path | None = None, **load_kwargs: Any) -> TownState:
        """Load a town folder and compute everything (see :meth:`from_town`).

        Parameters
        ----------
        layers_dir
            Folder holding the town's ``gisnet.toml``.
        profile
            Jurisdiction profile name or path (default: the town file's).
        out_dir
            Folder of generated maps to serve.
        **load_kwargs
            Passed to :func:`gisnet.io.load_town` (``overrides``, ``engine``,
            ``crs``, ``snap_tolerance_ft``).
        """
        from .io import load_town

        t0 = time.perf_counter()
        town = load_town(layers_dir, profile=profile, **load_kwargs)
        state = cls.from_town(town, out_dir=out_dir)
        state.timings_s = {"load_town": time.perf_counter() - t0 - sum(state.timings_s.values()),
                           **state.timings_s}
        return state

    @classmethod
    def from_town(cls, town: Town, *, G: nx.MultiDiGraph | None = None,
                  out_dir: str | Path | None = None) -> TownState:
        """Build the graph, the downstream index and every result table.

        The tables are those of ``gisnet run`` (:func:`gisnet.pipeline.analyse`:
        the layers of the results GeoPackage). If that fails with a
        :class:`~gisnet.errors.GisnetError` (say, a town with no plants), or
        when a graph ``G`` is given, each analysis is run on its own by the
        library function the command line uses; one that fails is recorded in
        ``unavailable`` and its endpoints answer 503 with the reason.
        """
        timings: dict[str, float] = {}
        state: TownState | None = None
        if G is None:
            from .pipeline import analyse

            try:
                res = analyse(town)
            except GisnetError as exc:
                log.warning("full analysis failed (%s); running each analysis on its own", exc)
            else:
                state = cls(town=town, G=res.graph, index=res.index, points=res.points,
                            capacity=res.capacity,
                            out_dir=None if out_dir is None else Path(out_dir))
                layers = dict(res.layers)
                timings.update(res.timings_s)
        if state is None:
            state, layers = cls._each_analysis(town, G, out_dir, timings)
        cap = state.capacity
        if cap is not None and getattr(cap, "_index", False) is None and state.index is not None:
            cap._index = state.index  # the what-if reuses the one downstream index

        t = time.perf_counter()
        for name, gdf in layers.items():
            if gdf is not None:
                state.tables[name] = ResultTable(name, gdf, TABLE_KEYS.get(name, ()),
                                                 eager=name in SERVED_EAGERLY)
        if "parcels" in town.layers:  # for its ids; its rows are not served
            state.tables["parcels"] = ResultTable("parcels", town.layers["parcels"],
                                                  ("parcel_id",), eager=False)
        if "control_manholes" in state.tables and "control_paths" in state.tables:
            state._parcel_traces = state._build_parcel_traces()
        timings["serialize"] = time.perf_counter() - t
        state.timings_s = timings
        log.info("service state ready: %s", ", ".join(f"{k} {v:.2f} s"
                                                      for k, v in timings.items()))
        return state

    @classmethod
    def _each_analysis(cls, town: Town, G: nx.MultiDiGraph | None,
                       out_dir: str | Path | None, timings: dict[str, float]
                       ) -> tuple[TownState, dict[str, pd.DataFrame]]:
        """Run graph, obligations, tracing and capacity one by one, keeping
        what succeeds (the fallback of :meth:`from_town`)."""

        def timed(name: str, fn: Callable[[], Any]) -> Any:
            t = time.perf_counter()
            try:
                return fn()
            finally:
                timings[name] = time.perf_counter() - t

        if G is None:
            from .graph import build_sewer_graph

            G = timed("graph", lambda: build_sewer_graph(town))
        state = cls(town=town, G=G, out_dir=None if out_dir is None else Path(out_dir))
        layers: dict[str, pd.DataFrame] = {}

        def attempt(name: str, fn: Callable[[], Any]) -> Any:
            try:
                return timed(name, fn)
            except (GisnetError, ImportError) as exc:
                log.warning("%s not available: %s", name, exc)
                state.unavailable[name] = str(exc)
                return None

        ob = attempt("obligations", lambda: _obligations(town))
        if ob is not None:
            layers.update(ob)

        def _tracing() -> Any:
            from . import tracing

            state.index = tracing.DownstreamIndex(G)
            state.points = tracing.connection_points(town, G, index=state.index)
            return tracing.control_manholes(town, G, points=state.points, index=state.index)

        cm = attempt("tracing", _tracing)
        if cm is not None:
            layers.update(cm)

        def _capacity() -> Any:
            from . import capacity

            return capacity.compute_capacity(town, G, points=state.points)

        cap = attempt("capacity", _capacity)
        if cap is not None:
            state.capacity = cap
            layers["pipes_capacity"] = cap.pipes
            layers["plants"] = cap.plants
        return state, layers

    # -- access -------------------------------------------------------------

    def table(self, name: str) -> ResultTable:
        """A result table, or :class:`ServiceUnavailable` saying why not."""
        t = self.tables.get(name)
        if t is None:
            analysis = {"obligations": "obligations", "obligation_evidence": "obligations",
                        "control_manholes": "tracing", "control_paths": "tracing",
                        "pipes_capacity": "capacity", "plants": "capacity"}.get(name, name)
            why = self.unavailable.get(analysis, "not computed")
            raise ServiceUnavailable(f"{name} not available for this town: {why}")
        return t

    def parcel_trace(self, parcel_id: str) -> tuple[bytes, np.ndarray, np.ndarray] | None:
        """The precomputed downstream answer of a parcel, or None if unknown.

        Returns
        -------
        (head, rows, path_rows)
            ``head``: JSON object bytes with the same scalar keys as
            :func:`gisnet.tracing.trace_downstream` for the parcel
            (``control_manhole_id``, ``plant_id``, ``control_length_ft``,
            ``length_ft`` = tap to outlet, ``reaches_outlet``), taken from the
            parcel's first building (first ``control_manholes`` row, users
            excluded), as the library's parcel trace does. ``rows``: every
            ``control_manholes`` row of the parcel's buildings; ``path_rows``:
            their ``control_paths`` rows.
        """
        if self._parcel_traces is None:
            self._parcel_traces = self._build_parcel_traces()
        return self._parcel_traces.get(parcel_id)

    def _build_parcel_traces(self) -> dict[str, tuple[bytes, np.ndarray, np.ndarray]]:
        cm = self.table("control_manholes")
        paths = self.table("control_paths")
        g = cm.gdf
        keep = (g["user_id"].isna().to_numpy() if "user_id" in g
                else np.ones(len(g), dtype=bool))
        keep = keep & g["parcel_id"].notna().to_numpy()
        rows = np.flatnonzero(keep)
        ids = g["parcel_id"].to_numpy(dtype=object)[rows].astype(str)
        groups = pd.Series(rows).groupby(ids, sort=False).indices
        # control_paths is row-aligned with control_manholes (same points, same order)
        aligned = len(paths.gdf) == len(g)
        mh = g["control_manhole_id"].to_numpy(dtype=object)
        plant = g["plant_id"].to_numpy(dtype=object)
        mh_ft = pd.to_numeric(g["path_length_ft"], errors="coerce").to_numpy(dtype=float)
        out_ft = (pd.to_numeric(g["plant_path_length_ft"], errors="coerce").to_numpy(dtype=float)
                  if "plant_path_length_ft" in g else np.full(len(g), np.nan))
        out: dict[str, tuple[bytes, np.ndarray, np.ndarray]] = {}
        for pid, gi in groups.items():
            pos = rows[gi]
            i = int(pos[0])
            has_plant = plant[i] is not None and not pd.isna(plant[i])
            head = dumps({
                "query": {"parcel": pid},
                "control_manhole_id": None if pd.isna(mh[i]) else mh[i],
                "plant_id": plant[i] if has_plant else None,
                "control_length_ft": mh_ft[i],
                "length_ft": out_ft[i],
                "reaches_outlet": bool(has_plant),
            })
            if aligned:
                ppos = pos
            else:
                p = paths.lookup("parcel_id", pid)
                ppos = p if p is not None else np.empty(0, dtype=np.int64)
            out[str(pid)] = (head, pos, ppos)
        return out

    def require(self, analysis: str) -> None:
        if analysis in self.unavailable:
            raise ServiceUnavailable(f"{analysis} not available for this town: "
                                     f"{self.unavailable[analysis]}")

    def parcel_known(self, parcel_id: str) -> bool:
        t = self.tables.get("parcels")
        return t is not None and t.lookup("parcel_id", parcel_id) is not None

    def summary(self) -> dict[str, Any]:
        """Layers, counts, profile, graph size and data-quality summary (a copy;
        computed once, the state being read-only)."""
        if self._summary is None:
            self._summary = self._make_summary()
        return copy.deepcopy(self._summary)

    def _make_summary(self) -> dict[str, Any]:
        town = self.town
        if "quality" in self.tables:  # the quality layer of the results GeoPackage
            q = self.tables["quality"].gdf
            kinds = q["kind"].astype(str).tolist()
            sevs = q["severity"].astype(str).tolist()
        else:
            findings = list(town.report)
            graph_report = self.G.graph.get("report")
            if graph_report is not None and graph_report is not town.report:
                findings += list(graph_report)
            kinds = [f.kind for f in findings]
            sevs = [f.severity for f in findings]
        by_kind: dict[str, int] = {}
        by_sev: dict[str, int] = {}
        for k, v in zip(kinds, sevs, strict=True):
            by_kind[k] = by_kind.get(k, 0) + 1
            by_sev[v] = by_sev.get(v, 0) + 1
        prof = town.profile
        pinfo = getattr(prof, "profile", None)
        profile = {
            "id": getattr(pinfo, "id", None) if pinfo is not None else str(prof),
            "name": getattr(pinfo, "name", None) if pinfo is not None else None,
            "jurisdiction": getattr(pinfo, "jurisdiction", None) if pinfo is not None else None,
        }
        return {
            "name": town.name,
            "crs": crs_name(CRS.from_user_input(town.crs)),
            "ft_per_unit": town.ft_per_unit,
            "profile": profile,
            "layers": {role: {"features": len(gdf), "source": town.sources.get(role)}
                       for role, gdf in town.layers.items()},
            "graph": {"nodes": self.G.number_of_nodes(), "edges": self.G.number_of_edges(),
                      "outlets": len(self.G.graph.get("outlets", []) or [])},
            "results": {name: len(t) for name, t in self.tables.items() if name != "parcels"},
            "unavailable": dict(self.unavailable),
            "quality": {"findings": len(kinds), "by_severity": by_sev, "by_kind": by_kind},
            "startup_s": {k: round(v, 3) for k, v in self.timings_s.items()},
        }


def _obligations(town: Town) -> dict[str, pd.DataFrame]:
    from .obligations import compute_obligations

    return compute_obligations(town)


# ---------------------------------------------------------------------------
# The app
# ---------------------------------------------------------------------------

_MAP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_MAP_TYPES = {".html": "text/html; charset=utf-8", ".png": "image/png",
              ".json": JSON, ".geojson": GEOJSON, ".js": "text/javascript",
              ".css": "text/css"}


def create_app(state: TownState, limits: ServiceLimits | None = None) -> FastAPI:
    """The FastAPI application answering from ``state``.

    Parameters
    ----------
    state
        The loaded town and its results (read-only from here on).
    limits
        Body-size and batch-count limits (defaults: 16 MiB, 20,000 items).

    Returns
    -------
    fastapi.FastAPI
        OpenAPI description at ``/openapi.json``, docs at ``/docs``.
    """
    from ._service_app import build_app

    return build_app(state, limits or ServiceLimits())
