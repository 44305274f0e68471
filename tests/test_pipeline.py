"""End to end: ``gisnet run`` on the bundled sample town."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyogrio
import pytest

from gisnet.cli import main


def _hashes(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


@pytest.fixture(scope="module")
def run_out(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("run")
    before = _hashes(sample_dir)
    code = main(["run", "--layers", str(sample_dir), "--out", str(out), "--quiet"])
    return code, out, before


def test_run_exits_zero_and_writes_gpkg_and_maps(run_out):
    code, out, _ = run_out
    assert code == 0
    assert (out / "gisnet-results.gpkg").is_file()
    for page in ("index", "network", "obligations", "sampling", "capacity"):
        assert (out / f"{page}.html").stat().st_size > 1000, page


def test_run_writes_every_result_layer(run_out):
    _, out, _ = run_out
    names = {name for name, _ in pyogrio.list_layers(out / "gisnet-results.gpkg")}
    names.discard("layer_styles")  # the QGIS styles of the layers (tests/test_gpkg_metadata.py)
    expected = {
        "quality", "graph_nodes", "graph_edges", "obligations", "obligation_evidence",
        "connection_zone", "control_manholes", "control_paths", "sampling_plan",
        "pipes_capacity", "plants",
    }
    assert expected <= names
    # the sample town's ordinance (Poughkeepsie) charges nothing by front footage
    assert "frontage" not in names


def test_run_leaves_inputs_byte_identical(run_out, sample_dir: Path):
    _, _, before = run_out
    assert _hashes(sample_dir) == before


def test_run_json_summary_counts_match_layers(sample_dir: Path, tmp_path: Path, capsys):
    code = main(["run", "--layers", str(sample_dir), "--out", str(tmp_path), "--json",
                 "--no-maps"])
    assert code == 0
    s = json.loads(capsys.readouterr().out)
    obligations = pyogrio.read_dataframe(tmp_path / "gisnet-results.gpkg", layer="obligations",
                                         read_geometry=False)
    assert sum(s["obligations"].values()) == len(obligations)
    assert s["obligations"] == obligations["status"].value_counts().sort_index().to_dict()
    pipes = pyogrio.read_dataframe(tmp_path / "gisnet-results.gpkg", layer="pipes_capacity",
                                   read_geometry=False)
    assert s["pipes"]["pipes"] == len(pipes)
    assert s["graph"]["edges"] == len(pipes)


def test_run_on_missing_folder_is_one_clear_error(tmp_path: Path, capsys):
    code = main(["run", "--layers", str(tmp_path / "nowhere"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "nowhere" in err
    assert "Traceback" not in err


def test_run_writes_tables_on_request(sample_dir: Path, tmp_path: Path):
    """--tables csv/geojson/parquet: one file per layer and format, each holding the
    layer's rows; GeoJSON in lon/lat (RFC 7946) and Parquet in the working CRS."""
    import geopandas as gpd
    import pandas as pd
    from pyproj import Transformer

    code = main(["run", "--layers", str(sample_dir), "--out", str(tmp_path), "--no-maps",
                 "--quiet", "--tables", "csv", "--tables", "geojson", "--tables", "parquet"])
    assert code == 0
    gpkg = tmp_path / "gisnet-results.gpkg"
    tables = tmp_path / "tables"
    for name, _ in pyogrio.list_layers(gpkg):
        if name == "layer_styles":  # QGIS styles, no result layer
            continue
        n = pyogrio.read_info(gpkg, layer=name)["features"]
        assert len(pd.read_csv(tables / f"{name}.csv")) == n, name
        assert len(gpd.read_parquet(tables / f"{name}.parquet")) == n, name
    ob = pyogrio.read_dataframe(gpkg, layer="obligations")
    gj = gpd.read_file(tables / "obligations.geojson")
    assert gj.crs.to_epsg() == 4326 and len(gj) == len(ob)
    # the first parcel's first vertex, reprojected independently with pyproj
    x, y = ob.geometry.iloc[0].exterior.coords[0]
    lon, lat = Transformer.from_crs(ob.crs, 4326, always_xy=True).transform(x, y)
    glon, glat = gj.geometry.iloc[0].exterior.coords[0]
    assert abs(glon - lon) < 1e-7 and abs(glat - lat) < 1e-7
    pq = gpd.read_parquet(tables / "obligations.parquet")
    assert pq.crs == ob.crs
    assert list(pq["parcel_id"]) == list(ob["parcel_id"])
    assert (pq["distance_ft"] - ob["distance_ft"]).abs().max() < 1e-9


def test_unknown_table_format_is_a_config_error(tmp_path: Path):
    import pandas as pd

    from gisnet.errors import ConfigError
    from gisnet.output import write_tables

    with pytest.raises(ConfigError, match=r"'xls'.*xlsx"):
        write_tables(tmp_path, {"t": pd.DataFrame({"a": [1]})}, ["xls"])


# ---------------------------------------------------------------------------
# pipeline.analyse: typed results, partial runs, what could not be answered
# ---------------------------------------------------------------------------


def _synthetic_town(n: int = 120, **drop: bool):
    from pyproj import CRS

    from gisnet.profile import load_profile
    from gisnet.testing.synthetic import make_town
    from gisnet.town import Town

    layers = make_town(n, seed=3)
    for role in drop:
        layers.pop(role)
    crs = CRS.from_user_input("EPSG:2260")
    return Town(name="synthetic", crs=crs, ft_per_unit=1200 / 3937 / 0.3048, layers=layers,
                profile=load_profile("poughkeepsie-fourth-ward"))


def test_analyse_returns_typed_results_whose_layers_and_summary_agree():
    from gisnet.pipeline import analyse
    from gisnet.results import ControlResult, ObligationsResult

    res = analyse(_synthetic_town())
    assert isinstance(res.obligations, ObligationsResult)
    assert isinstance(res.control, ControlResult)
    # Poughkeepsie: no frontage charge; no plant-flow table, so § 168-22.5D is not checked
    assert [u.analysis for u in res.unavailable] == ["frontage", "plant_increase"]
    layers = res.layers()
    assert list(layers) == ["graph_nodes", "graph_edges", "obligations", "obligation_evidence",
                            "connection_zone", "control_manholes", "control_paths",
                            "sampling_plan", "pipes_capacity", "plants", "plant_increase",
                            "quality", "worklist", "overdue"]
    s = res.summary()
    assert s["obligations"] == res.obligations.totals
    assert s["control_manholes"]["connection_points"] == len(layers["control_manholes"])
    assert s["pipes"]["pipes"] == len(layers["pipes_capacity"])
    json.dumps(s, allow_nan=False)  # plain JSON data


def test_analysing_a_town_again_reports_each_finding_once(sample_dir: Path):
    """The service analyses a loaded town on each request: the findings of the tracing
    (laterals off every main, buildings with no connection point) are not repeated."""
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    town = load_town(sample_dir)
    first = analyse(town).quality
    again = analyse(town).quality
    assert {"lateral_off_main", "no_connection_point"} <= set(first["kind"])
    assert again["kind"].value_counts().to_dict() == first["kind"].value_counts().to_dict()


def test_analyse_only_runs_the_needed_steps_in_order():
    from gisnet.pipeline import analyse

    res = analyse(_synthetic_town(), only={"obligations"})
    assert res.graph is None and res.control is None and res.capacity is None
    assert set(res.layers()) == {"obligations", "obligation_evidence", "connection_zone",
                                 "overdue"}
    res = analyse(_synthetic_town(), only={"capacity"})
    assert res.obligations is None and res.graph is not None and res.control is not None
    assert list(res.timings_s) == ["graph", "control", "capacity"]
    with pytest.raises(ValueError, match="steps"):
        analyse(_synthetic_town(), only={"maps"})


def test_the_obligations_reach_the_writer_before_the_graph_and_the_zone_after_capacity():
    """The obligations need no graph: measured first, their layers are given to the
    writer (``on_layers``) while the graph is built; the connection zone, made on one
    thread beside the graph and the control step, is given with the capacity step's
    layers, the same zone a lone step makes on every core."""
    from gisnet.obligations import connection_zone
    from gisnet.pipeline import analyse

    given: list[set[str]] = []
    town = _synthetic_town()
    res = analyse(town, on_layers=lambda layers: given.append(set(layers)))
    assert {"obligations", "obligation_evidence", "overdue"} <= given[0]
    assert not given[0] & {"graph_nodes", "graph_edges", "connection_zone"}
    assert given[1] - given[0] == {"graph_nodes", "graph_edges"}
    assert "connection_zone" not in given[2] and "control_manholes" in given[2]
    assert given[3] - given[2] >= {"pipes_capacity", "connection_zone"}
    assert list(res.timings_s)[:2] == ["obligations", "graph"]
    zone = res.obligations.connection_zone
    assert zone.geometry.iloc[0].equals(connection_zone(town).geometry.iloc[0])


def test_a_zone_that_fails_leaves_the_obligations_and_says_so(monkeypatch):
    """The zone, made beside the graph after the obligations: where it fails, the
    service's analyses (``strict=False``) keep the obligations and name what is
    missing; ``gisnet run`` (strict) stops with the error."""
    import gisnet.pipeline as pipeline
    from gisnet.errors import ConfigError

    def broken(town):
        raise ConfigError("no eligible mains to buffer")

    monkeypatch.setattr(pipeline, "connection_zone", broken)
    res = pipeline.analyse(_synthetic_town(), only={"obligations"}, strict=False)
    assert res.obligations is not None and len(res.obligations.obligations)
    assert res.obligations.connection_zone is None
    assert [(u.analysis, u.reason) for u in res.unavailable
            if u.analysis == "connection_zone"] == [("connection_zone",
                                                     "no eligible mains to buffer")]
    with pytest.raises(ConfigError, match="eligible mains"):
        pipeline.analyse(_synthetic_town(), only={"obligations"})


def test_analyse_says_what_it_could_not_answer():
    from gisnet.pipeline import analyse

    res = analyse(_synthetic_town(users=True, plants=True))
    assert {u.analysis for u in res.unavailable} == {"sampling_plan", "plants", "frontage",
                                                     "plant_increase"}
    assert "sampling_plan" not in res.layers()
    assert "industrial_users" not in res.summary()


def test_analyse_not_strict_records_a_failing_analysis_and_goes_on(monkeypatch):
    import gisnet.pipeline
    from gisnet.errors import TopologyError
    from gisnet.pipeline import analyse

    def fail(*args, **kwargs):
        raise TopologyError("no outlet reachable", layer="mains")

    monkeypatch.setattr(gisnet.pipeline, "compute_capacity", fail)
    with pytest.raises(TopologyError):
        analyse(_synthetic_town())
    res = analyse(_synthetic_town(), strict=False)
    assert [(u.analysis, u.reason) for u in res.unavailable
            if u.analysis != "frontage"] == [("capacity", "layer 'mains': no outlet reachable")]
    assert res.obligations is not None and res.control is not None
    assert res.quality is not None and "pipes_capacity" not in res.layers()


def test_to_jsonable_makes_plain_json_data():
    import datetime as dt

    import geopandas as gpd
    import numpy as np
    import pandas as pd
    from shapely.geometry import Point

    from gisnet.serialize import dumps, dumps_text, to_jsonable

    df = pd.DataFrame({"a": [1, np.nan], "d": pd.to_datetime(["2031-05-01", None]),
                       "b": pd.array([True, pd.NA], dtype="boolean")})
    got = to_jsonable({"n": np.int64(3), "x": np.float64("inf"), "na": pd.NA,
                       "day": dt.date(2030, 1, 2), "frame": df, "arr": np.array([1.5, np.nan]),
                       "t": (1, 2), "p": Point(1, 2)})
    assert got == {"n": 3, "x": None, "na": None, "day": "2030-01-02",
                   "frame": [{"a": 1.0, "d": "2031-05-01T00:00:00", "b": True},
                             {"a": None, "d": None, "b": None}],
                   "arr": [1.5, None], "t": [1, 2],
                   "p": {"type": "Point", "coordinates": [1.0, 2.0]}}
    assert type(got["n"]) is int
    assert json.loads(dumps(got)) == got == json.loads(dumps_text(got))
    gdf = gpd.GeoDataFrame({"id": ["A"], "v": [np.nan]}, geometry=[Point(656_000, 1_033_800)],
                           crs="EPSG:2260")
    fc = to_jsonable(gdf)
    assert fc["type"] == "FeatureCollection" and "crs" not in fc  # EPSG:4326, RFC 7946
    lon, lat = fc["features"][0]["geometry"]["coordinates"]
    assert -74 < lon < -73.8 and 41.6 < lat < 41.8
    assert fc["features"][0]["properties"] == {"id": "A", "v": None}


def test_run_publishes_a_manifest_of_every_file(run_out, sample_dir: Path):
    """Every file the run wrote is in gisnet-manifest.json with its sha256, and no
    staging or temporary file is left behind."""
    from gisnet.output import MANIFEST_FILE, check_manifest

    _, out, _ = run_out
    man = json.loads((out / MANIFEST_FILE).read_text())
    from gisnet.register import REGISTER_FILE

    # the staff register beside the results is no part of a run's output set
    written = {p.relative_to(out).as_posix() for p in out.rglob("*")
               if p.is_file() and not p.name.startswith(".")} - {MANIFEST_FILE, REGISTER_FILE}
    assert (out / REGISTER_FILE).is_file()
    assert set(man["files"]) == written
    assert man["profile_id"] == "poughkeepsie-fourth-ward"
    assert man["town_file_sha256"] == hashlib.sha256(
        (sample_dir / "gisnet.toml").read_bytes()).hexdigest()
    assert check_manifest(out) == []
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".gisnet-lock"]


def test_run_says_once_what_it_did_not_compute(tmp_path: Path, capsys):
    """No silent defaults: the sample's ordinance (Poughkeepsie) has no frontage charge,
    and the sample's plant flows carry no analyses for § 168-22.5D: the run's summary
    says so, in words and in --json."""
    assert main(["run", "--sample", "--no-maps", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "not computed" in ln]
    assert len(lines) == 2
    assert lines[0].strip().startswith("not computed: frontage: profile poughkeepsie-fourth-ward "
                                       "has no frontage rule")
    assert lines[1].strip().startswith("not computed: plant_increase: plant_flows has no "
                                       "ss_mg_l, bod_mg_l, grease_mg_l column: § 168-22.5D")
    assert main(["run", "--sample", "--no-maps", "--json", "--out", str(tmp_path / "b")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert list(summary["not_computed"]) == ["frontage", "plant_increase"]


def test_run_into_a_database_lists_the_database_as_written_text(monkeypatch):
    """A database output is not a path: ``res.files`` holds its URL (password removed)
    as given, a text that ``Path`` would spoil (``postgresql://`` -> ``postgresql:/``)."""
    import gisnet.output.postgis
    from gisnet.pipeline import run

    shown = "postgresql://gis:***@db.example:5432/town?schema=results"
    written = {}

    def write_postgis(url, layers, town, **kwargs):
        written.update(url=url, layers=set(layers))
        return shown

    monkeypatch.setattr(gisnet.output.postgis, "write_postgis", write_postgis)
    import gisnet.register

    # no database here: an empty register, no previous run
    monkeypatch.setattr(gisnet.register, "read_register",
                        lambda _out: gisnet.register.empty_register())
    monkeypatch.setattr(gisnet.register, "previous_run", lambda _out: None)
    res = run(_synthetic_town(), "postgresql://gis:pw@db.example:5432/town?schema=results",
              maps=False, progress=lambda _m: None)
    assert written["url"].endswith("?schema=results") and "obligations" in written["layers"]
    assert res.files == [shown] and isinstance(res.files[0], str)
    assert res.summary()["files"] == [shown]
