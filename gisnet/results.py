"""Typed results of the analyses: frames plus totals, one shape for every analysis.

Each analysis returns one of these dataclasses. Every one has

- ``layers()``: result layer name -> (Geo)DataFrame, exactly as written to
  ``gisnet-results.gpkg`` (see docs/results.md);
- ``totals``: headline figures (plain ``int``/``float``/``str``/``dict``),
  the numbers ``gisnet run`` prints and ``GET /town`` returns.

:mod:`gisnet.pipeline` sequences the analyses and collects these; the CLI and
the HTTP service read them and serialise them with one serializer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import pandas as pd


def _present(d: dict[str, pd.DataFrame | None]) -> dict[str, pd.DataFrame]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass
class ObligationsResult:
    """Who must connect (:mod:`gisnet.obligations`).

    Attributes
    ----------
    obligations
        One row per parcel: status, distance, deadline, section.
    evidence
        The measured lines (parcel or building to the nearest eligible main).
    connection_zone
        The area within the ordinance's distance of an eligible main (None when
        not computed, e.g. for a selection of parcels).
    frontage
        Front footage of each parcel on each eligible main (None when not computed).
    """

    obligations: gpd.GeoDataFrame
    evidence: gpd.GeoDataFrame
    connection_zone: gpd.GeoDataFrame | None = None
    frontage: pd.DataFrame | None = None

    def layers(self) -> dict[str, pd.DataFrame]:
        return _present({
            "obligations": self.obligations,
            "obligation_evidence": self.evidence,
            "connection_zone": self.connection_zone,
            "frontage": self.frontage,
        })

    @property
    def totals(self) -> dict[str, Any]:
        ob = self.obligations
        if ob is None or not len(ob):
            return {}
        return {str(k): int(v) for k, v in ob["status"].value_counts().sort_index().items()}


@dataclass
class ControlResult:
    """Connection points and control manholes (:mod:`gisnet.tracing`, :mod:`gisnet.sampling`).

    Attributes
    ----------
    control_manholes
        One row per connection point: the control manhole, path length, outlet.
    control_paths
        The path from each connection point to its control manhole (None when
        not built, e.g. ``gisnet sampling-plan --no-paths``).
    points
        The connection points (taps) of every building, parcel and user.
    index
        The :class:`gisnet.tracing.DownstreamIndex` the answers came from
        (reused by traces, what-if and the service).
    sampling_plan
        Industrial users with their control manhole and SIU status (None when
        the town has no users layer).
    """

    control_manholes: gpd.GeoDataFrame
    control_paths: gpd.GeoDataFrame | None
    points: gpd.GeoDataFrame
    index: Any
    sampling_plan: gpd.GeoDataFrame | None = None

    def layers(self) -> dict[str, pd.DataFrame]:
        return _present({
            "control_manholes": self.control_manholes,
            "control_paths": self.control_paths,
            "sampling_plan": self.sampling_plan,
        })

    @property
    def totals(self) -> dict[str, Any]:
        cm = self.control_manholes
        out: dict[str, Any] = {}
        if cm is not None and len(cm):
            out["control_manholes"] = {
                "connection_points": len(cm),
                "distinct_manholes": int(cm["control_manhole_id"].nunique()),
                "unresolved": int(cm["control_manhole_id"].isna().sum()),
            }
        sp = self.sampling_plan
        if sp is not None and len(sp) and "siu" in sp:
            out["industrial_users"] = {"users": len(sp),
                                       "siu": int(sp["siu"].fillna(False).astype(bool).sum())}
        return out


@dataclass
class Unavailable:
    """An analysis (or part of one) that could not be answered, and why.

    Attributes
    ----------
    analysis
        The step or result concerned: ``obligations``, ``tracing``,
        ``capacity`` (the step failed), ``sampling_plan`` (no industrial
        users), ``plants`` (no plants to check).
    reason
        Why, in a sentence.
    """

    analysis: str
    reason: str
