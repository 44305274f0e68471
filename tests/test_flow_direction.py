"""Flow direction on the data towns really have: no node ids, no inverts, lines
drawn either way. The directions are checked against the originals (the sample
town's FROMMH/TOMH, the SWMM models' inlet/outlet nodes) and against a
brute-force networkx search, never against gisnet itself.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import geopandas as gpd
import networkx as nx
import numpy as np
import pytest
import shapely
from shapely.geometry import LineString, Point

from gisnet.cli import main
from gisnet.control import analyse_control
from gisnet.graph import build_sewer_graph
from gisnet.io import load_town
from gisnet.testing import synthetic

CRS = "EPSG:2263"
SWMM = Path(__file__).parent / "data" / "swmm"
LOCAL_FT = ("+proj=tmerc +lat_0=0 +lon_0=-75 +k=1 +x_0=0 +y_0=0 +ellps=GRS80 +units=us-ft "
            "+no_defs")


def directions(G: nx.MultiDiGraph) -> dict[str, set[tuple[str, str]]]:
    """main_id -> its directed (u, v) pieces."""
    out: dict[str, set[tuple[str, str]]] = {}
    for u, v, d in G.edges(data=True):
        out.setdefault(d["main_id"], set()).add((u, v))
    return out


def hide(town, *, keep_half_inverts: bool = False):
    """Node ids and inverts removed (structure elevations too), every other main
    redrawn backwards; ``keep_half_inverts``: upstream/downstream inverts kept on
    half the mains (two in four, so on drawn-forward and redrawn ones alike)."""
    m = town.layers["mains"].copy()
    n = len(m)
    back = np.arange(n) % 2 == 1
    g = np.asarray(m.geometry.values, dtype=object).copy()
    g[back] = shapely.reverse(g[back])
    m = m.set_geometry(gpd.GeoSeries(g, crs=m.crs))
    m["from_node"] = None
    m["to_node"] = None
    for c in ("start_invert_ft", "end_invert_ft"):
        if c in m:
            m[c] = np.nan
    drop = np.ones(n, dtype=bool)
    if keep_half_inverts:
        drop = np.arange(n) % 4 >= 2
    m.loc[drop, ["up_invert_ft", "down_invert_ft"]] = np.nan
    town.layers["mains"] = m
    mh = town.layers.get("manholes")
    if mh is not None:
        town.layers["manholes"] = mh.assign(rim_ft=np.nan, invert_ft=np.nan)
    return town


def compare(path: Path, keep_half_inverts: bool) -> tuple[float, list[str], float, dict]:
    """Share of mains (in pieces that hold a real outlet) given the original
    direction, the mains that differ, share of buildings (else parcels) whose
    control manholes are the original ones, and the direction sources used."""
    t0 = load_town(path)
    G0 = build_sewer_graph(t0)
    t1 = hide(load_town(path), keep_half_inverts=keep_half_inverts)
    G1 = build_sewer_graph(t1)
    a, b = directions(G0), directions(G1)
    real = {n for n in G0 if G0.nodes[n]["outlet"]}
    served = set().union(*(c for c in nx.weakly_connected_components(G0) if c & real))
    mids = [k for k, s in a.items() if all(u in served for u, _ in s)]
    wrong = [k for k in mids if a[k] != b.get(k)]
    c0 = analyse_control(t0, G0, paths=False).control_manholes
    c1 = analyse_control(t1, G1, paths=False).control_manholes
    key = "building_id" if c0["building_id"].notna().any() else "parcel_id"

    def per(c):
        return c.groupby(key)["control_manhole_id"].apply(lambda s: tuple(sorted(map(str, s))))

    sa, sb = per(c0), per(c1)
    same = float((sa == sb.reindex(sa.index)).mean())
    sources: dict[str, int] = {}
    for *_, d in G1.edges(data=True):
        sources[d["direction_source"]] = sources.get(d["direction_source"], 0) + 1
    return 1 - len(wrong) / len(mids), wrong, same, sources


@pytest.mark.parametrize("half", [False, True], ids=["hidden", "half_inverts"])
def test_sample_without_ids_or_inverts_flows_as_drawn_by_its_engineer(sample_dir: Path,
                                                                      half: bool) -> None:
    share, wrong, control, sources = compare(sample_dir, half)
    assert share >= 0.98, wrong
    assert control >= 0.95
    # nothing was left to the drawing
    assert set(sources) <= {"network", "invert_match"}
    if half:
        assert sources["invert_match"] > 100


@pytest.fixture(scope="module")
def swmm_towns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("swmmio")
    out = {}
    for name in ("Example1", "model_state_plane", "Pump_Control_Model"):
        dest = tmp_path_factory.mktemp("swmm") / name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["import-swmm", str(SWMM / f"{name}.inp"), str(dest), "--crs", LOCAL_FT,
                         "--profile", "poughkeepsie-fourth-ward", "-q"]) == 0
        out[name] = dest
    return out


@pytest.mark.parametrize("half", [False, True], ids=["hidden", "half_inverts"])
def test_swmm_models_without_ids_or_inverts(swmm_towns: dict[str, Path], half: bool) -> None:
    """Every model comes out exactly, the pump-control model too: its wet well SU1
    (the node PUMP1 draws from, imported as a pump station) sends the pump away
    from it, and the pipe below the pump then flows on to the plant line's outfall
    KRO2005, not back through the pump to the nearer overflow PSO."""
    right = total = 0
    for name, path in swmm_towns.items():
        _, wrong, control, _ = compare(path, half)
        G0 = build_sewer_graph(load_town(path))
        n = len(directions(G0))
        right += n - len(wrong)
        total += n
        assert control >= 0.95, name
        assert wrong == [], name
        if name == "Pump_Control_Model":
            # PUMP1 and KRO1014-KRO1013 lie between the model's two outfalls, PSO the
            # nearer: the network's shape alone would send them back to it
            G1 = build_sewer_graph(hide(load_town(path), keep_half_inverts=half))
            src = {d["main_id"]: d["direction_source"] for *_, d in G1.edges(data=True)}
            assert src["PUMP1"] == "pump_station" and src["KRO1014-KRO1013"] == "network"
            assert G1.has_edge("SU1", "KRO1014", "PUMP1")
            assert G1.has_edge("KRO1014", "KRO1013", "KRO1014-KRO1013")
    # 90 of 90 (88 of 90 before pump stations were read)
    assert right / total == 1.0


# ------------------------------------------------------------------ the clues, one by one


def _mains(*rows: dict) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame([{k: v for k, v in r.items() if k != "coords"} for r in rows],
                            geometry=[LineString(r["coords"]) for r in rows], crs=CRS)


def _mh(**pts: tuple[float, float]) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame({"node_id": list(pts)}, geometry=[Point(p) for p in pts.values()],
                            crs=CRS)


def _edge(G, main_id: str) -> tuple[str, str, dict]:
    (e,) = [(u, v, d) for u, v, d in G.edges(data=True) if d["main_id"] == main_id]
    return e


def test_upstream_downstream_inverts_are_matched_to_the_network_not_the_drawing() -> None:
    """A -> B -> C -> D, the plant at A (so the network's shape says the opposite
    of the inverts). B-C is drawn backwards; its upstream invert (99.0) meets the
    downstream invert of A-B at B and its downstream invert (98.0) the upstream
    invert of C-D at C: it flows B -> C, against both its drawing and the plant."""
    mains = _mains(
        {"main_id": "AB", "coords": [(0, 0), (100, 0)], "up_invert_ft": 100.0,
         "down_invert_ft": 99.0},
        {"main_id": "BC", "coords": [(200, 0), (100, 0)], "up_invert_ft": 99.0,
         "down_invert_ft": 98.0},
        {"main_id": "CD", "coords": [(200, 0), (300, 0)], "up_invert_ft": 98.0,
         "down_invert_ft": 97.0},
    )
    mains.attrs["gisnet_inverts"] = "upstream_downstream"
    G = build_sewer_graph({"mains": mains, "manholes": _mh(A=(0, 0), B=(100, 0), C=(200, 0),
                                                           D=(300, 0))})
    u, v, d = _edge(G, "BC")
    assert (u, v) == ("B", "C") and d["direction_source"] == "invert_match"
    assert (d["up_invert_ft"], d["down_invert_ft"]) == (99.0, 98.0)
    assert {_edge(G, k)[2]["direction_source"] for k in ("AB", "CD")} == {"invert_match"}


def test_structure_inverts_decide_where_the_pipes_have_none() -> None:
    mh = _mh(A=(0, 0), B=(100, 0), P=(200, 0))
    mh["invert_ft"] = [95.0, 96.0, np.nan]
    plants = gpd.GeoDataFrame({"plant_id": ["P"]}, geometry=[Point(200, 0)], crs=CRS)
    G = build_sewer_graph({"mains": _mains({"main_id": "AB", "coords": [(0, 0), (100, 0)]},
                                           {"main_id": "BP", "coords": [(100, 0), (200, 0)]}),
                           "manholes": mh[mh["node_id"] != "P"], "plants": plants})
    u, v, d = _edge(G, "AB")
    assert (u, v) == ("B", "A") and d["direction_source"] == "elevations"
    assert _edge(G, "BP")[2]["direction_source"] == "network"
    # A, lower than B, is where AB ends: it flows away from the plant, and says so
    (away,) = [f for f in G.graph["report"] if f.kind == "away_from_outlet"]
    assert away.feature_id == "AB"


def test_network_shape_equals_a_brute_force_shortest_path_search() -> None:
    """A generated looped town without ids or inverts, drawn at random either
    way: every pipe whose ends lie at different network distances from the
    outlet points from the farther to the nearer, the distances measured with
    networkx's own Dijkstra over the undirected lines."""
    layers = synthetic.make_town(300, seed=5, irregular=True)
    m = layers["mains"].copy()
    rng = np.random.default_rng(7)
    back = rng.random(len(m)) < 0.5
    g = np.asarray(m.geometry.values, dtype=object).copy()
    g[back] = shapely.reverse(g[back])
    m = m.set_geometry(gpd.GeoSeries(g, crs=m.crs)).assign(
        from_node=None, to_node=None, up_invert_ft=np.nan, down_invert_ft=np.nan)
    mh = layers["manholes"].assign(rim_ft=np.nan, invert_ft=np.nan)
    G = build_sewer_graph({**layers, "mains": m, "manholes": mh})
    und = nx.Graph()
    for u, v, d in G.edges(data=True):
        w = d["length_ft"]
        if not und.has_edge(u, v) or und[u][v]["weight"] > w:
            und.add_edge(u, v, weight=w)
    dist = nx.multi_source_dijkstra_path_length(und, set(G.graph["outlets"]))
    checked = 0
    for u, v, d in G.edges(data=True):
        assert d["direction_source"] in ("network", "digitized")
        if abs(dist[u] - dist[v]) > 1e-6:
            assert dist[u] > dist[v], (d["main_id"], dist[u], dist[v])
            checked += 1
    assert checked >= 0.95 * G.number_of_edges()


def test_duplicate_manholes_merge_and_the_pipe_between_them_is_left_out() -> None:
    mains = _mains({"main_id": "A", "coords": [(0, 0), (100, 0)]},
                   {"main_id": "Z", "coords": [(100, 0), (100.3, 0)]},
                   {"main_id": "B", "coords": [(100.3, 0), (200, 0)]})
    G = build_sewer_graph({"mains": mains,
                           "manholes": _mh(M1=(0, 0), M2=(100, 0), M2b=(100.3, 0), M3=(200, 0))})
    assert "M2b" not in G and "Z" not in directions(G)
    assert not [e for e in G.edges if e[0] == e[1]]
    (dup,) = [f for f in G.graph["report"] if f.kind == "duplicate_structure"]
    assert dup.feature_id == "M2,M2b"
    (col,) = [f for f in G.graph["report"] if f.kind == "collapsed_main"]
    assert col.feature_id == "Z" and "M2" in col.message
    assert _edge(G, "A")[1] == _edge(G, "B")[0] == "M2"
    assert not [f for f in G.graph["report"] if f.kind == "isolated_structure"]


def test_plant_joins_the_network_not_the_fragment_beside_it() -> None:
    """A two-pipe fragment ends 20 ft from the plant, the 40-pipe network 60 ft:
    the plant joins the network (more than ten times the nodes, nearly as close)."""
    net = [{"main_id": f"N{i}", "coords": [(-60 - 100 * (i + 1), 0), (-60 - 100 * i, 0)]}
           for i in range(40)]
    frag = [{"main_id": "F1", "coords": [(20, 0), (20, 100)]},
            {"main_id": "F2", "coords": [(20, 100), (20, 200)]}]
    plants = gpd.GeoDataFrame({"plant_id": ["P"]}, geometry=[Point(0, 0)], crs=CRS)
    G = build_sewer_graph({"mains": _mains(*net, *frag), "plants": plants},
                          plant_tolerance_ft=100)
    (snap,) = [f for f in G.graph["report"] if f.kind == "plant_snapped"]
    assert "41-node piece" in snap.message and "3-node fragment lies nearer" in snap.message
    plant_node = next(n for n in G if G.nodes[n]["plant_id"] == "P")
    assert G.nodes[plant_node]["x"] == pytest.approx(-60)
    # the fragment drains at its end nearest the network, said as assumed
    (assumed,) = [f for f in G.graph["report"] if f.kind == "outlet_assumed"]
    assert "3-node piece" in assumed.message
