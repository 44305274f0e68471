"""Findings: every problem or decision gisnet reports about a town's data.

A :class:`Report` collects :class:`Finding` objects while layers are read,
validated and turned into a graph; nothing is silently fixed or dropped. The
report becomes the ``quality`` layer of the results GeoPackage (one row per
finding), the text of ``gisnet validate`` and the summary of ``gisnet run``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import geopandas as gpd
from shapely.geometry.base import BaseGeometry

log = logging.getLogger(__name__)

SEVERITIES = ("info", "warning", "error")


@dataclass
class Finding:
    """One problem found, or one decision made, about the input.

    Attributes
    ----------
    kind
        Machine-readable kind, e.g. ``duplicate_id``, ``gap_snapped``, ``cycle``.
    severity
        ``info`` (a decision worth knowing), ``warning`` (usable but flawed) or
        ``error`` (the layer or town is not usable).
    message
        One plain sentence a person can act on.
    layer
        Layer role concerned (``mains``, ``parcels`` ...), if any.
    feature_id
        Id(s) of the feature(s) concerned; several ids are comma-separated.
    geometry
        Where on the map, in the town's working CRS, if known.
    """

    kind: str
    severity: str
    message: str
    layer: str | None = None
    feature_id: str | None = None
    geometry: BaseGeometry | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("geometry")
        return d


_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


@dataclass
class Report:
    """An ordered collection of findings."""

    findings: list[Finding] = field(default_factory=list)
    #: Log each finding as it is added (False: kept quiet until :meth:`replay`
    #: gives it to a logging report, in order, from one thread).
    logs: bool = field(default=True, repr=False, compare=False)

    def add(
        self,
        kind: str,
        severity: str,
        message: str,
        *,
        layer: str | None = None,
        feature_id: object | None = None,
        geometry: BaseGeometry | None = None,
    ) -> Finding:
        """Record a finding, log it, and return it."""
        fid = None if feature_id is None else str(feature_id)
        f = Finding(kind, severity, message, layer, fid, geometry)
        self.findings.append(f)
        if self.logs:
            log.log(_LEVELS[severity], "%s", message)
        return f

    def replay(self, other: Report) -> None:
        """Add ``other``'s findings in their order, logging them as :meth:`add` does
        (``other`` made quietly on another thread: ``Report(logs=False)``)."""
        for f in other.findings:
            self.findings.append(f)
            if self.logs:
                log.log(_LEVELS[f.severity], "%s", f.message)

    def add_once(self, kind: str, severity: str, message: str, *, layer: str | None = None,
                 feature_id: object | None = None,
                 geometry: BaseGeometry | None = None) -> Finding:
        """:meth:`add`, unless the same finding (kind, layer, feature, message) is there
        already: an analysis run again on the same loaded town (the HTTP service, a
        second ``analyse``) reports what it finds once."""
        fid = None if feature_id is None else str(feature_id)
        for f in self.of_kind(kind):
            if f.layer == layer and f.feature_id == fid and f.message == message:
                return f
        return self.add(kind, severity, message, layer=layer, feature_id=feature_id,
                        geometry=geometry)

    def extend(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def of_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def counts(self) -> dict[str, int]:
        """Number of findings per kind."""
        return dict(Counter(f.kind for f in self.findings))

    def to_gdf(self, crs: Any) -> gpd.GeoDataFrame:
        """The report as a GeoDataFrame: ``finding_id, kind, severity, message,
        layer, feature_id, geometry`` (geometry may be empty)."""
        rows = [f.as_dict() for f in self.findings]
        geoms = [f.geometry for f in self.findings]
        gdf = gpd.GeoDataFrame(
            rows,
            columns=["kind", "severity", "message", "layer", "feature_id"],
            geometry=gpd.GeoSeries(geoms, crs=crs),
            crs=crs,
        )
        gdf.insert(0, "finding_id", [f"Q{i + 1:05d}" for i in range(len(gdf))])
        return gdf
