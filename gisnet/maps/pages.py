"""The pages of a run, the index page, and the results GeoPackage they are drawn from.

:func:`build_pages` asks each page module for its layers (a page whose inputs
are missing is not written) and assembles ``index.html`` from all of them;
:func:`write_maps` renders and writes them; :func:`read_results` reads the
result layers back from ``gisnet-results.gpkg`` for ``gisnet map``.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd

from ..errors import ConfigError, LayerError, NotFoundError
from ..memory import release
from ..output import recover
from ..output._testhooks import kill_point
from .capacity import capacity_layers
from .common import MapContext, MapLayer, Page, town_center
from .network import network_layers
from .obligations import obligation_layers
from .render import save_page
from .sampling import sampling_layers
from .tiled import Tiler, wants_tiles

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

#: Pages written by :func:`write_maps`, in order.
PAGES: tuple[str, ...] = ("network", "obligations", "sampling", "capacity", "index")


def build_pages(town: Town, results: Mapping[str, pd.DataFrame],
                names: Iterable[str] | None = None, *, tiler: Any = None) -> dict[str, Page]:
    """The pages whose inputs exist, as :class:`Page` objects (not yet written).

    Parameters
    ----------
    town
        The loaded town (name, profile, CRS, canonical layers).
    results
        Result layers by name (``obligations``, ``pipes_capacity`` ...), in the
        town's working CRS (a frame without a CRS is taken to be in it).
    names
        Pages wanted (default: all of :data:`PAGES`).
    tiler
        A :class:`gisnet.maps.tiled.Tiler` for tiled pages (default: none, every
        layer inside the page).
    """
    wanted = list(PAGES if names is None else names)
    bad = [n for n in wanted if n not in PAGES]
    if bad:
        raise ConfigError(f"unknown map {bad[0]!r}; choose from {', '.join(PAGES)}")
    ctx = MapContext(town, results)
    ctx.tiler = tiler
    pages: dict[str, Page] = {}
    built: dict[str, tuple[list[MapLayer], list[dict[str, str]]]] = {}

    def get(name: str) -> tuple[list[MapLayer], list[dict[str, str]]]:
        if name not in built:
            if name == "network":
                built[name] = (network_layers(ctx), [])
            elif name == "obligations":
                built[name] = (obligation_layers(ctx) if ctx.table("obligations") is not None
                               else [], [])
            elif name == "sampling":
                has = any(ctx.table(k) is not None for k in
                          ("control_manholes", "control_paths", "sampling_plan"))
                built[name] = (sampling_layers(ctx) if has else [], [])
            elif name == "capacity":
                has = ctx.table("pipes_capacity") is not None or ctx.table("plants") is not None
                built[name] = capacity_layers(ctx) if has else ([], [])
            release()  # what the page made and dropped, before the next is built
        return built[name]

    titles = {"network": "Sewer network and data quality",
              "obligations": "Who must connect to the public sewer",
              "sampling": "Control manholes and sampling",
              "capacity": "Pipe and plant capacity",
              "index": "Sewer maps: all layers"}
    available = [n for n in PAGES[:-1] if get(n)[0]]
    center = town_center(ctx)
    for name in wanted:
        if name == "index":
            continue
        layers, panels = get(name)
        if not layers:
            log.info("no inputs for %s.html; not written", name)
            continue
        links = [{"href": "index.html", "label": "all layers"}] + [
            {"href": f"{o}.html", "label": o} for o in available if o != name]
        pages[name] = Page(name, titles[name], layers, panels, links, center)
    if "index" in wanted and available:
        seen: dict[str, MapLayer] = {}
        index_panels: list[dict[str, str]] = []
        for name in available:
            lyrs, pnls = get(name)
            for lyr in lyrs:
                if lyr.key not in seen:
                    seen[lyr.key] = lyr
            index_panels.extend(p for p in pnls if p not in index_panels)
        if any(k.startswith("parcels_") for k in seen):
            seen.pop("parcels", None)  # the status layers already draw every parcel
        ordered = list(seen.values())
        primary = {"mains", "pipes_capacity", "parcels_required", "parcels_review",
                   "control_manholes", "siu", "plants"}
        if "pipes_capacity" in seen:
            primary.discard("mains")
        index_layers = []
        for lyr in ordered:
            copy = MapLayer(**{**lyr.__dict__})
            copy.show = lyr.key in primary or (not primary & set(seen) and lyr.key == "parcels")
            index_layers.append(copy)
        links = [{"href": f"{o}.html", "label": o} for o in available]
        pages["index"] = Page("index", titles["index"], index_layers, index_panels, links,
                              center)
    return pages


def write_maps(
    town: Town,
    results: Mapping[str, pd.DataFrame],
    out_dir: str | os.PathLike[str],
    *,
    self_contained: bool = True,
    names: Iterable[str] | None = None,
    tiles: str = "auto",
    before_tiles: Callable[[], Any] | None = None,
) -> list[Path]:
    """Write the planners' web maps whose inputs exist.

    Parameters
    ----------
    town
        The loaded town: its name and profile go in the title; its canonical
        layers (parcels, mains, manholes, plants, users) are the base of the
        pages; its working CRS is that of results without a CRS.
    results
        Result layers by name as written to ``gisnet-results.gpkg``
        (``quality``, ``graph_nodes``, ``graph_edges``, ``obligations``,
        ``obligation_evidence``, ``connection_zone``, ``control_manholes``,
        ``control_paths``, ``sampling_plan``, ``pipes_capacity``, ``plants``).
        Any may be missing; a page is written only if its inputs exist
        (``network`` needs only the town's mains).
    out_dir
        Folder for the pages (created if needed).
    self_contained
        Inline every script and stylesheet so the pages render offline (the
        default); False loads Leaflet from a CDN.
    names
        Pages to write, from :data:`PAGES` (default all).
    tiles
        ``auto`` (tiled above :data:`gisnet.maps.tiled.TILED_ABOVE_PARCELS`
        parcels), ``always`` or ``never``: draw the big layers from vector tiles
        written to ``out_dir/tiles/`` (see :mod:`gisnet.maps.tiled`).
    before_tiles
        Called once the pages are built, before the tile archives are cut
        (:meth:`gisnet.maps.tiled.Tiler.write`): with one thread to use,
        ``gisnet run`` writes its GeoPackage there.

    Returns
    -------
    list of Path
        The pages written, in :data:`PAGES` order. Each is written atomically.

    Raises
    ------
    ConfigError
        If ``names`` holds an unknown page.
    """
    out = Path(out_dir)
    tiler = Tiler() if wants_tiles(town, tiles) else None
    t = time.perf_counter()
    pages = build_pages(town, results, names, tiler=tiler)
    release()  # what building the pages made and dropped, before the tiles are cut
    log.info("pages built in %.1f s%s", time.perf_counter() - t,
             f"; {len(tiler.sources)} layers to tile" if tiler is not None else "")
    if before_tiles is not None:
        before_tiles()
    if tiler is not None:
        tiler.write(pages.values(), out)
        self_contained = True  # served pages need no CDN: Leaflet and the plugin inside
    written = []
    for n in PAGES:
        if n in pages:
            written.append(save_page(pages[n], town, out / f"{n}.html", self_contained))
            kill_point("maps")
    return written


RESULT_LAYERS: tuple[str, ...] = (
    "quality", "graph_nodes", "graph_edges", "obligations", "obligation_evidence",
    "connection_zone", "frontage", "control_manholes", "control_paths", "sampling_plan",
    "pipes_capacity", "plants", "overdue", "changes",
)


def _whole_places(df: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """A layer written as points with each row's whole shape in ``geometry_wkt``
    (``quality``, see :func:`gisnet.output.writing.file_form`) back in its in-memory
    form: the shapes as the geometry, without the WKT column."""
    if "geometry_wkt" not in df.columns or not isinstance(df, gpd.GeoDataFrame):
        return df
    import shapely

    wkt = df["geometry_wkt"].astype(object).where(df["geometry_wkt"].notna(), None)
    shapes = shapely.from_wkt(wkt.to_numpy(), on_invalid="ignore")  # unreadable: no place
    out = df.drop(columns="geometry_wkt")
    out[df.geometry.name] = gpd.GeoSeries(shapes, index=df.index, crs=df.crs)
    return out


def read_results(out_dir: str | os.PathLike[str]) -> dict[str, pd.DataFrame]:
    """The result layers of ``out_dir/gisnet-results.gpkg`` that the maps use.

    Raises
    ------
    NotFoundError
        If the GeoPackage does not exist.
    """
    import pyogrio

    recover(out_dir)  # a run killed while publishing: complete it first
    path = Path(out_dir) / "gisnet-results.gpkg"
    if not path.is_file():
        raise NotFoundError("no results GeoPackage; run `gisnet run` (or an analysis "
                            "command) with this --out first", path=path)
    out: dict[str, pd.DataFrame] = {}
    name = None
    try:
        with warnings.catch_warnings(record=True) as caught:  # GDAL's, to the log
            warnings.simplefilter("always")
            present = {str(row[0]) for row in pyogrio.list_layers(path)}
            for name in RESULT_LAYERS:
                if name in present:
                    out[name] = _whole_places(gpd.read_file(path, layer=name, engine="pyogrio",
                                                            use_arrow=True))
        for w in caught:
            log.warning("%s: %s", path, str(w.message).strip())
    except pyogrio.errors.DataSourceError as exc:
        detail = str(exc).strip().splitlines()[0]
        raise LayerError(f"results GeoPackage cannot be read ({detail}); run the analysis "
                         "again with this --out", path=path, layer=name) from exc
    return out
