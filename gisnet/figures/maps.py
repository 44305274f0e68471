"""Printable maps for a board packet: ``gisnet figure KIND``.

One page (PDF or PNG) at a chosen paper size: a title, the map in the
working CRS (no base map tiles: it prints offline), a legend whose labels are
:mod:`gisnet.labels`' and colours :mod:`gisnet.output.styles`', a scale bar in
feet or miles, a north arrow, the date, the data sources (the layer files
read) and the profile.

Kinds (:data:`KINDS`):

- ``obligations``: parcels by obligation status, the mains, the measured lines
  of the parcels that must or can be ordered to connect;
- ``capacity``: pipes by utilization class (:func:`gisnet.rules.utilization_class`
  with the profile's thresholds; the result's own ``over_threshold`` /
  ``deficient`` / ``surcharged`` decide where present), plants;
- ``sampling``: mains, the paths to the control manholes, the control manholes,
  the industrial users (significant ones marked);
- ``network``: the sewer graph's pipes and nodes, plants.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import labels, rules
from ..errors import ConfigError, NotFoundError
from ..extras import needs_extra
from ..output.writing import atomic_path, refuse_input_as_output
from ..palettes import SIMPLE_COLOURS, STATUS_COLOURS, UTIL_CLASSES, UTIL_COLOURS
from .drawing import crs_unit_text, draw_north_arrow, draw_scale_bar, frame, page_inches

#: The figure kinds and the analysis step each needs (``gisnet.pipeline.STEPS``).
KINDS: dict[str, str] = {
    "obligations": "obligations",
    "capacity": "capacity",
    "sampling": "control",
    "network": "graph",
}
#: File suffixes a figure can be written as.
FORMATS = (".pdf", ".png")
#: Resolution of PNG figures, dots per inch.
PNG_DPI = 150
#: Colour of the mains drawn under the results.
MAIN_COLOUR = "#4d4d4d"
PARCEL_EDGE = "#bdbdbd"


def result_layers(results: Any) -> dict[str, pd.DataFrame]:
    """The result layers of ``results``: a :class:`gisnet.pipeline.Results` (its
    ``layers()``) or a mapping of layer name -> frame (e.g. the layers read back
    from ``gisnet-results.gpkg``)."""
    if isinstance(results, Mapping):
        return dict(results)
    layers = getattr(results, "layers", None)
    if callable(layers):
        return dict(layers())
    raise TypeError(f"results must be gisnet Results or a mapping of layers, not "
                    f"{type(results).__name__}")


def sources_text(town: Any, used: list[str]) -> str:
    """The file names of the town layers ``used`` (and the town file), for a footer."""
    info = town.settings.extra.get("layer_info", {}) or {}
    names = []
    for role in used:
        li = info.get(role)
        if li is not None and getattr(li, "path", None):
            names.append(os.path.basename(str(li.path)) + (f" ({li.layer})" if li.layer else ""))
    tf = town.settings.extra.get("town_file")
    if tf:
        names.append(os.path.basename(str(tf)))
    return ", ".join(dict.fromkeys(names)) or "layers given on the command line"


# --------------------------------------------------------------------------- kinds


def _need(layers: Mapping[str, pd.DataFrame], name: str, kind: str) -> pd.DataFrame:
    df = layers.get(name)
    if df is None or not len(df):
        raise NotFoundError(f"the {kind} figure needs the {name} result layer, and the results "
                            "hold none (run the analysis first)")
    return df


def _mains(ax, town: Any) -> list[tuple[str, dict]]:
    mains = town.layers.get("mains")
    if mains is None or not len(mains):
        return []
    mains.plot(ax=ax, color=MAIN_COLOUR, linewidth=0.6, zorder=3)
    return [(labels.layer_label("mains"), {"kind": "line", "color": MAIN_COLOUR})]


def _obligations(ax, town, layers, profile) -> list[tuple[str, dict]]:
    ob = _need(layers, "obligations", "obligations")
    handles: list[tuple[str, dict]] = []
    status = ob["status"].astype(str)
    for code, label in labels.STATUS_LABELS.items():
        part = ob[status == code]
        if not len(part):
            continue
        colour = STATUS_COLOURS.get(code, "#cccccc")
        part.plot(ax=ax, color=colour, edgecolor=PARCEL_EDGE, linewidth=0.15, zorder=2)
        handles.append((f"{label} ({len(part):,})", {"kind": "patch", "color": colour}))
    handles += _mains(ax, town)
    ev = layers.get("obligation_evidence")
    if ev is not None and len(ev):
        ev = ev[ev["status"].isin(("required", "subject_to_notice"))]
        if len(ev):
            colour = SIMPLE_COLOURS["obligation_evidence"]
            ev.plot(ax=ax, color=colour, linewidth=0.9, zorder=4)
            handles.append((labels.layer_label("obligation_evidence"),
                            {"kind": "line", "color": colour}))
    return handles


def pipe_classes(pipes: pd.DataFrame, profile: Any) -> np.ndarray:
    """Utilization class of each pipe (the keys of ``gisnet.palettes.UTIL_CLASSES``)."""
    cap = profile.capacity
    def num(c: str) -> np.ndarray:
        if c not in pipes.columns:
            return np.full(len(pipes), np.nan)
        return pd.to_numeric(pipes[c], errors="coerce").to_numpy(dtype=float)
    flags = (pipes["flags"].astype(object).fillna("").astype(str).str.lower()
             if "flags" in pipes.columns else pd.Series("", index=pipes.index))
    no_slope = flags.str.contains("adverse|flat|zero", regex=True).to_numpy(dtype=bool)
    out = rules.utilization_class(num("utilization"), num("capacity_gpd"),
                                  cap.utilization_threshold, cap.deficient, cap.surcharged,
                                  no_capacity=no_slope)
    flag_cols = ("over_threshold", "deficient", "surcharged")
    if all(c in pipes.columns for c in flag_cols):  # the result decided: as the QGIS style
        known = ~np.isin(out, ("nocapacity", "unknown"))
        level = np.full(len(pipes), "ok", dtype=object)
        for col, cls in zip(flag_cols, ("threshold", "deficient", "surcharged"), strict=True):
            level[pipes[col].astype("boolean").fillna(False).to_numpy(dtype=bool)] = cls
        out[known] = level[known]
    return out


def _capacity(ax, town, layers, profile) -> list[tuple[str, dict]]:
    pipes = _need(layers, "pipes_capacity", "capacity")
    cls = pipe_classes(pipes, profile)
    handles: list[tuple[str, dict]] = []
    for key, (colour, label) in UTIL_CLASSES.items():
        m = cls == key
        if not m.any():
            continue
        width = 0.7 if key in ("ok", "unknown") else 1.6
        pipes[m].plot(ax=ax, color=colour, linewidth=width, zorder=3 + (key not in ("ok",)))
        handles.append((f"{label} ({int(m.sum()):,})", {"kind": "line", "color": colour}))
    handles += _plants(ax, layers)
    return handles


def _plants(ax, layers) -> list[tuple[str, dict]]:
    plants = layers.get("plants")
    if plants is None or not len(plants) or "geometry" not in plants:
        return []
    colour = SIMPLE_COLOURS["plants"]
    over = plants["over_threshold"] if "over_threshold" in plants.columns else None
    unknown = (over.isna().to_numpy() if over is not None and "ratio" in plants.columns
               else np.zeros(len(plants), dtype=bool))
    out = []
    if (~unknown).any():
        plants[~unknown].plot(ax=ax, color=colour, markersize=60, marker="s",
                              edgecolor="black", zorder=6)
        out.append((labels.layer_label("plants"),
                    {"kind": "marker", "color": colour, "marker": "s"}))
    if unknown.any():  # no flow data: grey, said so, never "0 %"
        grey = UTIL_COLOURS["unknown"]
        plants[unknown].plot(ax=ax, color=grey, markersize=60, marker="s",
                             edgecolor="black", zorder=6)
        out.append((f"{labels.layer_label('plants')}: {labels.UNKNOWN_FLOW}",
                    {"kind": "marker", "color": grey, "marker": "s"}))
    return out


def _sampling(ax, town, layers, profile) -> list[tuple[str, dict]]:
    cm = _need(layers, "control_manholes", "sampling")
    handles = _mains(ax, town)
    paths = layers.get("control_paths")
    if paths is not None and len(paths):
        colour = SIMPLE_COLOURS["control_paths"]
        paths.plot(ax=ax, color=colour, linewidth=1.0, alpha=0.6, zorder=4)
        handles.append((labels.layer_label("control_paths"), {"kind": "line", "color": colour}))
    pts = cm[cm.geometry.notna() & ~cm.geometry.is_empty] if "geometry" in cm else cm.iloc[:0]
    if len(pts):
        colour = SIMPLE_COLOURS["control_manholes"]
        pts.plot(ax=ax, color=colour, markersize=8, zorder=5)
        handles.append((labels.layer_label("control_manholes"),
                        {"kind": "marker", "color": colour, "marker": "o"}))
    sp = layers.get("sampling_plan")
    if sp is not None and len(sp) and "geometry" in sp:
        colour = SIMPLE_COLOURS["sampling_plan"]
        siu = (sp["siu"].astype("boolean").fillna(False).to_numpy(dtype=bool)
               if "siu" in sp.columns else np.zeros(len(sp), dtype=bool))
        sp.plot(ax=ax, color=colour, markersize=30, marker="^", edgecolor="black",
                linewidth=0.4, zorder=6)
        handles.append((f"{labels.layer_label('sampling_plan')} ({len(sp):,})",
                        {"kind": "marker", "color": colour, "marker": "^"}))
        if siu.any():
            sp[siu].plot(ax=ax, facecolor="none", edgecolor="black", markersize=110,
                         marker="o", linewidth=0.9, zorder=7)
            handles.append((f"Significant industrial user ({int(siu.sum()):,})",
                            {"kind": "marker", "color": "none", "marker": "o"}))
    return handles


def _network(ax, town, layers, profile) -> list[tuple[str, dict]]:
    edges = _need(layers, "graph_edges", "network")
    colour = SIMPLE_COLOURS["graph_edges"]
    edges.plot(ax=ax, color=colour, linewidth=0.7, zorder=3)
    handles = [(f"{labels.layer_label('graph_edges')} ({len(edges):,})",
                {"kind": "line", "color": colour})]
    nodes = layers.get("graph_nodes")
    if nodes is not None and len(nodes):
        colour = SIMPLE_COLOURS["graph_nodes"]
        nodes.plot(ax=ax, color=colour, markersize=0.8, zorder=4)
        handles.append((labels.layer_label("graph_nodes"),
                        {"kind": "marker", "color": colour, "marker": "o"}))
    return handles + _plants(ax, layers)


#: Kind -> (drawing function, the town layers drawn as sources).
_DRAW: dict[str, tuple[Callable[..., list[tuple[str, dict]]], list[str]]] = {
    "obligations": (_obligations, ["parcels", "buildings", "streets", "mains", "laterals"]),
    "capacity": (_capacity, ["mains", "parcels", "plants"]),
    "sampling": (_sampling, ["mains", "manholes", "users"]),
    "network": (_network, ["mains", "manholes", "plants"]),
}


def _legend(ax, handles: list[tuple[str, dict]]) -> None:
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    artists: list[Artist] = []
    for _label, h in handles:
        if h["kind"] == "patch":
            artists.append(Patch(facecolor=h["color"], edgecolor=PARCEL_EDGE))
        elif h["kind"] == "line":
            artists.append(Line2D([], [], color=h["color"], linewidth=2))
        else:
            artists.append(Line2D([], [], linestyle="none", marker=h["marker"], markersize=7,
                                  markerfacecolor=h["color"], markeredgecolor="black"))
    ax.legend(artists, [label for label, _ in handles], loc="upper left", fontsize=7,
              frameon=True, framealpha=0.9, title="Legend", title_fontsize=8)


def _bounds(town: Any, layers: Mapping[str, pd.DataFrame]) -> tuple[float, float, float, float]:
    for df in (town.layers.get("mains"), layers.get("graph_edges"), layers.get("obligations"),
               town.layers.get("parcels")):
        if df is not None and len(df) and hasattr(df, "total_bounds"):
            b = df.total_bounds
            if np.isfinite(b).all():
                minx, miny, maxx, maxy = map(float, b)
                return minx, miny, maxx, maxy
    raise NotFoundError("nothing to draw: the town has no mains, parcels or graph")


def draw_figure(town: Any, results: Any, kind: str, *, page: str = "letter",
                landscape: bool = False, date: dt.date | None = None):
    """The matplotlib Figure of a printable map (see the module docstring).

    Returns
    -------
    matplotlib.figure.Figure
        A figure the size of the page (not yet saved; close it when done).
    """
    with needs_extra("pdf", "drawing a figure (gisnet figure)"):
        from matplotlib.figure import Figure

    if kind not in KINDS:
        raise ConfigError(f"unknown figure {kind!r}; figures are: {', '.join(KINDS)}")
    layers = result_layers(results)
    draw, sources = _DRAW[kind]
    w, h = page_inches(page, landscape)
    fig = Figure(figsize=(w, h))
    # margins: 0.5 in round the page, 0.9 in at the top for the title, 0.7 at the foot
    ax = fig.add_axes((0.5 / w, 0.75 / h, 1 - 1.0 / w, 1 - 1.75 / h))
    parcels = town.layers.get("parcels")
    if kind != "obligations" and parcels is not None and len(parcels):
        parcels.plot(ax=ax, facecolor="#f4f4f4", edgecolor="#d9d9d9", linewidth=0.1, zorder=1)
    handles = draw(ax, town, layers, town.profile)
    frame(ax, _bounds(town, layers), pad=0.03)
    _legend(ax, handles)
    bar = draw_scale_bar(ax, float(town.ft_per_unit))
    draw_north_arrow(ax)
    when = (date or dt.date.today()).isoformat()
    prof = town.profile.profile
    fig.text(0.5 / w, 1 - 0.45 / h, f"{labels.FIGURE_TITLES[kind]}: {town.name}", fontsize=16,
             fontweight="bold", va="baseline")
    # the town by its own name, and separately the ordinance it is measured under (a
    # town under the Berlin profile is not the City of Berlin)
    fig.text(0.5 / w, 1 - 0.68 / h, labels.subtitle(town.name, prof.ordinance), fontsize=9,
             va="baseline", color="#333333")
    foot = (f"Date: {when}    Profile: {prof.id} ({prof.ordinance})\n"
            f"Data sources: {sources_text(town, [s for s in sources if s in town.layers])}\n"
            f"Working CRS: {crs_unit_text(town.crs)}; scale bar {bar.text}; "
            "north arrow: grid north. Made with gisnet.")
    fig.text(0.5 / w, 0.22 / h, foot, fontsize=6.5, va="bottom", color="#333333",
             wrap=True)
    return fig


def write_figure(town: Any, results: Any, kind: str, out: str | os.PathLike[str], *,
                 page: str = "letter", landscape: bool = False,
                 date: dt.date | None = None) -> Path:
    """Write a printable map of ``kind`` to ``out`` (``.pdf`` or ``.png``), atomically.

    Parameters
    ----------
    town
        The loaded town (its layers, profile, CRS and layer files).
    results
        :class:`gisnet.pipeline.Results`, or a mapping of result layers.
    kind
        One of :data:`KINDS`.
    out
        The file to write; never one of the town's inputs.
    page, landscape
        Paper size (:data:`gisnet.figures.drawing.PAGE_SIZES`) and orientation.
    date
        The date printed (default today).

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    out = Path(out)
    refuse_input_as_output(out, town, what="figure")
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(f"a figure is written as {' or '.join(FORMATS)}, not {out.name!r}",
                          path=out)
    with needs_extra("pdf", "gisnet figure"):
        import matplotlib

    with matplotlib.rc_context({"pdf.fonttype": 42}):  # TrueType: the text can be searched
        fig = draw_figure(town, results, kind, page=page, landscape=landscape, date=date)
    meta = ({"Title": labels.FIGURE_TITLES[kind], "Creator": "gisnet"} if suffix == ".pdf"
            else {"Title": labels.FIGURE_TITLES[kind], "Software": "gisnet"})
    with atomic_path(out, "figure") as tmp, matplotlib.rc_context({"pdf.fonttype": 42}):
        fig.savefig(tmp, format=suffix[1:], dpi=PNG_DPI, metadata=meta)
    return out
