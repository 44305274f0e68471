"""The abstract town: streets, lots and the sewer tree as arrays, and their placement.

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

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from pyproj import CRS, Transformer

from ...units import feet_per_unit

log = logging.getLogger(__name__)

#: Where the sample town sits: Town of Poughkeepsie, NY (lon, lat, WGS 84).
POUGHKEEPSIE_LONLAT: tuple[float, float] = (-73.90, 41.67)

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


def layout_town(n_parcels: int, n_mains: int | None, rng: np.random.Generator, *,
                lots_per_side: int, lot_width_ft: float, lot_depth_ft: float,
                street_width_ft: float, trunk_every: int, jitter: float) -> TownArrays:
    """Lay out streets, lots and the sewer tree as arrays (local feet).

    See the module docstring for the layout; ``n_mains`` as in
    :func:`gisnet.testing.synthetic.make_town`, ``jitter`` the relative jitter of
    lot lines (0 for a regular grid).
    """
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
