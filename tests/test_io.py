"""Reading layers into the canonical model (gisnet.io) and writing results."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import tomllib
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely
from geopandas.testing import assert_geodataframe_equal
from shapely.geometry import LineString, MultiLineString, Polygon

import gisnet.output.writing
from gisnet import rules, schema
from gisnet.cli import main
from gisnet.errors import ConfigError, CRSError, LayerError, SchemaError
from gisnet.io import load_town, read_layer, unique_ids
from gisnet.output import write_results
from gisnet.profile import Profile
from gisnet.town import Town

NY_EAST = "EPSG:2260"  # NY State Plane East, US survey feet


@pytest.fixture(autouse=True)
def _detach_cli_log_handlers():
    """gisnet.cli.main attaches a stderr handler; drop it so later tests do not
    log into a closed capture stream."""
    yield
    log = logging.getLogger("gisnet")
    log.handlers = [h for h in log.handlers if isinstance(h, logging.NullHandler)]
    log.setLevel(logging.NOTSET)

# --------------------------------------------------------------------------- fixtures


def _mains() -> gpd.GeoDataFrame:
    lines = [
        LineString([(0, 0), (100, 0)]),
        LineString([(100, 0), (200, 0)]),
        LineString([(200, 0), (300, 0)]),
        LineString([(300, 0), (400, 0)]),
        LineString([(400, 0), (500, 0)]),
        MultiLineString([[(500, 0), (600, 0)], [(700, 0), (800, 0)]]),  # two apart
        MultiLineString([[(0, 50), (50, 50)], [(50, 50), (90, 50)]]),  # joins end to end
        LineString([(0, 100), (100, 100)]),
    ]
    return gpd.GeoDataFrame(
        {
            "FACILITYID": ["M1", "M2", "M3", "M4", "M5", "M6", "M7", "M1"],
            "DIAMETER": ["8", '10"', "200mm", "UNK", "-4", "12 in", "", "15"],
            "SLOPE": [0.4, 1.0, 0.5, None, 2.0, 0.3, 0.3, 0.22],
            "WATERTYPE": ["Sanitary Line", "SS", "Storm", "FM", "combined", "weird", None,
                          "sanitary"],
            "OWNEDBY": ["City", "Private", None, "city", "city", "city", "city", "city"],
            "ACTIVEFLAG": ["Active", "Abandoned", "Active", None, "0", "1", "1", "1"],
            "MATERIAL": ["PVC"] * 8,
            "NOTE": ["a", "b", "c", "d", "e", "f", "g", "h"],
        },
        geometry=lines,
        crs=NY_EAST,
    )


def _parcels() -> gpd.GeoDataFrame:
    sq = [Polygon([(x, 10), (x + 50, 10), (x + 50, 60), (x, 60)]) for x in (0, 60, 120)]
    bowtie = Polygon([(0, 200), (2, 202), (2, 200), (0, 202), (0, 200)])  # invalid, area 2
    return gpd.GeoDataFrame(
        {"PARCEL_ID": ["P1", "P2", "P3", "P4", "P5"], "UNITS": [1, 2, 3, 1, 1],
         "SEPTIC": ["Y", "N", "y", "maybe", None]},
        geometry=[*sq, bowtie, None],
        crs=NY_EAST,
    )


TOWN_TOML = """
name = "Fixture"
profile = "poughkeepsie-fourth-ward"
[units]
slope = "percent"
[layers.mains]
path = "mains.shp"
[layers.mains.values.kind]
"Sanitary Line" = "sanitary"
[layers.parcels]
path = "parcels.gpkg"
layer = "parcels"
"""


@pytest.fixture()
def town_dir(tmp_path: Path) -> Path:
    d = tmp_path / "town"
    d.mkdir()
    _mains().to_file(d / "mains.shp", engine="pyogrio")
    _parcels().to_file(d / "parcels.gpkg", layer="parcels", engine="pyogrio")
    (d / "gisnet.toml").write_text(TOWN_TOML, encoding="utf-8")
    return d


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _validate(capsys, layers: Path, *extra: str) -> tuple[int, str, str]:
    rc = main(["validate", "--layers", str(layers), *extra])
    out, err = capsys.readouterr()
    return rc, out, err


# --------------------------------------------------------------------------- canonical layers


def test_every_canonical_column_and_range_index(town_dir):
    town = load_town(town_dir)
    for role in ("mains", "parcels"):
        g = town.layers[role]
        assert list(g.columns[: len(schema.COLUMNS[role])]) == schema.column_names(role)
        assert isinstance(g.index, pd.RangeIndex) and g.index.start == 0
        assert g[schema.ID_COLUMN[role]].is_unique
        assert g.crs == town.crs
    assert "NOTE" in town.layers["mains"].columns  # unmapped source columns are kept
    assert town.crs.to_epsg() == 2260  # first projected layer (mains)
    assert town.ft_per_unit == pytest.approx(1200 / 3937 / 0.3048)
    assert town.report.of_kind("working_crs")


def test_diameter_text_parsed_where_unambiguous(town_dir):
    town = load_town(town_dir)
    m = town.layers["mains"].set_index("main_id")
    assert m.loc["M1", "diameter_in"] == 8.0
    assert m.loc["M2", "diameter_in"] == 10.0
    assert m.loc["M3", "diameter_in"] == pytest.approx(200 / 25.4)  # 7.874 in
    assert math.isnan(m.loc["M4", "diameter_in"])  # "UNK"
    assert math.isnan(m.loc["M5", "diameter_in"])  # negative
    assert m.loc["M6:1", "diameter_in"] == 12.0
    assert math.isnan(m.loc["M7", "diameter_in"])  # empty string: just missing
    bad = town.report.of_kind("non_numeric")
    assert len(bad) == 1 and bad[0].feature_id == "M4" and "'UNK'" in bad[0].message
    neg = town.report.of_kind("negative_value")
    assert len(neg) == 1 and neg[0].feature_id == "M5" and neg[0].severity == "warning"


def test_slope_percent_converted_to_ft_per_ft(town_dir):
    m = load_town(town_dir).layers["mains"].set_index("main_id")
    assert m.loc["M1", "slope"] == pytest.approx(0.004)
    assert m.loc["M3", "slope"] == pytest.approx(0.005)


def test_diameter_mm_configured(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    g = gpd.GeoDataFrame({"ID": ["A", "B"], "DIA": [203.2, 600.0]},
                         geometry=[LineString([(0, 0), (1, 0)]), LineString([(1, 0), (2, 0)])],
                         crs=NY_EAST)
    g.to_file(d / "m.gpkg", engine="pyogrio")
    (d / "gisnet.toml").write_text('profile = "berlin-nh"\n[units]\ndiameter = "mm"\n'
                                   '[layers.mains]\npath = "m.gpkg"\n', encoding="utf-8")
    m = load_town(d).layers["mains"]
    assert m["diameter_in"].tolist() == pytest.approx([8.0, 600 / 25.4])


def test_values_normalised_and_public_active_derived(town_dir):
    m = load_town(town_dir).layers["mains"].set_index("main_id")
    assert m.loc["M1", "kind"] == "sanitary"  # town-file value map
    assert m.loc["M2", "kind"] == "sanitary"  # alias SS
    assert m.loc["M3", "kind"] == "storm"
    assert m.loc["M4", "kind"] == "force"
    assert m.loc["M5", "kind"] == "combined"
    assert m.loc["M6:1", "kind"] == "unknown"  # 'weird'
    assert m.loc["M7", "kind"] == "unknown"  # null
    assert set(m["kind"]) <= {"sanitary", "storm", "combined", "force", "unknown"}
    assert m.loc["M2", "owner"] == "private" and not m.loc["M2", "public"]
    assert m.loc["M3", "public"]  # unknown owner counts as public
    assert m.loc["M2", "status"] == "abandoned" and not m.loc["M2", "active"]
    assert m.loc["M4", "active"]  # null status counts as active
    assert m.loc["M5", "status"] == "inactive" and not m.loc["M5", "active"]
    assert m["public"].dtype == bool and m["active"].dtype == bool


def test_duplicate_ids_kept_and_suffixed(town_dir):
    town = load_town(town_dir)
    m = town.layers["mains"]
    assert m["main_id"].tolist().count("M1") == 1 and "M1#2" in set(m["main_id"])
    # the second M1 is the one drawn at y=100
    assert m.set_index("main_id").loc["M1#2", "geometry"].coords[0] == pytest.approx((0, 100))
    dup = town.report.of_kind("duplicate_id")
    assert len(dup) == 1 and dup[0].feature_id == "M1"


def test_multipart_lines_exploded_or_merged(town_dir):
    town = load_town(town_dir)
    m = town.layers["mains"].set_index("main_id")
    assert m.loc["M6:1", "geometry"].equals(LineString([(500, 0), (600, 0)]))
    assert m.loc["M6:2", "geometry"].equals(LineString([(700, 0), (800, 0)]))
    assert m.loc["M6:2", "diameter_in"] == 12.0  # attributes copied to each part
    # contiguous parts become one line with its own id
    assert m.loc["M7", "geometry"].equals(LineString([(0, 50), (50, 50), (90, 50)]))
    assert (shapely.get_type_id(town.layers["mains"].geometry.values) == 1).all()
    note = town.report.of_kind("multipart_exploded")
    assert len(note) == 1 and note[0].feature_id == "M6"
    assert len(m) == 9  # 8 source features, one split in two


def test_null_geometry_dropped_invalid_repaired(town_dir):
    town = load_town(town_dir)
    p = town.layers["parcels"].set_index("parcel_id")
    assert "P5" not in p.index
    nulls = town.report.of_kind("null_geometry")
    assert len(nulls) == 1 and nulls[0].feature_id == "P5"
    assert p.loc["P4", "geometry"].is_valid
    assert p.loc["P4", "geometry"].area == pytest.approx(2.0)  # two unit triangles
    rep = town.report.of_kind("invalid_geometry_repaired")
    assert rep[0].feature_id == "P4"
    info = town.settings.extra["layer_info"]["parcels"]
    assert (info.features_read, info.features_kept) == (5, 4)


def test_booleans_and_ints(town_dir):
    town = load_town(town_dir)
    p = town.layers["parcels"].set_index("parcel_id")
    assert p.loc["P1", "septic"] is np.True_ or p.loc["P1", "septic"] == True  # noqa: E712
    assert p.loc["P2", "septic"] == False  # noqa: E712
    assert p.loc["P3", "septic"] == True  # noqa: E712
    assert pd.isna(p.loc["P4", "septic"])
    assert str(p["dwelling_units"].dtype) == "Int64"
    assert p["dwelling_units"].tolist() == [1, 2, 3, 1]
    bad = [f for f in town.report.of_kind("bad_value") if "septic" in f.message]
    assert bad[0].feature_id == "P4"


def test_geographic_with_z_reprojected_to_estimated_utm(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    # Town of Poughkeepsie, lon -73.9: UTM zone 18 north
    g = gpd.GeoDataFrame(
        {"FACILITYID": ["A"]},
        geometry=[LineString([(-73.90, 41.67, 10), (-73.899, 41.67, 9)])],
        crs="EPSG:4979",
    )
    g.to_file(d / "m.geojson", engine="pyogrio")
    (d / "gisnet.toml").write_text('profile = "berlin-nh"\n[layers.mains]\npath = "m.geojson"\n',
                                 encoding="utf-8")
    town = load_town(d)
    assert town.crs.to_epsg() == 32618
    line = town.layers["mains"].geometry.iloc[0]
    assert not line.has_z
    # 0.001 degree of longitude at 41.67 N is about 83.2 m
    expect_m = 0.001 * math.pi / 180 * 6378137 * math.cos(math.radians(41.67))
    assert line.length == pytest.approx(expect_m, rel=0.01)
    kinds = [f.kind for f in town.report]
    assert {"working_crs", "z_dropped", "reprojected"} <= set(kinds)
    assert "UTM zone estimated" in town.report.of_kind("working_crs")[0].message.replace(
        "UTM zone 18N), the UTM zone estimated", "UTM zone estimated")
    assert "EPSG:4979" in town.report.of_kind("reprojected")[0].message


def test_working_crs_argument_overrides(town_dir):
    town = load_town(town_dir, crs="EPSG:32618", snap_tolerance_ft=3)
    assert town.crs.to_epsg() == 32618
    assert town.settings.snap_tolerance_ft == 3
    assert town.layers["mains"].crs.to_epsg() == 32618


def test_override_path_replaces_town_file_path(town_dir, tmp_path):
    other = tmp_path / "other.gpkg"
    _mains().iloc[:2].to_file(other, engine="pyogrio")
    town = load_town(town_dir, overrides={"mains": str(other)})
    assert len(town.layers["mains"]) == 2
    assert town.sources["mains"] == str(other.resolve())


def test_engines_give_identical_canonical_layers(town_dir):
    a = load_town(town_dir, engine="pyogrio")
    b = load_town(town_dir, engine="fiona")
    assert a.layers.keys() == b.layers.keys()
    for role in a.layers:
        assert_geodataframe_equal(a.layers[role], b.layers[role])
    assert [f.message for f in a.report] == [f.message for f in b.report]


def test_engines_identical_on_real_geojson(real_town):
    d = real_town("washington_park_fl")
    a, b = load_town(d), load_town(d, engine="fiona")
    for role in a.layers:
        assert_geodataframe_equal(a.layers[role], b.layers[role])


def test_profile_from_town_file_or_override(town_dir):
    town = load_town(town_dir)
    assert isinstance(town.profile, Profile)
    assert town.profile.id == "poughkeepsie-fourth-ward"
    assert town.report.of_kind("profile_assumed") == []
    assert load_town(town_dir, profile="berlin-nh").profile.id == "berlin-nh"


def test_town_naming_no_profile_is_an_error_naming_the_choices(town_dir):
    toml = town_dir / "gisnet.toml"
    toml.write_text(TOWN_TOML.replace('profile = "poughkeepsie-fourth-ward"\n', ""),
                    encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_town(town_dir)
    msg = str(exc.value)
    assert "town Fixture names no jurisdiction profile" in msg
    assert "berlin-nh" in msg and "poughkeepsie-fourth-ward" in msg
    assert load_town(town_dir, profile="berlin-nh").profile.id == "berlin-nh"


def test_town_built_by_hand_gets_a_loaded_profile(town_dir):
    base = load_town(town_dir)
    kw = {"name": "hand", "crs": base.crs, "ft_per_unit": base.ft_per_unit,
          "layers": base.layers}
    named = Town(**kw, profile="berlin-nh")
    assert isinstance(named.profile, Profile) and named.profile.id == "berlin-nh"
    assert named.report.of_kind("profile_assumed") == []
    given = Town(**kw, profile=named.profile)
    assert given.profile is named.profile
    with pytest.raises(ConfigError, match="names no jurisdiction profile"):
        Town(**kw, profile=None)
    with pytest.raises(ConfigError, match="unknown profile"):
        Town(**kw, profile="no-such-profile")
    with pytest.raises(TypeError, match="profile"):
        Town(**kw, profile={"connection": {}})


def test_public_active_are_the_shared_rules(town_dir):
    m = load_town(town_dir).layers["mains"]
    mapped = m.drop(columns=["public", "active"])
    assert np.array_equal(m["public"].to_numpy(), rules.is_public(mapped))
    assert np.array_equal(m["active"].to_numpy(), rules.is_active(mapped))


def test_unique_ids_suffix_repeats_without_clashes():
    ids, repeated = unique_ids(pd.Series(["A", "A", "B", "A"], dtype="str"))
    assert ids.tolist() == ["A", "A#2", "B", "A#3"] and repeated == ["A"]
    # "A#2" is another feature's id: the repeats of A take the first free suffixes
    # (#3, #4), and the feature whose id is "A#2" keeps it
    ids, repeated = unique_ids(pd.Series(["A", "B", "A", "A#2", "A"], dtype="str"))
    assert ids.tolist() == ["A", "B", "A#3", "A#2", "A#4"] and repeated == ["A"]
    ids, _ = unique_ids(pd.Series(["A", "A", "A#2", "A#2"], dtype="str"))
    assert ids.is_unique and ids.tolist()[0::2] == ["A", "A#2"]
    assert unique_ids(pd.Series(["X", "Y"], dtype="str"))[1] == []
    # a generated id (a part "M:1") yields to a source id that is the same
    ids, _ = unique_ids(pd.Series(["M:1", "M:2", "M:1"], dtype="str"),
                        keep=np.array([False, False, True]))
    assert ids.tolist() == ["M:1#2", "M:2", "M:1"]


def test_unique_ids_end_on_clashing_suffixes():
    """Every suffix a repeat could take is another feature's id: still ends, fast."""
    n = 20_000
    src = pd.Series(["A"] * n + [f"A#{k}" for k in range(2, n + 2)], dtype="str")
    ids, _ = unique_ids(src)
    assert ids.is_unique and ids.iloc[n:].tolist() == src.iloc[n:].tolist()


def test_plant_flows_csv(tmp_path, town_dir):
    (town_dir / "flows.csv").write_text(
        "plant_id,month,avg_flow_mgd\nWWTP,2025-01,0.81\nWWTP,2025-02,0.79\n", encoding="utf-8")
    toml = town_dir / "gisnet.toml"
    toml.write_text(TOWN_TOML.replace("[layers.mains]", '[plant_flows]\npath = "flows.csv"\n'
                                      "[layers.mains]"), encoding="utf-8")
    pf = load_town(town_dir).plant_flows
    assert pf["avg_flow_mgd"].tolist() == [0.81, 0.79]
    assert pf["month"].tolist() == ["2025-01", "2025-02"]
    (town_dir / "flows.csv").write_text("plant_id,month,avg_flow_mgd\nWWTP,Jan 2025,0.8\n",
                                        encoding="utf-8")
    with pytest.raises(LayerError, match="row 2"):
        load_town(town_dir)


# --------------------------------------------------------------------------- errors


def test_read_layer_missing_path(tmp_path):
    with pytest.raises(LayerError, match="file not found") as exc:
        read_layer(tmp_path / "nope.shp", role="mains")
    assert "nope.shp" in str(exc.value) and "'mains'" in str(exc.value)


def _assert_one_line_error(rc, err, *needles):
    assert rc == 2
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("gisnet: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


def test_cli_missing_path(capsys, town_dir):
    (town_dir / "parcels.gpkg").unlink()
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "parcels.gpkg", "layer 'parcels'", "file not found")


@pytest.mark.parametrize("ext", [".shx", ".dbf"])
def test_cli_shapefile_missing_sidecar(capsys, town_dir, ext):
    (town_dir / f"mains{ext}").unlink()
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "mains.shp", "layer 'mains'", f"missing its {ext} file")


def test_cli_shapefile_missing_prj(capsys, town_dir):
    (town_dir / "mains.prj").unlink()
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "mains.shp", "layer 'mains'", "missing its .prj")


def test_shapefile_without_prj_ok_when_town_file_names_crs(capsys, town_dir):
    (town_dir / "mains.prj").unlink()
    toml = town_dir / "gisnet.toml"
    toml.write_text(TOWN_TOML.replace('path = "mains.shp"', 'path = "mains.shp"\ncrs = '
                                      '"EPSG:2260"'), encoding="utf-8")
    town = load_town(town_dir)
    assert town.layers["mains"].crs.to_epsg() == 2260
    assert town.report.of_kind("crs_assumed")
    rc, _, _ = _validate(capsys, town_dir)
    assert rc == 0


def test_no_crs_in_geographic_claim_checked(tmp_path):
    # a town file calling State Plane feet "EPSG:4326" is caught, not silently misread
    d = tmp_path / "t"
    d.mkdir()
    _mains().translate(600000, 1000000).to_file(d / "m.shp", engine="pyogrio")
    (d / "m.prj").unlink()
    (d / "gisnet.toml").write_text('[layers.mains]\npath = "m.shp"\ncrs = "EPSG:4326"\n',
                                   encoding="utf-8")
    with pytest.raises(CRSError, match="not longitude/latitude"):
        load_town(d)


def test_cli_empty_layer(capsys, town_dir):
    _mains().iloc[:0].to_file(town_dir / "mains.shp", engine="pyogrio")
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "mains.shp", "layer 'mains'", "empty layer")


def test_where_matching_nothing_is_empty_layer(capsys, town_dir):
    toml = town_dir / "gisnet.toml"
    toml.write_text(TOWN_TOML.replace('path = "mains.shp"', 'path = "mains.shp"\n'
                                      "where = \"WATERTYPE = 'none such'\""), encoding="utf-8")
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "empty layer", "no features match where")


def test_cli_polygons_where_lines_belong(capsys, town_dir):
    poly = _parcels().iloc[:3].rename(columns={"PARCEL_ID": "FACILITYID"})
    (town_dir / "mains.shp").unlink()
    for ext in (".shx", ".dbf", ".prj", ".cpg"):
        (town_dir / f"mains{ext}").unlink(missing_ok=True)
    poly.to_file(town_dir / "mains.shp", engine="pyogrio")
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "mains.shp", "layer 'mains'", "Polygon geometries where "
                           "mains must be lines", "P1")


def test_cli_mapping_to_missing_column(capsys, town_dir):
    toml = town_dir / "gisnet.toml"
    toml.write_text(TOWN_TOML + '[layers.mains.columns]\ndiameter_in = "PIPE_SIZE_IN"\n',
                    encoding="utf-8")
    with pytest.raises(SchemaError):
        load_town(town_dir)
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "mains.shp", "layer 'mains'", "'PIPE_SIZE_IN'",
                           "does not exist")


def test_cli_unknown_layer_role(capsys, town_dir):
    (town_dir / "gisnet.toml").write_text(TOWN_TOML + '[layers.hydrants]\npath = "h.shp"\n',
                                          encoding="utf-8")
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "gisnet.toml", "layers.hydrants", "unknown layer role")


def test_cli_invalid_toml(capsys, town_dir):
    (town_dir / "gisnet.toml").write_text("name = 'x\n", encoding="utf-8")
    rc, _, err = _validate(capsys, town_dir)
    _assert_one_line_error(rc, err, "gisnet.toml", "not valid TOML")


def test_cli_no_town_file(capsys, tmp_path):
    rc, _, err = _validate(capsys, tmp_path)
    _assert_one_line_error(rc, err, str(tmp_path), "no gisnet.toml")


def test_cli_json_error(capsys, tmp_path):
    rc, out, _ = _validate(capsys, tmp_path, "--json")
    assert rc == 2
    doc = json.loads(out)
    assert doc["usable"] is False and "no gisnet.toml" in doc["error"]


def test_flawed_but_usable_is_warning_exit_0(capsys, town_dir):
    rc, out, _ = _validate(capsys, town_dir)
    assert rc == 0
    assert "non_numeric" in out and "M4" in out  # UNK diameter named
    assert "invalid_geometry_repaired" in out and "P4" in out
    assert "null_geometry" in out and "P5" in out


# --------------------------------------------------------------------------- writing


def test_write_results_keeps_other_layers_and_tables(tmp_path, town_dir):
    town = load_town(town_dir)
    out = tmp_path / "maps"
    table = pd.DataFrame({"plant_id": ["W1"], "design_flow_mgd": [1.5]})
    p = write_results(out, {"quality": town.report.to_gdf(town.crs), "plants": table})
    assert p == out / "gisnet-results.gpkg"
    write_results(out, {"graph_edges": town.layers["mains"]})
    names = {str(n) for n, _ in pyogrio.list_layers(p)}
    assert names == {"quality", "plants", "graph_edges", "layer_styles"}  # + QGIS styles
    got = pyogrio.read_dataframe(p, layer="plants", read_geometry=False)
    assert got["design_flow_mgd"].tolist() == [1.5]
    edges = pyogrio.read_dataframe(p, layer="graph_edges")
    assert len(edges) == len(town.layers["mains"]) and edges.crs.to_epsg() == 2260
    # replacing a layer keeps the others
    write_results(out, {"graph_edges": town.layers["mains"].iloc[:2]})
    assert pyogrio.read_info(p, layer="graph_edges")["features"] == 2
    assert pyogrio.read_info(p, layer="quality")["features"] == len(town.report)
    # no temp files left: the GeoPackage and its QGIS project
    assert sorted(f.name for f in out.iterdir()) == ["gisnet-results.gpkg", "gisnet.qgz"]


def test_write_results_failure_leaves_file_untouched(tmp_path, town_dir, monkeypatch):
    town = load_town(town_dir)
    out = tmp_path / "maps"
    p = write_results(out, {"parcels": town.layers["parcels"]})
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    real = gisnet.output.writing.write_layer

    def failing(path, name, df):
        if name == "bad":
            raise OSError("disk full")
        real(path, name, df)

    monkeypatch.setattr(gisnet.output.writing, "write_layer", failing)
    with pytest.raises(OSError, match="disk full"):
        write_results(out, {"extra": town.layers["mains"], "bad": town.layers["mains"]})
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before
    assert sorted(f.name for f in out.iterdir()) == ["gisnet-results.gpkg", "gisnet.qgz"]


def test_inputs_byte_identical_after_load_and_write(tmp_path, town_dir):
    before = _hashes(town_dir)
    for engine in ("pyogrio", "fiona"):
        town = load_town(town_dir, engine=engine)
        write_results(tmp_path / "out", {"quality": town.report.to_gdf(town.crs),
                                         "mains": town.layers["mains"]})
    main(["validate", "--layers", str(town_dir), "-q"])
    assert _hashes(town_dir) == before


# --------------------------------------------------------------------------- real data


def _geojson_count(path: Path, **equals_any: tuple[str, ...]) -> int:
    doc = json.loads(path.read_text(encoding="utf-8"))
    feats = doc["features"]
    for k, allowed in equals_any.items():
        feats = [f for f in feats if f["properties"].get(k) in allowed]
    return len(feats)


def _layer_file(town_dir: Path, role: str) -> Path:
    """The file a town file names for a layer role."""
    with (town_dir / "gisnet.toml").open("rb") as fh:
        return (town_dir / tomllib.load(fh)["layers"][role]["path"]).resolve()


#: The town files of real data: Bennington whole and clipped, Cambridge's parcels in the
#: optional ../shared/data; the clip, Lancaster and Washington Park in tests/data.
REAL_TOWNS = ("bennington_vt", "bennington_vt_clip", "lancaster_ca", "washington_park_fl",
              "cambridge_ma_parcels")


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_TOWNS)
def test_real_inputs_byte_identical(real_town, tmp_path, name):
    d = real_town(name)
    with (d / "gisnet.toml").open("rb") as fh:
        folders = {_layer_file(d, role).parent for role in tomllib.load(fh)["layers"]}
    before = {f: _hashes(f) for f in folders}  # every file, so a new side file shows too
    assert all(before.values())
    town = load_town(d)
    write_results(tmp_path, {"quality": town.report.to_gdf(town.crs)})
    assert {f: _hashes(f) for f in folders} == before


@pytest.mark.parametrize("name", ["bennington_vt_clip", "bennington_vt"])
def test_bennington_counts_and_reprojection(real_town, name):
    """The town file's filters and value maps against the GeoJSON read by json alone."""
    d = real_town(name)
    town = load_town(d)
    mains = json.loads(_layer_file(d, "mains").read_text(encoding="utf-8"))["features"]
    mains = [f["properties"] for f in mains
             if f["properties"]["Type"] in ("Sewer pipe", "Combined sewer pipe")]
    assert len(town.layers["mains"]) == len(mains)
    assert len(town.layers["manholes"]) == _geojson_count(
        _layer_file(d, "manholes"), Type=("Sewer manhole", "Other"))
    assert len(town.layers["plants"]) == 1
    assert town.layers["plants"]["design_flow_mgd"].tolist() == [5.1]
    assert town.crs.is_projected and town.crs.to_epsg() == 32618
    assert "EPSG:4979" in town.report.of_kind("reprojected")[0].message
    assert town.report.of_kind("z_dropped")
    m = town.layers["mains"]
    combined = sum(p["System Type"] == "Combined" for p in mains)
    abandoned = sum(p["Status"] == "Abandoned" for p in mains)
    assert combined > 0 and abandoned > 0  # both maps are exercised
    assert (m["kind"] == "combined").sum() == combined
    assert (~m["active"]).sum() == abandoned


# --------------------------------------------------------------------------- more sources


def test_users_table_without_geometry(town_dir):
    (town_dir / "users.csv").write_text("PERMIT,NAME,PROC_GPD,CIU\nIU-1,Dye works,30000,Y\n"
                                        "IU-2,Bakery,\"1,200\",N\n", encoding="utf-8")
    (town_dir / "gisnet.toml").write_text(TOWN_TOML + '[layers.users]\npath = "users.csv"\n',
                                          encoding="utf-8")
    town = load_town(town_dir)
    u = town.layers["users"]
    assert u["user_id"].tolist() == ["IU-1", "IU-2"]
    assert u["process_flow_gpd"].tolist() == [30000.0, 1200.0]
    assert u["categorical"].tolist() == [True, False]
    assert u.geometry.isna().all() and u.crs == town.crs
    assert not [f for f in town.report.of_kind("null_geometry") if f.layer == "users"]


def test_table_where_lines_belong(town_dir):
    (town_dir / "m.csv").write_text("FACILITYID\nA\n", encoding="utf-8")
    with pytest.raises(LayerError, match="no feature has a geometry"):
        load_town(town_dir, overrides={"mains": str(town_dir / "m.csv")})


def test_bad_where_is_layer_error(town_dir):
    (town_dir / "gisnet.toml").write_text(
        TOWN_TOML.replace('path = "mains.shp"', 'path = "mains.shp"\nwhere = "NOSUCH = 1"'),
        encoding="utf-8")
    with pytest.raises(LayerError, match="cannot read with where") as exc:
        load_town(town_dir)
    assert "mains.shp" in str(exc.value)


def test_filegdb_source(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    try:
        _mains().iloc[:3].to_file(d / "sewer.gdb", layer="SewerGravityMain",
                                  driver="OpenFileGDB", engine="pyogrio")
    except Exception as exc:  # GDAL built without FileGDB write support
        pytest.skip(f"cannot write FileGDB here: {exc}")
    (d / "gisnet.toml").write_text(
        'profile = "berlin-nh"\n[layers.mains]\npath = "sewer.gdb"\nlayer = "SewerGravityMain"\n',
        encoding="utf-8")
    for engine in ("pyogrio", "fiona"):
        m = load_town(d, engine=engine).layers["mains"]
        assert m["main_id"].tolist() == ["M1", "M2", "M3"]
        assert m["diameter_in"].tolist()[:2] == [8.0, 10.0]


def test_plant_flows_month_given_twice_is_an_error(tmp_path):
    from gisnet.io import read_plant_flows

    f = tmp_path / "flows.csv"
    f.write_text("plant_id,month,avg_flow_mgd\nP1,2025-01,1.0\nP1,2025-02,1.1\nP2,2025-01,3\n"
                 "P1,2025-01,100\n", encoding="utf-8")
    with pytest.raises(LayerError, match=r"feature P1: month 2025-01 is given 2 times for plant "
                                         r"P1 \(rows 2, 5: 1, 100 mgd\)"):
        read_plant_flows(f)


def test_crs_fit_and_far_features():
    import shapely

    from gisnet.io.extent import area_box, check_crs_fits, far_features

    x0, y0, x1, y1 = area_box("EPSG:2260")  # NY East (ftUS), widened
    assert x0 < 600_000 < x1 and y0 < 1_000_000 < y1
    pts = np.array([shapely.Point(600_000 + 10 * i, 1_000_000 + 7 * i) for i in range(40)],
                   dtype=object)
    check_crs_fits(pts, "EPSG:2260", "p.shp", "manholes")  # fits: no error
    with pytest.raises(CRSError, match=r"p\.shp: layer 'manholes': coordinates do not fit the CRS "
                                       r"its \.prj declares, EPSG:4326"):
        check_crs_fits(pts, "EPSG:4326", "p.shp", "manholes")
    far_pts = pts.copy()
    far_pts[3] = shapely.Point(1e20, 1e20)   # outside the area of use
    far_pts[5] = shapely.Point(600_000 + 5e5, 1_000_000)  # inside it, far from the rest
    far, why = far_features(far_pts, "EPSG:2260")
    assert np.flatnonzero(far).tolist() == [3, 5]
    assert "area of use" in why and "extent" in why
    assert not far_features(pts, "EPSG:2260")[0].any()


def test_plausibility_findings_never_change_values():
    from gisnet.io.notes import LayerNotes
    from gisnet.io.plausibility import check_diameters, check_slopes
    from gisnet.report import Report

    r = Report()
    notes = LayerNotes("mains", r)
    ids = pd.Series([f"M{i}" for i in range(6)])
    d = pd.Series([8.0, 8.0, 12.0, 533.0, 0.5, 144.0])
    check_diameters(d, ids, "in", notes)
    assert [f.kind for f in r] == ["implausible_diameter"]
    assert r.findings[0].feature_id == "M3,M4"
    assert d.tolist() == [8.0, 8.0, 12.0, 533.0, 0.5, 144.0]
    r = Report()
    check_diameters(pd.Series([203.0, 203.0, 254.0, 533.0, 8.0]), ids[:5], "in",
                    LayerNotes("mains", r))
    assert [f.kind for f in r] == ["diameter_unit_mixup"]
    assert "likely in millimetres" in r.findings[0].message
    assert r.findings[0].feature_id == "M0,M1,M2,M3"
    r = Report()
    check_slopes(pd.Series([0.01, 0.8, 0.02, None]), ids[:4], "ft/ft", LayerNotes("mains", r))
    assert [(f.kind, f.feature_id) for f in r] == [("implausible_slope", "M1")]


def test_gdal_virtual_path_is_read_as_written(tmp_path):
    """A /vsizip/ path is not a local file: it goes to GDAL as written, and the town
    file does not make it relative to its folder."""
    import zipfile

    from gisnet.townfile import is_virtual_source, parse_town_file

    sample = Path(__file__).resolve().parents[1] / "layers" / "sample"
    z = tmp_path / "plants.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for ext in (".shp", ".shx", ".dbf", ".prj", ".cpg"):
            zf.write(sample / f"plants{ext}", f"plants{ext}")
    vsi = f"/vsizip/{z}/plants.shp"
    assert is_virtual_source(vsi) and is_virtual_source("PG:dbname=town")
    assert not is_virtual_source("C:/data/mains.shp") and not is_virtual_source("mains.shp")
    tf = parse_town_file({"layers": {"plants": {"path": vsi}}}, tmp_path / "gisnet.toml")
    assert tf.layers["plants"].path == vsi  # as written, not made relative to the town folder
    g = read_layer(tf.layers["plants"].path, role="plants")
    assert len(g) == 1 and g.crs is not None


def test_a_tight_cluster_does_not_make_a_feature_miles_away_far():
    """25 industrial users on one block and one 2 miles off: none is excluded."""
    import shapely

    from gisnet.io.extent import far_features

    pts = [shapely.Point(600_000 + 20 * i, 1_000_000) for i in range(25)]
    pts.append(shapely.Point(600_000 + 2 * 5280, 1_000_000))
    assert not far_features(np.array(pts, dtype=object), "EPSG:2260")[0].any()


def test_layer_files_read_on_threads_keep_their_warnings_and_first_error(tmp_path, caplog):
    """read_all: the files read at once on two threads give what one after the other
    gives; each GDAL warning is logged with the role and file of its own read; the
    first read to fail, in order, is the error."""
    from gisnet.io.reading import read_all

    paths = {}
    for role, n in (("parcels", 3), ("mains", 5)):
        p = tmp_path / f"{role}.gpkg"
        gdf = gpd.GeoDataFrame({"k": list(range(n))},
                               geometry=[shapely.Point(i, i) for i in range(n)],
                               crs="EPSG:2260")
        gdf.to_file(p, layer="first", engine="pyogrio")
        gdf.head(1).to_file(p, layer="second", engine="pyogrio")  # two layers: a warning
        paths[role] = p

    def reads(extra=()):
        return [(role, p, (lambda p=p, role=role: read_layer(p, role=role)))
                for role, p in [*paths.items(), *extra]]

    with caplog.at_level(logging.WARNING, logger="gisnet"):
        together = read_all(reads(), 2)
    warned = [r.getMessage() for r in caplog.records if "More than one layer" in r.getMessage()]
    one_by_one = [fn() for _, _, fn in reads()]
    for a, b in zip(together, one_by_one, strict=True):
        assert_geodataframe_equal(a, b)
    assert [len(g) for g in together] == [3, 5]
    assert sorted(m.split(": ")[0] for m in warned) == ["mains", "parcels"]
    for m in warned:
        role, shown = m.split(": ")[:2]
        assert shown == str(paths[role]) and f"{role}.gpkg" in m.split(": ", 2)[2]
    missing = [("streets", tmp_path / "none.shp", lambda: read_layer(
        tmp_path / "none.shp", role="streets")), ("users", tmp_path / "also.shp",
        lambda: read_layer(tmp_path / "also.shp", role="users"))]
    with pytest.raises(LayerError) as err:
        read_all(reads(()) + missing, 2)
    assert err.value.layer == "streets"


def test_in_ids_matches_pandas_isin_for_text_and_objects() -> None:
    """``in_ids`` (Arrow's ``is_in`` for text held by Arrow) answers as pandas'
    ``isin`` does: missing values are in nothing, repeats and non-ASCII ids match,
    ids of other types are matched as pandas matches them."""
    import numpy as np
    import pandas as pd

    from gisnet.io.ids import in_ids

    rng = np.random.default_rng(7)
    pool = np.array(["P-1", "p-1", "P-2", "Ñ-3", "İ", " P-4", "P-4", "5", ""], dtype=object)
    values = pd.Series(np.r_[rng.choice(pool, 400), [None] * 20], dtype="str")
    among = pd.Series(np.r_[rng.choice(pool, 6), [None]], dtype="str")
    want = values.isin(among.dropna()).to_numpy(dtype=bool)
    got = in_ids(values, among)
    assert got.dtype == bool and got.tolist() == want.tolist()
    assert not got[values.isna().to_numpy()].any()
    objects = pd.Series(["a", 5, None, "5"], dtype=object)
    assert in_ids(objects, pd.Series([5, "a"], dtype=object)).tolist() == [True, True, False,
                                                                             False]
    assert in_ids(values.iloc[:0], among).tolist() == []
    assert not in_ids(values, among.iloc[:0]).any()


def test_first_positions_finds_the_first_row_of_each_id() -> None:
    """``first_positions``: the first row of ``universe`` equal to each value, -1 for
    a missing value or one not there; as codes for Arrow text and through pandas'
    object index otherwise, with the same answers (repeated ids in the universe
    answer with their first row; pandas' ``get_indexer`` refuses them)."""
    import numpy as np
    import pandas as pd

    from gisnet.io.ids import first_positions

    rng = np.random.default_rng(11)
    pool = np.array(["A", "a", "B", "İ", "ß", "SS", " A", ""], dtype=object)
    universe = list(rng.choice(pool, 30))
    values = [*rng.choice(pool, 200), None, "not there"]
    want = [universe.index(v) if v in universe else -1 for v in values]
    text = first_positions(pd.Series(universe, dtype="str"), pd.Series(values, dtype="str"))
    objects = first_positions(pd.Series(universe, dtype=object),
                              pd.Series(values, dtype=object))
    assert text.tolist() == want and objects.tolist() == want
    assert first_positions(pd.Series([], dtype="str"),
                           pd.Series(["x", None], dtype="str")).tolist() == [-1, -1]
    assert first_positions(pd.Series(["x"], dtype="str"),
                           pd.Series([], dtype="str")).tolist() == []


# ------------------------------------------------------------- layers mapped as they are read


def _named_crs_town(town_dir: Path) -> Path:
    text = (town_dir / "gisnet.toml").read_text(encoding="utf-8")
    (town_dir / "gisnet.toml").write_text(f'crs = "{NY_EAST}"\n' + text, encoding="utf-8")
    return town_dir


def _read_then_mapped(monkeypatch) -> None:
    """The way without a named CRS: every file read, then each layer mapped."""
    import gisnet.io.loading

    monkeypatch.setattr(gisnet.io.loading, "named_working_crs", lambda crs, tf: None)


def test_layers_mapped_on_their_readers_give_the_same_town_report_and_log(
        town_dir, monkeypatch, caplog):
    town_dir = _named_crs_town(town_dir)

    def load() -> tuple[Town, list[tuple[str, str]]]:
        from gisnet.threads import thread_limit

        caplog.clear()
        with caplog.at_level(logging.INFO, logger="gisnet"), thread_limit(2):
            town = load_town(town_dir)
        return town, [(r.levelname, r.getMessage()) for r in caplog.records
                      if not r.getMessage().startswith("read ")]

    import threading

    import gisnet.io.town_layers

    mapped_on: list[str] = []
    canonical = gisnet.io.town_layers.canonical_layer

    def recorded(*args, **kwargs):
        mapped_on.append(threading.current_thread().name)
        return canonical(*args, **kwargs)

    monkeypatch.setattr(gisnet.io.town_layers, "canonical_layer", recorded)
    beside, beside_log = load()
    assert len(mapped_on) == 2 and all(n.startswith("gisnet-read") for n in mapped_on)
    with monkeypatch.context() as m:
        _read_then_mapped(m)
        after, after_log = load()
    # the findings of both layers (duplicate id, multipart, null and invalid shapes),
    # in the same order, logged in the same order
    kinds = [f.kind for f in beside.report]
    assert {"duplicate_id", "multipart_exploded", "null_geometry"} <= set(kinds)
    assert [f.as_dict() for f in beside.report] == [f.as_dict() for f in after.report]
    assert beside_log == after_log and beside_log
    for role in ("mains", "parcels"):
        assert_geodataframe_equal(beside.layers[role], after.layers[role])
        assert vars(beside.settings.extra["layer_info"][role]) == \
            vars(after.settings.extra["layer_info"][role])


def test_a_layer_that_cannot_be_read_is_reported_before_one_that_cannot_be_mapped(
        town_dir, monkeypatch):
    town_dir = _named_crs_town(town_dir)
    toml = (town_dir / "gisnet.toml").read_text(encoding="utf-8")
    # mains (first in the file) cannot be mapped: its id column is not there
    bad_map = toml.replace('[layers.mains]\npath = "mains.shp"\n',
                           '[layers.mains]\npath = "mains.shp"\n'
                           '[layers.mains.columns]\nmain_id = "NO_SUCH"\n')
    (town_dir / "gisnet.toml").write_text(bad_map, encoding="utf-8")
    with pytest.raises(SchemaError, match="NO_SUCH"):
        load_town(town_dir)
    # ... and the parcels (second) cannot be read at all: the read error comes first,
    # as when every file is read before any layer is mapped
    (town_dir / "parcels.gpkg").write_bytes(b"not a geopackage")
    with pytest.raises(LayerError, match="cannot read") as beside:
        load_town(town_dir)
    with monkeypatch.context() as m:
        _read_then_mapped(m)
        with pytest.raises(LayerError, match="cannot read") as after:
            load_town(town_dir)
    assert str(beside.value) == str(after.value)


def test_text_numbers_plain_and_with_units_or_separators():
    """Text numbers: plain ASCII numbers (read by Arrow's expressions), and those with a
    unit, thousands separators, other digits or no number at all (Python's), each to
    what a person reads in it; a missing value stays missing and is not reported."""
    from gisnet.io.notes import LayerNotes
    from gisnet.io.values import to_numbers
    from gisnet.report import Report
    from gisnet.townfile import LayerSpec

    text = ["8", "+5", "-0", ".5", "5.", "007", "12.25", "1,234.5", "8 in", "200mm",
            "12\"", "1 ft", "UNK", "1e3", "\u0661\u0662", None, "", "8 parsecs"]
    # (a diameter of -0 is not one: negative_value; feet are not a diameter's unit)
    want = [8.0, 5.0, None, 0.5, 5.0, 7.0, 12.25, 1234.5, 8.0, 200 / 25.4,
            12.0, None, None, None, None, None, None, None]
    report = Report(logs=False)
    col = next(c for c in schema.COLUMNS["mains"] if c.name == "diameter_in")
    ids = pd.Series([f"M{i}" for i in range(len(text))], dtype="str")
    got = to_numbers(col, pd.Series(text, dtype=object), LayerSpec("mains", "m.shp"), ids,
                     LayerNotes("mains", report))
    for t, g, w in zip(text, got.tolist(), want, strict=True):
        if w is None:
            assert math.isnan(g), t
        else:
            assert g == pytest.approx(w, rel=1e-15), t
    bad = report.of_kind("non_numeric")
    assert len(bad) == 1
    # 1 ft, UNK, 1e3, Arabic-Indic digits (not read as a number), parsecs
    assert set(bad[0].feature_id.split(",")) == {"M11", "M12", "M13", "M14", "M17"}
    assert [f.feature_id for f in report.of_kind("negative_value")] == ["M2"]
    # plain numbers only, and missing values only: no finding
    clean = Report(logs=False)
    got = to_numbers(col, pd.Series(["8", None, "10.5"], dtype=object),
                     LayerSpec("mains", "m.shp"), ids[:3], LayerNotes("mains", clean))
    assert got.tolist()[0] == 8.0 and math.isnan(got.tolist()[1]) and got.tolist()[2] == 10.5
    assert not len(clean)


def test_a_column_the_source_lacks_is_what_converting_missing_values_gives():
    """column_values(raw=None) converts one missing value and repeats it: the same dtype,
    values and index as converting a whole column of them, for every canonical column."""
    from gisnet.io.notes import LayerNotes
    from gisnet.io.values import column_values, convert
    from gisnet.report import Report
    from gisnet.townfile import LayerSpec

    for role, cols in schema.COLUMNS.items():
        for col in cols:
            if (role, col.name) in schema.VALUE_ALIASES:
                continue  # (normalised after: the same input, checked by its own tests)
            for n in (0, 1, 4):
                ids = pd.Series([f"X{i}" for i in range(n)], dtype="str")
                spec = LayerSpec(role, "x.shp")
                got = column_values(col, None, spec, ids, LayerNotes(role, Report(logs=False)))
                want = convert(col, pd.Series([None] * n, dtype=object), spec, ids,
                               LayerNotes(role, Report(logs=False)))
                pd.testing.assert_series_equal(got, want, check_exact=True)
