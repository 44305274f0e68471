"""Every geometry type in every layer role: a finding or a clear error, never a traceback.

Each case loads a small synthetic town (written as shapefiles) with one
feature of one role given a geometry of another kind, then runs every
analysis (:func:`gisnet.pipeline.analyse`). The geometry is put in after
reading (``gisnet.io.loading.read_layer``), so types no file format stores
(a LinearRing, a GeometryCollection in a shapefile) are fed too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shapely
from shapely.geometry import (
    GeometryCollection,
    LinearRing,
    LineString,
    MultiLineString,
    MultiPoint,
    MultiPolygon,
    Point,
    Polygon,
)

import gisnet.io.loading as loading
from gisnet import schema
from gisnet.errors import GisnetError
from gisnet.io import load_town
from gisnet.pipeline import analyse
from gisnet.testing.synthetic import make_town, write_town

pytestmark = pytest.mark.slow


def _shapes(x: float, y: float) -> dict[str, object]:
    sq = Polygon([(x, y), (x + 40, y), (x + 40, y + 40), (x, y + 40)])
    return {
        "Point": Point(x, y),
        "MultiPoint": MultiPoint([(x, y), (x + 20, y)]),
        "LineString": LineString([(x, y), (x + 60, y)]),
        "MultiLineString": MultiLineString([[(x, y), (x + 30, y)], [(x + 50, y), (x + 90, y)]]),
        "Polygon": sq,
        "MultiPolygon": MultiPolygon([sq, shapely.affinity.translate(sq, 100, 0)]),
        "GeometryCollection": GeometryCollection([Point(x, y), LineString([(x, y), (x + 9, y)])]),
        "empty": shapely.from_wkt("LINESTRING EMPTY"),
        "null": None,
        "LinearRing": LinearRing([(x, y), (x + 30, y), (x + 30, y + 30)]),
        "zero-length line": LineString([(x, y), (x, y)]),
        "duplicate vertices": LineString([(x, y), (x, y), (x + 40, y), (x + 40, y)]),
        "Z": shapely.from_wkt(f"LINESTRING Z ({x} {y} 5, {x + 40} {y} 6)"),
        "M": shapely.from_wkt(f"LINESTRING M ({x} {y} 5, {x + 40} {y} 6)"),
    }


SHAPES = tuple(_shapes(0, 0))
#: Roles whose layer the synthetic town writes.
ROLES = ("parcels", "buildings", "mains", "manholes", "plants", "streets", "users")


@pytest.fixture(scope="module")
def town_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("geomtown")
    write_town(make_town(30, seed=3), d, fmt="gpkg")  # one of each role
    return d


def _family_ok(role: str, shape: str) -> bool:
    fam = {"Point": "point", "MultiPoint": "point", "LineString": "line",
           "MultiLineString": "line", "Polygon": "polygon", "MultiPolygon": "polygon",
           "Z": "line", "M": "line", "duplicate vertices": "line", "LinearRing": "line",
           "empty": "none", "null": "none"}.get(shape)
    return fam is not None and fam in schema.GEOMETRY[role]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("role", ROLES)
def test_geometry_type_in_role(town_dir: Path, monkeypatch, role: str, shape: str) -> None:
    original = loading.read_layer

    def read_layer(*args, **kwargs):
        g = original(*args, **kwargs)
        if kwargs.get("role") == role:
            x0, y0, _, _ = g.total_bounds
            if not (np.isfinite(x0) and np.isfinite(y0)):  # a table without geometry
                x0, y0 = 600000.0, 1000000.0
            geoms = list(g.geometry)
            geoms[0] = _shapes(float(x0), float(y0))[shape]
            g = g.set_geometry(geoms, crs=g.crs)
        return g

    monkeypatch.setattr(loading, "read_layer", read_layer)
    try:
        town = load_town(town_dir)
        res = analyse(town)
    except GisnetError as exc:  # a clear error: one line naming the layer or file
        text = str(exc)
        assert "\n" not in text and (role in text or str(town_dir) in text), text
        return
    assert res is not None
    if not _family_ok(role, shape):
        mine = [f for f in town.report if f.layer == role]
        assert mine, f"no finding about the {shape} in {role}"


def test_finding_geometry_of_collapsed_edges() -> None:
    """A cycle's or piece's edges may include one collapsed to a point by snapping
    (Ludlow, Vermont): the finding's geometry keeps it instead of failing."""
    from gisnet.graph.topology import lines_geometry

    line = LineString([(0, 0), (1, 0)])
    assert lines_geometry([line, line]).geom_type == "MultiLineString"
    mixed = lines_geometry([line, Point(0.5, 0.2)])
    assert mixed.geom_type == "GeometryCollection" and len(mixed.geoms) == 2
    ring = lines_geometry([LinearRing([(0, 0), (1, 0), (1, 1)]), line])
    assert ring.geom_type == "MultiLineString"
    assert lines_geometry([None, shapely.from_wkt("LINESTRING EMPTY")]) is None
    assert lines_geometry([MultiLineString([[(0, 0), (1, 0)], [(2, 0), (3, 0)]])]).geom_type \
        == "MultiLineString"
