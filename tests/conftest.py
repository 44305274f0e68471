"""Shared test fixtures: paths to the bundled sample town and the real datasets, and
the factory of towns built in code (:mod:`gisnet.testing.towns`).

Real data comes from two places. ``tests/data`` (:data:`TEST_DATA`) is part of the
repository: small real datasets, always there (licences in ``tests/data/README.md``).
``../shared/data`` (:data:`SHARED_DATA`), beside the repository, is an optional larger
collection (the Vermont networks, Cambridge's parcels, the whole of Bennington): the tests
that need it skip, naming the missing folder, when it is absent, in CI as well.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from gisnet.testing import towns

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"
#: The optional collection of larger real datasets, beside the repository.
SHARED_DATA = ROOT.parent / "shared" / "data"
#: The small real datasets carried by the tests.
TEST_DATA = Path(__file__).resolve().parent / "data"
TOWNS = Path(__file__).resolve().parent / "towns"
ARTIFACTS = Path(__file__).resolve().parent / "_artifacts"


def _skip_without_shared(path: Path) -> None:
    """Skip the test if ``path`` (in the optional collection) is absent, naming the folder."""
    if not path.exists():
        missing = SHARED_DATA if not SHARED_DATA.is_dir() else path
        pytest.skip(f"optional real data not found: {missing} is absent (the collection "
                    "beside the repository, ../shared/data; tests/data/README.md)")


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The bundled sample town (package data gisnet/sample; layers/sample links to it)."""
    if not (SAMPLE / "gisnet.toml").exists():
        pytest.skip("layers/sample has not been generated (scripts/make_sample_town.py)")
    return SAMPLE


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The optional larger real datasets in ../shared/data (skips without them)."""
    _skip_without_shared(SHARED_DATA)
    return SHARED_DATA


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The small real datasets in tests/data (always present)."""
    return TEST_DATA


@pytest.fixture(scope="session")
def real_town() -> Callable[[str], Path]:
    """``real_town(name)``: the folder of the town file ``tests/towns/<name>``.

    A town file whose layers are in the optional collection skips the test when the
    collection is absent; a layer missing anywhere else is left to fail the test.
    """
    shared = SHARED_DATA.parent.resolve()

    def get(name: str) -> Path:
        folder = TOWNS / name
        with (folder / "gisnet.toml").open("rb") as fh:
            layers = tomllib.load(fh).get("layers", {})
        for layer in layers.values():
            path = (folder / layer.get("path", "")).resolve()
            if path.is_relative_to(shared):
                _skip_without_shared(path)
        return folder

    return get


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
