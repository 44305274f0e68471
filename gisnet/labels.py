"""The one vocabulary: what gisnet's codes are called for people.

Tables and the API carry the codes (``required``, ``subject_to_notice``);
maps, popups, legends, letters, figures and the QGIS styles show the labels
from here, so a status reads the same wherever a planner meets it.
"""

from __future__ import annotations

#: Obligation status code -> label (the order is the order legends list them).
STATUS_LABELS: dict[str, str] = {
    "required": "Must connect",
    "review": "Needs review",
    "subject_to_notice": "Connection can be ordered (notice)",
    "connected": "Connected",
    "not_required": "Not required",
    "outside_district": "Outside the district",
}
#: Label of a status gisnet does not know (never a raw code).
UNKNOWN_STATUS_LABEL = "Status unknown"
#: Finding severity code -> label.
SEVERITY_LABELS: dict[str, str] = {"error": "Error", "warning": "Warning", "info": "Note"}
#: How a distance was measured (``measure`` column) -> words.
MEASURE_LABELS: dict[str, str] = {
    "property_line": "from the property line, straight line",
    "building": "from the building, straight line",
}
#: What an empty value shows as.
EMPTY = "\u2014"


def status_label(code: object) -> str:
    """The label of an obligation status code (``UNKNOWN_STATUS_LABEL`` if unknown)."""
    return STATUS_LABELS.get(str(code), UNKNOWN_STATUS_LABEL) if code is not None else EMPTY


def measure_label(code: object) -> str:
    """How a distance was measured, in words (the code itself if gisnet has no words)."""
    if code is None:
        return EMPTY
    return MEASURE_LABELS.get(str(code), str(code).replace("_", " "))


# --------------------------------------------------------------------------- printed outputs
#: Result (and base) layer name -> what a printed legend or a letter calls it.
LAYER_LABELS: dict[str, str] = {
    "parcels": "Parcels",
    "mains": "Sewer mains",
    "graph_edges": "Sewer mains",
    "graph_nodes": "Manholes and junctions",
    "obligations": "Parcels by obligation status",
    "obligation_evidence": "Measured line (nearest points)",
    "connection_zone": "Within the connection distance",
    "control_manholes": "Control manholes",
    "control_paths": "Path to the control manhole",
    "sampling_plan": "Industrial users",
    "pipes_capacity": "Pipes by utilization",
    "plants": "Treatment plants",
    "buildings": "Buildings",
    "streets": "Streets",
}
#: Printable figure kind -> title.
FIGURE_TITLES: dict[str, str] = {
    "obligations": "Who must connect to the public sewer",
    "capacity": "Pipe capacity: utilization of design flow",
    "sampling": "Control manholes and industrial users",
    "network": "Sewer network",
}
#: Headings of a notice packet, in order.
NOTICE_HEADINGS: dict[str, str] = {
    "letter": "Notice",
    "rule": "The rule",
    "measurement": "How the distance was measured",
    "deadline": "Deadline",
    "figure": "Map of the measurement",
}


def layer_label(name: str) -> str:
    """What a printed legend calls a layer (its name in words if gisnet has no label)."""
    return LAYER_LABELS.get(name, name.replace("_", " ").capitalize())
