"""Benchmark: Berlin (building measure, newly constructed buildings) obligations with
two buildings on every built parcel: an old one and a new one inside it.

    flock /tmp/gisnet-bench.lock /work/venv/bin/python scripts/bench_obligations_buildings.py
"""

import logging
import time

import pandas as pd
from pyproj import CRS

from gisnet.obligations import compute_obligations
from gisnet.profile import load_profile
from gisnet.testing.synthetic import make_town
from gisnet.town import Town
from gisnet.units import feet_per_unit

logging.basicConfig(level=logging.WARNING)
logging.getLogger("gisnet.obligations").setLevel(logging.DEBUG)
L = make_town(200000, 60000, seed=1, crs="EPSG:2260")
L["parcels"]["connected"] = False
L.pop("laterals", None)
B = L["buildings"]
B2 = B.copy()
B2["building_id"] = B2["building_id"].astype(str) + "r"
B2["geometry"] = B2.geometry.scale(0.5, 0.5)
B["built_date"] = pd.Timestamp("1950-01-01")
B2["built_date"] = pd.Timestamp("2030-01-01")
L["buildings"] = pd.concat([B, B2], ignore_index=True).set_crs(B.crs, allow_override=True)
crs = CRS.from_user_input("EPSG:2260")
t = Town(
    name="b", crs=crs, ft_per_unit=feet_per_unit(crs), layers=L, profile=load_profile("berlin-nh")
)
t0 = time.perf_counter()
ob = compute_obligations(t)["obligations"]
print(
    f"compute_obligations {time.perf_counter() - t0:.2f} s;",
    ob.status.value_counts().to_dict(),
    "new buildings picked:",
    int(ob.building_id.str.endswith("r").sum()),
)
