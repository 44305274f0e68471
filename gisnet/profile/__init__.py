"""Jurisdiction profiles: a sewer-use ordinance's numbers and sections as data.

A profile is a TOML file (two ship in ``gisnet/profiles/``; a town may write its
own). Its sections follow docs/architecture.md, "Profiles"; every rule carries
the ``section`` of the ordinance (or the standard) it comes from, so that every
result gisnet produces can cite it.

Each table of the file is a frozen dataclass whose fields are its keys
(:mod:`gisnet.profile.sections`: :class:`ProfileInfo`, :class:`Connection`,
:class:`ControlManhole`, :class:`Flow`, :class:`Capacity`, :class:`Approval`,
:class:`Pretreatment`, :class:`Limits`, :class:`LimitParameter`); the fields,
their types and defaults are the schema. An unknown key, a missing required
key, a value of the wrong type or out of range raises
:class:`gisnet.errors.ConfigError` naming the file and the key. The loaded
:class:`Profile` is immutable; its tables are read by attribute
(``profile.connection.distance_ft``), optional keys the file leaves out read
as None, sub-tables are read-only mappings and arrays are tuples; the parsed
file is ``profile.raw``. The ordinance itself, as text, is
:func:`ordinance_text` (``[profile] source``; the built-in profiles' texts ship
in ``gisnet/ordinances/``).

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

from .load import RULES_DIR, builtin_profiles, load_profile, profile_from_dict
from .sections import (
    APPLIES_TO,
    MAIN_KINDS,
    MEASURES,
    PEAKING_FORMULAS,
    SECTIONS,
    TRIGGERS,
    UNKNOWN_AGE,
    Approval,
    Capacity,
    Connection,
    ControlManhole,
    Flow,
    LimitNarrative,
    LimitParameter,
    Limits,
    Pretreatment,
    Profile,
    ProfileInfo,
)
from .table import FrozenMap, InvalidValue, ProfileTable
from .texts import builtin_ordinances, ordinance_text

__all__ = [
    "APPLIES_TO",
    "MAIN_KINDS",
    "MEASURES",
    "PEAKING_FORMULAS",
    "RULES_DIR",
    "SECTIONS",
    "TRIGGERS",
    "UNKNOWN_AGE",
    "Approval",
    "Capacity",
    "Connection",
    "ControlManhole",
    "Flow",
    "FrozenMap",
    "InvalidValue",
    "LimitNarrative",
    "LimitParameter",
    "Limits",
    "Pretreatment",
    "Profile",
    "ProfileInfo",
    "ProfileTable",
    "builtin_ordinances",
    "builtin_profiles",
    "load_profile",
    "ordinance_text",
    "profile_from_dict",
]
