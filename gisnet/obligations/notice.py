"""The area a rule binds, and when notice to connect may be given.

Poughkeepsie § 168-22.2G binds the owners of buildings "situated within the
area" (the Fourth Ward Sewer Improvement Area) to connect "within 30 days after
the date of official notice to do so", and "such notice shall be given only when
it shall be necessary to eliminate a public health hazard or to promote a
highway improvement program". Berlin's existing-plumbing paragraph requires "a
resident" to connect when "in the City's opinion, the resident's septic system
constitutes a health hazard".

The facts read here, all per parcel:

- in the district: the parcel's representative point lies in a polygon of the
  town's ``district`` layer (no such layer: the whole town is the district,
  said once as a ``district_assumed`` finding);
- ``notice_date``, ``health_hazard`` (parcels columns);
- highway improvement program: the parcels column ``highway_program``, or the
  parcel's representative point in a polygon of the ``highway_program`` layer;
- residential: the building's ``use`` (or, without one, the parcel's
  ``land_use``) is one of the profile's ``residential_uses`` (a use beginning
  with one of them and ``_``, e.g. ``residential_rear``, counts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import shapely
from shapely import STRtree

from ..town import Town
from .spatial import flag_values


@dataclass
class NoticeFacts:
    """Per-parcel facts on the district, notice, hazard, highway program and residence.

    Attributes
    ----------
    district_given
        The town gives a ``district`` layer.
    in_district
        The parcel is in the district (all True without a district layer).
    notice_date
        Date official notice to connect was served (datetime64[ms], NaT: none recorded).
    hazard
        The parcels layer records a (public) health hazard.
    highway
        The parcel is in a highway improvement program (flag or area).
    residential, use_known
        The building (or lot) is a residence, and whether its use is known.
    """

    district_given: bool
    in_district: np.ndarray
    notice_date: np.ndarray
    hazard: np.ndarray
    highway: np.ndarray
    residential: np.ndarray
    use_known: np.ndarray


def in_polygons(town: Town, role: str, pgeom: np.ndarray) -> np.ndarray | None:
    """Parcels whose representative point lies in a polygon of layer ``role`` (None: no layer)."""
    layer = town.layer(role)
    if layer is None:
        return None
    out = np.zeros(len(pgeom), dtype=bool)
    g = np.asarray(layer.geometry.values, dtype=object)
    g = g[~(shapely.is_missing(g) | shapely.is_empty(g))]
    ok = ~(shapely.is_missing(pgeom) | shapely.is_empty(pgeom))
    if not len(g) or not ok.any():
        return out
    pts = shapely.point_on_surface(pgeom[ok])
    pi, _ = STRtree(g).query(pts, predicate="intersects")
    idx = np.flatnonzero(ok)
    out[idx[np.unique(pi)]] = True
    return out


def is_residential(uses: np.ndarray, land_use: np.ndarray, residential_uses: tuple[str, ...]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Residence by building use, else by land use; and whether either is known."""
    res = tuple(u.strip().lower() for u in residential_uses)

    def test(v: object) -> bool:
        s = str(v).strip().lower()
        return s in res or any(s.startswith(r + "_") for r in res)

    use = pd.Series(uses, dtype=object)
    lu = pd.Series(land_use, dtype=object)
    chosen = use.where(use.notna() & (use.astype(str).str.strip() != ""), lu)
    known = chosen.notna().to_numpy()
    codes, values = pd.factorize(chosen[known])
    flags = np.array([test(v) for v in values], dtype=bool)
    out = np.zeros(len(chosen), dtype=bool)
    if len(values):
        out[known] = flags[codes]
    return out, known


def notice_facts(town: Town, P: pd.DataFrame, pgeom: np.ndarray, uses: np.ndarray,
                 land_use: np.ndarray) -> NoticeFacts:
    """The district, notice, hazard, highway and residence facts of the parcels ``P``."""
    n = len(P)
    district = in_polygons(town, "district", pgeom)
    highway = flag_values(P, "highway_program", False)
    area = in_polygons(town, "highway_program", pgeom)
    if area is not None:
        highway = highway | area
    notice = (pd.to_datetime(P["notice_date"]).astype("datetime64[ms]").to_numpy()
              if "notice_date" in P.columns else np.full(n, np.datetime64("NaT", "ms")))
    res_uses = town.profile.connection.residential_uses
    if res_uses is None:  # the profile's rules do not turn on residence
        res, known = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    else:
        res, known = is_residential(uses, land_use, tuple(res_uses))
    return NoticeFacts(
        district_given=district is not None,
        in_district=np.ones(n, dtype=bool) if district is None else district,
        notice_date=notice, hazard=flag_values(P, "health_hazard", False), highway=highway,
        residential=res, use_known=known,
    )


def district_message(town: Town) -> str:
    """The ``district_assumed`` finding's sentence."""
    con = town.profile.connection
    return (f"no district layer: the whole town is taken as the area {con.section} binds "
            "(\"situated within the area\"); give a [layers.district] polygon layer to limit "
            "it")
