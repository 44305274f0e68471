"""The directed sewer graph, built from canonical layers, with a quality report.

:func:`build_sewer_graph` turns a town's mains (and, when given, manholes and
plants) into a :class:`networkx.MultiDiGraph` whose edges point in the
direction of flow, and records every decision it made and every problem it saw
as :class:`gisnet.report.Finding` objects in ``G.graph["report"]``.

How the graph is made
---------------------
1. Pipe ends are taken with numpy (one array of ``2 n`` points).
2. Ends within the snap tolerance of a manhole or plant join it (nearest
   structure, ``STRtree.query_nearest``); the other ends are clustered with
   each other (``STRtree`` ``dwithin`` pairs, then connected components), each
   cluster becoming a junction node ``J000001`` ... Coordinates are never
   rounded: rounding is not snapping.
3. A node lying within the tolerance of another pipe's interior splits that
   pipe there (a "T"): the pieces keep the ``main_id``; the upstream piece is
   keyed ``main_id`` and the later ones ``main_id@2``, ``main_id@3`` ...
4. Direction, in order of trust: the ``from_node`` / ``to_node`` ids (when
   they name the pipe's end nodes), the inverts (``up_invert_ft`` >
   ``down_invert_ft``), the digitised direction. Each edge records its
   ``direction_source``; every disagreement becomes a finding.
5. Outlets: plants (pipe ends snapped onto them, or the plant snapped to the
   nearest node within the tolerance), outfall-kind structures, and the
   town's ``outlet_nodes``.

Nothing is dropped: cycles are kept and reported with their main ids.

Finding kinds
-------------
``cycle``, ``no_outlet``, ``disconnected_piece``, ``adverse_slope``,
``flat_slope``, ``slope_mismatch``, ``dangling_end``, ``duplicate_id`` (only
when the layers did not come through the loader, which reports those),
``missing_diameter``, ``gap_snapped``, ``gap_not_snapped``, ``t_split``,
``reversed_pipe``, ``direction_conflict``, ``excluded_main``, plus
``node_id_mismatch`` (from/to ids naming other nodes than the pipe's ends),
``outlet_not_connected``,
``plant_not_connected``, ``isolated_structure`` (a manhole no pipe reaches)
and ``kind_assumed`` (mains without a kind treated as sanitary).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS
from shapely.geometry import LineString, Point
from shapely.ops import substring

from ._snap import cluster_points, compact, component_labels
from .errors import ConfigError, CRSError, LayerError
from .report import Finding, Report
from .town import Town
from .units import feet_per_unit

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_SNAP_TOLERANCE_FT",
    "EDGE_COLUMNS",
    "NODE_COLUMNS",
    "build_sewer_graph",
    "graph_from_gdfs",
    "graph_summary",
    "graph_to_gdfs",
    "quality_gdf",
]

#: Snap tolerance used when neither the call nor the town names one (feet).
DEFAULT_SNAP_TOLERANCE_FT = 1.0
#: Snapped gaps shorter than this (feet) are digitising noise, not reported.
GAP_REPORT_MIN_FT = 0.01
#: Stored and computed slope disagree when they differ by more than both of
#: these: an absolute difference (ft/ft) and a fraction of the computed slope.
SLOPE_MISMATCH_ABS = 0.0005
SLOPE_MISMATCH_REL = 0.10
#: Mains kinds that carry sanitary sewage. ``unknown`` is included: a mains
#: layer handed to gisnet as the sewer layer is sanitary unless it says
#: otherwise (reported as ``kind_assumed``).
SANITARY_KINDS = ("sanitary", "combined", "unknown")
#: Structure kinds that end the network.
OUTLET_KINDS = ("plant", "outfall")

#: Node attributes, in the column order of the ``graph_nodes`` layer.
NODE_COLUMNS: tuple[str, ...] = (
    "node_id", "kind", "x", "y", "public", "active", "is_manhole", "outlet",
    "plant_id", "rim_ft", "invert_ft", "source",
)
#: Edge attributes, in the column order of the ``graph_edges`` layer.
EDGE_COLUMNS: tuple[str, ...] = (
    "edge_key", "main_id", "part", "from_node", "to_node", "length_ft", "diameter_in",
    "slope", "slope_stored", "slope_computed", "up_invert_ft", "down_invert_ft",
    "material", "kind", "owner", "status", "street", "public", "active", "gravity",
    "eligible", "direction_source",
)

_SOURCE_TEXT = {"node_ids": "the node ids", "inverts": "the inverts",
                "digitized": "the digitised order"}

# --------------------------------------------------------------------------------------
# inputs


@dataclass
class _Inputs:
    mains: gpd.GeoDataFrame
    manholes: gpd.GeoDataFrame | None
    plants: gpd.GeoDataFrame | None
    crs: CRS
    ft_per_unit: float
    tolerance_ft: float
    outlet_nodes: tuple[str, ...]
    from_loader: bool


def _inputs(
    town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
    snap_tolerance_ft: float | None,
    outlet_nodes: Iterable[str] | None,
) -> _Inputs:
    if isinstance(town_or_layers, Town):
        town = town_or_layers
        layers: Mapping[str, gpd.GeoDataFrame] = town.layers
        crs = CRS.from_user_input(town.crs)
        fpu = float(town.ft_per_unit)
        tol = town.settings.snap_tolerance_ft if snap_tolerance_ft is None else snap_tolerance_ft
        outs = tuple(town.settings.outlet_nodes or ())
        from_loader = True
    else:
        layers = town_or_layers
        if "mains" not in layers or layers["mains"] is None:
            raise LayerError("a mains layer is required to build the sewer graph", layer="mains")
        if layers["mains"].crs is None:
            raise CRSError("the mains layer has no CRS", layer="mains")
        crs = CRS.from_user_input(layers["mains"].crs)
        fpu = feet_per_unit(crs)
        tol = DEFAULT_SNAP_TOLERANCE_FT if snap_tolerance_ft is None else snap_tolerance_ft
        outs = ()
        from_loader = False
    if outlet_nodes is not None:
        outs = tuple(str(o) for o in outlet_nodes)
    if tol is None or not np.isfinite(tol) or tol < 0:
        raise ConfigError(f"snap tolerance must be a non-negative number of feet, not {tol!r}")
    mains = layers.get("mains")
    if mains is None or len(mains) == 0:
        raise LayerError("the mains layer is empty", layer="mains")
    for role in ("manholes", "plants"):
        g = layers.get(role)
        if g is not None and len(g) and g.crs is not None and CRS.from_user_input(g.crs) != crs:
            raise CRSError(f"the {role} layer is not in the mains' CRS {crs.to_string()}",
                           layer=role)
    manholes = layers.get("manholes")
    plants = layers.get("plants")
    return _Inputs(
        mains=mains,
        manholes=manholes if manholes is not None and len(manholes) else None,
        plants=plants if plants is not None and len(plants) else None,
        crs=crs,
        ft_per_unit=fpu,
        tolerance_ft=float(tol),
        outlet_nodes=outs,
        from_loader=from_loader,
    )


def _text(s: pd.Series) -> pd.Series:
    """Series as object dtype: str values, None for missing."""
    mask = s.isna().to_numpy()
    out = s.astype(object)
    if mask.any():
        out = out.where(~mask, None)
    if pd.api.types.is_string_dtype(s.dtype) and not pd.api.types.is_object_dtype(s.dtype):
        return out
    return out.map(lambda v: v if v is None or isinstance(v, str) else _idstr(v))


def _idstr(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _floats(s: pd.Series | None, n: int) -> np.ndarray:
    if s is None:
        return np.full(n, np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _flags(df: pd.DataFrame, role: str) -> tuple[np.ndarray, np.ndarray]:
    """The loader's ``public`` / ``active`` flags, or the same rule applied here."""
    n = len(df)
    if "public" in df.columns:
        public = df["public"].fillna(True).astype(bool).to_numpy()
    elif "owner" in df.columns:
        public = (_text(df["owner"]).fillna("").str.lower() != "private").to_numpy()
    else:
        public = np.ones(n, dtype=bool)
    if "active" in df.columns:
        active = df["active"].fillna(True).astype(bool).to_numpy()
    elif "status" in df.columns:
        st = _text(df["status"]).fillna("active").str.lower()
        active = st.isin(["active", ""]).to_numpy()
    else:
        active = np.ones(n, dtype=bool)
    return public, active


def _unique_ids(ids: pd.Series, role: str, findings: list[Finding], report_dups: bool,
                geoms: np.ndarray) -> list[str]:
    """Ids as str; missing ids generated, duplicates suffixed ``#2``, ``#3``."""
    t = _text(ids)
    if t.notna().all() and t.is_unique and not (t == "").any():
        return t.tolist()
    vals = t.tolist()
    prefix = {"mains": "MAIN", "manholes": "MH", "plants": "PLANT"}[role]
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, v in enumerate(vals):
        if v is None or v == "":
            v = f"{prefix}-row{i + 1}"
        if v in seen:
            seen[v] += 1
            new = f"{v}#{seen[v]}"
            if report_dups:
                findings.append(Finding(
                    "duplicate_id", "warning",
                    f"{role} id {v!r} appears more than once; this one is renamed {new!r}",
                    role, new, geoms[i]))
            v = new
        else:
            seen[v] = 1
        out.append(v)
    return out


def _prepare_lines(mains: gpd.GeoDataFrame) -> np.ndarray:
    geoms = np.asarray(mains.geometry.values, dtype=object)
    bad_null = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    types = shapely.get_type_id(geoms)
    multi = types == 5
    if multi.any():
        geoms = geoms.copy()
        geoms[multi] = shapely.line_merge(geoms[multi])
        types = shapely.get_type_id(geoms)
    bad = bad_null | (types != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fid = mains["main_id"].iloc[i] if "main_id" in mains.columns else i
        what = "no geometry" if bad_null[i] else f"a {shapely.get_type_id(geoms[i])}-type geometry"
        raise LayerError(
            f"{int(bad.sum())} main(s) are not single LineStrings (first: {what}); "
            "a main must be one line", layer="mains", feature=fid)
    return geoms


# --------------------------------------------------------------------------------------
# build


def build_sewer_graph(
    town_or_layers: Town | Mapping[str, gpd.GeoDataFrame],
    *,
    snap_tolerance_ft: float | None = None,
    outlet_nodes: Iterable[str] | None = None,
    plant_tolerance_ft: float | None = None,
) -> nx.MultiDiGraph:
    """Build the directed sewer graph of a town, with its data-quality report.

    Parameters
    ----------
    town_or_layers
        A loaded :class:`~gisnet.town.Town`, or a mapping role -> canonical
        GeoDataFrame (``mains`` required; ``manholes`` and ``plants``
        optional), all in one projected CRS (taken from the mains).
    snap_tolerance_ft
        Snap tolerance in feet; default the town's setting, else
        :data:`DEFAULT_SNAP_TOLERANCE_FT`.
    outlet_nodes
        Node ids that are outlets (overrides the town's ``outlet_nodes``).
    plant_tolerance_ft
        How far (feet) a plant may lie from the nearest node and still be
        snapped to it; default the snap tolerance.

    Returns
    -------
    networkx.MultiDiGraph
        Edges ``(u, v, key)`` in flow direction, key = ``main_id`` (``main_id@2``
        ... for later pieces of a split main); attributes as in
        :data:`EDGE_COLUMNS` plus ``geometry`` (LineString in flow direction,
        working CRS). Node attributes as in :data:`NODE_COLUMNS` (``x``, ``y``
        in the working CRS). ``G.graph`` holds ``crs``, ``ft_per_unit``,
        ``outlets``, ``report`` and ``snap_tolerance_ft``.

    Raises
    ------
    LayerError
        No mains, or a main that is not one line.
    CRSError
        Layers without a CRS, in different CRSs, or in a geographic CRS.
    ConfigError
        A negative tolerance, or an outlet node id that is not in the graph.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString
    >>> mains = gpd.GeoDataFrame({"main_id": ["A", "B"]}, geometry=[
    ...     LineString([(0, 0), (100, 0)]), LineString([(100.4, 0), (200, 0)])],
    ...     crs="EPSG:2263")
    >>> G = build_sewer_graph({"mains": mains})
    >>> sorted(k for _, _, k in G.edges(keys=True))
    ['A', 'B']
    >>> G.number_of_nodes()
    3
    """
    inp = _inputs(town_or_layers, snap_tolerance_ft, outlet_nodes)
    if plant_tolerance_ft is None and isinstance(town_or_layers, Town):
        plant_tolerance_ft = town_or_layers.settings.plant_tolerance_ft
    return _Builder(inp, plant_tolerance_ft).build()


def _point_geoms(df: gpd.GeoDataFrame, layer: str, id_col: str, what: str) -> np.ndarray:
    """The geometries of a node layer as an object array; a missing or empty one
    is a :class:`LayerError` naming the feature."""
    g = np.asarray(df.geometry.values, dtype=object)
    bad = shapely.is_missing(g) | shapely.is_empty(g)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LayerError(f"{what} has no geometry", layer=layer,
                         feature=df[id_col].iloc[i] if id_col in df else i)
    return g


class _Builder:
    """One graph build; attributes hold the intermediate numpy arrays."""

    def __init__(self, inp: _Inputs, plant_tolerance_ft: float | None) -> None:
        self.inp = inp
        self.fpu = inp.ft_per_unit
        self.tol_ft = inp.tolerance_ft
        self.tol = inp.tolerance_ft / inp.ft_per_unit  # CRS units
        ptol = inp.tolerance_ft if plant_tolerance_ft is None else plant_tolerance_ft
        self.plant_tol = float(ptol) / inp.ft_per_unit
        self.findings: list[Finding] = []

    def add(self, kind: str, severity: str, message: str, layer: str | None,
            feature_id: Any, geometry: Any) -> None:
        fid = None if feature_id is None else str(feature_id)
        self.findings.append(Finding(kind, severity, message, layer, fid, geometry))

    # ---------------------------------------------------------------- build
    def build(self) -> nx.MultiDiGraph:
        self._mains()
        self._structures()
        self._snap_ends()
        self._t_splits()
        self._direction()
        self._pieces()
        self._outlets()
        # hundreds of thousands of attribute dicts and findings, none in a
        # reference cycle: the cyclic collector would rescan them again and
        # again while they are made
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            G = self._graph()
            self._analyse(G)
        finally:
            if gc_was_on:
                gc.enable()
        report = Report()
        report.extend(self.findings)
        G.graph["report"] = report
        counts = report.counts()
        if counts:
            log.info("graph findings: %s", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return G

    # ---------------------------------------------------------------- mains
    def _mains(self) -> None:
        m = self.inp.mains
        n = len(m)
        self.n = n
        if "main_id" not in m.columns:
            m = m.assign(main_id=None)
        self.lines = _prepare_lines(m)
        self.main_id = np.array(
            _unique_ids(m["main_id"], "mains", self.findings, not self.inp.from_loader,
                        self.lines), dtype=object)
        cols: dict[str, Any] = {}
        for c in ("material", "from_node", "to_node", "kind", "owner", "status", "street"):
            cols[c] = _text(m[c]) if c in m.columns else pd.Series([None] * n, dtype=object)
        kind = cols["kind"].fillna("unknown").str.lower()
        self.kind = kind.to_numpy(dtype=object)
        self.material = cols["material"].to_numpy(dtype=object)
        self.owner = cols["owner"].to_numpy(dtype=object)
        self.status = cols["status"].to_numpy(dtype=object)
        self.street = cols["street"].to_numpy(dtype=object)
        self.from_id = cols["from_node"].to_numpy(dtype=object)
        self.to_id = cols["to_node"].to_numpy(dtype=object)
        self.diameter = _floats(m.get("diameter_in"), n)
        self.up_inv = _floats(m.get("up_invert_ft"), n)
        self.down_inv = _floats(m.get("down_invert_ft"), n)
        self.slope_stored = _floats(m.get("slope"), n)
        self.public, self.active = _flags(m, "mains")
        self.gravity = self.kind != "force"
        self.eligible = self.public & self.active & self.gravity & np.isin(self.kind,
                                                                           SANITARY_KINDS)
        self.length = shapely.length(self.lines)  # CRS units
        # first and last vertex of every line from one flat coordinate array
        xy, owner = shapely.get_coordinates(self.lines, return_index=True)
        last = np.flatnonzero(np.r_[owner[1:] != owner[:-1], True])
        first = np.r_[0, last[:-1] + 1]
        ends = np.empty((2 * n, 2))
        ends[0::2] = xy[first]
        ends[1::2] = xy[last]
        self.ends = ends

    # ---------------------------------------------------------------- structures
    def _structures(self) -> None:
        """Manholes and plants: the nodes that exist before any pipe end is snapped."""
        ids: list[str] = []
        kinds: list[str] = []
        geoms: list[np.ndarray] = []
        xy: list[np.ndarray] = []
        public: list[np.ndarray] = []
        active: list[np.ndarray] = []
        rim: list[np.ndarray] = []
        inv: list[np.ndarray] = []
        source: list[str] = []
        plant_ids: list[Any] = []
        mh = self.inp.manholes
        if mh is not None:
            g = _point_geoms(mh, "manholes", "node_id", "a manhole")
            if "node_id" not in mh.columns:
                mh = mh.assign(node_id=None)
            mid = _unique_ids(mh["node_id"], "manholes", self.findings,
                              not self.inp.from_loader, g)
            k = (_text(mh["kind"]) if "kind" in mh.columns
                 else pd.Series([None] * len(mh), dtype=object))
            ids += mid
            kinds += k.fillna("manhole").str.lower().tolist()
            geoms.append(g)
            pts = shapely.get_type_id(g) == 0
            xy.append(shapely.get_coordinates(g) if pts.all()
                      else shapely.get_coordinates(shapely.centroid(g)))
            p, a = _flags(mh, "manholes")
            public.append(p)
            active.append(a)
            rim.append(_floats(mh.get("rim_ft"), len(mh)))
            inv.append(_floats(mh.get("invert_ft"), len(mh)))
            source += ["manholes"] * len(mh)
            plant_ids += [None] * len(mh)
        self.n_manholes = len(ids)
        pl = self.inp.plants
        self.plant_named_node: list[tuple[int, str]] = []
        if pl is not None:
            g = _point_geoms(pl, "plants", "plant_id", "a plant")
            if "plant_id" not in pl.columns:
                pl = pl.assign(plant_id=None)
            pid = _unique_ids(pl["plant_id"], "plants", self.findings,
                              not self.inp.from_loader, g)
            taken = set(ids)
            keyed = [p if p not in taken else f"plant:{p}" for p in pid]
            ids += keyed
            kinds += ["plant"] * len(pl)
            geoms.append(g)
            xy.append(shapely.get_coordinates(shapely.point_on_surface(g)))
            public.append(np.ones(len(pl), dtype=bool))
            active.append(np.ones(len(pl), dtype=bool))
            rim.append(np.full(len(pl), np.nan))
            inv.append(np.full(len(pl), np.nan))
            source += ["plants"] * len(pl)
            plant_ids += pid
            if "node_id" in pl.columns:
                named = _text(pl["node_id"]).tolist()
                base = self.n_manholes
                self.plant_named_node = [(base + i, v) for i, v in enumerate(named) if v]
        self.s_count = len(ids)
        self.s_id = np.array(ids, dtype=object)
        self.s_kind = np.array(kinds, dtype=object)
        self.s_geom = np.concatenate(geoms) if geoms else np.empty(0, dtype=object)
        self.s_xy = np.concatenate(xy) if xy else np.empty((0, 2))
        self.s_public = np.concatenate(public) if public else np.empty(0, dtype=bool)
        self.s_active = np.concatenate(active) if active else np.empty(0, dtype=bool)
        self.s_rim = np.concatenate(rim) if rim else np.empty(0)
        self.s_inv = np.concatenate(inv) if inv else np.empty(0)
        self.s_source = np.array(source, dtype=object)
        self.s_plant_id = np.array(plant_ids, dtype=object)

    # ---------------------------------------------------------------- snapping
    def _snap_ends(self) -> None:
        """Assign every pipe end a node: a structure within tolerance, else a
        junction shared by all ends clustered within tolerance."""
        m = len(self.ends)
        end_node = np.full(m, -1, dtype=np.int64)
        end_gap = np.zeros(m)
        end_pts = shapely.points(self.ends)
        if self.s_count:
            tree = shapely.STRtree(self.s_geom)
            if self.tol > 0:
                qi, ti = tree.query(end_pts, predicate="dwithin", distance=self.tol)
            else:
                qi, ti = tree.query(end_pts, predicate="intersects")
            dist = shapely.distance(end_pts[qi], self.s_geom[ti])
            # nearest manhole per end, else the nearest plant (an end inside a
            # plant site polygon but near a manhole there joins the manhole);
            # ties: the first structure in layer order
            is_plant = self.s_source[ti] == "plants"
            order = np.lexsort((ti, dist, is_plant, qi))
            qi, ti, dist = qi[order], ti[order], dist[order]
            first = np.ones(len(qi), dtype=bool)
            first[1:] = qi[1:] != qi[:-1]
            end_node[qi[first]] = ti[first]
            end_gap[qi[first]] = dist[first]
        free = np.flatnonzero(end_node < 0)
        labels = cluster_points(self.ends[free], self.tol)
        codes, first = compact(labels)
        self.j_count = len(first)
        end_node[free] = self.s_count + codes
        j_xy = self.ends[free[first]]
        end_gap[free] = np.hypot(*(self.ends[free] - j_xy[codes]).T)
        self.node_xy = np.concatenate([self.s_xy, j_xy]) if self.s_count else j_xy
        self.end_node = end_node
        self.end_gap = end_gap
        taken = set(self.s_id.tolist())
        jid = [f"J{i + 1:06d}" for i in range(self.j_count)]
        if taken.intersection(jid):
            jid = [f"J{i + 1:06d}~" for i in range(self.j_count)]
        self.node_id = np.concatenate([self.s_id, np.array(jid, dtype=object)])
        self.node_kind = np.concatenate([self.s_kind, np.full(self.j_count, "junction",
                                                              dtype=object)])
        # gaps snapped (reported per end, beyond digitising noise)
        gap_ft = end_gap * self.fpu
        big = np.flatnonzero(gap_ft > GAP_REPORT_MIN_FT)
        for e in big.tolist():
            k, side = divmod(e, 2)
            nid = self.node_id[end_node[e]]
            what = "junction" if end_node[e] >= self.s_count else self.node_kind[end_node[e]]
            self.add("gap_snapped", "info",
                     f"{'start' if side == 0 else 'end'} of main {self.main_id[k]} snapped "
                     f"{gap_ft[e]:.2f} ft to {what} {nid}",
                     "mains", self.main_id[k],
                     LineString([self.ends[e], self.node_xy[end_node[e]]]))

    # ---------------------------------------------------------------- T splits
    def _t_splits(self) -> None:
        """Split mains whose interior passes within tolerance of a node: a
        node made by other pipes' ends, or a manhole no pipe end reached (a
        main drawn straight through its manholes)."""
        self.splits: dict[int, list[tuple[float, int]]] = {}
        used = np.unique(self.end_node)
        if self.s_count:
            free_mh = np.ones(self.s_count, dtype=bool)
            free_mh[used[used < self.s_count]] = False
            free_mh &= self.s_source == "manholes"
            used = np.union1d(used, np.flatnonzero(free_mh))
        if len(used) == 0:
            return
        pts = shapely.points(self.node_xy[used])
        tree = shapely.STRtree(self.lines)
        if self.tol > 0:
            pi, li = tree.query(pts, predicate="dwithin", distance=self.tol)
        else:
            pi, li = tree.query(pts, predicate="intersects")
        if len(pi) == 0:
            return
        node = used[pi]
        own = (self.end_node[2 * li] == node) | (self.end_node[2 * li + 1] == node)
        node, li, pi = node[~own], li[~own], pi[~own]
        pos = shapely.line_locate_point(self.lines[li], pts[pi])
        L = self.length[li]
        interior = (pos > self.tol) & (pos < L - self.tol) & (pos > 0) & (pos < L)
        node, li, pos = node[interior], li[interior], pos[interior]
        order = np.lexsort((pos, li))
        for j in order.tolist():
            self.splits.setdefault(int(li[j]), []).append((float(pos[j]), int(node[j])))
        for k, cuts in self.splits.items():
            for p, nd in cuts:
                on = self.main_id[k]
                joining = sorted({str(self.main_id[e // 2])
                                  for e in np.flatnonzero(self.end_node == nd).tolist()})
                gap = shapely.distance(self.lines[k], Point(self.node_xy[nd])) * self.fpu
                where = (f"where {', '.join(joining)} joins it" if joining
                         else f"where it passes through {self.node_kind[nd]} {self.node_id[nd]}")
                self.add("t_split", "info",
                         f"main {on} split at {self.node_id[nd]} ({p * self.fpu:.1f} ft along), "
                         f"{where} ({gap:.2f} ft off the line)",
                         "mains", on, Point(self.node_xy[nd]))

    # ---------------------------------------------------------------- direction
    def _direction(self) -> None:
        u0 = self.end_node[0::2]
        v0 = self.end_node[1::2]
        uid = self.node_id[u0]
        vid = self.node_id[v0]
        fr, to = self.from_id, self.to_id
        fwd = (fr == uid) | (to == vid)
        rev = (fr == vid) | (to == uid)
        ids_given = pd.notna(fr) | pd.notna(to)
        ids_ok = fwd ^ rev
        inv_ok = ~np.isnan(self.up_inv) & ~np.isnan(self.down_inv) & (self.up_inv != self.down_inv)
        inv_fwd = self.up_inv > self.down_inv
        source = np.where(ids_ok, "node_ids", np.where(inv_ok, "inverts", "digitized"))
        flip = np.where(ids_ok, rev, np.where(inv_ok, ~inv_fwd, False))
        self.flip = flip.astype(bool)
        self.direction_source = source.astype(object)
        mid = self.main_id
        # from/to ids that name other nodes than the ones the pipe's ends meet
        up_id = np.where(self.flip, vid, uid)
        dn_id = np.where(self.flip, uid, vid)
        bad_from = pd.notna(fr) & (fr != up_id)
        bad_to = pd.notna(to) & (to != dn_id)
        for k in np.flatnonzero(ids_given & (bad_from | bad_to | (fwd & rev))).tolist():
            if fwd[k] and rev[k]:
                why = f"both ends meet {uid[k]}/{vid[k]}, so they do not tell its direction"
            else:
                why = f"its ends meet {up_id[k]} -> {dn_id[k]}"
            self.add("node_id_mismatch", "warning",
                     f"main {mid[k]} names from/to nodes {fr[k]} -> {to[k]}, but {why}; "
                     f"direction from {_SOURCE_TEXT[source[k]]}",
                     "mains", mid[k], self.lines[k])
        for k in np.flatnonzero(ids_ok & inv_ok & (fwd != inv_fwd)).tolist():
            self.add("direction_conflict", "warning",
                     f"main {mid[k]}: from/to nodes say {fr[k]} -> {to[k]} but the inverts "
                     f"({self.up_inv[k]:g} ft, {self.down_inv[k]:g} ft) say the opposite; "
                     "the node ids are followed", "mains", mid[k], self.lines[k])
        for k in np.flatnonzero(self.flip).tolist():
            why = ("its from/to node ids" if source[k] == "node_ids"
                   else f"its inverts (up {self.up_inv[k]:g} ft < down {self.down_inv[k]:g} ft)")
            self.add("reversed_pipe", "info",
                     f"main {mid[k]} is drawn against the flow given by {why}; reversed",
                     "mains", mid[k], self.lines[k])
        # inverts and slope in flow direction
        up = np.where(self.flip, self.down_inv, self.up_inv)
        down = np.where(self.flip, self.up_inv, self.down_inv)
        self.up_flow, self.down_flow = up, down
        length_ft = self.length * self.fpu
        with np.errstate(divide="ignore", invalid="ignore"):
            computed = np.where(length_ft > 0, (up - down) / length_ft, np.nan)
        self.slope_computed = computed
        self.slope = np.where(np.isnan(computed), self.slope_stored, computed)

    # ---------------------------------------------------------------- pieces
    def _pieces(self) -> None:
        """One row per edge: unsplit mains vectorised, split mains cut in a
        loop over the split mains only."""
        n = self.n
        split = np.zeros(n, dtype=bool)
        if self.splits:
            split[list(self.splits)] = True
        whole = np.flatnonzero(~split)
        main = [whole]
        seq = [np.ones(len(whole), dtype=np.int64)]
        npieces = [np.ones(len(whole), dtype=np.int64)]
        u = [self.end_node[2 * whole]]
        v = [self.end_node[2 * whole + 1]]
        geoms = [self.lines[whole]]
        f0 = [np.zeros(len(whole))]
        f1 = [np.ones(len(whole))]
        pm: list[int] = []
        ps: list[int] = []
        pn: list[int] = []
        pu: list[int] = []
        pv: list[int] = []
        pg: list[Any] = []
        pf0: list[float] = []
        pf1: list[float] = []
        for k, cuts in sorted(self.splits.items()):
            line = self.lines[k]
            L = float(self.length[k])
            stops = [0.0] + [p for p, _ in cuts] + [L]
            nodes = [int(self.end_node[2 * k])] + [nd for _, nd in cuts] + \
                [int(self.end_node[2 * k + 1])]
            cnt = len(stops) - 1
            for i in range(cnt):
                pm.append(k)
                ps.append(i + 1)
                pn.append(cnt)
                pu.append(nodes[i])
                pv.append(nodes[i + 1])
                pg.append(substring(line, stops[i], stops[i + 1]))
                pf0.append(stops[i] / L)
                pf1.append(stops[i + 1] / L)
        if pm:
            main.append(np.array(pm, dtype=np.int64))
            seq.append(np.array(ps, dtype=np.int64))
            npieces.append(np.array(pn, dtype=np.int64))
            u.append(np.array(pu, dtype=np.int64))
            v.append(np.array(pv, dtype=np.int64))
            pga = np.empty(len(pg), dtype=object)
            pga[:] = pg
            geoms.append(pga)
            f0.append(np.array(pf0))
            f1.append(np.array(pf1))
        e_main = np.concatenate(main)
        e_seq = np.concatenate(seq)
        e_cnt = np.concatenate(npieces)
        e_u = np.concatenate(u)
        e_v = np.concatenate(v)
        e_geom = np.concatenate(geoms)
        e_f0 = np.concatenate(f0)
        e_f1 = np.concatenate(f1)
        flip = self.flip[e_main]
        # flow direction
        self.e_u = np.where(flip, e_v, e_u)
        self.e_v = np.where(flip, e_u, e_v)
        if flip.any():
            e_geom = e_geom.copy()
            e_geom[flip] = shapely.reverse(e_geom[flip])
        self.e_geom = e_geom
        self.e_main = e_main
        self.e_part = np.where(flip, e_cnt - e_seq + 1, e_seq)
        # fraction along the main in flow direction, for invert interpolation
        a = np.where(flip, 1.0 - e_f1, e_f0)
        b = np.where(flip, 1.0 - e_f0, e_f1)
        up, down = self.up_flow[e_main], self.down_flow[e_main]
        both = ~np.isnan(up) & ~np.isnan(down)
        self.e_up = np.where(both, up + (down - up) * a, np.where(a == 0, up, np.nan))
        self.e_down = np.where(both, up + (down - up) * b, np.where(b == 1, down, np.nan))
        self.e_length_ft = shapely.length(e_geom) * self.fpu
        mid = self.main_id[e_main]
        self.e_key = np.where(self.e_part == 1, mid,
                              np.char.add(np.char.add(mid.astype(str), "@"),
                                          self.e_part.astype(str))).astype(object)
        order = np.lexsort((self.e_part, e_main))
        for name in ("e_u", "e_v", "e_geom", "e_main", "e_part", "e_up", "e_down",
                     "e_length_ft", "e_key"):
            setattr(self, name, getattr(self, name)[order])

    # ---------------------------------------------------------------- outlets
    def _outlets(self) -> None:
        used = np.zeros(len(self.node_id), dtype=bool)
        used[self.e_u] = True
        used[self.e_v] = True
        self.used = used
        outlet = used & np.isin(self.node_kind, OUTLET_KINDS)
        plant_of = np.full(len(self.node_id), None, dtype=object)
        plant_of[: self.s_count] = self.s_plant_id
        index = {nid: i for i, nid in enumerate(self.node_id.tolist())}
        outdeg = np.bincount(self.e_u, minlength=len(self.node_id))
        renames: dict[int, int] = {}
        # plants that no pipe end reached: snap the plant to a node
        for s in np.flatnonzero(self.s_source == "plants").tolist():
            if used[s]:
                continue
            pid = self.s_plant_id[s]
            named = dict(self.plant_named_node).get(s)
            target = None
            if named is not None:
                target = index.get(named)
                if target is None or not used[target]:
                    self.add("plant_not_connected", "warning",
                             f"plant {pid} names node {named}, which no main reaches",
                             "plants", pid, self.s_geom[s])
                    target = None
            if target is None and named is None:
                cand = np.flatnonzero(used)
                if len(cand):
                    tree = shapely.STRtree(shapely.points(self.node_xy[cand]))
                    hits, dist = tree.query_nearest(self.s_geom[s], return_distance=True,
                                                    all_matches=True)
                    d = float(dist[0]) if len(dist) else np.inf
                    if d <= self.plant_tol:
                        hit_nodes = cand[hits]
                        sinks = hit_nodes[outdeg[hit_nodes] == 0]
                        target = int((sinks if len(sinks) else hit_nodes).min())
                    else:
                        nearest = self.node_id[cand[hits[0]]]
                        self.add("plant_not_connected", "warning",
                                 f"plant {pid} is {d * self.fpu:.1f} ft from the nearest node "
                                 f"({nearest}), beyond the {self.plant_tol * self.fpu:g} ft "
                                 "tolerance; it is no outlet", "plants", pid, self.s_geom[s])
            if target is None:
                continue
            outlet[target] = True
            plant_of[target] = pid
            if target >= self.s_count and target not in renames:
                renames[target] = s
                self.node_kind[target] = "plant"
        # a junction a plant snapped to takes the plant's id; the plant's own
        # (unused) structure node gives it up
        for target, s in renames.items():
            key = str(self.s_id[s])
            self.node_id[s] = f"{key}~unused"
            self.node_id[target] = key
        index = {nid: i for i, nid in enumerate(self.node_id.tolist())}
        for name in self.inp.outlet_nodes:
            i = index.get(name)
            if i is None:
                raise ConfigError(f"outlet node {name!r} is neither a manhole/plant id nor a "
                                  "node of the sewer graph", layer="mains", feature=name)
            if not used[i]:
                self.add("outlet_not_connected", "warning",
                         f"outlet node {name} named in the town settings is reached by no main "
                         f"within {self.tol_ft:g} ft", "manholes", name, Point(self.node_xy[i]))
                continue
            outlet[i] = True
        self.outlet = outlet
        self.plant_of = plant_of

    # ---------------------------------------------------------------- networkx
    def _graph(self) -> nx.MultiDiGraph:
        inp = self.inp
        nodes = np.flatnonzero(self.used)
        ns = self.s_count
        is_s = nodes < ns
        s_idx = np.where(is_s, nodes, 0)
        public = np.where(is_s, self.s_public[s_idx] if ns else True, True)
        active = np.where(is_s, self.s_active[s_idx] if ns else True, True)
        kind = self.node_kind[nodes]
        is_mh = (kind == "manhole") & public & active
        rim = np.where(is_s, self.s_rim[s_idx] if ns else np.nan, np.nan)
        inv = np.where(is_s, self.s_inv[s_idx] if ns else np.nan, np.nan)
        src = np.where(is_s, self.s_source[s_idx] if ns else "junction", "junction")
        xy = self.node_xy[nodes]
        ncols = {
            "kind": kind.tolist(),
            "x": xy[:, 0].tolist(),
            "y": xy[:, 1].tolist(),
            "public": public.astype(bool).tolist(),
            "active": active.astype(bool).tolist(),
            "is_manhole": is_mh.astype(bool).tolist(),
            "outlet": self.outlet[nodes].astype(bool).tolist(),
            "plant_id": self.plant_of[nodes].tolist(),
            "rim_ft": _none_nan(rim),
            "invert_ft": _none_nan(inv),
            "source": src.tolist(),
        }
        keys = list(ncols)
        node_rows = [(nid, dict(zip(keys, vals, strict=True)))
                     for nid, vals in zip(self.node_id[nodes].tolist(),
                                          zip(*ncols.values(), strict=True), strict=True)]
        m = self.e_main
        ecols = {
            "main_id": self.main_id[m].tolist(),
            "part": self.e_part.tolist(),
            "length_ft": self.e_length_ft.tolist(),
            "diameter_in": _none_nan(self.diameter[m]),
            "slope": _none_nan(self.slope[m]),
            "slope_stored": _none_nan(self.slope_stored[m]),
            "slope_computed": _none_nan(self.slope_computed[m]),
            "up_invert_ft": _none_nan(self.e_up),
            "down_invert_ft": _none_nan(self.e_down),
            "material": self.material[m].tolist(),
            "kind": self.kind[m].tolist(),
            "owner": self.owner[m].tolist(),
            "status": self.status[m].tolist(),
            "street": self.street[m].tolist(),
            "public": self.public[m].tolist(),
            "active": self.active[m].tolist(),
            "gravity": self.gravity[m].tolist(),
            "eligible": self.eligible[m].tolist(),
            "direction_source": self.direction_source[m].tolist(),
            "geometry": list(self.e_geom),
        }
        ekeys = list(ecols)
        nid = self.node_id
        edge_rows = zip(nid[self.e_u].tolist(), nid[self.e_v].tolist(), self.e_key.tolist(),
                        (dict(zip(ekeys, vals, strict=True))
                         for vals in zip(*ecols.values(), strict=True)), strict=True)
        G = nx.MultiDiGraph(
            crs=inp.crs,
            ft_per_unit=self.fpu,
            outlets=sorted(self.node_id[np.flatnonzero(self.outlet)].tolist()),
            snap_tolerance_ft=self.tol_ft,
        )
        _fill_graph(G, node_rows, edge_rows)
        return G

    # ---------------------------------------------------------------- report
    def _analyse(self, G: nx.MultiDiGraph) -> None:
        self._main_findings()
        self._topology_findings(G)

    def _main_findings(self) -> None:
        mid, lines = self.main_id, self.lines
        for k in np.flatnonzero(~(self.diameter > 0)).tolist():
            self.add("missing_diameter", "warning", f"main {mid[k]} has no diameter",
                     "mains", mid[k], lines[k])
        grav = self.gravity
        s = self.slope
        src = np.where(np.isnan(self.slope_computed), "stored", "from inverts")
        for k in np.flatnonzero(grav & (s < 0)).tolist():
            self.add("adverse_slope", "warning",
                     f"main {mid[k]} slopes uphill in its flow direction ({s[k]:.4f} ft/ft, "
                     f"{src[k]}); it gets no capacity", "mains", mid[k], lines[k])
        for k in np.flatnonzero(grav & (s == 0)).tolist():
            self.add("flat_slope", "warning",
                     f"main {mid[k]} is flat (slope 0, {src[k]}); it gets no capacity",
                     "mains", mid[k], lines[k])
        st, co = self.slope_stored, self.slope_computed
        both = ~np.isnan(st) & ~np.isnan(co)
        diff = np.abs(np.abs(st) - np.abs(co))
        bad = both & (diff > SLOPE_MISMATCH_ABS) & (diff > SLOPE_MISMATCH_REL * np.abs(co))
        for k in np.flatnonzero(bad).tolist():
            self.add("slope_mismatch", "warning",
                     f"main {mid[k]}: stored slope {st[k]:.4f} ft/ft, but the inverts and "
                     f"length give {co[k]:.4f} ft/ft; the computed slope is used",
                     "mains", mid[k], lines[k])
        unknown = np.flatnonzero(self.kind == "unknown")
        if len(unknown):
            self.add("kind_assumed", "info",
                     f"{len(unknown)} main(s) have no sewer kind (sanitary/storm/...); "
                     "they are treated as sanitary", "mains",
                     ",".join(mid[unknown[:50]].tolist()) + (",..." if len(unknown) > 50 else ""),
                     None)
        for k in np.flatnonzero(~self.eligible).tolist():
            why = []
            if self.kind[k] not in SANITARY_KINDS:
                why.append(f"kind {self.kind[k]}")
            elif not self.gravity[k]:
                why.append("force main")
            if not self.public[k]:
                why.append("private")
            if not self.active[k]:
                why.append(f"status {self.status[k] or 'inactive'}")
            self.add("excluded_main", "info",
                     f"main {mid[k]} ({', '.join(why)}) is excluded from public-sewer questions",
                     "mains", mid[k], lines[k])
        if self.s_count:
            used = self.used[: self.s_count]
            for s in np.flatnonzero(~used & (self.s_source == "manholes")).tolist():
                self.add("isolated_structure", "info",
                         f"{self.s_kind[s]} {self.s_id[s]} is not reached by any main "
                         f"within {self.tol_ft:g} ft", "manholes", self.s_id[s],
                         Point(self.s_xy[s]))

    def _topology_findings(self, G: nx.MultiDiGraph) -> None:
        nn = len(self.node_id)
        u, v = self.e_u, self.e_v
        deg = np.bincount(u, minlength=nn) + np.bincount(v, minlength=nn)
        junction = np.zeros(nn, dtype=bool)
        junction[self.s_count:] = True
        junction &= self.node_kind == "junction"
        # dangling ends
        dang = np.flatnonzero(junction & (deg == 1) & ~self.outlet)
        edge_of = np.full(nn, -1, dtype=np.int64)
        edge_of[u] = np.arange(len(u))
        edge_of[v] = np.arange(len(v))
        mains_at = self.main_id[self.e_main]
        for nd in dang.tolist():
            e = edge_of[nd]
            self.add("dangling_end", "warning",
                     f"{'upstream' if u[e] == nd else 'downstream'} end of main {mains_at[e]} "
                     f"meets no manhole and no other pipe (node {self.node_id[nd]})",
                     "mains", mains_at[e], Point(self.node_xy[nd]))
        self._near_misses(dang, edge_of)
        # cycles: strongly connected components with an edge inside
        nid = self.node_id
        core = _peel(nn, v, u, _peel(nn, u, v, self.used.copy()))
        sub = G.subgraph(nid[core].tolist()) if core.any() else nx.MultiDiGraph()
        for comp in sorted(nx.strongly_connected_components(sub), key=lambda c: sorted(c)):
            if len(comp) == 1:
                (x,) = comp
                if not G.has_edge(x, x):
                    continue
            sub = [(a, b, d) for a in comp for b, ks in G.adj[a].items() if b in comp
                   for d in ks.values()]
            ids = sorted({d["main_id"] for _, _, d in sub})
            geom = shapely.multilinestrings([d["geometry"] for _, _, d in sub])
            self.add("cycle", "warning",
                     f"cycle of {len(ids)} main(s): {', '.join(ids)}; all kept, flow "
                     "around it is undetermined", "mains", ",".join(ids), geom)
        # nodes with no path to an outlet
        reach = np.zeros(nn, dtype=bool)
        outs = np.flatnonzero(self.outlet)
        if len(outs):
            order = np.argsort(v, kind="stable")
            vs = v[order]
            starts = np.searchsorted(vs, np.arange(nn + 1))
            pred = u[order]
            frontier = outs
            reach[outs] = True
            while len(frontier):
                idx = np.unique(_gather(pred, starts, frontier))
                idx = idx[~reach[idx]]
                reach[idx] = True
                frontier = idx
        lost = np.flatnonzero(self.used & ~reach)
        self.findings.extend(
            Finding("no_outlet", "warning", f"{kind} {name} has no path to a plant or outfall",
                    "manholes" if nd < self.s_count else "mains", name, pt)
            for nd, kind, name, pt in zip(lost.tolist(), self.node_kind[lost].tolist(),
                                          nid[lost].tolist(),
                                          shapely.points(self.node_xy[lost]).tolist(),
                                          strict=True))
        # disconnected pieces (weak components)
        lab = component_labels(nn, u, v)
        elab = lab[u]
        pieces, inv, ecount = np.unique(elab, return_inverse=True, return_counts=True)
        self.pieces = len(pieces)
        if len(pieces) > 1:
            plen = np.bincount(inv, weights=self.e_length_ft)
            main_piece = int(np.lexsort((-plen, -ecount))[0])
            has_out = np.zeros(nn, dtype=bool)
            has_out[lab[self.outlet & self.used]] = True
            members = np.argsort(inv, kind="stable")
            bounds = np.searchsorted(inv[members], np.arange(len(pieces) + 1))
            any_outlet = bool(has_out.any())
            for p in range(len(pieces)):
                out = bool(has_out[pieces[p]])
                # a piece with its own outlet is a network of its own (a storm
                # system to its outfall); without any outlet, the largest
                # piece is the network and the others are disconnected
                if out or (not any_outlet and p == main_piece):
                    continue
                es = members[bounds[p]:bounds[p + 1]]
                ids = sorted(set(mains_at[es].tolist()))
                nodes_in = len(np.unique(np.concatenate([u[es], v[es]])))
                self.add("disconnected_piece", "warning",
                         f"piece of {len(ids)} main(s), {nodes_in} node(s), "
                         f"{plen[p]:.0f} ft, connected to no outlet"
                         f"{'' if any_outlet else ' and not to the largest piece'}: "
                         f"{', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}",
                         "mains", ",".join(ids),
                         shapely.multilinestrings(list(self.e_geom[es])))

    def _near_misses(self, dang: np.ndarray, edge_of: np.ndarray) -> None:
        """Dangling ends lying within twice the tolerance of another node (named
        first: the manhole it was meant to reach) or else of another pipe."""
        if len(dang) == 0:
            return
        limit = 2 * self.tol
        pts = shapely.points(self.node_xy[dang])
        node_pool = np.flatnonzero(self.used)
        node_pool = np.concatenate([node_pool, np.flatnonzero(~self.used[: self.s_count])])
        ntree = shapely.STRtree(shapely.points(self.node_xy[node_pool]))
        best_d = np.full(len(dang), np.inf)
        best_what: list[str | None] = [None] * len(dang)
        pi, ti = ntree.query(pts, predicate="dwithin", distance=limit)
        keep = node_pool[ti] != dang[pi]
        pi, ti = pi[keep], ti[keep]
        d = shapely.distance(pts[pi], shapely.points(self.node_xy[node_pool[ti]]))
        for a, t, dist in zip(pi.tolist(), ti.tolist(), d.tolist(), strict=True):
            if dist < best_d[a]:
                best_d[a] = dist
                nd = node_pool[t]
                best_what[a] = f"{self.node_kind[nd]} {self.node_id[nd]}"
        # a pipe is named only where no node lies within reach
        todo = ~np.isfinite(best_d)
        if todo.any():
            ltree = shapely.STRtree(self.e_geom)
            pi, ti = ltree.query(pts[todo], predicate="dwithin", distance=limit)
            pi = np.flatnonzero(todo)[pi]
            keep = ti != edge_of[dang[pi]]
            pi, ti = pi[keep], ti[keep]
            d = shapely.distance(pts[pi], self.e_geom[ti])
            for a, t, dist in zip(pi.tolist(), ti.tolist(), d.tolist(), strict=True):
                if dist < best_d[a]:
                    best_d[a] = dist
                    best_what[a] = f"main {self.main_id[self.e_main[t]]}"
        mains_at = self.main_id[self.e_main]
        for a in np.flatnonzero(np.isfinite(best_d)).tolist():
            nd = dang[a]
            e = edge_of[nd]
            self.add("gap_not_snapped", "warning",
                     f"end of main {mains_at[e]} stops {best_d[a] * self.fpu:.2f} ft from "
                     f"{best_what[a]}, beyond the {self.tol_ft:g} ft snap tolerance; not joined",
                     "mains", mains_at[e], Point(self.node_xy[nd]))


def _fill_graph(G: nx.MultiDiGraph, node_rows: Iterable[tuple[Any, dict[str, Any]]],
                edge_rows: Iterable[tuple[Any, Any, Any, dict[str, Any]]]) -> None:
    """Add nodes and keyed edges in bulk.

    For a plain :class:`networkx.MultiDiGraph` (dict factories) this fills the
    adjacency dicts directly, exactly as ``add_edge`` would (one key dict
    shared by ``_succ[u][v]`` and ``_pred[v][u]``), about ten times faster
    than ``add_edges_from`` at 300,000 edges; the attribute dicts are used
    as given, not copied. Every edge end must be among ``node_rows``.
    Any other graph class goes through the public API.
    """
    plain = type(G) is nx.MultiDiGraph and all(
        getattr(G, f) is dict for f in (
            "node_dict_factory", "node_attr_dict_factory", "adjlist_outer_dict_factory",
            "adjlist_inner_dict_factory", "edge_key_dict_factory", "edge_attr_dict_factory"))
    if not plain:  # pragma: no cover - subclasses with their own factories
        G.add_nodes_from(node_rows)
        G.add_edges_from(edge_rows)
        return
    node, succ, pred = G._node, G._succ, G._pred
    for n, attrs in node_rows:
        node[n] = attrs
        succ[n] = {}
        pred[n] = {}
    for u, v, k, d in edge_rows:
        kd = succ[u].get(v)
        if kd is None:
            kd = succ[u][v] = {}
            pred[v][u] = kd
        kd[k] = d
    nx._clear_cache(G)


def _peel(nn: int, u: np.ndarray, v: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Nodes left after repeatedly removing nodes with no incoming edge.

    Kahn's algorithm run frontier by frontier with numpy over the edges
    ``u -> v`` among ``alive`` nodes; what is left lies on a cycle or
    downstream of one. Run again with ``(v, u)`` to also strip what lies
    downstream, leaving cycles and what lies between them.
    """
    keep = alive[u] & alive[v]
    uu, vv = u[keep], v[keep]
    indeg = np.bincount(vv, minlength=nn)
    order = np.argsort(uu, kind="stable")
    heads = vv[order]
    starts = np.searchsorted(uu[order], np.arange(nn + 1))
    left = alive.copy()
    frontier = np.flatnonzero(alive & (indeg == 0))
    while len(frontier):
        left[frontier] = False
        h = _gather(heads, starts, frontier)
        if len(h) == 0:
            break
        uh, cnt = np.unique(h, return_counts=True)
        indeg[uh] -= cnt
        frontier = uh[indeg[uh] == 0]
    return left


def _gather(pred: np.ndarray, starts: np.ndarray, frontier: np.ndarray) -> np.ndarray:
    """Concatenate ``pred[starts[x]:starts[x+1]]`` for every x, vectorised."""
    lo = starts[frontier]
    hi = starts[frontier + 1]
    cnt = hi - lo
    total = int(cnt.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    return pred[np.arange(total) + offs]


def _none_nan(a: np.ndarray) -> list[Any]:
    """Float array as a list with None for NaN (NaN != NaN would break equality)."""
    a = np.asarray(a, dtype=float)
    out = a.tolist()
    if np.isnan(a).any():
        for i in np.flatnonzero(np.isnan(a)).tolist():
            out[i] = None
    return out


# --------------------------------------------------------------------------------------
# GeoDataFrames


class _GraphMeta:
    """Graph-level values carried in ``gdf.attrs``; shared, never deep-copied."""

    def __init__(self, snap_tolerance_ft: float | None, report: Report | None,
                 outlets: list[str]) -> None:
        self.snap_tolerance_ft = snap_tolerance_ft
        self.report = report
        self.outlets = outlets

    def __deepcopy__(self, memo: dict[int, Any]) -> _GraphMeta:
        return self


def graph_to_gdfs(G: nx.MultiDiGraph) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """The graph as two GeoDataFrames, the ``graph_nodes`` and ``graph_edges`` layers.

    Parameters
    ----------
    G
        A graph from :func:`build_sewer_graph` (or :func:`graph_from_gdfs`).

    Returns
    -------
    (nodes, edges)
        ``nodes``: ``node_id`` + :data:`NODE_COLUMNS`, Point geometry at
        ``(x, y)``. ``edges``: ``edge_key`` (the edge key), ``main_id``,
        ``part``, ``from_node`` / ``to_node`` (as resolved: flow direction),
        the other :data:`EDGE_COLUMNS`, LineString geometry in flow direction.
        Both in ``G.graph["crs"]``; default RangeIndex. Attributes a graph
        carries beyond these become extra columns.
    """
    crs = G.graph.get("crs")
    node_ids = list(G.nodes)
    ndata = [G.nodes[n] for n in node_ids]
    extra_n = sorted({k for d in ndata for k in d} - set(NODE_COLUMNS))
    ncols: dict[str, list[Any]] = {"node_id": node_ids}
    for c in NODE_COLUMNS[1:] + tuple(extra_n):
        ncols[c] = [d.get(c) for d in ndata]
    ngeom = shapely.points(np.column_stack([
        np.asarray(ncols["x"], dtype=float), np.asarray(ncols["y"], dtype=float)])
    ) if node_ids else np.empty(0, dtype=object)
    nodes = gpd.GeoDataFrame(pd.DataFrame(ncols), geometry=gpd.GeoSeries(ngeom, crs=crs),
                             crs=crs)
    rows = list(G.edges(keys=True, data=True))
    extra_e = sorted({k for *_, d in rows for k in d} - set(EDGE_COLUMNS) - {"geometry"})
    ecols: dict[str, list[Any]] = {
        "edge_key": [r[2] for r in rows],
        "from_node": [r[0] for r in rows],
        "to_node": [r[1] for r in rows],
    }
    for c in EDGE_COLUMNS + tuple(extra_e):
        if c not in ecols:
            ecols[c] = [r[3].get(c) for r in rows]
    edf = pd.DataFrame({c: ecols[c] for c in EDGE_COLUMNS + tuple(extra_e)})
    egeom = [r[3].get("geometry") for r in rows]
    edges = gpd.GeoDataFrame(edf, geometry=gpd.GeoSeries(egeom, crs=crs), crs=crs)
    meta = _GraphMeta(G.graph.get("snap_tolerance_ft"), G.graph.get("report"),
                      list(G.graph.get("outlets") or []))
    nodes.attrs["gisnet_graph"] = meta
    edges.attrs["gisnet_graph"] = meta
    return nodes, edges


def _col_values(s: pd.Series) -> list[Any]:
    """Column values as Python objects, None for missing."""
    if pd.api.types.is_bool_dtype(s.dtype):
        return [bool(x) for x in s.tolist()]
    if pd.api.types.is_float_dtype(s.dtype):
        return _none_nan(s.to_numpy(dtype=float, na_value=np.nan))
    if pd.api.types.is_integer_dtype(s.dtype):
        return [None if pd.isna(x) else int(x) for x in s.tolist()]
    return [None if (x is None or (isinstance(x, float) and np.isnan(x)) or x is pd.NA)
            else x for x in s.astype(object).tolist()]


def graph_from_gdfs(
    nodes: gpd.GeoDataFrame,
    edges: gpd.GeoDataFrame,
    *,
    report: Report | None = None,
    snap_tolerance_ft: float | None = None,
) -> nx.MultiDiGraph:
    """Rebuild the graph from its two layers (inverse of :func:`graph_to_gdfs`).

    Parameters
    ----------
    nodes, edges
        The ``graph_nodes`` and ``graph_edges`` layers (from
        :func:`graph_to_gdfs`, or read back from the results GeoPackage).
    report, snap_tolerance_ft
        Graph-level values; default those carried in ``nodes.attrs`` by
        :func:`graph_to_gdfs`, else an empty report and None.

    Returns
    -------
    networkx.MultiDiGraph
        Same nodes, edges, keys and attributes. ``G.graph["outlets"]`` is
        rebuilt from the ``outlet`` column, ``ft_per_unit`` from the CRS.

    Raises
    ------
    LayerError
        A required column (``node_id``, ``edge_key``, ``from_node``,
        ``to_node``) is missing, or an edge names an unknown node.
    CRSError
        The layers have no CRS.
    """
    for col, gdf, layer in (("node_id", nodes, "graph_nodes"), ("edge_key", edges, "graph_edges"),
                            ("from_node", edges, "graph_edges"), ("to_node", edges, "graph_edges")):
        if col not in gdf.columns:
            raise LayerError(f"column {col!r} is missing", layer=layer)
    crs = nodes.crs if nodes.crs is not None else edges.crs
    if crs is None:
        raise CRSError("the graph layers have no CRS", layer="graph_nodes")
    crs = CRS.from_user_input(crs)
    meta = nodes.attrs.get("gisnet_graph")
    if report is None:
        report = meta.report if isinstance(meta, _GraphMeta) and meta.report is not None \
            else Report()
    if snap_tolerance_ft is None and isinstance(meta, _GraphMeta):
        snap_tolerance_ft = meta.snap_tolerance_ft
    ncols = [c for c in nodes.columns if c not in ("node_id", nodes.geometry.name)]
    nvals = {c: _col_values(nodes[c]) for c in ncols}
    ids = _col_values(nodes["node_id"])
    node_rows = [(n, dict(zip(ncols, vals, strict=True)))
                 for n, vals in zip(ids, zip(*nvals.values(), strict=True), strict=True)] \
        if ncols else [(n, {}) for n in ids]
    known = set(ids)
    ecols = [c for c in edges.columns
             if c not in ("edge_key", "from_node", "to_node", edges.geometry.name)]
    evals = {c: _col_values(edges[c]) for c in ecols}
    evals["geometry"] = list(edges.geometry.values)
    fr = _col_values(edges["from_node"])
    to = _col_values(edges["to_node"])
    unknown = [x for x in set(fr) | set(to) if x not in known]
    if unknown:
        raise LayerError(f"edges name {len(unknown)} node(s) missing from the nodes layer",
                         layer="graph_edges", feature=sorted(map(str, unknown))[0])
    keys = _col_values(edges["edge_key"])
    names = list(evals)
    edge_rows = [(a, b, k, dict(zip(names, vals, strict=True)))
                 for a, b, k, vals in zip(fr, to, keys, zip(*evals.values(), strict=True),
                                          strict=True)]
    outlets = sorted(n for n, d in node_rows if d.get("outlet"))
    G = nx.MultiDiGraph(crs=crs, ft_per_unit=feet_per_unit(crs), outlets=outlets,
                        snap_tolerance_ft=snap_tolerance_ft)
    G.graph["report"] = report
    G.add_nodes_from(node_rows)
    G.add_edges_from(edge_rows)
    return G


def graph_summary(G: nx.MultiDiGraph) -> dict[str, Any]:
    """Headline figures of a sewer graph for ``gisnet run`` / ``gisnet validate``.

    Returns
    -------
    dict
        ``nodes``, ``edges``, ``mains`` (distinct main ids), ``pieces`` (weakly
        connected), ``outlets``, ``cycles``, ``length_ft`` (total),
        ``snap_tolerance_ft`` and ``findings`` (count per finding kind).
    """
    report = G.graph.get("report") or Report()
    counts = report.counts()
    mains = {d.get("main_id", k) for _, _, k, d in G.edges(keys=True, data=True)}
    length = sum(float(d.get("length_ft") or 0.0) for _, _, d in G.edges(data=True))
    return {
        "nodes": G.number_of_nodes(),
        "edges": G.number_of_edges(),
        "mains": len(mains),
        "pieces": nx.number_weakly_connected_components(G) if len(G) else 0,
        "outlets": len(G.graph.get("outlets") or ()),
        "cycles": counts.get("cycle", 0),
        "length_ft": round(length, 1),
        "snap_tolerance_ft": G.graph.get("snap_tolerance_ft"),
        "findings": dict(sorted(counts.items())),
    }


def quality_gdf(G: nx.MultiDiGraph, extra: Report | None = None) -> gpd.GeoDataFrame:
    """The ``quality`` layer: ``extra``'s findings (e.g. the loader's) then the graph's."""
    rep = Report()
    if extra is not None:
        rep.extend(extra.findings)
    rep.extend((G.graph.get("report") or Report()).findings)
    return rep.to_gdf(G.graph.get("crs"))

