"""Sample checks a town can act on: where a limit applies, what an average is, what a slug is.

The street, built here: A -> B -> C -> PL (the plant), 100 ft pipes along
y = 0. Plating Co (U1, 30,000 gpd) taps pipe A-B, so its control manhole is B;
Cannery (U2, 20,000 gpd) taps B-C (control manhole C, which also receives U1).
The plant's design flow is 0.2 MGD, its reported average flow 0.1 MGD. Every
expected number is worked here by hand from the ordinance words quoted.
"""

from __future__ import annotations

import re
from pathlib import Path

import geopandas as gpd
import networkx as nx
import pandas as pd
import pytest
from shapely.geometry import LineString, Point, box

from gisnet.errors import ConfigError
from gisnet.profile import load_profile, ordinance_text, profile_from_dict
from gisnet.report import Report
from gisnet.sampling import CHECK_COLUMNS, check_samples
from gisnet.sampling.findings import KINDS
from gisnet.town import Town

CRS = "EPSG:2260"
ROOT = Path(__file__).resolve().parents[1]
POUGH = "poughkeepsie-fourth-ward"
BERLIN = "berlin-nh"


def _ordinance(profile: str) -> str:
    """The profile's ordinance text (shipped in gisnet/ordinances), white space as one space."""
    return re.sub(r"\s+", " ", ordinance_text(profile))


def street() -> nx.MultiDiGraph:
    G = nx.MultiDiGraph(crs=CRS, ft_per_unit=1.0, outlets=["PL"], report=Report(),
                        snap_tolerance_ft=1.0)
    xs = {"A": 0.0, "B": 100.0, "C": 200.0, "PL": 300.0}
    for nid, x in xs.items():
        kind = "plant" if nid == "PL" else "manhole"
        G.add_node(nid, kind=kind, x=x, y=0.0, public=True, active=True,
                   is_manhole=kind == "manhole", outlet=nid == "PL")
    for key, u, v in (("S1", "A", "B"), ("S2", "B", "C"), ("S3", "C", "PL")):
        G.add_edge(u, v, key=key, main_id=key, length_ft=100.0, diameter_in=8.0,
                   kind="sanitary", public=True, active=True, gravity=True, eligible=True,
                   geometry=LineString([(xs[u], 0), (xs[v], 0)]), slope=0.01)
    return G


def town(profile: str | object = POUGH, plant_flows: pd.DataFrame | None = None) -> Town:
    prof = load_profile(profile) if isinstance(profile, str) else profile
    parcels = gpd.GeoDataFrame({"parcel_id": ["P1", "P2"]},
                               geometry=[box(20, 20, 80, 80), box(120, 20, 180, 80)], crs=CRS)
    buildings = gpd.GeoDataFrame({"building_id": ["B1", "B2"], "parcel_id": ["P1", "P2"]},
                                 geometry=[Point(50, 50), Point(150, 50)], crs=CRS)
    users = gpd.GeoDataFrame({
        "user_id": ["U1", "U2"], "name": ["Plating Co", "Cannery"],
        "parcel_id": ["P1", "P2"], "building_id": ["B1", "B2"],
        "process_flow_gpd": [30_000.0, 20_000.0], "categorical": False, "industrial": True,
    }, geometry=gpd.GeoSeries([None, None], crs=CRS), crs=CRS)
    plants = gpd.GeoDataFrame({"plant_id": ["PL"], "name": ["WWTP"], "node_id": ["PL"],
                               "design_flow_mgd": [0.2], "avg_flow_mgd": [0.1]},
                              geometry=[Point(300, 0)], crs=CRS)
    return Town(name="street", crs=CRS, ft_per_unit=1.0, profile=prof,
                layers={"parcels": parcels, "buildings": buildings, "users": users,
                        "plants": plants, "mains": gpd.GeoDataFrame(geometry=[], crs=CRS)},
                plant_flows=plant_flows)


def check(tmp_path: Path, lines: list[str], t: Town | None = None) -> pd.DataFrame:
    p = tmp_path / "results.csv"
    p.write_text("manhole_id,datetime,parameter,value,unit\n" + "\n".join(lines) + "\n")
    return check_samples(t or town(), street(), p)


def findings(res: pd.DataFrame) -> list[tuple[str, str, str]]:
    f = res[res["kind"] != "problem"]
    return list(zip(f["kind"], f["rule"], f["manhole_id"], strict=True))


# --------------------------------------------------------------------------- § 168-22.5C(9)


def test_metal_limits_are_averages_at_the_plant_a_users_grab_only_screens(tmp_path):
    text = _ordinance(POUGH)
    assert ("Material such as copper, zinc, chromium and similar toxic substances shall be "
            "limited to the following average quantities in the sewage as it arrives at the "
            "treatment plant") in text
    for name in ("iron", "chromium", "nickel", "copper", "cadmium", "zinc"):
        lim = load_profile(POUGH).limit(name)
        assert (lim.basis, lim.where) == ("average", "plant_influent"), name
    # A copper grab of 1.2 mg/L at U1's control manhole B: above 1 ppm, but only a
    # screening exceedance. Flow-weighted at the plant, by hand: 1.2 mg/L x 30,000 gpd
    # (U1, upstream of B) / 100,000 gpd (the plant's 0.1 MGD) = 0.36 mg/L <= 1.
    res = check(tmp_path, ["B,2026-05-01 10:00,Cu,1.2,mg/L"])
    assert findings(res) == [("screening_exceedance", "max", "B")]
    row = res.iloc[0]
    assert (row["basis"], row["point"], row["plant_id"]) == ("sample", "sewer", "PL")
    assert row["value"] == 1.2 and row["limit"] == 1.0
    assert "at least 0.36 mg/L" in row["message"] and "not above 1 mg/L" in row["message"]
    assert row["suspect_user_ids"] == "U1"
    # The same grab at the plant (location = the plant id) is a violation: the only
    # result of its 24-hour period, so it is the average.
    res = check(tmp_path, ["PL,2026-05-01 10:00,Cu,1.2,mg/L"])
    assert findings(res) == [("exceedance", "max", "PL")]
    row = res.iloc[0]
    assert (row["basis"], row["point"], row["n_samples"]) == ("24h_average",
                                                              "plant_influent", 1)
    # Two results at the plant in one day, 1.4 and 0.4: the average 0.9 is within 1 ppm.
    assert findings(check(tmp_path, ["PL,2026-05-01 10:00,Cu,1.4,mg/L",
                                     "PL,2026-05-01 16:00,Cu,0.4,mg/L"])) == []
    # ... 1.4 and 0.8: average 1.1 > 1, one row naming both results.
    res = check(tmp_path, ["PL,2026-05-01 10:00,Cu,1.4,mg/L", "PL,2026-05-01 16:00,Cu,0.8,mg/L"])
    assert findings(res) == [("exceedance", "max", "PL")]
    assert res.iloc[0]["value"] == pytest.approx(1.1) and res.iloc[0]["lines"] == "2,3"


def test_flow_weighted_plant_average_from_the_users_results_and_flows(tmp_path):
    # B (U1 upstream, 30,000 gpd): copper 2.0 and 2.4 -> mean 2.2 mg/L, load 66,000.
    # C (U1 + U2 upstream, 50,000 gpd): copper 3.0 -> load 150,000; C also carries
    # U1's flow, so B's load is not added again. Plant 100,000 gpd:
    # 150,000 / 100,000 = 1.5 mg/L > 1 ppm: a violation at the plant.
    lines = ["B,2026-05-01 10:00,Cu,2.0,mg/L", "B,2026-05-01 11:00,Cu,2.4,mg/L",
             "C,2026-05-01 10:30,Cu,3.0,mg/L"]
    res = check(tmp_path, lines)
    exc = res[res["kind"] == "exceedance"]
    assert len(exc) == 1
    row = exc.iloc[0]
    assert (row["rule"], row["basis"], row["point"]) == ("max", "flow_weighted_at_plant",
                                                         "plant_influent")
    assert (row["manhole_id"], row["plant_id"]) == ("PL", "PL")
    assert row["value"] == pytest.approx(1.5) and row["limit"] == 1.0
    assert row["lines"] == "4" and row["suspect_user_ids"] == "U1,U2"
    assert "100,000 gpd (the plants layer's avg_flow_mgd)" in row["message"]
    # every grab at B and C is a screening exceedance, none a violation; C's 3.0 mg/L is
    # also "three times the average concentration" listed (1 ppm): the hourly rule, which
    # applies at the plant, only screens at C
    hourly = res[res["rule"] == "hourly"]
    assert list(zip(hourly["kind"], hourly["manhole_id"], hourly["basis"], strict=True)) == [
        ("screening_exceedance", "C", "listed_average")]
    scr = res[(res["kind"] == "screening_exceedance") & (res["rule"] != "hourly")]
    assert sorted(scr["manhole_id"]) == ["B", "B", "C"]  # B's grabs are an hour apart
    assert all("at least 1.5 mg/L" in m and ": above 1 mg/L" in m for m in scr["message"])
    # With the plant's May 2026 flow in plant_flows, 0.15 MGD: 150,000 / 150,000 =
    # 1.0 mg/L, "limited to" 1 ppm: not above it.
    pf = pd.DataFrame({"plant_id": ["PL", "PL"], "month": ["2026-04", "2026-05"],
                       "avg_flow_mgd": [0.09, 0.15]})
    res = check(tmp_path, lines, town(plant_flows=pf))
    assert (res["kind"] == "exceedance").sum() == 0
    assert "150,000 gpd (plant_flows of 2026-05)" in res.iloc[0]["message"]


def measured_reading():
    """Poughkeepsie with the other reading of the hourly rule (docs/readings.md)."""
    raw = load_profile(POUGH).raw
    raw["limits"]["hourly_reading"] = "measured_average"
    return profile_from_dict(raw)


def test_hourly_rule_uses_the_same_parameters_24_hour_average_at_the_same_point(tmp_path):
    """The reading ``measured_average``: three times the same point's measured average."""
    text = _ordinance(POUGH)
    assert "At no time shall the hourly concentration be three times the average " \
           "concentration" in text
    # At the plant: zinc 0.1 mg/L at 08:00-14:00 (7 results), 0.9 at 15:30: average of
    # the 24-hour period (7 x 0.1 + 0.9) / 8 = 0.2; 0.9 >= 3 x 0.2. Not in that
    # average: zinc 5.0 at B (another point), copper at the plant (another
    # parameter), zinc 0.1 at the plant the next day at 09:00 (another period).
    lines = [f"PL,2026-05-01 {h:02d}:00,Zn,0.1,mg/L" for h in range(8, 15)]
    lines += ["PL,2026-05-01 15:30,Zn,0.9,mg/L", "B,2026-05-01 12:00,Zn,5.0,mg/L",
              "PL,2026-05-01 12:00,Cu,0.3,mg/L", "PL,2026-05-02 09:00,Zn,0.1,mg/L"]
    # under the shipped reading (three times the listed 3 ppm: 9 ppm) no hour breaks it
    assert "hourly" not in set(check(tmp_path, lines)["rule"])
    res = check(tmp_path, lines, town(measured_reading()))
    hourly = res[res["rule"] == "hourly"]
    assert list(zip(hourly["kind"], hourly["manhole_id"], strict=True)) == [
        ("exceedance", "PL")]
    row = hourly.iloc[0]
    assert row["value"] == pytest.approx(0.9) and row["limit"] == pytest.approx(0.6)
    assert row["baseline"] == pytest.approx(0.2) and row["baseline_n"] == 8
    assert row["baseline_lines"] == "2,3,4,5,6,7,8,9"
    assert row["baseline_start"] == pd.Timestamp("2026-05-01 08:00")
    assert row["baseline_end"] == pd.Timestamp("2026-05-01 15:30")
    assert row["basis"] == "measured_average"
    assert row["message"].startswith("hourly (reading: measured average)")
    # zinc 5.0 at B is above 3 ppm: a screening exceedance only
    assert findings(res[res["manhole_id"] == "B"]) == [("screening_exceedance", "max", "B")]


# --------------------------------------------------------------------------- slugs


def test_berlin_slug_is_five_times_the_users_own_24_hour_average(tmp_path):
    text = _ordinance(BERLIN)
    assert ("exceeds for any period of duration longer than fifteen (15) minutes more than "
            "five (5) times the average twenty-four-hour concentration of flows during normal "
            "operation") in text
    # U1's own BOD at B: 200 mg/L every 10 min 08:00-09:50 (twelve results), then
    # 1,100 mg/L at 10:00, 10:10, 10:20: above 5 x 200 = 1,000 for 20 min > 15 min.
    # It is a slug although it is below 5 x the normal strength 250 = 1,250.
    normal = [f"B,2026-05-01 {8 + i // 6:02d}:{i % 6 * 10:02d},BOD,200,mg/L" for i in range(12)]
    slug = [f"B,2026-05-01 10:{m:02d},BOD,1100,mg/L" for m in (0, 10, 20)]
    res = check(tmp_path, [*normal, *slug], town(BERLIN))
    row = res[res["rule"] == "slug"].iloc[0]
    assert (row["kind"], row["basis"]) == ("exceedance", "own_24h_average")
    assert row["baseline"] == pytest.approx(200.0) and row["limit"] == pytest.approx(1000.0)
    assert row["baseline_n"] == 12 and row["baseline_lines"] == ",".join(
        str(i) for i in range(2, 14))
    assert row["duration_min"] == 20 and row["lines"] == "14,15,16"
    # A user whose own average is 300 mg/L: 1,300 for 20 min is not above 5 x 300 =
    # 1,500 (though above 5 x 250): no slug.
    normal300 = [x.replace(",200,", ",300,") for x in normal]
    res = check(tmp_path, [*normal300, *[x.replace("1100", "1300") for x in slug]],
                town(BERLIN))
    assert "slug" not in set(res["rule"])


def test_a_slug_is_a_continuous_run_not_two_grabs_a_day_apart(tmp_path):
    # Two grabs 24 hours apart at 1,500 mg/L BOD (Poughkeepsie: above 5 x 240): no
    # 1,440-minute slug; results more than slug_max_gap_min (15 min) apart do not show
    # a continuous discharge. Each is above "a BOD of more than 240 parts per million".
    assert load_profile(POUGH).limits.slug_max_gap_min == 15.0
    res = check(tmp_path, ["B,2026-05-01 10:00,BOD,1500,mg/L",
                           "B,2026-05-02 10:00,BOD,1500,mg/L"])
    assert findings(res) == [("exceedance", "max", "B"), ("exceedance", "max", "B")]
    # 10:00, 10:10, 10:20 at 1,500 with a gap of 10 min: one 20-minute slug.
    res = check(tmp_path, [f"B,2026-05-01 10:{m:02d},BOD,1500,mg/L" for m in (0, 10, 20)])
    assert findings(res) == [("exceedance", "slug", "B")]
    # 10:00 and 10:20 only: the 20 minutes between are not observed: no slug.
    res = check(tmp_path, [f"B,2026-05-01 10:{m:02d},BOD,1500,mg/L" for m in (0, 20)])
    assert [r for _, r, _ in findings(res)] == ["max", "max"]
    # Berlin, own average 200: 1,100 at 10:00 and 10:20 only, 20 minutes apart: no slug.
    normal = [f"B,2026-05-01 {8 + i // 6:02d}:{i % 6 * 10:02d},BOD,200,mg/L" for i in range(12)]
    res = check(tmp_path, [*normal, "B,2026-05-01 10:00,BOD,1100,mg/L",
                           "B,2026-05-01 10:20,BOD,1100,mg/L"], town(BERLIN))
    assert "slug" not in set(res["rule"])


def test_poughkeepsie_slug_is_five_times_normal_sewage(tmp_path):
    # § 168-22.5C(15) measures the slug against "normal sewage", a defined term
    # (§ 168-22.1A: not more than 240 ppm BOD, 300 ppm SS), not the user's own average.
    text = _ordinance(POUGH)
    assert ("Any waters or wastes that for a duration of 15 minutes have a concentration "
            "greater than five times that of normal sewage as measured by suspended solids "
            "and BOD") in text
    assert load_profile(POUGH).limits.slug_baseline == "normal_strength"
    res = check(tmp_path, [f"B,2026-05-01 10:{m:02d},SS,1600,mg/L" for m in (0, 10, 20)])
    row = res[res["rule"] == "slug"].iloc[0]
    assert row["basis"] == "normal_strength" and row["limit"] == 1500.0  # 5 x 300
    assert row["baseline"] == 300.0 and pd.isna(row["baseline_lines"])


def _flows(slug: list[tuple[str, float]], parameter: str = "flow", unit: str = "gpm"
           ) -> list[str]:
    """U1's flow at B: twelve readings every 10 min 08:00-09:50, nine at 90 gpm and three
    at 130 gpm (mean (9 x 90 + 3 x 130) / 12 = 100 gpm = 144,000 gpd, median 90), then
    the readings ``slug`` (time after 10:00, gpm)."""
    normal = [f"B,2026-05-01 {8 + i // 6:02d}:{i % 6 * 10:02d},{parameter},"
              f"{130 if i % 4 == 3 else 90},{unit}" for i in range(12)]
    return [*normal, *(f"B,2026-05-01 10:{t},{parameter},{v:g},{unit}" for t, v in slug)]


def test_berlin_slug_in_quantity_of_flow(tmp_path):
    """Berlin definition no. 66: "Slug shall mean any discharge of water, sewage, or
    industrial waste in which concentration of any given constituent or in quantity of
    flow exceeds for any period of duration longer than fifteen (15) minutes more than
    five (5) times the average twenty-four-hour concentration of flows during normal
    operation"."""
    assert ("Slug shall mean any discharge of water, sewage, or industrial waste in which "
            "concentration of any given constituent or in quantity of flow exceeds for any "
            "period of duration longer than fifteen (15) minutes more than five (5) times the "
            "average twenty-four-hour concentration of flows during normal operation"
            ) in _ordinance(BERLIN)
    assert load_profile(BERLIN).limits.slug_flow is True
    # 501 gpm at 10:00, 10:08, 10:16: 501 x 1,440 = 721,440 gpd above 5 x 144,000 =
    # 720,000 gpd for 16 min > 15 min. The three are above 5 x the median 90 gpm, so they
    # are not "normal operation": the baseline is the twelve readings before them.
    res = check(tmp_path, _flows([("00", 501), ("08", 501), ("16", 501)]), town(BERLIN))
    slug = res[res["rule"] == "slug"]
    assert len(slug) == 1
    row = slug.iloc[0]
    assert (row["kind"], row["basis"], row["parameter"], row["unit"]) == (
        "exceedance", "own_24h_average", "flow", "gpd")
    assert row["baseline"] == pytest.approx(144_000.0, rel=1e-12)
    assert row["limit"] == pytest.approx(720_000.0, rel=1e-12)
    assert row["value"] == pytest.approx(721_440.0, rel=1e-12)
    assert row["duration_min"] == 16 and row["lines"] == "14,15,16"
    assert row["baseline_n"] == 12 and row["baseline_lines"] == ",".join(
        str(i) for i in range(2, 14))
    assert row["section"] == "ch. 16 definitions, no. 66 (Slug)"
    assert row["message"].startswith("slug in quantity of flow: flow above 5 x its own "
                                     "24-hour average 1.44e+05 gpd during normal operation")
    assert "U1" in row["suspect_user_ids"].split(",")
    (note,) = res[res["rule"] == "no_limit"].itertuples()
    assert note.message == ("the profile sets no limit for flow; 15 result(s) checked for "
                            "slugs only (ch. 16 definitions, no. 66 (Slug))")
    # the same in gpd, and named flow_gpm with the unit column blank
    gpd_rows = [x.replace(",gpm", ",gpd") for x in _flows([("00", 501), ("08", 501),
                                                          ("16", 501)])]
    gpd_rows = [",".join([*r.split(",")[:3], f"{float(r.split(',')[3]) * 1440:g}", "gpd"])
                for r in gpd_rows]
    got = check(tmp_path, gpd_rows, town(BERLIN))
    assert got[got["rule"] == "slug"]["limit"].tolist() == pytest.approx([720_000.0])
    got = check(tmp_path, _flows([("00", 501), ("08", 501), ("16", 501)], "flow_gpm", ""),
                town(BERLIN))
    assert got[got["rule"] == "slug"]["value"].tolist() == pytest.approx([721_440.0])


def test_flow_slug_longer_than_15_minutes_more_than_5_times(tmp_path):
    def slugs(readings):
        res = check(tmp_path, _flows(readings), town(BERLIN))
        return res[res["rule"] == "slug"]

    # exactly 15 minutes (10:00 to 10:15) is not "longer than fifteen (15) minutes"
    assert slugs([("00", 501), ("08", 501), ("15", 501)]).empty
    # 15 min 1 s is
    (d,) = slugs([("00", 501), ("08", 501), ("15:01", 501)])["duration_min"]
    assert d == pytest.approx(15 + 1 / 60)
    # exactly 5 x 144,000 = 720,000 gpd (500 gpm) is not "more than five (5) times"
    assert slugs([("00", 500), ("08", 500), ("16", 500)]).empty
    # a reading 20 min after the last (more than slug_max_gap_min) does not continue it
    assert slugs([("00", 501), ("20", 501)]).empty


def test_flow_units_and_the_profiles_without_a_flow_slug(tmp_path):
    # a reading whose parameter names one unit and whose unit column another: not guessed
    res = check(tmp_path, _flows([("00", 501)], "flow_gpm", "gpd"), town(BERLIN))
    (bad,) = res[res["rule"] == "unknown_unit"].itertuples()
    assert bad.unit == "gpd (parameter 'flow_gpm' says gpm)" and bad.n_samples == 13
    res = check(tmp_path, ["B,2026-05-01 10:00,flow,3,furlongs/fortnight"], town(BERLIN))
    assert res["rule"].tolist() == ["no_limit", "unknown_unit"]
    assert res.iloc[0]["message"] == "the profile sets no limit for flow; 1 result(s) not checked"
    # Poughkeepsie's slug is a concentration only (§ 168-22.5C(15): "as measured by
    # suspended solids and BOD"): flow readings are not checked, and it says so
    assert "as measured by suspended solids and BOD" in _ordinance(POUGH)
    assert not load_profile(POUGH).limits.slug_flow
    res = check(tmp_path, _flows([("00", 501), ("08", 501), ("16", 501)]))
    assert res["rule"].tolist() == ["no_limit"]
    assert res.iloc[0]["message"] == (
        "the profile sets no limit for flow; 15 result(s) not checked (the slug rule, "
        "§ 168-22.5C(15); definition of SLUDGE, § 168-22.1A, measures concentrations only)")


# --------------------------------------------------------------------------- normal strength


def test_berlin_normal_strength_is_a_surcharge_basis_not_an_exceedance(tmp_path):
    text = _ordinance(BERLIN)
    assert ("Normal strength waste shall mean wastewater with a concentration of two hundred "
            "fifty (250) mg liter BOD and three hundred (300) mg liter SS") in text
    res = check(tmp_path, ["B,2026-05-01 10:00,BOD,260,mg/L", "B,2026-05-01 12:00,BOD,250,mg/L",
                           "B,2026-05-01 14:00,SS,310,mg/L"], town(BERLIN))
    assert findings(res) == [("above_normal_strength", "normal_strength", "B"),
                             ("above_normal_strength", "normal_strength", "B")]
    bod = res[res["parameter"] == "bod"].iloc[0]
    assert bod["value"] == 260 and bod["limit"] == 250 and bod["lines"] == "2"
    assert "the basis of surcharge" in bod["message"]
    assert (res["kind"] == "exceedance").sum() == 0


# --------------------------------------------------------------------------- profile, docs


def test_profile_keys_are_checked():
    raw = load_profile(POUGH).raw
    for table, key_, bad in (("limits", "slug_baseline", "average"),
                             ("limits", "hourly_where", "plant"),
                             ("limits", "slug_max_gap_min", 0.0)):
        r = load_profile(POUGH).raw
        r[table][key_] = bad
        with pytest.raises(ConfigError, match=key_):
            profile_from_dict(r)
    raw["limits"]["parameter"][0]["where"] = "outfall"
    with pytest.raises(ConfigError, match="where"):
        profile_from_dict(raw)


def test_results_document_lists_the_columns_and_kinds():
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    part = doc[doc.index("## Sample checks"):]
    part = part[:part.index("\n## ", 4)] if "\n## " in part[4:] else part

    def table(header: str) -> list[str]:
        rows = re.findall(rf"^\| {header} \|.*?\n((?:\|.*\n)+)", part, flags=re.M)
        assert rows, header
        return [re.match(r"\| `([^`]+)`", r).group(1) for r in rows[0].splitlines()[1:]]

    assert table("column") == CHECK_COLUMNS
    assert table("kind") == list(KINDS)
    assert set(table("basis")) == {"sample", "24h_average", "listed_average",
                                   "measured_average", "flow_weighted_at_plant",
                                   "normal_strength", "own_24h_average"}
