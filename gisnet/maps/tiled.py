"""Tiled pages: the big layers of a page drawn from vector tiles instead of embedded data.

A folium page cannot hold a million parcels. Above :data:`TILED_ABOVE_PARCELS`
parcels (``tiles="auto"``, the default of ``gisnet run`` and ``gisnet map``),
or always with ``tiles="always"``, every layer of :data:`TILE_MIN_FEATURES`
features or more is cut into vector tiles (:mod:`gisnet.maps.tiles`) written
to ``DIR/tiles/<layer>.pmtiles``; the page keeps its look (title, legend,
layer control, colours, popups) and draws those layers with protomaps-leaflet
(vendored in ``gisnet/static/protomaps-leaflet``, BSD-3-Clause), which reads
the archives with HTTP range requests. Smaller layers stay inside the page.

The page's search box finds every feature of the tiled layers, not only what the
page holds: an index of their ids and addresses is written beside the archives
(:mod:`gisnet.maps.search_index`). Such a page needs a web server:
``gisnet serve --maps DIR`` serves the pages and archives
(``http://HOST:PORT/maps/index.html``). Small towns keep the
self-contained pages that open from disk.

The threshold: the city-scale index page (57,000 parcels) is 10.5 MB and pages
grow with the parcels, so 75,000 parcels is where the index page would pass the
15 MB budget (:data:`gisnet.maps.render.MAX_PAGE_BYTES`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pyarrow.compute as pc

from ..errors import ConfigError
from ..memory import release
from ..threads import default_threads
from .common import MapLayer, Page
from .encoding import TextCodes
from .search_index import SearchLayer, write_search_index
from .tiles import DETAIL_ZOOM, OVERVIEW_MIN_ZOOM, TileStats, write_layer_tiles

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

#: ``tiles="auto"`` tiles the pages of a town with more parcels than this.
TILED_ABOVE_PARCELS = 75_000
#: On a tiled page, layers with at least this many features come from tiles.
TILE_MIN_FEATURES = 5_000
#: Tile archives are cut on several threads when they hold this many features in all.
PARALLEL_MIN_FEATURES = 200_000
#: At most this many threads cut archives (each holds one archive's working set, bounded
#: by the blocks of :mod:`gisnet.maps.tiles`: 150-175 MB above the layer itself for
#: 300,000 parcels or taps, ``docs/performance.md``).
MAX_THREADS = 2
#: Distinct texts of a kept property shared with another layer's from this many.
SHARED_TEXTS_MIN = 10_000
#: Choices of ``--tiles``.
TILE_MODES = ("auto", "always", "never")
#: Folder of the archives, beside the pages.
TILES_DIR = "tiles"
TILED_NOTE = ("Large layers are drawn from vector tiles: open this page through "
              "`gisnet serve --maps DIR` (a page opened from disk cannot read them).")
_MARK = '{"tiled":'


def wants_tiles(town: Town, mode: str) -> bool:
    """Whether the pages of ``town`` are tiled under ``mode`` (auto, always, never)."""
    if mode not in TILE_MODES:
        raise ConfigError(f"--tiles {mode!r}: choose from {', '.join(TILE_MODES)}")
    if mode != "auto":
        return mode == "always"
    parcels = town.layers.get("parcels")
    return parcels is not None and len(parcels) > TILED_ABOVE_PARCELS


@dataclass
class _Source:
    gdf: gpd.GeoDataFrame
    props: dict[str, Any]
    n: int


class Tiler:
    """Collects the layers a page would embed and are big enough to tile.

    :class:`~gisnet.maps.common.MapContext` hands it every layer it encodes
    (``ctx.tiler``); a layer of ``min_features`` or more is kept (its frame and
    properties) and the page gets a placeholder; :meth:`write` then cuts each
    kept layer into its archive and fills in the placeholders.
    """

    def __init__(self, min_features: int = TILE_MIN_FEATURES):
        self.min_features = min_features
        self.sources: dict[str, _Source] = {}
        self.stats: dict[str, TileStats] = {}
        self._texts: dict[str, list[Any]] = {}  # distinct texts kept, by property

    def defer(self, gdf: gpd.GeoDataFrame, props: Mapping[str, Any] | None) -> \
            tuple[str, int] | None:
        """A placeholder for a layer to tile, or None when the layer stays in the page."""
        if len(gdf) < self.min_features:
            return None
        geoms = gdf.geometry
        n = int((~(geoms.isna() | geoms.is_empty)).sum())
        fams = set(gdf.geom_type.dropna().str.replace("Multi", "").unique())
        if n < self.min_features or len(fams) != 1:
            return None  # mixed geometry types (quality findings) stay in the page
        token = f"src{len(self.sources)}"
        # only the geometry is kept (the page's frame with every column can go)
        geom = gpd.GeoDataFrame(geometry=gdf.geometry.reset_index(drop=True), crs=gdf.crs)
        # text columns as codes: they wait here while every page is built
        kept = {k: self._shared(k, (TextCodes.of(v) or v)
                                if isinstance(v, list | np.ndarray) else v)
                for k, v in (props or {}).items()}
        self.sources[token] = _Source(geom, kept, n)
        return json.dumps({"tiled": token, "n": n}, separators=(",", ":")), n

    def _shared(self, name: str, col: Any) -> Any:
        """``col`` with its distinct texts the very array another kept layer holds for
        the property ``name`` when that array has them all (in any order: the codes
        are renumbered). A county's parcel ids, addresses and building ids are drawn by
        several layers, about 20-25 MB of texts each; what the tiles and the search
        index make of a property depends on each row's text, not on its code."""
        if not isinstance(col, TextCodes) or len(col.uniques) < SHARED_TEXTS_MIN:
            return col
        u = col.uniques
        for other in self._texts.setdefault(name, []):
            if other is u:
                return col
            if len(other) < len(u) or other.type != u.type:
                continue
            where = pc.index_in(u, value_set=other)
            if where.null_count:
                continue  # a text the other has not
            pos = where.to_numpy(zero_copy_only=False).astype(np.int64)
            codes = np.where(col.codes >= 0, pos[np.maximum(col.codes, 0)], -1)
            return TextCodes(codes.astype(TextCodes._code_dtype(len(other))), other)
        self._texts[name].append(u)
        return col

    def write(self, pages: Iterable[Page], out_dir: Path, *,
              threads: int | None = None) -> dict[str, TileStats]:
        """Write ``out_dir/tiles/<layer key>.pmtiles`` for each placeholder of ``pages``
        and replace the placeholders with what the page needs to draw them. Each kept
        layer (:attr:`sources`) is let go once its archive is cut and the search index
        has read it.

        With archives of :data:`PARALLEL_MIN_FEATURES` features or more in all, they
        are cut on ``threads`` threads (default: gisnet's thread share,
        :func:`gisnet.threads.default_threads`, at most :data:`MAX_THREADS`; 1 = one
        after the other), biggest first. GEOS, PROJ and numpy release the GIL for
        much of the work; threads share the town's layers,
        where forked processes would each copy the pages they touch (at county scale
        two workers added 3.5 GB, two threads about 2 GB: ``docs/performance.md``).
        """
        self._texts.clear()  # (each kept layer's texts then go with the layer)
        jobs: dict[str, tuple[str, str, tuple[str, ...], str | None]] = {}
        searched: dict[str, SearchLayer] = {}
        todo: list[tuple[MapLayer, str]] = []
        for page in pages:
            for lyr in page.layers:
                if not lyr.data.startswith(_MARK):
                    continue
                token = json.loads(lyr.data)["tiled"]
                if isinstance(token, dict):
                    continue  # a layer object several pages share: written already
                todo.append((lyr, token))
                if token not in jobs:
                    style_keys = tuple(k for k in (lyr.class_key, lyr.width_key, lyr.dash_key,
                                                   lyr.radius_key) if k)
                    jobs[token] = (lyr.key, lyr.name, style_keys, lyr.width_key)
                src = self.sources[token]
                cols = {k: src.props[k] for k in lyr.search
                        if isinstance(src.props.get(k), list | TextCodes)}
                if cols and token not in searched:
                    searched[token] = SearchLayer(lyr.key, src.gdf, cols)
        sizes = {t: self.sources[t].n for t in jobs}
        order = sorted(jobs, key=lambda t: -sizes[t])
        total = sum(sizes.values())
        n = threads if threads is not None else min(MAX_THREADS, default_threads())
        n = max(1, min(n, len(order))) if total >= PARALLEL_MIN_FEATURES else 1
        indexed = set(searched)

        def cut(t: str) -> tuple[TileStats, dict[str, Any]]:
            try:
                return self._cut(t, *jobs[t], out_dir)
            finally:
                # the layer's shapes and properties go once cut (and once indexed: the
                # search index holds what it reads), then the job's working arrays
                self.sources.pop(t, None)
                release()

        log.info("cutting %d tile archives (%d features) on %d thread(s)", len(order), total, n)

        def search() -> dict[str, Any] | None:
            t0 = time.perf_counter()
            layers = list(searched.values())
            searched.clear()  # (the layers then go with the index's work)
            try:
                made = write_search_index(out_dir / TILES_DIR, layers)
            finally:
                del layers
                release()
            if made is not None:
                log.info("search index: %d entries of %d layers in %.1f s", made["entries"],
                         len(indexed), time.perf_counter() - t0)
            return made

        with ThreadPoolExecutor(n, thread_name_prefix="gisnet-tiles") as ex:
            # The index (one thread, mostly Arrow and numpy) is made beside the
            # archives, once those of at least half the biggest's features have
            # started: its working set (about 1 GB at county scale) beside the
            # smaller archives' rather than the biggest's.
            big = sizes[order[0]] / 2 if order else 0
            indexing = None
            cutting = {}
            for t in order:
                if indexing is None and sizes[t] < big:
                    indexing = ex.submit(search)
                cutting[t] = ex.submit(cut, t)
            if indexing is None:
                indexing = ex.submit(search)
            results = {t: f.result() for t, f in cutting.items()}
            index = indexing.result()
        done: dict[str, dict[str, Any]] = {}
        for t in jobs:
            st, spec = results[t]
            self.stats[jobs[t][0]] = st
            log.info("tiles %s: %d features, %d tiles, %.1f MB in %.1f s", st.path.name,
                     st.features, st.tiles, st.bytes / 1e6, st.seconds)
            if index is not None and t in indexed:  # found by the page's search box
                spec["tiled"]["search"] = index["url"]
            done[t] = spec
        for lyr, token in todo:
            lyr.data = json.dumps(done[token], separators=(",", ":"))
            lyr.count = done[token]["n"]
        return self.stats

    def _cut(self, token: str, key: str, name: str, style_keys: tuple[str, ...],
             rank_key: str | None, out_dir: Path) -> tuple[TileStats, dict[str, Any]]:
        """Cut one archive; its stats and what the page needs to draw it."""
        src = self.sources[token]
        rel = f"{TILES_DIR}/{key}.pmtiles"
        # the widest lines (the trunks) first where an overview tile cannot hold them all
        st = write_layer_tiles(out_dir / rel, src.gdf, src.props, name=name,
                               style_keys=style_keys, rank_key=rank_key)
        return st, {"tiled": {  # "tiled" first: is_tiled() reads the start of the text
            "url": rel, "family": st.family, "formats": st.formats,
            "constants": st.constants, "bounds": st.bounds, "detailZoom": DETAIL_ZOOM,
            "minZoom": OVERVIEW_MIN_ZOOM, "overviewMax": st.overview_max}, "n": st.features}


def is_tiled(lyr: MapLayer) -> bool:
    """Whether a layer of a page is drawn from tiles."""
    return lyr.data.startswith(_MARK)


def page_assets() -> str:
    """Scripts a tiled page adds: protomaps-leaflet and gisnet's tiled-layer script."""
    from importlib import resources

    from .assets import script_safe

    root = resources.files("gisnet").joinpath("static")
    pm = root.joinpath("protomaps-leaflet", "protomaps-leaflet.js").read_text(encoding="utf-8")
    pm = pm.replace("//# sourceMappingURL=protomaps-leaflet.js.map", "")
    own = root.joinpath("gisnet-tiles.js").read_text(encoding="utf-8")
    return f"<script>{script_safe(pm)}</script>\n<script>{script_safe(own)}</script>"
