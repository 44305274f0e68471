"""Map furniture shared by the printable figures and the notice maps.

Everything here draws on a matplotlib ``Axes`` whose coordinates are the
town's working CRS (projected, in US survey feet, international feet or
metres): the scale bar reads the CRS unit through ``ft_per_unit`` and is
labelled in feet or, for long bars, miles; the north arrow points to grid
north (the top of the page), which in a projected CRS of a town is within a
degree or two of true north.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError

#: Page name -> (width, height) in inches, portrait.
PAGE_SIZES: dict[str, tuple[float, float]] = {
    "letter": (8.5, 11.0),
    "a4": (210 / 25.4, 297 / 25.4),
    "tabloid": (11.0, 17.0),
    "a3": (297 / 25.4, 420 / 25.4),
}
FT_PER_MILE = 5280.0
#: Round lengths a scale bar may show, in feet (then miles).
_NICE_FT = (10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500)
_NICE_MI = (0.5, 1, 2, 5, 10, 20, 50)


def page_inches(page: str, landscape: bool = False) -> tuple[float, float]:
    """(width, height) of a page in inches.

    Raises
    ------
    ConfigError
        An unknown page name.
    """
    try:
        w, h = PAGE_SIZES[page.lower()]
    except KeyError:
        raise ConfigError(f"unknown page size {page!r}; sizes are: "
                          f"{', '.join(PAGE_SIZES)}") from None
    return (h, w) if landscape else (w, h)


@dataclass(frozen=True)
class ScaleBar:
    """A scale bar's length: ``length_ft`` feet, shown as ``value`` ``unit``."""

    length_ft: float
    value: float
    unit: str  # "ft" or "mi"

    @property
    def text(self) -> str:
        return f"{self.value:g} {self.unit}"


def nice_scale(width_ft: float, fraction: float = 0.25) -> ScaleBar:
    """The round length (feet, or miles from a mile up) nearest below ``fraction``
    of a map ``width_ft`` wide (at least the smallest round length)."""
    target = max(width_ft * fraction, 1e-9)
    if target >= FT_PER_MILE:
        mi = [v for v in _NICE_MI if v * FT_PER_MILE <= target] or [_NICE_MI[0]]
        return ScaleBar(mi[-1] * FT_PER_MILE, mi[-1], "mi")
    if target >= FT_PER_MILE / 2:
        return ScaleBar(FT_PER_MILE / 2, 0.5, "mi")
    ft = [v for v in _NICE_FT if v <= target]
    if not ft:  # a tiny map: a power of ten below the target
        v = 10 ** math.floor(math.log10(target))
        return ScaleBar(v, v, "ft")
    return ScaleBar(float(ft[-1]), float(ft[-1]), "ft")


def draw_scale_bar(ax, ft_per_unit: float, *, fraction: float = 0.25,
                   colour: str = "#222222") -> ScaleBar:
    """Draw a scale bar in the lower left of ``ax`` (data in CRS units, equal aspect).

    Parameters
    ----------
    ax
        A matplotlib Axes with its final limits set.
    ft_per_unit
        Feet per CRS unit (``town.ft_per_unit``).
    fraction
        The bar's length at most this share of the map's width.

    Returns
    -------
    ScaleBar
        The length drawn.
    """
    from matplotlib.patches import Rectangle

    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    width_u, height_u = x1 - x0, y1 - y0
    bar = nice_scale(width_u * ft_per_unit, fraction)
    length_u = bar.length_ft / ft_per_unit
    left, base = x0 + 0.04 * width_u, y0 + 0.05 * height_u
    h = 0.012 * height_u
    ax.add_patch(Rectangle((left - 0.01 * width_u, base - 0.5 * h), length_u + 0.02 * width_u,
                           5.2 * h, facecolor="white", edgecolor="none", alpha=0.8, zorder=20))
    for i in range(4):  # four alternating segments
        ax.add_patch(Rectangle((left + i * length_u / 4, base), length_u / 4, h,
                               facecolor=colour if i % 2 == 0 else "white",
                               edgecolor=colour, linewidth=0.6, zorder=21))
    for frac, text in ((0.0, "0"), (0.5, f"{bar.value / 2:g}"), (1.0, bar.text)):
        ax.text(left + frac * length_u, base + 1.6 * h, text, ha="center", va="bottom",
                fontsize=7, color=colour, zorder=22)
    return bar


def draw_north_arrow(ax, colour: str = "#222222") -> None:
    """Draw a north arrow (grid north: up) in the upper right of ``ax``."""
    ax.annotate("", xy=(0.95, 0.95), xytext=(0.95, 0.86), xycoords="axes fraction",
                arrowprops={"arrowstyle": "-|>,head_width=0.35,head_length=0.7",
                            "color": colour, "linewidth": 1.6}, zorder=22)
    ax.text(0.95, 0.84, "N", transform=ax.transAxes, ha="center", va="top", fontsize=10,
            fontweight="bold", color=colour, zorder=22)


def frame(ax, bounds: tuple[float, float, float, float], pad: float = 0.06) -> None:
    """Set ``ax`` to ``bounds`` (minx, miny, maxx, maxy) plus a margin, widened
    in one direction to the shape of the axes box so that one unit is as long
    across as up (equal aspect); no ticks or axis labels (the scale bar gives
    the scale)."""
    minx, miny, maxx, maxy = bounds
    w = max(maxx - minx, 1.0) * (1 + 2 * pad)
    h = max(maxy - miny, 1.0) * (1 + 2 * pad)
    cx, cy = (minx + maxx) / 2, (miny + maxy) / 2
    pos = ax.get_position(original=True)
    fw, fh = ax.figure.get_size_inches()
    box = (pos.height * fh) / max(pos.width * fw, 1e-9)  # height / width of the box
    if h / w < box:
        h = w * box
    else:
        w = h / box
    ax.set_xlim(cx - w / 2, cx + w / 2)
    ax.set_ylim(cy - h / 2, cy + h / 2)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("")
    ax.set_ylabel("")
    for s in ax.spines.values():
        s.set_linewidth(0.6)
        s.set_color("#555555")


def crs_unit_text(crs) -> str:
    """The working CRS and its linear unit, in words (``EPSG:2260, US survey foot``)."""
    if crs is None:
        return "CRS unknown"
    try:
        unit = crs.axis_info[0].unit_name
    except (AttributeError, IndexError):
        unit = "unit unknown"
    code = crs.to_epsg()
    name = f"EPSG:{code}" if code else crs.name
    return f"{name}, {unit}"
