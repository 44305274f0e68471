"""The what-if page: the downstream path before and after a proposed connection."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
import shapely

from .capacity import class_labels, classify_pipes
from .common import (
    UTIL_CLASSES,
    MapContext,
    MapLayer,
    Page,
    auto_props,
    dashed_if_unknown,
    fields_for,
    point_geoms,
    town_center,
    width_from_diameter,
)
from .encoding import column, field_label, fmt_number, is_missing, numbers
from .layers import parcels_layer, plants_layer, with_main_geometry
from .render import save_page

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town


def _get(obj: Any, key: str) -> Any:
    """A field of the what-if answer (a mapping or an object with attributes), or None."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def whatif_map(
    town: Town,
    whatif_result: Any,
    out_path: str | os.PathLike[str],
    *,
    self_contained: bool = True,
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
        Inline every script and stylesheet (the default); False loads Leaflet
        from a CDN.
    """
    ctx = MapContext(town, {})
    pipes = _get(whatif_result, "pipes")
    if pipes is None:
        pipes = _get(whatif_result, "path")
    layers: list[MapLayer] = []
    if pipes is not None and len(pipes):
        pipes = with_main_geometry(ctx, pipes)
    if pipes is not None and len(pipes) and "diameter_in" not in pipes.columns:
        mains = ctx.layer("mains")
        if mains is not None and "main_id" in mains.columns:
            dia = mains.drop_duplicates("main_id").set_index("main_id")["diameter_in"]
            pipes = pipes.assign(diameter_in=pipes["main_id"].map(dia))
    if pipes is not None and len(pipes):
        cols = fields_for(pipes, ["main_id", "diameter_in", "capacity_gpd",
                                  "peak_flow_gpd_before", "peak_flow_gpd_after",
                                  "utilization_before", "utilization_after",
                                  "crosses_threshold"])
        props = auto_props(pipes, cols)
        d = numbers(column(pipes, "diameter_in"))
        props["_w"] = width_from_diameter(d)
        props["_u"] = dashed_if_unknown(d)
        fields = [(field_label(c), c) for c in cols]
        labels = class_labels(ctx.profile)
        for when in ("before", "after"):
            view = pd.DataFrame({"utilization": column(pipes, f"utilization_{when}"),
                                 "capacity_gpd": column(pipes, "capacity_gpd")})
            cls = classify_pipes(view, ctx.profile)
            p = dict(props)
            p["_c"] = list(cls)
            data, n = ctx.geojson(pipes, p, precision=6, simplify_ft=0.5)
            layers.append(MapLayer(
                key=f"path_{when}", name=f"Downstream path {when}", data=data, count=n,
                style={"weight": 4, "opacity": 0.95},
                classes={k: {"color": c} for k, c, _ in UTIL_CLASSES}, class_key="_c",
                width_key="_w", dash_key="_u", fields=fields, show=(when == "after"),
                popup_title="Main {main_id}",
                tooltip="Main {main_id} · {utilization_before} → {utilization_after}",
                search=["main_id"],
                legend=[{"label": labels[k], "color": c, "shape": "line", "weight": 4}
                        for k, c, _ in UTIL_CLASSES[:4]],
                legend_title="Utilization (toggle before/after in the layer control)"))
    point = _get(whatif_result, "point")
    conn = _get(whatif_result, "connection") or {}
    if point is None and not is_missing(_get(conn, "x")) and not is_missing(_get(conn, "y")):
        point = shapely.Point(float(_get(conn, "x")), float(_get(conn, "y")))
    manhole = _get(whatif_result, "control_manhole_id") or _get(whatif_result, "control_manhole")
    if point is not None and not shapely.is_empty(point):
        pt = gpd.GeoDataFrame(geometry=[point], crs=ctx.crs)
        props = {"flow": fmt_number(pd.Series([_get(whatif_result, "flow_gpd")]), 0, "gpd"),
                 "manhole": [None if is_missing(manhole) else str(manhole)],
                 "parcel": [_get(conn, "parcel_id")], "main": [_get(conn, "main_id")]}
        data, n = ctx.geojson(point_geoms(pt), props)
        layers.append(MapLayer(
            key="proposed", name="Proposed connection", data=data, count=n,
            style={"radius": 8, "color": "#000000", "weight": 2, "fillColor": "#e7298a",
                   "fillOpacity": 1},
            fields=[("Proposed flow", "flow"), ("Parcel", "parcel"), ("Main", "main"),
                    ("Control manhole", "manhole")],
            popup_title="Proposed connection", tooltip="Proposed: {flow}",
            legend=[{"label": "proposed connection", "color": "#e7298a", "shape": "point"}],
            legend_title="What-if"))
    plants = plants_layer(ctx)
    if plants is not None:
        layers.append(plants)
    parcels = parcels_layer(ctx, show=True)
    if parcels is not None:
        layers.insert(0, parcels)
    panels = []
    panel = _whatif_panel(whatif_result)
    if panel:
        panels.append({"position": "topright", "html": panel})
    page = Page("whatif", "What-if: a proposed connection", layers, panels,
                [{"href": "index.html", "label": "all layers"}], town_center(ctx))
    return save_page(page, town, Path(out_path), self_contained)


def _whatif_panel(res: Any) -> str:
    """HTML of the what-if panel: flow, plant ratios, crossings, approvals triggered."""
    parts = []
    flow = _get(res, "flow_gpd")
    if not is_missing(flow):
        parts.append(f"<div>Proposed flow: <b>{float(flow):,.0f} gpd</b></div>")
    plants = _get(res, "plants")
    if plants is None and _get(res, "plant") is not None:
        plants = [_get(res, "plant")]
    recs = plants.to_dict("records") if isinstance(plants, pd.DataFrame) else list(plants or [])
    for plant in recs:
        rb, ra = _get(plant, "ratio_before"), _get(plant, "ratio_after")
        if not (is_missing(rb) and is_missing(ra)):
            fb = "unknown" if is_missing(rb) else f"{float(rb) * 100:.1f} %"
            fa = "unknown" if is_missing(ra) else f"{float(ra) * 100:.1f} %"
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
