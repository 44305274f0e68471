"""Jurisdiction profiles: a sewer-use ordinance's numbers and sections as data.

A profile is a TOML file (two ship in ``gisnet/profiles/``; a town may write its
own). Its sections follow docs/architecture.md, "Profiles"; every rule carries
the ``section`` of the ordinance (or the standard) it comes from, so that every
result gisnet produces can cite it.

The file is validated against :data:`SCHEMA`: an unknown key, a missing
required key, a value of the wrong type or out of range raises
:class:`gisnet.errors.ConfigError` naming the file and the key. The loaded
:class:`Profile` is immutable; sections are read by attribute
(``profile.connection.distance_ft``) and the parsed file is kept as
``profile.raw``.

Units: lengths in feet, flows in gallons per day (gpd), plant flows in MGD,
velocities in ft/s, slopes in percent (``min_slope_pct``), concentrations in the
unit each limit names (``ppm``, ``mg/L``, ``degF``, ``pH``).

Examples
--------
>>> p = load_profile("berlin-nh")
>>> p.connection.distance_ft, p.connection.measure
(200.0, 'building')
>>> load_profile("poughkeepsie-fourth-ward").connection.section
'§ 168-22.2G'
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import math
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .errors import ConfigError

log = logging.getLogger(__name__)

RULES_DIR = Path(__file__).with_name("profiles")
#: The profile used when neither the town file nor the command line names one.
DEFAULT_PROFILE = "poughkeepsie-fourth-ward"

MEASURES = ("property_line", "building")
APPLIES_TO = ("all", "new_buildings")
MAIN_KINDS = ("sanitary", "storm", "combined", "force", "unknown")
TRIGGERS = ("flow_over", "plant_over", "industrial", "review_flow_over")
UNKNOWN_AGE = ("review", "new", "existing")
PEAKING_FORMULAS = ("harmon", "none")

# --------------------------------------------------------------------------
# Schema: section -> key -> (type, required).  Types:
#   str, number, int, bool, date, list_str, map_number (str -> number),
#   map_diameter (number-like str -> number), list_number
# A few keys are sub-tables / arrays of tables; those are handled by name.
# --------------------------------------------------------------------------

_Spec = dict[str, tuple[str, bool]]

SCHEMA: dict[str, _Spec] = {
    "profile": {
        "id": ("str", True),
        "name": ("str", True),
        "jurisdiction": ("str", True),
        "ordinance": ("str", True),
        "source": ("str", True),
        "state": ("str", False),
        "notes": ("str", False),
    },
    "connection": {
        "distance_ft": ("number", True),
        "measure": ("str", True),
        "include_manholes": ("bool", True),
        "eligible_kinds": ("list_str", True),
        "require_abutting": ("bool", True),
        "deadline_days": ("int", True),
        "section": ("str", True),
        "applies_to": ("str", True),
        "notice_condition": ("str", True),
        "septic_max_years": ("int", False),
        "septic_section": ("str", False),
        "septic_deadline_days": ("int", False),
        "septic_rule": ("str", False),
        "text": ("str", False),
        "applies_to_text": ("str", False),
        "notice_section": ("str", False),
        "new_construction_from": ("date", False),
        "unknown_age": ("str", False),
        "unoccupied_land_uses": ("list_str", False),
        "default_street_width_ft": ("number", True),
        "abutting_tolerance_ft": ("number", True),
        "frontage_section": ("str", False),
        "frontage_rule": ("str", False),
        "rear_building_section": ("str", False),
        "rear_building_rule": ("str", False),
        "lateral_cost_section": ("str", False),
        "lateral_cost_rule": ("str", False),
        "private_disposal_section": ("str", False),
    },
    "control_manhole": {
        "section": ("str", True),
        "rule": ("str", True),
        "method": ("str", False),
        "owner_manhole_section": ("str", False),
        "owner_manhole_rule": ("str", False),
    },
    "flow": {
        "gpd_per_person": ("number", True),
        "gpd_per_pe": ("number", True),
        "gpd_per_bedroom": ("number", True),
        "persons_per_dwelling_unit": ("number", True),
        "gpd_per_dwelling_unit": ("number", True),
        "land_use_gpd": ("map_number", True),
        "land_use_gpd_per_acre": ("map_number", False),
        "peaking_formula": ("str", True),
        "peaking_cap": ("number", True),
        "peaking_min": ("number", True),
        "sources": ("map_str", True),
    },
    "capacity": {
        "manning_n": ("number", True),
        "utilization_threshold": ("number", True),
        "deficient": ("number", True),
        "surcharged": ("number", True),
        "plant_threshold": ("number", True),
        "plant_months": ("int", True),
        "plant_strict": ("bool", True),
        "plant_section": ("str", True),
        "min_velocity_fps": ("number", True),
        "min_slope_pct": ("map_diameter", True),
        "manning_n_material": ("map_number", True),
        "sources": ("map_str", False),
    },
    "approvals": {  # each [[approvals]] entry
        "id": ("str", True),
        "trigger": ("str", True),
        "flow_gpd": ("number", False),
        "authority": ("str", True),
        "section": ("str", True),
        "text": ("str", True),
    },
    "pretreatment": {
        "siu_process_flow_gpd": ("number", True),
        "siu_plant_fraction": ("number", True),
        "siu_section": ("str", True),
        "siu_categorical": ("bool", False),
        "local_review_flow_gpd": ("number", False),
        "local_review_section": ("str", False),
        "industrial_approval_section": ("str", False),
    },
    "limits": {
        "parameter": ("parameters", True),
        "hourly_max_over_average": ("number", False),
        "hourly_section": ("str", False),
        "slug_factor": ("number", True),
        "slug_minutes": ("number", True),
        "slug_section": ("str", True),
        "normal_bod_mg_l": ("number", True),
        "normal_ss_mg_l": ("number", True),
        "normal_section": ("str", True),
        "sections": ("map_str", True),
    },
    "limits.parameter": {  # each [[limits.parameter]] entry
        "name": ("str", True),
        "unit": ("str", True),
        "max": ("number", False),
        "min": ("number", False),
        "section": ("str", True),
        "basis": ("str", False),
        "where": ("str", False),
        "text": ("str", False),
    },
}

#: Top-level tables and whether they are required.
SECTIONS: dict[str, bool] = {
    "profile": True,
    "connection": True,
    "control_manhole": True,
    "flow": True,
    "capacity": True,
    "approvals": True,
    "pretreatment": True,
    "limits": True,
}


class FrozenMap(Mapping[Any, Any]):
    """A read-only mapping (picklable, copyable) for the sub-tables of a profile."""

    __slots__ = ("_d",)

    def __init__(self, data: Mapping[Any, Any] | None = None) -> None:
        object.__setattr__(self, "_d", dict(data or {}))

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("profile tables are read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._d,))

    def __repr__(self) -> str:
        return repr(self._d)

    def __eq__(self, other: object) -> bool:
        return dict(self._d) == (dict(other) if isinstance(other, Mapping) else other)

    __hash__ = None  # type: ignore[assignment]


class Section(Mapping[str, Any]):
    """One read-only section of a profile; keys are also attributes.

    Optional keys the file leaves out read as ``None``.
    """

    __slots__ = ("_data", "_name")

    def __init__(self, name: str, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_data", FrozenMap(data))

    def __getattr__(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(f"profile section [{self._name}] has no key {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"profile section [{self._name}] is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Section({self._name!r}, {dict(self._data)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Section, (self._name, self._data._d))

    def to_dict(self) -> dict[str, Any]:
        """A plain (deep) copy of the section."""

        def plain(v: Any) -> Any:
            if isinstance(v, Section):
                return v.to_dict()
            if isinstance(v, Mapping):
                return {k: plain(x) for k, x in v.items()}
            if isinstance(v, tuple):
                return [plain(x) for x in v]
            return v

        return {k: plain(v) for k, v in self._data.items()}


@dataclass(frozen=True)
class Profile:
    """A validated jurisdiction profile.

    Attributes
    ----------
    profile, connection, control_manhole, flow, capacity, pretreatment, limits
        The sections (:class:`Section`), read by attribute.
    approvals
        The ``[[approvals]]`` entries, in file order.
    raw
        The parsed TOML as a plain dict (a copy; editing it changes nothing).
    path
        The file it was read from (None if built from a dict).
    """

    profile: Section
    connection: Section
    control_manhole: Section
    flow: Section
    capacity: Section
    approvals: tuple[Section, ...]
    pretreatment: Section
    limits: Section
    raw: dict[str, Any]
    path: Path | None = None

    @property
    def id(self) -> str:
        """The profile id (``[profile] id``)."""
        return str(self.profile.id)

    @property
    def name(self) -> str:
        """The profile's human name."""
        return str(self.profile.name)

    def approvals_for(self, trigger: str) -> tuple[Section, ...]:
        """The approval rules with a given trigger (see :data:`TRIGGERS`)."""
        return tuple(a for a in self.approvals if a.trigger == trigger)

    def limit(self, name: str) -> Section | None:
        """The ``[[limits.parameter]]`` entry of a parameter, or None."""
        for p in self.limits.parameter:
            if p.name == name:
                return p
        return None

    def __repr__(self) -> str:
        return f"Profile({self.id!r}, path={str(self.path) if self.path else None!r})"


# --------------------------------------------------------------------------
# Loading and validation
# --------------------------------------------------------------------------


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped in ``gisnet/rules``."""
    return sorted(p.stem for p in RULES_DIR.glob("*.toml"))


def load_profile(name_or_path: str | Path | Profile | None = None) -> Profile:
    """Load a jurisdiction profile by built-in name or from a TOML file.

    Parameters
    ----------
    name_or_path
        A built-in name (``poughkeepsie-fourth-ward``, ``berlin-nh``; ``_`` may
        stand for ``-``), a path to a profile TOML, an already loaded
        :class:`Profile` (returned as is), or None for :data:`DEFAULT_PROFILE`.

    Returns
    -------
    Profile

    Raises
    ------
    ConfigError
        Unknown built-in name, unreadable file, TOML syntax error, unknown or
        missing key, wrong type or out-of-range value. The message names the
        file and the key.
    """
    if isinstance(name_or_path, Profile):
        return name_or_path
    if name_or_path is None:
        name_or_path = DEFAULT_PROFILE
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
    key = text.strip().lower().replace("_", "-")
    builtin = RULES_DIR / f"{key}.toml"
    if not builtin.is_file():
        raise ConfigError(
            f"unknown profile {text!r}; built-in profiles are {', '.join(builtin_profiles())}, "
            "or give the path of a profile TOML file"
        )
    return _load_builtin(key)


@cache
def _load_builtin(key: str) -> Profile:
    return _load_file(RULES_DIR / f"{key}.toml")


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
    for sec, required in SECTIONS.items():
        if required and sec not in data:
            raise ConfigError(f"missing required table [{sec}]", path=where)

    sections: dict[str, Any] = {}
    for sec in SECTIONS:
        if sec == "approvals":
            entries = data.get("approvals", [])
            if not isinstance(entries, list):
                raise ConfigError("'approvals' must be an array of tables [[approvals]]",
                                  path=where)
            sections[sec] = tuple(
                Section("approvals", _check_table(e, "approvals", f"approvals[{i}]", where))
                for i, e in enumerate(entries)
            )
        else:
            sections[sec] = Section(sec, _check_table(data[sec], sec, sec, where))

    _check_values(sections, where)
    return Profile(
        raw=copy.deepcopy(dict(data)),
        path=Path(path) if path is not None else None,
        **sections,
    )


def _check_table(table: Any, spec_name: str, label: str, where: Any) -> dict[str, Any]:
    """Check one table against its spec; return it with defaults filled in."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"[{label}] must be a table", path=where)
    spec = SCHEMA[spec_name]
    for key in table:
        if key not in spec:
            raise ConfigError(
                f"unknown key {label}.{key} (allowed: {', '.join(spec)})", path=where
            )
    out: dict[str, Any] = {}
    for key, (typ, required) in spec.items():
        if key not in table:
            if required:
                raise ConfigError(f"missing required key {label}.{key}", path=where)
            out[key] = None
            continue
        out[key] = _convert(table[key], typ, f"{label}.{key}", where)
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _convert(value: Any, typ: str, key: str, where: Any) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"key {key} must be {expected}, not {value!r}", path=where)

    if typ == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if typ == "number":
        if not _is_number(value):
            raise bad("a number")
        return float(value)
    if typ == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad("an integer")
        return value
    if typ == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if typ == "date":
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                raise bad("a date (YYYY-MM-DD)") from None
        raise bad("a date (YYYY-MM-DD)")
    if typ == "list_str":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
        return tuple(value)
    if typ in ("map_number", "map_str", "map_diameter"):
        if not isinstance(value, Mapping):
            raise bad("a table")
        out: dict[Any, Any] = {}
        for k, v in value.items():
            sub = f"{key}.{k}"
            if typ == "map_str":
                if not isinstance(v, str):
                    raise ConfigError(f"key {sub} must be a string, not {v!r}", path=where)
                out[k] = v
                continue
            if not _is_number(v):
                raise ConfigError(f"key {sub} must be a number, not {v!r}", path=where)
            if typ == "map_diameter":
                try:
                    d = float(k)
                except ValueError:
                    raise ConfigError(
                        f"key {sub}: table keys must be pipe diameters in inches", path=where
                    ) from None
                out[d] = float(v)
            else:
                out[k] = float(v)
        if typ == "map_diameter":
            out = dict(sorted(out.items()))
        return FrozenMap(out)
    if typ == "parameters":
        if not isinstance(value, list):
            raise bad("an array of tables [[limits.parameter]]")
        return tuple(
            Section("limits.parameter",
                    _check_table(e, "limits.parameter", f"{key}[{i}]", where))
            for i, e in enumerate(value)
        )
    raise AssertionError(f"unknown schema type {typ}")  # pragma: no cover


def _check_values(s: dict[str, Any], where: Any) -> None:
    """Range and enumeration checks across the validated sections."""

    def fail(key: str, problem: str) -> None:
        raise ConfigError(f"key {key} {problem}", path=where)

    c = s["connection"]
    if c.distance_ft <= 0:
        fail("connection.distance_ft", "must be > 0")
    if c.measure not in MEASURES:
        fail("connection.measure", f"must be one of {', '.join(MEASURES)}, not {c.measure!r}")
    if c.applies_to not in APPLIES_TO:
        fail("connection.applies_to",
             f"must be one of {', '.join(APPLIES_TO)}, not {c.applies_to!r}")
    if not c.eligible_kinds:
        fail("connection.eligible_kinds", "must name at least one main kind")
    for k in c.eligible_kinds:
        if k not in MAIN_KINDS:
            fail("connection.eligible_kinds", f"has {k!r}; kinds are {', '.join(MAIN_KINDS)}")
    if c.deadline_days < 0:
        fail("connection.deadline_days", "must be >= 0")
    if c.septic_max_years is not None and c.septic_max_years <= 0:
        fail("connection.septic_max_years", "must be > 0")
    if c.septic_max_years is not None and not c.septic_section:
        fail("connection.septic_section", "is required when septic_max_years is set")
    if c.unknown_age is not None and c.unknown_age not in UNKNOWN_AGE:
        fail("connection.unknown_age", f"must be one of {', '.join(UNKNOWN_AGE)}")
    if c.default_street_width_ft <= 0:
        fail("connection.default_street_width_ft", "must be > 0")
    if c.abutting_tolerance_ft < 0:
        fail("connection.abutting_tolerance_ft", "must be >= 0")

    f = s["flow"]
    for key in ("gpd_per_person", "gpd_per_pe", "gpd_per_bedroom", "persons_per_dwelling_unit",
                "gpd_per_dwelling_unit"):
        if f[key] <= 0:
            fail(f"flow.{key}", "must be > 0")
    for k, v in f.land_use_gpd.items():
        if v < 0:
            fail(f"flow.land_use_gpd.{k}", "must be >= 0")
    if f.peaking_formula not in PEAKING_FORMULAS:
        fail("flow.peaking_formula", f"must be one of {', '.join(PEAKING_FORMULAS)}")
    if not 1.0 <= f.peaking_min <= f.peaking_cap:
        fail("flow.peaking_min", "must be >= 1 and <= flow.peaking_cap")

    cap = s["capacity"]
    if not 0 < cap.manning_n < 1:
        fail("capacity.manning_n", "must be between 0 and 1")
    for key in ("utilization_threshold", "deficient", "surcharged", "plant_threshold"):
        if cap[key] <= 0:
            fail(f"capacity.{key}", "must be > 0")
    if not cap.utilization_threshold <= cap.deficient <= cap.surcharged:
        fail("capacity.deficient", "must lie between utilization_threshold and surcharged")
    if cap.plant_months < 1:
        fail("capacity.plant_months", "must be >= 1")
    if cap.min_velocity_fps <= 0:
        fail("capacity.min_velocity_fps", "must be > 0")
    for d, v in cap.min_slope_pct.items():
        if d <= 0 or v <= 0:
            fail("capacity.min_slope_pct", f"has a non-positive entry {d:g} = {v:g}")
    for m, v in cap.manning_n_material.items():
        if not 0 < v < 1:
            fail(f"capacity.manning_n_material.{m}", "must be between 0 and 1")

    ids = set()
    for i, a in enumerate(s["approvals"]):
        if a.trigger not in TRIGGERS:
            fail(f"approvals[{i}].trigger", f"must be one of {', '.join(TRIGGERS)}")
        if a.trigger in ("flow_over", "review_flow_over") and a.flow_gpd is None:
            fail(f"approvals[{i}].flow_gpd", f"is required for trigger {a.trigger!r}")
        if a.flow_gpd is not None and a.flow_gpd <= 0:
            fail(f"approvals[{i}].flow_gpd", "must be > 0")
        if a.id in ids:
            fail(f"approvals[{i}].id", f"repeats {a.id!r}")
        ids.add(a.id)

    pt = s["pretreatment"]
    if pt.siu_process_flow_gpd <= 0:
        fail("pretreatment.siu_process_flow_gpd", "must be > 0")
    if not 0 < pt.siu_plant_fraction < 1:
        fail("pretreatment.siu_plant_fraction", "must be between 0 and 1")

    lim = s["limits"]
    names = set()
    for i, p in enumerate(lim.parameter):
        if p.max is None and p.min is None:
            fail(f"limits.parameter[{i}]", f"({p.name}) needs max or min")
        if p.max is not None and p.min is not None and p.min > p.max:
            fail(f"limits.parameter[{i}].min", f"({p.name}) is above max")
        if p.name in names:
            fail(f"limits.parameter[{i}].name", f"repeats {p.name!r}")
        names.add(p.name)
    if lim.slug_factor <= 1:
        fail("limits.slug_factor", "must be > 1")
    if lim.hourly_max_over_average is not None and lim.hourly_max_over_average <= 1:
        fail("limits.hourly_max_over_average", "must be > 1")
