"""The optional parts of gisnet and the extras that install them.

``pip install gisnet`` installs the core: ``gisnet run`` and every analysis
command. A feature that needs more names its extra when the extra is missing,
as a :class:`~gisnet.errors.ConfigError` (one line and exit status 2 on the
command line) instead of an ``ImportError``:

- ``postgis`` (psycopg): PostGIS sources and ``--out postgresql://...``;
- ``dask`` (dask, distributed): ``gisnet batch`` and its partitioned runs;
- ``swmm`` (swmmio, pyswmm, swmm-toolkit): ``gisnet import-swmm``, ``gisnet check-swmm``;
- ``pdf`` (matplotlib, reportlab, pypdf): ``gisnet notices``, ``gisnet figure``;
- ``service`` (fastapi, uvicorn): ``gisnet serve``;
- ``raster`` (rasterio): an elevation raster named in the town file (``[elevation]``);
- ``notebook`` (matplotlib, mapclassify): ``explore()`` of a result layer (geopandas
  imports them; its own ImportError names them).

``pip install 'gisnet[all]'`` installs every extra. An import point of an
optional feature wraps its imports in :func:`needs_extra`; a command checks
up front with :func:`require`, before any long analysis.

>>> require("nonexistent", "gisnet nothing")
Traceback (most recent call last):
...
gisnet.errors.ConfigError: unknown extra 'nonexistent'
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .errors import ConfigError

#: Extra -> the modules gisnet imports from it (the packages are in pyproject.toml).
EXTRAS: dict[str, tuple[str, ...]] = {
    "postgis": ("psycopg",),
    "dask": ("dask", "distributed"),
    "swmm": ("swmmio", "pyswmm"),
    "pdf": ("matplotlib", "reportlab", "pypdf"),
    "service": ("fastapi", "uvicorn"),
    "notebook": ("matplotlib", "mapclassify"),
    "raster": ("rasterio",),
}


def missing_extra(extra: str, feature: str, exc: ImportError | None = None) -> ConfigError:
    """The error saying that ``feature`` needs ``extra`` and how to install it.

    Parameters
    ----------
    extra
        A key of :data:`EXTRAS`.
    feature
        What needs it, the subject of the sentence (``"gisnet serve"``).
    exc
        The ImportError met, if any: its first line ends the message.

    Returns
    -------
    ConfigError

    Examples
    --------
    >>> print(missing_extra("service", "gisnet serve"))
    gisnet serve needs the 'service' extra: pip install 'gisnet[service]'
    """
    text = f"{feature} needs the {extra!r} extra: pip install 'gisnet[{extra}]'"
    if exc is not None:
        first = str(exc).strip().splitlines()
        if first:
            text += f" ({first[0]})"
    return ConfigError(text)


def _gisnet_module(exc: ImportError) -> bool:
    """Whether the module that failed to import is part of gisnet (a bug, not an extra)."""
    name = exc.name or ""
    return name == "gisnet" or name.startswith("gisnet.")


@contextmanager
def needs_extra(extra: str, feature: str) -> Iterator[None]:
    """Imports inside the block that fail become :func:`missing_extra` errors.

    A gisnet module that fails to import is re-raised unchanged: that is a
    bug in gisnet, not a missing extra.

    Parameters
    ----------
    extra
        A key of :data:`EXTRAS`.
    feature
        What needs it, the subject of the message (``"reading a SWMM model"``).

    Raises
    ------
    ConfigError
        An import inside the block failed.

    Examples
    --------
    >>> with needs_extra("pdf", "gisnet figure"):
    ...     import no_such_module_for_gisnet
    Traceback (most recent call last):
    ...
    gisnet.errors.ConfigError: gisnet figure needs the 'pdf' extra: pip install 'gisnet[pdf]' (No module named 'no_such_module_for_gisnet')
    """  # noqa: E501
    if extra not in EXTRAS:
        raise ConfigError(f"unknown extra {extra!r}")
    try:
        yield
    except ImportError as exc:
        if _gisnet_module(exc):
            raise
        raise missing_extra(extra, feature, exc) from exc


def require(extra: str, feature: str, modules: Iterable[str] | None = None) -> None:
    """Import the modules of ``extra`` now; a missing one is a :class:`ConfigError`.

    Commands call it first, so a missing extra stops them before any work.

    Parameters
    ----------
    extra
        A key of :data:`EXTRAS`.
    feature
        What needs it, the subject of the message (``"gisnet serve"``).
    modules
        The modules to import (default: every module of the extra).

    Raises
    ------
    ConfigError
        A module cannot be imported, or ``extra`` is unknown.
    """
    if extra not in EXTRAS:
        raise ConfigError(f"unknown extra {extra!r}")
    with needs_extra(extra, feature):
        for name in EXTRAS[extra] if modules is None else modules:
            importlib.import_module(name)


__all__ = ["EXTRAS", "missing_extra", "needs_extra", "require"]
