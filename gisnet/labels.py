"""The one vocabulary: what gisnet's codes and columns are called for people.

Tables and the API carry the codes (``required``, ``subject_to_notice``,
``distance_ft``); maps, popups, legends, letters, figures, the QGIS styles and
field aliases and the workbook headers show the labels from here, so a status
or a column reads the same wherever a planner meets it:

- :func:`status_label`, :func:`severity_label`, :func:`measure_label` and, for
  any column, :func:`value_label`: a code in words;
- :func:`column_label`: a column name as a label, with its unit
  (``distance_ft`` -> ``Distance (ft)``, ``siu`` -> ``Significant industrial
  user``);
- :data:`EMPTY`: what an empty value shows as (never ``unknown`` or a blank).

The module imports nothing of gisnet, so every layer (io, analyses, maps,
service) can use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: Obligation status code -> label (the order is the order legends list them).
STATUS_LABELS: dict[str, str] = {
    "required": "Must connect",
    "review": "Needs review",
    "subject_to_notice": "Connection can be ordered (notice)",
    "connected": "Connected",
    "not_required": "Not required",
    "outside_district": "Outside the district",
}
#: Statuses that need attention: the maps draw them strongly with every field and
#: their evidence lines (the others lightly with a few).
ATTENTION_STATUSES = ("required", "review", "subject_to_notice")
#: Label of a status gisnet does not know (never a raw code).
UNKNOWN_STATUS_LABEL = "Status unknown"
#: Finding severity code -> label.
SEVERITY_LABELS: dict[str, str] = {"error": "Error", "warning": "Warning", "info": "Note"}
#: How a distance was measured (``measure`` column) -> words.
MEASURE_LABELS: dict[str, str] = {
    "property_line": "from the property line, straight line",
    "building": "from the building, straight line",
}
#: Utilization class of a pipe (capacity map, QGIS style) -> label template, filled
#: with the profile's thresholds ``t``, ``d``, ``s`` (ratios) by :func:`util_class_label`.
UTIL_CLASS_LABELS: dict[str, str] = {
    "ok": "below {t:.0%} of capacity",
    "threshold": "over the {t:.0%} threshold",
    "deficient": "deficient (over {d:.0%})",
    "surcharged": "surcharged (over {s:.0%})",
    "nocapacity": "no capacity (zero or adverse slope)",
    "unknown": "unknown (no diameter, slope or flow)",
}
#: The same classes where the thresholds are not known (the GeoPackage's style).
UTIL_CLASS_ROLES: dict[str, str] = {
    "ok": "below the utilization threshold",
    "threshold": "over the utilization threshold",
    "deficient": "deficient",
    "surcharged": "surcharged",
    "nocapacity": "no capacity (zero or adverse slope)",
    "unknown": "unknown (no diameter, slope or flow)",
}
#: The ground an order to connect stands on (``obligations.notice_ground``) -> words.
GROUND_LABELS: dict[str, str] = {
    "health_hazard": "a public health hazard is recorded for the property",
    "highway_program": "the property lies in a highway improvement program",
    "unconditioned": "the connection rule lets notice be given without a further ground",
    "new_building": "a newly constructed building within the connection distance",
    "septic_limit": "the ordinance's time limit for existing plumbing on a private system",
}
#: How a connection point was found (``control_manholes.source``) -> words.
SOURCE_LABELS: dict[str, str] = {
    "lateral": "tap: the building's lateral on a public main",
    "private_main": "tap on a private main (followed to the public sewer)",
    "projected": "tap projected onto the nearest main (no lateral)",
    "owner_manhole": "owner-installed control manhole",
    "unresolved": "not traced to the public sewer",
}
#: Capacity flag (``pipes_capacity.flags``, ``;``-separated) -> words.
FLAG_LABELS: dict[str, str] = {
    "no_slope": "no slope (no inverts, no stored slope)",
    "adverse_slope": "adverse slope",
    "flat_slope": "flat (zero) slope",
    "no_diameter": "no diameter (capacity unknown)",
    "diameter_assumed": "diameter assumed: the largest upstream",
    "force_main": "force main",
    "inactive": "inactive",
    "no_sanitary_flow": "carries no sanitary flow",
    "cycle": "part of a cycle (flows not computed)",
    "low_velocity": "low full-flow velocity",
    "below_min_slope": "below the minimum slope",
    "flow_split": "flow split upstream",
}
#: How the abutting test was decided (``abutting_method``) -> words.
ABUTTING_LABELS: dict[str, str] = {
    "streets": "streets layer",
    "parcel_fabric": "parcel fabric (space between parcels)",
    "assumed": "assumed (not tested)",
}
#: Plant window basis (``plants.window_basis``) and slope source -> words.
BASIS_LABELS: dict[str, str] = {
    "latest": "latest window", "worst": "worst window",
    "monthly_3mo": "3 consecutive months", "inverts": "from the inverts",
    "stored": "as stored", "none": "unknown: no flow data",
}
#: What stands where a plant's ratio or status cannot be told (no flow data: no
#: plant flows, no reported average, no parcels whose flows reach it).
UNKNOWN_FLOW = "unknown: no flow data"
#: How a main's flow direction was decided (``direction_source``) -> words.
DIRECTION_SOURCE_LABELS: dict[str, str] = {
    "node_ids": "the node ids", "inverts": "the inverts",
    "invert_match": "the inverts matched to the network",
    "pump_station": "the pump station it leaves",
    "elevations": "the structure elevations",
    "dem_rim": "the ground (elevation raster)",
    "network": "the network's shape (path to the outlet)",
    "digitized": "the digitised order",
}
#: Column -> its code labels (the columns whose values are codes).
VALUE_LABELS: dict[str, Mapping[str, str]] = {
    "status": STATUS_LABELS,
    "severity": SEVERITY_LABELS,
    "measure": MEASURE_LABELS,
    "source": SOURCE_LABELS,
    "flags": FLAG_LABELS,
    "abutting_method": ABUTTING_LABELS,
    "basis": BASIS_LABELS,
    "window_basis": BASIS_LABELS,
    "slope_source": BASIS_LABELS,
    "direction_source": DIRECTION_SOURCE_LABELS,
    "notice_ground": GROUND_LABELS,
}
#: Columns whose code values are shown as words without a table of their own
#: (``shared_building_sewer`` -> ``Shared building sewer``).
WORDED_COLUMNS = frozenset({"kind"})
#: Columns holding ``;``-separated codes.
LIST_COLUMNS = frozenset({"flags", "notice_ground"})

#: Column-name suffix -> unit (the label's unit and the popup's).
SUFFIX_UNITS: dict[str, str] = {
    "_ft": "ft", "_in": "in", "_gpd": "gpd", "_cfs": "cfs", "_fps": "fps", "_mgd": "MGD",
    "_pct": "%", "_acres": "acres", "_days": "days", "_mg_l": "mg/L",
}
#: Column -> label (without unit) where the words of its name are not enough.
COLUMN_LABELS: dict[str, str] = {
    "parcel_id": "Parcel", "building_id": "Building", "main_id": "Main",
    "user_id": "User", "plant_id": "Plant", "node_id": "Node", "finding_id": "Finding",
    "feature_id": "Feature", "control_manhole_id": "Control manhole",
    "entry_node_id": "Entry node", "abutting_main_id": "Abutting main",
    "from_node": "From node", "to_node": "To node",
    "letter_id": "Letter", "entry_id": "Entry", "refers_to": "Cancels entry",
    "event_date": "Date", "notice_ground": "Ground for notice", "entered_by": "Entered by",
    "entered_at": "Entered at (UTC)", "as_of": "As of", "run_before": "Previous run",
    "run_after": "This run", "run_before_at": "Previous run at (UTC)",
    "run_after_at": "This run at (UTC)", "status_label": "Status (words)",
    "siu": "Significant industrial user", "siu_reason": "Why significant",
    "review": "Local review", "review_reason": "Why review",
    "measure": "Measured", "section": "Ordinance section",
    "within_distance": "Within the distance", "abuts_sewered_street": "Abuts a sewered street",
    "abutting_method": "Abutting decided by", "distance_limit_ft": "Connection distance",
    "avg_flow_gpd": "Average flow", "avg_flow_mgd": "Average flow",
    "peak_flow_gpd": "Peak flow", "design_flow_mgd": "Design flow",
    "plant_share_pct": "Share of plant flow", "mains_count": "Mains",
    "area_acres": "Area", "velocity_fps": "Full-flow velocity",
    "capacity_gpd": "Full-flow capacity", "utilization": "Utilization",
    "deadline_days": "Deadline", "septic_deadline": "Septic deadline",
    "in_district": "In the district", "health_hazard": "Public health hazard",
    "highway_program": "Highway improvement program", "window_basis": "Window basis",
    "slope_source": "Slope from", "flags": "Flags", "kind": "Kind",
    "direction_source": "Direction from",
}
#: Unitless numbers whose label names what they are.
RATIO_COLUMNS = frozenset({"utilization", "ratio", "threshold", "peaking_factor"})
#: What an empty value shows as.
EMPTY = "\u2014"


def is_empty(v: object) -> bool:
    """None, NaN, NA or blank text: a value the data does not have."""
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    if isinstance(v, str):
        return v.strip() == ""
    try:
        return bool(v != v)  # pandas NA / NaT
    except (TypeError, ValueError):
        return False


def status_label(code: object) -> str:
    """The label of an obligation status code (``UNKNOWN_STATUS_LABEL`` if unknown)."""
    if is_empty(code):
        return EMPTY
    return STATUS_LABELS.get(str(code), UNKNOWN_STATUS_LABEL)


def severity_label(code: object) -> str:
    """The label of a finding severity code."""
    return value_label("severity", code)


def measure_label(code: object) -> str:
    """How a distance was measured, in words (the code in words if gisnet has none)."""
    return value_label("measure", code)


def util_class_label(key: str, t: float | None = None, d: float | None = None,
                     s: float | None = None) -> str:
    """The label of a utilization class: with the profile's thresholds (ratios) when
    given, else naming them by role."""
    if t is None or d is None or s is None:
        return UTIL_CLASS_ROLES[key]
    return UTIL_CLASS_LABELS[key].format(t=t, d=d, s=s)


def _words(code: str) -> str:
    return code.replace("_", " ")


def value_label(column: str, value: object) -> str:
    """A value of ``column`` as people read it.

    Codes of the columns in :data:`VALUE_LABELS` are looked up (an unknown code
    is shown in words, underscores as spaces); ``;``-separated lists
    (``flags``) label each item; ``kind`` codes become words; booleans are
    ``yes``/``no``; empty values are :data:`EMPTY`; anything else is its text.
    """
    if is_empty(value):
        return EMPTY
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    text = str(value)
    if column == "status":
        return status_label(text)
    table = VALUE_LABELS.get(column)
    if column in LIST_COLUMNS:
        items = [i.strip() for i in text.split(";") if i.strip()]
        if not items:
            return EMPTY
        return "; ".join((table or {}).get(i, _words(i)) for i in items)
    if table is not None:
        return table.get(text, _words(text))
    if column in WORDED_COLUMNS:
        words = _words(text)
        return words[:1].upper() + words[1:]
    return text


def unit_of(column: str) -> str | None:
    """The unit a column's name carries (``distance_ft`` -> ``ft``), or None."""
    for sfx, unit in SUFFIX_UNITS.items():
        if column.endswith(sfx) and len(column) > len(sfx):
            return unit
    return None


def column_label(column: str, unit: str | bool | None = True) -> str:
    """A column's label for people.

    Parameters
    ----------
    column
        The column name (``distance_ft``).
    unit
        True: the unit of the name's suffix (:func:`unit_of`; ``ratio`` for
        :data:`RATIO_COLUMNS`); a text: that unit; False or None: no unit
        (popups, whose values carry their unit).

    Examples
    --------
    >>> column_label("distance_ft")
    'Distance (ft)'
    >>> column_label("siu")
    'Significant industrial user'
    >>> column_label("peak_flow_gpd", unit=False)
    'Peak flow'
    """
    base = COLUMN_LABELS.get(column)
    if base is None:
        base = column
        for sfx in SUFFIX_UNITS:
            if base.endswith(sfx) and len(base) > len(sfx):
                base = base[: -len(sfx)]
                break
        base = _words(base).strip()
        base = base[:1].upper() + base[1:]
    if unit is True:
        unit = unit_of(column) or ("ratio" if column in RATIO_COLUMNS else None)
    if not unit or unit in ("\u2014", "-"):
        return base
    return f"{base} ({unit})"


def vocabulary() -> dict[str, object]:
    """Every table of words, for the API (``GET /labels``): code -> label per coded
    column, the column labels, the utilization classes by role, and :data:`EMPTY`."""
    return {
        "values": {col: dict(table) for col, table in VALUE_LABELS.items()},
        "util_classes": dict(UTIL_CLASS_ROLES),
        "unknown_status": UNKNOWN_STATUS_LABEL,
        "columns": {c: column_label(c) for c in COLUMN_LABELS},
        "units": dict(SUFFIX_UNITS),
        "empty": EMPTY,
    }



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


def subtitle(town_name: str, ordinance: str) -> str:
    """The line under a map's or figure's title: the town by its own name (the town
    file's ``name``) and, apart, the ordinance its rules are measured under (the
    profile's ``ordinance``): a town under the Berlin profile is not the City of Berlin.

    Examples
    --------
    >>> subtitle("Gorham", "City of Berlin Code ch. 16")
    'Gorham · rules measured under City of Berlin Code ch. 16'
    """
    return f"{town_name} \u00b7 rules measured under {ordinance}"
