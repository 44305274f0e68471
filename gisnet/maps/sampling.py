"""The sampling page: taps, paths to control manholes, control manholes, industrial users.

Taps are coloured by ``source`` (how the connection was found: a lateral on a
public main, through private mains, projected, an owner-installed control
manhole); buildings whose connection is ``unresolved`` have no tap and are
drawn at the building, with the reason.
"""

from __future__ import annotations

import math
from typing import Any, cast

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..io.ids import first_positions, in_ids
from ..labels import SOURCE_LABELS
from .common import MapContext, MapLayer, auto_props, cited, fields_for, point_geoms
from .encoding import TextCodes, column, field_label, fmt_text, is_true
from .layers import mains_layer, node_frame, parcels_layer

#: Tap colour by ``control_manholes.source`` (``lateral`` is the layer's default style).
#: The legend's words are the one vocabulary's (:data:`gisnet.labels.SOURCE_LABELS`).
SOURCE_STYLE = {k: (c, SOURCE_LABELS[k]) for k, c in (
    ("lateral", "#80deea"), ("private_main", "#ba68c8"), ("projected", "#e0f7fa"),
    ("owner_manhole", "#ffb300"))}
#: Colour of buildings whose connection is unresolved.
UNRESOLVED_COLOUR = "#d32f2f"

SAMPLING_ORDER = ("user_id", "name", "parcel_id", "building_id", "process_flow_gpd",
                  "categorical", "siu", "siu_reason", "review", "review_reason",
                  "local_review", "reason", "plant_share_pct", "control_manhole_id",
                  "plant_id", "path_length_ft", "section")


def _siu_mask(df: pd.DataFrame) -> np.ndarray:
    """Significant industrial users, from the first SIU column the frame has."""
    for c in ("siu", "is_siu", "significant", "significant_industrial_user"):
        if c in df.columns:
            return is_true(df[c])
    return np.zeros(len(df), dtype=bool)


def dissolved_paths(geoms: np.ndarray) -> shapely.Geometry:
    """One drawing of many paths that run along the same pipes: each segment once.

    The paths follow the graph's edges vertex for vertex, so a stretch of pipe
    shared by many paths is the same segment (the same two coordinates) in each.
    The segments are taken apart, repeats dropped (and the piece of a pipe
    segment from a tap to its end, which the whole segment covers; a sort:
    ``n log n`` in the segments, where a union of every path is an overlay of
    all of them), and
    the rest merged into lines (:func:`shapely.line_merge`). The drawing covers
    the same lines as the union of the paths.
    """
    geoms = geoms[~(shapely.is_missing(geoms) | shapely.is_empty(geoms))]
    if not len(geoms):
        return shapely.MultiLineString()
    xy, own = shapely.get_coordinates(geoms, return_index=True)
    same = own[1:] == own[:-1]
    seg = np.hstack([xy[:-1][same], xy[1:][same]])
    seg = seg[(seg[:, 0] != seg[:, 2]) | (seg[:, 1] != seg[:, 3])]
    # a path starts at its tap, part way along a pipe segment: of the segments that
    # end at the same vertex in the same direction, the longest covers the others
    dx, dy = seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]
    key = pd.DataFrame({"x": seg[:, 2], "y": seg[:, 3],
                        "a": np.round(np.arctan2(dy, dx), 6), "len": np.hypot(dx, dy)})
    seg = seg[key.sort_values("len", kind="stable").drop_duplicates(
        ["x", "y", "a"], keep="last").index.to_numpy()]
    flip = (seg[:, 0] > seg[:, 2]) | ((seg[:, 0] == seg[:, 2]) & (seg[:, 1] > seg[:, 3]))
    seg[flip] = seg[flip][:, [2, 3, 0, 1]]  # one direction per segment
    seg = np.unique(seg, axis=0)
    # (casts: shapely's stubs cannot tell an array of coordinates or lines from one)
    lines = cast(np.ndarray, shapely.linestrings(seg.reshape(-1, 2),
                                                 indices=np.repeat(np.arange(len(seg)), 2)))
    return shapely.line_merge(cast(shapely.MultiLineString, shapely.multilinestrings(lines)))


def sampling_layers(ctx: MapContext) -> list[MapLayer]:
    """Layers of ``sampling.html``: mains, paths, taps, control manholes, users, SIUs."""
    layers: list[MapLayer] = [p for p in (parcels_layer(ctx),) if p is not None]
    mains = mains_layer(ctx)
    if mains is not None:
        layers.append(mains)
    cm_section = cited(ctx.profile.control_manhole.section)
    paths = ctx.result("control_paths")
    if paths is not None:
        cols = fields_for(paths, ["building_id", "user_id", "control_manhole_id",
                                  "path_length_ft"])
        small = len(paths) <= 5000 or ctx.tiler is not None  # tiled pages: every path
        if small:
            props: dict[str, Any] = auto_props(paths, cols)
            data, n = ctx.geojson(paths, props, precision=6, simplify_ft=0.5)
        else:  # city scale: one dissolved drawing of every path
            merged = dissolved_paths(np.asarray(paths.geometry.array))
            one = gpd.GeoDataFrame(geometry=[merged], crs=paths.crs)
            data, _ = ctx.geojson(one, {}, precision=6, simplify_ft=0.5)
            n, cols = 1, []
        layers.append(MapLayer(
            key="control_paths", name="Paths to control manholes", data=data, count=n,
            style={"color": "#00838f", "weight": 3, "opacity": 0.8},
            fields=[(field_label(c), c) for c in cols], popup_title="Path to control manhole",
            interactive=small,
            legend=[{"label": "downstream path, tap to control manhole", "color": "#00838f",
                     "shape": "line"}], legend_title="Paths"))
    cm_rows = ctx.result("control_manholes")
    served: pd.Series | None = None
    owner_ids: set[str] = set()
    if cm_rows is not None:
        taps = point_geoms(cm_rows)
        parcels = ctx.layer("parcels")
        if parcels is not None and "address" not in taps.columns and "parcel_id" in taps.columns \
                and "address" in parcels.columns:
            # each tap's parcel's address (the first parcel of its id), matched as codes
            at = first_positions(parcels["parcel_id"], taps["parcel_id"])
            taps = taps.assign(address=pd.Series(parcels["address"].array.take(
                at, allow_fill=True), index=taps.index))
        per_row_section = "section" in taps.columns and \
            taps["section"].dropna().astype(str).nunique() > 1
        cols = fields_for(taps, ["building_id", "parcel_id", "address", "user_id",
                                 "control_manhole_id", "source", "main_id", "tap_distance_ft",
                                 "path_length_ft", "entry_node_id", "private_length_ft",
                                 "plant_id", "reason"]
                          + (["section"] if per_row_section else []))
        props = auto_props(taps, cols)
        kinds = _tap_kinds(column(taps, "source"))
        props["_s"] = TextCodes.of_text(kinds) or kinds.tolist()
        fields: list[tuple[Any, ...]] = [
            (field_label(c), c, c in ("reason", "entry_node_id", "private_length_ft"))
            for c in cols]
        consts = {}
        if cm_section and not per_row_section:
            consts["section"] = cm_section
            fields.append(("Ordinance section", "section"))
        present = set(kinds.unique())
        k_cite = cited(ctx.profile.control_manhole.owner_manhole_section)
        data, n = ctx.geojson(taps, props, precision=6)
        layers.append(MapLayer(
            key="taps", name="Taps (connection points)", data=data, count=n,
            style={"radius": 3, "color": "#00838f", "weight": 1, "fillColor": "#80deea",
                   "fillOpacity": 0.9},
            classes={k: {"fillColor": c} for k, (c, _) in SOURCE_STYLE.items()
                     if k != "lateral"}, class_key="_s",
            fields=fields, constants=consts, popup_title="Tap of {building_id}",
            tooltip="{building_id} → {control_manhole_id}",
            search=["parcel_id", "address", "building_id", "user_id"],
            legend=[{"label": label + (f" ({k_cite})" if k == "owner_manhole" and k_cite
                                       else ""), "color": c, "shape": "point"}
                    for k, (c, label) in SOURCE_STYLE.items() if k in present]
            or [{"label": "tap (where the building sewer connects)", "color": "#80deea",
                 "shape": "point"}], legend_title="Taps"))
        if "control_manhole_id" in taps.columns:
            served = taps["control_manhole_id"].dropna().astype(str).value_counts()
            if "source" in taps.columns:
                own = taps["source"].astype(object) == "owner_manhole"
                owner_ids = set(taps.loc[own, "control_manhole_id"].dropna().astype(str))
        del taps, props, kinds  # (a county's million taps: not held while the rest is drawn)
        lost = _unresolved_layer(ctx, cm_rows)
        if lost is not None:
            layers.append(lost)
    nodes = node_frame(ctx)
    if served is not None and nodes is not None and len(served):
        idcol = "node_id"
        cm = nodes[in_ids(column(nodes, idcol).astype(str), pd.Series(served.index))]
        cm = _with_owner_manholes(ctx, cm, owner_ids, idcol)
        cm = point_geoms(cm)
        counts = cm[idcol].astype(str).map(served).fillna(0).astype(int).to_numpy()
        props = {"node_id": fmt_text(cm[idcol]), "taps": [int(c) for c in counts],
                 "_r": [round(float(min(9.0, 3.5 + 1.5 * math.log2(max(c, 1)))), 1)
                        for c in counts]}
        fields = [("Manhole", "node_id"), ("Taps sampled here", "taps")]
        consts = {}
        cmp = ctx.profile.control_manhole
        rule = cited(cmp.rule)
        if owner_ids:  # two rules on the page: each manhole cites its own
            is_own = cm[idcol].astype(str).isin(owner_ids).to_numpy()
            k_sec = cited(cmp.owner_manhole_section) or cm_section
            k_rule = cited(cmp.owner_manhole_rule) or rule
            props["section"] = [k_sec if o else cm_section for o in is_own]
            props["rule"] = [k_rule if o else rule for o in is_own]
            fields += [("Ordinance section", "section"), ("Rule", "rule")]
        elif cm_section:
            consts["section"] = cm_section
            fields.append(("Ordinance section", "section"))
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
        users = point_geoms(users if users.crs is not None else users.set_crs(ctx.crs))
        siu = _siu_mask(users)
        cols = fields_for(users, SAMPLING_ORDER)
        siu_section = cited(ctx.profile.pretreatment.siu_section)
        for mask, key, name, colour in ((siu, "siu", "Significant industrial users", "#b2182b"),
                                        (~siu, "users", "Industrial users", "#ef8a62")):
            if not mask.any():
                continue
            part = users[mask]
            props = auto_props(part, cols)
            fields = [(field_label(c) if c != "section" else "Ordinance section", c) for c in cols]
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


def _tap_kinds(source: pd.Series) -> pd.Series:
    """Each tap's ``source`` as text, ``lateral`` where it has none that is text."""
    if isinstance(source.dtype, pd.StringDtype):  # text or missing: no string made per row
        return source.fillna("lateral")
    return pd.Series([s if isinstance(s, str) else "lateral" for s in source.tolist()],
                     index=source.index, dtype=object)


def _with_owner_manholes(ctx: MapContext, cm: gpd.GeoDataFrame, owner_ids: set[str],
                         idcol: str) -> gpd.GeoDataFrame:
    """``cm`` plus the owner-installed control manholes that are no graph node
    (a manhole in a building sewer meets no main), from the manholes layer."""
    missing = owner_ids - set(column(cm, idcol).astype(str))
    mh = ctx.layer("manholes")
    if not missing or mh is None or idcol not in mh.columns:
        return cm
    extra = mh[mh[idcol].astype(str).isin(missing).to_numpy()][[idcol, mh.geometry.name]]
    extra = extra.drop_duplicates(idcol)
    if extra.crs != cm.crs and cm.crs is not None:
        extra = extra.to_crs(cm.crs)
    extra = extra.rename_geometry(cm.geometry.name) if extra.geometry.name != cm.geometry.name \
        else extra
    return gpd.GeoDataFrame(pd.concat([cm, extra], ignore_index=True),
                            geometry=cm.geometry.name, crs=cm.crs)


def _unresolved_layer(ctx: MapContext, rows: gpd.GeoDataFrame) -> MapLayer | None:
    """Buildings (or parcels) whose connection is ``unresolved``, at the building,
    with the reason: the data a town must fix (a lateral drawn to a storm main,
    or ending short of every main)."""
    if "source" not in rows.columns:
        return None
    lost = pd.DataFrame(rows[(rows["source"].astype(object) == "unresolved").to_numpy()])
    lost = lost.reset_index(drop=True)
    if not len(lost):
        return None
    geoms = np.full(len(lost), None, dtype=object)
    for role, key in (("buildings", "building_id"), ("parcels", "parcel_id")):
        src = ctx.layer(role)
        if src is None or key not in src.columns or key not in lost.columns:
            continue
        where = point_geoms(src.drop_duplicates(key)).set_index(key).geometry
        got = lost[key].map(where).to_numpy(dtype=object)
        take = pd.isna(geoms) & pd.notna(got)
        geoms[take] = got[take]
    crs = rows.crs if rows.crs is not None else ctx.crs
    gdf = gpd.GeoDataFrame(lost.drop(columns=[c for c in lost.columns
                                              if c == getattr(rows.geometry, "name", None)]),
                           geometry=gpd.GeoSeries(geoms, crs=crs), crs=crs)
    gdf = gdf[gdf.geometry.notna().to_numpy()]
    if not len(gdf):
        return None
    cols = fields_for(gdf, ["building_id", "parcel_id", "user_id", "main_id", "reason"])
    data, n = ctx.geojson(gdf, auto_props(gdf, cols), precision=6)
    return MapLayer(
        key="unresolved", name="Unresolved building sewers", data=data, count=n,
        style={"radius": 5, "color": "#000000", "weight": 1, "fillColor": UNRESOLVED_COLOUR,
               "fillOpacity": 0.95},
        fields=[(field_label(c), c) for c in cols],
        popup_title="No control manhole for {building_id}", tooltip="{building_id}: unresolved",
        search=["building_id", "parcel_id"],
        legend=[{"label": "building sewer not traced to the public sewer (see reason)",
                 "color": UNRESOLVED_COLOUR, "shape": "point"}], legend_title="Unresolved")


def _join_users_geometry(ctx: MapContext, plan: pd.DataFrame) -> gpd.GeoDataFrame | None:
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
