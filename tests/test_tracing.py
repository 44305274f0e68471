"""Tests of gisnet.tracing: connection points, control manholes, traces.

Fixtures are small graphs built in code following the "Sewer graph" contract
of docs/architecture.md. Expected answers are worked by hand or by a plain
edge-by-edge walk written here, independent of the module's pointer jumping.
"""

from __future__ import annotations

import math
import random

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from pyproj import CRS
from shapely.geometry import LineString, Point, Polygon

from gisnet.errors import ConfigError, NotFoundError
from gisnet.testing import towns
from gisnet.town import Town
from gisnet.tracing import (
    DownstreamIndex,
    connection_points,
    control_manholes,
    trace_downstream,
    trace_upstream,
    upstream_edges,
)

CRS_FT = "EPSG:2260"  # NY East, US survey feet
FT = 1200.0 / 3937.0 / 0.3048  # feet per US survey foot


# ---------------------------------------------------------------------------
# builders
# ---------------------------------------------------------------------------


def _raw(public: bool = True, active: bool = True) -> dict:
    """A feature's owner and status, from which gisnet.rules decide its flags."""
    return {"owner": "public" if public else "private",
            "status": "active" if active else "inactive"}


def make_graph(nodes: dict, edges: list, *, outlets=("PLANT",)) -> nx.MultiDiGraph:
    """nodes: id -> (x, y, kind, public, active); edges: (u, v, key, diam, extra).

    Written by hand (gisnet.testing.towns.hand_graph): public / active /
    eligible / is_manhole are decided by gisnet.rules from owner, status and
    kind; ``public`` / ``active`` in ``extra`` say which owner / status.
    """
    raw_nodes = {nid: {"x": x, "y": y, "kind": kind, **_raw(public, active)}
                 for nid, (x, y, kind, public, active) in nodes.items()}
    raw_edges = []
    for u, v, key, diam, extra in edges:
        extra = dict(extra or {})
        flags = {k: extra.pop(k) for k in ("public", "active") if k in extra}
        raw_edges.append((u, v, key, {"diameter_in": diam, "slope": 0.01, **_raw(**flags),
                                      **extra}))
    return towns.hand_graph(raw_nodes, raw_edges, crs=CRS_FT, ft_per_unit=FT, outlets=outlets)


def make_town(parcels=(), buildings=(), users=(), laterals=None,
              profile="poughkeepsie-fourth-ward") -> Town:
    """Raw rows through the loader's canonical mapping (gisnet.testing.towns.make_town)."""
    layers = {"parcels": [towns.parcel(pid, g) for pid, g in parcels]}
    if buildings:
        layers["buildings"] = [towns.building(b, g, p) for b, p, g in buildings]
    if users:
        layers["users"] = [towns.user(u, name=u, parcel_id=p, building_id=b,
                                      process_flow_gpd=float(q), categorical=bool(c),
                                      industrial=True) for u, p, b, q, c in users]
    if laterals is not None:
        layers["laterals"] = laterals
    return towns.make_town(layers, crs=CRS_FT, profile=profile, name="t")


def box(x0, y0, x1, y1):
    return Polygon([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def walk_control(G, u, v, key, tap_ft):
    """Plain edge-by-edge downstream walk from a tap (independent check).

    Follows, at each node, the out-edge that is active and not storm with the
    largest diameter (ties: smallest key); stops at the first public active
    manhole, at an outlet or at a dead end; a revisited node means a loop.
    """
    if tap_ft <= 0 and G.nodes[u]["is_manhole"]:
        return u, 0.0
    length = G.edges[u, v, key]["length_ft"] - tap_ft
    node, seen = v, set()
    while True:
        if G.nodes[node]["is_manhole"]:
            return node, length
        if G.nodes[node]["outlet"] or node in seen:
            return None, None
        seen.add(node)
        best = None
        for _, w, k, d in G.out_edges(node, keys=True, data=True):
            if not d["active"] or d["kind"] == "storm":
                continue
            dia = d["diameter_in"] if d["diameter_in"] is not None else -1
            cand = (-dia, str(k), w)
            if best is None or cand < best:
                best = cand
        if best is None:
            return None, None
        k, w = best[1], best[2]
        length += G.edges[node, w, k]["length_ft"]
        node = w


# A street of mains along y = 0, flowing east (x increasing) to the plant:
#   M1 (0) -> J1 (100) -> J2 (200) -> M2 (300) -> P1 private MH (400)
#   -> I1 inactive MH (500) -> M3 (600) -> PLANT (700)
# plus a storm main along y = 20 (closer to the buildings north of the street).
LINE_NODES = {
    "M1": (0, 0, "manhole", True, True),
    "J1": (100, 0, "junction", True, True),
    "J2": (200, 0, "junction", True, True),
    "M2": (300, 0, "manhole", True, True),
    "P1": (400, 0, "manhole", False, True),
    "I1": (500, 0, "manhole", True, False),
    "M3": (600, 0, "manhole", True, True),
    "PLANT": (700, 0, "plant", True, True),
    "S1": (0, 20, "catch_basin", True, True),
    "S2": (700, 20, "outfall", True, True),
}
LINE_EDGES = [
    ("M1", "J1", "A", 8.0, None),
    ("J1", "J2", "B", 8.0, None),
    ("J2", "M2", "C", 8.0, None),
    ("M2", "P1", "D", 8.0, None),
    ("P1", "I1", "E", 8.0, None),
    ("I1", "M3", "F", 8.0, None),
    ("M3", "PLANT", "G", 10.0, None),
    ("S1", "S2", "STORM1", 24.0, {"kind": "storm"}),
]


@pytest.fixture
def line_graph():
    return make_graph(LINE_NODES, LINE_EDGES, outlets=("PLANT", "S2"))


# ---------------------------------------------------------------------------
# DownstreamIndex
# ---------------------------------------------------------------------------


def test_index_first_manhole_and_plant_by_hand(line_graph):
    idx = DownstreamIndex(line_graph)
    assert idx.first_manhole("J1") == "M2"
    assert idx.first_manhole("M1") == "M2"  # excluding itself
    assert idx.first_manhole("M1", include_self=True) == "M1"
    assert idx.first_manhole("M2") == "M3"  # P1 private, I1 inactive skipped
    assert idx.first_manhole("M3") is None  # the plant is not a manhole
    assert idx.outlet_of("M1") == "PLANT"
    i = idx.node_index["J1"]
    assert idx.manhole_ft[i] == pytest.approx(200 * FT)
    assert idx.outlet_ft[i] == pytest.approx(600 * FT)


def test_tap_between_two_junctions_gets_manhole_beyond_both(line_graph):
    # building north of the J1-J2 pipe, at x = 150: the storm main at y = 20
    # is closer (20 ft) than the sanitary main (y = 0, 60 ft) and is skipped.
    town = make_town(parcels=[("PA", box(120, 40, 180, 100))],
                     buildings=[("B1", "PA", box(140, 55, 160, 65))])
    pts = connection_points(town, line_graph)
    row = pts.iloc[0]
    assert row["building_id"] == "B1" and row["parcel_id"] == "PA"
    assert row["main_id"] == "B" and row["source"] == "projected"
    assert row["tap_distance_ft"] == pytest.approx(50 * FT)
    assert row["offset_ft"] == pytest.approx(60 * FT)
    assert row.geometry.equals(Point(150, 0))
    res = control_manholes(town, line_graph, points=pts)
    cm = res["control_manholes"].iloc[0]
    assert cm["control_manhole_id"] == "M2"
    assert cm["path_length_ft"] == pytest.approx(150 * FT)  # 50 + 100 to M2
    assert cm["plant_id"] == "PLANT"
    assert cm["plant_path_length_ft"] == pytest.approx(550 * FT)
    path = res["control_paths"].iloc[0].geometry
    assert path.length * FT == pytest.approx(150 * FT)
    assert path.coords[0] == (150, 0) and path.coords[-1] == (300, 0)


def test_private_and_inactive_downstream_manholes_are_skipped(line_graph):
    town = make_town(parcels=[("PB", box(320, 40, 380, 100))],
                     buildings=[("B2", "PB", Point(350, 70))])
    cm = control_manholes(town, line_graph)["control_manholes"].iloc[0]
    assert cm["main_id"] == "D"
    assert cm["control_manhole_id"] == "M3"  # not P1 (private) nor I1 (inactive)
    assert cm["path_length_ft"] == pytest.approx(250 * FT)


def test_storm_private_inactive_mains_never_tapped():
    nodes = {
        "M1": (0, 0, "manhole", True, True), "M2": (100, 0, "manhole", True, True),
        "X1": (0, 10, "manhole", True, True), "X2": (100, 10, "manhole", True, True),
        "PLANT": (200, 0, "plant", True, True),
    }
    edges = [
        ("M1", "M2", "SAN", 8.0, None),
        ("M2", "PLANT", "OUT", 8.0, None),
        ("X1", "X2", "STORM", 12.0, {"kind": "storm"}),
        ("X1", "X2", "PRIV", 8.0, {"public": False}),
        ("X1", "X2", "INACT", 8.0, {"active": False}),
        ("X1", "X2", "FORCE", 8.0, {"kind": "force"}),
    ]
    G = make_graph(nodes, edges)
    # buildings sit right on the ineligible mains (y = 10) and 10 ft from SAN
    town = make_town(parcels=[("P", box(0, 5, 100, 50))],
                     buildings=[(f"B{i}", "P", Point(10 + 20 * i, 10)) for i in range(4)])
    pts = connection_points(town, G)
    assert set(pts["main_id"]) == {"SAN"}
    assert pts["offset_ft"].to_numpy() == pytest.approx([10 * FT] * 4)


def test_lateral_end_on_main_is_the_tap(line_graph):
    crs = CRS.from_user_input(CRS_FT)
    # the lateral runs from the building (x=140, y=60) to the main at x = 260
    # (pipe C), although the building itself is nearest pipe B
    lat = gpd.GeoDataFrame(
        {"lateral_id": ["L1"], "building_id": ["B1"], "parcel_id": ["PA"], "main_id": [None]},
        geometry=gpd.GeoSeries([LineString([(140, 60), (200, 40), (260, 0.5)])], crs=crs),
        crs=crs)
    town = make_town(parcels=[("PA", box(120, 40, 180, 100))],
                     buildings=[("B1", "PA", Point(140, 60)), ("B1R", "PA", Point(140, 90))],
                     laterals=lat)
    pts = connection_points(town, line_graph).set_index("building_id")
    assert pts.loc["B1", "source"] == "lateral"
    assert pts.loc["B1", "main_id"] == "C"
    assert pts.loc["B1", "tap_distance_ft"] == pytest.approx(60 * FT)
    # a rear building on the same parcel shares the front building's sewer
    assert pts.loc["B1R", "source"] == "lateral" and pts.loc["B1R", "main_id"] == "C"


def test_parcel_without_building_and_users_get_points(line_graph):
    town = make_town(
        parcels=[("PA", box(120, 40, 180, 100)), ("PC", box(420, -100, 480, -40))],
        buildings=[("B1", "PA", Point(150, 60))],
        users=[("U1", "PA", "B1", 30000, False), ("U2", "PC", None, 500, False),
               ("U3", "PZ", None, 10, False)],
    )
    pts = connection_points(town, line_graph)
    parcel_row = pts[pts["building_id"].isna() & pts["user_id"].isna()]
    assert list(parcel_row["parcel_id"]) == ["PC"]
    assert parcel_row.iloc[0]["main_id"] == "E"  # south of P1 -> I1
    users = pts.dropna(subset=["user_id"]).set_index("user_id")
    assert users.loc["U1", "main_id"] == "B"
    assert users.loc["U2", "main_id"] == "E"
    assert pd.isna(users.loc["U3", "source"])  # unknown parcel, no geometry
    assert town.report.of_kind("no_connection_point")
    cm = control_manholes(town, line_graph, points=pts)["control_manholes"]
    by_user = cm.dropna(subset=["user_id"]).set_index("user_id")
    assert by_user.loc["U2", "control_manhole_id"] == "M3"
    assert pd.isna(by_user.loc["U3", "control_manhole_id"])


def test_split_follows_largest_diameter_then_key():
    nodes = {
        "J": (0, 0, "junction", True, True),
        "A": (100, 0, "manhole", True, True), "B": (0, 100, "manhole", True, True),
        "C": (0, -100, "manhole", True, True),
    }
    G = make_graph(nodes, [("J", "A", "K2", 8.0, None), ("J", "B", "K1", 8.0, None),
                           ("J", "C", "K0", 6.0, None)], outlets=())
    idx = DownstreamIndex(G)
    assert idx.first_manhole("J") == "B"  # 8 in tie broken by key K1 < K2


def test_cycle_without_manhole_is_marked_not_looped():
    nodes = {
        "M0": (0, 0, "manhole", True, True),
        "J1": (100, 0, "junction", True, True), "J2": (200, 0, "junction", True, True),
        "J3": (150, 100, "junction", True, True),
        "M9": (0, 100, "manhole", True, True),
    }
    G = make_graph(nodes, [("M0", "J1", "A", 8.0, None), ("J1", "J2", "B", 8.0, None),
                           ("J2", "J3", "C", 8.0, None), ("J3", "J1", "D", 8.0, None),
                           ("M9", "M0", "E", 8.0, None)], outlets=())
    idx = DownstreamIndex(G)
    assert idx.first_manhole("M0") is None
    assert idx.manhole_cyclic[idx.node_index["J2"]]
    assert idx.first_manhole("M9") == "M0"


def test_index_matches_plain_walk_on_random_networks():
    rng = random.Random(7)
    for trial in range(20):
        n = 60
        nodes = {}
        for i in range(n):
            kind = rng.choice(["manhole", "manhole", "junction", "cleanout"])
            nodes[f"N{i}"] = (rng.uniform(0, 1000), rng.uniform(0, 1000), kind,
                              rng.random() > 0.15, rng.random() > 0.1)
        nodes["PLANT"] = (500, -100, "plant", True, True)
        edges = []
        for i in range(n):
            # mostly toward higher numbers (a tree to the plant), some back-edges: loops
            for _ in range(rng.choice([1, 1, 1, 2])):
                j = rng.randrange(i + 1, n + 1) if rng.random() > 0.1 else rng.randrange(n)
                v = "PLANT" if j == n else f"N{j}"
                if v == f"N{i}":
                    continue
                extra = {}
                if rng.random() < 0.1:
                    extra["kind"] = "storm"
                if rng.random() < 0.05:
                    extra["active"] = False
                edges.append((f"N{i}", v, f"E{trial}_{len(edges)}",
                              rng.choice([6.0, 8.0, 8.0, None]), extra))
        G = make_graph(nodes, edges)
        idx = DownstreamIndex(G)
        E = idx.edges
        for e in range(len(E.u)):
            u, v, k = idx.nodes[E.u[e]], idx.nodes[E.v[e]], E.key[e]
            tap = E.length_ft[e] * 0.25
            m, m_ft, _, _ = idx.tap_targets(np.array([e]), np.array([tap]))
            exp, exp_ft = walk_control(G, u, v, k, tap)
            got = None if m[0] < 0 else idx.nodes[m[0]]
            assert got == exp, (trial, u, v, k)
            if exp is not None:
                assert m_ft[0] == pytest.approx(exp_ft)


# ---------------------------------------------------------------------------
# traces
# ---------------------------------------------------------------------------


def test_trace_downstream_from_parcel_and_point(line_graph):
    town = make_town(parcels=[("PA", box(120, 40, 180, 100))],
                     buildings=[("B1", "PA", Point(150, 60))])
    t = trace_downstream(town, line_graph, parcel_id="PA")
    assert t["control_manhole_id"] == "M2" and t["plant_id"] == "PLANT"
    assert t["control_length_ft"] == pytest.approx(150 * FT)
    assert t["length_ft"] == pytest.approx(550 * FT)
    assert t["reaches_outlet"]
    assert list(t["path"]["main_id"]) == ["B", "C", "D", "E", "F", "G"]
    assert t["path"]["cum_length_ft"].iloc[-1] == pytest.approx(550 * FT)
    # the same from a point given in lon/lat
    from pyproj import Transformer
    lon, lat = Transformer.from_crs(CRS_FT, "EPSG:4326", always_xy=True).transform(450, -30)
    t2 = trace_downstream(town, line_graph, point=(lon, lat), crs="EPSG:4326")
    assert t2["connection"].iloc[0]["main_id"] == "E"
    assert t2["control_manhole_id"] == "M3"
    assert t2["control_length_ft"] == pytest.approx(150 * FT, rel=1e-6)
    with pytest.raises(NotFoundError):
        trace_downstream(town, line_graph, parcel_id="nope")
    with pytest.raises(ConfigError):
        trace_downstream(town, line_graph)


def _loop_graph():
    # A -> B -> C -> D -> B (loop), E -> C, C2 split: C -> F -> M (target)
    nodes = {k: (x, y, "manhole", True, True) for k, (x, y) in {
        "A": (0, 0), "B": (100, 0), "C": (200, 0), "D": (150, 100), "E": (200, 100),
        "F": (300, 0), "M": (400, 0), "PLANT": (500, 0), "Z": (600, 0)}.items()}
    edges = [("A", "B", "ab", 8.0, None), ("B", "C", "bc", 8.0, None),
             ("C", "D", "cd", 6.0, None), ("D", "B", "db", 6.0, None),
             ("E", "C", "ec", 8.0, None), ("C", "F", "cf", 10.0, None),
             ("F", "M", "fm", 10.0, None), ("F", "M", "fm2", 10.0, None),
             ("M", "PLANT", "mp", 10.0, None), ("PLANT", "Z", "pz", 10.0, None),
             ("E", "C", "storm", 8.0, {"kind": "storm"})]
    return make_graph(nodes, edges)


def test_upstream_trace_on_loop_terminates_each_pipe_once():
    G = _loop_graph()
    got = upstream_edges(G, "M")
    keys = [k for _, _, k in got]
    assert len(keys) == len(set(keys))
    assert set(keys) == {"ab", "bc", "cd", "db", "ec", "cf", "fm", "fm2"}
    town = make_town(
        parcels=[("P1", box(0, 10, 80, 60)), ("P2", box(420, 10, 480, 60))],
        buildings=[("B1", "P1", Point(50, 20)), ("B2", "P2", Point(450, 20))],
        users=[("U1", "P1", "B1", 5000, False), ("U2", "P1", None, 40000, True),
               ("U9", "P2", "B2", 90000, False)],
    )
    up = trace_upstream(town, G, "M")
    assert set(up["pipes"]["main_id"]) == {"ab", "bc", "cd", "db", "ec", "cf", "fm", "fm2"}
    assert len(up["pipes"]) == 8
    assert list(up["buildings"]["building_id"]) == ["B1"]
    assert list(up["parcels"]["parcel_id"]) == ["P1"]
    assert list(up["users"]["user_id"]) == ["U2", "U1"]  # largest process flow first
    assert up["pipes"].attrs["process_flow_gpd"] == 45000
    with pytest.raises(NotFoundError):
        trace_upstream(town, G, "NOPE")


def test_path_lines_follow_several_hops():
    nodes = {"M1": (0, 0, "manhole", True, True), "J1": (0, 100, "junction", True, True),
             "J2": (100, 100, "cleanout", True, True), "M2": (100, 200, "manhole", True, True)}
    G = make_graph(nodes, [("M1", "J1", "a", 8.0, None), ("J1", "J2", "b", 8.0, None),
                           ("J2", "M2", "c", 8.0, None)], outlets=())
    town = make_town(parcels=[("P", box(-50, 20, -10, 60))], buildings=[("B", "P", Point(-20, 40))])
    res = control_manholes(town, G)
    cm = res["control_manholes"].iloc[0]
    assert cm["control_manhole_id"] == "M2"
    assert cm["path_length_ft"] == pytest.approx(260 * FT)
    line = res["control_paths"].iloc[0].geometry
    assert [tuple(c) for c in line.coords] == [(0, 40), (0, 100), (100, 100), (100, 200)]
    assert math.isclose(line.length * FT, cm["path_length_ft"])


def test_index_rejects_foreign_index(line_graph):
    idx = DownstreamIndex(line_graph)
    other = make_graph(LINE_NODES, LINE_EDGES)
    town = make_town(parcels=[("PA", box(120, 40, 180, 100))])
    with pytest.raises(ConfigError):
        control_manholes(town, other, index=idx)


# ---------------------------------------------------------------------------
# a whole town, end to end: loader -> graph -> control manholes
# ---------------------------------------------------------------------------


def _check_every_building(town, G):
    """Every building's control manhole equals the plain walk; every projected
    tap lies on the nearest eligible main (brute force over all mains)."""
    import shapely

    idx = DownstreamIndex(G)
    pts = connection_points(town, G, index=idx)
    cm = control_manholes(town, G, points=pts, index=idx)
    res = cm["control_manholes"]
    bld = res[res["building_id"].notna() & res["user_id"].isna()]
    assert len(bld) == len(town.layers["buildings"])
    elig = [(u, v, k, d) for u, v, k, d in G.edges(keys=True, data=True) if d["eligible"]]
    egeo = np.array([d["geometry"] for *_, d in elig], dtype=object)
    checked = 0
    for (_, r), (_, p) in zip(bld.iterrows(), pts.loc[bld.index].iterrows(), strict=True):
        d = G.edges[p["edge_u"], p["edge_v"], p["edge_key"]]
        assert d["eligible"]
        assert d["geometry"].distance(p.geometry) < 1e-6
        exp, exp_ft = walk_control(G, p["edge_u"], p["edge_v"], p["edge_key"],
                                   p["tap_distance_ft"])
        got = r["control_manhole_id"]
        assert (None if pd.isna(got) else got) == exp, r["building_id"]
        if exp is not None:
            assert r["path_length_ft"] == pytest.approx(exp_ft, abs=1e-6)
            checked += 1
        if p["source"] == "projected":
            b = town.layers["buildings"].set_index("building_id").geometry[r["building_id"]]
            best = shapely.distance(egeo, b.centroid).min()
            assert p["offset_ft"] == pytest.approx(best * G.graph["ft_per_unit"], abs=1e-6)
    paths = cm["control_paths"]
    ok = paths.geometry.notna()
    assert np.allclose(paths.geometry[ok].length * G.graph["ft_per_unit"],
                       paths["path_length_ft"][ok], rtol=1e-9, atol=1e-6)
    return checked, pts


@pytest.mark.slow
@pytest.mark.parametrize("laterals", [False, True])
def test_synthetic_town_control_manholes_match_plain_walk(tmp_path, laterals):
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town
    from gisnet.testing.synthetic import make_town as synth
    from gisnet.testing.synthetic import write_town

    layers = synth(360, seed=11, irregular=True, laterals=laterals)
    mh = layers["manholes"].copy()
    rng = np.random.default_rng(5)
    # some manholes private or inactive: the walk must pass over them
    pick = rng.random(len(mh))
    mh.loc[pick < 0.15, "owner"] = "private"
    mh.loc[(pick >= 0.15) & (pick < 0.25), "status"] = "inactive"
    layers["manholes"] = mh.drop(columns=[c for c in ("public", "active") if c in mh])
    mains = layers["mains"].copy()
    mains.loc[rng.random(len(mains)) < 0.05, "kind"] = "storm"
    layers["mains"] = mains
    write_town(layers, tmp_path / "t", fmt="gpkg")
    town = load_town(tmp_path / "t")
    G = build_sewer_graph(town)
    checked, pts = _check_every_building(town, G)
    assert checked > 0.5 * len(town.layers["buildings"])
    storm = {d["main_id"] for *_, d in G.edges(keys=True, data=True) if d["kind"] == "storm"}
    assert storm and not (set(pts["main_id"].dropna()) & storm)
    if laterals:
        # a building's lateral gives its tap exactly when the lateral's main
        # is eligible; laterals drawn to the storm mains are reported instead
        lat = town.layers["laterals"]
        elig = {d["main_id"] for *_, d in G.edges(keys=True, data=True) if d["eligible"]}
        on = lat[lat["main_id"].isin(elig)]
        b = pts[pts["building_id"].notna() & pts["user_id"].isna()].set_index("building_id")
        assert set(b.index[b["source"] == "lateral"]) == set(on["building_id"])
        off = set(lat["lateral_id"]) - set(on["lateral_id"])
        assert off
        assert set(town.report.of_kind("lateral_off_main")[0].feature_id.split(",")) == off


def test_sample_town_control_manholes_match_plain_walk(sample_dir):
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    town = load_town(sample_dir)
    if "buildings" not in town.layers:
        pytest.skip("the sample town has no buildings layer")
    G = build_sewer_graph(town)
    checked, _ = _check_every_building(town, G)
    assert checked > 0


def test_lateral_to_storm_main_is_not_a_tap(line_graph):
    crs = CRS.from_user_input(CRS_FT)
    # L1 ends on the storm main (y = 20); L2 ends 0.5 ft from sanitary pipe C, within
    # the 1 ft snap tolerance; L3 ends 1.1 ft from sanitary pipe D, just outside it
    lat = gpd.GeoDataFrame(
        {"lateral_id": ["L1", "L2", "L3"], "building_id": ["B1", "B2", "B3"],
         "parcel_id": ["PA", "PB", "PD"], "main_id": ["STORM1", "C", "D"]},
        geometry=gpd.GeoSeries([LineString([(140, 60), (140, 20)]),
                                LineString([(260, 60), (250, 0.5)]),
                                LineString([(340, 60), (350, 1.1)])], crs=crs), crs=crs)
    town = make_town(parcels=[("PA", box(120, 40, 180, 100)), ("PB", box(220, 40, 280, 100)),
                              ("PD", box(320, 40, 380, 100))],
                     buildings=[("B1", "PA", Point(140, 60)), ("B2", "PB", Point(260, 60)),
                                ("B3", "PD", Point(340, 60))],
                     laterals=lat)
    assert line_graph.graph["snap_tolerance_ft"] == 1.0
    pts = connection_points(town, line_graph).set_index("building_id")
    assert pts.loc["B1", "source"] == "projected" and pts.loc["B1", "main_id"] == "B"
    assert pts.loc["B2", "source"] == "lateral" and pts.loc["B2", "main_id"] == "C"
    assert pts.loc["B2", "tap_distance_ft"] == pytest.approx(50 * FT)
    # outside the tolerance the building is projected: straight south onto D at x = 340
    assert pts.loc["B3", "source"] == "projected" and pts.loc["B3", "main_id"] == "D"
    assert pts.loc["B3", "tap_distance_ft"] == pytest.approx(40 * FT)
    f = town.report.of_kind("lateral_off_main")
    assert len(f) == 1 and f[0].feature_id == "L1,L3"


def test_upstream_trace_marks_septic_parcels_as_not_sewered(sample_dir):
    """A septic parcel that is not connected lies upstream but sends nothing."""
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    town = load_town(sample_dir)
    G = build_sewer_graph(town)
    outlet = next(n for n in G.graph["outlets"] if G.nodes[n].get("plant_id"))
    manhole = next(u for u, _ in G.in_edges(outlet))
    up = trace_upstream(town, G, manhole)["parcels"]
    assert len(up)
    P = town.layers["parcels"].set_index("parcel_id")
    septic = P["septic"].fillna(False).astype(bool)
    connected = P["connected"].fillna(False).astype(bool)
    expect = (~septic | connected).reindex(up["parcel_id"]).to_numpy()
    assert (up["sewered"].to_numpy() == expect).all()
    assert (~expect).any()  # the sample town has septic parcels upstream
    assert (up.loc[~up["sewered"], "avg_flow_gpd"] == 0).all()


def test_cli_upstream_of_storm_outfall_names_the_pipes_not_followed(sample_dir, capsys):
    """Storm pipes are not sewage: an upstream trace from the storm outfall is
    empty and says which pipes it did not follow."""
    from gisnet.cli import main as cli_main

    assert cli_main(["trace", "--layers", str(sample_dir), "--manhole", "OF-01",
                     "--upstream"]) == 0
    out = capsys.readouterr().out
    assert "0 pipes" in out
    assert "not followed" in out and "SD" in out


# ---------------------------------------------------------------------------
# the public pieces of the package: DownstreamIndex.of, carries_flow, sections
# ---------------------------------------------------------------------------


def test_index_of_reuses_the_given_index_and_refuses_another_graph(line_graph):
    idx = DownstreamIndex.of(line_graph)
    assert isinstance(idx, DownstreamIndex) and idx.G is line_graph
    assert DownstreamIndex.of(line_graph, idx) is idx
    with pytest.raises(ConfigError):
        DownstreamIndex.of(make_graph(LINE_NODES, LINE_EDGES), idx)


def test_carries_flow_is_the_rules_predicate():
    from gisnet.tracing import carries_flow

    got = carries_flow([{"kind": "sanitary", "active": True}, {"kind": "storm", "active": True},
                        {"kind": "unknown", "active": True}, {"kind": None},
                        {"kind": "combined", "active": False}, {"kind": "force", "active": None}])
    # unknown kind is sanitary; a missing active flag is active
    assert got.tolist() == [True, False, True, True, False, True]
    assert carries_flow([]).tolist() == []


def test_unknown_kind_main_is_followed_like_a_sanitary_one():
    nodes = {"J": (0, 0, "junction", True, True), "M": (100, 0, "manhole", True, True)}
    G = make_graph(nodes, [("J", "M", "U", 8.0, {"kind": "unknown"})], outlets=())
    assert DownstreamIndex(G).first_manhole("J") == "M"
    assert [k for _, _, k in upstream_edges(G, "M")] == ["U"]


def test_upstream_edges_same_with_and_without_index():
    G = _loop_graph()
    assert upstream_edges(G, "M", index=DownstreamIndex(G)) == upstream_edges(G, "M")


def test_control_manholes_cite_the_profile_section(line_graph):
    town = make_town(parcels=[("PA", box(120, 40, 180, 100))])
    cm = control_manholes(town, line_graph)["control_manholes"]
    assert set(cm["section"]) == {town.profile.control_manhole.section}
    # without a town there is no profile to cite
    bare = control_manholes(None, line_graph, points=connection_points(town, line_graph))
    assert bare["control_manholes"]["section"].isna().all()
