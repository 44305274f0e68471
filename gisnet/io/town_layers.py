"""A town's raw layers to canonical layers in one working CRS: the step files and
GeoDataFrames share.

:func:`gisnet.io.load_town` reads a town's files (:func:`gisnet.io.loading.read_layers`);
:meth:`gisnet.town.Town.from_frames` takes GeoDataFrames already in memory
(:func:`frames_as_read`, the same checks a read layer gets). Both then go
through :func:`canonical_layers`: the working CRS (:func:`choose_working_crs`),
each layer's canonical mapping (:func:`gisnet.io.canonical_layer`), a layer far
from the others refused, the required roles filled with empty layers. When the
working CRS is named (the caller's or the town file's, :func:`named_working_crs`)
a read layer is mapped on its reader's thread (:func:`map_on_reader`), beside the
files still being read; its findings and its error, if any, then take their place
as if it had been mapped after every read.

A town given as frames has a town file made in memory (:func:`frames_town_file`),
checked by :func:`gisnet.townfile.parse_town_file`, so column maps, value maps,
defaults and units mean and are checked exactly as in ``gisnet.toml``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from .. import schema
from ..errors import ConfigError, CRSError, LayerError
from ..report import Report
from ..townfile import LayerSpec, TownFile, parse_town_file
from ..units import feet_per_unit
from .canonical import canonical_layer, empty_layer
from .extent import check_crs_fits, layer_far_from_town
from .notes import ids_text
from .postgis import redact
from .reading import LayerInfo, check_plant_flows, crs_label, read_plant_flows

log = logging.getLogger(__name__)

#: ``LayerInfo.engine`` of a layer given as a GeoDataFrame.
MEMORY_ENGINE = "memory"


def choose_working_crs(crs_arg: Any, tf: TownFile, raw: Mapping[str, gpd.GeoDataFrame],
                       report: Report, *, arg: str = "--crs",
                       hint: str = "name crs in the town file") -> CRS:
    """The projected working CRS of a town, reported as a ``working_crs`` finding.

    In order: ``crs_arg``, the town file's ``crs``, the CRS of the first layer
    that is projected (mains first), else the UTM zone estimated from the data.

    Parameters
    ----------
    crs_arg
        The CRS given by the caller (``--crs``, ``crs=``), or None.
    tf
        The town file (its ``crs``, and its path for errors).
    raw
        Role -> layer as read (in its source CRS).
    report
        The finding goes here.
    arg
        How the caller's CRS is named in the finding (``--crs``, ``crs=``).
    hint
        How to name a CRS, for the error when none can be chosen.

    Raises
    ------
    CRSError
        The CRS named is unknown or not projected, or none can be chosen.
    """
    if crs_arg is not None or tf.crs is not None:
        given = crs_arg if crs_arg is not None else tf.crs
        c = crs_of(given, "working CRS", path=tf.path)
        if not c.is_projected:
            raise CRSError(f"working CRS {given} is not projected; name a projected CRS "
                           f"(State Plane, UTM)", path=tf.path)
        src = arg if crs_arg is not None else "the town file"
        report.add("working_crs", "info", f"working CRS {crs_label(c)}, from {src}")
        return c
    order = [r for r in ("mains", *schema.ROLES) if r in raw]
    order = [r for r in order if raw[r].crs is not None]
    if not order:
        raise CRSError(f"cannot choose a working CRS: no layer has geometry; {hint}",
                       path=tf.path)
    for role in order:
        c = raw[role].crs
        if c.is_projected:
            c = c.to_2d() if len(c.axis_info) > 2 else c
            report.add("working_crs", "info",
                       f"working CRS {crs_label(c)}, the CRS of the {role} layer")
            return c
    role = order[0]
    g = raw[role]
    g = g[~(g.geometry.isna() | g.geometry.is_empty)]
    if g.empty:
        raise CRSError("cannot choose a working CRS: no layer is projected and the "
                       f"{role} layer has no geometry; {hint}", path=tf.path)
    c = g.set_crs(g.crs.to_2d(), allow_override=True).estimate_utm_crs()
    report.add("working_crs", "info",
               f"working CRS {crs_label(c)}, the UTM zone estimated from the {role} "
               f"layer because no layer is projected and no CRS was named")
    return c


def crs_of(given: Any, what: str, *, path: Any = None) -> CRS:
    """``given`` as a pyproj CRS, or a :class:`CRSError` naming ``what``."""
    try:
        return CRS.from_user_input(given)
    except Exception as exc:  # pyproj.exceptions.CRSError, TypeError
        raise CRSError(f"{what} {given!r} is not a CRS pyproj knows ({exc})",
                       path=path) from None


def named_working_crs(crs_arg: Any, tf: TownFile) -> CRS | None:
    """The working CRS when the caller or the town file names it (and it is a
    projected CRS pyproj knows), else None: then it is chosen from the layers
    read, and a bad one is refused by :func:`choose_working_crs` in its place."""
    if crs_arg is None and tf.crs is None:
        return None
    try:
        return choose_working_crs(crs_arg, tf, {}, Report(logs=False))
    except CRSError:
        return None


class Mapped:
    """A layer mapped on its reader's thread (:func:`map_on_reader`): the canonical
    layer or the exception its mapping raised, and its findings, not yet logged."""

    __slots__ = ("error", "findings", "layer")

    def __init__(self, layer: gpd.GeoDataFrame | None, error: BaseException | None,
                 findings: Report) -> None:
        self.layer, self.error, self.findings = layer, error, findings


def map_on_reader(working: CRS
                  ) -> Callable[[LayerSpec, gpd.GeoDataFrame, LayerInfo], Mapped]:
    """What :func:`gisnet.io.loading.read_layers` runs on each layer as it is read:
    :func:`canonical_layer` in ``working``, its findings kept quiet and its
    exception kept (:class:`Mapped`) for :func:`canonical_layers`, which gives
    them in the town file's order once every file is read."""
    def mapped(spec: LayerSpec, raw: gpd.GeoDataFrame, info: LayerInfo) -> Mapped:
        findings = Report(logs=False)
        try:
            return Mapped(canonical_layer(raw, spec, working, findings, info), None, findings)
        except Exception as exc:  # raised in order by canonical_layers
            return Mapped(None, exc, findings)

    return mapped


def canonical_layers(raw: Mapping[str, gpd.GeoDataFrame | None], tf: TownFile,
                     infos: Mapping[str, LayerInfo], crs_arg: Any, report: Report, *,
                     arg: str = "--crs", hint: str = "name crs in the town file",
                     mapped: Mapping[str, Mapped] | None = None,
                     ) -> tuple[dict[str, gpd.GeoDataFrame], CRS]:
    """Every raw layer of a town mapped to its role's canonical schema in one CRS.

    Parameters
    ----------
    raw
        Role -> layer as read (:func:`gisnet.io.loading.read_layers`) or given
        (:func:`frames_as_read`), in its own CRS.
    tf
        The town file: each role's :class:`~gisnet.townfile.LayerSpec`, the CRS.
    infos
        Role -> :class:`~gisnet.io.LayerInfo`, completed by the mapping.
    crs_arg, arg, hint
        The caller's working CRS and how to name it (:func:`choose_working_crs`).
    report
        Every finding goes here.
    mapped
        Role -> the layer already mapped on its reader's thread (:func:`map_on_reader`,
        in the CRS :func:`named_working_crs` gives); its raw layer is None.

    Returns
    -------
    layers : dict
        Role -> canonical GeoDataFrame in the working CRS; ``parcels`` and
        ``mains`` always present (empty, with a ``missing_layer`` warning,
        when not given).
    crs : pyproj.CRS
        The working CRS.

    Raises
    ------
    CRSError
        No usable working CRS, or a layer lies far from the others once
        reprojected (its declared CRS is likely wrong).
    SchemaError, LayerError
        From the mapping of a layer (:func:`gisnet.io.canonical_layer`).
    """
    working = choose_working_crs(crs_arg, tf, raw, report, arg=arg, hint=hint)
    layers: dict[str, gpd.GeoDataFrame] = {}
    for role, spec in tf.layers.items():
        done = (mapped or {}).get(role)
        if done is None:
            layer = raw[role]
            assert layer is not None  # a layer not mapped on its reader is kept as read
            layers[role] = canonical_layer(layer, spec, working, report, infos[role])
            continue
        report.replay(done.findings)
        if done.error is not None:
            raise done.error
        assert done.layer is not None
        layers[role] = done.layer
    odd = layer_far_from_town(layers)
    if odd is not None:
        role, dist = odd
        raise CRSError(f"the {role} layer lies {dist * feet_per_unit(working) / 5280:,.0f} miles "
                       f"from the town's other layers once in {crs_label(working)}; the CRS "
                       f"its source declares ({infos[role].source_crs}) is likely wrong",
                       path=redact(tf.layers[role].path), layer=role)
    for role in schema.REQUIRED_ROLES:
        if role not in layers:
            layers[role] = empty_layer(role, working)
            need = "sewer analyses (graph, obligations, capacity)" if role == "mains" else \
                "obligations and flows"
            report.add("missing_layer", "warning",
                       f"{role}: no {role} layer; {need} need one", layer=role)
    return layers, working


def check_plant_ids(plant_flows: pd.DataFrame | None, layers: Mapping[str, gpd.GeoDataFrame],
                    report: Report) -> None:
    """An ``unknown_plant`` warning for plant ids of the flows that no plant has."""
    if plant_flows is None or "plants" not in layers:
        return
    unknown = sorted(set(plant_flows["plant_id"]) - set(layers["plants"]["plant_id"]))
    if unknown:
        report.add("unknown_plant", "warning",
                   f"plant_flows: plant ids not in the plants layer: {ids_text(unknown)}",
                   layer="plants", feature_id=",".join(unknown))


# --------------------------------------------------------------------------- frames


def frame_label(role: str) -> str:
    """How a layer given as a GeoDataFrame is named in messages and reports."""
    return f"{role} (GeoDataFrame)"


def frames_town_file(
    roles: Sequence[str],
    *,
    name: str,
    columns: Mapping[str, Mapping[str, str]] | None = None,
    values: Mapping[str, Mapping[str, Mapping[Any, Any]]] | None = None,
    defaults: Mapping[str, Mapping[str, Any]] | None = None,
    slope_units: str = "ft/ft",
    diameter_units: str = "in",
    inverts: str | None = None,
    snap_tolerance_ft: float | None = None,
    plant_tolerance_ft: float | None = None,
    outlet_nodes: Sequence[str] = (),
    manning_n_by_material: bool = False,
) -> TownFile:
    """The town file of a town given as GeoDataFrames, checked as ``gisnet.toml`` is.

    Each argument is the town file's key of the same meaning: ``columns``,
    ``values`` and ``defaults`` are role -> the ``[layers.ROLE.columns]`` /
    ``values`` / ``defaults`` tables; ``slope_units`` and ``diameter_units``
    are ``[units]``; ``inverts`` is ``[layers.mains] inverts``.

    Raises
    ------
    ConfigError
        A table names a role no frame is given for, an unknown canonical
        column, a value outside its canonical set, a unit or tolerance out of
        range (the key named as in a town file, ``layers.mains.columns.x``).
    """
    tables = {"columns": columns or {}, "values": values or {}, "defaults": defaults or {}}
    for key, by_role in tables.items():
        if not isinstance(by_role, Mapping):
            raise ConfigError(f"{key}= must be a dict of role -> table, not "
                              f"{type(by_role).__name__}")
        extra = sorted(set(by_role) - set(roles))
        if extra:
            raise ConfigError(f"{key}= names the role {extra[0]!r}, but no {extra[0]} frame is "
                              f"given (frames given: {', '.join(roles) or 'none'})")
    if inverts is not None and "mains" not in roles:
        raise ConfigError("inverts= is about the mains; no mains frame is given")
    layers: dict[str, Any] = {}
    for role in roles:
        t: dict[str, Any] = {"path": frame_label(role)}
        for key, by_role in tables.items():
            if role in by_role:
                t[key] = {k: dict(v) if isinstance(v, Mapping) else v
                          for k, v in dict(by_role[role]).items()}
        if role == "mains" and inverts is not None:
            t["inverts"] = inverts
        layers[role] = t
    data: dict[str, Any] = {"name": name, "units": {"slope": slope_units,
                                                     "diameter": diameter_units},
                            "layers": layers, "manning_n_by_material": manning_n_by_material,
                            "outlet_nodes": list(outlet_nodes)}
    for key, v in (("snap_tolerance_ft", snap_tolerance_ft),
                   ("plant_tolerance_ft", plant_tolerance_ft)):
        if v is not None:
            data[key] = v
    tf = parse_town_file(data, None)
    # the layer paths were resolved as files; a frame is named by its role
    tf.layers = {r: replace(s, path=frame_label(r)) for r, s in tf.layers.items()}
    return tf


def frames_as_read(frames: Mapping[str, Any], tf: TownFile, crs: Any, report: Report
                   ) -> tuple[dict[str, gpd.GeoDataFrame], dict[str, LayerInfo]]:
    """GeoDataFrames given for roles, checked as :func:`gisnet.io.read_layer` checks
    a file's layer, ready for :func:`canonical_layers`.

    A frame without a CRS takes ``crs`` with a ``crs_assumed`` finding; the
    coordinates must fit the CRS declared or assumed. The frames given are not
    changed.

    Parameters
    ----------
    frames
        Role -> GeoDataFrame, for the roles of ``tf``.
    tf
        :func:`frames_town_file` of the roles.
    crs
        The ``crs=`` given (the working CRS), or None.
    report
        Findings go here.

    Returns
    -------
    raw : dict
        Role -> the frame (with the assumed CRS set).
    infos : dict
        Role -> :class:`~gisnet.io.LayerInfo` (engine ``memory``).

    Raises
    ------
    LayerError
        Not a GeoDataFrame, no active geometry column, no rows, column names
        that are not text or repeat.
    CRSError
        No CRS and no ``crs=``, or coordinates far outside the CRS.
    """
    raw: dict[str, gpd.GeoDataFrame] = {}
    infos: dict[str, LayerInfo] = {}
    assumed = None if crs is None else crs_of(crs, "crs=")
    for role in tf.layers:
        g = frames[role]
        label = frame_label(role)
        if not isinstance(g, gpd.GeoDataFrame):
            what = ("a DataFrame without geometry" if isinstance(g, pd.DataFrame)
                    else type(g).__name__)
            raise LayerError(f"{role}= must be a GeoDataFrame, not {what} (e.g. "
                             f"geopandas.read_file(...))", layer=role)
        if g.columns.duplicated().any():
            twice = sorted({str(c) for c in g.columns[g.columns.duplicated()]})
            raise LayerError(f"column names repeat: {', '.join(twice)}; give each column once",
                             path=label, layer=role)
        odd = [c for c in g.columns if not isinstance(c, str)]
        if odd:
            raise LayerError(f"column names must be text, not {odd[:3]!r}", path=label,
                             layer=role)
        try:
            _ = g.geometry  # raises without an active geometry column
        except AttributeError:
            raise LayerError("has no active geometry column (set one with "
                             "set_geometry(...))", path=label, layer=role) from None
        if len(g) == 0:
            raise LayerError("empty layer: no features", path=label, layer=role)
        geoms = np.asarray(g.geometry.array, dtype=object)
        was_assumed = False
        if g.crs is None:
            if assumed is None:
                raise CRSError("the GeoDataFrame has no CRS: set it (gdf.set_crs(\"EPSG:...\")) "
                               "or give crs=, the working CRS, also taken for frames without "
                               "one", path=label, layer=role)
            g = g.set_crs(assumed)
            was_assumed = True
            report.add("crs_assumed", "info",
                       f"{role}: the GeoDataFrame has no CRS; {crs_label(assumed)} from crs= "
                       f"assumed", layer=role)
            check_crs_fits(geoms, assumed, label, role, by="crs= names for it")
        else:
            check_crs_fits(geoms, g.crs, label, role, by="the GeoDataFrame declares")
        raw[role] = g
        infos[role] = LayerInfo(role, label, None, None, MEMORY_ENGINE, g.crs.to_string(),
                                crs_assumed=was_assumed)
        log.debug("given %s: %d features", role, len(g))
    return raw, infos


def plant_flows_of(given: Any) -> tuple[pd.DataFrame | None, Path | None]:
    """Monthly plant flows given as a CSV path or a DataFrame, checked.

    Returns
    -------
    flows : pandas.DataFrame or None
        ``plant_id``, ``month``, ``avg_flow_mgd``.
    path : pathlib.Path or None
        The CSV read (an input file of the town).

    Raises
    ------
    LayerError
        As :func:`gisnet.io.read_plant_flows`.
    ConfigError
        Neither a path nor a DataFrame.
    """
    if given is None:
        return None, None
    if isinstance(given, str | os.PathLike):
        path = Path(given).expanduser().resolve()
        return read_plant_flows(path), path
    if isinstance(given, pd.DataFrame):
        return check_plant_flows(pd.DataFrame(given), "plant_flows (DataFrame)"), None
    raise ConfigError(f"plant_flows= must be a CSV path or a DataFrame (plant_id, month, "
                      f"avg_flow_mgd), not {type(given).__name__}")
