"""The loaded town: canonical layers in one projected CRS, the profile, the report."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import pandas as pd
from pyproj import CRS

from .errors import ConfigError
from .profile import Profile, builtin_profiles, load_profile
from .report import Report
from .rules import DEFAULT_PLANT_TOLERANCE_FT, DEFAULT_SNAP_TOLERANCE_FT

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
    """

    snap_tolerance_ft: float = DEFAULT_SNAP_TOLERANCE_FT
    plant_tolerance_ft: float | None = DEFAULT_PLANT_TOLERANCE_FT
    outlet_nodes: tuple[str, ...] = ()
    slope_units: str = "ft/ft"
    diameter_units: str = "in"
    manning_n_by_material: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


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
