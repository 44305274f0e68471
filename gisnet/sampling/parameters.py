"""Parameters, units and the profile's limits, for checks of sample results.

Units: concentrations in mg/L (ppm is taken as equal to mg/L, as the ordinances
use it for dilute wastewater), µg/L and ppb as 0.001 mg/L, pH in standard
units, temperature in °F (°C converted exactly), a flow rate (parameter
``flow``, or ``flow_gpm`` ... naming its unit) in gallons per day (gpm, gph,
mgd, cfs, L/s, m³/d converted exactly: a US gallon is 231 in³ = 3.785411784 L).
No other conversion is guessed: an unknown unit or parameter is reported as such.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..profile import Profile

log = logging.getLogger(__name__)

#: Canonical parameter name -> spellings accepted in a results file.
PARAMETER_ALIASES: dict[str, tuple[str, ...]] = {
    "bod": ("bod", "bod5", "bod 5", "biochemical oxygen demand", "5 day bod"),
    "ss": ("ss", "tss", "suspended solids", "total suspended solids"),
    "ph": ("ph",),
    "temperature": ("temperature", "temp"),
    "cyanide": ("cyanide", "cn", "total cyanide", "cyanide total"),
    "iron": ("iron", "fe"),
    "chromium": ("chromium", "cr", "total chromium"),
    "nickel": ("nickel", "ni"),
    "copper": ("copper", "cu"),
    "cadmium": ("cadmium", "cd"),
    "zinc": ("zinc", "zn"),
    "h2s": ("h2s", "hydrogen sulfide", "hydrogen sulphide"),
    "so2": ("so2", "sulfur dioxide", "sulphur dioxide"),
    "nox": ("nox", "oxides of nitrogen", "nitrogen oxides"),
    # § 168-22.5C(3) limits "emulsified oil and grease" only: a total oil and grease
    # (FOG, hexane extractable material) result is another parameter, oil_grease
    "emulsified_oil_grease": ("emulsified oil grease", "emulsified oil and grease",
                              "emulsified oil & grease", "emulsified o&g", "emulsified fog",
                              "emulsified grease"),
    "oil_grease": ("oil grease", "oil and grease", "oil & grease", "o&g", "fog",
                   "fats oils and grease", "fats, oils and grease", "total oil and grease",
                   "grease", "hem", "n hexane extractable material"),
    "phenols": ("phenols", "phenol", "total phenols", "phenolics", "total phenolics"),
    # a flow rate (Berlin definition no. 66: a slug "in quantity of flow")
    "flow": ("flow", "flow rate", "flowrate", "discharge flow", "flow gpm", "flow gpd",
             "flow gph", "flow mgd", "flow cfs", "flow l/s", "flow lps", "flow m3/d"),
}

#: Gallons per day in one cubic foot per second: 1728/231 gal per ft³, 86,400 s a day.
GPD_PER_CFS = 1728.0 / 231.0 * 86_400.0
#: Gallons per day in one litre per second (a US gallon is 3.785411784 L exactly).
GPD_PER_L_S = 86_400.0 / 3.785411784

#: Unit spelling -> (dimension, factor to the canonical unit). Canonical units:
#: concentration mg/L, pH standard units, temperature °F (handled apart).
UNITS: dict[str, tuple[str, float]] = {
    "mg/l": ("concentration", 1.0),
    "ppm": ("concentration", 1.0),
    "mg l": ("concentration", 1.0),
    "ug/l": ("concentration", 0.001),
    "µg/l": ("concentration", 0.001),
    "μg/l": ("concentration", 0.001),
    "ppb": ("concentration", 0.001),
    "ph": ("ph", 1.0),
    "su": ("ph", 1.0),
    "s.u.": ("ph", 1.0),
    "std units": ("ph", 1.0),
    "standard units": ("ph", 1.0),
    "degf": ("temperature_f", 1.0),
    "°f": ("temperature_f", 1.0),
    "f": ("temperature_f", 1.0),
    "deg f": ("temperature_f", 1.0),
    "fahrenheit": ("temperature_f", 1.0),
    "degc": ("temperature_c", 1.0),
    "°c": ("temperature_c", 1.0),
    "c": ("temperature_c", 1.0),
    "deg c": ("temperature_c", 1.0),
    "celsius": ("temperature_c", 1.0),
    "gpd": ("flow", 1.0),
    "gal/d": ("flow", 1.0),
    "gal/day": ("flow", 1.0),
    "gpm": ("flow", 1440.0),
    "gal/min": ("flow", 1440.0),
    "gph": ("flow", 24.0),
    "gal/h": ("flow", 24.0),
    "mgd": ("flow", 1e6),
    "cfs": ("flow", GPD_PER_CFS),
    "ft3/s": ("flow", GPD_PER_CFS),
    "l/s": ("flow", GPD_PER_L_S),
    "lps": ("flow", GPD_PER_L_S),
    "m3/d": ("flow", 1000.0 / 3.785411784),
    "m³/d": ("flow", 1000.0 / 3.785411784),
}
CANONICAL_UNIT = {"concentration": "mg/L", "ph": "pH", "temperature": "degF", "flow": "gpd"}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", str(text).strip().lower().replace("_", " ").replace("-", " "))


_ALIAS = {_norm(a): k for k, names in PARAMETER_ALIASES.items() for a in names}


def canonical_parameter(name: str, known: set[str] | None = None) -> str | None:
    """Canonical parameter name of a spelling, or None if unknown.

    ``known`` adds the profile's own parameter names.
    """
    n = _norm(name)
    if n in _ALIAS:
        return _ALIAS[n]
    for k in known or ():
        if _norm(k) == n:
            return k
    return None


def to_canonical(value: float, unit: str) -> tuple[str, float] | None:
    """``(dimension, value in canonical unit)``; None if the unit is unknown.

    Dimensions: ``concentration`` (mg/L), ``ph``, ``temperature`` (°F), ``flow`` (gpd).

    >>> to_canonical(2.5, "gpm")
    ('flow', 3600.0)
    """
    u = UNITS.get(str(unit).strip().lower().replace("º", "°"))
    if u is None:
        u = UNITS.get(_norm(unit))
    if u is None:
        return None
    dim, factor = u
    if dim == "temperature_c":
        return "temperature", value * 9.0 / 5.0 + 32.0
    if dim == "temperature_f":
        return "temperature", value
    return dim, value * factor


def named_unit(parameter: str, unit: str) -> str:
    """The unit of a result whose parameter names one (``flow_gpm``): the name's unit
    when the unit column is blank, the column's when the two agree; when they differ,
    a text naming both, which no unit table converts (an ``unknown_unit`` problem).

    >>> named_unit("flow_gpm", "")
    'gpm'
    >>> named_unit("flow_gpm", "GPM")
    'GPM'
    >>> named_unit("flow_gpm", "gpd")
    "gpd (parameter 'flow_gpm' says gpm)"
    >>> named_unit("BOD", "mg/L")
    'mg/L'
    """
    n = _norm(parameter)
    if not n.startswith("flow ") or _ALIAS.get(n) != "flow":
        return unit
    named = n.split(" ", 1)[1]
    if named not in UNITS:
        return unit
    if not str(unit).strip():
        return named
    given = to_canonical(1.0, unit)
    if given is not None and given == to_canonical(1.0, named):
        return unit
    return f"{unit} (parameter {parameter!r} says {named})"


@dataclass(frozen=True)
class Limit:
    """One ``[[limits.parameter]]`` entry of the profile, in canonical units.

    ``parameter`` is the quantity it limits (the entry's ``measures``, else its
    name), ``entry`` the entry's own name.
    """

    parameter: str
    dimension: str
    max: float | None
    min: float | None
    unit: str
    section: str
    basis: str | None
    where: str | None
    entry: str = ""


def entry_quantities(profile: Profile) -> dict[str, str]:
    """Each ``[[limits.parameter]]`` entry's name -> the quantity it limits (``measures``,
    else the name): a result spelled ``temperature_at_plant`` is a temperature."""
    return {p.name: p.measures or p.name for p in profile.limits.parameter}


def profile_limits(profile: Profile) -> dict[str, list[Limit]]:
    """The profile's ``[[limits.parameter]]`` entries by the quantity they limit.

    Entries with the same ``measures`` (Berlin's temperature in the sewer and at the
    plant) are listed together: where the sample was taken decides which applies
    (:func:`gisnet.sampling.places.limits_at`). Limits are converted to the
    canonical unit of their dimension; an entry in a unit gisnet does not know is
    logged and left out (not checked).
    """
    out: dict[str, list[Limit]] = {}
    for p in profile.limits.parameter:
        dim_src = to_canonical(0.0, p.unit)
        if dim_src is None:
            log.warning("profile limit %s has unit %r gisnet does not know; not checked",
                        p.name, p.unit)
            continue
        conv_max = None if p.max is None else to_canonical(p.max, p.unit)
        conv_min = None if p.min is None else to_canonical(p.min, p.unit)
        quantity = p.measures or p.name
        out.setdefault(quantity, []).append(
            Limit(quantity, dim_src[0], None if conv_max is None else conv_max[1],
                  None if conv_min is None else conv_min[1],
                  CANONICAL_UNIT[dim_src[0]], p.section, p.basis, p.where, p.name)
        )
    return out
