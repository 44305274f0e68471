"""The obligations page: parcels by connection status, the connection zone, evidence.

Parcels that need attention (must connect, needs review, connection can be ordered by
notice) are drawn strongly with
every field; the others lightly with a few. The zone and the parcels cite the
profile's ``connection.section``.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import pandas as pd

from ..labels import ATTENTION_STATUSES, STATUS_LABELS, column_label, status_label
from ..palettes import SIMPLE_COLOURS
from .common import STATUS_COLOURS, MapContext, MapLayer, auto_props, cited, fields_for
from .encoding import column, field_label, fmt_text
from .layers import mains_layer, parcels_layer


def _obligation_frame(ctx: MapContext) -> gpd.GeoDataFrame | None:
    """Obligations with parcel polygons (joined from the town when the result has none)
    and the parcels' addresses (joined by ``parcel_id`` when the result has none), so the
    page's search finds a parcel by its address as the network page does."""
    ob = ctx.results.get("obligations")
    if ob is None or len(ob) == 0:
        return None
    parcels = ctx.layer("parcels")
    has_geom = isinstance(ob, gpd.GeoDataFrame) and ob.geometry.name in ob.columns
    if has_geom:
        gt = set(ob.geom_type.dropna().unique())
        if gt and gt <= {"Polygon", "MultiPolygon"}:
            ob = ob if ob.crs is not None else ob.set_crs(ctx.crs)
            return _with_address(ob, parcels)
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


def _with_address(ob: gpd.GeoDataFrame, parcels: gpd.GeoDataFrame | None) -> gpd.GeoDataFrame:
    """``ob`` with the parcels' ``address`` by ``parcel_id`` where it has none of its own."""
    if parcels is None or "address" not in parcels.columns or "parcel_id" not in ob.columns \
            or "parcel_id" not in parcels.columns:
        return ob
    by_id = parcels[["parcel_id", "address"]].drop_duplicates("parcel_id") \
        .set_index("parcel_id")["address"]
    found = ob["parcel_id"].map(by_id)
    out = ob.copy(deep=False)  # the result frame shares its columns (only read here)
    if "address" in ob.columns:
        out["address"] = ob["address"].where(ob["address"].notna(), found)
    else:
        out.insert(1 if len(ob.columns) > 1 else 0, "address", found)
    return out


#: Statuses drawn strongly with every field (the others lightly with a few).
ATTENTION = ATTENTION_STATUSES
OBLIGATION_ORDER = ("parcel_id", "address", "status", "distance_ft", "main_id",
                    "within_distance", "abuts_sewered_street", "deadline_days",
                    "deadline_date", "notice_date", "septic_deadline", "measure", "building_id",
                    "reason", "section")


def obligation_layers(ctx: MapContext) -> list[MapLayer]:
    """Layers of ``obligations.html``: zone, mains, parcels by status, evidence lines."""
    layers: list[MapLayer] = []
    zone = ctx.result("connection_zone")
    if zone is not None:
        section = cited(ctx.profile.connection.section)
        dist = ctx.profile.connection.distance_ft
        cols = fields_for(zone, ["distance_ft", "measure", "mains_count", "area_acres"])
        props = auto_props(zone, cols)
        consts: dict[str, Any] = {}
        fields = [(field_label(c), c) for c in cols]
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
    attention: set[str | None] = set()  # parcel ids (None: a parcel without one)
    if ob is not None:
        status = column(ob, "status").astype(object).fillna("unknown").astype(str)
        cols = fields_for(ob, OBLIGATION_ORDER)
        for st in (*STATUS_LABELS, "unknown"):
            label = status_label(st)
            light = st not in ATTENTION
            sel = (status == st).to_numpy()
            if st == "unknown":
                sel = ~status.isin(list(STATUS_COLOURS)).to_numpy()
            if not sel.any():
                continue
            colour = STATUS_COLOURS.get(st, "#bdbdbd")
            if light:
                show_cols = [c for c in ("parcel_id", "address", "distance_ft", "main_id",
                                         "section") if c in ob.columns]
                style = {"color": colour, "weight": 0.6, "fillColor": colour,
                         "fillOpacity": 0.12, "opacity": 0.7}
                precision, simp = 5, 2.0
            # the rows of the status with the columns drawn (a county's connected
            # parcels with every column would be a copy of 0.3 GB)
            read = [c for c in dict.fromkeys([*show_cols, "parcel_id", ob.geometry.name])
                    if c in ob.columns] if light else list(ob.columns)
            part = ob.loc[sel, read]
            if not light:
                show_cols = [c for c in cols if c != "status"]
                attention.update(fmt_text(column(part, "parcel_id")))
                style = {"color": colour, "weight": 1.5, "fillColor": colour,
                         "fillOpacity": 0.55}
                precision, simp = 6, 1.0
            props = auto_props(part, show_cols)
            layers.append(MapLayer(
                key=f"parcels_{st}", name=f"Parcels: {label.lower()}", data="", count=0,
                style=style,
                fields=[(column_label("status"), "status")]
                + [(field_label(c), c) for c in show_cols],
                constants={"status": label},
                popup_title="Parcel {parcel_id}",
                tooltip="{parcel_id} · {status}" + (" · {distance_ft}"
                                                    if "distance_ft" in show_cols else ""),
                search=["parcel_id", "address"],
                legend=[{"label": label, "color": colour, "shape": "area",
                         "opacity": 0.35 if light else 0.6}],
                legend_title="Parcels by status",
            ))
            layers[-1].data, layers[-1].count = ctx.geojson(part, props, precision=precision,
                                                            simplify_ft=simp)
    ev = ctx.result("obligation_evidence")
    if ev is not None:
        if attention and "parcel_id" in ev.columns:
            ev = ev[column(ev, "parcel_id").astype(str).isin(attention).to_numpy()]
        if len(ev):
            cols = fields_for(ev, ["parcel_id", "main_id", "distance_ft", "measure"])
            props = auto_props(ev, cols)
            data, n = ctx.geojson(ev, props, precision=6)
            layers.append(MapLayer(
                key="evidence", name="Evidence: nearest points", data=data, count=n,
                style={"color": SIMPLE_COLOURS["obligation_evidence"], "weight": 2,
                       "dashArray": "4 3"},
                fields=[(field_label(c), c) for c in cols], popup_title="Evidence {parcel_id}",
                tooltip="{parcel_id} → {main_id}: {distance_ft}",
                legend=[{"label": "parcel to nearest main", "color": "#67000d", "shape": "line",
                         "weight": 2, "dash": True}], legend_title="Evidence"))
    od = ctx.result("overdue")
    if od is not None and len(od) and isinstance(od, gpd.GeoDataFrame):
        cols = fields_for(od, ["parcel_id", "address", "owner_name", "status", "notice_date",
                               "deadline", "overdue_days", "as_of", "letter_id"])
        data, n = ctx.geojson(od, auto_props(od, cols), precision=6, simplify_ft=1.0)
        colour = SIMPLE_COLOURS["overdue"]
        layers.append(MapLayer(
            key="overdue", name="Overdue: deadline passed, not connected", data=data,
            count=n, style={"color": colour, "weight": 3, "fillOpacity": 0.0},
            fields=[(field_label(c), c) for c in cols],
            popup_title="Overdue: parcel {parcel_id}",
            tooltip="{parcel_id} · overdue {overdue_days} days", search=["parcel_id"],
            legend=[{"label": "deadline passed, not connected", "color": colour,
                     "shape": "area", "opacity": 0.1}], legend_title="Overdue"))
    mains = mains_layer(ctx)
    if mains is not None:
        layers.insert(1 if zone is not None else 0, mains)
    if ob is None:
        p = parcels_layer(ctx)
        if p is not None:
            layers.insert(0, p)
    return layers
