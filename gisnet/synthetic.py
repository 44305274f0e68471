"""Deterministic synthetic towns, for the bundled sample and for benchmarks.

:func:`make_town` lays out a street grid with blocks of parcels, a building on
most parcels and a sanitary gravity main along the streets, draining as a tree
(every manhole has exactly one downstream pipe, inverts fall downstream) to one
treatment plant. Pipe diameters are sized by Manning for the peaked flow that
accumulates down the tree, slopes are at or above the minimum slope of each
diameter. Everything is vectorised numpy/shapely: a 1,000,000-parcel,
300,000-main town takes seconds, not minutes.

Every layer uses the canonical schema of :mod:`gisnet.schema` (plus the
loader-derived ``public``/``active`` booleans on mains and manholes), so the
layers can go straight into :func:`gisnet.graph.build_sewer_graph` or be
written to files and read back with :func:`gisnet.io.load_town`.

Layout (local coordinates in feet, before rotation/warp/translation)
--------------------------------------------------------------------
Street centrelines form a grid: rows ``j = 0..nby`` at ``y = j * pitch_y``
and columns ``i = 0..nbx`` at ``x = i * pitch_x``. A block between two rows
holds two rows of lots, each fronting one street row. Grid node ``(i, j)``
drains west to ``(i-1, j)``, except on trunk columns (``i % trunk_every ==
0``), which drain south; row 0 drains west to the outfall at ``(0, 0)`` and on
to the plant west of it. The one row edge west of each trunk column is a
summit and carries no sewer; the other columns carry short branch sewers from a
terminal manhole 40 ft short of the next row down to the row below.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer

from . import schema
from .units import CFS_TO_GPD, feet_per_unit

log = logging.getLogger(__name__)

#: Where the sample town sits: Town of Poughkeepsie, NY (lon, lat, WGS 84).
POUGHKEEPSIE_LONLAT: tuple[float, float] = (-73.90, 41.67)

#: Standard pipe diameters (in) and their minimum slopes (ft/ft)
#: (Ten States / NH Env-Wq 704.04 up to 36 in, extrapolated above).
DIAMETERS_IN = np.array(
    [8, 10, 12, 15, 18, 21, 24, 27, 30, 36, 42, 48, 54, 60, 72, 84, 96, 108, 120], dtype=float
)
MIN_SLOPE = np.array(
    [0.0040, 0.0028, 0.0022, 0.0015, 0.0012, 0.0010, 0.0008, 0.00067, 0.0006, 0.0005,
     0.0004, 0.00035, 0.0003, 0.00028, 0.00025, 0.00022, 0.0002, 0.00018, 0.00016]
)
#: Manning n used for sizing (design value for every material).
MANNING_N = 0.013
#: Flow sizing: a pipe is chosen so that its peak flow is at most this
#: fraction of its full-flow capacity.
DESIGN_UTILIZATION = 0.6
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

ROW_NAMES = (
    "Main", "Academy", "Cannon", "Church", "Hooker", "Raymond", "Spackenkill", "Vassar",
    "Hudson", "Innis", "Violet", "Maple", "Oak", "Elm", "Cedar", "Fulton", "Grand",
    "Hamilton", "Jefferson", "Lincoln", "Mansion", "Mill", "Noxon", "Smith", "Washington",
    "Worrall", "Beechwood", "Croft", "Delafield", "Fairmont", "Garden", "Hatfield",
)
COL_NAMES = (
    "Arlington", "Burnett", "College", "Dutchess", "Eastman", "Forbus", "Gifford", "Haight",
    "Inwood", "Kingwood", "Lagrange", "Manchester", "Noxon", "Overocker", "Pershing",
    "Quaker", "Rombout", "Sunset", "Titusville", "Underhill", "Van Wagner", "Wilbur",
)
SIC_CODES = ("2086", "2752", "2834", "3471", "3479", "3672", "3089", "2026", "7216", "4953")


def _ids(prefix: str, n: int, width: int | None = None) -> np.ndarray:
    """``prefix`` + 1-based zero-padded numbers, as an object array of str."""
    if width is None:
        width = max(6, len(str(n)))
    num = pd.Series(np.arange(1, n + 1)).astype(str).str.zfill(width)
    return (prefix + num).to_numpy(dtype=object)


def manning_capacity_gpd(diameter_in: np.ndarray, slope: np.ndarray,
                         n: float = MANNING_N) -> np.ndarray:
    """Full-pipe Manning capacity of circular pipes, gpd.

    ``Q_cfs = 0.46318 / n * D_ft**(8/3) * S**0.5`` (US units), times 646,317.
    """
    d_ft = np.asarray(diameter_in, dtype=float) / 12.0
    s = np.clip(np.asarray(slope, dtype=float), 0.0, None)
    return 0.46318 / n * d_ft ** (8.0 / 3.0) * np.sqrt(s) * CFS_TO_GPD


def harmon_peaking(avg_gpd: np.ndarray, cap: float = 4.0) -> np.ndarray:
    """Harmon peaking factor for an average flow (gpd), at 100 gpd per person."""
    p_thousands = np.asarray(avg_gpd, dtype=float) / 100.0 / 1000.0
    sq = np.sqrt(p_thousands)
    return np.minimum((18.0 + sq) / (4.0 + sq), cap)


# ----------------------------------------------------------------------------
# The abstract town (local feet, no geometry objects yet)
# ----------------------------------------------------------------------------


@dataclass
class TownArrays:
    """A synthetic town as plain arrays, in local feet (before placement).

    Nodes are indexed ``0..n_nodes-1``; the last node is the plant. Every node
    but the plant has exactly one out-pipe (``node_out``) while the network is
    a tree. Pipes run ``pipe_u -> pipe_v`` (flow direction).
    """

    node_x: np.ndarray
    node_y: np.ndarray
    node_role: np.ndarray  # 0 street corner, 1 branch terminal, 2 mid-block, 3 plant
    pipe_u: np.ndarray
    pipe_v: np.ndarray
    pipe_street: np.ndarray  # street name per pipe (object)
    pipe_on_row: np.ndarray  # bool: pipe lies on a street row (else column)
    # parcels (boxes)
    par_x0: np.ndarray
    par_x1: np.ndarray
    par_y0: np.ndarray
    par_y1: np.ndarray
    par_front_north: np.ndarray  # bool: the lot fronts the street on its north side
    par_front_y: np.ndarray  # y of the fronting street centreline
    par_pipe: np.ndarray  # index of the pipe in front (-1: none)
    par_load_node: np.ndarray  # node where the parcel's flow enters
    par_street: np.ndarray
    par_number: np.ndarray
    # streets
    st_x0: np.ndarray
    st_y0: np.ndarray
    st_x1: np.ndarray
    st_y1: np.ndarray
    st_name: np.ndarray
    st_width_ft: np.ndarray
    plant_xy: tuple[float, float]
    extent: tuple[float, float]  # (width, height) of the grid, ft


def _layout(n_parcels: int, n_mains: int | None, rng: np.random.Generator, *,
            lots_per_side: int, lot_width_ft: float, lot_depth_ft: float,
            street_width_ft: float, trunk_every: int, jitter: float) -> TownArrays:
    """Lay out streets, lots and the sewer tree as arrays (local feet)."""
    if n_parcels < 1:
        raise ValueError("n_parcels must be at least 1")
    k = lots_per_side
    blk_w = k * lot_width_ft
    pitch_x = blk_w + street_width_ft
    pitch_y = 2 * lot_depth_ft + street_width_ft
    n_blocks = math.ceil(n_parcels / (2 * k))
    nbx = max(1, round(math.sqrt(n_blocks * pitch_y / pitch_x)))
    nby = math.ceil(n_blocks / nbx)
    ncol = nbx + 1
    n_grid = ncol * (nby + 1)

    def gid(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return j * ncol + i

    # --- street edges ------------------------------------------------------
    # horizontal edge h = j * nbx + bi joins (bi, j) - (bi+1, j)
    hj, hb = np.divmod(np.arange((nby + 1) * nbx), nbx)
    h_east = hb + 1
    h_sewered = (hj == 0) | (h_east % trunk_every != 0)
    # vertical edge v = j * ncol + i joins (i, j) - (i, j+1)
    vj, vi = np.divmod(np.arange(nby * ncol), ncol)
    v_trunk = vi % trunk_every == 0

    # mandatory pipes: sewered rows (east -> west), trunks (north -> south)
    hs = np.flatnonzero(h_sewered)
    vt = np.flatnonzero(v_trunk)
    vb = np.flatnonzero(~v_trunk)  # optional branch sewers
    e_mand = len(hs) + len(vt) + 1
    if n_mains is None:
        keep_b = vb
        extra = 0
    elif n_mains <= e_mand:
        if n_mains < e_mand:
            log.info("synthetic town: %d mains requested, the street tree needs %d",
                     n_mains, e_mand)
        keep_b = vb[:0]
        extra = 0
    elif n_mains <= e_mand + len(vb):
        pick = np.sort(rng.choice(len(vb), n_mains - e_mand, replace=False))
        keep_b = vb[pick]
        extra = 0
    else:
        keep_b = vb
        extra = n_mains - e_mand - len(vb)

    gx = (np.arange(n_grid) % ncol) * pitch_x
    gy = (np.arange(n_grid) // ncol) * pitch_y
    # branch terminals: 40 ft short of the row above
    n_term = len(keep_b)
    term_x = vi[keep_b] * pitch_x
    term_y = (vj[keep_b] + 1) * pitch_y - 40.0
    term_ids = n_grid + np.arange(n_term)

    # street edges carrying sewers, upstream -> downstream
    eu = np.concatenate([gid(h_east[hs], hj[hs]), gid(vi[vt], vj[vt] + 1), term_ids])
    ev = np.concatenate([gid(hb[hs], hj[hs]), gid(vi[vt], vj[vt]), gid(vi[keep_b], vj[keep_b])])
    e_row = np.concatenate([np.ones(len(hs), bool), np.zeros(len(vt) + n_term, bool)])
    e_name_idx = np.concatenate([hj[hs], vi[vt], vi[keep_b]])
    n_e = len(eu)
    pieces = np.ones(n_e, dtype=np.int64)
    if extra > 0:
        base, rem = divmod(extra, n_e)
        pieces += base
        pieces[rng.permutation(n_e)[:rem]] += 1

    node_x0 = np.concatenate([gx, term_x])
    node_y0 = np.concatenate([gy, term_y])
    # intermediate nodes
    n_inter = int((pieces - 1).sum())
    inter_base = n_grid + n_term
    inter_off = np.concatenate([[0], np.cumsum(pieces - 1)[:-1]])
    pipe_off = np.concatenate([[0], np.cumsum(pieces)[:-1]])
    n_p = int(pieces.sum())
    pe = np.repeat(np.arange(n_e), pieces)
    pr = np.arange(n_p) - pipe_off[pe]
    pp = pieces[pe]
    ux, uy = node_x0[eu], node_y0[eu]
    dx, dy = node_x0[ev], node_y0[ev]
    # intermediate node r' of edge e sits at fraction (r'+1)/p from upstream
    ie = np.repeat(np.arange(n_e), pieces - 1)
    ir = np.arange(n_inter) - inter_off[ie]
    frac = (ir + 1) / pieces[ie]
    inter_x = ux[ie] + (dx[ie] - ux[ie]) * frac
    inter_y = uy[ie] + (dy[ie] - uy[ie]) * frac
    pipe_u = np.where(pr == 0, eu[pe], inter_base + inter_off[pe] + pr - 1)
    pipe_v = np.where(pr == pp - 1, ev[pe], inter_base + inter_off[pe] + pr)

    plant_node = inter_base + n_inter
    plant_xy = (-800.0, -150.0)
    node_x = np.concatenate([node_x0, inter_x, [plant_xy[0]]])
    node_y = np.concatenate([node_y0, inter_y, [plant_xy[1]]])
    pipe_u = np.concatenate([pipe_u, [0]])
    pipe_v = np.concatenate([pipe_v, [plant_node]])
    row_names = np.array(_street_names(ROW_NAMES, nby + 1, "St"), dtype=object)
    col_names = np.array(_street_names(COL_NAMES, ncol, "Ave"), dtype=object)
    e_name = np.where(e_row, row_names[np.minimum(e_name_idx, nby)],
                      col_names[np.minimum(e_name_idx, nbx)])
    pipe_street = np.concatenate([e_name[pe], np.array(["Plant Rd"], dtype=object)])
    pipe_row = np.concatenate([e_row[pe], [True]])

    # --- parcels ------------------------------------------------------------
    # order: block row bj, block bi, side s (0 south, 1 north), lot l
    n_lot = nby * nbx * 2 * k
    idx = np.arange(n_lot)
    bj, rest = np.divmod(idx, nbx * 2 * k)
    bi, rest = np.divmod(rest, 2 * k)
    side, lot = np.divmod(rest, k)
    x_start = bi * pitch_x + street_width_ft / 2
    # shared, jittered lot lines: boundary l of (block, side) for l = 0..k
    # one set of lot lines per block, shared by both rows of lots, so that lots
    # meet edge to edge (identical vertices) even after densifying and bending
    key = bj * nbx + bi
    bnd_j = rng.uniform(-jitter, jitter, size=(nby * nbx, k + 1)) * lot_width_ft
    bnd_j[:, 0] = 0.0
    bnd_j[:, k] = 0.0
    x0 = x_start + lot * lot_width_ft + bnd_j[key, lot]
    x1 = x_start + (lot + 1) * lot_width_ft + bnd_j[key, lot + 1]
    mid_j = rng.uniform(-jitter, jitter, size=nby * nbx) * lot_depth_ft * 0.5
    y_s = bj * pitch_y + street_width_ft / 2
    y_mid = y_s + lot_depth_ft + mid_j[bj * nbx + bi]
    y_n = (bj + 1) * pitch_y - street_width_ft / 2
    y0 = np.where(side == 0, y_s, y_mid)
    y1 = np.where(side == 0, y_mid, y_n)
    keep = slice(0, n_parcels)
    bj, bi, side, lot = bj[keep], bi[keep], side[keep], lot[keep]
    x0, x1, y0, y1 = x0[keep], x1[keep], y0[keep], y1[keep]
    front_row = bj + side
    xc = (x0 + x1) / 2
    # the horizontal edge in front and its pipe
    h = front_row * nbx + bi
    sewered = h_sewered[h]
    e_of_h = np.full(len(h_sewered), -1)
    e_of_h[hs] = np.arange(len(hs))
    e = e_of_h[h]
    east_x = (bi + 1) * pitch_x
    t = np.clip((east_x - xc) / pitch_x, 0.0, 1.0 - 1e-9)
    e_safe = np.where(sewered, e, 0)
    r = np.floor(t * pieces[e_safe]).astype(np.int64)
    par_pipe = np.where(sewered, pipe_off[e_safe] + r, -1)
    par_load = np.where(sewered, pipe_u[np.where(sewered, par_pipe, 0)], gid(bi, front_row))
    par_number = (bi * k + lot) * 2 + 2 - side + 100
    par_street = row_names[front_row]

    # --- streets (every grid edge) ---------------------------------------------
    st_x0 = np.concatenate([hb * pitch_x, vi * pitch_x])
    st_x1 = np.concatenate([(hb + 1) * pitch_x, vi * pitch_x])
    st_y0 = np.concatenate([hj * pitch_y, vj * pitch_y])
    st_y1 = np.concatenate([hj * pitch_y, (vj + 1) * pitch_y])
    st_name = np.concatenate([row_names[hj], col_names[vi]])
    major = np.concatenate([hj == 0, v_trunk])
    st_width = np.where(major, 66.0, street_width_ft)

    return TownArrays(
        node_x=node_x.astype(float), node_y=node_y.astype(float),
        node_role=np.concatenate([np.zeros(n_grid, np.int8), np.ones(n_term, np.int8),
                                  np.full(n_inter, 2, np.int8), [3]]).astype(np.int8),
        pipe_u=pipe_u.astype(np.int64),
        pipe_v=pipe_v.astype(np.int64), pipe_street=pipe_street, pipe_on_row=pipe_row,
        par_x0=x0, par_x1=x1, par_y0=y0, par_y1=y1, par_front_north=side == 0,
        par_front_y=(front_row * pitch_y).astype(float), par_pipe=par_pipe,
        par_load_node=par_load.astype(np.int64), par_street=par_street, par_number=par_number,
        st_x0=st_x0.astype(float), st_y0=st_y0.astype(float), st_x1=st_x1.astype(float),
        st_y1=st_y1.astype(float), st_name=st_name, st_width_ft=st_width,
        plant_xy=plant_xy, extent=(nbx * pitch_x, nby * pitch_y),
    )


def drop_pipes(a: TownArrays, drop: np.ndarray) -> TownArrays:
    """The town without the pipes in ``drop`` (bool mask) and the nodes left bare.

    Parcels whose pipe goes lose it (``par_pipe`` -1) and load the plant node;
    the caller should put them on septic. The remaining pipes must still form a
    tree draining to the plant (drop whole upstream subtrees).
    """
    keep = ~np.asarray(drop, bool)
    n_nodes = len(a.node_x)
    used = np.zeros(n_nodes, bool)
    used[a.pipe_u[keep]] = True
    used[a.pipe_v[keep]] = True
    used[-1] = True
    new_node = np.cumsum(used) - 1
    new_pipe = np.cumsum(keep) - 1
    plant = int(new_node[-1])
    load = np.where(used[a.par_load_node], new_node[a.par_load_node], plant)
    par_pipe = np.where(a.par_pipe >= 0, np.where(keep[a.par_pipe], new_pipe[a.par_pipe], -1), -1)
    return replace(
        a, node_x=a.node_x[used], node_y=a.node_y[used], node_role=a.node_role[used],
        pipe_u=new_node[a.pipe_u[keep]], pipe_v=new_node[a.pipe_v[keep]],
        pipe_street=a.pipe_street[keep], pipe_on_row=a.pipe_on_row[keep],
        par_pipe=par_pipe, par_load_node=load,
    )


def _street_names(base: tuple[str, ...], n: int, suffix: str) -> list[str]:
    out = []
    for j in range(n):
        rnd, m = divmod(j, len(base))
        out.append(f"{base[m]} {suffix}" if rnd == 0 else f"{base[m]} {suffix} {rnd + 1}")
    return out


# ----------------------------------------------------------------------------
# Tree arithmetic (pointer doubling, level-by-level accumulation)
# ----------------------------------------------------------------------------


def path_sums(nxt: np.ndarray, value: np.ndarray, root: int) -> np.ndarray:
    """Sum of ``value`` over each node's path to ``root`` (root's value excluded).

    ``nxt[i]`` is the downstream node of ``i`` (``nxt[root] == root``) and
    ``value[i]`` the value of the pipe leaving ``i``. Pointer doubling:
    O(n log depth) vectorised.
    """
    acc = np.asarray(value, dtype=float).copy()
    acc[root] = 0.0
    ptr = nxt.copy()
    while True:
        done = ptr == root
        if done.all():
            return acc
        acc = acc + acc[ptr]
        ptr = ptr[ptr]


def accumulate(nxt: np.ndarray, load: np.ndarray, root: int) -> np.ndarray:
    """Each node's own load plus everything upstream of it (tree, one pass per level)."""
    depth = path_sums(nxt, np.ones(len(nxt)), root).astype(np.int64)
    order = np.argsort(-depth, kind="stable")
    d_sorted = depth[order]
    acc = np.asarray(load, dtype=float).copy()
    cuts = np.flatnonzero(np.diff(d_sorted)) + 1
    for grp in np.split(order, cuts):
        if depth[grp[0]] == 0:
            break
        np.add.at(acc, nxt[grp], acc[grp])
    return acc


# ----------------------------------------------------------------------------
# Placement
# ----------------------------------------------------------------------------


def make_placer(crs: CRS, origin: tuple[float, float] | None, extent: tuple[float, float], *,
                rotation_deg: float = 0.0, warp_ft: float = 0.0, warp_wavelength_ft: float = 2400.0,
                seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A function mapping local (N, 2) feet coordinates to the CRS.

    The grid is rotated about its centre by ``rotation_deg``, bent by a smooth
    sinusoidal displacement of amplitude ``warp_ft`` (curved streets) and placed
    with local (0, 0) at ``origin`` (CRS units); if ``origin`` is None the grid's
    centre lands on :data:`POUGHKEEPSIE_LONLAT`. The same function applied to
    the same coordinates gives bit-identical results, so shared pipe ends stay
    shared.
    """
    fpu = feet_per_unit(crs)
    cx, cy = extent[0] / 2, extent[1] / 2
    if origin is None:
        tr = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
        px, py = tr.transform(*POUGHKEEPSIE_LONLAT)
        ox, oy = px - cx / fpu, py - cy / fpu
    else:
        ox, oy = origin
    th = math.radians(rotation_deg)
    c, s = math.cos(th), math.sin(th)
    ph = np.random.default_rng(seed + 7).uniform(0, 2 * math.pi, 2)
    k = 2 * math.pi / warp_wavelength_ft

    def place(xy: np.ndarray) -> np.ndarray:
        x = xy[:, 0] - cx
        y = xy[:, 1] - cy
        if warp_ft:
            x, y = x + warp_ft * np.sin(k * y + ph[0]), y + warp_ft * np.sin(k * x + ph[1])
        xr = c * x - s * y + cx
        yr = s * x + c * y + cy
        return np.column_stack([ox + xr / fpu, oy + yr / fpu])

    return place


def _lines(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> np.ndarray:
    coords = np.stack([np.column_stack([x0, y0]), np.column_stack([x1, y1])], axis=1)
    return shapely.linestrings(coords)


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
    a = _layout(n_parcels, n_mains, rng, lots_per_side=lots_per_side, lot_width_ft=lot_width_ft,
                lot_depth_ft=lot_depth_ft, street_width_ft=street_width_ft,
                trunk_every=trunk_every, jitter=jitter)
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


# ----------------------------------------------------------------------------
# Writing a town folder (layers + gisnet.toml)
# ----------------------------------------------------------------------------

#: Canonical column -> source column written to files, per role: LGIM-style
#: names of at most 10 characters, so shapefiles keep them whole.
SOURCE_COLUMNS: dict[str, dict[str, str]] = {
    "mains": {
        "main_id": "FACILITYID", "diameter_in": "DIAMETER", "material": "MATERIAL",
        "up_invert_ft": "UPELEV", "down_invert_ft": "DOWNELEV", "slope": "SLOPE",
        "from_node": "FROMMH", "to_node": "TOMH", "kind": "WATERTYPE", "owner": "OWNEDBY",
        "status": "ACTIVEFLAG", "street": "LOCDESC", "install_date": "INSTALLDAT",
    },
    "manholes": {
        "node_id": "FACILITYID", "rim_ft": "RIMELEV", "invert_ft": "INVERTELEV",
        "kind": "MANHOLETYP", "owner": "OWNEDBY", "status": "ACTIVEFLAG",
    },
    "plants": {
        "plant_id": "FACILITYID", "name": "NAME", "design_flow_mgd": "DESIGNFLOW",
        "avg_flow_mgd": "AVGFLOW", "node_id": "NODE_ID",
    },
    "parcels": {
        "parcel_id": "PARCEL_ID", "address": "ADDRESS", "land_use": "LAND_USE",
        "dwelling_units": "UNITS", "bedrooms": "BEDROOMS", "flow_gpd": "WATER_GPD",
        "septic": "SEPTIC", "connected": "CONNECTED", "sewer_available_date": "SEWERDATE",
    },
    "buildings": {
        "building_id": "BLDG_ID", "parcel_id": "PARCEL_ID", "built_date": "YEAR_BUILT",
        "use": "BLDG_USE",
    },
    "streets": {"street_id": "STREET_ID", "name": "NAME", "width_ft": "ROW_WIDTH"},
    "laterals": {
        "lateral_id": "FACILITYID", "parcel_id": "PARCEL_ID", "building_id": "BLDG_ID",
        "main_id": "MAIN_ID",
    },
    "users": {
        "user_id": "PERMIT_NO", "name": "NAME", "parcel_id": "PARCEL_ID",
        "building_id": "BLDG_ID", "process_flow_gpd": "PROC_GPD", "categorical": "CAT_IU",
        "industrial": "INDUSTRIAL", "sic_code": "SIC",
    },
}

#: A fixed DBF "last update" date (YY-1900, MM, DD) so shapefiles are
#: byte-identical whenever they are written.
_DBF_DATE = bytes([126, 1, 1])


def to_source(gdf: gpd.GeoDataFrame, role: str,
              columns: dict[str, str] | None = None) -> gpd.GeoDataFrame:
    """A canonical layer as a source file would hold it.

    Renames canonical columns to ``columns`` (default :data:`SOURCE_COLUMNS`),
    drops the loader-derived ``public``/``active``, writes dates as ISO text
    (``YYYY-MM-DD``; shapefiles have no date-time type) and drops columns that
    are null everywhere.
    """
    columns = SOURCE_COLUMNS[role] if columns is None else columns
    df = gdf.drop(columns=[c for c in ("public", "active") if c in gdf.columns])
    data: dict[str, object] = {}
    for c in df.columns:
        if c == df.geometry.name:
            continue
        s = df[c]
        if s.isna().all():
            continue
        if pd.api.types.is_datetime64_any_dtype(s):
            s = s.dt.strftime("%Y-%m-%d").astype(object).where(s.notna(), None)
        elif isinstance(s.dtype, pd.BooleanDtype):
            s = s.astype(object).where(s.notna(), None) if s.isna().any() else s.astype(bool)
        elif isinstance(s.dtype, pd.Int64Dtype):
            s = s.astype("float64") if s.isna().any() else s.astype(np.int64)
        elif isinstance(s.dtype, pd.StringDtype):
            s = s.astype(object).where(s.notna(), None)
        data[columns.get(c, c)] = s.to_numpy()
    return gpd.GeoDataFrame(data, geometry=df.geometry.to_numpy(), crs=df.crs)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))


def _toml_key(k: str) -> str:
    bare = k.replace("_", "").isalnum() and k.isascii() and k[:1].isalpha()
    return k if bare else json.dumps(k)


def write_town_file(path: Path, top: dict[str, object], layers: dict[str, dict[str, object]],
                    header: str = "") -> None:
    """Write a ``gisnet.toml``: top-level keys, then one table per layer role.

    ``layers[role]`` holds ``path`` (and optional plain keys) plus optional
    sub-tables ``columns``, ``values`` (column -> {source: canonical}) and
    ``defaults``.
    """
    out = [header.rstrip() + "\n"] if header else []
    tables = {k: v for k, v in top.items() if isinstance(v, dict)}
    for k, v in top.items():
        if not isinstance(v, dict):
            out.append(f"{_toml_key(k)} = {_toml_value(v)}\n")
    for k, tbl in tables.items():
        out.append(f"\n[{_toml_key(k)}]\n")
        out.extend(f"{_toml_key(a)} = {_toml_value(b)}\n" for a, b in tbl.items())
    for role, spec in layers.items():
        out.append(f"\n[layers.{role}]\n")
        for k, v in spec.items():
            if not isinstance(v, dict):
                out.append(f"{_toml_key(k)} = {_toml_value(v)}\n")
        for sub in ("columns", "defaults"):
            if spec.get(sub):
                out.append(f"[layers.{role}.{sub}]\n")
                out.extend(f"{_toml_key(a)} = {_toml_value(b)}\n"
                           for a, b in spec[sub].items())  # type: ignore[union-attr]
        for col, vmap in spec.get("values", {}).items():  # type: ignore[union-attr]
            out.append(f"[layers.{role}.values.{_toml_key(col)}]\n")
            out.extend(f"{_toml_key(str(a))} = {_toml_value(b)}\n" for a, b in vmap.items())
    path.write_text("".join(out), encoding="utf-8")


def write_layer(gdf: gpd.GeoDataFrame, path: Path, *, layer: str | None = None) -> None:
    """Write one source layer (shapefile or GeoPackage layer) reproducibly.

    Shapefiles get a fixed DBF date stamp so the same data gives the same
    bytes on any day.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".shp":
        for ext in (".shp", ".shx", ".dbf", ".prj", ".cpg"):
            path.with_suffix(ext).unlink(missing_ok=True)
        gdf.to_file(path, engine="pyogrio", encoding="UTF-8", layer_options={"RESIZE": "YES"})
        with open(path.with_suffix(".dbf"), "r+b") as f:
            f.seek(1)
            f.write(_DBF_DATE)
    else:
        gdf.to_file(path, layer=layer, engine="pyogrio")


def write_town(
    layers: dict[str, gpd.GeoDataFrame],
    out_dir: str | Path,
    *,
    fmt: str = "shp",
    profile: str = "poughkeepsie-fourth-ward",
    name: str | None = None,
    snap_tolerance_ft: float = 1.0,
    columns: dict[str, dict[str, str]] | None = None,
) -> Path:
    """Write canonical layers as a town folder: source files plus ``gisnet.toml``.

    Parameters
    ----------
    layers
        Role -> canonical GeoDataFrame (as from :func:`make_town`), one CRS.
    out_dir
        Folder to write (created; files of the same names are replaced).
    fmt
        ``shp`` (one shapefile per role) or ``gpkg`` (one ``town.gpkg``, a
        layer per role).
    profile, name, snap_tolerance_ft
        Written to the town file.
    columns
        Role -> canonical -> source column names (default :data:`SOURCE_COLUMNS`).

    Returns
    -------
    pathlib.Path
        The ``gisnet.toml`` written.
    """
    if fmt not in ("shp", "gpkg"):
        raise ValueError(f"format must be 'shp' or 'gpkg', not {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    columns = SOURCE_COLUMNS if columns is None else columns
    crs = next(iter(layers.values())).crs
    gpkg = out / "town.gpkg"
    if fmt == "gpkg":
        gpkg.unlink(missing_ok=True)
    specs: dict[str, dict[str, object]] = {}
    for role, gdf in layers.items():
        src = to_source(gdf, role, columns[role])
        if fmt == "shp":
            write_layer(src, out / f"{role}.shp")
            spec: dict[str, object] = {"path": f"{role}.shp"}
        else:
            write_layer(src, gpkg, layer=role)
            spec = {"path": "town.gpkg", "layer": role}
        spec["columns"] = {c: s for c, s in columns[role].items() if s in src.columns}
        specs[role] = spec
    top: dict[str, object] = {"name": name or out.name, "profile": profile,
                              "crs": crs.to_string() if crs is not None else None,
                              "snap_tolerance_ft": float(snap_tolerance_ft)}
    top = {k: v for k, v in top.items() if v is not None}
    path = out / "gisnet.toml"
    write_town_file(path, top, specs, header="# Synthetic town written by gisnet.synthetic")
    return path


# ----------------------------------------------------------------------------
# The bundled sample town (layers/sample)
# ----------------------------------------------------------------------------

#: Monthly factors on the annual average flow at the plant (wet spring, dry
#: late summer); they average 1.0.
MONTH_FACTORS = np.array([0.95, 0.97, 1.12, 1.18, 1.08, 0.96, 0.90, 0.88, 0.93, 0.97, 1.01, 1.05])
#: Process flows (gpd) of the sample's industrial users; the second one is categorical.
SAMPLE_USER_FLOWS = np.array([2400.0, 5200.0, 9800.0, 14500.0, 27500.0, 41000.0, 58000.0])
SAMPLE_USER_SIC = ("2752", "3471", "2086", "3089", "2026", "2834", "3672")


@dataclass
class SampleTown:
    """The sample town: canonical layers plus what the files around them hold.

    Attributes
    ----------
    layers
        Role -> canonical GeoDataFrame (EPSG:2260, US survey feet).
    plant_flows
        ``plant_id``, ``month`` (``YYYY-MM``), ``avg_flow_mgd``: 12 months.
    problems
        The deliberate data problems: ``kind``, ``ids``, ``expected`` (finding
        kinds a checker should report) and ``detail``.
    notes
        Other facts a test can check (storm/private/inactive mains, septic
        parcels, the plant's 3-month window, ...).
    """

    layers: dict[str, gpd.GeoDataFrame]
    plant_flows: pd.DataFrame
    problems: list[dict[str, object]]
    notes: dict[str, object]


def _append(gdf: gpd.GeoDataFrame, rows: dict[str, list[object]], geoms: list[object],
            role: str) -> gpd.GeoDataFrame:
    n = len(geoms)
    data = {c: rows.get(c, [None] * n) for c in gdf.columns if c != gdf.geometry.name}
    new = gpd.GeoDataFrame(data, geometry=list(geoms), crs=gdf.crs)
    new = canonical_dtypes(new, role)
    for c in ("public", "active"):
        if c in new.columns:
            new[c] = new[c].astype(bool)
    return canonical_dtypes(pd.concat([gdf, new], ignore_index=True), role)


def make_sample_town(seed: int = 2026, n_parcels: int = 3000) -> SampleTown:
    """The bundled sample town in the Town of Poughkeepsie, NY (EPSG:2260).

    A jittered, rotated, gently curved street grid of ``n_parcels`` lots
    (residential, commercial, industrial, institutional, vacant), buildings
    (some rear buildings, vacant lots without), building sewers for about a
    third of the buildings, a sanitary gravity tree (8-24 in mostly) draining
    to one plant, an unsewered north-east corner and north edge on septic, two
    inactive mains, two private mains and manholes, a small storm system with
    an outfall, cleanouts and junction fittings, seven industrial users, and
    deliberate data problems (see :attr:`SampleTown.problems`).

    Deterministic: the same arguments give identical layers.
    """
    rng = np.random.default_rng(seed)
    crs = CRS.from_user_input("EPSG:2260")
    fpu = feet_per_unit(crs)
    kw = {"lots_per_side": 6, "lot_width_ft": 60.0, "lot_depth_ft": 120.0,
          "street_width_ft": 50.0, "trunk_every": 6, "jitter": 0.22}
    n0 = len(_layout(n_parcels, None, np.random.default_rng(seed), **kw).pipe_u)
    a = _layout(n_parcels, n0 + 40, rng, **kw)
    width, height = a.extent

    # --- unsewered north-east corner and north edge (upstream-closed) --------------------
    plant = len(a.node_x) - 1
    nxt = np.full(len(a.node_x), plant)
    nxt[a.pipe_u] = a.pipe_v
    region = ((a.node_x > 0.6 * width) & (a.node_y > 0.62 * height)) | (a.node_y >= height - 1.0)
    region[plant] = False
    region |= path_sums(nxt, region.astype(float), plant) > 0  # everything draining into it
    drop = region[a.pipe_u]
    septic = np.zeros(len(a.par_x0), bool)
    septic[(a.par_pipe >= 0) & drop[np.maximum(a.par_pipe, 0)]] = True
    septic[region[a.par_load_node]] = True
    a = drop_pipes(a, drop)
    plant = len(a.node_x) - 1

    # --- two inactive leaf mains (parcels on them stay on septic) -------------------------
    n_p = len(a.pipe_u)
    has_in = np.zeros(len(a.node_x), bool)
    has_in[a.pipe_v] = True
    leaf = ~has_in[a.pipe_u]
    upper = a.node_y[a.pipe_u] > 0.5 * height
    cand = np.flatnonzero(leaf & upper & a.pipe_on_row & (a.pipe_v != plant))
    inactive = np.sort(rng.choice(cand, 2, replace=False))
    septic[np.isin(a.par_pipe, inactive)] = True
    # a few septic parcels in the sewered area, within reach of a sewer
    sewered = np.flatnonzero(~septic)
    septic[rng.choice(sewered, 12, replace=False)] = True

    place = make_placer(crs, None, a.extent, rotation_deg=17.0, warp_ft=85.0,
                        warp_wavelength_ft=3300.0, seed=seed)
    layers = build_layers(a, place, rng, crs, fpu, irregular=True, laterals=0.35,
                          septic_mask=septic, user_flows_gpd=SAMPLE_USER_FLOWS,
                          user_categorical=np.arange(len(SAMPLE_USER_FLOWS)) == 1,
                          rear_fraction=0.06, max_diameter_in=24.0, multi_units=(2, 6))
    mains = layers["mains"]
    mh = layers["manholes"]
    users = layers["users"]
    users["sic_code"] = pd.Series(SAMPLE_USER_SIC, dtype="str")
    users["name"] = pd.Series(
        ["Arlington Press", "Spackenkill Plating", "Hudson Valley Bottling", "Dutchess Molded "
         "Plastics", "Titusville Dairy", "Vassar Road Pharma", "Mid-Hudson Circuits"], dtype="str")
    mains.loc[inactive, "status"] = "inactive"
    mains.loc[inactive, "active"] = False

    # --- cleanouts at branch ends, wyes and bends mid-block ---------------------------
    role = a.node_role[:-1]
    term = np.flatnonzero(role == 1)
    inter = np.flatnonzero(role == 2)
    co = np.sort(rng.choice(term, 6, replace=False))
    jn = rng.choice(inter, 11, replace=False)
    mh.loc[co, "kind"] = "cleanout"
    mh.loc[np.sort(jn[:8]), "kind"] = "junction"
    mh.loc[np.sort(jn[8:]), "kind"] = "fitting"

    # --- choose pipes for the deliberate problems: disjoint, ordinary ------------------
    n_mh = len(mh)
    deg = np.bincount(np.concatenate([a.pipe_u, a.pipe_v]), minlength=plant + 1)
    ordinary = ((a.pipe_v != plant) & (mains["status"].to_numpy() == "active")
                & (mains["diameter_in"].to_numpy() <= 12))
    used_nodes: set[int] = set()

    def pick(mask: np.ndarray, k: int = 1) -> list[int]:
        out: list[int] = []
        for p in rng.permutation(np.flatnonzero(mask & ordinary)):
            u, v = int(a.pipe_u[p]), int(a.pipe_v[p])
            if u in used_nodes or v in used_nodes:
                continue
            out.append(int(p))
            used_nodes.update((u, v))
            if len(out) == k:
                return out
        raise RuntimeError("sample town too small for its deliberate problems")  # pragma: no cover

    length = shapely.length(mains.geometry.to_numpy()) * fpu
    leafp = ~np.isin(a.pipe_u, a.pipe_v)
    r_pipe, = pick(~leafp & (deg[a.pipe_v] >= 2))
    a_pipe, = pick(~leafp & a.pipe_on_row)
    g1, g2 = pick(leafp & (deg[a.pipe_v] >= 3), 2)
    t_pipe, = pick(a.pipe_on_row & (length > 250) & (role[np.minimum(a.pipe_u, n_mh - 1)] == 0))
    d_pipe, = pick(~leafp)
    y_pipe, x_pipe = sorted(pick(np.ones(n_p, bool), 2))
    ids = mains["main_id"].to_numpy(dtype=object).copy()
    mid = {k: str(ids[v]) for k, v in dict(R=r_pipe, A=a_pipe, G1=g1, G2=g2, T=t_pipe, D=d_pipe,
                                            X=x_pipe, Y=y_pipe).items()}

    geoms = mains.geometry.to_numpy().copy()
    # reversed: drawn from the downstream manhole to the upstream one, the inverts recorded
    # at the drawn ends (UPELEV at the drawn start, now the lower one); FROMMH/TOMH right
    geoms[r_pipe] = shapely.reverse(geoms[r_pipe])
    r_up, r_dn = mains.at[r_pipe, "up_invert_ft"], mains.at[r_pipe, "down_invert_ft"]
    mains.loc[r_pipe, "up_invert_ft"] = r_dn
    mains.loc[r_pipe, "down_invert_ft"] = r_up
    mains.loc[r_pipe, "slope"] = -float(mains.at[r_pipe, "slope"])
    # adverse: inverts rise 0.30 ft in the flow direction; drawing and ids agree
    mains.loc[a_pipe, "up_invert_ft"] = round(float(mains.at[a_pipe, "down_invert_ft"]) - 0.30, 2)
    mains.loc[a_pipe, "slope"] = round(-0.30 / float(length[a_pipe]), 5)
    # gaps: downstream end pulled back along the pipe, TOMH left blank
    gap_to = {}
    for p, gap in ((g1, 0.6), (g2, 1.6)):
        g = geoms[p]
        gap_to[p] = str(mains.at[p, "to_node"])
        cut = shapely.line_interpolate_point(g, float(shapely.length(g)) - gap / fpu)
        coords = shapely.get_coordinates(g)
        seg = np.cumsum(np.r_[0.0, np.hypot(*np.diff(coords, axis=0).T)])
        keep_v = coords[seg < float(shapely.length(g)) - gap / fpu]
        geoms[p] = shapely.linestrings(np.vstack([keep_v, shapely.get_coordinates(cut)]))
        mains.loc[p, "to_node"] = None
    mains.loc[d_pipe, "diameter_in"] = np.nan
    mains = mains.set_geometry(geoms, crs=crs)

    # --- T: a back-lot sewer ending part-way along main T ---------------------------------
    next_mh = n_mh
    next_main = len(mains)

    def new_mh_id() -> str:
        nonlocal next_mh
        next_mh += 1
        return f"MH{next_mh:06d}"

    def new_main_id() -> str:
        nonlocal next_main
        next_main += 1
        return f"SM{next_main:06d}"

    tu, tv = a.pipe_u[t_pipe], a.pipe_v[t_pipe]
    xm = (a.node_x[tu] + a.node_x[tv]) / 2
    ym = a.node_y[tu]
    t_start = place(np.array([[xm, ym + 95.0]]))[0]
    t_geom_main = geoms[t_pipe]
    t_end = shapely.line_interpolate_point(
        t_geom_main,
        shapely.line_locate_point(t_geom_main, shapely.Point(place(np.array([[xm, ym]]))[0])))
    t_mid_inv = float(mains.loc[t_pipe, ["up_invert_ft", "down_invert_ft"]].astype(float).mean())
    t_down_inv = round(t_mid_inv + 0.5, 2)
    t_mh = new_mh_id()
    t_id = new_main_id()

    # --- a loop of three pipes beside a street corner, joined to it by a fourth --------
    corner_ok = (role == 0) & (deg[:n_mh] >= 2)
    corners = [i for i in rng.permutation(np.flatnonzero(corner_ok)) if int(i) not in used_nodes]
    m_cyc = int(corners[0])
    m_prv = int(next(c for c in corners[1:]
                     if math.hypot(a.node_x[c] - a.node_x[m_cyc],
                                   a.node_y[c] - a.node_y[m_cyc]) > 1500))
    used_nodes.update((m_cyc, m_prv))
    cx, cy = a.node_x[m_cyc], a.node_y[m_cyc]
    tri = place(np.array([[cx + 45, cy + 70], [cx + 110, cy + 70], [cx + 80, cy + 120]]))
    m_xy = shapely.get_coordinates(mh.geometry.iloc[m_cyc])[0]
    c_ids = [new_mh_id() for _ in range(3)]
    cyc_main = [new_main_id() for _ in range(4)]
    m_inv = float(mh.at[m_cyc, "invert_ft"])
    # --- private: two private mains and manholes in an apartment court -------------------
    px_, py_ = a.node_x[m_prv], a.node_y[m_prv]
    pxy = place(np.array([[px_ + 80, py_ + 110], [px_ + 80, py_ + 45]]))
    mp_xy = shapely.get_coordinates(mh.geometry.iloc[m_prv])[0]
    p_ids = [new_mh_id() for _ in range(2)]
    p_main = [new_main_id() for _ in range(2)]
    p_inv = float(mh.at[m_prv, "invert_ft"])

    lines = [
        shapely.LineString([t_start, shapely.get_coordinates(t_end)[0]]),
        shapely.LineString([tri[0], tri[1]]), shapely.LineString([tri[1], tri[2]]),
        shapely.LineString([tri[2], tri[0]]), shapely.LineString([tri[0], m_xy]),
        shapely.LineString([pxy[0], pxy[1]]), shapely.LineString([pxy[1], mp_xy]),
    ]
    n_new = len(lines)
    l_ft = [float(shapely.length(g)) * fpu for g in lines]
    up_pa = round(p_inv + 0.1 + 0.01 * l_ft[6] + 0.1 + 0.01 * l_ft[5], 2)
    up_pb = round(p_inv + 0.1 + 0.01 * l_ft[6], 2)
    t_up_inv = round(t_down_inv + 0.005 * l_ft[0], 2)
    c1_inv = round(m_inv + 0.1 + 0.005 * l_ft[4], 2)
    new_mh = {
        "node_id": [t_mh, *c_ids, *p_ids],
        "rim_ft": [round(v, 2) for v in (t_up_inv + 9.5, c1_inv + 9.0, m_inv + 9.2,
                                         m_inv + 9.4, up_pa + 7.5, up_pb + 8.0)],
        "invert_ft": [t_up_inv, c1_inv, None, None, up_pa, up_pb],
        "kind": ["manhole"] * 6,
        "owner": ["public"] * 4 + ["private"] * 2,
        "status": ["active"] * 6,
        "public": [True] * 4 + [False] * 2,
        "active": [True] * 6,
    }
    mh_geoms = [shapely.Point(t_start), *[shapely.Point(p) for p in tri],
                *[shapely.Point(p) for p in pxy]]
    mh = _append(mh, new_mh, mh_geoms, "manholes")
    new_main = {
        "main_id": [t_id, *cyc_main, *p_main],
        "diameter_in": [8.0] * n_new,
        "material": ["PVC"] * n_new,
        "up_invert_ft": [t_up_inv, None, None, None, c1_inv, up_pa, up_pb],
        "down_invert_ft": [t_down_inv, None, None, None, round(m_inv + 0.1, 2),
                           round(up_pb + 0.1, 2), round(p_inv + 0.1, 2)],
        "slope": [0.005, None, None, None, 0.005, 0.01, 0.01],
        "from_node": [t_mh, c_ids[0], c_ids[1], c_ids[2], c_ids[0], p_ids[0], p_ids[1]],
        "to_node": [None, c_ids[1], c_ids[2], c_ids[0], str(mh.at[m_cyc, "node_id"]),
                    p_ids[1], str(mh.at[m_prv, "node_id"])],
        "kind": ["sanitary"] * n_new,
        "owner": ["public"] * 5 + ["private"] * 2,
        "status": ["active"] * n_new,
        "street": ["easement"] * 5 + ["Spackenkill Gardens (private)"] * 2,
        "install_date": [pd.Timestamp("1994-07-01")] * 5 + [pd.Timestamp("2008-07-01")] * 2,
        "public": [True] * 5 + [False] * 2,
        "active": [True] * n_new,
    }
    mains = _append(mains, new_main, lines, "mains")

    # --- a small storm system with its outfall ----------------------------------------------
    pitch_x = 6 * 60.0 + 50.0
    pitch_y = 2 * 120.0 + 50.0
    js = 2
    sxy_local = np.array([[i * pitch_x + 30.0, js * pitch_y - 12.0] for i in range(5)]
                         + [[-250.0, js * pitch_y - 12.0]])
    sxy = place(sxy_local)
    s_ids = [f"CB{i + 1:04d}" for i in range(5)] + ["OF-01"]
    s_inv = [round(128.0 + 0.006 * (x + 250.0), 2) for x in sxy_local[:, 0]]
    mh = _append(mh, {
        "node_id": s_ids, "rim_ft": [round(v + 5.0, 2) for v in s_inv], "invert_ft": s_inv,
        "kind": ["catch_basin"] * 5 + ["outfall"], "owner": ["public"] * 6,
        "status": ["active"] * 6, "public": [True] * 6, "active": [True] * 6,
    }, [shapely.Point(p) for p in sxy], "manholes")
    s_lines = [shapely.LineString([sxy[i + 1], sxy[i]]) for i in range(4)]
    s_lines.append(shapely.LineString([sxy[0], sxy[5]]))
    s_from = [s_ids[i + 1] for i in range(4)] + [s_ids[0]]
    s_to = [s_ids[i] for i in range(4)] + ["OF-01"]
    sd_ids = [f"SD{i + 1:04d}" for i in range(5)]
    s_up = [s_inv[i + 1] for i in range(4)] + [s_inv[0]]
    s_dn = [s_inv[i] for i in range(4)] + [s_inv[5]]
    mains = _append(mains, {
        "main_id": sd_ids, "diameter_in": [15.0, 15.0, 18.0, 18.0, 24.0],
        "material": ["RCP"] * 5, "up_invert_ft": s_up, "down_invert_ft": s_dn,
        "slope": [round((u - d) / (float(shapely.length(g)) * fpu), 5)
                  for u, d, g in zip(s_up, s_dn, s_lines, strict=True)],
        "from_node": s_from, "to_node": s_to, "kind": ["storm"] * 5, "owner": ["public"] * 5,
        "status": ["active"] * 5, "street": [str(a.st_name[0])] * 5,
        "install_date": [pd.Timestamp("1971-07-01")] * 5, "public": [True] * 5,
        "active": [True] * 5,
    }, s_lines, "mains")

    # --- duplicate id: a later main takes an earlier one's id --------------------------------
    mains.loc[x_pipe, "main_id"] = mid["Y"]
    if "laterals" in layers:
        lat = layers["laterals"]
        layers["laterals"] = lat[lat["main_id"] != mid["X"]].reset_index(drop=True)
    layers["mains"] = mains
    layers["manholes"] = mh

    # --- plant: 12 months with a wet spring; design flow keeps the 3-month mean < 80 % -----
    plants = layers["plants"]
    base = float(plants.at[0, "avg_flow_mgd"]) * 1.08  # + infiltration/inflow
    monthly = np.round(base * MONTH_FACTORS, 3)
    roll = np.convolve(monthly, np.ones(3) / 3, mode="valid")
    design = math.ceil(roll.max() / 0.785 * 100) / 100
    plants.loc[0, "design_flow_mgd"] = design
    plants.loc[0, "avg_flow_mgd"] = round(float(monthly.mean()), 3)
    plants.loc[0, "name"] = "Spackenkill Water Pollution Control Plant"
    months = [f"2025-{m:02d}" for m in range(1, 13)]
    plant_flows = pd.DataFrame({"plant_id": "WWTP-01", "month": months, "avg_flow_mgd": monthly})
    w = int(roll.argmax())
    over = [months[i] for i in range(12) if monthly[i] / design > 0.80]

    # --- tax-map style parcel ids (section-block-lot) everywhere they are used ----------
    n_par = len(layers["parcels"])
    i = np.arange(n_par)
    sbl = pd.Series([f"6262-{10 + k // 250:02d}-{100 + k % 250:03d}" for k in i], dtype="str")
    old_ids = dict(zip(layers["parcels"]["parcel_id"], sbl, strict=True))
    layers["parcels"]["parcel_id"] = sbl
    for r in ("buildings", "users", "laterals"):
        if r in layers:
            layers[r]["parcel_id"] = layers[r]["parcel_id"].map(old_ids).astype("str")

    problems: list[dict[str, object]] = [
        {"kind": "reversed_pipe", "ids": [mid["R"]], "expected": ["reversed_pipe"],
         "also": [],
         "detail": f"{mid['R']} is drawn from its downstream manhole "
                   f"{mains.at[r_pipe, 'to_node']} to its upstream one "
                   f"{mains.at[r_pipe, 'from_node']}, with UPELEV/DOWNELEV recorded at the "
                   "drawn start/end (so UPELEV < DOWNELEV); FROMMH/TOMH and the inverts both "
                   "say flow runs against the drawing. Reverse it; its slope is then positive."},
        {"kind": "gap_snapped", "ids": [mid["G1"], gap_to[g1]], "gap_ft": 0.6,
         "expected": ["gap_snapped"], "also": [],
         "detail": f"{mid['G1']} stops 0.6 ft short of manhole {gap_to[g1]} (TOMH blank); "
                   "within the 1.0 ft tolerance, so it is joined there and reported."},
        {"kind": "gap_not_snapped", "ids": [mid["G2"], gap_to[g2]], "gap_ft": 1.6,
         "expected": ["gap_not_snapped"],
         "also": ["dangling_end", "no_outlet", "disconnected_piece"],
         "detail": f"{mid['G2']} stops 1.6 ft short of manhole {gap_to[g2]} (TOMH blank) and "
                   "more than 1.0 ft from every other main; beyond the tolerance, so its end "
                   "stays a dangling junction, and it and its upstream manhole drain nowhere."},
        {"kind": "t_split", "ids": [t_id, mid["T"]], "expected": ["t_split"], "also": [],
         "detail": f"back-lot sewer {t_id} (from manhole {t_mh}, TOMH blank) ends part-way "
                   f"along {mid['T']}, which must be split there ({mid['T']} and "
                   f"{mid['T']}@2)."},
        {"kind": "missing_diameter", "ids": [mid["D"]], "expected": ["missing_diameter"],
         "also": [],
         "detail": f"{mid['D']} has no DIAMETER."},
        {"kind": "duplicate_id", "ids": [mid["Y"]], "expected": ["duplicate_id"], "also": [],
         "detail": f"two mains carry FACILITYID {mid['Y']}; the later one in the file "
                   f"(row {x_pipe}, formerly {mid['X']}) becomes {mid['Y']}#2 when loaded."},
        {"kind": "cycle", "ids": cyc_main[:3], "expected": ["cycle"], "also": [],
         "detail": f"{cyc_main[0]}, {cyc_main[1]}, {cyc_main[2]} run {c_ids[0]} -> {c_ids[1]} "
                   f"-> {c_ids[2]} -> {c_ids[0]} (by FROMMH/TOMH; inverts blank); "
                   f"{cyc_main[3]} joins {c_ids[0]} to {mh.at[m_cyc, 'node_id']}."},
        {"kind": "adverse_slope", "ids": [mid["A"]], "expected": ["adverse_slope"],
         "also": ["direction_conflict"],
         "detail": f"{mid['A']} is drawn and numbered ({mains.at[a_pipe, 'from_node']} -> "
                   f"{mains.at[a_pipe, 'to_node']}) in the flow direction, but UPELEV is "
                   "0.30 ft below DOWNELEV: a slope problem, not a reversal (the ids win; "
                   "the inverts disagree with them)."},
    ]
    par = layers["parcels"]
    notes: dict[str, object] = {
        "storm_mains": sd_ids,
        "storm_outfall": "OF-01",
        "private_mains": p_main,
        "private_manholes": p_ids,
        "inactive_mains": [str(ids[i]) for i in inactive],
        "cleanouts": mh.loc[co, "node_id"].tolist(),
        "junctions": mh.loc[np.sort(jn[:8]), "node_id"].tolist(),
        "fittings": mh.loc[np.sort(jn[8:]), "node_id"].tolist(),
        "septic_parcels": int(par["septic"].sum()),
        "parcels": n_par,
        "plant": {"plant_id": "WWTP-01", "design_flow_mgd": design,
                  "max_3_month_window": months[w:w + 3],
                  "max_3_month_mean_mgd": round(float(roll[w]), 4),
                  "max_3_month_fraction": round(float(roll[w]) / design, 4),
                  "months_over_80_percent": over},
    }
    return SampleTown(layers, plant_flows, problems, notes)
