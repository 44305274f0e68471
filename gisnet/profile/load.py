"""Loading a profile: built-in names, TOML files, parsed dicts."""

from __future__ import annotations

import copy
import logging
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .sections import OPTIONAL_SECTIONS, SECTIONS, Approval, Profile
from .table import InvalidValue, qualified

log = logging.getLogger(__name__)

#: The folder of the built-in profiles (``gisnet/profiles``).
RULES_DIR = Path(__file__).resolve().parent.parent / "profiles"


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped in ``gisnet/profiles``."""
    return sorted(p.stem for p in RULES_DIR.glob("*.toml"))


def load_profile(name_or_path: str | Path | Profile | None) -> Profile:
    """Load a jurisdiction profile by built-in name or from a TOML file.

    Parameters
    ----------
    name_or_path
        A built-in name (``poughkeepsie-fourth-ward``, ``berlin-nh``; ``_`` may
        stand for ``-``), a path to a profile TOML, an already loaded
        :class:`Profile` (returned as is). There is no default: None is an
        error listing the built-in profiles.

    Returns
    -------
    Profile

    Raises
    ------
    ConfigError
        No profile named, unknown built-in name, unreadable file, TOML syntax error, unknown or
        missing key, wrong type or out-of-range value. The message names the
        file and the key.
    """
    if isinstance(name_or_path, Profile):
        return name_or_path
    if name_or_path is None:
        raise ConfigError("no profile named: a town must say which ordinance it is measured "
                          "under (town file 'profile', or --profile); built-in profiles: "
                          + ", ".join(builtin_profiles()))
    text = str(name_or_path)
    path = Path(text).expanduser()
    looks_like_path = path.suffix.lower() == ".toml" or "/" in text or "\\" in text
    if looks_like_path or path.is_file():
        if path.is_dir():
            raise ConfigError("profile is a folder; give the path of a profile TOML file",
                              path=path)
        if not path.is_file():
            raise ConfigError("profile file does not exist", path=path)
        return _load_file(path.resolve())
    name = text.strip().lower().replace("_", "-")
    if not (RULES_DIR / f"{name}.toml").is_file():
        raise ConfigError(
            f"unknown profile {text!r}; built-in profiles are {', '.join(builtin_profiles())}, "
            "or give the path of a profile TOML file"
        )
    return _load_builtin(name)


@cache
def _load_builtin(name: str) -> Profile:
    return _load_file(RULES_DIR / f"{name}.toml")


def _load_file(path: Path) -> Profile:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read profile: {exc.strerror or exc}", path=path) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"profile is not valid TOML: {exc}", path=path) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"profile is not UTF-8 text: {exc}", path=path) from None
    log.debug("loaded profile %s", path)
    return profile_from_dict(data, path=path)


def profile_from_dict(data: Mapping[str, Any], *, path: str | Path | None = None) -> Profile:
    """Validate a parsed profile (a dict shaped like the TOML) and build it.

    Parameters
    ----------
    data
        The profile as nested dicts/lists, as :mod:`tomllib` returns it.
    path
        File named in error messages (default ``<profile>``).

    Raises
    ------
    ConfigError
        As :func:`load_profile`.
    """
    where = path if path is not None else "<profile>"
    if not isinstance(data, Mapping):
        raise ConfigError("a profile must be a TOML table", path=where)
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r} (top-level tables are {', '.join(SECTIONS)})", path=where
        )
    for name in SECTIONS:
        if name not in data and name not in OPTIONAL_SECTIONS:
            raise ConfigError(f"missing required table [{name}]", path=where)

    tables: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        if name not in data:
            continue
        if cls is Approval:
            entries = data[name]
            if not isinstance(entries, list):
                raise ConfigError(f"{name!r} must be an array of tables [[{name}]]", path=where)
            tables[name] = tuple(cls.from_table(e, f"{name}[{i}]", where)
                                 for i, e in enumerate(entries))
        else:
            tables[name] = cls.from_table(data[name], name, where)
    try:
        return Profile(**tables, path=Path(path) if path is not None else None,
                       parsed=copy.deepcopy(dict(data)))
    except InvalidValue as exc:
        raise ConfigError(f"key {qualified('', exc.key)} {exc.problem}", path=where) from None
