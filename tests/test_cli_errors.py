"""Bad input on every subcommand: one ``gisnet: error:`` line, exit 2, no traceback.

The towns are small synthetic ones written in ``tmp_path`` (60 parcels), so
each command runs in well under a second. Every case checks the exit status,
that stderr holds exactly one error line naming what is wrong, and that the
town's files are byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pyproj import Transformer

from gisnet.cli import main
from gisnet.errors import ConfigError
from gisnet.io import load_town
from gisnet.obligations import frontage_shares
from gisnet.output import atomic_path, atomic_write_text
from gisnet.testing.synthetic import make_town, write_town

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def town_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 60-parcel synthetic town (EPSG:2260, US survey feet) as shapefiles."""
    d = tmp_path_factory.mktemp("town")
    write_town(make_town(60, seed=1), d, fmt="shp")
    return d


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory, town_dir: Path) -> Path:
    """A folder of bad inputs: CSVs, profiles, broken towns, a regular file."""
    d = tmp_path_factory.mktemp("bad")
    (d / "empty.csv").write_bytes(b"")
    (d / "binary.csv").write_bytes(bytes(range(128, 256)) * 4)
    (d / "wrong_headers.csv").write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    (d / "header_only.csv").write_text("parcel_id\n", encoding="utf-8")
    (d / "a_file").write_text("not a folder\n", encoding="utf-8")
    (d / "corrupt_out").mkdir()
    (d / "corrupt_out" / "gisnet-results.gpkg").write_bytes(b"SQLite format 3\x00" + b"\x07" * 500)
    (d / "bad.toml").write_text("not = valid = toml\n", encoding="utf-8")
    prof = (REPO / "gisnet" / "profiles" / "berlin-nh.toml").read_text(encoding="utf-8")
    (d / "unknown_key.toml").write_text(
        prof.replace("[connection]\n", "[connection]\nbogus_key = 1\n", 1), encoding="utf-8")
    # a town whose mains.shp was cut short (GDAL reads the features before the cut)
    trunc = d / "truncated"
    shutil.copytree(town_dir, trunc)
    data = (trunc / "mains.shp").read_bytes()
    (trunc / "mains.shp").write_bytes(data[: len(data) // 2])
    # a town whose parcels.dbf was cut short
    tdbf = d / "truncated_dbf"
    shutil.copytree(town_dir, tdbf)
    data = (tdbf / "parcels.dbf").read_bytes()
    (tdbf / "parcels.dbf").write_bytes(data[: len(data) // 2])
    # a town whose plants layer is a GeoJSON that is not JSON
    notjson = d / "notjson"
    shutil.copytree(town_dir, notjson)
    (notjson / "plants.geojson").write_text('{"type": "FeatureCollection", "features": [',
                                            encoding="utf-8")
    toml = (notjson / "gisnet.toml").read_text(encoding="utf-8")
    assert 'path = "plants.shp"' in toml
    (notjson / "gisnet.toml").write_text(toml.replace('path = "plants.shp"',
                                                      'path = "plants.geojson"'),
                                         encoding="utf-8")
    # a town file whose snap tolerance is TOML's nan
    snapnan = d / "snapnan"
    shutil.copytree(town_dir, snapnan)
    toml = (snapnan / "gisnet.toml").read_text(encoding="utf-8")
    assert "snap_tolerance_ft = 1.0\n" in toml
    (snapnan / "gisnet.toml").write_text(
        toml.replace("snap_tolerance_ft = 1.0\n", "snap_tolerance_ft = nan\n"), encoding="utf-8")
    return d


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


#: A progress line of a finished step (stderr not a terminal: gisnet.progress).
_STEP_LINE = re.compile(r"gisnet: [a-z_]+ \d+\.\d s \(.*CPU \d+\.\d s\)")


def _error_lines(err: str) -> list[str]:
    """stderr without the data-quality warnings a town may legitimately log and
    without the progress lines of the steps that finished before the error."""
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("gisnet: WARNING")
            and not _STEP_LINE.fullmatch(ln)]


# --------------------------------------------------------------------------- the cases

# (id, argv with {T} = town, {B} = bad-input folder, {O} = a fresh output folder,
#  words the error line must contain)
CASES = [
    # unknown ids
    ("obligations-parcel", "obligations --layers {T} --parcel NOPE --out {O}",
     ["parcels", "NOPE"]),
    ("trace-manhole", "trace --layers {T} --manhole NOPE --upstream", ["manhole", "NOPE"]),
    ("trace-parcel", "trace --layers {T} --parcel NOPE", ["parcel", "NOPE"]),
    ("whatif-parcel", "whatif --layers {T} --parcel NOPE --flow-gpd 100 --out {O}",
     ["parcel", "NOPE"]),
    ("frontage-main", "frontage --layers {T} --main NOPE --cost 1000 --out {O}",
     ["main", "NOPE"]),
    # impossible numbers
    ("flow-negative", "whatif --layers {T} --parcel P0000001 --flow-gpd -5 --out {O}",
     ["flow_gpd", "-5"]),
    ("flow-zero", "whatif --layers {T} --parcel P0000001 --flow-gpd 0 --out {O}",
     ["flow_gpd", "0"]),
    ("flow-nan", "whatif --layers {T} --parcel P0000001 --flow-gpd nan --out {O}",
     ["flow_gpd", "nan"]),
    ("flow-inf", "whatif --layers {T} --parcel P0000001 --flow-gpd inf --out {O}",
     ["flow_gpd", "inf"]),
    ("cost-negative", "frontage --layers {T} --main SM000001 --cost -1 --out {O}",
     ["--cost", "-1"]),
    ("cost-nan", "frontage --layers {T} --main SM000001 --cost nan --out {O}",
     ["--cost", "nan"]),
    ("snap-negative-obligations",
     "obligations --layers {T} --snap-tolerance-ft -1 --out {O}", ["snap tolerance", "-1"]),
    ("snap-negative-graph", "graph --layers {T} --snap-tolerance-ft -1 --out {O}",
     ["snap tolerance", "-1"]),
    ("snap-nan", "capacity --layers {T} --snap-tolerance-ft nan --out {O}",
     ["snap tolerance", "nan"]),
    # malformed points and CRSs
    ("point-three", "trace --layers {T} --point 1,2,3", ["--point", "1,2,3"]),
    ("point-text", "trace --layers {T} --point a,b", ["--point", "a,b"]),
    ("point-nan", "trace --layers {T} --point nan,1", ["--point", "finite"]),
    ("point-crs-unknown", "trace --layers {T} --point 1,2 --crs EPSG:999999",
     ["EPSG:999999"]),
    ("point-outside", "trace --layers {T} --point 1,2", ["outside the sewer network"]),
    ("whatif-point-outside", "whatif --layers {T} --point 1,2 --flow-gpd 10 --out {O}",
     ["outside the sewer network"]),
    ("crs-unknown", "graph --layers {T} --crs EPSG:999999 --out {O}", ["EPSG:999999"]),
    ("crs-garbage", "validate --layers {T} --crs garbage", ["garbage"]),
    ("crs-geographic", "obligations --layers {T} --crs EPSG:4326 --out {O}",
     ["EPSG:4326", "not projected"]),
    # profiles
    ("profile-missing", "validate --layers {T} --profile {B}/missing.toml",
     ["missing.toml", "does not exist"]),
    ("profile-unknown-name", "validate --layers {T} --profile nosuchprofile",
     ["nosuchprofile"]),
    ("profile-unknown-key", "validate --layers {T} --profile {B}/unknown_key.toml",
     ["unknown_key.toml", "bogus_key"]),
    ("profile-binary", "validate --layers {T} --profile {B}/binary.csv",
     ["binary.csv", "UTF-8"]),
    ("profile-folder", "validate --layers {T} --profile {B}", ["profile is a folder"]),
    ("serve-out-file", "serve --layers {T} --out {B}/binary.csv --port 0",
     ["existing file", "binary.csv"]),
    ("profile-invalid-toml", "obligations --layers {T} --profile {B}/bad.toml --out {O}",
     ["bad.toml", "TOML"]),
    # outputs that cannot be written
    ("out-is-file", "graph --layers {T} --out {B}/a_file", ["a_file", "not a folder"]),
    ("out-under-file", "obligations --layers {T} --out {B}/a_file/sub", ["a_file"]),
    ("run-out-is-file", "run --layers {T} --no-maps --out {B}/a_file", ["a_file"]),
    ("whatif-map-out-is-file",
     "whatif --layers {T} --parcel P0000001 --flow-gpd 10 --map --out {B}/a_file",
     ["a_file"]),
    ("frontage-csv-is-folder",
     "frontage --layers {T} --main SM000001 --cost 10 --csv {B} --out {O}",
     ["shares CSV", "folder"]),
    ("frontage-csv-over-input",
     "frontage --layers {T} --main SM000001 --cost 10 --csv {T}/parcels.dbf --out {O}",
     ["parcels.dbf", "input"]),
    ("samples-csv-out-over-input",
     "samples {B}/samples.csv --layers {T} --csv-out {B}/samples.csv",
     ["samples.csv", "input"]),
    # sample results
    ("samples-missing", "samples {B}/missing.csv --layers {T}", ["missing.csv", "samples"]),
    ("samples-empty", "samples {B}/empty.csv --layers {T}", ["empty.csv", "empty"]),
    ("samples-binary", "samples {B}/binary.csv --layers {T}", ["binary.csv", "UTF-8"]),
    ("samples-headers", "samples {B}/wrong_headers.csv --layers {T}",
     ["wrong_headers.csv", "missing column", "manhole_id"]),
    ("samples-folder", "samples {B} --layers {T}", ["samples", "cannot read"]),
    # parcel-id lists
    ("ids-missing", "obligations --layers {T} --parcels {B}/missing.csv --out {O}",
     ["missing.csv", "parcel list"]),
    ("ids-empty", "obligations --layers {T} --parcels {B}/empty.csv --out {O}",
     ["empty.csv", "empty"]),
    ("ids-binary", "obligations --layers {T} --parcels {B}/binary.csv --out {O}",
     ["binary.csv", "UTF-8"]),
    ("ids-no-ids", "obligations --layers {T} --parcels {B}/header_only.csv --out {O}",
     ["header_only.csv", "no ids"]),
    ("ids-unknown", "obligations --layers {T} --parcel-ids {B}/wrong_headers.csv --out {O}",
     ["not in the parcels layer"]),
    # maps without results
    ("map-no-results", "map all --layers {T} --out {O}", ["gisnet-results.gpkg", "gisnet run"]),
    ("map-page-no-results", "map capacity --layers {T} --out {O}", ["gisnet-results.gpkg"]),
    ("map-results-corrupt", "map all --layers {T} --out {B}/corrupt_out",
     ["gisnet-results.gpkg", "cannot be read"]),
    ("graph-results-corrupt", "graph --layers {T} --out {B}/corrupt_out",
     ["gisnet-results.gpkg", "cannot be read"]),
    # broken towns
    ("town-missing", "validate --layers {B}/no_such_town", ["no_such_town"]),
    ("truncated-shp-validate", "validate --layers {B}/truncated",
     ["mains.shp", "mains", "truncated"]),
    ("truncated-dbf", "obligations --layers {B}/truncated_dbf --out {O}",
     ["parcels.dbf", "parcels", "truncated"]),
    ("truncated-shp-graph", "graph --layers {B}/truncated --out {O}", ["truncated"]),
    ("truncated-shp-override", "sampling-plan --layers {T} --mains {B}/truncated/mains.shp "
     "--out {O}", ["truncated"]),
    ("geojson-not-json", "validate --layers {B}/notjson", ["plants.geojson", "plants"]),
    ("geojson-not-json-run", "run --layers {B}/notjson --out {O}", ["plants.geojson"]),
    ("town-snap-nan", "obligations --layers {B}/snapnan --out {O}",
     ["gisnet.toml", "snap_tolerance_ft", "nan"]),
    ("layer-not-a-layer", "validate --layers {T} --mains {B}/binary.csv", ["binary.csv"]),
    ("serve-port", "serve --layers {T} --port 99999", ["--port"]),
]


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w in CASES])
def test_bad_input_is_one_error_line(argv: str, words: list[str], town_dir: Path, bad: Path,
                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (bad / "samples.csv").write_text(
        "manhole_id,datetime,parameter,value,unit\nMH000001,2024-01-01 10:00,zinc,1,mg/L\n",
        encoding="utf-8")
    before = _hashes(town_dir)
    args = [a.format(T=town_dir, B=bad, O=tmp_path / "out") for a in argv.split()]
    rc, out, err = _run(args, capsys)
    lines = _error_lines(err)
    assert rc == 2, (rc, out, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("gisnet: error: "), err
    for w in words:
        assert w.format(T=town_dir, B=bad) in lines[0], (w, lines[0])
    assert "Traceback" not in err
    assert _hashes(town_dir) == before
    # nothing half-written is left behind in the output folder
    out_dir = tmp_path / "out"
    if out_dir.exists():
        assert not [p.name for p in out_dir.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("argv", [
    ["map", "nope"],                       # unknown page name
    ["trace", "--parcel", "X", "--point", "1,2"],  # mutually exclusive
    ["whatif", "--parcel", "X", "--flow-gpd", "lots"],
    ["nosuchcommand"],
])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs POSIX permissions that apply (not root)")
def test_read_only_out_folder(town_dir: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        rc, _, err = _run(["graph", "--layers", str(town_dir), "--out", str(ro)], capsys)
    finally:
        ro.chmod(0o755)
    assert rc == 2
    lines = _error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("gisnet: error: "), err
    assert str(ro) in err and "Permission denied" in err


# --------------------------------------------------------------------------- positive controls


def _mains_centre(town_dir: Path) -> tuple[float, float]:
    import geopandas as gpd

    m = gpd.read_file(town_dir / "mains.shp")
    x0, y0, x1, y1 = m.total_bounds
    return (x0 + x1) / 2, (y0 + y1) / 2


def test_point_inside_town_traces_in_either_crs(town_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The outside-the-town check refuses only far points: the centre of the mains
    traces, given in the working CRS or as lon/lat, and lat/lon (swapped) is refused."""
    x, y = _mains_centre(town_dir)
    rc, out, err = _run(["trace", "--layers", str(town_dir), f"--point={x:.1f},{y:.1f}"],
                        capsys)
    assert rc == 0, err
    assert out.startswith("connection point: main SM")
    lon, lat = Transformer.from_crs("EPSG:2260", "EPSG:4326", always_xy=True).transform(x, y)
    assert lon < 0  # a western longitude, given as its own argument after --point
    rc, out2, err = _run(["trace", "--layers", str(town_dir), "--point", f"{lon:.7f},{lat:.7f}",
                          "--crs", "EPSG:4326"], capsys)
    assert rc == 0, err
    # same connection main both ways (the lon/lat round trip moves the point < 1 ft)
    assert out2.splitlines()[0].split()[3] == out.splitlines()[0].split()[3]
    rc, _, err = _run(["trace", "--layers", str(town_dir), f"--point={lat:.7f},{lon:.7f}",
                       "--crs", "EPSG:4326"], capsys)
    assert rc == 2
    assert "outside the sewer network" in err and "X before Y" in err


def test_frontage_csv_is_written_atomically(town_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "deep" / "shares.csv"
    argv = ["frontage", "--layers", str(town_dir), "--main", "SM000001", "--cost", "1200",
            "--csv", str(csv), "--out", str(tmp_path / "out")]
    rc, _, err = _run(argv, capsys)
    assert rc == 0, err
    got = pd.read_csv(csv, dtype={"parcel_id": str})
    want = frontage_shares(load_town(town_dir), "SM000001", 1200.0)
    assert list(got["parcel_id"]) == list(want["parcel_id"])
    assert got["share_usd"].sum() == pytest.approx(1200.0)
    assert sorted(p.name for p in csv.parent.iterdir()) == ["shares.csv"]
    assert oct(csv.stat().st_mode & 0o777) == oct(0o644)


def test_samples_csv_out_written(town_dir: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "results.csv"
    src.write_text("manhole_id,datetime,parameter,value,unit\n"
                   "MH000001,2024-01-01 10:00,zinc,abc,mg/L\n"
                   "MH000001,2024-01-01 11:00,zinc,-3,mg/L\n"
                   "MH000001,2024-01-01 12:00,temperature,-3,degC\n", encoding="utf-8")
    out = tmp_path / "findings" / "f.csv"
    rc, _, err = _run(["samples", str(src), "--layers", str(town_dir), "--csv-out", str(out)],
                      capsys)
    assert rc == 0, err
    f = pd.read_csv(out)
    # a non-number and a negative concentration are problems; -3 degC is a temperature
    assert list(f["kind"]) == ["problem", "problem"], f
    assert "abc" in f["message"].iloc[0] and "line 2" in f["message"].iloc[0]
    assert "negative" in f["message"].iloc[1] and "line 3" in f["message"].iloc[1]
    assert sorted(p.name for p in out.parent.iterdir()) == ["f.csv"]


def test_atomic_path_failure_keeps_old_file(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    atomic_write_text(target, "old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("boom")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]
    atomic_write_text(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"


def test_atomic_path_refuses_folder_and_file_parent(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="existing folder"), atomic_path(tmp_path):
        pass
    with pytest.raises(ConfigError, match="not a folder"), atomic_path(tmp_path / "f" / "x"):
        pass


def test_intact_shapefile_reads_all_features(town_dir: Path) -> None:
    """The truncation check does not refuse a whole shapefile (18 mains, as written)."""
    town = load_town(town_dir)
    assert len(town.layers["mains"]) == len(make_town(60, seed=1)["mains"])


# --------------------------------------------------------------------------- a real process


def test_subprocess_error_has_no_traceback(bad: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gisnet", "validate", "--layers", str(bad / "truncated")],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = _error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("gisnet: error: "), proc.stderr
    assert "mains.shp" in lines[0] and "truncated" in lines[0]


@pytest.mark.parametrize("argv", [
    ["graph", "--out", "{O}"],
    ["frontage", "--main", "SM000001", "--cost", "10", "--csv", "{O}/s.csv", "--out", "{O}"],
])
def test_unwritable_out_folder(argv: list[str], town_dir: Path, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """A folder the user may not write in (simulated: this runs as root too)."""
    import gisnet.output.writing

    out = tmp_path / "ro"
    out.mkdir()

    def denied(*_a: object, dir: object = None, **_k: object) -> None:
        raise PermissionError(13, "Permission denied", str(dir))

    monkeypatch.setattr(gisnet.output.writing.tempfile, "mkstemp", denied)
    rc, _, err = _run([argv[0], "--layers", str(town_dir),
                       *(a.format(O=out) for a in argv[1:])], capsys)
    lines = _error_lines(err)
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("gisnet: error: "), err
    assert str(out) in lines[0] and "Permission denied" in lines[0]
    assert list(out.iterdir()) == []


# ------------------------------------------------------- no silent defaults (the sample)


@pytest.fixture()
def user_folder(tmp_path: Path, town_dir: Path) -> Path:
    """A folder holding only parcels.shp and mains.shp, as a new user has."""
    d = tmp_path / "mine"
    d.mkdir()
    for role in ("parcels", "mains"):
        for f in town_dir.glob(f"{role}.*"):
            shutil.copy(f, d / f.name)
    return d


def test_run_without_town_file_says_how_to_start(user_folder: Path, monkeypatch,
                                                  capsys) -> None:
    monkeypatch.chdir(user_folder)
    for cmd in ("run", "validate", "graph"):
        assert main([cmd]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "gisnet init" in err[0] and f"gisnet {cmd} --sample" in err[0]
    assert not (user_folder / "maps").exists()  # the sample was not run here


def test_overrides_alone_make_the_town(user_folder: Path, town_dir: Path, monkeypatch,
                                       capsys) -> None:
    """--parcels/--mains without --layers and without a gisnet.toml: those layers only,
    never merged into the sample town."""
    monkeypatch.chdir(user_folder)
    assert main(["validate", "--parcels", "parcels.shp", "--mains", "mains.shp",
                 "--profile", "berlin-nh", "--no-graph", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    roles = {s["role"]: s["features_kept"] for s in doc["layers"]}
    own = load_town(town_dir)
    assert roles == {"parcels": len(own.layers["parcels"]), "mains": len(own.layers["mains"])}
    assert all(str(user_folder) in s["source"] for s in doc["layers"])


def test_overrides_without_a_profile_name_the_choices(user_folder: Path, monkeypatch,
                                                      capsys) -> None:
    monkeypatch.chdir(user_folder)
    assert main(["validate", "--parcels", "parcels.shp", "--mains", "mains.shp"]) == 2
    err = capsys.readouterr().err
    assert "names no jurisdiction profile" in err
    assert "berlin-nh" in err and "poughkeepsie-fourth-ward" in err


def test_local_town_file_is_used(town_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    d = tmp_path / "local"
    shutil.copytree(town_dir, d)
    toml = (d / "gisnet.toml").read_text(encoding="utf-8")
    (d / "gisnet.toml").write_text(toml.replace(f'name = "{town_dir.name}"',
                                                'name = "Local Town"'), encoding="utf-8")
    monkeypatch.chdir(d)
    assert main(["validate", "--no-graph"]) == 0
    assert capsys.readouterr().out.startswith("town: Local Town")


def test_sample_only_when_asked(tmp_path: Path, monkeypatch, capsys, sample_dir: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--sample", "--no-graph"]) == 0
    assert "sample" in capsys.readouterr().out.splitlines()[0].lower()
    assert main(["validate", "--sample", "--layers", str(sample_dir)]) == 2
    assert "not both" in capsys.readouterr().err


def test_town_without_profile_is_an_error(town_dir: Path, tmp_path: Path, capsys) -> None:
    d = tmp_path / "noprofile"
    shutil.copytree(town_dir, d)
    toml = (d / "gisnet.toml").read_text(encoding="utf-8")
    (d / "gisnet.toml").write_text(toml.replace('profile = "poughkeepsie-fourth-ward"\n', ""),
                                   encoding="utf-8")
    assert main(["run", "--layers", str(d), "--no-maps", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "names no jurisdiction profile" in err and "berlin-nh" in err
    assert main(["run", "--layers", str(d), "--profile", "berlin-nh", "--no-maps", "-q",
                 "--out", str(tmp_path / "o")]) == 0
