"""The QGIS style of each result collection of the OGC API.

A collection of a result layer with geometry links its style
(``rel="describedby"``, ``type`` :data:`QML_TYPE`) at
``/collections/{collectionId}/styles/gisnet``: the QML of the GeoPackage's
default style (:func:`gisnet.output.styles.layer_qml`: the web maps' classes and
colours, field aliases with units), which QGIS loads onto the OGC API layer
(Layer Properties, Symbology, Style, Load Style): the collection's properties are
the layer's columns, so the classes and aliases apply as they do to the
GeoPackage. Input layers and tables without geometry have no style.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from fastapi import FastAPI, Request
from fastapi.responses import Response

from ..output.metadata import layer_docs
from ..output.styles import STYLE_NAME, layer_qml
from .errors import UnknownIdError

__all__ = ["QML_TYPE", "add_style_routes", "collection_qml", "style_links"]

#: The media type of a QGIS style document.
QML_TYPE = "application/vnd.qgis.qml+xml"
_made: dict[tuple[str, int], tuple[Any, str | None]] = {}


def collection_qml(cid: str, table: Any) -> str | None:
    """The QML style of the collection ``cid`` holding ``table`` (a
    :class:`~gisnet.service.tables.ResultTable`), or None (an input layer, a table, a
    layer of mixed geometry types). Made once per table held."""
    key = (cid, id(table))
    held = _made.get(key)
    if held is None or held[0] is not table:
        held = _made[key] = (table, _qml(cid, table))
    return held[1]


def _qml(cid: str, table: Any) -> str | None:
    geo = table.geometry_name
    if cid not in layer_docs() or geo is None:
        return None
    # (shapes held as WKB are made a chunk at a time for this and let go)
    types = list(dict.fromkeys(
        t for g in table.geometry_chunks()
        for t in pd.unique(np.asarray(g.geom_type.dropna(), dtype=object))))
    if len(types) != 1:
        return None
    cols = [str(c) for c in table.frame.columns if c != geo]
    return layer_qml(cid, str(types[0]), cols)


def style_links(cid: str, table: Any, base: str) -> list[dict[str, str]]:
    """The style link of a collection document (none without a style)."""
    if collection_qml(cid, table) is None:
        return []
    return [{"href": f"{base}/collections/{cid}/styles/{STYLE_NAME}", "rel": "describedby",
             "type": QML_TYPE, "title": "QGIS style (QML): classes, colours, field labels"}]


def add_style_routes(app: FastAPI, tables: dict[str, Any]) -> None:
    """Register ``GET /collections/{collectionId}/styles/gisnet``.

    Parameters
    ----------
    app
        The service.
    tables
        Collection id -> its :class:`~gisnet.service.ogc.Collection` (``table``).
    """

    @app.get("/collections/{collectionId}/styles/" + STYLE_NAME,
             summary="The QGIS style (QML) of a result layer", tags=["OGC API - Features"],
             response_class=Response)
    async def style(collectionId: str, request: Request) -> Response:
        c = tables.get(collectionId)
        qml = None if c is None else collection_qml(collectionId, c.table)
        if qml is None:
            raise UnknownIdError("collectionId", f"no style of collection {collectionId!r} "
                                 "(result layers with geometry have one)", layer=collectionId)
        return Response(qml, media_type=QML_TYPE, headers={
            "Content-Disposition": f'inline; filename="{collectionId}.qml"'})
