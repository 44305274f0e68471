"""Planners' web maps: one folium page per question, a combined page, and what-if.

Pages take the result GeoDataFrames of the analyses (the layers of
``gisnet-results.gpkg``, see ``docs/architecture.md``) plus the town's own
layers, and write light, self-explaining Leaflet pages:

``network.html``
    mains by kind (colour) and diameter (width), manholes, plants, outlets and
    the data-quality findings.
``obligations.html``
    parcels by connection status, the connection zone, evidence lines.
``sampling.html``
    taps, paths to control manholes, control manholes (with how many taps each
    serves), industrial users with significant industrial users set apart.
``capacity.html``
    pipes by utilization class (the profile's threshold its own colour), width
    by diameter, plants with a status panel.
``index.html``
    every layer with a layer control, and links to the other pages.

Every page has a title with the town and profile, a legend, a scale bar (feet
and metres), a search box (parcel id or address, and other ids), tooltips and
popups; where a rule of the profile produced a colour, the popup cites its
section. A value the data does not have is shown as ``unknown``, never as 0.

Weight: geometry is simplified in the working CRS (tolerance in feet), then
reprojected to EPSG:4326 (this module is the only place that does so) and its
coordinates rounded to ``precision`` decimals (6 = 0.1 m; parcels that need no
attention 5 = 1 m). Features carry only the properties shown, already formatted
as text; rendering uses Leaflet's canvas renderer.

Offline: ``self_contained=True`` inlines Leaflet (vendored in
``gisnet/static/leaflet``, BSD-2-Clause) and gisnet's own script and styles, and
drops the jQuery/Bootstrap/Font Awesome links folium adds by default (nothing on
these pages uses them), so the page renders every vector layer without a
network; only the base tiles need one, and the page says so.

Colours that show a rule come from :mod:`gisnet.rules` and the town's profile:
a pipe's utilization class is :func:`gisnet.rules.utilization_class` against
``profile.capacity`` (re-exported here as :func:`utilization_class`; the
classes of a capacity result's pipes are :func:`classify_pipes`), an excluded
main is one that :func:`gisnet.rules.is_public` or :func:`gisnet.rules.is_active`
rules out.

Modules
-------
``common``
    :class:`MapLayer`, :class:`Page`, the context page builders share, colours.
``encoding``
    formatting of values and the compact (delta-encoded) layer format.
``layers``
    layers several pages share (parcels, mains, manholes, plants).
``network``, ``obligations``, ``sampling``, ``capacity``, ``whatif``
    one module per page.
``explore``
    one result layer on a folium map in a notebook (:func:`explore_layer`).
``pages``
    the index page, :func:`build_pages`, :func:`write_maps`, :func:`read_results`.
``render``, ``assets``
    HTML of a page; Leaflet and gisnet's own script and styles, inlined offline.
"""

from ..rules import utilization_class
from .capacity import CAPACITY_ORDER, classify_pipes
from .common import (
    KIND_COLOURS,
    QUALITY_SHOWN_MAX,
    SEVERITY_COLOURS,
    STATUS_COLOURS,
    UTIL_CLASSES,
    MapLayer,
    Page,
)
from .encoding import DISPLAY_CRS, Prop, encode_coords, encode_layer, format_value
from .explore import explore_layer
from .obligations import OBLIGATION_ORDER
from .pages import PAGES, RESULT_LAYERS, build_pages, read_results, write_maps
from .render import (
    LEAFLET_CDN_CSS,
    LEAFLET_CDN_JS,
    MAX_PAGE_BYTES,
    OFFLINE_NOTE,
    TILES,
    render_page,
)
from .sampling import SAMPLING_ORDER
from .whatif import whatif_map

__all__ = [
    "CAPACITY_ORDER", "DISPLAY_CRS", "KIND_COLOURS", "LEAFLET_CDN_CSS", "LEAFLET_CDN_JS",
    "MAX_PAGE_BYTES", "OBLIGATION_ORDER", "OFFLINE_NOTE", "PAGES", "QUALITY_SHOWN_MAX",
    "RESULT_LAYERS", "SAMPLING_ORDER", "SEVERITY_COLOURS", "STATUS_COLOURS", "TILES",
    "UTIL_CLASSES", "MapLayer", "Page", "Prop", "build_pages", "classify_pipes", "encode_coords",
    "encode_layer", "explore_layer", "format_value", "read_results", "render_page",
    "utilization_class", "whatif_map", "write_maps",
]
