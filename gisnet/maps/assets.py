"""Script and style assets of gisnet's web maps, read from the package data.

Leaflet 1.9.4 (BSD-2-Clause, ``static/leaflet/LICENSE``) is vendored from the
npm ``leaflet`` package so that a user who only ran ``pip install`` can write
self-contained pages. gisnet's own map script and stylesheet live in
``static/gisnet-maps.js`` and ``static/gisnet-maps.css`` and are always inlined
(they are small and not on any CDN). The files stay in ``gisnet/static/``
(package data); this module only reads them.
"""

from __future__ import annotations

import base64
import re
from functools import cache
from importlib import resources

_STATIC = "static"


def _read_bytes(*parts: str) -> bytes:
    return resources.files("gisnet").joinpath(_STATIC, *parts).read_bytes()


def _read(*parts: str) -> str:
    return resources.files("gisnet").joinpath(_STATIC, *parts).read_text(encoding="utf-8")


def script_safe(text: str) -> str:
    """Text that can sit inside ``<script>``/``<style>`` without closing it early."""
    return text.replace("</", "<\\/")


@cache
def leaflet_js() -> str:
    """Leaflet's minified script, source-map comment removed (nothing to fetch)."""
    text = _read("leaflet", "leaflet.js")
    text = re.sub(r"//# sourceMappingURL=\S+\s*$", "", text)
    return script_safe(text)


@cache
def leaflet_css() -> str:
    """Leaflet's stylesheet with its layer-control images inlined as data URIs.

    The marker-icon image is left out: gisnet draws points as circle markers.
    """
    css = _read("leaflet", "leaflet.css")

    def inline(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in ("layers.png", "layers-2x.png"):
            return "url()"
        data = base64.b64encode(_read_bytes("leaflet", "images", name))
        return f"url(data:image/png;base64,{data.decode('ascii')})"

    css = re.sub(r"url\(images/([\w.-]+)\)", inline, css)
    return script_safe(css)


@cache
def gisnet_js() -> str:
    """gisnet's map script (layers, legend, search, panels)."""
    return script_safe(_read("gisnet-maps.js"))


@cache
def gisnet_css() -> str:
    """gisnet's map stylesheet."""
    return script_safe(_read("gisnet-maps.css"))
