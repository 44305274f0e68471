"""The result layers against their reference, docs/results.md.

The column tables are parsed from docs/results.md, so the document and the code
cannot drift apart: every layer ``gisnet.pipeline.analyse`` returns for the
sample town must have exactly the documented columns, in order, with the
documented types, its geometry in the town's working CRS, and plausible values
in every unit-suffixed column. Derived numbers are checked against independent
computations (shapely lengths and distances, Manning's formula worked here).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import shapely

from gisnet.obligations import STATUSES
from gisnet.output.metadata import SUFFIX_UNITS
from gisnet.report import SEVERITIES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from results_doc import RESULTS_DOC as DOC
from results_doc import parse_tables

PKG = Path(__file__).resolve().parents[1] / "gisnet"

#: Layers named by the results contract (docs/architecture.md).
LAYERS = {
    "quality", "graph_nodes", "graph_edges", "obligations", "obligation_evidence",
    "connection_zone", "frontage", "control_manholes", "control_paths", "sampling_plan",
    "pipes_capacity", "plants", "plant_increase", "swmm_comparison", "swmm_original_comparison",
    "worklist", "changes", "overdue", "register",
}
#: Layers written by a command of their own, not by ``analyse`` (tests/test_swmm.py checks them).
COMMAND_LAYERS = {"swmm_comparison", "swmm_original_comparison", "changes", "register"}
#: Units a numeric column without a unit suffix may have (unitless by nature).
UNITLESS = {"ft/ft", "ratio", "count", "persons", "coefficient", "CRS unit"}
TYPES = {"text", "real", "integer", "boolean", "date"}
GEOM_TYPES = {"Point", "LineString", "Polygon", "MultiPoint", "MultiLineString",
              "MultiPolygon", "null"}
#: Elevations (feet above the data's vertical datum): may be negative.
ELEVATIONS = {"rim_ft", "invert_ft", "up_invert_ft", "down_invert_ft"}
FT = 0.3048  # international foot, m
GAL_PER_FT3 = 7.48051948  # US gallons per cubic foot (231 in^3 per gallon)


# --------------------------------------------------------------------------- the document


@pytest.fixture(scope="module")
def doc() -> dict[str, dict[str, list[list[str]]]]:
    return parse_tables(DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def columns(doc: dict) -> dict[str, list[tuple[str, str, str]]]:
    """Layer -> [(column, type, unit)] in document order."""
    out = {}
    for layer, tables in doc.items():
        if "column" in tables:
            assert all(len(r) == 4 for r in tables["column"]), f"{layer}: a row is not 4 cells"
            out[layer] = [(r[0], r[1], r[2]) for r in tables["column"]]
    return out


@pytest.fixture(scope="module")
def file_only(doc: dict) -> set[tuple[str, str]]:
    """(layer, column) of the columns only the written files hold."""
    return {(layer, r[0]) for layer, t in doc.items() for r in t.get("column", [])
            if r[3].startswith("files only:")}


def _vocabulary(doc: dict, layer: str, header: str) -> set[str]:
    return {r[0] for r in doc[layer][header]}


def test_parser_reads_a_small_table() -> None:
    text = ("# T\n\n## `a`\n\nprose\n\n| column | type | unit | meaning |\n|---|---|---|---|\n"
            "| `x_ft` | real | ft | a |\n| `geometry` | Point | working CRS | g |\n\n"
            "| kind | meaning |\n|---|---|\n| `k1` | one |\n\n## Other\n\n| column |\n|---|\n"
            "| `nope` |\n")
    t = parse_tables(text)
    assert list(t) == ["a"]
    assert [r[0] for r in t["a"]["column"]] == ["x_ft", "geometry"]
    assert t["a"]["column"][0][:3] == ["x_ft", "real", "ft"]
    assert t["a"]["kind"] == [["k1", "one"]]


def test_document_covers_every_layer(columns: dict) -> None:
    assert set(columns) == LAYERS


def test_document_units_follow_the_names(columns: dict) -> None:
    problems = []
    for layer, cols in columns.items():
        names = [c for c, _, _ in cols]
        assert len(names) == len(set(names)), f"{layer}: a column is listed twice"
        assert names[-1] == "geometry", f"{layer}: geometry must be the last row"
        geom_types = {t.strip() for t in cols[-1][1].split(",")}
        assert geom_types <= GEOM_TYPES, f"{layer}: geometry types {geom_types}"
        assert cols[-1][2] == "working CRS", f"{layer}: geometry unit"
        for name, typ, unit in cols[:-1]:
            suffix = next((s for s in SUFFIX_UNITS if name.endswith(s)), None)
            if typ not in TYPES:
                problems.append(f"{layer}.{name}: unknown type {typ!r}")
            elif suffix is not None:
                if unit != SUFFIX_UNITS[suffix] or typ not in ("real", "integer"):
                    problems.append(f"{layer}.{name}: {typ} in {unit!r}, name says "
                                    f"{SUFFIX_UNITS[suffix]}")
            elif typ in ("real", "integer"):
                if unit not in UNITLESS:
                    problems.append(f"{layer}.{name}: numeric in {unit!r} without a unit "
                                    "suffix")
            elif unit != "—":
                problems.append(f"{layer}.{name}: {typ} column with unit {unit!r}")
    assert not problems, "\n".join(problems)


def test_document_vocabularies_match_the_code(doc: dict) -> None:
    assert _vocabulary(doc, "obligations", "status") == set(STATUSES)
    assert _vocabulary(doc, "quality", "severity") == set(SEVERITIES)


def test_every_quality_kind_the_code_reports_is_documented(doc: dict) -> None:
    """Scan gisnet/ for ``.add("kind", "severity"`` / ``Finding("kind", ...``."""
    kinds = {r[0]: r[1] for r in doc["quality"]["kind"]}
    pat = re.compile(r"(?:\.add|Finding)\(\s*(f?)\"(\w+)(\{?)[^\"]*\"\s*,\s*\"(info|warning|"
                     r"error)\"")
    found = []
    for path in sorted(PKG.rglob("*.py")):
        for m in pat.finditer(path.read_text(encoding="utf-8")):
            fstr, kind, brace, severity = m.groups()
            found.append((path.name, kind, severity, bool(fstr and brace)))
    assert len(found) > 30, "the scan finds the report calls"
    missing = []
    for name, kind, severity, prefix in found:
        if prefix:  # f"no_capacity_{name}": some documented kind has this prefix
            hits = [k for k in kinds if k.startswith(kind)]
            if not hits or any(kinds[k] != severity for k in hits):
                missing.append(f"{name}: {kind}* ({severity})")
        elif kinds.get(kind) != severity:
            missing.append(f"{name}: {kind} ({severity}); documented {kinds.get(kind)!r}")
    assert not missing, "\n".join(missing)


# --------------------------------------------------------------------------- the layers


@pytest.fixture(scope="module")
def res(sample_dir: Path):
    from dataclasses import replace

    from gisnet.io import load_town
    from gisnet.obligations import frontage
    from gisnet.pipeline import analyse

    res = analyse(load_town(sample_dir))
    # the sample's ordinance (Poughkeepsie) charges nothing by front footage, so its run
    # has no frontage layer; measured here as a Berlin run would, for its columns
    assert res.obligations.frontage is None
    res.obligations = replace(res.obligations, frontage=frontage(res.town))
    return res


@pytest.fixture(scope="module")
def fpu(res) -> float:
    """Feet per working-CRS unit, from the CRS's own axis unit."""
    return res.town.crs.axis_info[0].unit_conversion_factor / FT


def _type_ok(s: pd.Series, typ: str) -> bool:
    if typ == "real":
        return pd.api.types.is_float_dtype(s)
    if typ == "integer":
        return pd.api.types.is_integer_dtype(s)
    if typ == "boolean":
        return pd.api.types.is_bool_dtype(s)
    if typ == "date":
        return pd.api.types.is_datetime64_any_dtype(s)
    return all(isinstance(v, str) for v in s.dropna())


@pytest.mark.slow
def test_layers_have_exactly_the_documented_columns(res, columns: dict, file_only: set) -> None:
    assert set(res.layers()) == set(columns) - COMMAND_LAYERS, "the sample town yields every layer"
    assert file_only == {("quality", "geometry_wkt"), ("worklist", "geometry_wkt")}
    for layer, df in res.layers().items():
        assert list(df.columns) == [c for c, _, _ in columns[layer]
                                    if (layer, c) not in file_only], layer


@pytest.mark.slow
def test_columns_have_the_documented_types(res, columns: dict, file_only: set) -> None:
    bad = []
    for layer, df in res.layers().items():
        for name, typ, _ in columns[layer][:-1]:
            if (layer, name) in file_only:
                continue
            s = df[name]
            if s.notna().any() and not _type_ok(s, typ):
                bad.append(f"{layer}.{name}: {s.dtype} is not {typ}")
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_geometry_in_the_working_crs(res, columns: dict) -> None:
    crs = res.town.crs
    assert crs.is_projected
    for layer, df in res.layers().items():
        assert df.crs == crs, layer
        allowed = {t.strip() for t in columns[layer][-1][1].split(",")}
        kinds = set(df.geometry.geom_type.dropna())
        assert kinds <= allowed, f"{layer}: {kinds - allowed}"
        if "null" not in allowed:
            assert df.geometry.notna().all(), f"{layer}: null geometry not documented"


@pytest.mark.slow
def test_written_geopackage_matches(res, columns: dict, tmp_path: Path) -> None:
    import pyogrio

    from gisnet.output import write_results

    path = write_results(tmp_path, res.layers())
    assert {n for n, _ in pyogrio.list_layers(path)} == {*res.layers(), "layer_styles"}
    for layer in res.layers():
        back = pyogrio.read_dataframe(path, layer=layer)
        assert list(back.columns) == [c for c, _, _ in columns[layer]], layer
        assert back.crs == res.town.crs, layer
        assert len(back) == len(res.layers()[layer]), layer
        assert set(back.geometry.geom_type.dropna()) <= {"Point"} or layer != "quality"
    # quality: one geometry type in the file; the whole place in geometry_wkt
    q, mem = pyogrio.read_dataframe(path, layer="quality"), res.layers()["quality"]
    assert set(mem.geometry.geom_type.dropna()) > {"Point"}, "the sample has line findings"
    assert set(q.geometry.geom_type.dropna()) == {"Point"}
    assert q.geometry.isna().sum() == mem.geometry.isna().sum() > 0
    placed = mem.geometry.notna().to_numpy()
    whole = shapely.from_wkt(q["geometry_wkt"].to_numpy()[placed])
    assert shapely.equals_exact(whole, mem.geometry.values[placed], tolerance=0.001).all()
    # each point lies on its line (within the 0.001 CRS unit of the WKT)
    assert (shapely.distance(q.geometry.values[placed], whole) < 0.002).all()


# --------------------------------------------------------------------------- plausible values


def _finite(s: pd.Series) -> np.ndarray:
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    return v[np.isfinite(v)]


@pytest.mark.slow
def test_unit_columns_hold_plausible_values(res, columns: dict) -> None:
    bad = []

    def check(layer: str, name: str, ok: np.ndarray, what: str) -> None:
        if not ok.all():
            bad.append(f"{layer}.{name}: {int((~ok).sum())} value(s) not {what}")

    for layer, df in res.layers().items():
        for name, typ, unit in columns[layer][:-1]:
            if typ not in ("real", "integer"):
                continue
            raw = pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float)
            check(layer, name, ~np.isinf(raw), "finite or null")
            v = _finite(df[name])
            if name in ELEVATIONS:
                check(layer, name, (v > -1000) & (v < 30000), "an elevation in ft")
            elif name == "diameter_in":
                check(layer, name, (v >= 4) & (v <= 120), "between 4 and 120 in")
            elif name in ("capacity_gpd", "capacity_cfs", "velocity_fps", "length_ft",
                          "design_flow_mgd", "area_acres", "deadline_days"):
                check(layer, name, v > 0, "> 0")
            elif unit == "%":
                check(layer, name, (v >= 0) & (v <= 100), "a percentage")
            elif unit == "ft/ft":
                check(layer, name, np.abs(v) < 1, "a slope below 1 ft/ft")
            elif name == "peaking_factor":
                check(layer, name, (v >= 1) & (v <= 5), "a peaking factor")
            elif name == "manning_n":
                check(layer, name, (v > 0.005) & (v < 0.05), "a Manning n")
            elif unit == "count":
                check(layer, name, (v >= 0) & (v == np.round(v)), "a count")
            elif unit != "CRS unit":
                check(layer, name, v >= 0, ">= 0")
    assert not bad, "\n".join(bad)
    # the sample is big enough that every documented numeric column has values
    pc = res.layers()["pipes_capacity"]
    assert pc["capacity_gpd"].notna().sum() > 400
    assert pc["capacity_gpd"].isna().sum() == 5  # 1 adverse, 1 no diameter, 3 no slope


@pytest.mark.slow
def test_vocabularies_of_the_sample(res, doc: dict) -> None:
    ob = res.layers()["obligations"]
    assert set(ob["status"]) <= _vocabulary(doc, "obligations", "status")
    flags = {f for v in res.layers()["pipes_capacity"]["flags"] for f in v.split(";") if f}
    assert flags <= _vocabulary(doc, "pipes_capacity", "flag")
    assert {"adverse_slope", "no_diameter", "no_slope", "cycle"} <= flags
    q = res.layers()["quality"]
    assert set(q["severity"]) <= set(SEVERITIES)
    assert set(q["kind"]) <= _vocabulary(doc, "quality", "kind")
    assert q["finding_id"].is_unique
    assert set(res.layers()["plants"]["basis"]) <= {"monthly_3mo", "avg_flow", "accumulated",
                                                  "none"}


# --------------------------------------------------------------------------- independent checks


@pytest.mark.slow
def test_coordinates_and_lengths_against_shapely(res, fpu: float) -> None:
    L = res.layers()
    assert fpu == pytest.approx(1200 / 3937 / FT, rel=1e-12)  # EPSG:2260 is in US survey ft
    n = L["graph_nodes"]
    assert np.allclose(n["x"], n.geometry.x) and np.allclose(n["y"], n.geometry.y)
    for layer in ("graph_edges", "pipes_capacity"):
        e = L[layer]
        assert np.allclose(e["length_ft"], shapely.length(e.geometry.values) * fpu,
                           rtol=1e-9), layer
    # control paths run along the pipes: their drawn length is the path length
    cp = L["control_paths"]
    drawn = cp.geometry.notna()
    assert drawn.sum() > 2000
    assert np.allclose(shapely.length(cp.geometry.values[drawn]) * fpu,
                       cp.loc[drawn, "path_length_ft"], rtol=1e-6, atol=1e-6)
    assert (cp.loc[drawn, "path_length_ft"] > 0).all()
    z = L["connection_zone"].iloc[0]
    assert z["area_acres"] == pytest.approx(z.geometry.area * fpu**2 / 43_560, rel=1e-9)


@pytest.mark.slow
def test_obligation_distances_against_shapely(res, fpu: float) -> None:
    ob, ev = res.layers()["obligations"], res.layers()["obligation_evidence"]
    mains = res.town.layers["mains"].set_index("main_id").geometry
    m = ob[ob["main_id"].notna()]
    # property-line measure: parcel polygon to the named main's centreline
    d = shapely.distance(m.geometry.values, mains.loc[m["main_id"]].values) * fpu
    assert np.allclose(d, m["distance_ft"], atol=1e-6)
    assert np.allclose(np.hypot(m["nearest_x"] - m["from_x"], m["nearest_y"] - m["from_y"])
                       * fpu, m["distance_ft"], atol=1e-6)
    assert np.allclose(shapely.length(ev.geometry.values) * fpu, ev["distance_ft"], atol=1e-6)
    lim = float(res.town.profile.connection.distance_ft)
    assert (ob["distance_limit_ft"] == lim).all()
    known = ob["within_distance"].notna() & ~ob["approximate"]
    assert (ob.loc[known, "within_distance"].astype(bool)
            == (ob.loc[known, "distance_ft"] <= lim + 0.005)).all()


@pytest.mark.slow
def test_capacity_against_manning_worked_here(res) -> None:
    pc = res.layers()["pipes_capacity"]
    ok = pc["capacity_gpd"].notna()
    p = pc[ok]
    d_ft = p["diameter_in"].to_numpy() / 12.0
    area = math.pi * d_ft**2 / 4
    q_cfs = 1.486 / p["manning_n"].to_numpy() * area * (d_ft / 4) ** (2 / 3) \
        * np.sqrt(p["slope"].to_numpy())
    assert np.allclose(p["capacity_cfs"], q_cfs, rtol=1e-9)
    assert np.allclose(p["capacity_gpd"], q_cfs * GAL_PER_FT3 * 86_400, rtol=1e-6)
    assert np.allclose(p["velocity_fps"], q_cfs / area, rtol=1e-9)
    # hand-worked: 8 in at 0.4 %, n = 0.013 -> 0.7643 cfs (about 494,000 gpd)
    q8 = 1.486 / 0.013 * (math.pi * (8 / 12) ** 2 / 4) * (8 / 12 / 4) ** (2 / 3) * 0.004**0.5
    assert q8 == pytest.approx(0.7643, abs=5e-4)
    util = p["peak_flow_gpd"] / p["capacity_gpd"]
    assert np.allclose(p["utilization"].dropna(), util[p["utilization"].notna()], rtol=1e-9)
    pl = res.layers()["plants"]
    assert np.allclose(pl["ratio"], pl["avg_flow_mgd"] / pl["design_flow_mgd"])
    sp = res.layers()["sampling_plan"]
    assert np.allclose(sp["plant_share_pct"],
                       sp["process_flow_gpd"] / (sp["plant_design_flow_mgd"] * 1e6) * 100)


@pytest.mark.slow
def test_geopackage_keeps_nullable_booleans_and_integers_typed(res, tmp_path: Path) -> None:
    """Nullable booleans are BOOLEAN fields and nullable integers INTEGER fields in
    the GeoPackage, nulls kept: never the text 'True'/'False', never reals."""
    import pyogrio

    from gisnet.output import write_results

    path = write_results(tmp_path, {"obligations": res.layers()["obligations"]})
    info = pyogrio.read_info(path, layer="obligations")
    types = dict(zip(info["fields"], info["dtypes"], strict=True))
    assert types["within_distance"] == "bool"
    assert types["abuts_sewered_street"] == "bool"
    assert types["deadline_days"] == "int64"
    back = pyogrio.read_dataframe(path, layer="obligations", use_arrow=True)
    src = res.layers()["obligations"]
    assert back["abuts_sewered_street"].isna().sum() == src["abuts_sewered_street"].isna().sum()
    assert set(back["within_distance"].dropna().unique()) <= {True, False}
