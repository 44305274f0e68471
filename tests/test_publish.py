"""A run's outputs: never over an input, all or nothing, the same bytes every time.

The fast tests drive :mod:`gisnet.output.publish` directly; the ``slow`` ones run
``gisnet run`` on the sample town in a subprocess and kill it with SIGKILL at
the named points of :data:`gisnet.output._testhooks.KILL_HOOK` (staging folder made, during the
GeoPackage, the tables, the pages, just after the commit rename, half-way
through the renames), then check what is left on disk.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyogrio
import pytest

from gisnet.cli import main
from gisnet.errors import ConfigError
from gisnet.output import (
    MANIFEST_FILE,
    check_manifest,
    input_files,
    publish,
    read_manifest,
    refuse_inputs_as_outputs,
    remove_leftovers,
    staging_area,
)
from gisnet.output._testhooks import KILL_HOOK
from gisnet.output.publish import make_manifest

ROOT = Path(__file__).resolve().parents[1]


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _tree(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder``."""
    return {p.relative_to(folder).as_posix(): _sha(p) for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _leftovers(out: Path) -> list[str]:
    """Hidden files and folders a run makes while writing (the lock file is not one)."""
    found = [p.name for p in out.iterdir() if p.name.startswith(".") and p.name != ".gisnet-lock"]
    if (out / "tables").is_dir():
        found += [f"tables/{p.name}" for p in (out / "tables").iterdir()
                  if p.name.startswith(".")]
    return sorted(found)


def _fake_town(folder: Path, *sources: Path) -> SimpleNamespace:
    """Enough of a Town for the writing and publishing functions."""
    return SimpleNamespace(
        name="fake", sources={f"r{i}": str(s) for i, s in enumerate(sources)},
        settings=SimpleNamespace(extra={"town_file": folder / "gisnet.toml",
                                        "plant_flows_file": None}, snap_tolerance_ft=1.0),
        profile=SimpleNamespace(profile=SimpleNamespace(id="test-profile"), raw={}, path=None),
        layers={}, crs="EPSG:2260", ft_per_unit=1.0)


# --------------------------------------------------------------------------- inputs


def test_input_files_cover_shapefile_sidecars_and_journals(tmp_path: Path) -> None:
    (tmp_path / "gisnet.toml").write_text("")
    town = _fake_town(tmp_path, tmp_path / "mains.shp", tmp_path / "roads.gpkg")
    got = input_files(town, tmp_path / "profile.toml")
    for name in ("mains.shp", "mains.shx", "mains.dbf", "mains.prj", "mains.cpg", "mains.qix",
                 "mains.SBN", "mains.shp.xml", "roads.gpkg", "roads.gpkg-journal",
                 "roads.gpkg-wal", "gisnet.toml", "profile.toml"):
        assert (tmp_path / name).resolve() in got, name
    with pytest.raises(ConfigError) as e:
        refuse_inputs_as_outputs([tmp_path / "ok.html", tmp_path / "mains.qix"], town)
    assert str(tmp_path / "mains.qix") in str(e.value)
    refuse_inputs_as_outputs([tmp_path / "index.html", tmp_path / "tables" / "mains.csv"], town)


def test_output_inside_an_input_folder_is_refused(tmp_path: Path) -> None:
    gdb = tmp_path / "town.gdb"
    gdb.mkdir()
    town = _fake_town(tmp_path, gdb)
    with pytest.raises(ConfigError, match=r"town\.gdb"):
        refuse_inputs_as_outputs([gdb / "index.html"], town)


@pytest.fixture()
def town_copy(sample_dir: Path, tmp_path: Path) -> Path:
    t = tmp_path / "t"
    shutil.copytree(sample_dir, t)
    return t


@pytest.mark.parametrize(("table", "fmt"), [
    ("plants.csv", "csv"),             # the reproduction: a table over the plant flows
    ("gisnet-results.xlsx", "xlsx"),   # xlsx writes one workbook of that name
])
def test_run_refuses_a_table_over_an_input_and_names_both(town_copy: Path, capsys, table: str,
                                                          fmt: str) -> None:
    """Reproduction: --out is the town folder, --tables, the plant flows are read from
    tables/<that table>: the run stops before writing anything (exit 2)."""
    (town_copy / "tables").mkdir()
    shutil.move(town_copy / "plant_flows.csv", town_copy / "tables" / table)
    tf = town_copy / "gisnet.toml"
    tf.write_text(tf.read_text().replace('path = "plant_flows.csv"',
                                         f'path = "tables/{table}"'))
    before = _tree(town_copy)
    code = main(["run", "--layers", str(town_copy), "--out", str(town_copy),
                 "--tables", fmt, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count(str(town_copy / "tables" / table)) >= 2  # output and input
    assert len(err.strip().splitlines()) == 1
    assert _tree(town_copy) == before  # nothing written, nothing replaced


def test_run_and_map_refuse_a_page_over_an_input_layer(town_copy: Path, capsys) -> None:
    """Reproduction: an input layer named index.html (GeoJSON inside) and --out the
    town folder: gisnet run and gisnet map both refuse, naming the file."""
    import geopandas as gpd

    users = gpd.read_file(town_copy / "users.shp")
    users.to_file(town_copy / "index.html", driver="GeoJSON")
    tf = town_copy / "gisnet.toml"
    tf.write_text(tf.read_text().replace('path = "users.shp"', 'path = "index.html"'))
    before = _tree(town_copy)
    assert main(["run", "--layers", str(town_copy), "--out", str(town_copy), "--quiet"]) == 2
    assert str(town_copy / "index.html") in capsys.readouterr().err
    assert _tree(town_copy) == before
    out = town_copy / "out"
    assert main(["run", "--layers", str(town_copy), "--out", str(out), "--quiet",
                 "--no-maps"]) == 0
    shutil.copy(out / "gisnet-results.gpkg", town_copy / "gisnet-results.gpkg")
    before = _tree(town_copy)
    assert main(["map", "index", "--layers", str(town_copy), "--out", str(town_copy),
                 "--quiet"]) == 2
    assert str(town_copy / "index.html") in capsys.readouterr().err
    assert _tree(town_copy) == before


# --------------------------------------------------------------------------- publishing


def _stage(out: Path, files: dict[str, str], run_id: str) -> list[Path]:
    town = _fake_town(out)
    with staging_area(out, run_id) as stage:
        for rel, text in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_text(text)
        return publish(stage, out, make_manifest(stage, run_id=run_id, town=town), town)


def test_publish_writes_manifest_last_and_removes_what_the_old_run_listed(tmp_path: Path):
    out = tmp_path / "out"
    got = _stage(out, {"gisnet-results.gpkg": "g1", "tables/a.csv": "a1", "index.html": "i1"},
                 "run1")
    assert [p.relative_to(out).as_posix() for p in got] == [
        "gisnet-results.gpkg", "tables/a.csv", "index.html", MANIFEST_FILE]
    man = json.loads((out / MANIFEST_FILE).read_text())
    assert man["run_id"] == "run1" and man["profile_id"] == "test-profile"
    assert man["files"]["tables/a.csv"]["sha256"] == hashlib.sha256(b"a1").hexdigest()
    assert {"created_utc", "gisnet_version", "town_file_sha256"} <= set(man)
    assert check_manifest(out) == []
    # a file of the old run that the user changed is kept; an unchanged one goes
    (out / "index.html").write_text("edited by hand")
    _stage(out, {"gisnet-results.gpkg": "g2"}, "run2")
    assert not (out / "tables" / "a.csv").exists()
    assert (out / "index.html").read_text() == "edited by hand"
    assert check_manifest(out) == []
    assert check_manifest(out, ["index.html"]) == ["index.html: not part of run run2"]
    assert _leftovers(out) == []


def test_manifest_takes_a_remembered_hash_only_of_the_unchanged_file(tmp_path: Path):
    """A hash made when a file was finished (``remember_sha256``, the GeoPackage's on the
    thread that closes it) is the manifest's only while the file is the same file, same
    size and time; a file rewritten since, even to the same size, is hashed again."""
    from gisnet.output.publish import remember_sha256

    out = tmp_path / "out"
    town = _fake_town(out)
    with staging_area(out, "run1") as stage:
        kept, redone = stage / "gisnet-results.gpkg", stage / "index.html"
        kept.write_bytes(b"k" * 5000)
        redone.write_bytes(b"a" * 5000)
        remember_sha256(kept)
        remember_sha256(redone)
        st = redone.stat()
        redone.write_bytes(b"b" * 5000)  # same size; its time set back to the hashed one
        os.utime(redone, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        man = make_manifest(stage, run_id="run1", town=town)
    assert man["files"]["gisnet-results.gpkg"]["sha256"] == hashlib.sha256(b"k" * 5000).hexdigest()
    assert man["files"]["index.html"]["sha256"] == hashlib.sha256(b"b" * 5000).hexdigest()


def test_bytes_remembered_as_written_are_the_manifests_hash_without_reading_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search shard's bytes hashed as they are written (``remember_bytes``) give the
    manifest its hash: the file is not read again. Outside a staging area nothing is
    remembered, and a staging area's hashes go with it."""
    pub = importlib.import_module("gisnet.output.publish")  # (the package names a function so)
    from gisnet.output import remember_bytes

    out = tmp_path / "out"
    town = _fake_town(out)
    loose = tmp_path / "loose.json"
    loose.write_bytes(b"[1]")
    remember_bytes(loose, b"[1]")
    assert not any("loose.json" in k for k in pub._REMEMBERED)
    with staging_area(out, "run1") as stage:
        (stage / "tiles").mkdir()
        shard, other = stage / "tiles" / "search-6162.json", stage / "index.html"
        shard.write_bytes(b'[["ab",0,0,1.0,2.0]]')
        remember_bytes(shard, b'[["ab",0,0,1.0,2.0]]')
        other.write_text("page")
        read = []
        real = pub.sha256_file
        monkeypatch.setattr(pub, "sha256_file", lambda p: read.append(p.name) or real(p))
        man = make_manifest(stage, run_id="run1", town=town)
        assert read == ["index.html"]  # the shard's hash was the remembered one
        remember_bytes(shard, b'[["ab",0,0,1.0,2.0]]')
    assert man["files"]["tiles/search-6162.json"]["sha256"] == hashlib.sha256(
        b'[["ab",0,0,1.0,2.0]]').hexdigest()
    assert not pub._REMEMBERED and not pub._STAGES


def test_many_files_are_flushed_with_one_syncfs_and_one_by_one_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's thousands of tiles and shards are flushed with one ``syncfs`` of their
    file system; where that call is missing or fails, and for a few files, each file
    is flushed with ``fsync``."""
    pub = importlib.import_module("gisnet.output.publish")  # (the package names a function so)

    files = []
    for i in range(70):
        files.append(tmp_path / f"f{i}")
        files[-1].write_bytes(b"x")
    if sys.platform.startswith("linux"):
        assert pub._syncfs(tmp_path) is True
    calls: list[str] = []
    monkeypatch.setattr(pub, "_fsync", lambda p: calls.append(p.name))
    monkeypatch.setattr(pub, "_syncfs", lambda folder: calls.append("syncfs") or True)
    pub._sync_files(tmp_path, files)
    assert calls == ["syncfs"]
    calls.clear()
    pub._sync_files(tmp_path, files[:3])
    assert calls == ["f0", "f1", "f2"]
    calls.clear()
    monkeypatch.setattr(pub, "_syncfs", lambda folder: calls.append("syncfs") or False)
    pub._sync_files(tmp_path, files)
    assert calls[0] == "syncfs" and sorted(calls[1:]) == sorted(f.name for f in files)


def test_a_committed_publish_is_completed_by_the_next_reader(tmp_path: Path) -> None:
    """Killed after the commit rename: the publish folder holds the new set and the
    manifest; read_manifest (gisnet map, the next run) finishes the renames."""
    out = tmp_path / "out"
    _stage(out, {"gisnet-results.gpkg": "old", "index.html": "old"}, "run1")
    pub = out / ".gisnet-publish-p999999999-run2"
    pub.mkdir()
    (pub / "index.html").write_text("new")
    man = json.loads((out / MANIFEST_FILE).read_text())
    man["run_id"] = "run2"
    man["files"] = {"gisnet-results.gpkg": {"sha256": _sha_text("new")},
                    "index.html": {"sha256": _sha_text("new")}}
    (pub / MANIFEST_FILE).write_text(json.dumps(man))
    (out / "gisnet-results.gpkg").write_text("new")  # moved before the kill
    assert read_manifest(out)["run_id"] == "run2"
    assert check_manifest(out) == []
    assert _leftovers(out) == []


def _sha_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_leftovers_of_dead_writers_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "tables").mkdir(parents=True)
    dead = "p999999999"
    made = [out / f".gisnet-results-{dead}-x1.gpkg",
            out / f".gisnet-results-{dead}-x1.gpkg-journal",
            out / f".index.html.{dead}.ab.tmp", out / "tables" / f".plants.csv.{dead}.cd.tmp"]
    for p in made:
        p.write_text("half")
    (out / f".gisnet-staging-{dead}-r").mkdir()
    (out / f".gisnet-staging-{dead}-r" / "index.html").write_text("half")
    old = out / ".gisnet-results-k2j3h4.gpkg"  # before writers named their pid
    old.write_text("half")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    live = out / f".index.html.p{os.getpid()}.ef.tmp"
    live.write_text("being written")
    remove_leftovers(out)
    assert _leftovers(out) == [live.name]


# --------------------------------------------------------------------------- whole runs


def _run(layers: Path, out: Path, *extra: str, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(layers),
                           "--out", str(out), "--tables", "csv", "--quiet", *extra],
                          env=e, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def first_run(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("first") / "out"
    r = _run(sample_dir, out, env={"PYTHONHASHSEED": "1"})
    assert r.returncode == 0, r.stderr
    return out


def _layers(gpkg: Path) -> dict[str, pd.DataFrame]:
    return {name: pyogrio.read_dataframe(gpkg, layer=name)
            for name, _ in pyogrio.list_layers(gpkg)}


@pytest.mark.slow
def test_two_runs_give_the_same_bytes(first_run: Path, sample_dir: Path, tmp_path: Path):
    """Tables and pages byte-identical, GeoPackage layers equal, between two runs in
    different processes with different string hashing; only the manifest's run id,
    time and the GeoPackage's own timestamps differ."""
    out = tmp_path / "out"
    r = _run(sample_dir, out, env={"PYTHONHASHSEED": "2"})
    assert r.returncode == 0, r.stderr
    a, b = _tree(first_run), _tree(out)
    assert set(a) == set(b)
    for rel in a:
        if rel.startswith("tables/") or rel.endswith(".html"):
            assert a[rel] == b[rel], rel
    la, lb = _layers(first_run / "gisnet-results.gpkg"), _layers(out / "gisnet-results.gpkg")
    assert list(la) == list(lb)
    for name in la:
        pd.testing.assert_frame_equal(la[name], lb[name], check_exact=True, obj=name)
    ma = json.loads((first_run / MANIFEST_FILE).read_text())
    mb = json.loads((out / MANIFEST_FILE).read_text())
    assert ma["run_id"] != mb["run_id"]
    assert {k: v for k, v in ma["files"].items() if k != "gisnet-results.gpkg"} == \
        {k: v for k, v in mb["files"].items() if k != "gisnet-results.gpkg"}


@pytest.mark.slow
@pytest.mark.parametrize("point", ["staging", "gpkg", "tables", "maps"])
def test_killed_before_commit_leaves_the_previous_run_whole(point: str, first_run: Path,
                                                            sample_dir: Path, tmp_path: Path):
    out = tmp_path / "out"
    shutil.copytree(first_run, out)
    before = _tree(out)
    r = _run(sample_dir, out, env={KILL_HOOK: point})
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert any(n.startswith(".gisnet-staging-") for n in _leftovers(out))
    now = _tree(out)
    assert {k: v for k, v in now.items() if not k.startswith(".")} == \
        {k: v for k, v in before.items() if not k.startswith(".")}
    assert check_manifest(out) == []
    remove_leftovers(out)  # what the next run does first
    assert _leftovers(out) == []
    assert check_manifest(out) == []


@pytest.mark.slow
@pytest.mark.parametrize("point", ["commit", "publish"])
def test_killed_after_commit_is_completed_by_the_next_command(point: str, first_run: Path,
                                                              sample_dir: Path, tmp_path: Path):
    out = tmp_path / "out"
    shutil.copytree(first_run, out)
    old_id = json.loads((out / MANIFEST_FILE).read_text())["run_id"]
    r = _run(sample_dir, out, env={KILL_HOOK: point})
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert any(n.startswith(".gisnet-publish-") for n in _leftovers(out))
    if point == "publish":  # the GeoPackage is new, the manifest still the old run's
        old = json.loads((out / MANIFEST_FILE).read_text())
        assert old["run_id"] == old_id
        assert _sha(out / "gisnet-results.gpkg") != old["files"]["gisnet-results.gpkg"]["sha256"]
    man = read_manifest(out)  # gisnet map and the next run start with this
    assert man["run_id"] != old_id
    assert check_manifest(out) == []
    assert _leftovers(out) == []


@pytest.mark.slow
def test_next_run_cleans_a_killed_runs_leftovers(first_run: Path, sample_dir: Path,
                                                 tmp_path: Path):
    out = tmp_path / "out"
    shutil.copytree(first_run, out)
    assert _run(sample_dir, out, env={KILL_HOOK: "tables"}).returncode == -signal.SIGKILL
    assert _leftovers(out)
    r = _run(sample_dir, out)
    assert r.returncode == 0, r.stderr
    assert _leftovers(out) == []
    assert check_manifest(out) == []


@pytest.mark.slow
def test_map_warns_when_the_gpkg_does_not_match_the_manifest(first_run: Path, sample_dir: Path,
                                                             tmp_path: Path):
    from gisnet.output import write_results

    out = tmp_path / "out"
    shutil.copytree(first_run, out)
    e = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "gisnet", "map", "network", "--layers", str(sample_dir),
           "--out", str(out)]
    r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "does not match" not in r.stderr, r.stderr
    assert check_manifest(out) == []
    write_results(out, {"quality": pyogrio.read_dataframe(out / "gisnet-results.gpkg",
                                                          layer="quality").head(1)})
    manifest = (out / MANIFEST_FILE).read_bytes()
    r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0
    assert "does not match" in r.stderr and "gisnet-results.gpkg" in r.stderr
    assert (out / MANIFEST_FILE).read_bytes() == manifest


@pytest.mark.slow
def test_the_run_command_ends_its_process_published_and_flushed_without_teardown(
        sample_dir: Path, tmp_path: Path) -> None:
    """``gisnet run`` as a program ends its process once the outputs are published
    and its output and log are flushed, without taking its objects apart (an exit
    handler does not run); called in-process (``main([...])``) it returns."""
    out = tmp_path / "out"
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('torn down', file=sys.stderr))\n"
            "from gisnet.cli import main\n"
            f"sys.argv = ['gisnet', 'run', '--layers', {str(sample_dir)!r}, '--out', "
            f"{str(out)!r}, '--json', '--no-maps']\n"
            "sys.exit(main())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert "torn down" not in r.stderr
    assert "gisnet: publish" in r.stderr  # the last progress line, flushed
    assert json.loads(r.stdout)["town"]  # the whole summary, flushed
    assert check_manifest(out) == []
    assert main(["run", "--layers", str(sample_dir), "--out", str(tmp_path / "again"),
                 "--no-maps", "--quiet"]) == 0


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 3 * 4096 + 5])
def test_sha256_file_equals_hashlib_across_block_edges(tmp_path: Path, size: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is hashed in blocks; the digest is hashlib's of its whole bytes,
    for files shorter than, equal to and longer than a block."""
    pub = importlib.import_module("gisnet.output.publish")
    monkeypatch.setattr(pub, "HASH_BLOCK", 4096)
    data = bytes(random.Random(size).getrandbits(8) for _ in range(size))
    f = tmp_path / "f.bin"
    f.write_bytes(data)
    assert pub.sha256_file(f) == hashlib.sha256(data).hexdigest()
