"""What the HTTP service answers from: a town and its results, computed once.

:meth:`TownState.from_town` runs :func:`gisnet.pipeline.analyse` (the same
sequence as ``gisnet run``) and indexes every result layer as a
:class:`~gisnet.service.tables.ResultTable`. The state is read-only after
loading, so concurrent requests are safe.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from ..output.town_record import public_source, without_paths
from ..pipeline import analyse
from ..results import quality_totals
from ..serialize import crs_name, dumps
from .errors import ServiceUnavailable
from .tables import HOT_KEYS, SERVED_EAGERLY, TABLE_KEYS, ResultTable, compact_text, objects

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

    from ..town import Town

log = logging.getLogger("gisnet.service")

#: The analysis (pipeline step) each result layer comes from.
LAYER_ANALYSIS = {"obligations": "obligations", "obligation_evidence": "obligations",
                  "connection_zone": "obligations", "frontage": "obligations",
                  "control_manholes": "control", "control_paths": "control",
                  "sampling_plan": "control", "pipes_capacity": "capacity",
                  "plants": "capacity"}


class _ParcelTraces:
    """The downstream answer of each parcel (:meth:`TownState.parcel_trace`), made
    per request from the ``control_manholes`` columns it reads (held as arrays: a
    code, an object reference or a float a row) and the tables' id indexes."""

    def __init__(self, cm: ResultTable, paths: ResultTable) -> None:
        g = cm.gdf
        self.cm, self.paths = cm, paths
        keep = (g["user_id"].isna().to_numpy() if "user_id" in g
                else np.ones(len(g), dtype=bool))
        self.keep = keep & g["parcel_id"].notna().to_numpy()
        # control_paths is row-aligned with control_manholes (same points, same order)
        self.aligned = len(paths) == len(g)

        self.mh = objects(g["control_manhole_id"])
        self.plant = objects(g["plant_id"])
        self.mh_ft = pd.to_numeric(g["path_length_ft"], errors="coerce").to_numpy(dtype=float)
        self.out_ft = (pd.to_numeric(g["plant_path_length_ft"], errors="coerce")
                       .to_numpy(dtype=float)
                       if "plant_path_length_ft" in g else np.full(len(g), np.nan))

    def get(self, pid: str) -> tuple[bytes, np.ndarray, np.ndarray] | None:
        found = self.cm.lookup("parcel_id", pid)
        if found is None:
            return None
        pos = found[self.keep[found]]
        if not len(pos):
            return None
        i = int(pos[0])
        has_plant = self.plant[i] is not None
        head = dumps({
            "query": {"parcel": pid},
            "control_manhole_id": self.mh[i],
            "plant_id": self.plant[i] if has_plant else None,
            "control_length_ft": float(self.mh_ft[i]),  # Python floats: the fast path
            "length_ft": float(self.out_ft[i]),
            "reaches_outlet": bool(has_plant),
        })
        if self.aligned:
            ppos = pos
        else:
            p = self.paths.lookup("parcel_id", pid)
            ppos = p if p is not None else np.empty(0, dtype=np.int64)
        return head, pos, ppos


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
        Analysis name -> reason it could not be computed (from
        :attr:`gisnet.pipeline.Results.unavailable`).
    out_dir
        Folder of generated maps served by ``GET /maps/{name}``.
    timings_s
        Seconds spent on each startup step.
    input_layers
        Role -> ``{"features", "source"}`` of the town's input layers when the
        town's layers are not held (a state from a run's results,
        :meth:`from_results`); None: read from ``town.layers``.
    run
        The run served (``run_id``, ``created_utc``, ``town``, ``gisnet_version``,
        ``profile_id``), for a state from a run's results; else None.
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
    input_layers: dict[str, dict[str, Any]] | None = None
    run: dict[str, Any] | None = None
    _parcel_traces: _ParcelTraces | None = field(default=None, repr=False)
    _summary: dict[str, Any] | None = field(default=None, repr=False)
    _warm_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
        from ..io import load_town

        t0 = time.perf_counter()
        town = load_town(layers_dir, profile=profile, **load_kwargs)
        state = cls.from_town(town, out_dir=out_dir)
        state.timings_s = {"load_town": time.perf_counter() - t0 - sum(state.timings_s.values()),
                           **state.timings_s}
        return state

    @classmethod
    def from_results(cls, results_dir: str | Path, *,
                     out_dir: str | Path | None = None) -> TownState:
        """The state of a finished run's folder, read and not recomputed
        (:func:`gisnet.service.stored.read_results`); ``out_dir`` (maps served)
        defaults to that folder. The hot tables are serialized by :meth:`warm`."""
        from .stored import read_results

        got = read_results(results_dir)
        layers, parcels = got.pop("layers"), got.pop("parcels")
        state = cls(**got, out_dir=Path(results_dir) if out_dir is None else Path(out_dir))
        t = time.perf_counter()
        for name, gdf in layers.items():  # the hot ones packed by warm(), after the start
            table = state.tables[name] = ResultTable(name, gdf, TABLE_KEYS.get(name, ()),
                                                     eager=False)
            table.packing = name in SERVED_EAGERLY  # meanwhile each request's rows serialized
        if parcels is not None:
            state.tables["parcels"] = ResultTable("parcels", parcels, ("parcel_id",),
                                                  eager=False)
        # what the what-if reads of the connection points, flows and pipes, held as
        # compactly as the tables (the pipes are the table's own frame)
        if state.points is not None:
            state.points = compact_text(state.points)
        cap = state.capacity
        if cap is not None:
            cap.points = state.points
            cap.flows = compact_text(cap.flows)
            if "pipes_capacity" in state.tables:
                cap.pipes = state.tables["pipes_capacity"].gdf
        state.timings_s["tables"] = time.perf_counter() - t
        from ..memory import release

        release()  # the layers' Arrow buffers and the text made from them, given back
        return state

    @classmethod
    def from_town(cls, town: Town, *, G: nx.MultiDiGraph | None = None,
                  out_dir: str | Path | None = None) -> TownState:
        """Analyse a town (:func:`gisnet.pipeline.analyse`) and index every result table.

        The tables are the layers of ``gisnet run``'s results GeoPackage. An
        analysis that fails with a :class:`~gisnet.errors.GisnetError` (say,
        capacity on a town whose mains reach no outlet) is recorded in
        ``unavailable`` and its endpoints answer 503 with the reason; the
        others are served.

        Parameters
        ----------
        town
            The loaded town.
        G
            A sewer graph of the town to use instead of building one.
        out_dir
            Folder of generated maps to serve.
        """
        res = analyse(town, graph=G, strict=False)
        assert res.graph is not None  # the graph step always runs (and is not caught)
        control = res.control
        state = cls(town=town, G=res.graph,
                    index=None if control is None else control.index,
                    points=None if control is None else control.points,
                    capacity=res.capacity,
                    unavailable={u.analysis: without_paths(u.reason, town)
                                 for u in res.unavailable},
                    out_dir=None if out_dir is None else Path(out_dir))
        timings = dict(res.timings_s)
        t = time.perf_counter()
        for name, gdf in res.layers().items():
            state.tables[name] = ResultTable(name, gdf, TABLE_KEYS.get(name, ()),
                                             eager=name in SERVED_EAGERLY)
        if "parcels" in town.layers:  # for its ids; its rows are not served
            state.tables["parcels"] = ResultTable("parcels", town.layers["parcels"],
                                                  ("parcel_id",), eager=False)
        state.index_hot()
        if "control_manholes" in state.tables and "control_paths" in state.tables:
            state._parcel_traces = state._build_parcel_traces()
        timings["serialize"] = time.perf_counter() - t
        state.timings_s = timings
        log.info("service state ready: %s", ", ".join(f"{k} {v:.2f} s"
                                                      for k, v in timings.items()))
        return state

    # -- access -------------------------------------------------------------

    def table(self, name: str) -> ResultTable:
        """A result table, or :class:`ServiceUnavailable` saying why not."""
        t = self.tables.get(name)
        if t is None:
            why = self.unavailable.get(LAYER_ANALYSIS.get(name, name)) \
                or self.unavailable.get(name, "not computed")
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
            self.warm_traces()
        assert self._parcel_traces is not None
        return self._parcel_traces.get(str(parcel_id))

    def warm_traces(self) -> None:
        """Build the parcels' precomputed downstream answers, once (thread-safe)."""
        with self._warm_lock:
            if self._parcel_traces is None:
                self._parcel_traces = self._build_parcel_traces()

    def warm(self) -> float:
        """Serialize the tables the hot routes answer from and the parcels' traces
        now (what :meth:`from_town` does before serving); seconds taken."""
        from ..memory import release

        t = time.perf_counter()
        self.index_hot()
        for name in SERVED_EAGERLY:
            if name in self.tables:
                self.tables[name].serialize()
                release()  # the serialization's text, given back
        if "control_manholes" in self.tables and "control_paths" in self.tables:
            self.warm_traces()
        return time.perf_counter() - t

    def index_hot(self) -> None:
        """Index the id columns the hot routes look up by (:data:`HOT_KEYS`) now."""
        for name, keys in HOT_KEYS.items():
            t = self.tables.get(name)
            for k in keys:
                if t is not None and k in t.index:
                    t.id_index(k)

    def _build_parcel_traces(self) -> _ParcelTraces:
        return _ParcelTraces(self.table("control_manholes"), self.table("control_paths"))

    def require(self, analysis: str) -> None:
        """Raise :class:`ServiceUnavailable` (503) if ``analysis`` could not be computed."""
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

    def _quality(self) -> pd.DataFrame:
        """The findings: the results' quality layer, else the loader's and the graph's."""
        if "quality" in self.tables:
            return self.tables["quality"].gdf
        findings = list(self.town.report)
        graph_report = self.G.graph.get("report")
        if graph_report is not None and graph_report is not self.town.report:
            findings += list(graph_report)
        return pd.DataFrame({"kind": [f.kind for f in findings],
                             "severity": [f.severity for f in findings]})

    def _town_dir(self) -> Path | None:
        tf = self.town.settings.extra.get("town_file") if self.town.settings else None
        return None if tf is None else Path(tf).resolve().parent

    def _make_summary(self) -> dict[str, Any]:
        town = self.town
        info = town.profile.profile
        return {
            "name": town.name,
            "crs": crs_name(CRS.from_user_input(town.crs)),
            "ft_per_unit": town.ft_per_unit,
            "profile": {"id": info.id, "name": info.name, "jurisdiction": info.jurisdiction},
            "layers": ({role: dict(v) for role, v in self.input_layers.items()}
                       if self.input_layers is not None else
                       {role: {"features": len(gdf),
                               "source": public_source(town.sources.get(role),
                                                       self._town_dir())}
                        for role, gdf in town.layers.items()}),
            "graph": {"nodes": self.G.number_of_nodes(), "edges": self.G.number_of_edges(),
                      "outlets": len(self.G.graph.get("outlets", []) or [])},
            "results": {name: len(t) for name, t in self.tables.items() if name != "parcels"},
            "unavailable": dict(self.unavailable),  # paths cut at loading (from_town)
            "quality": quality_totals(self._quality()),
            "startup_s": {k: round(v, 3) for k, v in self.timings_s.items()},
        }
