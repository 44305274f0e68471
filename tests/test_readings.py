"""Readings of the ordinances behind the letters: each from a small hand-made town,
quoting the clause it reads (docs/readings.md lists the ambiguous ones).

Coordinates are in international feet (EPSG:2222: 1 unit = 1 ft).
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString, Polygon

from gisnet.init import propose, render_town_file, summary_lines
from gisnet.obligations import compute_obligations
from gisnet.profile import ordinance_text
from gisnet.profile.quotes import quote_problem
from gisnet.testing import towns

FT = "EPSG:2222"
POUGH = "poughkeepsie-fourth-ward"
BERLIN = "berlin-nh"


def _quoted(profile: str, words: str) -> str:
    """The words, checked to be the ordinance's own (so the test quotes the law)."""
    assert quote_problem(ordinance_text(profile), words) is None, words
    return words


def _ob(town):
    return compute_obligations(town)["obligations"].set_index("parcel_id")


# --------------------------------------------------------------------------- 1. mains


def test_a_main_not_known_to_be_public_and_in_service_orders_nobody(town_factory):
    """§ 168-22.2G binds property abutting a street "in which there is now located or may
    in the future be located a public sanitary sewer"; PUBLIC SEWER (§ 168-22.1A): "A
    sewer in which all owners of abutting properties have equal rights and is controlled
    by public authority." An owner gisnet does not recognise is not known to be that."""
    _quoted(POUGH, "A sewer in which all owners of abutting properties have equal rights "
                   "and is controlled by public authority.")
    street = towns.street("S1", (-100, -25, 3000, 25))
    town = town_factory({
        "parcels": [towns.parcel(f"P{i}", (300 * i, 25, 300 * i + 100, 125),
                                 land_use="residential_single") for i in range(4)],
        "mains": [
            towns.main("DEV", [(-100, 0), (250, 0)], owner="developer"),
            towns.main("UC", [(250, 0), (550, 0)], status="under construction"),
            # P2: near both a main known to be public and in service and an unknown one
            towns.main("HOA", [(550, 0), (850, 0)], owner="homeowners association",
                       status="not accepted"),
            towns.main("PUB", [(850, 0), (3000, 0)]),
        ],
        "streets": [street]}, crs=FT, profile=POUGH)
    mains = town.layers["mains"].set_index("main_id")
    # the loader keeps the values as written and counts them as neither
    assert mains.loc["DEV", "owner"] == "developer" and not mains.loc["DEV", "public"]
    assert mains.loc["UC", "status"] == "under construction" and not mains.loc["UC", "active"]
    kinds = [f.kind for f in town.report.findings]
    assert kinds.count("unknown_value") == 2
    ob = _ob(town)
    # P0: only the developer's main is within 300 ft: review naming the value, no deadline
    p0 = ob.loc["P0"]
    assert p0["status"] == "review"
    assert "Main DEV (owner 'developer') is 25.0 ft" in p0["reason"]
    assert pd.isna(p0["deadline_days"]) and p0["notice_ground"] is None
    # P1: its nearest is a main under construction; PUB is 350 ft away, beyond 300 ft
    p1 = ob.loc["P1"]
    assert p1["status"] == "review"
    assert "status 'under construction'" in p1["reason"]
    assert "The nearest main known to be a public sewer in service, PUB, is 450.7 ft away, " \
        "beyond 300 ft." in p1["reason"]
    # P2 (600-700) touches HOA's street length; PUB begins 150 ft away: the known main decides
    p2 = ob.loc["P2"]
    assert p2["status"] == "subject_to_notice" and p2["main_id"] == "PUB"
    # P3 beside PUB only: as before
    assert ob.loc["P3", "status"] == "subject_to_notice"
    assert (ob["status"] == "required").sum() == 0


def test_a_berlin_main_of_unknown_owner_beyond_a_known_one(town_factory):
    """sec. 16-50: "provided that such public sewer is within two hundred (200) feet of the
    building": a known public main beyond 200 ft and an unknown one within: review, and
    the reason says where the known one is."""
    _quoted(BERLIN, "provided that such public sewer is within two hundred (200) feet of "
                    "the building")
    town = town_factory({
        "parcels": [towns.parcel("P1", (0, 25, 100, 125), land_use="residential_single")],
        "buildings": [towns.building("B1", (20, 40, 60, 80), "P1", built_date="2020-01-01")],
        "mains": [towns.main("NEW", [(-100, 0), (200, 0)], status="not accepted",
                             install_date="2010-01-01"),
                  towns.main("OLD", [(-100, 400), (200, 400)], install_date="2010-01-01")],
    }, crs=FT, profile=BERLIN)
    r = _ob(town).loc["P1"]
    assert r["status"] == "review"
    assert "Main NEW (status 'not accepted') is 40.0 ft from the building" in r["reason"]
    assert "OLD, is 320.0 ft away, beyond 200 ft" in r["reason"]


def test_a_main_with_no_owner_or_status_is_public_and_in_service_said_once(town_factory):
    """Most municipal layers have no owner column: such mains stay public and in service,
    and the loader says so once per layer."""
    town = town_factory({
        "parcels": [towns.parcel("P1", (0, 25, 100, 125), land_use="residential_single",
                                 health_hazard=True)],
        "mains": [towns.main("M1", [(-100, 0), (200, 0)], owner=None, status=None),
                  towns.main("M2", [(200, 0), (500, 0)], owner=None, status=None)],
    }, crs=FT, profile=POUGH)
    assumed = [f for f in town.report.findings if f.kind in ("owner_assumed",
                                                             "status_assumed")]
    assert sorted(f.kind for f in assumed) == ["owner_assumed", "status_assumed"]
    assert "2 of 2 mains have no owner value: every analysis counts them as public" \
        in assumed[0].message + assumed[1].message
    r = _ob(town).loc["P1"]
    assert r["status"] == "required" and r["notice_ground"] == "health_hazard"


def test_init_lists_owner_and_status_values_it_cannot_map(tmp_path: Path):
    d = tmp_path / "town"
    d.mkdir()
    gpd.GeoDataFrame(
        {"FACILITYID": ["S1", "S2"], "OWNEDBY": ["City", "Developer"],
         "STATUS": ["In Service", "Under Construction"]},
        geometry=[LineString([(0, 0), (100, 0)]), LineString([(100, 0), (200, 0)])],
        crs="EPSG:2260").to_file(d / "sewer_mains.gpkg", engine="pyogrio")
    gpd.GeoDataFrame({"PRINT_KEY": ["1"]}, geometry=[Polygon([(0, 10), (50, 10), (50, 40)])],
                     crs="EPSG:2260").to_file(d / "parcels.shp", engine="pyogrio")
    p = propose(d, POUGH)
    text = render_town_file(p)
    assert '"City" = "public"' in text
    assert '# "Developer" = ?' in text and "not known to be public" in text
    assert '# "Under Construction" = ?' in text and "not known to be in service" in text
    printed = "\n".join(summary_lines(p))
    assert "owner values not recognised (map them in the town file): 'Developer'" in printed


# --------------------------------------------------------------------------- sample checks
# A street: A -> B -> PL (the plant), 100 ft pipes; one user on A-B.


def _street_town(profile):
    import itertools

    town = towns.make_town({
        "parcels": [towns.parcel("P1", (20, 20, 80, 80))],
        "buildings": [towns.building("B1", (50, 50), "P1")],
        "users": [towns.user("U1", name="Foundry", parcel_id="P1", building_id="B1",
                             process_flow_gpd=30_000.0, industrial=True)],
        "plants": [towns.plant("PL", (200, 0), name="WWTP", node_id="PL",
                               design_flow_mgd=0.2, avg_flow_mgd=0.1)],
    }, crs=FT, profile=profile, name="street")
    nodes = {"A": {"x": 0.0, "y": 0.0}, "B": {"x": 100.0, "y": 0.0},
             "PL": {"x": 200.0, "y": 0.0, "kind": "plant"}}
    edges = [(u, v, f"S{i}", {"slope": 0.01})
             for i, (u, v) in enumerate(itertools.pairwise(["A", "B", "PL"]))]
    G = towns.hand_graph(nodes, edges, crs=FT, outlets=["PL"])
    return town, G


def _check(tmp_path, profile, lines):
    from gisnet.sampling import check_samples

    town, G = _street_town(profile)
    p = tmp_path / "results.csv"
    p.write_text("manhole_id,datetime,parameter,value,unit\n" + "\n".join(lines) + "\n")
    return check_samples(town, G, p)


def _rows(res):
    return sorted(zip(res["kind"], res["rule"], res["manhole_id"].fillna(""),
                      res["limit"].fillna(0), strict=True))


def test_where_a_berlin_temperature_was_taken_decides_its_limit(tmp_path):
    """Berlin discharge prohibition (7): "Wastewater having a temperature greater than
    150°F (65°C) … but in no case wastewater that causes the temperature at the
    introduction into the POTW treatment plant to exceed 104°F (40°C)"."""
    _quoted(BERLIN, "Wastewater having a temperature greater than 150°F (65°C), or which "
                    "will inhibit biological activity in the treatment plant resulting in "
                    "interference, but in no case wastewater that causes the temperature at the "
                    "introduction into the POTW treatment plant to exceed 104°F (40°C).")
    # 110 degF at the plant's influent, spelled "temperature": the plant's 104 degF
    res = _check(tmp_path, BERLIN, ["PL,2026-05-01 10:00,temperature,110,degF"])
    assert _rows(res) == [("exceedance", "max", "PL", 104.0)]
    assert res.iloc[0]["point"] == "plant_influent"
    # 160 degF at the plant: still the plant's own limit, one row (not also the sewer's)
    res = _check(tmp_path, BERLIN, ["PL,2026-05-01 10:00,temperature,160,degF"])
    assert _rows(res) == [("exceedance", "max", "PL", 104.0)]
    # 110 degF at manhole B: within the sewer's 150 degF; the plant's 104 only screens,
    # whether the result is spelled temperature or temperature_at_plant
    for name in ("temperature", "temperature_at_plant"):
        res = _check(tmp_path, BERLIN, [f"B,2026-05-01 10:00,{name},110,degF"])
        assert _rows(res) == [("screening_exceedance", "max", "B", 104.0)], name
        assert "a limit at the treatment plant's influent" in res.iloc[0]["message"]
    # 70 degC (158 degF) at B: above the sewer's 150 degF
    res = _check(tmp_path, BERLIN, ["B,2026-05-01 10:00,temperature,70,degC"])
    assert ("exceedance", "max", "B", 150.0) in _rows(res)


def _measured():
    from gisnet.profile import load_profile, profile_from_dict

    raw = load_profile(POUGH).raw
    raw["limits"]["hourly_reading"] = "measured_average"
    return profile_from_dict(raw)


def test_the_hourly_rule_is_read_as_three_times_the_listed_average_by_default(tmp_path):
    """§ 168-22.5C(9): "Copper as Cu 1" … "At no time shall the hourly concentration be
    three times the average concentration"."""
    _quoted(POUGH, "At no time shall the hourly concentration be three times the average "
                   "concentration")
    from gisnet.profile import load_profile

    assert load_profile(POUGH).limits.hourly_reading == "listed_average"
    # a day of copper at the plant, 0.1 mg/L each hour but 0.6 at 15:00: the day's average
    # (23 x 0.1 + 0.6) / 24 = 0.1208 is within 1 ppm, and 0.6 is below 3 x 1 ppm
    day = [f"PL,2026-05-01 {h:02d}:00,copper,{0.6 if h == 15 else 0.1},mg/L"
           for h in range(24)]
    assert _check(tmp_path, POUGH, day).empty
    # the other reading, by name: 0.6 >= 3 x 0.1208 is an hourly violation
    res = _check(tmp_path, _measured(), day)
    assert _rows(res) == [("exceedance", "hourly", "PL", pytest.approx(3 * 2.9 / 24))]
    assert res.iloc[0]["basis"] == "measured_average"
    # 3.2 mg/L in one hour: three times the listed 1 ppm is reached; the day's average
    # (23 x 0.1 + 3.2) / 24 = 0.229 is within 1 ppm
    day[15] = "PL,2026-05-01 15:00,copper,3.2,mg/L"
    res = _check(tmp_path, POUGH, day)
    assert _rows(res) == [("exceedance", "hourly", "PL", 3.0)]
    r = res.iloc[0]
    assert (r["basis"], r["baseline"], r["value"]) == ("listed_average", 1.0, 3.2)
    assert r["message"].startswith("hourly (reading: listed average): copper mean 3.2 mg/L")


def test_a_profile_names_a_reading_of_the_hourly_rule_gisnet_knows():
    from gisnet.errors import ConfigError
    from gisnet.profile import load_profile, profile_from_dict

    raw = load_profile(POUGH).raw
    raw["limits"]["hourly_reading"] = "daily"
    with pytest.raises(ConfigError, match="hourly_reading"):
        profile_from_dict(raw)


def test_only_emulsified_oil_and_grease_is_judged_against_50_ppm(tmp_path):
    """§ 168-22.5C(3): "Any water or wastes containing emulsified oil and grease,
    exceeding, on analysis, an average of 50 parts per million of either soluble
    material." C(2) and C(7) are in words only."""
    for words in ("Any water or wastes containing emulsified oil and grease, exceeding, on "
                  "analysis, an average of 50 parts per million of either soluble material.",
                  "Any water or waste which contains grease or oil or other substance which "
                  "would solidify or become discernibly viscous",
                  "Any water or wastes containing phenols in such quantities that the "
                  "aggregate of contributions throughout the area of service creates "
                  "treatment difficulties"):
        _quoted(POUGH, words)
    res = _check(tmp_path, POUGH, [
        "B,2026-05-01 10:00,emulsified oil and grease,80,mg/L",
        "B,2026-05-01 10:00,oil and grease,80,mg/L",
        "B,2026-05-01 11:00,FOG,120,mg/L",
        "B,2026-05-01 10:00,phenols,5,mg/L",
    ])
    assert _rows(res) == [("exceedance", "max", "B", 50.0),
                          ("narrative", "narrative", "", 0.0),
                          ("narrative", "not_comparable", "", 0.0)]
    exc = res[res["kind"] == "exceedance"].iloc[0]
    assert exc["parameter"] == "emulsified_oil_grease" and exc["basis"] == "24h_average"
    fog = res[res["rule"] == "not_comparable"].iloc[0]
    assert (fog["parameter"], fog["n_samples"], fog["value"]) == ("oil_grease", 2, 120.0)
    assert "not comparable" in fog["message"] and "§ 168-22.5C(3)" in fog["message"]
    assert fog["section"] == "§ 168-22.5C(2)"
    phen = res[res["rule"] == "narrative"].iloc[0]
    assert phen["parameter"] == "phenols" and phen["section"] == "§ 168-22.5C(7)"
    assert "unknown_parameter" not in set(res["rule"])


def test_berlin_grease_whether_emulsified_or_not_is_narrative(tmp_path):
    """Berlin prohibition (5): "… fats, wax, grease, or oils, whether emulsified or not …
    in amounts that will cause obstruction of the flow in the POTW resulting in
    interference": no number to judge a result against."""
    _quoted(BERLIN, "fats, wax, grease, or oils, whether emulsified or not")
    res = _check(tmp_path, BERLIN, ["B,2026-05-01 10:00,oil and grease,80,mg/L",
                                    "B,2026-05-01 10:00,emulsified oil and grease,60,mg/L"])
    assert sorted(zip(res["kind"], res["rule"], res["parameter"], strict=True)) == [
        ("narrative", "narrative", "emulsified_oil_grease"),
        ("narrative", "narrative", "oil_grease")]
    assert all("checked for slugs only" in m for m in res["message"])


# --------------------------------------------------------------------------- 5. plant 80 %


def _plant_run(profile, months, mgd, *, reported=None):
    from gisnet import capacity as cap

    pf = pd.DataFrame({"plant_id": "PL", "month": months, "avg_flow_mgd": mgd})
    town = towns.make_town({
        "parcels": [towns.parcel("a", (0, 10, 50, 60), flow_gpd=1000.0, connected=True)],
        "plants": [towns.plant("PL", (300, 0), name="WWTP", node_id="PL",
                               design_flow_mgd=1.0, avg_flow_mgd=reported)],
    }, crs=FT, profile=profile, plant_flows=pf)
    G = towns.hand_graph({"A": {"x": 0.0, "y": 0.0}, "PL": {"x": 300.0, "y": 0.0,
                                                            "kind": "plant"}},
                         [("A", "PL", "M1", {"slope": 0.004})], crs=FT, outlets=["PL"])
    res = cap.compute_capacity(town, G)
    return town, G, res


def test_a_plant_with_its_latest_month_missing_cannot_be_said_below_80_percent():
    """Berlin: a permit request is needed for "any proposed wastewater connection or other
    discharge to a wastewater treatment facility operating in excess of 80% design flow
    capacity". "Operating": the latest 3 months; with one missing, gisnet cannot say."""
    from gisnet import capacity as cap

    _quoted(BERLIN, "any proposed wastewater connection or other discharge to a wastewater "
                    "treatment facility operating in excess of 80% design flow capacity")
    months = [f"2025-{m:02d}" for m in range(1, 13)]
    # 0.70 MGD (70 %) through September, then 0.90 (90 %) in October and December;
    # November not reported: the older Jul-Sep window would say "below 80 %"
    flows = [0.70] * 9 + [0.90, None, 0.90]
    town, G, res = _plant_run(BERLIN, months, flows, reported=0.5)
    row = res.plants.iloc[0]
    assert (row["basis"], row["missing_months"]) == ("months_missing", "2025-11")
    assert pd.isna(row["over_threshold"]) and np.isnan(row["ratio"])
    assert res.totals["plants"][0]["missing_months"] == "2025-11"
    w = cap.whatif(town, G, res, parcel_id="a", flow_gpd=100.0)
    assert pd.isna(w.plants.iloc[0]["over_threshold_before"])
    (appr,) = [a for a in w.approvals if a["id"] == "des_plant_over_80_pct"]
    assert appr["reason"].startswith("plant PL: cannot say whether it operates in excess")
    assert "months missing 2025-11" in appr["reason"]
    # November reported: (0.90 + 0.85 + 0.90) / 3 = 0.8833, in excess of 80 %
    flows[10] = 0.85
    row = _plant_run(BERLIN, months, flows)[2].plants.iloc[0]
    assert row["basis"] == "monthly_3mo" and row["window"] == "2025-10..2025-12"
    assert row["ratio"] == pytest.approx(2.65 / 3) and row["over_threshold"]


# --------------------------------------------------------------------------- 6. users


def test_a_user_marked_not_industrial_is_a_discharger_not_an_siu():
    """§ 168-22.1A: "INDUSTRIAL WASTES The liquid wastes from industrial processes as
    distinct from sanitary sewage." A restaurant the users layer marks not industrial is
    a discharger, however large: not an industrial user, never an SIU."""
    _quoted(POUGH, "The liquid wastes from industrial processes as distinct from sanitary "
                   "sewage.")
    from gisnet.sampling import sampling_plan

    town, G = _street_town(POUGH)
    users = town.layers["users"]
    town.layers["users"] = pd.concat([users, users.assign(
        user_id="U2", name="Diner", industrial=False, process_flow_gpd=40_000.0),
        users.assign(user_id="U3", name="Unmarked", industrial=pd.NA,
                     process_flow_gpd=40_000.0)], ignore_index=True)
    plan = sampling_plan(town, G).set_index("user_id")
    assert plan.loc["U1", "industrial_user"] and plan.loc["U1", "siu"]  # 30,000 >= 25,000
    d = plan.loc["U2"]
    assert not d["industrial_user"] and not d["siu"]
    assert d["siu_reason"].startswith("not an industrial user")
    # its 40,000 gpd is still over § 168-22.5G(4)'s 10,000 gpd: reviewed all the same
    assert d["review"]
    u3 = plan.loc["U3"]
    assert u3["industrial_user"] and u3["siu"]
    assert "industrial not recorded: counted as an industrial user" in u3["siu_reason"]


# --------------------------------------------------------------------------- 7, 8. what-if


def test_whatif_approvals_nysdec_only_with_preliminary_treatment_and_cooling_water():
    """§ 168-22.5G(4)(d): "Plans, specifications and any other pertinent information related
    to the proposed preliminary treatment facilities shall be submitted for approval of the
    Superintendent and the New York State Department of Environmental Conservation."
    § 168-22.2E: "The discharge of industrial cooling water to the area's sewer system is
    not permitted except by specific approval of the Town Board." """
    _quoted(POUGH, "Plans, specifications and any other pertinent information related to "
                   "the proposed preliminary treatment facilities shall be submitted for "
                   "approval of the Superintendent and the New York State Department of "
                   "Environmental Conservation.")
    _quoted(POUGH, "The discharge of industrial cooling water to the area's sewer system is "
                   "not permitted except by specific approval of the Town Board.")
    from gisnet import capacity as cap

    town, G, res = _plant_run(POUGH, ["2025-10", "2025-11", "2025-12"], [0.5] * 3)
    w = cap.whatif(town, G, res, parcel_id="a", flow_gpd=12_000.0)
    assert [a["id"] for a in w.approvals] == ["superintendent_review_10000_gpd"]
    assert any(n.startswith("if preliminary treatment is required (§ 168-22.5G(4)(d))")
               for n in w.notes)
    w = cap.whatif(town, G, res, parcel_id="a", flow_gpd=12_000.0, preliminary_treatment=True,
                   cooling_water=True)
    assert [a["id"] for a in w.approvals] == [
        "superintendent_review_10000_gpd", "pretreatment_plans_nysdec",
        "cooling_water_town_board"]
    board = w.approvals[-1]
    assert (board["authority"], board["section"]) == ("Town Board", "§ 168-22.2E")
    # a small flow: no review, and no note about preliminary treatment
    w = cap.whatif(town, G, res, parcel_id="a", flow_gpd=500.0)
    assert w.approvals == [] and not any("preliminary" in n for n in w.notes)


def test_berlin_application_lead_times_in_the_whatif():
    """Berlin sewer permits: "For residential and commercial services, the owner(s) or his
    agent shall make application on a special form furnished by the City at least thirty
    (30) days prior to said service connection. For an establishment discharging
    industrial wastes, the application shall be made at least sixty (60) days prior to
    said service connection." """
    _quoted(BERLIN, "at least thirty (30) days prior to said service connection. For an "
                    "establishment discharging industrial wastes, the application shall be "
                    "made at least sixty (60) days prior to said service connection.")
    from gisnet import capacity as cap

    town, G, res = _plant_run(BERLIN, ["2025-10", "2025-11", "2025-12"], [0.5] * 3)
    w = cap.whatif(town, G, res, parcel_id="a", flow_gpd=300.0)
    (a,) = w.approvals
    assert (a["id"], a["lead_days"]) == ("sewer_permit_application", 30)
    assert a["reason"].endswith("apply at least 30 days before the service connection")
    w = cap.whatif(town, G, res, parcel_id="a", flow_gpd=300.0, industrial=True)
    assert [(a["id"], a.get("lead_days")) for a in w.approvals] == [
        ("des_industrial_any", None), ("sewer_permit_application_industrial", 60)]


# --------------------------------------------------------------------------- 9. names


def test_a_town_under_the_berlin_profile_is_named_for_itself(tmp_path):
    """Maps and figures name the town (town file ``name``) and, apart, the ordinance it is
    measured under: Gorham measured under Berlin's ch. 16 is not "City of Berlin"."""
    import json
    import re

    from gisnet import maps
    from gisnet.figures.maps import draw_figure
    from gisnet.profile import load_profile

    ordinance = load_profile(BERLIN).profile.ordinance
    town = towns.make_town({
        "parcels": [towns.parcel("P1", (0, 25, 100, 125))],
        "mains": [towns.main("M1", [(-100, 0), (200, 0)])]}, crs=FT, profile=BERLIN,
        name="Gorham")
    [page] = maps.write_maps(town, {}, tmp_path, names=["network"])
    cfg = json.loads(re.search(r"var cfg=(\{.*?\});\n", page.read_text("utf-8")).group(1))
    assert cfg["subtitle"] == f"Gorham \u00b7 rules measured under {ordinance}"
    assert "City of Berlin, New Hampshire" not in cfg["subtitle"]
    from gisnet.graph import build_sewer_graph, graph_to_gdfs

    _, edges = graph_to_gdfs(build_sewer_graph(town))
    fig = draw_figure(town, {"graph_edges": edges}, "network")
    texts = [t.get_text() for t in fig.texts]
    assert f"Gorham \u00b7 rules measured under {ordinance}" in texts
    assert not any(t.startswith("Gorham \u2014 City of Berlin") for t in texts)
