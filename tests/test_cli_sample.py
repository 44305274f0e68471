"""``gisnet sample DIR``: the bundled sample town copied out, refusals, ``--force``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from gisnet import townfile
from gisnet.cli import main

#: The sample town in the package (package data).
PACKAGE_SAMPLE = Path(townfile.__file__).resolve().parent / "sample"


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1, cap.err
    assert err[0].startswith("gisnet: error: ") and "Traceback" not in cap.err
    return err[0]


def test_writes_every_file_of_the_sample(tmp_path: Path, capsys) -> None:
    out = tmp_path / "new" / "town"
    assert main(["sample", str(out)]) == 0
    assert _hashes(out) == _hashes(PACKAGE_SAMPLE)
    assert {"gisnet.toml", "parcels.shp", "parcels.dbf", "mains.shp", "plant_flows.csv",
            "samples.csv", "README.md"} <= set(_hashes(out))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"gisnet sample: wrote {len(_hashes(PACKAGE_SAMPLE))} files "
                               f"to {out}: gisnet.toml, 9 shapefile layers")
    assert "parcels" in lines[0] and "samples.csv" in lines[0]
    assert lines[-1] == f"next: cd {out} && gisnet run"
    assert all(oct(p.stat().st_mode & 0o777) == "0o644" for p in out.iterdir())


def test_the_copy_is_a_town_run_from_its_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    """The next command printed works: in the folder, gisnet finds the town file."""
    out = tmp_path / "town"
    assert main(["sample", str(out), "-q"]) == 0
    assert capsys.readouterr().out == ""
    monkeypatch.chdir(out)
    assert main(["validate", "--no-graph"]) == 0
    assert capsys.readouterr().out.startswith("town: Spackenkill sample town")


def test_a_folder_with_other_files_is_fine(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["sample", str(tmp_path), "-q"]) == 0
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (tmp_path / "gisnet.toml").is_file()


@pytest.mark.parametrize("existing", ["gisnet.toml", "parcels.dbf", "README.md"])
def test_refuses_a_folder_holding_a_file_it_would_write(tmp_path: Path, capsys,
                                                        existing: str) -> None:
    (tmp_path / existing).write_text("the user's own", encoding="utf-8")
    before = _hashes(tmp_path)
    assert main(["sample", str(tmp_path)]) == 2
    err = _one_error(capsys)
    assert str(tmp_path) in err and f"already holds {existing}" in err and "--force" in err
    assert _hashes(tmp_path) == before  # nothing written


def test_refusal_names_the_town_file_first(tmp_path: Path, capsys) -> None:
    assert main(["sample", str(tmp_path), "-q"]) == 0
    assert main(["sample", str(tmp_path)]) == 2
    err = _one_error(capsys)
    assert "already holds gisnet.toml, " in err and " more: " in err


def test_force_overwrites_the_sample_files_and_deletes_nothing(tmp_path: Path,
                                                               capsys) -> None:
    (tmp_path / "gisnet.toml").write_text("name = 'old'\n", encoding="utf-8")
    (tmp_path / "parcels.qix").write_bytes(b"an old spatial index")
    (tmp_path / "mine.csv").write_text("a\n1\n", encoding="utf-8")
    assert main(["sample", str(tmp_path), "--force"]) == 0
    got = _hashes(tmp_path)
    sample = _hashes(PACKAGE_SAMPLE)
    assert {k: got[k] for k in sample} == sample
    assert set(got) == set(sample) | {"parcels.qix", "mine.csv"}
    assert (tmp_path / "parcels.qix").read_bytes() == b"an old spatial index"
    out = capsys.readouterr().out
    assert "kept (not the sample's" in out and "parcels.qix" in out
    assert "mine.csv" not in out  # not beside a layer of the sample


def test_a_folder_in_the_way_stops_before_writing(tmp_path: Path, capsys) -> None:
    (tmp_path / "samples.csv").mkdir()
    assert main(["sample", str(tmp_path), "--force"]) == 2
    assert "holds a folder named samples.csv" in _one_error(capsys)
    assert [p.name for p in tmp_path.iterdir()] == ["samples.csv"]


def test_refuses_a_file(tmp_path: Path, capsys) -> None:
    f = tmp_path / "town.txt"
    f.write_text("x", encoding="utf-8")
    assert main(["sample", str(f), "--force"]) == 2
    err = _one_error(capsys)
    assert str(f) in err and "not a folder" in err
    assert f.read_text(encoding="utf-8") == "x"


def test_never_writes_onto_the_bundled_sample(capsys) -> None:
    before = _hashes(PACKAGE_SAMPLE)
    assert main(["sample", str(PACKAGE_SAMPLE), "--force"]) == 2
    assert "is the bundled sample town itself" in _one_error(capsys)
    assert _hashes(PACKAGE_SAMPLE) == before


def test_an_install_without_the_sample_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "gisnet" / "sample").mkdir(parents=True)
    monkeypatch.setattr(townfile.resources, "files", lambda _pkg: tmp_path / "gisnet")
    assert main(["sample", str(tmp_path / "out")]) == 2
    assert "sample town is missing from this gisnet install" in _one_error(capsys)
    assert not (tmp_path / "out").exists()
    assert main(["run", "--sample", "--out", str(tmp_path / "maps")]) == 2
    assert "reinstall gisnet" in _one_error(capsys)


def test_summary_lists_a_folder_of_many_files_as_one_entry():
    """A tiled county writes thousands of search shards: the summary's ``wrote`` names
    the folder and counts its files by kind; small folders keep every name."""
    from gisnet.cli.run import LISTED_PER_FOLDER, format_summary

    shards = [f"out/tiles/search-{i:04x}.json" for i in range(5_000)]
    archives = [f"out/tiles/{k}.pmtiles" for k in ("parcels", "mains")]
    s = {"town": "T", "profile": "p", "crs": "EPSG:2260", "layers": {},
         "graph": {"nodes": 1, "edges": 0, "pieces": 1, "outlets": 1, "cycles": 0},
         "files": ["out/gisnet-results.gpkg", "out/index.html", *archives, *shards,
                   "out/tables/a.csv", "out/tables/b.csv"]}
    wrote = next(ln for ln in format_summary(s).splitlines() if "wrote:" in ln)
    assert f"out{os.sep}tiles{os.sep} (5,002 files: 5,000 .json, 2 .pmtiles)" in wrote
    assert "search-0001" not in wrote
    assert "out/gisnet-results.gpkg, out/index.html" in wrote
    assert "out/tables/a.csv, out/tables/b.csv" in wrote
    assert LISTED_PER_FOLDER < 5_002
