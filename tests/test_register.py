"""The connection register, kept across runs into the same output.

- a health hazard recorded for a ``subject_to_notice`` parcel makes it ``required``
  on the next run into the same folder, and ``changes`` says so;
- the register survives re-runs into a GeoPackage folder and into PostGIS, and a
  connection recorded changes the next run's answer (``connected``);
- a staff view on a result table does not block a run into PostGIS;
- ``gisnet notices`` enters each letter as drafted; a served notice sets the notice
  date; a passed deadline is in ``overdue`` until a connection is recorded;
- a bad register row is one line naming the register, the entry and the problem.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from pathlib import Path

import openpyxl
import pandas as pd
import pyogrio
import pytest

from gisnet.cli import main
from gisnet.register import (
    REGISTER_FILE,
    Entry,
    add_entries,
    apply_register,
    changes_layer,
    overdue_layer,
    read_register,
)
from gisnet.register.changes import PreviousRun

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"


def _run(out: Path | str, *extra: str) -> None:
    assert main(["run", "--layers", str(SAMPLE), "--out", str(out), "--no-maps", "-q",
                 *extra]) == 0


def _layer(out: Path, name: str) -> pd.DataFrame:
    return pyogrio.read_dataframe(out / "gisnet-results.gpkg", layer=name)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """The sample run once into a folder (which then holds an empty register)."""
    out = tmp_path_factory.mktemp("reg") / "out"
    _run(out)
    return out


def test_a_health_hazard_recorded_moves_the_parcel_to_required(first, tmp_path, capsys):
    out = tmp_path / "out"
    import shutil

    shutil.copytree(first, out)
    assert (out / REGISTER_FILE).is_file()  # created, empty, by the first run
    assert len(read_register(out)) == 0
    ob = _layer(out, "obligations")
    assert len(_layer(out, "changes")) == 0  # nothing to compare the first run with
    pid = sorted(ob.loc[ob["status"] == "subject_to_notice", "parcel_id"])[0]
    other = sorted(ob.loc[ob["status"] == "subject_to_notice", "parcel_id"])[1]
    assert main(["register", "add", "--out", str(out), "--parcel", pid,
                 "--event", "health_hazard", "--date", "2026-01-05", "--by", "J. Clerk",
                 "--note", "septic surfacing"]) == 0
    assert "entry 1 added" in capsys.readouterr().out
    register_before = _digest(out / REGISTER_FILE)
    _run(out)
    assert _digest(out / REGISTER_FILE) == register_before  # the run never writes it
    ch = _layer(out, "changes")
    row = ch[ch["parcel_id"] == pid]
    assert len(row) == 1, ch[["parcel_id", "change"]]
    r = row.iloc[0]
    assert (r["status_before"], r["status_after"], r["change"]) == (
        "subject_to_notice", "required", "status")
    assert "register entry 1: health hazard 2026-01-05" in r["reason"]
    man = pd.read_json(out / "gisnet-manifest.json", typ="series")
    assert r["run_after"] == man["run_id"] and r["run_before"] != r["run_after"]
    assert r["run_before_at"].endswith("Z") and r["run_after_at"] >= r["run_before_at"]
    assert other not in set(ch["parcel_id"])  # nothing recorded there, nothing changed
    ob2 = _layer(out, "obligations").set_index("parcel_id")
    assert ob2.loc[pid, "status"] == "required"
    assert ob2.loc[pid, "notice_ground"] == "health_hazard"
    assert ob2.loc[other, "status"] == "subject_to_notice"
    q = _layer(out, "quality")
    assert "register_applied" in set(q["kind"])

    # a third run with nothing new: no changes; the entry still counts
    _run(out)
    assert len(_layer(out, "changes")) == 0
    assert _layer(out, "obligations").set_index("parcel_id").loc[pid, "status"] == "required"
    assert list(read_register(out)["entry_id"]) == [1]


def test_a_connection_recorded_and_a_void_entry(first, tmp_path):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(first, out)
    ob = _layer(out, "obligations")
    pid = sorted(ob.loc[ob["status"] == "subject_to_notice", "parcel_id"])[2]
    (e1,) = add_entries(out, [Entry(pid, "connected", dt.date(2026, 2, 1), entered_by="t")])
    _run(out)
    after = _layer(out, "obligations").set_index("parcel_id")
    assert after.loc[pid, "status"] == "connected"
    ch = _layer(out, "changes").set_index("parcel_id")
    assert ch.loc[pid, "status_after"] == "connected"
    # the entry was a mistake: cancelled by a void entry, never rewritten
    add_entries(out, [Entry(pid, "void", refers_to=e1, note="wrong parcel")])
    _run(out)
    assert _layer(out, "obligations").set_index("parcel_id").loc[pid, "status"] == \
        "subject_to_notice"
    reg = read_register(out)
    assert list(reg["event"]) == ["connected", "void"]  # both kept
    assert _layer(out, "changes").set_index("parcel_id").loc[pid, "status_before"] == \
        "connected"


def test_a_bad_register_row_is_one_line_naming_it(first, tmp_path, capsys):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(first, out)
    add_entries(out, [Entry("6262-10-100", "note", note="ok")])
    con = sqlite3.connect(out / REGISTER_FILE)  # as a hand edit in QGIS would
    with con:
        con.execute("INSERT INTO register (parcel_id, event, event_date) "
                    "VALUES ('6262-10-101', 'served', '03/01/2026')")
    con.close()
    before = _digest(out / "gisnet-results.gpkg")
    assert main(["run", "--layers", str(SAMPLE), "--out", str(out), "--no-maps", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert REGISTER_FILE in err and "entry 2" in err and "6262-10-101" in err \
        and "not a date" in err, err
    assert _digest(out / "gisnet-results.gpkg") == before  # the previous results stay
    assert main(["register", "add", "--out", str(out), "--parcel", "X", "--event", "served"]
                ) == 2
    assert "needs its event_date" in capsys.readouterr().err


def test_changes_layer_compares_status_deadline_and_distance():
    import geopandas as gpd
    from shapely.geometry import box

    before = pd.DataFrame({"parcel_id": ["a", "b", "c", "gone"],
                           "status": ["subject_to_notice", "required", "required", "review"],
                           "deadline_date": [None, "2026-03-01", "2026-03-01", None],
                           "septic_deadline": [None] * 4,
                           "distance_ft": [10.0, 20.0, 30.0, 5.0]})
    after = gpd.GeoDataFrame({
        "parcel_id": ["a", "b", "c", "new"],
        "status": ["required", "required", "required", "not_required"],
        "deadline_date": pd.to_datetime([None, "2026-04-01", "2026-03-01", None]),
        "septic_deadline": pd.to_datetime([None] * 4),
        "distance_ft": [10.02, 20.0, 31.0, 400.0],
        "reason": ["r"] * 4}, geometry=[box(0, 0, 1, 1)] * 4, crs="EPSG:2260")
    ch = changes_layer(PreviousRun("run1", "2026-01-01T00:00:00Z", before), after,
                       run_id="run2", run_at="2026-01-02T00:00:00Z").set_index("parcel_id")
    assert dict(ch["change"]) == {"a": "status", "b": "deadline", "c": "distance",
                                  "gone": "removed", "new": "new"}
    assert ch.loc["b", "deadline_before"] == pd.Timestamp("2026-03-01")
    assert ch.loc["b", "deadline_after"] == pd.Timestamp("2026-04-01")
    assert ch.loc["gone", "geometry"] is None and ch.loc["gone", "status_after"] is None
    assert set(ch["run_before"]) == {"run1"} and set(ch["run_after"]) == {"run2"}
    assert len(changes_layer(None, after, run_id="r", run_at="t")) == 0


def test_changes_are_in_parcel_id_order_each_with_its_own_shape():
    """Many parcels, ids in no order (digits, capitals, accents): the changed rows come
    in Python's order of the ids, each with its own parcel's shape; unchanged parcels
    have no row."""
    import random

    import geopandas as gpd
    from shapely.geometry import box

    rng = random.Random(3)
    ids = [f"{rng.choice(['P', 'p', 'É', '1'])}-{i:05d}" for i in range(3000)]
    rng.shuffle(ids)
    status = [rng.choice(["required", "connected", "review"]) for _ in ids]
    before = pd.DataFrame({"parcel_id": ids[:2900], "status": status[:2900],
                           "distance_ft": [50.0] * 2900})
    after_status = [s if rng.random() < 0.9 else "not_required" for s in status]
    after = gpd.GeoDataFrame({"parcel_id": ids[100:], "status": after_status[100:],
                              "distance_ft": [50.0] * 2900},
                             geometry=[box(i, 0, i + 1, 1) for i in range(100, 3000)],
                             crs="EPSG:2260")
    ch = changes_layer(PreviousRun("run1", "2026-01-01T00:00:00Z", before), after,
                       run_id="run2", run_at="2026-01-02T00:00:00Z")
    changed = {pid for pid, a, b in zip(ids[100:2900], after_status[100:2900],
                                        status[100:2900], strict=True) if a != b}
    want = sorted(changed | set(ids[:100]) | set(ids[2900:]))
    assert list(ch["parcel_id"]) == want
    where = {pid: i for i, pid in enumerate(ids)}
    for pid, shape in zip(ch["parcel_id"], ch.geometry, strict=True):
        i = where[pid]
        assert (shape is None) == (i < 100), pid
        if shape is not None:
            assert shape.equals(box(i, 0, i + 1, 1)), pid


def test_overdue_until_connected():
    import geopandas as gpd
    from shapely.geometry import box

    ob = gpd.GeoDataFrame({
        "parcel_id": ["p1", "p2", "p3"], "address": ["1 Main", "2 Main", "3 Main"],
        "owner_name": ["A", "B", "C"], "status": ["required", "required", "connected"],
        "notice_date": pd.to_datetime(["2026-01-01", "2026-02-20", "2025-01-01"]),
        "deadline_date": pd.to_datetime(["2026-01-31", "2026-03-22", "2025-01-31"]),
        "septic_deadline": pd.to_datetime([None] * 3), "section": ["§"] * 3,
        "reason": ["r"] * 3}, geometry=[box(0, 0, 1, 1)] * 3, crs="EPSG:2260")
    reg = pd.DataFrame({"entry_id": [1], "parcel_id": ["p1"], "event": ["served"],
                        "event_date": [dt.date(2026, 1, 1)], "notice_ground": [None],
                        "letter_id": ["N1-0001"], "refers_to": [None], "note": [None],
                        "entered_by": [None], "entered_at": ["2026-01-01T00:00:00Z"]})
    od = overdue_layer(ob, dt.date(2026, 3, 1), reg)
    assert list(od["parcel_id"]) == ["p1"]  # p2 not yet due, p3 connected
    assert od.loc[0, "overdue_days"] == 29 and od.loc[0, "letter_id"] == "N1-0001"
    assert od.loc[0, "deadline"] == pd.Timestamp("2026-01-31")


@pytest.mark.slow
def test_notices_enter_letters_drafted_and_a_served_notice_sets_the_date(first, tmp_path,
                                                                          capsys):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(first, out)
    ob = _layer(out, "obligations")
    pid = sorted(ob.loc[ob["status"] == "subject_to_notice", "parcel_id"])[0]
    add_entries(out, [Entry(pid, "health_hazard", dt.date(2026, 1, 5))])
    letters = tmp_path / "letters"
    assert main(["notices", "--layers", str(SAMPLE), "--out", str(letters), "--register",
                 str(out), "--parcel", pid, "--notice-date", "2026-01-10"]) == 0
    assert "entered in the register" in capsys.readouterr().out
    reg = read_register(out)
    drafted = reg[reg["event"] == "drafted"]
    assert list(drafted["parcel_id"]) == [pid]
    letter = drafted["letter_id"].iloc[0]
    assert letter.startswith("N") and drafted["event_date"].iloc[0] == dt.date(2026, 1, 10)
    merge = pd.read_csv(letters / "notices.csv", encoding="utf-8-sig")
    assert list(merge["letter_id"]) == [letter]
    # drafted changes nothing; served does: the notice date and the deadline
    _run(out)
    row = _layer(out, "obligations").set_index("parcel_id").loc[pid]
    assert pd.isna(row["notice_date"])
    assert main(["register", "add", "--out", str(out), "--parcel", pid, "--event", "served",
                 "--date", "2026-01-12", "--letter", letter, "--ground", "health_hazard"]) == 0
    _run(out)
    row = _layer(out, "obligations").set_index("parcel_id").loc[pid]
    assert pd.Timestamp(row["notice_date"]) == pd.Timestamp("2026-01-12")
    assert pd.Timestamp(row["deadline_date"]) == pd.Timestamp("2026-02-11")  # 30 days
    od = _layer(out, "overdue").set_index("parcel_id")
    if dt.date.today() > dt.date(2026, 2, 11):
        assert od.loc[pid, "letter_id"] == letter
    ch = _layer(out, "changes").set_index("parcel_id")
    assert ch.loc[pid, "change"] == "deadline"
    # exported for staff: labelled headers, date cells
    assert main(["register", "export", "--out", str(out), str(tmp_path / "reg.xlsx")]) == 0
    ws = openpyxl.load_workbook(tmp_path / "reg.xlsx")["register"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[0][:4] == ("Entry", "Parcel", "Event", "Date")
    assert isinstance(rows[1][3], dt.datetime)


def test_apply_register_leaves_the_town_alone():
    from gisnet.io import load_town

    town = load_town(SAMPLE)
    pid = str(town.layers["parcels"]["parcel_id"].iloc[0])
    reg = pd.DataFrame({"entry_id": [1, 2], "parcel_id": [pid, "no-such-parcel"],
                        "event": ["connected", "note"],
                        "event_date": [dt.date(2026, 1, 1), None],
                        "notice_ground": [None, None], "letter_id": [None, None],
                        "refers_to": [None, None], "note": [None, "x"],
                        "entered_by": [None, None], "entered_at": ["t", "t"]})
    before = town.layers["parcels"]["connected"].copy()
    got = apply_register(town, reg)
    assert got.layers["parcels"]["connected"].iloc[0]
    pd.testing.assert_series_equal(town.layers["parcels"]["connected"], before)
    assert [f.kind for f in got.report.of_kind("register_unknown_parcel")] == \
        ["register_unknown_parcel"]
    assert not town.report.of_kind("register_applied")


# --------------------------------------------------------------------------- PostGIS


@pytest.fixture(scope="module")
def cluster():
    import pg

    c = pg.start_cluster()
    try:
        yield c
    finally:
        pg.stop_cluster(c)


@pytest.mark.slow
def test_register_survives_postgis_runs_and_a_staff_view_does_not_block(cluster, capsys):
    url = cluster.url + "?schema=reg"
    _run(url)
    with cluster.connect() as conn:
        ob = pd.DataFrame(conn.execute("SELECT parcel_id, status FROM reg.obligations "
                                       "ORDER BY parcel_id").fetchall(),
                          columns=["parcel_id", "status"])
        # staff's own view on a result table, and a column comment they rely on
        conn.execute("CREATE VIEW public.to_notify AS SELECT parcel_id, status FROM "
                     "reg.obligations WHERE status IN ('required', 'subject_to_notice')")
    pid = sorted(ob.loc[ob["status"] == "subject_to_notice", "parcel_id"])[0]
    assert main(["register", "add", "--out", url, "--parcel", pid, "--event",
                 "health_hazard", "--date", "2026-01-05", "--by", "clerk"]) == 0
    _run(url)  # the view does not block the run
    with cluster.connect() as conn:
        st = dict(conn.execute("SELECT parcel_id, status FROM public.to_notify").fetchall())
        assert st[pid] == "required"  # the view shows this run's rows
        ch = conn.execute("SELECT status_before, status_after FROM reg.changes WHERE "
                          "parcel_id = %s", (pid,)).fetchall()
        assert ch == [("subject_to_notice", "required")]
        reg = conn.execute("SELECT entry_id, parcel_id, event, event_date FROM reg.register"
                           ).fetchall()
        assert reg == [(1, pid, "health_hazard", dt.date(2026, 1, 5))]
    # a connection recorded in the database changes the next run's answer
    add_entries(url, [Entry(pid, "connected", dt.date(2026, 2, 1))])
    _run(url)
    with cluster.connect() as conn:
        assert conn.execute("SELECT status FROM reg.obligations WHERE parcel_id = %s",
                            (pid,)).fetchone() == ("connected",)
        assert conn.execute("SELECT count(*) FROM reg.register").fetchone() == (2,)
        assert conn.execute("SELECT count(*) FROM reg.gisnet_runs").fetchone() == (3,)
        assert pid not in dict(conn.execute("SELECT parcel_id, status FROM public.to_notify"
                                            ).fetchall())
    assert list(read_register(url)["event"]) == ["health_hazard", "connected"]


def test_overdue_on_the_obligations_page():
    from gisnet.io import load_town
    from gisnet.maps.common import MapContext
    from gisnet.maps.obligations import obligation_layers
    from gisnet.pipeline import analyse

    town = load_town(SAMPLE)
    ob = analyse(town, only=["obligations"]).layers["obligations"]
    pid = sorted(ob.loc[ob["status"] == "subject_to_notice", "parcel_id"])[0]
    reg = pd.DataFrame({"entry_id": [1], "parcel_id": [pid], "event": ["served"],
                        "event_date": [dt.date(2026, 1, 2)], "notice_ground": ["health_hazard"],
                        "letter_id": ["N1-0001"], "refers_to": [None], "note": [None],
                        "entered_by": [None], "entered_at": ["t"]})
    town = apply_register(town, reg)
    res = analyse(town, only=["obligations"], as_of=dt.date(2100, 1, 1))
    od = res.layers["overdue"]
    assert list(od["parcel_id"]) == [pid] and list(od["letter_id"]) == ["N1-0001"]
    assert od["deadline"].iloc[0] == pd.Timestamp("2026-02-01")  # served + 30 days
    assert (od["status"] != "connected").all()
    assert len(analyse(town, only=["obligations"], as_of=dt.date(1990, 1, 1)
                       ).layers["overdue"]) == 0
    keys = [lyr.key for lyr in obligation_layers(MapContext(town, res.layers))]
    assert "overdue" in keys
