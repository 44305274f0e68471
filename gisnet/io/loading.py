"""Loading a town: its town file, command-line overrides and CRS policy -> :class:`Town`.

:func:`load_town` reads every layer named in a town's ``gisnet.toml``
(:mod:`gisnet.townfile`), or given on the command line, maps each to the
canonical schema (:func:`gisnet.io.canonical_layer`) in one projected working
CRS, reads the plant flows and resolves the jurisdiction profile.

CRS policy
----------
The working CRS is, in order: the ``crs`` argument, the town file's ``crs``,
the CRS of the first layer that is projected (mains first), else the UTM zone
estimated from the data (:func:`gisnet.io.town_layers.choose_working_crs`,
which :meth:`gisnet.town.Town.from_frames` shares). A layer with no CRS takes
the one its town-file entry names (``[layers.ROLE] crs``), else the town's
``crs``; with neither it is a :class:`~gisnet.errors.CRSError`. Geographic
input is reprojected and reported; Z and M coordinates are dropped with a note.

Profile
-------
The profile is the ``profile`` argument (``--profile``), else the town file's;
a town naming none is a :class:`~gisnet.errors.ConfigError` listing the
built-in profiles (:func:`gisnet.town.resolve_profile`): there is no default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np

from .. import schema
from ..errors import ConfigError, LayerError
from ..memory import release
from ..report import Report
from ..threads import default_threads
from ..town import Town, TownSettings, resolve_profile
from ..townfile import LayerSpec, TownFile, find_town_file, is_virtual_source, read_town_file
from ..units import feet_per_unit
from .postgis import redact
from .raster import open_elevation
from .reading import (
    CRS_ASSUMED_ATTR,
    ENGINES,
    LayerInfo,
    crs_label,
    read_all,
    read_layer,
    read_plant_flows,
)
from .town_layers import canonical_layers, check_plant_ids, map_on_reader, named_working_crs

log = logging.getLogger(__name__)


def has_town_file(p: Path) -> bool:
    """True when ``p`` is, or is a folder holding, a town file."""
    try:
        find_town_file(p)
    except ConfigError:
        return False
    return True


def load_town(
    layers_dir: str | Path | None,
    *,
    profile: str | None = None,
    overrides: Mapping[str, str | Path] | None = None,
    engine: str = "pyogrio",
    crs: Any = None,
    snap_tolerance_ft: float | None = None,
) -> Town:
    """Read a town: every layer of its ``gisnet.toml``, canonical and in one projected CRS.

    Parameters
    ----------
    layers_dir
        Folder holding ``gisnet.toml`` (or the town file itself); None for a
        town made of ``overrides`` alone (never the sample town).
    profile
        Profile name or path; overrides the town file's ``profile``. A town
        with neither is a :class:`~gisnet.errors.ConfigError`.
    overrides
        Role -> path to read instead of the town file's (``--mains PATH``);
        relative paths are relative to the current folder. With overrides, a
        folder without a town file is allowed, and so is ``layers_dir`` None.
    engine
        ``"pyogrio"`` (Arrow) or ``"fiona"``; both give identical layers.
    crs
        Working CRS (projected); overrides the town file's.
    snap_tolerance_ft
        Snap tolerance in feet; overrides the town file's (default 1 ft).

    Returns
    -------
    Town
        ``town.layers[role]`` canonical GeoDataFrames in ``town.crs``; a town
        without ``parcels`` or ``mains`` gets an empty canonical layer for it
        and a ``missing_layer`` warning. ``town.settings.extra["layer_info"]``
        holds a :class:`LayerInfo` per role; ``town.profile`` is the loaded
        :class:`~gisnet.profile.Profile`.

    Raises
    ------
    ConfigError, LayerError, SchemaError, CRSError
        With file, layer, feature and problem, for input that cannot be used.
    """
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if snap_tolerance_ft is not None and not (np.isfinite(snap_tolerance_ft)
                                              and snap_tolerance_ft >= 0):
        raise ConfigError(f"snap tolerance must be a number of feet >= 0, not "
                          f"{snap_tolerance_ft!r}")
    tf = town_file_with_overrides(layers_dir, overrides)
    # the elevation raster is checked first: a missing extra or a bad raster stops here
    elevation = None if tf.elevation is None else open_elevation(tf.elevation, tf.path)
    report = Report()
    # with the working CRS named, each layer is mapped on its reader's thread as soon
    # as it is read, beside the files still being read
    working = named_working_crs(crs, tf)
    raw, infos, mapped = read_layers(
        tf, engine, report, None if working is None else map_on_reader(working))
    layers, working = canonical_layers(raw, tf, infos, crs, report, mapped=mapped)
    del raw, mapped
    release()  # the read's Arrow buffers and raw frames, back to the system
    plant_flows = read_plant_flows(tf.plant_flows) if tf.plant_flows is not None else None
    check_plant_ids(plant_flows, layers, report)
    first = next(iter(tf.layers.values())).path
    name = tf.name or (tf.path.parent.name if tf.path is not None else
                       (None if is_virtual_source(first) else Path(first).parent.name)
                       or "town")
    prof = resolve_profile(profile if profile is not None else tf.profile, report, name)
    settings = TownSettings.from_town_file(
        tf, snap_tolerance_ft=snap_tolerance_ft,
        extra={"layer_info": infos, "town_file": tf.path, "plant_flows_file": tf.plant_flows,
               "output": tf.output, "output_lock_timeout_s": tf.output_lock_timeout_s,
               "notice_template": tf.notice_template,
               "elevation": elevation})
    return Town(
        name=name,
        crs=working,
        ft_per_unit=feet_per_unit(working),
        layers=layers,
        profile=prof,
        settings=settings,
        report=report,
        plant_flows=plant_flows,
        source_dir=tf.path.parent if tf.path is not None else None,
        sources={r: redact(s.path) for r, s in tf.layers.items()},
    )


def town_file_with_overrides(layers_dir: str | Path | None,
                             overrides: Mapping[str, str | Path] | None) -> TownFile:
    """The town file of ``layers_dir`` with the command line's layer paths put in.

    ``overrides`` (role -> path, relative to the current folder) replace a
    layer's path (and drop its ``layer`` and ``where``) or add a layer. With
    overrides, a folder without a town file is allowed.

    Raises
    ------
    ConfigError
        No or a bad town file, an unknown role, or no layers at all.
    """
    overrides = dict(overrides or {})
    if layers_dir is None:
        if not overrides:
            raise ConfigError("no town folder and no layer paths given: name the folder "
                              "holding gisnet.toml (write one with 'gisnet init')")
        tf = TownFile(path=None)  # a town given entirely on the command line
    else:
        try:
            tf = read_town_file(layers_dir)
        except ConfigError:
            if not overrides or has_town_file(Path(layers_dir)):
                raise
            tf = TownFile(path=None)
    for role, p in overrides.items():
        if role not in schema.ROLES:
            raise ConfigError(f"unknown layer role {role!r}; roles are: {', '.join(schema.ROLES)}")
        path = p if is_virtual_source(p) else Path(p).expanduser().resolve()
        old = tf.layers.get(role)
        tf.layers[role] = (replace(old, path=path, layer=None, where=None) if old else
                           LayerSpec(role=role, path=path, slope_units=tf.slope_units,
                                     diameter_units=tf.diameter_units))
    if not tf.layers:
        raise ConfigError("the town file names no layers ([layers.parcels], [layers.mains] ...)",
                          path=tf.path)
    return tf


#: What :func:`read_layers` runs on a layer's reader thread once it is read (the
#: mapping to the canonical schema, :func:`gisnet.io.town_layers.map_on_reader`):
#: ``(spec, layer as read, info) -> anything``, kept in the third result.
BesideRead = Callable[[LayerSpec, gpd.GeoDataFrame, LayerInfo], Any]


def read_layers(tf: TownFile, engine: str, report: Report, then: BesideRead | None = None,
                ) -> tuple[dict[str, gpd.GeoDataFrame | None], dict[str, LayerInfo],
                           dict[str, Any]]:
    """Read every layer of a town file as it is (source columns, source CRS).

    A source without a CRS takes its layer's ``crs``, else the town's, with a
    ``crs_assumed`` finding.

    Parameters
    ----------
    then
        Run on each layer (not empty) on its reader's thread as soon as it is
        read, while the other files are still being read; the layer as read is
        then not kept.

    Returns
    -------
    raw : dict
        Role -> layer as read (None for a layer given to ``then``).
    infos : dict
        Role -> :class:`~gisnet.io.LayerInfo` (completed by the mapping).
    done : dict
        Role -> what ``then`` returned for it.

    Raises
    ------
    LayerError
        A layer cannot be read or has no features (the first, in the town
        file's order).
    """
    raw: dict[str, gpd.GeoDataFrame | None] = {}
    infos: dict[str, LayerInfo] = {}
    done: dict[str, Any] = {}

    def reader(role: str, spec: LayerSpec) -> Callable[[], tuple[Any, ...]]:
        assumed = spec.crs if spec.crs is not None else tf.crs

        def read() -> tuple[Any, ...]:
            g = read_layer(spec.path, layer=spec.layer, where=spec.where, engine=engine,
                           crs=assumed, role=role)
            info = LayerInfo(role, redact(spec.path), spec.layer, spec.where, engine,
                             None if g.crs is None else g.crs.to_string(),
                             crs_assumed=bool(g.attrs.get(CRS_ASSUMED_ATTR)))
            if then is None or len(g) == 0:
                return g, info, len(g), g.crs, None
            return None, info, len(g), g.crs, then(spec, g, info)

        return read

    # the files are read on gisnet's threads (pyogrio's reads leave the GIL), the
    # layers then checked one by one in the town file's order
    layers = list(tf.layers.items())
    frames = read_all([(role, redact(spec.path), reader(role, spec)) for role, spec in layers],
                      default_threads() if engine == "pyogrio" else 1)
    for (role, spec), (g, info, n, crs, after) in zip(layers, frames, strict=True):
        if n == 0:
            what = f"no features match where = {spec.where!r}" if spec.where else "no features"
            raise LayerError(f"empty layer: {what}", path=redact(spec.path), layer=role)
        infos[role] = info
        raw[role] = g
        if after is not None:
            done[role] = after
        if info.crs_assumed:
            report.add("crs_assumed", "info",
                       f"{role}: source has no CRS; {crs_label(crs)} from the town file "
                       f"assumed", layer=role)
        log.debug("read %s: %d features from %s", role, n, spec.path)
    return raw, infos, done
