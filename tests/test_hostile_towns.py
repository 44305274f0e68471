"""The hostile corpus (tests/hostile.py): damaged copies of the sample town, each
with the exact outcome ``gisnet validate`` (and, for some, ``gisnet run
--no-maps``) must give: one clear error line and exit 2, or the named finding.

Nothing lost, nothing silent, nothing hangs: a damage that could block (a FIFO,
a device, a clashing id suffix) runs in a subprocess with a timeout, so a hang
fails the test in seconds instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile
from hostile import DAMAGES, Damage, build

from gisnet.cli import main

ROOT = Path(__file__).resolve().parents[1]
#: Seconds a blocking-prone damage may take before it counts as a hang.
HANG_TIMEOUT_S = 120


def _params(only_run: bool = False):
    for d in DAMAGES:
        if only_run and not d.run:
            continue
        marks = [pytest.mark.slow] if d.slow or only_run else []
        yield pytest.param(d, id=f"{d.category}-{d.name}", marks=marks)


def _cli(argv: list[str], capsys, blocks: bool) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``gisnet ARGV``; in a subprocess with a
    timeout when the damage could block."""
    if blocks:
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        try:
            p = subprocess.run([sys.executable, "-m", "gisnet", *argv], capture_output=True,
                               text=True, timeout=HANG_TIMEOUT_S, env=env, cwd=ROOT,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"gisnet {' '.join(argv)} still running after {HANG_TIMEOUT_S} s: it hangs")
        return p.returncode, p.stdout, p.stderr
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = main(argv)
    out, err = capsys.readouterr()
    raw = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not raw, f"raw warnings: {[str(w.message) for w in raw]}"
    return rc, out, err


def _findings(report: dict) -> list[dict]:
    return [*report["findings"], *(f for s in report["layers"] for f in s["findings"])]


def _check(d: Damage, rc: int, out: str, err: str, command: str) -> None:
    assert "Traceback" not in err, err
    if d.error is not None:
        lines = [ln for ln in err.splitlines() if ln.startswith("gisnet: error:")]
        assert rc == 2, f"{command}: exit {rc}, expected 2; stderr: {err[-500:]}"
        assert len(lines) == 1, err
        assert re.search(d.error, lines[0]), f"{command}: {lines[0]!r} !~ {d.error!r}"
        return
    kind, fid = d.finding
    if command == "validate":
        report = json.loads(out)
        assert report["usable"] is d.usable, (report["error"], report["counts"])
        found = [f for f in _findings(report) if f["kind"] == kind]
        assert found, f"no {kind} finding; kinds: {Counter(f['kind'] for f in _findings(report))}"
        if fid is not None:
            ids = {i for f in found for i in (f["feature_id"] or "").split(",")}
            assert fid in ids, f"{kind} names {sorted(ids)[:10]}, not {fid}"
    assert rc == (0 if d.usable else 2), err[-500:]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.parametrize("d", list(_params()))
def test_validate_gives_the_exact_outcome(d: Damage, corpus: Path, capsys) -> None:
    town = build(d, corpus)
    rc, out, err = _cli(["validate", "--json", "--layers", str(town)], capsys, d.blocks)
    _check(d, rc, out, err, "validate")


@pytest.mark.parametrize("d", list(_params(only_run=True)))
def test_run_gives_the_same_outcome(d: Damage, corpus: Path, capsys) -> None:
    """``gisnet run --no-maps`` on a representative subset: the same error line, or
    a finished run (exit 0) for a usable town."""
    town = corpus / d.name
    if not town.exists():
        town = build(d, corpus)
    rc, out, err = _cli(["run", "--no-maps", "-q", "--layers", str(town),
                         "--out", str(corpus / f"{d.name}-out")], capsys, d.blocks)
    _check(d, rc, out, err, "run")


def test_the_corpus_covers_every_category():
    cats = Counter(d.category for d in DAMAGES)
    assert set(cats) == {"files", "geometry", "crs", "ids", "units", "values", "townfile",
                         "paths", "plant_flows"}
    assert len(DAMAGES) >= 60 and len({d.name for d in DAMAGES}) == len(DAMAGES)
    assert all((d.error is None) != (d.finding is None) for d in DAMAGES)


def test_a_unique_id_that_looks_like_a_suffix_is_kept(corpus: Path) -> None:
    """Rule: a feature whose id is unique keeps it; only later repeats are renamed,
    to a suffix no other feature uses."""
    from gisnet.io import load_town

    d = next(d for d in DAMAGES if d.name == "unique_id_looks_like_a_suffix")
    town = corpus / d.name
    if not town.exists():
        town = build(d, corpus)
    mains = load_town(town).layers["mains"].set_index("main_id")
    assert mains.index.is_unique
    # row 4 of the source (SM000005 in the sample) now carries the id SM000149#2 and keeps it
    assert mains.loc["SM000149#2", "up_invert_ft"] == pytest.approx(
        hostile.gpd.read_file(town / "mains.shp").loc[4, "UPELEV"])
    assert {"SM000149", "SM000149#3"} <= set(mains.index)


def test_an_excluded_far_vertex_leaves_finite_utilization(corpus: Path) -> None:
    """The (1e20, 1e20) vertex: its main is excluded, so no pipe's utilization is
    absurd and no raw numpy warning reaches the user."""
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    d = next(d for d in DAMAGES if d.name == "vertex_at_1e20")
    town = corpus / d.name
    if not town.exists():
        town = build(d, corpus)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        t = load_town(town)
        assert "SM000006" not in set(t.layers["mains"]["main_id"])
        res = analyse(t)
    pipes = res.capacity.pipes
    u = pipes["utilization"].dropna() if "utilization" in pipes else None
    assert u is None or (u < 100).all()


GRAPH_IDS_SCRIPT = r'''
import sys
from gisnet.io import load_town
from gisnet.graph import build_sewer_graph

town = load_town(sys.argv[1])
G = build_sewer_graph(town)
split = sorted({d["main_id"] for *_, d in G.edges(data=True) if d.get("part", 1) == 2})
assert split, "the sample has T-splits"
m, mh = town.layers["mains"], town.layers["manholes"]
# ids the loader never lets through, given to the graph directly: SM000002 twice and
# SM000002#2; a main named like a split piece's key; manholes named like junctions
m.loc[0, "main_id"] = "SM000002"
m.loc[2, "main_id"] = "SM000002#2"
other = m.index[(m["main_id"] != split[0]) & (m.index > 2)][0]
m.loc[other, "main_id"] = f"{split[0]}@2"
mh.loc[0, "node_id"] = "J000001"
mh.loc[1, "node_id"] = "J000001~"
mh.loc[2, "node_id"] = "J000001"
G = build_sewer_graph(town)
keys = [k for *_, k in G.edges(keys=True)]
assert len(keys) == len(set(keys)), "edge keys unique"
ids = {d["main_id"] for *_, d in G.edges(data=True)}
assert {"SM000002", "SM000002#2", "SM000002#3", f"{split[0]}@2"} <= ids, sorted(ids)[:5]
assert {"J000001", "J000001~", "J000001#2"} <= set(G.nodes), "manholes keep or get ids"
print("ok", len(keys))
'''


def test_graph_ids_stay_unique_and_end_on_clashing_suffixes(tmp_path: Path) -> None:
    """Every id-uniquifying place of the graph (mains, manholes, plants, junction ids,
    split-piece keys) on clashing ids, in a subprocess that fails fast if it hangs."""
    script = tmp_path / "graph_ids.py"
    script.write_text(GRAPH_IDS_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        p = subprocess.run([sys.executable, str(script), str(hostile.SAMPLE)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=HANG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"building the graph on clashing ids still ran after {HANG_TIMEOUT_S} s")
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("ok ")


def test_reliability_doc_lists_every_case():
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert "## Loading damaged towns" in text
    missing = [d.name for d in DAMAGES if f"| `{d.name}` |" not in text]
    assert not missing, f"docs/reliability.md does not list: {missing}"
    assert hostile.markdown().strip() in text, (
        "docs/reliability.md's corpus tables differ from tests/hostile.py: "
        "regenerate them with python tests/hostile.py --doc")
