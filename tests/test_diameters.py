"""Pipes without a diameter: capacity unknown (never "no capacity"), or, with the town
file's ``assume_diameters = "largest_upstream"``, the largest diameter upstream.

The town is built by hand: a chain of five mains A -> B -> C -> D -> E to a plant,
and a head main F into the top of C. Diameters: A 8 in, B 10 in, C none, D 8 in,
E none, F none; every slope 0.004 ft/ft. The largest diameter upstream of C is B's
10 in (A 8, B 10, F none); upstream of E it is still 10 in (A, B, D 8); F has
nothing upstream and stays unknown. C's capacity is Manning's written out here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gisnet.capacity import compute_capacity
from gisnet.capacity.diameters import assume_diameters
from gisnet.capacity.network import graph_arrays
from gisnet.graph import build_sewer_graph
from gisnet.maps import classify_pipes
from gisnet.testing import towns
from gisnet.town import TownSettings
from gisnet.townfile import parse_town_file

CRS = "EPSG:2263"  # NY Long Island, US feet
X0, Y0 = 990_000.0, 200_000.0
S = 0.004
N = 0.013


def manning_gpd(d_in: float, s: float = S, n: float = N) -> float:
    """Q = (1.486 / n) A R^(2/3) S^(1/2), A = pi D^2 / 4, R = D / 4, in gpd
    (1 cfs = 7.48052 gal/ft^3 x 86,400 s/day)."""
    d = d_in / 12.0
    area = math.pi * d * d / 4.0
    q_cfs = 1.486 / n * area * (d / 4.0) ** (2.0 / 3.0) * math.sqrt(s)
    return q_cfs * 7.480519480519481 * 86_400.0


def chain_town(assume: str | None):
    xs = [X0 + 200.0 * i for i in range(6)]
    names = ["MH1", "MH2", "MH3", "MH4", "MH5"]
    diam = {"A": 8.0, "B": 10.0, "C": None, "D": 8.0, "E": None}
    mains = [towns.main(mid, [(xs[i], Y0), (xs[i + 1], Y0)], diameter_in=diam[mid], slope=S,
                        material="PVC")
             for i, mid in enumerate("ABCDE")]
    mains.append(towns.main("F", [(xs[2], Y0 + 200.0), (xs[2], Y0)], diameter_in=None,
                            slope=S, material="PVC"))
    manholes = [towns.manhole(nm, (xs[i], Y0)) for i, nm in enumerate(names)]
    manholes.append(towns.manhole("MH6", (xs[2], Y0 + 200.0)))
    parcels = [towns.parcel("P1", (xs[0] + 50, Y0 + 20, xs[0] + 150, Y0 + 120),
                            flow_gpd=20_000.0, land_use="residential", connected=True,
                            septic=False)]
    return towns.make_town(
        {"mains": mains, "manholes": manholes, "parcels": parcels,
         "plants": [towns.plant("WWTP", (xs[5], Y0), design_flow_mgd=1.0)]},
        crs=CRS, profile="berlin-nh", name="chain",
        settings=TownSettings(assume_diameters=assume))


@pytest.fixture(scope="module")
def runs():
    out = {}
    for assume in (None, "largest_upstream"):
        town = chain_town(assume)
        G = build_sewer_graph(town)
        out[assume] = (town, G, compute_capacity(town, G))
    return out


def test_without_the_switch_a_pipe_without_a_diameter_is_unknown(runs):
    town, _, res = runs[None]
    p = res.pipes.set_index("main_id")
    cls = dict(zip(res.pipes["main_id"], classify_pipes(res.pipes, town.profile), strict=True))
    for mid in ("C", "E", "F"):
        assert p.loc[mid, "capacity_status"] == "unknown: no diameter"
        assert np.isnan(p.loc[mid, "capacity_gpd"])
        assert "no_diameter" in p.loc[mid, "flags"].split(";")
        assert cls[mid] == "unknown"  # never nocapacity, never ok
        assert p.loc[mid, "diameter_source"] == "none"
    for mid in ("A", "B", "D"):
        assert p.loc[mid, "capacity_status"] == "computed"
        assert cls[mid] == "ok"
    (f,) = res.report.of_kind("capacity_unknown_no_diameter")
    assert set(f.feature_id.split(",")) == {"C", "E", "F"}
    assert "assume_diameters" in f.message and "unknown" in f.message
    assert not res.report.of_kind("no_capacity_no_diameter")
    t = res.totals["pipes"]
    assert t["capacity_unknown"] == 3 and t["no_capacity"] == 0 and t["diameter_assumed"] == 0


def test_with_the_switch_a_pipe_takes_the_largest_diameter_upstream(runs):
    _, _, res = runs["largest_upstream"]
    p = res.pipes.set_index("main_id")
    assert p.loc["C", "diameter_in"] == 10.0  # B's 10 in, larger than A's 8 in
    assert p.loc["E", "diameter_in"] == 10.0  # A 8, B 10, D 8 upstream: 10
    assert np.isnan(p.loc["F", "diameter_in"])  # a head pipe: nothing upstream
    assert p.loc["D", "diameter_in"] == 8.0  # a diameter of the data is kept
    for mid in ("C", "E"):
        assert p.loc[mid, "diameter_source"] == "largest upstream"
        assert "diameter_assumed" in p.loc[mid, "flags"].split(";")
        assert p.loc[mid, "capacity_status"] == "computed (diameter assumed: largest upstream)"
        assert p.loc[mid, "capacity_gpd"] == pytest.approx(manning_gpd(10.0), rel=1e-6)
        assert np.isfinite(p.loc[mid, "utilization"])
    # the parcel's 20,000 gpd reaches C and E and meets a capacity
    assert p.loc["C", "avg_flow_gpd"] == pytest.approx(20_000.0)
    assert p.loc["C", "utilization"] == pytest.approx(
        p.loc["C", "peak_flow_gpd"] / manning_gpd(10.0), rel=1e-6)
    assert p.loc["F", "capacity_status"] == "unknown: no diameter"
    (f,) = res.report.of_kind("diameter_assumed")
    assert set(f.feature_id.split(",")) == {"C", "E"} and f.message.startswith("2 pipe(s)")
    (u,) = res.report.of_kind("capacity_unknown_no_diameter")
    assert u.feature_id == "F" and "nothing upstream" in u.message
    assert res.totals["pipes"]["diameter_assumed"] == 2
    assert res.totals["pipes"]["capacity_unknown"] == 1


def test_largest_upstream_through_a_cycle_and_branches(runs):
    """The pass against a brute force: for every pipe without a diameter, the largest
    known diameter among the pipes that reach its tail (networkx ancestors)."""
    import networkx as nx

    _, G, _ = runs[None]
    H = nx.MultiDiGraph(G)
    # a cycle: a pipe from MH5 back up to MH3 (C, D, back form one), with 12 in
    H.add_edge("MH5", "MH3", key="Z", main_id="Z", diameter_in=12.0, gravity=True,
               active=True, kind="sanitary")
    net = graph_arrays(H)
    flow = np.ones(len(net.keys), dtype=bool)
    d, assumed = assume_diameters(net, flow)
    assert d[net.key_idx["C"]] == 12.0 and d[net.key_idx["E"]] == 12.0  # Z in the cycle
    assert np.isnan(d[net.key_idx["F"]])
    known = {k: dd for k, dd in zip(net.keys, net.diameter_in, strict=True) if dd > 0}
    for i, k in enumerate(net.keys):
        if k in known:
            assert d[i] == known[k] and not assumed[i]
            continue
        tail = net.nodes[net.u[i]]
        ups = nx.ancestors(H, tail) | {tail}
        cand = [dd["diameter_in"] for a, b, dd in H.edges(data=True)
                if b in ups and (dd.get("diameter_in") or 0) > 0]
        if cand:
            assert d[i] == max(cand) and assumed[i], k
        else:
            assert np.isnan(d[i]) and not assumed[i], k


def test_town_file_key():
    tf = parse_town_file({"name": "t", "assume_diameters": "largest_upstream"}, None)
    assert tf.assume_diameters == "largest_upstream"
    from gisnet.errors import ConfigError

    with pytest.raises(ConfigError, match="assume_diameters"):
        parse_town_file({"name": "t", "assume_diameters": "smallest"}, None)
