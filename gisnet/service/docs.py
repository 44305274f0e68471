"""The service's API page, ``/docs`` (Swagger UI), without a CDN.

FastAPI's own page loads Swagger UI from a CDN, so it is blank on a machine
without a network (a town's server often is one). gisnet serves it from a copy
in the package instead (``gisnet/static/swagger-ui``: npm ``swagger-ui-dist``
5.35.0, Apache-2.0, with its LICENSE and NOTICE, the files unchanged from the
package ``npm pack`` fetches), under :data:`ASSETS_PATH`. FastAPI's ``/redoc``
is not offered: ReDoc's bundle fetches its logo from its CDN whatever the page
says.

``GET /labels`` gives the API's users the words the maps, the QGIS styles and
the letters use for its codes (:func:`gisnet.labels.vocabulary`): the answers
carry the codes (``required``), a client shows the labels ("Must connect").
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from fastapi import FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from ..labels import vocabulary
from ..serialize import dumps

#: URL prefix of the vendored assets.
ASSETS_PATH = "/docs-assets"
#: Asset name -> (folder under gisnet/static, media type).
ASSETS: dict[str, tuple[str, str]] = {
    "swagger-ui-bundle.js": ("swagger-ui", "text/javascript; charset=utf-8"),
    "swagger-ui.css": ("swagger-ui", "text/css; charset=utf-8"),
    "favicon-32x32.png": ("swagger-ui", "image/png"),
}


@cache
def _asset(name: str) -> bytes:
    folder, _ = ASSETS[name]
    return resources.files("gisnet").joinpath("static", folder, name).read_bytes()


def add_docs_routes(app: FastAPI) -> None:
    """``/docs`` and its assets on ``app`` (created with ``docs_url=None,
    redoc_url=None`` so FastAPI's CDN pages are not there)."""
    title = f"{app.title} API"
    openapi_url = app.openapi_url or "/openapi.json"
    favicon = f"{ASSETS_PATH}/favicon-32x32.png"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=title,
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=favicon)

    @app.get("/labels", summary="The words for gisnet's codes")
    async def labels() -> Response:
        """Code -> label of every coded column (``status``, ``severity``, ``measure``,
        ``source``, ``flags`` ...), the column labels with their units, and the text
        shown for an empty value: the vocabulary of the maps, QGIS styles and letters."""
        return Response(dumps(vocabulary()), media_type="application/json")

    @app.get(ASSETS_PATH + "/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise HTTPException(404, f"no docs asset {name!r}")
        return Response(_asset(name), media_type=ASSETS[name][1],
                        headers={"Cache-Control": "public, max-age=86400"})
