"""Deciding: the ordinance as an ordered table of rules, applied to the facts of each parcel.

The measured facts of every parcel (:class:`ParcelFacts`) and the terms of
the town's connection rule (:class:`Ordinance`, from the profile's
``[connection]``) go through :data:`RULES` in order; the first rule whose
predicate holds for a parcel decides its status, the section cited, the
deadline and the one-sentence reason. Read top to bottom, the table is the
ordinance:

====  ================================  =================  ============================
 #    rule                              status             when
====  ================================  =================  ============================
 1    connected                         connected          a lateral serves it / marked
 2    outside_district                  outside_district   outside the district layer
 3    no_eligible_main                  not_required       no eligible main in the town
 4    unmeasurable                      review             no usable parcel geometry
 5    unoccupied_lot                    not_required       no building (or no buildings
                                                           layer), unoccupied land use
 6    occupied_lot_without_building     review             no footprint, occupied use
 7    no_building                       not_required       building measure, no building
 8    beyond_distance                   not_required       farther than the distance
 9    main_through_lot                  review             main across a lot, no street
 10   not_abutting                      not_required       abuts no sewered street
 11   abutting_sewer_beyond             not_required       the sewer it abuts too far
 12   abutting_untested                 review             no streets layer
 13   possibly_within                   review             approximate measure straddles
 14   new_building                      required           newly constructed building
 15   resident_health_hazard            required           residence, septic a hazard
 16   existing_use_unknown              review             existing, use unknown
 17   existing_non_residential          not_required       existing, not a residence
 18   existing_building_dated           required           residence, septic deadline
 19   existing_building_undated         review             residence, no availability date
 20   existing_building                 not_required       existing, not covered
 21   age_unknown                       review             new or existing cannot be told
 22   notice_served                     required           notice date recorded
 23   notice_grounds                    required           hazard / highway program
 24   septic_highway_only               subject_to_notice  septic, highway program only
 25   subject_to_notice                 subject_to_notice  no notice, no ground recorded
 26   within_and_abutting               required           notice not conditioned
====  ================================  =================  ============================

A parcel no rule decides stays ``not_required`` without a reason (the last
rule of each ``applies_to`` catches every parcel left, so none does).

Reasons are templates: ``{name}`` is replaced by the per-parcel text or the
ordinance term of that name (see :data:`FIELDS`), built only for the parcels
the rule decides.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

from ..rules import within

#: The statuses a parcel can get.
STATUSES = ("connected", "required", "subject_to_notice", "not_required", "review",
            "outside_district")


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Ordinance:
    """The terms of the connection rule the table reads (the profile's ``[connection]``).

    Attributes
    ----------
    distance_ft
        "within N feet": the distance limit.
    measure
        ``property_line`` or ``building``.
    section, septic_section
        The sections cited (the septic section for the existing-plumbing rule).
    deadline_days
        Days after official notice to connect.
    require_abutting
        The parcel must abut a street or right-of-way holding the sewer.
    applies_to
        ``all`` buildings, or ``new_buildings`` (newly constructed) only.
    unknown_age
        How a building of unknown age is treated: ``review``, ``new`` or ``existing``.
    septic_max_years
        Existing plumbing must connect this many years after the sewer became
        available (None: no such rule).
    unoccupied_land_uses
        Land uses of a lot that, with no building, is not used for human
        occupancy, employment or recreation.
    notice_condition, septic_rule
        Text appended to the reason of a ``required`` parcel; a notice condition
        also makes an unnoticed parcel ``subject_to_notice`` (:attr:`notice_conditioned`).
    notice_highway_program
        Notice may be given to promote a highway improvement program.
    septic_notice_section
        The section that limits notice to a property on a private system to a
        public health hazard (None: no such limit).
    """

    distance_ft: float
    measure: str
    section: str
    septic_section: str | None
    deadline_days: int
    require_abutting: bool
    applies_to: str
    unknown_age: str
    septic_max_years: int | None
    unoccupied_land_uses: tuple[str, ...]
    notice_condition: str
    septic_rule: str | None
    notice_highway_program: bool = False
    septic_notice_section: str | None = None

    @classmethod
    def of(cls, connection: Any) -> Ordinance:
        """The terms of a profile's ``connection`` section."""
        c = connection
        return cls(
            distance_ft=float(c.distance_ft), measure=c.measure, section=c.section,
            septic_section=c.septic_section, deadline_days=int(c.deadline_days),
            require_abutting=bool(c.require_abutting), applies_to=c.applies_to,
            unknown_age=c.unknown_age or "review",
            septic_max_years=c.septic_max_years or None,
            unoccupied_land_uses=tuple(c.unoccupied_land_uses or ()),
            notice_condition=c.notice_condition or "", septic_rule=c.septic_rule or None,
            notice_highway_program=bool(c.notice_highway_program),
            septic_notice_section=c.septic_notice_section or None,
        )

    @property
    def notice_conditioned(self) -> bool:
        """Notice to connect may be given only on a condition (a health hazard, a
        highway improvement program): until then a parcel is only subject to notice."""
        return bool(self.notice_condition)

    @property
    def new_buildings_only(self) -> bool:
        return self.applies_to == "new_buildings"

    @property
    def dates_existing_plumbing(self) -> bool:
        """The existing-plumbing (septic) rule sets a date to connect by."""
        return self.new_buildings_only and self.septic_max_years is not None

    def cited(self, key: str) -> str:
        """The section a rule cites: ``section``, ``septic_section`` or
        ``septic_notice_section``."""
        return {"section": self.section, "septic_section": self.septic_section or "",
                "septic_notice_section": self.septic_notice_section or ""}[key]


#: Stands for an optional fact left out; ParcelFacts fills it in (read-only, never seen).
_LEFT_OUT = np.empty(0)
_LEFT_OUT.flags.writeable = False


def _left_out() -> np.ndarray:
    return _LEFT_OUT


@dataclass
class ParcelFacts:
    """What was measured and found about each parcel: arrays aligned with the parcels.

    Attributes
    ----------
    connected, connected_by
        Already connected, and the sentence saying how (lateral or flag).
    measured
        A nearest eligible main was found (the parcel has usable geometry and
        the town has eligible mains).
    eligible_mains
        Number of eligible mains in the town.
    main_ids
        Ids of the eligible mains (``main`` and ``abutting_main`` index them).
    main, distance_ft
        Nearest eligible main (position, -1 for none) and its distance (ft).
    approximate, upper_ft
        The parcel stands in for its building (no buildings layer), and the
        farthest the building can then be (ft).
    within, uncertain
        Within the distance (on the measured distance); and, for an approximate
        measure, whether the building may be beyond it.
    abutting_tested, assume_abutting
        The abutting test ran (streets layer present and required); the caller
        asked to treat parcels as abutting without one.
    abuts, abutting_main, abutting_distance_ft
        Abuts a street holding an eligible main (False where not tested); the
        nearest such main (-1) and its distance (ft).
    no_building, land_use
        No building on the parcel (buildings layer present); its land use.
    is_new, age_known, sewer_available, septic
        Newly constructed building, whether that is known, the date the sewer
        became available (datetime64[ms]) and whether it is on a private system.
    buildings_given
        The town has a buildings layer (without one, occupancy is judged from
        the land use alone).
    district_given, in_district
        The town gives a district layer; the parcel lies in the district.
    notice_date, hazard, highway
        Date official notice was served (NaT: none recorded); a public health
        hazard recorded; in a highway improvement program.
    residential, use_known, use
        The building (or lot) is a residence; whether its use is known; the use.
        Left out, ``in_district``, ``residential`` and ``use_known`` are all True,
        ``hazard`` and ``highway`` all False, ``use`` None and ``notice_date`` NaT.
    """

    connected: np.ndarray
    connected_by: np.ndarray
    measured: np.ndarray
    eligible_mains: int
    main_ids: np.ndarray
    main: np.ndarray
    distance_ft: np.ndarray
    approximate: np.ndarray
    upper_ft: np.ndarray
    within: np.ndarray
    uncertain: np.ndarray
    abutting_tested: bool
    assume_abutting: bool
    abuts: np.ndarray
    abutting_main: np.ndarray
    abutting_distance_ft: np.ndarray
    no_building: np.ndarray
    land_use: np.ndarray
    is_new: np.ndarray
    age_known: np.ndarray
    sewer_available: np.ndarray
    septic: np.ndarray
    buildings_given: bool = True
    district_given: bool = False
    in_district: np.ndarray = dataclasses.field(default_factory=_left_out)
    notice_date: np.ndarray = dataclasses.field(default_factory=_left_out)
    hazard: np.ndarray = dataclasses.field(default_factory=_left_out)
    highway: np.ndarray = dataclasses.field(default_factory=_left_out)
    residential: np.ndarray = dataclasses.field(default_factory=_left_out)
    use_known: np.ndarray = dataclasses.field(default_factory=_left_out)
    use: np.ndarray = dataclasses.field(default_factory=_left_out)

    def __post_init__(self) -> None:
        n = len(self.connected)
        for name, fill in (("in_district", True), ("hazard", False), ("highway", False),
                           ("residential", True), ("use_known", True)):
            if getattr(self, name) is _LEFT_OUT:
                setattr(self, name, np.full(n, fill))
        if self.use is _LEFT_OUT:
            self.use = np.full(n, None, dtype=object)
        if self.notice_date is _LEFT_OUT:
            self.notice_date = np.full(n, np.datetime64("NaT", "ms"))

    @property
    def n(self) -> int:
        return len(self.connected)

    @property
    def every(self) -> np.ndarray:
        """True for every parcel (a rule that catches all still open)."""
        return np.ones(self.n, dtype=bool)


# --------------------------------------------------------------------------- predicates


def unoccupied(f: ParcelFacts, o: Ordinance) -> np.ndarray:
    """No building on the parcel (or no buildings layer to show one) and a land use
    the profile counts as unoccupied."""
    no_building = f.no_building | (not f.buildings_given)
    return no_building & np.isin(f.land_use, o.unoccupied_land_uses)


def noticed(f: ParcelFacts) -> np.ndarray:
    """Official notice to connect was served (its date is recorded)."""
    return ~pd.isna(f.notice_date)


def notice_grounds(f: ParcelFacts, o: Ordinance) -> np.ndarray:
    """A ground on which notice may be given: a health hazard, or a highway
    improvement program where the profile allows notice for one (not, where the
    profile has a ``septic_notice_section``, to a property on a private system)."""
    highway = f.highway if o.notice_highway_program else np.zeros(f.n, dtype=bool)
    if o.septic_notice_section:
        highway = highway & ~f.septic
    return f.hazard | highway


def treated_as_new(f: ParcelFacts, o: Ordinance) -> np.ndarray:
    """Newly constructed, or of unknown age where the profile treats that as new."""
    return (f.age_known & f.is_new) | (~f.age_known if o.unknown_age == "new" else False)


def treated_as_existing(f: ParcelFacts, o: Ordinance) -> np.ndarray:
    """Existing, or of unknown age where the profile treats that as existing."""
    return (f.age_known & ~f.is_new) | (~f.age_known if o.unknown_age == "existing" else False)


def sewer_dated(f: ParcelFacts) -> np.ndarray:
    """The date the sewer became available is known."""
    return ~pd.isna(f.sewer_available)


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Rule:
    """One rule of the ordinance.

    Attributes
    ----------
    name
        Short name (kept in :attr:`Decision.rule`).
    law
        The clause it implements, quoted (or gisnet's own rule, said so).
    when
        Predicate on the facts and the terms: the parcels it applies to.
    status
        The status it gives.
    reason
        The reason template (``{field}`` from :data:`FIELDS`).
    cites
        The ``[connection]`` key of the section it cites (``section``,
        ``septic_section`` or ``septic_notice_section``).
    deadline
        The parcel gets the ordinance's ``deadline_days``.
    septic_date
        The parcel gets the existing-plumbing date (sewer available +
        ``septic_max_years``) as its ``septic_deadline``, where known.
    """

    name: str
    law: str
    when: Callable[[ParcelFacts, Ordinance], np.ndarray]
    status: str
    reason: str
    cites: str = "section"
    deadline: bool = False
    septic_date: bool = False


_WITHIN = "Within {limit} ({where}"

RULES: tuple[Rule, ...] = (
    Rule("connected",
         "gisnet: a parcel a lateral serves (or the parcels layer marks connected) "
         "already is connected; nothing is left to require.",
         lambda f, o: f.connected,
         "connected", "{connected_by}"),
    Rule("outside_district",
         "§ 168-22.2G: the owner of all houses, buildings or property '... situated within "
         "the area' (the Fourth Ward Sewer Improvement Area); sec. 16-50: '... situated "
         "within the City'. A parcel outside the town's district layer is not bound.",
         lambda f, o: ~f.in_district,
         "outside_district", "The parcel lies outside the district the connection rule "
         "binds (the town's district layer), so {section} does not apply to it."),
    Rule("no_eligible_main",
         "Poughkeepsie § 168-22.2G / Berlin sec. 16-50: a street 'in which there is ... "
         "located a public sanitary sewer'; with none in the town nothing obliges.",
         lambda f, o: ~f.measured & (f.eligible_mains == 0),
         "not_required", "No eligible public sanitary gravity main in the town, so nothing "
         "requires a connection under {section}."),
    Rule("unmeasurable",
         "gisnet: a parcel without usable geometry cannot be measured; a person decides.",
         lambda f, o: ~f.measured,
         "review", "The parcel has no usable geometry, so it could not be measured."),
    Rule("unoccupied_lot",
         "§ 168-22.2G / sec. 16-50: 'houses, buildings or property used for human "
         "occupancy, employment, recreation or other ... purposes'; an empty lot of an "
         "unoccupied land use is none of these.",
         lambda f, o: unoccupied(f, o),
         "not_required", "No building on the parcel and its land use is {land_use}: "
         "{section} applies to property used for human occupancy, employment or recreation "
         "(main {main} is {distance} from the parcel)."),
    Rule("occupied_lot_without_building",
         "sec. 16-50: 'within two hundred (200) feet of the building measured on a straight "
         "line from the sewer to the building'; an occupied land use with no footprint is "
         "more likely a gap in the buildings layer than an empty lot: a person checks it.",
         lambda f, o: ((o.measure == "building") & f.no_building & ~unoccupied(f, o)
                       & ~pd.isna(f.land_use)),
         "review", "Land use is {land_use} but the buildings layer shows no building on the "
         "parcel; {section} measures from the building: check the buildings layer (the "
         "parcel is {distance} from main {main})."),
    Rule("no_building",
         "sec. 16-50: '... measured on a straight line from the sewer to the building'; "
         "with no building there is nothing to measure.",
         lambda f, o: (o.measure == "building") & f.no_building,
         "not_required", "No building on the parcel; {section} measures from the building "
         "(the parcel is {distance} from main {main})."),
    Rule("beyond_distance",
         "§ 168-22.2G: 'provided that said public sewer is within 300 feet of the property "
         "line'; sec. 16-50: 'provided that such public sewer is within two hundred (200) "
         "feet of the building'.",
         lambda f, o: ~f.within,
         "not_required", "Nearest eligible main {main} is {distance} from {measured_from}, "
         "beyond the {limit} of {section}{approx_note}."),
    Rule("main_through_lot",
         "§ 168-22.2G / sec. 16-50: 'abutting on any street, alley or right-of-way in which "
         "there is ... located a public sanitary sewer'; a main across the lot itself (an "
         "easement) may be such a right-of-way: not for gisnet to decide.",
         lambda f, o: f.abutting_tested & ~f.abuts & (f.distance_ft <= 0.01),
         "review", "Main {main} runs through or along the parcel (0 ft), but the parcel "
         "abuts no street holding a public sanitary sewer: if the main lies in an easement or "
         "right-of-way across the lot, {section} applies; check."),
    Rule("not_abutting",
         "§ 168-22.2G / sec. 16-50: 'abutting on any street, alley or right-of-way in which "
         "there is ... located a public sanitary sewer'.",
         lambda f, o: f.abutting_tested & ~f.abuts,
         "not_required", _WITHIN + "), but the parcel abuts no street or right-of-way holding "
         "a public sanitary sewer ({section})."),
    Rule("abutting_sewer_beyond",
         "§ 168-22.2G: connect 'with the proper public sewer ... provided that said public "
         "sewer is within 300 feet': the sewer in the street it abuts must be within the "
         "distance, not just any sewer.",
         lambda f, o: f.abutting_tested & ~within(f.abutting_distance_ft, o.distance_ft),
         "not_required", _WITHIN + "), but the sewer in the street it abuts (main "
         "{abutting_main}) is {abutting_distance} away, beyond {limit} ({section})."),
    Rule("abutting_untested",
         "§ 168-22.2G / sec. 16-50: 'abutting on any street ...'; without a streets layer "
         "(and not told to assume it) gisnet cannot test it: a person checks.",
         lambda f, o: ((not f.abutting_tested) and o.require_abutting
                       and not f.assume_abutting) & f.every,
         "review", _WITHIN + "), but the abutting test was skipped (no streets layer): check "
         "that the parcel abuts the street holding the sewer ({section})."),
    Rule("possibly_within",
         "sec. 16-50: 'within two hundred (200) feet of the building'; measured from the "
         "parcel (no buildings layer) the building is at least as far, and may be beyond.",
         lambda f, o: f.uncertain,
         "review", "Possibly within {limit} ({where}; without a buildings layer the building "
         "may be up to {upper} away): measure the building to decide ({section})."),
    # ---- Berlin: newly constructed buildings (sec. 16-50), existing plumbing (paragraph
    #      after sec. 16-51)
    Rule("new_building",
         "sec. 16-50: 'all newly constructed houses, buildings, or properties ... shall be "
         "connected with the public sewer within ninety (90) days after the date of official "
         "notice to do so'.",
         lambda f, o: o.new_buildings_only & treated_as_new(f, o),
         "required", "{building_age} within {limit} ({where}, {abutting}): connect within "
         "{deadline_days} days after official notice ({section}).", deadline=True),
    Rule("resident_health_hazard",
         "Berlin ch. 16, existing-plumbing paragraph: 'A resident shall be required to "
         "connect an existing plumbing system to the sanitary sewer system when such system "
         "meets the measurement requirements of Section 16-50 and, in the City's opinion, the "
         "resident's septic system constitutes a health hazard.'",
         lambda f, o: (o.dates_existing_plumbing & treated_as_existing(f, o) & f.residential
                       & f.use_known & f.hazard),
         "required", "Existing residence within {limit} ({where}, {abutting}) and the City "
         "finds its septic system a health hazard: the resident must connect the existing "
         "plumbing now ({septic_section}).", cites="septic_section"),
    Rule("existing_use_unknown",
         "existing-plumbing paragraph: 'A resident ...', '... available to his residence': "
         "it covers residences; with neither the building's use nor the lot's land use known, "
         "a person checks.",
         lambda f, o: o.dates_existing_plumbing & treated_as_existing(f, o) & ~f.use_known,
         "review", "Existing building within {limit} ({where}, {abutting}); {section} covers "
         "newly constructed buildings, and whether it is a residence (the existing-plumbing "
         "paragraph speaks of 'a resident') cannot be told: its use and land use are "
         "unknown ({septic_section}).", cites="septic_section"),
    Rule("existing_non_residential",
         "sec. 16-50 covers 'all newly constructed houses, buildings, or properties'; the "
         "existing-plumbing paragraph speaks of 'a resident' and 'his residence': an existing "
         "building that is no residence falls under neither.",
         lambda f, o: o.dates_existing_plumbing & treated_as_existing(f, o) & ~f.residential,
         "not_required", "Existing building ({use}) within {limit} ({where}, {abutting}); "
         "{section} covers newly constructed buildings only, and the 15-year limit of the "
         "existing-plumbing paragraph binds residents only."),
    Rule("existing_building_dated",
         "Berlin ch. 16, existing-plumbing paragraph: an existing plumbing system meeting "
         "the sec. 16-50 measurement must connect 'in no event more than fifteen (15) years "
         "from the date the sanitary sewer was available to the residence'.",
         lambda f, o: (o.dates_existing_plumbing & treated_as_existing(f, o)
                       & sewer_dated(f)),
         "required", "Existing residence within {limit} ({where}, {abutting}); {section} "
         "covers newly constructed buildings, so the {plumbing} must connect by "
         "{septic_deadline}, {septic_years} years after the sewer became available, or sooner "
         "if the City finds the septic system a health hazard ({septic_section}).",
         cites="septic_section", septic_date=True),
    Rule("existing_building_undated",
         "existing-plumbing paragraph: '... years from the date the sanitary sewer was "
         "available'; with that date unknown the limit cannot be dated: a person checks.",
         lambda f, o: o.dates_existing_plumbing & treated_as_existing(f, o),
         "review", "Existing residence within {limit} ({where}, {abutting}); {section} covers "
         "newly constructed buildings and the date the sewer became available is unknown, so "
         "the {septic_years}-year limit cannot be dated ({septic_section}).",
         cites="septic_section"),
    Rule("existing_building",
         "sec. 16-50 covers 'all newly constructed houses, buildings, or properties'; "
         "an existing one is not covered (no existing-plumbing rule in the profile).",
         lambda f, o: (o.new_buildings_only & (o.septic_max_years is None)
                       & treated_as_existing(f, o)),
         "not_required", "Existing building within {limit} ({where}, {abutting}); {section} "
         "covers newly constructed buildings only."),
    Rule("age_unknown",
         "sec. 16-50 covers 'newly constructed' buildings; with the built date or the date "
         "the sewer became available missing, new or existing cannot be told: a person "
         "checks.",
         lambda f, o: o.new_buildings_only & f.every,
         "review", _WITHIN + ", {abutting}), but whether the building is newly constructed "
         "({section}) cannot be told: its built date or the date the sewer became available "
         "is missing{if_existing}.", septic_date=True),
    # ---- Poughkeepsie: every building, on official notice (§ 168-22.2G)
    Rule("notice_served",
         "§ 168-22.2G: '... to connect such facilities directly with the proper public sewer "
         "... within 30 days after the date of official notice to do so'.",
         lambda f, o: (not o.new_buildings_only) & noticed(f),
         "required", _WITHIN + ", {abutting}): official notice was served on "
         "{notice_date}; connect within {deadline_days} days, by {deadline_date} "
         "({section}).{septic_note}", deadline=True),
    Rule("notice_grounds",
         "§ 168-22.2G: 'Such notice shall be given only when it shall be necessary to "
         "eliminate a public health hazard or to promote a highway improvement program.' "
         "A ground is recorded; the 30 days run from the notice, not yet served.",
         lambda f, o: (not o.new_buildings_only) & o.notice_conditioned & notice_grounds(f, o),
         "required", _WITHIN + ", {abutting}) and {grounds}: official notice must be served; "
         "connect within {deadline_days} days after it ({section}).{septic_note}",
         deadline=True),
    Rule("septic_highway_only",
         "§ 168-22.3C: 'At such times as a public sewer system becomes available to a "
         "property served by a private sewage disposal system ... Such notice shall be given "
         "only when it shall be necessary to eliminate a public health hazard.' A highway "
         "improvement program is no ground for notice to a property on a private system.",
         lambda f, o: ((not o.new_buildings_only) & o.notice_conditioned
                       & bool(o.septic_notice_section) & f.septic & f.highway & ~f.hazard),
         "subject_to_notice", _WITHIN + ", {abutting}) and in a highway improvement "
         "program, but the parcel is on a private system: notice to connect may be given only "
         "to eliminate a public health hazard, none is recorded ({septic_notice_section}).",
         cites="septic_notice_section", deadline=True),
    Rule("subject_to_notice",
         "§ 168-22.2G: connection is due 'within 30 days after the date of official notice', "
         "and 'such notice shall be given only when it shall be necessary to eliminate a "
         "public health hazard or to promote a highway improvement program': with no notice "
         "and no such ground recorded, connection can be ordered but is not yet due.",
         lambda f, o: (not o.new_buildings_only) & o.notice_conditioned & f.every,
         "subject_to_notice", _WITHIN + ", {abutting}): connection can be ordered by "
         "official notice, due {deadline_days} days after it, but no notice, health hazard "
         "or highway improvement program is recorded for the parcel ({section}).{notice}"
         "{septic_note}", deadline=True),
    Rule("within_and_abutting",
         "§ 168-22.2G: 'all houses, buildings or property used for human occupancy ... "
         "abutting on any street ... [shall] connect directly with the proper public sewer "
         "within 30 days after the date of official notice to do so' (a profile whose notice "
         "is not conditioned).",
         lambda f, o: (not o.new_buildings_only) & f.every,
         "required", _WITHIN + ", {abutting}): connect within {deadline_days} days after "
         "official notice ({section}).{notice}{septic_note}", deadline=True),
)


# --------------------------------------------------------------------------- texts


def ft_text(x: np.ndarray) -> np.ndarray:
    """Distances as text, ``123.4 ft`` (vectorised; NaN as ``? ft``)."""
    x = np.asarray(x, dtype=float)
    txt = np.empty(len(x), dtype=object)
    # (numpy's float -> str conversion is several times slower than str.format)
    txt[:] = [f"{v:.1f} ft" for v in x.tolist()]
    txt[np.isnan(x)] = "? ft"
    return txt


def choose(mask: np.ndarray, yes: str, no: str) -> np.ndarray:
    """An object array of two strings by a mask (``np.where`` on Python strings
    would build a fixed-width unicode array as wide as the longer one)."""
    out = np.full(len(mask), no, dtype=object)
    out[mask] = yes
    return out


def join_rows(parts: list[Any]) -> np.ndarray:
    """Row-wise concatenation of string arrays and constants (one ``str.join`` per
    row: repeated array ``+`` would copy each growing text once per part)."""
    k = len(next(p for p in parts if isinstance(p, np.ndarray)))
    cols = [p.tolist() if isinstance(p, np.ndarray) else repeat(p, k) for p in parts]
    out = np.empty(k, dtype=object)
    out[:] = ["".join(t) for t in zip(*cols, strict=True)]
    return out


def add_years(d: np.ndarray, years: int) -> np.ndarray:
    """Dates plus whole calendar years (29 February -> 28 February), NaT kept."""
    s = pd.Series(pd.to_datetime(d))
    out = s + pd.DateOffset(years=years)
    return out.astype("datetime64[ms]").to_numpy()


def septic_dates(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """The existing-plumbing date of the parcels ``ix``: available + septic_max_years."""
    if o.septic_max_years is None:
        return np.full(len(ix), np.datetime64("NaT", "ms"))
    return add_years(f.sewer_available[ix], o.septic_max_years)


def _date_text(d: np.ndarray) -> np.ndarray:
    return pd.Series(d).dt.strftime("%Y-%m-%d").fillna("").to_numpy(dtype=object)


def _where(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """``main M is D from the ...`` (and the sewer in the street it abuts when that
    is another main)."""
    out = join_rows(["main ", f.main_ids[f.main[ix]], " is ", ft_text(f.distance_ft[ix]),
                     " from ", _measured_from(f, o, ix)])
    aj = f.abutting_main[ix]
    other = f.abuts[ix] & (aj >= 0) & (aj != f.main[ix])
    if other.any():
        out[other] = join_rows([out[other], "; the sewer in the street it abuts is main ",
                                f.main_ids[aj[other]], " at ",
                                ft_text(f.abutting_distance_ft[ix][other])])
    return out


def _measured_from(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    what = "property line" if o.measure == "property_line" else "building"
    return choose(f.approximate[ix], "the parcel, standing in for the building", f"the {what}")


def _abutting(f: ParcelFacts, o: Ordinance) -> str:
    if f.abutting_tested:
        return "on a street it abuts"
    if o.require_abutting:
        return "abutting assumed (no streets layer)"
    return "abutting not required by the profile"


def _if_existing(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray | str:
    if o.septic_max_years is None:
        return ""
    d = septic_dates(f, o, ix)
    dated = ~pd.isna(d)
    out = np.full(len(ix), "", dtype=object)
    if dated.any():
        out[dated] = join_rows(["; if it is existing, it must connect by ",
                                _date_text(d[dated]), f" ({o.septic_section})"])
    return out


def deadline_dates(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """Date to connect by of the parcels ``ix``: notice date + ``deadline_days`` (NaT
    where no notice is recorded)."""
    d = pd.Series(pd.to_datetime(f.notice_date[ix]))
    return (d + pd.Timedelta(days=o.deadline_days)).astype("datetime64[ms]").to_numpy()


def _grounds(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    hz = f.hazard[ix]
    hw = f.highway[ix] & o.notice_highway_program
    out = choose(hz, "a public health hazard is recorded", "")
    out[~hz & hw] = "it lies in a highway improvement program"
    out[hz & hw] = "a public health hazard and a highway improvement program are recorded"
    return out


def _use(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """The building's use, else the lot's land use, else ``use unknown``."""
    use = pd.Series(f.use[ix], dtype=object)
    use = use.where(use.notna(), pd.Series(f.land_use[ix], dtype=object))
    return use.where(use.notna(), "use unknown").astype(str).to_numpy(dtype=object)


def _septic_note(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    rule = f"; {o.septic_rule}" if o.septic_rule else "."
    return choose(f.septic[ix], " The parcel is on a private system" + rule, "")


#: The reason fields: name -> text of the parcels ``ix`` (an array) or one text for all.
FIELDS: dict[str, Callable[[ParcelFacts, Ordinance, np.ndarray], np.ndarray | str]] = {
    # per parcel
    "connected_by": lambda f, o, ix: f.connected_by[ix],
    "main": lambda f, o, ix: f.main_ids[f.main[ix]],
    "distance": lambda f, o, ix: ft_text(f.distance_ft[ix]),
    "measured_from": _measured_from,
    "where": _where,
    "approx_note": lambda f, o, ix: choose(
        f.approximate[ix], " (no buildings layer: measured from the parcel; the building is "
        "at least as far)", ""),
    "upper": lambda f, o, ix: ft_text(f.upper_ft[ix]),
    "abutting_main": lambda f, o, ix: f.main_ids[np.maximum(f.abutting_main[ix], 0)],
    "abutting_distance": lambda f, o, ix: ft_text(f.abutting_distance_ft[ix]),
    "land_use": lambda f, o, ix: np.array([str(v) for v in f.land_use[ix]], dtype=object),
    "building_age": lambda f, o, ix: choose(
        f.age_known[ix], "Newly constructed building",
        "Building of unknown age treated as newly constructed"),
    "plumbing": lambda f, o, ix: choose(f.septic[ix], "existing plumbing (septic)",
                                        "existing plumbing"),
    "septic_deadline": lambda f, o, ix: _date_text(septic_dates(f, o, ix)),
    "if_existing": _if_existing,
    "septic_note": _septic_note,
    "notice_date": lambda f, o, ix: _date_text(f.notice_date[ix]),
    "deadline_date": lambda f, o, ix: _date_text(deadline_dates(f, o, ix)),
    "grounds": _grounds,
    "use": _use,
    # the terms of the ordinance
    "limit": lambda f, o, ix: f"{o.distance_ft:g} ft",
    "section": lambda f, o, ix: o.section,
    "septic_section": lambda f, o, ix: o.septic_section or "",
    "septic_notice_section": lambda f, o, ix: o.septic_notice_section or "",
    "septic_years": lambda f, o, ix: str(o.septic_max_years),
    "deadline_days": lambda f, o, ix: str(o.deadline_days),
    "notice": lambda f, o, ix: f" {o.notice_condition}" if o.notice_condition else "",
    "abutting": lambda f, o, ix: _abutting(f, o),
}


def render(template: str, f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """The reason of the parcels ``ix`` from a template of :data:`FIELDS`."""
    parts: list[Any] = []
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        if literal:
            parts.append(literal)
        if field is not None:
            parts.append(FIELDS[field](f, o, ix))
    if not any(isinstance(p, np.ndarray) for p in parts):
        return np.full(len(ix), "".join(parts), dtype=object)
    return join_rows(parts)


# --------------------------------------------------------------------------- deciding


@dataclass
class Decision:
    """Outcome of :func:`decide`, one entry per parcel.

    Attributes
    ----------
    status, section, reason
        Object arrays.
    deadline_days
        Days after official notice (``Int64``, NA where none).
    deadline_date
        Notice date + ``deadline_days`` (datetime64[ms], NaT where no notice is recorded).
    septic_deadline
        Existing-plumbing date (datetime64[ms], NaT where none).
    rule
        Name of the rule that decided (None where none did).
    """

    status: np.ndarray
    section: np.ndarray
    reason: np.ndarray
    deadline_days: pd.arrays.IntegerArray
    septic_deadline: np.ndarray
    rule: np.ndarray
    deadline_date: np.ndarray | None = None


def decide(f: ParcelFacts, o: Ordinance, rules: tuple[Rule, ...] = RULES) -> Decision:
    """Apply the rules in order, first match wins, to every parcel (vectorised).

    Parameters
    ----------
    f
        The facts of each parcel.
    o
        The terms of the ordinance.
    rules
        The table (default :data:`RULES`).
    """
    n = f.n
    open_ = np.ones(n, dtype=bool)
    status = np.full(n, "not_required", dtype=object)
    section = np.full(n, o.section, dtype=object)
    reason = np.full(n, None, dtype=object)
    rule_of = np.full(n, None, dtype=object)
    deadline = np.full(n, -1, dtype=np.int64)
    septic = np.full(n, np.datetime64("NaT", "ms"))
    due = np.full(n, np.datetime64("NaT", "ms"))
    for rule in rules:
        m = np.asarray(rule.when(f, o), dtype=bool) & open_
        if not m.any():
            continue
        open_ &= ~m
        ix = np.flatnonzero(m)
        status[ix] = rule.status
        section[ix] = o.cited(rule.cites)
        reason[ix] = render(rule.reason, f, o, ix)
        rule_of[ix] = rule.name
        if rule.deadline:
            deadline[ix] = o.deadline_days
            due[ix] = deadline_dates(f, o, ix)
        if rule.septic_date:
            septic[ix] = septic_dates(f, o, ix)
    deadline_days = pd.array(deadline, dtype="Int64")
    deadline_days[deadline < 0] = pd.NA
    return Decision(status, section, reason, deadline_days, septic.astype("datetime64[ms]"),
                    rule_of, due.astype("datetime64[ms]"))
