"""Tests of gisnet.graph: snapping, T splits, direction, outlets, findings, round trip.

Fixtures are built in code in EPSG:2263 (NY Long Island, US survey feet) so
1 CRS unit ~ 1 ft; expected numbers are worked by hand or by brute force
(pairwise shapely distances, networkx components), not by the code itself.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
import shapely
from pyproj import CRS as CRSObj
from shapely.geometry import LineString, Point, Polygon

from gisnet import io, rules
from gisnet.errors import ConfigError, CRSError, LayerError
from gisnet.graph import build_sewer_graph, graph_from_gdfs, graph_summary, graph_to_gdfs
from gisnet.graph.snap import cluster_points, component_labels
from gisnet.profile import load_profile
from gisnet.testing import synthetic
from gisnet.town import Town
from gisnet.units import FT_M, US_FT_M

CRS = "EPSG:2263"
FT = US_FT_M / FT_M  # feet in one US survey foot


def mains(*rows: dict) -> gpd.GeoDataFrame:
    """Mains from dicts with ``main_id``, ``coords`` and any canonical column."""
    recs = [{k: v for k, v in r.items() if k != "coords"} for r in rows]
    return gpd.GeoDataFrame(pd.DataFrame(recs),
                            geometry=[LineString(r["coords"]) for r in rows], crs=CRS)


def manholes(**pts: tuple[float, float]) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame({"node_id": list(pts)},
                            geometry=[Point(p) for p in pts.values()], crs=CRS)


def edge(G: nx.MultiDiGraph, key: str) -> tuple[str, str, dict]:
    (hit,) = [(u, v, d) for u, v, k, d in G.edges(keys=True, data=True) if k == key]
    return hit


def of_kind(G: nx.MultiDiGraph, kind: str) -> list:
    return G.graph["report"].of_kind(kind)


# ---------------------------------------------------------------- helpers


def test_component_labels_match_networkx_components() -> None:
    rng = np.random.default_rng(3)
    n = 300
    i = rng.integers(0, n, 250)
    j = rng.integers(0, n, 250)
    lab = component_labels(n, i, j)
    H = nx.Graph()
    H.add_nodes_from(range(n))
    H.add_edges_from(zip(i.tolist(), j.tolist(), strict=True))
    for comp in nx.connected_components(H):
        members = sorted(comp)
        assert set(lab[members].tolist()) == {members[0]}


def test_cluster_points_equals_brute_force_distance_components() -> None:
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, 60, size=(400, 2))
    lab = cluster_points(xy, 1.5)
    d = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1])
    H = nx.Graph()
    H.add_nodes_from(range(len(xy)))
    H.add_edges_from(zip(*np.nonzero(d <= 1.5), strict=True))
    expect = np.empty(len(xy), dtype=int)
    for comp in nx.connected_components(H):
        expect[list(comp)] = min(comp)
    assert (lab == expect).all()


def test_rounding_boundary_is_still_snapped() -> None:
    # 0.049 and 0.051 round to different 0.1 ft cells; 0.002 ft apart they must join
    G = build_sewer_graph({"mains": mains(
        {"main_id": "A", "coords": [(0, 0), (100.049, 0)]},
        {"main_id": "B", "coords": [(100.051, 0), (200, 0)]},
    )}, snap_tolerance_ft=0.1)
    assert G.number_of_nodes() == 3
    assert edge(G, "A")[1] == edge(G, "B")[0]
    assert of_kind(G, "dangling_end") and len(of_kind(G, "dangling_end")) == 2


# ---------------------------------------------------------------- snapping


def test_ends_snap_to_manholes_within_tolerance_and_gap_is_reported() -> None:
    G = build_sewer_graph({
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (99.5, 0)]},   # 0.5 ft short of MH2
            {"main_id": "B", "coords": [(100, 0), (200, 0)]},
        ),
        "manholes": manholes(MH1=(0, 0), MH2=(100, 0), MH3=(200, 0)),
    }, snap_tolerance_ft=1.0)
    assert sorted(G.nodes) == ["MH1", "MH2", "MH3"]
    assert edge(G, "A")[:2] == ("MH1", "MH2")
    assert edge(G, "B")[:2] == ("MH2", "MH3")
    (gap,) = of_kind(G, "gap_snapped")
    assert gap.feature_id == "A"
    assert f"{0.5 * FT:.2f} ft" in gap.message
    assert all(G.nodes[n]["is_manhole"] for n in G.nodes)
    assert of_kind(G, "dangling_end") == []


def test_gap_a_little_over_tolerance_is_not_snapped_but_reported() -> None:
    layers = {
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (98.8, 0)]},   # 1.2 ft short of MH2
            {"main_id": "B", "coords": [(100, 0), (200, 0)]},
        ),
        "manholes": manholes(MH1=(0, 0), MH2=(100, 0), MH3=(200, 0)),
    }
    G = build_sewer_graph(layers, snap_tolerance_ft=1.0)
    assert edge(G, "A")[1].startswith("J")
    (miss,) = of_kind(G, "gap_not_snapped")
    assert miss.feature_id == "A"
    assert "MH2" in miss.message and f"{1.2 * FT:.2f} ft" in miss.message
    assert [f.feature_id for f in of_kind(G, "dangling_end")] == ["A"]
    assert len(of_kind(G, "disconnected_piece")) == 1
    # at 1.5 ft it joins
    G2 = build_sewer_graph(layers, snap_tolerance_ft=1.5)
    assert edge(G2, "A")[1] == "MH2"
    assert of_kind(G2, "gap_not_snapped") == [] and of_kind(G2, "disconnected_piece") == []


def test_pipe_end_mid_span_splits_the_other_pipe() -> None:
    # B ends 0.3 ft off A's interior, 40 ft along A (A is 100 ft long)
    G = build_sewer_graph({"mains": mains(
        {"main_id": "A", "coords": [(0, 0), (100, 0)], "diameter_in": 10.0},
        {"main_id": "B", "coords": [(40, 50), (40, 0.3)], "diameter_in": 8.0},
    )}, snap_tolerance_ft=1.0)
    assert G.number_of_edges() == 3
    _, v1, d1 = edge(G, "A")
    u2, _, d2 = edge(G, "A@2")
    assert v1 == u2 == edge(G, "B")[1]
    assert (d1["part"], d2["part"]) == (1, 2)
    assert d1["main_id"] == d2["main_id"] == "A"
    assert d1["length_ft"] == pytest.approx(40 * FT)
    assert d2["length_ft"] == pytest.approx(60 * FT)
    assert d1["diameter_in"] == d2["diameter_in"] == 10.0
    (t,) = of_kind(G, "t_split")
    assert t.feature_id == "A" and "B" in t.message
    assert G.graph["report"].counts().get("disconnected_piece", 0) == 0


def test_main_drawn_through_a_manhole_is_split_there() -> None:
    # A runs M1 -> M3 straight through M2 (0.4 ft off the line); no pipe ends at M2
    G = build_sewer_graph({
        "mains": mains({"main_id": "A", "coords": [(0, 0), (300, 0)]}),
        "manholes": manholes(M1=(0, 0), M2=(120, 0.4), M3=(300, 0)),
    })
    assert edge(G, "A")[:2] == ("M1", "M2") and edge(G, "A@2")[:2] == ("M2", "M3")
    assert edge(G, "A")[2]["length_ft"] == pytest.approx(120 * FT)
    (t,) = of_kind(G, "t_split")
    assert "passes through manhole M2" in t.message
    assert of_kind(G, "isolated_structure") == []
    far = build_sewer_graph({
        "mains": mains({"main_id": "A", "coords": [(0, 0), (300, 0)]}),
        "manholes": manholes(M1=(0, 0), M2=(120, 3), M3=(300, 0)),
    })
    assert far.number_of_edges() == 1
    assert [f.feature_id for f in of_kind(far, "isolated_structure")] == ["M2"]


def test_split_pieces_follow_flow_when_main_is_reversed() -> None:
    # A drawn west->east but inverts say east->west: upstream piece is the east one
    G = build_sewer_graph({"mains": mains(
        {"main_id": "A", "coords": [(0, 0), (100, 0)], "up_invert_ft": 90.0,
         "down_invert_ft": 100.0},
        {"main_id": "B", "coords": [(40, 50), (40, 0)]},
    )})
    _, v1, d1 = edge(G, "A")
    u2, _, d2 = edge(G, "A@2")
    assert v1 == u2
    assert d1["length_ft"] == pytest.approx(60 * FT)   # east piece first
    assert d1["up_invert_ft"] == pytest.approx(100.0)
    assert d1["down_invert_ft"] == pytest.approx(94.0)  # 100 - 10 * 60/100
    assert d2["down_invert_ft"] == pytest.approx(90.0)
    assert d1["geometry"].coords[0] == (100.0, 0.0)


# ---------------------------------------------------------------- direction


def test_loop_of_three_pipes_is_reported_and_kept() -> None:
    G = build_sewer_graph({
        "mains": mains(
            {"main_id": "P1", "coords": [(0, 0), (100, 0)], "from_node": "M1", "to_node": "M2"},
            {"main_id": "P2", "coords": [(100, 0), (50, 80)], "from_node": "M2",
             "to_node": "M3"},
            {"main_id": "P3", "coords": [(50, 80), (0, 0)], "from_node": "M3", "to_node": "M1"},
            {"main_id": "P4", "coords": [(100, 0), (200, 0)], "from_node": "M2",
             "to_node": "M4"},
        ),
        "manholes": manholes(M1=(0, 0), M2=(100, 0), M3=(50, 80), M4=(200, 0)),
    })
    (cyc,) = of_kind(G, "cycle")
    assert cyc.feature_id == "P1,P2,P3"
    # pieces in node-id order (M1, M2, M3), whatever the string hashing
    assert [list(g.coords) for g in cyc.geometry.geoms] == [
        [(0, 0), (100, 0)], [(100, 0), (50, 80)], [(50, 80), (0, 0)]]
    assert {k for *_, k in G.edges(keys=True)} == {"P1", "P2", "P3", "P4"}
    assert G.has_edge("M3", "M1", "P3")
    assert graph_summary(G)["cycles"] == 1


def test_pipe_drawn_against_inverts_is_reversed_and_reported() -> None:
    G = build_sewer_graph({
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (200, 0)], "up_invert_ft": 95.0,
             "down_invert_ft": 96.0, "slope": 0.005},
        ),
        "manholes": manholes(M1=(0, 0), M2=(200, 0)),
    })
    u, v, d = edge(G, "A")
    assert (u, v) == ("M2", "M1")
    assert d["direction_source"] == "inverts"
    assert d["geometry"].coords[0] == (200.0, 0.0)
    assert d["up_invert_ft"] == 96.0 and d["down_invert_ft"] == 95.0
    assert d["slope"] == pytest.approx(1.0 / (200 * FT))
    (rev,) = of_kind(G, "reversed_pipe")
    assert rev.feature_id == "A" and "inverts" in rev.message
    assert of_kind(G, "adverse_slope") == [] and of_kind(G, "slope_mismatch") == []


def test_node_ids_win_over_inverts_and_the_conflict_is_reported() -> None:
    G = build_sewer_graph({
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (100, 0)], "from_node": "M2", "to_node": "M1",
             "up_invert_ft": 100.0, "down_invert_ft": 99.0},
            {"main_id": "B", "coords": [(100, 0), (200, 0)], "from_node": "M2",
             "to_node": "M3"},
            {"main_id": "C", "coords": [(300, 0), (200, 0)]},
        ),
        "manholes": manholes(M1=(0, 0), M2=(100, 0), M3=(200, 0)),
    })
    u, v, d = edge(G, "A")
    assert (u, v) == ("M2", "M1") and d["direction_source"] == "node_ids"
    assert [f.feature_id for f in of_kind(G, "direction_conflict")] == ["A"]
    assert [f.feature_id for f in of_kind(G, "reversed_pipe")] == ["A"]
    # in flow direction the pipe rises 1 ft over 100 ft
    assert d["slope"] == pytest.approx(-1.0 / (100 * FT))
    assert [f.feature_id for f in of_kind(G, "adverse_slope")] == ["A"]
    assert edge(G, "B")[2]["direction_source"] == "node_ids"
    assert edge(G, "C")[2]["direction_source"] == "digitized"
    assert edge(G, "C")[:2][0].startswith("J")


def test_from_to_ids_naming_other_nodes_are_reported_not_followed() -> None:
    G = build_sewer_graph({
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (100, 0)], "from_node": "X9", "to_node": "X8"},
            # from_node matches (so the ids give the direction), to_node names another node
            {"main_id": "B", "coords": [(200, 0), (100, 0)], "from_node": "M3",
             "to_node": "M1"},
            {"main_id": "C", "coords": [(200, 0), (300, 0)], "from_node": "M3",
             "to_node": "M4"},
        ),
        "manholes": manholes(M1=(0, 0), M2=(100, 0), M3=(200, 0), M4=(300, 0)),
    })
    assert edge(G, "A")[:2] == ("M1", "M2")
    assert edge(G, "A")[2]["direction_source"] == "digitized"
    assert edge(G, "B")[:2] == ("M3", "M2")
    assert edge(G, "B")[2]["direction_source"] == "node_ids"
    bad = {f.feature_id: f.message for f in of_kind(G, "node_id_mismatch")}
    assert sorted(bad) == ["A", "B"]
    assert "M3 -> M2" in bad["B"]


# ---------------------------------------------------------------- attributes and slopes


def test_slope_flat_mismatch_missing_diameter_and_excluded_mains() -> None:
    G = build_sewer_graph({"mains": mains(
        # 0.5 ft over 100 ft = 0.005 ft/ft computed vs 0.010 stored: mismatch
        {"main_id": "M", "coords": [(0, 0), (100, 0)], "up_invert_ft": 100.5,
         "down_invert_ft": 100.0, "slope": 0.010, "diameter_in": 8.0},
        # stored 0.0052 vs computed 0.0050: within tolerance
        {"main_id": "OK", "coords": [(0, 10), (100, 10)], "up_invert_ft": 100.5,
         "down_invert_ft": 100.0, "slope": 0.0052, "diameter_in": 8.0},
        {"main_id": "F", "coords": [(0, 20), (100, 20)], "slope": 0.0, "diameter_in": 8.0},
        {"main_id": "S", "coords": [(0, 30), (100, 30)], "kind": "storm", "diameter_in": 12.0,
         "slope": 0.01},
        {"main_id": "P", "coords": [(0, 40), (100, 40)], "owner": "private", "diameter_in": 6.0,
         "slope": 0.01},
        {"main_id": "I", "coords": [(0, 50), (100, 50)], "status": "abandoned",
         "diameter_in": 8.0, "slope": 0.01},
        {"main_id": "FM", "coords": [(0, 60), (100, 60)], "kind": "force", "diameter_in": 4.0,
         "slope": 0.0},
        {"main_id": "ND", "coords": [(0, 70), (100, 70)], "kind": "sanitary", "slope": 0.01},
    )})
    ids = {k: sorted(f.feature_id for f in of_kind(G, k)) for k in
           ("slope_mismatch", "flat_slope", "excluded_main", "missing_diameter")}
    assert ids == {"slope_mismatch": ["M"], "flat_slope": ["F"],
                   "excluded_main": ["FM", "I", "P", "S"], "missing_diameter": ["ND"]}
    m = edge(G, "M")[2]
    assert m["slope"] == pytest.approx(0.5 / (100 * FT))
    assert m["slope_stored"] == 0.010 and m["eligible"]
    assert not edge(G, "FM")[2]["gravity"] and not edge(G, "FM")[2]["eligible"]
    assert not edge(G, "P")[2]["public"] and not edge(G, "I")[2]["active"]


def _kinds_layer() -> gpd.GeoDataFrame:
    return mains(
        {"main_id": "SAN", "coords": [(0, 0), (100, 0)], "kind": "sanitary"},
        {"main_id": "COM", "coords": [(0, 10), (100, 10)], "kind": "combined"},
        {"main_id": "STO", "coords": [(0, 20), (100, 20)], "kind": "storm"},
        {"main_id": "FOR", "coords": [(0, 30), (100, 30)], "kind": "force"},
        {"main_id": "U1", "coords": [(0, 40), (100, 40)], "kind": None},
        {"main_id": "U2", "coords": [(0, 50), (100, 50)], "kind": "unknown"},
        {"main_id": "PRI", "coords": [(0, 60), (100, 60)], "kind": "sanitary",
         "owner": "private"},
        {"main_id": "OFF", "coords": [(0, 70), (100, 70)], "kind": "combined",
         "status": "inactive"},
    )


def _kinds_town(eligible_kinds: tuple[str, ...]) -> Town:
    """A town whose profile counts ``eligible_kinds``."""
    base = load_profile("poughkeepsie-fourth-ward")
    profile = dataclasses.replace(
        base, connection=dataclasses.replace(base.connection, eligible_kinds=eligible_kinds))
    return Town(name="kinds", crs=CRSObj.from_user_input(CRS), ft_per_unit=FT,
                layers={"mains": _kinds_layer()}, profile=profile)


def _excluded(G: nx.MultiDiGraph) -> dict[str, str]:
    return {f.feature_id: f.message for f in of_kind(G, "excluded_main")}


def test_eligible_is_the_connection_rule_and_unknown_kind_is_reported_once() -> None:
    layer = _kinds_layer()
    G = build_sewer_graph({"mains": layer})
    rule = dict(zip(layer["main_id"], rules.is_eligible_for_connection(layer), strict=True))
    got = {d["main_id"]: d["eligible"] for *_, d in G.edges(data=True)}
    assert got == rule
    assert sorted(k for k, ok in got.items() if ok) == ["COM", "SAN", "U1", "U2"]
    (assumed,) = of_kind(G, "kind_assumed")
    assert assumed.message == rules.unknown_kind_message(2)
    assert assumed.feature_id == "U1,U2"
    assert edge(G, "U1")[2]["kind"] == edge(G, "U2")[2]["kind"] == "unknown"
    assert _excluded(G) == {
        "STO": "main STO (kind storm) is excluded from public-sewer questions",
        "FOR": "main FOR (kind force) is excluded from public-sewer questions",
        "PRI": "main PRI (private) is excluded from public-sewer questions",
        "OFF": "main OFF (status inactive) is excluded from public-sewer questions",
    }


def test_town_profile_eligible_kinds_decide_eligible_and_excluded() -> None:
    G = build_sewer_graph(_kinds_town(("sanitary",)))
    got = {d["main_id"] for *_, d in G.edges(data=True) if d["eligible"]}
    assert got == {"SAN", "U1", "U2"}  # unknown reads as sanitary
    assert _excluded(G)["COM"] == "main COM (kind combined) is excluded from public-sewer questions"
    G = build_sewer_graph(_kinds_town(("combined", "force")))
    got = {d["main_id"] for *_, d in G.edges(data=True) if d["eligible"]}
    assert got == {"COM"}  # a force main is never eligible, whatever the profile says
    ex = _excluded(G)
    assert ex["U1"] == ("main U1 (kind unknown, read as sanitary) is excluded from "
                        "public-sewer questions")
    assert ex["OFF"] == ("main OFF (status inactive) is excluded from public-sewer questions")
    assert ex["FOR"] == "main FOR (kind force) is excluded from public-sewer questions"
    assert len(of_kind(G, "kind_assumed")) == 1


def test_rule_flags_equal_the_rules_row_by_row_on_messy_values() -> None:
    """Flags are decided per distinct value combination; each row still gets
    exactly what :mod:`gisnet.rules` says of it (missing values of every
    flavour, case, blanks, no loader flags)."""
    rng = np.random.default_rng(11)
    n = 400

    def pick(vals: list) -> list:
        return [vals[i] for i in rng.integers(0, len(vals), n)]

    layer = gpd.GeoDataFrame(
        {"main_id": [f"M{i}" for i in range(n)],
         "kind": pick(["sanitary", "Storm", "force", "combined", "unknown", "", None, np.nan]),
         "owner": pick(["city", "private", "PRIVATE", None, np.nan, ""]),
         "status": pick(["active", "inactive", "abandoned", "", None, np.nan, "Active"])},
        geometry=[LineString([(0, 10 * i), (50, 10 * i)]) for i in range(n)], crs=CRS)
    G = build_sewer_graph({"mains": layer})
    got = {d["main_id"]: d for *_, d in G.edges(data=True)}
    ids = layer["main_id"].tolist()
    for name, rule in (("public", rules.is_public(layer)), ("active", rules.is_active(layer)),
                       ("gravity", rules.is_gravity(layer)),
                       ("eligible", rules.is_eligible_for_connection(layer))):
        assert [got[i][name] for i in ids] == rule.tolist(), name
    unknown = rules.kind_is_unknown(layer)
    (assumed,) = of_kind(G, "kind_assumed")
    assert assumed.message == rules.unknown_kind_message(int(unknown.sum()))
    assert {i for i, u in zip(ids, unknown, strict=True) if u} == {
        i for i in ids if got[i]["kind"] == "unknown"}


def test_missing_columns_and_duplicate_ids_in_plain_layers() -> None:
    G = build_sewer_graph({"mains": mains(
        {"main_id": "A", "coords": [(0, 0), (100, 0)]},
        {"main_id": "A", "coords": [(100, 0), (200, 0)]},
    )})
    assert {k for *_, k in G.edges(keys=True)} == {"A", "A#2"}
    (dup,) = of_kind(G, "duplicate_id")
    assert dup.feature_id == "A#2"
    assert edge(G, "A")[2]["diameter_in"] is None


def test_bad_input_raises_gisnet_errors() -> None:
    m = mains({"main_id": "A", "coords": [(0, 0), (1, 0)]})
    with pytest.raises(CRSError):
        build_sewer_graph({"mains": m.set_crs(None, allow_override=True)})
    with pytest.raises(LayerError):
        build_sewer_graph({"parcels": m})
    multi = gpd.GeoDataFrame({"main_id": ["X"]}, geometry=[shapely.MultiLineString(
        [[(0, 0), (1, 0)], [(5, 5), (6, 6)]])], crs=CRS)
    with pytest.raises(LayerError, match="X"):
        build_sewer_graph({"mains": multi})
    with pytest.raises(ConfigError):
        build_sewer_graph({"mains": m}, snap_tolerance_ft=-1)
    with pytest.raises(CRSError):
        build_sewer_graph({"mains": m, "manholes": manholes(A=(0, 0)).to_crs("EPSG:32618")})


# ---------------------------------------------------------------- outlets


def test_plant_point_at_pipe_end_is_outlet_and_other_piece_drains_to_an_assumed_end() -> None:
    """The piece the plant is not on drains at its end nearest the network with the
    plant (M9, 500 ft from M1; its other end is 600 ft from M2), said as assumed."""
    plants = gpd.GeoDataFrame({"plant_id": ["WWTP"]}, geometry=[Point(200, 0)], crs=CRS)
    G = build_sewer_graph({
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (100, 0)]},
            {"main_id": "B", "coords": [(100, 0), (200, 0)]},
            {"main_id": "Z", "coords": [(0, 500), (100, 600)]},
        ),
        "manholes": manholes(M1=(0, 0), M2=(100, 0), M9=(0, 500)),
        "plants": plants,
    })
    assert G.graph["outlets"] == ["M9", "WWTP"]
    assert G.nodes["WWTP"]["kind"] == "plant" and G.nodes["WWTP"]["outlet"]
    assert of_kind(G, "no_outlet") == []
    (assumed,) = of_kind(G, "outlet_assumed")
    assert assumed.feature_id == "M9,M1" and f"{500 * FT:,.1f} ft from node M1" in assumed.message
    assert edge(G, "Z")[1] == "M9" and edge(G, "Z")[2]["direction_source"] == "network"
    (piece,) = of_kind(G, "disconnected_piece")
    assert piece.feature_id == "Z" and piece.severity == "warning"
    (drain,) = of_kind(G, "drainage")
    assert drain.message.startswith("3 of 5 nodes (60.0 %")
    s = graph_summary(G)
    assert (s["pieces"], s["outlets"], s["nodes"], s["edges"]) == (2, 2, 5, 3)


def test_plant_polygon_snaps_to_nearest_node_inside() -> None:
    site = Polygon([(190, -20), (260, -20), (260, 20), (190, 20)])
    plants = gpd.GeoDataFrame({"plant_id": ["P"]}, geometry=[site], crs=CRS)
    G = build_sewer_graph({
        "mains": mains({"main_id": "A", "coords": [(0, 0), (185, 0)]}),
        "manholes": manholes(M1=(0, 0), M2=(185, 0)),
        "plants": plants,
    }, plant_tolerance_ft=10)
    assert G.graph["outlets"] == ["M2"]
    assert G.nodes["M2"]["plant_id"] == "P"
    assert of_kind(G, "no_outlet") == []
    far = build_sewer_graph({
        "mains": mains({"main_id": "A", "coords": [(0, 0), (185, 0)]}),
        "manholes": manholes(M1=(0, 0), M2=(185, 0)),
        "plants": plants,
    })
    # beyond the tolerance the pipe's end is still the outlet, as an assumed one,
    # and the 5 ft gap is a finding to fix
    assert far.graph["outlets"] == ["M2"] and far.nodes["M2"]["plant_id"] == "P"
    assert of_kind(far, "plant_not_connected") == []
    (gap,) = of_kind(far, "plant_gap")
    assert f"ends {5 * FT:,.0f} ft from plant P" in gap.message
    # pipe ends inside the site join the plant, unless a manhole is within tolerance
    inside = build_sewer_graph({
        "mains": mains({"main_id": "A", "coords": [(0, 0), (200, 0)]},
                       {"main_id": "B", "coords": [(200, 50), (230.5, 10)]}),
        "manholes": manholes(M1=(0, 0), M7=(230, 10), M8=(200, 50)),
        "plants": plants,
    })
    assert edge(inside, "A")[:2] == ("M1", "P") and inside.nodes["P"]["kind"] == "plant"
    assert edge(inside, "B")[1] == "M7"
    # B is a piece of its own: it drains at its end nearest the plant's network
    assert inside.graph["outlets"] == ["M7", "P"]
    assert [f.feature_id for f in of_kind(inside, "outlet_assumed")] == ["M7,P"]


def test_outfall_kind_and_named_outlet_nodes() -> None:
    mh = manholes(M1=(0, 0), M2=(100, 0), M3=(0, 300), M4=(100, 300))
    mh["kind"] = ["manhole", "outfall", "manhole", "manhole"]
    layers = {
        "mains": mains({"main_id": "A", "coords": [(0, 0), (100, 0)]},
                       {"main_id": "B", "coords": [(0, 300), (100, 300)]}),
        "manholes": mh,
    }
    G = build_sewer_graph(layers, outlet_nodes=["M4"])
    assert G.graph["outlets"] == ["M2", "M4"]
    assert not G.nodes["M2"]["is_manhole"] and G.nodes["M1"]["is_manhole"]
    assert of_kind(G, "no_outlet") == []
    # two pieces, each with its own outlet: neither is "disconnected"
    assert graph_summary(G)["pieces"] == 2 and of_kind(G, "disconnected_piece") == []
    with pytest.raises(ConfigError, match="NOPE"):
        build_sewer_graph(layers, outlet_nodes=["NOPE"])
    # a manhole no main reaches cannot be an outlet: reported, not fatal
    layers["manholes"] = pd.concat([mh, manholes(M9=(500, 500))], ignore_index=True)
    G2 = build_sewer_graph(layers, outlet_nodes=["M4", "M9"])
    assert G2.graph["outlets"] == ["M2", "M4"]
    assert [f.feature_id for f in of_kind(G2, "outlet_not_connected")] == ["M9"]


# ---------------------------------------------------------------- round trip


def _messy() -> nx.MultiDiGraph:
    plants = gpd.GeoDataFrame({"plant_id": ["W"]}, geometry=[Point(300, 0)], crs=CRS)
    return build_sewer_graph({
        "mains": mains(
            {"main_id": "A", "coords": [(0, 0), (100, 0)], "diameter_in": 8.0,
             "up_invert_ft": 99.0, "down_invert_ft": 100.0, "material": "PVC"},
            {"main_id": "B", "coords": [(100, 0), (300, 0)], "diameter_in": 10.0,
             "slope": 0.004},
            {"main_id": "C", "coords": [(150, 80), (150, 0.2)]},
            {"main_id": "D", "coords": [(100, 0), (100, 60)]},
        ),
        "manholes": manholes(M1=(0, 0), M2=(100, 0), M5=(150, 80)),
        "plants": plants,
    })


def test_graph_round_trips_through_geodataframes() -> None:
    G = _messy()
    nodes, edges = graph_to_gdfs(G)
    assert {"node_id", "kind", "x", "y", "outlet", "is_manhole"} <= set(nodes.columns)
    assert {"main_id", "from_node", "to_node", "direction_source", "edge_key"} <= set(edges.columns)
    assert len(edges) == G.number_of_edges() == 5
    H = graph_from_gdfs(nodes, edges)
    assert nx.utils.graphs_equal(G, H)
    assert H.graph == G.graph
    # and through copies that lose nothing
    H2 = graph_from_gdfs(nodes.copy(), edges.copy())
    assert nx.utils.graphs_equal(G, H2)
    # a changed attribute is noticed (the comparison can fail)
    edges.loc[0, "diameter_in"] = 99.0
    assert not nx.utils.graphs_equal(G, graph_from_gdfs(nodes, edges))


def test_graph_from_layers_is_filled_as_the_public_api_fills_it() -> None:
    """Rebuilt from its layers in bulk: the same nodes, edges, order and attributes as
    networkx's own ``add_nodes_from`` / ``add_edges_from``; a node or an edge key given
    twice is merged as networkx merges it."""
    G = _messy()
    nodes, edges = graph_to_gdfs(G)
    H = graph_from_gdfs(nodes, edges)
    ref = nx.MultiDiGraph(**H.graph)
    ref.add_nodes_from(H.nodes(data=True))
    ref.add_edges_from(H.edges(keys=True, data=True))
    assert nx.utils.graphs_equal(H, ref)
    assert list(H.nodes) == list(ref.nodes)
    assert list(H.edges(keys=True)) == list(ref.edges(keys=True))
    assert [list(H.pred[n]) for n in H] == [list(ref.pred[n]) for n in ref]
    twice_n = pd.concat([nodes, nodes.iloc[[0]].assign(kind="other")], ignore_index=True)
    twice_e = pd.concat([edges, edges.iloc[[0]].assign(diameter_in=99.0)], ignore_index=True)
    D = graph_from_gdfs(twice_n, twice_e)
    first = nodes["node_id"].iloc[0]
    key = edges["edge_key"].iloc[0]
    assert D.nodes[first]["kind"] == "other" and len(D) == len(G)
    u, v = edges["from_node"].iloc[0], edges["to_node"].iloc[0]
    assert D[u][v][key]["diameter_in"] == 99.0 and D.number_of_edges() == len(edges)


def test_graph_layers_survive_a_geopackage(tmp_path: Path) -> None:
    G = _messy()
    nodes, edges = graph_to_gdfs(G)
    nodes.to_file(tmp_path / "g.gpkg", layer="graph_nodes", engine="pyogrio")
    edges.to_file(tmp_path / "g.gpkg", layer="graph_edges", engine="pyogrio")
    n2 = gpd.read_file(tmp_path / "g.gpkg", layer="graph_nodes")
    e2 = gpd.read_file(tmp_path / "g.gpkg", layer="graph_edges")
    H = graph_from_gdfs(n2, e2, report=G.graph["report"], snap_tolerance_ft=1.0)
    # GeoPackage keeps doubles, ints, bools, nulls and geometry exactly
    assert nx.utils.graphs_equal(G, H)


def test_bulk_filled_graph_equals_one_built_with_the_public_api() -> None:
    G = _messy()
    H = nx.MultiDiGraph(**G.graph)
    H.add_nodes_from(G.nodes(data=True))
    H.add_edges_from(G.edges(keys=True, data=True))
    assert nx.utils.graphs_equal(G, H)
    assert {(u, v, k) for u, v, k in G.in_edges(keys=True)} == set(H.edges(keys=True))
    for n in G:
        assert dict(G.pred[n]) == dict(H.pred[n])
        assert G.in_degree(n) == H.in_degree(n) and G.out_degree(n) == H.out_degree(n)
    # the graph stays editable through the public API
    G.remove_edge(*edge(G, "A")[:2], key="A")
    assert "A" not in {k for *_, k in G.edges(keys=True)}
    assert all("A" not in ks for n in G for ks in G.pred[n].values())


# ---------------------------------------------------------------- synthetic and real data


def test_clean_synthetic_town_has_no_findings() -> None:
    layers = synthetic.make_town(600, seed=2, irregular=True)
    G = build_sewer_graph(layers)
    assert G.graph["report"].counts() == {"drainage": 1}
    (drain,) = of_kind(G, "drainage")
    assert f"{G.number_of_nodes():,} of {G.number_of_nodes():,} nodes (100.0 %" in drain.message
    m = layers["mains"]
    assert G.number_of_edges() == len(m)
    assert {d["direction_source"] for *_, d in G.edges(data=True)} == {"node_ids"}
    # every main keeps its from/to manholes
    got = {k: (u, v) for u, v, k in G.edges(keys=True)}
    want = dict(zip(m["main_id"], zip(m["from_node"], m["to_node"], strict=True), strict=True))
    assert got == want
    assert len(G.graph["outlets"]) == 1
    (outlet,) = G.graph["outlets"]
    assert nx.ancestors(G, outlet) | {outlet} == set(G.nodes)


def _read(folder: Path, rel: str, rename: dict[str, str]) -> gpd.GeoDataFrame:
    g = gpd.read_file(folder / rel)
    if g.crs.is_geographic:
        g = g.to_crs(g.estimate_utm_crs())
    return g.rename(columns=rename)


def _brute_pieces(m: gpd.GeoDataFrame, tol_ft: float) -> int:
    """Pieces by brute force: two mains join when an end of one lies within the
    tolerance of the other (pipes merely crossing do not join)."""
    g = np.asarray(m.geometry.values, dtype=object)
    fpu = m.crs.axis_info[0].unit_conversion_factor / FT_M
    d = np.minimum(shapely.distance(shapely.get_point(g, 0)[:, None], g[None, :]),
                   shapely.distance(shapely.get_point(g, -1)[:, None], g[None, :])) * fpu
    H = nx.Graph()
    H.add_nodes_from(range(len(g)))
    H.add_edges_from(zip(*np.nonzero(d <= tol_ft), strict=True))
    return nx.number_connected_components(H)


def test_lancaster_65_pipes_one_piece(real_data: Path) -> None:
    m = _read(real_data, "lancaster_ca/sample_sewer_network_1.shp",
              {"facilityid": "main_id", "diameter": "diameter_in"})
    G = build_sewer_graph({"mains": m})
    assert G.number_of_edges() == 65 == len({d["main_id"] for *_, d in G.edges(data=True)})
    assert nx.number_weakly_connected_components(G) == 1 == _brute_pieces(m, 1.0)
    assert of_kind(G, "disconnected_piece") == []
    # nodes met by exactly one pipe end, counted independently from the endpoints
    ends = np.round(np.concatenate([shapely.get_coordinates(shapely.get_point(m.geometry.values, i))
                                    for i in (0, -1)]), 3)
    _, counts = np.unique(ends, axis=0, return_counts=True)
    assert len(of_kind(G, "dangling_end")) == int((counts == 1).sum())


def test_washington_park_pieces_match_brute_force(real_data: Path) -> None:
    m = _read(real_data, "washington_park_fl/sGravity.geojson",
              {"PRJFACID": "main_id", "DIAMETER": "diameter_in"})
    mh = _read(real_data, "washington_park_fl/sMH.geojson", {"PRJFACID": "node_id"})
    for tol in (1.0, 10.0):
        Gm = build_sewer_graph({"mains": m}, snap_tolerance_ft=tol)
        assert nx.number_weakly_connected_components(Gm) == _brute_pieces(m, tol)
        G = build_sewer_graph({"mains": m, "manholes": mh}, snap_tolerance_ft=tol)
        assert len({d["main_id"] for *_, d in G.edges(data=True)}) == 35
        assert G.number_of_edges() == 35 + len(of_kind(G, "t_split"))
        assert graph_summary(G)["pieces"] == len(of_kind(G, "disconnected_piece")) + 1


@pytest.mark.slow
def test_bennington_builds_and_pieces_match_brute_force(shared_data: Path) -> None:
    m = _read(shared_data, "bennington_vt/BenningtonLinearFeatures.geojson", {})
    m["main_id"] = m["OBJECTID"].astype(str)
    pts = _read(shared_data, "bennington_vt/BenningtonPointFeatures.geojson", {})
    pts["node_id"] = pts["OBJECTID"].astype(str)
    pts = pts.set_geometry(shapely.force_2d(pts.geometry.values))
    G = build_sewer_graph({"mains": m}, snap_tolerance_ft=1.0)
    assert G.number_of_edges() >= len(m) == 1668
    assert nx.number_weakly_connected_components(G) == _brute_pieces(m, 1.0)
    G2 = build_sewer_graph({"mains": m, "manholes": pts}, snap_tolerance_ft=10.0)
    # every main is an edge but those whose two ends joined one node (at 10 ft,
    # short lines between duplicate points): left out, each named once
    left_out = {f.feature_id for f in of_kind(G2, "collapsed_main")}
    kept = {d["main_id"] for *_, d in G2.edges(data=True)}
    assert kept.isdisjoint(left_out) and len(kept) + len(left_out) == 1668
    assert not [e for e in G2.edges if e[0] == e[1]]
    for f in G2.graph["report"]:
        assert f.geometry is None or not f.geometry.is_empty


def test_sample_town_problems_are_all_found_and_nothing_spurious(sample_dir: Path) -> None:
    """Every problem in problems.json is found (its ``expected`` kinds, on its
    ids); every finding of a kind the list names (``expected`` or ``also``)
    belongs to a listed problem; excluded mains are exactly the notes' ones."""
    spec = json.loads((sample_dir / "problems.json").read_text())
    town = io.load_town(sample_dir)
    G = build_sewer_graph(town)
    assert G.graph["snap_tolerance_ft"] == spec["snap_tolerance_ft"]
    findings = list(town.report) + list(G.graph["report"])

    def ids_of(f: object) -> set[str]:
        return set((f.feature_id or "").split(","))

    # the weak component of each main, to place no_outlet nodes
    piece_of_main: dict[str, int] = {}
    piece_of_node: dict[str, int] = {}
    for i, comp in enumerate(nx.weakly_connected_components(G)):
        for n in comp:
            piece_of_node[n] = i
            for _, _, d in G.out_edges(n, data=True):
                piece_of_main[d["main_id"]] = i

    for p in spec["problems"]:
        for kind in p["expected"]:
            hits = [f for f in findings if f.kind == kind and ids_of(f) & set(p["ids"])]
            assert hits, f"{kind} on {p['ids']} not found"
    listed = {k for p in spec["problems"] for k in p["expected"] + p["also"]}
    for f in findings:
        if f.kind not in listed:
            continue
        owners = [p for p in spec["problems"] if f.kind in p["expected"] + p["also"]]
        ok = any(ids_of(f) & set(p["ids"]) for p in owners)
        if not ok and f.kind == "no_outlet":
            ok = any(piece_of_node.get(f.feature_id) == piece_of_main.get(i)
                     for p in owners for i in p["ids"] if i in piece_of_main)
        assert ok, f"spurious {f.kind}: {f.feature_id}: {f.message}"
    notes = spec["notes"]
    excluded = {f.feature_id for f in findings if f.kind == "excluded_main"}
    assert excluded == set(notes["storm_mains"] + notes["private_mains"] + notes["inactive_mains"])
    # split as the README says, and the outfall named in the town file is an outlet
    (tp,) = [p for p in spec["problems"] if p["kind"] == "t_split"]
    ending, split = tp["ids"]
    assert edge(G, split)[1] == edge(G, f"{split}@2")[0] == edge(G, ending)[1]
    assert notes["storm_outfall"] in G.graph["outlets"]
    assert notes["plant"]["plant_id"] in G.graph["outlets"]


# ---------------------------------------------------------------- through the loader and the CLI

TOWNS = Path(__file__).resolve().parent / "towns"


def _town_graph(name: str, **kw: float) -> nx.MultiDiGraph:
    return build_sewer_graph(io.load_town(TOWNS / name), **kw)


def test_lancaster_town_file_one_piece() -> None:
    G = _town_graph("lancaster_ca")
    s = graph_summary(G)
    assert (s["mains"], s["edges"], s["pieces"]) == (65, 65, 1)
    assert all(d["eligible"] for *_, d in G.edges(data=True))
    assert G.graph["ft_per_unit"] == pytest.approx(FT)


def test_washington_park_town_file_tolerances() -> None:
    for tol in (1.0, 10.0):
        G = _town_graph("washington_park_fl", snap_tolerance_ft=tol)
        assert G.graph["snap_tolerance_ft"] == tol
        assert graph_summary(G)["mains"] == 35


@pytest.mark.slow
def test_cli_graph_writes_layers_that_rebuild_the_graph(sample_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from gisnet.cli import main

    assert main(["graph", "--layers", str(sample_dir), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    G = build_sewer_graph(io.load_town(sample_dir))
    s = graph_summary(G)
    assert f"{s['nodes']} nodes, {s['edges']} edges" in out and "t_split 1" in out
    gpkg = tmp_path / "gisnet-results.gpkg"
    nodes = gpd.read_file(gpkg, layer="graph_nodes")
    edges = gpd.read_file(gpkg, layer="graph_edges")
    quality = gpd.read_file(gpkg, layer="quality")
    assert set(nodes["node_id"]) == set(G.nodes)
    assert len(edges) == G.number_of_edges()
    assert len(quality) == len(G.graph["report"]) + len(io.load_town(sample_dir).report)
    H = graph_from_gdfs(nodes, edges)
    assert sorted(H.edges(keys=True)) == sorted(G.edges(keys=True))
    assert H.graph["outlets"] == G.graph["outlets"]
    # the resolved direction is written: the reversed pipe runs FROMMH -> TOMH,
    # against its drawing
    spec = json.loads((sample_dir / "problems.json").read_text())
    (rev,) = [p["ids"][0] for p in spec["problems"] if p["kind"] == "reversed_pipe"]
    src = io.load_town(sample_dir).layers["mains"].set_index("main_id").loc[rev]
    row = edges.set_index("edge_key").loc[rev]
    assert (row["from_node"], row["to_node"], row["direction_source"]) == (
        src["from_node"], src["to_node"], "node_ids")
    assert row.geometry.coords[0] == pytest.approx(src.geometry.coords[-1], abs=1e-6)
    assert main(["graph", "--layers", str(sample_dir), "--out", str(tmp_path), "--json",
                 "--snap-tolerance-ft", "2"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["snap_tolerance_ft"] == 2.0 and js["nodes"] > 0


def test_town_file_plant_tolerance_joins_a_distant_plant() -> None:
    """Bennington's plant point stands 169 ft from the nearest pipe end: the town
    file's plant_tolerance_ft = 200 joins it, the snap tolerance alone does not (the
    clip around the plant, tests/data/bennington_vt_clip)."""
    from gisnet.io import load_town

    town = load_town(TOWNS / "bennington_vt_clip")
    assert town.settings.plant_tolerance_ft == 200
    G = build_sewer_graph(town)
    assert [p for n in G.graph["outlets"] if (p := G.nodes[n].get("plant_id"))] == ["1"]
    (snap,) = of_kind(G, "plant_snapped")
    assert of_kind(G, "plant_gap") == []
    G_tight = build_sewer_graph(town, plant_tolerance_ft=town.settings.snap_tolerance_ft)
    # beyond the tolerance the same end is the outlet, assumed, the gap a finding to fix
    (gap,) = of_kind(G_tight, "plant_gap")
    assert of_kind(G_tight, "plant_snapped") == []
    d = float(re.search(r"([\d.]+) ft away", snap.message).group(1))
    assert f"ends {d:,.0f} ft from plant 1" in gap.message and 150 < d < 200


def test_graph_attributes_share_one_object_per_distinct_text() -> None:
    """The graph holds a main's texts once per distinct value (``kind``, ``owner``,
    ``status``...), not a copy per edge; the values are those of the columns,
    missing ones (None, NaN) kept as they are."""
    import numpy as np

    from gisnet.graph.columns import shared_values
    from gisnet.io import load_town
    from gisnet.townfile import default_layers_dir

    a = np.array(["".join(["sani", "tary"]), "storm", None, "".join(["sanit", "ary"]),
                  float("nan")], dtype=object)
    assert a[0] is not a[3]
    out = shared_values(a)
    assert out[:4] == ["sanitary", "storm", None, "sanitary"] and out[0] is out[3]
    assert isinstance(out[4], float) and np.isnan(out[4])
    u = shared_values(np.array(["junction", "junction"]))
    assert u == ["junction", "junction"] and u[0] is u[1] and type(u[0]) is str

    G = build_sewer_graph(load_town(default_layers_dir()))
    for attr in ("kind", "owner", "status", "direction_source"):
        values = [d[attr] for _, _, d in G.edges(data=True)]
        assert len({id(v) for v in values if v is not None}) == \
            len({v for v in values if v is not None})


# ----------------------------------------------------- the graph's layers from its columns


def _same_layers(G, nodes, edges) -> None:
    from geopandas.testing import assert_geodataframe_equal

    want_nodes, want_edges = graph_to_gdfs(G)
    for got, want in ((nodes, want_nodes), (edges, want_edges)):
        assert list(got.columns) == list(want.columns)
        assert list(got.dtypes) == list(want.dtypes)
        assert_geodataframe_equal(got, want, check_dtype=True)
        assert got.attrs["gisnet_graph"].outlets == want.attrs["gisnet_graph"].outlets


def _walk_order_layers() -> dict[str, gpd.GeoDataFrame]:
    """Parallel pipes between two manholes, an upstream node whose pipes are drawn
    far apart in the layer, a split main and a pipe with no diameter: the edges
    come out of the graph by upstream node, then by downstream node first met."""
    mains = gpd.GeoDataFrame({
        "main_id": ["A1", "X", "A2", "B", "C", "A3", "D"],
        "diameter_in": [8.0, 10.0, 12.0, None, 8.0, 6.0, 15.0],
        "kind": ["sanitary"] * 7,
    }, geometry=[
        LineString([(0, 0), (100, 0)]),
        LineString([(500, 0), (400, 0)]),
        LineString([(0, 0), (50, 50), (100, 0)]),
        LineString([(100, 0), (200, 0)]),
        LineString([(200, 0), (300, 0), (400, 0)]),
        LineString([(0, 0), (0, 100)]),
        LineString([(400, 0), (400, -100)]),
    ], crs="EPSG:2260")
    manholes = gpd.GeoDataFrame({"node_id": ["M0", "M1", "M2", "M3", "M4", "M5", "OUT"]},
                                geometry=[Point(0, 0), Point(100, 0), Point(200, 0),
                                          Point(400, 0), Point(500, 0), Point(0, 100),
                                          Point(400, -100)], crs="EPSG:2260")
    return {"mains": mains, "manholes": manholes}


def test_graph_layers_from_the_columns_are_the_ones_read_back_from_the_graph() -> None:
    from gisnet.graph.build import build_sewer_graph_and_layers

    layers = _walk_order_layers()
    G, nodes, edges = build_sewer_graph_and_layers(layers, outlet_nodes=["OUT"])
    assert G.number_of_edges("M0", "M1") == 2
    _same_layers(G, nodes, edges)
    assert edges["edge_key"].tolist() != list(layers["mains"]["main_id"])  # the graph's order


def _same_values(got, want, name: str) -> None:
    if isinstance(want, np.ndarray) and want.dtype != object:
        assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), name
        assert got.dtype == want.dtype, name
    elif isinstance(want, (np.ndarray, list)):
        assert len(got) == len(want), name
        for a, b in zip(got, want, strict=True):  # the very objects the graph holds
            assert a is b or a == b, (name, a, b)
    else:
        assert got == want, name


def _same_from_table(G, table) -> None:
    from gisnet.capacity import graph_arrays
    from gisnet.tracing import DownstreamIndex

    # the table's rows are the graph's own order
    assert list(zip([table.nodes[i] for i in table.u], [table.nodes[i] for i in table.v],
                    table.keys.tolist(), strict=True)) == list(G.edges(keys=True))
    read, given = DownstreamIndex(G), DownstreamIndex(G, table=table)
    for name, want in vars(read).items():
        if name not in ("G", "edges"):
            _same_values(getattr(given, name), want, name)
    for name, want in vars(read.edges).items():
        _same_values(getattr(given.edges, name), want, "edges." + name)
    net_read, net_given = graph_arrays(G), graph_arrays(G, table)
    for name, want in vars(net_read).items():
        _same_values(getattr(net_given, name), want, "network." + name)


def test_graph_table_gives_the_index_and_network_the_graph_gives() -> None:
    from gisnet.graph.build import build_graph_parts

    built = build_graph_parts(_walk_order_layers(), outlet_nodes=["OUT"])
    assert built.table is not None
    _same_from_table(built.graph, built.table)


def test_graph_table_on_the_sample_and_of_another_graph(sample_dir) -> None:
    from gisnet.capacity import graph_arrays
    from gisnet.errors import ConfigError
    from gisnet.graph.build import build_graph_parts
    from gisnet.tracing import DownstreamIndex

    built = build_graph_parts(io.load_town(sample_dir))
    assert built.table is not None
    _same_from_table(built.graph, built.table)
    other = built.graph.copy()
    with pytest.raises(ConfigError, match="another graph"):
        DownstreamIndex(other, table=built.table)
    with pytest.raises(ConfigError, match="another graph"):
        graph_arrays(other, built.table)


def test_graph_table_from_the_layers_gives_what_the_graph_gives(sample_dir, tmp_path) -> None:
    """The graph rebuilt from its two layers (as ``serve --results`` reads them back)
    comes with its table: the index and network from it are those of a walk of the
    rebuilt graph, for layers in any row order; a layer without a table attribute
    gives no table."""
    import pyogrio

    from gisnet.graph.build import build_graph_parts
    from gisnet.graph.layers import graph_parts_from_gdfs

    for layers, outlets in ((io.load_town(sample_dir), None), (_walk_order_layers(), ["OUT"])):
        built = build_graph_parts(layers, outlet_nodes=outlets)
        nodes, edges = built.nodes, built.edges
        gpkg = tmp_path / "g.gpkg"
        pyogrio.write_dataframe(nodes, gpkg, layer="graph_nodes")
        pyogrio.write_dataframe(edges, gpkg, layer="graph_edges")
        back = (pyogrio.read_dataframe(gpkg, layer="graph_nodes", use_arrow=True),
                pyogrio.read_dataframe(gpkg, layer="graph_edges", use_arrow=True))
        shuffled = (nodes.iloc[::-1], edges.sample(frac=1.0, random_state=3))
        for n, e in ((nodes, edges), back, shuffled):
            G, table = graph_parts_from_gdfs(n, e)
            assert table is not None
            _same_from_table(G, table)
        G, table = graph_parts_from_gdfs(nodes, edges.drop(columns=["slope"]))
        assert table is None and G.number_of_edges() == len(edges)


def test_graph_layers_from_the_columns_on_the_sample(sample_dir) -> None:
    from gisnet.graph.build import build_sewer_graph_and_layers

    town = io.load_town(sample_dir)
    G, nodes, edges = build_sewer_graph_and_layers(town)
    _same_layers(G, nodes, edges)


def test_edge_ends_as_positions_give_what_the_ids_give(sample_dir) -> None:
    """graph_columns hands the edges' ends as positions among the nodes; found from the
    ids instead (columns made elsewhere), the ends and the walking order are the same,
    and repeated node ids still give None."""
    from dataclasses import replace

    from gisnet.graph.build import _build
    from gisnet.graph.table import edge_order, end_positions

    for layers, outlets in ((io.load_town(sample_dir), None), (_walk_order_layers(), ["OUT"])):
        _, c = _build(layers, None, outlets, None)
        assert c.u_pos is not None and c.v_pos is not None
        by_ids = replace(c, u_pos=None, v_pos=None, order=None)
        got, want = end_positions(c), end_positions(by_ids)
        assert got is not None and want is not None
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(edge_order(c), edge_order(by_ids))
        assert [c.node_ids[i] for i in got[0]] == c.u
        twice = replace(c, node_ids=[c.node_ids[0]] * len(c.node_ids), order=None)
        assert end_positions(twice) is None and edge_order(twice) is None


@pytest.mark.parametrize("dtype", ["str", "string", "category", object])
def test_column_values_of_text_give_none_for_every_null(dtype):
    """Text columns as the graph's attribute values: each null (None, NaN, NA) is
    None, other values the same text, whatever dtype holds them."""
    from gisnet.graph.layers import column_values

    values = ["MH-1", None, "", "é", "MH-1", np.nan]
    got = column_values(pd.Series(values, dtype=dtype))
    assert got == ["MH-1", None, "", "é", "MH-1", None]
    assert [type(x) for x in got] == [str, type(None), str, str, str, type(None)]
