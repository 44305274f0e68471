"""Planners' web maps: one folium page per question, a combined page, and what-if.

Pages take the result GeoDataFrames of the analyses (the layers of
``gisnet-results.gpkg``, see ``docs/architecture.md``) plus the town's own
layers, and write light, self-explaining Leaflet pages:

``network.html``
    mains by kind (colour) and diameter (width), manholes, plants, outlets and
    the data-quality findings.
``obligations.html``
    parcels by connection status, the connection zone, evidence lines.
``sampling.html``
    taps, paths to control manholes, control manholes (with how many taps each
    serves), industrial users with significant industrial users set apart.
``capacity.html``
    pipes by utilization class (the profile's threshold its own colour), width
    by diameter, plants with a status panel.
``index.html``
    every layer with a layer control, and links to the other pages.

Every page has a title with the town and profile, a legend, a scale bar (feet
and metres), a search box (parcel id or address, and other ids), tooltips and
popups; where a rule of the profile produced a colour, the popup cites its
section. A value the data does not have is shown as ``unknown``, never as 0.

Weight: geometry is simplified in the working CRS (tolerance in feet), then
reprojected to EPSG:4326 (this module is the only place that does so) and its
coordinates rounded to ``precision`` decimals (6 = 0.1 m; parcels that need no
attention 5 = 1 m). Features carry only the properties shown, already formatted
as text; rendering uses Leaflet's canvas renderer.

Offline: ``self_contained=True`` inlines Leaflet (vendored in
``gisnet/static/leaflet``, BSD-2-Clause) and gisnet's own script and styles, and
drops the jQuery/Bootstrap/Font Awesome links folium adds by default (nothing on
these pages uses them), so the page renders every vector layer without a
network; only the base tiles need one, and the page says so.
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from . import _mapassets
from ._mapencode import (
    DISPLAY_CRS,
    Prop,
    _col,
    _fmt_auto,
    _fmt_bool,
    _fmt_number,
    _fmt_text,
    _is_false,
    _is_true,
    _label,
    _missing,
    _num,
    encode_coords,
    encode_layer,
    format_value,
)
from .errors import ConfigError

__all__ = [
    "DISPLAY_CRS", "PAGES", "RESULT_LAYERS", "MapLayer", "Page", "Prop", "build_pages",
    "encode_coords", "encode_layer", "format_value", "read_results", "render_page",
    "utilization_class", "whatif_map", "write_maps",
]

if TYPE_CHECKING:  # pragma: no cover
    from .town import Town

log = logging.getLogger(__name__)

#: Pages written by :func:`write_maps`, in order.
PAGES: tuple[str, ...] = ("network", "obligations", "sampling", "capacity", "index")
#: Page size (bytes) above which a warning is logged.
MAX_PAGE_BYTES = 15 * 1024 * 1024

TILES: tuple[dict[str, str], ...] = (
    {
        "name": "OpenStreetMap",
        "url": "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        "attribution": '&copy; <a href="https://www.openstreetmap.org/copyright">'
        "OpenStreetMap</a> contributors",
    },
    {
        "name": "Light (CARTO)",
        "url": "https://{s}.basemaps.cartocdn.com/light_all/{z}/{x}/{y}{r}.png",
        "attribution": '&copy; <a href="https://www.openstreetmap.org/copyright">'
        'OpenStreetMap</a> contributors &copy; <a href="https://carto.com/attributions">CARTO</a>',
    },
)
LEAFLET_CDN_JS = "https://cdn.jsdelivr.net/npm/leaflet@1.9.4/dist/leaflet.js"
LEAFLET_CDN_CSS = "https://cdn.jsdelivr.net/npm/leaflet@1.9.4/dist/leaflet.css"
OFFLINE_NOTE = (
    "Offline page: every layer is inside this file; the base map tiles need a network "
    "connection and stay blank without one."
)

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
STATUS_COLOURS = {
    "required": "#d7301f",
    "review": "#fc8d59",
    "connected": "#1a9850",
    "not_required": "#9e9e9e",
}
UTIL_CLASSES: tuple[tuple[str, str, str], ...] = (
    # key, colour, label template (filled with the profile's thresholds)
    ("ok", "#1a9850", "below {t:.0%} of capacity"),
    ("threshold", "#f5a300", "over the {t:.0%} threshold"),
    ("deficient", "#e31a1c", "deficient (over {d:.0%})"),
    ("surcharged", "#67001f", "surcharged (over {s:.0%})"),
    ("nocapacity", "#000000", "no capacity (zero or adverse slope)"),
    ("unknown", "#9e9e9e", "unknown (no diameter, slope or flow)"),
)
#: Above this many located findings the quality layer starts switched off (it would hide
#: the network); it stays in the layer control.
QUALITY_SHOWN_MAX = 1000
SEVERITY_COLOURS = {"error": "#d7191c", "warning": "#fdae61", "info": "#2c7bb6"}


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def _pget(obj: Any, *keys: str, default: Any = None) -> Any:
    """Read a nested profile value by keys, tolerating missing sections/keys."""
    for key in keys:
        if obj is None:
            return default
        if isinstance(obj, Mapping):
            obj = obj.get(key)
        else:
            try:
                obj = getattr(obj, key)
            except (AttributeError, KeyError):
                return default
    return default if obj is None else obj


def _profile_name(town: Town) -> str:
    p = getattr(town, "profile", None)
    if p is None:
        return "no profile"
    for keys in (("name",), ("profile", "name"), ("id",), ("profile", "id")):
        v = _pget(p, *keys)
        if isinstance(v, str) and v:
            return v
    return str(p)




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


def _fields_for(df: pd.DataFrame, order: Iterable[str], skip: Iterable[str] = (), *,
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


def _auto_props(df: pd.DataFrame, cols: Iterable[str]) -> dict[str, list[Any]]:
    return {c: _fmt_auto(c, df[c]) for c in cols}


def _point_geoms(gdf: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
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


def _width_from_diameter(d: np.ndarray) -> list[float | None]:
    w = np.clip(1.5 + np.nan_to_num(d, nan=0.0) / 6.0, 1.5, 8.0)
    return [2.0 if math.isnan(x) else round(float(v), 1) for x, v in zip(d, w, strict=True)]


# ---------------------------------------------------------------------------------------------
# building blocks shared by pages
# ---------------------------------------------------------------------------------------------
class _Ctx:
    """What every page builder needs: the town, its results, caching of shared layers."""

    def __init__(self, town: Town, results: Mapping[str, pd.DataFrame]):
        self.town = town
        self.results = {k: v for k, v in results.items() if v is not None}
        self.crs = town.crs
        self.ftpu = float(getattr(town, "ft_per_unit", 1.0) or 1.0)
        self.profile = getattr(town, "profile", None)
        self._cache: dict[str, MapLayer | None] = {}

    def result(self, name: str) -> gpd.GeoDataFrame | None:
        df = self.results.get(name)
        if df is None or len(df) == 0:
            return None
        if not isinstance(df, gpd.GeoDataFrame) or df.geometry.name not in df.columns:
            return None
        if df.crs is None:
            df = df.set_crs(self.crs)
        return df

    def table(self, name: str) -> pd.DataFrame | None:
        df = self.results.get(name)
        return None if df is None or len(df) == 0 else df

    def layer(self, role: str) -> gpd.GeoDataFrame | None:
        gdf = self.town.layers.get(role) if getattr(self.town, "layers", None) else None
        if gdf is None or len(gdf) == 0:
            return None
        if gdf.crs is None:
            gdf = gdf.set_crs(self.crs)
        return gdf

    def geojson(self, gdf: gpd.GeoDataFrame, props: Mapping[str, Sequence[Any]], **kw: Any):
        return encode_layer(gdf, props, ft_per_unit=self.ftpu if gdf.crs == self.crs
                                  else None, **kw)

    def cached(self, key: str, build: Any) -> MapLayer | None:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def section(self, *keys: str) -> str | None:
        v = _pget(self.profile, *keys)
        return str(v) if v else None


def _parcels_light(ctx: _Ctx, *, key: str = "parcels", show: bool = True) -> MapLayer | None:
    """All parcels, drawn lightly, carrying only id and address (for search)."""

    def build() -> MapLayer | None:
        parcels = ctx.layer("parcels")
        if parcels is None:
            return None
        props = {"parcel_id": _fmt_text(_col(parcels, "parcel_id")),
                 "address": _fmt_text(_col(parcels, "address"))}
        data, n = ctx.geojson(parcels, props, precision=5, simplify_ft=2.0)
        return MapLayer(
            key=key, name="Parcels", data=data, count=n,
            style={"color": "#8c8c8c", "weight": 0.5, "fillColor": "#d9d9d9", "fillOpacity": 0.15,
                   "opacity": 0.6},
            fields=[("Parcel", "parcel_id"), ("Address", "address")],
            popup_title="Parcel {parcel_id}", search=["parcel_id", "address"], show=show,
            legend=[{"label": "parcel", "color": "#d9d9d9", "shape": "area"}],
            legend_title="Parcels",
        )

    return ctx.cached(f"parcels_light:{key}:{show}", build)


def _mains_layer(ctx: _Ctx) -> MapLayer | None:
    """Mains by kind (colour) and diameter (width); excluded mains grey."""

    def build() -> MapLayer | None:
        mains = ctx.result("graph_edges")
        if mains is None:
            mains = ctx.layer("mains")
        if mains is None:
            return None
        kind = _col(mains, "kind").astype(object).where(_col(mains, "kind").notna(), "unknown")
        kind = [k if k in KIND_COLOURS else "unknown" for k in kind.astype(str)]
        excluded = _is_false(_col(mains, "public")) | _is_false(_col(mains, "active"))
        cls = ["excluded" if e else k for k, e in zip(kind, excluded, strict=True)]
        d = _num(_col(mains, "diameter_in"))
        length = _col(mains, "length_ft")
        if length.isna().all():
            length = pd.Series(mains.geometry.length.to_numpy() * ctx.ftpu, index=mains.index)
        props = {
            "main_id": _fmt_text(_col(mains, "main_id")),
            "kind": kind,
            "_c": cls,
            "_w": _width_from_diameter(d),
            "_u": [1 if math.isnan(x) else None for x in d],
            "diameter": _fmt_number(_col(mains, "diameter_in"), 0, "in"),
            "material": _fmt_text(_col(mains, "material")),
            "length": _fmt_number(length, 1, "ft"),
            "slope": _fmt_number(_col(mains, "slope"), 4, "ft/ft"),
            "from": _fmt_text(_col(mains, "from_node")),
            "to": _fmt_text(_col(mains, "to_node")),
            "direction": _fmt_text(_col(mains, "direction_source")),
            "owner": _fmt_text(_col(mains, "owner")),
            "status": _fmt_text(_col(mains, "status")),
            "public": _fmt_bool(_col(mains, "public")),
            "active": _fmt_bool(_col(mains, "active")),
        }
        data, n = ctx.geojson(mains, props, precision=6, simplify_ft=0.5)
        classes = {k: {"color": c} for k, c in KIND_COLOURS.items()}
        classes["excluded"]["opacity"] = 0.7
        present = set(cls)
        legend = [{"label": k if k != "excluded" else "excluded (private or inactive)",
                   "color": c, "shape": "line", "weight": 3}
                  for k, c in KIND_COLOURS.items() if k in present]
        legend.append({"label": "width: diameter; dashed: diameter unknown", "color": "#1f5fbf",
                       "shape": "line", "weight": 2, "dash": True})
        return MapLayer(
            key="mains", name="Sewer mains", data=data, count=n,
            style={"weight": 3, "opacity": 0.9}, classes=classes, class_key="_c",
            width_key="_w", dash_key="_u",
            fields=[("Main", "main_id"), ("Kind", "kind"), ("Diameter", "diameter"),
                    ("Material", "material"), ("Length", "length"), ("Slope", "slope"),
                    ("From node", "from"), ("To node", "to"),
                    ("Direction from", "direction", True), ("Owner", "owner", True),
                    ("Status", "status", True), ("Public", "public", True),
                    ("Active", "active", True)],
            popup_title="Main {main_id}", tooltip="Main {main_id} · {kind} · {diameter}",
            search=["main_id"], legend=legend, legend_title="Sewer mains",
        )

    return ctx.cached("mains", build)


def _nodes(ctx: _Ctx) -> gpd.GeoDataFrame | None:
    nodes = ctx.result("graph_nodes")
    if nodes is not None:
        return nodes
    mh = ctx.layer("manholes")
    return mh


def _manholes_layer(ctx: _Ctx) -> MapLayer | None:
    def build() -> MapLayer | None:
        nodes = _nodes(ctx)
        if nodes is None:
            return None
        kind = _col(nodes, "kind").astype(object)
        keep = ~kind.isin(["plant", "junction"]).to_numpy()
        nodes = _point_geoms(nodes[keep])
        kind = _col(nodes, "kind").astype(object)
        cls = ["manhole" if k == "manhole" else "other" for k in kind]
        props = {
            "node_id": _fmt_text(_col(nodes, "node_id")),
            "kind": _fmt_text(kind),
            "_c": cls,
            "rim": _fmt_number(_col(nodes, "rim_ft"), 2, "ft"),
            "invert": _fmt_number(_col(nodes, "invert_ft"), 2, "ft"),
            "public": _fmt_bool(_col(nodes, "public")),
            "active": _fmt_bool(_col(nodes, "active")),
        }
        data, n = ctx.geojson(nodes, props, precision=6)
        return MapLayer(
            key="manholes", name="Manholes and structures", data=data, count=n,
            style={"radius": 3, "color": "#333333", "weight": 1, "fillColor": "#ffffff",
                   "fillOpacity": 0.9},
            classes={"other": {"fillColor": "#bdbdbd", "radius": 2.5}}, class_key="_c",
            fields=[("Node", "node_id"), ("Kind", "kind"), ("Rim", "rim", True),
                    ("Invert", "invert", True), ("Public", "public", True),
                    ("Active", "active", True)],
            popup_title="{kind} {node_id}", tooltip="{kind} {node_id}", search=["node_id"],
            legend=[{"label": "manhole", "color": "#ffffff", "shape": "point"},
                    {"label": "other structure", "color": "#bdbdbd", "shape": "point"}],
            legend_title="Manholes",
        )

    return ctx.cached("manholes", build)


def _plants_frame(ctx: _Ctx) -> gpd.GeoDataFrame | None:
    """Plants: the capacity ``plants`` result joined to the town's plant layer."""
    res = ctx.results.get("plants")
    town_plants = ctx.layer("plants")
    if res is not None and len(res):
        if isinstance(res, gpd.GeoDataFrame) and res.geometry.name in res.columns and \
                (~res.geometry.isna()).any():
            return _point_geoms(res if res.crs is not None else res.set_crs(ctx.crs))
        if town_plants is not None and "plant_id" in res.columns:
            geo = town_plants[["plant_id", town_plants.geometry.name]]
            attrs = pd.DataFrame(res.drop(columns=[c for c in ("geometry",) if c in res.columns]))
            merged = geo.merge(attrs, on="plant_id", how="right", suffixes=("_town", ""))
            return _point_geoms(gpd.GeoDataFrame(merged, geometry=geo.geometry.name,
                                                 crs=town_plants.crs))
    if town_plants is not None:
        return _point_geoms(town_plants)
    return None


def _plants_layer(ctx: _Ctx) -> MapLayer | None:
    def build() -> MapLayer | None:
        plants = _plants_frame(ctx)
        if plants is None:
            return None
        cols = _fields_for(plants, ["plant_id", "name", "design_flow_mgd", "avg_flow_mgd",
                                    "ratio", "over_threshold", "basis", "window", "gaps"])
        props = _auto_props(plants, cols)
        over = _is_true(_col(plants, "over_threshold"))
        props["_c"] = ["over" if o else "ok" for o in over]
        section = ctx.section("capacity", "plant_section")
        consts = {"section": section} if section else {}
        fields = [(_label(c), c) for c in cols]
        if "over_threshold" in plants.columns and section:
            fields.append(("Ordinance section", "section"))
        data, n = ctx.geojson(plants, props, precision=6)
        return MapLayer(
            key="plants", name="Treatment plants", data=data, count=n,
            style={"radius": 10, "color": "#000000", "weight": 2, "fillColor": "#6a51a3",
                   "fillOpacity": 0.9},
            classes={"over": {"fillColor": "#e31a1c"}}, class_key="_c",
            fields=fields, constants=consts, popup_title="Plant {plant_id}",
            tooltip="Plant {plant_id}", search=["plant_id", "name"],
            legend=[{"label": "treatment plant", "color": "#6a51a3", "shape": "point"}]
            + ([{"label": "plant over its threshold", "color": "#e31a1c", "shape": "point"}]
               if over.any() else []),
            legend_title="Plants",
        )

    return ctx.cached("plants", build)


# ---------------------------------------------------------------------------------------------
# pages
# ---------------------------------------------------------------------------------------------
def _network_layers(ctx: _Ctx) -> list[MapLayer]:
    layers: list[MapLayer | None] = [_parcels_light(ctx), _mains_layer(ctx), _manholes_layer(ctx)]
    nodes = ctx.result("graph_nodes")
    if nodes is not None and "outlet" in nodes.columns:
        out = _point_geoms(nodes[_is_true(nodes["outlet"])])
        if len(out):
            props = {"node_id": _fmt_text(_col(out, "node_id")),
                     "kind": _fmt_text(_col(out, "kind"))}
            data, n = ctx.geojson(out, props)
            layers.append(MapLayer(
                key="outlets", name="Outlets", data=data, count=n,
                style={"radius": 7, "color": "#000000", "weight": 2, "fillColor": "#ff7f00",
                       "fillOpacity": 0.9},
                fields=[("Node", "node_id"), ("Kind", "kind")], popup_title="Outlet {node_id}",
                tooltip="Outlet {node_id}",
                legend=[{"label": "outlet (plant or outfall)", "color": "#ff7f00",
                         "shape": "point"}], legend_title="Outlets"))
    layers.append(_plants_layer(ctx))
    layers.append(_quality_layer(ctx))
    return [x for x in layers if x is not None]


def _quality_layer(ctx: _Ctx) -> MapLayer | None:
    q = ctx.result("quality")
    if q is None:
        report = getattr(ctx.town, "report", None)
        if report is None or not len(report):
            return None
        q = report.to_gdf(ctx.crs)
    geoms = np.asarray(q.geometry.array, dtype=object)
    located = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    sev = _col(q, "severity").astype(object)
    props = {
        "finding_id": _fmt_text(_col(q, "finding_id")),
        "kind": _fmt_text(_col(q, "kind")),
        "severity": _fmt_text(sev),
        "message": _fmt_text(_col(q, "message")),
        "layer": _fmt_text(_col(q, "layer")),
        "feature_id": _fmt_text(_col(q, "feature_id")),
        "_c": [s if s in SEVERITY_COLOURS else "info" for s in sev],
    }
    data, n = ctx.geojson(q, props, precision=6)
    unlocated = int((~located).sum())
    name = "Data-quality findings"
    return MapLayer(
        key="quality", name=name, data=data, count=n,
        style={"radius": 6, "weight": 4, "opacity": 0.9, "color": "#2c7bb6",
               "fillColor": "#2c7bb6", "fillOpacity": 0.8},
        classes={k: {"color": c, "fillColor": c} for k, c in SEVERITY_COLOURS.items()},
        class_key="_c",
        fields=[("Finding", "finding_id"), ("Kind", "kind"), ("Severity", "severity"),
                ("Message", "message"), ("Layer", "layer"), ("Feature", "feature_id")],
        popup_title="{kind}", tooltip="{severity}: {kind}", search=["feature_id", "finding_id"],
        show=n <= QUALITY_SHOWN_MAX,
        legend=[{"label": s, "color": c, "shape": "point"} for s, c in SEVERITY_COLOURS.items()],
        legend_title=f"Data-quality findings ({n} on the map"
        + (f", {unlocated} without a location)" if unlocated else ")"),
    )


def _obligation_frame(ctx: _Ctx) -> gpd.GeoDataFrame | None:
    """Obligations with parcel polygons (joined from the town when the result has none)."""
    ob = ctx.results.get("obligations")
    if ob is None or len(ob) == 0:
        return None
    parcels = ctx.layer("parcels")
    has_geom = isinstance(ob, gpd.GeoDataFrame) and ob.geometry.name in ob.columns
    if has_geom:
        gt = set(ob.geom_type.dropna().unique())
        if gt and gt <= {"Polygon", "MultiPolygon"}:
            return ob if ob.crs is not None else ob.set_crs(ctx.crs)
    if parcels is None or "parcel_id" not in ob.columns:
        if has_geom:
            return ob if ob.crs is not None else ob.set_crs(ctx.crs)
        return None
    attrs = pd.DataFrame(ob.drop(columns=[ob.geometry.name] if has_geom else []))
    keep = [c for c in ("parcel_id", "address") if c in parcels.columns]
    geo = parcels[[*keep, parcels.geometry.name]]
    if "address" in attrs.columns:
        geo = geo.drop(columns=["address"], errors="ignore")
    merged = geo.merge(attrs, on="parcel_id", how="inner")
    return gpd.GeoDataFrame(merged, geometry=parcels.geometry.name, crs=parcels.crs)


OBLIGATION_ORDER = ("parcel_id", "address", "status", "distance_ft", "main_id",
                    "within_distance", "abuts_sewered_street", "deadline_days",
                    "septic_deadline", "measure", "building_id", "reason", "section")


def _obligation_layers(ctx: _Ctx) -> list[MapLayer]:
    layers: list[MapLayer] = []
    zone = ctx.result("connection_zone")
    if zone is not None:
        section = ctx.section("connection", "section")
        dist = _pget(ctx.profile, "connection", "distance_ft")
        cols = _fields_for(zone, ["distance_ft", "measure", "mains_count", "area_acres"])
        props = _auto_props(zone, cols)
        consts: dict[str, Any] = {}
        fields = [(_label(c), c) for c in cols]
        if section:
            consts["section"] = section
            fields.append(("Ordinance section", "section"))
        if dist is not None:
            consts["rule"] = f"within {float(dist):g} ft of a public sanitary sewer"
            fields.insert(0, ("Rule", "rule"))
        data, n = ctx.geojson(zone, props, precision=6, simplify_ft=2.0)
        layers.append(MapLayer(
            key="connection_zone", name="Connection zone", data=data, count=n,
            style={"color": "#2171b5", "weight": 1, "fillColor": "#6baed6", "fillOpacity": 0.18},
            fields=fields, constants=consts, popup_title="Connection zone",
            legend=[{"label": "within the connection distance", "color": "#6baed6",
                     "shape": "area", "opacity": 0.3}], legend_title="Connection zone"))
    ob = _obligation_frame(ctx)
    attention: set[str] = set()
    if ob is not None:
        status = _col(ob, "status").astype(object).fillna("unknown").astype(str)
        cols = _fields_for(ob, OBLIGATION_ORDER)
        for st, label, light in (("required", "Must connect", False),
                                 ("review", "Needs review", False),
                                 ("connected", "Connected", True),
                                 ("not_required", "Not required", True),
                                 ("unknown", "Status unknown", True)):
            sel = (status == st).to_numpy()
            if st == "unknown":
                sel = ~status.isin(list(STATUS_COLOURS)).to_numpy()
            if not sel.any():
                continue
            part = ob[sel]
            colour = STATUS_COLOURS.get(st, "#bdbdbd")
            if light:
                show_cols = [c for c in ("parcel_id", "address", "distance_ft", "main_id",
                                         "section") if c in part.columns]
                style = {"color": colour, "weight": 0.6, "fillColor": colour,
                         "fillOpacity": 0.12, "opacity": 0.7}
                precision, simp = 5, 2.0
            else:
                show_cols = [c for c in cols if c != "status"]
                attention.update(_fmt_text(_col(part, "parcel_id")))
                style = {"color": colour, "weight": 1.5, "fillColor": colour,
                         "fillOpacity": 0.55}
                precision, simp = 6, 1.0
            props = _auto_props(part, show_cols)
            layers.append(MapLayer(
                key=f"parcels_{st}", name=f"Parcels: {label.lower()}", data="", count=0,
                style=style,
                fields=[("Status", "status")] + [(_label(c) if c != "section"
                                                  else "Ordinance section", c)
                                                 for c in show_cols],
                constants={"status": label.lower()},
                popup_title="Parcel {parcel_id}",
                tooltip="{parcel_id} · {status}" + (" · {distance_ft}"
                                                    if "distance_ft" in show_cols else ""),
                search=["parcel_id", "address"],
                legend=[{"label": label.lower(), "color": colour, "shape": "area",
                         "opacity": 0.12 if light else 0.6}],
                legend_title="Parcels by status",
            ))
            layers[-1].data, layers[-1].count = ctx.geojson(part, props, precision=precision,
                                                            simplify_ft=simp)
    ev = ctx.result("obligation_evidence")
    if ev is not None:
        if attention and "parcel_id" in ev.columns:
            ev = ev[_col(ev, "parcel_id").astype(str).isin(attention).to_numpy()]
        if len(ev):
            cols = _fields_for(ev, ["parcel_id", "main_id", "distance_ft", "measure"])
            props = _auto_props(ev, cols)
            data, n = ctx.geojson(ev, props, precision=6)
            layers.append(MapLayer(
                key="evidence", name="Evidence: nearest points", data=data, count=n,
                style={"color": "#67000d", "weight": 2, "dashArray": "4 3"},
                fields=[(_label(c), c) for c in cols], popup_title="Evidence {parcel_id}",
                tooltip="{parcel_id} → {main_id}: {distance_ft}",
                legend=[{"label": "parcel to nearest main", "color": "#67000d", "shape": "line",
                         "weight": 2, "dash": True}], legend_title="Evidence"))
    mains = _mains_layer(ctx)
    if mains is not None:
        layers.insert(1 if zone is not None else 0, mains)
    if ob is None:
        p = _parcels_light(ctx)
        if p is not None:
            layers.insert(0, p)
    return layers


SAMPLING_ORDER = ("user_id", "name", "parcel_id", "building_id", "process_flow_gpd",
                  "categorical", "siu", "siu_reason", "review", "review_reason",
                  "local_review", "reason", "plant_share_pct", "control_manhole_id",
                  "plant_id", "path_length_ft", "section")


def _siu_mask(df: pd.DataFrame) -> np.ndarray:
    for c in ("siu", "is_siu", "significant", "significant_industrial_user"):
        if c in df.columns:
            return _is_true(df[c])
    return np.zeros(len(df), dtype=bool)


def _sampling_layers(ctx: _Ctx) -> list[MapLayer]:
    layers: list[MapLayer] = [p for p in (_parcels_light(ctx),) if p is not None]
    mains = _mains_layer(ctx)
    if mains is not None:
        layers.append(mains)
    cm_section = ctx.section("control_manhole", "section")
    paths = ctx.result("control_paths")
    if paths is not None:
        cols = _fields_for(paths, ["building_id", "user_id", "control_manhole_id",
                                   "path_length_ft"])
        small = len(paths) <= 5000
        if small:
            props = _auto_props(paths, cols)
            data, n = ctx.geojson(paths, props, precision=6, simplify_ft=0.5)
        else:  # city scale: one dissolved drawing of every path
            merged = shapely.line_merge(shapely.union_all(np.asarray(paths.geometry.array)))
            one = gpd.GeoDataFrame(geometry=[merged], crs=paths.crs)
            data, _ = ctx.geojson(one, {}, precision=6, simplify_ft=0.5)
            n, cols = 1, []
        layers.append(MapLayer(
            key="control_paths", name="Paths to control manholes", data=data, count=n,
            style={"color": "#00838f", "weight": 3, "opacity": 0.8},
            fields=[(_label(c), c) for c in cols], popup_title="Path to control manhole",
            interactive=small,
            legend=[{"label": "downstream path, tap to control manhole", "color": "#00838f",
                     "shape": "line"}], legend_title="Paths"))
    taps = ctx.result("control_manholes")
    served: pd.Series | None = None
    if taps is not None:
        taps = _point_geoms(taps)
        parcels = ctx.layer("parcels")
        if parcels is not None and "address" not in taps.columns and "parcel_id" in taps.columns \
                and "address" in parcels.columns:
            addr = parcels.drop_duplicates("parcel_id").set_index("parcel_id")["address"]
            taps = taps.assign(address=taps["parcel_id"].map(addr))
        cols = _fields_for(taps, ["building_id", "parcel_id", "address", "user_id",
                                  "control_manhole_id", "main_id", "tap_distance_ft",
                                  "path_length_ft", "plant_id"])
        props = _auto_props(taps, cols)
        fields = [(_label(c), c) for c in cols]
        consts = {}
        if cm_section:
            consts["section"] = cm_section
            fields.append(("Ordinance section", "section"))
        data, n = ctx.geojson(taps, props, precision=6)
        layers.append(MapLayer(
            key="taps", name="Taps (connection points)", data=data, count=n,
            style={"radius": 3, "color": "#00838f", "weight": 1, "fillColor": "#80deea",
                   "fillOpacity": 0.9},
            fields=fields, constants=consts, popup_title="Tap of {building_id}",
            tooltip="{building_id} → {control_manhole_id}",
            search=["parcel_id", "address", "building_id", "user_id"],
            legend=[{"label": "tap (where the building sewer connects)", "color": "#80deea",
                     "shape": "point"}], legend_title="Taps"))
        if "control_manhole_id" in taps.columns:
            served = taps["control_manhole_id"].dropna().astype(str).value_counts()
    nodes = _nodes(ctx)
    if served is not None and nodes is not None and len(served):
        idcol = "node_id"
        cm = nodes[_col(nodes, idcol).astype(str).isin(served.index).to_numpy()]
        cm = _point_geoms(cm)
        counts = cm[idcol].astype(str).map(served).fillna(0).astype(int).to_numpy()
        props = {"node_id": _fmt_text(cm[idcol]), "taps": [int(c) for c in counts],
                 "_r": [round(float(min(9.0, 3.5 + 1.5 * math.log2(max(c, 1)))), 1)
                        for c in counts]}
        fields = [("Manhole", "node_id"), ("Taps sampled here", "taps")]
        consts = {}
        if cm_section:
            consts["section"] = cm_section
            fields.append(("Ordinance section", "section"))
            rule = ctx.section("control_manhole", "rule")
            if rule:
                consts["rule"] = rule
                fields.append(("Rule", "rule"))
        data, n = ctx.geojson(cm, props)
        layers.append(MapLayer(
            key="control_manholes", name="Control manholes", data=data,
            count=n, style={"radius": 6, "color": "#000000", "weight": 2,
                            "fillColor": "#ffd600", "fillOpacity": 0.95},
            radius_key="_r", fields=fields, constants=consts,
            popup_title="Control manhole {node_id}", tooltip="{node_id}: {taps} taps",
            search=["node_id"],
            legend=[{"label": "control manhole (size: taps served)", "color": "#ffd600",
                     "shape": "point"}], legend_title="Control manholes"))
    plan = ctx.results.get("sampling_plan")
    users = None
    if plan is not None and len(plan):
        users = plan
        if not (isinstance(plan, gpd.GeoDataFrame) and plan.geometry.name in plan.columns
                and (~plan.geometry.isna()).any()):
            users = _join_users_geometry(ctx, plan)
    elif ctx.layer("users") is not None:
        users = ctx.layer("users")
    if users is not None and len(users):
        users = _point_geoms(users if users.crs is not None else users.set_crs(ctx.crs))
        siu = _siu_mask(users)
        cols = _fields_for(users, SAMPLING_ORDER)
        siu_section = ctx.section("pretreatment", "siu_section")
        for mask, key, name, colour in ((siu, "siu", "Significant industrial users", "#b2182b"),
                                        (~siu, "users", "Industrial users", "#ef8a62")):
            if not mask.any():
                continue
            part = users[mask]
            props = _auto_props(part, cols)
            fields = [(_label(c) if c != "section" else "Ordinance section", c) for c in cols]
            consts = {}
            if key == "siu" and siu_section and "section" not in cols:
                consts["siu_section"] = f"{siu_section} (40 CFR 403.3(v))"
                fields.append(("SIU rule", "siu_section"))
            data, n = ctx.geojson(part, props)
            layers.append(MapLayer(
                key=key, name=name, data=data, count=n,
                style={"radius": 8 if key == "siu" else 6, "color": "#000000", "weight": 1.5,
                       "fillColor": colour, "fillOpacity": 0.95},
                fields=fields, constants=consts, popup_title="User {user_id}",
                tooltip="{user_id} · {name}", search=["user_id", "parcel_id", "name"],
                legend=[{"label": name.lower(), "color": colour, "shape": "point"}],
                legend_title="Industrial users"))
    return layers


def _join_users_geometry(ctx: _Ctx, plan: pd.DataFrame) -> gpd.GeoDataFrame | None:
    """Place sampling-plan rows without geometry at their user, building or parcel."""
    attrs = pd.DataFrame(plan.drop(columns=["geometry"], errors="ignore"))
    for role, key in (("users", "user_id"), ("buildings", "building_id"),
                      ("parcels", "parcel_id")):
        src = ctx.layer(role)
        if src is None or key not in attrs.columns or key not in src.columns:
            continue
        geo = src[[key, src.geometry.name]].drop_duplicates(key)
        geo = geo[~geo.geometry.isna()]
        merged = geo.merge(attrs, on=key, how="inner")
        if len(merged):
            return gpd.GeoDataFrame(merged, geometry=src.geometry.name, crs=src.crs)
    return None


CAPACITY_ORDER = ("main_id", "diameter_in", "slope", "capacity_gpd", "avg_flow_gpd",
                  "peak_flow_gpd", "utilization", "velocity_fps", "flags")


def utilization_class(df: pd.DataFrame, profile: Any = None) -> np.ndarray:
    """Class of each pipe for colouring: ok, threshold, deficient, surcharged,
    nocapacity, unknown.

    Uses the result's boolean columns (``over_threshold``, ``deficient``,
    ``surcharged``) where present, else ``utilization`` against the profile's
    thresholds (defaults 0.80 / 0.91 / 1.0, "over" meaning strictly greater).
    A pipe with capacity 0 or a flag naming an adverse/flat slope is
    ``nocapacity``; a pipe with no utilization is ``unknown``.
    """
    t = float(_pget(profile, "capacity", "utilization_threshold", default=0.80))
    d = float(_pget(profile, "capacity", "deficient", default=0.91))
    s = float(_pget(profile, "capacity", "surcharged", default=1.0))
    u = _num(_col(df, "utilization"))
    cap = _num(_col(df, "capacity_gpd"))
    flags = _col(df, "flags").astype(object).fillna("").astype(str).str.lower()
    over = _is_true(df["over_threshold"]) if "over_threshold" in df.columns else u > t
    defi = _is_true(df["deficient"]) if "deficient" in df.columns else u > d
    sur = _is_true(df["surcharged"]) if "surcharged" in df.columns else u > s
    out = np.full(len(df), "ok", dtype=object)
    out[over] = "threshold"
    out[defi] = "deficient"
    out[sur] = "surcharged"
    unknown = np.isnan(u) & ~(over | defi | sur)
    out[unknown] = "unknown"
    noc = (cap <= 0) | flags.str.contains("adverse|flat|zero", regex=True).to_numpy()
    out[noc & np.isnan(u)] = "nocapacity"
    out[(cap <= 0)] = "nocapacity"
    return out


def _capacity_layers(ctx: _Ctx) -> tuple[list[MapLayer], list[dict[str, str]]]:
    layers: list[MapLayer] = [p for p in (_parcels_light(ctx),) if p is not None]
    panels: list[dict[str, str]] = []
    pipes = ctx.results.get("pipes_capacity")
    if pipes is not None and len(pipes):
        pipes = _with_main_geometry(ctx, pipes)
    if pipes is not None and len(pipes):
        cls = utilization_class(pipes, ctx.profile)
        t = float(_pget(ctx.profile, "capacity", "utilization_threshold", default=0.80))
        dd = float(_pget(ctx.profile, "capacity", "deficient", default=0.91))
        ss = float(_pget(ctx.profile, "capacity", "surcharged", default=1.0))
        cols = [c for c in _fields_for(pipes, CAPACITY_ORDER,
                                       skip=["over_threshold", "deficient", "surcharged"])
                if c not in ("from_node", "to_node")]
        notc = np.zeros(len(pipes), dtype=bool)
        if "computed" in pipes.columns:  # pipes in a cycle: flows not computed
            notc = _is_false(pipes["computed"])
        if ctx.layer("parcels") is None and ctx.layer("users") is None:
            notc[:] = True  # no parcels and no users: the flows are unknown, not 0
        if notc.any():
            pipes = pipes.copy()
            for c in ("avg_flow_gpd", "peak_flow_gpd", "utilization", "industrial_flow_gpd"):
                if c in pipes.columns:
                    pipes[c] = pipes[c].astype(float).mask(notc)
        props = _auto_props(pipes, cols)
        props["_c"] = list(cls)
        d = _num(_col(pipes, "diameter_in"))
        props["_w"] = _width_from_diameter(d)
        props["_u"] = [1 if math.isnan(x) else None for x in d]
        labels = {k: lab.format(t=t, d=dd, s=ss) for k, _, lab in UTIL_CLASSES}
        props["class"] = [labels[c] for c in cls]
        source = _pget(ctx.profile, "capacity", "sources", "utilization_threshold") or \
            "design practice (Ten States Standards)"
        rule = {
            "ok": None,
            "threshold": f"utilization > {t:.0%} (profile threshold; {source})",
            "deficient": f"utilization > {dd:.0%}: flow depth over 0.75 D",
            "surcharged": f"utilization > {ss:.0%}: flow exceeds full-pipe capacity",
            "nocapacity": "zero or adverse slope: no Manning capacity (not floored)",
            "unknown": None,
        }
        props["rule"] = [rule[c] for c in cls]
        fields = [(_label(c), c) for c in cols]
        fields[1:1] = [("Class", "class")]
        fields.append(("Rule", "rule", True))
        data, n = ctx.geojson(pipes, props, precision=6, simplify_ft=0.5)
        present = set(cls)
        legend = [{"label": labels[k], "color": c, "shape": "line", "weight": 4}
                  for k, c, _ in UTIL_CLASSES if k in present or k in ("ok", "threshold")]
        legend.append({"label": "width: diameter; dashed: diameter unknown", "color": "#555555",
                       "shape": "line", "weight": 2, "dash": True})
        layers.append(MapLayer(
            key="pipes_capacity", name="Pipes by utilization", data=data, count=n,
            style={"weight": 3, "opacity": 0.95},
            classes={k: {"color": c} for k, c, _ in UTIL_CLASSES}, class_key="_c",
            width_key="_w", dash_key="_u", fields=fields, popup_title="Main {main_id}",
            tooltip="Main {main_id} · {utilization} · {class}", search=["main_id"],
            legend=legend, legend_title="Pipe utilization (peak / full-flow capacity)"))
    plants = _plants_layer(ctx)
    if plants is not None:
        layers.append(plants)
        panel = _plant_panel(ctx)
        if panel:
            panels.append({"position": "topright", "html": panel})
    return layers, panels


def _with_main_geometry(ctx: _Ctx, df: pd.DataFrame) -> gpd.GeoDataFrame | None:
    if isinstance(df, gpd.GeoDataFrame) and df.geometry.name in df.columns and \
            (~df.geometry.isna()).any():
        return df if df.crs is not None else df.set_crs(ctx.crs)
    src = ctx.result("graph_edges")
    if src is None:
        src = ctx.layer("mains")
    if src is None or "main_id" not in df.columns:
        return None
    geo = src[["main_id", src.geometry.name]].drop_duplicates("main_id")
    attrs = pd.DataFrame(df.drop(columns=["geometry"], errors="ignore"))
    merged = geo.merge(attrs, on="main_id", how="inner")
    return gpd.GeoDataFrame(merged, geometry=src.geometry.name, crs=src.crs)


def _plant_panel(ctx: _Ctx) -> str:
    plants = ctx.results.get("plants")
    if plants is None or len(plants) == 0:
        return ""
    section = ctx.section("capacity", "plant_section")
    thr = float(_pget(ctx.profile, "capacity", "plant_threshold", default=0.80))
    rows = []
    for _, r in plants.iterrows():
        ratio = r.get("ratio")
        over = r.get("over_threshold")
        state = "unknown" if _missing(over) or _missing(ratio) else (
            "over" if bool(over) else "below")
        cls = "gisnet-bad" if state == "over" else "gisnet-ok" if state == "below" else ""
        ratio_s = "unknown" if _missing(ratio) else f"{float(ratio) * 100:.1f} %"
        design = r.get("design_flow_mgd")
        avg = r.get("avg_flow_mgd")
        design_s = "unknown" if _missing(design) else f"{float(design):.3f}"
        avg_s = "unknown" if _missing(avg) else f"{float(avg):.3f}"
        name = r.get("name") if not _missing(r.get("name")) else r.get("plant_id", "")
        rows.append(
            f"<tr><td>{html.escape(str(name))}</td><td>{avg_s} / {design_s}</td>"
            f'<td class="{cls}">{ratio_s} ({state} {thr:.0%})</td>'
            f"<td>{html.escape(str(r.get('basis', '') or ''))}</td></tr>")
    head = ("<b>Treatment plants</b><table><tr><th>Plant</th><th>avg / design MGD</th>"
            "<th>ratio</th><th>basis</th></tr>")
    foot = f"<div>Rule: {html.escape(section)}</div>" if section else ""
    return head + "".join(rows) + "</table>" + foot


# ---------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------
def _legend(layers: Iterable[MapLayer]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for lyr in layers:
        if not lyr.legend:
            continue
        title = lyr.legend_title or lyr.name
        items = groups.setdefault(title, [])
        for item in lyr.legend:
            if item not in items:
                items.append(item)
    return [{"title": t, "items": i} for t, i in groups.items()]


def _town_center(ctx: _Ctx) -> list[float]:
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


def render_page(page: Page, *, town_name: str, profile_name: str,
                self_contained: bool = False) -> str:
    """The HTML text of one page (folium map + gisnet layers).

    Parameters
    ----------
    page
        Title, layers (GeoJSON in EPSG:4326), panels and links.
    town_name, profile_name
        Shown under the title.
    self_contained
        Inline Leaflet and gisnet's script/styles and load nothing from a CDN.
    """
    import folium
    from branca.element import Element, MacroElement

    class _Raw(Element):
        """Text put in the page as it is (branca would parse an Element as a template)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self._text = text

        def render(self, **kwargs: Any) -> str:
            return self._text

    m = folium.Map(location=page.center, zoom_start=15, tiles=None,
                   prefer_canvas=True, control_scale=True, max_zoom=20)
    m._id = "gisnet"
    root = m.get_root()
    root.title = f"{page.title} · {town_name}"
    if self_contained:
        m.default_js = []
        m.default_css = []
        root.header.add_child(_Raw(f"<style>{_mapassets.leaflet_css()}</style>"),
                              name="leaflet_css")
        root.header.add_child(_Raw(f"<script>{_mapassets.leaflet_js()}</script>"),
                              name="leaflet_js")
    else:  # folium's usual CDN links, with the Leaflet version gisnet vendors
        m.default_js = [(n, LEAFLET_CDN_JS if n == "leaflet" else u) for n, u in m.default_js]
        m.default_css = [(n, LEAFLET_CDN_CSS if n == "leaflet_css" else u)
                         for n, u in m.default_css]
    root.header.add_child(_Raw(f"<title>{html.escape(root.title)}</title>"), name="title")
    root.header.add_child(_Raw(f"<style>{_mapassets.gisnet_css()}</style>"), name="gisnet_css")
    root.header.add_child(_Raw(f"<script>{_mapassets.gisnet_js()}</script>"), name="gisnet_js")

    cfg = {
        "title": page.title,
        "subtitle": f"{town_name} · profile: {profile_name}",
        "note": OFFLINE_NOTE if self_contained else None,
        "tiles": list(TILES),
        "links": page.links,
        "legend": _legend(page.layers),
        "panels": page.panels,
        "layers": [lyr.spec() for lyr in page.layers],
        "searchPlaceholder": "Search parcel id or address",
    }
    cfg_text = json.dumps(cfg, separators=(",", ":")).replace("</", "<\\/")
    data_lines = "".join(
        "cfg.layers[{}].data={};\n".format(i, _mapassets.script_safe(lyr.data) or "{}")
        for i, lyr in enumerate(page.layers))

    class _Layers(MacroElement):
        """Adds the layer script after the map's own (raw text, never a template)."""

        def __init__(self) -> None:
            super().__init__()
            self._name = "GisnetLayers"
            self._id = "layers"

        def render(self, **kwargs: Any) -> None:
            js = ("(function(){var cfg=" + cfg_text + ";\n" + data_lines
                  + "gisnetMaps.init(" + m.get_name() + ", cfg);})();\n")
            self.get_root().script.add_child(_Raw(js), name=self.get_name())

    m.add_child(_Layers())
    return root.render()


def _write_atomic(path: Path, text: str) -> None:
    from .io import atomic_write_text

    atomic_write_text(path, text, "map page")


def _save(page: Page, town: Town, out: Path, self_contained: bool) -> Path:
    text = render_page(page, town_name=getattr(town, "name", "town"),
                       profile_name=_profile_name(town), self_contained=self_contained)
    _write_atomic(out, text)
    size = out.stat().st_size
    counts = ", ".join(f"{lyr.key}={lyr.count}" for lyr in page.layers)
    log.info("wrote %s (%.1f MB; %s)", out, size / 1e6, counts)
    if size > MAX_PAGE_BYTES:
        log.warning("%s is %.1f MB, over the %d MB budget", out, size / 1e6,
                    MAX_PAGE_BYTES // (1024 * 1024))
    return out


def build_pages(town: Town, results: Mapping[str, pd.DataFrame],
                names: Iterable[str] | None = None) -> dict[str, Page]:
    """The pages whose inputs exist, as :class:`Page` objects (not yet written).

    Parameters
    ----------
    town
        The loaded town (name, profile, CRS, canonical layers).
    results
        Result layers by name (``obligations``, ``pipes_capacity`` ...), in the
        town's working CRS (a frame without a CRS is taken to be in it).
    names
        Pages wanted (default: all of :data:`PAGES`).
    """
    wanted = list(PAGES if names is None else names)
    bad = [n for n in wanted if n not in PAGES]
    if bad:
        raise ConfigError(f"unknown map {bad[0]!r}; choose from {', '.join(PAGES)}")
    ctx = _Ctx(town, results)
    pages: dict[str, Page] = {}
    built: dict[str, tuple[list[MapLayer], list[dict[str, str]]]] = {}

    def get(name: str) -> tuple[list[MapLayer], list[dict[str, str]]]:
        if name not in built:
            if name == "network":
                built[name] = (_network_layers(ctx), [])
            elif name == "obligations":
                built[name] = (_obligation_layers(ctx) if ctx.table("obligations") is not None
                               else [], [])
            elif name == "sampling":
                has = any(ctx.table(k) is not None for k in
                          ("control_manholes", "control_paths", "sampling_plan"))
                built[name] = (_sampling_layers(ctx) if has else [], [])
            elif name == "capacity":
                has = ctx.table("pipes_capacity") is not None or ctx.table("plants") is not None
                built[name] = _capacity_layers(ctx) if has else ([], [])
        return built[name]

    titles = {"network": "Sewer network and data quality",
              "obligations": "Who must connect to the public sewer",
              "sampling": "Control manholes and sampling",
              "capacity": "Pipe and plant capacity",
              "index": "Sewer maps: all layers"}
    available = [n for n in PAGES[:-1] if get(n)[0]]
    center = _town_center(ctx)
    for name in wanted:
        if name == "index":
            continue
        layers, panels = get(name)
        if not layers:
            log.info("no inputs for %s.html; not written", name)
            continue
        links = [{"href": "index.html", "label": "all layers"}] + [
            {"href": f"{o}.html", "label": o} for o in available if o != name]
        pages[name] = Page(name, titles[name], layers, panels, links, center)
    if "index" in wanted and available:
        seen: dict[str, MapLayer] = {}
        panels: list[dict[str, str]] = []
        for name in available:
            lyrs, pnls = get(name)
            for lyr in lyrs:
                if lyr.key not in seen:
                    seen[lyr.key] = lyr
            panels.extend(p for p in pnls if p not in panels)
        if any(k.startswith("parcels_") for k in seen):
            seen.pop("parcels", None)  # the status layers already draw every parcel
        ordered = list(seen.values())
        primary = {"mains", "pipes_capacity", "parcels_required", "parcels_review",
                   "control_manholes", "siu", "plants"}
        if "pipes_capacity" in seen:
            primary.discard("mains")
        index_layers = []
        for lyr in ordered:
            copy = MapLayer(**{**lyr.__dict__})
            copy.show = lyr.key in primary or (not primary & set(seen) and lyr.key == "parcels")
            index_layers.append(copy)
        links = [{"href": f"{o}.html", "label": o} for o in available]
        pages["index"] = Page("index", titles["index"], index_layers, panels, links, center)
    return pages


def write_maps(
    town: Town,
    results: Mapping[str, pd.DataFrame],
    out_dir: str | os.PathLike[str],
    *,
    self_contained: bool = False,
    names: Iterable[str] | None = None,
) -> list[Path]:
    """Write the planners' web maps whose inputs exist.

    Parameters
    ----------
    town
        The loaded town: its name and profile go in the title; its canonical
        layers (parcels, mains, manholes, plants, users) are the base of the
        pages; its working CRS is that of results without a CRS.
    results
        Result layers by name as written to ``gisnet-results.gpkg``
        (``quality``, ``graph_nodes``, ``graph_edges``, ``obligations``,
        ``obligation_evidence``, ``connection_zone``, ``control_manholes``,
        ``control_paths``, ``sampling_plan``, ``pipes_capacity``, ``plants``).
        Any may be missing; a page is written only if its inputs exist
        (``network`` needs only the town's mains).
    out_dir
        Folder for the pages (created if needed).
    self_contained
        Inline every script and stylesheet so the pages render offline.
    names
        Pages to write, from :data:`PAGES` (default all).

    Returns
    -------
    list of Path
        The pages written, in :data:`PAGES` order. Each is written atomically.

    Raises
    ------
    ConfigError
        If ``names`` holds an unknown page.
    """
    out = Path(out_dir)
    pages = build_pages(town, results, names)
    return [_save(pages[n], town, out / f"{n}.html", self_contained) for n in PAGES if n in pages]


RESULT_LAYERS: tuple[str, ...] = (
    "quality", "graph_nodes", "graph_edges", "obligations", "obligation_evidence",
    "connection_zone", "frontage", "control_manholes", "control_paths", "sampling_plan",
    "pipes_capacity", "plants",
)


def read_results(out_dir: str | os.PathLike[str]) -> dict[str, pd.DataFrame]:
    """The result layers of ``out_dir/gisnet-results.gpkg`` that the maps use.

    Raises
    ------
    NotFoundError
        If the GeoPackage does not exist.
    """
    import pyogrio

    from .errors import NotFoundError

    path = Path(out_dir) / "gisnet-results.gpkg"
    if not path.is_file():
        raise NotFoundError("no results GeoPackage; run `gisnet run` (or an analysis "
                            "command) with this --out first", path=path)
    from .errors import LayerError

    out: dict[str, pd.DataFrame] = {}
    name = None
    try:
        with warnings.catch_warnings(record=True) as caught:  # GDAL's, to the log
            warnings.simplefilter("always")
            present = {str(row[0]) for row in pyogrio.list_layers(path)}
            for name in RESULT_LAYERS:
                if name in present:
                    out[name] = gpd.read_file(path, layer=name, engine="pyogrio")
        for w in caught:
            log.warning("%s: %s", path, str(w.message).strip())
    except pyogrio.errors.DataSourceError as exc:
        detail = str(exc).strip().splitlines()[0]
        raise LayerError(f"results GeoPackage cannot be read ({detail}); run the analysis "
                         "again with this --out", path=path, layer=name) from exc
    return out


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def whatif_map(
    town: Town,
    whatif_result: Any,
    out_path: str | os.PathLike[str],
    *,
    self_contained: bool = False,
) -> Path:
    """Write ``whatif.html``: the downstream path before and after a proposed flow.

    Parameters
    ----------
    town
        The loaded town.
    whatif_result
        The what-if answer (a mapping or an object with attributes):
        ``pipes`` (or ``path``): the downstream pipes with ``main_id``,
        ``utilization_before``, ``utilization_after`` (and optionally
        ``peak_flow_gpd_before/after``, ``capacity_gpd``, ``diameter_in``,
        ``crosses_threshold``), with geometry or joinable to the mains by
        ``main_id``; optionally ``point`` (connection point, working CRS),
        ``flow_gpd``, ``control_manhole_id``, ``plant`` (mapping with
        ``ratio_before``/``ratio_after``) and ``approvals`` (records with
        ``authority``, ``section``, ``text``).
    out_path
        The HTML file to write.
    self_contained
        Inline every script and stylesheet.
    """
    ctx = _Ctx(town, {})
    pipes = _get(whatif_result, "pipes")
    if pipes is None:
        pipes = _get(whatif_result, "path")
    layers: list[MapLayer] = []
    if pipes is not None and len(pipes):
        pipes = _with_main_geometry(ctx, pipes)
    if pipes is not None and len(pipes) and "diameter_in" not in pipes.columns:
        mains = ctx.layer("mains")
        if mains is not None and "main_id" in mains.columns:
            dia = mains.drop_duplicates("main_id").set_index("main_id")["diameter_in"]
            pipes = pipes.assign(diameter_in=pipes["main_id"].map(dia))
    if pipes is not None and len(pipes):
        cols = _fields_for(pipes, ["main_id", "diameter_in", "capacity_gpd",
                                   "peak_flow_gpd_before", "peak_flow_gpd_after",
                                   "utilization_before", "utilization_after",
                                   "crosses_threshold"])
        props = _auto_props(pipes, cols)
        d = _num(_col(pipes, "diameter_in"))
        props["_w"] = _width_from_diameter(d)
        props["_u"] = [1 if math.isnan(x) else None for x in d]
        fields = [(_label(c), c) for c in cols]
        for when in ("before", "after"):
            view = pd.DataFrame({"utilization": _col(pipes, f"utilization_{when}"),
                                 "capacity_gpd": _col(pipes, "capacity_gpd")})
            cls = utilization_class(view, ctx.profile)
            p = dict(props)
            p["_c"] = list(cls)
            data, n = ctx.geojson(pipes, p, precision=6, simplify_ft=0.5)
            t = float(_pget(ctx.profile, "capacity", "utilization_threshold", default=0.80))
            dd = float(_pget(ctx.profile, "capacity", "deficient", default=0.91))
            ss = float(_pget(ctx.profile, "capacity", "surcharged", default=1.0))
            layers.append(MapLayer(
                key=f"path_{when}", name=f"Downstream path {when}", data=data, count=n,
                style={"weight": 4, "opacity": 0.95},
                classes={k: {"color": c} for k, c, _ in UTIL_CLASSES}, class_key="_c",
                width_key="_w", dash_key="_u", fields=fields, show=(when == "after"),
                popup_title="Main {main_id}",
                tooltip="Main {main_id} · {utilization_before} → {utilization_after}",
                search=["main_id"],
                legend=[{"label": lab.format(t=t, d=dd, s=ss), "color": c, "shape": "line",
                         "weight": 4} for k, c, lab in UTIL_CLASSES[:4]],
                legend_title="Utilization (toggle before/after in the layer control)"))
    point = _get(whatif_result, "point")
    conn = _get(whatif_result, "connection") or {}
    if point is None and not _missing(_get(conn, "x")) and not _missing(_get(conn, "y")):
        point = shapely.Point(float(_get(conn, "x")), float(_get(conn, "y")))
    manhole = _get(whatif_result, "control_manhole_id") or _get(whatif_result, "control_manhole")
    if point is not None and not shapely.is_empty(point):
        pt = gpd.GeoDataFrame(geometry=[point], crs=ctx.crs)
        props = {"flow": _fmt_number(pd.Series([_get(whatif_result, "flow_gpd")]), 0, "gpd"),
                 "manhole": [None if _missing(manhole) else str(manhole)],
                 "parcel": [_get(conn, "parcel_id")], "main": [_get(conn, "main_id")]}
        data, n = ctx.geojson(_point_geoms(pt), props)
        layers.append(MapLayer(
            key="proposed", name="Proposed connection", data=data, count=n,
            style={"radius": 8, "color": "#000000", "weight": 2, "fillColor": "#e7298a",
                   "fillOpacity": 1},
            fields=[("Proposed flow", "flow"), ("Parcel", "parcel"), ("Main", "main"),
                    ("Control manhole", "manhole")],
            popup_title="Proposed connection", tooltip="Proposed: {flow}",
            legend=[{"label": "proposed connection", "color": "#e7298a", "shape": "point"}],
            legend_title="What-if"))
    plants = _plants_layer(ctx)
    if plants is not None:
        layers.append(plants)
    parcels = _parcels_light(ctx, show=True)
    if parcels is not None:
        layers.insert(0, parcels)
    panels = []
    panel = _whatif_panel(whatif_result)
    if panel:
        panels.append({"position": "topright", "html": panel})
    page = Page("whatif", "What-if: a proposed connection", layers, panels,
                [{"href": "index.html", "label": "all layers"}], _town_center(ctx))
    return _save(page, town, Path(out_path), self_contained)


def _whatif_panel(res: Any) -> str:
    parts = []
    flow = _get(res, "flow_gpd")
    if not _missing(flow):
        parts.append(f"<div>Proposed flow: <b>{float(flow):,.0f} gpd</b></div>")
    plants = _get(res, "plants")
    if plants is None and _get(res, "plant") is not None:
        plants = [_get(res, "plant")]
    recs = plants.to_dict("records") if isinstance(plants, pd.DataFrame) else list(plants or [])
    for plant in recs:
        rb, ra = _get(plant, "ratio_before"), _get(plant, "ratio_after")
        if not (_missing(rb) and _missing(ra)):
            fb = "unknown" if _missing(rb) else f"{float(rb) * 100:.1f} %"
            fa = "unknown" if _missing(ra) else f"{float(ra) * 100:.1f} %"
            name = _get(plant, "plant_id") or "plant"
            parts.append(f"<div>{html.escape(str(name))}: {fb} → <b>{fa}</b> of design flow</div>")
    crossings = _get(res, "crossings")
    if crossings:
        parts.append("<div>Pipes crossing the threshold: <b>"
                     + html.escape(", ".join(map(str, crossings))) + "</b></div>")
    approvals = _get(res, "approvals")
    if approvals is not None:
        recs = approvals.to_dict("records") if isinstance(approvals, pd.DataFrame) \
            else list(approvals)
        if recs:
            items = "".join(
                "<li>" + html.escape(str(_get(a, "authority") or _get(a, "id") or "")) + ": "
                + html.escape(str(_get(a, "text") or "")) + " <i>("
                + html.escape(str(_get(a, "section") or "section unknown")) + ")</i></li>"
                for a in recs)
            parts.append(f"<div><b>Approvals and reviews triggered</b><ul>{items}</ul></div>")
        else:
            parts.append("<div>No approval or review triggered.</div>")
    return "".join(parts)
