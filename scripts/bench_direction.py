#!/usr/bin/env python
"""Time the direction and outlet stages against the whole graph build.

Usage: ``python scripts/bench_direction.py [N_MAINS] [--hidden]``

A synthetic city (:func:`gisnet.testing.synthetic.make_town`, 3 parcels per main,
looped streets); ``--hidden`` removes the from/to node ids and inverts and draws
every other main backwards, so the direction comes from the network's shape
(the shortest-path pass) rather than the ids. Prints one line per stage.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import shapely

from gisnet.graph import build as build_mod
from gisnet.testing.synthetic import make_town


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mains", type=int, nargs="?", default=50_000)
    p.add_argument("--hidden", action="store_true")
    args = p.parse_args()
    layers = make_town(3 * args.mains, args.mains, seed=0, irregular=True)
    if args.hidden:
        m = layers["mains"].copy()
        back = np.arange(len(m)) % 2 == 1
        g = np.asarray(m.geometry.values, dtype=object).copy()
        g[back] = shapely.reverse(g[back])
        m = m.set_geometry(g).assign(from_node=None, to_node=None, up_invert_ft=np.nan,
                                     down_invert_ft=np.nan)
        layers = {**layers, "mains": m}
    spent: dict[str, float] = {}

    def timed(name, fn):
        def run(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
            return out
        return run

    build_mod.resolve_direction = timed("direction", build_mod.resolve_direction)
    build_mod.find_outlets = timed("outlets", build_mod.find_outlets)
    t = time.perf_counter()
    G = build_mod.build_sewer_graph({k: layers[k] for k in ("mains", "manholes", "plants")
                                     if k in layers})
    total = time.perf_counter() - t
    print(f"{G.number_of_edges():,} edges, {G.number_of_nodes():,} nodes, "
          f"{'hidden ids/inverts' if args.hidden else 'node ids'}")
    print(f"graph build {total:.2f} s")
    for k, v in spent.items():
        print(f"  {k}: {v:.3f} s ({100 * v / total:.1f} %)")


if __name__ == "__main__":
    main()
