"""Shared test fixtures: paths to the bundled sample town and the real datasets, and
the factory of towns built in code (:mod:`gisnet.testing.towns`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gisnet.testing import towns

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"
SHARED_DATA = ROOT.parent / "shared" / "data"
TOWNS = Path(__file__).resolve().parent / "towns"
ARTIFACTS = Path(__file__).resolve().parent / "_artifacts"


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The bundled sample town (package data gisnet/sample; layers/sample links to it)."""
    if not (SAMPLE / "gisnet.toml").exists():
        pytest.skip("layers/sample has not been generated (scripts/make_sample_town.py)")
    return SAMPLE


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public datasets in ../shared/data."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real datasets not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Folder for screenshots and other test output (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def town_factory():
    """:func:`gisnet.testing.towns.make_town`: a Town from raw rows, mapped by the loader.

    ``town_factory({"parcels": [towns.parcel("P1", (0, 30, 100, 130))],
    "mains": [towns.main("M1", [(0, 0), (500, 0)])]}, crs="EPSG:2222")``
    """
    return towns.make_town
