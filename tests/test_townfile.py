"""Town-file parsing (gisnet.toml) and column matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from gisnet import townfile
from gisnet.errors import ConfigError, SchemaError
from gisnet.townfile import match_columns, read_town_file

#: The sample town in the package (package data), where ``--sample`` finds it.
PACKAGE_SAMPLE = Path(townfile.__file__).resolve().parent / "sample"

ISSUE_EXAMPLE = """
profile = "poughkeepsie-fourth-ward"   # or "berlin-nh", or a path to a profile file
crs = "EPSG:2260"                      # working CRS; optional
[layers.mains]
path = "mains.shp"                     # relative to this file
layer = "pipes"                        # optional, for multi-layer sources
where = "Type = 'Sanitary Line'"       # optional attribute filter
crs = "EPSG:4326"                      # optional, for sources without one
[layers.mains.columns]                 # canonical name = source column
main_id = "FACILITYID"
[layers.mains.values.kind]             # optional value mapping
"Sanitary Line" = "sanitary"
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "gisnet.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_issue_example_parses_exactly(tmp_path):
    tf = read_town_file(write(tmp_path, ISSUE_EXAMPLE))
    assert tf.profile == "poughkeepsie-fourth-ward"
    assert tf.crs == "EPSG:2260"
    m = tf.layers["mains"]
    assert m.path == tmp_path.resolve() / "mains.shp"
    assert (m.layer, m.where, m.crs) == ("pipes", "Type = 'Sanitary Line'", "EPSG:4326")
    assert m.columns == {"main_id": "FACILITYID"}
    assert m.values == {"kind": {"Sanitary Line": "sanitary"}}
    assert (m.slope_units, m.diameter_units) == ("ft/ft", "in")


def test_extra_keys_units_plant_flows_and_layer_units(tmp_path):
    tf = read_town_file(write(tmp_path, """
name = "Test"
snap_tolerance_ft = 2
outlet_nodes = ["OUT1", 7]
[units]
slope = "percent"
diameter = "mm"
[plant_flows]
path = "flows.csv"
[layers.mains]
path = "m.shp"
[layers.mains.units]
diameter = "in"
[layers.parcels]
path = "sub/p.gpkg"
"""))
    assert tf.name == "Test" and tf.snap_tolerance_ft == 2.0
    assert tf.outlet_nodes == ("OUT1", "7")
    assert tf.plant_flows == tmp_path.resolve() / "flows.csv"
    assert (tf.layers["mains"].slope_units, tf.layers["mains"].diameter_units) == \
        ("percent", "in")
    assert tf.layers["parcels"].diameter_units == "mm"
    assert tf.layers["parcels"].path == tmp_path.resolve() / "sub" / "p.gpkg"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('colour = "red"', "colour"),
        ('[layers.pipes]\npath = "x.shp"', "layers.pipes"),
        ('[layers.mains]\npath = "x.shp"\nfilter = "a"', "layers.mains.filter"),
        ('[layers.mains]\npath = "x.shp"\n[layers.mains.columns]\nsize = "D"',
         "layers.mains.columns.size"),
        ('snap_tolerance_ft = "one"', "snap_tolerance_ft"),
        ("snap_tolerance_ft = -1", "snap_tolerance_ft"),
        ('[units]\nslope = "degrees"', "units.slope"),
        ('[layers.mains]\npath = 5', "layers.mains.path"),
        ('[layers.mains]\nwhere = "a = 1"', "layers.mains.path"),
        ('[layers.mains]\npath = "x"\n[layers.mains.values.kind]\n"S" = "sewage"',
         "layers.mains.values.kind.S"),
        ('crs = "EPSG:4326"', "crs"),
        ('crs = "not a crs"', "crs"),
        ('outlet_nodes = "A"', "outlet_nodes"),
        ('profile = "rules/missing.toml"', "profile"),
    ],
)
def test_bad_town_file_names_file_and_key(tmp_path, text, key):
    write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        read_town_file(tmp_path)
    msg = str(exc.value)
    assert str(tmp_path / "gisnet.toml") in msg
    assert f"key {key!r}" in msg


def test_invalid_toml_is_config_error(tmp_path):
    write(tmp_path, "[layers.mains\npath = 'x'")
    with pytest.raises(ConfigError, match="not valid TOML") as exc:
        read_town_file(tmp_path)
    assert "gisnet.toml" in str(exc.value)


def test_no_town_file_in_folder(tmp_path):
    with pytest.raises(ConfigError, match=r"no gisnet\.toml in this folder") as exc:
        read_town_file(tmp_path)
    assert str(tmp_path) in str(exc.value)


def test_missing_folder(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        read_town_file(tmp_path / "nope")


def test_profile_path_resolved_relative_to_town_file(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "mine.toml").write_text("", encoding="utf-8")
    tf = read_town_file(write(tmp_path, 'profile = "rules/mine.toml"'))
    assert tf.profile == str((tmp_path / "rules" / "mine.toml").resolve())


def test_layers_sample_prefers_the_current_folder(tmp_path, monkeypatch):
    """``--layers layers/sample`` names that folder where it exists; ``--sample`` is
    always the bundled sample town."""
    (tmp_path / "layers" / "sample").mkdir(parents=True)
    (tmp_path / "layers" / "sample" / "gisnet.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert townfile.find_town_file(Path("layers") / "sample") == \
        Path("layers") / "sample" / "gisnet.toml"
    assert townfile.default_layers_dir() == PACKAGE_SAMPLE


def test_no_folder_is_never_the_sample(tmp_path, monkeypatch):
    """None names no town: it is an error saying how to start, never the sample."""
    (tmp_path / "layers" / "sample").mkdir(parents=True)
    (tmp_path / "layers" / "sample" / "gisnet.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="gisnet init"):
        townfile.find_town_file(None)
    with pytest.raises(ConfigError, match="gisnet init"):
        read_town_file(None)


def test_columns_match_ignoring_spaces_and_underscores():
    """Real plant layers write 'Facility Name' and 'Design Hydraulic Capacity In MGD'."""
    m = match_columns("plants", ["OBJECTID", "Facility Name",
                                 "Design Hydraulic Capacity In MGD", "NPDES Permit Number"])
    assert m["name"] == "Facility Name"
    assert m["design_flow_mgd"] == "Design Hydraulic Capacity In MGD"
    assert m["plant_id"] == "NPDES Permit Number"


def test_real_property_service_parcel_names():
    """New York RPS parcel columns: PRINT_KEY, PROP_ADDR, PROP_CLASS."""
    m = match_columns("parcels", ["SWIS", "PRINT_KEY", "PROP_ADDR", "PROP_CLASS", "NBR_BEDRM"])
    assert (m["parcel_id"], m["address"], m["land_use"], m["bedrooms"]) == \
        ("PRINT_KEY", "PROP_ADDR", "PROP_CLASS", "NBR_BEDRM")


def test_sample_is_package_data_wherever_gisnet_runs(tmp_path, monkeypatch):
    """The sample town is found through importlib.resources in the package, never
    relative to the current folder or a checkout."""
    monkeypatch.chdir(tmp_path)
    assert townfile.default_layers_dir() == PACKAGE_SAMPLE
    assert (PACKAGE_SAMPLE / "gisnet.toml").is_file()
    assert townfile.find_town_file(Path("layers") / "sample") == PACKAGE_SAMPLE / "gisnet.toml"
    assert townfile.sample_resource().joinpath("parcels.shp").is_file()


def test_missing_sample_is_a_clear_error(tmp_path, monkeypatch):
    """An install without the sample says so (never a traceback or a silent empty town)."""
    fake = tmp_path / "gisnet"
    (fake / "sample").mkdir(parents=True)
    monkeypatch.setattr(townfile.resources, "files", lambda _pkg: fake)
    with pytest.raises(ConfigError, match=r"sample town is missing.*reinstall"):
        townfile.default_layers_dir()


# ---------------------------------------------------------------- column matching


def test_match_columns_case_insensitive_aliases():
    m = match_columns("mains", ["facilityid", "Diameter", "upelev", "DownElev", "Slope",
                                "WaterType", "geometry"])
    assert m["main_id"] == "facilityid"
    assert m["diameter_in"] == "Diameter"
    assert (m["up_invert_ft"], m["down_invert_ft"]) == ("upelev", "DownElev")
    assert m["slope"] == "Slope" and m["kind"] == "WaterType"
    assert m["material"] is None


def test_match_columns_shapefile_truncations():
    # 10-character truncations: UPSTREAMINVERT -> UPSTREAMIN, sewer_available_date -> SEWER_AVAI
    m = match_columns("mains", ["UPSTREAMIN", "DOWNSTREAM", "LIFECYCLES"])
    assert m["up_invert_ft"] == "UPSTREAMIN"
    assert m["down_invert_ft"] == "DOWNSTREAM"
    assert m["status"] == "LIFECYCLES"
    p = match_columns("parcels", ["SEWER_AVAI", "DWELLING_U"])
    assert p["sewer_available_date"] == "SEWER_AVAI"
    assert p["dwelling_units"] == "DWELLING_U"


def test_match_columns_explicit_wins_and_is_not_reused():
    m = match_columns("mains", ["ID", "FACILITYID"], {"main_id": "ID"})
    assert m["main_id"] == "ID"
    m = match_columns("mains", ["PIPE", "DIA"], {"diameter_in": "pipe"})
    assert m["diameter_in"] == "PIPE"


def test_match_columns_explicit_missing_column_is_schema_error():
    with pytest.raises(SchemaError, match="'DIAM_IN' mapped to diameter_in does not exist"):
        match_columns("mains", ["FACILITYID", "DIA"], {"diameter_in": "DIAM_IN"})


def test_source_column_used_once_by_fallback():
    # OWNER is an alias of owner only; a single 'ID' goes to main_id, not twice
    m = match_columns("mains", ["ID"])
    assert list(v for v in m.values() if v == "ID") == ["ID"]


def test_byte_order_mark_is_accepted(tmp_path):
    (tmp_path / "gisnet.toml").write_bytes(b"\xef\xbb\xbfname = \"BOM town\"\n")
    assert read_town_file(tmp_path).name == "BOM town"


def test_deeply_nested_town_file_is_one_config_error(tmp_path):
    (tmp_path / "gisnet.toml").write_text("a = " + "[" * 100_000, encoding="utf-8")
    with pytest.raises(ConfigError, match="nested too deeply"):
        read_town_file(tmp_path)


def test_file_problem_names_what_a_path_is(tmp_path):
    import os

    (tmp_path / "f.shp").write_bytes(b"x")
    os.symlink("loop", tmp_path / "loop")
    os.symlink("nowhere", tmp_path / "broken")
    os.mkfifo(tmp_path / "fifo")
    assert townfile.file_problem(tmp_path / "f.shp") is None
    assert townfile.file_problem(tmp_path, folder_ok=True) is None
    assert townfile.file_problem(tmp_path) == "is a folder, not a file"
    assert "symbolic link loop" in townfile.file_problem(tmp_path / "loop")
    assert "broken symbolic link" in townfile.file_problem(tmp_path / "broken")
    assert townfile.file_problem(tmp_path / "none") == "file not found"
    assert "FIFO" in townfile.file_problem(tmp_path / "fifo")
    assert "device" in townfile.file_problem(Path("/dev/null"))


def test_town_file_that_is_a_fifo_is_refused_without_opening_it(tmp_path):
    import os

    os.mkfifo(tmp_path / "gisnet.toml")
    with pytest.raises(ConfigError, match="FIFO"):
        read_town_file(tmp_path)  # opening it would block: the test would hang
