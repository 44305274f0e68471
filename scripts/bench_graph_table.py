#!/usr/bin/env python
"""Benchmark: the downstream index and the capacity network, from the graph's
dictionaries and from the table of the columns it was filled from.

Loads a town's layers folder (e.g. one ``scripts/make_city.py`` wrote), builds the
graph with its table (:func:`gisnet.graph.build.build_graph_parts`), then times

1. ``DownstreamIndex(G)`` and ``DownstreamIndex(G, table=table)``,
2. ``graph_arrays(G)`` and ``graph_arrays(G, table)``,

and checks that each pair holds the same values (the same objects where the arrays
hold objects). Run under the shared lock (a county needs several GB):

    flock /tmp/gisnet-bench.lock .venv/bin/python scripts/bench_graph_table.py bench-data/county

Figures go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, np.ndarray) and want.dtype != object:
        return bool(np.array_equal(got, want, equal_nan=want.dtype.kind == "f"))
    if isinstance(want, (np.ndarray, list)):
        return len(got) == len(want) and all(
            a is b or a == b for a, b in zip(got, want, strict=True))
    return bool(got == want)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("layers", help="a town's layers folder")
    args = ap.parse_args(argv)

    from gisnet.capacity import graph_arrays
    from gisnet.graph.build import build_graph_parts
    from gisnet.io import load_town
    from gisnet.tracing import DownstreamIndex

    town = load_town(args.layers)
    built = build_graph_parts(town)
    G, table = built.graph, built.table
    if table is None:
        print("the graph's columns do not map one to one onto it: no table", file=sys.stderr)
        return 1
    out: dict[str, Any] = {"nodes": len(G), "edges": len(table.keys)}
    t = time.perf_counter()
    read = DownstreamIndex(G)
    out["index_from_graph_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    given = DownstreamIndex(G, table=table)
    out["index_from_table_s"] = round(time.perf_counter() - t, 2)
    differ = [k for k, v in vars(read).items()
              if k not in ("G", "edges") and not _same(getattr(given, k), v)]
    differ += ["edges." + k for k, v in vars(read.edges).items()
               if not _same(getattr(given.edges, k), v)]
    t = time.perf_counter()
    net_read = graph_arrays(G)
    out["network_from_graph_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    net_given = graph_arrays(G, table)
    out["network_from_table_s"] = round(time.perf_counter() - t, 2)
    differ += ["network." + k for k, v in vars(net_read).items()
               if not _same(getattr(net_given, k), v)]
    out["same"] = not differ
    print(json.dumps(out))
    if differ:
        print("differ: " + ", ".join(differ), file=sys.stderr)
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
