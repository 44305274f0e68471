"""Direction of flow and inverts read by what their columns mean.

UPELEV/DOWNELEV, US_INV/DS_INV, UP_INVERT/DN_INVERT name the upstream and
downstream inverts; START_INV/END_INV, FROM_INV/TO_INV name the drawn line's
first and last vertex. The town file's ``[layers.mains] inverts`` says which
when the names do not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest
import shapely
from shapely.geometry import LineString, Point

from gisnet.errors import ConfigError
from gisnet.graph import build_sewer_graph
from gisnet.io import load_town
from gisnet.pipeline import analyse
from gisnet.townfile import match_columns

CRS = "EPSG:2260"


def _town(folder: Path, mains: list[dict], *, inverts: str | None = None) -> Path:
    """A three-manhole town A (0,0) -> B (100,0) -> C (200,0); ``mains`` rows carry
    their own coordinates and columns (source names)."""
    folder.mkdir(parents=True, exist_ok=True)
    mh = gpd.GeoDataFrame({"FACILITYID": ["A", "B", "C"]},
                          geometry=[Point(0, 0), Point(100, 0), Point(200, 0)], crs=CRS)
    mh.to_file(folder / "manholes.geojson", driver="GeoJSON")
    rows = [{k: v for k, v in m.items() if k != "coords"} for m in mains]
    g = gpd.GeoDataFrame(rows, geometry=[LineString(m["coords"]) for m in mains], crs=CRS)
    g.to_file(folder / "mains.geojson", driver="GeoJSON")
    extra = f'inverts = "{inverts}"\n' if inverts else ""
    (folder / "gisnet.toml").write_text(
        f'name = "t"\nprofile = "poughkeepsie-fourth-ward"\ncrs = "{CRS}"\n'
        f'[layers.mains]\npath = "mains.geojson"\n{extra}'
        f'[layers.manholes]\npath = "manholes.geojson"\n')
    return folder


def _edge(G, key: str) -> tuple[str, str, dict]:
    (found,) = [(u, v, d) for u, v, k, d in G.edges(keys=True, data=True) if k == key]
    return found


def _kinds(G, kind: str) -> list[str]:
    return [f.feature_id for f in G.graph["report"] if f.kind == kind]


# M2 flows B -> C (FROMMH B, TOMH C) but is drawn from C to B.
M1 = {"FACILITYID": "M1", "FROMMH": "A", "TOMH": "B", "coords": [(0, 0), (100, 0)]}
M2 = {"FACILITYID": "M2", "FROMMH": "B", "TOMH": "C", "coords": [(200, 0), (100, 0)]}


@pytest.mark.parametrize("up, down", [("UPELEV", "DOWNELEV"), ("US_INV", "DS_INV"),
                                      ("UP_INVERT", "DN_INVERT")])
def test_upstream_downstream_columns_stay_with_the_flow(tmp_path: Path, up: str, down: str):
    """The upstream invert of M2 (at B, 99.0 ft) is 99.0 whichever way M2 is drawn:
    no direction conflict, a positive slope."""
    t = _town(tmp_path / "t", [{**M1, up: 100.0, down: 99.5},
                               {**M2, up: 99.0, down: 98.0}])
    G = build_sewer_graph(load_town(t))
    u, v, d = _edge(G, "M2")
    assert (u, v) == ("B", "C")
    assert (d["up_invert_ft"], d["down_invert_ft"]) == (99.0, 98.0)
    assert d["slope"] == pytest.approx(1.0 / 100.0 / (1200 / 3937 / 0.3048))  # ftUS -> ft
    assert _kinds(G, "direction_conflict") == []
    assert _kinds(G, "reversed_pipe") == ["M2"]


@pytest.mark.parametrize("first, last", [("START_INV", "END_INV"), ("FROM_INV", "TO_INV")])
def test_start_end_columns_follow_the_drawing(tmp_path: Path, first: str, last: str):
    """M2 is drawn from C (98.0 ft) to B (99.0 ft): its start value is the downstream
    invert; reversed with the pipe, it agrees with FROMMH/TOMH."""
    t = _town(tmp_path / "t", [{**M1, first: 100.0, last: 99.5},
                               {**M2, first: 98.0, last: 99.0}])
    G = build_sewer_graph(load_town(t))
    u, v, d = _edge(G, "M2")
    assert (u, v) == ("B", "C")
    assert (d["up_invert_ft"], d["down_invert_ft"]) == (99.0, 98.0)
    assert _kinds(G, "direction_conflict") == []


def test_start_end_inverts_give_the_direction_without_node_ids(tmp_path: Path):
    t = _town(tmp_path / "t", [{"FACILITYID": "M2", "START_INV": 98.0, "END_INV": 99.0,
                                "coords": [(200, 0), (100, 0)]}])
    G = build_sewer_graph(load_town(t))
    u, v, d = _edge(G, "M2")
    assert (u, v) == ("B", "C") and d["direction_source"] == "inverts"
    assert (d["up_invert_ft"], d["down_invert_ft"]) == (99.0, 98.0)


def test_town_file_says_start_end_for_upelev(tmp_path: Path):
    """``inverts = "start_end"``: UPELEV is read at the drawn start. M2's values
    (99.0 at its drawn start C, 98.0 at B) then say C -> B against FROMMH/TOMH:
    a direction conflict, and an upstream invert of 98.0 ft (adverse)."""
    t = _town(tmp_path / "t", [{**M1, "UPELEV": 100.0, "DOWNELEV": 99.5},
                               {**M2, "UPELEV": 99.0, "DOWNELEV": 98.0}], inverts="start_end")
    G = build_sewer_graph(load_town(t))
    _, _, d = _edge(G, "M2")
    assert (d["up_invert_ft"], d["down_invert_ft"]) == (98.0, 99.0)
    assert _kinds(G, "direction_conflict") == ["M2"]


def test_town_file_says_upstream_downstream_for_start_inv(tmp_path: Path):
    t = _town(tmp_path / "t", [{**M2, "START_INV": 99.0, "END_INV": 98.0}],
              inverts="upstream_downstream")
    G = build_sewer_graph(load_town(t))
    _, _, d = _edge(G, "M2")
    assert (d["up_invert_ft"], d["down_invert_ft"]) == (99.0, 98.0)
    assert _kinds(G, "direction_conflict") == []


def test_bad_inverts_key_is_one_clear_error(tmp_path: Path):
    t = _town(tmp_path / "t", [M1], inverts="sideways")
    with pytest.raises(ConfigError, match=r"layers\.mains\.inverts.*upstream_downstream"):
        load_town(t)
    t = _town(tmp_path / "u", [M1])
    tf = t / "gisnet.toml"
    tf.write_text(tf.read_text().replace('path = "manholes.geojson"\n',
                                         'path = "manholes.geojson"\ninverts = "start_end"\n'))
    with pytest.raises(ConfigError, match="only the mains"):
        load_town(t)


def test_column_names_map_by_meaning():
    m = match_columns("mains", ["UP_INVERT", "DN_INVERT", "START_INV", "END_INV"])
    assert m["up_invert_ft"] == "UP_INVERT" and m["down_invert_ft"] == "DN_INVERT"
    assert m["start_invert_ft"] == "START_INV" and m["end_invert_ft"] == "END_INV"
    m = match_columns("mains", ["FROM_INV", "TO_INV", "US_INV", "DS_INV"])
    assert (m["start_invert_ft"], m["end_invert_ft"]) == ("FROM_INV", "TO_INV")
    assert (m["up_invert_ft"], m["down_invert_ft"]) == ("US_INV", "DS_INV")


# --------------------------------------------------------------------------- the sample


@pytest.fixture(scope="module")
def reversed_sample(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample town with every main's geometry reversed, ids and inverts kept."""
    t = tmp_path_factory.mktemp("rev") / "t"
    shutil.copytree(sample_dir, t)
    mains = gpd.read_file(t / "mains.shp")
    mains = mains.set_geometry(shapely.reverse(mains.geometry.values))
    mains.to_file(t / "mains.shp")
    return t


def _capacity(town) -> tuple:
    res = analyse(town, only=["capacity"])
    return res, res.capacity.pipes.set_index("edge_key")


def test_reversed_sample_gives_the_same_graph_and_capacity(sample_dir: Path,
                                                           reversed_sample: Path):
    """Every main drawn the other way, FROMMH/TOMH and UPELEV/DOWNELEV kept: the
    same directed graph, the same inverts and slopes, the same capacity (462 pipes
    with a capacity), and no direction conflicts (the issue found 462 and 1)."""
    a, pa = _capacity(load_town(sample_dir))
    b, pb = _capacity(load_town(reversed_sample))
    ea = {(u, v, k): d for u, v, k, d in a.graph.edges(keys=True, data=True)}
    eb = {(u, v, k): d for u, v, k, d in b.graph.edges(keys=True, data=True)}
    assert set(ea) == set(eb)
    for key, d in ea.items():
        for col in ("up_invert_ft", "down_invert_ft", "slope", "length_ft"):
            x, y = d[col], eb[key][col]
            assert (x is None and y is None) or x == pytest.approx(y), (key, col)
        assert shapely.equals_exact(d["geometry"], eb[key]["geometry"], 1e-6), key
    assert _kinds(b.graph, "direction_conflict") == []
    cols = ["capacity_gpd", "flow_gpd", "utilization"]
    cols = [c for c in cols if c in pa.columns]
    pa, pb = pa.sort_index(), pb.sort_index()
    np.testing.assert_allclose(pa[cols].to_numpy(float), pb[cols].to_numpy(float))
    with_capacity = int(pa["capacity_gpd"].notna().sum())
    assert with_capacity == int(pb["capacity_gpd"].notna().sum()) == 462
    problems = json.loads((sample_dir / "problems.json").read_text())
    (adverse,) = [p["ids"][0] for p in problems["problems"] if p["kind"] == "adverse_slope"]
    assert _kinds(b.graph, "adverse_slope") == _kinds(a.graph, "adverse_slope") == [adverse]


def test_reversed_sample_read_at_the_drawn_ends_conflicts(reversed_sample: Path):
    """The same files read with ``inverts = "start_end"`` (the old reading): the
    inverts now contradict FROMMH/TOMH on every main that has both, which is what
    the by-meaning reading avoids."""
    tf = reversed_sample / "gisnet.toml"
    text = tf.read_text()
    try:
        tf.write_text(text.replace('path = "mains.shp"\n',
                                   'path = "mains.shp"\ninverts = "start_end"\n'))
        G = build_sewer_graph(load_town(reversed_sample))
    finally:
        tf.write_text(text)
    (grouped,) = [f for f in G.graph["report"] if f.kind == "direction_conflict"
                  and "node ids say one way, the inverts" in f.message]
    conflicts = grouped.feature_id.split(",")
    assert f"{len(conflicts)} main(s)" in grouped.message
    both = sum(1 for _, _, d in G.edges(data=True) if d["up_invert_ft"] is not None
               and d["down_invert_ft"] is not None and d.get("part", 1) == 1)
    assert len(conflicts) > 400 and len(conflicts) >= both - 2
