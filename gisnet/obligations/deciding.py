"""Deciding: the ordinance as an ordered table of rules, applied to the facts of each parcel.

The measured facts of every parcel (:class:`ParcelFacts`) and the terms of
the town's connection rule (:class:`Ordinance`, from the profile's
``[connection]``; both in :mod:`gisnet.obligations.facts`) go through
:data:`RULES` in order; the first rule whose predicate holds for a parcel
decides its status, the section cited, the deadline and the one-sentence
reason. Read top to bottom, the table is the ordinance:

====  ================================  =================  ============================
 #    rule                              status             when
====  ================================  =================  ============================
 1    connected                         connected          a lateral serves it / marked
 2    outside_district                  outside_district   outside the district layer
 3    no_eligible_main                  not_required       no eligible main in the town
 4    unmeasurable                      review             no usable parcel geometry
 5    unoccupied_lot                    not_required       no building (or no buildings
                                                           layer), unoccupied land use
 5a   accessory_only                    not_required       only garages, sheds ... on it
 6    occupied_lot_without_building     review             no footprint, occupied use
 7    no_building                       not_required       building measure, no building
 7a   main_not_known_public             review             only a main of unrecognised
                                                           owner/status within reach
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
 22   notice_served                     required           notice date and a lawful
                                                           ground recorded
 22a  notice_served_excluded_ground     review             notice served to a septic
                                                           property, highway program only
 22b  notice_served_no_ground           review             notice served, no ground
 23   notice_grounds                    required           hazard / highway program
 24   septic_highway_only               subject_to_notice  septic, highway program only
 25   subject_to_notice                 subject_to_notice  no notice, no ground recorded
 26   within_and_abutting               required           notice not conditioned
====  ================================  =================  ============================

A parcel no rule decides stays ``not_required`` without a reason (the last
rule of each ``applies_to`` catches every parcel left, so none does).

Each rule that orders a connection names the ground the order stands on
(:attr:`Rule.ground`, the ``notice_ground`` column): the ground recorded for
the parcel (a public health hazard, a highway improvement program), or the
rule's own (a newly constructed building, the 15-year limit, a notice that
needs no ground). A letter is written only where one is (:mod:`gisnet.notices`).

Reasons are templates: ``{name}`` is replaced by the per-parcel text or the
ordinance term of that name (see :data:`FIELDS`), built only for the parcels
the rule decides.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

from ..rules import within
from .facts import Ordinance, ParcelFacts
from .unknown_mains import known_note, nearest_text, unknown_distance_text, unknown_main_text

__all__ = ["RULES", "STATUSES", "Decision", "Ordinance", "ParcelFacts", "Rule", "decide"]

#: The statuses a parcel can get.
STATUSES = ("connected", "required", "subject_to_notice", "not_required", "review",
            "outside_district")


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


def septic_highway_only(f: ParcelFacts, o: Ordinance) -> np.ndarray:
    """A property on a private system whose only ground is a highway improvement program,
    where the profile limits notice to such a property to a health hazard (§ 168-22.3C)."""
    if not o.septic_notice_section or not o.notice_highway_program:
        return np.zeros(f.n, dtype=bool)
    return f.septic & f.highway & ~f.hazard


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
    ground
        The ground an order to connect stands on (``notice_ground``): a code of
        :data:`gisnet.labels.GROUND_LABELS`, or ``recorded`` for the grounds
        recorded for the parcel (:func:`recorded_grounds`); empty: the rule
        orders nothing.
    """

    name: str
    law: str
    when: Callable[[ParcelFacts, Ordinance], np.ndarray]
    status: str
    reason: str
    cites: str = "section"
    deadline: bool = False
    septic_date: bool = False
    ground: str = ""


_WITHIN = "Within {limit} ({where}"

RULES: tuple[Rule, ...] = (
    Rule("connected",
         "gisnet: a parcel a lateral serves (or the parcels layer marks connected) "
         "already is connected; nothing is left to require.",
         lambda f, o: f.connected,
         "connected", "{connected_by}"),
    Rule("outside_district",
         "§ 168-22.2G: the owner of all houses, buildings or property '… situated within "
         "the area' (the Fourth Ward Sewer Improvement Area); sec. 16-50: '… situated "
         "within the City'. A parcel outside the town's district layer is not bound.",
         lambda f, o: ~f.in_district,
         "outside_district", "The parcel lies outside the district the connection rule "
         "binds (the town's district layer), so {section} does not apply to it."),
    Rule("no_eligible_main",
         "Poughkeepsie § 168-22.2G / Berlin sec. 16-50: a street 'in which there is … "
         "located a public sanitary sewer'; with none in the town nothing obliges.",
         lambda f, o: ~f.measured & (f.eligible_mains == 0) & ~f.unknown_within,
         "not_required", "No eligible public sanitary gravity main in the town, so nothing "
         "requires a connection under {section}."),
    Rule("unmeasurable",
         "gisnet: a parcel without usable geometry cannot be measured; a person decides.",
         lambda f, o: ~f.measured & ~f.unknown_within,
         "review", "The parcel has no usable geometry, so it could not be measured."),
    Rule("unoccupied_lot",
         "§ 168-22.2G / sec. 16-50: 'houses, buildings or property used for human "
         "occupancy, employment, recreation or other … purposes'; an empty lot of an "
         "unoccupied land use is none of these.",
         lambda f, o: unoccupied(f, o),
         "not_required", "No building on the parcel and its land use is {land_use}: "
         "{section} applies to property used for human occupancy, employment or recreation "
         "({nearest})."),
    Rule("accessory_only",
         "§ 168-22.2G: 'houses, buildings or property used for human occupancy, employment, "
         "recreation or other similar purposes'; a lot whose only buildings are garages or "
         "sheds (the buildings layer's use, the profile's accessory_uses) is used for none "
         "of these.",
         lambda f, o: f.accessory_only & (len(o.accessory_uses) > 0),
         "not_required", "The only building on the parcel is a {use} (buildings layer use), "
         "not used for human occupancy, employment, recreation or other similar purposes, "
         "so {section} does not require it to connect ({nearest})."),
    Rule("occupied_lot_without_building",
         "sec. 16-50: 'within two hundred (200) feet of the building measured on a straight "
         "line from the sewer to the building'; an occupied land use with no footprint is "
         "more likely a gap in the buildings layer than an empty lot: a person checks it.",
         lambda f, o: ((o.measure == "building") & f.no_building & ~unoccupied(f, o)
                       & ~pd.isna(f.land_use)),
         "review", "Land use is {land_use} but the buildings layer shows no building on the "
         "parcel; {section} measures from the building: check the buildings layer "
         "({nearest})."),
    Rule("no_building",
         "sec. 16-50: '… measured on a straight line from the sewer to the building'; "
         "with no building there is nothing to measure.",
         lambda f, o: (o.measure == "building") & f.no_building,
         "not_required", "No building on the parcel; {section} measures from the building "
         "({nearest})."),
    Rule("main_not_known_public",
         "§ 168-22.2G: 'a public sanitary sewer for the area'; PUBLIC SEWER (§ 168-22.1A): "
         "'A sewer in which all owners of abutting properties have equal rights and is "
         "controlled by public authority.'; sec. 16-50: 'a public sanitary sewer of the "
         "City'. A main whose owner or status value gisnet does not recognise is not known "
         "to be such a sewer in service: it orders nobody, and a parcel within the distance "
         "of it (and of no main known to be eligible) is left to a person.",
         lambda f, o: ~(f.measured & f.within) & f.unknown_within,
         "review", "Main {unknown_main} is {unknown_distance} from {measured_from}, within "
         "{limit}, but it is not known to be a public sewer in service (a value gisnet does "
         "not recognise), so it orders no connection under {section}: map the value in the "
         "town file or check the main.{known_note}"),
    Rule("beyond_distance",
         "§ 168-22.2G: 'provided that said public sewer is within 300 feet of the property "
         "line'; sec. 16-50: 'provided that such public sewer is within two hundred (200) "
         "feet of the building'.",
         lambda f, o: ~f.within,
         "not_required", "Nearest eligible main {main} is {distance} from {measured_from}, "
         "beyond the {limit} of {section}{approx_note}."),
    Rule("main_through_lot",
         "§ 168-22.2G: 'abutting on any street, alley or right-of-way, in which there is now "
         "located … a public sanitary sewer'; sec. 16-50: 'abutting on any street, alley, or "
         "right-of-way in which there is located a public sanitary sewer'; a main across the "
         "lot itself (an "
         "easement) may be such a right-of-way: not for gisnet to decide.",
         lambda f, o: f.abutting_tested & ~f.abuts & (f.distance_ft <= 0.01),
         "review", "Main {main} runs through or along the parcel (0 ft), but the parcel "
         "abuts no street holding a public sanitary sewer: if the main lies in an easement or "
         "right-of-way across the lot, {section} applies; check."),
    Rule("not_abutting",
         "§ 168-22.2G: 'abutting on any street, alley or right-of-way, in which there is now "
         "located … a public sanitary sewer'; sec. 16-50: 'abutting on any street, alley, or "
         "right-of-way in which there is located a public sanitary sewer'.",
         lambda f, o: f.abutting_tested & ~f.abuts,
         "not_required", _WITHIN + "), but the parcel abuts no street or right-of-way holding "
         "a public sanitary sewer ({section})."),
    Rule("abutting_sewer_beyond",
         "§ 168-22.2G: connect 'with the proper public sewer … provided that said public "
         "sewer is within 300 feet': the sewer in the street it abuts must be within the "
         "distance, not just any sewer.",
         lambda f, o: f.abutting_tested & ~within(f.abutting_distance_ft, o.distance_ft),
         "not_required", _WITHIN + "), but the sewer in the street it abuts (main "
         "{abutting_main}) is {abutting_distance} away, beyond {limit} ({section})."),
    Rule("abutting_untested",
         "§ 168-22.2G / sec. 16-50: 'abutting on any street …'; without a streets layer "
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
         "sec. 16-50: 'All newly constructed houses, buildings, or properties … shall be "
         "connected, at the expense of the property owner, with the public sewer in "
         "accordance with the provisions of this article within ninety (90) days after the "
         "date of official notice to do so'.",
         lambda f, o: o.new_buildings_only & treated_as_new(f, o),
         "required", "{building_age} within {limit} ({where}, {abutting}): connect within "
         "{deadline_days} days after official notice ({section}).", deadline=True,
         ground="new_building"),
    Rule("resident_health_hazard",
         "Berlin ch. 16, existing-plumbing paragraph: 'A resident shall be required to "
         "connect an existing plumbing system to the sanitary sewer system when such system "
         "meets the measurement requirements of Section 16-50 and, in the City's opinion, the "
         "resident's septic system constitutes a health hazard.'",
         lambda f, o: (o.dates_existing_plumbing & treated_as_existing(f, o) & f.residential
                       & f.use_known & f.hazard),
         "required", "Existing residence within {limit} ({where}, {abutting}) and the City "
         "finds its septic system a health hazard: the resident must connect the existing "
         "plumbing now ({septic_section}).", cites="septic_section", ground="health_hazard"),
    Rule("existing_use_unknown",
         "existing-plumbing paragraph: 'A resident …', '… available to his residence': "
         "it covers residences; with neither the building's use nor the lot's land use known, "
         "a person checks.",
         lambda f, o: o.dates_existing_plumbing & treated_as_existing(f, o) & ~f.use_known,
         "review", "Existing building within {limit} ({where}, {abutting}); {section} covers "
         "newly constructed buildings, and whether it is a residence (the existing-plumbing "
         "paragraph speaks of 'a resident') cannot be told: its use and land use are "
         "unknown ({septic_section}).", cites="septic_section"),
    Rule("existing_non_residential",
         "sec. 16-50 covers 'All newly constructed houses, buildings, or properties'; the "
         "existing-plumbing paragraph speaks of 'a resident' and 'his residence': an existing "
         "building that is no residence falls under neither.",
         lambda f, o: o.dates_existing_plumbing & treated_as_existing(f, o) & ~f.residential,
         "not_required", "Existing building ({use}) within {limit} ({where}, {abutting}); "
         "{section} covers newly constructed buildings only, and the 15-year limit of the "
         "existing-plumbing paragraph binds residents only."),
    Rule("existing_building_dated",
         "Berlin ch. 16, existing-plumbing paragraph: an existing plumbing system meeting "
         "the sec. 16-50 measurement must connect: 'in no event shall a resident be permitted "
         "more than fifteen (15) years to connect his plumbing system to the sanitary sewer "
         "system from the date that the sanitary sewer was available to his residence'.",
         lambda f, o: (o.dates_existing_plumbing & treated_as_existing(f, o)
                       & sewer_dated(f)),
         "required", "Existing residence within {limit} ({where}, {abutting}); {section} "
         "covers newly constructed buildings, so the {plumbing} must connect by "
         "{septic_deadline}, {septic_years} years after the sewer became available, or sooner "
         "if the City finds the septic system a health hazard ({septic_section}).",
         cites="septic_section", septic_date=True, ground="septic_limit"),
    Rule("existing_building_undated",
         "existing-plumbing paragraph: '… fifteen (15) years to connect his plumbing system to "
         "the sanitary sewer system from the date that the sanitary sewer was available to his "
         "residence'; with that date unknown the limit cannot be dated: a person checks.",
         lambda f, o: o.dates_existing_plumbing & treated_as_existing(f, o),
         "review", "Existing residence within {limit} ({where}, {abutting}); {section} covers "
         "newly constructed buildings and the date the sewer became available is unknown, so "
         "the {septic_years}-year limit cannot be dated ({septic_section}).",
         cites="septic_section"),
    Rule("existing_building",
         "sec. 16-50 covers 'All newly constructed houses, buildings, or properties'; "
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
         "§ 168-22.2G: '… to connect such facilities directly with the proper public sewer "
         "… within 30 days after the date of official notice to do so'; 'Such notice shall be "
         "given only when it shall be necessary to eliminate a public health hazard or to "
         "promote a highway improvement program': served, and on a ground recorded.",
         lambda f, o: ((not o.new_buildings_only) & noticed(f)
                       & (notice_grounds(f, o) | (not o.notice_conditioned))),
         "required", _WITHIN + ", {abutting}): official notice was served on "
         "{notice_date} ({grounds}); connect within {deadline_days} days, by {deadline_date} "
         "({section}).{septic_note}", deadline=True, ground="recorded"),
    Rule("notice_served_excluded_ground",
         "§ 168-22.3C: 'At such times as a public sewer system becomes available to a "
         "property served by a private sewage disposal system … Such notice shall be given "
         "only when it shall be necessary to eliminate a public health hazard.' A notice "
         "served on a highway improvement program alone to such a property rests on a ground "
         "the ordinance excludes: a person checks it.",
         lambda f, o: (not o.new_buildings_only) & noticed(f) & septic_highway_only(f, o),
         "review", _WITHIN + ", {abutting}): official notice was served on {notice_date}, "
         "but the parcel is on a private system and its only ground recorded is a highway "
         "improvement program; {septic_notice_section} lets notice be given to such a "
         "property only to eliminate a public health hazard: check the notice before "
         "enforcing it.", cites="septic_notice_section"),
    Rule("notice_served_no_ground",
         "§ 168-22.2G: 'Such notice shall be given only when it shall be necessary to "
         "eliminate a public health hazard or to promote a highway improvement program': a "
         "notice served with no such ground recorded cannot be shown lawful: a person checks.",
         lambda f, o: (not o.new_buildings_only) & noticed(f) & o.notice_conditioned,
         "review", _WITHIN + ", {abutting}): official notice was served on {notice_date}, "
         "but no ground on which {section} lets notice be given is recorded for the parcel "
         "(a public health hazard{or_highway}): record the ground, or check the notice "
         "before enforcing it."),
    Rule("notice_grounds",
         "§ 168-22.2G: 'Such notice shall be given only when it shall be necessary to "
         "eliminate a public health hazard or to promote a highway improvement program.' "
         "A ground is recorded; the 30 days run from the notice, not yet served.",
         lambda f, o: (not o.new_buildings_only) & o.notice_conditioned & notice_grounds(f, o),
         "required", _WITHIN + ", {abutting}) and {grounds}: official notice must be served; "
         "connect within {deadline_days} days after it ({section}).{septic_note}",
         deadline=True, ground="recorded"),
    Rule("septic_highway_only",
         "§ 168-22.3C: 'At such times as a public sewer system becomes available to a "
         "property served by a private sewage disposal system … Such notice shall be given "
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
         "and 'Such notice shall be given only when it shall be necessary to eliminate a "
         "public health hazard or to promote a highway improvement program': with no notice "
         "and no such ground recorded, connection can be ordered but is not yet due.",
         lambda f, o: (not o.new_buildings_only) & o.notice_conditioned & f.every,
         "subject_to_notice", _WITHIN + ", {abutting}): connection can be ordered by "
         "official notice, due {deadline_days} days after it, but no notice, health hazard "
         "or highway improvement program is recorded for the parcel ({section}).{notice}"
         "{septic_note}", deadline=True),
    Rule("within_and_abutting",
         "§ 168-22.2G: 'The owner of all houses, buildings or property used for human "
         "occupancy … abutting on any street … is hereby required … to connect such "
         "facilities directly with the proper public sewer in accordance with the provisions "
         "of this Article within 30 days after the date of official notice to do so' (a "
         "profile whose notice is not conditioned).",
         lambda f, o: (not o.new_buildings_only) & f.every,
         "required", _WITHIN + ", {abutting}): connect within {deadline_days} days after "
         "official notice ({section}).{notice}{septic_note}", deadline=True,
         ground="unconditioned"),
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
    out[~hz & ~hw] = "no ground for notice is needed"
    return out


def recorded_grounds(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """The grounds for notice recorded for the parcels ``ix`` that the ordinance allows
    (``health_hazard``, ``highway_program``, both ``;``-joined; ``unconditioned`` where
    notice needs no ground)."""
    hz = f.hazard[ix]
    hw = f.highway[ix] & o.notice_highway_program
    if o.septic_notice_section:
        hw = hw & ~f.septic[ix]
    out = choose(hz, "health_hazard", "")
    out[~hz & hw] = "highway_program"
    out[hz & hw] = "health_hazard;highway_program"
    if not o.notice_conditioned:
        out[~hz & ~hw] = "unconditioned"
    return out


def _use(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """The building's use, else the lot's land use, else ``use unknown``."""
    use = pd.Series(f.use[ix], dtype=object)
    use = use.where(use.notna(), pd.Series(f.land_use[ix], dtype=object))
    use = use.where(use.notna(), "use unknown").astype(str).str.replace("_", " ")
    return use.to_numpy(dtype=object)


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
    "or_highway": lambda f, o, ix: choose(
        f.septic[ix] & bool(o.septic_notice_section), " only: the parcel is on a private "
        f"system ({o.septic_notice_section or ''})",
        " or a highway improvement program" if o.notice_highway_program else ""),
    "use": _use,
    "nearest": nearest_text,
    "unknown_main": unknown_main_text,
    "unknown_distance": unknown_distance_text,
    "known_note": known_note,
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
    ground
        The ground an order to connect stands on (:attr:`Rule.ground`; empty where
        the parcel's rule orders nothing or no ground is recorded).
    """

    status: np.ndarray
    section: np.ndarray
    reason: np.ndarray
    deadline_days: pd.arrays.IntegerArray
    septic_deadline: np.ndarray
    rule: np.ndarray
    deadline_date: np.ndarray | None = None
    ground: np.ndarray | None = None


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
    ground = np.full(n, "", dtype=object)
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
        if rule.ground == "recorded":
            ground[ix] = recorded_grounds(f, o, ix)
        elif rule.ground:
            ground[ix] = rule.ground
    deadline_days = pd.array(deadline, dtype="Int64")
    deadline_days[deadline < 0] = pd.NA
    return Decision(status, section, reason, deadline_days, septic.astype("datetime64[ms]"),
                    rule_of, due.astype("datetime64[ms]"), ground)
