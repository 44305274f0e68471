"""What every map page is made of: layer and page specs, the context, colours, helpers.

:class:`MapContext` carries the town, its result layers and the layers several
pages share (built once per run); :class:`MapLayer` and :class:`Page` are what
the page modules return and :mod:`gisnet.maps.render` turns into HTML.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..labels import UTIL_CLASS_LABELS
from ..palettes import SEVERITY_COLOURS, STATUS_COLOURS, UTIL_COLOURS  # noqa: F401
from .encoding import DISPLAY_CRS, Prop, encode_layer, fmt_auto

if TYPE_CHECKING:  # pragma: no cover
    from ..profile import Profile
    from ..town import Town

# ---------------------------------------------------------------------------------------------
# colours
# ---------------------------------------------------------------------------------------------
KIND_COLOURS = {
    "sanitary": "#1f5fbf",
    "combined": "#7b3294",
    "force": "#d95f02",
    "storm": "#1b9e77",
    "unknown": "#555555",
    "excluded": "#b0b0b0",
}
#: (key, colour, label template filled with the profile's thresholds) of each utilization
#: class: colours from :data:`gisnet.output.styles.UTIL_COLOURS`, labels from
#: :data:`gisnet.labels.UTIL_CLASS_LABELS`.
UTIL_CLASSES: tuple[tuple[str, str, str], ...] = tuple(
    (k, c, UTIL_CLASS_LABELS[k]) for k, c in UTIL_COLOURS.items())
#: Above this many located findings the quality layer starts switched off (it would hide
#: the network); it stays in the layer control.
QUALITY_SHOWN_MAX = 1000


# ---------------------------------------------------------------------------------------------
# layer specs
# ---------------------------------------------------------------------------------------------
@dataclass
class MapLayer:
    """One vector layer of a page, ready for the browser.

    ``fields`` are ``(label, property[, hide_if_missing])``; ``classes`` map a
    value of property ``class_key`` to Leaflet path options; ``constants`` are
    properties shared by every feature (kept once, not per feature).
    """

    key: str
    name: str
    data: str
    count: int
    style: dict[str, Any] = field(default_factory=dict)
    classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    class_key: str | None = None
    width_key: str | None = None
    dash_key: str | None = None
    radius_key: str | None = None
    fields: list[tuple[Any, ...]] = field(default_factory=list)
    popup_title: str | None = None
    tooltip: str | None = None
    search: list[str] = field(default_factory=list)
    constants: dict[str, Any] = field(default_factory=dict)
    show: bool = True
    interactive: bool = True
    legend: list[dict[str, Any]] = field(default_factory=list)
    legend_title: str | None = None

    def spec(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "style": self.style,
            "classes": self.classes,
            "classKey": self.class_key,
            "widthKey": self.width_key,
            "dashKey": self.dash_key,
            "radiusKey": self.radius_key,
            "fields": [list(f) for f in self.fields],
            "popupTitle": self.popup_title,
            "tooltip": self.tooltip,
            "search": self.search,
            "constants": self.constants,
            "show": self.show,
            "interactive": self.interactive,
        }


@dataclass
class Page:
    """One HTML page: title, layers, panels, links."""

    name: str
    title: str
    layers: list[MapLayer]
    panels: list[dict[str, str]] = field(default_factory=list)
    links: list[dict[str, str]] = field(default_factory=list)
    center: list[float] = field(default_factory=lambda: [0.0, 0.0])


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def fields_for(df: pd.DataFrame, order: Iterable[str], skip: Iterable[str] = (), *,
               rest: bool = False) -> list[str]:
    """Columns to show: those of ``order`` present (then, with ``rest``, every other
    non-geometry column)."""
    skip = set(skip) | {"geometry"}
    if isinstance(df, gpd.GeoDataFrame):
        skip.add(df.geometry.name)
    cols = [c for c in order if c in df.columns and c not in skip]
    if rest:
        cols += [c for c in df.columns
                 if c not in cols and c not in skip and not c.startswith("_")]
    return cols


def auto_props(df: pd.DataFrame, cols: Iterable[str]) -> dict[str, Prop | Sequence[Any]]:
    """Each column formatted by its name (:func:`~gisnet.maps.encoding.fmt_auto`)."""
    return {c: fmt_auto(c, df[c]) for c in cols}


def point_geoms(gdf: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Points stay; other geometries become a point inside them."""
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    ok = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    types = np.full(len(geoms), -1)
    types[ok] = shapely.get_type_id(geoms[ok])
    if ((types == 0) | (types == -1)).all():
        return gdf
    out = gdf.copy()
    pts = geoms.copy()
    sel = ok & (types != 0)
    pts[sel] = shapely.point_on_surface(geoms[sel])
    out = out.set_geometry(gpd.GeoSeries(pts, index=gdf.index, crs=gdf.crs))
    return out


def width_from_diameter(d: np.ndarray) -> list[float | None]:
    """Line width (px) of each pipe from its diameter (inches); 2 px when unknown."""
    w = np.clip(1.5 + np.nan_to_num(d, nan=0.0) / 6.0, 1.5, 8.0)
    return [2.0 if math.isnan(x) else round(float(v), 1) for x, v in zip(d, w, strict=True)]


def dashed_if_unknown(d: np.ndarray) -> list[int | None]:
    """The dash property of each pipe: 1 (drawn dashed) where the diameter is unknown."""
    return [1 if math.isnan(x) else None for x in d]


# ---------------------------------------------------------------------------------------------
# the context shared by page builders
# ---------------------------------------------------------------------------------------------
class MapContext:
    """What every page builder needs: the town, its results, caching of shared layers.

    Parameters
    ----------
    town
        The loaded town; its profile (always a loaded
        :class:`gisnet.profile.Profile`) decides the rules the colours show.
    results
        Result layers by name (None values are dropped).
    """

    def __init__(self, town: Town, results: Mapping[str, pd.DataFrame]):
        self.town = town
        self.results = {k: v for k, v in results.items() if v is not None}
        self.crs = town.crs
        self.ftpu = float(town.ft_per_unit)
        self.profile: Profile = town.profile
        self._cache: dict[str, MapLayer | None] = {}
        #: Set by :func:`gisnet.maps.pages.write_maps` on tiled pages: a
        #: :class:`gisnet.maps.tiled.Tiler` that takes the layers big enough to tile.
        self.tiler: Any = None

    def result(self, name: str) -> gpd.GeoDataFrame | None:
        """A result layer with geometry (CRS set to the town's if missing), or None."""
        df = self.results.get(name)
        if df is None or len(df) == 0:
            return None
        if not isinstance(df, gpd.GeoDataFrame) or df.geometry.name not in df.columns:
            return None
        if df.crs is None:
            df = df.set_crs(self.crs)
        return df

    def table(self, name: str) -> pd.DataFrame | None:
        """A result layer with rows (geometry or not), or None."""
        df = self.results.get(name)
        return None if df is None or len(df) == 0 else df

    def layer(self, role: str) -> gpd.GeoDataFrame | None:
        """A canonical layer of the town with rows (CRS set if missing), or None."""
        gdf = self.town.layers.get(role)
        if gdf is None or len(gdf) == 0:
            return None
        if gdf.crs is None:
            gdf = gdf.set_crs(self.crs)
        return gdf

    def geojson(self, gdf: gpd.GeoDataFrame, props: Mapping[str, Sequence[Any] | Prop],
                **kw: Any) -> tuple[str, int]:
        """:func:`~gisnet.maps.encoding.encode_layer` with the town's feet per unit
        (a placeholder for the tiles instead when :attr:`tiler` takes the layer)."""
        if self.tiler is not None:
            deferred = self.tiler.defer(gdf, props)
            if deferred is not None:
                return deferred
        return encode_layer(gdf, props, ft_per_unit=self.ftpu if gdf.crs == self.crs
                            else None, **kw)

    def cached(self, key: str, build: Callable[[], MapLayer | None]) -> MapLayer | None:
        """The layer ``build()`` makes, built once per context."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]


def cited(section: str | None) -> str | None:
    """A profile section to cite, or None when the profile leaves it empty."""
    return str(section) if section else None


def town_center(ctx: MapContext) -> list[float]:
    """[lat, lon] of the middle of the town's mains (else parcels), for the initial view."""
    for role in ("mains", "parcels"):
        gdf = ctx.layer(role)
        if gdf is None:
            continue
        b = gdf.total_bounds
        if np.isfinite(b).all():
            mid = gpd.GeoSeries(shapely.points([(b[0] + b[2]) / 2], [(b[1] + b[3]) / 2]),
                                crs=gdf.crs).to_crs(DISPLAY_CRS).iloc[0]
            return [round(mid.y, 6), round(mid.x, 6)]
    return [0.0, 0.0]
