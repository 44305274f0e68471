"""The colours of gisnet's classes: one table each, used by the web maps, the printed
figures and the QGIS styles (:mod:`gisnet.output.styles`).

The words for the same classes are :mod:`gisnet.labels`; tests/test_palettes.py
checks the classes stay apart under simulated colour-blindness.
"""

from __future__ import annotations

from .labels import util_class_label

#: Obligation status -> colour: the one table, used by these styles and the web maps.
#: Okabe & Ito's colour-blind-safe palette (vermillion, orange, reddish purple, blue)
#: and two greys; tests/test_palettes.py checks the classes stay apart under simulated
#: protanopia, deuteranopia and tritanopia.
STATUS_COLOURS: dict[str, str] = {
    "required": "#d55e00",
    "subject_to_notice": "#cc79a7",
    "review": "#e69f00",
    "connected": "#0072b2",
    "not_required": "#666666",
    "outside_district": "#cccccc",
}
#: Utilization class -> colour (Okabe-Ito blue, orange, vermillion; Tol's wine; black,
#: grey): the one table, used by these styles and the capacity and what-if maps.
UTIL_COLOURS: dict[str, str] = {
    "ok": "#0072b2",
    "threshold": "#e69f00",
    "deficient": "#d55e00",
    "surcharged": "#882255",
    "nocapacity": "#000000",
    "unknown": "#999999",
}
#: Utilization class -> (colour, label) of the QGIS style (the labels name the
#: profile's thresholds by role: the file does not know the profile).
UTIL_CLASSES: dict[str, tuple[str, str]] = {
    k: (c, util_class_label(k)) for k, c in UTIL_COLOURS.items()}
#: Finding severity -> colour (Okabe-Ito vermillion, yellow, sky blue): the one table,
#: used by these styles and the web maps.
SEVERITY_COLOURS: dict[str, str] = {"error": "#d55e00", "warning": "#f0e442",
                                    "info": "#56b4e9"}
#: Colour of each other layer's single symbol.
SIMPLE_COLOURS: dict[str, str] = {
    "graph_nodes": "#555555",
    "graph_edges": "#1f5fbf",
    "obligation_evidence": "#67000d",
    "connection_zone": "#a6cee3",
    "frontage": "#b2df8a",
    "control_manholes": "#7b3294",
    "control_paths": "#7b3294",
    "sampling_plan": "#e7298a",
    "plants": "#1b9e77",
    "worklist": "#d95f02",
    "changes": "#cc79a7",
    "overdue": "#d55e00",
}
