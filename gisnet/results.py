"""Typed results of the analyses: frames plus totals, one shape for every analysis.

Each analysis returns one of these dataclasses. Every one has

- ``layers()``: result layer name -> (Geo)DataFrame, exactly as written to
  ``gisnet-results.gpkg`` (see docs/results.md);
- ``totals``: headline figures (plain ``int``/``float``/``str``/``dict``),
  the numbers ``gisnet run`` prints and ``GET /town`` returns.

:mod:`gisnet.pipeline` sequences the analyses and collects these; the CLI and
the HTTP service read them and serialise them with one serializer.

Their ``repr`` is a few lines of counts (and a CRS's EPSG code and name, never
its WKT), for a notebook: :func:`short_repr`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import pandas as pd


def _present(d: dict[str, pd.DataFrame | None]) -> dict[str, pd.DataFrame]:
    return {k: v for k, v in d.items() if v is not None}


class LayerDict(dict[str, pd.DataFrame]):
    """Result layers by name (a dict), also callable for the older spelling:
    ``res.layers["obligations"]`` and ``res.layers()["obligations"]`` are the same."""

    def __call__(self) -> LayerDict:
        return self

    def __repr__(self) -> str:
        return f"LayerDict({rows_text(self)})"


def crs_text(crs: Any) -> str:
    """``EPSG:2260 (NAD83 / New York East (ftUS))``, or the CRS's name; never WKT."""
    if crs is None:
        return "no CRS"
    from pyproj import CRS

    c = CRS.from_user_input(crs)
    code = c.to_epsg()
    return f"EPSG:{code} ({c.name})" if code else c.name


def rows_text(layers: Mapping[str, Any]) -> str:
    """``name n, name n, ...``: the row count of each layer (None ones left out)."""
    return ", ".join(f"{k} {len(v)}" for k, v in layers.items() if v is not None) or "none"


def counts_text(values: Iterable[Any]) -> str:
    """``a 3, b 1``: how often each value occurs (missing ones left out)."""
    s = pd.Series(list(values), dtype=object).dropna().astype(str).value_counts().sort_index()
    return ", ".join(f"{k} {int(v)}" for k, v in s.items()) or "none"


def short_repr(title: str, lines: Iterable[str]) -> str:
    """``<title`` then indented lines, ``>`` at the end: a repr of a few lines."""
    body = "".join(f"\n  {line}" for line in lines)
    return f"<{title}{body}>"


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

    def __repr__(self) -> str:
        ob = self.obligations
        n = 0 if ob is None else len(ob)
        status = counts_text(ob["status"]) if n and "status" in ob.columns else "none"
        return short_repr(f"ObligationsResult: {n} parcels", [
            f"status: {status}",
            "layers: " + rows_text(self.layers())])

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
    #: Makes ``control_paths`` when they were asked for later (``paths="later"``).
    make_paths: Any = field(default=None, repr=False, compare=False)

    def paths_now(self) -> None:
        """Make the ``control_paths`` asked for later (nothing when there are none to make)."""
        if self.make_paths is not None:
            make, self.make_paths = self.make_paths, None
            self.control_paths = make()

    def layers(self) -> dict[str, pd.DataFrame]:
        return _present({
            "control_manholes": self.control_manholes,
            "control_paths": self.control_paths,
            "sampling_plan": self.sampling_plan,
        })

    def __repr__(self) -> str:
        t = self.totals
        cm = t.get("control_manholes", {})
        lines = [f"{cm.get('connection_points', 0)} connection points -> "
                 f"{cm.get('distinct_manholes', 0)} control manholes "
                 f"({cm.get('unresolved', 0)} unresolved)"]
        if "industrial_users" in t:
            iu = t["industrial_users"]
            lines.append(f"industrial users {iu['users']}, significant {iu['siu']}")
        lines.append("layers: " + rows_text(self.layers()))
        return short_repr("ControlResult", lines)

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
            iu = (sp["industrial_user"].fillna(True).astype(bool) if "industrial_user" in sp
                  else pd.Series(True, index=sp.index))
            out["industrial_users"] = {"users": int(iu.sum()),
                                       "siu": int(sp["siu"].fillna(False).astype(bool).sum())}
            if (~iu).any():  # users the layer marks not industrial: dischargers
                out["industrial_users"]["dischargers"] = int((~iu).sum())
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


def quality_totals(quality: pd.DataFrame) -> dict[str, Any]:
    """Findings of a quality layer (columns ``kind``, ``severity``) counted.

    Returns
    -------
    dict
        ``findings`` (count), ``by_severity`` and ``by_kind`` (name -> count,
        sorted by name).
    """
    n = len(quality)
    if not n:
        return {"findings": 0, "by_severity": {}, "by_kind": {}}
    return {
        "findings": n,
        "by_severity": {str(k): int(v) for k, v in
                        quality.groupby(quality["severity"].astype(str)).size().items()},
        "by_kind": {str(k): int(v) for k, v in
                    quality.groupby(quality["kind"].astype(str)).size().items()},
    }
