"""The map of one notice: the parcel, its building, the sewer mains near it and the
measured line (the ``obligation_evidence`` line) with its distance labelled, a
scale bar and a north arrow. Matplotlib (Agg, no display), no base map tiles.
"""

from __future__ import annotations

import io
from typing import Any

import geopandas as gpd
import numpy as np
import shapely

from .. import labels
from ..extras import needs_extra
from ..figures.drawing import draw_north_arrow, draw_scale_bar, frame
from ..palettes import SIMPLE_COLOURS, STATUS_COLOURS
from .template import shorten

#: Colour of the measured line (the evidence layer's colour in every map and style).
LINE_COLOUR = SIMPLE_COLOURS["obligation_evidence"]
MAIN_COLOUR = "#1f5fbf"
#: The map shows at least this much round the parcel and the line, in feet.
MIN_VIEW_FT = 250.0
#: Size of the figure, inches (width, height).
SIZE_IN = (7.0, 5.0)


def notice_figure(town: Any, parcel: Any, line: Any, packet_values: dict[str, Any],
                  status: str, building_id: str | None = None):
    """The matplotlib Figure of one notice's map.

    Parameters
    ----------
    town
        The loaded town (mains, buildings, parcels, CRS).
    parcel
        The parcel polygon (working CRS).
    line
        The measured line (two points, parcel/building -> main), or None.
    packet_values
        The packet's template values (``distance``, ``parcel_id``, ``measure_text``).
    status
        The parcel's status (its fill colour).
    building_id
        The building measured from, outlined stronger.
    """
    with needs_extra("pdf", "a notice's figure (gisnet notices)"):
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

    fig = Figure(figsize=SIZE_IN)
    ax = fig.add_axes((0.02, 0.02, 0.96, 0.96))
    geoms = [g for g in (parcel, line) if g is not None and not shapely.is_empty(g)]
    minx, miny, maxx, maxy = shapely.bounds(shapely.union_all(geoms)).tolist()
    span = max(maxx - minx, maxy - miny, MIN_VIEW_FT / town.ft_per_unit)
    cx, cy = (minx + maxx) / 2, (miny + maxy) / 2
    view = (cx - span / 2, cy - span / 2, cx + span / 2, cy + span / 2)
    frame(ax, view, pad=0.12)
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    box = shapely.box(x0, y0, x1, y1)

    def near(name: str) -> gpd.GeoDataFrame | None:
        df = town.layers.get(name)
        if df is None or not len(df):
            return None
        return df.iloc[df.sindex.query(box, predicate="intersects")]

    parcels = near("parcels")
    if parcels is not None and len(parcels):
        parcels.plot(ax=ax, facecolor="#f7f7f7", edgecolor="#bdbdbd", linewidth=0.5, zorder=1)
    gpd.GeoSeries([parcel], crs=town.crs).plot(
        ax=ax, facecolor=STATUS_COLOURS.get(status, "#dddddd"), alpha=0.55,
        edgecolor="#222222", linewidth=1.6, zorder=2)
    buildings = near("buildings")
    if buildings is not None and len(buildings):
        strong = (buildings["building_id"].astype(str) == str(building_id)).to_numpy() \
            if building_id is not None else np.zeros(len(buildings), dtype=bool)
        buildings[~strong].plot(ax=ax, facecolor="#d9d9d9", edgecolor="#7f7f7f",
                                linewidth=0.4, zorder=3)
        if strong.any():
            buildings[strong].plot(ax=ax, facecolor="#bdbdbd", edgecolor="#000000",
                                   linewidth=1.0, zorder=3)
    mains = near("mains")
    if mains is not None and len(mains):
        mains.plot(ax=ax, color=MAIN_COLOUR, linewidth=2.2, zorder=4)
    handles = [Patch(facecolor=STATUS_COLOURS.get(status, "#dddddd"), edgecolor="#222222",
                     alpha=0.55),
               Line2D([], [], color=MAIN_COLOUR, linewidth=2.2)]
    names = [f"Parcel {shorten(str(packet_values['parcel_id']), 60)} "
             f"({labels.status_label(status)})",
             labels.layer_label("mains")]
    if line is not None and not shapely.is_empty(line):
        xy = np.asarray(shapely.get_coordinates(line))
        ax.plot(xy[:, 0], xy[:, 1], color=LINE_COLOUR, linewidth=2.6, zorder=6,
                solid_capstyle="round")
        ax.plot(xy[[0, -1], 0], xy[[0, -1], 1], "o", color=LINE_COLOUR, markersize=5,
                zorder=6)
        mid = xy.mean(axis=0)
        ax.annotate(packet_values["distance"], xy=(mid[0], mid[1]), xytext=(8, 8),
                    textcoords="offset points", fontsize=10, fontweight="bold",
                    color="#000000", zorder=7,
                    bbox={"boxstyle": "round,pad=0.25", "facecolor": "white",
                          "edgecolor": LINE_COLOUR, "linewidth": 1.0})
        handles.append(Line2D([], [], color=LINE_COLOUR, linewidth=2.6))
        names.append(f"Measured line, {packet_values['measure_text']}")
    ax.set_xlim(x0, x1)  # (the layers' plotting must not move the view)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.legend(handles, names, loc="lower right", fontsize=7, framealpha=0.92)
    draw_scale_bar(ax, float(town.ft_per_unit), fraction=0.3)
    draw_north_arrow(ax)
    return fig


def figure_png(fig, dpi: int = 160) -> bytes:
    """A figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
