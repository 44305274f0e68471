"""Tests of gisnet.maps: encoding, classes, pages written, offline assets, CLI.

Fixtures are built in code: a small town in NY State Plane East (US feet) with
result layers carrying the documented columns. Coordinates are checked against
an independent decoder of the polyline scheme written here and pyproj.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from pyproj import Transformer
from shapely.geometry import LineString, Point, Polygon, box

from gisnet import maps
from gisnet.errors import ConfigError, NotFoundError
from gisnet.maps.encoding import TextCodes, fmt_auto, fmt_number, fmt_text
from gisnet.profile import load_profile
from gisnet.testing import towns
from gisnet.town import Town

CRS = "EPSG:2260"  # NY East, US survey feet
X0, Y0 = 650_000.0, 1_000_000.0


# --------------------------------------------------------------------------- fixtures
def make_town(profile: str = "poughkeepsie-fourth-ward", **mains: dict) -> Town:
    """Raw rows through the loader's canonical mapping (gisnet.testing.towns.make_town).

    ``mains``: main id -> attributes that replace those below (``M2={"owner": "private"}``).
    """
    main_rows = [
        towns.main("M1", [(X0, Y0), (X0 + 200, Y0)], diameter_in=8.0, material="PVC",
                   from_node="MH1", to_node="MH2"),
        towns.main("M2", [(X0 + 200, Y0), (X0 + 400, Y0)], diameter_in=None, material=None,
                   from_node="MH2", to_node="MH3"),
        towns.main("M3", [(X0, Y0 - 50), (X0 + 400, Y0 - 50)], kind="storm", diameter_in=12.0,
                   material="RCP"),
    ]
    return towns.make_town({
        "parcels": [towns.parcel(f"P{i + 1}", (X0 + i * 100, Y0 + 30, X0 + i * 100 + 90, Y0 + 150),
                                 address=a)
                    for i, a in enumerate(["1 Main St", "2 Main St", "3 Main St", "4 Elm St"])],
        "mains": [r | mains.get(r["main_id"], {}) for r in main_rows],
        "manholes": [towns.manhole(f"MH{i + 1}", (X0 + 200 * i, Y0)) for i in range(3)],
        "plants": [towns.plant("WWTP", (X0 + 450, Y0), name="Plant", design_flow_mgd=1.0,
                               avg_flow_mgd=0.85)],
    }, crs=CRS, profile=profile, name="Testville")


def make_results(town: Town) -> dict[str, gpd.GeoDataFrame]:
    parcels = town.layers["parcels"]
    ob = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2", "P3", "P4"], "building_id": [None] * 4,
         "main_id": ["M1", "M1", "M2", "M2"], "distance_ft": [30.0, 30.0, 30.0, 30.0],
         "within_distance": [True] * 4, "abuts_sewered_street": [True] * 4,
         "status": ["required", "connected", "review", "not_required"],
         "deadline_days": [30, None, None, None], "septic_deadline": [None] * 4,
         "measure": ["property_line"] * 4, "section": ["§ 168-22.2G"] * 4,
         "reason": ["within 300 ft"] * 4},
        geometry=parcels.geometry.to_numpy(), crs=CRS)
    evidence = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2"], "main_id": ["M1", "M1"], "distance_ft": [30.0, 30.0]},
        geometry=[LineString([(X0 + 45, Y0 + 30), (X0 + 45, Y0)]),
                  LineString([(X0 + 145, Y0 + 30), (X0 + 145, Y0)])], crs=CRS)
    zone = gpd.GeoDataFrame({"distance_ft": [300.0]},
                            geometry=[town.layers["mains"].geometry.iloc[0].buffer(300)],
                            crs=CRS)
    taps = gpd.GeoDataFrame(
        {"building_id": ["B1", "B2"], "parcel_id": ["P1", "P2"], "user_id": [None, "U1"],
         "main_id": ["M1", "M1"], "tap_distance_ft": [45.0, 145.0],
         "control_manhole_id": ["MH2", "MH2"], "plant_id": ["WWTP", "WWTP"],
         "path_length_ft": [155.0, 55.0]},
        geometry=[Point(X0 + 45, Y0), Point(X0 + 145, Y0)], crs=CRS)
    paths = gpd.GeoDataFrame(
        {"building_id": ["B1", "B2"], "control_manhole_id": ["MH2", "MH2"],
         "path_length_ft": [155.0, 55.0]},
        geometry=[LineString([(X0 + 45, Y0), (X0 + 200, Y0)]),
                  LineString([(X0 + 145, Y0), (X0 + 200, Y0)])], crs=CRS)
    plan = gpd.GeoDataFrame(
        {"user_id": ["U1", "U2"], "name": ["Dye works", "Bakery"],
         "process_flow_gpd": [30_000.0, 2_000.0], "siu": [True, False],
         "siu_reason": [">= 25,000 gpd", None], "control_manhole_id": ["MH2", "MH3"]},
        geometry=[Point(X0 + 145, Y0 + 60), Point(X0 + 345, Y0 + 60)], crs=CRS)
    pipes = gpd.GeoDataFrame(
        {"main_id": ["M1", "M2"], "diameter_in": [8.0, np.nan], "slope": [0.004, np.nan],
         "capacity_gpd": [494_000.0, np.nan], "avg_flow_gpd": [100_000.0, 120_000.0],
         "peak_flow_gpd": [420_000.0, 480_000.0], "utilization": [0.85, np.nan],
         "over_threshold": [True, False], "deficient": [False, False],
         "surcharged": [False, False], "velocity_fps": [2.19, np.nan], "flags": ["", ""]},
        geometry=town.layers["mains"].geometry.iloc[:2].to_numpy(), crs=CRS)
    plants = pd.DataFrame({"plant_id": ["WWTP"], "design_flow_mgd": [1.0],
                           "avg_flow_mgd": [0.85], "ratio": [0.85], "over_threshold": [True],
                           "basis": ["3-month mean"]})
    return {"obligations": ob, "obligation_evidence": evidence, "connection_zone": zone,
            "control_manholes": taps, "control_paths": paths, "sampling_plan": plan,
            "pipes_capacity": pipes, "plants": plants}


def layer_data(page: Path) -> dict[str, dict]:
    """The encoded layers of a written page, by layer key."""
    text = page.read_text(encoding="utf-8")
    cfg = json.loads(re.search(r"var cfg=(\{.*?\});\n", text).group(1))
    out = {}
    for m in re.finditer(r"cfg\.layers\[(\d+)\]\.data=(.*?);\n", text):
        spec = cfg["layers"][int(m.group(1))]
        out[spec["key"]] = {"spec": spec, "data": json.loads(m.group(2))}
    return out


def decode_polyline(text: str, precision: int) -> np.ndarray:
    """Independent decoder of the polyline scheme (as in Google's documentation)."""
    values, result, shift = [], 0, 0
    for ch in text:
        b = ord(ch) - 63
        result |= (b & 0x1F) << shift
        shift += 5
        if b < 0x20:
            values.append(~(result >> 1) if result & 1 else result >> 1)
            result, shift = 0, 0
    xy = np.cumsum(np.array(values, dtype=np.int64).reshape(-1, 2), axis=0)
    return xy / 10.0**precision


def props_of(block: dict, i: int) -> dict:
    """Properties of feature i as the page shows them."""
    p = dict(block["k"])
    for name, fmt, dictionary, values in block["c"]:
        v = values[i]
        if v is None:
            continue
        if dictionary:
            v = dictionary[v]
        p[name] = maps.format_value(v, fmt)
    return p


def column_of(block: dict, name: str) -> list:
    """One property of every feature of a layer, as the page shows it (None where absent)."""
    return [props_of(block, i).get(name) for i in range(block["n"])]


# --------------------------------------------------------------------------- encoding
def test_encode_coords_matches_independent_decoder_and_pyproj():
    pts = np.array([[-73.901234567, 41.6712345], [-73.9, 41.67], [179.999999, -89.5],
                    [-180.0, 0.0]])
    text = maps.encode_coords(pts, 6)
    back = decode_polyline(text, 6)
    np.testing.assert_allclose(back, np.round(pts, 6), atol=1e-9)


def test_encode_layer_coordinates_are_reprojected_and_rounded():
    gdf = gpd.GeoDataFrame({"a": [1]}, geometry=[LineString([(X0, Y0), (X0 + 1000, Y0 + 500)])],
                           crs=CRS)
    text, n = maps.encode_layer(gdf, {}, precision=6)
    block = json.loads(text)
    assert n == 1 and block["g"]["t"] == "line" and block["g"]["c"] == [2]
    got = decode_polyline(block["g"]["e"], 6)
    tr = Transformer.from_crs(CRS, "EPSG:4326", always_xy=True)
    lon, lat = tr.transform([X0, X0 + 1000], [Y0, Y0 + 500])
    np.testing.assert_allclose(got, np.column_stack([lon, lat]), atol=6e-7)
    # 6 decimals: every value is a whole number of micro-degrees
    assert np.allclose(got * 1e6, np.round(got * 1e6))


def test_polygon_rings_drop_closing_point_and_keep_holes():
    outer = [(X0, Y0), (X0 + 100, Y0), (X0 + 100, Y0 + 100), (X0, Y0 + 100)]
    hole = [(X0 + 40, Y0 + 40), (X0 + 60, Y0 + 40), (X0 + 60, Y0 + 60)]
    gdf = gpd.GeoDataFrame(geometry=[Polygon(outer, [hole]), box(X0, Y0 + 200, X0 + 50,
                                                                   Y0 + 250)], crs=CRS)
    block = json.loads(maps.encode_layer(gdf, {}, precision=6)[0])
    g = block["g"]
    assert g["t"] == "polygon" and g["r"] == [2, 1] and g["c"] == [4, 3, 4]
    assert len(decode_polyline(g["e"], 6)) == 11


def test_missing_and_empty_geometries_are_dropped_with_their_rows():
    gdf = gpd.GeoDataFrame({"id": ["a", "b", "c"]},
                           geometry=[Point(X0, Y0), None, Point(X0 + 10, Y0)], crs=CRS)
    block = json.loads(maps.encode_layer(gdf, {"id": ["a", "b", "c"]})[0])
    assert block["n"] == 2
    assert [props_of(block, i)["id"] for i in range(2)] == ["a", "c"]


def test_properties_constant_dictionary_and_unknown():
    gdf = gpd.GeoDataFrame(geometry=[Point(X0 + i, Y0) for i in range(6)], crs=CRS)
    s = pd.Series([8.0, np.nan, 12.0, 8.0, 8.0, 8.0])
    props = {"diameter": fmt_number(s, 0, "in"), "section": ["§ 1"] * 6,
             "kind": ["a", "b", "a", "a", "a", "a"]}
    block = json.loads(maps.encode_layer(gdf, props)[0])
    assert block["k"] == {"section": "§ 1"}
    kind = next(c for c in block["c"] if c[0] == "kind")
    assert kind[2] == ["a", "b"] and kind[3] == [0, 1, 0, 0, 0, 0]
    shown = [props_of(block, i).get("diameter") for i in range(6)]
    assert shown[0] == "8 in" and shown[1] is None and shown[2] == "12 in"
    assert maps.format_value(None, ("n", 0, "in")) == "\u2014"  # gisnet.labels.EMPTY
    assert maps.format_value(12345.678, ("n", 1, "gpd")) == "12,345.7 gpd"
    assert maps.format_value(0.8, ("p", 1)) == "80.0 %"


def test_layer_without_crs_is_an_error():
    gdf = gpd.GeoDataFrame(geometry=[Point(0, 0)])
    with pytest.raises(ConfigError):
        maps.encode_layer(gdf, {})


# --------------------------------------------------------------------------- classes
def test_pipe_classes_from_values_and_profile_thresholds():
    df = pd.DataFrame({"utilization": [0.5, 0.80, 0.81, 0.92, 1.2, np.nan, np.nan],
                       "capacity_gpd": [1.0, 1.0, 1.0, 1.0, 1.0, np.nan, 0.0]})
    got = maps.classify_pipes(df, load_profile("berlin-nh"))
    assert list(got) == ["ok", "ok", "threshold", "deficient", "surcharged", "unknown",
                         "nocapacity"]


def test_pipe_classes_prefer_result_flags():
    df = pd.DataFrame({"utilization": [0.5], "capacity_gpd": [1.0], "over_threshold": [True],
                       "deficient": [False], "surcharged": [False]})
    assert list(maps.classify_pipes(df, load_profile("berlin-nh"))) == ["threshold"]


def test_pipe_class_at_the_threshold_is_not_over_it():
    # 1.12 / 1.4 MGD is 0.8000000000000002 in binary: at the 80 % threshold, not over it
    # (gisnet.rules.exceeds, the judgement capacity's own over_threshold makes)
    u = 1.12 / 1.4
    assert u > 0.80
    df = pd.DataFrame({"utilization": [u, 0.91 * (1 + 1e-12), 1.0 + 1e-12, 0.8001],
                       "capacity_gpd": [1.0] * 4})
    got = maps.classify_pipes(df, load_profile("berlin-nh"))
    assert list(got) == ["ok", "threshold", "deficient", "threshold"]
    from gisnet import rules

    assert maps.utilization_class is rules.utilization_class
    cap = load_profile("berlin-nh").capacity
    expected = maps.utilization_class(df["utilization"], df["capacity_gpd"],
                                      cap.utilization_threshold, cap.deficient, cap.surcharged)
    assert list(got) == list(expected)


# --------------------------------------------------------------------------- pages
@pytest.fixture
def written(tmp_path: Path) -> tuple[Town, list[Path]]:
    town = make_town()
    paths = maps.write_maps(town, make_results(town), tmp_path, self_contained=True)
    return town, paths


def test_every_page_is_written_when_its_inputs_exist(written):
    _, paths = written
    assert [p.name for p in paths] == ["network.html", "obligations.html", "sampling.html",
                                      "capacity.html", "index.html"]
    # each page draws its own layers
    want = {
        "network.html": {"parcels", "mains", "manholes", "plants"},
        "obligations.html": {"connection_zone", "mains", "parcels_required", "parcels_review",
                             "parcels_connected", "parcels_not_required", "evidence"},
        "sampling.html": {"parcels", "mains", "control_paths", "taps", "control_manholes",
                          "siu", "users"},
        "capacity.html": {"parcels", "pipes_capacity", "plants"},
    }
    for page in paths[:4]:
        assert set(layer_data(page)) == want[page.name], page.name
    assert set(layer_data(paths[4])) == set().union(*want.values()) - {"parcels"}


def test_pages_without_inputs_are_not_written(tmp_path):
    town = make_town()
    paths = maps.write_maps(town, {}, tmp_path)
    assert [p.name for p in paths] == ["network.html", "index.html"]
    assert not (tmp_path / "obligations.html").exists()
    # the network page draws the town's own layers, every feature of them
    layers = layer_data(paths[0])
    assert {k: column_of(v["data"], f"{k[:-1]}_id" if k != "manholes" else "node_id")
            for k, v in layers.items()} == {
        "parcels": ["P1", "P2", "P3", "P4"], "mains": ["M1", "M2", "M3"],
        "manholes": ["MH1", "MH2", "MH3"], "plants": ["WWTP"]}


def test_unknown_page_name_is_an_error(tmp_path):
    with pytest.raises(ConfigError):
        maps.write_maps(make_town(), {}, tmp_path, names=["nope"])


def test_self_contained_page_loads_nothing_from_the_network(written):
    _, paths = written
    for page in paths:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"<script[^>]+src=", text), page.name
        assert not re.search(r"<link[^>]+href=", text), page.name
        assert "window.L=" in text or "L.version" in text or "leaflet" in text.lower()
        assert "only the base map needs a network" in text
        assert '"referrerPolicy":"strict-origin-when-cross-origin"' in text


def test_pages_are_self_contained_by_default_and_cdn_on_request(tmp_path):
    town = make_town()
    [page] = maps.write_maps(town, {}, tmp_path / "default", names=["network"])
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", text)
    assert "only the base map needs a network" in text
    [page] = maps.write_maps(town, {}, tmp_path, names=["network"], self_contained=False)
    text = page.read_text(encoding="utf-8")
    assert '<script src="https://cdn.jsdelivr.net/npm/leaflet@1.9.4/dist/leaflet.js">' in text
    assert "leaflet@1.9.4/dist/leaflet.css" in text
    assert "only the base map needs a network" not in text


def test_title_names_town_and_profile(written):
    _, paths = written
    text = paths[0].read_text(encoding="utf-8")
    cfg = json.loads(re.search(r"var cfg=(\{.*?\});\n", text).group(1))
    assert "Testville" in cfg["subtitle"]
    assert "Poughkeepsie" in cfg["subtitle"]
    assert cfg["legend"]


def test_network_unknown_diameter_shown_as_unknown_not_zero(written):
    _, paths = written
    mains = layer_data(paths[0])["mains"]
    block = mains["data"]
    ids = [props_of(block, i)["main_id"] for i in range(block["n"])]
    m2 = props_of(block, ids.index("M2"))
    assert "diameter" not in m2  # absent -> the page prints "unknown"
    assert m2["_u"] == 1  # drawn dashed
    assert props_of(block, ids.index("M1"))["diameter"] == "8 in"
    assert props_of(block, ids.index("M3"))["_c"] == "storm"


def test_private_or_inactive_mains_are_drawn_excluded(tmp_path):
    # the same rules as every analysis (gisnet.rules.is_public / is_active, applied by
    # the loader): an unknown status is in service; a private or abandoned main is not
    for changes, excluded in (({"M1": {"status": None}, "M2": {"owner": "private"},
                                "M3": {"status": None}}, "M2"),
                              ({"M1": {"status": "abandoned"}}, "M1")):
        town = make_town(**changes)
        [page] = maps.write_maps(town, {}, tmp_path / excluded, names=["network"])
        block = layer_data(page)["mains"]["data"]
        got = dict(zip(column_of(block, "main_id"), column_of(block, "_c"), strict=True))
        want = {"M1": "sanitary", "M2": "sanitary", "M3": "storm"} | {excluded: "excluded"}
        assert got == want, changes


def test_obligation_layers_by_status_cite_the_section(written):
    _, paths = written
    layers = layer_data(paths[1])
    assert {k: column_of(layers[f"parcels_{k}"]["data"], "parcel_id")
            for k in ("required", "review", "connected", "not_required")} == {
        "required": ["P1"], "review": ["P3"], "connected": ["P2"], "not_required": ["P4"]}
    req = props_of(layers["parcels_required"]["data"], 0)
    assert req["section"] == "§ 168-22.2G" and req["distance_ft"] == "30.0 ft"
    assert req["deadline_days"] == "30 days"
    fields = [f[1] for f in layers["parcels_required"]["spec"]["fields"]]
    assert "section" in fields and "distance_ft" in fields
    # evidence only for parcels that need attention (required / review)
    assert column_of(layers["evidence"]["data"], "parcel_id") == ["P1"]
    assert layers["connection_zone"]["spec"]["constants"]["section"] == "§ 168-22.2G"


def test_sampling_sets_sius_apart_and_counts_taps_per_control_manhole(written):
    _, paths = written
    layers = layer_data(paths[2])
    assert column_of(layers["siu"]["data"], "user_id") == ["U1"]
    assert column_of(layers["users"]["data"], "user_id") == ["U2"]  # not an SIU
    cm = layers["control_manholes"]["data"]
    assert cm["n"] == 1 and props_of(cm, 0)["node_id"] == "MH2"
    assert props_of(cm, 0)["taps"] == 2
    assert layers["control_manholes"]["spec"]["constants"]["section"] == "§ 168-22.5J"
    taps = layers["taps"]["data"]
    assert column_of(taps, "building_id") == ["B1", "B2"]
    assert column_of(taps, "address") == ["1 Main St", "2 Main St"]  # from the parcels


def test_tap_takes_the_address_of_the_first_parcel_of_its_id_and_none_without_one(tmp_path):
    """A tap's address is its parcel's (the first parcel of a repeated id); a tap without
    a parcel id has none, even when a parcel without an id has an address (pandas' map
    would match the two missing ids)."""
    town = make_town()
    parcels = town.layers["parcels"]
    parcels["parcel_id"] = pd.Series(["P1", "P2", "P2", None], dtype=parcels["parcel_id"].dtype)
    results = make_results(town)
    taps = results["control_manholes"]
    results["control_manholes"] = gpd.GeoDataFrame(
        pd.concat([taps, taps], ignore_index=True).assign(
            building_id=["B1", "B2", "B3", "B4"], parcel_id=["P1", "P2", None, "P9"]),
        geometry="geometry", crs=CRS)
    [page] = maps.write_maps(town, results, tmp_path, names=["sampling"])
    taps = layer_data(page)["taps"]["data"]
    assert column_of(taps, "building_id") == ["B1", "B2", "B3", "B4"]
    assert column_of(taps, "address") == ["1 Main St", "2 Main St", None, None]


def test_capacity_classes_and_plant_panel(written):
    _, paths = written
    layers = layer_data(paths[3])
    pipes = layers["pipes_capacity"]["data"]
    by_id = {props_of(pipes, i)["main_id"]: props_of(pipes, i) for i in range(2)}
    assert by_id["M1"]["_c"] == "threshold" and by_id["M1"]["utilization"] == "85.0 %"
    assert by_id["M2"]["_c"] == "unknown" and "utilization" not in by_id["M2"]
    assert "diameter_in" not in by_id["M2"]
    text = paths[3].read_text(encoding="utf-8")
    assert "Treatment plants" in text and "85.0 %" in text


def test_index_has_every_layer_and_links(written):
    _, paths = written
    layers = layer_data(paths[4])
    for key in ("mains", "pipes_capacity", "parcels_required", "taps", "siu", "plants"):
        assert key in layers
    assert "parcels" not in layers  # status layers already draw every parcel
    text = paths[4].read_text(encoding="utf-8")
    for name in ("network", "obligations", "sampling", "capacity"):
        assert f"{name}.html" in text


def test_results_without_geometry_join_town_geometry(tmp_path):
    town = make_town()
    res = make_results(town)
    [drawn] = maps.write_maps(town, res, tmp_path / "drawn", names=["capacity"])
    res["pipes_capacity"] = pd.DataFrame(res["pipes_capacity"].drop(columns="geometry"))
    [page] = maps.write_maps(town, res, tmp_path, names=["capacity"])
    block = layer_data(page)["pipes_capacity"]["data"]
    assert column_of(block, "main_id") == ["M1", "M2"]
    # the mains' own lines, as when the result carries them
    assert block["g"] == layer_data(drawn)["pipes_capacity"]["data"]["g"]


def test_whatif_map_before_and_after(tmp_path):
    town = make_town("berlin-nh")
    pipes = gpd.GeoDataFrame(
        {"main_id": ["M1", "M2"], "capacity_gpd": [494_000.0, 600_000.0],
         "utilization_before": [0.70, 0.50], "utilization_after": [0.86, 0.60],
         "crosses_threshold": [True, False]},
        geometry=town.layers["mains"].geometry.iloc[:2].to_numpy(), crs=CRS)
    res = {"pipes": pipes, "flow_gpd": 12_000.0,
           "connection": {"x": X0 + 45, "y": Y0, "parcel_id": "P1", "main_id": "M1"},
           "control_manhole": "MH2",
           "plants": pd.DataFrame({"plant_id": ["WWTP"], "ratio_before": [0.79],
                                   "ratio_after": [0.81]}),
           "crossings": ["M1"],
           "approvals": [{"authority": "NHDES", "section": "sec. 16-61", "text": "> 5,000 gpd"}]}
    page = maps.whatif_map(town, res, tmp_path / "whatif.html", self_contained=True)
    layers = layer_data(page)
    before = {props_of(layers["path_before"]["data"], i)["main_id"]:
              props_of(layers["path_before"]["data"], i)["_c"] for i in range(2)}
    after = {props_of(layers["path_after"]["data"], i)["main_id"]:
             props_of(layers["path_after"]["data"], i)["_c"] for i in range(2)}
    assert before == {"M1": "ok", "M2": "ok"} and after == {"M1": "threshold", "M2": "ok"}
    assert props_of(layers["proposed"]["data"], 0)["flow"] == "12,000 gpd"
    text = page.read_text(encoding="utf-8")
    assert "sec. 16-61" in text and "81.0 %" in text


def test_page_write_is_atomic_and_readable(written):
    _, paths = written
    folder = paths[0].parent
    assert not list(folder.glob(".*.tmp"))
    assert paths[0].stat().st_mode & 0o044


# --------------------------------------------------------------------------- CLI
def test_cli_map_reads_results_and_writes_pages(tmp_path, monkeypatch):
    from gisnet.cli import main
    from gisnet.output import write_results

    town = make_town()
    write_results(tmp_path, make_results(town))
    import gisnet.cli.map as cli_map

    monkeypatch.setattr(cli_map, "load_town", lambda args: town)
    assert main(["map", "capacity", "--sample", "--out", str(tmp_path), "-q",
                 "--self-contained"]) == 0
    page = tmp_path / "capacity.html"
    assert page.exists() and not (tmp_path / "network.html").exists()
    pipes = layer_data(page)["pipes_capacity"]["data"]
    assert column_of(pipes, "main_id") == ["M1", "M2"]
    assert column_of(pipes, "_c") == ["threshold", "unknown"]
    assert main(["map", "all", "--sample", "--out", str(tmp_path), "-q"]) == 0
    assert (tmp_path / "index.html").exists() and (tmp_path / "sampling.html").exists()
    assert "<script src=" not in (tmp_path / "index.html").read_text(encoding="utf-8")
    assert main(["map", "network", "--sample", "--out", str(tmp_path), "-q", "--cdn"]) == 0
    assert "<script src=" in (tmp_path / "network.html").read_text(encoding="utf-8")
    sampling = layer_data(tmp_path / "sampling.html")
    assert column_of(sampling["siu"]["data"], "user_id") == ["U1"]
    assert column_of(sampling["taps"]["data"], "building_id") == ["B1", "B2"]


def test_cli_map_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(NotFoundError):
        maps.read_results(tmp_path)
    from gisnet.cli import main

    assert main(["map", "network", "--sample", "--out", str(tmp_path), "-q"]) == 2


def test_pages_are_deterministic(tmp_path):
    town = make_town()
    a = maps.write_maps(town, make_results(town), tmp_path / "a", self_contained=True)
    b = maps.write_maps(town, make_results(town), tmp_path / "b", self_contained=True)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


@pytest.mark.slow
def test_cli_map_from_gisnet_run_on_the_sample(sample_dir, tmp_path):
    from gisnet.cli import main

    assert main(["run", "--layers", str(sample_dir), "--out", str(tmp_path), "-q"]) == 0
    first = {p.name: layer_data(p) for p in tmp_path.glob("*.html")}
    assert set(first) == {"network.html", "obligations.html", "sampling.html",
                          "capacity.html", "index.html"}
    for p in tmp_path.glob("*.html"):
        p.unlink()
    assert main(["map", "all", "--layers", str(sample_dir), "--out", str(tmp_path), "-q",
                 "--self-contained"]) == 0
    again = {p.name: layer_data(p) for p in tmp_path.glob("*.html")}
    assert set(again) == set(first)
    for name, layers in first.items():  # same features whether from memory or the GeoPackage
        assert {k: v["data"]["n"] for k, v in layers.items()} == \
            {k: v["data"]["n"] for k, v in again[name].items()}, name
        for key, v in layers.items():  # the same features: properties and geometry
            b = again[name][key]["data"]
            assert [props_of(v["data"], i) for i in range(v["data"]["n"])] == \
                [props_of(b, i) for i in range(b["n"])], (name, key)
            assert v["data"]["g"] == b["g"], (name, key)


def test_boolean_with_nulls_is_shown_the_same_from_the_results_file(tmp_path):
    from gisnet.output import write_results

    town = make_town()
    res = make_results(town)
    res["obligations"]["abuts_sewered_street"] = pd.array([True, None, False, True],
                                                          dtype="boolean")
    res["obligations"]["status"] = "required"
    write_results(tmp_path, res)
    [mem] = maps.write_maps(town, res, tmp_path / "mem", names=["obligations"])
    [disk] = maps.write_maps(town, maps.read_results(tmp_path), tmp_path / "disk",
                             names=["obligations"])
    shown = column_of(layer_data(mem)["parcels_required"]["data"], "abuts_sewered_street")
    assert shown == ["yes", None, "no", "yes"]
    again = column_of(layer_data(disk)["parcels_required"]["data"], "abuts_sewered_street")
    assert again == shown


def test_dissolved_paths_draw_the_lines_of_the_union() -> None:
    """The control paths drawn from their distinct segments cover exactly the lines of
    the union of every path (the old drawing), each stretch once."""
    import shapely

    from gisnet.maps.sampling import dissolved_paths

    pipe = [(0, 0), (10, 0), (20, 0), (20, 10)]
    paths = np.array([
        shapely.LineString([(3, 0), (10, 0), (20, 0), (20, 10)]),   # tap part way along
        shapely.LineString([(7, 0), (10, 0), (20, 0), (20, 10)]),   # another on the same pipe
        shapely.LineString([(10, 0), (20, 0)]),                     # a shared stretch
        shapely.LineString([(0, 0), (10, 0)]),
        shapely.LineString([(30, 5), (20, 5)]),                     # crosses nothing
        None,
    ], dtype=object)
    got = dissolved_paths(paths)
    want = shapely.line_merge(shapely.union_all(paths[:-1]))
    assert got.length == pytest.approx(want.length)
    assert got.length == pytest.approx(shapely.LineString(pipe).length + 10)
    assert shapely.symmetric_difference(got, want).length == pytest.approx(0, abs=1e-9)
    assert dissolved_paths(np.array([None], dtype=object)).is_empty


def test_a_text_column_becomes_codes_by_arrow_as_python_would_read_it():
    """``fmt_text`` (and ``fmt_auto`` of a text column) gives the column as
    :class:`TextCodes` made by Arrow, for pandas' Arrow text and for objects alike: the
    codes, distinct texts and values of the Python path (``pd.factorize`` of the values
    with every blank text, empty or white space as Python's ``isspace`` says, made
    None)."""
    texts = ["A1", "", " ", "\u3000", "\x1c", "\x85", "\xa0x", "İ", "ß", "a\x00b", "A1 ", "x ",
             None, "\t\n", "ünï", "\u200b", "\U0001f6bd", "\u2029"]
    rng = np.random.default_rng(7)
    values = [texts[i] for i in rng.integers(0, len(texts), 600)] + [np.nan]
    ref = [None if not isinstance(v, str) or not v or v.isspace() else v for v in values]
    made = TextCodes.of(ref)
    for s in (pd.Series(values, dtype="str"), pd.Series(values, dtype=object)):
        for got in (fmt_text(s), fmt_auto("owner", s)):
            assert isinstance(got, TextCodes)
            assert list(got) == ref and len(got) == len(ref)
            assert got.codes.tolist() == made.codes.tolist()
            assert got.texts().tolist() == made.texts().tolist() == list(dict.fromkeys(
                v for v in ref if v is not None))
            assert got[5] == ref[5] and got[10:20] == ref[10:20]
    # the blanks Python sees: the RE2 class and str.isspace agree on every character
    odd = "".join(chr(c) for c in range(0x3100) if chr(c).isspace())
    assert list(fmt_text(pd.Series([odd, odd + "x", "\u200b"], dtype="str"))) == \
        [None, odd + "x", "\u200b"]
