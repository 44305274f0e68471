"""Printable maps (``gisnet figure``) and the map furniture the notices share.

:func:`write_figure` writes one page (PDF or PNG) of a kind in :data:`KINDS`;
:mod:`gisnet.figures.drawing` holds the page sizes, scale bar and north arrow.
Matplotlib with the Agg backend (no display), no base map tiles (prints offline).
"""

from __future__ import annotations

from .drawing import PAGE_SIZES, draw_north_arrow, draw_scale_bar, nice_scale, page_inches
from .maps import FORMATS, KINDS, draw_figure, result_layers, write_figure

__all__ = ["FORMATS", "KINDS", "PAGE_SIZES", "draw_figure", "draw_north_arrow",
           "draw_scale_bar", "nice_scale", "page_inches", "result_layers", "write_figure"]
