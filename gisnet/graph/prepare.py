"""Stage 1: the mains as lines with ids and rule flags, the structures as nodes.

:func:`prepare_mains` turns the mains layer into one numpy array per
attribute, with the rule flags (public, active, gravity, eligible) decided by
:mod:`gisnet.rules`; :func:`prepare_structures` does the same for manholes
and plants, the nodes that exist before any pipe end is snapped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from .. import rules
from ..errors import LayerError
from ..io.raster import ElevationRaster, sample_ground
from ..report import Finding
from .columns import as_floats, as_text, text_column, unique_ids

#: The columns the rule predicates (:mod:`gisnet.rules`) read of a main or manhole.
RULE_COLUMNS = ("kind", "owner", "status", "public", "active")


@dataclass(frozen=True, eq=False)
class Mains:
    """The mains, one array element per main (layer order).

    ``lines`` are single LineStrings as digitised; ``length`` is in CRS
    units; ``ends`` is ``(2 n, 2)``: first then last vertex of each line.
    ``kind`` is the lower-case kind, ``unknown`` where the kind is not known
    (:func:`gisnet.rules.kind_is_unknown`); ``effective_kind`` is the kind the
    rules read (:func:`gisnet.rules.effective_kind`). ``findings`` are the duplicate-id
    findings of layers that did not come through the loader.
    """

    main_id: np.ndarray
    lines: np.ndarray
    kind: np.ndarray
    material: np.ndarray
    owner: np.ndarray
    status: np.ndarray
    street: np.ndarray
    from_id: np.ndarray
    to_id: np.ndarray
    diameter: np.ndarray
    up_inv: np.ndarray
    down_inv: np.ndarray
    start_inv: np.ndarray
    end_inv: np.ndarray
    slope_stored: np.ndarray
    public: np.ndarray
    active: np.ndarray
    gravity: np.ndarray
    eligible: np.ndarray
    kind_unknown: np.ndarray
    effective_kind: np.ndarray
    length: np.ndarray
    ends: np.ndarray
    findings: tuple[Finding, ...]

    def __len__(self) -> int:
        return len(self.main_id)


@dataclass(frozen=True, eq=False)
class Structures:
    """Manholes then plants: the nodes ``0 .. count - 1`` of the graph.

    ``source`` is ``manholes`` or ``plants``; a plant whose id is also a
    manhole id is keyed ``plant:<id>``. ``plant_named_node`` maps a plant's
    structure index to the node id its ``node_id`` column names. ``ground``
    is the ground elevation (ft) an elevation raster gives a manhole with no
    recorded rim or invert (:func:`ground_at_structures`), NaN elsewhere or
    empty when the town has no raster.
    """

    ids: np.ndarray
    kind: np.ndarray
    geom: np.ndarray
    xy: np.ndarray
    public: np.ndarray
    active: np.ndarray
    rim: np.ndarray
    inv: np.ndarray
    source: np.ndarray
    plant_id: np.ndarray
    plant_named_node: dict[int, str]
    findings: tuple[Finding, ...]
    ground: np.ndarray = field(default_factory=lambda: np.empty(0))

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def ground_ft(self) -> np.ndarray:
        """``ground`` per structure (all NaN without a raster)."""
        return self.ground if len(self.ground) == self.count else np.full(self.count, np.nan)


def distinct_rows(df: pd.DataFrame, columns: Iterable[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The distinct combinations of ``columns`` in ``df``, and each row's combination.

    The rule predicates of :mod:`gisnet.rules` read a row's values one by one;
    applied to the few distinct combinations of the columns they read and
    indexed back (``predicate(rows)[code]``) they give the same answer for
    every row in a fraction of the time.

    Returns
    -------
    (rows, code)
        ``rows``: the first row of ``df`` with each combination (the columns
        present among ``columns``); ``code[i]``: the position in ``rows`` of
        row ``i``'s combination.
    """
    cols = [c for c in columns if c in df.columns]
    if not cols:
        return pd.DataFrame(index=range(1)), np.zeros(len(df), dtype=np.int64)
    groups = df.groupby(cols, dropna=False, sort=False, observed=True)
    code = groups.ngroup().to_numpy(dtype=np.int64)
    _, first = np.unique(code, return_index=True)
    return pd.DataFrame(df[cols].iloc[first]).reset_index(drop=True), code


def prepare_lines(mains: gpd.GeoDataFrame) -> np.ndarray:
    """The mains' geometries as single LineStrings (MultiLineStrings merged).

    Raises
    ------
    LayerError
        A main without geometry, or one that does not merge into one line.
    """
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


def prepare_mains(mains: gpd.GeoDataFrame, eligible_kinds: Iterable[str],
                  report_dups: bool) -> Mains:
    """Lines, ids, attributes and rule flags of the mains.

    Parameters
    ----------
    mains
        The canonical mains layer.
    eligible_kinds
        Kinds that count for a connection obligation (``eligible`` is
        :func:`gisnet.rules.is_eligible_for_connection` with these).
    report_dups
        Report renamed duplicate ids (layers not from the loader).
    """
    m = mains
    n = len(m)
    if "main_id" not in m.columns:
        m = m.assign(main_id=None)
    lines = prepare_lines(m)
    ids, found = unique_ids(m["main_id"], "mains", report_dups, lines)
    rows, code = distinct_rows(m, RULE_COLUMNS)
    kind_unknown = rules.kind_is_unknown(rows)[code]
    kind = np.where(kind_unknown, "unknown",
                    text_column(m, "kind").str.lower().to_numpy(dtype=object)).astype(object)
    public = rules.is_public(rows)[code]
    active = rules.is_active(rows)[code]
    gravity = rules.is_gravity(rows)[code]
    eligible = rules.is_eligible_for_connection(rows, eligible_kinds)[code]
    # first and last vertex of every line from one flat coordinate array
    xy, owner = shapely.get_coordinates(lines, return_index=True)
    last = np.flatnonzero(np.r_[owner[1:] != owner[:-1], True])
    first = np.r_[0, last[:-1] + 1]
    ends = np.empty((2 * n, 2))
    ends[0::2] = xy[first]
    ends[1::2] = xy[last]
    return Mains(
        main_id=np.array(ids, dtype=object),
        lines=lines,
        kind=kind,
        material=text_column(m, "material").to_numpy(dtype=object),
        owner=text_column(m, "owner").to_numpy(dtype=object),
        status=text_column(m, "status").to_numpy(dtype=object),
        street=text_column(m, "street").to_numpy(dtype=object),
        from_id=text_column(m, "from_node").to_numpy(dtype=object),
        to_id=text_column(m, "to_node").to_numpy(dtype=object),
        diameter=as_floats(m.get("diameter_in"), n),
        up_inv=as_floats(m.get("up_invert_ft"), n),
        down_inv=as_floats(m.get("down_invert_ft"), n),
        start_inv=as_floats(m.get("start_invert_ft"), n),
        end_inv=as_floats(m.get("end_invert_ft"), n),
        slope_stored=as_floats(m.get("slope"), n),
        public=public,
        active=active,
        gravity=gravity,
        eligible=eligible,
        kind_unknown=kind_unknown,
        effective_kind=rules.effective_kind(rows)[code],
        length=shapely.length(lines),
        ends=ends,
        findings=tuple(found),
    )


def point_geoms(df: gpd.GeoDataFrame, layer: str, id_col: str, what: str) -> np.ndarray:
    """The geometries of a node layer as an object array; a missing or empty one
    is a :class:`LayerError` naming the feature."""
    g = np.asarray(df.geometry.values, dtype=object)
    bad = shapely.is_missing(g) | shapely.is_empty(g)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LayerError(f"{what} has no geometry", layer=layer,
                         feature=df[id_col].iloc[i] if id_col in df else i)
    return g


def prepare_structures(manholes: gpd.GeoDataFrame | None, plants: gpd.GeoDataFrame | None,
                       report_dups: bool) -> Structures:
    """Manholes and plants as nodes (ids, kinds, positions, flags, rim and invert)."""
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
    found: list[Finding] = []
    named_node: dict[int, str] = {}
    mh = manholes
    if mh is not None:
        g = point_geoms(mh, "manholes", "node_id", "a manhole")
        if "node_id" not in mh.columns:
            mh = mh.assign(node_id=None)
        mid, dups = unique_ids(mh["node_id"], "manholes", report_dups, g)
        found += dups
        ids += mid
        kinds += text_column(mh, "kind").fillna("manhole").str.lower().tolist()
        geoms.append(g)
        pts = shapely.get_type_id(g) == 0
        xy.append(shapely.get_coordinates(g) if pts.all()
                  else shapely.get_coordinates(shapely.centroid(g)))
        rows, code = distinct_rows(mh, RULE_COLUMNS)
        public.append(rules.is_public(rows)[code])
        active.append(rules.is_active(rows)[code])
        rim.append(as_floats(mh.get("rim_ft"), len(mh)))
        inv.append(as_floats(mh.get("invert_ft"), len(mh)))
        source += ["manholes"] * len(mh)
        plant_ids += [None] * len(mh)
    pl = plants
    if pl is not None:
        g = point_geoms(pl, "plants", "plant_id", "a plant")
        if "plant_id" not in pl.columns:
            pl = pl.assign(plant_id=None)
        pid, dups = unique_ids(pl["plant_id"], "plants", report_dups, g)
        found += dups
        taken = set(ids)
        base = len(ids)
        for p in pid:  # a plant named like a manhole is keyed plant:<id> (then #2 ...)
            key, k = (p, 1) if p not in taken else (f"plant:{p}", 1)
            while key in taken:
                k += 1
                key = f"plant:{p}#{k}"
            taken.add(key)
            ids.append(key)
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
            named = as_text(pl["node_id"]).tolist()
            named_node = {base + i: v for i, v in enumerate(named) if v}
    return Structures(
        ids=np.array(ids, dtype=object),
        kind=np.array(kinds, dtype=object),
        geom=np.concatenate(geoms) if geoms else np.empty(0, dtype=object),
        xy=np.concatenate(xy) if xy else np.empty((0, 2)),
        public=np.concatenate(public) if public else np.empty(0, dtype=bool),
        active=np.concatenate(active) if active else np.empty(0, dtype=bool),
        rim=np.concatenate(rim) if rim else np.empty(0),
        inv=np.concatenate(inv) if inv else np.empty(0),
        source=np.array(source, dtype=object),
        plant_id=np.array(plant_ids, dtype=object),
        plant_named_node=named_node,
        findings=tuple(found),
    )


def ground_at_structures(structures: Structures, raster: ElevationRaster | None,
                         crs: Any) -> Structures:
    """The ground under every manhole-layer structure with no recorded rim or
    invert, read from the town's elevation raster (reprojected to its CRS), with
    one ``elevation_raster`` finding saying what was read and assumed.

    Parameters
    ----------
    structures
        The structures (their ``xy`` in ``crs``).
    raster
        The town file's checked raster, or None (the structures come back as given).
    crs
        The working CRS.
    """
    if raster is None:
        return structures
    todo = (structures.source == "manholes") & np.isnan(structures.rim) \
        & np.isnan(structures.inv)
    ground = np.full(structures.count, np.nan)
    idx = np.flatnonzero(todo)
    ground[idx] = sample_ground(raster, structures.xy[idx], crs)
    got = int(np.isfinite(ground).sum())
    text = (f"{raster.describe()}: {got:,} of {len(idx):,} manholes without a recorded rim or "
            f"invert got a ground elevation")
    if got < len(idx):
        text += f" ({len(idx) - got:,} lie outside the raster or on nodata cells)"
    found = Finding("elevation_raster", "info", text, "manholes", None, None)
    return replace(structures, ground=ground, findings=(*structures.findings, found))
