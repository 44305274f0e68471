"""Small towns built in code, through the loader's own canonical mapping.

Tests and benchmarks describe a town as a few raw layers (rows of source-like
attributes and shapely geometries) and :func:`make_town` turns them into a
:class:`~gisnet.town.Town` exactly as :func:`gisnet.io.load_town` would: every
layer goes through :func:`gisnet.io.canonical_layer`, so canonical columns,
dtypes, unique ids, coded values and the derived ``public`` / ``active`` flags
(:func:`gisnet.rules.is_public`, :func:`gisnet.rules.is_active`) and every
finding come from the loader itself, never from a re-implementation here.

The row helpers (:func:`main`, :func:`parcel`, :func:`building`, ...) write
the geometry people write in tests: ``main("M1", [(0, 0), (500, 0)])``.

:func:`hand_graph` builds a sewer graph by hand (for tests of graph-level
functions that want a network the graph builder would not make) whose node
and edge flags (``public``, ``active``, ``gravity``, ``eligible``,
``is_manhole``) are decided by :mod:`gisnet.rules`.

Examples
--------
>>> from gisnet.testing.towns import main, make_town, parcel
>>> town = make_town({"parcels": [parcel("P1", (0, 30, 100, 130))],
...                   "mains": [main("M1", [(0, 0), (500, 0)], owner="private")]},
...                  crs="EPSG:2222")
>>> bool(town.layers["mains"]["public"].iloc[0])
False
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import geopandas as gpd
import networkx as nx
import pandas as pd
import shapely
from pyproj import CRS
from shapely.geometry import LineString, Point, box

from .. import rules, schema
from ..io import canonical_layer, empty_layer
from ..report import Report
from ..town import Town, TownSettings
from ..townfile import LayerSpec
from ..units import feet_per_unit

__all__ = [
    "DEFAULT_PROFILE",
    "Rows",
    "building",
    "hand_graph",
    "lateral",
    "layer",
    "main",
    "make_town",
    "manhole",
    "parcel",
    "plant",
    "street",
    "user",
]

#: Profile of a town made here when none is named.
DEFAULT_PROFILE = "poughkeepsie-fourth-ward"

#: Flags :func:`hand_graph` derives by :mod:`gisnet.rules` (not to be given).
_DERIVED = ("public", "active", "gravity", "eligible", "is_manhole")

#: A raw layer: a GeoDataFrame of source-like columns, or rows (dicts with a
#: ``geometry`` key; a row without one has no geometry).
Rows: TypeAlias = gpd.GeoDataFrame | Sequence[Mapping[str, Any]]


# --------------------------------------------------------------------------- geometry


def _polygon(shape: Any) -> Any:
    """A polygon from a shapely geometry or ``(xmin, ymin, xmax, ymax)``."""
    if isinstance(shape, tuple | list) and len(shape) == 4 and all(
            isinstance(v, int | float) for v in shape):
        return box(*shape)
    return shape


def _point(at: Any) -> Any:
    """A point from a shapely geometry or ``(x, y)``."""
    if isinstance(at, tuple | list):
        return Point(*at)
    return at


def _line(coords: Any) -> Any:
    """A line from a shapely geometry or a sequence of ``(x, y)``."""
    if coords is None or isinstance(coords, shapely.Geometry):
        return coords
    return LineString(coords)


# --------------------------------------------------------------------------- rows


def main(main_id: str, coords: Any, *, kind: str | None = "sanitary",
         owner: str | None = "public", status: str | None = "active",
         install_date: str | None = "2000-01-01", **attrs: Any) -> dict[str, Any]:
    """A sewer main row: a line through ``coords`` (or a shapely line).

    Defaults describe an ordinary public sanitary main in service; pass
    ``kind=None`` (or ``owner=None``, ``status=None``) for a missing value.
    Other attributes (``diameter_in``, ``from_node``, ``slope`` ...) go as
    keyword arguments, under canonical or source names.
    """
    return {"main_id": main_id, "geometry": _line(coords), "kind": kind, "owner": owner,
            "status": status, "install_date": install_date, **attrs}


def parcel(parcel_id: str, shape: Any, **attrs: Any) -> dict[str, Any]:
    """A parcel row: a polygon, or ``(xmin, ymin, xmax, ymax)`` for a box."""
    return {"parcel_id": parcel_id, "geometry": _polygon(shape), **attrs}


def building(building_id: str, shape: Any, parcel_id: str | None = None,
             **attrs: Any) -> dict[str, Any]:
    """A building row: a polygon, a box ``(xmin, ymin, xmax, ymax)`` or a point ``(x, y)``."""
    is_xy = isinstance(shape, tuple | list) and len(shape) == 2
    return {"building_id": building_id, "parcel_id": parcel_id,
            "geometry": _point(shape) if is_xy else _polygon(shape), **attrs}


def street(street_id: str, shape: Any, width_ft: float | None = None,
           **attrs: Any) -> dict[str, Any]:
    """A street row: a polygon or box (the right-of-way), or a centre line (coordinates)."""
    geom: shapely.Geometry
    if isinstance(shape, tuple | list) and len(shape) == 4 and all(
            isinstance(v, int | float) for v in shape):
        geom = box(*shape)
    elif isinstance(shape, shapely.Geometry):
        geom = shape
    else:
        geom = LineString(shape)
    return {"street_id": street_id, "geometry": geom, "width_ft": width_ft, **attrs}


def manhole(node_id: str, at: Any, *, kind: str | None = "manhole",
            owner: str | None = "public", status: str | None = "active",
            **attrs: Any) -> dict[str, Any]:
    """A manhole (or other structure) row at a point ``(x, y)``."""
    return {"node_id": node_id, "geometry": _point(at), "kind": kind, "owner": owner,
            "status": status, **attrs}


def lateral(lateral_id: str, coords: Any, **attrs: Any) -> dict[str, Any]:
    """A service lateral row: a line through ``coords`` (building end first)."""
    return {"lateral_id": lateral_id, "geometry": _line(coords), **attrs}


def plant(plant_id: str, at: Any, **attrs: Any) -> dict[str, Any]:
    """A treatment plant row at a point ``(x, y)``."""
    return {"plant_id": plant_id, "geometry": _point(at), **attrs}


def user(user_id: str, at: Any = None, **attrs: Any) -> dict[str, Any]:
    """An industrial user row; ``at`` (a point) may be None (placed by parcel/building)."""
    return {"user_id": user_id, "geometry": None if at is None else _point(at), **attrs}


# --------------------------------------------------------------------------- layers


def layer(rows: Rows, crs: Any) -> gpd.GeoDataFrame:
    """A raw layer (source columns, CRS ``crs``) from rows or a GeoDataFrame.

    Rows may name different columns; a column a row does not give is null
    there. A GeoDataFrame without a CRS gets ``crs``; one with a CRS keeps it
    (the loader reprojects it, as it would a file).
    """
    if isinstance(rows, gpd.GeoDataFrame):
        g = rows.reset_index(drop=True)
        return g if g.crs is not None else g.set_crs(crs)
    rows = list(rows)
    names: list[str] = []
    for r in rows:
        names += [k for k in r if k != "geometry" and k not in names]
    data = {c: pd.Series([r.get(c) for r in rows], dtype=object) for c in names}
    geoms = gpd.GeoSeries([r.get("geometry") for r in rows], crs=crs)
    return gpd.GeoDataFrame(data, geometry=geoms, crs=crs)


def make_town(
    layers: Mapping[str, Rows],
    *,
    crs: Any,
    profile: Any = DEFAULT_PROFILE,
    name: str = "test",
    settings: TownSettings | None = None,
    plant_flows: pd.DataFrame | None = None,
    specs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Town:
    """A :class:`~gisnet.town.Town` from raw layers, mapped by the loader.

    Parameters
    ----------
    layers
        Role -> raw layer (rows or a GeoDataFrame of source-like columns; see
        :func:`layer`). Roles are those of :mod:`gisnet.schema`.
    crs
        The working CRS (projected); also the CRS of rows and of GeoDataFrames
        that have none.
    profile
        Profile name, path or loaded :class:`~gisnet.profile.Profile`.
    name
        Town name.
    settings
        Tolerances and unit choices (default :class:`~gisnet.town.TownSettings`).
    plant_flows
        Monthly plant flows (``plant_id``, ``month``, ``avg_flow_mgd``).
    specs
        Role -> extra :class:`~gisnet.townfile.LayerSpec` fields (``columns``,
        ``values``, ``defaults``, ``slope_units``, ``diameter_units``), as a
        town file would give them.

    Returns
    -------
    Town
        Each layer as :func:`gisnet.io.canonical_layer` makes it (canonical
        columns, ``public``/``active`` on mains and manholes, unmapped source
        columns kept), ``parcels`` and ``mains`` always present (empty when not
        given, as :func:`gisnet.io.load_town` leaves them), the loader's
        findings in ``town.report``.
    """
    working = CRS.from_user_input(crs)
    if not working.is_projected:
        raise ValueError(f"the working CRS must be projected, not {working.name}")
    report = Report()
    out: dict[str, gpd.GeoDataFrame] = {}
    specs = specs or {}
    for role, rows in layers.items():
        if role not in schema.ROLES:
            raise ValueError(f"unknown layer role {role!r}; roles are {', '.join(schema.ROLES)}")
        spec = LayerSpec(role=role, path=Path(f"{name}.{role}"), **dict(specs.get(role, {})))
        raw = layer(rows, working)
        out[role] = (canonical_layer(raw, spec, working, report) if len(raw)
                     else empty_layer(role, working))
    for role in schema.REQUIRED_ROLES:
        if role not in out:
            out[role] = empty_layer(role, working)
    return Town(name=name, crs=working, ft_per_unit=feet_per_unit(working), layers=out,
                profile=profile, settings=settings or TownSettings(), report=report,
                plant_flows=plant_flows)


# --------------------------------------------------------------------------- graphs


def _frame(rows: Iterable[Mapping[str, Any]], cols: Sequence[str]) -> pd.DataFrame:
    rows = list(rows)
    return pd.DataFrame({c: pd.Series([r.get(c) for r in rows], dtype=object) for c in cols})


def hand_graph(
    nodes: Mapping[str, Mapping[str, Any]],
    edges: Sequence[tuple[str, str, str, Mapping[str, Any]]],
    *,
    crs: Any,
    ft_per_unit: float | None = None,
    outlets: Iterable[str] = (),
    eligible_kinds: Iterable[str] | None = None,
    snap_tolerance_ft: float = rules.DEFAULT_SNAP_TOLERANCE_FT,
    report: Report | None = None,
) -> nx.MultiDiGraph:
    """A sewer graph written by hand, following docs/architecture.md "Sewer graph".

    Parameters
    ----------
    nodes
        Node id -> attributes: ``x``, ``y`` (required), ``kind`` (default
        ``manhole``), ``owner``, ``status``; any others are kept.
    edges
        ``(u, v, key, attrs)``: flow u -> v; ``attrs`` may give ``main_id``
        (default ``key`` before any ``@``), ``kind`` (default ``sanitary``),
        ``owner``, ``status``, ``diameter_in`` (default 8), ``slope`` (default
        0.004), ``material``, inverts, ``geometry`` (default the straight line
        u -> v) and anything else, kept.
    crs
        The graph's CRS.
    ft_per_unit
        Feet per CRS unit (default :func:`gisnet.units.feet_per_unit`).
    outlets
        Node ids that are outlets.
    eligible_kinds
        Kinds that count for a connection (default
        :data:`gisnet.rules.DEFAULT_ELIGIBLE_KINDS`).

    Returns
    -------
    networkx.MultiDiGraph
        Node ``public`` / ``active`` by :func:`gisnet.rules.is_public` /
        :func:`gisnet.rules.is_active` from ``owner`` / ``status``;
        ``is_manhole`` = manhole kind, public and active. Edge ``public``,
        ``active``, ``gravity`` (:func:`gisnet.rules.is_gravity`) and
        ``eligible`` (:func:`gisnet.rules.is_eligible_for_connection`);
        ``length_ft`` from the geometry unless given.

    Raises
    ------
    ValueError
        A node or edge gives one of the flags the rules decide (``public``,
        ``active``, ``gravity``, ``eligible``, ``is_manhole``), or an id is not
        text.
    """
    c = CRS.from_user_input(crs)
    fpu = feet_per_unit(c) if ft_per_unit is None else ft_per_unit
    outlets = list(outlets)
    for ids, what in ((nodes, "node"), ({e[2]: e for e in edges}, "edge")):
        bad = [k for k in ids if not isinstance(k, str)]
        if bad:
            raise ValueError(f"{what} ids must be text: {bad}")
    G: nx.MultiDiGraph = nx.MultiDiGraph(crs=c, ft_per_unit=fpu, outlets=outlets,
                                         snap_tolerance_ft=snap_tolerance_ft,
                                         report=report if report is not None else Report())
    flagged = [k for a in [*nodes.values(), *(e[3] for e in edges)] for k in a
               if k in _DERIVED]
    if flagged:
        raise ValueError(f"{sorted(set(flagged))} are decided by gisnet.rules; give owner, "
                         "status and kind instead")
    nrows = [{"kind": "manhole", **dict(a)} for a in nodes.values()]
    nf = _frame(nrows, ("kind", "owner", "status"))
    n_public, n_active = rules.is_public(nf), rules.is_active(nf)
    for i, (nid, a) in enumerate(nodes.items()):
        kind = nrows[i]["kind"]
        attrs = {**dict(a), "kind": kind, "x": float(a["x"]), "y": float(a["y"]),
                 "public": bool(n_public[i]), "active": bool(n_active[i]),
                 "is_manhole": bool(kind == "manhole" and n_public[i] and n_active[i]),
                 "outlet": nid in outlets}
        G.add_node(nid, **attrs)
    erows = [{"kind": "sanitary", **dict(a)} for *_, a in edges]
    ef = _frame(erows, ("kind", "owner", "status"))
    e_public, e_active = rules.is_public(ef), rules.is_active(ef)
    gravity = rules.is_gravity(ef)
    eligible = rules.is_eligible_for_connection(ef, eligible_kinds)
    for i, (u, v, key, a) in enumerate(edges):
        geom = a.get("geometry")
        if geom is None:
            geom = LineString([(G.nodes[u]["x"], G.nodes[u]["y"]),
                               (G.nodes[v]["x"], G.nodes[v]["y"])])
        kind = erows[i]["kind"]
        attrs = {"main_id": key.split("@")[0], "diameter_in": 8.0, "slope": 0.004,
                 "up_invert_ft": None, "down_invert_ft": None, "material": "PVC",
                 "direction_source": "node_ids", "part": 1,
                 "length_ft": float(shapely.length(geom)) * fpu, **dict(a),
                 "kind": "unknown" if kind is None else str(kind).lower(), "geometry": geom,
                 "public": bool(e_public[i]), "active": bool(e_active[i]),
                 "gravity": bool(gravity[i]), "eligible": bool(eligible[i])}
        G.add_edge(u, v, key=key, **attrs)
    return G
