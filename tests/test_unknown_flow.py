"""A town without flow data shows its plant as unknown (grey), never as "0.0 % (below)".

The sample town's mains, manholes and plant without parcels, plant flows or a reported
average flow: no flow reaches the plant, so its ratio and status are unknown in the
plants layer, the run summary, the capacity page and the figure, whose titles name
the town.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pyogrio
import pytest

from gisnet import Town
from gisnet.cli.run import format_summary
from gisnet.labels import UNKNOWN_FLOW
from gisnet.palettes import UTIL_COLOURS
from gisnet.pipeline import analyse

matplotlib.use("Agg")
SAMPLE = Path(__file__).resolve().parents[1] / "layers" / "sample"


@pytest.fixture(scope="module")
def town_without_parcels():
    frames = {r: pyogrio.read_dataframe(SAMPLE / f"{r}.shp")
              for r in ("mains", "manholes", "plants")}
    frames["plants"] = frames["plants"].drop(columns=["AVGFLOW"])
    return Town.from_frames(name="Dry Town", profile="poughkeepsie-fourth-ward", **frames)


@pytest.fixture(scope="module")
def results(town_without_parcels):
    return analyse(town_without_parcels)


def test_plants_layer_says_unknown(results):
    pl = results.layers["plants"]
    assert len(pl) == 1
    r = pl.iloc[0]
    assert r["basis"] == "none"
    assert r["ratio"] != r["ratio"]  # NaN, not 0.0
    assert r["over_threshold"] is None or str(r["over_threshold"]) == "<NA>"
    s = results.summary()
    assert s["plants"][0]["ratio"] is None and s["plants"][0]["over_threshold"] is None
    s["files"] = []
    text = format_summary(s)
    assert f"plant WWTP-01: {UNKNOWN_FLOW}" in text and "0.0%" not in text


def test_capacity_page_shows_unknown_in_grey(town_without_parcels, results):
    from gisnet.maps.capacity import _plant_panel
    from gisnet.maps.common import MapContext

    ctx = MapContext(town_without_parcels, results.layers)
    panel = _plant_panel(ctx)
    assert UNKNOWN_FLOW in panel and UTIL_COLOURS["unknown"] in panel
    assert "0.0 %" not in panel and "below" not in panel


def test_figure_names_the_town_and_greys_the_plant(town_without_parcels, results):
    from gisnet.figures.maps import draw_figure

    fig = draw_figure(town_without_parcels, results, "capacity")
    texts = [t.get_text() for t in fig.texts]
    assert any(t.endswith(": Dry Town") for t in texts), texts
    legend = [t.get_text() for ax in fig.axes if ax.get_legend()
              for t in ax.get_legend().get_texts()]
    assert any(UNKNOWN_FLOW in t for t in legend), legend
