"""The partitioned large-town path: parcel-level layers computed in Hilbert partitions on
Dask, with a halo, equal row for row to the one-process answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

from gisnet.batch import analyse_partitioned, close_client, halo_ft, make_client, sort_rows
from gisnet.io import load_town
from gisnet.pipeline import analyse
from gisnet.testing.synthetic import make_town, write_town

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    c = make_client(workers=2)
    yield c
    close_client(c)


def _comparable(name, df):
    return sort_rows(name, df)


def assert_same(part, one) -> None:
    layers = one.layers()
    for name, df in part.layers().items():
        want = layers[name]
        assert len(df) == len(want), name
        assert_frame_equal(_comparable(name, df), _comparable(name, want), obj=name)


@pytest.mark.parametrize("partitions", [4, 7])
def test_sample_town_in_partitions(client, partitions: int) -> None:
    town = load_town(SAMPLE)
    one = analyse(town, only=("obligations", "control"))
    part = analyse_partitioned(load_town(SAMPLE), client=client, partitions=partitions,
                               graph=one.graph)
    assert len(part.partitions) == partitions and sum(part.partitions) == 3000
    assert min(part.partitions) > 0
    assert part.halo_ft == 350.0  # 300 ft (Poughkeepsie) + 50 ft margin
    assert_same(part, one)


def test_generated_town_building_measure(client, tmp_path: Path) -> None:
    """Berlin (200 ft from the building), irregular lots, laterals: 6 partitions."""
    layers = make_town(6000, seed=3, irregular=True, laterals=True)
    folder = write_town(layers, tmp_path / "town", fmt="gpkg", profile="berlin-nh",
                        name="gen")
    town = load_town(folder)
    assert halo_ft(town) == max(200.0, town.profile.connection.default_street_width_ft
                                + town.profile.connection.abutting_tolerance_ft) + 50.0
    one = analyse(town, only=("obligations", "control"))
    part = analyse_partitioned(load_town(folder), client=client, partitions=6)
    assert sum(part.partitions) == len(town.layers["parcels"])
    assert_same(part, one)


def test_hilbert_partitions_are_equal_runs_of_neighbours() -> None:
    """Equal counts (within one); each partition a compact block of the grid, not
    strips across it; a parcel with no geometry goes to partition 0."""
    import geopandas as gpd
    import numpy as np
    import shapely

    from gisnet.batch.partition import hilbert_partitions

    cells = [shapely.box(x, y, x + 1, y + 1) for y in range(32) for x in range(32)]
    parcels = gpd.GeoDataFrame({"parcel_id": [str(i) for i in range(1025)]},
                               geometry=[*cells, None], crs="EPSG:2260")
    part = hilbert_partitions(parcels, 4)
    assert part[-1] == 0
    counts = np.bincount(part[:-1], minlength=4)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 1024
    for i in range(4):  # a Hilbert curve over a 32 x 32 grid: each quarter is a 16 x 16 square
        x0, y0, x1, y1 = parcels[:-1][part[:-1] == i].total_bounds
        assert (x1 - x0, y1 - y0) == (16, 16)
    assert sorted(hilbert_partitions(parcels.iloc[:3], 8)) == [0, 1, 2]  # no more than rows


def test_worker_graph_keeps_the_network_and_drops_the_rest() -> None:
    from gisnet.batch.partition import WORKER_EDGE_ATTRS, worker_graph
    from gisnet.graph import build_sewer_graph

    G = build_sewer_graph(load_town(SAMPLE))
    H = worker_graph(G)
    assert list(H.nodes) == list(G.nodes)
    assert list(H.edges(keys=True)) == list(G.edges(keys=True))
    assert all(set(d) <= set(WORKER_EDGE_ATTRS) and d["main_id"] == G.edges[u, v, k]["main_id"]
               for u, v, k, d in H.edges(keys=True, data=True))
    assert all(not d for _, d in H.nodes(data=True))
    assert "report" in G.graph and "report" not in H.graph
    assert H.graph["crs"] == G.graph["crs"]
