"""The tables of a jurisdiction profile, one frozen dataclass each, and the :class:`Profile`.

The fields are the TOML keys (docs/architecture.md, "Profiles"); see
:mod:`gisnet.profile.table` for how a field's type and default make the schema.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import re
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .table import InvalidValue, ProfileTable, documented, key, plain

#: How the connection distance is measured (``[connection] measure``).
MEASURES = ("property_line", "building")
#: Which buildings the connection rule covers (``[connection] applies_to``).
APPLIES_TO = ("all", "new_buildings")
#: Main kinds (``[connection] eligible_kinds``).
MAIN_KINDS = ("sanitary", "storm", "combined", "force", "unknown")
#: What sets off an approval (``[[approvals]] trigger``): a flow over ``flow_gpd``; a
#: plant over its threshold; industrial wastewater; a flow over the local review
#: ``flow_gpd``; a connection producing domestic wastewater only (not industrial);
#: preliminary treatment required (Poughkeepsie § 168-22.5G(4)(d): only then); the
#: discharge of industrial cooling water (§ 168-22.2E).
TRIGGERS = ("flow_over", "plant_over", "industrial", "review_flow_over", "domestic",
            "preliminary_treatment", "cooling_water")
#: How a building of unknown age counts under ``applies_to = "new_buildings"``.
UNKNOWN_AGE = ("review", "new", "existing")
#: Peaking formulas gisnet.capacity implements (``[flow] peaking_formula``): Harmon
#: (the Ten States Standards formula), or none (peak = average).
PEAKING_FORMULAS = ("harmon", "none")
#: Which window of ``plant_months`` consecutive complete months decides the plant
#: rule (``[capacity] plant_basis``): the most recent one, or the highest of the record.
PLANT_BASES = ("latest", "worst")
#: What a ``[[limits.parameter]]`` limit is judged on (``basis``): each result
#: (None), the average of a 24-hour sampling period at the point (``average``),
#: or the normal-strength line, a basis of surcharge and not a prohibition
#: (``normal_strength``).
LIMIT_BASES = ("average", "normal_strength")
#: Where a limit (``where``) or the hourly rule (``[limits] hourly_where``)
#: applies: anywhere in the sewer (``sewer``, as None), or to the sewage as it
#: arrives at the treatment plant (``plant_influent``).
LIMIT_WHERE = ("sewer", "plant_influent")
#: How Poughkeepsie § 168-22.5C(9)'s "At no time shall the hourly concentration be
#: three times the average concentration" is read (``[limits] hourly_reading``): three
#: times the average the table lists for the substance (``listed_average``: a cap, 3 ppm
#: for copper), or three times the 24-hour average measured at the same point
#: (``measured_average``). docs/readings.md gives both.
HOURLY_READINGS = ("listed_average", "measured_average")
#: The concentration a slug is a multiple of (``[limits] slug_baseline``): the
#: normal-strength numbers of the profile, or the discharger's own average
#: 24-hour concentration during normal operation at the sampling point.
SLUG_BASELINES = ("normal_strength", "own_24h_average")
#: How Poughkeepsie § 168-22.5D's "a monthly increase in the average daily analysis of
#: any of these constituents in excess of 2% of the annual daily average for the previous
#: year" is read (``[monthly_increase] reading``): the month's average daily analysis
#: over the previous calendar year's annual daily average (``over_annual_average``, the
#: default), or the month's rise over the month before it, measured against 2 % of that
#: annual daily average (``over_previous_month``). docs/readings.md gives both.
MONTHLY_INCREASE_READINGS = ("over_annual_average", "over_previous_month")

def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    return f"must be one of {', '.join(allowed)}, not {value!r}"


@documented
@dataclass(frozen=True, kw_only=True)
class ProfileInfo(ProfileTable):
    """``[profile]``: what the profile is and where its numbers come from."""

    TABLE: ClassVar[str] = "profile"

    id: str = key("Short identifier (the built-in file name, e.g. ``berlin-nh``).")
    name: str = key("Human name of the profile.")
    jurisdiction: str = key("The municipality or district the ordinance governs.")
    ordinance: str = key("The ordinance (code chapter, article, amendments) cited.")
    source: str = key("Where the ordinance text is: a path beside the profile file, a shipped "
                      "text (``ordinances/berlin-nh.txt``) or a URL (cited, not read); "
                      "``ordinance_text`` reads it.")
    state: str | None = key("Two-letter state code.", optional=True)
    notes: str | None = key("Notes on reading the ordinance.", optional=True)


@documented
@dataclass(frozen=True, kw_only=True)
class Connection(ProfileTable):
    """``[connection]``: who must connect to the public sewer, and when."""

    TABLE: ClassVar[str] = "connection"

    distance_ft: float = key("A parcel within this distance (``<=``) of an eligible public "
                             "sewer must connect.", "ft")
    measure: str = key("What the distance is measured from: ``property_line`` (the parcel) "
                       "or ``building`` (its footprint); see MEASURES.")
    include_manholes: bool = key("Public manholes count as the public sewer, as well as "
                                 "mains, in the connection zone.")
    eligible_kinds: tuple[str, ...] = key("Main kinds that are a public sewer for the rule "
                                          "(of MAIN_KINDS; force mains never count).")
    require_abutting: bool = key("The parcel must also abut a street or right-of-way that "
                                 "holds an eligible main.")
    deadline_days: int = key("Days after official notice within which to connect.", "days")
    section: str = key("Ordinance section of the connection rule.")
    applies_to: str = key("``all`` buildings, or ``new_buildings`` (newly constructed) "
                          "only; see APPLIES_TO.")
    notice_condition: str = key("When notice to connect may be given (empty: whenever the "
                                "rule applies).")
    septic_max_years: int | None = key(
        "Years after the sewer became available by which an existing building on a private "
        "system must connect.", "years", optional=True)
    septic_section: str | None = key("Section of ``septic_max_years`` (required with it).",
                                     optional=True)
    septic_deadline_days: int | None = key(
        "Days after notice within which a property on a private system must connect.",
        "days", optional=True)
    septic_rule: str | None = key("Text of the private-system rule.", optional=True)
    text: str | None = key("Text of the connection rule.", optional=True)
    applies_to_text: str | None = key("The ordinance's words for the properties covered.",
                                      optional=True)
    notice_section: str | None = key("Section of the notice condition.", optional=True)
    new_construction_from: dt.date | None = key(
        "Buildings built on or after this date are newly constructed (default: the date the "
        "sewer became available to the parcel).", optional=True)
    unknown_age: str | None = key("How a building of unknown age counts under "
                                  "``new_buildings``; see UNKNOWN_AGE.", optional=True)
    unoccupied_land_uses: tuple[str, ...] | None = key(
        "Canonical land uses of a lot that, with no building on it, is not occupied and "
        "need not connect.", optional=True)
    residential_uses: tuple[str, ...] | None = key(
        "Land uses (parcel ``land_use``; a building's ``use`` equal to one or beginning with "
        "one and ``_``) of a residence, for a rule that speaks of \"a resident\".",
        optional=True)
    accessory_uses: tuple[str, ...] | None = key(
        "Building uses (buildings ``use``: equal to one, or beginning with one and ``_``) "
        "that are not used for human occupancy, employment or recreation (garage, shed): a "
        "lot whose every building has one need not connect. None: every building counts.",
        optional=True)
    notice_highway_program: bool | None = key(
        "Notice to connect may be given to promote a highway improvement program (as well as "
        "to eliminate a public health hazard).", optional=True)
    septic_notice_section: str | None = key(
        "Section limiting notice to a property on a private system to a public health "
        "hazard (Poughkeepsie § 168-22.3C): there a highway improvement program is no "
        "ground for notice.", optional=True)
    building_sewer_reach_ft: float | None = key(
        "A lateral connects a building when its house end comes this close to the footprint "
        "(default: the town's snap tolerance).", "ft", optional=True)
    building_sewer_reach_section: str | None = key("Section the reach is taken from.",
                                                   optional=True)
    separate_building_sewer_section: str | None = key(
        "Section requiring a separate building sewer for every building (none: a shared "
        "building sewer is reported, not held against the rule).", optional=True)
    default_street_width_ft: float = key("Right-of-way width of a street centreline that "
                                         "gives none.", "ft")
    abutting_tolerance_ft: float = key("Gap between parcel and street still counted as "
                                       "abutting.", "ft")
    frontage_section: str | None = key("Section of the frontage (pro-rata share) rule.",
                                       optional=True)
    frontage_rule: str | None = key("Text of the frontage rule.", optional=True)
    rear_building_section: str | None = key("Section of the rear-building rule.",
                                            optional=True)
    rear_building_rule: str | None = key("Text of the rear-building rule.", optional=True)
    lateral_cost_section: str | None = key("Section on who pays for the building sewer.",
                                           optional=True)
    lateral_cost_rule: str | None = key("Text of the building-sewer cost rule.", optional=True)
    private_disposal_section: str | None = key("Section on private disposal where no public "
                                               "sewer is available.", optional=True)
    quote: str | None = key(
        "The connection rule in the ordinance's words, verbatim (\"\u2026\" where words are "
        "left out): what a letter quotes for ``section`` (checked against the text).",
        optional=True)
    septic_quote: str | None = key("The ordinance's words of ``septic_section`` (verbatim).",
                                   optional=True)
    septic_notice_quote: str | None = key("The ordinance's words of "
                                          "``septic_notice_section`` (verbatim).",
                                          optional=True)
    compliance_days: int | None = key(
        "The least time the ordinance allows to comply with a notice: no letter's deadline "
        "is sooner than its date plus this.", "days", optional=True)
    compliance_section: str | None = key("Section of ``compliance_days``.", optional=True)
    compliance_quote: str | None = key("The ordinance's words of ``compliance_section`` "
                                       "(verbatim).", optional=True)
    penalty_section: str | None = key("Section of the penalty for not complying (a letter's "
                                      "penalty paragraph).", optional=True)
    penalty_quote: str | None = key("The ordinance's words of ``penalty_section`` "
                                    "(verbatim).", optional=True)
    appeal_section: str | None = key("Section of the appeal (or hearing) open to an owner (a "
                                     "letter's appeal paragraph).", optional=True)
    appeal_quote: str | None = key("The ordinance's words of ``appeal_section`` (verbatim).",
                                   optional=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        if self.distance_ft <= 0:
            yield "distance_ft", "must be > 0"
        if self.measure not in MEASURES:
            yield "measure", _one_of(self.measure, MEASURES)
        if self.applies_to not in APPLIES_TO:
            yield "applies_to", _one_of(self.applies_to, APPLIES_TO)
        if not self.eligible_kinds:
            yield "eligible_kinds", "must name at least one main kind"
        for k in self.eligible_kinds:
            if k not in MAIN_KINDS:
                yield "eligible_kinds", f"has {k!r}; kinds are {', '.join(MAIN_KINDS)}"
        if self.deadline_days < 0:
            yield "deadline_days", "must be >= 0"
        if self.septic_max_years is not None and self.septic_max_years <= 0:
            yield "septic_max_years", "must be > 0"
        if self.septic_max_years is not None and not self.septic_section:
            yield "septic_section", "is required when septic_max_years is set"
        if self.unknown_age is not None and self.unknown_age not in UNKNOWN_AGE:
            yield "unknown_age", f"must be one of {', '.join(UNKNOWN_AGE)}"
        if self.default_street_width_ft <= 0:
            yield "default_street_width_ft", "must be > 0"
        if self.abutting_tolerance_ft < 0:
            yield "abutting_tolerance_ft", "must be >= 0"
        if self.building_sewer_reach_ft is not None and self.building_sewer_reach_ft < 0:
            yield "building_sewer_reach_ft", "must be >= 0"
        if self.compliance_days is not None and self.compliance_days < 0:
            yield "compliance_days", "must be >= 0"
        if self.compliance_days is not None and not self.compliance_section:
            yield "compliance_section", "is required when compliance_days is set"
        for k in ("septic", "septic_notice", "compliance", "penalty", "appeal"):
            if getattr(self, f"{k}_quote") and not getattr(self, f"{k}_section"):
                yield f"{k}_section", f"is required when {k}_quote is set"


@documented
@dataclass(frozen=True, kw_only=True)
class ControlManhole(ProfileTable):
    """``[control_manhole]``: where an industrial user's wastewater is sampled."""

    TABLE: ClassVar[str] = "control_manhole"

    section: str = key("Ordinance section of the control manhole rule.")
    rule: str = key("Text of the rule.")
    method: str | None = key("How gisnet finds it, e.g. "
                             "``nearest_downstream_public_manhole``.", optional=True)
    owner_manhole_section: str | None = key("Section on a control manhole the owner "
                                            "installs.", optional=True)
    owner_manhole_rule: str | None = key("Text of that rule.", optional=True)


@documented
@dataclass(frozen=True, kw_only=True)
class Flow(ProfileTable):
    """``[flow]``: unit design flows and peaking."""

    TABLE: ClassVar[str] = "flow"

    gpd_per_person: float = key("Average design flow per person.", "gpd/person")
    gpd_per_pe: float = key("Flow of one population equivalent.", "gpd/PE")
    gpd_per_bedroom: float = key("Design flow per bedroom.", "gpd/bedroom")
    persons_per_dwelling_unit: float = key("Persons per dwelling unit.", "persons")
    gpd_per_dwelling_unit: float = key("Design flow per dwelling unit.", "gpd/dwelling unit")
    land_use_gpd: Mapping[str, float] = key(
        "Design flow of a parcel by land use, when it has no metered flow, bedrooms or "
        "dwelling units ([flow.land_use_gpd]).", "gpd per parcel")
    land_use_gpd_per_acre: Mapping[str, float] | None = key(
        "Area-based design flow by land use ([flow.land_use_gpd_per_acre]).", "gpd/acre",
        optional=True)
    peaking_formula: str = key("Peaking formula applied to the domestic flow; see "
                               "PEAKING_FORMULAS.")
    peaking_cap: float = key("Largest peaking factor.", "ratio")
    peaking_min: float = key("Smallest peaking factor (>= 1, <= peaking_cap).", "ratio")
    sources: Mapping[str, str] = key("Source of each number, by key ([flow.sources]).")

    def problems(self) -> Iterator[tuple[str, str]]:
        for k in ("gpd_per_person", "gpd_per_pe", "gpd_per_bedroom",
                  "persons_per_dwelling_unit", "gpd_per_dwelling_unit"):
            if getattr(self, k) <= 0:
                yield k, "must be > 0"
        for k, v in self.land_use_gpd.items():
            if v < 0:
                yield f"land_use_gpd.{k}", "must be >= 0"
        if self.peaking_formula not in PEAKING_FORMULAS:
            yield "peaking_formula", f"must be one of {', '.join(PEAKING_FORMULAS)}"
        if not 1.0 <= self.peaking_min <= self.peaking_cap:
            yield "peaking_min", "must be >= 1 and <= flow.peaking_cap"


@documented
@dataclass(frozen=True, kw_only=True)
class Capacity(ProfileTable):
    """``[capacity]``: pipe and plant capacity, utilization classes, design minimums."""

    TABLE: ClassVar[str] = "capacity"

    manning_n: float = key("Manning roughness used for every pipe in design.")
    utilization_threshold: float = key("A pipe whose peak flow over full-flow capacity "
                                       "exceeds this is over the threshold.", "ratio")
    deficient: float = key("Utilization above which a pipe is deficient.", "ratio")
    surcharged: float = key("Utilization above which a pipe is surcharged.", "ratio")
    plant_threshold: float = key("Fraction of a plant's design flow that sets off the "
                                 "plant rule.", "fraction")
    plant_months: int = key("Consecutive months of average flow the plant rule looks at.",
                            "months")
    plant_strict: bool = key("The plant rule is ``in excess of`` (``>``) rather than "
                             "``at least`` (``>=``).")
    plant_section: str = key("Section (or source) of the plant rule.")
    plant_basis: str | None = key(
        "Which window of ``plant_months`` consecutive complete months decides the plant "
        "rule: ``latest`` (the most recent: how the plant operates now; the default) or "
        "``worst`` (the highest in the record); see PLANT_BASES.", optional=True)
    min_velocity_fps: float = key("Minimum velocity flowing full.", "ft/s")
    min_slope_pct: Mapping[float, float] = key(
        "Minimum slope by nominal pipe diameter (inches), ascending ([capacity.min_slope_pct]).",
        "percent")
    manning_n_material: Mapping[str, float] = key(
        "As-built Manning n by pipe material ([capacity.manning_n_material]).")
    sources: Mapping[str, str] | None = key("Source of each number, by key "
                                            "([capacity.sources]).", optional=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        if not 0 < self.manning_n < 1:
            yield "manning_n", "must be between 0 and 1"
        for k in ("utilization_threshold", "deficient", "surcharged", "plant_threshold"):
            if getattr(self, k) <= 0:
                yield k, "must be > 0"
        if not self.utilization_threshold <= self.deficient <= self.surcharged:
            yield "deficient", "must lie between utilization_threshold and surcharged"
        if self.plant_months < 1:
            yield "plant_months", "must be >= 1"
        if self.plant_basis is not None and self.plant_basis not in PLANT_BASES:
            yield "plant_basis", _one_of(self.plant_basis, PLANT_BASES)
        if self.min_velocity_fps <= 0:
            yield "min_velocity_fps", "must be > 0"
        for d, v in self.min_slope_pct.items():
            if d <= 0 or v <= 0:
                yield "min_slope_pct", f"has a non-positive entry {d:g} = {v:g}"
        for m, v in self.manning_n_material.items():
            if not 0 < v < 1:
                yield f"manning_n_material.{m}", "must be between 0 and 1"


@documented
@dataclass(frozen=True, kw_only=True)
class Approval(ProfileTable):
    """One ``[[approvals]]`` entry: an approval or review a connection may need."""

    TABLE: ClassVar[str] = "approvals"

    id: str = key("Identifier (unique in the profile).")
    trigger: str = key("What sets it off; see TRIGGERS.")
    flow_gpd: float | None = key("Flow above which it applies (required for ``flow_over`` "
                                 "and ``review_flow_over``).", "gpd", optional=True)
    authority: str = key("Who approves.")
    section: str = key("Ordinance section.")
    text: str = key("Text of the rule.")
    lead_days: int | None = key("Days before the service connection by which the "
                                "application must be made (Berlin: 30, 60 for industrial "
                                "wastes).", "days", optional=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        if self.lead_days is not None and self.lead_days <= 0:
            yield "lead_days", "must be > 0"
        if self.trigger not in TRIGGERS:
            yield "trigger", f"must be one of {', '.join(TRIGGERS)}"
        if self.trigger in ("flow_over", "review_flow_over") and self.flow_gpd is None:
            yield "flow_gpd", f"is required for trigger {self.trigger!r}"
        if self.flow_gpd is not None and self.flow_gpd <= 0:
            yield "flow_gpd", "must be > 0"


@documented
@dataclass(frozen=True, kw_only=True)
class Pretreatment(ProfileTable):
    """``[pretreatment]``: significant industrial users and local review."""

    TABLE: ClassVar[str] = "pretreatment"

    siu_process_flow_gpd: float = key("Average process wastewater flow at or above which a "
                                      "user is significant.", "gpd")
    siu_plant_fraction: float = key("Share of the plant's design flow at or above which a "
                                    "user is significant.", "fraction")
    siu_section: str = key("Section (or regulation) of the significant-user rule.")
    siu_categorical: bool | None = key("A categorical user is significant whatever its "
                                       "flow.", optional=True)
    local_review_flow_gpd: float | None = key("Average flow above which the local authority "
                                              "reviews a discharge.", "gpd", optional=True)
    local_review_section: str | None = key("Section of the local review.", optional=True)
    industrial_approval_section: str | None = key("Section requiring approval of industrial "
                                                  "discharges.", optional=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        if self.siu_process_flow_gpd <= 0:
            yield "siu_process_flow_gpd", "must be > 0"
        if not 0 < self.siu_plant_fraction < 1:
            yield "siu_plant_fraction", "must be between 0 and 1"


@documented
@dataclass(frozen=True, kw_only=True)
class LimitParameter(ProfileTable):
    """One ``[[limits.parameter]]`` entry: a discharge limit on one parameter."""

    TABLE: ClassVar[str] = "limits.parameter"

    name: str = key("Parameter name (``bod``, ``ph``, ``zinc`` ...), unique in the profile.")
    unit: str = key("Unit of ``max`` and ``min`` (``ppm``, ``mg/L``, ``degF``, ``pH`` ...).")
    max: float | None = key("Largest allowed value.", "the entry's unit", optional=True)
    min: float | None = key("Smallest allowed value.", "the entry's unit", optional=True)
    section: str = key("Ordinance section.")
    basis: str | None = key("What the limit is judged on: each result (left out), the "
                            "average of a 24-hour sampling period at the point "
                            "(``average``), or the normal-strength line, a basis of "
                            "surcharge, not a prohibition (``normal_strength``); see "
                            "LIMIT_BASES.", optional=True)
    where: str | None = key("Where it applies: anywhere in the sewer (``sewer``, the "
                            "default) or to the sewage as it arrives at the treatment plant "
                            "(``plant_influent``: a result elsewhere only screens); see "
                            "LIMIT_WHERE.", optional=True)
    text: str | None = key("Text of the limit.", optional=True)
    measures: str | None = key("The quantity the limit is on, as results name it (default "
                               "``name``): entries of one quantity at different places "
                               "(Berlin's temperature: 150 degF in the sewer, 104 degF at "
                               "the plant) are judged by where the sample was taken, not "
                               "by how the parameter is spelled.", optional=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        if self.max is None and self.min is None:
            yield "", f"({self.name}) needs max or min"
        if self.max is not None and self.min is not None and self.min > self.max:
            yield "min", f"({self.name}) is above max"
        if self.basis is not None and self.basis not in LIMIT_BASES:
            yield "basis", f"({self.name}) " + _one_of(self.basis, LIMIT_BASES)
        if self.where is not None and self.where not in LIMIT_WHERE:
            yield "where", f"({self.name}) " + _one_of(self.where, LIMIT_WHERE)


@documented
@dataclass(frozen=True, kw_only=True)
class LimitNarrative(ProfileTable):
    """One ``[[limits.narrative]]`` entry: a parameter the ordinance limits in words only.

    A result of it is reported as ``narrative`` (not judged by a number), or as
    ``not_comparable`` with the limit named in ``not_comparable_with`` (total oil
    and grease is not the emulsified oil and grease of § 168-22.5C(3)).
    """

    TABLE: ClassVar[str] = "limits.narrative"

    name: str = key("Parameter name as results give it (``phenols``, ``oil_grease``).")
    section: str = key("Ordinance section of the words.")
    text: str = key("The ordinance's words, verbatim.")
    not_comparable_with: str | None = key(
        "A ``[[limits.parameter]]`` entry a result of this parameter might be taken for, "
        "but is not comparable with.", optional=True)


@documented
@dataclass(frozen=True, kw_only=True)
class Limits(ProfileTable):
    """``[limits]``: discharge limits, the hourly and slug rules, normal strength."""

    TABLE: ClassVar[str] = "limits"

    parameter: tuple[LimitParameter, ...] = key("The ``[[limits.parameter]]`` entries, in "
                                                 "file order.")
    hourly_max_over_average: float | None = key(
        "A clock hour's mean may not reach this multiple of the daily average.", "ratio",
        optional=True)
    hourly_section: str | None = key("Section of the hourly rule.", optional=True)
    hourly_where: str | None = key("Where the hourly rule applies (``sewer`` or "
                                   "``plant_influent``; a result elsewhere only screens); see "
                                   "LIMIT_WHERE.", optional=True)
    hourly_reading: str | None = key(
        "How the hourly rule's \"average concentration\" is read: ``listed_average`` (three "
        "times the average the limit table lists, a cap; the default) or "
        "``measured_average`` (three times the 24-hour average measured at the same "
        "point); see HOURLY_READINGS.", optional=True)
    slug_factor: float = key("A slug is a discharge over this multiple of the slug baseline "
                             "(> 1).", "ratio")
    slug_minutes: float = key("... lasting longer than this.", "min")
    slug_section: str = key("Section of the slug rule.")
    slug_baseline: str | None = key(
        "What the slug is a multiple of: ``normal_strength`` (``normal_bod_mg_l`` / "
        "``normal_ss_mg_l``, the default) or ``own_24h_average`` (the same point's average "
        "24-hour concentration during normal operation); see SLUG_BASELINES.", optional=True)
    slug_parameters: tuple[str, ...] | None = key(
        "Parameters the slug rule measures (default: every concentration parameter for "
        "``own_24h_average``, BOD and SS for ``normal_strength``).", optional=True)
    slug_max_gap_min: float | None = key(
        "Consecutive results further apart than this do not show one continuous discharge: "
        "a slug's run of results never spans a longer gap (default ``slug_minutes``).",
        "min", optional=True)
    slug_flow: bool | None = key(
        "The slug rule also measures the quantity of flow (Berlin definition no. 66: \"in "
        "quantity of flow\"): a flow reading (parameter ``flow``) over ``slug_factor`` x the "
        "same point's own average 24-hour flow during normal operation, for longer than "
        "``slug_minutes``, is a slug (default: concentrations only).", optional=True)
    normal_bod_mg_l: float = key("Upper BOD of normal-strength (domestic) waste.", "mg/L")
    normal_ss_mg_l: float = key("Upper suspended solids of normal-strength waste.", "mg/L")
    normal_section: str = key("Section defining normal strength.")
    sections: Mapping[str, str] = key("Further sections by topic ([limits.sections]).")
    narrative: tuple[LimitNarrative, ...] | None = key(
        "The ``[[limits.narrative]]`` entries: parameters limited in words only.",
        optional=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        names: set[str] = set()
        for i, p in enumerate(self.parameter):
            if p.name in names:
                yield f"parameter[{i}].name", f"repeats {p.name!r}"
            names.add(p.name)
        if self.slug_factor <= 1:
            yield "slug_factor", "must be > 1"
        if self.hourly_max_over_average is not None and self.hourly_max_over_average <= 1:
            yield "hourly_max_over_average", "must be > 1"
        if self.hourly_where is not None and self.hourly_where not in LIMIT_WHERE:
            yield "hourly_where", _one_of(self.hourly_where, LIMIT_WHERE)
        if self.hourly_reading is not None and self.hourly_reading not in HOURLY_READINGS:
            yield "hourly_reading", _one_of(self.hourly_reading, HOURLY_READINGS)
        entries = {p.name for p in self.parameter}
        for i, n in enumerate(self.narrative or ()):
            if n.not_comparable_with is not None and n.not_comparable_with not in entries:
                yield (f"narrative[{i}].not_comparable_with",
                       f"names no [[limits.parameter]] entry: {n.not_comparable_with!r}")
        if self.slug_baseline is not None and self.slug_baseline not in SLUG_BASELINES:
            yield "slug_baseline", _one_of(self.slug_baseline, SLUG_BASELINES)
        if self.slug_max_gap_min is not None and self.slug_max_gap_min <= 0:
            yield "slug_max_gap_min", "must be > 0"


@documented
@dataclass(frozen=True, kw_only=True)
class MonthlyIncrease(ProfileTable):
    """``[monthly_increase]`` (optional; absent, the rule is not checked): the plant's
    monthly average daily analysis of a constituent may not rise by more than a share
    of the previous calendar year's annual daily average (Poughkeepsie § 168-22.5D)."""

    TABLE: ClassVar[str] = "monthly_increase"

    max_increase_pct: float = key("An increase in excess of (``>``) this percentage of the "
                                  "previous year's annual daily average is flagged.", "%")
    constituents: tuple[str, ...] = key(
        "Constituents the rule names, each read from the plant-flow table's column "
        "``<name>_mg_l`` (``ss``, ``bod``, ``grease``).")
    reading: str | None = key(
        "What the \"monthly increase\" is: ``over_annual_average`` (the month's average "
        "daily analysis less the previous year's annual daily average; the default) or "
        "``over_previous_month`` (the month's less the month before's); see "
        "MONTHLY_INCREASE_READINGS.", optional=True)
    section: str = key("Section of the rule.")
    text: str = key("The ordinance's words, verbatim.")

    def problems(self) -> Iterator[tuple[str, str]]:
        if not self.max_increase_pct > 0:
            yield "max_increase_pct", "must be > 0"
        if not self.constituents:
            yield "constituents", "must name at least one constituent"
        seen: set[str] = set()
        for i, c in enumerate(self.constituents):
            if not re.fullmatch(r"[a-z][a-z0-9_]*", c):
                yield f"constituents[{i}]", (f"{c!r} is not a column name stem (lower-case "
                                             "letters, digits, _)")
            elif c in seen:
                yield f"constituents[{i}]", f"repeats {c!r}"
            seen.add(c)
        if self.reading is not None and self.reading not in MONTHLY_INCREASE_READINGS:
            yield "reading", _one_of(self.reading, MONTHLY_INCREASE_READINGS)


@dataclass(frozen=True, kw_only=True, repr=False)
class Profile:
    """A validated jurisdiction profile: its tables, read by attribute.

    Attributes
    ----------
    profile, connection, control_manhole, flow, capacity, pretreatment, limits
        The tables (:class:`ProfileInfo`, :class:`Connection` ...).
    monthly_increase
        The optional ``[monthly_increase]`` table (:class:`MonthlyIncrease`), None
        when the ordinance has no such rule.
    approvals
        The ``[[approvals]]`` entries (:class:`Approval`), in file order.
    path
        The file it was read from (None if built from a dict).
    parsed
        The parsed TOML the tables were built from.
    raw
        The parsed TOML as a plain dict (a fresh copy each time; editing it
        changes nothing).
    """

    profile: ProfileInfo
    connection: Connection
    control_manhole: ControlManhole
    flow: Flow
    capacity: Capacity
    approvals: tuple[Approval, ...]
    pretreatment: Pretreatment
    limits: Limits
    monthly_increase: MonthlyIncrease | None = None
    path: Path | None = None
    parsed: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False,
                                                  compare=False)

    def __post_init__(self) -> None:
        ids: set[str] = set()
        for i, a in enumerate(self.approvals):
            if a.id in ids:
                raise InvalidValue("", f"approvals[{i}].id", f"repeats {a.id!r}")
            ids.add(a.id)

    @property
    def id(self) -> str:
        """The profile id (``[profile] id``)."""
        return self.profile.id

    @property
    def name(self) -> str:
        """The profile's human name (``[profile] name``)."""
        return self.profile.name

    @property
    def raw(self) -> dict[str, Any]:
        """The parsed TOML as a plain dict (a copy)."""
        return copy.deepcopy(dict(self.parsed))

    def approvals_for(self, trigger: str) -> tuple[Approval, ...]:
        """The approval rules with a given trigger (see :data:`TRIGGERS`)."""
        return tuple(a for a in self.approvals if a.trigger == trigger)

    def limit(self, name: str) -> LimitParameter | None:
        """The ``[[limits.parameter]]`` entry of a parameter, or None."""
        for p in self.limits.parameter:
            if p.name == name:
                return p
        return None

    def to_dict(self) -> dict[str, Any]:
        """The tables as plain nested data (dicts, lists), for JSON output."""
        return {name: plain(getattr(self, name)) for name in SECTIONS}

    def __repr__(self) -> str:
        return f"Profile({self.id!r}, path={str(self.path) if self.path else None!r})"


def _table_of(hint: Any) -> type[ProfileTable] | None:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = members[0] if len(members) == 1 else hint
    if typing.get_origin(hint) is tuple:
        hint = typing.get_args(hint)[0]
    return hint if isinstance(hint, type) and issubclass(hint, ProfileTable) else None


#: The top-level tables of a profile file -> their table class (``approvals`` is an
#: array of :class:`Approval` tables); all required but :data:`OPTIONAL_SECTIONS`.
SECTIONS: dict[str, type[ProfileTable]] = {
    name: cls for name, hint in typing.get_type_hints(Profile).items()
    if (cls := _table_of(hint)) is not None
}
#: The top-level tables a profile may leave out (read as None).
OPTIONAL_SECTIONS: frozenset[str] = frozenset(
    f.name for f in dataclasses.fields(Profile) if f.name in SECTIONS and f.default is None)
