"""``gisnet batch``: a region of towns on Dask gives, town by town, what ``gisnet run``
gives; a broken town is reported and the others finish; unchanged towns are skipped."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
from pandas.testing import assert_frame_equal

from gisnet.batch import FAILED, Options, load_region, run_region
from gisnet.batch.runner import make_client
from gisnet.batch.summary import SUMMARY_CSV, SUMMARY_GPKG, SUMMARY_LAYER
from gisnet.cli import main
from gisnet.errors import ConfigError
from gisnet.output import RESULTS_FILE

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"
VERMONT = ("Vergennes", "NewportCity")


def _layers(path: Path) -> dict[str, pd.DataFrame]:
    names = [n for n, _ in pyogrio.list_layers(path) if n != "layer_styles"]
    return {n: pyogrio.read_dataframe(path, layer=n) for n in names}


def assert_same_results(a: Path, b: Path) -> None:
    """Every layer of two results GeoPackages equal, row for row."""
    la, lb = _layers(a / RESULTS_FILE), _layers(b / RESULTS_FILE)
    assert sorted(la) == sorted(lb)
    for name in la:
        assert len(la[name]) == len(lb[name]), name
        assert_frame_equal(la[name], lb[name], obj=f"{a.name} layer {name}")


@pytest.fixture(scope="module")
def client():
    c = make_client(workers=2)
    yield c
    from gisnet.batch import close_client

    close_client(c)


def _broken(root: Path) -> Path:
    town = root / "broken"
    town.mkdir(parents=True)
    (town / "gisnet.toml").write_text(
        'name = "Broken"\nprofile = "berlin-nh"\n[layers.mains]\npath = "mains.geojson"\n'
        '[layers.parcels]\npath = "parcels.shp"\n', encoding="utf-8")
    (town / "mains.geojson").write_text("{not json", encoding="utf-8")
    return town


# ---------------------------------------------------------------------------
# the region
# ---------------------------------------------------------------------------


def test_region_folder_lists_town_folders(tmp_path: Path) -> None:
    for name in ("b", "a"):
        shutil.copytree(SAMPLE, tmp_path / name)
    (tmp_path / "notes").mkdir()
    r = load_region(tmp_path, overrides={"profile": "berlin-nh", "crs": None})
    assert [t.name for t in r.towns] == ["a", "b"]
    assert r.skipped == (tmp_path / "notes",)
    assert all(t.overrides == {"profile": "berlin-nh"} for t in r.towns)


def test_region_file_overrides_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "region.toml"
    f.write_text(f'name = "R"\n[defaults]\nprofile = "berlin-nh"\n'
                 f'[[town]]\npath = "{SAMPLE}"\n'
                 f'[[town]]\npath = "{SAMPLE}"\nname = "s2"\nprofile = "poughkeepsie-fourth-ward"\n'
                 f'snap_tolerance_ft = 2\n', encoding="utf-8")
    r = load_region(f)
    assert r.name == "R" and [t.name for t in r.towns] == ["sample", "s2"]
    assert r.towns[0].overrides == {"profile": "berlin-nh"}
    assert r.towns[1].overrides == {"profile": "poughkeepsie-fourth-ward",
                                    "snap_tolerance_ft": 2}
    bad = {
        f'[[town]]\npath = "{SAMPLE}"\n[[town]]\npath = "{SAMPLE}"\n': "also town #1",
        f'[[town]]\npath = "{SAMPLE}"\ncolour = "red"\n': "unknown key 'colour'",
        f'[[town]]\npath = "{SAMPLE}"\nname = "../x"\n': "output folder name",
        'name = "x"\n': "no [[town]]",
        f'[[town]]\npath = "{SAMPLE}"\nengine = "gdal"\n': "engine must be",
    }
    for text, words in bad.items():
        f.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=r"region\.toml") as exc:
            load_region(f)
        assert words in str(exc.value)
    with pytest.raises(ConfigError, match="one town"):
        load_region(SAMPLE)
    with pytest.raises(ConfigError, match="not found"):
        load_region(tmp_path / "missing")


def test_unreachable_scheduler_is_one_line(monkeypatch) -> None:
    import gisnet.batch.runner as runner

    monkeypatch.setattr(runner, "CONNECT_TIMEOUT_S", 2)
    with pytest.raises(ConfigError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"):
        make_client(scheduler="tcp://127.0.0.1:9")


# ---------------------------------------------------------------------------
# on a cluster
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_batch_equals_run_town_by_town(shared_data: Path, tmp_path: Path, monkeypatch,
                                       capsys) -> None:
    """The sample and two Vermont networks on a LocalCluster of 2 workers: every result
    layer of every town equal, row for row, to ``gisnet run`` on that town alone."""
    region = tmp_path / "region"
    region.mkdir()
    towns = {"sample": SAMPLE}
    for name in VERMONT:
        src = shared_data / "vermont_verso" / name
        if not src.is_dir():
            pytest.skip(f"{src} not found")
        shutil.copytree(src, region / name)
        monkeypatch.chdir(region / name)
        assert main(["init", "-q"]) == 0
        towns[name] = region / name
    monkeypatch.chdir(tmp_path)
    (region / "region.toml").write_text(
        'name = "Three towns"\n' + "".join(f'[[town]]\npath = "{p}"\n' for p in towns.values()),
        encoding="utf-8")
    out = tmp_path / "out"
    assert main(["batch", str(region / "region.toml"), "--out", str(out), "--workers", "2",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [t["status"] for t in report["towns"]] == ["done"] * 3
    for name, folder in towns.items():
        single = tmp_path / "single" / name
        assert main(["run", "--layers", str(folder), "--out", str(single), "-q"]) == 0
        assert_same_results(out / name, single)
        assert sorted(p.name for p in (out / name).glob("*.html")) == \
            sorted(p.name for p in single.glob("*.html"))
        man = json.loads((out / name / "gisnet-manifest.json").read_text(encoding="utf-8"))
        assert sorted(man["files"]) == sorted(
            json.loads((single / "gisnet-manifest.json").read_text(encoding="utf-8"))["files"])
    # the summary: one row per town, counts as the towns' own results say
    summary = gpd.read_file(out / SUMMARY_GPKG, layer=SUMMARY_LAYER)
    csv = pd.read_csv(out / SUMMARY_CSV)
    assert list(summary["town"]) == list(csv["town"]) == list(towns)
    assert summary.crs.to_epsg() == 4326 and summary.geometry.notna().all()
    for row in csv.itertuples():
        ob = gpd.read_file(out / row.town / RESULTS_FILE, layer="obligations")
        counts = ob["status"].value_counts()
        assert row.parcels == len(ob)
        for status in ("required", "connected", "not_required"):
            assert getattr(row, f"obligations_{status}") == counts.get(status, 0)
        cm = gpd.read_file(out / row.town / RESULTS_FILE, layer="control_manholes")
        assert row.control_manholes == cm["control_manhole_id"].nunique()
        pc = gpd.read_file(out / row.town / RESULTS_FILE, layer="pipes_capacity")
        assert row.pipes_over_threshold == int(pc["over_threshold"].fillna(False).sum())
        # the town's box holds its mains (in EPSG:4326)
        mains = gpd.read_file(out / row.town / RESULTS_FILE, layer="graph_edges").to_crs(4326)
        box = summary.geometry[summary["town"] == row.town].iloc[0]
        assert box.buffer(1e-5).contains(mains.union_all())  # 1 m
    page = (out / "region.html").read_text(encoding="utf-8")
    for name in towns:
        assert f'href=\\"{name}/index.html' in page or f'href="{name}/index.html' in page


@pytest.mark.slow
def test_a_broken_town_is_reported_and_the_others_finish(tmp_path: Path, client) -> None:
    region = tmp_path / "region"
    shutil.copytree(SAMPLE, region / "good")
    _broken(region)
    out = tmp_path / "out"
    res = run_region(load_region(region), out, client=client,
                     options=Options(maps=False))
    by = {r["town"]: r for r in res.rows}
    assert by["good"]["status"] == "done" and by["broken"]["status"] == FAILED
    assert "mains.geojson" in by["broken"]["error"]
    assert "\n" not in by["broken"]["error"]
    assert (out / "good" / RESULTS_FILE).is_file() and not (out / "broken").exists()
    csv = pd.read_csv(out / SUMMARY_CSV)
    assert list(csv["status"]) == ["failed", "done"]
    assert "mains.geojson" in csv.loc[0, "error"]
    # a region file naming a folder that is not there: that town's row, the others run
    (tmp_path / "region.toml").write_text(
        f'[[town]]\npath = "{region / "good"}"\n[[town]]\npath = "gone"\n', encoding="utf-8")
    res = run_region(load_region(tmp_path / "region.toml"), tmp_path / "out2", client=client,
                     options=Options(maps=False))
    assert [r["status"] for r in res.rows] == ["done", FAILED]
    assert res.rows[1]["error"].endswith("gone: town folder not found")
    # the command: exit status 2, a line per failed town
    code = main(["batch", str(region), "--out", str(out), "--no-maps",
                 "--scheduler", client.scheduler.address, "-q"])
    assert code == 2


@pytest.mark.slow
def test_towns_side_by_side_share_the_cores(client) -> None:
    """Two one-thread workers on one machine: each town gets half its cores."""
    from gisnet.batch.runner import threads_per_task
    from gisnet.threads import available_cores

    assert threads_per_task(client) == max(1, available_cores() // 2)


def test_local_workers_keep_glibc_trimming(client) -> None:
    """gisnet's local cluster leaves out the nanny's fixed malloc trim threshold."""
    from gisnet.batch.runner import TRIM_ENV

    assert set(client.run(os.environ.get, TRIM_ENV).values()) == {None}


def test_a_task_that_dies_is_a_failed_row() -> None:
    from distributed.scheduler import KilledWorker

    from gisnet.batch.region import TownEntry
    from gisnet.batch.runner import _result

    class Dead:
        def result(self):
            raise KilledWorker("gisnet-town-x", "tcp://127.0.0.1:1", "died")

    row = _result(Dead(), TownEntry("x", Path("/nowhere")), Path("/out"))
    assert row["status"] == FAILED and "the worker running it died" in row["error"]


@pytest.mark.slow
def test_unchanged_towns_are_skipped(tmp_path: Path, client) -> None:
    region = tmp_path / "region"
    for name in ("a", "b"):
        shutil.copytree(SAMPLE, region / name)
    out = tmp_path / "out"
    opts = Options(maps=False)
    first = run_region(load_region(region), out, client=client, options=opts)
    assert [r["status"] for r in first.rows] == ["done", "done"]
    runs = {r["town"]: r["run_id"] for r in first.rows}
    again = run_region(load_region(region), out, client=client, options=opts)
    assert [r["status"] for r in again.rows] == ["unchanged", "unchanged"]
    assert {r["town"]: r["run_id"] for r in again.rows} == runs
    # a layer file touched: that town runs again, the other is still skipped
    shp = region / "b" / "parcels.dbf"
    st = shp.stat()
    os.utime(shp, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    third = run_region(load_region(region), out, client=client, options=opts)
    assert [r["status"] for r in third.rows] == ["unchanged", "done"]
    assert third.rows[1]["run_id"] != runs["b"]
    # another profile for every town (an override): both run
    prof = run_region(load_region(region, overrides={"profile": "berlin-nh"}), out,
                      client=client, options=opts)
    assert [r["status"] for r in prof.rows] == ["done", "done"]
    # outputs removed behind its back: the town runs again
    shutil.rmtree(out / "a")
    gone = run_region(load_region(region, overrides={"profile": "berlin-nh"}), out,
                      client=client, options=opts)
    assert [r["status"] for r in gone.rows] == ["done", "unchanged"]
    forced = run_region(load_region(region, overrides={"profile": "berlin-nh"}), out,
                        client=client, options=Options(maps=False, force=True))
    assert [r["status"] for r in forced.rows] == ["done", "done"]
