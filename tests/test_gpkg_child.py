"""The GeoPackage written by a child process while the analyses go on
(gisnet.io.GpkgWriter with process=True, gisnet.output.gpkg_child, gisnet.pipeline.run).

The child's file is compared with the one this process writes, layer by layer, as
pyogrio reads them back (field types, geometry type, CRS, every value).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely

from gisnet.errors import ConfigError
from gisnet.io import load_town
from gisnet.output import GpkgWriter, write_gpkg
from gisnet.output import gpkg_child as child_mod


@pytest.fixture(scope="module")
def sample_layers(sample_dir: Path) -> dict:
    from gisnet.pipeline import analyse

    return dict(analyse(load_town(sample_dir)).layers())


def _awkward() -> dict:
    """Dtypes a result layer can hold, and one column Arrow cannot take."""
    n = 6
    crs = "EPSG:2260"
    pts = [shapely.Point(i, i) for i in range(n - 2)] + [None, shapely.Point()]
    frame = gpd.GeoDataFrame({
        "id": [f"X{i}" for i in range(n)],
        "count": pd.array([1, None, 3, 4, None, 6], dtype="Int64"),
        "flag": pd.array([True, None, False, True, False, None], dtype="boolean"),
        "all_missing": pd.array([None] * n, dtype="Int64"),
        "text": ["a", None, "", "é ü ß", "b", None],
        "length_ft": [1.25, np.nan, 3.0, 4.5, 5.0, 6.75],
        "when": [dt.date(2026, 1, i + 1) for i in range(n)],
        "plain_bool": [True, False, True, False, True, False],
    }, geometry=pts, crs=crs)
    odd = frame[["id"]].assign(mixed=[1, "two", 3.5, None, {"k": 1}, [1, 2]])
    table = pd.DataFrame({"key": ["a", "b"], "value": [1.5, None]})  # no geometry
    return {"awkward": frame, "odd_objects": gpd.GeoDataFrame(odd, geometry=frame.geometry),
            "plain_table": table}


def _same_files(a: Path, b: Path) -> list[str]:
    names = [str(r[0]) for r in pyogrio.list_layers(a)]
    assert sorted(names) == sorted(str(r[0]) for r in pyogrio.list_layers(b))
    for name in names:
        ia, ib = pyogrio.read_info(a, layer=name), pyogrio.read_info(b, layer=name)
        for key in ("fields", "dtypes", "geometry_type", "crs", "features"):
            assert str(ia[key]) == str(ib[key]), (name, key)
        pd.testing.assert_frame_equal(pyogrio.read_dataframe(a, layer=name),
                                      pyogrio.read_dataframe(b, layer=name))
    return names


def test_child_writes_the_geopackage_this_process_writes(sample_layers, tmp_path: Path,
                                                         monkeypatch):
    layers = {**sample_layers, **_awkward()}
    here = write_gpkg(tmp_path / "here.gpkg", layers)
    there = write_gpkg(tmp_path / "child.gpkg", layers, process=True)
    names = _same_files(here, there)
    assert {"obligations", "control_paths", "awkward", "odd_objects", "plain_table",
            "layer_styles"} <= set(names)
    # values Arrow cannot type (a dict, a list) go as text, as pyogrio writes them:
    # the child writes that layer too, in the order the layers were given
    order = [str(r[0]) for r in pyogrio.list_layers(there)]
    assert order.index("odd_objects") < order.index("sampling_plan")

    # a layer the conversion refuses is written by this process once the child is done
    convert = child_mod.to_arrow
    monkeypatch.setattr(child_mod, "to_arrow",
                        lambda name, df: None if name == "odd_objects" else convert(name, df))
    later = write_gpkg(tmp_path / "later.gpkg", layers, process=True)
    _same_files(here, later)
    order = [str(r[0]) for r in pyogrio.list_layers(later)]
    assert order.index("odd_objects") > order.index("sampling_plan")


def test_layers_stream_in_batches_and_keep_their_geometry_type(tmp_path: Path, monkeypatch):
    """A layer longer than a batch, of polygons and multipolygons (written as
    MultiPolygon, as pyogrio writes them), with missing and empty shapes."""
    monkeypatch.setattr(child_mod, "BATCH_ROWS", 7)
    n = 30
    geoms = [shapely.box(i, 0, i + 1, 1) for i in range(n)]
    geoms[3] = shapely.MultiPolygon([shapely.box(3, 0, 4, 1), shapely.box(5, 5, 6, 6)])
    geoms[4], geoms[5] = None, shapely.Polygon()
    frame = gpd.GeoDataFrame({"parcel_id": [f"P{i}" for i in range(n)],
                              "distance_ft": np.arange(n) * 1.5},
                             geometry=geoms, crs="EPSG:2260")
    layer = child_mod.to_arrow("mixed", frame)
    assert layer is not None
    assert [b.num_rows for b in layer.batches(7)] == [7, 7, 7, 7, 2]
    assert layer.meta == {"geometry_name": "geometry", "geometry_type": "MultiPolygon",
                          "crs": "EPSG:2260"}
    here = write_gpkg(tmp_path / "here.gpkg", {"mixed": frame})
    there = write_gpkg(tmp_path / "child.gpkg", {"mixed": frame}, process=True)
    _same_files(here, there)
    back = pyogrio.read_dataframe(there, layer="mixed")
    assert back["parcel_id"].tolist() == frame["parcel_id"].tolist()
    assert shapely.equals(back.geometry.values[3], geoms[3])


def test_layers_added_as_the_analyses_end_are_written_in_that_order(sample_layers,
                                                                    tmp_path: Path):
    first = {k: sample_layers[k] for k in ("graph_nodes", "graph_edges")}
    w = GpkgWriter(tmp_path / "r.gpkg", process=True)
    with w:
        w.add(first)
        w.add(sample_layers)  # the graph's layers are not written twice
        w.close(sample_layers)
    names = [str(r[0]) for r in pyogrio.list_layers(tmp_path / "r.gpkg")]
    assert names[:2] == ["graph_edges", "graph_nodes"]
    assert sorted(n for n in names if n != "layer_styles") == sorted(sample_layers)


def test_an_error_in_the_child_is_raised_here(sample_layers, tmp_path: Path):
    path = tmp_path / "missing-folder" / "r.gpkg"
    with pytest.raises(pyogrio.errors.DataSourceError), GpkgWriter(path, process=True) as w:
        w.close({"graph_nodes": sample_layers["graph_nodes"]})


def test_a_killed_child_is_a_clear_error_and_an_abort_stops_it(sample_layers, tmp_path: Path):
    w = GpkgWriter(tmp_path / "r.gpkg", process=True)
    child = w._child
    proc = child.proc
    proc.kill()
    proc.wait()
    with pytest.raises(ConfigError, match="writer process ended without finishing"), w:
        w.close(sample_layers)
    # both ends of the dead child's pipes are closed here, not left to the collector
    assert child._to_child.closed and child._from_child.closed
    w = GpkgWriter(tmp_path / "s.gpkg", process=True)
    proc = w._child.proc
    with pytest.raises(RuntimeError, match="analysis failed"), w:
        w.add({"graph_nodes": sample_layers["graph_nodes"]})
        raise RuntimeError("analysis failed")
    assert proc.poll() is not None  # the run failed: the child is gone


def test_run_writes_a_big_towns_geopackage_while_the_analyses_go_on(sample_dir: Path,
                                                                      tmp_path: Path,
                                                                      monkeypatch):
    """The same GeoPackage, written by the child as each analysis ends."""
    import gisnet.pipeline as pipeline

    pipeline.run(load_town(sample_dir), tmp_path / "after", maps=False, progress=None)
    started = []
    real = child_mod.ChildWriter.__init__

    def spy(self, *a, **k):
        started.append(1)
        real(self, *a, **k)

    monkeypatch.setattr(child_mod.ChildWriter, "__init__", spy)
    monkeypatch.setattr(pipeline, "GPKG_CHILD_MIN_PARCELS", 0)
    monkeypatch.setenv("GISNET_THREADS", "2")
    res = pipeline.run(load_town(sample_dir), tmp_path / "early", maps=False, progress=None)
    assert started == [1]
    a, b = tmp_path / "after" / "gisnet-results.gpkg", tmp_path / "early" / "gisnet-results.gpkg"
    names_a = sorted(str(r[0]) for r in pyogrio.list_layers(a))
    names_b = [str(r[0]) for r in pyogrio.list_layers(b)]
    assert names_a == sorted(names_b)
    # the order the analyses end in: the obligations, the graph; the zone comes with the
    # capacity step's layers
    assert names_b[:4] == ["obligation_evidence", "obligations", "overdue", "graph_edges"]
    assert names_b.index("connection_zone") > names_b.index("control_manholes")
    for name in names_a:
        pd.testing.assert_frame_equal(pyogrio.read_dataframe(a, layer=name),
                                      pyogrio.read_dataframe(b, layer=name))
    assert "write" in res.timings_s


def test_run_without_maps_lets_go_of_what_nothing_after_reads(sample_dir: Path, tmp_path: Path,
                                                             monkeypatch):
    """``gisnet run`` without maps or tables (``release_inputs``): the buildings'
    polygons go once the obligations are measured (the control step measures from
    each centroid, made before), and the graph's layers, the evidence lines and
    control paths once the GeoPackage's writer has them. The GeoPackage is the same
    as a run that holds everything; the connection points still lie where the
    centroids put them."""
    from geopandas.testing import assert_geoseries_equal

    import gisnet.pipeline as pipeline

    plain = pipeline.run(load_town(sample_dir), tmp_path / "plain", maps=False, progress=None)
    monkeypatch.setattr(pipeline, "GPKG_CHILD_MIN_PARCELS", 0)
    monkeypatch.setenv("GISNET_THREADS", "2")
    town = load_town(sample_dir)
    polygons = np.asarray(town.layers["buildings"].geometry.array, dtype=object)
    centroid, inside = shapely.centroid(polygons), shapely.point_on_surface(polygons)
    # the sample's buildings are not all rectangles: a tap from the inside point would
    # differ from one from the centroid
    assert (shapely.distance(centroid, inside) > 0.01).sum() > 1000
    given: list[list[str]] = []
    compute = pipeline.compute_capacity

    def capacity(*args, points=None, **kw):
        given.append(list(points.columns))
        return compute(*args, points=points, **kw)

    monkeypatch.setattr(pipeline, "compute_capacity", capacity)
    res = pipeline.run(town, tmp_path / "lean", maps=False, progress=None,
                       release_inputs=True)
    # the capacity step is given only the points' columns it reads; the tap points
    # and the rest are let go once the control step is done
    assert given == [["parcel_id", "user_id", "edge_key"]]
    a, b = tmp_path / "plain" / "gisnet-results.gpkg", tmp_path / "lean" / "gisnet-results.gpkg"
    names = sorted(str(r[0]) for r in pyogrio.list_layers(a))
    assert names == sorted(str(r[0]) for r in pyogrio.list_layers(b))
    for name in names:
        pd.testing.assert_frame_equal(pyogrio.read_dataframe(a, layer=name),
                                      pyogrio.read_dataframe(b, layer=name))
    # what the run let go: no rows left, the columns kept (the metadata names them)
    for df, full in ((res.graph_nodes, plain.graph_nodes), (res.graph_edges, plain.graph_edges),
                     (res.obligations.evidence, plain.obligations.evidence),
                     (res.control.control_paths, plain.control.control_paths)):
        assert len(df) == 0 and list(df.columns) == list(full.columns) and len(full) > 0
    assert len(res.control.control_manholes) == len(plain.control.control_manholes)
    # the buildings keep every row (counted in the summary and the manifest) and their
    # ids; the point inside each, as the maps draw them, only where a later step reads
    # it: buildings a finding names (the worklist), whose sewer is unresolved or in the
    # sampling plan (the sampling page)
    b = town.layers["buildings"]
    assert list(b.columns) == ["building_id", "geometry"] and len(b) == len(polygons)
    held = np.asarray(b.geometry.array, dtype=object)
    kept = ~shapely.is_missing(held)
    assert shapely.equals_exact(held[kept], inside[kept], tolerance=0).all()
    cm = res.control.control_manholes
    unresolved = set(cm.loc[(cm["source"] == "unresolved").to_numpy(), "building_id"].dropna())
    planned = set(res.control.sampling_plan["building_id"].dropna())
    named = {"B0000015", "B0000016"}  # the shared building sewer's finding
    assert unresolved and planned and named <= set(b["building_id"][kept])
    assert set(b["building_id"][kept]) >= unresolved | planned
    assert kept.sum() < len(b) / 10
    # the streets and laterals: their count of rows alone
    for role in ("streets", "laterals"):
        assert len(town.layers[role]) == len(plain.town.layers[role]) > 0
        assert shapely.is_missing(np.asarray(town.layers[role].geometry.array)).all()
    assert res.summary()["layers"] == plain.summary()["layers"]
    cm, full = res.control.control_manholes, plain.control.control_manholes
    pd.testing.assert_frame_equal(pd.DataFrame(cm.drop(columns="geometry")),
                                  pd.DataFrame(full.drop(columns="geometry")))
    assert_geoseries_equal(cm.geometry, full.geometry)
    # what only follow-up questions read is gone; the summary keeps the graph's figures
    assert res.graph is None and res.control.points is None and res.capacity.index is None
    assert plain.graph is not None and plain.control.points is not None
    assert res.summary()["graph"] == plain.summary()["graph"]
    assert "graph" not in res.summary().get("not_computed", {})
    with pytest.raises(ConfigError, match="let go once the run's layers were written"):
        res.trace(str(full["parcel_id"].dropna().iloc[0]))


def test_run_with_maps_lets_go_of_the_layers_once_written_and_drawn(sample_dir: Path,
                                                                   tmp_path: Path,
                                                                   monkeypatch):
    """``gisnet run`` with maps (``release_inputs``): the evidence keeps only the rows
    the obligations page draws once the GeoPackage's writer has the layer, and every
    result layer and the town's layers go once the GeoPackage is written and the
    pages built. The GeoPackage, the pages, the manifest's record of the town and the
    summary are those of a run that holds everything."""
    import json

    import gisnet.lean as lean
    import gisnet.pipeline as pipeline
    from gisnet.labels import ATTENTION_STATUSES

    plain = pipeline.run(load_town(sample_dir), tmp_path / "plain", progress=None)
    monkeypatch.setattr(pipeline, "GPKG_CHILD_MIN_PARCELS", 0)
    monkeypatch.setenv("GISNET_THREADS", "2")
    cut: list[tuple[int, int]] = []

    def evidence(res):
        def rows():
            return None if res.obligations is None else len(res.obligations.evidence)

        before = rows()
        lean.evidence_for_maps(res)
        cut.append((before, rows()))

    monkeypatch.setattr(pipeline, "evidence_for_maps", evidence)
    town = load_town(sample_dir)
    res = pipeline.run(town, tmp_path / "lean", progress=None, release_inputs=True)
    # the evidence of the parcels that need attention, from the obligations step on
    full = plain.obligations.evidence
    marked = plain.obligations.obligations["status"].astype(object).isin(ATTENTION_STATUSES)
    drawn = full["parcel_id"].isin(plain.obligations.obligations.loc[marked, "parcel_id"])
    assert 0 < drawn.sum() < len(full)
    n = int(drawn.sum())  # once a step: the obligations' first, then the graph's and the
    # rest (the control paths, made once the graph has gone, reach the writer last)
    assert cut == [(len(full), n), (n, n), (n, n), (n, n), (n, n)]
    a, b = tmp_path / "plain", tmp_path / "lean"
    names = sorted(str(r[0]) for r in pyogrio.list_layers(a / "gisnet-results.gpkg"))
    assert names == sorted(str(r[0]) for r in pyogrio.list_layers(b / "gisnet-results.gpkg"))
    assert "obligation_evidence" in names
    for name in names:
        pd.testing.assert_frame_equal(
            pyogrio.read_dataframe(a / "gisnet-results.gpkg", layer=name),
            pyogrio.read_dataframe(b / "gisnet-results.gpkg", layer=name))
    pages = sorted(p.name for p in a.glob("*.html"))
    assert pages and pages == sorted(p.name for p in b.glob("*.html"))
    for page in pages:
        assert (a / page).read_bytes() == (b / page).read_bytes(), page
    info = [json.loads((d / "gisnet-manifest.json").read_text())["town_info"] for d in (a, b)]
    assert info[0] == info[1] and info[0]["layers"][0]["features"] > 0
    # let go: the results' layers and the town's; the summary keeps its figures
    assert res.obligations is None and res.control is None and res.capacity is None
    assert res.graph_nodes is None and not res.layers() and not town.layers
    s, p = res.summary(), plain.summary()
    assert set(s["timings_s"]) == set(p["timings_s"])
    for k in ("timings_s", "files", "register"):  # (the register: beside each output)
        s.pop(k), p.pop(k)
    assert s == p and s["layers"]["parcels"] == len(load_town(sample_dir).layers["parcels"])


def test_the_child_sends_each_written_layer_to_disk_while_the_next_is_written(
        tmp_path: Path, monkeypatch):
    """Flusher: every path asked for is flushed (fsync), one flush at a time, a path
    asked for during a flush flushed after it; a path that cannot be opened is let be
    (the flush before publishing reports a real failure)."""
    import os
    import threading

    flushed: list[int] = []
    first_started, go_on = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        flushed.append(os.fstat(fd).st_ino)
        first_started.set()
        go_on.wait(5)
        real_fsync(fd)

    monkeypatch.setattr(child_mod.os, "fsync", slow_fsync)
    a, b = tmp_path / "a.gpkg", tmp_path / "b.gpkg"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    f = child_mod.Flusher()
    f.flush(str(a))
    assert first_started.wait(5)
    f.flush(str(b))  # asked while a's flush runs: after it, on the same thread
    f.flush(str(tmp_path / "gone.gpkg"))
    assert flushed == [a.stat().st_ino]
    go_on.set()
    f.wait()
    assert sorted(flushed) == sorted([a.stat().st_ino, b.stat().st_ino])
    assert f._thread is None
    f.flush(str(a))  # a new flush after the last ended
    f.wait()
    assert len(flushed) == 3
