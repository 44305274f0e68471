"""The loaded town: canonical layers in one projected CRS, the profile, the report."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
from pyproj import CRS

from .errors import ConfigError
from .profile import Profile, builtin_profiles, load_profile
from .report import Report
from .rules import DEFAULT_PLANT_TOLERANCE_FT, DEFAULT_SNAP_TOLERANCE_FT

if TYPE_CHECKING:  # pragma: no cover
    from .townfile import TownFile

log = logging.getLogger(__name__)


def resolve_profile(profile: Profile | str | os.PathLike[str] | None, report: Report,
                    town_name: str) -> Profile:
    """The one way a town's profile is chosen and loaded.

    There is no default: a town whose file and command line name no profile
    cannot be analysed, since every rule (distances, thresholds, sections)
    comes from the jurisdiction's ordinance.

    Parameters
    ----------
    profile
        A loaded :class:`~gisnet.profile.Profile` (kept), or a built-in name or
        a path to a profile TOML (loaded with :func:`gisnet.profile.load_profile`).
    report
        Kept for callers that add findings about the choice (none today).
    town_name
        For the message.

    Raises
    ------
    ConfigError
        No profile named (the message lists the built-in names), an unknown
        name or a bad profile file.
    TypeError
        ``profile`` is of another type.
    """
    if isinstance(profile, Profile):
        return profile
    if profile is None:
        raise ConfigError(no_profile_message(town_name))
    if isinstance(profile, str | os.PathLike):
        return load_profile(os.fspath(profile))
    raise TypeError(f"a town's profile must be a Profile, a profile name or path; "
                    f"not {type(profile).__name__}")


def no_profile_message(town_name: str) -> str:
    """The error for a town that names no jurisdiction profile, naming the choices."""
    return (f"town {town_name} names no jurisdiction profile; add profile = \"NAME\" to its "
            f"gisnet.toml or give --profile NAME, with NAME one of "
            f"{', '.join(builtin_profiles())} or the path of a profile TOML")


@dataclass
class TownSettings:
    """Settings of one town (from its ``gisnet.toml`` and the command line).

    Attributes
    ----------
    snap_tolerance_ft
        Pipe ends within this distance (feet) of a manhole or of another pipe
        end are joined; an end this close to another pipe's interior splits it
        (default :data:`gisnet.rules.DEFAULT_SNAP_TOLERANCE_FT`).
    plant_tolerance_ft
        How far (feet) a plant may lie from the nearest pipe node and still be
        joined to it (default :data:`gisnet.rules.DEFAULT_PLANT_TOLERANCE_FT`;
        None: the snap tolerance).
    outlet_nodes
        Node ids the town names as outlets (plants, outfalls) besides plants.
    slope_units
        ``ft/ft`` or ``percent``: how the source ``slope`` column is expressed.
    diameter_units
        ``in`` or ``mm``.
    manning_n_by_material
        Use the material-specific as-built Manning n instead of the design n.
    assume_diameters
        ``largest_upstream``: a pipe without a diameter takes the largest diameter
        upstream of it for its capacity (:func:`gisnet.capacity.diameters.assume_diameters`);
        None (default): its capacity is unknown.
    """

    snap_tolerance_ft: float = DEFAULT_SNAP_TOLERANCE_FT
    plant_tolerance_ft: float | None = DEFAULT_PLANT_TOLERANCE_FT
    outlet_nodes: tuple[str, ...] = ()
    slope_units: str = "ft/ft"
    diameter_units: str = "in"
    manning_n_by_material: bool = False
    assume_diameters: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_town_file(cls, tf: TownFile, *, snap_tolerance_ft: float | None = None,
                       extra: Mapping[str, Any] | None = None) -> TownSettings:
        """The settings a town file gives (defaults where it gives none).

        Parameters
        ----------
        tf
            The town file (read, or made for a town given as frames).
        snap_tolerance_ft
            Overrides the town file's snap tolerance (feet).
        extra
            Kept in ``extra``, with ``mains_inverts`` (how the mains' invert
            columns are read, ``[layers.mains] inverts``).
        """
        mains = tf.layers.get("mains")
        return cls(
            snap_tolerance_ft=(snap_tolerance_ft if snap_tolerance_ft is not None else
                               tf.snap_tolerance_ft if tf.snap_tolerance_ft is not None else
                               DEFAULT_SNAP_TOLERANCE_FT),
            plant_tolerance_ft=(tf.plant_tolerance_ft if tf.plant_tolerance_ft is not None else
                                DEFAULT_PLANT_TOLERANCE_FT),
            outlet_nodes=tf.outlet_nodes,
            slope_units=tf.slope_units,
            diameter_units=tf.diameter_units,
            manning_n_by_material=tf.manning_n_by_material,
            assume_diameters=tf.assume_diameters,
            extra={**dict(extra or {}), "mains_inverts": None if mains is None else mains.inverts,
                   "splits": dict(tf.splits), "swmm_model": tf.swmm_model},
        )


@dataclass
class Town:
    """A town's layers read, mapped to the canonical schema and reprojected.

    Attributes
    ----------
    name
        Human name (from the town file, else the folder name).
    crs
        The working CRS: projected, every layer is in it.
    ft_per_unit
        Feet in one unit of ``crs`` (see :func:`gisnet.units.feet_per_unit`).
    layers
        Role -> canonical GeoDataFrame (see :mod:`gisnet.schema`). Only roles
        that were given are present; ``parcels`` and ``mains`` always are.
    profile
        The jurisdiction profile (rules, thresholds, sections), always a loaded
        :class:`~gisnet.profile.Profile`: a name or path given is loaded;
        None is a :class:`~gisnet.errors.ConfigError` (see :func:`resolve_profile`).
    settings
        Tolerances and unit choices.
    report
        Everything found while reading and validating.
    plant_flows
        Optional monthly plant flows: ``plant_id``, ``month`` (``YYYY-MM``),
        ``avg_flow_mgd``.
    source_dir
        Folder of the town file, if loaded from one.
    sources
        Role -> the file it was read from (for messages).
    """

    name: str
    crs: CRS
    ft_per_unit: float
    layers: dict[str, gpd.GeoDataFrame]
    profile: Profile
    settings: TownSettings = field(default_factory=TownSettings)
    report: Report = field(default_factory=Report)
    plant_flows: pd.DataFrame | None = None
    source_dir: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.profile = resolve_profile(self.profile, self.report, self.name)

    @classmethod
    def from_frames(
        cls,
        *,
        parcels: gpd.GeoDataFrame | None = None,
        mains: gpd.GeoDataFrame | None = None,
        manholes: gpd.GeoDataFrame | None = None,
        plants: gpd.GeoDataFrame | None = None,
        buildings: gpd.GeoDataFrame | None = None,
        streets: gpd.GeoDataFrame | None = None,
        laterals: gpd.GeoDataFrame | None = None,
        users: gpd.GeoDataFrame | None = None,
        district: gpd.GeoDataFrame | None = None,
        highway_program: gpd.GeoDataFrame | None = None,
        profile: Profile | str | os.PathLike[str] | None = None,
        crs: Any = None,
        name: str = "town",
        columns: Mapping[str, Mapping[str, str]] | None = None,
        values: Mapping[str, Mapping[str, Mapping[Any, Any]]] | None = None,
        defaults: Mapping[str, Mapping[str, Any]] | None = None,
        slope_units: str = "ft/ft",
        diameter_units: str = "in",
        inverts: str | None = None,
        snap_tolerance_ft: float | None = None,
        plant_tolerance_ft: float | None = None,
        outlet_nodes: Sequence[str] = (),
        plant_flows: pd.DataFrame | str | os.PathLike[str] | None = None,
        manning_n_by_material: bool = False,
    ) -> Town:
        """A town from GeoDataFrames already in memory, mapped as :func:`gisnet.io.load_town`
        maps files.

        Every frame goes through the loader's own steps
        (:func:`gisnet.io.town_layers.canonical_layers`): column matching (the
        maps given, then the aliases of :mod:`gisnet.schema`), the one id rule,
        geometry clean-up, coded values, the derived ``public`` / ``active``
        flags, and the CRS policy; every decision is a finding in
        ``town.report``. The frames given are not changed.

        Parameters
        ----------
        parcels, mains, manholes, plants, buildings
            The layers, each a GeoDataFrame with source columns (any names the
            column maps or the aliases match) or None; ``parcels`` and
            ``mains`` are empty layers with a ``missing_layer`` warning when not
            given.
        streets, laterals, users, district, highway_program
            The other layers, the same way.
        profile
            The jurisdiction profile: a built-in name, a profile TOML path or a
            loaded :class:`~gisnet.profile.Profile`. Required: there is no default.
        crs
            The working CRS (projected), also the CRS of frames that have none.
            Default: the CRS of the first projected frame (mains first), else
            the UTM zone of the data; geographic frames are reprojected (each
            choice is a finding).
        name
            The town's name.
        columns, values, defaults
            Role -> the town file's ``[layers.ROLE.columns]`` (canonical name ->
            source column), ``[layers.ROLE.values.COLUMN]`` (canonical column ->
            {source value: canonical value}) and ``[layers.ROLE.defaults]``
            tables, e.g. ``columns={"parcels": {"parcel_id": "PRINT_KEY"}}``.
        slope_units, diameter_units
            Units of the source ``slope`` (``ft/ft`` or ``percent``) and
            ``diameter`` (``in`` or ``mm``) columns, the town file's ``[units]``.
        inverts
            How the mains' invert columns are read: ``upstream_downstream`` or
            ``start_end`` (default: as their names say).
        snap_tolerance_ft, plant_tolerance_ft
            Tolerances in feet (defaults :data:`gisnet.rules.DEFAULT_SNAP_TOLERANCE_FT`
            and :data:`gisnet.rules.DEFAULT_PLANT_TOLERANCE_FT`).
        outlet_nodes
            Node ids that are outlets besides the plants.
        plant_flows
            Monthly plant flows: a CSV path or a DataFrame with ``plant_id``,
            ``month`` (``YYYY-MM``) and ``avg_flow_mgd`` (million gallons per day).
        manning_n_by_material
            Use the material-specific as-built Manning n.

        Returns
        -------
        Town
            As :func:`gisnet.io.load_town` returns for the same layers in files:
            ``town.layers[role]`` canonical in the working CRS ``town.crs``.

        Raises
        ------
        ConfigError
            No profile (the message lists the built-in ones), an unknown one, a
            column or value map that does not fit the schema.
        LayerError
            A layer that is not a GeoDataFrame, is empty or has no geometry column.
        CRSError
            A frame without CRS and no ``crs=``, a ``crs=`` that is not projected,
            coordinates that do not fit the CRS.
        SchemaError
            A column map naming a column the frame does not have.
        """
        from .io.town_layers import (
            canonical_layers,
            check_plant_ids,
            frames_as_read,
            frames_town_file,
            plant_flows_of,
        )
        from .units import feet_per_unit

        if profile is None:
            raise ConfigError("Town.from_frames needs profile=, the jurisdiction whose ordinance "
                              "the town is measured under (there is no default): one of "
                              f"{', '.join(builtin_profiles())}, or the path of a profile TOML")
        report = Report()
        prof = resolve_profile(profile, report, name)
        given = {role: frame for role, frame in (
            ("parcels", parcels), ("buildings", buildings), ("mains", mains),
            ("manholes", manholes), ("plants", plants), ("streets", streets),
            ("laterals", laterals), ("users", users), ("district", district),
            ("highway_program", highway_program)) if frame is not None}
        if not given:
            raise ConfigError("Town.from_frames needs at least one layer (parcels=, mains= ...)")
        tf = frames_town_file(
            list(given), name=name, columns=columns, values=values, defaults=defaults,
            slope_units=slope_units, diameter_units=diameter_units, inverts=inverts,
            snap_tolerance_ft=snap_tolerance_ft, plant_tolerance_ft=plant_tolerance_ft,
            outlet_nodes=outlet_nodes, manning_n_by_material=manning_n_by_material)
        raw, infos = frames_as_read(given, tf, crs, report)
        layers, working = canonical_layers(raw, tf, infos, crs, report, arg="crs=",
                                           hint="give crs=")
        flows, flows_file = plant_flows_of(plant_flows)
        check_plant_ids(flows, layers, report)
        settings = TownSettings.from_town_file(tf, extra={
            "layer_info": infos, "town_file": None, "plant_flows_file": flows_file,
            "output": None})
        return cls(name=name, crs=working, ft_per_unit=feet_per_unit(working), layers=layers,
                   profile=prof, settings=settings, report=report, plant_flows=flows)

    def __repr__(self) -> str:
        from .results import crs_text, rows_text, short_repr

        prof = self.profile.profile if self.profile is not None else None
        return short_repr(f"Town {self.name!r}", [
            f"profile {getattr(prof, 'id', prof)}, CRS {crs_text(self.crs)}, "
            f"{float(self.ft_per_unit):g} ft per unit",
            "layers: " + rows_text(self.layers),
            f"findings while loading: {len(self.report)}"])

    def layer(self, role: str) -> gpd.GeoDataFrame | None:
        """The canonical layer of a role, or None if the town has none."""
        return self.layers.get(role)

    def ft(self, length_in_crs_units: Any) -> Any:
        """Convert lengths in CRS units to feet."""
        return length_in_crs_units * self.ft_per_unit

    def units(self, length_ft: Any) -> Any:
        """Convert lengths in feet to CRS units."""
        return length_ft / self.ft_per_unit
