"""Reading a town's layers into the canonical model.

:func:`load_town` reads every layer named in a town's ``gisnet.toml``
(:mod:`gisnet.townfile`), maps its columns to the canonical schema
(:mod:`gisnet.schema`), converts units (diameter mm -> in, slope percent ->
ft/ft), normalises coded values, repairs or drops what cannot be used, and
reprojects everything to one projected working CRS. Every decision and every
flaw becomes a :class:`~gisnet.report.Finding` in ``town.report``; input that
cannot be used raises a :class:`~gisnet.errors.GisnetError` naming the file,
the layer, the feature and the problem. Input files are only ever read.

The stages, one module each:

=================================  ================================================
:mod:`gisnet.io.reading`           one OGR source as it is (:func:`read_layer`),
                                   plant flows, :func:`crs_label`
:mod:`gisnet.io.geometry`          null / wrong-type / invalid geometry, Z/M,
                                   multi-part explode
:mod:`gisnet.io.values`            value maps, units, dtypes, defaults, codes
:mod:`gisnet.io.ids`               unique ids (an id used once is kept; repeats
                                   get the first free ``#k``), loader and graph
:mod:`gisnet.io.extent`            coordinates that do not fit the CRS, features
                                   far from the rest, a layer far from the town
:mod:`gisnet.io.plausibility`      implausible diameters and slopes, unit mix-ups
:mod:`gisnet.io.canonical`         one layer to the canonical schema
                                   (:func:`canonical_layer`): ids, derived
                                   ``public`` / ``active``, working CRS
:mod:`gisnet.io.loading`           town file + overrides + CRS policy + profile
                                   -> :class:`~gisnet.town.Town` (:func:`load_town`)
:mod:`gisnet.io.postgis`           PostGIS sources read with psycopg (read-only),
                                   :func:`redact` of passwords
=================================  ================================================

Writing results is :mod:`gisnet.output`.
"""

from __future__ import annotations

from .canonical import canonical_layer, empty_layer
from .ids import unique_ids
from .loading import load_town
from .notes import MAX_IDS_IN_MESSAGE
from .reading import ENGINES, LayerInfo, crs_label, read_layer, read_plant_flows
from .values import NONNEGATIVE

__all__ = [
    "ENGINES",
    "MAX_IDS_IN_MESSAGE",
    "NONNEGATIVE",
    "LayerInfo",
    "canonical_layer",
    "crs_label",
    "empty_layer",
    "load_town",
    "read_layer",
    "read_plant_flows",
    "unique_ids",
]
