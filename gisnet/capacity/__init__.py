"""Flows, peaking, Manning full-flow capacity, utilization, plants and what-if.

Everything here is in US customary units: diameters in inches, lengths and
inverts in feet, slopes in ft/ft, flows in gallons per day (gpd) or cubic feet
per second (cfs), plant flows in MGD. Geometry stays in the town's working CRS.

The stages, one module each:

==========================  ===============================================================
module                      stage
==========================  ===============================================================
:mod:`gisnet.flows`         :func:`parcel_flows` -- the design flow of every parcel
:mod:`.formulas`            Manning full flow, Harmon peaking, minimum slopes (with sources)
:mod:`.network`             the graph as arrays, the flow tapped into each pipe
                            (:func:`edge_inflows`), :func:`accumulate` level by level
:mod:`.pipes`               :func:`compute_capacity` -> :class:`CapacityResult`: capacity,
                            peak flow, utilization and flags of every pipe
:mod:`.plants`              the plants layer: 3-consecutive-month flow against 80 % of
                            design flow (:func:`plant_window`)
:mod:`.whatif`              :func:`whatif` -> :class:`WhatIfResult`: a proposed connection,
                            only the downstream pipes recomputed; the approvals it triggers
==========================  ===============================================================

The shared rules (which mains carry sanitary flow, "in excess of") are those
of :mod:`gisnet.rules`; the thresholds and unit flows are the profile's
``[capacity]`` and ``[flow]`` sections.
"""

from __future__ import annotations

from ..flows import parcel_flows
from .formulas import (
                       MANNING_K,
                       PEAKING_FORMULAS,
                       harmon_peaking_factor,
                       manning_full_flow_cfs,
                       min_slope_ft_per_ft,
                       peaking_factor,
)
from .network import (
                       Accumulation,
                       Network,
                       accumulate,
                       edge_inflows,
                       graph_arrays,
                       sanitary_flow_edges,
)
from .pipes import PIPE_FLAGS, CapacityResult, compute_capacity
from .plants import PLANT_COLUMNS, plant_layer, plant_window
from .whatif import WhatIfResult, approvals, whatif

__all__ = [
    "MANNING_K", "PEAKING_FORMULAS", "PIPE_FLAGS", "PLANT_COLUMNS", "Accumulation",
    "CapacityResult", "Network", "WhatIfResult", "accumulate", "approvals", "compute_capacity",
    "edge_inflows", "graph_arrays", "harmon_peaking_factor", "manning_full_flow_cfs",
    "min_slope_ft_per_ft", "parcel_flows", "peaking_factor", "plant_layer", "plant_window",
    "sanitary_flow_edges", "whatif",
]
