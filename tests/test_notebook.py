"""Notebook use: ``res.layers["obligations"].explore()`` works with the ``notebook`` extra,
and the result objects print as a few lines of counts, not pages of CRS WKT."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gisnet.io import load_town
from gisnet.pipeline import analyse

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def res(sample_dir):
    return analyse(load_town(sample_dir))


def test_explore_needs_nothing_beyond_the_notebook_extra() -> None:
    # geopandas' explore() imports folium (a core dependency: the web maps), matplotlib and
    # mapclassify (the notebook extra, which [all] installs)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(reqs: list[str]) -> set[str]:
        return {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in reqs}

    extras = project["optional-dependencies"]
    assert "folium" in names(project["dependencies"])
    assert {"matplotlib", "mapclassify"} <= names(extras["notebook"])
    assert "notebook" in extras["all"][0]


@pytest.mark.slow
def test_explore_returns_a_folium_map(res) -> None:
    import folium

    ob = res.layers["obligations"]
    assert ob is res.layers()["obligations"]  # the older call spelling still works
    m = ob.explore(column="status")
    assert isinstance(m, folium.Map)
    html = m.get_root().render()
    assert str(ob["parcel_id"].iloc[0]) in html


@pytest.mark.slow
def test_reprs_are_a_few_lines_without_wkt(res) -> None:
    town = res.town
    objects = {"Results": res, "Town": town, "ObligationsResult": res.obligations,
               "ControlResult": res.control, "CapacityResult": res.capacity,
               "LayerDict": res.layers}
    for name, obj in objects.items():
        text = repr(obj)
        assert name in text, text
        assert len(text) < 800 and len(text.splitlines()) <= 6, (name, len(text), text)
        assert "PROJCRS" not in text and "GEOGCRS" not in text and "DATUM" not in text
    assert "EPSG:2260" in repr(res) and "EPSG:2260" in repr(town)
    n = len(res.layers["obligations"])
    assert f"obligations {n}" in repr(res)
    assert f"parcels {len(town.layers['parcels'])}" in repr(town)
    counts = res.obligations.obligations["status"].value_counts()
    assert f"connected {counts['connected']}" in repr(res.obligations)
    cm = res.control.control_manholes
    assert f"{len(cm)} connection points" in repr(res.control)
    assert f"pipes {len(res.capacity.pipes)}" in repr(res.capacity)
