"""The search index of tiled pages (:mod:`gisnet.maps.search_index`) against the
plain reading of its format: every value of every search column an entry
``[value, layer, field, lon, lat]``, grouped by its lower-cased prefix, a group over
the shard size split by one more character, each shard sorted and written as JSON
by Python's ``json``. The index, made over arrays, must be those files byte for byte.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pytest
import shapely

from gisnet.maps import search_index as si
from gisnet.maps.encoding import TextCodes


def reference_index(tiles_dir: Path, layers: list[si.SearchLayer], max_shard: int,
                    max_depth: int) -> dict[str, Any] | None:
    """The index written one entry at a time, as its format describes it."""
    keys: list[str] = []
    fields: list[str] = []
    entries: list[list[Any]] = []
    for lyr in layers:
        if not lyr.columns or not len(lyr.gdf):
            continue
        lon, lat = si._points(lyr.gdf)
        li = len(keys)
        keys.append(lyr.key)
        for col, values in lyr.columns.items():
            if col not in fields:
                fields.append(col)
            fi = fields.index(col)
            for i, v in enumerate(values):
                if v is None or (isinstance(v, float) and np.isnan(v)) or np.isnan(lon[i]):
                    continue
                text = str(v).strip()
                if text:
                    entries.append([text, li, fi, float(lon[i]), float(lat[i])])
    if not entries:
        return None
    groups: dict[str, list[list[Any]]] = {}
    for e in entries:
        groups.setdefault(e[0].lower()[:si.PREFIX], []).append(e)
    todo = list(groups.items())
    shards: dict[str, list[list[Any]]] = {}
    while todo:
        key, group = todo.pop()
        depth = len(key)
        if len(group) <= max_shard or depth >= max_depth or depth < si.PREFIX:
            shards[key] = group
            continue
        deeper: dict[str, list[list[Any]]] = {}
        for e in group:
            deeper.setdefault(e[0].lower()[:depth + 1], []).append(e)
        stay = deeper.pop(key, [])
        if stay:
            shards[key] = stay
        todo.extend(deeper.items())
    tiles_dir.mkdir(parents=True, exist_ok=True)
    for shard, group in shards.items():
        group.sort(key=lambda e: (e[0].lower(), e[1], e[2], e[0]))
        (tiles_dir / si.shard_file(shard)).write_text(
            json.dumps(group, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
    manifest = {"format": 1, "prefix": si.PREFIX, "layers": keys, "fields": fields,
                "shards": {s: len(e) for s, e in sorted(shards.items())}}
    (tiles_dir / si.INDEX_FILE).write_text(
        json.dumps(manifest, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
    return {"url": f"{tiles_dir.name}/{si.INDEX_FILE}", "entries": len(entries)}


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


#: Text that lower-cases, strips and escapes unlike ASCII: dotted capital I (two
#: characters in lower case), sharp s, accents, quotes, backslashes, control and
#: separator characters, NUL, an emoji, whitespace Python strips.
ODD = ["İstanbul", "STRASSE ß", "Éva", 'quote " in', "back\\slash", "tab\there",
       "nul\x00end", "\x1cfile sep", "emoji 🚰 main", "\u00a0nbsp\u00a0", "new\nline",
       "Ab", "aB", "ab", "a", "A", "ab ", " ab", "abc", "ABC"]


def town_layers(rng: random.Random, n: int) -> list[si.SearchLayer]:
    """Three layers (polygons, points near 0°, lines) in a projected CRS and in
    degrees, with text, numeric, mixed and missing search values sharing prefixes."""
    def word() -> str:
        r = rng.random()
        if r < 0.25:
            return rng.choice(ODD)
        if r < 0.35:
            return rng.choice(["", "   ", None, float("nan")])  # type: ignore[return-value]
        return f"{rng.choice(['P', 'p', 'MH-', '10', '100'])}{rng.randrange(0, 400):03d}" \
            + rng.choice(["", " Main St", " main st", "A"])

    xs = [rng.uniform(0, 5000) for _ in range(n)]
    ys = [rng.uniform(0, 5000) for _ in range(n)]
    polys = [shapely.box(x, y, x + 30, y + 20) for x, y in zip(xs, ys, strict=True)]
    polys[3] = None  # no place: left out
    parcels = gpd.GeoDataFrame(geometry=polys, crs="EPSG:2260")
    # points within a few metres of 0°, 0°: Python writes some of them in exponents
    pts = gpd.GeoDataFrame(geometry=[shapely.Point(rng.uniform(-2e-4, 2e-4),
                                                   rng.choice([0.0, -0.0, 1e-5, 3.0]))
                                     for _ in range(n)], crs="EPSG:4326")
    lines = gpd.GeoDataFrame(geometry=[shapely.LineString([(x, y), (x + 50, y - 7)])
                                       for x, y in zip(xs, ys, strict=True)], crs="EPSG:3857")
    ids = [word() for _ in range(n)]
    pid = TextCodes.of([v if isinstance(v, str) else None for v in ids])
    assert pid is not None
    # a layer drawing some of the parcels again, holding their distinct ids (the one
    # array, as gisnet.maps.tiled.Tiler keeps it), in another order
    some = np.arange(n)[::-3]
    again = TextCodes(pid.codes[some], pid.uniques)
    return [
        si.SearchLayer("parcels", parcels, {"parcel_id": pid,
                                            "address": [word() for _ in range(n)]}),
        si.SearchLayer("by_status", parcels.iloc[some], {"parcel_id": again}),
        si.SearchLayer("taps", pts, {"node_id": [rng.randrange(0, 50) for _ in range(n)],
                                     "parcel_id": [word() for _ in range(n)]}),
        si.SearchLayer("empty", parcels.iloc[:0], {"x": []}),
        si.SearchLayer("mains", lines, {"main_id": [rng.choice([1.5, 2, "2", None, "x"])
                                                    for _ in range(n)]}),
    ]


@pytest.mark.parametrize("max_shard,max_depth,packed", [
    (2_000, 12, True), (5, 12, True), (3, 4, True), (1, 12, True), (5, 12, False)])
def test_index_is_the_reference_byte_for_byte(tmp_path, monkeypatch, max_shard, max_depth,
                                              packed):
    if not packed:  # sorted by four keys, not one packed integer
        monkeypatch.setattr(si, "_KEY_BITS", 0)
    monkeypatch.setattr(si, "MAX_SHARD", max_shard)
    monkeypatch.setattr(si, "MAX_DEPTH", max_depth)
    monkeypatch.setattr(si, "_WRITE_ROWS", 37)  # many blocks of shards
    layers = town_layers(random.Random(max_shard * 31 + max_depth), 900)
    want = reference_index(tmp_path / "ref" / "tiles", layers, max_shard, max_depth)
    got = si.write_search_index(tmp_path / "new" / "tiles", layers)
    assert got == want
    ref, new = files(tmp_path / "ref" / "tiles"), files(tmp_path / "new" / "tiles")
    assert new.keys() == ref.keys()
    assert len(new) > (40 if max_shard < 10 else 3)
    for name in ref:
        assert new[name] == ref[name], name


def test_index_replaces_an_earlier_ones_shards(tmp_path):
    tiles = tmp_path / "tiles"
    tiles.mkdir()
    (tiles / si.shard_file("zz")).write_text("[]", encoding="utf-8")
    layers = town_layers(random.Random(5), 50)
    si.write_search_index(tiles, layers)
    assert not (tiles / si.shard_file("zz")).exists()
    assert si.write_search_index(tmp_path / "none", [layers[3]]) is None


def test_coordinates_written_as_python_writes_them():
    rng = np.random.default_rng(7)
    x = np.round(np.concatenate([
        rng.uniform(-180, 180, 200_000), rng.uniform(-1e-3, 1e-3, 20_000),
        np.arange(-180, 181, dtype=float), [0.0, -0.0, 1e-4, -1e-4, 9.9e-5, 5e-6, 0.1,
                                           123.4, -73.000001, 179.999999]]), 6)
    got = si._decimals(x).to_pylist()
    assert got == [repr(float(v)) for v in x]


def test_points_are_geopandas_reprojection_of_a_point_inside_each():
    """The index's points: a point inside each feature reprojected as
    ``GeoSeries.to_crs`` does it, to the same last digit; none for a missing shape."""
    for lyr in town_layers(random.Random(11), 300):
        gdf = lyr.gdf
        lon, lat = si._points(gdf)
        geoms = gdf.geometry
        ok = ~(geoms.isna() | geoms.is_empty).to_numpy()
        pts = gpd.GeoSeries(shapely.point_on_surface(
            np.asarray(geoms.array, dtype=object)[ok]), crs=gdf.crs).to_crs("EPSG:4326")
        want = np.full((len(gdf), 2), np.nan)
        if ok.any():
            want[ok] = shapely.get_coordinates(np.asarray(pts.array, dtype=object))
        assert np.array_equal(lon, np.round(want[:, 0], 6), equal_nan=True), lyr.key
        assert np.array_equal(lat, np.round(want[:, 1], 6), equal_nan=True), lyr.key
