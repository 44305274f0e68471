"""One result layer on an interactive folium map, for a notebook
(:meth:`gisnet.pipeline.Results.explore`).

:func:`explore_layer` is :meth:`geopandas.GeoDataFrame.explore` on the layer in
EPSG:4326, with gisnet's colours for the classes a layer has (obligation
status, pipe utilization class, finding severity: :mod:`gisnet.palettes`) and
its usual columns in the tooltip. Any keyword given goes to ``explore`` and
wins over these choices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd

from ..errors import ConfigError, CRSError
from ..palettes import SEVERITY_COLOURS, SIMPLE_COLOURS, STATUS_COLOURS, UTIL_COLOURS
from .capacity import CAPACITY_ORDER, classify_pipes
from .encoding import DISPLAY_CRS
from .obligations import OBLIGATION_ORDER

if TYPE_CHECKING:  # pragma: no cover
    import folium

    from ..profile import Profile

#: The column added to ``pipes_capacity`` for its colours (:func:`classify_pipes`).
UTILIZATION_CLASS = "utilization_class"

#: Layer -> (class column, class -> colour, tooltip columns).
_CLASSED: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {
    "obligations": ("status", STATUS_COLOURS, OBLIGATION_ORDER[:7]),
    "obligation_evidence": ("status", STATUS_COLOURS,
                            ("parcel_id", "building_id", "main_id", "distance_ft", "status")),
    "pipes_capacity": (UTILIZATION_CLASS, UTIL_COLOURS, (*CAPACITY_ORDER, UTILIZATION_CLASS)),
    "quality": ("severity", SEVERITY_COLOURS, ("kind", "severity", "layer", "feature_id",
                                               "message")),
}


def explore_layer(gdf: pd.DataFrame, name: str, *, profile: Profile | None = None,
                  **kwargs: Any) -> folium.Map:
    """A folium map of one result layer, in EPSG:4326.

    Parameters
    ----------
    gdf
        The layer (a GeoDataFrame in its working CRS).
    name
        Its name (``obligations``, ``pipes_capacity`` ...): chooses the class
        column and colours.
    profile
        The town's profile: its thresholds class the pipes of ``pipes_capacity``.
    **kwargs
        Passed to :meth:`geopandas.GeoDataFrame.explore` (``column=``,
        ``tooltip=``, ``m=`` ...), over gisnet's choices; with ``column`` or
        ``color`` given, gisnet's colours are not applied.

    Returns
    -------
    folium.Map

    Raises
    ------
    ConfigError
        The layer has no geometry (a table) or no feature with one.
    CRSError
        The layer has no CRS.
    """
    if not isinstance(gdf, gpd.GeoDataFrame) or gdf.geometry.isna().all():
        raise ConfigError(f"the {name} layer has no geometry to map; look at it as a table "
                          f"(res.layers[{name!r}])")
    g = gdf[~(gdf.geometry.isna() | gdf.geometry.is_empty)]
    if not len(g):
        raise ConfigError(f"the {name} layer has no feature with a geometry to map")
    if g.crs is None:
        raise CRSError(f"the {name} layer has no CRS; it cannot be placed on a map")
    g = g.to_crs(DISPLAY_CRS)
    opts: dict[str, Any] = {}
    classed = _CLASSED.get(name)
    if classed is not None and classed[0] == UTILIZATION_CLASS:
        # the classes need the profile's thresholds
        classed = None if profile is None else classed
        if profile is not None:
            g = g.assign(**{UTILIZATION_CLASS: classify_pipes(g, profile)})
    if classed is not None:
        col, colours, tips = classed
        present = set(g[col].dropna().astype(str))
        cats = [c for c in colours if c in present] + sorted(present - set(colours))
        if cats:
            opts.update(column=col, categorical=True, categories=cats,
                        cmap=[colours.get(c, "#999999") for c in cats])
        opts["tooltip"] = [c for c in tips if c in g.columns]
    elif name in SIMPLE_COLOURS:
        opts["color"] = SIMPLE_COLOURS[name]
    if "column" in kwargs or "color" in kwargs:
        for k in ("column", "categorical", "categories", "cmap", "color"):
            opts.pop(k, None)
    opts.update(kwargs)
    return g.explore(**opts)
