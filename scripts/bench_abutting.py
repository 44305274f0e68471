#!/usr/bin/env python
"""Abutting without a streets layer: the parcel fabric against the streets, on one city.

Usage::

    python scripts/bench_abutting.py [--parcels 20000] [--mains N] [--seed 0] [--irregular]
        [--keep-connected] [--threads 2] [--profile poughkeepsie-fourth-ward]

Builds the city :func:`gisnet.testing.synthetic.make_town` makes (what
``scripts/make_city.py`` writes), then computes the obligations twice:

* with parcels, mains and streets: the abutting test from the streets layer;
* with parcels and mains only (the two-file town): the abutting test from the
  parcel fabric (``abutting_method`` = ``parcel_fabric``).

Parcels' ``connected`` flags are cleared (unless ``--keep-connected``), so that
every measured parcel gets the abutting test. Prints one JSON line: the share
of parcels whose ``abuts_sewered_street`` agrees (null equal to null), whose
status agrees, the share of ``review`` parcels in the two-file town, and the
seconds each run took.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

import numpy as np
from pyproj import CRS

from gisnet.obligations import compute_obligations
from gisnet.profile import load_profile
from gisnet.testing.synthetic import make_town
from gisnet.town import Town
from gisnet.units import feet_per_unit


def agreement(a, b) -> dict[str, float]:
    """Shares (%) of parcels where two obligations tables agree, and review shares.

    Parameters
    ----------
    a, b
        Obligations tables of the same parcels in the same order: ``a`` with a
        streets layer, ``b`` without.
    """
    aa = a["abuts_sewered_street"].astype(object).fillna("null").to_numpy()
    bb = b["abuts_sewered_street"].astype(object).fillna("null").to_numpy()
    tested = a["abuts_sewered_street"].notna().to_numpy()
    return {
        "abuts_agree_pct": round(100.0 * float(np.mean(aa == bb)), 3),
        "abuts_agree_tested_pct": round(100.0 * float(np.mean(aa[tested] == bb[tested])), 3)
        if tested.any() else float("nan"),
        "status_agree_pct": round(100.0 * float(np.mean(
            a["status"].to_numpy() == b["status"].to_numpy())), 3),
        "review_with_streets_pct": round(100.0 * float(np.mean(a["status"] == "review")), 3),
        "review_pct": round(100.0 * float(np.mean(b["status"] == "review")), 3),
    }


def _counts(col) -> dict[str, int]:
    """Counts of a nullable boolean column: true / false / null."""
    v = col.astype(object).fillna("null").astype(str).str.lower()
    return {k: int(c) for k, c in v.value_counts().items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parcels", type=int, default=20_000)
    ap.add_argument("--mains", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--irregular", action="store_true", help="jittered lots, curved streets")
    ap.add_argument("--keep-connected", action="store_true",
                    help="keep the parcels' connected flags (connected parcels are not tested)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default="poughkeepsie-fourth-ward")
    ap.add_argument("--crs", default="EPSG:2260")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")

    layers = make_town(args.parcels, args.mains, seed=args.seed, crs=args.crs,
                       irregular=args.irregular)
    if not args.keep_connected:
        layers["parcels"]["connected"] = False
    crs = CRS.from_user_input(args.crs)
    profile = load_profile(args.profile)

    def town(roles: tuple[str, ...]) -> Town:
        return Town(name="bench", crs=crs, ft_per_unit=feet_per_unit(crs),
                    layers={r: layers[r].copy() for r in roles}, profile=profile)

    t0 = time.perf_counter()
    with_streets = compute_obligations(town(("parcels", "mains", "streets")),
                                       threads=args.threads)["obligations"]
    t1 = time.perf_counter()
    two_files = compute_obligations(town(("parcels", "mains")),
                                    threads=args.threads)["obligations"]
    t2 = time.perf_counter()
    out = {"parcels": len(layers["parcels"]), "mains": len(layers["mains"]),
           "irregular": args.irregular, "connected_cleared": not args.keep_connected,
           **agreement(with_streets, two_files),
           "methods": two_files["abutting_method"].value_counts().to_dict(),
           "abuts_with_streets": _counts(with_streets["abuts_sewered_street"]),
           "abuts_two_files": _counts(two_files["abuts_sewered_street"]),
           "status_two_files": two_files["status"].value_counts().to_dict(),
           "with_streets_s": round(t1 - t0, 2), "two_files_s": round(t2 - t1, 2)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
