#!/usr/bin/env python
"""Benchmark: control manholes for every building of a large synthetic town.

Builds a synthetic town (:func:`gisnet.testing.synthetic.make_town`; default about
1,000,000 buildings on 300,000 mains), its sewer graph, then times

1. ``DownstreamIndex(G)`` (one vectorised pass, pointer jumping),
2. ``connection_points`` (STRtree nearest eligible main for every building),
3. ``control_manholes`` (lookups; with and without the path lines),

and, on a random sample of buildings, the naive way: one networkx search per
building (``single_source_dijkstra`` from the tap's downstream node, keeping
the nearest public active manhole and the outlet reached), extrapolated to
all buildings. The sample's answers are compared with the index's.

Run under the shared lock (it needs several GB):

    flock /tmp/gisnet-bench.lock /work/venv/bin/python scripts/bench_tracing.py

Figures go to docs/performance.md (## Tracing) by hand.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time

import networkx as nx
import numpy as np
from pyproj import CRS

from gisnet.graph import build_sewer_graph
from gisnet.profile import load_profile
from gisnet.testing.synthetic import make_town
from gisnet.town import Town
from gisnet.tracing import DownstreamIndex, connection_points, control_manholes
from gisnet.units import feet_per_unit


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def naive_one(G: nx.MultiDiGraph, v: object, is_mh: dict, outlets: set) -> tuple:
    """One networkx search from a node: nearest public active manhole (the
    node itself included) and the outlet reached, by pipe length."""
    dist = nx.single_source_dijkstra_path_length(G, v, weight="length_ft")
    mh = min((d, str(n)) for n, d in dist.items() if is_mh[n]) if dist else None
    out = next((n for n in dist if n in outlets), None)
    return (None if mh is None else mh[1]), out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--buildings", type=int, default=1_000_000,
                   help="buildings wanted (parcels are scaled up to give at least this many)")
    p.add_argument("--mains", type=int, default=300_000)
    p.add_argument("--sample", type=int, default=2000, help="buildings for the networkx search")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--paths", action="store_true", help="also time the control_paths lines")
    a = p.parse_args(argv)

    t = time.perf_counter()
    # make_town gives a building on about 96 % of parcels
    layers = make_town(int(a.buildings / 0.955) + 1, a.mains, seed=a.seed)
    t_gen = time.perf_counter() - t
    crs = CRS.from_user_input(layers["mains"].crs)
    b = layers["buildings"]
    if len(b) > a.buildings:
        keep = b.index[: a.buildings]
        layers["buildings"] = b.loc[keep].reset_index(drop=True)
    town = Town(name="bench", crs=crs, ft_per_unit=feet_per_unit(crs), layers=layers,
                profile=load_profile("poughkeepsie-fourth-ward"))
    print(f"town: {len(layers['parcels']):,} parcels, {len(layers['buildings']):,} buildings, "
          f"{len(layers['mains']):,} mains, {len(layers['users']):,} users "
          f"(generated in {t_gen:.1f} s)", flush=True)

    t = time.perf_counter()
    G = build_sewer_graph(town)
    t_graph = time.perf_counter() - t
    print(f"graph: {G.number_of_nodes():,} nodes, {G.number_of_edges():,} edges "
          f"in {t_graph:.1f} s", flush=True)

    gc.collect()
    t0 = time.perf_counter()
    idx = DownstreamIndex(G)
    t1 = time.perf_counter()
    pts = connection_points(town, G, index=idx)
    t2 = time.perf_counter()
    res = control_manholes(town, G, points=pts, index=idx, paths=False)
    t3 = time.perf_counter()
    cm = res["control_manholes"]
    n_rows = len(cm)
    n_found = int(cm["control_manhole_id"].notna().sum())
    total = t3 - t0
    print(f"DownstreamIndex: {t1 - t0:.2f} s", flush=True)
    print(f"connection_points ({n_rows:,} rows): {t2 - t1:.2f} s", flush=True)
    print(f"control_manholes lookups: {t3 - t2:.2f} s ({n_found:,} with a manhole)", flush=True)
    print(f"TOTAL index + connection points + control manholes: {total:.2f} s", flush=True)
    if a.paths:
        t = time.perf_counter()
        res_p = control_manholes(town, G, points=pts, index=idx, paths=True)
        print(f"control_manholes with path lines: {time.perf_counter() - t:.2f} s "
              f"({int(res_p['control_paths'].geometry.notna().sum()):,} lines)", flush=True)
        del res_p

    # the naive way on a sample: one networkx search per building
    rng = np.random.default_rng(a.seed)
    brows = np.flatnonzero(cm["building_id"].notna().to_numpy() & cm["user_id"].isna().to_numpy()
                           & pts["edge_v"].notna().to_numpy())
    sample = rng.choice(brows, size=min(a.sample, len(brows)), replace=False)
    is_mh = dict(G.nodes(data="is_manhole", default=False))
    outlets = set(G.graph.get("outlets") or ())
    # same lookup work as the index: the search starts from the tap's downstream node
    t = time.perf_counter()
    naive = [naive_one(G, pts.at[i, "edge_v"], is_mh, outlets) for i in sample]
    t_naive = time.perf_counter() - t
    per = t_naive / len(sample)
    n_b = len(brows)
    extrap = per * n_b
    agree_mh = sum((cm.at[i, "control_manhole_id"] == m) or (m is None and cm.at[i,
                   "control_manhole_id"] is None) for i, (m, _) in zip(sample, naive, strict=True))
    agree_pl = sum(cm.at[i, "plant_id"] == o for i, (_, o) in zip(sample, naive, strict=True))
    t_lookup = (t1 - t0) + (t3 - t2)
    print(f"networkx, one search per building: {len(sample):,} in {t_naive:.2f} s = "
          f"{per * 1e3:.2f} ms each -> {extrap:,.0f} s for {n_b:,} buildings", flush=True)
    print(f"sample agreement: control manhole {agree_mh}/{len(sample)}, plant "
          f"{agree_pl}/{len(sample)}", flush=True)
    print(f"speed-up of the search part (index {t1 - t0:.2f} s + lookups {t3 - t2:.2f} s = "
          f"{t_lookup:.2f} s): {extrap / t_lookup:,.0f}x", flush=True)
    print(f"speed-up including the connection points ({total:.2f} s vs "
          f"{extrap + (t2 - t1):,.0f} s): {(extrap + (t2 - t1)) / total:,.0f}x", flush=True)
    print(f"peak RSS: {_rss_gb():.1f} GB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
