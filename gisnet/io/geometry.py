"""Geometry clean-up of one layer: null, Z/M, wrong type, invalid, multi-part.

Two stages, each returning a small dataclass:

:func:`clean_geometry`
    drops null/empty geometries and geometries of a type the role does not
    take, drops Z/M, repairs invalid polygons (``make_valid``) and drops other
    invalid geometries; a layer where *every* feature has no geometry or the
    wrong type is a :class:`~gisnet.errors.LayerError`.
:func:`explode_parts`
    merges multi-lines whose parts join end to end, then splits multi-points
    and multi-lines into single parts (ids suffixed ``:1``, ``:2`` ...).
    Polygons keep their parts.

Every change is reported (role, count, ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from .. import schema
from ..errors import LayerError
from .notes import LayerNotes, ids_text

#: Geometry type -> family (what :data:`gisnet.schema.GEOMETRY` names).
GEOMETRY_FAMILY = {
    "Point": "point", "MultiPoint": "point",
    "LineString": "line", "MultiLineString": "line", "LinearRing": "line",
    "Polygon": "polygon", "MultiPolygon": "polygon",
    "GeometryCollection": "collection",
}
_MULTIPOINT, _MULTILINESTRING = 4, 5  # shapely type ids


@dataclass
class CleanGeometry:
    """What :func:`clean_geometry` made of a layer's geometries.

    Attributes
    ----------
    geoms
        One geometry per source row: 2-D, invalid polygons repaired.
    keep
        Rows to keep (boolean, per source row).
    geometry_types
        Geometry type -> count, as read (``"None"`` for null geometry).
    """

    geoms: np.ndarray
    keep: np.ndarray
    geometry_types: dict[str, int]


@dataclass
class Parts:
    """Single-part geometries from :func:`explode_parts`.

    Attributes
    ----------
    geoms
        One geometry per output row.
    ids
        Feature id of each row (a split feature's parts suffixed ``:1``, ``:2`` ...).
    pos
        The source row of each output row.
    """

    geoms: np.ndarray
    ids: pd.Series
    pos: np.ndarray


def clean_geometry(geometry: gpd.GeoSeries, ids: pd.Series, path: Path | str,
                   notes: LayerNotes) -> CleanGeometry:
    """Check and repair the geometries of one layer (role ``notes.role``).

    Parameters
    ----------
    geometry
        The layer's geometry column, as read (RangeIndex).
    ids
        Feature id of each row, for findings.
    path
        The source, for errors.
    notes
        Findings go here.

    Raises
    ------
    LayerError
        No feature has a geometry (and the role needs one), or every feature
        has a geometry type the role does not take.
    """
    role = notes.role
    allowed = schema.GEOMETRY[role]
    geoms = np.asarray(geometry.array, dtype=object)
    tnames = pd.Series(geometry.geom_type).fillna("None")
    types = {str(k): int(v) for k, v in tnames.value_counts().items()}
    # null / empty
    null = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    if null.all() and "none" not in allowed:
        want = " or ".join(allowed)
        raise LayerError(f"no feature has a geometry ({role} must be {want}s)",
                         path=path, layer=role)
    if null.any() and "none" not in allowed:
        notes.add("null_geometry", "warning",
                  f"{int(null.sum())} features with null or empty geometry dropped: "
                  f"{ids_text(ids[null])}", ids[null])
        keep = ~null
    else:
        keep = np.ones(len(geoms), bool)
    # Z / M
    zm = shapely.has_z(geoms) | shapely.has_m(geoms)
    if zm.any():
        notes.add("z_dropped", "info",
                  f"Z/M coordinates dropped from {int(zm.sum())} features (2-D analysis)")
        geoms = shapely.force_2d(geoms)
    # family
    codes, kinds_seen = pd.factorize(tnames)  # (a handful of type names per layer)
    fam = np.array([GEOMETRY_FAMILY.get(t, "none") for t in kinds_seen], dtype=object)[codes]
    wrong = keep & ~null & ~np.isin(fam, list(allowed))
    if wrong.any():
        kinds = ", ".join(sorted(set(tnames[wrong])))
        want = " or ".join(f"{a}s" for a in allowed)
        if wrong.sum() == (keep & ~null).sum():
            first = ids[np.flatnonzero(wrong)[0]]
            raise LayerError(f"{kinds} geometries where {role} must be {want} "
                             f"(all {int(wrong.sum())} features, e.g. {first})",
                             path=path, layer=role)
        notes.add("wrong_geometry_type", "warning",
                  f"{int(wrong.sum())} features of type {kinds} dropped ({role} must be "
                  f"{want}): {ids_text(ids[wrong])}", ids[wrong])
        keep &= ~wrong
    # validity
    bad = keep & ~null & ~shapely.is_valid(geoms)
    if bad.any():
        poly = bad & (fam == "polygon")
        if poly.any():
            fixed = shapely.make_valid(geoms[poly], method="structure", keep_collapsed=False)
            geoms[poly] = fixed
            gone = shapely.is_empty(fixed)
            notes.add("invalid_geometry_repaired", "warning",
                      f"{int(poly.sum())} invalid polygons repaired with make_valid: "
                      f"{ids_text(ids[poly])}", ids[poly])
            if gone.any():
                idx = np.flatnonzero(poly)[gone]
                keep[idx] = False
                notes.add("invalid_geometry_dropped", "warning",
                          f"{len(idx)} polygons collapsed to nothing when repaired, dropped: "
                          f"{ids_text(ids[idx])}", ids[idx])
        other = bad & (fam != "polygon")
        if other.any():
            keep &= ~other
            notes.add("invalid_geometry_dropped", "warning",
                      f"{int(other.sum())} degenerate geometries (e.g. a line with fewer "
                      f"than two distinct points) dropped: {ids_text(ids[other])}", ids[other])
    return CleanGeometry(geoms, keep, types)


def explode_parts(clean: CleanGeometry, ids: pd.Series, notes: LayerNotes) -> Parts:
    """The kept geometries as single parts (multi-points and multi-lines split).

    Parts of a multi-line that join end to end in the same direction are first
    merged into one line (``line_merge(directed=True)``).
    """
    pos = np.flatnonzero(clean.keep)
    geoms = clean.geoms[clean.keep]
    ids = ids[clean.keep].reset_index(drop=True)
    if len(geoms) == 0:
        return Parts(geoms, ids, pos)
    tid = shapely.get_type_id(geoms)
    multiline = tid == _MULTILINESTRING
    if multiline.any():  # parts that join end to end (same direction) are one line
        geoms[multiline] = shapely.line_merge(geoms[multiline], directed=True)
        tid = shapely.get_type_id(geoms)
    multi = np.isin(tid, (_MULTIPOINT, _MULTILINESTRING))
    if not multi.any():
        return Parts(geoms, ids, pos)
    several = multi & (shapely.get_num_geometries(geoms) > 1)
    parts, idx = shapely.get_parts(geoms, return_index=True)
    partno = np.arange(len(idx)) - np.searchsorted(idx, idx)
    new_ids = ids.to_numpy(dtype=object)[idx].copy()
    sev = several[idx]
    new_ids[sev] = [f"{i}:{p + 1}" for i, p in zip(new_ids[sev], partno[sev], strict=True)]
    if several.any():
        notes.add("multipart_exploded", "info",
                  f"{int(several.sum())} multi-part features split into single parts "
                  f"(ids suffixed :1, :2 ...): {ids_text(ids[several])}", ids[several])
    return Parts(parts, pd.Series(new_ids, dtype="str"), pos[idx])
