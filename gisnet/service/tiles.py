"""Serving tiled map pages: the tile archives beside the pages, and single tiles.

Tiled pages (:mod:`gisnet.maps.tiled`) read ``tiles/<layer>.pmtiles`` next to
them with HTTP range requests; :func:`add_tile_routes` serves

``GET /maps/tiles/{layer}.pmtiles``
    the archive, with ``Range`` support (``206 Partial Content``), as the page's
    protomaps-leaflet asks for it;
``GET /maps/tiles/search.json``, ``GET /maps/tiles/search-<hex>.json``
    the pages' search index (:mod:`gisnet.maps.search_index`);
``GET /tiles/{layer}/{z}/{x}/{y}.mvt``
    one Mapbox Vector Tile read from the archive (for other clients: QGIS,
    MapLibre), ``404`` where the archive has no tile.

:func:`create_maps_app` is the whole server of ``gisnet serve --maps DIR``:
pages and tiles of a folder, without loading a town (a county's pages are
served at once; the analyses are not).
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, RedirectResponse, Response

from .. import __version__
from ..errors import NotFoundError
from ..serialize import dumps
from .errors import ServiceUnavailable
from .inputs import MAP_TYPES, map_path, map_response

#: Folder of the archives inside the maps folder (as :data:`gisnet.maps.tiled.TILES_DIR`).
TILES_DIR = "tiles"
_LAYER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
MVT = "application/vnd.mapbox-vector-tile"
_HEADER_BYTES = 127  # a PMTiles v3 header
#: The search index files beside the archives (:mod:`gisnet.maps.search_index`).
_SEARCH = re.compile(r"^search(-[0-9a-f]{1,64})?\.json$")


def archive_path(maps_dir: Path | None, layer: str, suffix: str = ".pmtiles") -> Path:
    """``maps_dir/tiles/<layer><suffix>``; :class:`NotFoundError` for anything else."""
    if maps_dir is None:
        raise NotFoundError("no map folder is served (gisnet serve --maps DIR)")
    if not _LAYER.match(layer):
        raise NotFoundError(f"no tile layer {layer!r}")
    root = (maps_dir / TILES_DIR).resolve()
    path = (root / f"{layer}{suffix}").resolve()
    if path.parent != root or not path.is_file():
        raise NotFoundError(f"no tile layer {layer!r} (see /maps/{TILES_DIR}/)")
    return path


def _damaged(path: Path, why: str) -> ServiceUnavailable:
    return ServiceUnavailable(f"tile archive {path.name!r} cannot be read: {why}; write the "
                              "maps again (gisnet run or gisnet map)")


def check_archive(path: Path) -> None:
    """:class:`ServiceUnavailable` (503) unless ``path`` starts as a PMTiles v3 archive."""
    with open(path, "rb") as f:
        head = f.read(_HEADER_BYTES)
    if len(head) < _HEADER_BYTES or not head.startswith(b"PMTiles") or head[7] != 3:
        raise _damaged(path, "not a PMTiles v3 archive (damaged or truncated)")


class _Archives:
    """One open PMTiles reader per archive, reopened when the file changes."""

    def __init__(self) -> None:
        self._open: dict[Path, tuple[float, Any, Any]] = {}

    def tile(self, path: Path, z: int, x: int, y: int) -> bytes | None:
        """The tile's bytes as stored (gzip or not), None where the archive has none;
        :class:`ServiceUnavailable` (503) when the archive cannot be read."""
        from pmtiles.reader import MmapSource, Reader

        mtime = path.stat().st_mtime
        held = self._open.get(path)
        if held is None or held[0] != mtime:
            check_archive(path)
            f = open(path, "rb")  # noqa: SIM115  (kept open while served)
            try:
                reader = Reader(MmapSource(f))
            except Exception as exc:  # an empty file cannot be mapped (ValueError)
                f.close()
                raise _damaged(path, exc.__class__.__name__) from None
            if held is not None:
                held[1].close()
            held = self._open[path] = (mtime, f, reader)
        try:
            return held[2].get(z, x, y)
        except Exception as exc:  # the reader on damaged bytes: EOFError, zlib, struct ...
            raise _damaged(path, f"{exc.__class__.__name__} reading tile {z}/{x}/{y}") \
                from None


def add_tile_routes(app: FastAPI, maps_dir: Path | None) -> None:
    """Register ``/maps/tiles/{layer}.pmtiles`` and ``/tiles/{layer}/{z}/{x}/{y}.mvt``."""
    archives = _Archives()

    @app.get("/maps/tiles/{archive}", summary="A tile archive of the tiled map pages "
             "(PMTiles; HTTP range requests answered with 206), or their search index")
    async def tile_archive(archive: str) -> Response:
        if _SEARCH.match(archive):
            return FileResponse(archive_path(maps_dir, archive[:-5], ".json"),
                                media_type="application/json",
                                headers={"Cache-Control": "no-cache"})
        if not archive.endswith(".pmtiles"):
            raise NotFoundError(f"no tile archive {archive!r}")
        path = archive_path(maps_dir, archive[: -len(".pmtiles")])
        check_archive(path)
        return FileResponse(path, media_type="application/vnd.pmtiles")

    @app.get("/tiles/{layer}/{z}/{x}/{y}.mvt", summary="One Mapbox Vector Tile of a layer")
    async def one_tile(layer: str, z: int, x: int, y: int, request: Request) -> Response:
        path = archive_path(maps_dir, layer)
        if not (0 <= z <= 30 and 0 <= x < (1 << z) and 0 <= y < (1 << z)):
            raise NotFoundError(f"tile {z}/{x}/{y} is outside the tile grid")
        data = archives.tile(path, z, x, y)
        if data is None:
            raise NotFoundError(f"layer {layer!r} has no tile {z}/{x}/{y}")
        headers = {"Cache-Control": "no-cache"}
        if data[:2] == b"\x1f\x8b":
            if "gzip" in request.headers.get("accept-encoding", ""):
                headers["Content-Encoding"] = "gzip"
            else:
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError, zlib.error):
                    raise _damaged(path, f"tile {z}/{x}/{y} is not valid gzip") from None
        return Response(data, media_type=MVT, headers=headers)


def create_maps_app(maps_dir: str | Path) -> FastAPI:
    """A server of a maps folder alone: ``/maps/{page}``, its tiles, ``/`` -> index page.

    Parameters
    ----------
    maps_dir
        The folder ``gisnet run`` or ``gisnet map`` wrote the pages to.
    """
    from fastapi.exceptions import HTTPException

    from ..errors import GisnetError
    from .errors import http_status, public_message

    root = Path(maps_dir)
    app = FastAPI(title="gisnet maps", version=__version__,
                  description=f"Map pages and vector tiles of the folder {root.name!r}.")

    @app.exception_handler(GisnetError)
    async def _missing(request: Request, exc: GisnetError) -> Response:
        body = {"detail": public_message(exc)}
        if getattr(exc, "field", None):
            body["field"] = exc.field  # type: ignore[attr-defined]
        return Response(dumps(body), status_code=http_status(exc),
                        media_type="application/json")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        return Response(dumps({"detail": str(exc.detail)}), status_code=exc.status_code,
                        media_type="application/json")

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return RedirectResponse("/maps/index.html")

    @app.get("/maps", summary="The map pages served")
    async def pages() -> Response:
        names = sorted(p.name for p in root.iterdir()
                       if p.is_file() and p.suffix in MAP_TYPES) if root.is_dir() else []
        return Response(dumps({"maps": names}), media_type="application/json")

    @app.get("/maps/{name}", summary="A map page")
    async def page(name: str) -> Response:
        return map_response(map_path(root, name))

    add_tile_routes(app, root)
    return app
