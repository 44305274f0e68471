"""The whole job on one town: graph, every analysis, the results GeoPackage, the maps.

:func:`analyse` is the one place that sequences the analyses::

    graph -> obligations (+ connection zone, frontage)
          -> control manholes (+ sampling plan when there are users)
          -> capacity -> quality

and returns them typed (:class:`Results`). ``gisnet run`` is :func:`run`
(analyse, then write); the HTTP service and the other commands call
:func:`analyse` (a command that needs part of the work passes ``only=``,
which runs the needed steps in the same order).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import pandas as pd

from .capacity import compute_capacity
from .control import analyse_control
from .errors import ConfigError, GisnetError
from .followup import FollowUps
from .graph import graph_summary, graph_to_gdfs, quality_gdf
from .graph.build import BuiltGraph, build_graph_parts
from .graph.table import GraphTable
from .io import crs_label
from .io.postgis import is_database
from .lean import (
    building_centroids,
    counted_only,
    empty_written,
    evidence_for_maps,
    paths_after_capacity,
    points_for_capacity,
    release_drawn,
)
from .memory import long_lived, release
from .obligations import analyse_obligations, connection_zone, frontage_reason
from .output import write_tables
from .progress import ProgressLike, as_reporter
from .report import Report
from .results import (
    ControlResult,
    LayerDict,
    ObligationsResult,
    Unavailable,
    crs_text,
    quality_totals,
    rows_text,
    short_repr,
)
from .serialize import to_jsonable
from .threads import default_threads, in_background
from .town import Town
from .tracing.control import PATHS_LATER
from .worklist import worklist, worklist_lines

if TYPE_CHECKING:  # pragma: no cover
    import folium

log = logging.getLogger(__name__)

#: What ``progress=`` accepts: a :class:`gisnet.progress.Reporter` (a bar on a
#: terminal, lines otherwise), a callable given each step's message, or None.
Progress = ProgressLike

#: :func:`run` writes the GeoPackage of a town of this many parcels or more in a child
#: process while the analyses go on (when it has a second core to do it on).
GPKG_CHILD_MIN_PARCELS = 100_000
#: The steps of :func:`analyse`, in the order they run.
STEPS = ("graph", "obligations", "control", "capacity", "quality")

#: The steps each step needs before it.
NEEDS: dict[str, tuple[str, ...]] = {
    "graph": (),
    "obligations": (),
    "control": ("graph",),
    "capacity": ("graph", "control"),
    "quality": ("graph",),
}


@dataclass
class Results(FollowUps):
    """Everything :func:`analyse` computed for one town.

    Attributes
    ----------
    town
        The loaded town.
    graph
        The directed sewer graph (None when the graph step was not run).
    graph_nodes, graph_edges
        The graph as layers (:func:`gisnet.graph.graph_to_gdfs`).
    obligations
        Who must connect (:class:`gisnet.results.ObligationsResult`).
    control
        Connection points, control manholes, sampling plan
        (:class:`gisnet.results.ControlResult`).
    capacity
        Pipe and plant capacity (:class:`gisnet.capacity.CapacityResult`,
        reused by what-if).
    quality
        The data-quality layer: the loader's, the graph's and the capacity
        run's findings.
    worklist
        The fixes a technician can make, ranked (:func:`gisnet.worklist.worklist`).
    unavailable
        What could not be answered, and why.
    overdue
        Parcels whose deadline has passed and that are not connected
        (:func:`gisnet.register.overdue_layer`), with the obligations step.
    changes
        What changed since the previous run into the same output
        (:func:`gisnet.register.changes_layer`); set by :func:`run` only.
    timings_s
        Seconds spent in each step (and in writing, for :func:`run`).
    files
        What :func:`run` and :meth:`to_file` wrote: the files, or for a database
        output the database (its URL, password removed: a text, not a path).

    Follow-up questions are answered from what the analyses kept (the town,
    the graph, the downstream index, the capacity result;
    :class:`gisnet.followup.FollowUps`): :meth:`layer`, :meth:`trace`,
    :meth:`whatif`; :meth:`to_file` writes the results GeoPackage and
    :meth:`explore` maps a layer. One whose step was not run (``only=`` left
    it out) is a :class:`~gisnet.errors.ConfigError` naming the step.
    """

    town: Town
    graph: nx.MultiDiGraph | None = None
    graph_nodes: gpd.GeoDataFrame | None = None
    graph_edges: gpd.GeoDataFrame | None = None
    obligations: ObligationsResult | None = None
    control: ControlResult | None = None
    capacity: Any = None
    quality: gpd.GeoDataFrame | None = None
    worklist: gpd.GeoDataFrame | None = None
    unavailable: list[Unavailable] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    files: list[Path | str] = field(default_factory=list)
    overdue: gpd.GeoDataFrame | None = None
    changes: gpd.GeoDataFrame | None = None
    _index: Any = field(default=None, init=False, repr=False, compare=False)
    #: The graph's headline figures, kept when the graph is let go
    #: (:meth:`release_follow_ups`).
    _graph_summary: dict[str, Any] | None = field(default=None, init=False, repr=False,
                                                  compare=False)
    #: :meth:`summary` but for timings and files, kept when the layers are let go
    #: (:func:`gisnet.lean.release_drawn`).
    _kept: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def keep_summary(self) -> None:
        """Keep :meth:`summary`'s figures (its timings and files stay live)."""
        self._kept = {k: v for k, v in self.summary().items() if k not in ("timings_s", "files")}

    def release_follow_ups(self, graph: bool = True) -> None:
        """Let go of what only follow-up questions read: the networkx graph (its
        headline figures kept for :meth:`summary`), the downstream index, the
        connection points and the capacity step's network arrays and flows; the
        result layers stay. At county scale about 1 GB (``docs/performance.md``),
        for a command that ends once the layers are written and drawn (``gisnet
        run``, :func:`analyse` with ``release_inputs``). Afterwards :meth:`trace` and
        :meth:`whatif` raise a :class:`~gisnet.errors.ConfigError` saying so.

        Parameters
        ----------
        graph
            Let go of the graph too (False: all but the graph, which the quality
            step still reads).
        """
        if graph and self.graph is not None:
            self._graph_summary = graph_summary(self.graph)
            self.graph = None
        self._index = None
        for part, names in ((self.control, ("points", "index")),
                            (self.capacity, ("points", "flows", "index", "network",
                                             "accumulation"))):
            if part is not None:
                for name in names:
                    if getattr(part, name, None) is not None:
                        setattr(part, name, None)
        release(collect=graph)  # (the graph's dictionaries refer to each other)

    def __repr__(self) -> str:
        lines = [f"profile {self.town.profile.profile.id}, CRS {crs_text(self.town.crs)}",
                 "layers: " + rows_text(self.layers)]
        if self.obligations is not None and self.obligations.totals:
            lines.append("obligations: " + ", ".join(
                f"{k} {v}" for k, v in self.obligations.totals.items()))
        if self.unavailable:
            lines.append("unavailable: " + ", ".join(u.analysis for u in self.unavailable))
        return short_repr(f"Results for {self.town.name!r}", lines)

    @property
    def layers(self) -> LayerDict:
        """Every result layer by name (:attr:`gisnet.followup.FollowUps.layers`), with
        ``overdue`` and, after :func:`run`, ``changes``."""
        out = FollowUps.layers.fget(self)  # type: ignore[attr-defined]
        if self.overdue is not None:
            out["overdue"] = self.overdue
        if self.changes is not None:
            out["changes"] = self.changes
        return out

    def summary(self) -> dict[str, Any]:
        """Headline figures, for ``gisnet run`` (plain JSON data)."""
        if self._kept is not None:
            return to_jsonable({**self._kept, "timings_s": {
                k: round(v, 3) for k, v in self.timings_s.items()},
                "files": [str(p) for p in self.files]})
        town = self.town
        out: dict[str, Any] = {
            "town": town.name,
            "profile": str(town.profile.profile.id),
            "crs": crs_label(town.crs),
            "layers": {role: len(gdf) for role, gdf in town.layers.items()},
        }
        if self.graph is not None:
            out["graph"] = graph_summary(self.graph)
        elif self._graph_summary is not None:
            out["graph"] = self._graph_summary
        if self.quality is not None:
            out["quality"] = quality_totals(self.quality)["by_severity"]
        if self.worklist is not None:
            out["worklist"] = worklist_lines(self.worklist)
        if self.obligations is not None and self.obligations.totals:
            out["obligations"] = self.obligations.totals
        if self.control is not None:
            out.update(self.control.totals)
        if self.capacity is not None:
            out.update(self.capacity.totals)
        if self.changes is not None:
            out["changes"] = len(self.changes)
        if self.overdue is not None:
            out["overdue"] = len(self.overdue)
        if "register_place" in town.settings.extra:
            out["register"] = town.settings.extra["register_place"]
        if self.unavailable:
            out["not_computed"] = {u.analysis: u.reason for u in self.unavailable}
        out["timings_s"] = {k: round(v, 3) for k, v in self.timings_s.items()}
        out["files"] = [str(p) for p in self.files]
        return to_jsonable(out)

    def explore(self, layer: str = "obligations", **kwargs: Any) -> folium.Map:
        """An interactive folium map of one result layer, in EPSG:4326, like
        :meth:`geopandas.GeoDataFrame.explore` (:func:`gisnet.maps.explore_layer`:
        gisnet's colours for statuses, utilization classes and severities).

        Parameters
        ----------
        layer
            The result layer (:attr:`layers`), default ``obligations``.
        **kwargs
            Passed to :meth:`geopandas.GeoDataFrame.explore` (``column=``,
            ``tooltip=``, ``m=`` ...).

        Returns
        -------
        folium.Map

        Raises
        ------
        ConfigError
            No such layer (the step that makes it named), or a layer without geometry.
        """
        gdf = self.layer(layer)
        from .maps.explore import explore_layer

        return explore_layer(gdf, layer, profile=self.town.profile, **kwargs)


def _steps(only: Collection[str] | None) -> set[str]:
    """The steps to run for ``only`` (None: all), with what they need."""
    if only is None:
        return set(STEPS)
    unknown = set(only) - set(STEPS)
    if unknown:
        raise ValueError(f"unknown analysis step(s) {sorted(unknown)}; steps are {STEPS}")
    todo: set[str] = set()
    stack = list(only)
    while stack:
        s = stack.pop()
        if s not in todo:
            todo.add(s)
            stack.extend(NEEDS[s])
    return todo


# ---------------------------------------------------------------------------
# The sequence
# ---------------------------------------------------------------------------


def analyse(
    town: Town,
    *,
    only: Collection[str] | None = None,
    graph: nx.MultiDiGraph | None = None,
    parcels: Any = None,
    assume_abutting: bool = False,
    control_paths: bool = True,
    strict: bool = True,
    progress: Progress | None = None,
    on_layers: Callable[[Mapping[str, pd.DataFrame]], None] | None = None,
    as_of: dt.date | None = None,
    release_inputs: bool = False,
    release_written: bool = False,
    on_written: Callable[[Results], None] | None = None,
) -> Results:
    """Run the analyses on a loaded town: the obligations (which need no graph), the
    graph, then the others in pipeline order (:data:`STEPS`).

    Parameters
    ----------
    town
        A town from :func:`gisnet.io.load_town`.
    only
        Run only these steps (and the steps they need, :data:`NEEDS`), in
        pipeline order; default every step.
    graph
        Use this sewer graph instead of building one.
    parcels
        Measure obligations of these parcels only (ids or a parcels layer; see
        :func:`gisnet.obligations.compute_obligations`).
    assume_abutting
        Without a streets layer, treat parcels within the distance as abutting.
    control_paths
        Build the ``control_paths`` lines (skip for speed).
    strict
        True: an analysis that fails raises. False: its
        :class:`~gisnet.errors.GisnetError` is recorded in ``unavailable``
        and the others go on (the HTTP service); the graph must still build.
    progress
        A :class:`gisnet.progress.Reporter`, or a callable given a short message
        before each step.
    on_layers
        Called with ``res.layers()`` after each step (obligations, graph, control,
        capacity and the connection zone): ``gisnet run`` starts writing the
        GeoPackage while the next analyses go on (:class:`gisnet.io.GpkgWriter`).
        The layers it is given do not change afterwards.
    as_of
        The day the ``overdue`` layer counts deadlines against (default today).
    release_inputs
        Less memory for a big town (follow-ups that measure from buildings must not
        be asked of these results): the buildings' polygons go once the obligations
        (the last to measure from them) end, the control step given each building's
        centroid, made before; after it the buildings keep only the points later
        steps read (:func:`gisnet.lean.buildings_read_later`), and its paths are made
        after the capacity step (:func:`gisnet.lean.paths_after_capacity`); once the
        worklist (last) is made, the streets and laterals keep only their count
        (:func:`gisnet.lean.counted_only`). What only follow-up questions read goes
        too (:meth:`Results.release_follow_ups`): the downstream index and connection
        points once the capacity step has ended, the graph once quality has read it.
    release_written
        Once ``on_layers`` has been given them, empty the layers nothing after
        their step reads (:data:`gisnet.lean.RELEASED_ONCE_WRITTEN`; kept as frames of no rows
        with their columns): ``gisnet run`` without maps or tables, whose
        GeoPackage writer already holds them.
    on_written
        Called with the results once ``on_layers`` has been given each step's
        layers (``gisnet run`` with maps: the evidence cut to the rows the pages
        draw, :func:`gisnet.lean.evidence_for_maps`).

    Returns
    -------
    Results
        The typed results; ``layers()`` gives ``graph_nodes``, ``graph_edges``,
        ``obligations``, ``obligation_evidence``, ``connection_zone``,
        ``frontage``, ``control_manholes``, ``control_paths``,
        ``sampling_plan`` (when there are users), ``pipes_capacity``,
        ``plants``, ``plant_increase``, ``quality`` and ``worklist``.
    """

    todo = _steps(only)
    rep = as_reporter(progress)
    res = Results(town)
    timings = res.timings_s
    n_parcels = len(town.layers["parcels"]) if "parcels" in town.layers else 0
    n_mains = len(town.layers["mains"]) if "mains" in town.layers else 0

    def step(name: str, message: str, fn: Callable[[], Any], count: int | None = None,
             unit: str = "") -> Any:
        t = time.perf_counter()
        try:
            with rep.step(name, message, count=count, unit=unit):
                return fn()
        except (GisnetError, ImportError) as exc:
            if strict:
                raise
            log.warning("%s not available: %s", name, exc)
            res.unavailable.append(Unavailable(name, str(exc)))
            return None
        finally:
            timings[name] = time.perf_counter() - t

    def done() -> None:
        release()  # the step's temporaries, back to the system
        if on_layers is not None:
            on_layers(res.layers())
            if release_written:
                empty_written(res)
            if on_written is not None:
                on_written(res)

    # The obligations need no graph: they are measured first, so their layers go to
    # the writer while the graph is built. The zone's GEOS union starts once their
    # nearest-main searches are done and runs on one thread, on the core the rest of
    # them, the graph's Python and the control step leave free; it is added to them
    # with the capacity step's layers.
    zone: Callable[[], Any] | None = None

    def start_zone() -> None:
        nonlocal zone
        zone = in_background(lambda: connection_zone(town), threads=1)

    def take_zone() -> None:
        nonlocal zone
        if zone is None or res.obligations is None:
            return
        t = time.perf_counter()  # (the wait, if any, is the obligations' time)
        try:
            res.obligations.connection_zone = zone()
        except GisnetError as exc:
            if strict:
                raise
            log.warning("connection_zone not available: %s", exc)
            res.unavailable.append(Unavailable("connection_zone", str(exc)))
        zone = None
        timings["obligations"] += time.perf_counter() - t

    if "obligations" in todo:
        res.obligations = step("obligations", "measuring connection obligations",
                               lambda: analyse_obligations(town, parcels=parcels, zone=False,
                                                            assume_abutting=assume_abutting,
                                                            on_measured=start_zone),
                               n_parcels, "parcels")
        if res.obligations is not None:
            from .register import overdue_layer

            if res.obligations.frontage is None:
                res.unavailable.append(Unavailable("frontage", frontage_reason(town)))
            res.overdue = overdue_layer(res.obligations.obligations,
                                        as_of or dt.date.today(),
                                        town.settings.extra.get("register"),
                                        town.layers.get("parcels"))
        done()
    if res.obligations is None:
        zone = None
    elif zone is None:  # (the step did not get as far as measuring)
        start_zone()
    table: GraphTable | None = None
    # the buildings' points for the control step (GEOS; their polygons go) made on
    # one thread while the graph is built (Python) on another
    centroids = in_background(lambda: building_centroids(town), threads=1) \
        if release_inputs and "control" in todo else None
    if "graph" in todo:
        t = time.perf_counter()
        with rep.step("graph", "building the sewer graph", count=n_mains, unit="mains"):
            built = build_graph_parts(town) if graph is None else \
                BuiltGraph(graph, *graph_to_gdfs(graph), table=None)
        res.graph, res.graph_nodes, res.graph_edges, table = \
            built.graph, built.nodes, built.edges, built.table  # (the table: until capacity)
        del built
        timings["graph"] = time.perf_counter() - t
    G = res.graph
    done()

    if "control" in todo:
        assert G is not None  # the step needs "graph" (NEEDS), built above
        res.control = step("control", "finding connection points and control manholes",
                           lambda: analyse_control(
                               town, G, table=table,
                               paths=PATHS_LATER if release_inputs and control_paths
                               else control_paths, building_points=centroids),
                           n_parcels, "parcels")
        centroids = None
        if res.control is not None and res.control.sampling_plan is None:
            res.unavailable.append(Unavailable(
                "sampling_plan", "the town has no industrial users (no users layer, or it "
                                 "is empty)"))
        done()

    if "capacity" in todo:
        assert G is not None  # the step needs "graph" (NEEDS), built above
        c = res.control
        pts = (points_for_capacity(c, town) if release_inputs
               else None if c is None else c.points)
        res.capacity = step("capacity", "accumulating flows and checking capacity",
                            lambda: compute_capacity(town, G, points=pts, table=table,
                                                     index=None if c is None else c.index),
                            n_mains, "mains")
        pts = table = None
        plants = town.layer("plants")
        if res.capacity is not None and (plants is None or not len(plants)):
            res.unavailable.append(Unavailable(
                "plants", "the town has no plants layer: plant flows are not checked "
                          "against design flows"))
        if res.capacity is not None and res.capacity.plant_increase_note:
            res.unavailable.append(Unavailable("plant_increase",
                                               res.capacity.plant_increase_note))
        take_zone()
        done()
    if zone is not None:
        take_zone()
        done()
    if release_inputs:  # what only follow-ups read; the graph once the quality step has it
        res.release_follow_ups(graph=False)

    if "quality" in todo:
        assert G is not None  # the step needs "graph" (NEEDS), built above
        extra = town.report
        cap_report = None if res.capacity is None else res.capacity.report
        if cap_report is not None and len(cap_report):

            extra = Report(list(town.report.findings) + list(cap_report.findings))
        res.quality = quality_gdf(G, extra=extra)
        res.worklist = worklist(res.quality, G, town)
    if release_inputs:
        unread_shapes_as_points(town)
        if paths_after_capacity(res):  # (to the writer before the graph is collected)
            done()
        del G  # the last reference but the results'
        res.release_follow_ups()
    return res


def run(
    town: Town,
    out_dir: str | Path,
    *,
    self_contained: bool = True,
    maps: bool = True,
    tables: tuple[str, ...] = (),
    progress: Progress | None = None,
    inputs: Collection[str | Path] = (),
    tiles: str = "auto",
    release_inputs: bool = False,
) -> Results:
    """Analyse a town and publish its whole output set, all or nothing.

    Every output path is checked against every input file and sidecar before
    anything is written (:func:`gisnet.io.refuse_inputs_as_outputs`). The
    GeoPackage, the tables and the pages are written into a staging folder in
    ``out_dir`` and published in one step with the manifest
    ``gisnet-manifest.json`` (:mod:`gisnet.output.publish`): a run that dies leaves
    the previous outputs whole, and the next run removes its leftovers.

    Parameters
    ----------
    town
        A town from :func:`gisnet.io.load_town`.
    out_dir
        Output folder (created if needed).
    self_contained
        Write map pages whose scripts and styles are inside the page (the
        default; False: Leaflet from a CDN).
    maps
        Write the web maps as well as the GeoPackage.
    tables
        Also write every layer as these table formats (``csv``, ``geojson``,
        ``parquet``) under ``out_dir/tables`` (see :func:`gisnet.io.write_tables`).
    tiles
        ``auto``, ``always`` or ``never``: big layers of the pages from vector
        tiles (``out_dir/tiles/``; see :mod:`gisnet.maps.tiled`).
    progress
        A :class:`gisnet.progress.Reporter` (:func:`gisnet.progress.reporter`: a
        bar on a terminal, a line per step otherwise), or a callable given a
        short message before each step.
    inputs
        Further input files to keep off (a profile file named on the command line).
    release_inputs
        Let go of the input shapes nothing after the analyses measures (buildings,
        streets, laterals; at county scale a million building polygons, about 0.65
        GB) before the results are written and drawn (see :func:`analyse`), and
        let go of what only follow-up questions read once the analyses end
        (:meth:`Results.release_follow_ups`: the graph, the downstream index, the
        connection points). With maps, every result layer and the town's layers go
        once the GeoPackage is written and the pages built, before their tiles are
        cut (:func:`gisnet.lean.release_drawn`; :meth:`Results.summary` keeps its
        figures). For a command that ends with the run (``gisnet run``).

    Raises
    ------
    ConfigError
        An output path is an input (both named), or the folder cannot be written.
    """
    from .output import (
        RESULTS_FILE,
        GpkgWriter,
        new_run_id,
        planned_outputs,
        publish,
        refuse_inputs_as_outputs,
        staging_area,
    )
    from .output import make_manifest as manifest_of

    rep = as_reporter(progress)
    if is_database(out_dir):
        return _run_into_database(town, str(out_dir), tables=tables, maps=maps, rep=rep)
    out = Path(out_dir)
    pages = _pages_of(maps)
    refuse_inputs_as_outputs(planned_outputs(out, tables=tables, pages=pages), town, *inputs)
    # the register kept beside the results, read (created when absent) before the
    # analyses; the previous run's obligations, for the changes layer
    town, register, previous = _register_and_previous(town, out)
    # the analyses (quality is quick), write (with the maps beside it), publish
    rep.plan(len(STEPS) - 1 + 2)
    run_id = new_run_id()
    # With a second core, a big town's GeoPackage is written by a child process while the
    # analyses go on, each analysis's layers as soon as it ends (pyogrio holds the GIL
    # while GDAL writes), the maps drawn meanwhile. With one thread to use (a batch
    # worker's share), it is written after the analyses (before the pages' tiles).
    parcels = town.layers.get("parcels")
    early = default_threads() > 1 and parcels is not None \
        and len(parcels) >= GPKG_CHILD_MIN_PARCELS
    town_info: dict[str, Any] = {}  # the town's record, made before its layers go
    try:
        with ExitStack() as stack:
            stack.enter_context(long_lived())  # (the town's layers: out of the collector)
            if early:
                stage = stack.enter_context(staging_area(out, run_id))
                gpkg = stack.enter_context(GpkgWriter(stage / RESULTS_FILE, process=True,
                                                           digest=maps))
            # without tables, the writer is the last to read the layers no later step
            # reads (with maps: the evidence but for the rows drawn; the file hashed on
            # the thread that closes it, beside the pages)
            lean = early and release_inputs and not tables
            res = analyse(town, progress=rep, on_layers=gpkg.add if early else None,
                          release_inputs=release_inputs, release_written=lean and not maps,
                          on_written=evidence_for_maps if lean and maps else None)
            _add_changes(res, previous, register, run_id)
            layers = res.layers()
            refuse_inputs_as_outputs(planned_outputs(out, tables=tables, pages=pages,
                                                     layer_names=list(layers)), town, *inputs)
            if not early:  # nothing is written before the analyses have run
                stage = stack.enter_context(staging_area(out, run_id))
                gpkg = stack.enter_context(GpkgWriter(stage / RESULTS_FILE))
            # (a layer the writer has is counted as it was given: some are cut since)
            rows = sum({**{k: len(df) for k, df in layers.items()}, **gpkg.rows}.values())
            what = "the GeoPackage" + (f" and {', '.join(tables)} tables" if tables else "")

            def write() -> float:
                t = time.perf_counter()
                gpkg.close(layers)
                if tables:
                    write_tables(stage, layers, tables)
                return time.perf_counter() - t

            if not maps:
                with rep.step("write", f"writing {what}", count=rows, unit="rows"):
                    res.timings_s["write"] = write()
            else:
                from .maps import write_maps

                # The GeoPackage is finished on a thread while the pages are built
                # and their tiles cut (the maps read the same layers and change none).
                beside = default_threads() > 1
                with ThreadPoolExecutor(1, thread_name_prefix="gisnet-write") if beside \
                        else nullcontext() as ex:
                    writing = ex.submit(write) if ex is not None else None

                    def written() -> None:
                        if "write" not in res.timings_s:
                            res.timings_s["write"] = writing.result() if writing else write()
                        if release_inputs and not town_info:  # written and drawn: let go
                            town_info.update(release_drawn(res, layers))

                    t = time.perf_counter()
                    with rep.step("write+maps", f"writing web maps and {what}", count=rows,
                                  unit="rows"):
                        write_maps(town, layers, stage, self_contained=self_contained,
                                   tiles=tiles, before_tiles=written)
                        written()
                    res.timings_s["maps"] = time.perf_counter() - t
            with rep.step("publish", "publishing"):
                res.files.extend(publish(stage, out,
                                         manifest_of(stage, run_id=run_id, town=town,
                                                     unavailable={u.analysis: u.reason for u
                                                                  in res.unavailable},
                                                     town_info=town_info or None),
                                         town))
                from .register import ensure_register

                ensure_register(out)  # the staff register beside the results, once
    finally:
        rep.close()
    return res


def _pages_of(maps: bool) -> tuple[str, ...]:
    """The pages a run with ``maps`` writes (none without)."""
    if not maps:
        return ()
    from .maps import PAGES

    return PAGES


def unread_shapes_as_points(town: Town) -> None:
    """Once the analyses are done, the input layers nothing after them measures: each
    building the point inside it where the maps mark one whose sewer is unresolved
    (:func:`gisnet.maps.common.point_geoms`; a point is about a third of a 5-vertex
    polygon's memory), the streets and laterals their count of rows alone
    (:func:`gisnet.lean.counted_only`: the write and the maps read the result layers
    and the parcels, mains, manholes, plants, users and buildings; the manifest
    counts every layer's rows)."""
    from .maps.common import point_geoms

    b = town.layers.get("buildings")
    if isinstance(b, gpd.GeoDataFrame) and b.geometry.name in b.columns:
        town.layers["buildings"] = point_geoms(b)
    counted_only(town)


def _register_and_previous(town: Town, out: str | Path) -> tuple[Town, pd.DataFrame, Any]:
    """The town with the register of output ``out`` applied (the register created
    beside a folder's results when absent), the register, and the previous run."""
    from .output import guard_outputs
    from .register import (
        REGISTER_FILE,
        apply_register,
        previous_run,
        read_register,
        register_place,
    )

    if not is_database(out):
        path = Path(out) / REGISTER_FILE
        if not path.exists():  # made after the run is published (ensure_register)
            guard_outputs([path], town=town, what="register")
    register = read_register(out)
    return (apply_register(town, register, where=register_place(out)), register,
            previous_run(out))


def _add_changes(res: Results, previous: Any, register: pd.DataFrame, run_id: str) -> None:
    """Set ``res.changes``: this run's obligations against the previous run's."""
    from .register import changes_layer
    from .register.entries import utc_now

    if res.obligations is None:
        return
    res.changes = changes_layer(previous, res.obligations.obligations, run_id=run_id,
                                run_at=utc_now(), register=register)


def _run_into_database(town: Town, url: str, *, tables: Collection[str], maps: bool,
                       rep: Any) -> Results:
    """:func:`run` with a PostGIS output (:func:`gisnet.output.postgis.write_postgis`):
    every result layer as a table, in one transaction; no pages or table files."""
    from . import __version__
    from .extras import require
    from .io.postgis import POSTGIS_FEATURE
    from .output import new_run_id
    from .output.postgis import write_postgis

    if tables:
        raise ConfigError("--tables writes files into a folder; with a database --out the "
                          "result layers are its tables (drop --tables)")
    require("postgis", POSTGIS_FEATURE)  # before the analyses, not after
    try:
        rep.plan(len(STEPS))
        town, register, previous = _register_and_previous(town, url)
        res = analyse(town, progress=rep)
        run_id = new_run_id()
        _add_changes(res, previous, register, run_id)
        layers = res.layers()
        t = time.perf_counter()
        with rep.step("write", "writing the PostGIS tables",
                      count=sum(len(df) for df in layers.values()), unit="rows"):
            res.files.append(write_postgis(url, layers, town, run_id=run_id,
                                           version=__version__, say=lambda _m: None,
                                           unavailable={u.analysis: u.reason
                                                        for u in res.unavailable}))
        res.timings_s["write"] = time.perf_counter() - t
    finally:
        rep.close()
    if maps:
        log.warning("web maps not written: --out is a database; run with --out DIR for them")
    return res


def summary(res: Results) -> dict[str, Any]:
    """Headline figures of a run (:meth:`Results.summary`)."""
    return res.summary()
