"""A region: the towns one ``gisnet batch`` runs.

A region is either

* a folder of town folders, each holding a ``gisnet.toml`` (sub-folders
  without one are skipped and said so), or
* a ``region.toml`` (or a folder holding one) listing the towns, with
  per-town overrides::

      name = "Chittenden County"      # optional, else the folder name

      [defaults]                      # optional, for every town
      profile = "berlin-nh"

      [[town]]
      path = "burlington"             # folder with a gisnet.toml, relative to region.toml
      [[town]]
      path = "../shared/winooski"
      name = "winooski"               # output folder name (default: the folder's name)
      profile = "poughkeepsie-fourth-ward"
      crs = "EPSG:32145"
      snap_tolerance_ft = 2.0
      engine = "fiona"

The overrides are those of the command line (``--profile``, ``--crs``,
``--snap-tolerance-ft``, ``--engine``). Every key is checked; an unknown key,
or two towns with one output name is a :class:`~gisnet.errors.ConfigError`
naming ``region.toml`` and the town; a town folder that does not exist is
that town's failure, reported in the region summary.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..townfile import TOWN_FILE

#: The region file's name.
REGION_FILE = "region.toml"
#: Overrides a town entry (or ``[defaults]``) may give, with their types.
OVERRIDES: dict[str, type | tuple[type, ...]] = {
    "profile": str, "crs": str, "snap_tolerance_ft": (int, float), "engine": str,
}
ENGINES = ("pyogrio", "fiona")
_TOWN_KEYS = {"path", "name", *OVERRIDES}
_TOP_KEYS = {"name", "defaults", "town"}
#: An output folder name: no separators, not hidden.
_SAFE_NAME = re.compile(r"^[^./\\][^/\\]*$")


@dataclass(frozen=True)
class TownEntry:
    """One town of a region.

    Attributes
    ----------
    name
        Output folder name under the batch output folder (unique in the region).
    folder
        The town's folder (holding its ``gisnet.toml``), absolute.
    overrides
        ``profile``, ``crs``, ``snap_tolerance_ft``, ``engine`` given for this
        town (region defaults included); passed to :func:`gisnet.io.load_town`.
    """

    name: str
    folder: Path
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def town_file(self) -> Path:
        """The town's ``gisnet.toml``."""
        return self.folder / TOWN_FILE


@dataclass(frozen=True)
class Region:
    """The towns of a region, in order.

    Attributes
    ----------
    name
        Region name (``region.toml`` ``name``, else the folder's name).
    source
        The region folder or ``region.toml``.
    towns
        The towns, in the file's order (a folder: sorted by name).
    skipped
        Sub-folders of a region folder that hold no ``gisnet.toml`` (said once).
    """

    name: str
    source: Path
    towns: tuple[TownEntry, ...]
    skipped: tuple[Path, ...] = ()


def load_region(path: str | Path, *, overrides: Mapping[str, Any] | None = None) -> Region:
    """Read a region folder or ``region.toml``.

    Parameters
    ----------
    path
        A ``region.toml``, a folder holding one, or a folder of town folders.
    overrides
        Overrides for every town from the command line; they win over the
        region file's (``--profile`` on the command line is the last word).

    Raises
    ------
    ConfigError
        The path does not exist, holds no town, or the region file is wrong.
    """
    p = Path(path)
    cli = {k: v for k, v in (overrides or {}).items() if v is not None}
    if p.is_file():
        return _from_file(p, cli)
    if not p.is_dir():
        raise ConfigError("region not found: neither a folder nor a region.toml", path=p)
    if (p / REGION_FILE).is_file():
        return _from_file(p / REGION_FILE, cli)
    if (p / TOWN_FILE).is_file():
        raise ConfigError(f"this folder is one town (it holds {TOWN_FILE}); a region is a "
                          f"folder of town folders or a {REGION_FILE}", path=p)
    towns, skipped = [], []
    for sub in sorted(x for x in p.iterdir() if x.is_dir() and not x.name.startswith(".")):
        if (sub / TOWN_FILE).is_file():
            towns.append(TownEntry(sub.name, sub.resolve(), dict(cli)))
        else:
            skipped.append(sub)
    if not towns:
        raise ConfigError(f"no town in this region: no sub-folder holds a {TOWN_FILE} and "
                          f"there is no {REGION_FILE}", path=p)
    return Region(p.resolve().name, p.resolve(), tuple(towns), tuple(skipped))


def _from_file(path: Path, cli: Mapping[str, Any]) -> Region:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the region file ({exc})", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML ({exc})", path=path) from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}; keys are {', '.join(sorted(_TOP_KEYS))}",
                          path=path)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError("'defaults' must be a table", path=path)
    _check_overrides(defaults, path, "[defaults]")
    entries = data.get("town", [])
    if not isinstance(entries, list) or not entries:
        raise ConfigError("no [[town]] entries: list each town as [[town]] path = \"FOLDER\"",
                          path=path)
    base = path.parent.resolve()
    towns: list[TownEntry] = []
    seen: dict[str, int] = {}
    for k, t in enumerate(entries, start=1):
        where = f"[[town]] #{k}"
        if not isinstance(t, dict):
            raise ConfigError(f"{where} must be a table", path=path)
        unknown = sorted(set(t) - _TOWN_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r}; keys are "
                              f"{', '.join(sorted(_TOWN_KEYS))}", path=path)
        if not isinstance(t.get("path"), str) or not t["path"].strip():
            raise ConfigError(f"{where}: 'path' (the town's folder) is required", path=path)
        _check_overrides(t, path, where)
        folder = (base / t["path"]).resolve()
        if folder.is_file() and folder.name == TOWN_FILE:
            folder = folder.parent
        # a folder that is not there is that town's failure (its summary row), not the region's
        name = t.get("name", folder.name)
        if not isinstance(name, str) or not _SAFE_NAME.match(name):
            raise ConfigError(f"{where}: name {name!r} cannot be an output folder name "
                              "(no slashes, not starting with a dot)", path=path)
        if name in seen:
            raise ConfigError(f"{where}: output name {name!r} is also town #{seen[name]}'s; "
                              "give one of them a 'name'", path=path)
        seen[name] = k
        ov = {**{o: defaults[o] for o in OVERRIDES if o in defaults},
              **{o: t[o] for o in OVERRIDES if o in t}, **cli}
        if "profile" in ov and "profile" not in cli and (base / ov["profile"]).is_file():
            ov["profile"] = str((base / ov["profile"]).resolve())  # relative to region.toml
        towns.append(TownEntry(name, folder, ov))
    rname = data.get("name", base.name)
    if not isinstance(rname, str):
        raise ConfigError("'name' must be text", path=path)
    return Region(rname, path.resolve(), tuple(towns))


def _check_overrides(table: Mapping[str, Any], path: Path, where: str) -> None:
    for key, typ in OVERRIDES.items():
        if key in table and (not isinstance(table[key], typ) or isinstance(table[key], bool)):
            raise ConfigError(f"{where}: {key!r} has the wrong type "
                              f"({type(table[key]).__name__})", path=path)
    if where == "[defaults]":
        unknown = sorted(set(table) - set(OVERRIDES))
        if unknown:
            raise ConfigError(f"[defaults]: unknown key {unknown[0]!r}; keys are "
                              f"{', '.join(OVERRIDES)}", path=path)
    if table.get("engine") is not None and table["engine"] not in ENGINES:
        raise ConfigError(f"{where}: engine must be one of {', '.join(ENGINES)}", path=path)
