"""Industrial users, the sampling plan and checks of sample results.

The control stage that builds the plan is :mod:`gisnet.control`.

==================  ===========================================================
:mod:`.plan`        :func:`sampling_plan`: each industrial user's control
                    manhole, plant served, SIU status (40 CFR 403.3(v)) and
                    local review flag, with reasons and sections
:mod:`.parameters`  parameter names, units and the profile's limits in
                    canonical units (:func:`canonical_parameter`,
                    :func:`to_canonical`)
:mod:`.checks`      :func:`read_samples`, :func:`check_samples`: lab results
                    against the profile's ``[limits]`` (max/min, hourly, slug),
                    each exceedance with the industrial users upstream
==================  ===========================================================

Units: flows in gpd, plant design flow in MGD, concentrations in mg/L, pH in
standard units, temperature in °F (see :mod:`.parameters`).
"""

from .checks import CHECK_COLUMNS, SAMPLE_COLUMNS, check_samples, read_samples
from .parameters import (
    CANONICAL_UNIT,
    PARAMETER_ALIASES,
    UNITS,
    Limit,
    canonical_parameter,
    profile_limits,
    to_canonical,
)
from .plan import PLAN_COLUMNS, fmt_gpd, sampling_plan

__all__ = [
    "CANONICAL_UNIT",
    "CHECK_COLUMNS",
    "PARAMETER_ALIASES",
    "PLAN_COLUMNS",
    "SAMPLE_COLUMNS",
    "UNITS",
    "Limit",
    "canonical_parameter",
    "check_samples",
    "fmt_gpd",
    "profile_limits",
    "read_samples",
    "sampling_plan",
    "to_canonical",
]
