"""Validation report: what was read, how it was mapped, and every problem found.

:func:`validate_town` turns a loaded :class:`~gisnet.town.Town` (and,
optionally, a further :class:`~gisnet.report.Report`, e.g. the sewer graph's
findings) into a :class:`ValidationReport`, printed as text by ``gisnet
validate`` or as JSON with ``--json``.

A town is *usable* when no finding is an error. Warnings (flawed but usable
data: a missing diameter, a repaired polygon, a duplicate id) do not make it
unusable. A town with parcels but no mains validates (it can answer nothing
about the sewer, and says so); analyses that need mains check for them.

Input that cannot be read at all never reaches a report: loading raises a
:class:`~gisnet.errors.GisnetError`, which :func:`error_report` turns into an
unusable report with that one message.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import schema
from .errors import GisnetError
from .io import crs_label
from .report import Finding, Report
from .serialize import to_jsonable
from .town import Town
from .worklist import worklist, worklist_lines

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

#: Worklist rows ``gisnet validate`` prints (all are in ``--json`` and the layer).
WORKLIST_SHOWN = 15

log = logging.getLogger(__name__)


#: Findings of one kind printed one per line up to this many; more are grouped.
GROUP_OVER = 3
#: Ids shown for a group of findings.
IDS_SHOWN = 5
#: Longest message printed (longer ones are cut with "...").
MAX_MESSAGE = 240


def _cut(text: str, n: int = MAX_MESSAGE) -> str:
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def grouped_lines(findings: list[Finding]) -> list[str]:
    """Findings as text, kind by kind in order of first appearance: each on
    its own line when a kind has at most :data:`GROUP_OVER`, else one line
    with the count, the first message and the first ids. No line is longer
    than about :data:`MAX_MESSAGE` characters."""
    by_kind: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_kind.setdefault((f.severity, f.kind), []).append(f)
    out = []
    for (sev, kind), fs in by_kind.items():
        if len(fs) <= GROUP_OVER:
            out += [f"  [{sev}] {kind}: {_cut(f.message)}" for f in fs]
            continue
        ids = [i for f in fs for i in (f.feature_id or "").split(",")[:1] if i]
        shown = ", ".join(ids[:IDS_SHOWN]) + (f" and {len(ids) - IDS_SHOWN} more"
                                              if len(ids) > IDS_SHOWN else "")
        out.append(f"  [{sev}] {kind} x{len(fs)}: e.g. {_cut(fs[0].message, 160)}"
                   + (f" (ids: {shown})" if shown else ""))
    return out


@dataclass
class Verdict:
    """Whether one analysis can be answered from the town's data, and what limits it.

    Attributes
    ----------
    analysis
        ``obligations``, ``control manholes`` or ``capacity``.
    answer
        ``yes``, ``partly`` or ``no``.
    limits
        What stops or limits it, in plain words.
    """

    analysis: str
    answer: str
    limits: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"analysis": self.analysis, "answer": self.answer, "limits": self.limits}

    def line(self) -> str:
        why = f": {'; '.join(self.limits)}" if self.limits else ""
        return f"  {self.analysis}: {self.answer}{why}"


def _answer(blocking: list[str], limiting: list[str]) -> str:
    return "no" if blocking else ("partly" if limiting else "yes")


def verdicts(town: Town, findings: list[Finding]) -> list[Verdict]:
    """Can obligations, control manholes and capacity be answered, and what limits them."""
    kinds: dict[str, int] = {}
    for f in findings:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    mains = town.layers.get("mains")
    parcels = town.layers.get("parcels")
    n_mains = 0 if mains is None else len(mains)
    no_parcels = parcels is None or len(parcels) == 0
    out = []
    # obligations
    block, limit = [], []
    if no_parcels:
        block.append("no parcels layer (whose property must connect)")
    if n_mains == 0:
        block.append("no mains layer")
    conn = town.profile.connection
    if conn.measure == "building" and len(town.layers.get("buildings", ())) == 0:
        limit.append(f"{town.profile.id} measures from the building and there is no "
                     "buildings layer")
    if conn.require_abutting and "streets" not in town.layers:
        limit.append("no streets layer: whether a property abuts a sewered street is decided "
                     "from the parcel fabric (the gaps between parcels are the streets)")
    out.append(Verdict("obligations", _answer(block, limit), block + limit))
    # control manholes
    block, limit = [], []
    if n_mains == 0:
        block.append("no mains layer")
    if len(town.layers.get("manholes", ())) == 0:
        block.append("no manholes layer")
    if no_parcels and "buildings" not in town.layers and "users" not in town.layers:
        block.append("no parcels, buildings or users to start from")
    if kinds.get("no_outlet"):
        limit.append(f"{kinds['no_outlet']} node(s) have no path to an outlet "
                     "(flow direction beyond them unknown)")
    if kinds.get("terminal_outlets"):
        limit.append("outlets taken from the network's terminal nodes, not a plant")
    out.append(Verdict("control manholes", _answer(block, limit), block + limit))
    # capacity
    block, limit = [], []
    if mains is None or n_mains == 0:
        block.append("no mains layer")
    else:
        no_dia = int(mains["diameter_in"].isna().sum())
        no_slope = int((mains["slope"].isna() & (mains["up_invert_ft"].isna()
                                                  | mains["down_invert_ft"].isna())).sum())
        for n, what in ((no_dia, "a diameter"), (no_slope, "a slope or both inverts")):
            if n == n_mains:
                block.append(f"no main has {what}")
            elif n:
                limit.append(f"{n} of {n_mains} mains lack {what}")
    if no_parcels and "users" not in town.layers:
        limit.append("no parcels or users: no flows to put in the pipes")
    plants = town.layers.get("plants")
    if plants is None or len(plants) == 0:
        limit.append("no plant layer: plant capacity cannot be checked")
    elif plants["design_flow_mgd"].isna().all():
        limit.append("no plant has a design flow")
    if town.profile.monthly_increase is not None:
        from .capacity.monthly_increase import monthly_increase_layer

        inc, why = monthly_increase_layer(town)
        if why is not None:
            limit.append(why)
        elif len(inc):
            last = inc[inc["month"] == inc["month"].max()]
            unsure = last[last["status"] == "cannot_say"]
            if len(unsure):
                limit.append(f"{inc['section'].iloc[0]}: cannot say for "
                             f"{inc['month'].max()} (" + "; ".join(
                                 f"plant {r.plant_id} {r.constituent}: months missing "
                                 f"{r.missing_months}" for r in unsure.head(3).itertuples())
                             + ")")
    out.append(Verdict("capacity", _answer(block, limit), block + limit))
    return out


@dataclass
class LayerSummary:
    """One layer of the report.

    Attributes
    ----------
    role
        Layer role.
    source
        File the layer was read from ("" when the town has none).
    source_layer, where
        Layer inside the source and attribute filter, if any.
    source_crs
        CRS of the source (as read, or as assumed from the town file).
    features_read, features_kept
        Features the source gave (after ``where``), rows of the canonical layer.
    mapping
        Canonical column -> source column, or None when missing.
    findings
        Findings about this layer.
    """

    role: str
    source: str
    source_layer: str | int | None
    where: str | None
    source_crs: str | None
    features_read: int
    features_kept: int
    mapping: dict[str, str | None]
    findings: list[Finding] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        """Canonical columns the source does not have."""
        return [c for c, s in self.mapping.items() if s is None]

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "source": self.source,
            "source_layer": self.source_layer,
            "where": self.where,
            "source_crs": self.source_crs,
            "features_read": self.features_read,
            "features_kept": self.features_kept,
            "mapping": self.mapping,
            "missing_columns": self.missing,
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass
class ValidationReport:
    """Everything ``gisnet validate`` says about a town.

    Attributes
    ----------
    town
        Town name.
    crs
        Working CRS (``EPSG:nnnn (name)``), or None when loading failed.
    layers
        One :class:`LayerSummary` per layer role present.
    findings
        Findings not tied to one layer (working CRS, graph-wide findings).
    error
        The reason the town could not be loaded, if it could not.
    verdicts
        What each analysis can answer.
    worklist
        The ranked fixes (:func:`gisnet.worklist.worklist` rows without geometry),
        printed first.
    """

    town: str
    crs: str | None
    layers: list[LayerSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    worklist: list[dict[str, Any]] = field(default_factory=list)

    @property
    def all_findings(self) -> list[Finding]:
        return [*self.findings, *(f for s in self.layers for f in s.findings)]

    @property
    def usable(self) -> bool:
        """True when the town loaded and no finding is an error."""
        return self.error is None and not any(f.severity == "error" for f in self.all_findings)

    @property
    def exit_code(self) -> int:
        """0 when usable, 2 when not."""
        return 0 if self.usable else 2

    def counts(self) -> dict[str, int]:
        """Findings per severity."""
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.all_findings:
            out[f.severity] += 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "town": self.town,
            "usable": self.usable,
            "error": self.error,
            "crs": self.crs,
            "counts": self.counts(),
            "layers": [s.as_dict() for s in self.layers],
            "findings": [f.as_dict() for f in self.findings],
            "verdicts": [v.as_dict() for v in self.verdicts],
            "worklist": self.worklist,
        }

    def to_json(self, **kw: Any) -> str:
        """The report as JSON (``indent=2`` unless given)."""
        kw.setdefault("indent", 2)
        return json.dumps(self.as_dict(), **kw)

    def to_text(self) -> str:
        """The report as plain text, one block per layer, findings of one kind
        grouped, ending with a verdict per analysis."""
        lines = [f"town: {self.town}"]
        if self.error is not None:
            lines += [f"NOT USABLE: {self.error}"]
            return "\n".join(lines)
        lines.append(f"working CRS: {self.crs}")
        # first: how much of the network drains to a plant, how much only to an assumed end
        lines += [f"drains: {f.message}" for f in self.all_findings if f.kind == "drainage"]
        if self.worklist:
            lines.append(f"fix first ({len(self.worklist)} row(s) in the worklist, ranked by "
                         "the share of the network's pipe length they affect):")
            lines += ["  " + x for x in worklist_lines(pd.DataFrame(self.worklist),
                                                        top=WORKLIST_SHOWN)]
        lines += grouped_lines([f for f in self.findings if f.kind != "drainage"])
        for s in self.layers:
            lines.append("")
            if s.source:
                extra = "".join([
                    f", layer {s.source_layer!r}" if s.source_layer is not None else "",
                    f", where {s.where}" if s.where else "",
                ])
                lines.append(f"{s.role}: {s.source}{extra}")
                lines.append(f"  source CRS: {s.source_crs}")
                lines.append(f"  features: {s.features_read} read, {s.features_kept} kept")
                width = max(len(c) for c in s.mapping)
                lines.append("  columns:")
                for canon, src in s.mapping.items():
                    lines.append(f"    {canon:<{width}} <- {src if src is not None else 'missing'}")
                if s.missing:
                    lines.append(f"  missing columns: {', '.join(s.missing)}")
            else:
                lines.append(f"{s.role}: (no layer)")
            lines += grouped_lines([f for f in s.findings if f.kind != "drainage"])
        c = self.counts()
        lines += ["", f"{'usable' if self.usable else 'NOT USABLE'}: {c['error']} errors, "
                      f"{c['warning']} warnings, {c['info']} notes"]
        if self.verdicts:
            lines.append("can it answer:")
            lines += [v.line() for v in self.verdicts]
        return "\n".join(lines)


def validate_town(town: Town, extra: Report | None = None,
                  graph: nx.MultiDiGraph | None = None) -> ValidationReport:
    """Summarise a loaded town per layer, with every finding.

    Parameters
    ----------
    town
        As returned by :func:`gisnet.io.load_town`.
    extra
        More findings to include (for example ``G.graph["report"]`` of the
        sewer graph); each goes under its ``layer`` or, without one, town-wide.
    graph
        The sewer graph: with it the report holds the ranked worklist
        (:func:`gisnet.worklist.worklist` of these findings).

    Returns
    -------
    ValidationReport
    """
    infos = town.settings.extra.get("layer_info", {})
    findings = [*town.report, *(extra or [])]
    report = ValidationReport(town=town.name, crs=crs_label(town.crs),
                              verdicts=verdicts(town, findings))
    by_role: dict[str, LayerSummary] = {}
    for role in schema.ROLES:
        if role not in town.layers:
            continue
        info = infos.get(role)
        gdf = town.layers[role]
        if info is None:
            s = LayerSummary(role, "", None, None, None, 0, len(gdf),
                             dict.fromkeys(schema.column_names(role)))
        else:
            s = LayerSummary(role, info.path, info.layer, info.where, info.source_crs,
                             info.features_read, len(gdf), dict(info.mapping))
        by_role[role] = s
        report.layers.append(s)
    if graph is not None:
        wl = worklist(Report(findings).to_gdf(town.crs), graph, town)
        report.worklist = to_jsonable(pd.DataFrame(wl.drop(columns=wl.geometry.name))
                                      .to_dict("records"))
    for f in findings:
        if f.layer in by_role:
            by_role[f.layer].findings.append(f)
        else:
            report.findings.append(f)
    return report


def error_report(exc: GisnetError, town: str = "") -> ValidationReport:
    """An unusable report for a town that could not be loaded."""
    return ValidationReport(town=town, crs=None, error=str(exc))
