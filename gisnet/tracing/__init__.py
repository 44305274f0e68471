"""Connection points, control manholes and traces over the sewer graph.

Poughkeepsie § 168-22.5J: where no control manhole was required, the control
manhole is "the nearest downstream manhole in the public sewer from the point
at which the building sewer is connected". This package finds that point (the
*tap*) for every building, parcel and industrial user, and answers "first
public, active manhole downstream", "plant served" and the path lengths for
every node of the graph in one vectorised pass, so that a building's answer is
a lookup.

Stages, one module each:

==================  ===========================================================
:mod:`.index`       :class:`DownstreamIndex`: each node's primary out-edge and,
                    by pointer jumping, its first manhole and outlet downstream
:mod:`.points`      :func:`connection_points`: taps from laterals, else the
                    projection onto the nearest eligible main
:mod:`.paths`       edges of taps, tap-to-manhole lines, rows of pipes
:mod:`.control`     :func:`control_manholes` and their control paths
:mod:`.traces`      :func:`trace_downstream`, :func:`trace_upstream`,
                    :func:`upstream_edges`
==================  ===========================================================

Conventions
-----------
- All geometry is in the graph's working CRS (``G.graph["crs"]``, the town's
  CRS); every length is in feet (``*_ft``), converted with
  ``G.graph["ft_per_unit"]``.
- The graph follows ``docs/architecture.md`` ("Sewer graph"): edges
  ``(u, v, key=main_id)`` in flow direction, node attribute ``is_manhole``
  (public, active manhole structure) and ``outlet``.
- Flow is followed only along pipes that carry sanitary flow
  (:func:`gisnet.rules.carries_sanitary_flow`); only *eligible* edges (the
  graph's ``eligible`` attribute, :func:`gisnet.rules.is_eligible_for_connection`)
  are ever tapped.
"""

from .control import CONTROL_COLUMNS, control_manholes
from .index import DownstreamIndex, EdgeArrays, carries_flow
from .points import POINT_COLUMNS, THREADED_QUERY_MIN, connection_points
from .traces import POINT_MARGIN_FT, trace_downstream, trace_upstream, upstream_edges

__all__ = [
    "CONTROL_COLUMNS",
    "POINT_COLUMNS",
    "POINT_MARGIN_FT",
    "THREADED_QUERY_MIN",
    "DownstreamIndex",
    "EdgeArrays",
    "carries_flow",
    "connection_points",
    "control_manholes",
    "trace_downstream",
    "trace_upstream",
    "upstream_edges",
]
