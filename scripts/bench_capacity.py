"""Benchmark gisnet.capacity on a synthetic town (run by hand, under the bench lock).

    flock /tmp/gisnet-bench.lock /work/venv/bin/python scripts/bench_capacity.py \
        --mains 300000 --parcels 1000000

Times, separately: building the town and graph (setup), connection points
(gisnet.tracing), ``compute_capacity`` with those points (flows, accumulation,
Manning, plants: the figure the target applies to, <= 5 s at 300,000 mains),
and ``whatif`` from the parcels farthest upstream (<= 0.5 s each).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
from pyproj import CRS

from gisnet import capacity as cap
from gisnet.graph import build_sewer_graph
from gisnet.profile import load_profile
from gisnet.testing.synthetic import make_town
from gisnet.town import Town
from gisnet.tracing import DownstreamIndex, connection_points
from gisnet.units import feet_per_unit


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mains", type=int, default=300_000)
    ap.add_argument("--parcels", type=int, default=1_000_000)
    ap.add_argument("--profile", default="berlin-nh")
    ap.add_argument("--repeat", type=int, default=3, help="compute_capacity runs (best kept)")
    ap.add_argument("--whatifs", type=int, default=5)
    args = ap.parse_args()

    t0 = time.perf_counter()
    layers = make_town(args.parcels, args.mains, seed=1)
    crs = CRS.from_user_input(layers["mains"].crs)
    town = Town(name="bench", crs=crs, ft_per_unit=feet_per_unit(crs), layers=layers,
                profile=load_profile(args.profile))
    t_town = time.perf_counter() - t0
    t0 = time.perf_counter()
    G = build_sewer_graph(town)
    t_graph = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = DownstreamIndex(G)
    pts = connection_points(town, G, index=index)
    t_points = time.perf_counter() - t0
    print(f"town: {len(layers['parcels']):,} parcels, {len(layers['mains']):,} mains "
          f"({t_town:.1f} s); graph {G.number_of_nodes():,} nodes {G.number_of_edges():,} edges "
          f"({t_graph:.1f} s); connection points {len(pts):,} ({t_points:.1f} s)")

    times = []
    res = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = cap.compute_capacity(town, G, points=pts, index=index)
        times.append(time.perf_counter() - t0)
    assert res is not None
    p = res.pipes
    print(f"compute_capacity: best {min(times):.2f} s, runs "
          f"{', '.join(f'{t:.2f}' for t in times)} s; pipes {len(p):,}, computed "
          f"{int(p['computed'].sum()):,}, over threshold {int(p['over_threshold'].sum()):,}, "
          f"levels {int(res.accumulation.node_level.max()) + 1:,}")
    t0 = time.perf_counter()
    acc = cap.accumulate(res.network, np.zeros((len(p), 3)), p["computed"].to_numpy(),
                         res.capacity_gpd)
    print(f"  of which accumulation alone: {time.perf_counter() - t0:.2f} s "
          f"({len(acc.splits)} splits)")
    print("  plants:", p.shape[0] and res.plants[["plant_id", "avg_flow_mgd", "ratio",
                                                   "basis"]].to_dict(orient="records"))

    # What-if from the parcels farthest (along the pipes) from the plant.
    tap = pts[pts["user_id"].isna() & pts["edge_key"].notna()].copy()
    v = np.array([index.node_index[x] for x in tap["edge_v"]])
    tap["outlet_ft"] = index.outlet_ft[v]
    far = tap.sort_values("outlet_ft", ascending=False, kind="stable").drop_duplicates("parcel_id")
    wt, lens = [], []
    for pid in far["parcel_id"].head(args.whatifs):
        t0 = time.perf_counter()
        w = cap.whatif(town, G, res, parcel_id=pid, flow_gpd=12_000)
        wt.append(time.perf_counter() - t0)
        lens.append(len(w.pipes))
    print(f"whatif: {', '.join(f'{t * 1000:.0f}' for t in wt)} ms for downstream paths of "
          f"{', '.join(map(str, lens))} pipes (max {max(wt) * 1000:.0f} ms)")
    print(f"peak RSS {rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
