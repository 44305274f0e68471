"""Mains not known to be public sewers in service, and the parcels near them.

A main counts for a connection only when it is known to be a public sewer in
service (:func:`gisnet.rules.is_eligible_for_connection`). A main whose owner
value ("developer", "homeowners association") or status value ("under
construction", "not accepted") the loader did not recognise is kept out of the
measuring, but a parcel within the distance of one, and of no known eligible
main, is not simply "not required": the rule table sends it to ``review``
naming the values (rule ``main_not_known_public`` of
:data:`gisnet.obligations.deciding.RULES`). A parcel within the distance of a
known eligible main is decided by that main, whatever lies nearer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import shapely

from ..rules import is_undetermined_for_connection, owner_unrecognised, status_unrecognised
from ..town import Town
from .facts import Ordinance, ParcelFacts
from .spatial import nearest


@dataclass
class UnknownMains:
    """The mains that would count but for an unrecognised owner or status value.

    Attributes
    ----------
    ids
        Their ``main_id`` as text (positions 0..k-1).
    geoms
        Their geometries.
    values
        What is not known of each, e.g. ``owner 'developer'`` or
        ``owner 'developer', status 'under construction'``.
    rank
        Rank of each id in text order (ties go to the lowest id).
    """

    ids: np.ndarray
    geoms: np.ndarray
    values: np.ndarray
    rank: np.ndarray

    @classmethod
    def of(cls, town: Town) -> UnknownMains:
        """The unknown mains of the town's mains layer (with a geometry)."""
        mains = town.layers["mains"].reset_index(drop=True)
        g = mains.geometry.values
        has_geometry = ~(shapely.is_missing(g) | shapely.is_empty(g))
        keep = is_undetermined_for_connection(
            mains, town.profile.connection.eligible_kinds) & has_geometry
        M = mains[keep].reset_index(drop=True)
        ids = M["main_id"].astype(str).to_numpy()
        return cls(ids, np.asarray(M.geometry.values, dtype=object), value_texts(M),
                   np.argsort(np.argsort(ids, kind="stable"), kind="stable"))

    def __len__(self) -> int:
        return len(self.ids)


def value_texts(mains: pd.DataFrame) -> np.ndarray:
    """For each main, its unrecognised owner and status values as text."""
    n = len(mains)
    out = np.full(n, "", dtype=object)
    if not n:
        return out
    o_unk = owner_unrecognised(mains)
    s_unk = status_unrecognised(mains)
    owner = mains["owner"].astype(object).to_numpy() if "owner" in mains else [None] * n
    status = mains["status"].astype(object).to_numpy() if "status" in mains else [None] * n
    for k in range(n):
        parts = []
        if o_unk[k]:
            parts.append(f"owner {str(owner[k]).strip()!r}")
        if s_unk[k]:
            parts.append(f"status {str(status[k]).strip()!r}")
        out[k] = ", ".join(parts)
    return out


@dataclass
class NearestUnknown:
    """The nearest unknown main of each parcel.

    Attributes
    ----------
    main
        Position in :class:`UnknownMains` (-1: none).
    distance_ft
        Its distance from what the profile measures (ft; NaN where none).
    """

    main: np.ndarray
    distance_ft: np.ndarray


def nearest_unknown(unknown: UnknownMains, geoms: np.ndarray, rows: np.ndarray, n: int,
                    ft_per_unit: float, threads: int) -> NearestUnknown:
    """The nearest unknown main of each of ``n`` parcels.

    Parameters
    ----------
    unknown
        The unknown mains.
    geoms, rows
        Every geometry measured (the parcel, or each of its buildings) and the
        parcel row it belongs to; a parcel's distance is that of its nearest
        geometry.
    n
        Number of parcels.
    ft_per_unit
        Feet per CRS unit.
    threads
        Threads for the nearest search.
    """
    main = np.full(n, -1, dtype=np.int64)
    dist = np.full(n, np.nan)
    if not len(unknown) or not len(geoms):
        return NearestUnknown(main, dist)
    j, d = nearest(geoms, unknown.geoms, unknown.rank, threads=threads)
    found = j >= 0
    if not found.any():
        return NearestUnknown(main, dist)
    frame = pd.DataFrame({"row": np.asarray(rows)[found], "j": j[found],
                          "d": d[found] * ft_per_unit})
    frame = frame.sort_values(["row", "d", "j"], kind="stable").drop_duplicates("row")
    r = frame["row"].to_numpy(dtype=np.int64)
    main[r] = frame["j"].to_numpy(dtype=np.int64)
    dist[r] = frame["d"].to_numpy(dtype=float)
    return NearestUnknown(main, dist)



# --------------------------------------------------------------------------- reason texts


def _ft(x: float) -> str:
    return "? ft" if np.isnan(x) else f"{x:.1f} ft"


def unknown_main_text(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """``U (owner 'developer')`` of the parcels ``ix``."""
    j = f.unknown_main[ix]
    out = np.empty(len(ix), dtype=object)
    out[:] = [f"{f.unknown_ids[k]} ({f.unknown_values[k]})" if k >= 0 else "?"
              for k in j.tolist()]
    return out


def unknown_distance_text(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """The distance of the nearest unknown main of the parcels ``ix``."""
    out = np.empty(len(ix), dtype=object)
    out[:] = [_ft(d) for d in f.unknown_distance_ft[ix].tolist()]
    return out


def nearest_text(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """``main M is D from the parcel`` of the parcels ``ix``: the nearest eligible main,
    else the nearest main not known to be public and in service, else none."""
    out = np.empty(len(ix), dtype=object)
    texts = []
    for p in ix.tolist():
        j, u = int(f.main[p]), int(f.unknown_main[p])
        if f.measured[p] and j >= 0:
            texts.append(f"main {f.main_ids[j]} is {_ft(float(f.distance_ft[p]))} from the "
                         "parcel")
        elif u >= 0:
            texts.append(f"main {f.unknown_ids[u]}, not known to be a public sewer in "
                         f"service ({f.unknown_values[u]}), is "
                         f"{_ft(float(f.unknown_distance_ft[p]))} from the parcel")
        else:
            texts.append("no eligible main was measured to")
    out[:] = texts
    return out


def known_note(f: ParcelFacts, o: Ordinance, ix: np.ndarray) -> np.ndarray:
    """Where the parcel was measured to an eligible main beyond the distance, say so."""
    out = np.empty(len(ix), dtype=object)
    out[:] = [(f" The nearest main known to be a public sewer in service, "
               f"{f.main_ids[f.main[p]]}, is {_ft(float(f.distance_ft[p]))} away, beyond "
               f"{o.distance_ft:g} ft.") if f.measured[p] and f.main[p] >= 0 else ""
              for p in ix.tolist()]
    return out
