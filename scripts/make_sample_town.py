#!/usr/bin/env python
"""Write the bundled sample town, ``gisnet/sample/`` (package data), deterministically.

Usage: ``python scripts/make_sample_town.py [--out gisnet/sample]``

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
    "district": (),
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
ROLES = ("parcels", "buildings", "streets", "mains", "manholes", "plants", "laterals", "users",
         "district")


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
    hz = p["health_hazard"].astype(object)
    p["health_hazard"] = hz.map({True: "Y", False: "N"}).where(hz.notna(), None).astype(object)
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


def _ids(xs: object) -> str:
    return ", ".join(f"`{x}`" for x in (xs if isinstance(xs, list) else [xs]))


def cases_md(town: SampleTown) -> str:
    """The README section: which features exercise which ordinance case."""
    c = town.notes["cases"]
    smp = town.samples.assign(line=range(2, len(town.samples) + 2))

    def lines(case: str) -> str:
        ln = smp.loc[smp["case"] == case, "line"].to_numpy()
        return f"line {ln[0]}" if len(ln) == 1 else f"lines {ln[0]}-{ln[-1]}"

    pm, un, om = c["private_main"], c["unresolved"], c["owner_manhole"]
    st, sh, rb = c["stub_lateral"], c["shared_side_by_side"], c["rear_building"]
    cu, bo = c["copper_user"], c["bod_user"]
    notice = "; ".join(f"`{n['parcel']}` served {n['notice_date']} (due {n['deadline_date']})"
                       for n in c["notice"])
    rows = [
        ("§ 168-22.5J control manhole, private main",
         f"lateral `{pm['lateral']}` of building `{pm['building']}`",
         f"ends on private main `{pm['main']}`: `control_manholes.source` `private_main`, "
         "the control manhole the first public manhole where the private mains enter the "
         "public sewer (`entry_node_id`)"),
        ("§ 168-22.5K owner-installed control manhole",
         f"manhole `{om['manhole']}` (`CTRL_FOR` = `{om['user']}`, {om['user_name']})",
         f"user `{om['user']}`'s row: source `owner_manhole`, section § 168-22.5K; the "
         "manhole is in the building sewer, so no main reaches it (`isolated_structure`, info)"),
        ("control manhole unresolved",
         f"lateral `{un['lateral']}` of building `{un['building']}`",
         "stops 25 ft short of the main: source `unresolved`, findings `lateral_off_main`, "
         "`no_connection_point`"),
        ("§ 168-22.2G notice served", notice,
         "within 300 ft, abutting a sewered street, `NOTICEDATE` set, `deadline_date` = "
         "notice + 30 days; but no health hazard is recorded and the lots are on septic "
         "(§ 168-22.3C: notice \"only when it shall be necessary to eliminate a public "
         "health hazard\"): `review`, no letter"),
        ("§ 168-22.2G public health hazard", _ids(c["health_hazard"]["parcel"]),
         "`HEALTHHAZ` = Y: `required` (no notice date, so no `deadline_date`); the other "
         "septic lots within 300 ft on a sewered street stay `subject_to_notice`"),
        ("§ 168-22.2G district", "`district.shp` (`[layers.district]` in `gisnet.toml`); "
         f"outside it: {_ids(c['outside_district'])}",
         "the north-east corner lots lie outside the district: `outside_district`"),
        ("vacant lot", _ids(c["vacant"]["parcel"]),
         "within 300 ft of a sewer, no building: `not_required`"),
        ("§ 168-22.4D shared building sewer",
         f"lateral `{sh['lateral']}`, buildings {_ids(sh['buildings'])}",
         "two buildings on neighbouring lots on one lateral: `shared_building_sewer` warning"),
        ("§ 168-22.4D rear building",
         f"lateral `{rb['lateral']}`, front `{rb['front']}`, rear `{rb['rear']}` "
         f"(parcel `{rb['parcel']}`)",
         "rear building on an interior lot on the front building's lateral: "
         "`shared_building_sewer` info (allowed)"),
        ("stub lateral",
         f"lateral `{st['lateral']}` (parcel `{st['parcel']}`, building `{st['building']}`)",
         f"from the main to {st['short_ft']:.0f} ft short of the building: `stub_lateral` "
         "warning; connects nothing, the septic parcel stays `subject_to_notice`"),
        ("§ 168-22.5C(9) screening", f"`samples.csv` {lines('screening')}",
         f"copper 1.8 mg/L at `{cu['manhole']}`, the control manhole of {cu['user_name']} "
         f"(`{cu['user']}`): `screening_exceedance`, not a violation"),
        ("§ 168-22.5C(9) hourly rule at the plant", f"`samples.csv` {lines('hourly')}",
         "copper at the plant influent `WWTP-01`, hourly for 24 h; one hour at 0.60 mg/L: "
         "below three times the listed 1 ppm (the shipped reading, `hourly_reading = "
         "\"listed_average\"`), no violation; about 5 x the 24-hour average 0.121 under the "
         "other reading (`hourly_reading = \"measured_average\"`, docs/readings.md): "
         "`exceedance`, rule `hourly`"),
        ("slug (§ 168-22.5C(15); Berlin def. 66)",
         f"`samples.csv` {lines('slug')} (the day's campaign: {lines('slug_baseline')})",
         f"BOD 1,500 mg/L every 10 min for 30 min at `{bo['manhole']}` ({bo['user_name']}): "
         "one `slug` (Poughkeepsie: > 5 x 240 mg/L; Berlin: > 5 x its own 24-hour average)"),
        ("not a slug", f"`samples.csv` {lines('not_slug')}",
         "two BOD grabs of 1,500 mg/L 24 h apart: not one continuous discharge, two "
         "separate results (Poughkeepsie `exceedance` of 240 mg/L, Berlin "
         "`above_normal_strength`), no slug"),
        ("Berlin def. 29 normal strength", f"`samples.csv` {lines('bod_260')}",
         "BOD 260 mg/L: with `--profile berlin-nh` `above_normal_strength` (250 mg/L, the "
         "basis of surcharge); under the town's Poughkeepsie profile an `exceedance` of "
         "§ 168-22.5G(1) (240 ppm)"),
    ]
    table = "\n".join(f"| {a} | {b} | {r} |" for a, b, r in rows)
    return f"""## Ordinance cases

Features added to (or attributes set on) the generated town so that each
case gisnet implements has an example. `laterals.shp` ids above
`LAT000755` and manhole `{om['manhole']}` are these additions.

| case | features | what gisnet gives |
|---|---|---|
{table}

`samples.csv` holds lab results (`manhole_id,datetime,parameter,value,unit`):

```
gisnet samples samples.csv                          # in this folder
gisnet samples samples.csv --profile berlin-nh
```

(`gisnet sample DIR` writes a copy of this folder to edit; in the gisnet
repository it is `gisnet/sample/`, also reached as `layers/sample/`.)

Under the town's profile (Poughkeepsie) it reports 5 exceedances (exit
status 1) and 1 screening exceedance; under Berlin, 1 exceedance (the slug),
3 above normal strength and one `no_limit` problem (Berlin sets no copper
limit).
"""


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
`scripts/make_sample_town.py` (`gisnet.testing.synthetic.make_sample_town`, seed 2026);
no real parcel, owner, address or pipe is depicted. Street names are borrowed
from the area for flavour only. **Licence: CC0 1.0** (public domain
dedication): use it for anything.

Regenerate (byte-identical output):

```
python scripts/make_sample_town.py          # writes gisnet/sample/
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
- Plant `WWTP-01`: design flow {plant['design_flow_mgd']} MGD, 12 months in
  `plant_flows.csv`. **The latest 3 complete months decide** (the profile's
  `capacity.plant_basis = "latest"`): {' to '.join(plant['latest_3_month_window'][::2])}
  average {plant['latest_3_month_mean_mgd']:.3f} MGD =
  {plant['latest_3_month_fraction'] * 100:.1f} % of design, below 80 %. The
  worst window is kept as history (`plants` layer, `worst_window`):
  the wet spring, {' to '.join(plant['max_3_month_window'][::2])}, averaged
  {plant['max_3_month_mean_mgd']:.3f} MGD = {plant['max_3_month_fraction'] * 100:.1f} % of
  design, near but **below** 80 %, while
  {', '.join(plant['months_over_80_percent'])} alone is above 80 %. A rule
  on a single month and the 3-consecutive-month rule disagree there, and a
  modest added flow would have tipped that 3-month mean over.

{cases_md(town)}
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
        # the blocks every connection order carries (gisnet notices); the article sets no
        # appeal, so the town gives its own
        "notices": {
            "signatory": "Sample Superintendent",
            "title": "Superintendent, Fourth Ward Sewer Improvement Area (synthetic sample)",
            "contact": "Sample town office, 1 Sample Road; telephone 555-0100 (synthetic)",
            "appeal": "Sample text (synthetic town): a town writes here how an owner may ask "
                      "for a review or hearing of this notice.",
        },
    }
    header = "# Sample town (synthetic). Regenerate: python scripts/make_sample_town.py"
    write_town_file(out / "gisnet.toml", top, specs, header=header)
    town.plant_flows.to_csv(out / "plant_flows.csv", index=False, lineterminator="\n",
                            float_format="%.3f")
    town.samples.drop(columns="case").to_csv(out / "samples.csv", index=False,
                                             lineterminator="\n", float_format="%.2f")
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
    p.add_argument("--out", type=Path, default=ROOT / "gisnet" / "sample")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    out = write_sample(a.out)
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {len(list(out.iterdir()))} files, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
