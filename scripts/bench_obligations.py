#!/usr/bin/env python
"""Benchmark connection obligations against a bare ``geopandas.sjoin_nearest``.

Usage (run under the shared benchmark lock)::

    flock /tmp/gisnet-bench.lock python scripts/bench_obligations.py \
        [--parcels 1000000] [--mains 300000] [--threads 2] [--profile poughkeepsie-fourth-ward]

Builds a synthetic town with :func:`gisnet.testing.synthetic.make_town` (streets,
buildings, mains), then times in the same run:

* ``compute_obligations`` - the whole answer: nearest eligible main of every
  parcel (or building), the abutting test against the streets, the two nearest
  points, status, deadline, section and reason;
* ``sjoin_nearest`` - a bare ``geopandas.sjoin_nearest`` of the parcels (or
  buildings) against the same eligible mains with a distance column, nothing
  else;

and checks that the distances agree (ties aside) to 0.01 ft. Prints one JSON
line with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import platform
import resource
import sys
import time

import geopandas as gpd
import numpy as np
from pyproj import CRS

from gisnet.obligations import compute_obligations, eligible_mask
from gisnet.profile import load_profile
from gisnet.testing.synthetic import make_town
from gisnet.town import Town
from gisnet.units import feet_per_unit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parcels", type=int, default=1_000_000)
    ap.add_argument("--mains", type=int, default=300_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default="poughkeepsie-fourth-ward")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--crs", default="EPSG:2260")
    ap.add_argument("--none-connected", action="store_true",
                    help="clear parcels.connected (and drop laterals): every parcel then gets "
                         "the abutting test and a full reason (worst case)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("gisnet.obligations").setLevel(logging.DEBUG)

    t0 = time.perf_counter()
    layers = make_town(args.parcels, args.mains, seed=args.seed, crs=args.crs)
    t_make = time.perf_counter() - t0
    if args.none_connected:
        layers["parcels"]["connected"] = False
        layers.pop("laterals", None)
    crs = CRS.from_user_input(args.crs)
    town = Town(name="bench", crs=crs, ft_per_unit=feet_per_unit(crs), layers=layers,
                profile=load_profile(args.profile))
    mains = layers["mains"]
    elig = mains[eligible_mask(mains, town.profile)][["main_id", "geometry"]].reset_index(
        drop=True)
    measure = town.profile.connection.measure
    src = layers["buildings"] if measure == "building" else layers["parcels"]
    src = src[["geometry"]].reset_index(drop=True)
    print(f"town: {len(layers['parcels']):,} parcels, {len(layers['buildings']):,} buildings, "
          f"{len(mains):,} mains ({len(elig):,} eligible), {len(layers['streets']):,} streets; "
          f"made in {t_make:.1f} s", file=sys.stderr)

    gc.collect()
    t0 = time.perf_counter()
    res = compute_obligations(town, threads=args.threads)
    t_ob = time.perf_counter() - t0
    ob = res["obligations"]
    print(f"compute_obligations: {t_ob:.1f} s", file=sys.stderr)

    gc.collect()
    t0 = time.perf_counter()
    sj = gpd.sjoin_nearest(src, elig, how="left", distance_col="dist")
    t_sj = time.perf_counter() - t0
    print(f"sjoin_nearest: {t_sj:.1f} s ({len(sj):,} rows for {len(src):,} inputs)",
          file=sys.stderr)

    # distances agree (sjoin_nearest returns every tied main: take the min per input)
    if measure == "property_line":
        want = sj.groupby(level=0)["dist"].min().to_numpy() * town.ft_per_unit
        got = ob["distance_ft"].to_numpy()
        max_diff = float(np.nanmax(np.abs(got - want)))
    else:
        max_diff = float("nan")
    statuses = ob["status"].value_counts().to_dict()
    out = {
        "parcels": len(layers["parcels"]), "buildings": len(layers["buildings"]),
        "mains": len(mains), "eligible_mains": len(elig), "measure": measure,
        "threads": args.threads, "none_connected": args.none_connected,
        "make_town_s": round(t_make, 2),
        "compute_obligations_s": round(t_ob, 2), "sjoin_nearest_s": round(t_sj, 2),
        "ratio": round(t_ob / t_sj, 3), "sjoin_rows": len(sj),
        "max_abs_diff_ft": max_diff, "statuses": statuses,
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "python": platform.python_version(),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
