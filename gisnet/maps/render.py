"""A page to HTML: a folium map with gisnet's layers, legend, panels and links.

Pages work anywhere by default: ``self_contained=True`` (the default) inlines
Leaflet (vendored in ``gisnet/static/leaflet``, BSD-2-Clause) and gisnet's own
script and styles, and drops the jQuery/Bootstrap/Font Awesome links folium adds
(nothing on these pages uses them), so the page renders every vector layer
without a network; only the base tiles need one, and when they cannot load the
page says so and draws the layers on a plain background. ``self_contained=False``
(``--cdn``) loads Leaflet from a CDN instead: smaller files that need a network.

Base-map tiles are requested with the referrer policy :data:`REFERRER_POLICY`,
so a page served over http sends its origin, as tile servers ask.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..labels import EMPTY, subtitle
from ..output import atomic_write_text
from . import assets
from .common import MapLayer, Page
from .tiled import TILED_NOTE, is_tiled, page_assets

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

MAX_PAGE_BYTES = 15 * 1024 * 1024

TILES: tuple[dict[str, str], ...] = (
    {
        "name": "OpenStreetMap",
        "url": "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        "attribution": '&copy; <a href="https://www.openstreetmap.org/copyright">'
        "OpenStreetMap</a> contributors",
    },
    {
        "name": "Light (CARTO)",
        "url": "https://{s}.basemaps.cartocdn.com/light_all/{z}/{x}/{y}{r}.png",
        "attribution": '&copy; <a href="https://www.openstreetmap.org/copyright">'
        'OpenStreetMap</a> contributors &copy; <a href="https://carto.com/attributions">CARTO</a>',
    },
)
LEAFLET_CDN_JS = "https://cdn.jsdelivr.net/npm/leaflet@1.9.4/dist/leaflet.js"
LEAFLET_CDN_CSS = "https://cdn.jsdelivr.net/npm/leaflet@1.9.4/dist/leaflet.css"
OFFLINE_NOTE = (
    "Every layer is inside this file; only the base map needs a network (without one the "
    "layers are drawn on a plain background)."
)
#: Referrer policy of the base-map tile requests (Leaflet ``referrerPolicy``).
REFERRER_POLICY = "strict-origin-when-cross-origin"


def _legend(layers: Iterable[MapLayer]) -> list[dict[str, Any]]:
    """Legend groups by title, each item once, in layer order; each group names the
    layers it describes (``layers``), and the page lists a group only while one of
    them is on the map."""
    groups: dict[str, list[dict[str, Any]]] = {}
    keys: dict[str, list[str]] = {}
    for lyr in layers:
        if not lyr.legend:
            continue
        title = lyr.legend_title or lyr.name
        items = groups.setdefault(title, [])
        keys.setdefault(title, []).append(lyr.key)
        for item in lyr.legend:
            if item not in items:
                items.append(item)
    return [{"title": t, "items": i, "layers": keys[t]} for t, i in groups.items()]


def render_page(page: Page, *, town_name: str, profile_name: str,
                self_contained: bool = True) -> str:
    """The HTML text of one page (folium map + gisnet layers).

    Parameters
    ----------
    page
        Title, layers (GeoJSON in EPSG:4326), panels and links.
    town_name, profile_name
        Shown under the title: the town's name and, apart, the ordinance it is
        measured under (:func:`gisnet.labels.subtitle`).
    self_contained
        Inline Leaflet and gisnet's script/styles and load nothing from a CDN
        (the default); False loads Leaflet from a CDN (``--cdn``).
    """
    import folium
    from branca.element import Element, Figure, MacroElement

    class _Raw(Element):
        """Text put in the page as it is (branca would parse an Element as a template)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self._text = text

        def render(self, **kwargs: Any) -> str:
            return self._text

    m = folium.Map(location=page.center, zoom_start=15, tiles=None,
                   prefer_canvas=True, control_scale=True, max_zoom=20)
    m._id = "gisnet"
    root = m.get_root()
    assert isinstance(root, Figure)  # a folium Map is made inside a Figure
    root.title = f"{page.title} · {town_name}"
    if self_contained:
        m.default_js = []
        m.default_css = []
        root.header.add_child(_Raw(f"<style>{assets.leaflet_css()}</style>"),
                              name="leaflet_css")
        root.header.add_child(_Raw(f"<script>{assets.leaflet_js()}</script>"),
                              name="leaflet_js")
    else:  # folium's usual CDN links, with the Leaflet version gisnet vendors
        m.default_js = [(n, LEAFLET_CDN_JS if n == "leaflet" else u) for n, u in m.default_js]
        m.default_css = [(n, LEAFLET_CDN_CSS if n == "leaflet_css" else u)
                         for n, u in m.default_css]
    root.header.add_child(_Raw(f"<title>{html.escape(root.title)}</title>"), name="title")
    root.header.add_child(_Raw(f"<style>{assets.gisnet_css()}</style>"), name="gisnet_css")
    root.header.add_child(_Raw(f"<script>{assets.gisnet_js()}</script>"), name="gisnet_js")
    tiled = any(is_tiled(lyr) for lyr in page.layers)
    if tiled:  # big layers from vector tiles (gisnet.maps.tiled)
        root.header.add_child(_Raw(page_assets()), name="gisnet_tiles")

    cfg = {
        "title": f"{page.title}: {town_name}",
        "subtitle": subtitle(town_name, profile_name),
        "note": TILED_NOTE if tiled else OFFLINE_NOTE if self_contained else None,
        "tiles": list(TILES),
        "referrerPolicy": REFERRER_POLICY,
        "empty": EMPTY,
        "links": page.links,
        "legend": _legend(page.layers),
        "panels": page.panels,
        "layers": [lyr.spec() for lyr in page.layers],
        "searchPlaceholder": "Search parcel id or address",
    }
    cfg_text = json.dumps(cfg, separators=(",", ":")).replace("</", "<\\/")
    data_lines = "".join(
        "cfg.layers[{}].data={};\n".format(i, assets.script_safe(lyr.data) or "{}")
        for i, lyr in enumerate(page.layers))

    class _Layers(MacroElement):
        """Adds the layer script after the map's own (raw text, never a template)."""

        def __init__(self) -> None:
            super().__init__()
            self._name = "GisnetLayers"
            self._id = "layers"

        # branca's MacroElement.render returns None, its base Element.render says str
        def render(self, **kwargs: Any) -> None:  # type: ignore[override]
            js = ("(function(){var cfg=" + cfg_text + ";\n" + data_lines
                  + "gisnetMaps.init(" + m.get_name() + ", cfg);})();\n")
            figure = self.get_root()
            assert isinstance(figure, Figure)  # added to the map below
            figure.script.add_child(_Raw(js), name=self.get_name())

    m.add_child(_Layers())
    return root.render()


def _write_atomic(path: Path, text: str) -> None:
    atomic_write_text(path, text, "map page")


def save_page(page: Page, town: Town, out: Path, self_contained: bool = True) -> Path:
    """Render ``page`` for ``town`` and write it to ``out`` atomically; log its size."""
    text = render_page(page, town_name=town.name,
                       profile_name=town.profile.profile.ordinance,
                       self_contained=self_contained)
    _write_atomic(out, text)
    size = out.stat().st_size
    counts = ", ".join(f"{lyr.key}={lyr.count}" for lyr in page.layers)
    log.info("wrote %s (%.1f MB; %s)", out, size / 1e6, counts)
    if size > MAX_PAGE_BYTES:
        log.warning("%s is %.1f MB, over the %d MB budget", out, size / 1e6,
                    MAX_PAGE_BYTES // (1024 * 1024))
    return out
