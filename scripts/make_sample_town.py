#!/usr/bin/env python
"""Write the bundled sample town, ``layers/sample/``, deterministically.

Usage: ``python scripts/make_sample_town.py [--out layers/sample]``

Shapefiles with LGIM-style field names, a ``gisnet.toml`` mapping them
(some columns explicitly, some through gisnet's alias lists, property class
codes and an owner code through value maps), ``plant_flows.csv``,
``problems.json`` (the deliberate data problems, machine-readable) and a
README listing them. Running it twice gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd

from gisnet.testing.synthetic import (
    SOURCE_COLUMNS,
    SampleTown,
    make_sample_town,
    to_source,
    write_layer,
    write_town_file,
)

ROOT = Path(__file__).resolve().parents[1]
SNAP_TOLERANCE_FT = 1.0

#: Canonical -> source column names per role: the generator's LGIM-style names,
#: with the parcel-related columns in the NY real-property style (PRINT_KEY ...),
#: so some columns are mapped explicitly in gisnet.toml and others by alias.
_PARCEL_KEY = {"parcel_id": "PRINT_KEY"}
_OVERRIDES: dict[str, dict[str, str]] = {
    "plants": {"design_flow_mgd": "DESIGNCAP", "node_id": "OUTLETNODE"},
    "parcels": {**_PARCEL_KEY, "address": "PROP_ADDR", "land_use": "PROP_CLASS",
                "bedrooms": "NBR_BEDRM", "flow_gpd": "METER_GPD", "connected": "SEWER_CONN"},
    "buildings": _PARCEL_KEY,
    "streets": {"street_id": "SEGMENT_ID", "name": "FULLNAME"},
    "laterals": {**_PARCEL_KEY, "main_id": "GRAVITYMAI"},
    "users": {**_PARCEL_KEY, "name": "FACILITY"},
}
#: Columns the sample does not carry.
_DROPPED = {"parcels": ("sewer_available_date",), "buildings": ("built_date",)}
NAMES: dict[str, dict[str, str]] = {
    role: {c: _OVERRIDES.get(role, {}).get(c, src) for c, src in cols.items()
           if c not in _DROPPED.get(role, ())}
    for role, cols in SOURCE_COLUMNS.items()
}
#: Columns written explicitly in gisnet.toml; the rest are found by alias.
EXPLICIT: dict[str, tuple[str, ...]] = {
    "mains": ("main_id", "diameter_in", "up_invert_ft", "down_invert_ft", "from_node", "to_node"),
    "manholes": ("node_id",),
    "plants": ("plant_id", "design_flow_mgd"),
    "parcels": ("parcel_id", "address", "land_use", "bedrooms", "flow_gpd"),
    "buildings": ("parcel_id",),
    "streets": (),
    "laterals": ("parcel_id",),
    "users": ("parcel_id",),
}
#: New York RPS property class codes per land use (value map in gisnet.toml).
PROP_CLASS: dict[str, tuple[str, ...]] = {
    "residential_single": ("210",),
    "residential_multi": ("220", "230", "411"),
    "commercial": ("421", "452", "464", "484"),
    "industrial": ("710", "714"),
    "institutional": ("612", "620", "642"),
    "vacant": ("311", "330"),
}
MANHOLE_TYPES = {"manhole": "Standard", "cleanout": "Cleanout", "junction": "Wye",
                 "fitting": "Bend", "catch_basin": "Catch Basin", "outfall": "Outfall"}
OWNER_CODES = {"public": "TOP", "private": "Private"}
ROLES = ("parcels", "buildings", "streets", "mains", "manholes", "plants", "laterals", "users")


def _yn(s: pd.Series) -> pd.Series:
    return s.map({True: "Y", False: "N"}).astype(object)


def source_layers(town: SampleTown) -> dict[str, gpd.GeoDataFrame]:
    """The sample's canonical layers as the source files hold them."""
    L = {r: town.layers[r].copy() for r in ROLES}
    m = L["mains"]
    m["kind"] = m["kind"].map({"sanitary": "Sanitary", "storm": "Storm"})
    m["owner"] = m["owner"].map(OWNER_CODES)
    m["status"] = m["status"].map({"active": 1, "inactive": 0}).astype("Int64")
    m["slope"] = (m["slope"] * 100).round(4)  # percent, see [units] in gisnet.toml
    mh = L["manholes"]
    mh["kind"] = mh["kind"].map(MANHOLE_TYPES)
    mh["owner"] = mh["owner"].map(OWNER_CODES)
    mh["status"] = mh["status"].map({"active": 1, "inactive": 0}).astype("Int64")
    p = L["parcels"]
    du = p["dwelling_units"].to_numpy()
    codes = []
    for k, (lu, n) in enumerate(zip(p["land_use"], du, strict=True)):
        opts = PROP_CLASS[lu]
        if lu == "residential_multi":
            codes.append("220" if n == 2 else "230" if n == 3 else "411")
        else:
            codes.append(opts[k % len(opts)])
    p["land_use"] = codes
    p["septic"] = _yn(p["septic"])
    p["connected"] = _yn(p["connected"])
    u = L["users"]
    u["categorical"] = _yn(u["categorical"])
    u["industrial"] = _yn(u["industrial"])
    out = {}
    for r, g in L.items():
        src = to_source(g, r, NAMES[r])
        for c in src.columns:
            if src[c].dtype == object and c != src.geometry.name:
                src[c] = src[c].where(pd.notna(src[c]), None)
        out[r] = src
    return out


def readme(town: SampleTown) -> str:
    L = town.layers
    n = town.notes
    plant = n["plant"]
    counts = "\n".join(f"| `{r}.shp` | {len(L[r]):,} |" for r in ROLES)
    probs = "\n".join(f"| `{p['kind']}` | {', '.join(f'`{i}`' for i in p['ids'])} | "
                      f"{p['detail']} |" for p in town.problems)
    mains = L["mains"]
    san = mains[mains["kind"] == "sanitary"]
    dia = san["diameter_in"].dropna()
    return f"""# Sample town (synthetic): "Spackenkill", Town of Poughkeepsie, NY

**Source: synthetic.** Every feature here was generated by
`scripts/make_sample_town.py` (`gisnet.synthetic.make_sample_town`, seed 2026);
no real parcel, owner, address or pipe is depicted. Street names are borrowed
from the area for flavour only. **Licence: CC0 1.0** (public domain
dedication): use it for anything.

Regenerate (byte-identical output):

```
python scripts/make_sample_town.py          # writes layers/sample/
```

## What it is

A neighbourhood of about 1 x 1 mile centred near 41.67 N, 73.90 W, in NY
State Plane East, US survey feet (**EPSG:2260**). Streets form a jittered,
rotated (17 degrees) and gently curved grid. Land use follows New York RPS
property class codes (`PROP_CLASS`, mapped to gisnet's land uses in
`gisnet.toml`).

| file | features |
|---|---|
{counts}
| `plant_flows.csv` | 12 months |

- Sanitary gravity mains: {len(san):,}, {dia.min():.0f}-{dia.max():.0f} in
  (sized by Manning for the peaked flow), inverts
  falling to **one plant**, `WWTP-01`. Trunks run north-south every sixth
  street; the plant is west of the south-west corner.
- Not everything is public sanitary sewer: storm mains
  {', '.join(n['storm_mains'])} (to outfall `OF-01`, an outlet in
  `gisnet.toml`), private mains {', '.join(n['private_mains'])} with private
  manholes {', '.join(n['private_manholes'])}, inactive mains
  {', '.join(n['inactive_mains'])} (`ACTIVEFLAG` 0).
- Structures that are not manholes: cleanouts {', '.join(n['cleanouts'])};
  junction fittings (`Wye`) {', '.join(n['junctions'])}; bends
  {', '.join(n['fittings'])}.
- The north-east corner and the northernmost street have no sewer: their
  parcels are on septic, some within 300 ft of a public sewer, some well
  beyond; a dozen more septic parcels sit inside the sewered area, and the
  lots along the two inactive mains are on septic too ({n['septic_parcels']}
  septic parcels in all). Some streets (those, and the short summit blocks
  between trunk sewersheds) carry no sewer.
- Buildings: most lots have one; vacant lots have none; some single-family
  lots have a rear building (`BLDG_USE` = `residential_rear`). About a third
  of the buildings have a building sewer in `laterals.shp`.
- Seven industrial users (`users.shp`) with process flows from 2,400 to
  58,000 gpd; `Spackenkill Plating` (SIC 3471) is categorical.
- Plant `WWTP-01`: design flow {plant['design_flow_mgd']} MGD. In
  `plant_flows.csv` the wettest three months,
  {' to '.join(plant['max_3_month_window'][::2])}, average
  {plant['max_3_month_mean_mgd']:.3f} MGD = {plant['max_3_month_fraction'] * 100:.1f} % of
  design: near but **below** 80 %, while
  {', '.join(plant['months_over_80_percent'])} alone is above 80 %. A rule
  on a single month and the 3-consecutive-month rule disagree here, and a
  modest added flow tips the 3-month mean over.

## Field names

LGIM-style names, as a town would hand them over. `gisnet.toml` maps some
explicitly; the others (`MATERIAL`, `WATERTYPE`, `OWNEDBY`, `ACTIVEFLAG`,
`RIMELEV`, `INVERTELEV`, `MANHOLETYP`, `UNITS`, `SEPTIC`, `SEWER_CONN`,
`SEGMENT_ID`, `FULLNAME`, `ROW_WIDTH`, `PERMIT_NO`, `PROC_GPD`, `CAT_IU`,
`GRAVITYMAI` ...) are found through gisnet's alias lists. `SLOPE` is in
percent (`[units] slope = "percent"`). Value maps: `OWNEDBY` code `TOP`
(Town of Poughkeepsie) -> public; `PROP_CLASS` codes -> land use.

## Deliberate data problems

Snap tolerance in `gisnet.toml`: {SNAP_TOLERANCE_FT} ft. The same list is in
`problems.json` (`kind`, `ids`, `expected` finding kinds).

| kind | ids | what a checker should find |
|---|---|---|
{probs}

Consequences a checker also reports: the 1.6 ft gap leaves its main and its
upstream manhole with no outlet (`dangling_end`, `no_outlet`,
`disconnected_piece`). `UPELEV`/`DOWNELEV` are the inverts at the upstream/
downstream end of each pipe, as their names say, whichever way it is drawn
(gisnet reads them so; `[layers.mains] inverts = "start_end"` would read them at
the drawn start/end). The storm mains are a separate piece with their own
outlet, and storm, private and inactive mains are reported as excluded from
public-sewer questions.
"""


def write_sample(out: Path) -> Path:
    town = make_sample_town()
    out.mkdir(parents=True, exist_ok=True)
    src = source_layers(town)
    specs: dict[str, dict[str, object]] = {}
    for r in ROLES:
        write_layer(src[r], out / f"{r}.shp")
        spec: dict[str, object] = {"path": f"{r}.shp"}
        spec["columns"] = {c: NAMES[r][c] for c in EXPLICIT[r]}
        specs[r] = spec
    specs["mains"]["values"] = {"owner": {"TOP": "public"}}
    specs["manholes"]["values"] = {"owner": {"TOP": "public"}}
    specs["parcels"]["values"] = {
        "land_use": {code: lu for lu, codes in PROP_CLASS.items() for code in codes}}
    top: dict[str, object] = {
        "name": "Spackenkill sample town (synthetic)",
        "profile": "poughkeepsie-fourth-ward",
        "crs": "EPSG:2260",
        "snap_tolerance_ft": SNAP_TOLERANCE_FT,
        "outlet_nodes": ["OF-01"],
        "units": {"slope": "percent"},
        "plant_flows": {"path": "plant_flows.csv"},
    }
    header = "# Sample town (synthetic). Regenerate: python scripts/make_sample_town.py"
    write_town_file(out / "gisnet.toml", top, specs, header=header)
    town.plant_flows.to_csv(out / "plant_flows.csv", index=False, lineterminator="\n",
                            float_format="%.3f")
    doc = {"snap_tolerance_ft": SNAP_TOLERANCE_FT, "problems": town.problems,
           "notes": town.notes}
    (out / "problems.json").write_text(json.dumps(doc, indent=2, default=_json) + "\n",
                                       encoding="utf-8")
    (out / "README.md").write_text(readme(town), encoding="utf-8")
    return out


def _json(o: object) -> object:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write the bundled sample town.")
    p.add_argument("--out", type=Path, default=ROOT / "layers" / "sample")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    out = write_sample(a.out)
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {len(list(out.iterdir()))} files, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
