"""The public API a notebook user meets: ``gisnet.load_town``, ``gisnet.Town.from_frames``,
``gisnet.analyse`` and ``gisnet.Results`` with its follow-up questions, and docs/api.md,
whose every ``python`` block is run here in order.

Traces and what-if answers are checked against the command line's (``gisnet trace``,
``gisnet whatif --json``) for the same parcel, and the frames' town against the one
read from the same files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest

import gisnet
from gisnet import pipeline
from gisnet.errors import ConfigError, CRSError, LayerError, NotFoundError, SchemaError
from gisnet.results import Unavailable
from gisnet.serialize import dumps_text

ROOT = Path(__file__).resolve().parents[1]
API_DOC = ROOT / "docs" / "api.md"
PROFILE = "poughkeepsie-fourth-ward"
ROLES = ("parcels", "buildings", "streets", "mains", "manholes", "plants", "laterals",
         "users", "district")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def town(sample_dir):
    return gisnet.load_town(sample_dir)


@pytest.fixture(scope="module")
def res(town):
    return gisnet.analyse(town)


@pytest.fixture(scope="module")
def frames(sample_dir) -> dict[str, gpd.GeoDataFrame]:
    """The sample's shapefiles as geopandas reads them."""
    return {role: gpd.read_file(sample_dir / f"{role}.shp") for role in ROLES}


@pytest.fixture(scope="module")
def mapping(sample_dir) -> dict:
    """The sample town file's column and value maps and settings, as from_frames keywords."""
    tf = tomllib.loads((sample_dir / "gisnet.toml").read_text(encoding="utf-8"))
    layers = tf["layers"]
    return {"columns": {r: t["columns"] for r, t in layers.items() if "columns" in t},
            "values": {r: t["values"] for r, t in layers.items() if "values" in t},
            "slope_units": tf["units"]["slope"], "outlet_nodes": tf["outlet_nodes"],
            "snap_tolerance_ft": tf["snap_tolerance_ft"], "name": tf["name"],
            "plant_flows": sample_dir / tf["plant_flows"]["path"]}


@pytest.fixture(scope="module")
def frames_town(frames, mapping):
    return gisnet.Town.from_frames(**frames, profile=PROFILE, **mapping)


def _cli_json(capsys, *argv: str) -> dict:
    from gisnet.cli import main

    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _kinds(town) -> list[str]:
    return [f.kind for f in town.report]


# --------------------------------------------------------------------------- the package


def test_import_gisnet_is_light_and_names_its_public_api():
    code = ("import sys, gisnet\n"
            "heavy = ('geopandas', 'networkx', 'folium', 'pandas', 'shapely', 'pyproj')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n"
            "gisnet.Town\n"
            "print('geopandas' in sys.modules, 'folium' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True).stdout.splitlines()
    assert out == ["[]", "True False"]
    public = {"load_town", "Town", "analyse", "Results", "GisnetError", "ConfigError",
              "LayerError", "SchemaError", "CRSError", "TopologyError", "NotFoundError"}
    assert set(gisnet.__all__) == public | {"__version__"}
    assert public <= set(dir(gisnet))
    assert "importlib" not in dir(gisnet) and "TYPE_CHECKING" not in dir(gisnet)
    from gisnet.errors import GisnetError
    from gisnet.io.loading import load_town
    from gisnet.town import Town

    assert gisnet.load_town is load_town and gisnet.Town is Town
    assert gisnet.analyse is pipeline.analyse
    assert gisnet.Results is pipeline.Results  # one class
    assert issubclass(gisnet.ConfigError, gisnet.GisnetError) and gisnet.GisnetError is GisnetError
    with pytest.raises(AttributeError, match="no attribute 'load_twon'"):
        _ = gisnet.load_twon  # type: ignore[attr-defined]


def test_py_typed_is_shipped():
    assert (ROOT / "gisnet" / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["gisnet"]


def test_readme_points_to_the_api_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1].split("\n## ", 1)[0]
    assert "docs/api.md" in section
    assert "gisnet.load_town(" in section and "gisnet.analyse(" in section
    assert "from gisnet.pipeline import" not in section


# --------------------------------------------------------------------------- docs/api.md


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_every_python_block_of_the_api_page_runs_in_order(sample_dir, tmp_path, monkeypatch):
    blocks = _python_blocks(API_DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 10
    shutil.copytree(sample_dir, tmp_path / "layers" / "sample")
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/api.md block {i + 1}", "exec"), ns)
        except Exception as exc:  # pragma: no cover - the message names the block
            raise AssertionError(f"docs/api.md block {i + 1} fails: {exc!r}\n{code}") from exc
    # what the page shows is what the code gives
    assert isinstance(ns["res"], gisnet.Results)
    assert (ns["required"]["status"] == "required").all() and len(ns["required"]) == 1
    assert ns["t"]["control_manhole_id"] == "MH000030" and ns["t"]["plant_id"] == "WWTP-01"
    assert round(ns["t"]["length_ft"]) == 1940
    assert (len(ns["up"]["pipes"]), len(ns["up"]["parcels"])) == (10, 57)
    assert ns["w"].control_manhole == "MH000030" and ns["w"].crossings == []
    path = Path(ns["path"])
    assert path == tmp_path / "out" / "gisnet-results.gpkg" and path.is_file()
    assert "obligations" in {str(n) for n, _ in pyogrio.list_layers(path)}
    assert (tmp_path / "out" / "obligations.html").stat().st_size > 10_000
    statuses = ns["res2"].layers["obligations"].set_index("parcel_id")["status"]
    assert statuses.equals(ns["ob"].set_index("parcel_id")["status"])
    shown = API_DOC.read_text(encoding="utf-8")
    assert "res.whatif needs the 'capacity' step" in shown


def test_api_page_output_matches_the_sample(res):
    """The counts printed on docs/api.md are the sample's."""
    text = API_DOC.read_text(encoding="utf-8")
    counts = res.layers["obligations"]["status"].value_counts()
    for status, n in counts.items():
        assert re.search(rf"^{status}\s+{n}$", text, flags=re.M), (status, n)


# --------------------------------------------------------------------------- Town.from_frames


def test_frames_give_the_same_town_as_the_files(sample_dir, frames, mapping):
    # both fresh: analysing a town adds the analyses' findings to its report
    town = gisnet.load_town(sample_dir)
    frames_town = gisnet.Town.from_frames(**frames, profile=PROFILE, **mapping)
    assert frames_town.crs == town.crs and frames_town.ft_per_unit == town.ft_per_unit
    assert set(frames_town.layers) == set(town.layers)
    for role, gdf in town.layers.items():
        pd.testing.assert_frame_equal(pd.DataFrame(frames_town.layers[role]),
                                      pd.DataFrame(gdf), check_like=False, obj=role)
    # the same findings while loading, the same settings
    assert _kinds(frames_town) == _kinds(town)
    for key in ("snap_tolerance_ft", "plant_tolerance_ft", "outlet_nodes", "slope_units",
                "diameter_units", "manning_n_by_material"):
        assert getattr(frames_town.settings, key) == getattr(town.settings, key), key
    pd.testing.assert_frame_equal(frames_town.plant_flows, town.plant_flows)
    assert frames_town.settings.extra["layer_info"]["parcels"].engine == "memory"
    assert frames_town.sources == {}  # no input files to protect


def test_frames_give_the_same_obligations_statuses_as_the_files(res, frames_town):
    got = gisnet.analyse(frames_town, only={"obligations"})
    a = got.layers["obligations"].set_index("parcel_id")["status"].sort_index()
    b = res.layers["obligations"].set_index("parcel_id")["status"].sort_index()
    assert len(a) == 3000 and a.equals(b)
    assert set(a) >= {"connected", "required", "not_required", "subject_to_notice"}


def test_frames_given_are_not_changed(frames, mapping):
    before = {r: g.copy() for r, g in frames.items()}
    gisnet.Town.from_frames(parcels=frames["parcels"], mains=frames["mains"], profile=PROFILE,
                            columns={r: mapping["columns"][r] for r in ("parcels", "mains")})
    for r, g in frames.items():
        pd.testing.assert_frame_equal(pd.DataFrame(g), pd.DataFrame(before[r]))
        assert g.crs == before[r].crs


def test_a_geographic_frame_is_reprojected_and_reported(town, frames, mapping):
    parcels_ll = frames["parcels"].to_crs("EPSG:4326")
    t = gisnet.Town.from_frames(parcels=parcels_ll, mains=frames["mains"], profile=PROFILE,
                                crs="EPSG:2260",
                                columns={r: mapping["columns"][r] for r in ("parcels", "mains")})
    assert t.crs.to_epsg() == 2260
    found = [f.message for f in t.report if f.kind == "reprojected"]
    assert len(found) == 1 and "parcels" in found[0] and "geographic" in found[0]
    assert "EPSG:4326" in found[0] and "EPSG:2260" in found[0]
    # back in State Plane feet, each parcel within a hundredth of a foot of the file's
    a = t.layers["parcels"].set_index("parcel_id").geometry
    b = town.layers["parcels"].set_index("parcel_id").geometry.reindex(a.index)
    assert len(a) == 3000
    assert float(a.hausdorff_distance(b).max()) < 0.01
    assert np.allclose(a.area, b.area, rtol=1e-6)


def test_working_crs_without_crs_given(frames, mapping):
    cols = {r: mapping["columns"][r] for r in ("parcels", "mains")}
    # a projected frame gives it (mains first)
    t = gisnet.Town.from_frames(parcels=frames["parcels"].to_crs("EPSG:4326"),
                                mains=frames["mains"], profile=PROFILE, columns=cols)
    assert t.crs.to_epsg() == 2260
    assert any("the CRS of the mains layer" in f.message for f in t.report
               if f.kind == "working_crs")
    # all geographic: the UTM zone of the data; 73.9 degrees W lies in zone 18 (78-72 W)
    t = gisnet.Town.from_frames(parcels=frames["parcels"].to_crs("EPSG:4326"),
                                mains=frames["mains"].to_crs("EPSG:4326"), profile=PROFILE,
                                columns=cols)
    assert t.crs.to_epsg() == 32618
    assert any("UTM zone" in f.message for f in t.report if f.kind == "working_crs")
    assert t.ft_per_unit == pytest.approx(1 / 0.3048)


def test_a_frame_without_crs_is_refused_unless_crs_is_given(frames, mapping):
    bare = frames["mains"].set_crs(None, allow_override=True)
    cols = {"mains": mapping["columns"]["mains"]}
    with pytest.raises(CRSError, match="no CRS") as err:
        gisnet.Town.from_frames(mains=bare, profile=PROFILE, columns=cols)
    assert err.value.layer == "mains" and "crs=" in str(err.value)
    t = gisnet.Town.from_frames(mains=bare, profile=PROFILE, columns=cols, crs="EPSG:2260")
    assert t.crs.to_epsg() == 2260 and len(t.layers["mains"]) == len(bare)
    assert "crs_assumed" in _kinds(t)
    assert t.settings.extra["layer_info"]["mains"].crs_assumed
    # coordinates in feet assumed to be lon/lat do not fit: refused, not misplaced
    with pytest.raises(CRSError):
        gisnet.Town.from_frames(mains=bare, profile=PROFILE, columns=cols, crs="EPSG:4326")
    with pytest.raises(CRSError, match="not a CRS"):
        gisnet.Town.from_frames(mains=bare, profile=PROFILE, columns=cols, crs="EPSG:nope")


def test_profile_is_required_and_named(frames):
    with pytest.raises(ConfigError, match="profile=") as err:
        gisnet.Town.from_frames(parcels=frames["parcels"])
    assert "poughkeepsie-fourth-ward" in str(err.value) and "berlin-nh" in str(err.value)
    with pytest.raises(ConfigError, match="unknown profile"):
        gisnet.Town.from_frames(parcels=frames["parcels"], profile="atlantis")


def test_bad_frames_and_maps_are_clear_errors(frames):
    p = frames["parcels"]
    with pytest.raises(LayerError, match="must be a GeoDataFrame, not a DataFrame"):
        gisnet.Town.from_frames(parcels=pd.DataFrame(p.drop(columns="geometry")),
                                profile=PROFILE)
    with pytest.raises(LayerError, match="empty layer"):
        gisnet.Town.from_frames(parcels=p.iloc[:0], profile=PROFILE)
    with pytest.raises(LayerError, match="repeat"):
        twice = pd.concat([p[["PRINT_KEY"]], p[["PRINT_KEY", "geometry"]]], axis=1)
        gisnet.Town.from_frames(parcels=gpd.GeoDataFrame(twice, geometry="geometry"),
                                profile=PROFILE)
    with pytest.raises(ConfigError, match="at least one layer"):
        gisnet.Town.from_frames(profile=PROFILE)
    with pytest.raises(ConfigError, match="no mains frame"):
        gisnet.Town.from_frames(parcels=p, profile=PROFILE,
                                columns={"mains": {"main_id": "FACILITYID"}})
    with pytest.raises(ConfigError, match=r"layers\.parcels\.columns\.parcel_number"):
        gisnet.Town.from_frames(parcels=p, profile=PROFILE,
                                columns={"parcels": {"parcel_number": "PRINT_KEY"}})
    with pytest.raises(SchemaError, match="NO_SUCH") as err:
        gisnet.Town.from_frames(parcels=p, profile=PROFILE,
                                columns={"parcels": {"parcel_id": "NO_SUCH"}})
    assert err.value.layer == "parcels"
    with pytest.raises(ConfigError, match="slope"):
        gisnet.Town.from_frames(parcels=p, profile=PROFILE, slope_units="degrees")


def test_plant_flows_from_a_dataframe_as_from_the_csv(frames, mapping, sample_dir):
    csv = sample_dir / "plant_flows.csv"
    kw = {"plants": frames["plants"], "mains": frames["mains"], "profile": PROFILE,
          "columns": {r: mapping["columns"][r] for r in ("plants", "mains")}}
    a = gisnet.Town.from_frames(plant_flows=csv, **kw).plant_flows
    b = gisnet.Town.from_frames(plant_flows=pd.read_csv(csv), **kw).plant_flows
    pd.testing.assert_frame_equal(a, b)
    bad = pd.read_csv(csv)
    bad.loc[1, "month"] = "2024-13"
    with pytest.raises(LayerError, match="row 3"):
        gisnet.Town.from_frames(plant_flows=bad, **kw)


# --------------------------------------------------------------------------- Results


def _a_required_parcel(res) -> str:
    ob = res.layers["obligations"]
    return str(ob.loc[ob["status"] == "required", "parcel_id"].iloc[0])


@pytest.mark.slow
def test_trace_of_a_parcel_is_the_cli_answer(res, sample_dir, capsys):
    pid = _a_required_parcel(res)
    cli = _cli_json(capsys, "trace", "--layers", str(sample_dir), "--parcel", pid, "--json")
    t = res.trace(parcel=pid)
    for key in ("control_manhole_id", "plant_id", "reaches_outlet"):
        assert t[key] == cli[key], key
    for key in ("control_length_ft", "length_ft"):
        assert t[key] == pytest.approx(cli[key], abs=1e-6), key
    c = t["connection"].iloc[0]
    assert c["main_id"] == cli["connection"]["main_id"]
    assert (c.geometry.x, c.geometry.y) == pytest.approx(
        (cli["connection"]["x"], cli["connection"]["y"]))
    assert t["path"]["main_id"].tolist() == [r["main_id"] for r in cli["path"]]
    assert t["path"]["length_ft"].to_numpy() == pytest.approx(
        [r["length_ft"] for r in cli["path"]])
    # the path's lengths add up to the trace's length, the first pipe ends at the
    # control manhole (the first public manhole downstream of the tap)
    assert t["path"]["length_ft"].sum() == pytest.approx(t["length_ft"])
    assert t["path"]["edge_v"].iloc[0] == t["control_manhole_id"]
    assert t["path"]["length_ft"].iloc[0] == pytest.approx(t["control_length_ft"])


@pytest.mark.slow
def test_trace_upstream_and_from_a_point_are_the_cli_answers(res, sample_dir, capsys):
    mh = res.trace(parcel=_a_required_parcel(res))["control_manhole_id"]
    cli = _cli_json(capsys, "trace", "--layers", str(sample_dir), "--manhole", mh,
                    "--upstream", "--json")
    up = res.trace(manhole=mh, upstream=True)
    assert sorted(up["pipes"]["main_id"]) == sorted(r["main_id"] for r in cli["pipes"])
    assert sorted(up["parcels"]["parcel_id"]) == sorted(r["parcel_id"] for r in cli["parcels"])
    assert sorted(up["users"]["user_id"]) == sorted(r["user_id"] for r in cli["users"])
    assert dict(up["pipes"].attrs) == pytest.approx(cli["totals"])
    cli = _cli_json(capsys, "trace", "--layers", str(sample_dir), "--point=-73.90,41.67",
                    "--crs", "EPSG:4326", "--json")
    at = res.trace(point=(-73.90, 41.67), crs="EPSG:4326")
    assert at["control_manhole_id"] == cli["control_manhole_id"]
    assert at["connection"].iloc[0]["main_id"] == cli["connection"]["main_id"]
    assert at["length_ft"] == pytest.approx(cli["length_ft"])


@pytest.mark.slow
def test_whatif_is_the_cli_answer(res, sample_dir, capsys):
    pid = _a_required_parcel(res)
    cli = _cli_json(capsys, "whatif", "--layers", str(sample_dir), "--parcel", pid,
                    "--flow-gpd", "25000", "--industrial", "--json")
    w = res.whatif(parcel=pid, flow_gpd=25_000, industrial=True)
    assert json.loads(dumps_text(w.to_dict())) == cli
    # industrial flow is added unpeaked: each pipe's utilization grows by flow / capacity
    cap = res.layers["pipes_capacity"].set_index("edge_key")["capacity_gpd"]
    p = w.pipes.set_index("edge_key")
    grew = p["utilization_after"] - p["utilization_before"]
    assert grew.to_numpy() == pytest.approx((25_000 / cap.reindex(p.index)).to_numpy())
    assert w.control_manhole == res.trace(parcel=pid)["control_manhole_id"]


def test_a_question_whose_step_did_not_run_names_the_step(town):
    only = gisnet.analyse(town, only={"obligations"})
    with pytest.raises(ConfigError, match="'graph' step, which this analysis did not run"):
        only.trace(parcel="6262-10-275")
    with pytest.raises(ConfigError, match="'capacity' step") as err:
        only.whatif(parcel="6262-10-275", flow_gpd=100)
    assert "only=" in str(err.value) and "missing argument" not in str(err.value)
    with pytest.raises(ConfigError, match="pipes_capacity layer needs the 'capacity' step"):
        only.explore("pipes_capacity")
    with pytest.raises(ConfigError, match="'capacity' step"):
        only.layer("plants")
    # a graph is all a trace needs: the index is then built from it, once
    graph_only = gisnet.analyse(town, only={"graph"})
    t = graph_only.trace(parcel="6262-10-275")
    assert t["control_manhole_id"] == "MH000030" and t["plant_id"] == "WWTP-01"
    # a step that failed (strict=False) says why
    failed = gisnet.Results(town, graph=graph_only.graph,
                            unavailable=[Unavailable("capacity", "no outlet reached")])
    with pytest.raises(ConfigError, match=r"failed for town .*: no outlet reached"):
        failed.whatif(parcel="6262-10-275", flow_gpd=100)


def test_follow_up_arguments_are_checked(res):
    pid = _a_required_parcel(res)
    cases = [
        (lambda: res.trace(), "exactly one"),
        (lambda: res.trace(parcel=pid, point=(0, 0)), "exactly one"),
        (lambda: res.trace(manhole="MH000030"), "upstream=True"),
        (lambda: res.trace(parcel=pid, upstream=True), "traces from a manhole"),
        (lambda: res.trace(parcel=pid, crs="EPSG:4326"), "CRS of point"),
        (lambda: res.trace(point=(1.0,)), "two numbers"),
        (lambda: res.trace(point=("a", "b")), "two numbers"),
        (lambda: res.whatif(parcel=pid, flow_gpd="lots"), "number of gallons"),
        (lambda: res.whatif(parcel=pid, flow_gpd=-5), "positive"),
        (lambda: res.whatif(flow_gpd=5), "exactly one"),
        (lambda: res.layer("parcel"), "not a result layer"),
    ]
    for call, words in cases:
        with pytest.raises(ConfigError, match=words):
            call()
    with pytest.raises(NotFoundError, match="NO-SUCH"):
        res.trace(parcel="NO-SUCH")
    with pytest.raises(NotFoundError):
        res.trace(manhole="NO-SUCH", upstream=True)
    with pytest.raises(NotFoundError, match="NO-SUCH"):
        res.whatif(parcel="NO-SUCH", flow_gpd=100)
    with pytest.raises(ConfigError, match=r"no frontage layer"):
        res.layer("frontage")  # the sample has no frontage (no street widths), says why


def test_to_file_writes_every_layer_atomically_and_spares_the_inputs(res, town, tmp_path):
    out = res.to_file(tmp_path / "a" / "results.gpkg")
    assert out == tmp_path / "a" / "results.gpkg" and out in res.files
    names = {str(n) for n, _ in pyogrio.list_layers(out)}
    assert set(res.layers) <= names
    ob = gpd.read_file(out, layer="obligations")
    assert len(ob) == len(res.layers["obligations"]) and ob.crs == town.crs
    assert sorted(p.name for p in out.parent.iterdir()) == ["results.gpkg"]  # no leftovers
    folder = res.to_file(tmp_path / "b")
    assert folder == tmp_path / "b" / "gisnet-results.gpkg" and folder.is_file()
    for bad in (town.settings.extra["town_file"], Path(town.sources["parcels"]),
                Path(town.sources["parcels"]).with_suffix(".dbf")):
        with pytest.raises(ConfigError, match="refusing to write"):
            res.to_file(bad)
    (tmp_path / "c.csv").write_text("x\n")
    with pytest.raises(ConfigError, match="GeoPackage"):
        res.to_file(tmp_path / "c.csv")


def test_to_file_refuses_a_geopackage_input(sample_dir, tmp_path):
    gpkg = tmp_path / "parcels.gpkg"
    gpd.read_file(sample_dir / "parcels.shp").to_file(gpkg, layer="parcels")
    town = gisnet.load_town(sample_dir, overrides={"parcels": gpkg})
    res = gisnet.analyse(town, only={"obligations"})
    before = gpkg.read_bytes()
    with pytest.raises(ConfigError, match="refusing to write"):
        res.to_file(gpkg)
    assert gpkg.read_bytes() == before


@pytest.mark.slow
def test_explore_maps_a_layer_in_gisnet_colours(res):
    import folium

    from gisnet.palettes import STATUS_COLOURS, UTIL_COLOURS

    m = res.explore()
    assert isinstance(m, folium.Map)
    html = m.get_root().render()
    assert _a_required_parcel(res) in html and STATUS_COLOURS["required"] in html
    # lon/lat on the map: the sample lies near 41.67 N, 73.90 W
    lat, lon = np.mean(m.get_bounds(), axis=0)
    assert lat == pytest.approx(41.67, abs=0.05) and lon == pytest.approx(-73.90, abs=0.05)
    pipes = res.explore("pipes_capacity").get_root().render()
    assert UTIL_COLOURS["ok"] in pipes and "utilization_class" in pipes
    own = res.explore("obligations", column="distance_ft", tooltip=["parcel_id"])
    assert isinstance(own, folium.Map)
    with pytest.raises(ConfigError, match="not a result layer"):
        res.explore("nothing")
