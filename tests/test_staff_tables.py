"""What staff get: owner mailing addresses recognised and carried into the letters'
mail-merge table, and ``gisnet init`` proposing a sewer service area as the district."""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import pyogrio
from shapely.geometry import box

from gisnet import Town
from gisnet.init import propose, render_town_file
from gisnet.notices.packets import mailing_addresses

SAMPLE = Path(__file__).resolve().parents[1] / "layers" / "sample"


def test_mailing_address_aliases_become_the_canonical_column():
    parcels = pyogrio.read_dataframe(SAMPLE / "parcels.shp").head(5)
    mains = pyogrio.read_dataframe(SAMPLE / "mains.shp")
    for alias in ("MAIL_ADDR", "OWNER_ADDR", "MAILING_AD"):
        p = parcels.assign(**{alias: [f"PO Box {i}, Town NY" for i in range(5)]})
        town = Town.from_frames(profile="poughkeepsie-fourth-ward", parcels=p, mains=mains)
        got = town.layers["parcels"]["mailing_address"].tolist()
        assert got == [f"PO Box {i}, Town NY" for i in range(5)], alias
        pid = str(town.layers["parcels"]["parcel_id"].iloc[2])
        assert mailing_addresses(town)[pid] == "PO Box 2, Town NY"


def test_init_proposes_a_service_area_as_the_district(tmp_path):
    crs = "EPSG:2260"
    gpd.GeoDataFrame({"System_Name": ["Town Sewer"]}, geometry=[box(0, 0, 1000, 1000)],
                     crs=crs).to_file(tmp_path / "TownServiceArea.geojson")
    gpd.GeoDataFrame({"NAME": ["Town"]}, geometry=[box(-10, -10, 2000, 2000)],
                     crs=crs).to_file(tmp_path / "TownBorder.geojson")
    p = propose(tmp_path, "poughkeepsie-fourth-ward")
    roles = {f.path.name: f.role for f in p.layers}
    assert roles == {"TownServiceArea.geojson": "district", "TownBorder.geojson": None}
    text = render_town_file(p)
    assert "[layers.district]" in text and "service area" in text
