"""Tests of gisnet.sampling: the sampling plan (SIU status) and sample checks.

The network is the street of tests/test_tracing.py, built here in code:
M1 -> J1 -> J2 -> M2 -> P1 (private) -> I1 (inactive) -> M3 -> PLANT, 100 ft
pipes along y = 0. Expected answers are worked by hand from the ordinances.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import geopandas as gpd
import networkx as nx
import pandas as pd
import pytest
from pyproj import CRS
from shapely.geometry import LineString, Point, Polygon

from gisnet.errors import SchemaError
from gisnet.profile import load_profile, profile_from_dict
from gisnet.sampling import canonical_parameter, check_samples, sampling_plan, to_canonical
from gisnet.testing import towns
from gisnet.town import Town

CRS_FT = CRS.from_user_input("EPSG:2260")
FT = 1200.0 / 3937.0 / 0.3048

NODES = {
    "M1": (0, "manhole", True, True), "J1": (100, "junction", True, True),
    "J2": (200, "junction", True, True), "M2": (300, "manhole", True, True),
    "P1": (400, "manhole", False, True), "I1": (500, "manhole", True, False),
    "M3": (600, "manhole", True, True), "PLANT": (700, "plant", True, True),
}
CHAIN = ["M1", "J1", "J2", "M2", "P1", "I1", "M3", "PLANT"]


def street_graph() -> nx.MultiDiGraph:
    """The street written by hand (gisnet.testing.towns.hand_graph: flags by gisnet.rules)."""
    nodes = {nid: {"x": float(x), "y": 0.0, "kind": kind,
                   "owner": "public" if public else "private",
                   "status": "active" if active else "inactive"}
             for nid, (x, kind, public, active) in NODES.items()}
    edges = [(u, v, "ABCDEFG"[i], {"slope": 0.01})
             for i, (u, v) in enumerate(itertools.pairwise(CHAIN))]
    return towns.hand_graph(nodes, edges, crs=CRS_FT, ft_per_unit=FT, outlets=["PLANT"])


def box(x0, y0, x1, y1):
    return Polygon([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def make_town(profile: Any) -> Town:
    """Raw rows through the loader's canonical mapping (gisnet.testing.towns.make_town)."""
    # parcels north of the street, one per 100 ft, buildings at their centres
    xs = (50, 150, 250, 350, 650)
    users = [("U1", "Plating Co", "P50", "B50", 30000.0, False),
             ("U2", "Cannery", "P150", None, 500.0, True),
             ("U3", "Laundry", "P250", "B250", 12000.0, False),
             ("U4", "Bakery", "P150", "B150", 8000.0, False),
             ("U5", "Downstream Dye", "P650", "B650", 50000.0, False)]
    return towns.make_town({
        "parcels": [towns.parcel(f"P{x}", box(x - 40, 20, x + 40, 100)) for x in xs],
        "buildings": [towns.building(f"B{x}", (x, 60), f"P{x}") for x in xs],
        "users": [towns.user(u, name=n, parcel_id=p, building_id=b, process_flow_gpd=q,
                             categorical=c, industrial=True) for u, n, p, b, q, c in users],
        "plants": [towns.plant("PLANT", (700, 0), name="Town WWTP", design_flow_mgd=0.2,
                               avg_flow_mgd=0.1, node_id="PLANT")],
    }, crs=CRS_FT, profile=profile, name="street")


# ---------------------------------------------------------------------------
# sampling plan
# ---------------------------------------------------------------------------


def test_sampling_plan_siu_status_and_review_poughkeepsie():
    town = make_town("poughkeepsie-fourth-ward")
    plan = sampling_plan(town, street_graph()).set_index("user_id")
    # control manholes: taps on A, B, C -> M2; D (x 350) -> M3 past P1/I1; G -> none
    assert plan.loc["U1", "control_manhole_id"] == "M2"
    assert plan.loc["U2", "control_manhole_id"] == "M2"
    assert plan.loc["U1", "path_length_ft"] == pytest.approx(250 * FT)
    assert pd.isna(plan.loc["U5", "control_manhole_id"])  # pipe G ends at the plant
    assert (plan["plant_id"] == "PLANT").all()
    # U1: 30,000 gpd >= 25,000 and 15 % of 0.2 MGD
    assert plan.loc["U1", "siu"]
    assert "30,000 gpd >= 25,000 gpd" in plan.loc["U1", "siu_reason"]
    assert plan.loc["U1", "plant_share_pct"] == pytest.approx(15.0)
    # U2: categorical only
    assert plan.loc["U2", "siu"] and plan.loc["U2", "siu_reason"] == "categorical industrial user"
    # U3: 12,000 gpd is 6 % of 200,000 gpd -> SIU by plant share; > 10,000 -> review
    assert plan.loc["U3", "siu"] and "6.0% of plant PLANT" in plan.loc["U3", "siu_reason"]
    assert plan.loc["U3", "review"]
    assert "§ 168-22.5G(4)" in plan.loc["U3", "section"]
    assert "40 CFR 403.3(v)" in plan.loc["U3", "section"]
    # U4: 8,000 gpd = 4 %: neither
    assert not plan.loc["U4", "siu"] and not plan.loc["U4", "review"]
    assert plan.loc["U4", "siu_reason"] == ""
    assert plan.loc["U4", "section"] == "§ 168-22.5J"
    assert plan.crs == CRS_FT


def test_sampling_plan_berlin_has_no_local_review():
    plan = sampling_plan(make_town("berlin-nh"), street_graph()).set_index("user_id")
    assert not plan["review"].any()
    assert plan.loc["U1", "siu"] and plan.loc["U3", "siu"] and not plan.loc["U4", "siu"]


# ---------------------------------------------------------------------------
# sample checks
# ---------------------------------------------------------------------------


def write_csv(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "results.csv"
    p.write_text("\n".join(["manhole_id,datetime,parameter,value,unit", *lines]) + "\n")
    return p


def sample_file_lines() -> list[str]:
    lines = []
    # BOD at M2 every 5 min 09:00-11:55 at 200 mg/L, except a 20-minute run at
    # 6 x normal (6 x 240 = 1440 mg/L) from 10:00 to 10:20
    for i in range(36):
        h, m = 9 + (i * 5) // 60, (i * 5) % 60
        v = 1440 if (h == 10 and m <= 20) else 200
        lines.append(f"M2,2026-05-01 {h:02d}:{m:02d},BOD,{v},mg/L")
    lines.insert(3, "M2,2026-05-01 09:12,pH,5.9,SU")  # line 5 of the file
    lines.insert(4, "M2,2026-05-01 09:13,pH,7.1,SU")
    lines.append("M3,2026-05-01 11:30,Cu,1.4,ppm")
    lines.append("M3,2026-05-01 11:31,Cu,0.6,ppm")
    lines.append("M3,2026-05-01 11:35,Cu,not-measured,ppm")  # malformed: line 42 (header + 41 rows)
    return lines


def test_sample_file_two_exceedances_a_screening_with_sections_and_suspects(tmp_path):
    town = make_town("poughkeepsie-fourth-ward")
    lines = sample_file_lines()
    path = write_csv(tmp_path, lines)
    res = check_samples(town, street_graph(), path)
    exc = res[res["kind"] == "exceedance"].reset_index(drop=True)
    assert list(exc["rule"]) == ["min", "slug"]  # time order
    ph, slug = exc.iloc[0], exc.iloc[1]
    (cu,) = [r for _, r in res[res["kind"] == "screening_exceedance"].iterrows()]
    # pH 5.9 < 6.5
    assert ph["parameter"] == "ph" and ph["value"] == 5.9 and ph["limit"] == 6.5
    assert ph["section"] == "§ 168-22.5C(8)" and ph["lines"] == "5"
    # BOD 1440 mg/L = 6 x 240 from 10:00 to 10:20: > 5 x normal for 20 > 15 min
    assert slug["parameter"] == "bod" and slug["n_samples"] == 5
    assert slug["duration_min"] == 20 and slug["value"] == 1440 and slug["limit"] == 1200
    assert slug["section"].startswith("§ 168-22.5C(15)")
    assert "§ 168-22.5G(1)" in slug["section"]  # also above BOD 240 ppm
    assert slug["basis"] == "normal_strength" and slug["baseline"] == 240
    # Cu 1.4 ppm > 1 ppm at M3, a manhole in the street, not the plant: § 168-22.5C(9)
    # limits "average quantities in the sewage as it arrives at the treatment plant",
    # so this grab only screens. Flow-weighted at the plant, by hand: M3's mean
    # (1.4 + 0.6) / 2 = 1.0 mg/L x the 50,500 gpd of U1-U4 upstream / the plant's
    # 0.1 MGD = 0.505 mg/L, not above 1 ppm: no violation at the plant.
    assert cu["parameter"] == "copper" and cu["value"] == 1.4 and cu["limit"] == 1.0
    assert cu["section"] == "§ 168-22.5C(9)" and cu["manhole_id"] == "M3"
    assert (cu["rule"], cu["basis"], cu["point"], cu["plant_id"]) == ("max", "sample", "sewer",
                                                                      "PLANT")
    assert "at least 0.505 mg/L" in cu["message"] and "not above 1 mg/L" in cu["message"]
    # suspects: M2 drains B50 (U1), B150/P150 (U2, U4), B250 (U3); largest first
    assert slug["suspect_user_ids"] == "U1,U3,U4,U2"
    assert ph["suspect_user_ids"] == "U1,U3,U4,U2"
    assert slug["suspects"].startswith("U1 Plating Co (30,000 gpd); U3 Laundry (12,000 gpd)")
    # M3 also drains B350 (no user) but not B650 (U5, downstream of M3)
    assert cu["suspect_user_ids"] == "U1,U3,U4,U2"
    # the malformed row, with its line number
    prob = res[res["kind"] == "problem"]
    assert list(prob["rule"]) == ["malformed"]
    assert prob.iloc[0]["lines"] == "42"
    assert prob.iloc[0]["message"].startswith("line 42: value 'not-measured'")


def test_short_high_run_is_no_slug_but_limit_exceedance(tmp_path):
    town = make_town("poughkeepsie-fourth-ward")
    path = write_csv(tmp_path, [
        "M2,2026-05-01T10:00,BOD,1500,mg/L", "M2,2026-05-01T10:10,BOD,1500,mg/L",
        "M2,2026-05-01T10:15,BOD,1500,mg/L", "M2,2026-05-01T10:20,BOD,100,mg/L",
    ])
    exc = check_samples(town, street_graph(), path)
    assert list(exc["rule"]) == ["max"]  # 15 min is not more than 15 min
    assert exc.iloc[0]["n_samples"] == 3 and exc.iloc[0]["lines"] == "2,3,4"


def test_hourly_rule_three_times_average(tmp_path):
    # the reading measured_average (docs/readings.md): the same point's 24-hour average
    raw = load_profile("poughkeepsie-fourth-ward").raw
    raw["limits"]["hourly_reading"] = "measured_average"
    town = make_town(profile_from_dict(raw))
    # zinc (limit 3 ppm) at 0.1 ppm for 7 hours, one hour at 0.9: mean of all
    # eight = (7 x 0.1 + 0.9) / 8 = 0.2; 0.9 >= 3 x 0.2 -> hourly rule broken. At the
    # plant (PLANT) it is a violation; at M3 it screens (the C(9) rule is on the
    # sewage as it arrives at the treatment plant).
    for where, kind in (("PLANT", "exceedance"), ("M3", "screening_exceedance")):
        lines = [f"{where},2026-05-01 {h:02d}:00,Zn,0.1,mg/L" for h in range(8, 15)]
        lines.append(f"{where},2026-05-01 15:30,zinc,900,ug/L")
        exc = check_samples(town, street_graph(), write_csv(tmp_path, lines))
        assert list(zip(exc["kind"], exc["rule"], strict=True)) == [(kind, "hourly")]
        row = exc.iloc[0]
        assert row["value"] == pytest.approx(0.9)
        assert row["limit"] == pytest.approx(0.6) and row["baseline"] == pytest.approx(0.2)
        assert row["baseline_lines"] == "2,3,4,5,6,7,8,9" and row["baseline_n"] == 8
        assert row["section"] == "§ 168-22.5C(9)"
    # BOD is not under the hourly rule of the metals paragraph
    lines = [f"M3,2026-05-01 {h:02d}:00,BOD,20,mg/L" for h in range(8, 15)]
    lines.append("M3,2026-05-01 15:30,BOD,200,mg/L")
    assert check_samples(town, street_graph(), write_csv(tmp_path, lines)).empty


def test_units_parameters_and_manholes_reported_not_guessed(tmp_path):
    town = make_town("poughkeepsie-fourth-ward")
    path = write_csv(tmp_path, [
        "M2,2026-05-01 10:00,temperature,50,degC",     # 122 F > 120 F
        "M2,2026-05-01 10:05,copper,2,lb/day",         # a load, not a concentration
        "M2,2026-05-01 10:06,pH,8,mg/L",               # wrong dimension
        "M2,2026-05-01 10:07,unobtainium,1,mg/L",
        "M2,2026-05-01 10:08,BOD,100,ppm",
        "MX9,2026-05-01 10:09,CN,2.5,ppm",             # unknown manhole, still checked
        "M2,yesterday,BOD,100,ppm",
        "M2,2026-05-01 10:10,BOD",
        "M2,2026-05-01 10:11,Zn,<0.01,mg/L",
    ])
    res = check_samples(town, street_graph(), path)
    exc = res[res["kind"] == "exceedance"].set_index("parameter")
    assert exc.loc["temperature", "value"] == pytest.approx(122.0)
    assert exc.loc["temperature", "unit"] == "degF"
    assert exc.loc["cyanide", "manhole_id"] == "MX9"
    assert exc.loc["cyanide", "suspects"] == ""
    prob = res[res["kind"] == "problem"]
    assert sorted(prob["rule"]) == ["malformed", "malformed", "malformed", "unknown_manhole",
                                    "unknown_parameter", "unknown_unit", "unknown_unit"]
    assert set(prob.loc[prob["rule"] == "malformed", "lines"]) == {"8", "9", "10"}
    assert "censored value '<0.01'" in prob.loc[prob["lines"] == "10", "message"].item()
    assert prob.loc[prob["rule"] == "unknown_parameter", "lines"].item() == "5"


def test_missing_column_raises(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("manhole,datetime,parameter,value,unit\nM2,2026-05-01,BOD,1,mg/L\n")
    with pytest.raises(SchemaError, match="manhole_id"):
        check_samples(make_town("berlin-nh"), street_graph(), p)


def test_unit_and_parameter_tables():
    assert to_canonical(1.4, "ppm") == ("concentration", 1.4)
    assert to_canonical(1.4, "mg/L") == ("concentration", 1.4)
    assert to_canonical(100.0, "°C") == ("temperature", 212.0)
    assert to_canonical(1.0, "lb/day") is None
    assert canonical_parameter("Total Suspended Solids") == "ss"
    assert canonical_parameter("BOD5") == "bod"
    assert canonical_parameter("widgets") is None


# ---------------------------------------------------------------------------
# command line, on a synthetic town written to disk
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_sampling_plan_and_samples(tmp_path, capsys):
    import pyogrio

    from gisnet.cli import main
    from gisnet.testing.synthetic import make_town as synth
    from gisnet.testing.synthetic import write_town

    write_town(synth(300, seed=2), tmp_path / "t", fmt="gpkg")
    out = tmp_path / "out"
    assert main(["sampling-plan", "--layers", str(tmp_path / "t"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "industrial users:" in text
    gpkg = out / "gisnet-results.gpkg"
    names = {n for n, _ in pyogrio.list_layers(gpkg)}
    assert {"control_manholes", "control_paths", "sampling_plan"} <= names
    plan = gpd.read_file(gpkg, layer="sampling_plan")
    cms = gpd.read_file(gpkg, layer="control_manholes")
    assert cms["control_manhole_id"].notna().all()
    user = plan.dropna(subset=["control_manhole_id"]).iloc[0]
    mh = user["control_manhole_id"]
    csv_path = write_csv(tmp_path, [f"{mh},2026-05-01 09:00,Cu,1.4,ppm",
                                    f"{mh},2026-05-01 09:05,Cu,oops,ppm"])
    rc = main(["samples", str(csv_path), "--layers", str(tmp_path / "t"),
               "--csv-out", str(tmp_path / "f.csv")])
    text = capsys.readouterr().out
    # a copper grab at a user's control manhole screens: § 168-22.5C(9) is on the
    # sewage as it arrives at the plant, so nothing exceeds and the exit status is 0
    assert rc == 0
    assert "SCREENING" in text and "§ 168-22.5C(9)" in text and user["user_id"] in text
    assert "EXCEEDANCE" not in text
    assert "line 3" in text
    found = pd.read_csv(tmp_path / "f.csv")
    assert list(found["rule"]) == ["max", "malformed"]
    assert list(found["kind"]) == ["screening_exceedance", "problem"]
    # upstream trace names the same user
    assert main(["trace", "--layers", str(tmp_path / "t"), "--manhole", mh, "--upstream"]) == 0
    assert f"user {user['user_id']}" in capsys.readouterr().out
    # downstream trace from the user's parcel reaches the plant
    assert main(["trace", "--layers", str(tmp_path / "t"), "--parcel", user["parcel_id"]]) == 0
    text = capsys.readouterr().out
    assert f"control manhole: {mh}" in text and "downstream to plant" in text
    assert main(["trace", "--layers", str(tmp_path / "t"), "--manhole", mh]) == 2


# ---------------------------------------------------------------------------
# the control analysis as a typed result
# ---------------------------------------------------------------------------


def test_analyse_control_bundles_points_control_manholes_and_plan():
    from gisnet.control import analyse_control
    from gisnet.results import ControlResult
    from gisnet.tracing import DownstreamIndex, control_manholes

    town, G = make_town("poughkeepsie-fourth-ward"), street_graph()
    res = analyse_control(town, G)
    assert isinstance(res, ControlResult) and isinstance(res.index, DownstreamIndex)
    assert set(res.layers()) == {"control_manholes", "control_paths", "sampling_plan"}
    direct = control_manholes(town, G)
    pd.testing.assert_frame_equal(pd.DataFrame(res.control_manholes),
                                  pd.DataFrame(direct["control_manholes"]))
    assert len(res.points) == len(res.control_manholes) == len(res.control_paths)
    pd.testing.assert_frame_equal(pd.DataFrame(res.sampling_plan),
                                  pd.DataFrame(sampling_plan(town, G)))
    assert res.totals["industrial_users"] == {"users": 5, "siu": 4}  # U1, U2, U3, U5
    assert res.totals["control_manholes"]["connection_points"] == len(res.control_manholes)
    # the index given is the index used
    assert analyse_control(town, G, index=res.index).index is res.index


def test_analyse_control_without_users_has_no_plan():
    from gisnet.control import analyse_control

    town = make_town("berlin-nh")
    del town.layers["users"]
    res = analyse_control(town, street_graph())
    assert res.sampling_plan is None and "sampling_plan" not in res.layers()
    assert "industrial_users" not in res.totals


# ---------------------------------------------------------------------------
# an owner-installed control manhole (§ 168-22.5K) in the sampling plan
# ---------------------------------------------------------------------------


def test_sampling_plan_samples_at_the_owner_installed_control_manhole():
    """§ 168-22.5K: "the owner of any property served by a building sewer
    carrying industrial wastes shall install a suitable control manhole in the
    building sewer". U1's owner manhole (``control_for`` U1) is its sampling
    point and its row cites 22.5K; the other users keep § 168-22.5J."""
    town = make_town("poughkeepsie-fourth-ward")
    town.layers["manholes"] = gpd.GeoDataFrame(
        {"node_id": ["OWN-1"], "kind": ["manhole"], "owner": ["private"],
         "status": ["active"], "control_for": ["U1"], "public": [False], "active": [True]},
        geometry=gpd.GeoSeries([Point(50, 30)], crs=CRS_FT), crs=CRS_FT)
    plan = sampling_plan(town, street_graph()).set_index("user_id")
    assert plan.loc["U1", "control_manhole_id"] == "OWN-1"
    assert plan.loc["U1", "section"].split("; ")[0] == "§ 168-22.5K"
    assert pd.isna(plan.loc["U1", "path_length_ft"])
    assert plan.loc["U1", "main_id"] == "A" and plan.loc["U1", "plant_id"] == "PLANT"
    assert plan.loc["U4", "control_manhole_id"] == "M2"
    assert plan.loc["U4", "section"] == "§ 168-22.5J"


def test_control_for_is_read_from_a_shapefile_by_alias(tmp_path, sample_dir):
    """The manholes column ``control_for`` is found by alias (here ``CTRL_FOR``)
    and moves one industrial user's control manhole to the owner's manhole in
    the sample town; every other row is unchanged."""
    import shutil

    from gisnet.control import analyse_control
    from gisnet.graph import build_sewer_graph
    from gisnet.io import load_town

    town = load_town(sample_dir)
    G = build_sewer_graph(town)
    before = analyse_control(town, G, paths=False)
    user = before.sampling_plan.dropna(subset=["control_manhole_id"]).iloc[0]
    dst = tmp_path / "town"
    shutil.copytree(sample_dir, dst, ignore=shutil.ignore_patterns("maps"))
    mh = gpd.read_file(dst / "manholes.shp")
    # the sample's own CTRL_FOR (its one owner-installed manhole) is kept
    assert user["user_id"] not in set(mh["CTRL_FOR"].dropna())
    # a manhole placed in the user's building sewer, reached by no main
    tap = user.geometry
    extra = mh.iloc[[0]].copy()
    extra[mh.columns[0]] = "OWNER-MH-1"
    extra["CTRL_FOR"] = user["user_id"]
    extra = extra.set_geometry([Point(tap.x + 3, tap.y + 40)], crs=mh.crs)
    pd.concat([mh, extra], ignore_index=True).to_file(dst / "manholes.shp")
    town2 = load_town(dst)
    assert "control_for" in town2.layers["manholes"]
    after = analyse_control(town2, build_sewer_graph(town2), paths=False)
    cm0, cm1 = before.control_manholes, after.control_manholes
    moved = (cm1["user_id"] == user["user_id"]).to_numpy()
    assert set(cm1.loc[moved, "control_manhole_id"]) == {"OWNER-MH-1"}
    assert set(cm1.loc[moved, "source"]) == {"owner_manhole"}
    assert set(cm1.loc[moved, "section"]) == {"§ 168-22.5K"}
    cols = ["building_id", "user_id", "main_id", "control_manhole_id", "source"]
    pd.testing.assert_frame_equal(pd.DataFrame(cm0.loc[~moved, cols]).reset_index(drop=True),
                                  pd.DataFrame(cm1.loc[~moved, cols]).reset_index(drop=True))
    plan = after.sampling_plan.set_index("user_id")
    assert plan.loc[user["user_id"], "control_manhole_id"] == "OWNER-MH-1"


def test_sampling_map_shows_source_owner_manhole_and_unresolved(tmp_path):
    """The sampling page colours taps by source, draws the owner's control
    manhole (no graph node) citing § 168-22.5K, and puts each unresolved
    building on the map with its reason."""
    import json
    import re

    from gisnet import maps
    from gisnet.control import analyse_control

    town = make_town("poughkeepsie-fourth-ward")
    town.layers["manholes"] = gpd.GeoDataFrame(
        {"node_id": ["OWN-1"], "kind": ["manhole"], "owner": ["private"],
         "status": ["active"], "control_for": ["U1"], "public": [False], "active": [True]},
        geometry=gpd.GeoSeries([Point(50, 30)], crs=CRS_FT), crs=CRS_FT)
    # B350's lateral stops 20 ft short of the street
    town.layers["laterals"] = gpd.GeoDataFrame(
        {"lateral_id": ["L350"], "building_id": ["B350"], "parcel_id": ["P350"],
         "main_id": [None]},
        geometry=gpd.GeoSeries([LineString([(350, 60), (350, 20)])], crs=CRS_FT), crs=CRS_FT)
    res = analyse_control(town, street_graph())
    cm = res.control_manholes
    assert set(cm["source"]) == {"projected", "owner_manhole", "unresolved"}
    pages = maps.write_maps(town, res.layers(), tmp_path, self_contained=True)
    page = next(p for p in pages if p.name == "sampling.html")
    text = page.read_text(encoding="utf-8")
    cfg = json.loads(re.search(r"var cfg=(\{.*?\});\n", text).group(1))
    specs = {s["key"]: s for s in cfg["layers"]}
    assert specs["taps"]["classKey"] == "_s"
    assert "source" in {f[1] for f in specs["taps"]["fields"]}
    # the legend names the sources present, and only those
    assert "owner-installed control manhole (\\u00a7 168-22.5K)" in text
    assert "tap projected onto the nearest main" in text
    assert "tap on a private main" not in text
    assert specs["unresolved"]["popupTitle"].startswith("No control manhole")
    assert "20.0 ft from the nearest main" in text
    cm_spec = specs["control_manholes"]
    assert ["Ordinance section", "section"] in cm_spec["fields"]
    assert "OWN-1" in text and "\\u00a7 168-22.5K" in text
