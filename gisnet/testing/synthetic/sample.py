"""The bundled sample town (``gisnet/sample``, package data): :func:`make_sample_town`."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ...units import feet_per_unit
from .cases import add_cases, sample_results
from .hydraulics import path_sums
from .layers import build_layers, canonical_dtypes
from .layout import drop_pipes, layout_town, make_placer

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
        parcels, the plant's 3-month window, the ordinance cases, ...).
    samples
        Lab results (``samples.csv``): ``manhole_id``, ``datetime``,
        ``parameter``, ``value``, ``unit`` and the ``case`` each row exercises.
    """

    layers: dict[str, gpd.GeoDataFrame]
    plant_flows: pd.DataFrame
    problems: list[dict[str, object]]
    notes: dict[str, object]
    samples: pd.DataFrame


def _append(gdf: gpd.GeoDataFrame, rows: Mapping[str, Sequence[Any]],
            geoms: Sequence[shapely.Geometry], role: str) -> gpd.GeoDataFrame:
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
    lay = functools.partial(layout_town, lots_per_side=6, lot_width_ft=60.0,
                            lot_depth_ft=120.0, street_width_ft=50.0, trunk_every=6,
                            jitter=0.22)
    n0 = len(lay(n_parcels, None, np.random.default_rng(seed)).pipe_u)
    a = lay(n_parcels, n0 + 40, rng)
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
    # reversed: drawn from the downstream manhole to the upstream one; FROMMH/TOMH right,
    # UPELEV/DOWNELEV the upstream/downstream inverts as their names say
    geoms[r_pipe] = shapely.reverse(geoms[r_pipe])
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
    new_mh: dict[str, list[Any]] = {
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
    new_main: dict[str, list[Any]] = {
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

    # --- the ordinance cases (control manholes, notice, district, building sewers) -------
    cases = add_cases(layers, fpu, a.par_x1 + a.par_y1, p_main[0], new_mh_id, _append)
    mh = layers["manholes"]

    problems: list[dict[str, object]] = [
        {"kind": "reversed_pipe", "ids": [mid["R"]], "expected": ["reversed_pipe"],
         "also": [],
         "detail": f"{mid['R']} is drawn from its downstream manhole "
                   f"{mains.at[r_pipe, 'to_node']} to its upstream one "
                   f"{mains.at[r_pipe, 'from_node']}; FROMMH/TOMH say flow runs against the "
                   "drawing, and UPELEV/DOWNELEV are its upstream/downstream inverts as their "
                   "names say (UPELEV > DOWNELEV). Reverse it; its slope is positive."},
        {"kind": "gap_snapped", "ids": [mid["G1"], gap_to[g1]], "gap_ft": 0.6,
         "expected": ["gap_snapped"], "also": [],
         "detail": f"{mid['G1']} stops 0.6 ft short of manhole {gap_to[g1]} (TOMH blank); "
                   "within the 1.0 ft tolerance, so it is joined there and reported."},
        {"kind": "gap_not_snapped", "ids": [mid["G2"], gap_to[g2]], "gap_ft": 1.6,
         "expected": ["gap_not_snapped"],
         "also": ["dangling_end", "no_outlet", "disconnected_piece", "outlet_assumed"],
         "detail": f"{mid['G2']} stops 1.6 ft short of manhole {gap_to[g2]} (TOMH blank) and "
                   "more than 1.0 ft from every other main; beyond the tolerance, so its end "
                   "stays a dangling junction, and it and its upstream manhole reach no "
                   "plant: that end is taken as the piece's outlet, reported as assumed."},
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
         "also": [],
         "detail": f"{mid['A']} is drawn and numbered ({mains.at[a_pipe, 'from_node']} -> "
                   f"{mains.at[a_pipe, 'to_node']}) in the flow direction, but UPELEV, its "
                   "upstream invert, is 0.30 ft below DOWNELEV: a slope problem, not a "
                   "reversal (the ids give the direction)."},
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
                  "months_over_80_percent": over,
                  "latest_3_month_window": months[-3:],
                  "latest_3_month_mean_mgd": round(float(roll[-1]), 4),
                  "latest_3_month_fraction": round(float(roll[-1]) / design, 4)},
        "cases": cases,
    }
    return SampleTown(layers, plant_flows, problems, notes, sample_results(cases, "WWTP-01"))
