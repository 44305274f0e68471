"""The inputs of the rule table: the terms of the ordinance and the facts of each parcel.

:class:`Ordinance` holds the terms of the town's connection rule (the profile's
``[connection]``), :class:`ParcelFacts` what was measured and found about each
parcel; :mod:`gisnet.obligations.deciding` applies its rule table ``RULES`` to
them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np


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
    accessory_uses
        Building uses (garage, shed ...) that are not "used for human occupancy,
        employment, recreation or other similar purposes": a lot whose every
        building has one is not covered (empty: every building is).
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
    accessory_uses: tuple[str, ...] = ()

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
            accessory_uses=tuple(c.accessory_uses or ()),
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
    accessory_only
        Every building on the parcel has a use of the profile's ``accessory_uses``
        (False without buildings or uses).
    unknown_ids, unknown_values
        Ids of the mains not known to be public sewers in service (an owner or
        status value not recognised, :mod:`gisnet.obligations.unknown_mains`) and
        those values as text (``owner 'developer'``).
    unknown_main, unknown_distance_ft, unknown_within
        The nearest such main (position, -1 for none), its distance (ft) and
        whether it is within the distance.
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
    accessory_only: np.ndarray = dataclasses.field(default_factory=_left_out)
    unknown_ids: np.ndarray = dataclasses.field(default_factory=_left_out)
    unknown_values: np.ndarray = dataclasses.field(default_factory=_left_out)
    unknown_main: np.ndarray = dataclasses.field(default_factory=_left_out)
    unknown_distance_ft: np.ndarray = dataclasses.field(default_factory=_left_out)
    unknown_within: np.ndarray = dataclasses.field(default_factory=_left_out)

    def __post_init__(self) -> None:
        n = len(self.connected)
        for name in ("unknown_ids", "unknown_values"):
            if getattr(self, name) is _LEFT_OUT:
                setattr(self, name, np.empty(0, dtype=object))
        if self.unknown_main is _LEFT_OUT:
            self.unknown_main = np.full(n, -1, dtype=np.int64)
        if self.unknown_distance_ft is _LEFT_OUT:
            self.unknown_distance_ft = np.full(n, np.nan)
        if self.unknown_within is _LEFT_OUT:
            self.unknown_within = np.zeros(n, dtype=bool)
        for name, fill in (("in_district", True), ("hazard", False), ("highway", False),
                           ("residential", True), ("use_known", True),
                           ("accessory_only", False)):
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
