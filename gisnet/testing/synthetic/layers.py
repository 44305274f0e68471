"""Canonical layers of a synthetic town: parcels, buildings, mains, manholes, plant,
streets, industrial users and laterals (:func:`make_town`, :func:`build_layers`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import cast

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ... import schema
from ...units import feet_per_unit
from .hydraulics import (
    DESIGN_UTILIZATION,
    DIAMETERS_IN,
    MIN_SLOPE,
    accumulate,
    harmon_peaking,
    manning_capacity_gpd,
    path_sums,
)
from .layout import TownArrays, layout_town, make_placer

log = logging.getLogger(__name__)

#: Average design flow per dwelling unit (2.7 persons x 100 gpd) and per
#: non-residential parcel, gpd.
GPD_PER_DWELLING_UNIT = 270.0
NONRES_GPD = {"commercial": 800.0, "industrial": 2000.0, "institutional": 1500.0}

LAND_USES = (
    "residential_single",
    "residential_multi",
    "commercial",
    "industrial",
    "institutional",
    "vacant",
)
LAND_USE_P = (0.70, 0.12, 0.09, 0.03, 0.03, 0.03)

SIC_CODES = ("2086", "2752", "2834", "3471", "3479", "3672", "3089", "2026", "7216", "4953")


def _ids(prefix: str, n: int, width: int | None = None) -> np.ndarray:
    """``prefix`` + 1-based zero-padded numbers, as an object array of str."""
    if width is None:
        width = max(6, len(str(n)))
    num = pd.Series(np.arange(1, n + 1)).astype(str).str.zfill(width)
    return (prefix + num).to_numpy(dtype=object)


def _lines(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> np.ndarray:
    coords = np.stack([np.column_stack([x0, y0]), np.column_stack([x1, y1])], axis=1)
    return cast(np.ndarray, shapely.linestrings(coords))  # (n, 2, 2): n lines


_DTYPES = {"str": "str", "float": "float64", "int": "Int64", "bool": "boolean",
           "date": "datetime64[ms]"}


def canonical_dtypes(gdf: gpd.GeoDataFrame, role: str) -> gpd.GeoDataFrame:
    """Cast a role's canonical columns to the dtypes :func:`gisnet.io.load_town` gives.

    ``str`` -> pandas string, ``int`` -> ``Int64``, ``bool`` -> ``boolean``,
    ``date`` -> ``datetime64[ms]``; ``public``/``active`` stay numpy bool.
    """
    for col in schema.columns(role):
        if col.name in gdf.columns:
            gdf[col.name] = gdf[col.name].astype(_DTYPES[col.dtype])
    return gdf


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------


def make_town(
    n_parcels: int,
    n_mains: int | None = None,
    *,
    seed: int = 0,
    crs: str = "EPSG:2260",
    origin: tuple[float, float] | None = None,
    irregular: bool = False,
    laterals: bool | float = False,
    lots_per_side: int = 6,
    lot_width_ft: float = 60.0,
    lot_depth_ft: float = 120.0,
    street_width_ft: float = 50.0,
    trunk_every: int = 8,
    rotation_deg: float | None = None,
) -> dict[str, gpd.GeoDataFrame]:
    """A synthetic town in the canonical schema, deterministic for a seed.

    Parameters
    ----------
    n_parcels
        Exactly this many parcels (polygons).
    n_mains
        Wanted number of mains. None: one main per sewered street block (about
        one main per 6 parcels). The street tree needs a minimum (about one per
        12 parcels); above the number of sewered street blocks, blocks are
        split into several mains with manholes between, so the count is exact.
    seed
        Random seed; the same arguments give identical layers.
    crs
        Projected CRS of the output (any linear unit; lengths are laid out in
        feet and converted with the CRS's own factor).
    origin
        Where local (0, 0), the south-west street corner, lands, in CRS units.
        None centres the town on the Town of Poughkeepsie, NY (41.67 N, 73.90 W).
    irregular
        Jittered lot lines, rotation and curved streets (a sinusoidal warp of
        the whole town; lines are densified every 40 ft first).
    laterals
        Also return a ``laterals`` layer: one building sewer per building, from
        the front of the footprint straight to the main in front (a float in
        (0, 1): that fraction of the buildings, at random).
    lots_per_side, lot_width_ft, lot_depth_ft, street_width_ft, trunk_every
        Grid shape: lots along each side of a block, lot size (ft), street
        right-of-way width (ft), and a north-south trunk sewer every
        ``trunk_every`` street columns.
    rotation_deg
        Rotation of the grid (degrees counter-clockwise); default 0, or 17 when
        ``irregular``.

    Returns
    -------
    dict[str, geopandas.GeoDataFrame]
        ``parcels``, ``buildings``, ``mains``, ``manholes``, ``plants``,
        ``streets``, ``users`` (and ``laterals``), all in ``crs``, with every
        canonical column of :mod:`gisnet.schema`. Mains carry ``from_node`` /
        ``to_node`` (manhole ``node_id``; the last main ends at the plant's
        ``plant_id``), ``up_invert_ft > down_invert_ft`` and ``slope`` (ft/ft)
        consistent with the drawn length; they are drawn in flow direction.

    Examples
    --------
    >>> layers = make_town(240, seed=1)
    >>> len(layers["parcels"]), layers["mains"]["kind"].unique().tolist()
    (240, ['sanitary'])
    """
    rng = np.random.default_rng(seed)
    crs_obj = CRS.from_user_input(crs)
    fpu = feet_per_unit(crs_obj)
    jitter = 0.22 if irregular else 0.0
    a = layout_town(n_parcels, n_mains, rng, lots_per_side=lots_per_side,
                    lot_width_ft=lot_width_ft, lot_depth_ft=lot_depth_ft,
                    street_width_ft=street_width_ft, trunk_every=trunk_every, jitter=jitter)
    if rotation_deg is None:
        rotation_deg = 17.0 if irregular else 0.0
    place = make_placer(crs_obj, origin, a.extent, rotation_deg=rotation_deg,
                        warp_ft=120.0 if irregular else 0.0, seed=seed)
    return build_layers(a, place, rng, crs_obj, fpu, irregular=irregular, laterals=laterals)


def build_layers(a: TownArrays, place: Callable[[np.ndarray], np.ndarray], rng: np.random.Generator,
                 crs: CRS, fpu: float, *, irregular: bool, laterals: bool | float,
                 septic_mask: np.ndarray | None = None,
                 user_flows_gpd: np.ndarray | None = None,
                 user_categorical: np.ndarray | None = None,
                 rear_fraction: float = 0.0, max_diameter_in: float = 120.0,
                 multi_units: tuple[int, int] = (2, 12)) -> dict[str, gpd.GeoDataFrame]:
    """Turn :class:`TownArrays` into canonical GeoDataFrames (see :func:`make_town`).

    Parameters
    ----------
    laterals
        False: none; True: one per building with a main in front; a float in
        (0, 1): that fraction of those, chosen at random.
    septic_mask
        Parcels on septic (vacant ones excepted); default 1 % at random.
    user_flows_gpd, user_categorical
        Process flows (gpd) and categorical flags of the industrial users;
        default one user per 400 parcels with random flows of 2,000-60,000 gpd.
    rear_fraction
        Fraction of single-family lots with room behind the house that get a
        second, rear building.
    max_diameter_in
        Largest standard diameter used; a pipe that needs more gets this
        diameter laid steeper (the slope that carries its design flow).
    multi_units
        Smallest and largest number of dwelling units on a multi-family lot.
    """
    seg_ft = 40.0 if irregular else 0.0

    def geo(g: np.ndarray) -> np.ndarray:
        if seg_ft:
            g = shapely.segmentize(g, seg_ft)
        return shapely.transform(g, place)

    n_par = len(a.par_x0)
    n_nodes = len(a.node_x)
    plant = n_nodes - 1
    n_pipes = len(a.pipe_u)

    # ---- parcels: attributes --------------------------------------------------
    lu_idx = rng.choice(len(LAND_USES), size=n_par, p=LAND_USE_P)
    land_use = np.array(LAND_USES, dtype=object)[lu_idx]
    du = np.zeros(n_par, dtype=np.int64)
    single = lu_idx == 0
    multi = lu_idx == 1
    du[single] = 1
    du[multi] = rng.integers(multi_units[0], multi_units[1] + 1, size=int(multi.sum()))
    beds = np.zeros(n_par, dtype=np.int64)
    beds[single] = rng.integers(2, 6, size=int(single.sum()))
    beds[multi] = du[multi] * rng.integers(1, 3, size=int(multi.sum()))
    avg = du * GPD_PER_DWELLING_UNIT
    for name, gpd_ in NONRES_GPD.items():
        avg = np.where(land_use == name, gpd_, avg)
    nonres = (lu_idx >= 2) & (lu_idx <= 4)
    metered = nonres & (rng.random(n_par) < 0.2)
    flow = np.full(n_par, np.nan)
    flow[metered] = np.round(avg[metered] * rng.uniform(0.5, 1.5, size=int(metered.sum())), -1)
    if septic_mask is None:
        septic = (rng.random(n_par) < 0.01) & (lu_idx != 5)
    else:
        septic = septic_mask & (lu_idx != 5)
    connected = ~septic & (lu_idx != 5)
    par_flow = np.where(np.isnan(flow), avg, flow) * connected

    # ---- users (industrial) ------------------------------------------------------
    ind = np.flatnonzero(land_use == "industrial")
    ind = ind[connected[ind]]
    if user_flows_gpd is None:
        n_users = min(len(ind), max(1, n_par // 400))
        u_flow = np.round(np.exp(rng.uniform(np.log(2000), np.log(60000), n_users)), -1)
        u_cat = rng.random(n_users) < 0.15
    else:
        n_users = len(user_flows_gpd)
        if n_users > len(ind):
            raise ValueError(f"{n_users} industrial users asked for, {len(ind)} industrial parcels")
        u_flow = np.asarray(user_flows_gpd, dtype=float)
        u_cat = (np.zeros(n_users, bool) if user_categorical is None
                 else np.asarray(user_categorical, dtype=bool))
    u_par = np.sort(rng.choice(ind, n_users, replace=False)) if n_users else ind[:0]

    # ---- hydraulics: loads, accumulation, sizing, inverts --------------------------
    nxt = np.full(n_nodes, plant, dtype=np.int64)
    nxt[a.pipe_u] = a.pipe_v
    out_pipe = np.full(n_nodes, -1, dtype=np.int64)
    out_pipe[a.pipe_u] = np.arange(n_pipes)
    load = np.zeros(n_nodes)
    np.add.at(load, a.par_load_node, par_flow)
    np.add.at(load, a.par_load_node[u_par], u_flow)
    acc = accumulate(nxt, load, plant)
    pipe_avg = acc[a.pipe_u]
    peak = pipe_avg * harmon_peaking(pipe_avg)
    target = peak / DESIGN_UTILIZATION
    factor = rng.uniform(1.05, 2.2, n_pipes)
    n_d = int(np.searchsorted(DIAMETERS_IN, max_diameter_in, side="right"))
    caps = manning_capacity_gpd(DIAMETERS_IN[None, :n_d], MIN_SLOPE[None, :n_d] * factor[:, None])
    ok = caps >= target[:, None]
    pick = np.where(ok.any(axis=1), ok.argmax(axis=1), n_d - 1)
    diameter = DIAMETERS_IN[pick]
    slope = MIN_SLOPE[pick] * factor
    big = ~ok.any(axis=1)
    if big.any():
        k_full = manning_capacity_gpd(DIAMETERS_IN[n_d - 1], 1.0)
        slope[big] = (target[big] / k_full) ** 2
    slope = np.round(slope, 5)

    mains_geom = geo(_lines(a.node_x[a.pipe_u], a.node_y[a.pipe_u],
                            a.node_x[a.pipe_v], a.node_y[a.pipe_v]))
    length_ft = shapely.length(mains_geom) * fpu
    drop = 0.1 + slope * length_ft
    node_drop = np.zeros(n_nodes)
    node_drop[a.pipe_u] = drop[np.arange(n_pipes)]
    plant_invert = 132.0
    node_inv = np.round(plant_invert + path_sums(nxt, node_drop, plant), 2)
    up_inv = node_inv[a.pipe_u]
    down_inv = np.round(node_inv[a.pipe_v] + np.where(a.pipe_v == plant, 0.0, 0.1), 2)
    slope = np.round((up_inv - down_inv) / length_ft, 5)

    material = np.where(diameter <= 12, np.where(rng.random(n_pipes) < 0.7, "PVC", "VCP"),
                        np.where(diameter <= 24, np.where(rng.random(n_pipes) < 0.5, "PVC", "RCP"),
                                 "RCP")).astype(object)
    years = rng.integers(1952, 2016, n_pipes)
    install = pd.to_datetime(pd.Series(years).astype(str) + "-07-01").to_numpy()

    node_ids = _ids("MH", n_nodes - 1)
    plant_id = "WWTP-01"
    node_ids_all = np.concatenate([node_ids, np.array([plant_id], dtype=object)])
    main_ids = _ids("SM", n_pipes)

    mains = gpd.GeoDataFrame(
        {
            "main_id": main_ids,
            "diameter_in": diameter,
            "material": material,
            "up_invert_ft": up_inv,
            "down_invert_ft": down_inv,
            "start_invert_ft": np.full(n_pipes, np.nan),  # the inverts are named up/down
            "end_invert_ft": np.full(n_pipes, np.nan),
            "slope": slope,
            "from_node": node_ids_all[a.pipe_u],
            "to_node": node_ids_all[a.pipe_v],
            "kind": np.full(n_pipes, "sanitary", dtype=object),
            "owner": np.full(n_pipes, "public", dtype=object),
            "status": np.full(n_pipes, "active", dtype=object),
            "street": a.pipe_street,
            "install_date": install,
            "public": np.ones(n_pipes, bool),
            "active": np.ones(n_pipes, bool),
        },
        geometry=mains_geom, crs=crs,
    )

    mh_xy = place(np.column_stack([a.node_x[:-1], a.node_y[:-1]]))
    depth = np.round(rng.uniform(6.0, 12.0, n_nodes - 1), 2)
    manholes = gpd.GeoDataFrame(
        {
            "node_id": node_ids,
            "rim_ft": np.round(node_inv[:-1] + depth, 2),
            "invert_ft": node_inv[:-1],
            "kind": np.full(n_nodes - 1, "manhole", dtype=object),
            "owner": np.full(n_nodes - 1, "public", dtype=object),
            "status": np.full(n_nodes - 1, "active", dtype=object),
            "public": np.ones(n_nodes - 1, bool),
            "active": np.ones(n_nodes - 1, bool),
            "control_for": np.full(n_nodes - 1, None, dtype=object),
        },
        geometry=shapely.points(mh_xy), crs=crs,
    )

    total_avg = float(acc[plant])
    design = round(total_avg / 1e6 / 0.7, 2) if total_avg > 0 else 0.1
    plant_xy = place(np.array([a.plant_xy]))
    plants = gpd.GeoDataFrame(
        {
            "plant_id": [plant_id],
            "name": ["Synthetic Water Pollution Control Plant"],
            "design_flow_mgd": [max(design, 0.01)],
            "avg_flow_mgd": [round(total_avg / 1e6, 3)],
            "node_id": [plant_id],
        },
        geometry=shapely.points(plant_xy), crs=crs,
    )

    # ---- parcel and building geometry ----------------------------------------------
    par_geom = geo(shapely.box(a.par_x0, a.par_y0, a.par_x1, a.par_y1))
    par_ids = _ids("P", n_par, max(7, len(str(n_par))))
    address = (pd.Series(a.par_number).astype(str) + " "
               + pd.Series(a.par_street)).to_numpy(dtype=object)
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": par_ids,
            "address": address,
            "land_use": land_use,
            "dwelling_units": du,
            "bedrooms": beds,
            "flow_gpd": flow,
            "septic": septic,
            "connected": connected,
            "sewer_available_date": pd.Series(pd.NaT, index=range(n_par), dtype="datetime64[ms]"),
            # no notice served, no hazard or highway program recorded (null everywhere:
            # not written to the sample's files)
            "notice_date": pd.Series(pd.NaT, index=range(n_par), dtype="datetime64[ms]"),
            "health_hazard": pd.array([pd.NA] * n_par, dtype="boolean"),
            "highway_program": pd.array([pd.NA] * n_par, dtype="boolean"),
        },
        geometry=par_geom, crs=crs,
    )

    has_b = lu_idx != 5
    bidx = np.flatnonzero(has_b)
    w = a.par_x1[bidx] - a.par_x0[bidx]
    bw = w * rng.uniform(0.4, 0.65, len(bidx))
    bx0 = a.par_x0[bidx] + (w - bw) * rng.uniform(0.3, 0.7, len(bidx))
    bdep = rng.uniform(30.0, 55.0, len(bidx))
    setback = rng.uniform(20.0, 35.0, len(bidx))
    north = a.par_front_north[bidx]  # street on the south side of the lot (front at y0)
    by0 = np.where(north, a.par_y0[bidx] + setback, a.par_y1[bidx] - setback - bdep)
    by1 = by0 + bdep
    b_geom = geo(shapely.box(bx0, by0, bx0 + bw, by1))
    # rear buildings: behind the house, 24 x 20 ft, 6 ft off the back lot line
    back_room = np.where(north, a.par_y1[bidx] - by1, by0 - a.par_y0[bidx])
    can_rear = (land_use[bidx] == "residential_single") & (back_room >= 40.0)
    rear = can_rear & (rng.random(len(bidx)) < rear_fraction)
    ridx = np.flatnonzero(rear)
    rx0 = a.par_x0[bidx][ridx] + (w[ridx] - 24.0) / 2
    ry0 = np.where(north[ridx], a.par_y1[bidx][ridx] - 26.0, a.par_y0[bidx][ridx] + 6.0)
    r_geom = geo(shapely.box(rx0, ry0, rx0 + 24.0, ry0 + 20.0))
    n_b = len(bidx) + len(ridx)
    b_ids = _ids("B", n_b, max(7, len(str(n_b))))
    buildings = gpd.GeoDataFrame(
        {
            "building_id": b_ids,
            "parcel_id": np.concatenate([par_ids[bidx], par_ids[bidx][ridx]]),
            "built_date": pd.Series(pd.NaT, index=range(n_b), dtype="datetime64[ms]"),
            "use": np.concatenate([land_use[bidx],
                                   np.full(len(ridx), "residential_rear", dtype=object)]),
        },
        geometry=np.concatenate([b_geom, r_geom]), crs=crs,
    )

    st_geom = geo(_lines(a.st_x0, a.st_y0, a.st_x1, a.st_y1))
    streets = gpd.GeoDataFrame(
        {"street_id": _ids("ST", len(a.st_x0)), "name": a.st_name, "width_ft": a.st_width_ft},
        geometry=st_geom, crs=crs,
    )

    # users: at their building's centroid
    b_of_par = np.full(n_par, -1)
    b_of_par[bidx] = np.arange(len(bidx))
    ub = b_of_par[u_par]
    b_ids_front = b_ids[: len(bidx)]
    users = gpd.GeoDataFrame(
        {
            "user_id": _ids("IU", n_users, 4),
            "name": np.array([f"Industrial user {i + 1}" for i in range(n_users)], dtype=object),
            "parcel_id": par_ids[u_par],
            "building_id": b_ids_front[ub],
            "process_flow_gpd": u_flow,
            "categorical": u_cat,
            "industrial": np.ones(n_users, bool),
            "sic_code": np.array(SIC_CODES, dtype=object)[rng.integers(0, len(SIC_CODES), n_users)],
        },
        geometry=shapely.centroid(b_geom[ub]), crs=crs,
    )

    out = {
        "parcels": parcels,
        "buildings": buildings,
        "mains": mains,
        "manholes": manholes,
        "plants": plants,
        "streets": streets,
        "users": users,
    }
    if laterals:
        lp = a.par_pipe[bidx]
        sel = (lp >= 0) & ~septic[bidx]  # septic lots have no building sewer
        if laterals is not True:
            sel &= rng.random(len(bidx)) < float(laterals)
        cx = (bx0 + bw / 2)[sel]
        fy = np.where(north, by0, by1)[sel]
        lat_geom = geo(_lines(cx, fy, cx, a.par_front_y[bidx][sel]))
        # tap exactly on the (densified, bent) main
        tap_main = mains_geom[lp[sel]]
        tap = shapely.line_interpolate_point(
            tap_main, shapely.line_locate_point(tap_main, shapely.get_point(lat_geom, -1)))
        b_edge = shapely.boundary(b_geom[sel])
        start = shapely.get_coordinates(shapely.line_interpolate_point(
            b_edge, shapely.line_locate_point(b_edge, shapely.get_point(lat_geom, 0))))
        lat_geom = _lines(start[:, 0], start[:, 1], *shapely.get_coordinates(tap).T)
        n_lat = int(sel.sum())
        out["laterals"] = gpd.GeoDataFrame(
            {
                "lateral_id": _ids("LAT", n_lat),
                "parcel_id": par_ids[bidx][sel],
                "building_id": b_ids[: len(bidx)][sel],
                "main_id": main_ids[lp[sel]],
            },
            geometry=lat_geom, crs=crs,
        )
    out = {role: canonical_dtypes(gdf, role) for role, gdf in out.items()}
    log.info("synthetic town: %d parcels, %d mains, %d manholes, plant avg %.3f MGD",
             n_par, n_pipes, n_nodes - 1, total_avg / 1e6)
    return out


