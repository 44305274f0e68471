"""Poughkeepsie § 168-22.5D: the plant's monthly increase of SS, BOD and grease.

Every expected number is worked by hand from the monthly analyses written here.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import Point

from gisnet.capacity.monthly_increase import MONTHLY_INCREASE_COLUMNS, monthly_increase_layer
from gisnet.errors import ConfigError, LayerError
from gisnet.io.reading import check_plant_flows, read_plant_flows
from gisnet.profile import load_profile, ordinance_text, profile_from_dict

POUGH = "poughkeepsie-fourth-ward"
CLAUSE = ("Notwithstanding the provisions of § 168-22.5C, any discharge into the public sewer "
          "of wastes with a concentration of suspended solids, BOD or grease, that causes at "
          "the sewage works a monthly increase in the average daily analysis of any of these "
          "constituents in excess of 2% of the annual daily average for the previous year is "
          "prohibited.")
YEAR = [f"2024-{m:02d}" for m in range(1, 13)]


def _town(flows: pd.DataFrame | None, profile=POUGH) -> SimpleNamespace:
    prof = load_profile(profile) if isinstance(profile, str) else profile
    plants = gpd.GeoDataFrame({"plant_id": ["WWTP"]}, geometry=[Point(300, 0)], crs="EPSG:2260")
    return SimpleNamespace(profile=prof, plant_flows=flows, layers={"plants": plants},
                           crs="EPSG:2260")


def _flows(bod_2024: list[float], later: dict[str, float], **other: list[float]) -> pd.DataFrame:
    months = YEAR + list(later)
    return check_plant_flows(pd.DataFrame({
        "plant_id": "WWTP", "month": months, "avg_flow_mgd": 1.0,
        "bod_mg_l": [*bod_2024, *later.values()], **other}), "plant_flows.csv")


def _row(layer: pd.DataFrame, month: str, constituent: str = "bod") -> pd.Series:
    (i,) = layer.index[(layer["month"] == month) & (layer["constituent"] == constituent)]
    return layer.loc[i]


def test_the_clause_is_the_profiles_and_the_ordinances():
    text = re.sub(r"\s+", " ", ordinance_text(POUGH))
    assert CLAUSE in text
    rule = load_profile(POUGH).monthly_increase
    assert rule.text == CLAUSE
    assert (rule.max_increase_pct, rule.constituents, rule.reading, rule.section) == (
        2.0, ("ss", "bod", "grease"), "over_annual_average", "§ 168-22.5D")


def test_increase_over_the_previous_years_annual_daily_average():
    # 2024 BOD: six months at 190 and six at 210 mg/L: annual daily average
    # (6 x 190 + 6 x 210) / 12 = 200 mg/L; 2 % of it is 4 mg/L.
    bod = [190.0, 210.0] * 6
    layer, why = monthly_increase_layer(_town(_flows(bod, {
        "2025-01": 204.0,    # +4 = exactly 2 %: not "in excess of"
        "2025-02": 204.02,   # +4.02 = 2.01 %: in excess
        "2025-03": 150.0,    # a decrease
    })))
    assert why is None
    assert list(layer.columns) == [*MONTHLY_INCREASE_COLUMNS, "geometry"]
    assert len(layer) == 15  # 12 months of 2024 (cannot say) and 3 of 2025
    jan, feb, mar = (_row(layer, m) for m in ("2025-01", "2025-02", "2025-03"))
    assert jan["annual_avg_mg_l"] == 200.0 and jan["increase_mg_l"] == 4.0
    assert jan["increase_pct"] == 2.0
    assert (jan["over_limit"], jan["status"]) == (False, "not_over")
    assert feb["increase_mg_l"] == pytest.approx(4.02, abs=1e-9)
    assert feb["increase_pct"] == pytest.approx(2.01, abs=1e-9)
    assert (feb["over_limit"], feb["status"]) == (True, "over")
    assert feb["reading"] == "over_annual_average"
    assert feb["compared_with"] == "2024 annual daily average" and feb["previous_year"] == "2024"
    assert "investigate which users discharge BOD to plant WWTP" in feb["message"]
    assert "read as over_annual_average" in feb["message"]
    assert mar["increase_pct"] == pytest.approx(-25.0) and mar["status"] == "not_over"
    assert feb.geometry.equals(Point(300, 0))
    # the months of 2024 have no 2023 to compare with
    first = _row(layer, "2024-05")
    assert first["status"] == "cannot_say" and pd.isna(first["over_limit"])
    assert first["missing_months"] == ",".join(f"2023-{m:02d}" for m in range(1, 13))


def test_months_missing_in_the_previous_year_cannot_say():
    bod = [200.0] * 12
    flows = _flows(bod, {"2025-04": 260.0})
    flows = flows[~flows["month"].isin(["2024-03", "2024-11"])]
    layer, _ = monthly_increase_layer(_town(flows))
    apr = _row(layer, "2025-04")
    assert apr["status"] == "cannot_say" and pd.isna(apr["increase_pct"])
    assert apr["missing_months"] == "2024-03,2024-11"
    assert "cannot say: months missing 2024-03, 2024-11" in apr["message"]
    # a blank analysis is a month missing too
    flows = _flows(bod, {"2025-04": 260.0})
    flows.loc[flows["month"] == "2024-07", "bod_mg_l"] = float("nan")
    apr = _row(monthly_increase_layer(_town(flows))[0], "2025-04")
    assert apr["missing_months"] == "2024-07"


def test_the_other_reading_month_over_previous_month():
    # 2024: annual daily average 200 (all months 200): 2 % is 4 mg/L.
    # Jan 2025 215 over Dec 2024 200: +15 = 7.5 % of 200; Feb 218 over Jan 215:
    # +3 = 1.5 %: not in excess under this reading, though 9 % over the annual average.
    raw = load_profile(POUGH).raw
    raw["monthly_increase"]["reading"] = "over_previous_month"
    prof = profile_from_dict(raw)
    flows = _flows([200.0] * 12, {"2025-01": 215.0, "2025-02": 218.0, "2025-04": 300.0})
    layer, _ = monthly_increase_layer(_town(flows, prof))
    jan, feb, apr = (_row(layer, m) for m in ("2025-01", "2025-02", "2025-04"))
    assert (jan["compared_with"], jan["increase_mg_l"], jan["increase_pct"]) == (
        "2024-12", 15.0, 7.5)
    assert jan["status"] == "over"
    assert (feb["compared_with"], feb["increase_mg_l"], feb["increase_pct"]) == (
        "2025-01", 3.0, 1.5)
    assert feb["status"] == "not_over" and feb["reading"] == "over_previous_month"
    # April's month before (March) is not reported: cannot say
    assert apr["status"] == "cannot_say" and apr["missing_months"] == "2025-03"
    # the default reading, the same table: February is 9 % over
    feb0 = _row(monthly_increase_layer(_town(flows))[0], "2025-02")
    assert feb0["increase_pct"] == 9.0 and feb0["status"] == "over"


def test_each_constituent_and_the_rule_not_checked_said():
    flows = _flows([200.0] * 12, {"2025-01": 200.0},
                   ss_mg_l=[100.0] * 12 + [103.0], grease_mg_l=[50.0] * 12 + [50.5])
    layer, _ = monthly_increase_layer(_town(flows))
    jan = layer[layer["month"] == "2025-01"]
    assert jan["constituent"].tolist() == ["ss", "bod", "grease"]
    # SS +3 of 100 = 3 % (over); BOD 0 %; grease +0.5 of 50 = 1 % (not over)
    assert jan["increase_pct"].tolist() == pytest.approx([3.0, 0.0, 1.0])
    assert jan["status"].tolist() == ["over", "not_over", "not_over"]
    # Berlin has no such clause: not checked, and said
    layer, why = monthly_increase_layer(_town(flows, "berlin-nh"))
    assert len(layer) == 0 and list(layer.columns) == [*MONTHLY_INCREASE_COLUMNS, "geometry"]
    assert why == ("the profile berlin-nh has no rule on the plant's monthly increase of a "
                   "constituent: not checked")
    # a plant-flow table without analyses works as before, and the rule says why not
    plain = check_plant_flows(pd.DataFrame({"plant_id": ["WWTP"], "month": ["2025-01"],
                                            "avg_flow_mgd": [1.0]}), "f.csv")
    assert list(plain.columns) == ["plant_id", "month", "avg_flow_mgd"]
    layer, why = monthly_increase_layer(_town(plain))
    assert len(layer) == 0 and why.startswith("plant_flows has no ss_mg_l, bod_mg_l, "
                                              "grease_mg_l column: § 168-22.5D")


def test_bad_analyses_name_the_file_row_and_column(tmp_path: Path):
    p = tmp_path / "plant_flows.csv"
    p.write_text("plant_id,month,avg_flow_mgd,BOD_mg_L,ss_mg_l\n"
                 "WWTP,2025-01,1.0,180,\n"
                 "WWTP,2025-02,1.1,lots,90\n")
    with pytest.raises(LayerError) as e:
        read_plant_flows(p)
    msg = str(e.value)
    assert "plant_flows.csv" in msg and "row 3, column bod_mg_l" in msg and "'lots'" in msg
    p.write_text("plant_id,month,avg_flow_mgd,ss_mg_l\nWWTP,2025-01,1.0,-5\n")
    with pytest.raises(LayerError, match="row 2, column ss_mg_l"):
        read_plant_flows(p)
    p.write_text("plant_id,month,avg_flow_mgd,ss_mg_l,bod_mg_l\nWWTP,2025-01,1.0,,180\n")
    got = read_plant_flows(p)
    assert got["bod_mg_l"].dtype == float and got["bod_mg_l"].iloc[0] == 180.0
    assert pd.isna(got["ss_mg_l"].iloc[0])


def test_profile_keys_are_checked():
    for key, bad in (("reading", "monthly"), ("max_increase_pct", 0.0),
                     ("constituents", ["BOD"]), ("constituents", [])):
        raw = load_profile(POUGH).raw
        raw["monthly_increase"][key] = bad
        with pytest.raises(ConfigError, match=f"monthly_increase.{key}"):
            profile_from_dict(raw)
    raw = load_profile(POUGH).raw
    del raw["monthly_increase"]
    assert profile_from_dict(raw).monthly_increase is None
