"""The network page: mains, manholes, outlets, plants and the data-quality findings."""

from __future__ import annotations

import numpy as np
import shapely

from ..labels import severity_label, value_label
from .common import QUALITY_SHOWN_MAX, SEVERITY_COLOURS, MapContext, MapLayer, point_geoms
from .encoding import column, field_label, fmt_text, is_missing, is_true
from .layers import mains_layer, manholes_layer, parcels_layer, plants_layer


def network_layers(ctx: MapContext) -> list[MapLayer]:
    """Layers of ``network.html``: parcels, mains, manholes, outlets, plants, findings."""
    layers: list[MapLayer | None] = [parcels_layer(ctx), mains_layer(ctx), manholes_layer(ctx)]
    nodes = ctx.result("graph_nodes")
    if nodes is not None and "outlet" in nodes.columns:
        out = point_geoms(nodes[is_true(nodes["outlet"])])
        if len(out):
            props = {"node_id": fmt_text(column(out, "node_id")),
                     "kind": fmt_text(column(out, "kind"))}
            data, n = ctx.geojson(out, props)
            layers.append(MapLayer(
                key="outlets", name="Outlets", data=data, count=n,
                style={"radius": 7, "color": "#000000", "weight": 2, "fillColor": "#ff7f00",
                       "fillOpacity": 0.9},
                fields=[("Node", "node_id"), ("Kind", "kind")], popup_title="Outlet {node_id}",
                tooltip="Outlet {node_id}",
                legend=[{"label": "outlet (plant or outfall)", "color": "#ff7f00",
                         "shape": "point"}], legend_title="Outlets"))
    layers.append(plants_layer(ctx))
    layers.append(_quality_layer(ctx))
    return [x for x in layers if x is not None]


def _quality_layer(ctx: MapContext) -> MapLayer | None:
    """The findings with a location (the result's ``quality`` layer, else the town's report)."""
    q = ctx.result("quality")
    if q is None:
        report = ctx.town.report
        if not len(report):
            return None
        q = report.to_gdf(ctx.crs)
    geoms = np.asarray(q.geometry.array, dtype=object)
    located = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    sev = column(q, "severity").astype(object)
    props = {
        "finding_id": fmt_text(column(q, "finding_id")),
        "kind": [None if is_missing(v) else value_label("kind", v) for v in column(q, "kind")],
        "severity": [None if is_missing(v) else severity_label(v) for v in sev],
        "message": fmt_text(column(q, "message")),
        "layer": fmt_text(column(q, "layer")),
        "feature_id": fmt_text(column(q, "feature_id")),
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
        fields=[(field_label(c), c) for c in ("finding_id", "kind", "severity", "message",
                                                "layer", "feature_id")],
        popup_title="{kind}", tooltip="{severity}: {kind}", search=["feature_id", "finding_id"],
        show=n <= QUALITY_SHOWN_MAX,
        legend=[{"label": severity_label(s), "color": c, "shape": "point"}
                for s, c in SEVERITY_COLOURS.items()],
        legend_title=f"Data-quality findings ({n} on the map"
        + (f", {unlocated} without a location)" if unlocated else ")"),
    )
