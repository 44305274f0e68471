"""Tests of gisnet.capacity: Manning, peaking, parcel flows, accumulation, plants, what-if.

Every expected number is worked by hand (in the comments) or computed here
independently of gisnet (Manning written out from area and hydraulic radius).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import Point, box

from gisnet import capacity as cap
from gisnet.errors import ConfigError, NotFoundError
from gisnet.profile import load_profile
from gisnet.testing import towns
from gisnet.town import Town, TownSettings

CRS = "EPSG:2260"


def manning_by_hand(d_in: float, s: float, n: float = 0.013) -> float:
    """Q = (1.486 / n) A R^(2/3) S^(1/2), A = pi D^2 / 4, R = A / P = D / 4 (cfs)."""
    d = d_in / 12.0
    area = math.pi * d * d / 4.0
    radius = area / (math.pi * d)
    return 1.486 / n * area * radius ** (2.0 / 3.0) * math.sqrt(s)


# --------------------------------------------------------------------------- fixtures in code


def make_graph(nodes: dict[str, tuple[float, float, str]],
               pipes: list[tuple[str, str, str, float, dict]],
               outlets: tuple[str, ...] = ()) -> nx.MultiDiGraph:
    """A MultiDiGraph following docs/architecture.md "Sewer graph", written by hand
    (gisnet.testing.towns.hand_graph: flags by gisnet.rules; S 0.004, PVC by default).

    nodes: id -> (x, y, kind); pipes: (main_id, u, v, diameter_in, extra attrs).
    """
    return towns.hand_graph({nid: {"x": x, "y": y, "kind": kind}
                             for nid, (x, y, kind) in nodes.items()},
                            [(u, v, mid, {"diameter_in": d, **extra})
                             for mid, u, v, d, extra in pipes],
                            crs=CRS, ft_per_unit=1.0, outlets=outlets)


def make_town(profile: str = "berlin-nh", parcels: gpd.GeoDataFrame | None = None,
              plants: gpd.GeoDataFrame | None = None, users: gpd.GeoDataFrame | None = None,
              plant_flows: pd.DataFrame | None = None, **settings) -> Town:
    """Raw layers through the loader's canonical mapping (gisnet.testing.towns.make_town)."""
    layers = {"parcels": [] if parcels is None else parcels, "mains": []}
    if plants is not None:
        layers["plants"] = plants
    if users is not None:
        layers["users"] = users
    return towns.make_town(layers, crs=CRS, profile=profile, name="t",
                           settings=TownSettings(**settings), plant_flows=plant_flows)


def metered_parcels(flows: dict[str, float]) -> gpd.GeoDataFrame:
    ids = list(flows)
    return gpd.GeoDataFrame({
        "parcel_id": ids, "flow_gpd": [flows[i] for i in ids],
        "bedrooms": [None] * len(ids), "dwelling_units": [None] * len(ids),
        "land_use": ["residential"] * len(ids), "septic": [False] * len(ids),
        "connected": [True] * len(ids),
    }, geometry=[box(i, 0, i + 1, 1) for i in range(len(ids))], crs=CRS)


def points_for(rows: list[tuple[str | None, str | None, str]]) -> gpd.GeoDataFrame:
    """Connection points by hand: (parcel_id, user_id, edge_key)."""
    return gpd.GeoDataFrame({
        "building_id": [None] * len(rows),
        "parcel_id": [r[0] for r in rows], "user_id": [r[1] for r in rows],
        "main_id": [r[2].split("@")[0] for r in rows], "edge_key": [r[2] for r in rows],
        "tap_distance_ft": [10.0] * len(rows), "source": ["projected"] * len(rows),
    }, geometry=[Point(0, 0)] * len(rows), crs=CRS)


FIVE_NODES = {
    "A": (0, 200, "manhole"), "C": (0, 0, "manhole"), "B": (200, 100, "manhole"),
    "E": (200, -200, "manhole"), "D": (400, 100, "manhole"), "P1": (600, 100, "plant"),
}
FIVE_PIPES = [
    ("M1", "A", "B", 8, {}), ("M2", "C", "B", 8, {}), ("M3", "B", "D", 10, {}),
    ("M4", "E", "D", 8, {}), ("M5", "D", "P1", 12, {}),
]


@pytest.fixture
def five():
    """Five pipes: M1 (A->B) and M2 (C->B) join into M3 (B->D); M3 and M4 (E->D)
    join into M5 (D->plant P1). Flows (metered, 100 gpd per person):
    M1: parcels p1 20,000 + p2 16,000 = 36,000 gpd (360 persons)
    M2: parcel p3 64,000 gpd (640 persons)
    M4: parcel p4 225,000 gpd (2,250 persons) + industrial user U1 20,000 gpd
    """
    G = make_graph(FIVE_NODES, FIVE_PIPES, outlets=("P1",))
    parcels = metered_parcels({"p1": 20_000, "p2": 16_000, "p3": 64_000, "p4": 225_000})
    users = gpd.GeoDataFrame({"user_id": ["U1"], "process_flow_gpd": [20_000.0],
                              "industrial": [True]}, geometry=[Point(200, -150)], crs=CRS)
    plants = gpd.GeoDataFrame({"plant_id": ["P1"], "name": ["Plant"], "design_flow_mgd": [0.5],
                               "avg_flow_mgd": [None], "node_id": ["P1"]},
                              geometry=[Point(600, 100)], crs=CRS)
    town = make_town(parcels=parcels, users=users, plants=plants)
    pts = points_for([("p1", None, "M1"), ("p2", None, "M1"), ("p3", None, "M2"),
                      ("p4", None, "M4"), (None, "U1", "M4")])
    return town, G, pts


# --------------------------------------------------------------------------- formulas


def test_manning_check_value_8in():
    # Manning, full pipe: Q = (1.486 / n) A R^(2/3) S^(1/2), with D = 8 / 12 = 0.66667 ft,
    # A = pi D^2 / 4 = 0.34907 ft2, R = D / 4 = 0.16667 ft (R^(2/3) = 0.30285),
    # S^(1/2) = sqrt(0.004) = 0.063246, 1.486 / 0.013 = 114.308:
    # Q = 114.308 x 0.34907 x 0.30285 x 0.063246 = 0.7643 cfs
    # = 0.7643 x 646,316.88 gpd/cfs (7.48052 gal/ft3 x 86,400 s/day) = 493,959 gpd;
    # V = Q / A = 2.189 ft/s.
    q = cap.manning_full_flow_cfs(8, 0.004, 0.013)
    assert q == pytest.approx(0.7643, abs=1e-4)
    assert q * 646_316.88 == pytest.approx(493_959, rel=1e-5)
    assert q == pytest.approx(manning_by_hand(8, 0.004), rel=1e-9)


def test_manning_12_over_8_is_1_5_to_8_thirds():
    q = cap.manning_full_flow_cfs(np.array([8.0, 12.0]), 0.004)
    assert q[1] / q[0] == pytest.approx(1.5 ** (8 / 3), rel=0.001)


def test_manning_no_capacity_is_nan_not_zero():
    q = cap.manning_full_flow_cfs([8, 8, 8, 0, np.nan, 8], [0.004, 0.0, -0.002, 0.004, 0.004,
                                                             np.nan])
    assert q[0] > 0
    assert np.isnan(q[1:]).all()


def test_harmon_peaking():
    # P in thousands: 1,000 persons -> (18 + 1) / (4 + 1) = 3.8
    assert cap.harmon_peaking_factor(1000) == pytest.approx(3.8)
    # 4,000 persons -> (18 + 2) / (4 + 2) = 3.3333
    assert cap.harmon_peaking_factor(4000) == pytest.approx(20 / 6)
    # 0 persons -> 18 / 4 = 4.5, capped at 4.0
    assert cap.harmon_peaking_factor(0) == 4.0
    assert cap.harmon_peaking_factor(0, cap=None) == pytest.approx(4.5)
    assert cap.harmon_peaking_factor(10_000_000, minimum=1.5) == 1.5


# --------------------------------------------------------------------------- parcel flows


def test_parcel_flow_bases_berlin():
    parcels = gpd.GeoDataFrame({
        "parcel_id": ["m", "b", "d", "l", "s", "n"],
        "flow_gpd": [1234.0, None, None, None, None, None],
        "bedrooms": [3, 3, None, None, 4, None],
        "dwelling_units": [1, None, 2, None, None, None],
        "land_use": ["residential", "residential", "residential", "commercial", "residential",
                     "parking"],
        "septic": [False, False, False, False, True, False],
        "connected": [True, True, True, True, False, True],
    }, geometry=[box(i, 0, i + 1, 1) for i in range(6)], crs=CRS)
    f = cap.parcel_flows(make_town("berlin-nh", parcels=parcels)).set_index("parcel_id")
    # metered 1,234; 3 bedrooms x 150 = 450; 2 DU x 250 = 500; commercial 500 gpd;
    # septic parcel: 4 x 150 = 600 but not sewered; unknown land use: 0
    assert f["avg_flow_gpd"].tolist() == [1234.0, 450.0, 500.0, 500.0, 600.0, 0.0]
    assert f["basis"].tolist() == ["metered", "bedrooms", "dwelling_units", "land_use",
                                   "bedrooms", "none"]
    assert f["sewered"].tolist() == [True, True, True, True, False, True]
    assert f.loc["b", "population"] == pytest.approx(4.5)  # 450 / 100
    assert f.loc["b", "pe"] == pytest.approx(4.5)
    # Poughkeepsie's profile uses 110 gpd per bedroom: 3 x 110 = 330
    g = cap.parcel_flows(make_town("poughkeepsie-fourth-ward", parcels=parcels))
    assert g.set_index("parcel_id").loc["b", "avg_flow_gpd"] == pytest.approx(330.0)


# --------------------------------------------------------------------------- accumulation


def test_five_pipe_accumulation_by_hand(five):
    town, G, pts = five
    res = cap.compute_capacity(town, G, points=pts)
    p = res.pipes.set_index("main_id")
    # Average flows:  M1 36,000; M2 64,000; M3 = 36,000 + 64,000 = 100,000;
    # M4 = 225,000 + 20,000 (industrial) = 245,000; M5 = 100,000 + 245,000 = 345,000.
    assert p["avg_flow_gpd"].to_dict() == pytest.approx(
        {"M1": 36_000, "M2": 64_000, "M3": 100_000, "M4": 245_000, "M5": 345_000})
    assert p["population"].to_dict() == pytest.approx(
        {"M1": 360, "M2": 640, "M3": 1000, "M4": 2250, "M5": 3250})
    # Peaks (Harmon on the domestic part only, P in thousands, cap 4.0):
    # M1: P 0.36, sqrt .6 -> 18.6 / 4.6 = 4.0435 -> capped 4.0 -> 144,000
    # M2: P 0.64, sqrt .8 -> 18.8 / 4.8 = 3.916667 -> 64,000 x 3.916667 = 250,666.67
    # M3: P 1.00 -> 19 / 5 = 3.8 -> 380,000
    # M4: P 2.25, sqrt 1.5 -> 19.5 / 5.5 = 3.545455 -> 225,000 x 3.545455 = 797,727.27
    #     + 20,000 industrial = 817,727.27
    # M5: P 3.25, sqrt 1.8027756 -> 19.8027756 / 5.8027756 = 3.4126385
    #     -> 325,000 x 3.4126385 = 1,109,107.5 + 20,000 = 1,129,107.5
    assert p["peak_flow_gpd"].to_dict() == pytest.approx(
        {"M1": 144_000, "M2": 250_666.67, "M3": 380_000, "M4": 817_727.27,
         "M5": 1_129_107.5}, rel=1e-6)
    # Utilization of M3 (10 in, S 0.004): 380,000 / (Manning by hand x 646,316.88)
    c3 = manning_by_hand(10, 0.004) * 646_316.88
    assert p.loc["M3", "capacity_gpd"] == pytest.approx(c3, rel=1e-9)
    assert p.loc["M3", "utilization"] == pytest.approx(380_000 / c3, rel=1e-6)
    assert p["computed"].all()
    # Thresholds are strict ">": M1 144,000 / 493,959 = 0.29 -> not over.
    assert not p.loc["M1", "over_threshold"]
    assert p.loc["M5", "surcharged"] == (p.loc["M5", "utilization"] > 1.0)
    # The plant receives the average flow of M5: 0.345 MGD of 0.5 design = 69 %.
    pl = res.plants.set_index("plant_id")
    assert pl.loc["P1", "basis"] == "accumulated"
    assert pl.loc["P1", "avg_flow_mgd"] == pytest.approx(0.345)
    assert pl.loc["P1", "ratio"] == pytest.approx(0.69)
    assert not pl.loc["P1", "over_threshold"]


def test_slope_from_inverts_and_adverse_slope_flagged():
    nodes = {"A": (0, 0, "manhole"), "B": (100, 0, "manhole"), "C": (200, 0, "manhole"),
             "D": (300, 0, "manhole")}
    pipes = [
        # inverts 100.5 -> 100.0 over 100 ft: S = 0.005 (stored 0.004 ignored)
        ("I1", "A", "B", 8, {"up_invert_ft": 100.5, "down_invert_ft": 100.0}),
        # inverts rising downstream: adverse, no capacity
        ("I2", "B", "C", 8, {"up_invert_ft": 99.0, "down_invert_ft": 99.3}),
        # flat stored slope, no inverts
        ("I3", "C", "D", 8, {"slope": 0.0}),
    ]
    G = make_graph(nodes, pipes)
    res = cap.compute_capacity(make_town(), G, points=points_for([]))
    p = res.pipes.set_index("main_id")
    assert p.loc["I1", "slope"] == pytest.approx(0.005)
    assert p.loc["I1", "slope_source"] == "inverts"
    assert p.loc["I1", "capacity_cfs"] == pytest.approx(manning_by_hand(8, 0.005))
    assert p.loc["I2", "slope"] == pytest.approx(-0.003)
    assert np.isnan(p.loc["I2", "capacity_gpd"]) and np.isnan(p.loc["I2", "utilization"])
    assert "adverse_slope" in p.loc["I2", "flags"].split(";")
    assert not p.loc["I2", "over_threshold"]
    assert np.isnan(p.loc["I3", "capacity_gpd"])
    assert "flat_slope" in p.loc["I3", "flags"].split(";")
    assert res.report.of_kind("no_capacity_adverse_slope")
    # 8 in minimum slope is 0.40 % (Env-Wq 704.04): 0.005 is fine.
    assert p.loc["I1", "min_slope_ok"]


def test_material_n_is_an_option():
    nodes = {"A": (0, 0, "manhole"), "B": (100, 0, "manhole")}
    G = make_graph(nodes, [("X", "A", "B", 8, {"material": "pvc"})])
    design = cap.compute_capacity(make_town(), G, points=points_for([]))
    asbuilt = cap.compute_capacity(make_town(manning_n_by_material=True), G,
                                   points=points_for([]))
    assert design.pipes["capacity_cfs"].iloc[0] == pytest.approx(manning_by_hand(8, 0.004))
    # PVC as built: n 0.010 -> 1.3 x the design capacity
    assert asbuilt.pipes["capacity_cfs"].iloc[0] == pytest.approx(
        manning_by_hand(8, 0.004, 0.010))


def test_split_by_capacity_is_reported():
    # Node S has two outgoing pipes, 8 in and 12 in at the same slope: the 12 in
    # takes 1.5^(8/3) / (1 + 1.5^(8/3)) = 2.9461 / 3.9461 = 0.74659 of the flow.
    nodes = {"A": (0, 0, "manhole"), "S": (100, 0, "manhole"), "X": (200, 50, "manhole"),
             "Y": (200, -50, "manhole")}
    G = make_graph(nodes, [("IN", "A", "S", 15, {}), ("S8", "S", "X", 8, {}),
                           ("S12", "S", "Y", 12, {})])
    town = make_town(parcels=metered_parcels({"p": 10_000}))
    res = cap.compute_capacity(town, G, points=points_for([("p", None, "IN")]))
    p = res.pipes.set_index("main_id")
    share = 1.5 ** (8 / 3) / (1 + 1.5 ** (8 / 3))
    assert p.loc["S12", "avg_flow_gpd"] == pytest.approx(10_000 * share)
    assert p.loc["S8", "avg_flow_gpd"] == pytest.approx(10_000 * (1 - share))
    assert p.loc["S12", "population"] == pytest.approx(100 * share)
    assert res.splits["node_id"].tolist() == ["S"]
    assert res.report.of_kind("flow_split")
    assert "flow_split" in p.loc["S8", "flags"]


def test_cycle_reported_not_computed_and_downstream_still_computed():
    # A -> B, then a loop B -> C -> D -> B, with D -> E leaving it.
    nodes = {"A": (0, 0, "manhole"), "B": (100, 0, "manhole"), "C": (200, 50, "manhole"),
             "D": (200, -50, "manhole"), "E": (300, -50, "manhole")}
    G = make_graph(nodes, [("IN", "A", "B", 8, {}), ("L1", "B", "C", 8, {}),
                           ("L2", "C", "D", 8, {}), ("L3", "D", "B", 8, {}),
                           ("OUT", "D", "E", 8, {})])
    town = make_town(parcels=metered_parcels({"p": 1000, "q": 500}))
    res = cap.compute_capacity(town, G, points=points_for([("p", None, "IN"),
                                                           ("q", None, "L2")]))
    p = res.pipes.set_index("main_id")
    assert res.cycles == [["L1", "L2", "L3"]]
    assert not p.loc[["L1", "L2", "L3"], "computed"].any()
    assert p.loc[["L1", "L2", "L3"], "avg_flow_gpd"].isna().all()
    # Everything entering the loop leaves by OUT: 1,000 + 500
    assert p.loc["OUT", "computed"]
    assert p.loc["OUT", "avg_flow_gpd"] == pytest.approx(1500)
    assert p.loc["IN", "avg_flow_gpd"] == pytest.approx(1000)
    assert res.report.of_kind("cycle_not_computed")[0].feature_id == "L1,L2,L3"
    assert len(G.edges) == 5  # nothing dropped


def test_unknown_kind_carries_flow_storm_and_inactive_do_not():
    # gisnet.rules: a main of unknown kind is sanitary; storm mains and inactive
    # mains carry none. One chain A -> B -> C -> D -> E, 1,000 gpd tapped at the top.
    nodes = {n: (100 * i, 0, "manhole") for i, n in enumerate("ABCDE")}
    G = make_graph(nodes, [("S", "A", "B", 8, {}), ("U", "B", "C", 8, {"kind": "unknown"}),
                           ("W", "C", "D", 8, {"kind": "storm"}),
                           ("X", "D", "E", 8, {"status": "inactive"})])
    town = make_town(parcels=metered_parcels({"p": 1000}))
    res = cap.compute_capacity(town, G, points=points_for([("p", None, "S")]))
    p = res.pipes.set_index("main_id")
    assert p.loc["U", "computed"] and p.loc["U", "avg_flow_gpd"] == pytest.approx(1000)
    assert not p.loc["W", "computed"] and np.isnan(p.loc["W", "avg_flow_gpd"])
    assert "no_sanitary_flow" in p.loc["W", "flags"].split(";")
    assert "inactive" in p.loc["X", "flags"].split(";")
    assert cap.sanitary_flow_edges(res.network).tolist() == [True, True, False, False]


def test_totals_and_layers(five):
    town, G, pts = five
    res = cap.compute_capacity(town, G, points=pts)
    p = res.pipes
    # as gisnet run's summary: counts of the pipes_capacity layer, each plant's row
    assert res.totals["pipes"] == {
        "pipes": 5, "over_threshold": int(p["over_threshold"].sum()),
        "surcharged": int(p["surcharged"].sum()), "no_capacity": 0, "capacity_unknown": 0,
        "diameter_assumed": 0}
    (plant,) = res.totals["plants"]
    assert plant["plant_id"] == "P1" and plant["basis"] == "accumulated"
    assert plant["ratio"] == pytest.approx(0.69) and plant["over_threshold"] is False
    assert set(res.layers()) == {"pipes_capacity", "plants", "plant_increase"}
    # no plants layer: no "plants" key, as gisnet run leaves it out
    bare = cap.compute_capacity(make_town(parcels=town.layers["parcels"]), G, points=pts)
    assert set(bare.totals) == {"pipes"}


def test_peaking_none_and_unimplemented_formula(five):
    from types import SimpleNamespace

    from gisnet.profile import profile_from_dict

    town, G, pts = five
    raw = load_profile("berlin-nh").raw
    raw["flow"]["peaking_formula"] = "none"
    flat = replace(town, profile=profile_from_dict(raw))
    p = cap.compute_capacity(flat, G, points=pts).pipes.set_index("main_id")
    # no peaking: peak = average (domestic 325,000 + industrial 20,000 on M5)
    assert p["peaking_factor"].tolist() == [1.0] * 5
    assert p.loc["M5", "peak_flow_gpd"] == pytest.approx(345_000)
    # the profile is the authority: only what it accepts is implemented
    assert cap.PEAKING_FORMULAS == ("harmon", "none")
    with pytest.raises(ConfigError, match="ten_states"):
        cap.peaking_factor(np.array([100.0]), SimpleNamespace(
            peaking_formula="ten_states", peaking_cap=4.0, peaking_min=1.0))


def test_index_is_explicit_and_of_the_same_graph(five):
    from gisnet.tracing import DownstreamIndex

    town, G, pts = five
    index = DownstreamIndex(G)
    res = cap.compute_capacity(town, G, points=pts, index=index)
    assert res.index is index
    other = make_graph(FIVE_NODES, FIVE_PIPES, outlets=("P1",))
    with pytest.raises(ConfigError):
        cap.compute_capacity(town, G, points=pts, index=DownstreamIndex(other))
    with pytest.raises(ConfigError):
        cap.whatif(town, G, res, parcel_id="p1", flow_gpd=100, index=DownstreamIndex(other))
    # the what-if reuses the result without changing it
    before = res.pipes.copy()
    w = cap.whatif(town, G, res, parcel_id="p1", flow_gpd=100, index=index)
    assert w.control_manhole == "B"
    pd.testing.assert_frame_equal(res.pipes, before)
    # without an index one is built for the graph
    assert isinstance(cap.compute_capacity(town, G, points=pts).index, DownstreamIndex)


def test_parcel_flows_module_imports_neither_capacity_nor_tracing():
    import subprocess
    import sys

    code = ("import sys, gisnet.flows as f; "
            "print(sorted(m for m in sys.modules if m in ('gisnet.capacity', 'gisnet.tracing')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
    from gisnet.flows import parcel_flows

    assert cap.parcel_flows is parcel_flows


# --------------------------------------------------------------------------- plants


def test_plant_three_month_window_strict_and_gaps():
    months = [f"2025-{m:02d}" for m in range(1, 13)]
    flows = [0.70, 0.72, 0.74, 0.80, 0.86, 0.82, 0.78, 0.76, np.nan, 0.70, 0.71, 0.72]
    pf = pd.DataFrame({"plant_id": "P1", "month": months, "avg_flow_mgd": flows})
    pf = pf.drop(index=9)  # October missing entirely; September has no value
    # Windows: May-Jul (0.86 + 0.82 + 0.78) / 3 = 0.82; Apr-Jun (0.80 + 0.86 + 0.82) / 3
    # = 0.82667 <- worst; no window spans Sep/Oct. The latest 3 months, Oct-Dec, miss
    # October: there is no latest window (Jun-Aug, 78.7 %, would answer "below" for a
    # plant whose present flow is not known).
    mean, window, gaps, n = cap.plant_window(pf, 3, which="worst")
    assert mean == pytest.approx(0.826667, rel=1e-5)
    assert window == "2025-04..2025-06"
    assert gaps == ["2025-09", "2025-10"]
    assert n == 10
    mean, window, _, _ = cap.plant_window(pf, 3)
    assert np.isnan(mean) and window == ""
    plants = gpd.GeoDataFrame({"plant_id": ["P1"], "design_flow_mgd": [1.0],
                               "avg_flow_mgd": [0.5], "node_id": ["P1"]},
                              geometry=[Point(0, 0)], crs=CRS)
    nodes = {"A": (0, 0, "manhole"), "P1": (100, 0, "plant")}
    G = make_graph(nodes, [("M", "A", "P1", 8, {})], outlets=("P1",))
    res = cap.compute_capacity(make_town(plants=plants, plant_flows=pf), G,
                               points=points_for([]))
    row = res.plants.iloc[0]
    # the profile's basis is the latest window: October is missing, so gisnet cannot say
    # (not "below"), and neither an older window nor the reported 0.5 MGD stands in
    assert row["basis"] == "months_missing" and row["missing_months"] == "2025-10"
    assert np.isnan(row["ratio"]) and pd.isna(row["over_threshold"])
    assert row["window_months"] == "" and row["worst_window"] == "2025-04..2025-06"
    assert row["worst_window"] == "2025-04..2025-06" and row["worst_over_threshold"]
    assert row["worst_ratio"] == pytest.approx(0.826667, rel=1e-5)
    assert row["gaps"] == "2025-09,2025-10"
    # exactly 80 % is not "in excess of" 80 %
    flat = pd.DataFrame({"plant_id": "P1", "month": months[:3], "avg_flow_mgd": [0.8] * 3})
    res2 = cap.compute_capacity(make_town(plants=plants, plant_flows=flat), G,
                                points=points_for([]))
    assert res2.plants.iloc[0]["ratio"] == pytest.approx(0.8)
    assert not res2.plants.iloc[0]["over_threshold"]
    # without a series: the plants layer's avg flow
    res3 = cap.compute_capacity(make_town(plants=plants), G, points=points_for([]))
    assert res3.plants.iloc[0]["basis"] == "avg_flow"
    assert res3.plants.iloc[0]["ratio"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- what-if


def test_whatif_recomputes_only_downstream_and_matches_full_run(five):
    town, G, pts = five
    res = cap.compute_capacity(town, G, points=pts)
    w = cap.whatif(town, G, res, parcel_id="p3", flow_gpd=12_000)
    # p3 is on M2 -> M3 -> M5: only those pipes, in flow order
    assert w.pipes["main_id"].tolist() == ["M2", "M3", "M5"]
    assert w.control_manhole == "B"
    # Independent check: a full recomputation with p3 metered 12,000 gpd higher.
    parcels = metered_parcels({"p1": 20_000, "p2": 16_000, "p3": 76_000, "p4": 225_000})
    town2 = make_town(parcels=parcels, users=town.layers["users"],
                      plants=town.layers["plants"])
    full = cap.compute_capacity(town2, G, points=pts).pipes.set_index("main_id")
    after = w.pipes.set_index("main_id")
    for mid in ("M2", "M3", "M5"):
        assert after.loc[mid, "peak_flow_gpd_after"] == pytest.approx(
            full.loc[mid, "peak_flow_gpd"], rel=1e-9)
        assert after.loc[mid, "utilization_after"] == pytest.approx(
            full.loc[mid, "utilization"], rel=1e-9)
    # M3 by hand: 112,000 gpd, P 1.12 -> (18 + 1.058301) / (4 + 1.058301) = 3.767727
    # -> 421,985.4 gpd peak
    assert after.loc["M3", "peak_flow_gpd_after"] == pytest.approx(421_985.4, rel=1e-6)
    # plant: 0.345 + 0.012 = 0.357 MGD of 0.5
    assert w.plants.iloc[0]["ratio_after"] == pytest.approx(0.714)
    # Berlin: 12,000 > 5,000 gpd -> DES approval; not industrial; plant below 80 %; a
    # domestic service applies 30 days before the connection
    assert [a["id"] for a in w.approvals] == ["des_flow_over_5000_gpd",
                                              "sewer_permit_application"]
    d = w.to_dict()
    assert d["control_manhole"] == "B" and len(d["pipes"]) == 3
    assert d["approvals"][0]["section"]


def test_whatif_crossing_and_approvals(five):
    town, G, pts = five
    res = cap.compute_capacity(town, G, points=pts)
    c3 = res.pipes.set_index("main_id").loc["M3", "capacity_gpd"]
    before = res.pipes.set_index("main_id").loc["M3", "utilization"]
    assert before < 0.8
    # Industrial flow is not peaked: pushing M3 from 380,000 to over 0.8 x capacity
    need = 0.8 * c3 - 380_000
    w = cap.whatif(town, G, res, parcel_id="p1", flow_gpd=need + 1000, industrial=True)
    row = w.pipes.set_index("main_id").loc["M3"]
    assert row["peak_flow_gpd_after"] == pytest.approx(380_000 + need + 1000)
    assert "M3" in w.crossings
    ids = {a["id"] for a in w.approvals}
    assert {"des_flow_over_5000_gpd", "des_industrial_any"} <= ids
    # the plant goes over 80 %: (0.345 + need) / 0.5
    if (0.345 + (need + 1000) / 1e6) / 0.5 > 0.8:
        assert "des_plant_over_80_pct" in ids


def test_whatif_errors(five):
    town, G, pts = five
    res = cap.compute_capacity(town, G, points=pts)
    with pytest.raises(NotFoundError):
        cap.whatif(town, G, res, parcel_id="nope", flow_gpd=100)
    with pytest.raises(ConfigError):
        cap.whatif(town, G, res, parcel_id="p1", flow_gpd=-5)
    with pytest.raises(ConfigError):
        cap.whatif(town, G, res, flow_gpd=5)


# --------------------------------------------------------------------------- real data


def test_lancaster_every_pipe_matches_manning(real_data):
    src = gpd.read_file(real_data / "lancaster_ca" / "sample_sewer_network_1.shp")
    nodes: dict[tuple[float, float], str] = {}

    def node(xy):
        key = (round(xy[0], 1), round(xy[1], 1))
        return nodes.setdefault(key, f"N{len(nodes)}")

    xy: dict[str, dict] = {}
    edges = []
    for rec in src.itertuples():
        c = list(rec.geometry.coords)
        u, v = node(c[0]), node(c[-1])
        for nid, p in ((u, c[0]), (v, c[-1])):
            xy[nid] = {"x": p[0], "y": p[1], "kind": "junction"}
        edges.append((u, v, str(rec.facilityid), {
            "diameter_in": float(rec.diameter), "slope": float(rec.slope),
            "material": rec.material, "direction_source": "digitized",
            "geometry": rec.geometry}))
    G = towns.hand_graph(xy, edges, crs=src.crs, ft_per_unit=1.0)
    res = cap.compute_capacity(make_town(), G, points=points_for([]))
    got = res.pipes.set_index("main_id")["capacity_cfs"]
    assert len(got) == len(src) == 65
    for rec in src.itertuples():
        want = manning_by_hand(rec.diameter, rec.slope) if rec.diameter > 0 else np.nan
        if np.isnan(want):
            assert np.isnan(got[str(rec.facilityid)])
            assert "no_diameter" in res.pipes.set_index("main_id").loc[
                str(rec.facilityid), "flags"]
        else:
            assert got[str(rec.facilityid)] == pytest.approx(want, rel=1e-9)


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def small_town_dir(tmp_path_factory):
    from gisnet.testing.synthetic import make_town as synth
    from gisnet.testing.synthetic import write_town

    d = tmp_path_factory.mktemp("captown")
    write_town(synth(400, seed=3), d, fmt="gpkg", profile="berlin-nh")
    return d


def test_cli_capacity_writes_layers_and_conserves_flow(small_town_dir, tmp_path, capsys):
    import pyogrio

    from gisnet.cli import main

    out = tmp_path / "out"
    assert main(["capacity", "--layers", str(small_town_dir), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pipes:" in text and "plant " in text
    gpkg = out / "gisnet-results.gpkg"
    names = {n for n, _ in pyogrio.list_layers(gpkg)}
    assert {"pipes_capacity", "plants"} <= names
    pipes = gpd.read_file(gpkg, layer="pipes_capacity")
    plants = gpd.read_file(gpkg, layer="plants")
    # Mass balance: everything sewered and tapped arrives at the one plant.
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    town = load_town(small_town_dir)
    G = build_sewer_graph(town)
    res = cap.compute_capacity(town, G)
    assert len(pipes) == G.number_of_edges() == len(res.pipes)
    pts = res.points
    fl = res.flows.set_index("parcel_id")
    tapped = pts[pts["user_id"].isna() & pts["edge_key"].notna()]["parcel_id"].unique()
    total = fl.loc[fl.index.isin(tapped) & fl["sewered"], "avg_flow_gpd"].sum()
    users = town.layers.get("users")
    if users is not None:
        tapped_users = pts[pts["user_id"].notna() & pts["edge_key"].notna()]["user_id"]
        total += users.set_index("user_id").loc[tapped_users, "process_flow_gpd"].fillna(0).sum()
    # the file keeps MGD to 0.001 (1,000 gpd): each plant's value is within 500 gpd
    assert plants["accumulated_flow_mgd"].sum() * 1e6 == pytest.approx(
        total, abs=500 * len(plants))


def test_cli_whatif_json(small_town_dir, capsys):
    import json

    from gisnet.cli import main
    from gisnet.io import load_town

    pid = str(load_town(small_town_dir).layers["parcels"]["parcel_id"].iloc[0])
    capsys.readouterr()
    assert main(["whatif", "--layers", str(small_town_dir), "--parcel", pid,
                 "--flow-gpd", "12000", "--industrial", "--json", "-q"]) == 0
    assert capsys.readouterr().out == ""  # --quiet prints nothing
    assert main(["whatif", "--layers", str(small_town_dir), "--parcel", pid,
                 "--flow-gpd", "12000", "--industrial", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["connection"]["parcel_id"] == pid and d["control_manhole"]
    ids = {a["id"] for a in d["approvals"]}
    assert {"des_flow_over_5000_gpd", "des_industrial_any"} <= ids
    assert main(["whatif", "--layers", str(small_town_dir), "--parcel", "NO-SUCH",
                 "--flow-gpd", "100"]) == 2


def test_lancaster_through_loader_and_graph(real_data):
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    src = gpd.read_file(real_data / "lancaster_ca" / "sample_sewer_network_1.shp")
    want = {str(r.facilityid): manning_by_hand(r.diameter, r.slope) * 646_316.88
            for r in src.itertuples() if r.diameter > 0}
    town = load_town(Path(__file__).parent / "towns" / "lancaster_ca")
    G = build_sewer_graph(town)
    res = cap.compute_capacity(town, G)
    got = res.pipes.groupby("main_id")["capacity_gpd"].first()
    assert set(got.index) == set(src["facilityid"].astype(str))
    for mid, q in want.items():
        assert got[mid] == pytest.approx(q, rel=1e-9)
    assert got.isna().sum() == 3  # the three pipes with diameter 0


# --------------------------------------------------------------------------- sample town


@pytest.fixture(scope="module")
def sample_runs(sample_dir):
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    out = {}
    for prof in ("poughkeepsie-fourth-ward", "berlin-nh"):
        town = load_town(sample_dir, profile=prof)
        G = build_sewer_graph(town)
        out[prof] = (town, G, cap.compute_capacity(town, G))
    return out


@pytest.mark.slow
def test_sample_plant_three_month_ratio(sample_dir, sample_runs):
    # Independently from the files: the mean of the latest 3 consecutive months
    # (the profile's plant_basis) and the worst 3 over the plants layer's DESIGNCAP.
    csv = pd.read_csv(sample_dir / "plant_flows.csv").sort_values("month")
    months = pd.PeriodIndex(csv["month"], freq="M")
    assert (months[1:] - months[:-1] == 1 * months.freq).all()  # no gaps in this file
    means = [csv["avg_flow_mgd"].iloc[i:i + 3].mean() for i in range(len(csv) - 2)]
    design = gpd.read_file(sample_dir / "plants.shp").set_index("FACILITYID")["DESIGNCAP"]
    _, _, res = sample_runs["poughkeepsie-fourth-ward"]
    row = res.plants.set_index("plant_id").loc["WWTP-01"]
    assert row["basis"] == "monthly_3mo" and row["window_basis"] == "latest"
    # latest: Oct-Dec 2025, (1.444 + 1.503 + 1.563) / 3 = 1.50333 MGD of 2.14 = 70.2 %
    assert row["ratio"] == pytest.approx(means[-1] / design["WWTP-01"], rel=1e-9)
    assert row["ratio"] == pytest.approx((1.444 + 1.503 + 1.563) / 3 / 2.14, rel=1e-3)
    assert row["window"] == f"{csv['month'].iloc[-3]}..{csv['month'].iloc[-1]}"
    assert row["window_months"] == "2025-10,2025-11,2025-12"
    assert row["gaps"] == ""
    assert not row["over_threshold"]
    # history: the worst window, Mar-May 2025, 78.3 %: near but below 80 % (one month
    # alone is above: the 3-month rule matters)
    i = int(np.argmax(means))
    assert row["worst_window"] == f"{csv['month'].iloc[i]}..{csv['month'].iloc[i + 2]}"
    assert row["worst_window"] == "2025-03..2025-05"
    assert row["worst_ratio"] == pytest.approx(max(means) / design["WWTP-01"], rel=1e-9)
    assert 0.75 < row["worst_ratio"] <= 0.80 and not row["worst_over_threshold"]
    assert (csv["avg_flow_mgd"] / design["WWTP-01"]).max() > 0.80


@pytest.mark.slow
def test_sample_whatif_pipe_crossing_and_profile_approvals(sample_runs):
    parcel, pipe = "6262-10-185", "SM000008"
    town, G, res = sample_runs["poughkeepsie-fourth-ward"]
    before = res.pipes.set_index("edge_key").loc[pipe, "utilization"]
    assert before <= 0.80
    w = cap.whatif(town, G, res, parcel_id=parcel, flow_gpd=12_000)
    assert pipe in w.crossings
    assert w.pipes.iloc[0]["edge_key"] == pipe  # the parcel taps SM000008 itself
    # Only the downstream path was recomputed: compare with a full run in which
    # the parcel's flow is 12,000 gpd higher (metered).
    flows = res.flows.set_index("parcel_id")["avg_flow_gpd"]
    parcels = town.layers["parcels"].copy()
    sel = parcels["parcel_id"] == parcel
    parcels.loc[sel, "flow_gpd"] = flows[parcel] + 12_000
    town2 = replace(town, layers={**town.layers, "parcels": parcels})
    full = cap.compute_capacity(town2, G, points=res.points).pipes.set_index("edge_key")
    after = w.pipes.set_index("edge_key")
    for key in after.index:
        assert after.loc[key, "utilization_after"] == pytest.approx(
            full.loc[key, "utilization"], rel=1e-9, nan_ok=True)
    assert full.loc[pipe, "utilization"] > 0.80
    # Poughkeepsie: only the Superintendent's review of flows over 10,000 gpd.
    assert {a["trigger"] for a in w.approvals} == {"review_flow_over"}
    assert all(a["section"].startswith("§ 168-22.5G(4)") for a in w.approvals)

    # Berlin (150 gpd per bedroom): the same 12,000 gpd needs DES approval
    # (> 5,000 gpd). The plant "operating in excess of 80% design flow capacity" is
    # judged on its latest 3 months (Oct-Dec 2025, 1.50333 MGD of 2.14 = 70.2 %):
    # 40,000 gpd takes it to 72.1 %, no plant approval; 210,000 gpd to
    # (1.50333 + 0.21) / 2.14 = 80.06 %, over.
    btown, bG, bres = sample_runs["berlin-nh"]
    wb = cap.whatif(btown, bG, bres, parcel_id=parcel, flow_gpd=12_000)
    # (and, for every domestic connection, the permit application 30 days ahead)
    assert [a["id"] for a in wb.approvals] == ["des_flow_over_5000_gpd",
                                               "sewer_permit_application"]
    wb40 = cap.whatif(btown, bG, bres, parcel_id=parcel, flow_gpd=40_000)
    assert [a["id"] for a in wb40.approvals] == ["des_flow_over_5000_gpd",
                                                 "sewer_permit_application"]
    pl = wb40.plants.iloc[0]
    assert (pl["window_basis"], pl["window"]) == ("latest", "2025-10..2025-12")
    assert pl["ratio_after"] == pytest.approx((1.50333 + 0.04) / 2.14, rel=1e-4)
    wb210 = cap.whatif(btown, bG, bres, parcel_id=parcel, flow_gpd=210_000)
    assert [a["id"] for a in wb210.approvals] == ["des_flow_over_5000_gpd",
                                                  "des_plant_over_80_pct",
                                                  "sewer_permit_application"]
    assert wb210.plant_crossings == ["WWTP-01"]
    assert "latest months 2025-10..2025-12" in wb210.approvals[1]["reason"]
    wp40 = cap.whatif(town, G, res, parcel_id=parcel, flow_gpd=40_000)
    assert {a["trigger"] for a in wp40.approvals} == {"review_flow_over"}


@pytest.mark.slow
def test_sample_adverse_pipe_and_cycle(sample_dir, sample_runs):
    import json

    problems = json.loads((sample_dir / "problems.json").read_text())
    items = problems if isinstance(problems, list) else problems.get("problems", [])
    _, _, res = sample_runs["poughkeepsie-fourth-ward"]
    p = res.pipes.set_index("edge_key")
    seen = set()
    for item in items:
        kinds = item.get("expected") or []
        ids = item.get("ids") or []
        seen.update(kinds)
        if "reversed_pipe" in kinds:
            # once the graph turns it round, its slope is positive and it has capacity
            for mid in ids:
                assert p.loc[mid, "slope"] > 0 and p.loc[mid, "capacity_gpd"] > 0
        if "adverse_slope" in kinds:
            for mid in ids:
                assert np.isnan(p.loc[mid, "capacity_gpd"])
                assert "adverse_slope" in p.loc[mid, "flags"]
        if "cycle" in kinds:
            assert sorted(ids) in res.cycles
            assert not p.loc[ids, "computed"].any()
    assert {"adverse_slope", "cycle", "reversed_pipe"} <= seen


@pytest.mark.slow
def test_sample_whatif_at_a_lonlat_point(sample_runs):
    from pyproj import Transformer

    town, G, res = sample_runs["poughkeepsie-fourth-ward"]
    geom = res.points.set_index("parcel_id").loc["6262-10-185", "geometry"]
    lon, lat = Transformer.from_crs(town.crs, "EPSG:4326", always_xy=True).transform(
        geom.x, geom.y + 5)
    w = cap.whatif(town, G, res, point=(lon, lat), crs="EPSG:4326", flow_gpd=12_000)
    assert w.connection["edge_key"] == "SM000008"
    # 5 ft north of the tap, projected back onto the same main: within a few feet
    assert math.hypot(w.connection["x"] - geom.x, w.connection["y"] - geom.y) < 6.0
    assert w.control_manhole == "MH000008"


def test_whatif_through_a_split_that_rejoins():
    # IN -> S splits into S8 (8 in) and S12 (12 in), both rejoin at Z, OUT leaves Z.
    nodes = {"A": (0, 0, "manhole"), "S": (100, 0, "manhole"), "X": (200, 50, "manhole"),
             "Y": (200, -50, "manhole"), "Z": (300, 0, "manhole"), "E": (400, 0, "manhole")}
    G = make_graph(nodes, [("IN", "A", "S", 15, {}), ("S8", "S", "X", 8, {}),
                           ("S12", "S", "Y", 12, {}), ("X8", "X", "Z", 8, {}),
                           ("Y12", "Y", "Z", 12, {}), ("OUT", "Z", "E", 15, {})])
    town = make_town(parcels=metered_parcels({"p": 10_000}))
    pts = points_for([("p", None, "IN")])
    res = cap.compute_capacity(town, G, points=pts)
    w = cap.whatif(town, G, res, parcel_id="p", flow_gpd=5_000)
    after = w.pipes.set_index("main_id")
    assert after.index[0] == "IN" and after.index[-1] == "OUT"
    assert set(after.index) == {"IN", "S8", "S12", "X8", "Y12", "OUT"}
    # all of the 5,000 gpd arrives at OUT again: 10,000 + 5,000
    assert after.loc["OUT", "avg_flow_gpd_after"] == pytest.approx(15_000)
    assert after.loc["OUT", "share"] == pytest.approx(1.0)
    share12 = 1.5 ** (8 / 3) / (1 + 1.5 ** (8 / 3))
    assert after.loc["S12", "avg_flow_gpd_after"] == pytest.approx(15_000 * share12)
    full = cap.compute_capacity(make_town(parcels=metered_parcels({"p": 15_000})), G,
                                points=pts).pipes.set_index("main_id")
    for mid in after.index:
        assert after.loc[mid, "peak_flow_gpd_after"] == pytest.approx(
            full.loc[mid, "peak_flow_gpd"], rel=1e-12)
    assert any("splits at node S" in n for n in w.notes)


def test_whatif_on_a_parcel_whose_building_sewer_is_unresolved_names_the_reason(sample_dir):
    """The sample's lateral LAT000757 stops 25 ft short of the main: the parcel has no
    connection point, and the what-if says why instead of naming a missing pipe."""
    from gisnet.capacity import whatif
    from gisnet.errors import NotFoundError
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    town = load_town(sample_dir)
    res = analyse(town, only={"capacity"}, control_paths=False)
    pts = res.control.points
    (pid,) = pts.loc[pts["source"] == "unresolved", "parcel_id"].unique()
    with pytest.raises(NotFoundError,
                       match=r"no connection point: lateral LAT000757 ends 25\.0 ft"):
        whatif(town, res.graph, res.capacity, parcel_id=pid, flow_gpd=1000.0)


def test_flow_naming_its_node_enters_there_not_on_the_arriving_pipe():
    # The split node S of the test above: p (10,000 gpd) taps IN; q (6,000 gpd, 60
    # persons) names S as its outlet_node (a SWMM [DWF] at S) and its connection point
    # also lies on IN. SWMM adds a node's inflow at the node: IN carries p's 10,000 only,
    # and S8 and S12 share 10,000 + 6,000 = 16,000 by capacity (0.74659 to S12, as above).
    # r (2,000 gpd) names a node the graph does not have: its flow stays at its point.
    nodes = {"A": (0, 0, "manhole"), "S": (100, 0, "manhole"), "X": (200, 50, "manhole"),
             "Y": (200, -50, "manhole")}
    G = make_graph(nodes, [("IN", "A", "S", 15, {}), ("S8", "S", "X", 8, {}),
                           ("S12", "S", "Y", 12, {})])
    parcels = metered_parcels({"p": 10_000, "q": 6_000, "r": 2_000})
    parcels["outlet_node"] = [None, "S", "NOWHERE"]
    town = make_town(parcels=parcels)
    pts = points_for([("p", None, "IN"), ("q", None, "IN"), ("r", None, "IN")])
    res = cap.compute_capacity(town, G, points=pts)
    p = res.pipes.set_index("main_id")
    share = 1.5 ** (8 / 3) / (1 + 1.5 ** (8 / 3))
    assert p.loc["IN", "avg_flow_gpd"] == pytest.approx(12_000)
    assert p.loc["IN", "population"] == pytest.approx(120)
    assert p.loc["S12", "avg_flow_gpd"] == pytest.approx(18_000 * share)
    assert p.loc["S8", "avg_flow_gpd"] == pytest.approx(18_000 * (1 - share))
    assert p.loc["S12", "population"] + p.loc["S8", "population"] == pytest.approx(180)
    (said,) = res.report.of_kind("flow_at_node")
    assert said.feature_id == "q" and "6,000 gpd" in said.message
    (unknown,) = res.report.of_kind("outlet_node_unknown")
    assert unknown.feature_id == "r" and "r (NOWHERE)" in unknown.message
    # the points given are kept as they are (the parcel's own point is still its point)
    assert len(res.points) == 3


def test_flow_naming_the_plant_node_reaches_the_plant_only(five):
    # p5 (55,000 gpd) enters at the plant's node P1: no pipe carries it, the plant
    # receives 345,000 + 55,000 = 400,000 gpd = 0.4 MGD (80 % of its 0.5 MGD).
    town, G, pts = five
    parcels = metered_parcels({"p1": 20_000, "p2": 16_000, "p3": 64_000, "p4": 225_000,
                               "p5": 55_000})
    parcels["outlet_node"] = [None, None, None, None, "P1"]
    town = make_town(parcels=parcels, users=town.layers["users"], plants=town.layers["plants"])
    res = cap.compute_capacity(town, G, points=pts)
    p = res.pipes.set_index("main_id")
    assert p["avg_flow_gpd"].to_dict() == pytest.approx(
        {"M1": 36_000, "M2": 64_000, "M3": 100_000, "M4": 245_000, "M5": 345_000})
    assert res.plants.set_index("plant_id").loc["P1", "avg_flow_mgd"] == pytest.approx(0.4)
