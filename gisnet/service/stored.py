"""The service's state from a finished run (``gisnet serve --results DIR`` or
``--results postgresql://...?schema=NAME``), not recomputed.

:func:`read_results` checks the run's manifest (every file's hash, the
gisnet version that wrote it, the ``town_info`` record), reads the result layers
of ``gisnet-results.gpkg`` (pyogrio, Arrow) as the service's tables, rebuilds the
directed sewer graph from ``graph_nodes`` / ``graph_edges``
(:func:`gisnet.graph.graph_from_gdfs`) and from it, in linear passes, the
tracing index, the connection points (``control_manholes``: its ``edge_key``
and ``tap_source``) and the capacity result the what-if needs (the stored
accumulated flows, split shares and capacities on the rebuilt graph's arrays).
No analysis runs over the parcels. From PostGIS (:mod:`gisnet.service.stored_pg`)
the schema's newest ``gisnet_runs`` row is checked in the manifest's stead (its
``town_info``, the version, each table's row count) and the tables are read as
the same frames; everything after is shared.

What the results cannot answer (they hold no input layer of the town: an
upstream trace lists the parcels', buildings' and users' own rows; obligations
and control manholes of request geometry need the streets, buildings, laterals
and owner manholes) is in ``TownState.unavailable``: those routes answer 503
with the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyogrio
import shapely
from pyproj import CRS

from .. import __version__
from ..errors import ConfigError
from ..io.postgis import is_database
from ..output.publish import MANIFEST_FILE, read_manifest_file, sha256_files
from ..output.town_record import TOWN_INFO_FORMAT
from ..output.writing import RESULTS_FILE
from ..report import Report
from .tables import ARROW_TEXT, LayerLater, Shapes, compact_arrow_text, objects

log = logging.getLogger("gisnet.service")

#: The result layers the service holds, in the order ``gisnet serve`` holds them
#: (``Results.layers()``); ``changes`` (written by ``gisnet run`` only) is not served.
SERVED_LAYERS = ("graph_nodes", "graph_edges", "obligations", "obligation_evidence",
                 "connection_zone", "frontage", "control_manholes", "control_paths",
                 "sampling_plan", "pipes_capacity", "plants", "plant_increase", "quality",
                 "worklist", "overdue")

_NO_INPUT = ("the results of a run hold no input layer of the town; serve the town "
             "itself (gisnet serve --layers DIR) for this")

#: What ``serve --results`` cannot answer, and why (keys of ``TownState.unavailable``).
NOT_FROM_RESULTS = {
    "upstream_trace": "an upstream trace lists the rows of the town's parcels, buildings "
                      "and users layers and each parcel's design flow; " + _NO_INPUT,
    "obligations_of_geometry": "obligations of request geometry are measured against the "
                               "town's mains, streets, buildings and district; " + _NO_INPUT,
    "control_manholes_of_geometry": "control manholes of request geometry need the town's "
                                    "laterals and owner-installed manholes; " + _NO_INPUT,
}


# ---------------------------------------------------------------------------
# the manifest
# ---------------------------------------------------------------------------


def check_results_folder(results_dir: str | Path) -> dict[str, Any]:
    """The manifest of a folder ``gisnet run`` wrote, checked; else a ConfigError.

    Checked: the manifest is there and reads; it was written by this gisnet version
    and has a ``town_info`` record; every file it lists is there with its hash;
    the results GeoPackage is one of them. The folder is only read (an interrupted
    publish is not completed here: ``gisnet run`` does that).
    """
    man = check_manifest(results_dir)
    check_digests(results_dir, man)
    return man


def check_manifest(results_dir: str | Path) -> dict[str, Any]:
    """:func:`check_results_folder` but the files' hashes (:func:`check_digests`)."""
    folder = Path(results_dir)
    if not folder.is_dir():
        raise ConfigError("the results to serve are not a folder (give the --out folder "
                          "of `gisnet run`)", path=folder)
    path = folder / MANIFEST_FILE
    man = read_manifest_file(folder)  # read only: no interrupted publish completed
    if man is None:
        raise ConfigError(f"no run manifest ({MANIFEST_FILE}): not a folder written by a "
                          "whole `gisnet run`", path=path)
    run = man.get("run_id")
    version = man.get("gisnet_version")
    if version != __version__:
        raise ConfigError(f"run {run} was written by gisnet {version}, this is gisnet "
                          f"{__version__}: run `gisnet run` again with this version",
                          path=path)
    info = man.get("town_info")
    if not isinstance(info, dict) or info.get("format") != TOWN_INFO_FORMAT:
        raise ConfigError(f"the run manifest has no town_info record of format "
                          f"{TOWN_INFO_FORMAT} (what serving the results needs of the town); "
                          "run `gisnet run` again", path=path)
    if RESULTS_FILE not in man["files"]:
        raise ConfigError(f"run {run} wrote no {RESULTS_FILE}", path=path)
    for rel, _ in sorted(man["files"].items()):
        if not (folder / rel).is_file():
            raise ConfigError(f"missing: run {run} wrote it (its manifest lists it)",
                              path=folder / rel)
    return man


def check_digests(results_dir: str | Path, man: Mapping[str, Any]) -> None:
    """Every file the manifest ``man`` lists has the SHA-256 it lists; else a ConfigError."""
    folder = Path(results_dir)
    listed = sorted(man["files"].items())
    digests = sha256_files([folder / rel for rel, _ in listed])
    for (rel, rec), digest in zip(listed, digests, strict=True):
        if not isinstance(rec, dict) or digest != rec.get("sha256"):
            raise ConfigError(f"changed since run {man.get('run_id')} wrote it (its SHA-256 "
                              f"is not the one in {MANIFEST_FILE}); run `gisnet run` again",
                              path=folder / rel)


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


#: The layers read first: the graph's, then the obligations (the largest, read while the
#: graph is built), then what the start builds on next (read by the caller when the
#: thread has not begun them by then, :meth:`LayerReader.get`); the rest after.
READ_FIRST = ("graph_nodes", "graph_edges", "obligations", "control_manholes", "pipes_capacity",
              "plants")


def read_layers(gpkg: Path) -> dict[str, pd.DataFrame]:
    """The served result layers of a results GeoPackage, in :data:`SERVED_LAYERS` order
    (each whole: the shapes of :data:`SHAPES_LATER` made)."""
    return {name: layer.whole() if isinstance(layer, LayerLater) else layer
            for name, layer in LayerReader(gpkg).all().items()}


#: The layers whose shapes are held as WKB until used (:class:`~gisnet.service.tables.
#: Shapes`): the start reads only their other columns (the parcels' ids, the id
#: indexes), and a request or a packed chunk makes the shapes of its rows. Made at the
#: start, a county's million shapes of each cost it about 3 s and 0.6 GB held
#: (docs/performance.md).
SHAPES_LATER = ("obligations", "obligation_evidence", "control_paths")


def _read_shapes_later(gpkg: Path, name: str) -> LayerLater | None:
    """Layer ``name`` read as pyogrio's ``read_dataframe`` reads it, its shapes left
    as WKB; None (to be read whole) when it has no shapes. A layer with columns
    pyogrio converts after the read (dates and times, JSON) has its other columns
    read again by pyogrio, without the shapes."""
    info = pyogrio.read_info(gpkg, layer=name)
    if not info.get("geometry_type") or info.get("crs") is None:
        return None
    if any(str(t).startswith("datetime") for t in info["dtypes"] if t is not None) \
            or "OFSTJSON" in list(info.get("ogr_subtypes") or []):
        # columns pyogrio converts after the read: the shapes alone, then its frame
        meta, table = pyogrio.read_arrow(gpkg, layer=name, columns=[])
        shapes = _shapes_of(meta, table)
        del table
        frame = pyogrio.read_dataframe(gpkg, layer=name, use_arrow=True, read_geometry=False,
                                       arrow_to_pandas_kwargs={"split_blocks": True})
    else:
        meta, table = pyogrio.read_arrow(gpkg, layer=name, datetime_as_string=True)
        shapes = _shapes_of(meta, table)
        frame = table.drop([table.column_names[-1]]).to_pandas(split_blocks=True,
                                                               self_destruct=True)
    if shapes is None or len(frame) != len(shapes):  # changed between the reads
        raise ConfigError(f"layer {name} changed while it was read", path=gpkg)
    return LayerLater(frame, shapes)


def _shapes_of(meta: dict[str, Any], table: pa.Table) -> Shapes | None:
    """The shapes (the last column, as pyogrio gives them) of an Arrow read."""
    geo = meta.get("geometry_name") or "wkb_geometry"
    if not table.column_names or table.column_names[-1] != geo or meta.get("crs") is None:
        return None
    return Shapes(table[geo], meta["crs"])


#: Threads reading the layers. One, beside the caller's: the graph built meanwhile
#: holds the GIL, and a second reader saved 1.3 s of a county's 18 s start for 0.6 GB
#: more at its peak (two layers' Arrow reads held at once; docs/performance.md).
READ_THREADS = 1


class LayerReader:
    """The served layers of a results GeoPackage, read on a thread of their own
    (:data:`READ_THREADS`; pyogrio and Arrow release the GIL) in :data:`READ_FIRST`
    order while the caller builds on those read already.

    :meth:`get` waits for a layer, or reads it in the caller when the thread has not
    begun it (so does :meth:`all` with every layer left, from the end of the queue);
    a layer GDAL cannot read is a ConfigError naming it. ``checked`` (the manifest's
    hashes, checked beside the reads) is called before such an error is raised: a
    file changed since the run is said to be changed rather than damaged.
    """

    def __init__(self, gpkg: Path, checked: Any = None) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.gpkg = gpkg
        self.checked = checked
        try:
            present = {str(name) for name, _ in pyogrio.list_layers(gpkg)}
        except Exception as exc:  # not a GeoPackage GDAL can open
            raise ConfigError(f"the results GeoPackage cannot be read ({exc})",
                              path=gpkg) from None
        self.names = [n for n in SERVED_LAYERS if n in present]
        order = sorted(self.names, key=lambda n: READ_FIRST.index(n) if n in READ_FIRST
                       else len(READ_FIRST))
        self.order = order
        pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="gisnet-read")
        self._futures: dict[str, Future[pd.DataFrame | LayerLater]] = {
            n: pool.submit(self._read, n) for n in order}
        pool.shutdown(wait=False)  # the reads go on; the threads end with them

    def _read(self, name: str) -> pd.DataFrame | LayerLater:
        try:
            if name in SHAPES_LATER:
                later = _read_shapes_later(self.gpkg, name)
                if later is not None:
                    later.frame = _restore(name, later.frame)
                    return later
            # (a frame of one block per column: Arrow's columns not merged into 2-D
            # blocks, a copy a county's obligations paid 0.8 s for; the same frame)
            gdf = pyogrio.read_dataframe(self.gpkg, layer=name, use_arrow=True,
                                         arrow_to_pandas_kwargs={"split_blocks": True})
        except ConfigError:
            raise
        except Exception as exc:  # GDAL's word on a damaged layer
            raise ConfigError(f"layer {name} cannot be read ({exc})", path=self.gpkg) from None
        return _restore(name, gdf)

    def get(self, name: str) -> pd.DataFrame | LayerLater | None:
        """Layer ``name`` once read (by the caller when its thread has not begun it);
        None when the GeoPackage has no such layer."""
        if name not in self._futures:
            return None
        try:
            self._take(name)  # not begun: read here rather than wait behind the others
            return self._futures[name].result()
        except ConfigError:
            if self.checked is not None:
                self.checked()
            raise

    def _take(self, name: str) -> None:
        """Read layer ``name`` in the caller if its thread has not begun it."""
        fut = self._futures[name]
        if fut.cancel():
            done: Future[pd.DataFrame | LayerLater] = Future()
            self._futures[name] = done
            try:
                done.set_result(self._read(name))
            except ConfigError as exc:
                done.set_exception(exc)

    def all(self) -> dict[str, pd.DataFrame | LayerLater]:
        """Every served layer, in :data:`SERVED_LAYERS` order (each waited for). The
        layers the thread has not begun are read by the caller meanwhile, the last of
        its queue first: the two read what is left from either end."""
        for n in reversed(self.order):
            self._take(n)
        out = {}
        for n in self.names:
            df = self.get(n)
            assert df is not None
            out[n] = df
        return out


def _restore(name: str, gdf: pd.DataFrame) -> pd.DataFrame:
    """A layer as read back, in the types the run held it in (docs/results.md, through
    the package's results schema): the geometry column named ``geometry``; booleans
    and integers nullable (``boolean``, ``Int64``) where a null was stored; the
    columns of the files only (``quality``/``worklist``'s ``geometry_wkt``: the
    whole shape, of any type, of a row stored as a point) back as the geometry."""
    from ..output.metadata import layer_docs

    if isinstance(gdf, gpd.GeoDataFrame) and gdf.geometry.name != "geometry":
        gdf = gdf.rename_geometry("geometry")
    for c in gdf.columns:  # Arrow-backed text as the service holds it (categories or str)
        s = gdf[c]
        if c != "geometry" and pd.api.types.is_string_dtype(s.dtype) \
                and not pd.api.types.is_object_dtype(s.dtype):
            gdf[c] = compact_arrow_text(s)
    doc = layer_docs().get(name)
    if doc is None:
        return gdf
    for col in doc.columns:
        c = col.name
        if c not in gdf.columns or c == "geometry":
            continue
        s = gdf[c]
        if col.file_only:
            if c == "geometry_wkt" and isinstance(gdf, gpd.GeoDataFrame):
                shapes = gpd.GeoSeries.from_wkt(objects(s), crs=gdf.crs)
                gdf = gdf.set_geometry(shapes.to_numpy()).drop(columns=[c])
            else:
                gdf = gdf.drop(columns=[c])
        elif col.type == "boolean" and not pd.api.types.is_bool_dtype(s.dtype):
            gdf[c] = s.astype("boolean")
        elif col.type == "integer" and not pd.api.types.is_integer_dtype(s.dtype):
            gdf[c] = pd.to_numeric(s, errors="coerce").astype("Int64")
    return gdf


def _as_text(s: pd.Series) -> Any:
    """A text column as pandas' Arrow-backed ``str`` (what a frame made of its values
    as Python strings infers), made by Arrow from categories or Arrow text without a
    Python string per row; other columns, and one of nothing but nulls (a frame infers
    no text of it), as :func:`objects`."""
    if isinstance(s.dtype, pd.CategoricalDtype) and len(s.cat.categories) \
            and pd.api.types.is_string_dtype(s.cat.categories):
        codes = s.cat.codes.to_numpy()
        words = pa.array(s.cat.categories.astype(object), type=pa.large_string())
        dense = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), words) \
            .cast(pa.large_string())
        return dense.to_pandas(types_mapper=lambda _t: ARROW_TEXT).array
    if s.dtype == ARROW_TEXT:
        return s.array
    return objects(s)


def stored_graph(nodes: gpd.GeoDataFrame, edges: gpd.GeoDataFrame,
                 snap_tolerance_ft: float | None) -> tuple[nx.MultiDiGraph, Any]:
    """The directed sewer graph rebuilt from ``graph_nodes`` / ``graph_edges``, and its
    :class:`~gisnet.graph.table.GraphTable` (or None) for the downstream index and the
    capacity network (:func:`gisnet.graph.layers.graph_parts_from_gdfs`)."""
    from ..graph.layers import graph_parts_from_gdfs

    return graph_parts_from_gdfs(nodes, edges, report=Report(),
                                 snap_tolerance_ft=snap_tolerance_ft)


def share_shapes(layer: gpd.GeoDataFrame, edges: gpd.GeoDataFrame) -> int:
    """Give the rows of ``layer`` (``pipes_capacity``) whose shape is their edge's in
    ``edges`` (``graph_edges``, by ``edge_key``), vertex for vertex, the edge's own
    shape object, in place; how many. The run writes each main's line twice; held once
    it saves a county 84 MB. What is served is the same: equal shapes (no Z, exactly
    the same coordinates) write the same bytes."""
    if "edge_key" not in layer.columns or not len(layer) or not len(edges) \
            or layer.crs != edges.crs:
        return 0
    keys = pd.Index(objects(edges["edge_key"]))
    if not keys.is_unique:  # not one shape per key: each row keeps its own
        return 0
    pos = keys.get_indexer(objects(layer["edge_key"]))
    held = np.asarray(layer.geometry.values, dtype=object)
    theirs = np.asarray(edges.geometry.values, dtype=object)[np.maximum(pos, 0)]
    same = (pos >= 0) & ~shapely.has_z(held) & ~shapely.has_z(theirs) \
        & shapely.equals_exact(held, theirs, tolerance=0)
    if not same.any():
        return 0
    shapes = held.copy()
    shapes[same] = theirs[same]
    layer[layer.geometry.name] = gpd.GeoSeries(shapes, index=layer.index, crs=layer.crs)
    return int(same.sum())


def stored_points(cm: gpd.GeoDataFrame, index: Any) -> gpd.GeoDataFrame:
    """The connection points (:func:`gisnet.tracing.connection_points`' columns but
    ``offset_ft``) from the ``control_manholes`` layer: its tap, ``edge_key`` and
    ``tap_source``, the edge's ends from the rebuilt graph."""
    for col in ("edge_key", "tap_source"):
        if col not in cm.columns:
            raise ConfigError(f"layer control_manholes has no {col!r} column (written by "
                              "gisnet run since serving results was added); run `gisnet run` "
                              "again", layer="control_manholes")
    n = len(cm)
    ek = cm["edge_key"]
    pos = np.full(n, -1, dtype=np.int64)
    if len(index.edges.key):
        at = pd.Index(index.edges.key)
        if isinstance(ek.dtype, pd.CategoricalDtype):  # each distinct key looked up once
            codes = ek.cat.codes.to_numpy()
            found = at.get_indexer(ek.cat.categories.astype(object))
            ok = codes >= 0
            pos[ok] = found[codes[ok]]
        else:
            pos = at.get_indexer(objects(ek))
    hit = pos >= 0
    source = _as_text(cm["tap_source"])
    unresolved = np.asarray(source == "unresolved", dtype=bool)
    reason = np.full(n, None, dtype=object)
    reason[unresolved] = objects(cm["reason"][unresolved])
    return gpd.GeoDataFrame({
        "building_id": _as_text(cm["building_id"]),
        "parcel_id": _as_text(cm["parcel_id"]),
        "user_id": _as_text(cm["user_id"]),
        "main_id": _as_text(cm["main_id"]),
        "edge_u": _node_ids(index, index.edges.u, pos, hit),
        "edge_v": _node_ids(index, index.edges.v, pos, hit),
        "edge_key": _as_text(ek),
        "tap_distance_ft": pd.to_numeric(cm["tap_distance_ft"]).to_numpy(dtype=float),
        "source": source, "reason": reason,
    }, geometry=cm.geometry.to_numpy(), crs=cm.crs)


def _node_ids(index: Any, ends: np.ndarray, pos: np.ndarray, hit: np.ndarray) -> Any:
    """The node at the end ``ends`` (``index.edges.u`` or ``.v``) of the edge at each
    position ``pos``, null where not ``hit``: as pandas' Arrow-backed ``str`` (taken by
    Arrow, not a Python string per row) when the node ids are text; else objects, as a
    frame holds them."""
    at = np.where(hit, ends[np.maximum(pos, 0)] if len(ends) else 0, -1)
    words = index.nodes
    if len(words) and all(isinstance(w, str) for w in words):
        taken = pa.array(words, type=pa.large_string()).take(pa.array(at, mask=at < 0))
        return taken.to_pandas(types_mapper=lambda _t: ARROW_TEXT).array
    out = np.full(len(pos), None, dtype=object)
    out[hit] = words[at[hit]]
    return out


def stored_capacity(G: nx.MultiDiGraph, index: Any, pipes: gpd.GeoDataFrame,
                    plants: gpd.GeoDataFrame, points: gpd.GeoDataFrame,
                    profile: Any, table: Any = None) -> Any:
    """The :class:`~gisnet.capacity.pipes.CapacityResult` the what-if reuses, from the
    stored ``pipes_capacity`` / ``plants`` layers on the rebuilt graph.

    The network arrays come from the graph (:func:`gisnet.capacity.network.graph_arrays`);
    the accumulation's shape (cycles contracted, levels, out-edges) from one
    :func:`~gisnet.capacity.network.accumulate` pass that takes the stored split
    shares at every split; its flows are the stored ones (domestic = ``avg_flow_gpd``
    less ``industrial_flow_gpd``, ``population``), its capacities ``capacity_gpd``.
    Its ``flows`` (the parcels' ids, from another layer) are empty: the caller's to set.
    """
    from ..capacity.network import accumulate, graph_arrays, sanitary_flow_edges
    from ..capacity.pipes import CapacityResult

    net = graph_arrays(G, table)
    m = len(net.keys)
    row = pd.Series(np.arange(len(pipes)), index=objects(pipes["edge_key"]))
    if not row.index.is_unique:
        raise ConfigError("layer pipes_capacity names an edge twice", layer="pipes_capacity")
    at = row.reindex(pd.Index(net.keys, dtype=object)).to_numpy()
    if m and np.isnan(at.astype(float)).any():
        miss = net.keys[np.isnan(at.astype(float))][0]
        raise ConfigError("layer pipes_capacity has no row of a graph edge",
                          layer="pipes_capacity", feature=str(miss))
    at = at.astype(np.int64) if m else np.empty(0, np.int64)
    p = pipes.iloc[at].reset_index(drop=True)

    def num(col: str) -> np.ndarray:
        return pd.to_numeric(p[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    cap_gpd = num("capacity_gpd")
    share = num("split_share")
    basis = objects(p["split_rule"]) if "split_rule" in p else \
        np.full(m, "", dtype=object)

    def stored_rule(x: int, outs: np.ndarray, _avg: float) -> tuple[np.ndarray, str]:
        return share[outs], str(basis[outs[0]] or "")

    acc = accumulate(net, np.zeros((m, 3)), sanitary_flow_edges(net), cap_gpd, stored_rule)
    stored_computed = p["computed"].astype(bool).to_numpy() if m else np.zeros(0, bool)
    if not np.array_equal(stored_computed, acc.computed):
        raise ConfigError("the pipes whose flows layer pipes_capacity holds are not those "
                          "the graph layers carry flow on", layer="pipes_capacity")
    avg, ind, pop = num("avg_flow_gpd"), num("industrial_flow_gpd"), num("population")
    flow = np.column_stack([avg - ind, ind, pop])
    acc.edge_flow = np.where(acc.computed[:, None], flow, np.nan)
    node_flow = np.zeros((len(net.nodes), 3))
    done = np.flatnonzero(acc.computed)
    np.add.at(node_flow, acc.rep[net.v[done]], acc.edge_flow[done])
    acc.node_flow = node_flow  # what the pipes deliver (the cycles' own inflow not held)
    return CapacityResult(
        pipes=pipes, plants=plants, splits=acc.splits, cycles=acc.cycles, report=Report(),
        points=points, flows=pd.DataFrame({"parcel_id": np.empty(0, object)}), index=index,
        profile=profile, network=net, accumulation=acc, capacity_gpd=cap_gpd)


def _parcels(obligations: pd.DataFrame | LayerLater | None
             ) -> gpd.GeoDataFrame | LayerLater | None:
    """The parcels (id and shape, in layer order) from the obligations layer; their
    shapes left as WKB when the layer's are."""
    later = obligations if isinstance(obligations, LayerLater) else None
    frame = later.frame if later is not None else obligations
    if not isinstance(frame, pd.DataFrame) or "parcel_id" not in frame \
            or (later is None and not isinstance(frame, gpd.GeoDataFrame)):
        return None
    ids = frame["parcel_id"]
    first = ~ids.duplicated().to_numpy()
    parcel_id = _as_text(ids[first])
    if later is not None:
        return LayerLater(pd.DataFrame({"parcel_id": parcel_id}),
                          later.shapes.subset(np.flatnonzero(first)))
    assert isinstance(frame, gpd.GeoDataFrame)
    return gpd.GeoDataFrame({"parcel_id": parcel_id},
                            geometry=frame.geometry.to_numpy()[first], crs=frame.crs)


def stored_town(man: Mapping[str, Any]) -> Any:
    """A :class:`~gisnet.town.Town` with no input layer: name, CRS, feet per unit,
    profile (the run's, from its parsed TOML), snap tolerance and the mains' extent."""
    from ..profile.load import profile_from_dict
    from ..town import Town, TownSettings

    info = man["town_info"]
    try:
        profile = profile_from_dict(info["profile"], path=info.get("profile_path"))
        crs = CRS.from_wkt(info["crs"])
    except (KeyError, ValueError, TypeError) as exc:
        raise ConfigError(f"the run's town_info record cannot be used ({exc})") from None
    settings = TownSettings(snap_tolerance_ft=float(info.get("snap_tolerance_ft") or 0.0),
                            extra={"mains_bounds": info.get("mains_bounds")})
    return Town(name=str(man.get("town")), crs=crs, ft_per_unit=float(info["ft_per_unit"]),
                layers={}, profile=profile, settings=settings)


# ---------------------------------------------------------------------------
# the state
# ---------------------------------------------------------------------------


class _LayersRead:
    """Layers read already (a PostGIS schema's), as a :class:`LayerReader` gives them."""

    def __init__(self, layers: dict[str, pd.DataFrame]) -> None:
        self._layers = layers

    def get(self, name: str) -> pd.DataFrame | None:
        return self._layers.get(name)

    def all(self) -> dict[str, pd.DataFrame]:
        return dict(self._layers)


def _read_folder(results_dir: str | Path, timings: dict[str, float]
                 ) -> tuple[dict[str, Any], LayerReader, Path, Any]:
    """A run's folder: its manifest checked (:func:`check_manifest`), its served
    layers being read (:class:`LayerReader`), the GeoPackage (for messages) and the
    call that waits for the files' hashes to be checked (:func:`check_digests`, on a
    thread of its own beside the reads) and raises if one differs."""
    from ..threads import in_background

    t = time.perf_counter()
    folder = Path(results_dir)
    man = check_manifest(folder)

    def digests() -> None:
        check_digests(folder, man)
        timings["check"] = time.perf_counter() - t

    checked = in_background(digests)
    try:
        reader = LayerReader(folder / RESULTS_FILE, checked)
    except ConfigError:
        checked()  # a file changed since the run is said to be so
        raise
    return man, reader, folder / RESULTS_FILE, checked


def _read_database(url: str, timings: dict[str, float]
                   ) -> tuple[dict[str, Any], _LayersRead, str, Any]:
    """A run's PostGIS schema: its newest ``gisnet_runs`` row checked and its served
    tables read as :func:`read_layers` reads the GeoPackage
    (:func:`gisnet.service.stored_pg.read_results_database`, then :func:`_restore`),
    and the database (password removed) and schema, for messages."""
    from .stored_pg import read_results_database

    man, tables, where = read_results_database(url, SERVED_LAYERS, timings)
    t = time.perf_counter()
    layers = {name: _restore(name, df) for name, df in tables.items()}
    timings["read"] += time.perf_counter() - t
    return man, _LayersRead(layers), where, lambda: None


def read_results(results: str | Path) -> dict[str, Any]:
    """What :meth:`gisnet.service.state.TownState.from_results` builds the state of a
    finished run from: the keyword arguments of ``TownState`` (``town``,
    ``G``, ``index``, ``points``, ``capacity``, ``unavailable``, ``input_layers``,
    ``run``, ``timings_s``) and ``layers`` (name -> table, :data:`SERVED_LAYERS`
    order; those of :data:`SHAPES_LATER` as :class:`~gisnet.service.tables.LayerLater`,
    their shapes left as WKB), ``parcels`` (the parcels' ids and shapes, the shapes as
    the obligations' are held; or None).

    ``results`` is the folder ``gisnet run --out DIR`` wrote, or the PostGIS schema
    ``gisnet run --out postgresql://...?schema=NAME`` wrote (a ``postgresql://`` URL
    or ``PG:`` string naming it; read only). Only the check and the reading of the
    layers differ between the two.

    From a folder the files' hashes are checked, and the layers read, on threads
    while the graph and what follows are built from the layers read first
    (:class:`LayerReader`); nothing is returned before the hashes are found to be
    the manifest's, and an error meanwhile is raised as the changed file's when one
    has changed. ``timings_s`` gives each part's own seconds (they overlap).

    The hot tables are not serialized here: ``TownState.warm`` does it (``gisnet
    serve --results`` on a thread once it listens; a request meanwhile serializes
    the rows it answers with).
    """
    from ..errors import GisnetError

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    man, reader, where, checked = (_read_database(str(results), timings)
                                   if is_database(results) else _read_folder(results, timings))
    try:
        got = _build(man, reader, where, timings)
        got["layers"] = reader.all()
        if not is_database(results):  # until the last layer was read
            timings["read"] = time.perf_counter() - t0
    except GisnetError:
        checked()  # a file changed since the run is said to be so
        raise
    checked()
    first = ("check", "read", "graph", "index")
    got["timings_s"] = {**{k: timings[k] for k in first if k in timings},
                        **{k: v for k, v in timings.items() if k not in first}}
    log.info("results of run %s read: %s", man.get("run_id"),
             ", ".join(f"{k} {v:.2f} s" for k, v in got["timings_s"].items()))
    return got


def _build(man: dict[str, Any], reader: LayerReader | _LayersRead, where: Any,
           timings: dict[str, float]) -> dict[str, Any]:
    """:func:`read_results`' answer from the manifest and the layers (but ``layers``)."""
    from ..tracing import DownstreamIndex

    town = stored_town(man)
    t = time.perf_counter()
    info = man["town_info"]
    nodes, edges = reader.get("graph_nodes"), reader.get("graph_edges")
    for name, layer in (("graph_nodes", nodes), ("graph_edges", edges)):
        if layer is None:
            raise ConfigError(f"the results have no {name} layer", path=where)
        if not isinstance(layer, gpd.GeoDataFrame):
            raise ConfigError(f"the results' {name} layer has no geometry", path=where)
    assert isinstance(nodes, gpd.GeoDataFrame) and isinstance(edges, gpd.GeoDataFrame)
    G, table = stored_graph(nodes, edges, town.settings.snap_tolerance_ft)
    timings["graph"] = time.perf_counter() - t
    t = time.perf_counter()
    unavailable = {str(k): str(v) for k, v in dict(info.get("unavailable") or {}).items()}
    index = points = capacity = None
    cm = reader.get("control_manholes")
    if cm is not None:
        index = DownstreamIndex(G, table=table)
        points = stored_points(cm, index)
    pipes, plants = reader.get("pipes_capacity"), reader.get("plants")
    if isinstance(pipes, gpd.GeoDataFrame):
        share_shapes(pipes, edges)
    if index is not None and pipes is not None and plants is not None \
            and "capacity" not in unavailable:
        capacity = stored_capacity(G, index, pipes, plants, points, town.profile, table)
    del table  # its lists of the graph's values, no longer read
    # the parcels last: their layer (obligations, the largest) is read while the above
    # is built, and the other layers by this thread too meanwhile (LayerReader.all)
    reader.all()
    parcels = _parcels(reader.get("obligations"))
    if capacity is not None:
        ids = (parcels.frame if isinstance(parcels, LayerLater) else parcels)
        capacity.flows = pd.DataFrame({"parcel_id": ids["parcel_id"].array  # as held
                                       if ids is not None else np.empty(0, object)})
    timings["index"] = time.perf_counter() - t
    for entry in info.get("layers") or []:
        unavailable["input_" + str(entry["role"])] = (
            f"the town's {entry['role']} layer as gisnet read it; " + _NO_INPUT)
    unavailable.update(NOT_FROM_RESULTS)
    return {
        "town": town, "G": G, "index": index, "points": points, "capacity": capacity,
        "unavailable": unavailable, "parcels": parcels,
        "input_layers": {str(e["role"]): {"features": int(e["features"]),
                                          "source": e.get("source")}
                         for e in info.get("layers") or []},
        "run": {"run_id": man.get("run_id"), "created_utc": man.get("created_utc"),
                "town": man.get("town"), "gisnet_version": man.get("gisnet_version"),
                "profile_id": man.get("profile_id")},
        "timings_s": timings,
    }
