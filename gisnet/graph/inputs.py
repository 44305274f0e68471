"""Stage 0: what a graph build starts from (layers, CRS, tolerances, outlets, eligible kinds)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import geopandas as gpd
import numpy as np
from pyproj import CRS

from .. import rules
from ..errors import ConfigError, CRSError, LayerError
from ..io.raster import ElevationRaster
from ..town import Town
from ..units import feet_per_unit


@dataclass(frozen=True, eq=False)
class GraphInputs:
    """The layers and settings of one graph build.

    Attributes
    ----------
    mains, manholes, plants
        Canonical layers (``manholes`` / ``plants`` None when absent or empty).
    crs, ft_per_unit
        The working CRS (the mains') and feet in one of its units.
    tolerance_ft
        Snap tolerance (feet).
    plant_tolerance_ft
        How far a plant may lie from the nearest node and still join it (feet).
    outlet_nodes
        Node ids named as outlets.
    from_loader
        The layers came through :func:`gisnet.io.load_town` (which reports
        duplicate ids itself).
    eligible_kinds
        Main kinds a connection obligation counts (the profile's
        ``connection.eligible_kinds``, else :data:`gisnet.rules.DEFAULT_ELIGIBLE_KINDS`).
    inverts
        How the ``up_invert_ft`` / ``down_invert_ft`` columns and the
        ``start_invert_ft`` / ``end_invert_ft`` columns are read
        (:data:`gisnet.schema.INVERT_MEANINGS`): a loaded town's mains by their
        names unless the town file's ``[layers.mains] inverts`` says otherwise;
        plain layers as their ``attrs["gisnet_inverts"]`` says, else at the
        drawn ends (``start_end``, as before the loader named them).
    elevation
        The town file's elevation raster (``[elevation]``), checked when the town
        was loaded, or None.
    """

    mains: gpd.GeoDataFrame
    manholes: gpd.GeoDataFrame | None
    plants: gpd.GeoDataFrame | None
    crs: CRS
    ft_per_unit: float
    tolerance_ft: float
    plant_tolerance_ft: float
    outlet_nodes: tuple[str, ...]
    from_loader: bool
    eligible_kinds: tuple[str, ...]
    inverts: tuple[str, str] = ("upstream_downstream", "start_end")
    elevation: ElevationRaster | None = None

    @property
    def tol(self) -> float:
        """The snap tolerance in CRS units."""
        return self.tolerance_ft / self.ft_per_unit

    @property
    def plant_tol(self) -> float:
        """The plant tolerance in CRS units."""
        return self.plant_tolerance_ft / self.ft_per_unit


def read_inputs(
    town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
    snap_tolerance_ft: float | None = None,
    outlet_nodes: Iterable[str] | None = None,
    plant_tolerance_ft: float | None = None,
) -> GraphInputs:
    """Check the layers and settle the settings of a build (see
    :func:`gisnet.graph.build_sewer_graph` for the parameters and errors)."""
    if isinstance(town_or_layers, Town):
        town = town_or_layers
        layers: Mapping[str, gpd.GeoDataFrame] = town.layers
        crs = CRS.from_user_input(town.crs)
        fpu = float(town.ft_per_unit)
        tol = town.settings.snap_tolerance_ft if snap_tolerance_ft is None else snap_tolerance_ft
        outs = tuple(town.settings.outlet_nodes or ())
        if plant_tolerance_ft is None:
            plant_tolerance_ft = town.settings.plant_tolerance_ft
        eligible = tuple(town.profile.connection.eligible_kinds)
        from_loader = True
        said = town.settings.extra.get("mains_inverts")
        inverts = (said, said) if said else ("upstream_downstream", "start_end")
        elevation = town.settings.extra.get("elevation")
    else:
        layers = town_or_layers
        if "mains" not in layers or layers["mains"] is None:
            raise LayerError("a mains layer is required to build the sewer graph", layer="mains")
        if layers["mains"].crs is None:
            raise CRSError("the mains layer has no CRS", layer="mains")
        crs = CRS.from_user_input(layers["mains"].crs)
        fpu = feet_per_unit(crs)
        tol = rules.DEFAULT_SNAP_TOLERANCE_FT if snap_tolerance_ft is None else snap_tolerance_ft
        outs = ()
        eligible = rules.DEFAULT_ELIGIBLE_KINDS
        from_loader = False
        said = layers["mains"].attrs.get("gisnet_inverts")
        inverts = (said, said) if said else ("start_end", "start_end")
        elevation = None
    if outlet_nodes is not None:
        outs = tuple(str(o) for o in outlet_nodes)
    if tol is None or not np.isfinite(tol) or tol < 0:
        raise ConfigError(f"snap tolerance must be a non-negative number of feet, not {tol!r}")
    mains = layers.get("mains")
    if mains is None or len(mains) == 0:
        raise LayerError("the mains layer is empty", layer="mains")
    for role in ("manholes", "plants"):
        g = layers.get(role)
        if g is not None and len(g) and g.crs is not None and CRS.from_user_input(g.crs) != crs:
            raise CRSError(f"the {role} layer is not in the mains' CRS {crs.to_string()}",
                           layer=role)
    manholes = layers.get("manholes")
    plants = layers.get("plants")
    return GraphInputs(
        mains=mains,
        manholes=manholes if manholes is not None and len(manholes) else None,
        plants=plants if plants is not None and len(plants) else None,
        crs=crs,
        ft_per_unit=fpu,
        tolerance_ft=float(tol),
        plant_tolerance_ft=float(tol if plant_tolerance_ft is None else plant_tolerance_ft),
        outlet_nodes=outs,
        from_loader=from_loader,
        eligible_kinds=eligible,
        inverts=inverts,
        elevation=elevation,
    )
