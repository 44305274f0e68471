"""The worklist: the quality layer's fixes grouped into a few ranked rows.

Rows measured when written (``len(worklist)``, against the quality layer's rows):
the sample town 10; the Vermont towns Barre 18 (1,432), Johnson 18 (3,565), Ludlow
18 (927), Manchester 13 (640), NewportCity 17 (559), Northfield 20 (2,465),
Pittsford 20 (3,491), Rockingham 18 (900), Shoreham 20 (1,398), Springfield 19
(1,288), Vergennes 18 (807), Wilmington 17 (1,222); every one under :data:`MAX_ROWS`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import shapely

from gisnet.cli import main
from gisnet.graph import build_sewer_graph, quality_gdf
from gisnet.io import load_town
from gisnet.pipeline import analyse
from gisnet.testing import towns
from gisnet.validate import validate_town
from gisnet.worklist import worklist

CRS = "EPSG:2263"
X0, Y0 = 990_000.0, 200_000.0
MAX_ROWS = 60
VERMONT = ("Barre", "Johnson", "Ludlow", "Manchester", "NewportCity", "Northfield",
           "Pittsford", "Rockingham", "Shoreham", "Springfield", "Vergennes", "Wilmington")


def check_rows(wl) -> None:
    assert 0 < len(wl) < MAX_ROWS
    assert wl["rank"].tolist() == list(range(1, len(wl) + 1))
    assert (wl["count"] >= 1).all()
    assert wl.geometry.notna().all() and not wl.geometry.is_empty.any()
    assert (np.diff(wl["share"].to_numpy()) <= 1e-12).all()  # ranked by share
    assert wl["action"].str.len().gt(10).all()


def gap_town():
    """A main line MH1 -> MH2 -> MH3 to the plant at MH3, a second manhole MH2B
    0.3 ft from MH2 (a duplicate), and a side piece MH7 -> MH8 whose end MH8 stops
    40 ft short of MH1 (a gap beyond the 1 ft snap tolerance)."""
    mains = [towns.main("A", [(X0, Y0), (X0 + 300, Y0)], diameter_in=8.0, slope=0.004),
             towns.main("B", [(X0 + 300, Y0), (X0 + 600, Y0)], diameter_in=8.0, slope=0.004),
             towns.main("G", [(X0 - 340, Y0), (X0 - 40, Y0)], diameter_in=8.0, slope=0.004)]
    manholes = [towns.manhole("MH1", (X0, Y0)), towns.manhole("MH2", (X0 + 300, Y0)),
                towns.manhole("MH2B", (X0 + 300, Y0 + 0.3)),
                towns.manhole("MH3", (X0 + 600, Y0)),
                towns.manhole("MH7", (X0 - 340, Y0)), towns.manhole("MH8", (X0 - 40, Y0))]
    return towns.make_town({"mains": mains, "manholes": manholes,
                            "plants": [towns.plant("WWTP", (X0 + 600, Y0))]},
                           crs=CRS, profile="berlin-nh", name="gap")


def test_known_gap_and_duplicates_name_exactly_their_ids():
    town = gap_town()
    G = build_sewer_graph(town)
    wl = worklist(quality_gdf(G, extra=town.report), G, town)
    check_rows(wl)
    by = wl.set_index("kind")
    dup = by.loc["duplicate_structure"]
    assert dup["ids"] == "MH2,MH2B" and dup["count"] == 1 and dup["more_ids"] == 0
    assert dup.geometry.geom_type == "MultiPoint"
    assert sorted(shapely.get_coordinates(dup.geometry).tolist()) == [
        [X0 + 300, Y0], [X0 + 300, Y0 + 0.3]]
    gap = by.loc["outlet_assumed"]
    assert gap["ids"] == "MH8,MH1" and gap["count"] == 1
    assert gap.geometry.geom_type == "LineString" and gap.geometry.length == pytest.approx(40.0)
    assert "2-node piece" in gap["action"] and "40.0 ft" in gap["action"]
    # the piece's 300 ft of 900 ft of pipe: the gap outranks the duplicate (A, B meet it)
    assert gap["share"] == pytest.approx(300.0 / 900.0)
    assert dup["share"] == pytest.approx(600.0 / 900.0)
    # no node ids, no inverts: every pipe's direction is assumed (all 900 ft) and first
    assert by.loc["direction_assumed", "share"] == pytest.approx(1.0)
    assert by.index.tolist()[:3] == ["direction_assumed", "duplicate_structure",
                                     "outlet_assumed"]
    assert "disconnected_piece" not in by.index  # the same piece as outlet_assumed
    # gisnet validate prints the rows first
    text = validate_town(town, G.graph["report"], graph=G).to_text()
    assert "fix first" in text and "2. [duplicate_structure]" in text


def test_sample_worklist(sample_dir: Path):
    res = analyse(load_town(sample_dir), only=("capacity", "quality"))
    wl = res.worklist
    check_rows(wl)
    assert len(wl) == 10
    assert "worklist" in res.layers()
    # every warning kind of the quality layer is a row, or the same features as one
    kinds = set(res.quality.loc[res.quality["severity"] == "warning", "kind"])
    assert kinds - set(wl["kind"]) <= {"no_capacity_adverse_slope", "disconnected_piece",
                                       "cycle_not_computed", "no_outlet",
                                       "capacity_unknown_no_diameter"}


@pytest.mark.slow
@pytest.mark.parametrize("name", VERMONT)
def test_vermont_worklists(shared_data: Path, tmp_path: Path, monkeypatch, name: str):
    src = shared_data / "vermont_verso" / name
    if not src.is_dir():
        pytest.skip(f"{src} not found")
    town_dir = tmp_path / name
    shutil.copytree(src, town_dir)
    monkeypatch.chdir(town_dir)
    assert main(["init", "-q"]) == 0
    res = analyse(load_town(town_dir), only=("capacity", "quality"))
    check_rows(res.worklist)
    assert len(res.worklist) < len(res.quality)
