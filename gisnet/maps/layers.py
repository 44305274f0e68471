"""Layers several pages share: parcels, mains, manholes, plants.

Each is built once per :class:`~gisnet.maps.common.MapContext` (the index page
reuses the same objects). Which mains are drawn as excluded (private or not in
service) is decided by :func:`gisnet.rules.is_public` and
:func:`gisnet.rules.is_active`, as every analysis decides it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from .. import rules
from ..labels import value_label
from .common import (
    KIND_COLOURS,
    UTIL_COLOURS,
    MapContext,
    MapLayer,
    auto_props,
    cited,
    dashed_if_unknown,
    fields_for,
    point_geoms,
    width_from_diameter,
)
from .encoding import (
    Prop,
    column,
    field_label,
    fmt_bool,
    fmt_number,
    fmt_text,
    is_true,
    numbers,
    per_value,
)


def parcels_layer(ctx: MapContext, *, key: str = "parcels", show: bool = True) -> MapLayer | None:
    """All parcels, drawn lightly, carrying only id and address (for search)."""

    def build() -> MapLayer | None:
        parcels = ctx.layer("parcels")
        if parcels is None:
            return None
        props = {"parcel_id": fmt_text(column(parcels, "parcel_id")),
                 "address": fmt_text(column(parcels, "address"))}
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


def mains_layer(ctx: MapContext) -> MapLayer | None:
    """Mains by kind (colour) and diameter (width); excluded mains grey."""

    def build() -> MapLayer | None:
        mains = ctx.result("graph_edges")
        if mains is None:
            mains = ctx.layer("mains")
        if mains is None:
            return None
        raw = column(mains, "kind").astype(object)
        kind_a = np.where(raw.isin(list(KIND_COLOURS)).to_numpy(dtype=bool),
                          raw.to_numpy(dtype=object), "unknown")
        excluded = ~(rules.is_public(mains) & rules.is_active(mains))
        cls = np.where(np.asarray(excluded, dtype=bool), "excluded", kind_a).tolist()
        kind = kind_a.tolist()
        d = numbers(column(mains, "diameter_in"))
        length = column(mains, "length_ft")
        if length.isna().all():
            length = pd.Series(mains.geometry.length.to_numpy() * ctx.ftpu, index=mains.index)
        props = {
            "main_id": fmt_text(column(mains, "main_id")),
            "kind": kind,
            "_c": cls,
            "_w": width_from_diameter(d),
            "_u": dashed_if_unknown(d),
            "diameter": fmt_number(column(mains, "diameter_in"), 0, "in"),
            "material": fmt_text(column(mains, "material")),
            "length": fmt_number(length, 1, "ft"),
            "slope": fmt_number(column(mains, "slope"), 4, "ft/ft"),
            "from": fmt_text(column(mains, "from_node")),
            "to": fmt_text(column(mains, "to_node")),
            "direction": per_value(column(mains, "direction_source"),
                                   lambda v: value_label("direction_source", v)),
            "owner": fmt_text(column(mains, "owner")),
            "status": fmt_text(column(mains, "status")),
            "public": fmt_bool(column(mains, "public")),
            "active": fmt_bool(column(mains, "active")),
        }
        data, n = ctx.geojson(mains, props, precision=6, simplify_ft=0.5)
        classes: dict[str, dict[str, Any]] = {k: {"color": c} for k, c in KIND_COLOURS.items()}
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


def node_frame(ctx: MapContext) -> gpd.GeoDataFrame | None:
    """The graph's nodes when the results have them, else the town's manholes."""
    nodes = ctx.result("graph_nodes")
    if nodes is not None:
        return nodes
    mh = ctx.layer("manholes")
    return mh


def manholes_layer(ctx: MapContext) -> MapLayer | None:
    """Manholes (white) and other structures (grey); plants and junctions left out."""

    def build() -> MapLayer | None:
        nodes = node_frame(ctx)
        if nodes is None:
            return None
        kind = column(nodes, "kind").astype(object)
        keep = ~kind.isin(["plant", "junction"]).to_numpy()
        nodes = point_geoms(nodes[keep])
        kind = column(nodes, "kind").astype(object)
        cls = ["manhole" if k == "manhole" else "other" for k in kind]
        props: dict[str, Sequence[Any] | Prop] = {
            "node_id": fmt_text(column(nodes, "node_id")),
            "kind": fmt_text(kind),
            "_c": cls,
            "rim": fmt_number(column(nodes, "rim_ft"), 2, "ft"),
            "invert": fmt_number(column(nodes, "invert_ft"), 2, "ft"),
            "public": fmt_bool(column(nodes, "public")),
            "active": fmt_bool(column(nodes, "active")),
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


def _plants_frame(ctx: MapContext) -> gpd.GeoDataFrame | None:
    """Plants: the capacity ``plants`` result joined to the town's plant layer."""
    res = ctx.results.get("plants")
    town_plants = ctx.layer("plants")
    if res is not None and len(res):
        if isinstance(res, gpd.GeoDataFrame) and res.geometry.name in res.columns and \
                (~res.geometry.isna()).any():
            return point_geoms(res if res.crs is not None else res.set_crs(ctx.crs))
        if town_plants is not None and "plant_id" in res.columns:
            geo = town_plants[["plant_id", town_plants.geometry.name]]
            attrs = pd.DataFrame(res.drop(columns=[c for c in ("geometry",) if c in res.columns]))
            merged = geo.merge(attrs, on="plant_id", how="right", suffixes=("_town", ""))
            return point_geoms(gpd.GeoDataFrame(merged, geometry=geo.geometry.name,
                                                crs=town_plants.crs))
    if town_plants is not None:
        return point_geoms(town_plants)
    return None


def plants_layer(ctx: MapContext) -> MapLayer | None:
    """Treatment plants, red when the capacity result says one is over its threshold."""

    def build() -> MapLayer | None:
        plants = _plants_frame(ctx)
        if plants is None:
            return None
        cols = fields_for(plants, ["plant_id", "name", "design_flow_mgd", "avg_flow_mgd",
                                   "ratio", "over_threshold", "basis", "window", "gaps",
                                   "missing_months"])
        props = auto_props(plants, cols)
        over = is_true(column(plants, "over_threshold"))
        props["_c"] = ["over" if o else "ok" for o in over]
        section = cited(ctx.profile.capacity.plant_section)
        consts = {"section": section} if section else {}
        fields = [(field_label(c), c) for c in cols]
        if "over_threshold" in plants.columns and section:
            fields.append(("Ordinance section", "section"))
        data, n = ctx.geojson(plants, props, precision=6)
        return MapLayer(
            key="plants", name="Treatment plants", data=data, count=n,
            style={"radius": 10, "color": "#000000", "weight": 2, "fillColor": "#6a51a3",
                   "fillOpacity": 0.9},
            classes={"over": {"fillColor": UTIL_COLOURS["deficient"]}}, class_key="_c",
            fields=fields, constants=consts, popup_title="Plant {plant_id}",
            tooltip="Plant {plant_id}", search=["plant_id", "name"],
            legend=[{"label": "treatment plant", "color": "#6a51a3", "shape": "point"}]
            + ([{"label": "plant over its threshold", "color": UTIL_COLOURS["deficient"],
                 "shape": "point"}]
               if over.any() else []),
            legend_title="Plants",
        )

    return ctx.cached("plants", build)


def with_main_geometry(ctx: MapContext, df: pd.DataFrame) -> gpd.GeoDataFrame | None:
    """Pipe rows with their geometry (joined from the mains by ``main_id`` if they have none)."""
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
