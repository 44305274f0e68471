"""Do a layer's coordinates fit its CRS, and does each feature lie with the rest?

Two checks from the data's own evidence:

:func:`check_crs_fits`
    most of a layer's features lie outside the area of use of the CRS its
    source declares (a ``.prj`` naming EPSG:4326 over state-plane feet): the
    CRS is wrong, a :class:`~gisnet.errors.CRSError` naming the file and CRS.
:func:`far_features`
    single features with a vertex far outside that area, or far from the rest
    of the layer (a vertex typed as ``1e20``, a point at ``0, 0``): they are
    excluded by the loader with a ``coordinates_out_of_range`` finding.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer

from ..errors import CRSError
from ..units import feet_per_unit

#: The CRS's area of use is widened by this many times its own width and height
#: on each side before a feature counts as outside it (data near a zone's edge,
#: a neighbouring zone's data, are still fine).
AREA_MARGIN = 1.0
#: A feature is far from the rest of its layer when a vertex lies beyond the
#: box of the middle 90 % of the layer's features, widened on each side by this
#: many times the box's larger side.
SPREAD_MARGIN = 20.0
#: Layers with fewer features are not checked against their own spread.
MIN_FEATURES_FOR_SPREAD = 20
#: The box's side counts as at least this (feet; 0.03 degrees in a geographic
#: CRS), so a tight cluster (a handful of industrial users on one block) does not
#: make a feature a few miles away "far": far then means over 40 miles.
MIN_SPREAD_SIDE_FT = 2 * 5280.0


def area_box(crs: Any) -> tuple[float, float, float, float] | None:
    """The CRS's area of use in its own coordinates, widened by :data:`AREA_MARGIN`;
    None when the CRS declares none or it cannot be projected."""
    return _area_box(CRS.from_user_input(crs).to_wkt())


@lru_cache(maxsize=64)
def _area_box(wkt: str) -> tuple[float, float, float, float] | None:
    c = CRS.from_wkt(wkt)
    if c.is_geographic:
        w, s, e, n = -180.0, -90.0, 180.0, 90.0
        box = (w - 1.0, s - 0.5, e + 180.0, n + 0.5)  # 0..360 longitudes are fine too
        return box
    aou = c.area_of_use
    if aou is None:
        return None
    try:
        t = Transformer.from_crs("EPSG:4326", c.to_2d() if len(c.axis_info) > 2 else c,
                                 always_xy=True)
        x0, y0, x1, y1 = t.transform_bounds(aou.west, aou.south, aou.east, aou.north,
                                            densify_pts=21)
    except Exception:  # pyproj cannot project the area (a world-wide CRS ...)
        return None
    if not np.isfinite([x0, y0, x1, y1]).all() or x1 <= x0 or y1 <= y0:
        return None
    dx, dy = (x1 - x0) * AREA_MARGIN, (y1 - y0) * AREA_MARGIN
    return (x0 - dx, y0 - dy, x1 + dx, y1 + dy)


def _outside(bounds: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    x0, y0, x1, y1 = box
    with np.errstate(invalid="ignore"):
        inside = ((bounds[:, 0] >= x0) & (bounds[:, 1] >= y0)
                  & (bounds[:, 2] <= x1) & (bounds[:, 3] <= y1))
    known = ~np.isnan(bounds).any(axis=1)
    return known & ~inside


def check_crs_fits(geoms: np.ndarray, crs: Any, path: Path | str, role: str | None,
                   by: str | None = None) -> None:
    """Raise when most features lie outside the declared CRS's area of use.

    ``by`` says who named the CRS, for the message (default: the source).

    Raises
    ------
    CRSError
        Naming the file, the CRS and the coordinates found.
    """
    if crs is None or len(geoms) == 0:
        return
    box = area_box(crs)
    if box is None:
        return
    b = shapely.bounds(np.asarray(geoms, dtype=object))
    known = ~np.isnan(b).any(axis=1)
    if not known.any():
        return
    out = _outside(b, box)
    if out.sum() * 2 <= known.sum():
        return
    x, y = np.nanmedian(b[known][:, 0]), np.nanmedian(b[known][:, 1])
    c = CRS.from_user_input(crs)
    code = c.to_epsg()
    label = f"EPSG:{code} ({c.name})" if code else c.name
    aou = c.area_of_use
    where = f" (area of use: {aou.name})" if aou is not None and aou.name else ""
    if by is None:
        by = "its .prj declares" if str(path).lower().endswith(".shp") else "the source declares"
    raise CRSError(f"coordinates do not fit the CRS {by}, {label}"
                   f"{where}: {int(out.sum())} of {int(known.sum())} features lie far "
                   f"outside it (typical coordinate {x:,.0f}, {y:,.0f}); name the right CRS",
                   path=path, layer=role)


def _min_side(crs: Any) -> float:
    """:data:`MIN_SPREAD_SIDE_FT` in the CRS's units."""
    if crs is None:
        return 0.0
    c = CRS.from_user_input(crs)
    if c.is_geographic:
        return 0.03
    try:
        return MIN_SPREAD_SIDE_FT / feet_per_unit(c)
    except CRSError:
        return 0.0


def far_features(geoms: np.ndarray, crs: Any) -> tuple[np.ndarray, str]:
    """Features with a vertex far outside the CRS's area of use or far from the rest.

    Parameters
    ----------
    geoms
        The layer's geometries (object array; None allowed), in ``crs``.
    crs
        Their CRS.

    Returns
    -------
    far : numpy.ndarray
        Boolean per geometry.
    why : str
        What the far ones are far from, for the finding's message.
    """
    geoms = np.asarray(geoms, dtype=object)
    far = np.zeros(len(geoms), bool)
    if len(geoms) == 0:
        return far, ""
    b = shapely.bounds(geoms)
    nonfinite = ~np.isnan(b).any(axis=1) & ~np.isfinite(b).all(axis=1)
    box = area_box(crs) if crs is not None else None
    outside = _outside(b, box) if box is not None else np.zeros(len(geoms), bool)
    known = ~np.isnan(b).any(axis=1) & ~outside & ~nonfinite
    spread = np.zeros(len(geoms), bool)
    if known.sum() >= MIN_FEATURES_FOR_SPREAD:
        cx = (b[known, 0] + b[known, 2]) / 2
        cy = (b[known, 1] + b[known, 3]) / 2
        x0, x1 = np.percentile(cx, [5, 95])
        y0, y1 = np.percentile(cy, [5, 95])
        side = max(x1 - x0, y1 - y0, _min_side(crs))
        if side > 0:
            m = side * SPREAD_MARGIN
            spread = _outside(b, (x0 - m, y0 - m, x1 + m, y1 + m))
    far = nonfinite | outside | spread
    why = []
    if (nonfinite | outside).any():
        why.append("outside the area of use of the layer's CRS")
    if (spread & ~outside & ~nonfinite).any():
        why.append(f"more than {SPREAD_MARGIN:g} times the layer's extent away from the "
                   "rest of the layer")
    return far, " or ".join(why)


#: A layer is far from the others when its middle lies further from theirs than
#: this many times the larger extent of any of them.
TOWN_MARGIN = 10.0


def layer_far_from_town(layers: dict[str, Any]) -> tuple[str, float] | None:
    """The one layer that lies far from all the others (its CRS is likely wrong).

    Parameters
    ----------
    layers
        Role -> GeoDataFrame, all in the working CRS.

    Returns
    -------
    (role, distance) or None
        The odd layer and the distance (working CRS units) from its middle to
        the middle of the others; None when every layer lies with the rest, or
        fewer than three layers have geometry (no majority to judge by).
    """
    mids: dict[str, tuple[float, float, float]] = {}
    for role, g in layers.items():
        geoms = np.asarray(g.geometry.array, dtype=object)
        b = shapely.bounds(geoms)
        b = b[np.isfinite(b).all(axis=1)]
        if len(b) < 3:  # one plant far away may be right: judge layers, not single points
            continue
        cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
        x0, x1 = np.percentile(cx, [5, 95])
        y0, y1 = np.percentile(cy, [5, 95])
        mids[role] = (float(np.median(cx)), float(np.median(cy)), max(x1 - x0, y1 - y0))
    if len(mids) < 3:
        return None
    worst: tuple[str, float] | None = None
    for role, (x, y, size) in mids.items():
        others = [v for r, v in mids.items() if r != role]
        ox = float(np.median([v[0] for v in others]))
        oy = float(np.median([v[1] for v in others]))
        scale = max([size, *(v[2] for v in others)])
        d = float(np.hypot(x - ox, y - oy))
        if scale > 0 and d > TOWN_MARGIN * scale and (worst is None or d > worst[1]):
            worst = (role, d)
    return worst
