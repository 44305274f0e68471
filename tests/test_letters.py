"""Letters a town can sign: orders only on a recorded ground, lawful deadlines, verbatim quotes.

Poughkeepsie § 168-22.2G: "Such notice shall be given only when it shall be
necessary to eliminate a public health hazard or to promote a highway improvement
program." § 168-22.3C, of a property on a private system: "Such notice shall be
given only when it shall be necessary to eliminate a public health hazard." Berlin's
enforcement paragraph (a): "The time allotted for compliance shall not be less than
thirty (30) days."

Every letter written here, of the sample town and of hand-made towns under both
profiles, is checked by :func:`check_letters`: its ground is recorded, its deadline is
on or after its date plus the ordinance's least compliance period, and every passage
in quotation marks is the ordinance's own words (checked against the shipped text).
Coordinates are in international feet (EPSG:2222).
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from gisnet.errors import ConfigError
from gisnet.io import load_town
from gisnet.notices import candidates, write_candidates, write_notices
from gisnet.obligations import analyse_obligations
from gisnet.obligations.deciding import RULES
from gisnet.profile import load_profile, ordinance_text, profile_from_dict
from gisnet.profile.quotes import profile_quote_problems, quote_problem, quoted_passages
from gisnet.testing import towns as T

pytest.importorskip("reportlab")
pypdf = pytest.importorskip("pypdf")

POUGH = "poughkeepsie-fourth-ward"
BERLIN = "berlin-nh"
CRS = "EPSG:2222"
BLOCKS = {"signatory": "A. Clerk", "title": "Superintendent", "contact": "Town Hall, 1 Main St"}
APPEAL = "Write to the Town Board within 14 days to ask for a hearing."


def _lot(i: int, **kw) -> dict:
    """Lot ``i``: 100 ft wide, 25 ft from the sewer on the street's centreline."""
    return T.parcel(f"P{i}", (200 * i, 25, 200 * i + 100, 125),
                    **{"land_use": "residential_single", **kw})


def _house(i: int, use: str = "residential", **kw) -> dict:
    return T.building(f"B{i}", (200 * i + 30, 60, 200 * i + 70, 100), f"P{i}", use=use, **kw)


def _town(profile: str, lots: list[dict], houses: list[dict]):
    return T.make_town({
        "parcels": lots, "buildings": houses,
        "mains": [T.main("M1", [(-200, 0), (3000, 0)])],
        "streets": [T.street("S1", (-200, -25, 3000, 25), width_ft=50.0)],
    }, crs=CRS, profile=profile)


def _flat(text: str) -> str:
    return " ".join(text.split())


def check_letters(ns, ob: pd.DataFrame, profile) -> int:
    """Each letter: ground recorded, deadline >= date + least period, quotations verbatim."""
    text = ordinance_text(profile)
    least = profile.connection.compliance_days
    assert least and profile.connection.compliance_section
    rows = ob.set_index(ob["parcel_id"].astype(str))
    for p in ns.packets:
        row = rows.loc[p.parcel_id]
        assert row["status"] == "required", p.parcel_id
        assert isinstance(row["notice_ground"], str) and row["notice_ground"], p.parcel_id
        assert p.deadline_date >= ns.notice_date + dt.timedelta(days=least), p.parcel_id
        letter = ns.template.render(p.values)
        assert p.deadline_date.isoformat() in letter
        assert "No deadline applies" not in letter
        # what the owner receives: no staff sentence, no gisnet reason
        assert "records show" not in letter and row["reason"] not in letter
        passages = quoted_passages(letter)
        assert passages, p.parcel_id
        for q in passages:
            assert quote_problem(text, q) is None, (p.parcel_id, q)
        pdf = _flat("\n".join(pg.extract_text() for pg in
                              pypdf.PdfReader(str(ns.out / p.file_name)).pages))
        assert p.deadline_date.isoformat() in pdf
        for block in ("signatory", "title", "contact"):
            assert _flat(p.values[block]) in pdf, (p.parcel_id, block)
    return len(ns.packets)


# --------------------------------------------------------------------------- quotations


@pytest.mark.parametrize("profile", [POUGH, BERLIN])
def test_every_quotation_of_the_profiles_is_the_ordinances_words(profile):
    assert profile_quote_problems(profile) == {}
    c = load_profile(profile).connection
    assert c.quote and c.compliance_quote and c.penalty_quote


def test_every_quotation_of_the_rule_table_is_in_an_ordinance():
    """The ``law`` of each rule, and each reason template, quote one of the two texts."""
    texts = [ordinance_text(POUGH), ordinance_text(BERLIN)]
    n = 0
    for rule in RULES:
        for sentence in (rule.law, rule.reason):
            for q in quoted_passages(sentence):
                n += 1
                assert any(quote_problem(t, q) is None for t in texts), (rule.name, q)
    assert n >= 25


@pytest.mark.parametrize("profile,words", [
    # words silently left out: "at the expense of the property owner", "in accordance ..."
    (BERLIN, "shall be connected with the public sewer within ninety (90) days"),
    (POUGH, "connect directly with the proper public sewer within 30 days"),
    # gisnet's paraphrase of the existing-plumbing paragraph
    (BERLIN, "in no event more than fifteen (15) years from the date the sanitary sewer was "
             "available to the residence"),
    # a capital the text does not have, and words out of order
    (POUGH, "Notice shall be given only when it shall be necessary"),
    (POUGH, "within 300 feet of the property line … The owner of all houses"),
])
def test_a_quotation_that_is_not_the_words_is_caught(profile, words):
    assert quote_problem(ordinance_text(profile), words) is not None


def test_a_profile_with_a_paraphrase_as_its_quote_writes_no_letter(tmp_path):
    raw = load_profile(BERLIN).raw
    raw["connection"]["quote"] = ("All newly constructed buildings shall be connected with "
                                  "the public sewer within ninety (90) days.")
    prof = profile_from_dict(raw, path=tmp_path / "own.toml")
    assert "connection.quote" in profile_quote_problems(prof, ordinance_text(BERLIN))
    town = _town(prof, [_lot(0)], [_house(0, built_date="2025-06-01")])
    res = analyse_obligations(town)
    with pytest.raises(ConfigError, match="quote is not the ordinance's words"):
        write_notices(town, res, tmp_path / "out", notice_date=dt.date(2026, 2, 2),
                      blocks=BLOCKS, figures=False)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- Poughkeepsie


@pytest.fixture(scope="module")
def pough(tmp_path_factory):
    lots = [_lot(0, health_hazard=True),
            _lot(1, highway_program=True),
            _lot(2),                                          # nothing recorded
            _lot(3, septic=True, highway_program=True),       # § 168-22.3C: no ground
            _lot(4),                                          # only a detached garage
            _lot(5, health_hazard=True, notice_date="2026-01-02"),
            _lot(6, septic=True, highway_program=True, notice_date="2026-05-01")]
    houses = [_house(i) for i in (0, 1, 2, 3, 5, 6)] + [_house(4, use="detached_garage")]
    town = _town(POUGH, lots, houses)
    res = analyse_obligations(town)
    out = tmp_path_factory.mktemp("pough") / "notices"
    ns = write_notices(town, res, out, notice_date=dt.date(2026, 12, 1),
                       blocks={**BLOCKS, "appeal": APPEAL})
    return town, res.obligations, ns


def test_orders_only_where_notice_may_be_given_on_a_ground_recorded(pough):
    town, ob, ns = pough
    st = dict(zip(ob["parcel_id"], ob["status"], strict=True))
    assert [p.parcel_id for p in ns.packets] == ["P0", "P1", "P5"]
    assert st["P2"] == "subject_to_notice" and st["P3"] == "subject_to_notice"
    # "used for human occupancy, employment, recreation or other similar purposes": a
    # lot whose only building is a detached garage is none of these
    garage = ob.set_index("parcel_id").loc["P4"]
    assert garage["status"] == "not_required" and "detached garage" in garage["reason"]
    # a notice already served on the excluded ground is flagged with its clause
    p6 = ob.set_index("parcel_id").loc["P6"]
    assert p6["status"] == "review" and p6["section"] == "§ 168-22.3C"
    assert check_letters(ns, ob, town.profile) == 3
    staff = candidates(ob)
    assert list(staff["parcel_id"]) == ["P2", "P3", "P6"]
    assert any("ground" in n for n in ns.notes)


def test_an_overdue_notice_says_so_and_gives_the_compliance_period(pough):
    _, _, ns = pough
    p5 = next(p for p in ns.packets if p.parcel_id == "P5")
    # served 2026-01-02 + 30 days = 2026-02-01, passed on 2026-12-01: overdue; the letter
    # gives "within 30 days after the date of official notice to do so" from its own date
    assert p5.values["overdue_since"] == "2026-02-01"
    assert p5.deadline_date == dt.date(2026, 12, 31)
    assert "overdue since 2026-02-01" in p5.values["deadline_text"]
    assert "§ 168-22.2G" in p5.values["deadline_text"]
    p0 = next(p for p in ns.packets if p.parcel_id == "P0")
    assert p0.values["ground_text"] == "a public health hazard is recorded for the property"
    letter = _flat(ns.template.render(p0.values))
    assert "Such notice shall be given only when it shall be necessary" in letter
    assert APPEAL in letter and "§ 168-22.9B" in letter and "Superintendent" in letter


def test_a_parcel_asked_for_that_is_no_order_is_refused(pough, tmp_path):
    town, ob, _ = pough
    with pytest.raises(ConfigError, match="no connection order may be written for parcel 'P2'"):
        write_notices(town, {"obligations": ob}, tmp_path / "x", parcels=["P2"],
                      blocks={**BLOCKS, "appeal": APPEAL})
    assert not (tmp_path / "x").exists()
    path = write_candidates(town, {"obligations": ob}, tmp_path / "staff")
    staff = pd.read_csv(path, encoding="utf-8-sig")
    assert list(staff["parcel_id"]) == ["P2", "P3", "P6"]
    assert staff["why_no_letter"].str.len().gt(0).all()


def test_missing_blocks_are_reported_before_anything_is_written(pough, tmp_path):
    town, ob, _ = pough
    with pytest.raises(ConfigError) as exc:
        write_notices(town, {"obligations": ob}, tmp_path / "y", blocks={"signatory": "X"})
    msg = str(exc.value)
    for k in ("[notices] title", "[notices] contact", "[notices] appeal"):
        assert k in msg
    assert "[notices] signatory" not in msg and "[notices] penalty" not in msg
    assert not (tmp_path / "y").exists()


# --------------------------------------------------------------------------- Berlin


@pytest.fixture(scope="module")
def berlin(tmp_path_factory):
    lots = [_lot(0), _lot(1, septic=True, sewer_available_date="2005-01-01"),
            _lot(2, health_hazard=True, septic=True),
            _lot(3, septic=True, sewer_available_date="2015-06-01")]
    houses = [_house(0, built_date="2025-06-01"), _house(1, built_date="1990-01-01"),
              _house(2, built_date="1990-01-01"), _house(3, built_date="1990-01-01")]
    town = _town(BERLIN, lots, houses)
    res = analyse_obligations(town)
    out = tmp_path_factory.mktemp("berlin") / "notices"
    ns = write_notices(town, res, out, notice_date=dt.date(2026, 2, 2), blocks=BLOCKS,
                       figures=False)
    return town, res.obligations, ns


def test_berlin_deadlines_never_before_the_letter_nor_under_thirty_days(berlin):
    """Enforcement (a): "The time allotted for compliance shall not be less than thirty
    (30) days." Existing plumbing: "in no event shall a resident be permitted more than
    fifteen (15) years to connect his plumbing system to the sanitary sewer system from
    the date that the sanitary sewer was available to his residence"."""
    town, ob, ns = berlin
    by = {p.parcel_id: p for p in ns.packets}
    assert sorted(by) == ["P0", "P1", "P2", "P3"]
    assert check_letters(ns, ob, town.profile) == 4
    # new building: "within ninety (90) days after the date of official notice"
    assert by["P0"].deadline_date == dt.date(2026, 5, 3)
    # the 15-year limit passed on 2020-01-01: overdue, 30 days from the letter
    assert by["P1"].values["overdue_since"] == "2020-01-01"
    assert by["P1"].deadline_date == dt.date(2026, 3, 4)
    assert "overdue since 2020-01-01" in by["P1"].values["deadline_text"]
    # a health hazard sets no period: the least one, cited
    assert by["P2"].deadline_date == dt.date(2026, 3, 4)
    assert "enforcement paragraph (a)" in by["P2"].values["deadline_text"]
    # the limit still ahead: its date
    assert by["P3"].deadline_date == dt.date(2030, 6, 1)
    letter = _flat(ns.template.render(by["P0"].values))
    assert "at the expense of the property owner" in letter
    assert "$10,000" in letter and "aggrieved" in letter


def test_every_letter_of_the_sample_is_lawful(sample_dir, tmp_path):
    town = load_town(sample_dir)
    res = analyse_obligations(town, zone=False)
    ns = write_notices(town, res, tmp_path / "n", notice_date=dt.date(2026, 12, 1),
                       figures=False)
    assert check_letters(ns, res.obligations, town.profile) >= 1
