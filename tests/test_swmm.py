"""SWMM models in and out (gisnet.swmm, import-swmm, export-swmm, check-swmm).

Real public models (tests/data/swmm/README.md): EPA SWMM's Example 1, swmmio's
state-plane sewer subset and its pump-control example. Numbers are checked
against what the model files say, read here with swmmio, and against SWMM's
own run of the exported model.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gisnet.cli import main
from gisnet.graph import build_sewer_graph
from gisnet.io import load_town

pytest.importorskip("swmmio")
pytest.importorskip("pyswmm")

DATA = Path(__file__).parent / "data" / "swmm"
#: The models' coordinates are in feet of no stated CRS: a local transverse Mercator in US feet.
LOCAL_FT = ("+proj=tmerc +lat_0=0 +lon_0=-75 +k=1 +x_0=0 +y_0=0 +ellps=GRS80 +units=us-ft "
            "+no_defs")
MODELS = ["Example1.inp", "model_state_plane.inp", "Pump_Control_Model.inp"]
PROFILE = "poughkeepsie-fourth-ward"


def _import(model: Path, out: Path) -> Path:
    assert main(["import-swmm", str(model), str(out), "--crs", LOCAL_FT, "--profile", PROFILE,
                 "-q"]) == 0
    return out


def _model(path: Path):
    import warnings
    from types import SimpleNamespace

    import swmmio

    # swmmio reads sections lazily and warns about the ones a model lacks: read the
    # ones the tests use here, warnings off
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp = swmmio.Model(str(path)).inp
        return SimpleNamespace(**{s: getattr(inp, s) for s in (
            "conduits", "pumps", "xsections", "junctions", "outfalls", "storage")})


def _name(v) -> str:
    """swmmio reads numeric-looking names as numbers (9 -> 9.0)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@pytest.mark.parametrize("name", MODELS)
def test_import_reproduces_every_conduit(tmp_path: Path, name: str) -> None:
    inp = _model(DATA / name)
    town = load_town(_import(DATA / name, tmp_path / "town"))
    G = build_sewer_graph(town)
    edges = {k: (u, v) for u, v, k in G.edges(keys=True)}
    want = {str(n): (_name(r.InletNode), _name(r.OutletNode)) for n, r in inp.conduits.iterrows()}
    for n, r in inp.pumps.iterrows() if len(inp.pumps) else []:
        want[str(n)] = (_name(r.InletNode), _name(r.OutletNode))
    assert edges == want


@pytest.mark.parametrize("name", MODELS)
def test_capacity_is_manning_from_the_model(tmp_path: Path, name: str) -> None:
    from gisnet.pipeline import analyse

    inp = _model(DATA / name)
    town = load_town(_import(DATA / name, tmp_path / "town"))
    pipes = analyse(town, only={"capacity"}, control_paths=False).capacity.pipes
    cap = pipes.set_index("edge_key")["capacity_cfs"]
    n = town.profile.capacity.manning_n
    inv = {}
    for sec in ("junctions", "outfalls", "storage"):
        df = getattr(inp, sec)
        if len(df):
            inv.update({str(k): float(v) for k, v in df["InvertElev"].items()})
    checked = 0
    for cname, r in inp.conduits.iterrows():
        xs = inp.xsections.loc[cname]
        if xs.Shape != "CIRCULAR":
            continue
        up = inv[_name(r.InletNode)] + float(r.InOffset)
        dn = inv[_name(r.OutletNode)] + float(r.OutOffset)
        s = (up - dn) / float(r.Length)
        if s <= 0:
            continue
        d = float(xs.Geom1)
        area = math.pi * d * d / 4
        q = 1.486 / n * area * (d / 4) ** (2 / 3) * math.sqrt(s)
        assert cap[str(cname)] == pytest.approx(q, rel=0.005), cname
        checked += 1
    assert checked >= 10


def test_import_needs_a_crs_and_names_bad_lines(tmp_path: Path, capsys) -> None:
    assert main(["import-swmm", str(DATA / "Example1.inp"), str(tmp_path / "t"),
                 "--profile", PROFILE]) == 2
    assert "--crs" in capsys.readouterr().err
    text = (DATA / "Example1.inp").read_text()
    cases = {
        "units": (text.replace("FLOW_UNITS           CFS", "FLOW_UNITS  FURLONGS"),
                  "[OPTIONS] line"),
        "missing": (text.replace("[XSECTIONS]", "[XSECTIONS_GONE]"), "[XSECTIONS]"),
        "duplicate": (text.replace("\n13               ", "\n10               ", 1),
                      "used twice"),
        "unknown node": (text.replace("\n1                9                10", "\n1  9  99", 1),
                         "[CONDUITS] line"),
        "not a number": (text.replace("400        0.01", "400        zero", 1),
                         "[CONDUITS] line 118"),
        "truncated": (text[: text.index("\n", text.index("[CONDUITS]") + 300) + 12],
                      "[CONDUITS] line"),
    }
    for case, (bad, expect) in cases.items():
        p = tmp_path / f"{case}.inp"
        p.write_text(bad)
        assert main(["import-swmm", str(p), str(tmp_path / case), "--crs", LOCAL_FT,
                     "--profile", PROFILE]) == 2, case
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expect in err and p.name in err, (case, err)


def test_round_trip_keeps_conduits_nodes_and_inflows(tmp_path: Path) -> None:
    from gisnet.swmm import read_model

    src = DATA / "Pump_Control_Model.inp"
    a = read_model(src)
    _import(src, tmp_path / "a")
    out = tmp_path / "rt.inp"
    assert main(["export-swmm", "--layers", str(tmp_path / "a"), "--out", str(out), "-q"]) == 0
    b = read_model(out)
    links_a = set(a.conduits["main_id"]) | set(a.links["main_id"])
    assert set(b.conduits["main_id"]) | set(b.links["main_id"]) == links_a
    assert set(a.conduits["main_id"]) <= set(b.conduits["main_id"])
    # the pump shares its wet well with an overflow conduit: SWMM allows an ideal pump
    # only as the node's one outflow, so it comes back as a conduit, and the file says so
    assert "PUMP1" in out.read_text().split("[OPTIONS]")[0]
    assert set(b.nodes["node_id"]) == set(a.nodes["node_id"])
    fa = a.dwf.set_index("node_id")["avg_flow_gpd"].sort_index()
    fb = b.dwf.set_index("node_id")["avg_flow_gpd"].sort_index()
    # every [DWF] is a parcel naming its node (the wet well SU1's too, which a pump
    # leaves): gisnet adds it there and the export writes it there, every inflow as it was
    town_a = load_town(tmp_path / "a")
    dwf = town_a.layers["parcels"].query("land_use == 'swmm_dwf'")
    assert sorted(dwf["outlet_node"]) == sorted(fa.index) and "SU1" in set(fa.index)
    assert set(fb.index) == set(fa.index)
    np.testing.assert_allclose(fb.to_numpy(), fa.to_numpy(), rtol=1e-6)
    _import(out, tmp_path / "b")
    town = load_town(tmp_path / "b")
    assert set(town.layers["mains"]["main_id"]) == set(a.conduits["main_id"]) | set(
        a.links["main_id"])


@pytest.mark.slow
def test_sample_flows_equal_swmm_steady_flows(tmp_path: Path, sample_dir: Path) -> None:
    """The sample town is a tree: every conduit within 1 %, continuity below 1 %."""
    from gisnet.swmm import check_town

    town = load_town(sample_dir)
    layer, run, ex, report = check_town(town, tmp_path / "s.inp")
    assert abs(run.flow_routing_error_pct) < 1.0
    assert len(layer) == len(ex.conduits) > 400
    assert (layer["flow_diff_pct"].abs() <= 1.0).all()
    assert not report.of_kind("swmm_flow_difference")
    total = ex.dwf["flow_gpd"].sum()
    assert layer["swmm_flow_gpd"].max() == pytest.approx(total, rel=0.01)


@pytest.mark.slow
def test_check_swmm_writes_the_documented_layer(tmp_path: Path, sample_dir: Path) -> None:
    import geopandas as gpd

    from gisnet.output.metadata import layer_docs

    assert main(["check-swmm", "--layers", str(sample_dir), "--out", str(tmp_path), "-q"]) == 0
    cols = [c.name for c in layer_docs()["swmm_comparison"].columns]
    got = gpd.read_file(tmp_path / "gisnet-results.gpkg", layer="swmm_comparison")
    assert list(got.columns) == cols
    assert (tmp_path / "gisnet-swmm.inp").is_file()


def test_looped_model_differences_are_explained(tmp_path: Path) -> None:
    """A loop: gisnet splits by capacity, SWMM by hydraulics; each difference explained."""
    from gisnet.swmm import check_town

    _import(DATA / "Pump_Control_Model.inp", tmp_path / "a")
    town = load_town(tmp_path / "a")
    layer, run, _, _ = check_town(town, tmp_path / "a.inp", routing="DYNWAVE")
    assert abs(run.flow_routing_error_pct) < 1.0
    bad = layer[layer["flow_diff_pct"].abs() > 1.0]
    assert len(bad) > 0, "the pump's wet well splits the flow"
    # each explained by the split at the wet well; the conduit arriving there agrees: the
    # wet well's own [DWF] enters at SU1 in gisnet as in the export
    assert bad["explanation"].str.contains("split").all(), bad
    arriving = layer.set_index("edge_key").loc["KRO3001-KRO3002"]
    assert abs(arriving["flow_diff_pct"]) <= 1.0


SI_MODEL = """[TITLE]
Two pipes in litres per second
[OPTIONS]
FLOW_UNITS LPS
[JUNCTIONS]
J1 10.0 2.0
J2 9.5 2.0
[OUTFALLS]
O1 9.0 FREE
[CONDUITS]
C1 J1 J2 50 0.013 0 0
C2 J2 O1 40 0.013 0.1 0
[XSECTIONS]
C1 CIRCULAR 0.3 0 0 0 1
C2 CIRCULAR 0.3 0 0 0 1
[DWF]
J1 FLOW 2.0
[COORDINATES]
J1 0 0
J2 50 0
O1 90 0
"""


def test_si_model_is_converted_to_feet_and_gpd(tmp_path: Path) -> None:
    p = tmp_path / "si.inp"
    p.write_text(SI_MODEL)
    local_m = LOCAL_FT.replace("us-ft", "m")
    assert main(["import-swmm", str(p), str(tmp_path / "t"), "--crs", local_m, "--profile",
                 PROFILE, "-q"]) == 0
    town = load_town(tmp_path / "t")
    m = town.layers["mains"].set_index("main_id")
    ft = 1 / 0.3048
    assert m.at["C1", "diameter_in"] == pytest.approx(0.3 / 0.0254)
    assert m.at["C2", "up_invert_ft"] == pytest.approx(9.6 * ft)
    assert m.at["C2", "down_invert_ft"] == pytest.approx(9.0 * ft)
    s = town.layers["manholes"].set_index("node_id")
    assert s.at["J1", "rim_ft"] == pytest.approx(12.0 * ft)
    parcels = town.layers["parcels"].set_index("parcel_id")
    gal_l = 3.785411784  # litres per US gallon
    assert parcels.at["DWF J1", "flow_gpd"] == pytest.approx(2.0 * 86400 / gal_l)
    G = build_sewer_graph(town)
    assert {k: (u, v) for u, v, k in G.edges(keys=True)} == {"C1": ("J1", "J2"),
                                                             "C2": ("J2", "O1")}


def test_dwf_average_is_baseline_times_pattern_mean() -> None:
    from gisnet.swmm import read_model

    m = read_model(DATA / "Pump_Control_Model.inp")
    hourly = [.0151, .01373, .01812, .01098, .01098, .01922, .02773, .03789, .03515, .03982,
              .02059, .02471, .03021, .03789, .03350, .03158, .03954, .02114, .02801, .03680,
              .02911, .02334, .02499, .02718]  # the model's pattern DWF, copied by hand
    cfs_gpd = 7.48051948 * 86400  # gallons per cubic foot x seconds per day
    assert len(m.dwf) == 30
    np.testing.assert_allclose(m.dwf["avg_flow_gpd"], 1.0 * np.mean(hourly) * cfs_gpd,
                               rtol=1e-5)


def test_names_are_read_without_regard_to_case(tmp_path: Path) -> None:
    """SWMM matches names without regard to case: a [DWF] naming pattern ``dwf`` where
    [PATTERNS] defines ``DWF``, or a link naming node ``kro3001``, is the same model
    (SWMM itself runs the changed file: checked here)."""
    from gisnet.swmm import read_model

    src = DATA / "Pump_Control_Model.inp"
    text = src.read_text()
    head, dwf = text.split("[DWF]", 1)
    dwf, tail = dwf.split("[PATTERNS]", 1)
    changed = head + "[DWF]" + dwf.replace('"DWF"', '"dwf"') + "[PATTERNS]" + tail
    sec = changed.index("[CONDUITS]")
    changed = changed[:sec] + changed[sec:].replace(" KRO3001 ", " kro3001 ", 1)
    assert changed.count("kro3001") == 1 and changed.count('"dwf"') == 30
    p = tmp_path / "case.inp"
    p.write_text(changed)
    a, b = read_model(src), read_model(p)
    assert a.conduits[["main_id", "from_node", "to_node"]].equals(
        b.conduits[["main_id", "from_node", "to_node"]])
    np.testing.assert_allclose(b.dwf["avg_flow_gpd"], a.dwf["avg_flow_gpd"])
    from pyswmm import Simulation

    with Simulation(str(p)) as sim:  # SWMM runs it as written
        for _ in sim:
            pass


def test_names_differing_only_in_case_are_an_error(tmp_path: Path, capsys) -> None:
    text = (DATA / "Example1.inp").read_text()
    bad = {
        "node": (text.replace("\n10               ", "\nj10              ", 1)
                 .replace("\n13               ", "\nJ10              ", 1), "'J10'"),
        "pattern": (SI_MODEL + "[PATTERNS]\nP1 DAILY 1 1 1 1 1 1 1\np1 1\n", "'P1'"),
    }
    for case, (t, name) in bad.items():
        p = tmp_path / f"{case}.inp"
        p.write_text(t)
        assert main(["import-swmm", str(p), str(tmp_path / case), "--crs", LOCAL_FT,
                     "--profile", PROFILE]) == 2, case
        err = capsys.readouterr().err.strip()
        assert "differ only in case" in err and name in err and p.name in err, (case, err)


#: Seven conduits of SWMM's standard shapes, 1 ft drop over 400 ft each, drawn to scale.
SHAPES_TEXT = """[TITLE]
Standard cross-sections
[OPTIONS]
FLOW_UNITS CFS
FLOW_ROUTING DYNWAVE
START_DATE 01/01/2020
END_DATE 01/01/2020
END_TIME 06:00:00
ROUTING_STEP 5
[JUNCTIONS]
A 100 12
B 99 12
C 98 12
D 97 12
E 96 12
F 95 12
G 94 12
[OUTFALLS]
O 93 FREE
[CONDUITS]
EGG1 A B 400 0.013 0 0
HOR1 B C 400 0.013 0 0
BSK1 C D 400 0.013 0 0
RCL1 D E 400 0.013 0 0
RRD1 E F 400 0.013 0 0
CUS1 F G 400 0.013 0 0
OUT1 G O 400 0.013 0 0
[XSECTIONS]
EGG1 EGG 3 0 0 0 1
HOR1 HORSESHOE 3 0 0 0 1
BSK1 BASKETHANDLE 3 0 0 0 1
RCL1 RECT_CLOSED 3 4 0 0 1
RRD1 RECT_ROUND 3 4 2.5 0 1
CUS1 CUSTOM 3 Box 0 0 1
OUT1 CIRCULAR 3 0 0 0 1
[CURVES]
Box SHAPE 0 1
Box 1 1
[DWF]
A FLOW 0.5
[REPORT]
INPUT YES
[COORDINATES]
A 0 0
B 400 0
C 800 0
D 1200 0
E 1600 0
F 2000 0
G 2400 0
O 2800 0
"""


def _rpt_value(rpt: Path, heading: str) -> float:
    """The "Continuity Error (%)" after ``heading`` in a SWMM report file."""
    lines = rpt.read_text().splitlines()
    k = next(i for i, t in enumerate(lines) if heading in t)
    row = next(t for t in lines[k:] if "Continuity Error (%)" in t)
    return float(row.split()[-1])


def _xsection_summary(rpt: Path) -> dict[str, tuple[float, float, float]]:
    """SWMM's report "Cross Section Summary": conduit -> (full area, hyd. radius, full flow)."""
    lines = rpt.read_text().splitlines()
    k = next(i for i, t in enumerate(lines) if "Cross Section Summary" in t)
    out = {}
    for t in lines[k + 5:]:
        v = t.split()
        if len(v) < 8:
            break
        out[v[0]] = (float(v[3]), float(v[4]), float(v[7]))
    return out


def _run(inp: Path) -> None:
    from pyswmm import Simulation

    with Simulation(str(inp)) as sim:
        for _ in sim:
            pass


def test_standard_shapes_capacity_by_hand_and_by_swmm(tmp_path: Path) -> None:
    """Egg, horseshoe, baskethandle, closed rectangle, rectangle with round bottom and
    a CUSTOM box: gisnet's capacity against (1) Manning by hand from each shape's area and
    hydraulic radius (the factors of the SWMM Reference Manual Vol. II for the egg,
    horseshoe and baskethandle; plain geometry for the others) and (2) the "Full Flow"
    SWMM's own report gives for the same conduits (±0.5 %)."""
    from gisnet.pipeline import analyse
    from gisnet.swmm import read_model

    src = tmp_path / "shapes.inp"
    src.write_text(SHAPES_TEXT)
    _run(src)
    swmm = _xsection_summary(src.with_suffix(".rpt"))
    town = load_town(_import(src, tmp_path / "t"))
    n = town.profile.capacity.manning_n
    cap = analyse(town, only={"capacity"}, control_paths=False).capacity.pipes.set_index(
        "edge_key")["capacity_cfs"]
    theta = 2 * math.asin(4 / 2 / 2.5)  # RECT_ROUND 3 ft x 4 ft, bottom radius 2.5 ft
    h_round = 2.5 * (1 - math.cos(theta / 2))
    a_rr = 4 * (3 - h_round) + 2.5 ** 2 / 2 * (theta - math.sin(theta))
    hand = {  # (area ft2, hydraulic radius ft)
        "EGG1": (0.5105 * 9, 0.1931 * 3), "HOR1": (0.8293 * 9, 0.2538 * 3),
        "BSK1": (0.7862 * 9, 0.2464 * 3), "RCL1": (12.0, 12.0 / 14.0),
        "RRD1": (a_rr, a_rr / (2.5 * theta + 2 * (3 - h_round) + 4)),
        "CUS1": (9.0, 9.0 / 12.0), "OUT1": (math.pi * 9 / 4, 0.75)}
    s = 1.0 / 400  # every conduit drops 1 ft over 400 ft
    for name, (a, r) in hand.items():
        q = 1.486 / n * a * r ** (2 / 3) * math.sqrt(s)
        assert cap[name] == pytest.approx(q, rel=0.005), name
        assert cap[name] == pytest.approx(swmm[name][2] * 0.013 / n, rel=0.005), name
    # export writes the shapes back; SWMM runs it and reports the same sections
    out = tmp_path / "rt.inp"
    assert main(["export-swmm", "--layers", str(tmp_path / "t"), "--out", str(out), "-q"]) == 0
    text = out.read_text().replace("INPUT NO", "INPUT YES")
    assert "CIRCULAR 0 " not in text
    out.write_text(text)
    _run(out)
    back = _xsection_summary(out.with_suffix(".rpt"))
    for name in hand:
        assert back[name][0] == pytest.approx(swmm[name][0], abs=0.006), name
        assert back[name][1] == pytest.approx(swmm[name][1], abs=0.006), name
    b = read_model(out).conduits.set_index("main_id")
    assert b.at["RRD1", "shape"] == "RECT_ROUND" and b.at["CUS1", "shape"] == "CUSTOM"


def test_shape_gisnet_cannot_represent_is_an_error(tmp_path: Path, capsys) -> None:
    p = tmp_path / "irregular.inp"
    p.write_text(SHAPES_TEXT.replace("HOR1 HORSESHOE 3 0 0 0 1", "HOR1 IRREGULAR T1"))
    assert main(["import-swmm", str(p), str(tmp_path / "t"), "--crs", LOCAL_FT,
                 "--profile", PROFILE]) == 2
    err = capsys.readouterr().err.strip()
    assert "HOR1" in err and "IRREGULAR" in err and "[XSECTIONS] line" in err


def test_rectangular_model_round_trips_and_runs(tmp_path: Path) -> None:
    """swmmio's alt_test3 (rectangular sections) was written back as CIRCULAR 0, which
    SWMM refuses: now every conduit keeps its shape and the export runs."""
    from gisnet.swmm import read_model

    _import(DATA / "alt_test3.inp", tmp_path / "a")
    out = tmp_path / "rt.inp"
    assert main(["export-swmm", "--layers", str(tmp_path / "a"), "--out", str(out), "-q"]) == 0
    _run(out)
    a = read_model(DATA / "alt_test3.inp").conduits.set_index("main_id")
    b = read_model(out).conduits.set_index("main_id")
    for col in ("shape", "geom1_ft", "geom2_ft", "geom3_ft"):
        assert b.loc[a.index, col].tolist() == pytest.approx(a[col].tolist()) \
            if col != "shape" else b.loc[a.index, col].tolist() == a[col].tolist()


@pytest.mark.parametrize("name", ["Pump_Control_Model.inp", "model_weir_setting.inp"])
def test_dry_weather_flows_agree_with_swmm_run_of_the_original(tmp_path: Path, capsys,
                                                               name: str) -> None:
    """gisnet's flows against SWMM's own dry-weather run of the original model: at least
    every link carrying more than 100 gpd within 5 % (measured: 32 of 32 and 3 of 3; the
    conduit arriving at the wet well SU1 among them, SU1's own [DWF] entering at SU1),
    the trunk to the outfall within 2 %, and no link dry in SWMM (the wet well's
    overflow, the weir) carrying flow in gisnet. The continuity printed is the report's."""
    import geopandas as gpd

    _import(DATA / name, tmp_path / "t")
    out = tmp_path / "out"
    assert main(["check-swmm", "--layers", str(tmp_path / "t"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    layer = gpd.read_file(out / "gisnet-results.gpkg", layer="swmm_original_comparison")
    g, q = layer["avg_flow_gpd"], layer["swmm_flow_gpd"]
    wet = np.maximum(g, q) > 100
    ok = (layer["flow_diff_pct"].abs() <= 5) & wet
    assert ok.sum() / wet.sum() == 1.0, layer[wet & ~ok]
    assert ((q <= 1) <= (g <= 1)).all(), layer[(q <= 1) & (g > 1)]
    assert (q <= 1).any(), "the model has an overflow, dry in dry weather"
    outfalls = {"Pump_Control_Model.inp": "KRO2001-KRO2005", "model_weir_setting.inp": "C3"}
    trunk = layer.set_index("edge_key").loc[outfalls[name]]
    assert abs(trunk["flow_diff_pct"]) <= 2.0
    # continuity as printed = SWMM's report, of the export and of the original's run
    rpt_export = _rpt_value(out / "gisnet-swmm.rpt", "Flow Routing Continuity")
    assert f"continuity error {rpt_export:.3f} % (routing)" in said
    (dry,) = out.glob("*-dry-weather.rpt")
    rpt_orig = _rpt_value(dry, "Flow Routing Continuity")
    assert f"SWMM continuity error {rpt_orig:.3f} % routing" in said


def test_town_file_states_a_split_share(tmp_path: Path) -> None:
    """[splits] in the town file decides the share at a node, and the result says so."""
    from gisnet.pipeline import analyse

    _import(DATA / "Pump_Control_Model.inp", tmp_path / "t")
    toml = tmp_path / "t" / "gisnet.toml"
    text = toml.read_text()
    i = text.index("[layers.")
    toml.write_text(text[:i] + '[splits.SU1]\nPUMP1 = 0.75\n"SU1-PSO" = 0.25\n\n' + text[i:])
    pipes = analyse(load_town(tmp_path / "t"), only={"capacity"},
                    control_paths=False).capacity.pipes.set_index("edge_key")
    assert pipes.at["SU1-PSO", "split_share"] == pytest.approx(0.25)
    assert pipes.at["SU1-PSO", "split_rule"] == "town file"
    # the flow shared at SU1: what arrives there plus SU1's own [DWF], which enters at SU1
    from gisnet.swmm import read_model

    own = read_model(DATA / "Pump_Control_Model.inp").dwf.set_index("node_id").at[
        "SU1", "avg_flow_gpd"]
    into = pipes.loc[pipes["to_node"] == "SU1", "avg_flow_gpd"].sum()
    assert pipes.at["PUMP1", "avg_flow_gpd"] == pytest.approx(0.75 * (into + own), rel=1e-9)
    assert pipes.at["SU1-PSO", "avg_flow_gpd"] == pytest.approx(0.25 * (into + own), rel=1e-9)


def test_check_swmm_when_swmm_refuses_the_original(tmp_path: Path, capsys) -> None:
    """swmmio's alt_test3 runs FLOW_ROUTING KINWAVE with conduit outfall_pipe rising from
    dummy_node1 (invert -15 ft) to dummy_outfall (-11 ft): SWMM refuses it (ERROR 115,
    adverse slope). check-swmm still checks gisnet's own export (its layer and its
    continuity, as SWMM's report gives it), says the comparison with the original could
    not be made, quoting SWMM's error and its report, and exits 1, without a traceback."""
    import geopandas as gpd

    _import(DATA / "alt_test3.inp", tmp_path / "t")
    out = tmp_path / "out"
    assert main(["check-swmm", "--layers", str(tmp_path / "t"), "--out", str(out)]) == 1
    said = capsys.readouterr()
    rpt = out / "alt_test3-dry-weather.rpt"
    swmm_error = next(t.strip() for t in rpt.read_text().splitlines()
                      if t.strip().startswith("ERROR"))
    assert swmm_error == "ERROR 115: adverse slope for Conduit outfall_pipe."
    assert "comparison with the original model" in said.err
    assert "could not be made" in said.err and swmm_error in said.err
    assert str(DATA / "alt_test3.inp") in said.err and str(rpt) in said.err
    assert "Traceback" not in said.err + said.out
    # what could be checked was: the export ran, its continuity is the report's
    rpt_export = _rpt_value(out / "gisnet-swmm.rpt", "Flow Routing Continuity")
    assert f"continuity error {rpt_export:.3f} % (routing)" in said.out
    import pyogrio

    layers = {n for n, _ in pyogrio.list_layers(out / "gisnet-results.gpkg")}
    assert "swmm_comparison" in layers and "swmm_original_comparison" not in layers
    assert len(gpd.read_file(out / "gisnet-results.gpkg", layer="swmm_comparison")) == 6


@pytest.mark.parametrize("name", ["Pump_Control_regulators.inp", "model_weir_setting.inp"])
def test_round_trip_keeps_regulators_and_swmm_flows(tmp_path: Path, name: str) -> None:
    """import -> export: every weir, orifice and outlet comes back in its own section with
    its type, height, coefficients, flap gate, cross-section and rating curve, and SWMM's
    dry-weather run of the export gives every link the flow SWMM's run of the original
    gives it (within 0.1 %, of the total inflow for links that carry little), with both
    runs' continuity errors below 0.1 %."""
    from gisnet.swmm import read_model
    from gisnet.swmm.original import run_original

    src = DATA / name
    _import(src, tmp_path / "t")
    out = tmp_path / "rt.inp"
    assert main(["export-swmm", "--layers", str(tmp_path / "t"), "--out", str(out), "-q"]) == 0
    a, b = read_model(src), read_model(out)
    la = a.links.set_index("main_id").sort_index()
    lb = b.links.set_index("main_id").sort_index()
    assert lb["swmm_type"].to_dict() == la["swmm_type"].to_dict()
    assert set(la["swmm_type"]) >= ({"weir"} if "weir" in name else
                                    {"weir", "orifice", "outlet"})
    for col in ("regulator_type", "flap_gate", "shape", "rating_curve"):
        got, want = lb[col].fillna("NO" if col == "flap_gate" else ""), \
            la[col].fillna("NO" if col == "flap_gate" else "")
        assert got.to_dict() == want.to_dict(), col
    for col in ("crest_ft", "discharge_coeff", "outlet_expon", "geom1_ft", "geom2_ft"):
        np.testing.assert_allclose(lb[col].to_numpy(float), la[col].to_numpy(float),
                                   rtol=1e-6, atol=1e-9, err_msg=col)
    # SWMM on both, in dry weather, the same way
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ra, rb = run_original(src, tmp_path / "a"), run_original(out, tmp_path / "b")
    qa = ra.links.set_index("name")
    qb = rb.links.set_index("name")
    assert qb["swmm_type"].to_dict() == qa["swmm_type"].to_dict()
    total = a.dwf["avg_flow_gpd"].sum()
    np.testing.assert_allclose(qb.loc[qa.index, "flow_gpd"], qa["flow_gpd"], rtol=1e-3,
                               atol=1e-3 * total)
    assert abs(ra.flow_routing_error_pct) < 0.1 and abs(rb.flow_routing_error_pct) < 0.1


def test_orifice_carries_the_dry_weather_flow(tmp_path: Path, capsys) -> None:
    """A bottom orifice at zero offset on the main path (KRO1009-KRO1010) beside an
    overflow weir whose crest is 3 ft up: gisnet's split rule gives the orifice all the
    flow reaching KRO1009 (rule level: the head it needs is far below the crest) and the
    weir none, as SWMM's dry-weather run of the model does; every link carrying more
    than 100 gpd is within 5 % of SWMM (measured: 31 of 31), the conduits arriving at a
    regulator chamber with its own [DWF] among them: the chamber's inflow enters at the
    chamber, not on them."""
    import geopandas as gpd

    from gisnet.capacity.regulators import head_for_flow, regulator_flow_cfs
    from gisnet.swmm import read_model
    from gisnet.units import CFS_TO_GPD

    src = DATA / "Pump_Control_regulators.inp"
    _import(src, tmp_path / "t")
    out = tmp_path / "out"
    assert main(["check-swmm", "--layers", str(tmp_path / "t"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    layer = gpd.read_file(out / "gisnet-results.gpkg",
                          layer="swmm_original_comparison").set_index("edge_key")
    orifice, weir = layer.loc["KRO1009-KRO1010"], layer.loc["W1"]
    assert orifice["swmm_type"] == "orifice" and weir["swmm_type"] == "weir"
    assert orifice["split_rule"] == "level" and orifice["split_share"] == 1.0
    assert weir["split_share"] == 0.0 and weir["avg_flow_gpd"] == 0.0
    assert weir["swmm_flow_gpd"] <= 1.0
    assert abs(orifice["flow_diff_pct"]) <= 5.0
    # the head: by hand, SWMM's bottom orifice (Cd 0.65, D 0.5 ft): critical height
    # 0.65 / 0.414 * D / 4, weir-like flow below it
    q = orifice["avg_flow_gpd"] / CFS_TO_GPD
    a_or = math.pi * 0.25 ** 2
    hc = 0.65 / 0.414 * 0.5 / 4
    c = 0.65 * a_or * math.sqrt(2 * 32.2)
    h_hand = hc * (q / (c * math.sqrt(hc))) ** (2 / 3) if q < c * math.sqrt(hc) \
        else (q / c) ** 2
    h = head_for_flow("orifice", "BOTTOM", "CIRCULAR", np.array([0.5, 0, 0, 0]), 0.65, 0, 0,
                      None, q)
    assert h == pytest.approx(h_hand, rel=1e-6) and h < 3.0
    assert regulator_flow_cfs("orifice", "BOTTOM", "CIRCULAR", np.array([0.5, 0, 0, 0]),
                              0.65, 0, 0, None, h) == pytest.approx(q, rel=1e-6)
    # every link within 5 %; the conduits arriving at a chamber a regulator leaves, whose
    # own [DWF] (17,163 gpd each) SWMM adds at the chamber, within 1 % of SWMM: gisnet
    # adds it there too, so they do not carry it
    g, sw = layer["avg_flow_gpd"], layer["swmm_flow_gpd"]
    wet = np.maximum(g, sw) > 100
    ok = layer["flow_diff_pct"].abs() <= 5
    assert (ok | ~wet).all(), layer[wet & ~ok]
    model = read_model(src)
    chambers = set(model.dwf["node_id"]) & set(model.links["from_node"])
    assert chambers == {"KRO1009", "KRO4008", "KRO4017", "KRO6016"}
    arriving = layer[layer["to_node"].isin(chambers)]
    assert len(arriving) >= 4 and (arriving["flow_diff_pct"].abs() <= 1.0).all(), arriving
    assert f"{int(wet.sum())} of {int(wet.sum())} carrying more than 100 gpd" in said


def test_regulator_without_swmm_parameters_is_said(tmp_path: Path, capsys) -> None:
    """Weirs and orifices whose SWMM parameters are not known (here removed from the
    imported mains): the export says once what it wrote them as, and the split at
    KRO1009 gives the lowest link the flow by rule lowest inlet (no head to compute)."""
    import geopandas as gpd

    from gisnet.pipeline import analyse

    town_dir = _import(DATA / "Pump_Control_regulators.inp", tmp_path / "t")
    gpkg = town_dir / "swmm.gpkg"
    mains = gpd.read_file(gpkg, layer="mains")
    mains.loc[mains["swmm_type"].isin(["weir", "orifice"]), "discharge_coeff"] = np.nan
    mains.to_file(gpkg, layer="mains", driver="GPKG")
    out = tmp_path / "rt.inp"
    assert main(["export-swmm", "--layers", str(town_dir), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    notes = [t for t in said.splitlines() if "without their SWMM parameters" in t]
    assert len(notes) == 1 and "W1" in notes[0] and "KRO1009-KRO1010" in notes[0]
    text = out.read_text()
    assert "[WEIRS]" not in text and "[ORIFICES]" not in text and "[OUTLETS]" in text
    pipes = analyse(load_town(town_dir), only={"capacity"},
                    control_paths=False).capacity.pipes.set_index("edge_key")
    assert pipes.at["KRO1009-KRO1010", "split_rule"] == "lowest inlet"
    assert pipes.at["KRO1009-KRO1010", "split_share"] == 1.0
    assert pipes.at["W1", "split_share"] == 0.0
