"""The ordinance cases of the bundled sample town (``gisnet/sample``): :func:`add_cases`.

Each case is a few attributes set on existing features or a few features
added, chosen deterministically from the layers by plain geometry (no gisnet
analysis), so a test can check gisnet's answers against them:

- control manholes (Poughkeepsie § 168-22.5J/K): a building sewer ending on
  a private main (``private_main``), an owner-installed control manhole of an
  industrial user (manholes ``control_for``, ``owner_manhole``), a building
  sewer that reaches no main (``unresolved``);
- notice (§ 168-22.2G): notice dates, a health hazard, a ``district`` layer
  leaving the north-east corner out, a vacant lot within reach of a sewer;
- building sewers (§ 168-22.4D): two side-by-side buildings on one lateral,
  a rear building sharing its front building's lateral, a stub lateral;
- sample results (§ 168-22.5C; Berlin definitions 29, 66): :func:`sample_results`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

#: Building sewers serve a building whose footprint comes within this of a vertex
#: (Poughkeepsie ``building_sewer_reach_ft``); new laterals keep clear of others by 3x.
REACH_FT = 5.0
#: Notice dates served on three parcels (§ 168-22.2G: connection due 30 days after).
NOTICE_DATES = ("2026-03-02", "2026-04-15", "2026-06-01")
#: Parcels left out of the district layer (the north-east corner).
N_OUTSIDE = 4


def _eligible(mains: gpd.GeoDataFrame) -> np.ndarray:
    return ((mains["kind"] == "sanitary") & (mains["owner"] == "public")
            & (mains["status"] == "active")).to_numpy()


def _line(*pts: Any) -> shapely.LineString:
    return shapely.LineString([shapely.get_coordinates(p)[0] for p in pts])


def _control_manhole(mains: gpd.GeoDataFrame, mh: gpd.GeoDataFrame, main_i: int) -> str:
    """The first public manhole (``kind`` manhole) downstream of main ``main_i``,
    walking ``to_node`` -> the main leaving it (§ 168-22.5J's nearest downstream manhole)."""
    kind = dict(zip(mh["node_id"], mh["kind"], strict=True))
    leaving = dict(zip(mains["from_node"], range(len(mains)), strict=False))
    i = main_i
    for _ in range(len(mains)):
        node = mains.at[i, "to_node"]
        if kind.get(node) == "manhole":
            return str(node)
        i = leaving[node]
    raise RuntimeError("no manhole downstream")  # pragma: no cover


def add_cases(layers: dict[str, gpd.GeoDataFrame], fpu: float, local_ne: np.ndarray,
              private_main: str, new_mh_id: Callable[[], str],
              append: Callable[..., gpd.GeoDataFrame]) -> dict[str, Any]:
    """Add the ordinance cases to the sample's canonical ``layers`` (in place).

    Parameters
    ----------
    layers
        Role -> canonical layer; parcels, laterals and manholes are changed,
        ``district`` is added.
    fpu
        Feet per CRS unit.
    local_ne
        Per parcel, its position towards the north-east in the town's local
        frame (larger is farther); the :data:`N_OUTSIDE` largest are left out of
        the district.
    private_main
        Id of the private main a building sewer is connected to.
    new_mh_id
        Gives the next manhole id.
    append
        ``append(gdf, rows, geoms, role)``: rows added to a canonical layer.

    Returns
    -------
    dict
        The case -> feature ids (and expected results) the README lists.
    """
    par, bld, mains, mh = (layers[r] for r in ("parcels", "buildings", "mains", "manholes"))
    lat, users, streets = layers["laterals"], layers["users"], layers["streets"]
    reach = REACH_FT / fpu
    elig = _eligible(mains)
    mg = mains.geometry.to_numpy()
    elig_union = shapely.union_all(mg[elig])
    all_mains = shapely.union_all(mg)
    pid = par["parcel_id"].to_numpy(dtype=object)
    p_of = {p: i for i, p in enumerate(pid)}
    bg = bld.geometry.to_numpy()
    b_par = np.array([p_of[p] for p in bld["parcel_id"]])
    rear = (bld["use"] == "residential_rear").to_numpy()
    n_b_on = np.bincount(b_par, minlength=len(par))
    with_lat = set(lat["building_id"]) | set(lat["parcel_id"])
    pg = par.geometry.to_numpy()
    d_par = shapely.distance(pg, elig_union) * fpu
    connected = par["connected"].to_numpy(dtype=bool)
    septic = par["septic"].to_numpy(dtype=bool)
    btree = shapely.STRtree(bg)
    street_union = shapely.union_all(streets.geometry.to_numpy())
    user_par = set(users["parcel_id"])
    taken: set[str] = set(user_par)

    def clear(line: shapely.LineString, own: set[int]) -> bool:
        """Every vertex of ``line`` is within reach of no building but ``own``'s
        nearest, and no vertex is nearer another building than 3x reach."""
        vertices = cast(np.ndarray, shapely.points(shapely.get_coordinates(line)))
        for k, pt in enumerate(vertices):
            near = btree.query(pt, predicate="dwithin", distance=3 * reach)
            others = [j for j in near if j not in own]
            if others:
                return False
            if k == len(shapely.get_coordinates(line)) - 1 and len(near):
                return False  # the tap end reaches no building
        return True

    def plain_front(i: int) -> bool:
        """A front building alone on its parcel, no lateral, parcel connected."""
        p = pid[b_par[i]]
        return (not rear[i] and n_b_on[b_par[i]] == 1 and connected[b_par[i]]
                and bld.at[i, "building_id"] not in with_lat and p not in with_lat
                and p not in taken)

    new_lat: list[dict[str, Any]] = []

    def add_lateral(geom: shapely.LineString, b: int, main_id: str | None) -> str:
        lid = f"LAT{len(lat) + len(new_lat) + 1:06d}"
        new_lat.append({"lateral_id": lid, "parcel_id": pid[b_par[b]],
                        "building_id": bld.at[b, "building_id"], "main_id": main_id,
                        "geometry": geom})
        taken.add(pid[b_par[b]])
        return lid

    cases: dict[str, Any] = {}

    # --- § 168-22.5J: a building sewer on the private main --------------------------------
    pm = int(np.flatnonzero((mains["main_id"] == private_main).to_numpy())[0])
    order = np.argsort(shapely.distance(bg, mg[pm]), kind="stable")
    for b in order[:40]:
        if not plain_front(int(b)):
            continue
        a_pt, tap = shapely.get_parts(shapely.points(shapely.get_coordinates(
            shapely.shortest_line(shapely.boundary(bg[b]), mg[pm]))))
        g = _line(a_pt, tap)
        if clear(g, {int(b)}):
            lid = add_lateral(g, int(b), private_main)
            cases["private_main"] = {"lateral": lid, "building": bld.at[b, "building_id"],
                                     "main": private_main}
            break

    # --- unresolved: a building sewer stopping 25 ft short of the main -------------------
    # --- stub: a building sewer from the main stopping 20 ft short of its building -------
    def toward_main(b: int) -> tuple[Any, Any, float]:
        a_pt, tap = shapely.get_parts(shapely.points(shapely.get_coordinates(
            shapely.shortest_line(shapely.boundary(bg[b]), elig_union))))
        return a_pt, tap, float(shapely.distance(a_pt, tap)) * fpu

    for b in range(len(bld) - 1, -1, -1):  # from the end: the first rows stay plain
        if not plain_front(b):
            continue
        a_pt, tap, d = toward_main(b)
        if not 45.0 <= d <= 90.0:
            continue
        end = shapely.line_interpolate_point(_line(a_pt, tap), (d - 25.0) / fpu)
        g = _line(a_pt, end)
        if clear(g, {b}) and shapely.distance(end, all_mains) * fpu > 20.0:
            lid = add_lateral(g, b, None)
            cases["unresolved"] = {"lateral": lid, "building": bld.at[b, "building_id"]}
            break

    # --- § 168-22.2G: notice, health hazard, stub lateral (septic lots on a sewered street)
    cand = [i for i in np.flatnonzero(septic & ~connected & (d_par <= 100.0)
                                      & (n_b_on == 1))
            if pid[i] not in taken]
    cand.sort(key=lambda i: pid[i])
    notice_p = cand[:len(NOTICE_DATES)]
    hazard_p = cand[len(NOTICE_DATES)]
    nd = par["notice_date"].copy()
    for i, day in zip(notice_p, NOTICE_DATES, strict=True):
        nd.iloc[i] = pd.Timestamp(day)
    par["notice_date"] = nd.astype(par["notice_date"].dtype)
    hz = par["health_hazard"].copy()
    hz.iloc[hazard_p] = True
    par["health_hazard"] = hz
    taken.update(pid[[*notice_p, hazard_p]])
    cases["notice"] = [{"parcel": pid[i], "notice_date": day,
                        "deadline_date": str((pd.Timestamp(day) + pd.Timedelta(days=30)).date())}
                       for i, day in zip(notice_p, NOTICE_DATES, strict=True)]
    cases["health_hazard"] = {"parcel": pid[hazard_p]}
    for i in cand[len(NOTICE_DATES) + 1:]:
        (b,) = np.flatnonzero(b_par == i)
        a_pt, tap, d = toward_main(int(b))
        if d < 35.0:
            continue
        end = shapely.line_interpolate_point(_line(tap, a_pt), (d - 20.0) / fpu)
        g = _line(tap, end)
        if clear(g, set()):
            main_i = int(np.argmin(shapely.distance(mg, tap) + np.where(elig, 0, 1e9)))
            lid = add_lateral(g, int(b), str(mains.at[main_i, "main_id"]))
            cases["stub_lateral"] = {"lateral": lid, "building": bld.at[b, "building_id"],
                                     "parcel": pid[i], "short_ft": 20.0}
            break

    # --- vacant lot within reach of a sewer ------------------------------------------------
    vac = [i for i in np.flatnonzero((par["land_use"] == "vacant").to_numpy() & (d_par <= 100.0))
           if pid[i] not in taken]
    cases["vacant"] = {"parcel": pid[min(vac, key=lambda i: pid[i])]}

    # --- § 168-22.4D: side-by-side buildings on one lateral; a rear building ------------
    for b in range(len(bld)):
        if not plain_front(b):
            continue
        pa, tap_a, _ = toward_main(b)
        near = [int(j) for j in btree.query(bg[b], predicate="dwithin", distance=40.0 / fpu)
                if j != b and plain_front(int(j))]
        for j in near:
            pb, tap, _ = toward_main(j)
            if shapely.distance(tap, tap_a) * fpu > 60.0:
                continue
            g = _line(pa, pb, tap)
            if clear(g, {b, j}):
                main_i = int(np.argmin(shapely.distance(mg, tap) + np.where(elig, 0, 1e9)))
                lid = add_lateral(g, b, str(mains.at[main_i, "main_id"]))
                taken.add(pid[b_par[j]])
                cases["shared_side_by_side"] = {
                    "lateral": lid, "buildings": [bld.at[b, "building_id"],
                                                  bld.at[j, "building_id"]]}
                break
        if "shared_side_by_side" in cases:
            break

    for r in np.flatnonzero(rear):
        i = b_par[r]
        (f,) = [int(k) for k in np.flatnonzero(b_par == i) if not rear[k]]
        p = pid[i]
        if (not connected[i] or p in taken or p in with_lat
                or bld.at[f, "building_id"] in with_lat):
            continue
        # an interior lot: it touches one street (the one in front)
        n_st = len(shapely.get_parts(shapely.intersection(
            shapely.buffer(pg[i], 30.0 / fpu), street_union)))
        if n_st != 1:
            continue
        pf, tap, _ = toward_main(f)
        pr = shapely.get_parts(shapely.points(shapely.get_coordinates(
            shapely.shortest_line(shapely.boundary(bg[r]), bg[f]))))[0]
        g = _line(pr, pf, tap)
        if clear(g, {int(r), f}):
            main_i = int(np.argmin(shapely.distance(mg, tap) + np.where(elig, 0, 1e9)))
            lid = add_lateral(g, f, str(mains.at[main_i, "main_id"]))
            cases["rear_building"] = {"lateral": lid, "front": bld.at[f, "building_id"],
                                      "rear": bld.at[r, "building_id"], "parcel": p}
            break

    missing = {"private_main", "unresolved", "stub_lateral", "shared_side_by_side",
               "rear_building"} - set(cases)
    if missing:  # pragma: no cover - the sample is large enough
        raise RuntimeError(f"sample town: no feature found for {sorted(missing)}")
    add = pd.DataFrame(new_lat)
    layers["laterals"] = append(lat, {c: add[c].tolist() for c in add.columns if c != "geometry"},
                                add["geometry"].tolist(), "laterals")

    # --- § 168-22.5K: an owner-installed control manhole in a user's building sewer ------
    ui = len(users) - 1
    (ub,) = np.flatnonzero((bld["building_id"] == users.at[ui, "building_id"]).to_numpy())
    a_pt, tap = shapely.get_parts(shapely.points(shapely.get_coordinates(
        shapely.shortest_line(shapely.boundary(bg[ub]), elig_union))))
    o_pt = shapely.line_interpolate_point(_line(a_pt, tap), 0.4, normalized=True)
    o_id = new_mh_id()
    layers["manholes"] = append(mh, {
        "node_id": [o_id], "rim_ft": [None], "invert_ft": [None], "kind": ["manhole"],
        "owner": ["private"], "status": ["active"], "public": [False], "active": [True],
        "control_for": [str(users.at[ui, "user_id"])]}, [o_pt], "manholes")
    cases["owner_manhole"] = {"manhole": o_id, "user": str(users.at[ui, "user_id"]),
                              "user_name": str(users.at[ui, "name"]),
                              "building": str(users.at[ui, "building_id"])}

    # --- a user's control manhole (for the copper grab) ---------------------------------
    ci = 1  # the categorical plater
    c_main = int(np.argmin(shapely.distance(mg, users.geometry.iloc[ci])
                           + np.where(elig, 0, 1e9)))
    cases["copper_user"] = {"user": str(users.at[ci, "user_id"]),
                            "user_name": str(users.at[ci, "name"]),
                            "manhole": _control_manhole(mains, mh, c_main)}
    bi = 4  # the dairy: BOD
    b_main = int(np.argmin(shapely.distance(mg, users.geometry.iloc[bi])
                           + np.where(elig, 0, 1e9)))
    cases["bod_user"] = {"user": str(users.at[bi, "user_id"]),
                         "user_name": str(users.at[bi, "name"]),
                         "manhole": _control_manhole(mains, mh, b_main)}

    # --- the district: the town less its north-east corner lots ------------------------
    out_i = np.argsort(-local_ne, kind="stable")[:N_OUTSIDE]
    hull = shapely.buffer(shapely.convex_hull(shapely.union_all(pg)), 100.0 / fpu)
    district = shapely.difference(hull, shapely.buffer(shapely.union_all(pg[out_i]), 1.0 / fpu))
    layers["district"] = gpd.GeoDataFrame(
        {"district_id": ["SD-1"], "name": ["Spackenkill Sewer District"]},
        geometry=[district], crs=par.crs)
    rp = shapely.point_on_surface(pg)
    outside = sorted(pid[~shapely.contains(district, rp)])
    cases["outside_district"] = outside
    return cases


def sample_results(cases: dict[str, Any], plant_id: str) -> pd.DataFrame:
    """The sample's lab results (``samples.csv``): one of each check.

    Columns ``manhole_id,datetime,parameter,value,unit`` (see
    :func:`gisnet.sampling.read_samples`); rows in file order with the case each
    belongs to in ``case`` (not written).
    """
    cu, bod = cases["copper_user"]["manhole"], cases["bod_user"]["manhole"]
    rows: list[tuple[str, str, str, float, str, str]] = []
    # a copper grab at the plater's control manhole, above the plant-influent 1 ppm
    rows.append((cu, "2026-03-10 09:15", "copper", 1.8, "mg/L", "screening"))
    # copper at the plant influent, hourly for 24 h; 15:00 is 0.60, the average 0.121
    day = pd.Timestamp("2026-03-11 08:00")
    for h in range(24):
        v = 0.60 if h == 7 else 0.10
        rows.append((plant_id, f"{day + pd.Timedelta(hours=h):%Y-%m-%d %H:%M}", "copper", v,
                     "mg/L", "hourly"))
    # BOD at the dairy, hourly for 24 h (200/210 mg/L), and 1,500 mg/L every 10 min from
    # 10:00 to 10:30: a slug (Poughkeepsie: > 5 x 240; Berlin: > 5 x its own 24-h average)
    day = pd.Timestamp("2026-03-12 08:00")
    times = [day + pd.Timedelta(hours=h) for h in range(24)]
    times += [day + pd.Timedelta(minutes=120 + 10 * k) for k in range(1, 4)]
    for t in sorted(times):
        slug = day + pd.Timedelta(hours=2) <= t <= day + pd.Timedelta(minutes=150)
        v = 1500.0 if slug else (200.0 if t.hour % 2 == 0 else 210.0)
        rows.append((bod, f"{t:%Y-%m-%d %H:%M}", "bod", v, "mg/L",
                     "slug" if slug else "slug_baseline"))
    # two grabs a day apart, both 1,500 mg/L: not one continuous discharge, no slug
    for t in ("2026-03-16 08:00", "2026-03-17 08:00"):
        rows.append((bod, t, "bod", 1500.0, "mg/L", "not_slug"))
    # a BOD of 260 mg/L: above Berlin's normal strength (250), above Poughkeepsie's 240
    rows.append((bod, "2026-03-19 11:00", "bod", 260.0, "mg/L", "bod_260"))
    return pd.DataFrame(rows, columns=["manhole_id", "datetime", "parameter", "value", "unit",
                                       "case"])
