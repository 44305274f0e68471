"""``gisnet init``: roles, column and value maps proposed from the layers found."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import geopandas as gpd
import pytest
from shapely.geometry import LineString, Point, Polygon

from gisnet.cli import main
from gisnet.init import canonical_value, propose

CRS = "EPSG:2260"


def _folder(tmp_path: Path) -> Path:
    d = tmp_path / "town"
    d.mkdir()
    gpd.GeoDataFrame(
        {"FACILITYID": ["S1", "S2", "D1"], "Type": ["Sanitary Line", "Sanitary Line", "Storm Line"],
         "Status": ["Existing", "In Service", "Abandoned in Place"]},
        geometry=[LineString([(0, 0), (100, 0)]), LineString([(100, 0), (200, 0)]),
                  LineString([(0, 50), (200, 50)])], crs=CRS,
    ).to_file(d / "sewer_lines.shp", engine="pyogrio")
    gpd.GeoDataFrame(
        {"PRINT_KEY": ["1.-1-1", "1.-1-2"], "PROP_ADDR": ["1 Main St", "3 Main St"],
         "PROP_CLASS": ["210", "484"]},
        geometry=[Polygon([(0, 10), (50, 10), (50, 40), (0, 40)]),
                  Polygon([(60, 10), (110, 10), (110, 40), (60, 40)])], crs=CRS,
    ).to_file(d / "tax.gpkg", layer="tax_parcels", engine="pyogrio")
    gpd.GeoDataFrame({"MH_ID": ["M1", "M2", "M3"], "Type": ["Sanitary Manhole"] * 3},
                     geometry=[Point(0, 0), Point(100, 0), Point(200, 0)], crs=CRS,
                     ).to_file(d / "tax.gpkg", layer="manholes", engine="pyogrio")
    gpd.GeoDataFrame({"FacilityName": ["Town WWTF"], "DesignHydraulicCapacityInMGD": [0.5]},
                     geometry=[Point(260, 0)], crs=CRS).to_file(d / "WWTF.geojson",
                                                                engine="pyogrio")
    gpd.GeoDataFrame({"NAME": ["Town"]}, geometry=[Polygon([(-9, -9), (300, -9), (300, 90)])],
                     crs=CRS).to_file(d / "TownBorder.geojson", engine="pyogrio")
    return d


def test_roles_columns_values_and_where(tmp_path: Path) -> None:
    p = propose(_folder(tmp_path), "poughkeepsie-fourth-ward")
    chosen = p.chosen()
    assert set(chosen) == {"mains", "manholes", "parcels", "plants"}
    mains = chosen["mains"]
    assert mains.mapping["main_id"] == "FACILITYID" and mains.mapping["kind"] == "Type"
    kinds = {v: c for v, _, c in mains.values["kind"]}
    assert kinds == {"Sanitary Line": "sanitary", "Storm Line": "storm"}
    # lines that are not sewers are left out by a where filter
    assert mains.where == "\"Type\" NOT IN ('Storm Line')"
    status = {v: c for v, _, c in mains.values["status"]}
    assert status == {"Existing": "active", "In Service": "active",
                      "Abandoned in Place": "abandoned"}
    parcels = chosen["parcels"]
    assert (parcels.layer, parcels.mapping["parcel_id"], parcels.mapping["address"],
            parcels.mapping["land_use"]) == ("tax_parcels", "PRINT_KEY", "PROP_ADDR",
                                             "PROP_CLASS")
    assert {v for v, _, _ in parcels.values["land_use"]} == {"210", "484"}
    assert chosen["plants"].mapping["design_flow_mgd"] == "DesignHydraulicCapacityInMGD"
    border = next(f for f in p.layers if f.path.name == "TownBorder.geojson")
    assert border.role is None and "boundary" in border.why


def test_init_writes_a_town_file_that_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    d = _folder(tmp_path)
    monkeypatch.chdir(d)
    assert main(["init", "--profile", "poughkeepsie-fourth-ward"]) == 0
    out = capsys.readouterr().out
    assert "Storm Line (1) -> storm" in out and "Existing (1) -> active" in out
    text = (d / "gisnet.toml").read_text(encoding="utf-8")
    assert "# guess" in text and "profile = \"poughkeepsie-fourth-ward\"\n" in text
    doc = tomllib.loads(text)
    assert doc["layers"]["mains"]["values"]["kind"] == {"Sanitary Line": "sanitary",
                                                        "Storm Line": "storm"}
    assert main(["run", "--no-maps", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["layers"]["mains"] == 2  # the storm line is not a sewer
    assert s["layers"]["parcels"] == 2 and s["graph"]["outlets"] == 1


def test_init_never_overwrites_without_force(tmp_path: Path, capsys) -> None:
    d = _folder(tmp_path)
    (d / "gisnet.toml").write_text("# mine\n", encoding="utf-8")
    assert main(["init", str(d)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (d / "gisnet.toml").read_text(encoding="utf-8") == "# mine\n"
    assert main(["init", str(d), "--force", "-q"]) == 0
    assert "[layers.mains]" in (d / "gisnet.toml").read_text(encoding="utf-8")


def test_init_guessed_profile_is_marked_and_names_the_choices(tmp_path: Path) -> None:
    d = _folder(tmp_path)
    assert main(["init", str(d), "-q"]) == 0
    line = next(x for x in (d / "gisnet.toml").read_text().splitlines()
                if x.startswith("profile"))
    assert "# guess" in line and "berlin-nh" in line and "poughkeepsie-fourth-ward" in line


def test_init_town_file_elsewhere_points_back(tmp_path: Path, capsys) -> None:
    d = _folder(tmp_path)
    out = tmp_path / "elsewhere" / "gisnet.toml"
    out.parent.mkdir()
    assert main(["init", str(d), "--out", str(out), "--profile", "berlin-nh", "-q"]) == 0
    assert not (d / "gisnet.toml").exists()
    assert main(["validate", "--layers", str(out.parent), "--no-graph", "-q"]) == 0


def test_init_unknown_profile_and_empty_folder_are_one_line_errors(tmp_path: Path,
                                                                   capsys) -> None:
    assert main(["init", str(_folder(tmp_path)), "--profile", "nowhere"]) == 2
    assert "unknown profile" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["init", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "no layers here" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("role,col,value,canon", [
    ("mains", "status", "Existing", "active"),
    ("mains", "status", "In Service", "active"),
    ("mains", "status", "Abandoned in Place", "abandoned"),
    ("mains", "kind", "Combined sewer pipe", "combined"),
    ("mains", "kind", "Sewer pipe", "sanitary"),
    ("mains", "kind", "Storm Line", "storm"),
    ("manholes", "kind", "Known CSO Outfalls", "outfall"),
    ("manholes", "kind", "CB tied to Sanitary Sewer", "catch_basin"),
    ("manholes", "kind", "Information point", "unknown"),
])
def test_canonical_values_of_real_towns(role, col, value, canon) -> None:
    assert canonical_value(role, col, value) == canon
