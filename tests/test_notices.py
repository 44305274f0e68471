"""``gisnet notices`` on the sample town: the packets, their text, their maps and the tables.

The rule applied (Town of Poughkeepsie § 168-22.2G): "The owner of all houses,
buildings or property used for human occupancy, employment, recreation or
other similar purposes, situated within the area and abutting on any street,
alley or right-of-way, in which there is now located or may in the future be
located a public sanitary sewer for the area is hereby required ... to connect
such facilities directly with the proper public sewer ... within 30 days after
the date of official notice to do so, provided that said public sewer is within
300 feet of the property line. Such notice shall be given only when it shall be
necessary to eliminate a public health hazard or to promote a highway
improvement program."

So the town could order a parcel to connect when it is within 300 ft of the
property line, abutting a sewered street and not connected; it writes the order
only where one of the two grounds of notice is recorded (the sample records one
public health hazard), and the deadline is the notice date + 30 days. The expected
values below are computed here from the input shapefiles (pyogrio, shapely),
not from gisnet's output.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely

from gisnet.errors import ConfigError, NotFoundError
from gisnet.io import load_town
from gisnet.notices import find_template, load_template, write_notices
from gisnet.notices.figure import LINE_COLOUR
from gisnet.pipeline import analyse
from gisnet.profile import ordinance_text

pypdf = pytest.importorskip("pypdf")
pdfium = pytest.importorskip("pypdfium2")
openpyxl = pytest.importorskip("openpyxl")

NOTICE_DATE = dt.date(2026, 12, 1)
#: The sample's one parcel an order may be written for (a public health hazard recorded).
ORDER = "6262-12-251"
#: The words of § 168-22.2G a letter quotes.
WORDS = ("within 30 days after the date of official notice to do so",
         "provided that said public sewer is within 300 feet of the property line")


@pytest.fixture(scope="module")
def town(sample_dir):
    return load_town(sample_dir)


@pytest.fixture(scope="module")
def results(town):
    return analyse(town, only=["obligations"])


@pytest.fixture(scope="module")
def notices(town, results, tmp_path_factory):
    out = tmp_path_factory.mktemp("notices") / "notices"
    return write_notices(town, results, out, notice_date=NOTICE_DATE)


@pytest.fixture(scope="module")
def raw(sample_dir):
    """The sample's parcels and mains as stored (source column names)."""
    parcels = pyogrio.read_dataframe(sample_dir / "parcels.shp")
    mains = pyogrio.read_dataframe(sample_dir / "mains.shp")
    return parcels.set_index("PRINT_KEY"), mains


def _text(path: Path) -> str:
    return "\n".join(p.extract_text() for p in pypdf.PdfReader(str(path)).pages)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_selection_is_every_parcel_the_town_may_order(notices, results, raw, sample_dir):
    """Within 300 ft, abutting, not connected, "used for human occupancy, employment,
    recreation or other similar purposes" (a building on it, or a land use other than
    vacant), and "Such notice shall be given only when it shall be necessary to eliminate
    a public health hazard or to promote a highway improvement program": a hazard
    recorded (``HEALTHHAZ`` = Y; the sample has no highway program). Counted here from
    the input."""
    parcels, _ = raw
    built = set(pyogrio.read_dataframe(sample_dir / "buildings.shp",
                                       columns=["PRINT_KEY"])["PRINT_KEY"].astype(str))
    vacant = {"311", "330"}  # the sample town file maps these PROP_CLASS codes to vacant
    used = {pid for pid, cls in parcels["PROP_CLASS"].astype(str).items()
            if pid in built or cls not in vacant}
    ob = results.obligations.obligations
    could = ob[ob["within_distance"].fillna(False).astype(bool)
               & ob["abuts_sewered_street"].fillna(False).astype(bool)
               & (ob["status"] != "connected") & ob["in_district"].fillna(True).astype(bool)
               & ob["parcel_id"].isin(used)]
    assert len(could) == 31
    hazard = set(parcels.index[parcels["HEALTHHAZ"].fillna("") == "Y"].astype(str))
    expected = sorted(set(could["parcel_id"].astype(str)) & hazard)
    assert len(expected) == 1
    assert [p.parcel_id for p in notices.packets] == expected
    names = {p.name for p in notices.out.iterdir()}
    assert {f"notice-{pid}.pdf" for pid in expected} <= names
    assert {"notices.pdf", "notices.csv", "notices.xlsx", "gisnet-manifest.json"} <= names
    pages = [len(pypdf.PdfReader(str(notices.out / p.file_name)).pages)
             for p in notices.packets]
    assert set(pages) == {2}  # the letter, the evidence page (its map fits on it)
    combined = pypdf.PdfReader(str(notices.out / "notices.pdf"))
    assert len(combined.pages) == sum(pages)


def test_packet_text_names_parcel_address_section_distance_deadline(notices, raw, town):
    parcels, mains = raw
    by_main = mains.set_index("FACILITYID").geometry
    for p in notices.packets:
        text = _flat(_text(notices.out / p.file_name))
        src = parcels.loc[p.parcel_id]
        assert p.parcel_id in text
        assert str(src["PROP_ADDR"]) in text
        assert "§ 168-22.2G" in text
        # the distance, measured here: parcel polygon to the main's centreline
        main = by_main.loc[[p.values["main_id"]]]
        d_ft = float(min(shapely.distance(src.geometry, g) for g in main)) * town.ft_per_unit
        assert f"{d_ft:,.1f} ft" in text, (p.parcel_id, d_ft)
        assert "from the property line, straight line" in text
        # the deadline: a notice already served runs from its date, else from this one
        notice = pd.to_datetime(src["NOTICEDATE"]) if src["NOTICEDATE"] else pd.NaT
        start = NOTICE_DATE if pd.isna(notice) else notice.date()
        due = max(start, NOTICE_DATE) + dt.timedelta(days=30)
        assert due.isoformat() in text, (p.parcel_id, due)
        for words in WORDS:
            assert words in text
    assert NOTICE_DATE.isoformat() in _text(notices.out / notices.packets[0].file_name)


def test_letter_quotes_the_ordinance_as_written():
    text = _flat(ordinance_text("poughkeepsie-fourth-ward"))
    for words in WORDS:
        assert words in text


def _line_pixels(pdf_path: Path, page: int, artifacts: Path | None = None,
                 name: str = "") -> int:
    doc = pdfium.PdfDocument(str(pdf_path))
    img = doc[page].render(scale=2).to_pil().convert("RGB")
    if artifacts is not None:
        img.save(artifacts / name)
    a = np.asarray(img).astype(int)
    target = np.array([int(LINE_COLOUR[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(a - target).max(axis=2) <= 25).sum())


def test_figure_shows_the_measured_line(notices, town, results, tmp_path, artifacts):
    p = notices.packets[0]
    path = notices.out / p.file_name
    doc = pdfium.PdfDocument(str(path))
    doc[0].render(scale=1.5).to_pil().save(artifacts / "notice-letter.png")
    assert _line_pixels(path, 1, artifacts, "notice-evidence.png") > 200
    # without the evidence line the same packet has none of its colour: the check can fail
    layers = results.layers()
    layers["obligation_evidence"] = layers["obligation_evidence"].iloc[:0]
    bare = write_notices(town, layers, tmp_path / "bare", parcels=[p.parcel_id],
                         notice_date=NOTICE_DATE)
    assert _line_pixels(bare.out / bare.packets[0].file_name, 1) < 20
    assert "No measured line" in _text(bare.out / bare.packets[0].file_name)


def test_xlsx_has_one_row_per_packet(notices, results):
    wb = openpyxl.load_workbook(notices.out / "notices.xlsx")
    ws = wb["notices"]
    rows = list(ws.iter_rows(values_only=True))
    header, body = rows[0], rows[1:]
    ob = results.obligations.obligations
    n = int((ob["status"].eq("required") & ob["notice_ground"].notna()).sum())
    assert len(body) == n == len(notices.packets)
    # labelled headers (gisnet.labels), the columns in MERGE_COLUMNS' order
    from gisnet.labels import column_label
    from gisnet.notices.writing import MERGE_COLUMNS

    assert list(header) == [column_label(c) for c in MERGE_COLUMNS]
    assert "Parcel" in header and "Deadline date" in header and "parcel_id" not in header
    col = {c: i for i, c in enumerate(MERGE_COLUMNS)}
    assert [r[col["parcel_id"]] for r in body] == [p.parcel_id for p in notices.packets]
    assert all(r[col["letter_id"]].startswith("N") for r in body)
    assert {r[col["section"]] for r in body} == {"§ 168-22.2G"}
    assert all(r[col["file"]].startswith("notice-") for r in body)
    assert {r[col["deadline_days"]] for r in body} == {30}  # whole days, not 30.0
    # real date cells, not text
    assert {r[col["notice_date"]] for r in body} == {
        dt.datetime.combine(NOTICE_DATE, dt.time())}
    assert all(isinstance(r[col["deadline_date"]], dt.datetime) for r in body)
    assert {ws.cell(row=2, column=col["notice_date"] + 1).number_format} == {"yyyy-mm-dd"}
    dist = dict(zip(ob["parcel_id"], ob["distance_ft"], strict=True))
    for r in body:
        assert r[col["distance_ft"]] == pytest.approx(dist[r[col["parcel_id"]]], abs=0.05)


def test_csv_has_a_bom_and_the_section_sign_round_trips(notices):
    raw = (notices.out / "notices.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert len(rows) == len(notices.packets)
    assert {r["section"] for r in rows} == {"§ 168-22.2G"}
    assert "Â§" not in raw.decode("utf-8-sig")


def test_a_parcel_asked_for_by_id(town, results, tmp_path):
    ob = results.obligations.obligations
    ns = write_notices(town, results, tmp_path / "one", parcels=[ORDER],
                       notice_date=NOTICE_DATE)
    assert [p.parcel_id for p in ns.packets] == [ORDER]
    # a connected parcel gets no order: refused before anything is written
    pid = str(ob.loc[ob["status"] == "connected", "parcel_id"].iloc[0])
    with pytest.raises(ConfigError, match=f"no connection order may be written for parcel "
                                          f"'{pid}' \\(Connected"):
        write_notices(town, results, tmp_path / "conn", parcels=[pid])
    assert not (tmp_path / "conn").exists()
    with pytest.raises(NotFoundError, match="no-such-parcel"):
        write_notices(town, results, tmp_path / "none", parcels=["no-such-parcel"])


def test_owner_from_the_parcels_layer(sample_dir, tmp_path):
    parcels = pyogrio.read_dataframe(sample_dir / "parcels.shp")
    parcels["OWNER"] = [f"Owner {i}" for i in range(len(parcels))]
    parcels.loc[parcels["PROP_ADDR"] == "132 Hooker St", "OWNER"] = "Łukasz Müller & Söhne"
    src = tmp_path / "parcels.gpkg"
    pyogrio.write_dataframe(parcels, src)
    town = load_town(sample_dir, overrides={"parcels": str(src)})
    res = analyse(town, only=["obligations"])
    ob = res.obligations.obligations
    row = ob[ob["address"] == "132 Hooker St"].iloc[0]
    assert row["owner_name"] == "Łukasz Müller & Söhne"
    ns = write_notices(town, res, tmp_path / "out", parcels=[row["parcel_id"]],
                       notice_date=NOTICE_DATE)
    assert "To: Łukasz Müller & Söhne" in _text(ns.out / ns.packets[0].file_name)


def test_obligations_carry_the_address(results, raw):
    parcels, _ = raw
    ob = results.obligations.obligations.set_index("parcel_id")
    assert (ob["address"] == parcels.loc[ob.index, "PROP_ADDR"]).all()
    assert ob["owner_name"].isna().all()  # the sample maps no owner


def test_template_placeholders_are_checked(tmp_path, town, results):
    bad = tmp_path / "letter.txt"
    bad.write_text("Dear {owner_name},\nconnect by {deadlin_date}.\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_template(bad)
    assert "{deadlin_date}" in str(exc.value) and str(bad) in str(exc.value)
    good = tmp_path / "own.txt"
    good.write_text("# Our own letter\n\nParcel {parcel_id} at {address}: {deadline_text}\n",
                    encoding="utf-8")
    ns = write_notices(town, results, tmp_path / "own", parcels=[ORDER],
                       notice_date=NOTICE_DATE, template=good)
    assert "Our own letter" in _text(ns.out / ns.packets[0].file_name)


def test_town_file_names_its_template(tmp_path, town):
    tpl = tmp_path / "letters" / "ours.txt"
    tpl.parent.mkdir()
    tpl.write_text("{parcel_id}\n", encoding="utf-8")
    tf = tmp_path / "gisnet.toml"
    tf.write_text('name = "t"\n[notices]\ntemplate = "letters/ours.txt"\n', encoding="utf-8")

    from types import SimpleNamespace

    fake = SimpleNamespace(settings=SimpleNamespace(extra={"town_file": tf}),
                           profile=town.profile)
    found = find_template(fake)
    assert found.path == tpl and found.origin == "town file"
    assert find_template(town).origin == "profile"
    assert find_template(town).path.name == "poughkeepsie-fourth-ward.txt"


def test_notices_refuse_a_run_output_folder(town, results, tmp_path):
    (tmp_path / "gisnet-manifest.json").write_text(
        '{"files": {"gisnet-results.gpkg": {"sha256": "x"}}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="folder of their own"):
        write_notices(town, results, tmp_path, parcels=[ORDER])


@pytest.mark.slow
def test_cli_notices(sample_dir, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("{nope}\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "gisnet", "notices", "--layers", str(sample_dir)]
    r = subprocess.run([*cmd, "--out", str(tmp_path / "n"), "--template", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "{nope}" in r.stderr and "bad.txt" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([*cmd, "--out", str(tmp_path / "n"), "--parcel", ORDER],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "(today; give --notice-date" in r.stdout
    assert "1 notice packet(s)" in r.stdout
    r = subprocess.run([*cmd, "--out", str(tmp_path / "c"), "--candidates"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and (tmp_path / "c" / "candidates.csv").is_file(), r.stderr
    r = subprocess.run([*cmd, "--out", str(tmp_path / "m"), "--notice-date", "2026-13-01"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--notice-date" in r.stderr


def test_berlin_sample_has_no_order_to_write(sample_dir, tmp_path):
    """Berlin sec. 16-50 covers "All newly constructed houses, buildings, or properties";
    the sample records no built dates, so every parcel within 200 ft is left for review
    and no order is written (tests/test_letters.py writes Berlin's letters)."""
    town = load_town(sample_dir, profile="berlin-nh")
    res = analyse(town, only=["obligations"])
    ob = res.obligations.obligations
    pid = str(ob.loc[ob["status"] == "review", "parcel_id"].iloc[0])
    with pytest.raises(ConfigError, match="Needs review"):
        write_notices(town, res, tmp_path / "berlin", parcels=[pid], notice_date=NOTICE_DATE)
    ns = write_notices(town, res, tmp_path / "all", notice_date=NOTICE_DATE, figures=False)
    assert ns.packets == [] and any("--candidates" in n for n in ns.notes)


def test_town_file_notices_key_is_checked(tmp_path):
    from gisnet.townfile import read_town_file

    tf = tmp_path / "gisnet.toml"
    tf.write_text('[notices]\ntemplat = "x.txt"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="templat"):
        read_town_file(tf)
    tf.write_text('[notices]\ntemplate = "x.txt"\n', encoding="utf-8")
    assert read_town_file(tf).notice_template == tmp_path / "x.txt"


def test_no_parcel_selected_writes_tables_without_a_pdf(town, results, tmp_path):
    ns = write_notices(town, results, tmp_path / "none", parcels=[], notice_date=NOTICE_DATE)
    assert ns.packets == [] and not (ns.out / "notices.pdf").exists()
    assert any("no parcel selected" in n for n in ns.notes)
    ws = openpyxl.load_workbook(ns.out / "notices.xlsx")["notices"]
    assert ws.max_row == 1
