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
:mod:`.points`      :func:`connection_points`: taps from laterals (on a public
                    or a private main), else the projection onto the nearest
                    eligible main; laterals that reach neither: unresolved
:mod:`.paths`       edges of taps, tap-to-manhole lines, rows of pipes
:mod:`.control`     :func:`control_manholes` (through private mains to the
                    public sewer; owner-installed manholes, § 168-22.5K) and
                    their control paths
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
  (:func:`gisnet.rules.carries_sanitary_flow`), whoever owns them. A point is
  projected only onto *eligible* edges (the graph's ``eligible`` attribute,
  :func:`gisnet.rules.is_eligible_for_connection`); a lateral may end on an
  eligible edge or on a private main (not public, carrying sanitary flow by
  gravity: :attr:`EdgeArrays.private_main`), whose flow is followed to the
  public sewer.
"""

from .control import CONTROL_COLUMNS, CONTROL_SOURCES, control_manholes, owner_manholes
from .index import DownstreamIndex, EdgeArrays, carries_flow
from .points import POINT_COLUMNS, SOURCES, THREADED_QUERY_MIN, connection_points
from .traces import POINT_MARGIN_FT, trace_downstream, trace_upstream, upstream_edges

__all__ = [
    "CONTROL_COLUMNS",
    "CONTROL_SOURCES",
    "POINT_COLUMNS",
    "POINT_MARGIN_FT",
    "SOURCES",
    "THREADED_QUERY_MIN",
    "DownstreamIndex",
    "EdgeArrays",
    "carries_flow",
    "connection_points",
    "control_manholes",
    "owner_manholes",
    "trace_downstream",
    "trace_upstream",
    "upstream_edges",
]
