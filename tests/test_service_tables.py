"""The service's held tables: rows packed, text as categories, answers unchanged.

Each served row is checked against the same row serialized from the analysis's
own frame (``feature_fragments`` of the untouched layer in EPSG:4326), not
against the table's own output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gisnet.serialize import WGS84, feature_fragments
from gisnet.service.tables import PACK_ROWS, PackedRows, ResultTable, compact_text, pack_rows


@pytest.fixture(scope="module")
def layers(sample_dir):
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    return analyse(load_town(sample_dir), strict=False).layers()


def test_packed_rows_give_back_the_bytes_packed_across_block_edges():
    rng = np.random.default_rng(7)
    rows = [bytes(rng.integers(32, 127, size=int(n), dtype=np.uint8))
            for n in rng.integers(0, 400, size=3 * PACK_ROWS + 5)]
    packed = PackedRows([rows[:2 * PACK_ROWS], rows[2 * PACK_ROWS:]])
    assert len(packed) == len(rows)
    assert packed.take(range(len(rows))) == rows
    picks = [len(rows) - 1, 0, PACK_ROWS - 1, PACK_ROWS, 5, 5]
    assert packed.take(picks) == [rows[i] for i in picks]
    assert packed[PACK_ROWS + 1] == rows[PACK_ROWS + 1]
    with pytest.raises(IndexError):
        packed.take([len(rows)])
    with pytest.raises(ValueError, match="short block"):
        PackedRows([rows[:3], rows[3:6]])


def test_pack_rows_in_chunks_equals_the_whole_serialized(layers, monkeypatch):
    import gisnet.service.tables as tables

    gdf = layers["obligations"].to_crs(WGS84)
    monkeypatch.setattr(tables, "PACK_CHUNK_ROWS", 4 * PACK_ROWS)  # many chunks
    packed = pack_rows(gdf, feature_fragments)
    assert packed.take(np.arange(len(gdf))) == feature_fragments(gdf)
    assert packed.nbytes() < sum(map(len, feature_fragments(gdf))) / 3


@pytest.mark.parametrize("name", ["obligations", "control_manholes", "control_paths",
                                  "pipes_capacity", "graph_nodes", "quality"])
def test_served_rows_are_the_layers_rows(layers, name):
    gdf = layers[name]
    table = ResultTable(name, gdf, eager=True)
    want = feature_fragments(gdf.reset_index(drop=True).to_crs(WGS84))
    assert table.fragments(np.arange(len(gdf)), WGS84) == want
    rev = np.arange(len(gdf))[::-1]
    assert table.fragments(rev, WGS84) == [want[i] for i in rev]


def test_repeated_text_is_held_as_categories_with_values_and_nulls_kept(layers):
    ob = layers["obligations"].reset_index(drop=True)
    held = compact_text(ob)
    cats = [c for c in held.columns if isinstance(held[c].dtype, pd.CategoricalDtype)]
    assert "section" in cats and "status" in cats  # a handful of values, a row each
    assert "parcel_id" not in cats                   # one a row: kept as text
    for c in ob.columns.drop("geometry"):
        a = ob[c].astype(object).where(ob[c].notna(), None).tolist()
        b = held[c].astype(object).where(held[c].notna(), None).tolist()
        assert a == b, c
    assert ob["section"].dtype == object  # the caller's frame is not changed
    mixed = pd.DataFrame({"v": ["a", 1, "a", None] * 3})
    assert compact_text(mixed)["v"].dtype == object  # not all text: left as it is


def test_rows_read_back_from_a_run_serve_as_read(sample_dir, tmp_path_factory):
    """The results of a run as ``serve --results`` reads them: text held compactly
    from the Arrow read (ids as Arrow text, repeated text as categories), and served
    as the same layer read with its text as Python strings."""
    import pyogrio

    from gisnet.io import load_town
    from gisnet.pipeline import run
    from gisnet.service.stored import read_layers

    out = tmp_path_factory.mktemp("run")
    run(load_town(sample_dir), out, maps=False, progress=None)
    gpkg = out / "gisnet-results.gpkg"
    read = read_layers(gpkg)
    for name in ("obligations", "control_manholes", "pipes_capacity"):
        gdf = read[name]
        kinds = {str(t) for t in gdf.dtypes}
        assert "object" not in kinds and {"str", "category"} <= kinds, (name, kinds)
        table = ResultTable(name, gdf)
        assert table.gdf.dtypes.to_dict() == gdf.dtypes.to_dict()  # nothing left to compact
        plain = pyogrio.read_dataframe(gpkg, layer=name, use_arrow=False)  # OGR's own read
        for c in plain.columns.drop("geometry"):
            if c in gdf.columns and pd.api.types.is_string_dtype(plain[c].dtype):
                a = plain[c].astype(object).where(plain[c].notna(), None).tolist()
                b = gdf[c].astype(object).where(gdf[c].notna(), None).tolist()
                assert a == b, (name, c)
        want = feature_fragments(gdf.to_crs(WGS84))
        assert table.fragments(np.arange(len(gdf)), WGS84) == want, name


@pytest.mark.parametrize("values", [
    ["a", "b", "a", None, "a", "", "b", "a"],        # repeated, a null, an empty text
    [f"P{i}" for i in range(9)] + [None],             # ids: one a row
    [None, None, None],                               # nothing but nulls
    ["x"],                                            # one row: not compacted
    ["é", "é", "ß", None, "€"],                       # other letters
])
def test_text_from_arrow_is_held_as_compact_text_holds_python_strings(values):
    from gisnet.service.tables import compact_arrow_text, text_objects

    read = pd.Series(values, dtype="str", name="v")
    want = compact_text(pd.DataFrame({"v": text_objects(read)}))["v"]
    got = compact_arrow_text(read)
    assert got.dtype == want.dtype
    assert got.astype(object).where(got.notna(), None).tolist() == \
        want.astype(object).where(want.notna(), None).tolist()
    if isinstance(want.dtype, pd.CategoricalDtype):
        assert list(got.cat.categories) == list(want.cat.categories)
        assert got.cat.codes.tolist() == want.cat.codes.tolist()
