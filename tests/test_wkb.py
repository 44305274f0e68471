"""Shapes as WKB by numpy (gisnet.output.wkb): the bytes shapely.to_wkb gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import shapely

from gisnet.output.wkb import _simple_wkb, wkb_array


def _shapely(geoms: np.ndarray) -> pa.Array:
    return pa.array(shapely.to_wkb(geoms), type=pa.binary())


def _same(geoms, *, by_numpy: bool) -> None:
    geoms = np.asarray(geoms, dtype=object)
    got = wkb_array(geoms)
    assert got.equals(_shapely(geoms))
    assert (_simple_wkb(geoms) is not None) is by_numpy


rng = np.random.default_rng(7)
POINTS = shapely.points(rng.random((500, 2)) * 1e6)
SEGMENTS = shapely.linestrings(rng.random((1000, 2)) * 1e4, indices=np.repeat(np.arange(500), 2))
# lines of 2 to 6 vertices: every shape its own length
_n = rng.integers(2, 7, 300)
LINES = shapely.linestrings(rng.random((_n.sum(), 2)) * 1e4, indices=np.repeat(np.arange(300), _n))
SQUARES = shapely.box(*(rng.random((4, 200)) * [[1], [1], [2], [2]]))
ROUND = shapely.buffer(POINTS[:200], rng.random(200) * 50 + 1, quad_segs=3)


@pytest.mark.parametrize("geoms", [POINTS, SEGMENTS, LINES, SQUARES, ROUND],
                         ids=["points", "segments", "lines", "squares", "round"])
def test_one_simple_type_is_written_by_numpy_as_shapely_writes_it(geoms) -> None:
    _same(geoms, by_numpy=True)
    with_missing = geoms.copy()
    with_missing[::3] = None
    _same(with_missing, by_numpy=True)
    got = wkb_array(with_missing)
    assert got.null_count == len(geoms[::3]) and got[0].as_py() is None


def test_nan_coordinates_keep_their_bytes() -> None:
    _same([shapely.Point(np.nan, 1.5), shapely.Point(2.0, -0.0)], by_numpy=True)


@pytest.mark.parametrize("geoms", [
    [None, None],
    [shapely.Point(), shapely.Point(1, 2)],
    [shapely.Point(1, 2, 3)],
    [shapely.Point(1, 2), shapely.LineString([(0, 0), (1, 1)])],
    [shapely.Polygon([(0, 0), (10, 0), (10, 10), (0, 10)], [[(1, 1), (2, 1), (2, 2)]])],
    [shapely.MultiPoint([(0, 0), (1, 1)])],
    [shapely.MultiPolygon([shapely.box(0, 0, 1, 1)])],
    [shapely.GeometryCollection([shapely.Point(0, 0)])],
    [shapely.LinearRing([(0, 0), (1, 0), (1, 1), (0, 0)])],
], ids=["missing", "empty", "z", "two-types", "holes", "multipoint", "multipolygon",
        "collection", "ring"])
def test_anything_else_goes_through_shapely(geoms) -> None:
    _same(geoms, by_numpy=False)


def test_the_sample_towns_shapes(sample_dir) -> None:
    from gisnet.io import load_town

    town = load_town(sample_dir)
    for role, gdf in town.layers.items():
        if gdf is None or gdf.geometry.name not in gdf.columns:
            continue
        geoms = np.asarray(gdf.geometry.array, dtype=object)
        assert wkb_array(geoms).equals(_shapely(geoms)), role
