"""The loaded town: canonical layers in one projected CRS, the profile, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
from pyproj import CRS

from .report import Report

if TYPE_CHECKING:  # pragma: no cover
    from .profile import Profile


@dataclass
class TownSettings:
    """Settings of one town (from its ``gisnet.toml`` and the command line).

    Attributes
    ----------
    snap_tolerance_ft
        Pipe ends within this distance (feet) of a manhole or of another pipe
        end are joined; an end this close to another pipe's interior splits it.
    plant_tolerance_ft
        How far (feet) a plant may lie from the nearest pipe node and still be
        joined to it (None: the snap tolerance).
    outlet_nodes
        Node ids the town names as outlets (plants, outfalls) besides plants.
    slope_units
        ``ft/ft`` or ``percent``: how the source ``slope`` column is expressed.
    diameter_units
        ``in`` or ``mm``.
    manning_n_by_material
        Use the material-specific as-built Manning n instead of the design n.
    """

    snap_tolerance_ft: float = 1.0
    plant_tolerance_ft: float | None = None
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
        The jurisdiction profile (rules, thresholds, sections).
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

    def layer(self, role: str) -> gpd.GeoDataFrame | None:
        """The canonical layer of a role, or None if the town has none."""
        return self.layers.get(role)

    def ft(self, length_in_crs_units: Any) -> Any:
        """Convert lengths in CRS units to feet."""
        return length_in_crs_units * self.ft_per_unit

    def units(self, length_ft: Any) -> Any:
        """Convert lengths in feet to CRS units."""
        return length_ft / self.ft_per_unit
