"""The results GeoPackage describes itself: layer descriptions and column labels
(``gpkg_contents.description``, ``gpkg_data_columns``) from the results schema
(package data made from docs/results.md), values rounded to what the data can tell."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pytest
import shapely

from gisnet.labels import SEVERITY_LABELS, STATUS_LABELS, UTIL_CLASS_LABELS, column_label
from gisnet.output import write_results
from gisnet.output.metadata import Column, layer_docs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from results_doc import RESULTS_DOC, parse_intros, parse_layers

DOC_TEXT = RESULTS_DOC.read_text(encoding="utf-8")


def test_labels_carry_the_unit() -> None:
    assert Column("distance_ft", "real", "ft", "").label == "Distance (ft)"
    assert Column("design_flow_mgd", "real", "MGD", "").label == "Design flow (MGD)"
    assert Column("utilization", "real", "ratio", "").label == "Utilization (ratio)"
    assert Column("status", "text", "—", "").label == "Status"
    assert Column("x", "real", "CRS unit", "").label == "X (CRS unit)"


def test_intro_is_the_prose_before_the_first_table() -> None:
    text = ("## `a`\n\nFirst line\nsecond `x`.\n\n| column | type | unit | meaning |\n"
            "|---|---|---|---|\n| `x_ft` | real | ft | the `x` |\n\nLater prose.\n"
            "## Other\n\nno.\n")
    assert parse_intros(text) == {"a": "First line second x."}
    docs = parse_layers(text)
    assert docs["a"].description == "First line second x."
    assert docs["a"].columns == (Column("x_ft", "real", "ft", "the x"),)


def test_every_documented_layer_has_a_description() -> None:
    docs = layer_docs()
    assert len(docs) >= 12
    for name, d in docs.items():
        assert len(d.description) > 20, name
        assert all(c.meaning for c in d.columns), name


def _small_layers() -> dict[str, pd.DataFrame]:
    crs = "EPSG:2260"
    pipes = gpd.GeoDataFrame(
        {"main_id": ["M1", "M2"], "length_ft": [24.630184, 100.04999],
         "capacity_gpd": [6655755.534214, 494000.4], "utilization": [0.123456789, None],
         "peaking_factor": [3.456789, 2.0],
         "up_invert_ft": [133.70789, None]},
        geometry=[shapely.LineString([(0, 0), (24, 0)]), shapely.LineString([(0, 0), (0, 100)])],
        crs=crs)
    plants = gpd.GeoDataFrame(
        {"plant_id": ["P1"], "design_flow_mgd": [8.5], "avg_flow_mgd": [6.7891234],
         "ratio": [0.79872040], "threshold": [0.8]},
        geometry=[shapely.Point(0, 0)], crs=crs)
    return {"pipes_capacity": pipes, "plants": plants,
            "scratch": pd.DataFrame({"a_ft": [1.23456]})}


def test_geopackage_has_descriptions_and_aliases(tmp_path: Path) -> None:
    path = write_results(tmp_path, _small_layers())
    docs = layer_docs()
    con = sqlite3.connect(path)
    try:
        desc = dict(con.execute("SELECT table_name, description FROM gpkg_contents"))
        rows = {(t, c): (n, ti, d) for t, c, n, ti, d in con.execute(
            "SELECT table_name, column_name, name, title, description FROM gpkg_data_columns")}
        ext = con.execute("SELECT scope FROM gpkg_extensions WHERE table_name = "
                          "'gpkg_data_columns' AND extension_name = 'gpkg_schema'").fetchall()
    finally:
        con.close()
    assert desc["pipes_capacity"] == docs["pipes_capacity"].description
    assert desc["pipes_capacity"].startswith("One row per graph edge")
    assert desc["plants"].startswith("One row per treatment plant")
    assert ext == [("read-write",)]
    assert rows[("pipes_capacity", "capacity_gpd")] == (
        "Full-flow capacity (gpd)", "Full-flow capacity (gpd)",
        "Manning full-flow capacity; null for no diameter, zero/adverse/no slope, force mains")
    assert rows[("plants", "design_flow_mgd")][0] == "Design flow (MGD)"
    assert rows[("pipes_capacity", "geom")][0] == "Geometry"
    # the aliases are the one vocabulary's column labels (gisnet.labels), units included
    assert rows[("pipes_capacity", "main_id")][0] == column_label("main_id") == "Main"
    assert rows[("pipes_capacity", "length_ft")][0] == "Length (ft)"
    # one row per documented column present (not up_invert_ft: pipes_capacity has none),
    # none for columns the layer lacks or for unknown layers
    assert {c for t, c in rows if t == "pipes_capacity"} == {
        "main_id", "length_ft", "capacity_gpd", "utilization", "peaking_factor", "geom"}
    assert not [k for k in rows if k[0] == "scratch"]
    # writing again replaces the rows rather than adding to them
    write_results(tmp_path, {"plants": _small_layers()["plants"]})
    con = sqlite3.connect(path)
    try:
        n = con.execute("SELECT count(*) FROM gpkg_data_columns WHERE table_name = 'plants'"
                        ).fetchone()[0]
    finally:
        con.close()
    assert n == 6


def test_values_are_rounded_in_the_files_not_in_memory(tmp_path: Path) -> None:
    import pyogrio

    from gisnet.output import write_tables

    layers = _small_layers()
    path = write_results(tmp_path, layers)
    p = pyogrio.read_dataframe(path, layer="pipes_capacity")
    assert list(p["length_ft"]) == [24.6, 100.0]
    assert list(p["capacity_gpd"]) == [6655756.0, 494000.0]
    # ratios are compared with thresholds by readers: written as they are
    assert p["utilization"][0] == 0.123456789 and pd.isna(p["utilization"][1])
    assert list(p["peaking_factor"]) == [3.456789, 2.0]
    assert p["up_invert_ft"][0] == 133.71  # elevations keep 0.01 ft
    pl = pyogrio.read_dataframe(path, layer="plants")
    assert pl["avg_flow_mgd"][0] == 6.789 and pl["ratio"][0] == 0.79872040
    assert pl["design_flow_mgd"][0] == 8.5
    s = pyogrio.read_dataframe(path, layer="scratch")
    assert s["a_ft"][0] == 1.2  # the suffix decides, documented or not
    # the in-memory layers keep every digit
    assert layers["pipes_capacity"]["length_ft"][0] == 24.630184
    assert layers["plants"]["ratio"][0] == 0.79872040
    (csv,) = write_tables(tmp_path, {"pipes_capacity": layers["pipes_capacity"]}, ["csv"])
    text = csv.read_text(encoding="utf-8-sig")
    assert "24.6," in text and "6655756.0," in text and "24.630184" not in text
    assert layers["pipes_capacity"]["capacity_gpd"][0] == 6655755.534214


def test_quality_is_one_point_layer_and_the_maps_read_its_lines_back(tmp_path: Path) -> None:
    import pyogrio

    from gisnet.maps.pages import read_results

    line = shapely.LineString([(0, 0), (10, 0), (10, 10)])
    q = gpd.GeoDataFrame(
        {"finding_id": ["Q00001", "Q00002", "Q00003"], "kind": ["gap_snapped", "cycle", "x"],
         "severity": ["info", "warning", "info"], "message": ["a", "b", "c"],
         "layer": ["mains"] * 3, "feature_id": ["M1", "M2", None]},
        geometry=[shapely.Point(1.23456, 2), line, None], crs="EPSG:2260")
    path = write_results(tmp_path, {"quality": q})
    assert sorted(n for n, _ in pyogrio.list_layers(path)) == ["layer_styles", "quality"]
    assert pyogrio.read_info(path, layer="quality")["geometry_type"] == "Point"
    back = pyogrio.read_dataframe(path, layer="quality")
    assert list(back["geometry_wkt"][:2]) == ["POINT (1.235 2)",
                                              "LINESTRING (0 0, 10 0, 10 10)"]
    assert pd.isna(back["geometry_wkt"][2]) and back.geometry[2] is None
    assert back.geometry[0].equals(shapely.Point(1.23456, 2))
    assert line.distance(back.geometry[1]) < 1e-9  # a point on the line
    maps = read_results(tmp_path)["quality"]
    assert "geometry_wkt" not in maps.columns and maps.crs == q.crs
    assert maps.geometry[1].equals(line) and maps.geometry[2] is None
    assert list(maps["finding_id"]) == list(q["finding_id"])


# --------------------------------------------------------------------------- QGIS styles


@pytest.fixture(scope="module")
def sample_gpkg(sample_dir: Path, tmp_path_factory):
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    res = analyse(load_town(sample_dir))
    return res, write_results(tmp_path_factory.mktemp("styles"), res.layers())


def _styles(path: Path) -> dict[str, tuple]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT f_table_name, f_geometry_column, styleName, styleQML, "
                           "useAsDefault, f_table_catalog, f_table_schema, styleSLD, "
                           "description, owner, ui, update_time FROM layer_styles").fetchall()
    finally:
        con.close()
    return {r[0]: r for r in rows}


def _categories(qml: str) -> tuple[str, dict[str, str]]:
    """(attr, {value: fill or line colour}) of a categorized renderer."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(qml.split("\n", 1)[1])
    r = root.find("renderer-v2")
    assert r is not None and r.get("type") == "categorizedSymbol"
    symbols = {s.get("name"): s for s in r.iter("symbol")}
    out = {}
    for c in r.iter("category"):
        sym = symbols[c.get("symbol")]
        opts = {o.get("name"): o.get("value") for o in sym.iter("Option") if o.get("name")}
        out[c.get("value")] = opts.get("color") or opts.get("line_color")
    return r.get("attr"), out


def _rgba(hex_colour: str) -> str:
    h = hex_colour.lstrip("#")
    return ",".join(str(int(h[i:i + 2], 16)) for i in (0, 2, 4))


def test_style_colours_are_the_maps_colours() -> None:
    from gisnet.maps import common
    from gisnet.obligations import STATUSES
    from gisnet.output import styles

    assert styles.STATUS_COLOURS == common.STATUS_COLOURS
    assert set(styles.STATUS_COLOURS) == set(STATUSES)
    assert {k: c for k, (c, _) in styles.UTIL_CLASSES.items()} == \
        {k: c for k, c, _ in common.UTIL_CLASSES}
    assert styles.SEVERITY_COLOURS == common.SEVERITY_COLOURS
    # one vocabulary: the QGIS category labels are the maps' legend labels
    assert {k: lab for k, (_, lab) in styles.CATEGORIZED["obligations"][1].items()} == \
        STATUS_LABELS
    assert {k: lab for k, (_, lab) in styles.CATEGORIZED["quality"][1].items()} == \
        SEVERITY_LABELS
    assert {k for k, _, _ in common.UTIL_CLASSES} == set(UTIL_CLASS_LABELS)


@pytest.mark.slow
def test_every_layer_with_geometry_has_a_default_qgis_style(sample_gpkg) -> None:
    import xml.etree.ElementTree as ET

    import pyogrio

    from gisnet.maps.common import SEVERITY_COLOURS, STATUS_COLOURS
    from gisnet.obligations import STATUSES

    res, path = sample_gpkg
    st = _styles(path)
    geo = {n for n, g in pyogrio.list_layers(path) if g}
    assert set(st) == geo == set(res.layers())  # every sample layer has geometry
    assert {n for n, g in pyogrio.list_layers(path) if not g} == {"layer_styles"}
    for name, (_, gcol, style, qml, default, *_rest) in st.items():
        assert (gcol, style, default) == ("geom", "gisnet", 1), name
        ET.fromstring(qml.split("\n", 1)[1])  # well-formed
    attr, cats = _categories(st["obligations"][3])
    assert attr == "status" and set(cats) == set(STATUSES)
    assert cats == {k: _rgba(c) + ",150" for k, c in STATUS_COLOURS.items()}  # polygons
    attr, cats = _categories(st["quality"][3])
    assert attr == "severity" and cats == {k: _rgba(c) + ",255"
                                           for k, c in SEVERITY_COLOURS.items()}
    root = ET.fromstring(st["plants"][3].split("\n", 1)[1])
    assert root.find("renderer-v2").get("type") == "singleSymbol"
    assert root.findtext("layerGeometryType") == "0"


@pytest.mark.slow
def test_pipe_class_expression_agrees_with_the_capacity_map(sample_gpkg) -> None:
    """The QGIS categories of pipes_capacity are the capacity page's classes: the
    expression, run by SQLite on the written layer, gives classify_pipes's class
    for every pipe."""
    import pyogrio

    from gisnet.maps.capacity import classify_pipes
    from gisnet.output.styles import PIPE_CLASS_EXPRESSION, UTIL_CLASSES

    res, path = sample_gpkg
    attr, cats = _categories(_styles(path)["pipes_capacity"][3])
    assert attr == PIPE_CLASS_EXPRESSION
    assert cats == {k: _rgba(c) + ",255" for k, (c, _) in UTIL_CLASSES.items()}
    con = sqlite3.connect(path)
    try:
        got = [r[0] for r in con.execute(
            f"SELECT {PIPE_CLASS_EXPRESSION} FROM pipes_capacity ORDER BY fid")]
    finally:
        con.close()
    back = pyogrio.read_dataframe(path, layer="pipes_capacity", read_geometry=False)
    want = list(classify_pipes(res.layers()["pipes_capacity"], res.town.profile))
    assert got == want
    assert len(back) == len(got)
    assert {"ok", "nocapacity", "unknown"} <= set(got)  # the sample exercises the cases


def test_user_styles_are_kept_and_rewriting_replaces_gisnets(tmp_path: Path) -> None:
    layers = _small_layers()
    path = write_results(tmp_path, layers)
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE layer_styles SET useAsDefault = 0 WHERE f_table_name = 'plants'")
        con.execute("INSERT INTO layer_styles (f_table_name, f_geometry_column, styleName, "
                    "styleQML, useAsDefault) VALUES ('plants', 'geom', 'mine', '<qgis/>', 1)")
    con.close()
    write_results(tmp_path, {"plants": layers["plants"]})
    con = sqlite3.connect(path)
    try:
        rows = sorted(con.execute("SELECT styleName, useAsDefault FROM layer_styles WHERE "
                                  "f_table_name = 'plants'"))
        pipes = con.execute("SELECT count(*) FROM layer_styles WHERE f_table_name = "
                            "'pipes_capacity'").fetchone()[0]
    finally:
        con.close()
    assert rows == [("gisnet", 0), ("mine", 1)]
    assert pipes == 1


# --------------------------------------------------------------------------- tables for Excel


def test_csv_has_a_byte_order_mark_for_excel(tmp_path: Path) -> None:
    from gisnet.output import write_tables

    df = pd.DataFrame({"section": ["§ 168-22.2G"], "distance_ft": [99.96]})
    (csv,) = write_tables(tmp_path, {"obligations": df}, ["csv"])
    raw = csv.read_bytes()
    assert raw[:3] == b"\xef\xbb\xbf"
    assert raw[3:].decode("utf-8").splitlines() == ["section,distance_ft", "§ 168-22.2G,100.0"]


def test_xlsx_has_one_sheet_per_layer_with_units_and_wkt(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    from gisnet.output import write_tables

    layers = _small_layers()
    layers["obligations"] = pd.DataFrame({
        "parcel_id": ["P1", "P2"], "within_distance": pd.array([True, None], dtype="boolean"),
        "deadline_days": pd.array([90, None], dtype="Int64"), "section": ["§ 168-22.2G", None]})
    (book,) = write_tables(tmp_path, layers, ["xlsx"])
    assert book == tmp_path / "tables" / "gisnet-results.xlsx"
    wb = openpyxl.load_workbook(book, read_only=True)
    assert wb.sheetnames == ["pipes_capacity", "plants", "scratch", "obligations", "columns"]
    rows = list(wb["pipes_capacity"].iter_rows(values_only=True))
    assert rows[0] == ("Main", "Length (ft)", "Full-flow capacity (gpd)", "Utilization (ratio)",
                       "Peaking factor (ratio)", "up_invert_ft", "Geometry (WKT, working CRS)")
    assert rows[1] == ("M1", 24.6, 6655756, 0.123456789, 3.456789, 133.71,
                       "LINESTRING (0 0, 24 0)")
    assert rows[2][3] is None and rows[2][5] is None and len(rows) == 3
    ob = list(wb["obligations"].iter_rows(values_only=True))
    assert ob[0] == ("Parcel", "Within the distance", "Deadline (days)", "Ordinance section")
    assert ob[1:] == [("P1", True, 90, "§ 168-22.2G"), ("P2",)]  # trailing empty cells
    assert list(wb["scratch"].iter_rows(values_only=True)) == [("a_ft",), (1.2,)]
    cols = {(r[0], r[1]): r[2:] for r in wb["columns"].iter_rows(min_row=2, values_only=True)}
    assert cols[("plants", "design_flow_mgd")][:2] == ("Design flow (MGD)", "MGD")
    assert cols[("plants", "geometry_wkt")][1] == "working CRS"
    wb.close()


# --------------------------------------------------------------------------- the schema JSON


def test_committed_schema_is_what_the_script_makes(tmp_path: Path) -> None:
    """gisnet/data/results_schema.json (package data) is docs/results.md, made by
    scripts/make_results_schema.py: the two cannot drift."""
    import make_results_schema
    from results_doc import SCHEMA_JSON, schema_json

    assert SCHEMA_JSON.read_text(encoding="utf-8") == schema_json(DOC_TEXT)
    assert layer_docs() == parse_layers(DOC_TEXT)
    assert make_results_schema.main(["--check"]) == 0
    out = tmp_path / "schema.json"
    out.write_text("{}", encoding="utf-8")
    assert make_results_schema.main(["--check", "--out", str(out)]) == 1
    assert out.read_text(encoding="utf-8") == "{}"  # --check writes nothing
    assert make_results_schema.main(["--out", str(out)]) == 0
    assert out.read_bytes() == SCHEMA_JSON.read_bytes()


def test_schema_keeps_what_the_metadata_needs() -> None:
    docs = layer_docs()
    d = docs["obligations"].column("distance_ft")
    assert d is not None and (d.type, d.unit) == ("real", "ft")
    assert d.label == "Distance (ft)" and d.meaning
    assert docs["quality"].column("geometry_wkt").file_only
    assert list(docs)[:2] == ["quality", "graph_nodes"]  # the document's order


@pytest.fixture()
def package_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A stand-in for the installed package's folder; the schema read afresh."""
    from gisnet.output import metadata

    root = tmp_path / "gisnet"
    (root / "data").mkdir(parents=True)
    monkeypatch.setattr(metadata.resources, "files", lambda _pkg: root)
    layer_docs.cache_clear()
    yield root / "data" / "results_schema.json"
    layer_docs.cache_clear()


def test_missing_schema_is_an_error_not_empty_descriptions(package_data: Path,
                                                           tmp_path: Path) -> None:
    from gisnet.errors import ConfigError

    with pytest.raises(ConfigError, match=r"results_schema\.json.*damaged: the file is "
                                          r"missing; reinstall gisnet"):
        layer_docs()
    with pytest.raises(ConfigError, match="results schema"):
        write_results(tmp_path / "out", _small_layers())


@pytest.mark.parametrize(("text", "problem"), [
    ("{not json", "not valid JSON"),
    ('{"format": 99, "layers": {}}', "not a results schema of format 1"),
    ('{"format": 1, "layers": {}}', "lists no layers"),
    ('{"format": 1, "layers": {"plants": {"description": "d", "columns": []}}}',
     "layer 'plants' has no columns"),
    ('{"format": 1, "layers": {"plants": {"description": "d", "columns": '
     '[{"name": "x", "type": "real", "unit": "ft"}]}}}',
     "column 1 of layer 'plants' is not"),
    ('{"format": 1, "layers": {"plants": {"description": "d", "columns": '
     '[{"name": "x", "type": "real", "unit": 3, "meaning": "m"}]}}}',
     "unit of column 1 of layer 'plants' is not text"),
    ('{"format": 1, "layers": {"plants": {"description": null, "columns": '
     '[{"name": "x", "type": "real", "unit": "ft", "meaning": "m"}]}}}',
     "the description of layer 'plants' is not text"),
])
def test_damaged_schema_is_an_error_naming_the_file(package_data: Path, text: str,
                                                    problem: str) -> None:
    from gisnet.errors import ConfigError

    package_data.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        layer_docs()
    assert str(package_data) in str(exc.value) and problem in str(exc.value)


def test_metadata_reads_the_package_data_only(package_data: Path) -> None:
    """A valid JSON in the package is what the GeoPackage gets (no docs/ involved)."""
    package_data.write_text('{"format": 1, "layers": {"plants": {"description": "Plants.", '
                            '"columns": [{"name": "ratio", "type": "real", "unit": "ratio", '
                            '"meaning": "m"}]}}}', encoding="utf-8")
    docs = layer_docs()
    assert list(docs) == ["plants"] and docs["plants"].columns[0].label == "Ratio (ratio)"
