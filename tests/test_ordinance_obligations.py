"""Answers a town can act on: each case from a hand-made town, quoting the ordinance.

Case 3, "required must mean required" (Poughkeepsie § 168-22.2G, § 168-22.3C;
Berlin sec. 16-50 and the existing-plumbing paragraph after sec. 16-51) and
case 4, "one building, one building sewer" (Poughkeepsie § 168-22.4D).

Coordinates are in international feet (EPSG:2222: 1 unit = 1 ft), so every
expected distance is read off the drawing.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from pyproj import CRS
from shapely.geometry import LineString, box

from gisnet.io import load_town
from gisnet.obligations import compute_obligations
from gisnet.profile import load_profile
from gisnet.report import Report
from gisnet.schema import column_names
from gisnet.town import Town
from gisnet.units import feet_per_unit

FT_CRS = "EPSG:2222"
POUGH = "poughkeepsie-fourth-ward"
BERLIN = "berlin-nh"
# a 50 ft street along the x axis, its sewer on the centreline
STREET = {"street_id": "S1", "geometry": box(-200, -25, 2000, 25), "width_ft": 50.0}
MAIN = {"main_id": "M1", "geometry": LineString([(-200, 0), (2000, 0)]), "kind": "sanitary",
        "owner": "public", "status": "active", "install_date": "2000-01-01"}


def _layer(role: str, rows: list[dict]) -> gpd.GeoDataFrame:
    cols = column_names(role)
    df = pd.DataFrame({c: [r.get(c) for r in rows] for c in cols})
    for c in ("built_date", "sewer_available_date", "install_date", "notice_date"):
        if c in df.columns:
            df[c] = pd.to_datetime(df[c]).astype("datetime64[ms]")
    for c in ("connected", "septic", "health_hazard", "highway_program"):
        if c in df.columns:
            df[c] = df[c].astype("boolean")
    if role == "mains":
        df["public"] = df["owner"] != "private"
        df["active"] = df["status"].isna() | (df["status"] == "active")
    return gpd.GeoDataFrame(df, geometry=[r["geometry"] for r in rows], crs=FT_CRS)


def _town(parcels, *, profile=POUGH, mains=(MAIN,), **more) -> Town:
    layers = {"parcels": _layer("parcels", parcels), "mains": _layer("mains", list(mains))}
    for role, rows in more.items():
        layers[role] = _layer(role, rows)
    c = CRS.from_user_input(FT_CRS)
    return Town(name="ordinance", crs=c, ft_per_unit=feet_per_unit(c), layers=layers,
                profile=load_profile(profile), report=Report())


def _row(ob: pd.DataFrame, pid: str) -> pd.Series:
    return ob.set_index("parcel_id").loc[pid]


def _lot(i: int, **kw) -> dict:
    """Lot ``i``: 100 ft wide, 25 ft from the sewer (it abuts the street)."""
    return {"parcel_id": f"P{i}", "geometry": box(200 * i, 25, 200 * i + 100, 125),
            "land_use": "residential_single", **kw}


# --------------------------------------------------------------------------- case 3


def test_poughkeepsie_connection_is_due_30_days_after_notice_given_only_on_its_grounds():
    """§ 168-22.2G: "... to connect such facilities directly with the proper public
    sewer in accordance with the provisions of this Article within 30 days after the
    date of official notice to do so, provided that
    said public sewer is within 300 feet of the property line. Such notice shall be
    given only when it shall be necessary to eliminate a public health hazard or to
    promote a highway improvement program."
    """
    parcels = [_lot(0, septic=True),                          # nothing recorded
               _lot(1, septic=True, notice_date="2026-03-02"),
               _lot(2, septic=True, health_hazard=True),
               _lot(3, highway_program=True),
               _lot(4),                                       # in the highway program area
               _lot(5, notice_date="2026-12-15", health_hazard=True),
               _lot(6, septic=True, highway_program=True),
               _lot(7, septic=True, highway_program=True, notice_date="2026-05-01")]
    program = [{"program_id": "RT9", "geometry": box(790, 0, 910, 200)}]
    town = _town(parcels, streets=[STREET], highway_program=program)
    ob = compute_obligations(town)["obligations"]
    quiet = _row(ob, "P0")
    assert quiet["distance_ft"] == pytest.approx(25.0)
    assert quiet["status"] == "subject_to_notice", quiet["reason"]
    assert quiet["deadline_days"] == 30 and pd.isna(quiet["deadline_date"])
    assert "no notice, health hazard or highway improvement program" in quiet["reason"]
    # served, but on no ground recorded ("Such notice shall be given only when ..."): a
    # person checks the notice before it is enforced; no order rests on it
    noticed = _row(ob, "P1")
    assert noticed["status"] == "review" and pd.isna(noticed["notice_ground"])
    assert "2026-03-02" in noticed["reason"] and "no ground" in noticed["reason"]
    assert "private system (§ 168-22.3C)" in noticed["reason"]
    hazard = _row(ob, "P2")
    assert hazard["status"] == "required" and hazard["deadline_days"] == 30
    assert pd.isna(hazard["deadline_date"]), "no notice served: the 30 days have not begun"
    assert "public health hazard is recorded" in hazard["reason"]
    assert "official notice must be served" in hazard["reason"]
    for pid in ("P3", "P4"):  # flag, or a lot inside the program's area
        r = _row(ob, pid)
        assert bool(r["highway_program"]) and r["status"] == "required", (pid, r["reason"])
        assert "highway improvement program" in r["reason"] and pd.isna(r["deadline_date"])
    year_end = _row(ob, "P5")  # 2026-12-15 + 30 days = 2027-01-14
    assert year_end["status"] == "required" and year_end["notice_ground"] == "health_hazard"
    assert year_end["deadline_date"] == pd.Timestamp("2027-01-14")
    assert "2026-12-15" in year_end["reason"] and "2027-01-14" in year_end["reason"]
    # § 168-22.3C: "At such times as a public sewer system becomes available to a
    # property served by a private sewage disposal system ... Such notice shall be given
    # only when it shall be necessary to eliminate a public health hazard."
    septic_road = _row(ob, "P6")
    assert septic_road["status"] == "subject_to_notice", septic_road["reason"]
    assert septic_road["section"] == "§ 168-22.3C" and pd.isna(septic_road["deadline_date"])
    assert "private system" in septic_road["reason"]
    assert (ob.drop(index=ob.index[ob["parcel_id"].isin(["P6", "P7"])])["section"]
            == "§ 168-22.2G").all()
    # a notice already served on a ground § 168-22.3C excludes (a highway program, to a
    # property on a private system) is flagged with that clause, not shown as an order
    excluded = _row(ob, "P7")
    assert excluded["status"] == "review" and excluded["section"] == "§ 168-22.3C"
    assert "only ground recorded is a highway improvement program" in excluded["reason"]
    # before: every one of these lots was "required"; now only those with one of the
    # grounds of notice recorded are
    assert ob["status"].value_counts().to_dict() == {"required": 4, "subject_to_notice": 2,
                                                     "review": 2}
    assert dict(zip(ob["parcel_id"], ob["notice_ground"], strict=True)) == {
        "P0": None, "P1": None, "P2": "health_hazard", "P3": "highway_program",
        "P4": "highway_program", "P5": "health_hazard", "P6": None, "P7": None}


def test_berlin_highway_program_is_no_ground_and_new_buildings_date_from_notice():
    """Berlin sec. 16-50: "... shall be connected ... within ninety (90) days after the
    date of official notice to do so"; Berlin puts no condition on the notice, and a
    highway program is no ground of its own there."""
    house = box(20, 50, 80, 100)  # 50 ft from the sewer
    parcels = [{"parcel_id": "N", "geometry": box(0, 25, 100, 125), "highway_program": True,
                "notice_date": "2026-01-10", "sewer_available_date": "2010-01-01"}]
    town = _town(parcels, profile=BERLIN, streets=[STREET],
                 buildings=[{"building_id": "B", "parcel_id": "N", "geometry": house,
                             "built_date": "2020-05-01"}])
    r = _row(compute_obligations(town)["obligations"], "N")
    assert r["status"] == "required" and r["deadline_days"] == 90
    assert r["deadline_date"] == pd.Timestamp("2026-04-10")  # Jan 21 + Feb 28 + Mar 31 + 10


def test_the_rule_binds_within_the_area_only():
    """§ 168-22.2G: the owner of all houses, buildings or property "... situated within
    the area" (AREA: "the Fourth Ward Sewer Improvement Area of the Town of
    Poughkeepsie"). Without a district layer the whole town is taken as the area,
    said once."""
    parcels = [_lot(0, septic=True), _lot(1, septic=True), _lot(2, connected=True)]
    district = [{"district_id": "4W", "geometry": box(-100, -100, 150, 500)}]
    town = _town(parcels, streets=[STREET], district=district)
    ob = compute_obligations(town)["obligations"]
    assert _row(ob, "P0")["status"] == "subject_to_notice"
    assert bool(_row(ob, "P0")["in_district"])
    out = _row(ob, "P1")
    assert out["status"] == "outside_district" and not bool(out["in_district"])
    assert "outside the district" in out["reason"] and out["section"] == "§ 168-22.2G"
    assert pd.isna(out["deadline_days"])
    assert _row(ob, "P2")["status"] == "connected"  # a connection stays a connection
    assert not town.report.of_kind("district_assumed")
    whole = _town(parcels, streets=[STREET])
    for _ in range(2):  # computed twice, said once
        ob = compute_obligations(whole)["obligations"]
    said = whole.report.of_kind("district_assumed")
    assert len(said) == 1 and "whole town is taken as the area" in said[0].message
    assert ob["in_district"].isna().all()
    assert _row(ob, "P1")["status"] == "subject_to_notice"


def test_vermont_service_area_as_the_district(tmp_path, shared_data):
    """A real district: Barre's sewer service area (VERSO, optional ../shared/data) bounds
    the area a lot must be "situated within"; lots by Barre's own sewer lines inside and
    outside it."""
    barre = shared_data / "vermont_verso" / "Barre"
    (tmp_path / "gisnet.toml").write_text(f"""
name = "Barre, VT"
profile = "{POUGH}"
[layers.mains]
path = "{barre / 'BarreLinearFeatures.geojson'}"
[layers.mains.columns]
main_id = "OBJECTID"
kind = "System_Type"
status = "Status"
owner = "Audience"
[layers.mains.values.kind]
"Wastewater" = "sanitary"
[layers.mains.values.status]
"Existing" = "active"
[layers.district]
path = "{barre / 'BarreServiceArea.geojson'}"
[layers.district.columns]
name = "System_Name"
""")
    town = load_town(tmp_path)
    area = shapely.union_all(town.layers["district"].geometry.values)
    assert town.layers["district"]["name"].iloc[0] == "Barre City"
    mains = town.layers["mains"]
    mid = shapely.line_interpolate_point(mains.geometry.values, 0.5, normalized=True)
    inside = np.flatnonzero(shapely.contains(area, mid))
    outside = np.flatnonzero(~shapely.intersects(area, mains.geometry.values))
    assert len(inside) and len(outside), "Barre has sewer lines inside and beyond the area"
    ft = 1.0 / town.ft_per_unit  # one foot in CRS units
    lots = []
    for tag, k in (("in", inside[0]), ("out", outside[0])):
        p = mid[k]
        lots.append({"parcel_id": tag, "geometry": shapely.buffer(p, 20 * ft).envelope})
    parcels = gpd.GeoDataFrame(lots, geometry="geometry", crs=town.crs)
    ob = compute_obligations(town, parcels=parcels, assume_abutting=True)["obligations"]
    assert _row(ob, "in")["distance_ft"] == pytest.approx(0.0, abs=0.01)
    assert _row(ob, "in")["status"] == "subject_to_notice"
    assert _row(ob, "out")["distance_ft"] == pytest.approx(0.0, abs=0.01)
    assert _row(ob, "out")["status"] == "outside_district", _row(ob, "out")["reason"]


@pytest.mark.parametrize("profile", [POUGH, BERLIN])
def test_vacant_lot_is_never_required_without_a_buildings_layer(profile):
    """§ 168-22.2G / sec. 16-50: "houses, buildings or property used for human
    occupancy, employment, recreation or other ... purposes": with no buildings layer
    the lot's land use tells; a vacant lot 25 ft from the sewer is none of these."""
    parcels = [_lot(0, land_use="vacant", health_hazard=True, notice_date="2026-01-05"),
               _lot(1)]
    ob = compute_obligations(_town(parcels, profile=profile, streets=[STREET]))["obligations"]
    vacant = _row(ob, "P0")
    assert vacant["status"] == "not_required", vacant["reason"]
    assert "vacant" in vacant["reason"]
    assert _row(ob, "P1")["status"] != "not_required"


def test_berlin_existing_plumbing_paragraph_binds_residents():
    """Berlin, existing-plumbing paragraph: "A resident shall be required to connect an
    existing plumbing system to the sanitary sewer system when such system meets the
    measurement requirements of Section 16-50 and, in the City's opinion, the
    resident's septic system constitutes a health hazard. ... in no event shall a
    resident be permitted more than fifteen (15) years to connect his plumbing system
    to the sanitary sewer system from the date that the sanitary sewer was available
    to his residence"."""
    def lot(i, land_use, use=None, **kw):
        pid = f"P{i}"
        return ({"parcel_id": pid, "geometry": box(200 * i, 25, 200 * i + 100, 125),
                 "land_use": land_use, "septic": True, "sewer_available_date": "2012-05-15",
                 **kw},
                {"building_id": f"B{i}", "parcel_id": pid, "use": use,
                 "geometry": box(200 * i + 20, 50, 200 * i + 80, 100),
                 "built_date": "1950-01-01"})
    rows = [lot(0, "residential_single"), lot(1, "commercial"),
            lot(2, "residential_single", health_hazard=True),
            lot(3, "commercial", health_hazard=True),
            lot(4, "residential_single", use="residential_rear"),
            lot(5, "residential_single", use="commercial"), lot(6, None)]
    town = _town([p for p, _ in rows], profile=BERLIN, streets=[STREET],
                 buildings=[b for _, b in rows])
    ob = compute_obligations(town)["obligations"]
    septic_section = town.profile.connection.septic_section
    home = _row(ob, "P0")  # 2012-05-15 + 15 years
    assert home["status"] == "required" and home["septic_deadline"] == pd.Timestamp("2027-05-15")
    assert home["section"] == septic_section and "residence" in home["reason"]
    shop = _row(ob, "P1")
    assert shop["status"] == "not_required", shop["reason"]
    assert shop["section"] == "sec. 16-50" and pd.isna(shop["septic_deadline"])
    assert "binds residents only" in shop["reason"] and "commercial" in shop["reason"]
    hazard = _row(ob, "P2")
    assert hazard["status"] == "required" and hazard["section"] == septic_section
    assert "health hazard" in hazard["reason"] and "now" in hazard["reason"]
    assert pd.isna(hazard["deadline_days"]) and pd.isna(hazard["septic_deadline"])
    assert _row(ob, "P3")["status"] == "not_required"   # not a resident's septic system
    assert _row(ob, "P4")["status"] == "required"       # the building's use decides
    assert _row(ob, "P5")["status"] == "not_required"
    unknown = _row(ob, "P6")
    assert unknown["status"] == "review" and "cannot be told" in unknown["reason"]


# --------------------------------------------------------------------------- case 4


def _sewer_town(parcels, buildings, laterals, streets=(STREET,)):
    return _town(parcels, streets=list(streets), buildings=buildings, laterals=laterals)


def test_side_by_side_buildings_sharing_a_building_sewer_are_reported():
    """§ 168-22.4D: "A separate independent building sewer shall be provided for every
    building except where one building stands at the rear of another on an interior
    lot ..."; two buildings side by side on lateral L1 are not that exception."""
    parcels = [{"parcel_id": "D", "geometry": box(0, 25, 200, 200),
                "land_use": "residential_multi"}]
    buildings = [{"building_id": "A", "parcel_id": "D", "geometry": box(20, 50, 80, 100)},
                 {"building_id": "B", "parcel_id": "D", "geometry": box(120, 50, 180, 100)}]
    # from the main up to 2 ft below B, then along to 2 ft below A
    laterals = [{"lateral_id": "L1", "parcel_id": "D",
                 "geometry": LineString([(150, 0), (150, 48), (80, 48)])}]
    town = _sewer_town(parcels, buildings, laterals)
    ob = compute_obligations(town)["obligations"]
    d = _row(ob, "D")
    assert d["status"] == "connected"
    assert "§ 168-22.4D requires a separate independent building sewer" in d["reason"]
    found = town.report.of_kind("shared_building_sewer")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].feature_id == "L1,A,B" and found[0].layer == "laterals"
    assert "side by side" in found[0].message


def _rear_lot(streets):
    parcels = [{"parcel_id": "R", "geometry": box(300, 25, 400, 300),
                "land_use": "residential_single"}]
    buildings = [{"building_id": "F", "parcel_id": "R", "geometry": box(320, 50, 380, 100)},
                 {"building_id": "H", "parcel_id": "R", "geometry": box(320, 180, 380, 230)}]
    # the front building's sewer (3 ft below F) extended up the side yard to the rear one
    laterals = [{"lateral_id": "L2", "parcel_id": "R", "geometry": LineString(
        [(350, 0), (350, 47), (310, 47), (310, 177), (350, 177)])}]
    town = _sewer_town(parcels, buildings, laterals, streets)
    return town, compute_obligations(town)["obligations"]


def test_rear_building_on_an_interior_lot_may_share_the_front_buildings_sewer():
    """§ 168-22.4D: "... except where one building stands at the rear of another on an
    interior lot and no sewer is available or can be constructed to the rear building
    through an adjoining alley, courtyard or driveway. Under such conditions, the
    building sewer from the front building may be extended to the rear building."
    """
    town, ob = _rear_lot([STREET])
    assert _row(ob, "R")["status"] == "connected"
    found = town.report.of_kind("shared_building_sewer")
    assert len(found) == 1 and found[0].severity == "info"
    assert found[0].feature_id == "L2,F,H"
    assert "allowed" in found[0].message and "§ 168-22.4D rear-building exception" in \
        found[0].message
    assert "stands at the rear of building F on an interior lot" in found[0].message
    # a corner lot: a side street along the lot's east edge gives H frontage of its own
    side = {"street_id": "S2", "geometry": box(400, -200, 450, 600), "width_ft": 50.0}
    town, ob = _rear_lot([STREET, side])
    found = town.report.of_kind("shared_building_sewer")
    assert len(found) == 1 and found[0].severity == "warning"
    assert "not behind building F from every street" in found[0].message


def test_a_stub_lateral_connects_no_building():
    """BUILDING SEWER (§ 168-22.1A): "The extension from the building drain to the
    public sewer"; the building drain conveys the discharge "to the building sewer
    beginning five feet outside the inner face of the building wall". A lateral ending
    at the property line, 25 ft short of the house, is no building sewer yet: the
    parcel's own septic/connected data decides."""
    parcels = [_lot(0, septic=True), _lot(1, connected=True), _lot(2, septic=True)]
    buildings = [{"building_id": f"B{i}", "parcel_id": f"P{i}",
                  "geometry": box(200 * i + 20, 50, 200 * i + 80, 100)} for i in range(3)]
    laterals = [{"lateral_id": "S0", "parcel_id": "P0",
                 "geometry": LineString([(50, 0), (50, 25)])},      # stub: 25 ft short
                {"lateral_id": "S1", "parcel_id": "P1",
                 "geometry": LineString([(250, 0), (250, 25)])},    # stub, flagged connected
                {"lateral_id": "OK", "parcel_id": "P2",
                 "geometry": LineString([(450, 0), (450, 46)])}]    # 4 ft short: reaches
    town = _sewer_town(parcels, buildings, laterals)
    ob = compute_obligations(town)["obligations"]
    assert _row(ob, "P0")["status"] == "subject_to_notice", _row(ob, "P0")["reason"]
    assert _row(ob, "P1")["status"] == "connected"
    assert "parcels layer marks it connected" in _row(ob, "P1")["reason"]
    assert _row(ob, "P2")["status"] == "connected" and "OK" in _row(ob, "P2")["reason"]
    stubs = town.report.of_kind("stub_lateral")
    assert len(stubs) == 1 and stubs[0].feature_id == "S0,S1"
    assert "5 ft" in stubs[0].message
    assert not town.report.of_kind("shared_building_sewer")
