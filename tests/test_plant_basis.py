"""The plant rule is judged on how the plant operates now: the latest complete months.

Berlin ch. 16, DES-approval paragraph: a sewer connection permit request is
needed for "any proposed wastewater connection or other discharge to a
wastewater treatment facility operating in excess of 80% design flow
capacity". "Operating" is the present tense: the latest 3 consecutive complete
months decide (``capacity.plant_basis = "latest"``, both shipped profiles), not
the worst 3 months of the whole record, which stay in the ``plants`` layer as
history columns. Every expected number is worked here by hand.
"""

from __future__ import annotations

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString, Point, box

from gisnet import capacity as cap
from gisnet.capacity.plants import plant_windows
from gisnet.errors import ConfigError
from gisnet.profile import load_profile, ordinance_text, profile_from_dict
from gisnet.town import Town, TownSettings

CRS = "EPSG:2260"


def _months() -> tuple[list[str], list[float]]:
    """24 months of a 1.0 MGD plant: 0.70 in Jan-Feb 2024, 0.888 in Mar-May 2024
    (88.8 % of design), then 0.56 for the 19 months Jun 2024 - Dec 2025."""
    months = [str(p) for p in pd.period_range("2024-01", "2025-12", freq="M")]
    flows = [0.70, 0.70, 0.888, 0.888, 0.888] + [0.56] * 19
    assert len(months) == len(flows) == 24
    return months, flows


def _town(profile, months: list[str], flows: list[float]) -> tuple[Town, nx.MultiDiGraph,
                                                                    gpd.GeoDataFrame]:
    G = nx.MultiDiGraph(crs=CRS, ft_per_unit=1.0, outlets=["PL"], snap_tolerance_ft=1.0)
    for nid, x, kind in (("A", 0.0, "manhole"), ("PL", 300.0, "plant")):
        G.add_node(nid, kind=kind, x=x, y=0.0, public=True, active=True,
                   is_manhole=kind == "manhole", outlet=nid == "PL")
    G.add_edge("A", "PL", key="M1", main_id="M1", length_ft=300.0, diameter_in=8.0, slope=0.004,
               up_invert_ft=None, down_invert_ft=None, material="PVC", kind="sanitary",
               public=True, active=True, gravity=True, eligible=True,
               direction_source="node_ids", geometry=LineString([(0, 0), (300, 0)]), part=1)
    parcels = gpd.GeoDataFrame({"parcel_id": ["a"], "flow_gpd": [1000.0],
                                "land_use": "residential", "septic": False, "connected": True},
                               geometry=[box(0, 10, 50, 60)], crs=CRS)
    plants = gpd.GeoDataFrame({"plant_id": ["PL"], "name": ["WWTP"], "node_id": ["PL"],
                               "design_flow_mgd": [1.0], "avg_flow_mgd": [None]},
                              geometry=[Point(300, 0)], crs=CRS)
    pf = pd.DataFrame({"plant_id": "PL", "month": months, "avg_flow_mgd": flows})
    t = Town(name="t", crs=CRS, ft_per_unit=1.0, profile=profile, settings=TownSettings(),
             layers={"parcels": parcels, "plants": plants,
                     "mains": gpd.GeoDataFrame(geometry=[], crs=CRS)}, plant_flows=pf)
    pts = gpd.GeoDataFrame({"building_id": [None], "parcel_id": ["a"], "user_id": [None],
                            "main_id": ["M1"], "edge_key": ["M1"], "tap_distance_ft": 5.0,
                            "source": "projected"}, geometry=[Point(0, 0)], crs=CRS)
    return t, G, pts


def _profile(basis: str | None):
    raw = load_profile("berlin-nh").raw
    if basis is None:
        raw["capacity"].pop("plant_basis", None)
    else:
        raw["capacity"]["plant_basis"] = basis
    return profile_from_dict(raw)


def test_ordinance_words():
    text = ordinance_text("berlin-nh")
    assert ("any proposed wastewater connection or other discharge to a wastewater treatment "
            "facility operating in excess of 80% design flow capacity") in text
    for name in ("berlin-nh", "poughkeepsie-fourth-ward"):
        assert load_profile(name).capacity.plant_basis == "latest"


def test_plant_that_peaked_two_years_ago_is_judged_on_its_latest_months():
    months, flows = _months()
    t, G, pts = _town(load_profile("berlin-nh"), months, flows)
    res = cap.compute_capacity(t, G, points=pts)
    row = res.plants.iloc[0]
    # latest 3 consecutive complete months: Oct-Dec 2025, 0.56 MGD of 1.0 = 56 %
    assert row["basis"] == "monthly_3mo" and row["window_basis"] == "latest"
    assert row["window"] == "2025-10..2025-12"
    assert row["window_months"] == "2025-10,2025-11,2025-12"
    assert row["avg_flow_mgd"] == pytest.approx(0.56) and row["ratio"] == pytest.approx(0.56)
    assert not row["over_threshold"]
    # history: the worst window of the record, Mar-May 2024 at 88.8 %, in excess of 80 %
    assert row["worst_window"] == "2024-03..2024-05"
    assert row["worst_avg_flow_mgd"] == pytest.approx(0.888)
    assert row["worst_ratio"] == pytest.approx(0.888) and row["worst_over_threshold"]
    assert row["months"] == 24 and row["gaps"] == ""
    # A new 10,000 gpd connection: 0.56 + 0.01 = 57 %, no DES approval for the plant
    # (10,000 gpd > 5,000 gpd still needs one, for its own flow).
    w = cap.whatif(t, G, res, parcel_id="a", flow_gpd=10_000)
    pl = w.plants.iloc[0]
    assert (pl["window_basis"], pl["window"]) == ("latest", "2025-10..2025-12")
    assert pl["ratio_before"] == pytest.approx(0.56) and pl["ratio_after"] == pytest.approx(0.57)
    assert [a["id"] for a in w.approvals] == ["des_flow_over_5000_gpd",
                                              "sewer_permit_application"]
    # A 4,000 gpd connection needs no DES approval at all (only its 30-day application).
    assert [a["id"] for a in cap.whatif(t, G, res, parcel_id="a", flow_gpd=4_000).approvals
            ] == ["sewer_permit_application"]


def test_worst_basis_is_a_profile_choice_and_the_what_if_follows_it():
    months, flows = _months()
    t, G, pts = _town(_profile("worst"), months, flows)
    res = cap.compute_capacity(t, G, points=pts)
    row = res.plants.iloc[0]
    assert row["window_basis"] == "worst" and row["window"] == "2024-03..2024-05"
    assert row["ratio"] == pytest.approx(0.888) and row["over_threshold"]
    w = cap.whatif(t, G, res, parcel_id="a", flow_gpd=4_000)
    assert [a["id"] for a in w.approvals] == ["des_plant_over_80_pct",
                                              "sewer_permit_application"]
    assert "already operates in excess of 80% of design flow" in w.approvals[0]["reason"]
    assert "worst months 2024-03..2024-05" in w.approvals[0]["reason"]
    # a profile that leaves plant_basis out reads as latest
    t, G, pts = _town(_profile(None), months, flows)
    assert cap.compute_capacity(t, G, points=pts).plants.iloc[0]["ratio"] == pytest.approx(0.56)
    with pytest.raises(ConfigError, match="plant_basis"):
        _profile("highest")


def test_latest_window_never_spans_a_missing_month():
    # Nov 2025 missing: the latest 3 months of the record, Oct-Dec 2025, are not all
    # reported, so there is no latest window (an older one, Aug-Oct, would say how the
    # plant operated, not how it operates): the missing month is named. With a month
    # missing from the worst run it is not a window either.
    months, flows = _months()
    keep = [i for i, m in enumerate(months) if m not in ("2025-11", "2024-04")]
    pf = pd.DataFrame({"month": [months[i] for i in keep],
                       "avg_flow_mgd": [flows[i] for i in keep]})
    pf.loc[pf["month"] == "2025-09", "avg_flow_mgd"] = 0.62
    w = plant_windows(pf, 3)
    assert w.latest == () and np.isnan(w.latest_mgd)
    assert w.latest_missing == ("2025-11",)
    assert w.gaps == ("2024-04", "2025-11")
    # the record ending in Oct 2025: Aug-Oct is the latest window
    w = plant_windows(pf[pf["month"] <= "2025-10"], 3)
    assert w.latest == ("2025-08", "2025-09", "2025-10") and w.latest_missing == ()
    assert w.latest_mgd == pytest.approx((0.56 + 0.62 + 0.56) / 3)
    # ... unless the record of the town goes on to Dec 2025 (another plant's months)
    w = plant_windows(pf[pf["month"] <= "2025-10"], 3, through="2025-12")
    assert w.latest == () and w.latest_missing == ("2025-11", "2025-12")
    w = plant_windows(pf, 3)
    # Mar-May 2024 is broken by the gap: the worst is now Jan-Mar (0.70, 0.70, 0.888)
    assert w.worst == ("2024-01", "2024-02", "2024-03")
    assert w.worst_mgd == pytest.approx((0.70 + 0.70 + 0.888) / 3)
