"""Validation report and ``gisnet validate`` on fixtures and on the real datasets."""

from __future__ import annotations

import json
import logging
import re
import tomllib
from pathlib import Path

import geopandas as gpd
import pyogrio
import pytest
from shapely.geometry import LineString, Polygon

from gisnet.cli import main
from gisnet.errors import LayerError
from gisnet.io import load_town
from gisnet.report import Report
from gisnet.validate import error_report, validate_town

TOWNS = Path(__file__).parent / "towns"


@pytest.fixture(autouse=True)
def _detach_cli_log_handlers():
    yield
    log = logging.getLogger("gisnet")
    log.handlers = [h for h in log.handlers if isinstance(h, logging.NullHandler)]
    log.setLevel(logging.NOTSET)


@pytest.fixture()
def small_town(tmp_path: Path) -> Path:
    d = tmp_path / "small"
    d.mkdir()
    gpd.GeoDataFrame(
        {"PIPE_ID": ["A", "B", "B"], "DIA": ["8", "UNK", "10"], "Shape_Len": [1.0, 2.0, 3.0]},
        geometry=[LineString([(0, 0), (10, 0)]), LineString([(10, 0), (20, 0)]),
                  LineString([(20, 0), (30, 0)])],
        crs="EPSG:2260",
    ).to_file(d / "pipes.gpkg", layer="pipes", engine="pyogrio")
    gpd.GeoDataFrame(
        {"PIN": ["P1"]}, geometry=[Polygon([(0, 5), (5, 5), (5, 10), (0, 10)])], crs="EPSG:2260",
    ).to_file(d / "parcels.geojson", engine="pyogrio")
    (d / "gisnet.toml").write_text(
        'profile = "berlin-nh"\n'
        '[layers.mains]\npath = "pipes.gpkg"\nlayer = "pipes"\n'
        '[layers.parcels]\npath = "parcels.geojson"\n', encoding="utf-8")
    return d


def test_report_per_layer(small_town):
    rep = validate_town(load_town(small_town))
    assert rep.usable and rep.exit_code == 0
    mains = next(s for s in rep.layers if s.role == "mains")
    assert (mains.features_read, mains.features_kept) == (3, 3)
    assert mains.source_layer == "pipes"
    assert mains.mapping["main_id"] == "PIPE_ID" and mains.mapping["diameter_in"] == "DIA"
    assert "material" in mains.missing and "main_id" not in mains.missing
    kinds = {f.kind for f in mains.findings}
    assert {"non_numeric", "duplicate_id"} <= kinds
    assert all(f.layer == "mains" for f in mains.findings)
    assert any(f.kind == "working_crs" for f in rep.findings)


def test_text_and_json_say_the_same(small_town):
    rep = validate_town(load_town(small_town))
    text = rep.to_text()
    assert re.search(r"\n +main_id +<- PIPE_ID\n", text)  # padded to the longest name
    assert re.search(r"\n +material +<- missing\n", text)
    assert "features: 3 read, 3 kept" in text
    doc = json.loads(rep.to_json())
    assert doc["usable"] is True
    mains = next(x for x in doc["layers"] if x["role"] == "mains")
    assert mains["mapping"]["main_id"] == "PIPE_ID"
    assert "material" in mains["missing_columns"]
    assert {f["kind"] for f in mains["findings"]} >= {"non_numeric", "duplicate_id"}
    n = sum(len(x["findings"]) for x in doc["layers"]) + len(doc["findings"])
    assert n == sum(doc["counts"].values())
    for f in rep.all_findings:
        assert f.message in text


def test_extra_findings_added_and_errors_make_it_unusable(small_town):
    town = load_town(small_town)
    extra = Report()
    extra.add("cycle", "error", "mains: cycle A -> B -> A", layer="mains", feature_id="A,B")
    extra.add("graph_pieces", "info", "2 disconnected pieces")
    rep = validate_town(town, extra)
    assert not rep.usable and rep.exit_code == 2
    mains = next(s for s in rep.layers if s.role == "mains")
    assert any(f.kind == "cycle" for f in mains.findings)
    assert any(f.kind == "graph_pieces" for f in rep.findings)
    assert "NOT USABLE" in rep.to_text()


def test_error_report():
    rep = error_report(LayerError("file not found", path="/x/m.shp", layer="mains"), "T")
    assert not rep.usable and rep.exit_code == 2
    assert "NOT USABLE: /x/m.shp: layer 'mains': file not found" in rep.to_text()
    assert json.loads(rep.to_json())["error"].endswith("file not found")


def test_cli_json(capsys, small_town):
    rc = main(["validate", "--layers", str(small_town), "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    assert json.loads(out)["usable"] is True


def test_cli_validate_with_graph_findings(capsys, small_town):
    main(["validate", "--layers", str(small_town), "--json", "--no-graph"])
    plain = json.loads(capsys.readouterr().out)
    rc = main(["validate", "--layers", str(small_town), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == (0 if doc["usable"] else 2)
    # the graph adds its own findings on top of the loader's
    assert sum(doc["counts"].values()) > sum(plain["counts"].values())


# --------------------------------------------------------------------------- real datasets


def _features(path: Path, key: str | None = None, allowed: tuple[str, ...] = ()) -> int:
    """Count features independently of gisnet: GeoJSON by json, others by read_info."""
    if path.suffix == ".geojson":
        feats = json.loads(path.read_text(encoding="utf-8"))["features"]
        if key:
            feats = [f for f in feats if f["properties"].get(key) in allowed]
        return len(feats)
    if path.suffix == ".topojson":
        doc = json.loads(path.read_text(encoding="utf-8"))
        return sum(len(o["geometries"]) for o in doc["objects"].values())
    return int(pyogrio.read_info(path)["features"])


#: The rows each town file's ``where`` keeps, as (property, allowed values), by file name.
WHERE = {
    "BenningtonLinearFeatures.geojson": ("Type", ("Sewer pipe", "Combined sewer pipe")),
    "BenningtonPointFeatures.geojson": ("Type", ("Sewer manhole", "Other")),
    "BenningtonWWTF.geojson": ("Program Category", ("Municipal Discharge",)),
}
#: Town files of real data: in tests/data, or (Bennington whole, Cambridge) in the
#: optional ../shared/data.
REAL_TOWNS = ["bennington_vt", "bennington_vt_clip", "lancaster_ca", "washington_park_fl",
              "cambridge_ma_parcels"]


def _expected(town_dir: Path) -> dict[str, int]:
    """Features per role of a town file, counted from the files it names (not by gisnet)."""
    with (town_dir / "gisnet.toml").open("rb") as fh:
        layers = tomllib.load(fh)["layers"]
    out = {}
    for role, layer in layers.items():
        path = (town_dir / layer["path"]).resolve()
        key, allowed = WHERE.get(path.name, (None, ()))
        out[role] = _features(path, key, allowed)
    return out


@pytest.mark.parametrize("town", REAL_TOWNS)
def test_validate_real_dataset_counts(capsys, real_town, town):
    expected = _expected(real_town(town))
    rc = main(["validate", "--layers", str(TOWNS / town), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["usable"]
    got = {x["role"]: (x["features_read"], x["features_kept"]) for x in doc["layers"]}
    assert set(expected) <= set(got)
    for role, n in expected.items():
        assert got[role][0] == n, role
        # nothing is dropped in these files, and only Cambridge's parcels are polygons
        assert got[role][1] == n, role


def test_bennington_says_it_was_reprojected(capsys, real_town):
    rc = main(["validate", "--layers", str(real_town("bennington_vt_clip"))])
    out = capsys.readouterr().out
    assert rc == 0
    assert "geographic (lon/lat) input in EPSG:4979" in out
    assert "reprojected to EPSG:326" in out
    assert "Z/M coordinates dropped" in out
    assert 'where "Type" IN' in out


def test_expected_counts_are_real(real_town):
    # guard against the expectation helper silently counting nothing (or everything)
    clip = _expected(real_town("bennington_vt_clip"))
    assert clip == {"mains": 173, "manholes": 157, "plants": 1}
    assert _expected(real_town("lancaster_ca")) == {"mains": 65}
    assert _expected(real_town("washington_park_fl")) == {"mains": 35, "manholes": 39}


def test_expected_counts_are_real_on_the_full_datasets(real_town):
    assert _expected(real_town("bennington_vt")) == {"mains": 1668, "manholes": 1629,
                                                     "plants": 1}
    assert _expected(real_town("cambridge_ma_parcels")) == {"parcels": 13159}


def test_findings_of_one_kind_are_grouped(small_town):
    """Thousands of no_outlet findings are one line with the count and the first ids;
    no line is thousands of characters long."""
    from gisnet.report import Finding, Report

    town = load_town(small_town)
    extra = Report()
    extra.extend([Finding("no_outlet", "warning", f"manhole MH{i} has no path to a plant",
                          "manholes", f"MH{i}") for i in range(2500)])
    extra.extend([Finding("cycle", "warning", "x" * 7000, "mains", ",".join(map(str, range(900))))])
    text = validate_town(town, extra).to_text()
    lines = [ln for ln in text.splitlines() if "no_outlet" in ln]
    assert len(lines) == 1
    assert "no_outlet x2500" in lines[0] and "MH0, MH1, MH2, MH3, MH4 and 2495 more" in lines[0]
    assert max(len(ln) for ln in text.splitlines()) < 400


def test_verdict_per_analysis(small_town):
    """The report ends saying whether each analysis can be answered and what limits it."""
    rep = validate_town(load_town(small_town))
    by = {v.analysis: v for v in rep.verdicts}
    assert set(by) == {"obligations", "control manholes", "capacity"}
    # no manholes layer: control manholes cannot be found
    assert by["control manholes"].answer == "no"
    assert any("no manholes layer" in x for x in by["control manholes"].limits)
    # one of three pipes has no usable diameter ('UNK'), none has a slope or inverts
    assert by["capacity"].answer == "no"
    assert "no main has a slope or both inverts" in by["capacity"].limits
    text = rep.to_text()
    assert text.splitlines()[-4] == "can it answer:"
    assert rep.as_dict()["verdicts"][0]["analysis"] == "obligations"


def test_first_lines_say_how_much_drains_to_a_plant(sample_dir: Path) -> None:
    """The sample's cut-off two-node piece (problems.json, gap_not_snapped) drains
    only to an assumed end; everything else reaches the plant or the outfall.
    The counts are checked with networkx against the graph's outlets."""
    import networkx as nx

    from gisnet.graph import build_sewer_graph

    town = load_town(sample_dir)
    G = build_sewer_graph(town)
    text = validate_town(town, G.graph["report"]).to_text().splitlines()
    assert text[2].startswith("drains: ")
    assumed = {f.feature_id.split(",")[0] for f in G.graph["report"]
               if f.kind == "outlet_assumed"}
    real = [n for n in G.graph["outlets"] if n not in assumed]
    R = G.reverse(copy=False)
    to_real = set(real).union(*(nx.descendants(R, o) for o in real))
    to_assumed = set(assumed).union(*(nx.descendants(R, o) for o in assumed)) - to_real
    n = len(G)
    assert f"{len(to_real):,} of {n:,} nodes" in text[2]
    assert f"; {len(to_assumed):,} ({100 * len(to_assumed) / n:.1f} %" in text[2]
    assert len(to_assumed) == 2 and sum(t.startswith("drains: ") for t in text) == 1
