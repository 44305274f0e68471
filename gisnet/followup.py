"""The follow-up questions a town's results answer from what the analyses kept.

:class:`FollowUps` holds the methods of :class:`gisnet.pipeline.Results` that
answer them: a result layer by name (:meth:`FollowUps.layer`), a trace up or
down the sewers (:meth:`FollowUps.trace`, :mod:`gisnet.tracing`), a proposed
connection (:meth:`FollowUps.whatif`, :func:`gisnet.capacity.whatif`), the
results GeoPackage (:meth:`FollowUps.to_file`, :func:`gisnet.output.write_results`).
They reuse the run's town, graph, downstream index and capacity result, so an
answer is the one ``gisnet trace``, ``gisnet whatif`` and the service give. A
question whose step the run left out (``analyse(town, only=...)``) is a
:class:`~gisnet.errors.ConfigError` naming the step to run.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx

from .errors import ConfigError
from .results import ControlResult, LayerDict, ObligationsResult, Unavailable

if TYPE_CHECKING:  # pragma: no cover
    from .capacity import WhatIfResult
    from .town import Town

#: The step each result layer comes from.
LAYER_STEP: dict[str, str] = {
    "graph_nodes": "graph", "graph_edges": "graph",
    "obligations": "obligations", "obligation_evidence": "obligations",
    "connection_zone": "obligations", "frontage": "obligations",
    "control_manholes": "control", "control_paths": "control", "sampling_plan": "control",
    "pipes_capacity": "capacity", "plants": "capacity", "plant_increase": "capacity",
    "quality": "quality", "worklist": "quality",
}


class FollowUps:
    """The follow-up questions of :class:`gisnet.pipeline.Results` (its base class).

    It reads the results' attributes (see :class:`gisnet.pipeline.Results`).
    """

    town: Town
    graph: nx.MultiDiGraph | None
    graph_nodes: gpd.GeoDataFrame | None
    graph_edges: gpd.GeoDataFrame | None
    obligations: ObligationsResult | None
    control: ControlResult | None
    capacity: Any
    quality: gpd.GeoDataFrame | None
    worklist: gpd.GeoDataFrame | None
    unavailable: list[Unavailable]
    files: list[Path | str]
    _index: Any
    _graph_summary: dict[str, Any] | None

    @property
    def layers(self) -> LayerDict:
        """Every result layer by name, as written to ``gisnet-results.gpkg``
        (``res.layers["obligations"]``; ``res.layers()`` works too)."""
        out = LayerDict()
        if self.graph_nodes is not None:
            out["graph_nodes"] = self.graph_nodes
        if self.graph_edges is not None:
            out["graph_edges"] = self.graph_edges
        for part in (self.obligations, self.control, self.capacity):
            if part is not None:
                out.update(part.layers())
        if self.quality is not None:
            out["quality"] = self.quality
        if self.worklist is not None:
            out["worklist"] = self.worklist
        return out

    def _need(self, step: str, what: str) -> Any:
        """The result of ``step``; a :class:`ConfigError` when it has none (not run, or
        failed), naming the step and ``what`` needs it."""
        done = {"graph": self.graph, "obligations": self.obligations, "control": self.control,
                "capacity": self.capacity, "quality": self.quality}[step]
        if done is not None:
            return done
        if step == "graph" and self._graph_summary is not None:  # let go
            raise ConfigError(f"{what} needs the sewer graph, let go once the run's layers "
                              f"were written (gisnet run, town {self.town.name}): ask it of "
                              "gisnet.analyse(town), gisnet trace or the service")
        why = next((u.reason for u in self.unavailable if u.analysis == step), None)
        if why is not None:
            raise ConfigError(f"{what} needs the {step!r} step, which failed for town "
                              f"{self.town.name}: {why}")
        raise ConfigError(f"{what} needs the {step!r} step, which this analysis did not run: "
                          f"run gisnet.analyse(town) without only=, or with {step!r} in only=")

    def _downstream_index(self, G: nx.MultiDiGraph) -> Any:
        """The :class:`gisnet.tracing.DownstreamIndex` of the graph ``G``: the control
        step's, or one built once here."""
        if self.control is not None and self.control.index is not None:
            return self.control.index
        if self._index is None:
            from .tracing import DownstreamIndex

            self._index = DownstreamIndex.of(G, None)
        return self._index

    def trace(self, parcel: Any = None, *, manhole: Any = None,
              point: tuple[float, float] | None = None, upstream: bool = False,
              crs: Any = None) -> dict[str, Any]:
        """Trace downstream from a parcel or a point, or upstream from a manhole.

        The answers of ``gisnet trace`` and of the service's ``/trace/downstream``
        and ``/manholes/{id}/upstream`` (:func:`gisnet.tracing.trace_downstream`,
        :func:`gisnet.tracing.trace_upstream`), from this run's graph and index.

        Parameters
        ----------
        parcel
            Trace downstream from this parcel's connection point (its id).
        manhole
            With ``upstream=True``: everything that drains to this manhole (node id).
        point
            Or downstream from this ``(x, y)`` point, projected onto the nearest
            eligible main.
        upstream
            True for a trace from ``manhole`` up (a parcel or point trace goes down).
        crs
            The CRS of ``point`` (default the town's working CRS), e.g. ``EPSG:4326``.

        Returns
        -------
        dict
            Downstream: ``connection`` (the connection point), ``control_manhole_id``,
            ``plant_id``, ``control_length_ft``, ``length_ft`` (tap to outlet),
            ``reaches_outlet`` and ``path`` (the pipes in flow order, with
            ``cum_length_ft``). Upstream: ``pipes``, ``parcels``, ``buildings``,
            ``users`` (totals in ``pipes.attrs``). Geometry in the working CRS,
            lengths in feet.

        Raises
        ------
        ConfigError
            Not exactly one of ``parcel``, ``manhole``, ``point``; ``manhole``
            without ``upstream=True`` or the reverse; ``crs`` without ``point``;
            the graph step not run.
        NotFoundError
            An unknown parcel or manhole, or nothing to connect to.
        """
        given = [k for k, v in (("parcel", parcel), ("manhole", manhole), ("point", point))
                 if v is not None]
        if len(given) != 1:
            raise ConfigError("give exactly one of parcel=, manhole= (with upstream=True) or "
                              f"point=; given: {', '.join(given) or 'none'}")
        if manhole is not None and not upstream:
            raise ConfigError("a trace from a manhole goes upstream: "
                              "res.trace(manhole=ID, upstream=True)")
        if upstream and manhole is None:
            raise ConfigError("upstream=True traces from a manhole: res.trace(manhole=ID, "
                              "upstream=True); parcel and point traces go downstream")
        if crs is not None and point is None:
            raise ConfigError("crs= is the CRS of point=; parcel and manhole ids need none")
        G: nx.MultiDiGraph = self._need("graph", "res.trace")
        from .tracing import trace_downstream, trace_upstream

        idx = self._downstream_index(G)
        if manhole is not None:
            return trace_upstream(self.town, G, str(manhole),
                                  points=None if self.control is None else self.control.points,
                                  index=idx)
        return trace_downstream(self.town, G, index=idx,
                                parcel_id=None if parcel is None else str(parcel),
                                point=None if point is None else _xy(point), crs=crs)

    def whatif(self, parcel: Any = None, *, flow_gpd: float,
               point: tuple[float, float] | None = None, crs: Any = None,
               industrial: bool = False, preliminary_treatment: bool = False,
               cooling_water: bool = False) -> WhatIfResult:
        """What one proposed connection changes downstream (``gisnet whatif``,
        ``POST /whatif``; :func:`gisnet.capacity.whatif`).

        Parameters
        ----------
        parcel
            The parcel to connect (its id), at its connection point; or
        point, crs
            an ``(x, y)`` point and its CRS (default the working CRS).
        flow_gpd
            Proposed average daily flow, gallons per day (> 0).
        industrial
            Industrial wastewater: added without peaking; triggers the profile's
            industrial approvals.
        preliminary_treatment, cooling_water
            Preliminary treatment is required; the discharge includes industrial
            cooling water (the approvals of those triggers).

        Returns
        -------
        gisnet.capacity.WhatIfResult
            The connection point, the control manhole, each downstream pipe's
            utilization before and after (``pipes``), the pipes and plants that
            cross the threshold, the approvals triggered.

        Raises
        ------
        ConfigError
            The capacity step not run, a flow that is not a positive number,
            not exactly one of ``parcel`` and ``point``.
        NotFoundError
            An unknown parcel, or nothing to connect to.
        """
        if isinstance(flow_gpd, bool) or not isinstance(flow_gpd, numbers.Real):
            raise ConfigError(f"flow_gpd must be a number of gallons per day, not {flow_gpd!r}")
        if (parcel is None) == (point is None):
            raise ConfigError("give exactly one of parcel= and point=")
        if crs is not None and point is None:
            raise ConfigError("crs= is the CRS of point=; a parcel id needs none")
        capacity = self._need("capacity", "res.whatif")
        G: nx.MultiDiGraph = self._need("graph", "res.whatif")
        from .capacity import whatif

        return whatif(self.town, G, capacity,
                      parcel_id=None if parcel is None else str(parcel),
                      point=None if point is None else _xy(point), crs=crs,
                      flow_gpd=float(flow_gpd), industrial=bool(industrial),
                      preliminary_treatment=bool(preliminary_treatment),
                      cooling_water=bool(cooling_water))

    def layer(self, name: str) -> gpd.GeoDataFrame:
        """One result layer by name; a :class:`ConfigError` naming the step to run
        (or why there is none) when this analysis has no such layer."""
        layers = self.layers()
        if name in layers:
            return layers[name]
        step = LAYER_STEP.get(name)
        if step is None:
            raise ConfigError(f"{name!r} is not a result layer; layers are "
                              f"{', '.join(LAYER_STEP)}")
        self._need(step, f"the {name} layer")
        why = next((u.reason for u in self.unavailable if u.analysis == name),
                   "the town has nothing for it")
        raise ConfigError(f"no {name} layer for town {self.town.name}: {why}")

    def to_file(self, path: str | os.PathLike[str]) -> Path:
        """Write every result layer into a GeoPackage, atomically
        (:func:`gisnet.output.write_results`: layer descriptions and QGIS styles
        included).

        Parameters
        ----------
        path
            A ``.gpkg`` file, or a folder (created if needed) that then holds
            ``gisnet-results.gpkg``. Layers of the same names in an existing
            file are replaced, its other layers kept.

        Returns
        -------
        pathlib.Path
            The GeoPackage, an absolute path (also added to :attr:`files`).

        Raises
        ------
        ConfigError
            ``path`` is one of the town's input files (or a sidecar of one), a
            file that is not a ``.gpkg``, or cannot be written; no layer to write.
        """
        from .output import RESULTS_FILE, refuse_input_as_output, write_results

        p = Path(path).expanduser().absolute()
        refuse_input_as_output(p, self.town, what="results GeoPackage")
        if p.suffix.lower() == ".gpkg":
            folder, name = p.parent, p.name
        elif p.exists() and not p.is_dir():
            raise ConfigError("res.to_file writes a GeoPackage: name a .gpkg file or a folder; "
                              "one layer goes to another format with "
                              "res.layers['obligations'].to_file(...)", path=p)
        else:
            folder, name = p, RESULTS_FILE
        refuse_input_as_output(folder / name, self.town, what="results GeoPackage")
        layers = self.layers()
        if not layers:
            raise ConfigError("no result layers to write: this analysis ran no step")
        written = write_results(folder, layers, file_name=name)
        self.files.append(written)
        return written


def _xy(point: Any) -> tuple[float, float]:
    """``(x, y)`` as two floats, or a :class:`ConfigError`."""
    try:
        x, y = point
        return float(x), float(y)
    except (TypeError, ValueError):
        raise ConfigError(f"point must be (x, y), two numbers; not {point!r}") from None
