"""Connection obligations: distances by each ordinance's measure, status, zone, frontage."""

from __future__ import annotations

import math
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from pyproj import CRS
from shapely.geometry import LineString, Point, Polygon, box

from gisnet.errors import ConfigError, CRSError, NotFoundError
from gisnet.obligations import (
    compute_obligations,
    connection_zone,
    eligible_mask,
    frontage,
    frontage_shares,
    nearest,
)
from gisnet.profile import load_profile
from gisnet.testing import towns
from gisnet.town import Town
from gisnet.units import feet_per_unit

FT_CRS = "EPSG:2222"  # Arizona East, international feet: 1 unit = 1 ft exactly


# --------------------------------------------------------------------------- fixtures


def make_town(parcels, mains, *, profile="poughkeepsie-fourth-ward", crs=FT_CRS,
              streets=None, buildings=None, laterals=None) -> Town:
    """Rows through the loader's canonical mapping (gisnet.testing.towns.make_town)."""
    layers = {"parcels": parcels, "mains": mains}
    for role, rows in (("streets", streets), ("buildings", buildings), ("laterals", laterals)):
        if rows is not None:
            layers[role] = rows
    return towns.make_town(layers, crs=crs, profile=profile)


def main(mid, coords, kind="sanitary", owner="public", status="active", install="2000-01-01"):
    return towns.main(mid, coords, kind=kind, owner=owner, status=status, install_date=install)


def row(df: pd.DataFrame, pid: str) -> pd.Series:
    return df.set_index("parcel_id").loc[pid]


# --------------------------------------------------------------------------- the two measures

# A street 50 ft wide along the x axis; the sewer runs in it from x=0 to x=500.
# Parcels abut the street further along, past the end of the sewer, so their
# lot line and their house are at chosen straight-line distances from the
# sewer's end (500, 0): lot corner (x0, 25), house corner (bx, by).
STREET = {"street_id": "S1", "geometry": box(-100, -25, 2000, 25), "width_ft": 50.0}


def _lot_and_house(lot_ft: float, house_ft: float, house_y: float):
    x0 = 500 + math.sqrt(lot_ft**2 - 25**2)
    bx = 500 + math.sqrt(house_ft**2 - house_y**2)
    lot = box(x0, 25, x0 + 200, 225)
    house = box(bx, house_y, bx + 40, house_y + 30)
    assert lot.contains(house)
    return lot, house


@pytest.mark.parametrize(
    ("lot_ft", "house_ft", "house_y", "pough", "berlin"),
    [
        # Poughkeepsie: within 300 ft and abutting, but no notice and no ground for one
        # recorded: connection can be ordered (§ 168-22.2G), not yet required
        (250.0, 320.0, 100.0, "subject_to_notice", "not_required"),
        (150.0, 180.0, 50.0, "subject_to_notice", "required"),
        (310.0, 330.0, 60.0, "not_required", "not_required"),
    ],
)
def test_profiles_differ_where_their_measures_differ(lot_ft, house_ft, house_y, pough, berlin):
    lot, house = _lot_and_house(lot_ft, house_ft, house_y)
    kw = {
        "parcels": [{"parcel_id": "P1", "geometry": lot}],
        "mains": [main("M1", [(0, 0), (500, 0)])],
        "streets": [STREET],
        "buildings": [{"building_id": "B1", "parcel_id": "P1", "geometry": house,
                       "built_date": "2015-06-01"}],
    }
    pk = compute_obligations(make_town(**kw))["obligations"]
    be = compute_obligations(make_town(profile="berlin-nh", **kw))["obligations"]
    p, b = row(pk, "P1"), row(be, "P1")
    assert p["distance_ft"] == pytest.approx(lot_ft, abs=1e-6)
    assert b["distance_ft"] == pytest.approx(house_ft, abs=1e-6)
    assert p["measure"] == "property_line" and b["measure"] == "building"
    assert bool(p["abuts_sewered_street"]) and bool(b["abuts_sewered_street"])
    assert p["status"] == pough, p["reason"]
    assert b["status"] == berlin, b["reason"]
    assert b["building_id"] == "B1" and not b["approximate"]
    if pough == "subject_to_notice":
        # the 30 days are the term once notice is served; no date until then
        assert p["deadline_days"] == 30 and pd.isna(p["deadline_date"])
        assert p["section"] == "§ 168-22.2G"
        assert "300 ft" in p["reason"] and "public health hazard" in p["reason"]
    if berlin == "required":
        assert b["deadline_days"] == 90 and b["section"] == "sec. 16-50"
        assert "Newly constructed" in b["reason"]


def test_evidence_joins_the_two_nearest_points():
    lot, house = _lot_and_house(150.0, 180.0, 50.0)
    town = make_town(
        parcels=[{"parcel_id": "P1", "geometry": lot}],
        mains=[main("M1", [(0, 0), (500, 0)])], streets=[STREET],
        buildings=[{"building_id": "B1", "parcel_id": "P1", "geometry": house}],
        profile="berlin-nh",
    )
    res = compute_obligations(town)
    ob, ev = res["obligations"], res["obligation_evidence"]
    r = row(ob, "P1")
    # nearest point on the sewer is its end; on the house its lower-left corner
    assert (r["nearest_x"], r["nearest_y"]) == pytest.approx((500.0, 0.0))
    hx, hy = house.bounds[:2]
    assert (r["from_x"], r["from_y"]) == pytest.approx((hx, hy))
    (line,) = ev.geometry
    assert line.length == pytest.approx(180.0)
    assert ev.iloc[0]["main_id"] == "M1" and ev.iloc[0]["building_id"] == "B1"


def test_touching_is_zero_and_exactly_300_ft_is_within():
    mains = [main("M1", [(0, 0), (1000, 0)])]
    parcels = [
        {"parcel_id": "touch", "geometry": box(100, 0, 200, 100)},  # shares the main's line
        {"parcel_id": "at300", "geometry": box(300, 300, 400, 400)},
        {"parcel_id": "at300.02", "geometry": box(500, 300.02, 600, 400)},
    ]
    ob = compute_obligations(make_town(parcels, mains), assume_abutting=True)["obligations"]
    assert row(ob, "touch")["distance_ft"] == 0.0
    assert row(ob, "at300")["distance_ft"] == 300.0
    assert bool(row(ob, "at300")["within_distance"])
    assert row(ob, "at300")["status"] == "subject_to_notice"
    assert not bool(row(ob, "at300.02")["within_distance"])
    assert row(ob, "at300.02")["status"] == "not_required"


def test_exactly_300_ft_in_us_survey_feet_and_metres():
    # 300 US survey ft = 300.0006 international ft; 91.44 m = 300 ft exactly
    # (coordinates inside each CRS's area of use: New York City; UTM zone 18N)
    for crs, d, (x0, y0) in (("EPSG:2263", 300.0, (980_000.0, 190_000.0)),
                             ("EPSG:32618", 91.44, (585_000.0, 4_510_000.0))):
        town = make_town(
            [{"parcel_id": "P", "geometry": box(x0 + 100, y0 + d, x0 + 120, y0 + d + 20)}],
            [main("M1", [(x0, y0), (x0 + 500, y0)])], crs=crs,
        )
        r = row(compute_obligations(town, assume_abutting=True)["obligations"], "P")
        assert r["distance_ft"] == pytest.approx(300.0, abs=1e-3)
        assert r["status"] == "subject_to_notice"


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "storm"},
        {"owner": "private"},
        {"status": "inactive"},
        {"status": "abandoned"},
        {"status": "proposed"},
        {"kind": "force"},
    ],
)
def test_storm_private_inactive_force_never_require(bad):
    mains = [main("NEAR", [(0, 0), (1000, 0)]) | bad, main("FAR", [(0, 2000), (1000, 2000)])]
    parcels = [{"parcel_id": "P", "geometry": box(100, 10, 200, 110)}]
    streets = [{"street_id": "S", "geometry": box(-50, -25, 1050, 25), "width_ft": 50.0}]
    for profile in ("poughkeepsie-fourth-ward", "berlin-nh"):
        town = make_town(parcels, mains, streets=streets, profile=profile)
        r = row(compute_obligations(town)["obligations"], "P")
        assert r["status"] == "not_required", r["reason"]
        assert r["main_id"] == "FAR"
        assert r["distance_ft"] == pytest.approx(1890.0)
        assert not bool(r["abuts_sewered_street"])


def test_eligible_mask_reads_loader_columns():
    town = make_town(
        [{"parcel_id": "P", "geometry": box(0, 0, 1, 1)}],
        [main("a", [(0, 0), (1, 0)]), main("b", [(0, 0), (1, 0)], kind="combined"),
         main("c", [(0, 0), (1, 0)], kind="storm"), main("d", [(0, 0), (1, 0)], owner=None),
         main("e", [(0, 0), (1, 0)], status=None), main("f", [(0, 0), (1, 0)], kind=None),
         main("g", [(0, 0), (1, 0)], kind="unknown"), main("h", [(0, 0), (1, 0)], owner="private"),
         main("i", [(0, 0), (1, 0)], status="abandoned"),
         main("j", [(0, 0), (1, 0)], kind="force")],
    )
    # a main of unknown kind is a sanitary main (gisnet.rules.effective_kind), as for the graph
    assert eligible_mask(town.layers["mains"], town.profile).tolist() == [
        True, True, False, True, True, True, True, False, False, False]


def test_eligible_mask_needs_a_geometry():
    mains = [main("a", [(0, 0), (1, 0)]), main("b", [(0, 0), (1, 0)])]
    town = make_town([{"parcel_id": "P", "geometry": box(0, 0, 1, 1)}], mains)
    town.layers["mains"].loc[1, "geometry"] = None
    assert eligible_mask(town.layers["mains"], town.profile).tolist() == [True, False]


def test_ties_resolved_by_lowest_main_id():
    # two mains exactly 100 ft away on either side; ids given in reverse order
    mains = [main("M9", [(0, 200), (100, 200)]), main("M10", [(0, -100), (100, -100)]),
             main("M2", [(0, -100), (100, -100)])]
    parcels = [{"parcel_id": "P", "geometry": box(0, 0, 100, 100)}]
    ob = compute_obligations(make_town(parcels, mains), assume_abutting=True)["obligations"]
    # string order: "M10" < "M2" < "M9"
    assert row(ob, "P")["main_id"] == "M10"


def test_nearest_ties_deterministic_with_threads():
    rng = np.random.default_rng(3)
    src = shapely.points(rng.integers(0, 50, (30_000, 2)).astype(float))
    # a grid of identical-distance targets: many ties
    tg = shapely.points(np.array([(x, y) for x in range(0, 51, 5) for y in range(0, 51, 5)],
                                 dtype=float) + 0.0)
    rank = np.arange(len(tg))[::-1].copy()
    j1, d1 = nearest(src, tg, rank, threads=1)
    j2, d2 = nearest(src, tg, rank, threads=2)
    assert (j1 == j2).all() and np.allclose(d1, d2)
    # brute force: min distance, then highest index (lowest rank) among ties
    dm = shapely.distance(src[:, None], tg[None, :])
    best = dm.min(axis=1)
    assert np.allclose(d1, best)
    for i in range(0, len(src), 997):
        ties = np.flatnonzero(np.isclose(dm[i], best[i], rtol=0, atol=1e-9))
        assert j1[i] == ties[np.argmin(rank[ties])]


# --------------------------------------------------------------------------- status rules


def test_no_streets_layer_decides_from_the_parcel_fabric_and_says_so():
    # the lot is 50 ft from the main with no other parcel between: the gap is the street
    town = make_town([{"parcel_id": "P", "geometry": box(0, 50, 100, 150)}],
                     [main("M1", [(0, 0), (500, 0)])])
    r = row(compute_obligations(town)["obligations"], "P")
    assert r["status"] == "subject_to_notice"
    assert bool(r["abuts_sewered_street"]) and r["abutting_method"] == "parcel_fabric"
    r2 = row(compute_obligations(town, assume_abutting=True)["obligations"], "P")
    assert r2["status"] == "subject_to_notice" and "abutting assumed" in r2["reason"]
    assert r2["abutting_method"] == "assumed"


def test_within_distance_but_not_abutting():
    # the parcel is 100 ft from the sewer but fronts another street without one
    streets = [STREET, {"street_id": "S2", "geometry": box(-100, 200, 2000, 250),
                        "width_ft": 50.0}]
    town = make_town([{"parcel_id": "P", "geometry": box(100, 100, 200, 200)}],
                     [main("M1", [(0, 0), (500, 0)])], streets=streets)
    r = row(compute_obligations(town)["obligations"], "P")
    assert r["distance_ft"] == pytest.approx(100.0)
    assert bool(r["within_distance"]) and not bool(r["abuts_sewered_street"])
    assert r["status"] == "not_required"
    assert "abuts no street" in r["reason"]


def test_centreline_streets_are_widened():
    # centreline along y=0, 60 ft wide: parcels from y=30 abut, from y=40 do not
    streets = [{"street_id": "S", "geometry": LineString([(-100, 0), (2000, 0)]),
                "width_ft": 60.0}]
    parcels = [{"parcel_id": "A", "geometry": box(0, 30, 100, 130)},
               {"parcel_id": "B", "geometry": box(200, 40, 300, 140)},
               {"parcel_id": "in", "geometry": box(320, 34.9, 380, 134.9)},
               {"parcel_id": "out", "geometry": box(400, 35.1, 480, 135.1)}]
    town = make_town(parcels, [main("M1", [(0, 0), (500, 0)])], streets=streets)
    assert town.profile.connection.abutting_tolerance_ft == 5.0
    ob = compute_obligations(town)["obligations"]
    assert bool(row(ob, "A")["abuts_sewered_street"])
    assert not bool(row(ob, "B")["abuts_sewered_street"])  # 10 ft gap > 5 ft tolerance
    # the tolerance decides: a 4.9 ft gap abuts, a 5.1 ft gap does not
    assert bool(row(ob, "in")["abuts_sewered_street"])
    assert not bool(row(ob, "out")["abuts_sewered_street"])


def test_main_crossing_a_street_does_not_sewer_it():
    # M1 runs along S1 (y=0); S2 is a cross street at x=1000 that M1 only crosses
    streets = [{"street_id": "S1", "geometry": box(-100, -25, 2000, 25)},
               {"street_id": "S2", "geometry": box(975, -1000, 1025, 1000)}]
    mains = [main("M1", [(0, 0), (1500, 0)])]
    parcels = [{"parcel_id": "on_S2", "geometry": box(1025, 200, 1125, 300)}]
    ob = compute_obligations(make_town(parcels, mains, streets=streets))["obligations"]
    r = row(ob, "on_S2")
    assert r["distance_ft"] == pytest.approx(200.0)
    assert not bool(r["abuts_sewered_street"]) and r["status"] == "not_required"


def test_connected_by_flag_or_lateral():
    parcels = [{"parcel_id": "flag", "geometry": box(0, 30, 100, 130), "connected": True},
               {"parcel_id": "lat", "geometry": box(200, 30, 300, 130)},
               {"parcel_id": "latgeo", "geometry": box(400, 30, 450, 130)},
               {"parcel_id": "none", "geometry": box(460, 30, 490, 130)}]
    laterals = [{"lateral_id": "L1", "parcel_id": "lat", "geometry": LineString([(250, 0),
                                                                                (250, 40)])},
                {"lateral_id": "L2", "geometry": LineString([(420, 0), (420, 40)])}]
    town = make_town(parcels, [main("M1", [(0, 0), (500, 0)])], streets=[STREET],
                     laterals=laterals)
    ob = compute_obligations(town)["obligations"]
    assert row(ob, "flag")["status"] == "connected"
    assert row(ob, "lat")["status"] == "connected" and "L1" in row(ob, "lat")["reason"]
    assert row(ob, "latgeo")["status"] == "connected" and "L2" in row(ob, "latgeo")["reason"]
    assert row(ob, "none")["status"] == "subject_to_notice"


def test_berlin_existing_building_gets_septic_deadline():
    lot, house = _lot_and_house(150.0, 180.0, 50.0)
    base = {"parcels": [{"parcel_id": "P1", "geometry": lot, "septic": True,
                         "land_use": "residential_single",
                         "sewer_available_date": "2012-05-15"}],
            "mains": [main("M1", [(0, 0), (500, 0)])], "streets": [STREET]}
    old = make_town(profile="berlin-nh", buildings=[
        {"building_id": "B1", "parcel_id": "P1", "geometry": house, "built_date": "1950-01-01"}],
        **base)
    r = row(compute_obligations(old)["obligations"], "P1")
    assert r["status"] == "required"
    assert r["septic_deadline"] == pd.Timestamp("2027-05-15")
    assert pd.isna(r["deadline_days"])
    assert "16-51" in r["section"] and "2027-05-15" in r["reason"] and "septic" in r["reason"]
    # built after the sewer became available: newly constructed, 90 days
    new = make_town(profile="berlin-nh", buildings=[
        {"building_id": "B1", "parcel_id": "P1", "geometry": house, "built_date": "2013-01-01"}],
        **base)
    r = row(compute_obligations(new)["obligations"], "P1")
    assert r["status"] == "required" and r["deadline_days"] == 90 and pd.isna(
        r["septic_deadline"])
    # unknown age: review, with the date an existing building would have
    unk = make_town(profile="berlin-nh", buildings=[
        {"building_id": "B1", "parcel_id": "P1", "geometry": house}], **base)
    r = row(compute_obligations(unk)["obligations"], "P1")
    assert r["status"] == "review" and r["septic_deadline"] == pd.Timestamp("2027-05-15")
    assert "cannot be told" in r["reason"]


def test_berlin_availability_falls_back_to_main_install_date():
    lot, house = _lot_and_house(150.0, 180.0, 50.0)
    town = make_town(profile="berlin-nh",
                     parcels=[{"parcel_id": "P1", "geometry": lot,
                               "land_use": "residential_single"}],
                     mains=[main("M1", [(0, 0), (500, 0)], install="2004-02-29")],
                     streets=[STREET],
                     buildings=[{"building_id": "B1", "parcel_id": "P1", "geometry": house,
                                 "built_date": "1990-01-01"}])
    r = row(compute_obligations(town)["obligations"], "P1")
    assert r["sewer_available_date"] == pd.Timestamp("2004-02-29")
    assert r["septic_deadline"] == pd.Timestamp("2019-02-28")


def test_building_measure_without_buildings_layer_is_approximate():
    mains = [main("M1", [(0, 0), (1000, 0)])]
    parcels = [
        # small lot 20..60 ft away: the house is surely within 200 ft
        {"parcel_id": "small", "geometry": box(0, 20, 40, 60)},
        # deep lot from 150 to 400 ft: the house might be beyond 200 ft
        {"parcel_id": "deep", "geometry": box(200, 150, 300, 400)},
        # lot from 250 ft: the house is surely beyond
        {"parcel_id": "far", "geometry": box(400, 250, 500, 300)},
    ]
    town = make_town(parcels, mains, profile="berlin-nh")
    town.layers["parcels"]["sewer_available_date"] = pd.Timestamp("2000-01-01")
    ob = compute_obligations(town, assume_abutting=True)["obligations"]
    assert ob["approximate"].all()
    assert row(ob, "deep")["status"] == "review"
    assert "standing in for the building" in row(ob, "deep")["reason"]
    assert "up to 419.3 ft" in row(ob, "deep")["reason"]  # 150 + diagonal of 100 x 250
    assert pd.isna(row(ob, "deep")["within_distance"])
    assert bool(row(ob, "small")["within_distance"])
    assert row(ob, "small")["status"] == "review"  # no built date: age unknown
    assert row(ob, "far")["status"] == "not_required"


def test_building_measure_uses_nearest_building_and_spatial_parcel():
    lot = box(0, 30, 300, 330)
    bldgs = [{"building_id": "rear", "geometry": box(100, 250, 130, 280)},   # no parcel id
             {"building_id": "front", "parcel_id": "P", "geometry": box(100, 60, 130, 90)},
             {"building_id": "elsewhere", "geometry": box(5000, 5000, 5010, 5010)}]
    town = make_town([{"parcel_id": "P", "geometry": lot},
                      {"parcel_id": "empty", "geometry": box(400, 30, 500, 130)}],
                     [main("M1", [(0, 0), (1000, 0)])], profile="berlin-nh", buildings=bldgs,
                     streets=[STREET])
    ob = compute_obligations(town)["obligations"]
    assert row(ob, "P")["building_id"] == "front"
    assert row(ob, "P")["distance_ft"] == pytest.approx(60.0)
    assert row(ob, "empty")["status"] == "not_required"
    assert "No building on the parcel" in row(ob, "empty")["reason"]


def test_parcel_subset_and_unknown_ids():
    parcels = [{"parcel_id": f"P{i}", "geometry": box(i * 100, 30, i * 100 + 90, 120)}
               for i in range(5)]
    town = make_town(parcels, [main("M1", [(0, 0), (500, 0)])], streets=[STREET])
    ob = compute_obligations(town, parcels=["P3", "P1"])["obligations"]
    assert sorted(ob["parcel_id"]) == ["P1", "P3"]
    with pytest.raises(NotFoundError, match="P9"):
        compute_obligations(town, parcels=["P1", "P9"])


def test_geographic_town_is_refused():
    town = make_town([{"parcel_id": "P", "geometry": box(0, 0, 0.001, 0.001)}],
                     [main("M", [(0, 0), (0.01, 0)])])
    town.crs = CRS.from_epsg(4326)
    for layer_gdf in town.layers.values():
        layer_gdf.set_crs(4326, allow_override=True, inplace=True)
    with pytest.raises(CRSError):
        compute_obligations(town)


def test_no_eligible_mains():
    town = make_town([{"parcel_id": "P", "geometry": box(0, 10, 10, 20)}],
                     [main("S", [(0, 0), (10, 0)], kind="storm")])
    r = row(compute_obligations(town)["obligations"], "P")
    assert r["status"] == "not_required" and pd.isna(r["distance_ft"])
    assert "No eligible" in r["reason"]


# --------------------------------------------------------------------------- brute force


def _brute(parcels: np.ndarray, mains: np.ndarray) -> np.ndarray:
    return shapely.distance(parcels[:, None], mains[None, :]).min(axis=1)


def _random_mains(bounds, n, seed):
    """Sewer-like mains: short straight segments at random places and angles."""
    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = bounds
    cx = rng.uniform(x0, x1, n)
    cy = rng.uniform(y0, y1, n)
    ang = rng.uniform(0, np.pi, n)
    half = rng.uniform(100, 250, n)
    return [LineString([(cx[i] - half[i] * np.cos(ang[i]), cy[i] - half[i] * np.sin(ang[i])),
                        (cx[i] + half[i] * np.cos(ang[i]), cy[i] + half[i] * np.sin(ang[i]))])
            for i in range(n)]


@pytest.fixture(scope="module")
def cambridge(shared_data: Path) -> gpd.GeoDataFrame:
    """Cambridge, MA parcels (optional ../shared/data)."""
    g = gpd.read_file(shared_data / "cambridge_ma_parcels" / "ASSESSING_ParcelsFY2013.topojson")
    assert g.crs is None  # TopoJSON, lon/lat, no CRS tag
    g = g.set_crs("EPSG:4326")
    g = g[g.is_valid & (g.geom_type == "Polygon")].reset_index(drop=True)
    return g


@pytest.mark.slow
def test_brute_force_cambridge(cambridge):
    g = cambridge.to_crs("EPSG:2249")  # Massachusetts Mainland, US survey feet
    mains = _random_mains(g.total_bounds, 150, seed=7)
    town = make_town(
        [{"parcel_id": str(r.ML), "geometry": r.geometry} for r in g.itertuples()],
        [main(f"M{i:03d}", list(m.coords)) for i, m in enumerate(mains)]
        + [main("STORM", [(g.total_bounds[0], g.total_bounds[1]),
                          (g.total_bounds[2], g.total_bounds[3])], kind="storm")],
        crs="EPSG:2249",
    )
    ob = compute_obligations(town, assume_abutting=True)["obligations"]
    assert len(ob) == len(g)
    want = _brute(np.asarray(g.geometry.values), np.asarray(mains, dtype=object))
    want_ft = want * feet_per_unit("EPSG:2249")
    assert np.abs(ob["distance_ft"].to_numpy() - want_ft).max() < 0.01
    within = ob["distance_ft"] <= 300.005
    assert (ob.loc[within, "status"] == "subject_to_notice").all()
    assert (ob.loc[~within, "status"] == "not_required").all()
    assert 0 < within.sum() < len(ob)


def test_lonlat_input_gives_the_same_feet(cambridge, tmp_path):
    """The loader puts lon/lat input in a UTM zone (metres); distances in feet
    must match the same data measured in Massachusetts state plane feet."""
    sub = cambridge.iloc[::40].reset_index(drop=True)
    mains_ll = gpd.GeoSeries(_random_mains(sub.to_crs("EPSG:2249").total_bounds, 40, seed=11),
                             crs="EPSG:2249").to_crs("EPSG:4326")
    out = {}
    for crs in ("EPSG:2249", sub.estimate_utm_crs().to_string()):
        p = sub.to_crs(crs)
        m = mains_ll.to_crs(crs)
        town = make_town([{"parcel_id": str(r.ML), "geometry": r.geometry}
                          for r in p.itertuples()],
                         [main(f"M{i}", list(g.coords)) for i, g in enumerate(m)], crs=crs)
        out[crs] = compute_obligations(town, assume_abutting=True)["obligations"]
    a, b = out.values()
    assert (a["main_id"] == b["main_id"]).mean() > 0.98
    far = a["distance_ft"] > 50  # relative error only means something away from 0
    rel = (a["distance_ft"] - b["distance_ft"]).abs()[far] / a["distance_ft"][far]
    assert rel.max() < 0.005
    assert (a["distance_ft"] - b["distance_ft"]).abs().max() < 2.0


def test_lonlat_files_through_the_loader(cambridge, tmp_path):
    from gisnet import io

    sub = cambridge.iloc[::80].reset_index(drop=True)[["ML", "geometry"]]
    sub = sub.rename(columns={"ML": "PARCEL_ID"})
    mains_sp = gpd.GeoDataFrame(
        {"FACILITYID": [f"M{i}" for i in range(30)], "WATERTYPE": "sanitary"},
        geometry=_random_mains(sub.to_crs("EPSG:2249").total_bounds, 30, seed=5),
        crs="EPSG:2249")
    sub.to_file(tmp_path / "parcels_ll.geojson")
    mains_sp.to_crs("EPSG:4326").to_file(tmp_path / "mains_ll.geojson")
    sub.to_crs("EPSG:2249").to_file(tmp_path / "parcels_sp.gpkg")
    mains_sp.to_file(tmp_path / "mains_sp.gpkg")
    ll = io.load_town(tmp_path, profile="poughkeepsie-fourth-ward",
                      overrides={"parcels": tmp_path / "parcels_ll.geojson",
                                 "mains": tmp_path / "mains_ll.geojson"})
    sp = io.load_town(tmp_path, profile="poughkeepsie-fourth-ward",
                      overrides={"parcels": tmp_path / "parcels_sp.gpkg",
                                 "mains": tmp_path / "mains_sp.gpkg"})
    assert ll.crs.is_projected and ll.crs != sp.crs
    a = compute_obligations(ll, assume_abutting=True)["obligations"].set_index("parcel_id")
    b = compute_obligations(sp, assume_abutting=True)["obligations"].set_index("parcel_id")
    b = b.loc[a.index]
    far = a["distance_ft"] > 50
    rel = (a["distance_ft"] - b["distance_ft"]).abs()[far] / b["distance_ft"][far]
    assert rel.max() < 0.005


@pytest.mark.slow
def test_brute_force_sample_town(sample_dir):
    from gisnet import io

    town = io.load_town(sample_dir)
    ob = compute_obligations(town)["obligations"]
    mains = town.layers["mains"]
    elig = mains[eligible_mask(mains, town.profile)]
    parcels = town.layers["parcels"]
    if town.profile.connection.measure == "property_line" or "buildings" not in town.layers:
        src = np.asarray(parcels.geometry.values)
        want = _brute(src, np.asarray(elig.geometry.values)) * town.ft_per_unit
        got = ob.set_index("parcel_id").loc[parcels["parcel_id"], "distance_ft"].to_numpy()
        assert np.nanmax(np.abs(got - want)) < 0.01
    # statuses only come from eligible mains
    assert set(ob["main_id"].dropna()) <= set(elig["main_id"])


# --------------------------------------------------------------------------- zone, frontage


def test_connection_zone_area():
    town = make_town([{"parcel_id": "P", "geometry": box(0, 0, 1, 1)}],
                     [main("M1", [(0, 0), (1000, 0)]),
                      main("S", [(0, 5000), (1000, 5000)], kind="storm")])
    z = connection_zone(town)
    assert len(z) == 1 and z.iloc[0]["distance_ft"] == 300.0
    want = 1000 * 600 + math.pi * 300**2  # stadium around the one eligible main
    assert z.iloc[0]["area_acres"] * 43_560 == pytest.approx(want, rel=2e-3)
    assert z.geometry.iloc[0].contains(Point(500, 299))
    assert not z.geometry.iloc[0].intersects(Point(500, 5000))


def _block_town(profile="berlin-nh", streets=True):
    # street y in [-25, 25]; sewer from x=0 to x=600; lots north and south
    parcels = [
        {"parcel_id": "N1", "geometry": box(0, 25, 100, 150)},
        {"parcel_id": "N2", "geometry": box(100, 25, 250, 150)},
        {"parcel_id": "N3", "geometry": box(550, 25, 700, 150)},  # 50 ft along the sewer
        {"parcel_id": "S1", "geometry": box(0, -150, 300, -25)},
        {"parcel_id": "back", "geometry": box(0, 150, 100, 250)},  # behind N1
    ]
    mains = [main("M1", [(0, 0), (600, 0)]),
             main("ST", [(0, 10), (600, 10)], kind="storm")]
    st = [{"street_id": "S", "geometry": box(-200, -25, 1000, 25), "width_ft": 50.0}]
    return make_town(parcels, mains, streets=st if streets else None, profile=profile)


def test_frontage_along_sewered_street():
    f = frontage(_block_town()).set_index("parcel_id")
    assert f.loc["N1", "frontage_ft"] == pytest.approx(100.0)
    assert f.loc["N2", "frontage_ft"] == pytest.approx(150.0)
    assert f.loc["N3", "frontage_ft"] == pytest.approx(50.0)
    assert f.loc["S1", "frontage_ft"] == pytest.approx(300.0)
    assert "back" not in f.index
    assert not f["approximate"].any()
    assert (f["mains"] == "M1").all()


def test_frontage_shares_sum_to_cost():
    town = _block_town()
    s = frontage_shares(town, "M1", 250_000).set_index("parcel_id")
    total = 100 + 150 + 50 + 300
    assert s["frontage_ft"].sum() == pytest.approx(total)
    assert s.loc["S1", "share_usd"] == pytest.approx(250_000 * 300 / total)
    assert s["share_usd"].sum() == pytest.approx(250_000)
    assert s["section"].iloc[0].startswith("ch. 16")
    with pytest.raises(NotFoundError):
        frontage_shares(town, "NOPE", 1.0)
    with pytest.raises(ConfigError):
        frontage_shares(town, "M1", -5)


def test_frontage_without_streets_is_approximate():
    s = frontage_shares(_block_town(streets=False), "M1", 600.0).set_index("parcel_id")
    assert s["approximate"].all()
    assert s.loc["N1", "frontage_ft"] == pytest.approx(100.0)
    assert s.loc["S1", "frontage_ft"] == pytest.approx(300.0)
    assert "back" not in s.index


def test_obligation_columns_and_types():
    res = compute_obligations(_block_town(profile="poughkeepsie-fourth-ward"))
    ob = res["obligations"]
    for c in ("parcel_id", "building_id", "main_id", "distance_ft", "within_distance",
              "abuts_sewered_street", "status", "deadline_days", "septic_deadline", "measure",
              "section", "reason", "approximate", "nearest_x", "nearest_y"):
        assert c in ob.columns
    # the four lots on the sewered street are 25 ft from M1 (street half-width), with
    # no notice served: subject to notice; "back" is 150 ft away and abuts no street
    assert ob.set_index("parcel_id")["status"].to_dict() == {
        "N1": "subject_to_notice", "N2": "subject_to_notice", "N3": "subject_to_notice",
        "S1": "subject_to_notice", "back": "not_required"}
    assert ob.crs == CRS.from_user_input(FT_CRS)
    assert (res["obligation_evidence"].geom_type == "LineString").all()
    assert ob["reason"].notna().all()
    assert isinstance(ob.geometry.iloc[0], Polygon)


# --------------------------------------------------------------------------- command line


@pytest.fixture
def town_files(tmp_path):
    """The block town written as GeoPackages, loaded through --ROLE overrides."""
    town = _block_town(profile="poughkeepsie-fourth-ward")
    paths = {}
    for role, gdf in town.layers.items():
        keep = [c for c in gdf.columns if c not in ("public", "active")]
        p = tmp_path / f"{role}.gpkg"
        gdf[keep].to_file(p)
        paths[role] = p
    return tmp_path, paths


def _cli(tmp_path, paths, *extra):
    from gisnet.cli import main as cli_main

    args = ["obligations", "--layers", str(tmp_path), "--out", str(tmp_path / "out"), "-q",
            "--profile", "poughkeepsie-fourth-ward"]
    for role, p in paths.items():
        args += [f"--{role}", str(p)]
    return cli_main(args + list(extra))


def test_cli_writes_the_four_layers(town_files):
    import pyogrio

    tmp_path, paths = town_files
    assert _cli(tmp_path, paths) == 0
    gpkg = tmp_path / "out" / "gisnet-results.gpkg"
    names = {n for n, _ in pyogrio.list_layers(gpkg)}
    assert {"obligations", "obligation_evidence", "connection_zone"} <= names
    assert "frontage" not in names  # Poughkeepsie charges nothing by front footage
    ob = pyogrio.read_dataframe(gpkg, layer="obligations")
    assert set(ob["parcel_id"]) == {"N1", "N2", "N3", "S1", "back"}
    assert (ob.set_index("parcel_id").loc[["N1", "S1"], "status"] == "subject_to_notice").all()


def test_cli_parcel_id_list(town_files, capsys):
    import pyogrio

    tmp_path, paths = town_files
    ids = tmp_path / "ids.csv"
    ids.write_text("parcel_id,note\nN2,x\nback,y\n")
    assert _cli(tmp_path, paths, "--parcel-ids", str(ids)) == 0
    ob = pyogrio.read_dataframe(tmp_path / "out" / "gisnet-results.gpkg", layer="obligations")
    assert sorted(ob["parcel_id"]) == ["N2", "back"]
    # --parcels with an id CSV (no geometry column) means the same
    paths2 = dict(paths)
    paths2["parcels"] = ids
    from gisnet.cli import main as cli_main

    args = ["obligations", "--layers", str(tmp_path), "--out", str(tmp_path / "out2"), "-q",
            "--parcels", str(ids), "--profile", "poughkeepsie-fourth-ward"]
    for role, p in paths.items():
        if role != "parcels":
            args += [f"--{role}", str(p)]
    # the parcels layer must come from somewhere: without a town file this is an error
    assert cli_main(args) == 2
    assert "parcels" in capsys.readouterr().err


def test_cli_one_parcel_printed(town_files, capsys):
    tmp_path, paths = town_files
    from gisnet.cli import main as cli_main

    args = ["obligations", "--layers", str(tmp_path), "--parcel", "S1"]
    for role, p in paths.items():
        args += [f"--{role}", str(p)]
    args += ["--profile", "poughkeepsie-fourth-ward"]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert "parcel            S1" in out
    assert "status            subject_to_notice" in out
    assert "nearest main      M1" in out
    assert "distance          25.00 ft (limit 300 ft" in out
    assert "§ 168-22.2G" in out and "by official notice, due 30 days after it" in out
    assert not (tmp_path / "out").exists()
    assert cli_main([*args[:3], "--parcel", "NOPE", *args[5:]]) == 2
    assert "NOPE" in capsys.readouterr().err


def test_cli_frontage_shares(town_files, capsys):
    tmp_path, paths = town_files
    from gisnet.cli import main as cli_main

    args = ["frontage", "--layers", str(tmp_path), "--profile", "berlin-nh", "--main", "M1",
            "--cost", "250000", "--csv", str(tmp_path / "shares.csv")]
    for role, p in paths.items():
        args += [f"--{role}", str(p)]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert "$250,000.00 shared by 4 parcels over 600.0 ft" in out
    shares = pd.read_csv(tmp_path / "shares.csv")
    assert shares["share_usd"].sum() == pytest.approx(250_000)
    assert cli_main(args[:7] + args[9:]) == 2  # --cost missing


@pytest.mark.parametrize("profile", ["poughkeepsie-fourth-ward", "berlin-nh"])
def test_brute_force_synthetic_town(profile):
    """A street-grid town with buildings, streets, storm mains: every measured
    distance equals the brute-force minimum over all eligible mains."""
    from gisnet.testing import synthetic

    layers = synthetic.make_town(1500, seed=4, irregular=True)
    crs = layers["parcels"].crs
    mains = layers["mains"]
    mains.loc[mains.index[::7], "kind"] = "storm"      # some mains do not count
    mains.loc[mains.index[3::11], "owner"] = "private"
    town = towns.make_town(layers, crs=crs, profile=profile, name="syn")
    layers, mains = town.layers, town.layers["mains"]
    assert (~mains["public"]).sum() == len(mains.index[3::11])  # the loader's flag
    ob = compute_obligations(town)["obligations"]
    elig = mains[(mains["kind"] == "sanitary") & mains["public"] & mains["active"]]
    tg = np.asarray(elig.geometry.values)
    if profile == "berlin-nh":
        b = layers["buildings"].set_index("building_id")
        has = ob["building_id"].notna().to_numpy()
        src = np.asarray(b.loc[ob.loc[has, "building_id"]].geometry.values)
    else:
        has = np.ones(len(ob), dtype=bool)
        src = np.asarray(layers["parcels"].geometry.values)
    want = _brute(src, tg) * town.ft_per_unit
    assert np.abs(ob.loc[has, "distance_ft"].to_numpy() - want).max() < 0.01
    assert set(ob["main_id"].dropna()) <= set(elig["main_id"])
    assert (ob.loc[ob["status"] == "required", "distance_ft"] <= 300.005).all()


def test_expand_pairs_is_the_street_join():
    from gisnet.obligations.spatial import expand_pairs as _expand_pairs

    rng = np.random.default_rng(2)
    p, s = rng.integers(0, 50, 400), rng.integers(0, 30, 400)
    hs, hm = rng.integers(0, 30, 90), rng.integers(0, 70, 90)
    pp, mm = _expand_pairs(p, s, hs, hm, 30)
    want = pd.DataFrame({"p": p, "s": s}).merge(pd.DataFrame({"s": hs, "m": hm}), on="s")
    got = sorted(zip(pp.tolist(), mm.tolist(), strict=True))
    assert got == sorted(zip(want["p"].tolist(), want["m"].tolist(), strict=True))


def test_building_rows_out_of_parcel_order_keep_their_evidence():
    # one building per parcel, listed in reverse order of the parcels
    parcels = [{"parcel_id": f"P{i}", "geometry": box(i * 100, 30, i * 100 + 90, 230)}
               for i in range(4)]
    bldgs = [{"building_id": f"B{i}", "parcel_id": f"P{i}",
              "geometry": box(i * 100 + 10, 40 + 30 * i, i * 100 + 40, 70 + 30 * i)}
             for i in reversed(range(4))]
    town = make_town(parcels, [main("M1", [(0, 0), (500, 0)])], profile="berlin-nh",
                     buildings=bldgs, streets=[STREET])
    res = compute_obligations(town)
    ob = res["obligations"].set_index("parcel_id")
    for i in range(4):
        r = ob.loc[f"P{i}"]
        assert r["building_id"] == f"B{i}"
        assert r["distance_ft"] == pytest.approx(40 + 30 * i)
        # the nearest point is on the building's bottom edge (any x along it)
        assert r["from_y"] == pytest.approx(40 + 30 * i)
        assert i * 100 + 10 <= r["from_x"] <= i * 100 + 40
    ev = res["obligation_evidence"].set_index("parcel_id")
    for i in range(4):
        assert ev.loc[f"P{i}", "geometry"].length == pytest.approx(40 + 30 * i)


def test_vacant_lot_without_building_is_not_required_under_poughkeepsie():
    """§ 168-22.2G binds property used for human occupancy, employment or
    recreation: a vacant lot with no building is not required to connect; a lot
    with a building (whatever its recorded land use) and an unbuilt lot in
    another use (a park: recreation) are."""
    lots = {pid: box(x, 25, x + 100, 125) for pid, x in (("V", 0), ("VB", 150), ("PK", 300))}
    town = make_town(
        parcels=[{"parcel_id": "V", "land_use": "vacant", "geometry": lots["V"]},
                 {"parcel_id": "VB", "land_use": "vacant", "geometry": lots["VB"]},
                 {"parcel_id": "PK", "land_use": "recreation", "geometry": lots["PK"]}],
        mains=[main("M1", [(0, 0), (500, 0)])],
        streets=[STREET],
        buildings=[{"building_id": "B9", "parcel_id": "VB",
                    "geometry": box(170, 60, 200, 90)}],
    )
    ob = compute_obligations(town)["obligations"]
    v, vb, pk = row(ob, "V"), row(ob, "VB"), row(ob, "PK")
    assert v["status"] == "not_required", v["reason"]
    assert "vacant" in v["reason"] and "§ 168-22.2G" in v["reason"]
    assert v["distance_ft"] == pytest.approx(25.0)
    assert vb["status"] == "subject_to_notice" and vb["building_id"] == "B9", vb["reason"]
    assert pk["status"] == "subject_to_notice", pk["reason"]


def test_main_through_a_lot_that_abuts_no_sewered_street_is_review():
    """A main crossing the lot (an easement) while the lot's own street has no
    sewer: whether the easement is a right-of-way is a person's call."""
    lot = box(0, 100, 200, 300)  # street S1 (y -25..25) is 75 ft away: not abutting
    town = make_town(
        parcels=[{"parcel_id": "E", "land_use": "residential", "geometry": lot},
                 {"parcel_id": "N", "land_use": "residential",
                  "geometry": box(300, 100, 500, 300)}],
        mains=[main("M1", [(100, 0), (100, 400)])],  # crosses E, not N
        streets=[STREET],
    )
    ob = compute_obligations(town)["obligations"]
    e, n = row(ob, "E"), row(ob, "N")
    assert e["distance_ft"] == 0.0
    assert e["status"] == "review" and "easement" in e["reason"], e["reason"]
    assert n["status"] == "not_required", n["reason"]  # 200 ft away, abuts no sewer


def test_berlin_occupied_lot_without_footprint_is_review_vacant_is_not():
    """Berlin measures from the building: a commercial lot with no footprint in the
    buildings layer is checked by a person; a vacant lot with none is not required."""
    town = make_town(
        parcels=[{"parcel_id": "C", "land_use": "commercial", "geometry": box(0, 25, 100, 125)},
                 {"parcel_id": "V", "land_use": "vacant", "geometry": box(150, 25, 250, 125)}],
        mains=[main("M1", [(0, 0), (500, 0)])],
        streets=[STREET],
        buildings=[{"building_id": "B1", "parcel_id": "X", "geometry": box(900, 900, 910, 910)}],
        profile="berlin-nh",
    )
    ob = compute_obligations(town)["obligations"]
    c, v = row(ob, "C"), row(ob, "V")
    assert c["status"] == "review" and "buildings layer" in c["reason"], c["reason"]
    assert v["status"] == "not_required" and "vacant" in v["reason"], v["reason"]


# --------------------------------------------------------------------------- unknown kind


@pytest.mark.slow
@pytest.mark.parametrize("unknown", [None, "unknown"])
def test_mains_of_unknown_kind_count_as_sanitary(sample_dir, unknown):
    """A mains layer without kinds: every main is sanitary for the obligations, as it is
    for the graph (its ``eligible`` edges), and the assumption is reported once."""
    from gisnet.graph import build_sewer_graph, graph_to_gdfs, quality_gdf
    from gisnet.io import load_town

    town = load_town(sample_dir)
    mains = town.layers["mains"]
    assert mains["kind"].notna().all() and (mains["kind"] != "unknown").all()
    sanitary = load_town(sample_dir)
    sanitary.layers["mains"] = mains.assign(kind="sanitary")
    town.layers["mains"] = mains.assign(kind=unknown)
    got = compute_obligations(town)
    want = compute_obligations(sanitary)
    for name in ("obligations", "obligation_evidence"):
        pd.testing.assert_frame_equal(got[name], want[name])
    ob = got["obligations"]
    assert ob["main_id"].notna().any() and (ob["status"] == "subject_to_notice").any()
    assert not ob["reason"].str.startswith("No eligible").any()
    # the same mains as the graph's eligible edges
    G = build_sewer_graph(town)
    _, edges = graph_to_gdfs(G)
    elig_graph = set(edges.loc[edges["eligible"].astype(bool), "main_id"])
    assert set(ob["main_id"].dropna()) <= elig_graph
    assert set(mains["main_id"][eligible_mask(town.layers["mains"], town.profile)]) == elig_graph
    # the assumption is reported exactly once, by the graph
    q = quality_gdf(G, extra=town.report)
    assert (q["kind"] == "kind_assumed").sum() == 1
    pd.testing.assert_frame_equal(connection_zone(town).drop(columns="geometry"),
                                  connection_zone(sanitary).drop(columns="geometry"))


def test_no_kind_column_counts_as_sanitary():
    parcels = [{"parcel_id": "P", "geometry": box(0, 10, 10, 20)}]
    town = make_town(parcels, [main("M", [(0, 0), (10, 0)])])
    town.layers["mains"] = town.layers["mains"].drop(columns="kind")
    r = row(compute_obligations(town, assume_abutting=True)["obligations"], "P")
    assert r["status"] == "subject_to_notice" and r["main_id"] == "M", r["reason"]


# --------------------------------------------------------------------------- rule table


def test_rule_table_reads_as_the_law():
    from gisnet.obligations import RULES, STATUSES

    names = [r.name for r in RULES]
    assert len(set(names)) == len(names)
    assert names[0] == "connected" and names[-1] == "within_and_abutting"
    for r in RULES:
        assert r.status in STATUSES
        assert r.cites in ("section", "septic_section", "septic_notice_section")
        assert len(r.law) > 20, r.name
    # the order is the ordinance's: exemptions before obligations
    assert names.index("beyond_distance") < names.index("not_abutting") \
        < names.index("new_building")
    assert [r.name for r in RULES if r.status == "required"] == [
        "new_building", "resident_health_hazard", "existing_building_dated", "notice_served",
        "notice_grounds", "within_and_abutting"]
    # notice before its grounds, both before "subject to notice"
    assert names.index("notice_served") < names.index("notice_grounds") \
        < names.index("subject_to_notice") < names.index("within_and_abutting")


def test_decide_first_match_wins():
    from gisnet.obligations import Ordinance, ParcelFacts, decide

    con = load_profile("poughkeepsie-fourth-ward").connection
    n = 4
    f = ParcelFacts(
        connected=np.array([True, False, False, False]),
        connected_by=np.array(["Already connected: x.", None, None, None], dtype=object),
        measured=np.array([True, True, True, True]), eligible_mains=1,
        main_ids=np.array(["M1"], dtype=object), main=np.zeros(n, dtype=np.int64),
        distance_ft=np.array([0.0, 400.0, 100.0, 100.0]), approximate=np.zeros(n, bool),
        upper_ft=np.array([0.0, 400.0, 100.0, 100.0]),
        within=np.array([True, False, True, True]), uncertain=np.zeros(n, bool),
        abutting_tested=True, assume_abutting=False,
        abuts=np.array([False, False, False, True]),
        abutting_main=np.array([-1, -1, -1, 0]),
        abutting_distance_ft=np.array([np.nan, np.nan, np.nan, 100.0]),
        no_building=np.zeros(n, bool), land_use=np.array([None] * n, dtype=object),
        is_new=np.zeros(n, bool), age_known=np.zeros(n, bool),
        sewer_available=np.full(n, np.datetime64("NaT", "ms")), septic=np.zeros(n, bool),
    )
    d = decide(f, Ordinance.of(con))
    assert d.rule.tolist() == ["connected", "beyond_distance", "not_abutting",
                               "subject_to_notice"]
    assert d.status.tolist() == ["connected", "not_required", "not_required",
                                 "subject_to_notice"]
    assert d.reason[1] == ("Nearest eligible main M1 is 400.0 ft from the property line, "
                           "beyond the 300 ft of § 168-22.2G.")
    assert d.deadline_days.tolist() == [pd.NA, pd.NA, pd.NA, 30]
    assert pd.isna(d.deadline_date).all()


def test_analyse_obligations_is_typed():
    from gisnet.obligations import analyse_obligations
    from gisnet.results import ObligationsResult

    parcels = [{"parcel_id": "P1", "geometry": box(0, 30, 100, 130)},
               {"parcel_id": "P2", "geometry": box(0, 1000, 100, 1100)}]
    town = make_town(parcels, [main("M1", [(-100, 0), (500, 0)])], streets=[STREET])
    res = analyse_obligations(town)
    assert isinstance(res, ObligationsResult)
    # Poughkeepsie's article charges nothing by front footage: no frontage unless asked
    assert set(res.layers()) == {"obligations", "obligation_evidence", "connection_zone"}
    assert res.totals == {"not_required": 1, "subject_to_notice": 1}
    asked = analyse_obligations(town, frontage=True)
    assert asked.frontage["parcel_id"].tolist() == ["P1"]
    pd.testing.assert_frame_equal(res.obligations, compute_obligations(town)["obligations"])
    bare = analyse_obligations(town, parcels=["P1"], zone=False, frontage=False)
    assert bare.connection_zone is None and bare.frontage is None
    assert set(bare.layers()) == {"obligations", "obligation_evidence"}
    assert bare.totals == {"subject_to_notice": 1}


def test_frontage_is_measured_where_the_ordinance_charges_by_front_footage():
    """Berlin ch. 16: abutting owners "shall pay their pro rata share of such line or
    lines before tapping therein, based on street front footage": a Berlin run
    measures every parcel's frontage; a Poughkeepsie run (no such charge) says why
    it has none."""
    from gisnet.obligations import analyse_obligations, frontage_reason, has_frontage_rule
    from gisnet.pipeline import analyse

    parcels = [{"parcel_id": "P1", "geometry": box(0, 30, 100, 130)},
               {"parcel_id": "P2", "geometry": box(0, 1000, 100, 1100)}]
    mains = [main("M1", [(-100, 0), (500, 0)])]
    berlin = make_town(parcels, mains, streets=[STREET], profile="berlin-nh")
    assert has_frontage_rule(berlin)
    f = analyse_obligations(berlin).frontage
    assert f["parcel_id"].tolist() == ["P1"]
    assert f["frontage_ft"].tolist() == pytest.approx([100.0])  # the lot's 100 ft side
    assert f["section"].iloc[0] == berlin.profile.connection.frontage_section
    assert not [u for u in analyse(berlin, only={"obligations"}).unavailable]

    pok = make_town(parcels, mains, streets=[STREET])
    assert not has_frontage_rule(pok)
    res = analyse(pok, only={"obligations"})
    assert res.obligations.frontage is None
    assert [(u.analysis, u.reason) for u in res.unavailable] == \
        [("frontage", frontage_reason(pok))]
    assert "poughkeepsie-fourth-ward has no frontage rule" in frontage_reason(pok)


def test_tiled_union_covers_the_same_area_as_one_union() -> None:
    """The connection zone's tiled union (many small tiles forced) equals the union
    of every buffer at once: same area to floating tolerance, nothing left over."""
    import numpy as np
    import shapely

    from gisnet.io import load_town
    from gisnet.obligations.measuring import eligible_mask
    from gisnet.obligations.zone import tiled_union
    from gisnet.townfile import default_layers_dir

    town = load_town(default_layers_dir())
    mains = town.layers["mains"]
    g = np.asarray(mains.geometry.values[eligible_mask(mains, town.profile)], dtype=object)
    b = shapely.buffer(g, 300 / town.ft_per_unit, quad_segs=16)
    one = shapely.union_all(b)
    for per_tile in (20, 100):
        tiled = tiled_union(b, per_tile=per_tile, threads=2)
        assert shapely.is_valid(tiled)
        assert abs(tiled.area - one.area) <= 1e-9 * one.area
        assert shapely.symmetric_difference(tiled, one).area <= 1e-6 * one.area
        # buffered tile by tile (grouped by the mains' centroids): the same area
        by_tile = tiled_union(g, per_tile=per_tile, threads=2,
                              each=lambda x: shapely.buffer(x, 300 / town.ft_per_unit,
                                                            quad_segs=16))
        assert shapely.is_valid(by_tile)
        assert abs(by_tile.area - one.area) <= 1e-9 * one.area
        assert shapely.symmetric_difference(by_tile, one).area <= 1e-6 * one.area
    assert tiled_union(b[:0]).is_empty
    assert tiled_union(g[:0], each=shapely.envelope).is_empty


def _street_grid(blocks: int = 24, side: float = 150.0):
    """Mains along a grid of streets ``side`` apart, two-point lines, with a park of
    missing blocks in the middle (a hole in the zone), an isolated main, a
    manhole-like point and a two-part main."""
    import numpy as np
    import shapely

    lines = []
    for i in range(blocks + 1):
        for j in range(blocks):
            if not (8 <= i <= 16 and 8 <= j < 16):  # the park
                lines.append(shapely.LineString([(i * side, j * side),
                                                 (i * side, (j + 1) * side)]))
                lines.append(shapely.LineString([(j * side, i * side),
                                                 ((j + 1) * side, i * side)]))
    far = blocks * side + 2_000
    lines.append(shapely.LineString([(far, 0), (far + 90, 40), (far + 200, 0)]))
    lines.append(shapely.Point(far, far))
    lines.append(shapely.MultiLineString([[(-900, 0), (-900, 500)],
                                          [(-1500, 0), (-1500, 500)]]))
    return np.asarray(lines, dtype=object)


def test_buffer_union_leaves_out_only_buffers_inside_its_squares() -> None:
    """A big town's zone: the grid squares kept a twentieth of the distance inside
    the union of every buffer (shapely's own union, the reference), every buffer
    left out wholly inside the squares, and the zone the same polygon as that
    union, coordinates agreeing to floating-point noise."""
    import shapely

    from gisnet.obligations.zone import buffer_union, interior_squares, tiled_union

    g = _street_grid()
    d = 300.0
    ref = shapely.union_all(shapely.buffer(g, d, quad_segs=16))
    squares, kept = interior_squares(g, d)
    assert 0 < kept.sum() < len(g) / 2  # most of the grid's buffers left out
    assert kept[-3:].all()  # the lone main, the point and the two-part main
    assert shapely.contains(ref, squares)
    assert shapely.distance(shapely.boundary(ref), squares) >= d / 20
    left_out = shapely.buffer(g[~kept], d, quad_segs=16)
    assert shapely.covers(squares, left_out).all()
    # the squares' path is taken when there are more than four tiles' worth
    zone = buffer_union(g, d, per_tile=len(g) // 9)
    assert shapely.is_valid(zone)
    assert abs(zone.area - ref.area) <= 1e-12 * ref.area
    assert shapely.equals_exact(shapely.normalize(zone), shapely.normalize(ref), 1e-6)
    assert shapely.get_num_interior_rings(shapely.get_parts(zone)).sum() == 1  # the park
    # few geometries: the tiled union of every buffer, as before (the same bytes)
    small = buffer_union(g, d)
    assert small.wkb == tiled_union(g, each=lambda x: shapely.buffer(x, d, quad_segs=16)).wkb


def test_interior_squares_refuse_what_they_cannot_measure(monkeypatch) -> None:
    """Polygons, nothing but empties, or a grid too big: no squares (every buffer
    is unioned, the same area)."""
    import numpy as np
    import shapely

    import gisnet.obligations.zone as zone

    g = _street_grid(blocks=6)
    assert zone.interior_squares(np.asarray([shapely.box(0, 0, 1, 1)], dtype=object),
                                 300.0) is None
    assert zone.interior_squares(np.asarray([shapely.LineString()], dtype=object),
                                 300.0) is None
    monkeypatch.setattr(zone, "MAX_CELLS", 100)
    assert zone.interior_squares(g, 300.0) is None
    monkeypatch.setattr(zone, "MAX_CELLS", 8_000_000)
    assert zone.interior_squares(g, 300.0) is not None
    many = zone.buffer_union(g, 300.0, per_tile=4)
    assert abs(many.area - shapely.union_all(shapely.buffer(g, 300.0, quad_segs=16)).area) \
        <= 1e-12 * many.area
