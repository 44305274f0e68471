"""Who must connect: connection-distance obligations, connection zone, frontage.

Each parcel is measured the way the town's profile (``[connection]``) says:
from the property line (Poughkeepsie § 168-22.2G) or from the building, straight
line (Berlin sec. 16-50); :mod:`gisnet.obligations.measuring` says exactly how,
including the bounds used when a parcel stands in for a missing building.

Only eligible mains count: :func:`gisnet.rules.is_eligible_for_connection`
with the profile's ``eligible_kinds`` (public, active, gravity mains of an
eligible kind; a main of unknown kind is a sanitary main, as for the graph).
Storm, private, inactive, abandoned, proposed and force mains never make a
parcel ``required``.

The abutting test (:mod:`gisnet.obligations.streets`): the parcel (within
``abutting_tolerance_ft``) touches a street or right-of-way that holds an
eligible main. The test is run for the parcels not already connected (for
connected parcels ``abuts_sewered_street`` is null). Without a streets layer
it is decided from the parcel fabric (the gaps between parcels are the streets:
:func:`gisnet.obligations.streets.fabric_abutting`); ``abutting_method`` says
which way each parcel was decided.

"Within N ft" is :func:`gisnet.rules.within`: ``<=`` N ft, with a tolerance
of :data:`DISTANCE_TOLERANCE_FT` (a distance that prints as 300.00 ft is
within 300 ft, whatever the CRS's foot).

Where notice may be given only on a ground (Poughkeepsie § 168-22.2G: "only when
it shall be necessary to eliminate a public health hazard or to promote a highway
improvement program"), a parcel within the distance is ``required`` only with a
notice date or such a ground recorded, and ``subject_to_notice`` otherwise; a
parcel outside the town's ``district`` layer is ``outside_district``.

The status, section, deadline and reason of each parcel come from one ordered
table of rules, :data:`RULES` (:mod:`gisnet.obligations.deciding`), applied
to the measured facts of each parcel: the first rule that holds decides.

Units: every distance is in feet (``*_ft``), converted from the working CRS's
unit with ``town.ft_per_unit``; coordinates (``nearest_x`` ...) are in the
town's working CRS.

Nearest mains are found for all parcels at once with
:meth:`shapely.STRtree.query_nearest` (split over threads: shapely releases
the GIL); ties are resolved by the lowest ``main_id`` so results are
deterministic.

Modules
-------
:mod:`~gisnet.obligations.spatial`
    threaded STRtree helpers (nearest, pairwise functions, joins)
:mod:`~gisnet.obligations.streets`
    street areas, which street holds which main, the abutting test
:mod:`~gisnet.obligations.measuring`
    eligible mains, what is measured from, connected, sewer dates, building age
:mod:`~gisnet.obligations.notice`
    the district a rule binds, notice dates and their grounds (health hazard,
    highway improvement program), residences
:mod:`~gisnet.obligations.building_sewers`
    which buildings a lateral reaches; stub laterals; shared building sewers and
    the rear-building exception (§ 168-22.4D)
:mod:`~gisnet.obligations.deciding`
    the facts, the terms of the ordinance and the rule table
:mod:`~gisnet.obligations.analysis`
    :func:`compute_obligations` and :func:`analyse_obligations`
:mod:`~gisnet.obligations.zone`, :mod:`~gisnet.obligations.street_frontage`
    the connection zone; frontage and pro-rata shares
"""

from __future__ import annotations

from ..rules import DISTANCE_TOLERANCE_FT
from .analysis import (
    EVIDENCE_COLUMNS,
    OBLIGATION_COLUMNS,
    analyse_obligations,
    compute_obligations,
    frontage_reason,
    has_frontage_rule,
    select_ids,
)
from .building_sewers import BuildingSewers, SharedSewer, building_sewers
from .deciding import RULES, STATUSES, Decision, Ordinance, ParcelFacts, Rule, decide
from .measuring import eligible_mask
from .spatial import default_threads, nearest
from .street_frontage import frontage, frontage_shares
from .streets import HOLD_FRACTION, HOLD_WIDTHS
from .zone import connection_zone

__all__ = [
    "DISTANCE_TOLERANCE_FT",
    "EVIDENCE_COLUMNS",
    "HOLD_FRACTION",
    "HOLD_WIDTHS",
    "OBLIGATION_COLUMNS",
    "RULES",
    "STATUSES",
    "BuildingSewers",
    "Decision",
    "Ordinance",
    "ParcelFacts",
    "Rule",
    "SharedSewer",
    "analyse_obligations",
    "building_sewers",
    "compute_obligations",
    "connection_zone",
    "decide",
    "default_threads",
    "eligible_mask",
    "frontage",
    "frontage_reason",
    "frontage_shares",
    "has_frontage_rule",
    "nearest",
    "select_ids",
]
