"""The capacity page: pipes by utilization class, plants with a status panel.

A pipe's class is :func:`gisnet.rules.utilization_class` of its utilization
against the profile's ``capacity.utilization_threshold``, ``deficient`` and
``surcharged`` ("over" meaning strictly over, within :data:`gisnet.rules.LIMIT_RTOL`),
the same judgement capacity's flags make; where the result carries the boolean
columns ``over_threshold``, ``deficient``, ``surcharged`` they decide.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import rules
from ..labels import EMPTY, UNKNOWN_FLOW, value_label
from ..palettes import UTIL_COLOURS
from .common import (
    UTIL_CLASSES,
    MapContext,
    MapLayer,
    auto_props,
    cited,
    dashed_if_unknown,
    fields_for,
    width_from_diameter,
)
from .encoding import column, field_label, is_false, is_missing, is_true, numbers
from .layers import parcels_layer, plants_layer, with_main_geometry

if TYPE_CHECKING:  # pragma: no cover
    from ..profile import Profile

CAPACITY_ORDER = ("main_id", "diameter_in", "slope", "capacity_gpd", "capacity_status",
                  "avg_flow_gpd",
                  "peak_flow_gpd", "utilization", "velocity_fps", "flags")
#: Boolean columns of a capacity result that decide a pipe's class when present.
CLASS_FLAG_COLUMNS = ("over_threshold", "deficient", "surcharged")
#: Where the profile names no source for its utilization threshold.
DEFAULT_THRESHOLD_SOURCE = "design practice (Ten States Standards)"


def utilization_thresholds(profile: Profile) -> tuple[float, float, float]:
    """The profile's ``capacity.utilization_threshold``, ``deficient`` and ``surcharged``."""
    cap = profile.capacity
    return (float(cap.utilization_threshold), float(cap.deficient), float(cap.surcharged))


def class_labels(profile: Profile) -> dict[str, str]:
    """Legend text of each utilization class, with the profile's thresholds."""
    t, d, s = utilization_thresholds(profile)
    return {k: lab.format(t=t, d=d, s=s) for k, _, lab in UTIL_CLASSES}


def classify_pipes(df: pd.DataFrame, profile: Profile) -> np.ndarray:
    """Class of each pipe of a capacity result for colouring: ok, threshold,
    deficient, surcharged, nocapacity, unknown.

    Parameters
    ----------
    df
        Pipes with ``utilization`` and ``capacity_gpd`` (and optionally
        ``flags``, ``over_threshold``, ``deficient``, ``surcharged``).
    profile
        The loaded profile: its ``capacity`` thresholds.

    Returns
    -------
    numpy.ndarray of str
        :func:`gisnet.rules.utilization_class` of the utilization ("over"
        meaning strictly over, within :data:`gisnet.rules.LIMIT_RTOL`). Where
        the result's boolean columns ``over_threshold``, ``deficient``,
        ``surcharged`` are present they decide the level instead. A pipe with
        capacity 0, or with no utilization and a flag naming an adverse, flat or
        zero slope, is ``nocapacity``; one with no utilization and no flag set
        is ``unknown``.
    """
    t, d, s = utilization_thresholds(profile)
    u = numbers(column(df, "utilization"))
    cap = numbers(column(df, "capacity_gpd"))
    flags = column(df, "flags").astype(object).fillna("").astype(str).str.lower()
    no_slope = flags.str.contains("adverse|flat|zero", regex=True).to_numpy(dtype=bool)
    out = rules.utilization_class(u, cap, t, d, s, no_capacity=no_slope)
    if not any(c in df.columns for c in CLASS_FLAG_COLUMNS):
        return out
    over, defi, sur = (is_true(df[c]) if c in df.columns else rules.exceeds(u, limit)
                       for c, limit in zip(CLASS_FLAG_COLUMNS, (t, d, s), strict=True))
    level = np.select([sur, defi, over], ["surcharged", "deficient", "threshold"],
                      "ok").astype(object)
    rated = (out != "nocapacity") & (~np.isnan(u) | over | defi | sur)
    out[rated] = level[rated]
    return out


def capacity_layers(ctx: MapContext) -> tuple[list[MapLayer], list[dict[str, str]]]:
    """Layers and panels of ``capacity.html``: pipes by utilization, plants and their panel."""
    layers: list[MapLayer] = [p for p in (parcels_layer(ctx),) if p is not None]
    panels: list[dict[str, str]] = []
    pipes = ctx.results.get("pipes_capacity")
    if pipes is not None and len(pipes):
        pipes = with_main_geometry(ctx, pipes)
    if pipes is not None and len(pipes):
        cls = classify_pipes(pipes, ctx.profile)
        t, dd, ss = utilization_thresholds(ctx.profile)
        cols = [c for c in fields_for(pipes, CAPACITY_ORDER, skip=CLASS_FLAG_COLUMNS)
                if c not in ("from_node", "to_node")]
        notc = np.zeros(len(pipes), dtype=bool)
        if "computed" in pipes.columns:  # pipes in a cycle: flows not computed
            notc = is_false(pipes["computed"])
        if ctx.layer("parcels") is None and ctx.layer("users") is None:
            notc[:] = True  # no parcels and no users: the flows are unknown, not 0
        if notc.any():
            pipes = pipes.copy()
            for c in ("avg_flow_gpd", "peak_flow_gpd", "utilization", "industrial_flow_gpd"):
                if c in pipes.columns:
                    pipes[c] = pipes[c].astype(float).mask(notc)
        props = auto_props(pipes, cols)
        props["_c"] = list(cls)
        d = numbers(column(pipes, "diameter_in"))
        props["_w"] = width_from_diameter(d)
        props["_u"] = dashed_if_unknown(d)
        labels = class_labels(ctx.profile)
        props["class"] = [labels[c] for c in cls]
        sources = ctx.profile.capacity.sources or {}
        source = sources.get("utilization_threshold") or DEFAULT_THRESHOLD_SOURCE
        rule = {
            "ok": None,
            "threshold": f"utilization > {t:.0%} (profile threshold; {source})",
            "deficient": f"utilization > {dd:.0%}: flow depth over 0.75 D",
            "surcharged": f"utilization > {ss:.0%}: flow exceeds full-pipe capacity",
            "nocapacity": "zero or adverse slope: no Manning capacity (not floored)",
            "unknown": None,
        }
        status = (pipes["capacity_status"].astype(object).fillna("").astype(str).to_numpy()
                  if "capacity_status" in pipes.columns else np.full(len(pipes), ""))
        # an unknown pipe says why (capacity unknown: no diameter, no slope...)
        props["rule"] = [rule[c] if rule[c] is not None or c != "unknown" or not st
                         or st.startswith("computed") else f"capacity {st}"
                         for c, st in zip(cls, status, strict=True)]
        fields: list[tuple[Any, ...]] = [(field_label(c), c) for c in cols]
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
    plants = plants_layer(ctx)
    if plants is not None:
        layers.append(plants)
        panel = _plant_panel(ctx)
        if panel:
            panels.append({"position": "topright", "html": panel})
    return layers, panels


def _plant_panel(ctx: MapContext) -> str:
    """HTML table of the plants: average / design flow, ratio against the threshold, basis."""
    plants = ctx.results.get("plants")
    if plants is None or len(plants) == 0:
        return ""
    section = cited(ctx.profile.capacity.plant_section)
    thr = float(ctx.profile.capacity.plant_threshold)
    rows = []
    for _, r in plants.iterrows():
        ratio = r.get("ratio")
        over = r.get("over_threshold")
        known = not (is_missing(over) or is_missing(ratio))
        state = ("over" if bool(over) else "below") if known else "unknown"
        cls = "gisnet-bad" if state == "over" else "gisnet-ok" if state == "below" else \
            "gisnet-unknown"
        ratio_s = UNKNOWN_FLOW if not known else f"{float(ratio) * 100:.1f} %"
        grey = "" if known else f' style="color:{UTIL_COLOURS["unknown"]}"'
        design = r.get("design_flow_mgd")
        avg = r.get("avg_flow_mgd")
        design_s = EMPTY if is_missing(design) else f"{float(design):.3f}"
        avg_s = EMPTY if is_missing(avg) else f"{float(avg):.3f}"
        name = r.get("name") if not is_missing(r.get("name")) else r.get("plant_id", "")
        rows.append(
            f"<tr><td>{html.escape(str(name))}</td><td>{avg_s} / {design_s}</td>" +
            (f'<td class="{cls}">{ratio_s} ({state} {thr:.0%})</td>' if known else
             f'<td class="{cls}"{grey}>{ratio_s}</td>') +
            f"<td>{html.escape(value_label('basis', r.get('basis')))}</td></tr>")
    head = ("<b>Treatment plants</b><table><tr><th>Plant</th><th>avg / design MGD</th>"
            "<th>ratio</th><th>basis</th></tr>")
    foot = f"<div>Rule: {html.escape(section)}</div>" if section else ""
    return head + "".join(rows) + "</table>" + foot
