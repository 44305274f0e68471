"""gisnet.testing.towns: towns built in code are the loader's, graphs by hand follow the rules."""

from __future__ import annotations

import pytest
from shapely.geometry import Point

from gisnet import rules
from gisnet.graph import build_sewer_graph
from gisnet.io import canonical_layer
from gisnet.report import Report
from gisnet.schema import column_names
from gisnet.testing import towns
from gisnet.townfile import LayerSpec

FT_CRS = "EPSG:2222"  # international feet


def test_layers_are_the_loaders_own(town_factory):
    mains = [towns.main("M1", [(0, 0), (100, 0)]),
             towns.main("M2", [(100, 0), (200, 0)], owner="Private"),
             towns.main("M3", [(200, 0), (300, 0)], status="abandoned"),
             towns.main("M4", [(300, 0), (400, 0)], status=None, owner=None, kind=None),
             towns.main("M1", [(400, 0), (500, 0)])]
    town = town_factory({"mains": mains}, crs=FT_CRS, profile="berlin-nh")
    m = town.layers["mains"]
    # every canonical column, then the derived flags, in the loader's order
    assert list(m.columns) == [*column_names("mains"), "public", "active", "geometry"]
    assert m["main_id"].tolist() == ["M1", "M2", "M3", "M4", "M1#2"]
    assert m["owner"].tolist()[:2] == ["public", "private"]  # coded values normalised
    assert m["kind"].tolist()[3] == "unknown"
    assert m["public"].tolist() == [True, False, True, True, True]
    assert m["active"].tolist() == [True, True, False, True, True]
    # M4 has no owner and no status: taken as public and active, said once each
    assert [f.kind for f in town.report.findings] == ["duplicate_id", "owner_assumed",
                                                      "status_assumed"]
    # the same as canonical_layer itself gives for the same raw layer
    want = canonical_layer(towns.layer(mains, town.crs), LayerSpec("mains", path=None),
                           town.crs, Report())
    assert m.drop(columns="geometry").equals(want.drop(columns="geometry"))
    # parcels are always there, empty, as load_town leaves a town without them
    assert len(town.layers["parcels"]) == 0
    assert list(town.layers["parcels"].columns) == [*column_names("parcels"), "geometry"]
    assert town.profile.profile.id == "berlin-nh"
    assert town.ft_per_unit == pytest.approx(1.0)


def test_row_helpers_write_the_geometry_people_write():
    assert towns.parcel("P", (0, 0, 10, 20)).get("geometry").bounds == (0, 0, 10, 20)
    assert towns.building("B", (5, 5), "P")["geometry"].equals(Point(5, 5))
    assert towns.street("S", [(0, 0), (10, 0)], 50.0)["geometry"].length == 10
    assert towns.manhole("MH", (1, 2))["geometry"].equals(Point(1, 2))
    assert towns.user("U", parcel_id="P")["geometry"] is None
    with pytest.raises(ValueError, match="projected"):
        towns.make_town({}, crs="EPSG:4326")
    with pytest.raises(ValueError, match="role"):
        towns.make_town({"pipes": []}, crs=FT_CRS)


def test_hand_graph_flags_are_the_rules_and_the_builders():
    """The same network built by build_sewer_graph from a town and written by hand: the
    same public / active / is_manhole / gravity / eligible flags."""
    xy = {"A": (0, 0), "B": (100, 0), "C": (200, 0), "D": (300, 0), "E": (400, 0)}
    nodes = {"A": {}, "B": {"owner": "private"}, "C": {"status": "inactive"},
             "D": {"kind": "cleanout"}, "E": {}}
    pipes = [("A", "B", "P1", {}), ("B", "C", "P2", {"kind": "storm"}),
             ("C", "D", "P3", {"owner": "private"}), ("D", "E", "P4", {"kind": "force"})]
    town = towns.make_town({
        "manholes": [towns.manhole(n, xy[n], **a) for n, a in nodes.items()],
        "mains": [towns.main(k, [xy[u], xy[v]], from_node=u, to_node=v, **a)
                  for u, v, k, a in pipes],
    }, crs=FT_CRS)
    built = build_sewer_graph(town)
    hand = towns.hand_graph({n: {"x": xy[n][0], "y": xy[n][1], **a} for n, a in nodes.items()},
                            pipes, crs=FT_CRS)
    for n in nodes:
        for flag in ("public", "active", "is_manhole"):
            assert hand.nodes[n][flag] == built.nodes[n][flag], (n, flag)
    assert [hand.nodes[n]["is_manhole"] for n in nodes] == [True, False, False, False, True]
    for u, v, k, _ in pipes:
        for flag in ("public", "active", "gravity", "eligible"):
            assert hand.edges[u, v, k][flag] == built.edges[u, v, k][flag], (k, flag)
        assert hand.edges[u, v, k]["length_ft"] == pytest.approx(100.0)
    assert [hand.edges[u, v, k]["eligible"] for u, v, k, _ in pipes] == [
        True, False, False, False]
    edges = town.layers["mains"]
    assert [hand.edges[u, v, k]["eligible"] for u, v, k, _ in pipes] == \
        rules.is_eligible_for_connection(edges).tolist()


def test_hand_graph_refuses_flags_the_rules_decide():
    with pytest.raises(ValueError, match=r"gisnet\.rules"):
        towns.hand_graph({"A": {"x": 0, "y": 0}, "B": {"x": 1, "y": 0}},
                         [("A", "B", "P", {"eligible": True})], crs=FT_CRS)
    with pytest.raises(ValueError, match=r"gisnet\.rules"):
        towns.hand_graph({"A": {"x": 0, "y": 0, "public": False}}, [], crs=FT_CRS)
