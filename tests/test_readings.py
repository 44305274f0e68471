"""Readings of the ordinances behind the letters: each from a small hand-made town,
quoting the clause it reads (docs/readings.md lists the ambiguous ones).

Coordinates are in international feet (EPSG:2222: 1 unit = 1 ft).
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import pandas as pd
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
