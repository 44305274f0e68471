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
              profile="poughkeepsie-fourth-ward", manholes=None) -> Town:
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
    if manholes is not None:
        layers["manholes"] = manholes
    return towns.make_town(layers, crs=CRS_FT, profile=profile, name="t")


def box(x0, y0, x1, y1):
    return Polygon([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def primary_out(G, node):
    """The out-edge a walk follows at ``node``: active, not storm, the largest
    diameter (ties: smallest key); (next node, key, data) or None at a dead end."""
    best = None
    for _, w, k, d in G.out_edges(node, keys=True, data=True):
        if not d["active"] or d["kind"] == "storm":
            continue
        dia = d["diameter_in"] if d["diameter_in"] is not None else -1
        if best is None or (-dia, str(k)) < best[0]:
            best = ((-dia, str(k)), w, k, d)
    return None if best is None else best[1:]


def walk_control(G, u, v, key, tap_ft):
    """Plain edge-by-edge downstream walk from a tap (independent check).

    Follows, at each node, the :func:`primary_out` edge; stops at the first
    public active manhole, at an outlet or at a dead end; a revisited node
    means a loop.
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
        nxt = primary_out(G, node)
        if nxt is None:
            return None, None
        w, _k, d = nxt
        length += d["length_ft"]
        node = w


def walk_entry(G, node, length):
    """Plain walk from ``node`` (reached after ``length`` ft of private pipe) to
    where the flow enters the public sewer: the first public active manhole, or
    node whose primary out-edge (:func:`primary_out`) is public.
    Returns (node, private length ft) or (None, None)."""
    seen = set()
    while True:
        if G.nodes[node]["is_manhole"]:
            return node, length
        if G.nodes[node]["outlet"] or node in seen:
            return None, None
        seen.add(node)
        nxt = primary_out(G, node)
        if nxt is None:
            return None, None
        w, _k, d = nxt
        if d["public"]:
            return node, length
        length += d["length_ft"]
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
    assert users.loc["U3", "source"] == "unresolved"  # unknown parcel, no geometry
    assert "no geometry" in users.loc["U3", "reason"]
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
                if rng.random() < 0.2:
                    extra["public"] = False  # private mains: flow is followed through them
                edges.append((f"N{i}", v, f"E{trial}_{len(edges)}",
                              rng.choice([6.0, 8.0, 8.0, None]), extra))
        G = make_graph(nodes, edges)
        idx = DownstreamIndex(G)
        E = idx.edges
        for e in range(len(E.u)):
            u, v, k = idx.nodes[E.u[e]], idx.nodes[E.v[e]], E.key[e]
            tap = E.length_ft[e] * 0.25
            m, m_ft, _, _, ent, p_ft = idx.connection_targets(np.array([e]), np.array([tap]))
            exp, exp_ft = walk_control(G, u, v, k, tap)
            got = None if m[0] < 0 else idx.nodes[m[0]]
            if G.edges[u, v, k]["public"]:
                assert got == exp, (trial, u, v, k)
                assert ent[0] == -1 and p_ft[0] == 0
            else:  # a private tap: control only where the flow enters the public sewer
                exp_ent, exp_pft = walk_entry(G, v, G.edges[u, v, k]["length_ft"] - tap)
                assert (None if ent[0] < 0 else idx.nodes[ent[0]]) == exp_ent, (trial, u, v, k)
                if exp_ent is None:
                    assert got is None
                    continue
                assert p_ft[0] == pytest.approx(exp_pft)
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
        if p["source"] == "unresolved":  # a lateral ending on no usable main
            assert pd.isna(p["edge_key"]) and r["source"] == "unresolved"
            assert pd.isna(r["control_manhole_id"]) and r["reason"].startswith("lateral ")
            continue
        d = G.edges[p["edge_u"], p["edge_v"], p["edge_key"]]
        assert d["eligible"] or (p["source"] == "private_main" and not d["public"])
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
        # is eligible; a building whose lateral is drawn to a storm main is
        # unresolved (not projected), and the laterals are reported
        lat = town.layers["laterals"]
        elig = {d["main_id"] for *_, d in G.edges(keys=True, data=True) if d["eligible"]}
        on = lat[lat["main_id"].isin(elig)]
        offl = lat[~lat["main_id"].isin(elig)]
        b = pts[pts["building_id"].notna() & pts["user_id"].isna()].set_index("building_id")
        own_on, own_off = set(on["building_id"].dropna()), set(offl["building_id"].dropna())
        par_on, par_off = set(on["parcel_id"].dropna()), set(offl["parcel_id"].dropna())
        exp_lat = {i for i, p in b["parcel_id"].items()
                   if i in own_on or (i not in own_off and p in par_on)}
        exp_un = {i for i, p in b["parcel_id"].items()
                  if i not in exp_lat and (i in own_off or p in par_off)}
        assert set(b.index[b["source"] == "lateral"]) == exp_lat
        assert set(b.index[b["source"] == "unresolved"]) == exp_un and exp_un
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
    """A building whose lateral reaches neither a public nor a private sanitary
    main is unresolved, with the reason; it is not projected onto another main."""
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
    assert pts.loc["B1", "source"] == "unresolved" and pd.isna(pts.loc["B1", "main_id"])
    assert "lateral L1 ends on main STORM1 (a storm main)" in pts.loc["B1", "reason"]
    assert pts.loc["B2", "source"] == "lateral" and pts.loc["B2", "main_id"] == "C"
    assert pts.loc["B2", "tap_distance_ft"] == pytest.approx(50 * FT)
    # outside the tolerance the lateral reaches no main: unresolved, with the reason,
    # not projected onto D (the building sewer's connection is not known)
    assert pts.loc["B3", "source"] == "unresolved" and pd.isna(pts.loc["B3", "main_id"])
    assert "beyond the 1 ft snap tolerance" in pts.loc["B3", "reason"]
    f = town.report.of_kind("lateral_off_main")
    assert len(f) == 1 and f[0].feature_id == "L1,L3"
    cm = control_manholes(town, line_graph)["control_manholes"].set_index("building_id")
    assert cm.loc["B1", "source"] == "unresolved"
    assert pd.isna(cm.loc["B1", "control_manhole_id"]) and cm.loc["B1"].geometry is None


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


# ---------------------------------------------------------------------------
# building sewers on private mains (§ 168-22.5J) and owner manholes (§ 168-22.5K)
# ---------------------------------------------------------------------------

# Two streets, both draining west to the plant, and an apartment complex between
# them served by private mains:
#   front street (y = 0):   MH2 (400) -F1-> MH1 (0) -F0-> MH5 (-100) -OUT-> PLANT (-200)
#   rear street (y = 400):  MH4 (400) -R1-> J (200) -R1@2-> MH3 (0) -R0-> MH6 (-100)
#                           MH6 -T-> MH5
#   private:  PMH2 (400, 200) -PV2-> PMH (200, 200) -PV1-> MH3 (0, 400)
#             PMH3 (250, 300) -PV3-> J (200, 400)        (enters the rear street at a tee)
#             PX1 (600, 100) -PV4-> PX2 (600, 200)       (a private main that ends nowhere)
COMPLEX_NODES = {
    "MH2": (400, 0, "manhole", True, True), "MH1": (0, 0, "manhole", True, True),
    "MH5": (-100, 0, "manhole", True, True), "PLANT": (-200, 0, "plant", True, True),
    "MH4": (400, 400, "manhole", True, True), "J": (200, 400, "junction", True, True),
    "MH3": (0, 400, "manhole", True, True), "MH6": (-100, 400, "manhole", True, True),
    "PMH2": (400, 200, "manhole", False, True), "PMH": (200, 200, "manhole", False, True),
    "PMH3": (250, 300, "manhole", False, True),
    "PX1": (600, 100, "junction", False, True), "PX2": (600, 200, "junction", False, True),
}
PRIVATE = {"public": False}
COMPLEX_EDGES = [
    ("MH2", "MH1", "F1", 8.0, None), ("MH1", "MH5", "F0", 8.0, None),
    ("MH5", "PLANT", "OUT", 12.0, None),
    ("MH4", "J", "R1", 8.0, None), ("J", "MH3", "R1@2", 8.0, None),
    ("MH3", "MH6", "R0", 8.0, None), ("MH6", "MH5", "T", 10.0, None),
    ("PMH2", "PMH", "PV2", 6.0, PRIVATE), ("PMH", "MH3", "PV1", 6.0, PRIVATE),
    ("PMH3", "J", "PV3", 6.0, PRIVATE), ("PX1", "PX2", "PV4", 6.0, PRIVATE),
]


def _lat(rows):
    crs = CRS.from_user_input(CRS_FT)
    return gpd.GeoDataFrame(
        {"lateral_id": [r[0] for r in rows], "building_id": [r[1] for r in rows],
         "parcel_id": [r[2] for r in rows], "main_id": [None] * len(rows)},
        geometry=gpd.GeoSeries([LineString(r[3]) for r in rows], crs=crs), crs=crs)


def _complex_town(manholes=None, users=(), profile="poughkeepsie-fourth-ward"):
    bld = {"B0": (220, 100), "B1": (200, 100), "B2": (300, 100), "B3": (320, 330),
           "B4": (650, 150), "B5": (100, -50), "B6": (300, -50)}
    laterals = _lat([
        ("L1", "B1", "P-B1", [(200, 110), (150, 250)]),   # onto PV1
        ("L2", "B2", "P-B2", [(300, 110), (300, 200)]),   # onto PV2, upstream of PV1
        ("L3", "B3", "P-B3", [(310, 330), (225, 350)]),   # onto PV3, which tees into R1
        ("L4", "B4", "P-B4", [(640, 150), (600, 150)]),   # onto PV4, which ends nowhere
        ("L5", "B5", "P-B5", [(100, -40), (100, -30)]),   # stops 30 ft short of F1
        ("L6", "B6", "P-B6", [(300, -40), (300, 0)]),     # onto the public main F1
    ])
    return make_town(
        parcels=[(f"P-{b}", box(x - 10, y - 10, x + 10, y + 10)) for b, (x, y) in bld.items()],
        buildings=[(b, f"P-{b}", box(x - 10, y - 10, x + 10, y + 10))
                   for b, (x, y) in bld.items()],
        users=users, laterals=laterals, manholes=manholes, profile=profile)


@pytest.fixture
def complex_graph():
    return make_graph(COMPLEX_NODES, COMPLEX_EDGES)


def test_building_on_private_main_gets_the_manhole_its_waste_reaches(complex_graph):
    """§ 168-22.5J: "the control manhole shall be considered to be the nearest
    downstream manhole in the public sewer from the point at which the building
    sewer is connected". B1's lateral taps private main PV1, which enters the
    public sewer at MH3 on the rear street; the nearest public main is F1 on the
    front street (100 ft), whose manhole MH1 never receives B1's waste."""
    town = _complex_town()
    res = control_manholes(town, complex_graph)
    cm = res["control_manholes"].set_index("building_id")
    b1 = cm.loc["B1"]
    assert b1["source"] == "private_main" and b1["main_id"] == "PV1"
    assert b1["control_manhole_id"] == "MH3" and b1["entry_node_id"] == "MH3"
    pv1 = math.hypot(200, 200)
    tap = math.hypot(50, 50)  # (200, 200) -> (150, 250) along PV1
    assert b1["tap_distance_ft"] == pytest.approx(tap * FT)
    assert b1["path_length_ft"] == pytest.approx((pv1 - tap) * FT)
    assert b1["private_length_ft"] == pytest.approx((pv1 - tap) * FT)
    assert b1["plant_id"] == "PLANT"
    assert b1["plant_path_length_ft"] == pytest.approx((pv1 - tap + 100 + 400 + 100) * FT)
    assert "through private main(s) from PV1 to MH3" in b1["reason"]
    assert b1["section"] == "§ 168-22.5J"
    # the neighbour without a lateral is projected onto the nearest public
    # main, F1, as before: MH1 (what B1 used to get)
    b0 = cm.loc["B0"]
    assert b0["source"] == "projected" and b0["main_id"] == "F1"
    assert b0["control_manhole_id"] == "MH1" and pd.isna(b0["reason"])
    assert b0["private_length_ft"] == 0
    # the control path is the whole private + public path, tap to MH3
    paths = res["control_paths"].set_index("building_id")
    line = paths.loc["B1"].geometry
    assert [tuple(c) for c in line.coords] == [(150, 250), (0, 400)]
    assert line.length * FT == pytest.approx(b1["path_length_ft"])
    assert paths.loc["B1", "source"] == "private_main"


def test_private_chain_of_two_mains_passes_the_private_manhole(complex_graph):
    """§ 168-22.5J, "the nearest downstream manhole in the public sewer": B2's
    lateral taps PV2, which runs through private manhole PMH into PV1 and so to
    MH3; PMH is not in the public sewer and is passed over."""
    town = _complex_town()
    res = control_manholes(town, complex_graph)
    b2 = res["control_manholes"].set_index("building_id").loc["B2"]
    assert b2["source"] == "private_main" and b2["main_id"] == "PV2"
    assert b2["tap_distance_ft"] == pytest.approx(100 * FT)
    assert b2["control_manhole_id"] == "MH3" and b2["entry_node_id"] == "MH3"
    total = 100 + math.hypot(200, 200)
    assert b2["path_length_ft"] == pytest.approx(total * FT)
    assert b2["private_length_ft"] == pytest.approx(total * FT)
    line = res["control_paths"].set_index("building_id").loc["B2"].geometry
    assert [tuple(c) for c in line.coords] == [(300, 200), (200, 200), (0, 400)]
    # the same answer from the independent plain walk
    pts = connection_points(town, complex_graph).set_index("building_id")
    p = pts.loc["B2"]
    assert walk_control(complex_graph, p["edge_u"], p["edge_v"], p["edge_key"],
                        p["tap_distance_ft"]) == ("MH3", pytest.approx(total * FT))


def test_private_main_entering_at_a_tee_takes_the_next_manhole_downstream(complex_graph):
    """§ 168-22.5J: the control manhole is downstream "from the point at which
    the building sewer is connected": PV3 tees into the rear street at J, between
    MH4 (upstream) and MH3 (downstream); MH3 is the control manhole."""
    town = _complex_town()
    b3 = control_manholes(town, complex_graph)["control_manholes"].set_index(
        "building_id").loc["B3"]
    pv3 = math.hypot(50, 100)
    assert b3["source"] == "private_main" and b3["main_id"] == "PV3"
    assert b3["entry_node_id"] == "J" and b3["control_manhole_id"] == "MH3"
    assert b3["private_length_ft"] == pytest.approx(pv3 / 2 * FT)
    assert b3["path_length_ft"] == pytest.approx((pv3 / 2 + 200) * FT)
    idx = DownstreamIndex(complex_graph)
    assert idx.entry[idx.node_index["PMH2"]] == idx.node_index["MH3"]
    # PV2 is 200 ft long
    assert idx.entry_ft[idx.node_index["PMH2"]] == pytest.approx((200 + math.hypot(200, 200))
                                                                 * FT)
    assert idx.entry[idx.node_index["PX1"]] == -1  # PV4 never enters the public sewer


def test_unresolved_laterals_are_not_projected(complex_graph):
    """A building whose lateral reaches neither a public nor a private main has
    no "point at which the building sewer is connected" (§ 168-22.5J) that gisnet
    can tell: it is unresolved, with the reason, and is not projected onto F1."""
    town = _complex_town()
    cm = control_manholes(town, complex_graph)["control_manholes"].set_index("building_id")
    b5 = cm.loc["B5"]
    assert b5["source"] == "unresolved"
    assert pd.isna(b5["control_manhole_id"]) and pd.isna(b5["main_id"])
    assert b5.geometry is None
    assert b5["reason"] == ("lateral L5 ends 30.0 ft from the nearest main (F1), beyond the "
                            "1 ft snap tolerance: it reaches no public or private sanitary main")
    # a lateral on a private main that never reaches the public sewer
    b4 = cm.loc["B4"]
    assert b4["source"] == "unresolved" and b4["main_id"] == "PV4"
    assert pd.isna(b4["control_manhole_id"]) and pd.isna(b4["entry_node_id"])
    assert "never enters the public sewer" in b4["reason"]
    assert town.report.of_kind("lateral_off_main")[0].feature_id == "L5"
    assert town.report.of_kind("no_connection_point")
    assert town.report.of_kind("no_control_manhole")
    with pytest.raises(NotFoundError, match=r"30\.0 ft from the nearest main"):
        trace_downstream(town, complex_graph, parcel_id="P-B5")
    # a building whose lateral taps a public main keeps source lateral
    assert cm.loc["B6", "source"] == "lateral" and cm.loc["B6", "control_manhole_id"] == "MH1"


def _owner_manholes(rows):
    crs = CRS.from_user_input(CRS_FT)
    return gpd.GeoDataFrame(
        {"node_id": [r[0] for r in rows], "kind": "manhole", "owner": "private",
         "status": [r[2] for r in rows], "control_for": [r[1] for r in rows],
         "public": False, "active": [r[2] in ("active", None) for r in rows]},
        geometry=gpd.GeoSeries([Point(r[3]) for r in rows], crs=crs), crs=crs)


def test_owner_installed_control_manhole_overrides_the_default(complex_graph):
    """§ 168-22.5K: "When required by the Superintendent, the owner of any
    property served by a building sewer carrying industrial wastes shall install
    a suitable control manhole in the building sewer". A manhole marked
    ``control_for`` a building or user is that building's or user's control
    manhole, and the row cites 22.5K; unusable marks are reported."""
    mh = _owner_manholes([
        ("OMH1", "B6", "active", (300, -45)),      # in B6's building sewer
        ("OMH2", "U7", "active", (220, 95)),       # a user's own manhole
        ("OMH3", "NOPE", "active", (0, -80)),      # names nothing
        ("OMH4", "B1", "abandoned", (200, 95)),    # abandoned: not used
        ("MH1", None, "active", (0, 0)),
    ])
    town = _complex_town(manholes=mh, users=[("U6", "P-B6", "B6", 30000, False),
                                             ("U7", "P-B0", "B0", 12000, False)])
    res = control_manholes(town, complex_graph)
    cm = res["control_manholes"]
    bld = cm[cm["user_id"].isna()].set_index("building_id")
    usr = cm.dropna(subset=["user_id"]).set_index("user_id")
    for row in (bld.loc["B6"], usr.loc["U6"]):  # the building and its user
        assert row["source"] == "owner_manhole" and row["control_manhole_id"] == "OMH1"
        assert row["section"] == "§ 168-22.5K"
        assert pd.isna(row["path_length_ft"])
        assert "owner-installed control manhole OMH1" in row["reason"]
        # where the building sewer is connected is still reported
        assert row["main_id"] == "F1" and row["plant_id"] == "PLANT"
        assert row["tap_distance_ft"] == pytest.approx(100 * FT)
    assert usr.loc["U7", "control_manhole_id"] == "OMH2"
    assert usr.loc["U7", "source"] == "owner_manhole"
    # the user's manhole does not move the building's default
    assert bld.loc["B0", "control_manhole_id"] == "MH1"
    assert bld.loc["B0", "section"] == "§ 168-22.5J"
    # the abandoned manhole marked for B1 is not used
    assert bld.loc["B1", "control_manhole_id"] == "MH3"
    unused = {f.feature_id: f.message for f in town.report.of_kind("control_for_unused")}
    assert set(unused) == {"OMH3", "OMH4"}
    assert "no building_id and no user_id" in unused["OMH3"] and "abandoned" in unused["OMH4"]
    # no path is drawn to a manhole that is not on the pipes
    paths = res["control_paths"]
    assert paths[paths["control_manhole_id"] == "OMH1"].geometry.isna().all()
    # a trace from the parcel names the owner's manhole too
    assert trace_downstream(town, complex_graph, parcel_id="P-B6")["control_manhole_id"] == "OMH1"


def test_owner_manhole_without_an_owner_section_cites_the_profile_section(complex_graph):
    mh = _owner_manholes([("OMH1", "B6", "active", (300, -45))])
    town = _complex_town(manholes=mh, profile="berlin-nh")
    assert town.profile.control_manhole.owner_manhole_section is None
    row = control_manholes(town, complex_graph)["control_manholes"].set_index(
        "building_id").loc["B6"]
    assert row["control_manhole_id"] == "OMH1"
    assert row["section"] == town.profile.control_manhole.section


def test_path_lines_made_in_chunks_are_the_lines_made_at_once(sample_dir, monkeypatch):
    """The control paths are made a chunk of rows at a time (memory), the chunks on
    the thread share: cut into chunks of 7 rows, on one thread or on two, every path
    equals the one made with all rows together, vertex for vertex, in its row."""
    import shapely

    import gisnet.tracing.paths as paths_mod
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town
    from gisnet.threads import thread_limit

    town = load_town(sample_dir)
    G = build_sewer_graph(town)
    with thread_limit(1):
        whole = control_manholes(town, G)["control_paths"]
    assert len(whole) > 7 * 100 and whole.geometry.notna().sum() > 1000
    monkeypatch.setattr(paths_mod, "PATH_CHUNK_ROWS", 7)
    for threads in (1, 2):
        with thread_limit(threads):
            cut = control_manholes(town, G)["control_paths"]
        a = np.asarray(cut.geometry.array, dtype=object)
        b = np.asarray(whole.geometry.array, dtype=object)
        assert (pd.isna(a) == pd.isna(b)).all()
        m = pd.notna(b)
        assert shapely.equals_exact(a[m], b[m], tolerance=0).all()
        pd.testing.assert_frame_equal(pd.DataFrame(cut.drop(columns="geometry")),
                                      pd.DataFrame(whole.drop(columns="geometry")))


def test_edge_indices_match_as_codes_and_as_objects(sample_dir) -> None:
    """Each connection point's edge, found from its ``edge_u``, ``edge_v`` and
    ``edge_key`` held as Arrow text (codes) or as Python objects, is the same edge
    of the index, and the one whose key, tail and head are the point's; a point
    naming no edge, or an edge with other ends, gets -1."""
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town
    from gisnet.tracing import DownstreamIndex, connection_points
    from gisnet.tracing.paths import edge_indices

    town = load_town(sample_dir)
    G = build_sewer_graph(town)
    idx = DownstreamIndex(G)
    pts = connection_points(town, G, index=idx).reset_index(drop=True)
    assert isinstance(pts["edge_key"].dtype, pd.StringDtype)
    pts.loc[0, "edge_key"] = "no such edge"
    pts.loc[1, "edge_u"] = pts.loc[2, "edge_v"]  # a key with other ends
    pts.loc[3, ["edge_u", "edge_v", "edge_key"]] = None
    as_codes = edge_indices(idx, pts)
    as_objects = edge_indices(idx, pts.astype({c: object for c in
                                               ("edge_u", "edge_v", "edge_key")}))
    assert as_codes.tolist() == as_objects.tolist()
    assert as_codes[:4].tolist() == [-1, -1, as_codes[2], -1] and as_codes[2] >= 0
    ok = np.flatnonzero(as_codes >= 0)
    assert len(ok) > 0.9 * len(pts)
    e = as_codes[ok]
    assert (idx.edges.key[e] == pts["edge_key"].to_numpy(dtype=object)[ok]).all()
    assert (idx.nodes[idx.edges.u[e]] == pts["edge_u"].to_numpy(dtype=object)[ok]).all()
    assert (idx.nodes[idx.edges.v[e]] == pts["edge_v"].to_numpy(dtype=object)[ok]).all()


def test_control_paths_made_later_need_the_index_arrays_not_the_graph(sample_dir):
    """``analyse_control(paths="later")`` (what ``gisnet run`` asks for): the paths are
    made once the graph has gone (the maker holds the index's arrays, not the graph
    or the index), and they are the very layer made in the step."""
    import gc
    import weakref

    from geopandas.testing import assert_geodataframe_equal

    from gisnet.control import analyse_control
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    town = load_town(sample_dir)
    now = analyse_control(town, build_sewer_graph(town))
    G = build_sewer_graph(town)
    later = analyse_control(town, G, paths="later")
    assert later.control_paths is None and later.make_paths is not None
    assert_geodataframe_equal(later.control_manholes, now.control_manholes)
    gone = weakref.ref(G)
    later.index = None
    del G
    gc.collect()
    assert gone() is None  # nothing of the later paths holds the graph
    later.paths_now()
    assert later.make_paths is None and len(later.control_paths) == len(now.control_paths) > 0
    assert_geodataframe_equal(later.control_paths, now.control_paths)
    later.paths_now()  # once made, nothing more to do
