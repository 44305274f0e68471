"""Vector tiles of the map layers (gisnet.maps.tiles), tiled pages (gisnet.maps.tiled)
and their serving (gisnet.service.tiles).

Tiles are decoded with ``mapbox_vector_tile`` and archives read back with the
``pmtiles`` reader; geometry is checked against pyproj's Web Mercator and
morecantile's tile bounds, independently of the encoder.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import geopandas as gpd
import mapbox_vector_tile
import morecantile
import numpy as np
import pytest
import shapely
from pmtiles.reader import MmapSource, Reader, all_tiles

from gisnet.maps import mvt, tile_blocks
from gisnet.maps import tiles as T
from gisnet.maps.encoding import Prop


@pytest.fixture(scope="module")
def sample_town(sample_dir: Path):
    from gisnet.io import load_town

    return load_town(sample_dir)


CRS = "EPSG:32618"  # UTM 18N, metres (Poughkeepsie)
TMS = morecantile.tms.get("WebMercatorQuad")


def _parcels(n: int = 400, seed: int = 3) -> gpd.GeoDataFrame:
    rng = np.random.default_rng(seed)
    x = 588_000 + rng.uniform(0, 3000, n)
    y = 4_615_000 + rng.uniform(0, 3000, n)
    boxes = shapely.box(x, y, x + rng.uniform(10, 40, n), y + rng.uniform(10, 40, n))
    # a few with a hole, a few multipolygons
    boxes[0] = shapely.Polygon(shapely.get_coordinates(boxes[0].exterior),
                               [shapely.get_coordinates(shapely.box(
                                   x[0] + 3, y[0] + 3, x[0] + 6, y[0] + 6).exterior)])
    boxes[1] = shapely.MultiPolygon([boxes[1], shapely.box(x[1] + 60, y[1], x[1] + 70,
                                                           y[1] + 10)])
    status = np.where(np.arange(n) % 3 == 0, "required", "connected")
    return gpd.GeoDataFrame({"parcel_id": [f"P{i}" for i in range(n)], "status": status,
                             "distance_ft": np.round(rng.uniform(0, 400, n), 1)},
                            geometry=boxes, crs=CRS)


def _props(gdf: gpd.GeoDataFrame) -> dict:
    return {"parcel_id": list(gdf["parcel_id"]), "status": list(gdf["status"]),
            "distance_ft": Prop(list(gdf["distance_ft"]), ("n", 1, "ft")),
            "section": ["§ 168-22"] * len(gdf)}


def _decode(data: bytes) -> dict:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return mapbox_vector_tile.decode(data, default_options={"y_coord_down": True})


def test_commands_match_mapbox_vector_tile_encoder():
    """The numpy command encoder gives the same stream as the library's own encoder."""
    poly = shapely.Polygon([(10, 10), (10, 100), (100, 100), (100, 10)],
                           [[(20, 20), (40, 20), (40, 40), (20, 40)]])
    line = shapely.MultiLineString([[(0, 0), (5, 7), (9, 9)], [(50, 50), (60, 40)]])
    for geom, family in ((poly, "polygon"), (line, "line"),
                         (shapely.Point(33, 44), "point")):
        ref = mapbox_vector_tile.encode(
            [{"name": "l", "features": [{"geometry": geom, "properties": {}}]}],
            default_options={"quantize_bounds": None, "y_coord_down": True})
        ref_cmds = list(_raw_layer(ref).features[0].geometry)
        if family == "polygon":
            rings = shapely.get_rings(shapely.orient_polygons(geom, exterior_cw=False))
            parts = [shapely.get_coordinates(r)[:-1] for r in rings]
        elif family == "line":
            parts = [shapely.get_coordinates(p) for p in shapely.get_parts(geom)]
        else:
            parts = [shapely.get_coordinates(geom)]
        xy = np.concatenate(parts).astype(np.int64)
        cmds, offs = T.commands(xy, np.array([len(p) for p in parts]),
                                np.zeros(len(parts), dtype=np.int64), family, 1)
        assert offs.tolist() == [0, len(cmds)]
        assert cmds.tolist() == ref_cmds, family


def _protobuf_tile(name, family, fids, cmds, offsets, keys, codes, values) -> bytes:
    """One tile built with the protobuf classes of ``mapbox-vector-tile`` (the reference
    for the vectorised encoder): features without geometry left out, the values the
    others use in the order of ``values``."""
    from mapbox_vector_tile.Mapbox import vector_tile_pb2

    keep = [i for i in range(len(fids)) if offsets[i + 1] > offsets[i]]
    used = sorted({int(c) for i in keep for c in codes[i] if c >= 0})
    local = {v: k for k, v in enumerate(used)}
    t = vector_tile_pb2.tile()
    layer = t.layers.add()
    layer.version, layer.name, layer.extent = 2, name, 4096
    layer.keys.extend(keys)
    for v in used:
        val, gv = layer.values.add(), values[v]
        if isinstance(gv, str):
            val.string_value = gv
        elif float(gv).is_integer() and abs(gv) < 2**53:
            val.sint_value = int(gv)
        else:
            val.double_value = float(gv)
    for i in keep:
        tags = [x for j, c in enumerate(codes[i]) if c >= 0 for x in (j, local[int(c)])]
        layer.features.add(id=int(fids[i]), type={"point": 1, "line": 2, "polygon": 3}[family],
                           tags=tags, geometry=[int(c) for c in cmds[offsets[i]:offsets[i + 1]]])
    return t.SerializeToString()


@pytest.mark.parametrize("family", ["point", "line", "polygon"])
def test_tile_encoder_gives_the_bytes_of_the_protobuf_library(family, monkeypatch):
    """Every tile of a zoom, encoded in one vectorised pass, is byte for byte the tile the
    protobuf classes give: multi-byte varints (ids past 2**21, long command runs, big
    coordinates), text (accented, long), whole, negative, fractional and huge numbers,
    missing values, features without geometry, tiles split across encoding chunks."""
    rng = np.random.default_rng(11)
    monkeypatch.setattr(mvt, "_CHUNK_FEATURES", 37)
    monkeypatch.setattr(mvt, "_CHUNK_VALUES", 3)
    n = 400
    tile = np.sort(rng.integers(0, 25, n)) * 7919
    fids = rng.integers(0, 2**40, n)
    fids[:5] = [0, 1, 127, 128, 2**21]
    sizes = rng.integers(0, 60, n)
    sizes[rng.random(n) < 0.1] = 0  # no geometry left in the tile
    sizes[3] = 400  # a command run past 127 values
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    cmds = rng.integers(0, 2**32, int(offsets[-1]), dtype=np.uint64).astype(np.uint32)
    cmds[::3] = rng.integers(0, 100, len(cmds[::3]))
    values = ["Mühle Straße 12", "x" * 300, "", "P7", 0.0, 3.0, -4.0, 2.5, -1e-9, 1e300,
              float(2**53), float(2**53 + 2**11), 123456789.0, "ß"]
    keys = ["parcel_id", "status", "distance_ft"]
    codes = rng.integers(-1, len(values), (n, len(keys)))
    out = mvt.encode_tiles("features", tile, fids, family, cmds, offsets, keys, codes,
                         mvt.value_table(values))
    tiles = sorted(set(tile[sizes > 0].tolist()))
    assert [t for t, _ in out] == tiles
    for t, data in out:
        sel = np.flatnonzero(tile == t)
        sub_off = offsets[sel[0]:sel[-1] + 2] - offsets[sel[0]]
        ref = _protobuf_tile("features", family, fids[sel], cmds[offsets[sel[0]]:],
                             sub_off, keys, codes[sel], values)
        assert data == ref, t
    # and without properties
    out = mvt.encode_tiles("overview", tile, fids, family, cmds, offsets, [],
                         np.zeros((n, 0), dtype=np.int64), mvt.value_table([]))
    t, data = out[0]
    sel = np.flatnonzero(tile == t)
    assert data == _protobuf_tile("overview", family, fids[sel], cmds[offsets[sel[0]]:],
                                  offsets[sel[0]:sel[-1] + 2] - offsets[sel[0]], [],
                                  np.zeros((len(sel), 0), dtype=np.int64), [])


def _raw_layer(data: bytes):
    from mapbox_vector_tile.Mapbox import vector_tile_pb2

    t = vector_tile_pb2.tile()
    t.ParseFromString(data)
    return t.layers[0]


def test_text_values_read_from_arrow_are_the_bytes_of_python_strings(monkeypatch):
    """Text properties held as codes (``TextCodes``) are encoded from Arrow's buffers
    with their blanks found by RE2: the value ids, constants and value bytes are
    those the Python strings give (blank = empty or Python's ``isspace``)."""
    import pyarrow as pa

    from gisnet.maps.encoding import TextCodes

    texts = ["P-1", "", "  ", "\u00e9t\u00e9 7", "P-1", None, "\u3000\t", "Z\U0001f600",
             "\u2028", "a b", "x" * 200, "\x85", float("nan"), "P-1"]
    rows = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
    for pick in (rows, rows[::-1], rows[[1, 2, 5, 6, 8]], rows[[0, 4, 13]]):
        want = T.property_columns({"t": [texts[i] for i in range(len(texts))]}, pick)
        got = T.property_columns({"t": TextCodes.of(texts)}, pick)
        assert got.names == want.names and got.constants == want.constants
        np.testing.assert_array_equal(got.codes, want.codes)
        for a, b in ((got.table.buf, want.table.buf), (got.table.start, want.table.start),
                     (got.table.size, want.table.size)):
            np.testing.assert_array_equal(a, b)
    # Arrow arrays of both offset widths, sliced, and chunked as lists are
    words = [f"w{i}-\u00e9" * (i % 5) for i in range(300)]
    for arr in (pa.array(words, type=pa.string()), pa.array(words, type=pa.large_string())):
        for a, b in ((0, 300), (7, 290), (299, 300)):
            want, got = mvt.text_table(words[a:b]), mvt.text_table(arr[a:b])
            assert bytes(got.buf) == bytes(want.buf)
            np.testing.assert_array_equal(got.start, want.start)
    monkeypatch.setattr(mvt, "_CHUNK_VALUES", 16)
    got, want = mvt.text_table(pa.array(words)[3:]), mvt.text_table(words[3:])
    assert bytes(got.buf) == bytes(want.buf)
    np.testing.assert_array_equal(got.size, want.size)


def test_search_points_of_shapes_shared_by_layers_are_each_layers_own():
    """The search index finds each shape's inner point once however many layers hold
    it: the points are ``shapely.point_on_surface`` of each layer's own features."""
    from gisnet.maps.search_index import _inner_points

    parcels = _parcels(60)
    by_status = parcels.iloc[::3].reset_index(drop=True)  # the same shapes, other frame
    other = _parcels(20, seed=9)
    other.loc[4, "geometry"] = None
    other.loc[7, "geometry"] = shapely.Polygon()
    pts = _parcels(30, seed=4)
    pts["geometry"] = shapely.point_on_surface(pts.geometry.values)  # points: their own
    pts.loc[2, "geometry"] = shapely.MultiPoint([(588_010, 4_615_020), (588_400, 4_615_900)])
    pts.loc[5, "geometry"] = shapely.Point(588_100, 4_615_100, 12.5)
    pts.loc[8, "geometry"] = shapely.Point()
    frames = [parcels, by_status, other, pts]
    for frame, got in zip(frames, _inner_points(frames), strict=True):
        geoms = np.asarray(frame.geometry.array, dtype=object)
        ok = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
        want = np.full((len(frame), 2), np.nan)
        want[ok] = shapely.get_coordinates(shapely.point_on_surface(geoms[ok]))
        np.testing.assert_array_equal(got, want)


def test_kept_layers_share_the_distinct_texts_of_a_property(monkeypatch):
    """Tiled layers drawing the same ids keep one array of their distinct texts (the
    codes renumbered): each layer reads back its own values, and its tiles' values
    are the bytes of its unshared texts."""
    from gisnet.maps import tiled
    from gisnet.maps.encoding import TextCodes

    monkeypatch.setattr(tiled, "SHARED_TEXTS_MIN", 1)
    tiler = tiled.Tiler(min_features=1)
    whole = _parcels(30)
    ids = [f"P{i:03d}" for i in range(30)]
    some = [ids[i] for i in (29, 3, 3, 17, 0)] + [None]  # other order, a subset, a gap
    other = [f"Q{i}" for i in range(6)]  # texts the first has not
    tiler.defer(whole, {"parcel_id": ids})
    tiler.defer(whole.iloc[:6], {"parcel_id": some})
    tiler.defer(whole.iloc[:6], {"parcel_id": other})
    kept = [src.props["parcel_id"] for src in tiler.sources.values()]
    assert all(isinstance(k, TextCodes) for k in kept)
    assert kept[1].uniques is kept[0].uniques and kept[2].uniques is not kept[0].uniques
    for k, values in zip(kept, (ids, some, other), strict=True):
        assert list(k) == values
        rows = np.arange(len(values))[::-1]
        got = T.property_columns({"p": k}, rows)
        want = T.property_columns({"p": TextCodes.of(values)}, rows)
        np.testing.assert_array_equal(got.codes, want.codes)
        assert bytes(got.table.buf) == bytes(want.table.buf)


def test_detail_tiles_hold_each_parcel_with_its_properties(tmp_path: Path):
    gdf = _parcels()
    st = T.write_layer_tiles(tmp_path / "p.pmtiles", gdf, _props(gdf), name="parcels")
    assert st.family == "polygon" and st.features == len(gdf)
    assert st.constants == {"section": "§ 168-22"}  # one value: kept once, not per feature
    assert st.formats == {"distance_ft": ["n", 1, "ft"]}
    merc = gdf.to_crs("EPSG:3857")
    seen: dict[int, float] = {}
    with open(tmp_path / "p.pmtiles", "rb") as f:
        src = MmapSource(f)
        header = Reader(src).header()
        assert (header["min_zoom"], header["max_zoom"]) == (T.OVERVIEW_MIN_ZOOM, T.DETAIL_ZOOM)
        for (z, x, y), data in all_tiles(src):
            if z != T.DETAIL_ZOOM:
                continue
            left, bottom, right, top = TMS.xy_bounds(morecantile.Tile(x, y, z))
            scale = T.EXTENT / (right - left)
            tile_box = shapely.box(left, bottom, right, top)
            pad = T.BUFFER / scale  # pieces keep BUFFER tile units beyond the tile
            padded = shapely.box(left - pad, bottom - pad, right + pad, top + pad)
            for feat in _decode(data)["features"]["features"]:
                i = feat["id"]
                assert feat["properties"]["parcel_id"] == f"P{i}"
                assert feat["properties"]["status"] == gdf["status"].iloc[i]
                assert feat["properties"]["distance_ft"] == pytest.approx(
                    gdf["distance_ft"].iloc[i])
                assert "section" not in feat["properties"]
                # tile coordinates back to metres: the parcel's part in this tile
                g = shapely.geometry.shape(feat["geometry"])
                c = shapely.get_coordinates(g)
                back = shapely.set_coordinates(
                    g, np.column_stack([left + c[:, 0] / scale, top - c[:, 1] / scale]))
                want = merc.geometry.iloc[i].intersection(padded)
                unit = 1 / scale  # one tile unit, in metres: the rounding
                assert back.symmetric_difference(want).area <= unit * want.length
                assert shapely.hausdorff_distance(back, want) <= unit
                seen[i] = seen.get(i, 0.0) + back.intersection(tile_box).area
    assert sorted(seen) == list(range(len(gdf)))  # every parcel is in some tile
    full = merc.geometry.area.to_numpy()
    got = np.array([seen[i] for i in range(len(gdf))])
    perim = merc.geometry.length.to_numpy()
    # the pieces cover the parcel once (up to the rounding to tile units)
    assert (np.abs(got - full) <= perim * 0.6 / scale).all()


def test_rings_read_from_coordinates_equal_shapelys_oriented_rings():
    """The tiles' rings (exterior clockwise, holes counter-clockwise, y up) are read
    from the coordinates; shapely's orient_polygons + get_rings is the reference,
    on polygons of either winding, with and without holes, and multi-part pieces."""
    rng = np.random.default_rng(4)
    polys = []
    for i in range(300):
        x, y = rng.uniform(0, 1000, 2)
        shell = shapely.box(x, y, x + 50, y + 40, ccw=bool(i % 2))
        holes = [shapely.box(x + 5 + 12 * k, y + 5, x + 10 + 12 * k, y + 10,
                             ccw=bool(i % 3)).exterior.coords for k in range(i % 4)]
        polys.append(shapely.Polygon(shell.exterior.coords, holes))
    polys = np.asarray(polys, dtype=object)
    coords, ring, owner, exterior = T._oriented_rings(polys)
    rings, ridx = shapely.get_rings(shapely.orient_polygons(polys, exterior_cw=True),
                                    return_index=True)
    ref, rref = shapely.get_coordinates(rings, return_index=True)
    np.testing.assert_array_equal(coords, ref)
    np.testing.assert_array_equal(ring, rref)
    np.testing.assert_array_equal(owner, ridx)
    firsts = np.r_[0, np.flatnonzero(np.diff(owner)) + 1]
    assert exterior.sum() == len(polys) and exterior[firsts].all()
    multi = np.asarray([shapely.MultiPolygon([polys[0], polys[1]]), polys[2]], dtype=object)
    parts, idx = T._parts(multi)
    ref_parts, ref_idx = shapely.get_parts(multi, return_index=True)
    assert shapely.equals_exact(parts, ref_parts, tolerance=0).all()
    np.testing.assert_array_equal(idx, ref_idx)


def test_hole_and_winding_survive(tmp_path: Path):
    gdf = _parcels()
    tiles, _ = T.layer_tiles(gdf, _props(gdf))
    for (z, _, _), data in tiles.items():
        if z != T.DETAIL_ZOOM:
            continue
        for feat in _decode(data)["features"]["features"]:
            if feat["id"] == 0 and feat["geometry"]["type"] == "Polygon":
                assert len(feat["geometry"]["coordinates"]) == 2  # exterior + hole
            if feat["id"] == 1:
                assert feat["geometry"]["type"] == "MultiPolygon"
    # exterior rings clockwise on screen: positive surveyor's area in tile coordinates
    # (MVT 2.1, 4.3.4.4), holes negative
    def area(ring):
        c = np.asarray(ring, dtype=float)
        return 0.5 * np.sum(c[:-1, 0] * c[1:, 1] - c[1:, 0] * c[:-1, 1])

    n = 0
    for (z, _, _), data in tiles.items():
        if z != T.DETAIL_ZOOM:
            continue
        for feat in _decode(data)["features"]["features"]:
            geom = feat["geometry"]
            polys = [geom["coordinates"]] if geom["type"] == "Polygon" else geom["coordinates"]
            for rings in polys:
                assert area(rings[0]) > 0
                assert all(area(r) < 0 for r in rings[1:])
                n += 1
    assert n >= len(gdf)


def test_overview_counts_and_merged_lines():
    gdf = _parcels(1000)
    tiles, info = T.layer_tiles(gdf, _props(gdf))
    for z in range(T.OVERVIEW_MIN_ZOOM, T.DETAIL_ZOOM):
        total = 0
        for (tz, _, _), data in tiles.items():
            if tz == z:
                total += sum(f["properties"]["n"]
                             for f in _decode(data)["overview"]["features"])
        assert total == len(gdf), z  # each parcel counted once per zoom
        assert info["overview_max"][str(z)] >= 1
    # lines: one merged feature per tile and style
    rng = np.random.default_rng(1)
    x = 588_000 + rng.uniform(0, 3000, 300)
    y = 4_615_000 + rng.uniform(0, 3000, 300)
    lines = gpd.GeoDataFrame(
        {"_c": np.where(np.arange(300) % 2 == 0, "sanitary", "storm")},
        geometry=shapely.linestrings(np.stack([np.column_stack([x, y]),
                                               np.column_stack([x + 80, y + 30])], axis=1)),
        crs=CRS)
    tiles, info = T.layer_tiles(lines, {"_c": list(lines["_c"]),
                                        "main_id": [f"M{i}" for i in range(300)]},
                                style_keys=("_c",))
    assert info["family"] == "line"
    for (z, _, _), data in tiles.items():
        layers = _decode(data)
        if z < T.DETAIL_ZOOM:
            classes = [f["properties"]["_c"] for f in layers["overview"]["features"]]
            assert len(classes) == len(set(classes))  # merged per style
            assert all("main_id" not in f["properties"] for f in layers["overview"]["features"])
        else:
            assert {f["properties"]["main_id"] for f in layers["features"]["features"]} <= \
                {f"M{i}" for i in range(300)}


def test_overview_tiles_keep_the_widest_lines_when_they_cannot_hold_all():
    """A county's 300,000 mains at town zoom: an overview tile holds at most
    max_lines lines, the widest first (then the longest); the detail tiles keep all."""
    rng = np.random.default_rng(2)
    n = 400
    x = 588_000 + rng.uniform(0, 2000, n)
    y = 4_615_000 + rng.uniform(0, 2000, n)
    width = np.where(np.arange(n) < 40, 6.0, 1.0)  # 40 trunks
    lines = gpd.GeoDataFrame(
        {"_w": width}, crs=CRS,
        geometry=shapely.linestrings(np.stack([np.column_stack([x, y]),
                                               np.column_stack([x + 60, y + 20])], axis=1)))
    props = {"_w": Prop(list(width), ("n", 0, "")), "main_id": [f"M{i}" for i in range(n)]}
    tiles, info = T.layer_tiles(lines, props, style_keys=("_w",), rank_key="_w", max_lines=50)
    left = info["overview_lines_left_out"]
    assert left[str(T.OVERVIEW_MIN_ZOOM)] > 0  # at the lowest zoom one tile has them all
    for (z, _, _), data in tiles.items():
        layers = _decode(data)
        if z == T.DETAIL_ZOOM:
            continue
        # merged per width: count the lines through their MoveTo parts
        parts = {f["properties"]["_w"]: len(shapely.get_parts(shapely.geometry.shape(
            f["geometry"]))) for f in layers["overview"]["features"]}
        assert sum(parts.values()) <= 50
    z0 = [d for (z, _, _), d in tiles.items() if z == T.OVERVIEW_MIN_ZOOM]
    assert len(z0) == 1
    kept = {f["properties"]["_w"]: len(shapely.get_parts(shapely.geometry.shape(f["geometry"])))
            for f in _decode(z0[0])["overview"]["features"]}
    assert kept == {6: 40, 1: 10}  # every trunk, then the longest others up to 50
    detail = set()
    for (z, _, _), data in tiles.items():
        if z == T.DETAIL_ZOOM:
            detail |= {f["properties"]["main_id"] for f in _decode(data)["features"]["features"]}
    assert detail == {f"M{i}" for i in range(n)}
    keep = T.strongest_per_tile(np.array([1, 1, 1, 2]), np.array([0.0, 5.0, 0.0, 0.0]),
                                np.array([10.0, 1.0, 20.0, 1.0]), 2)
    assert keep.tolist() == [False, True, True, True]


def test_big_polygon_is_cut_down_zoom_by_zoom():
    """A polygon over hundreds of detail tiles: every piece inside its tile, area kept."""
    big = shapely.Point(590_000, 4_617_000).buffer(4000, quad_segs=32)
    g = gpd.GeoSeries([big], crs=CRS).to_crs("EPSG:3857")
    _, tx, ty, pieces = T.assign_tiles(np.asarray(g.array), T.DETAIL_ZOOM)
    assert len(pieces) > 50 and len(set(zip(tx, ty, strict=True))) == len(pieces)
    total = 0.0
    for x, y, p in zip(tx, ty, pieces, strict=True):
        left, bottom, right, top = TMS.xy_bounds(morecantile.Tile(int(x), int(y), T.DETAIL_ZOOM))
        pad = (right - left) * T.BUFFER / T.EXTENT
        b = shapely.bounds(p)
        assert b[0] >= left - pad - 1e-3 and b[2] <= right + pad + 1e-3
        assert b[1] >= bottom - pad - 1e-3 and b[3] <= top + pad + 1e-3
        total += p.intersection(shapely.box(left, bottom, right, top)).area
    assert total == pytest.approx(g.iloc[0].area, rel=1e-9)


def _mixed_layers() -> dict[str, tuple[gpd.GeoDataFrame, dict]]:
    """Polygons, lines and points over a few km: most inside a tile, some across several
    (a polygon and a line over more than 16 detail tiles: cut zoom by zoom), multi-parts,
    holes, and rows without a geometry or with an empty one."""
    rng = np.random.default_rng(11)
    n = 240
    x = 588_000 + rng.uniform(0, 6000, n)
    y = 4_615_000 + rng.uniform(0, 6000, n)
    w = rng.uniform(10, 40, n)
    w[::17] = rng.uniform(600, 1500, len(w[::17]))  # across 2-9 tiles
    polys = shapely.box(x, y, x + w, y + w).astype(object)
    polys[0] = shapely.Point(591_000, 4_618_000).buffer(2500, quad_segs=16).difference(
        shapely.Point(591_000, 4_618_000).buffer(400))  # over dozens of tiles, a hole
    polys[1] = shapely.MultiPolygon([shapely.box(x[1], y[1], x[1] + 20, y[1] + 20),
                                     shapely.box(x[1] + 2500, y[1], x[1] + 2530, y[1] + 40)])
    polys[5], polys[9] = None, shapely.Polygon()
    lines = shapely.linestrings(np.stack([np.column_stack([x, y]),
                                          np.column_stack([x + w * 3, y + w]),
                                          np.column_stack([x + w * 3, y + w * 4])],
                                         axis=1)).astype(object)
    lines[0] = shapely.LineString([(587_500, 4_614_500), (594_500, 4_621_000)])  # 20+ tiles
    lines[2] = shapely.MultiLineString([[(x[2], y[2]), (x[2] + 900, y[2] + 50)],
                                        [(x[2], y[2] + 700), (x[2] + 40, y[2] + 1400)]])
    lines[4], lines[7] = None, shapely.LineString()
    pts = shapely.points(x, y).astype(object)
    pts[3] = shapely.MultiPoint([(x[3], y[3]), (x[3] + 3000, y[3] + 10)])
    pts[6], pts[8] = None, shapely.Point()
    cls = np.where(np.arange(n) % 3 == 0, "sanitary", "storm")
    props = {"fid": [f"F{i}" for i in range(n)], "_c": list(cls),
             "width": Prop(list(rng.integers(1, 5, n).astype(float)), ("n", 0, "")),
             "note": [None if i % 4 else "§ 168-22" for i in range(n)]}
    return {family: (gpd.GeoDataFrame(geometry=geoms, crs=CRS), props)
            for family, geoms in (("polygon", polys), ("line", lines), ("point", pts))}


@pytest.mark.parametrize("family", ["polygon", "line", "point"])
def test_tiles_cut_in_small_blocks_are_the_bytes_of_one_block(family, monkeypatch):
    """Detail tiles cut block of tiles by block of tiles (and features reprojected a few
    at a time) are byte for byte those of the whole layer at once, at every zoom."""
    gdf, props = _mixed_layers()[family]
    kw = {"style_keys": ("_c",), "rank_key": "width"} if family == "line" else {}
    monkeypatch.setattr(T, "_DETAIL_PAIRS", 10**9)
    monkeypatch.setattr(tile_blocks, "REPROJECT_FEATURES", 10**9)
    whole, info = T.layer_tiles(gdf, props, **kw)
    # the detail tiles as the cutter made them before it worked in blocks: every
    # feature assigned to every tile at once, no window
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    rows = np.flatnonzero(~(shapely.is_missing(geoms) | shapely.is_empty(geoms)))
    g = np.asarray(gpd.GeoSeries(geoms[rows], crs=CRS).to_crs("EPSG:3857").array, dtype=object)
    multi = shapely.get_type_id(g) == 4
    g[multi] = shapely.point_on_surface(g[multi])
    z = T.DETAIL_ZOOM
    fi, tx, ty, pieces = T.assign_tiles(g, z)
    order = np.lexsort((fi, ty, tx))
    fi, tx, ty, pieces = fi[order], tx[order], ty[order], pieces[order]
    xy, psizes, ppiece = T.geometry_parts(pieces, tx, ty, z, family)
    cmds, offs = T.commands(xy, psizes, ppiece, family, len(pieces))
    cols = T.property_columns(props, rows)
    reference = {(z, key >> z, key & ((1 << z) - 1)): data for key, data in mvt.encode_tiles(
        "features", tx * (1 << z) + ty, fi, family, cmds, offs, cols.names,
        cols.codes[fi].astype(np.int64), cols.table)}
    assert {k: v for k, v in whole.items() if k[0] == z} == reference
    assert len(np.unique(tx)) > 3 and len(reference) > 20  # several columns of tiles
    for pairs in (1, 7, 40):
        monkeypatch.setattr(T, "_DETAIL_PAIRS", pairs)
        monkeypatch.setattr(tile_blocks, "REPROJECT_FEATURES", 3)
        small, small_info = T.layer_tiles(gdf, props, **kw)
        assert small == whole, pairs
        assert small_info == info


def test_detail_blocks_cover_every_tile_once_in_tile_order():
    rng = np.random.default_rng(2)
    tx0 = rng.integers(100, 140, 500)
    ty0 = rng.integers(200, 260, 500)
    tx1, ty1 = tx0 + rng.integers(0, 3, 500), ty0 + rng.integers(0, 3, 500)
    tx1[0], ty1[0] = tx0[0] + 30, ty0[0] + 40  # one feature over 31 x 41 tiles
    for limit in (1, 25, 400, 10**6):
        blocks = tile_blocks.detail_blocks(tx0, tx1, ty0, ty1, limit)
        seen: dict[tuple[int, int], int] = {}
        for x0, x1, y0, y1 in blocks:
            on = (tx0 <= x1) & (tx1 >= x0) & (ty0 <= y1) & (ty1 >= y0)
            ax0, ax1 = np.maximum(tx0[on], x0), np.minimum(tx1[on], x1)
            ay0, ay1 = np.maximum(ty0[on], y0), np.minimum(ty1[on], y1)
            pairs = int(((ax1 - ax0 + 1) * (ay1 - ay0 + 1)).sum())
            assert pairs <= limit or (x0 == x1 and y0 == y1), (limit, pairs)
            for x in range(x0, x1 + 1):
                for y in range(y0, y1 + 1):
                    seen[(x, y)] = seen.get((x, y), 0) + 1
        needed = {(x, y) for a, b, c, d in zip(tx0, tx1, ty0, ty1, strict=True)
                  for x in range(a, b + 1) for y in range(c, d + 1)}
        assert needed <= set(seen) and set(seen.values()) == {1}
        ids = [x0 * 4096 + y0 for x0, _, y0, _ in blocks]
        assert ids == sorted(ids)
    assert len(tile_blocks.detail_blocks(tx0, tx1, ty0, ty1, 10**6)) == 1


def test_points_and_archive_metadata(tmp_path: Path):
    rng = np.random.default_rng(5)
    pts = gpd.GeoDataFrame({"node_id": [f"N{i}" for i in range(200)]},
                           geometry=shapely.points(588_000 + rng.uniform(0, 2000, 200),
                                                   4_615_000 + rng.uniform(0, 2000, 200)),
                           crs=CRS)
    path = tmp_path / "n.pmtiles"
    st = T.write_layer_tiles(path, pts, {"node_id": list(pts["node_id"])}, name="manholes")
    with open(path, "rb") as f:
        r = Reader(MmapSource(f))
        meta = r.metadata()
        assert meta["gisnet"]["family"] == "point"
        assert {v["id"] for v in meta["vector_layers"]} == {"features", "overview"}
        h = r.header()
        assert h["tile_compression"].value == 2 and h["tile_type"].value == 1  # gzip, MVT
    merc = pts.to_crs("EPSG:3857")
    n = 0
    with open(path, "rb") as f:
        for (z, x, y), data in all_tiles(MmapSource(f)):
            if z != T.DETAIL_ZOOM:
                continue
            left, _, right, top = TMS.xy_bounds(morecantile.Tile(x, y, z))
            scale = T.EXTENT / (right - left)
            for feat in _decode(data)["features"]["features"]:
                p = merc.geometry.iloc[feat["id"]]
                cx, cy = feat["geometry"]["coordinates"]
                assert abs((p.x - left) * scale - cx) <= 0.5
                assert abs((top - p.y) * scale - cy) <= 0.5
                n += 1
    assert n >= len(pts) and st.tiles > 0


# ----------------------------------------------------------------------------- tiled pages
def test_tiled_pages_of_the_sample_town(sample_town, tmp_path: Path):
    from gisnet.maps.pages import build_pages
    from gisnet.maps.render import render_page
    from gisnet.maps.tiled import TILED_NOTE, Tiler, is_tiled
    from gisnet.pipeline import analyse

    res = analyse(sample_town)
    tiler = Tiler(min_features=500)
    pages = build_pages(sample_town, res.layers(), tiler=tiler)
    stats = tiler.write(pages.values(), tmp_path)
    tiled = {lyr.key for p in pages.values() for lyr in p.layers if is_tiled(lyr)}
    assert "parcels_connected" in tiled and "parcels" in tiled
    assert "plants" not in tiled  # small layers stay inside the page
    for key in tiled:
        assert (tmp_path / "tiles" / f"{key}.pmtiles").is_file()
        assert stats[key].features >= 500
    ob = res.layers()["obligations"]
    assert stats["parcels_connected"].features == int((ob["status"] == "connected").sum())
    html = render_page(pages["obligations"], town_name=sample_town.name, profile_name="x")
    assert "protomapsL" in html and "tiles/parcels_connected.pmtiles" in html
    assert json.dumps(TILED_NOTE)[1:-1] in html
    assert "§ 168-22" not in html.split("parcels_connected.pmtiles")[0][-50:]


def test_archives_cut_on_threads_equal_those_cut_one_after_the_other(sample_town,
                                                                     tmp_path: Path,
                                                                     monkeypatch):
    """A county's archives are cut on two threads: the same bytes and the same page
    specs as cutting them one after the other."""
    from gisnet.maps import tiled as TL
    from gisnet.maps.pages import build_pages
    from gisnet.pipeline import analyse

    res = analyse(sample_town)
    monkeypatch.setattr(TL, "PARALLEL_MIN_FEATURES", 0)
    specs = {}
    for procs in (1, 2):
        tiler = TL.Tiler(min_features=500)
        pages = build_pages(sample_town, res.layers(), tiler=tiler)
        tiler.write(pages.values(), tmp_path / str(procs), threads=procs)
        specs[procs] = {p: [lyr.data for lyr in page.layers] for p, page in pages.items()}
    assert specs[1] == specs[2]
    one = sorted((tmp_path / "1" / "tiles").iterdir())
    assert len(one) > 3
    for f in one:
        assert f.read_bytes() == (tmp_path / "2" / "tiles" / f.name).read_bytes(), f.name


def test_tiles_mode_auto(sample_town):
    from gisnet.errors import ConfigError
    from gisnet.maps.tiled import wants_tiles

    assert not wants_tiles(sample_town, "auto")  # 3,000 parcels: self-contained pages
    assert wants_tiles(sample_town, "always")
    assert not wants_tiles(sample_town, "never")
    with pytest.raises(ConfigError):
        wants_tiles(sample_town, "sometimes")


# ----------------------------------------------------------------------------- serving
@pytest.fixture()
def maps_dir(tmp_path: Path) -> Path:
    gdf = _parcels()
    (tmp_path / "tiles").mkdir()
    T.write_layer_tiles(tmp_path / "tiles" / "parcels_required.pmtiles", gdf, _props(gdf))
    (tmp_path / "index.html").write_text("<html>tiled</html>", encoding="utf-8")
    return tmp_path


def test_service_serves_archive_with_ranges_and_single_tiles(maps_dir: Path):
    import warnings

    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

    from gisnet.service.tiles import create_maps_app

    c = TestClient(create_maps_app(maps_dir))
    assert c.get("/maps/index.html").text == "<html>tiled</html>"
    whole = (maps_dir / "tiles" / "parcels_required.pmtiles").read_bytes()
    r = c.get("/maps/tiles/parcels_required.pmtiles", headers={"Range": "bytes=0-126"})
    assert r.status_code == 206 and r.content == whole[:127]
    assert r.content[:7] == b"PMTiles"
    r = c.get("/maps/tiles/parcels_required.pmtiles", headers={"Range": "bytes=200-299"})
    assert r.status_code == 206 and r.content == whole[200:300]
    with open(maps_dir / "tiles" / "parcels_required.pmtiles", "rb") as f:
        (z, x, y), data = next((k, d) for k, d in all_tiles(MmapSource(f))
                               if k[0] == T.DETAIL_ZOOM)
    r = c.get(f"/tiles/parcels_required/{z}/{x}/{y}.mvt",
              headers={"Accept-Encoding": "identity"})
    assert r.status_code == 200 and r.headers["content-type"].startswith(
        "application/vnd.mapbox-vector-tile")
    assert _decode(r.content) == _decode(data)
    assert c.get(f"/tiles/parcels_required/{z}/0/0.mvt").status_code == 404
    assert c.get("/tiles/nothing/15/1/1.mvt").status_code == 404
    assert c.get("/tiles/parcels_required/3/99/1.mvt").status_code == 404
    assert c.get("/maps/tiles/..%2Findex.html").status_code == 404
    assert c.get("/maps/tiles/parcels_required.pmtiles.bak").status_code == 404


def test_serve_cli_refuses_a_folder_without_pages(tmp_path: Path, capsys):
    from gisnet.cli import main

    assert main(["serve", "--maps", str(tmp_path)]) == 2
    assert "no map pages" in capsys.readouterr().err


def test_simple_features_read_from_their_coordinates_give_the_same_tiles(monkeypatch):
    """Points and polygons without holes that lie inside one detail tile are read from
    their coordinates, not made again: the tiles are those of every feature made and
    cut (rings of either orientation, slivers that collapse, holes, multi-parts,
    features across tile edges, multi-points)."""
    from gisnet.maps import tile_blocks as TB

    gdf = _parcels(3000, seed=11)
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    geoms[2::7] = shapely.reverse(geoms[2::7])  # clockwise rings
    c = shapely.get_coordinates(shapely.centroid(geoms[3::11]))
    geoms[3::11] = shapely.box(c[:, 0], c[:, 1], c[:, 0] + 0.02, c[:, 1] + 0.01)  # slivers
    geoms[5::13] = shapely.box(c[:len(geoms[5::13]), 0] - 9000, c[:len(geoms[5::13]), 1],
                               c[:len(geoms[5::13]), 0] + 9000,
                               c[:len(geoms[5::13]), 1] + 50)  # across tiles
    polys = gdf.set_geometry(geoms)
    rng = np.random.default_rng(5)
    pts = shapely.points(588_000 + rng.uniform(-20_000, 20_000, (4000, 2)) * [1, 0.5]
                         + [0, 4_615_000])
    pts[::50] = shapely.multipoints(np.stack([shapely.get_coordinates(pts[::50]),
                                              shapely.get_coordinates(pts[::50]) + 5], 1))
    points = gpd.GeoDataFrame({"parcel_id": [f"T{i}" for i in range(len(pts))]},
                              geometry=pts, crs=CRS)
    read = []
    simple_parts = T.simple_parts
    monkeypatch.setattr(T, "simple_parts", lambda m, f, *a: read.append(len(f))
                        or simple_parts(m, f, *a))
    made = TB.Mercator.__init__

    def nothing_simple(self, *a, **k):
        made(self, *a, **k)
        self.simple = None

    for layer in (polys, points):
        props = {"parcel_id": list(layer["parcel_id"])}
        read.clear()
        quick, _ = T.layer_tiles(layer, props)
        assert sum(read) > 0.8 * len(layer)  # most features read from coordinates
        with monkeypatch.context() as m:
            m.setattr(TB.Mercator, "__init__", nothing_simple)
            whole, _ = T.layer_tiles(layer, props)
        assert quick.keys() == whole.keys() and len(whole) > 4
        for k in whole:
            assert quick[k] == whole[k], k


def test_two_point_lines_are_their_own_simplification(monkeypatch):
    """The overview zooms leave two-point lines as they are (Douglas-Peucker keeps a
    line's ends): the tiles are those of every line simplified."""
    gdf, props = _mixed_layers()["line"]
    geoms = np.asarray(gdf.geometry.array, dtype=object).copy()
    ends = [i for i in range(0, len(geoms), 2)
            if geoms[i] is not None and shapely.get_type_id(geoms[i]) == 1
            and not geoms[i].is_empty]
    first = shapely.get_coordinates(shapely.get_point(geoms[ends], 0))
    last = shapely.get_coordinates(shapely.get_point(geoms[ends], -1))
    geoms[ends] = shapely.linestrings(np.stack([first, last], 1))  # two points: the ends
    geoms[ends[1]] = shapely.LineString([first[1], first[1]])  # of no length
    gdf = gdf.set_geometry(geoms)
    assert T.two_point_lines(np.asarray(gdf.geometry.array)).sum() >= len(ends) > 20
    kw = {"style_keys": ("_c",), "rank_key": "width"}
    kept, _ = T.layer_tiles(gdf, props, **kw)
    monkeypatch.setattr(T, "two_point_lines", lambda g: np.zeros(len(g), dtype=bool))
    simplified, _ = T.layer_tiles(gdf, props, **kw)
    assert kept.keys() == simplified.keys() and len([k for k in kept if k[0] < 14]) > 3
    for k in simplified:
        assert kept[k] == simplified[k], k
