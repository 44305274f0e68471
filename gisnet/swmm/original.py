"""SWMM's own dry-weather run of the model a town was imported from.

:func:`dry_weather_text` copies the original ``.inp`` with the weather
switched off (``IGNORE_RAINFALL``, ``IGNORE_SNOWMELT``,
``IGNORE_GROUNDWATER``, ``IGNORE_RDII`` YES), its external [INFLOWS] and
[FILES] rows commented out (gisnet imports only [DWF]), all links reported,
and a run of whole days: one day to settle, then the averaging window (one
day, or a week when a DAILY or WEEKEND pattern is used). :func:`run_original`
runs that copy with pyswmm and averages every link's flow over the window
(SWMM's reported flows, every minute for a day, every 5 minutes for a week),
the figure gisnet's average dry-weather flow is compared with.

The original file is only read; the copy is written atomically beside the
outputs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import GisnetError
from ..output.writing import atomic_write_text
from .compare import finished_errors
from .model import SwmmModel, read_model, scan_sections

__all__ = ["OriginalRefused", "OriginalRun", "dry_weather_text", "report_errors",
           "run_original"]

SETTLE_DAYS = 1
OFF = ("IGNORE_RAINFALL", "IGNORE_SNOWMELT", "IGNORE_GROUNDWATER", "IGNORE_RDII")
DATE_KEYS = ("START_DATE", "START_TIME", "REPORT_START_DATE", "REPORT_START_TIME", "END_DATE",
             "END_TIME", "REPORT_STEP")


@dataclass
class OriginalRun:
    """SWMM's dry-weather run of the original model.

    Attributes
    ----------
    links
        ``name, swmm_type, flow_gpd`` (mean over the window).
    flow_routing_error_pct, runoff_error_pct
        Continuity errors of the run, read when SWMM has finished.
    inp
        The dry-weather copy that was run.
    window_days
        Days averaged.
    notes
        What was changed in the copy.
    """

    links: pd.DataFrame
    flow_routing_error_pct: float
    runoff_error_pct: float
    inp: Path
    window_days: int
    notes: list[str] = field(default_factory=list)


class OriginalRefused(GisnetError):
    """SWMM refuses to run (the dry-weather copy of) the original model.

    Attributes
    ----------
    model
        The original ``.inp``.
    inp, rpt
        The dry-weather copy that was run and SWMM's report of it.
    errors
        SWMM's own error lines (``ERROR nnn: ...``) as its report gives them
        (the engine's message when the report has none).
    """

    def __init__(self, model: Path, inp: Path, rpt: Path, errors: list[str]) -> None:
        self.model, self.inp, self.rpt, self.errors = model, inp, rpt, errors
        super().__init__(f"SWMM refuses to run {model} (its dry-weather copy {inp.name}; "
                         f"report {rpt}): {'; '.join(errors)}")


def report_errors(rpt: Path) -> list[str]:
    """The ``ERROR nnn: ...`` lines of a SWMM report, as written (one line each)."""
    try:
        text = rpt.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [" ".join(t.split()) for t in text.splitlines() if t.strip().startswith("ERROR ")]


def _start(opts: dict[str, str]) -> dt.datetime:
    for fmt in ("%m/%d/%Y", "%m-%d-%Y", "%m/%d/%y"):
        try:
            return dt.datetime.strptime(opts.get("START_DATE", ""), fmt)
        except ValueError:
            continue
    return dt.datetime(2020, 1, 1)


def dry_weather_text(model: SwmmModel) -> tuple[str, int, list[str]]:
    """The original file's text, changed for a dry-weather run.

    Returns ``(text, window_days, notes)``.
    """
    sections = scan_sections(model.path)
    opts = {r.tokens[0].upper(): (r.tokens[1] if len(r.tokens) > 1 else "")
            for r in sections.get("OPTIONS", [])}
    weekly = any(t.upper() in ("DAILY", "WEEKEND")
                 for r in sections.get("PATTERNS", []) for t in r.tokens[1:2])
    window = 7 if weekly else 1
    start = _start(opts)
    rstart = start + dt.timedelta(days=SETTLE_DAYS)
    end = rstart + dt.timedelta(days=window)
    step = "00:01:00" if window == 1 else "00:05:00"
    set_opts = {**{k: "YES" for k in OFF}, "START_DATE": start.strftime("%m/%d/%Y"),
                "START_TIME": "00:00:00", "REPORT_START_DATE": rstart.strftime("%m/%d/%Y"),
                "REPORT_START_TIME": "00:00:00", "END_DATE": end.strftime("%m/%d/%Y"),
                "END_TIME": "00:00:00", "REPORT_STEP": step}
    notes = [f"weather switched off ({', '.join(OFF)} YES)",
             f"run {SETTLE_DAYS + window} days, flows averaged over the last {window} day(s)"]
    out: list[str] = []
    sec = ""
    dropped = 0
    for raw in model.path.read_text(encoding="utf-8", errors="replace").splitlines():
        s = raw.split(";", 1)[0].strip()
        if s.startswith("["):
            if sec == "OPTIONS":
                out += [f"{k} {v}" for k, v in set_opts.items() if k not in opts]
            sec = s.strip("[]").strip().upper()
            out.append(raw)
            if sec == "REPORT":
                out += ["INPUT NO", "CONTROLS NO", "SUBCATCHMENTS NONE", "NODES NONE",
                        "LINKS ALL"]
            continue
        if sec == "OPTIONS" and s:
            key = s.split()[0].upper()
            if key in set_opts:
                out.append(f"{key} {set_opts[key]}")
                continue
        if sec in ("INFLOWS", "FILES") and s:
            out.append(";" + raw)
            dropped += 1
            continue
        if sec == "REPORT" and s:
            continue
        out.append(raw)
    if sec == "OPTIONS":
        out += [f"{k} {v}" for k, v in set_opts.items() if k not in opts]
    if "REPORT" not in sections:
        out += ["", "[REPORT]", "INPUT NO", "CONTROLS NO", "SUBCATCHMENTS NONE",
                "NODES NONE", "LINKS ALL"]
    if dropped:
        notes.append(f"{dropped} [INFLOWS]/[FILES] row(s) commented out: external inflows "
                     "are not dry-weather flow gisnet imports")
    return "\n".join(out) + "\n", window, notes


def run_original(model_path: str | Path, work_dir: str | Path) -> OriginalRun:
    """Run the original model in dry weather and average every link's flow.

    Parameters
    ----------
    model_path
        The original ``.inp`` (read only).
    work_dir
        Where the dry-weather copy and SWMM's report and output go.

    Raises
    ------
    OriginalRefused
        SWMM refuses to run the copy: its error lines, read from its report.
    """
    from pyswmm import Output, Simulation
    from swmm.toolkit.shared_enum import LinkAttribute

    model = read_model(model_path)
    text, window, notes = dry_weather_text(model)
    inp = Path(work_dir) / f"{model.path.stem}-dry-weather.inp"
    atomic_write_text(inp, text, "SWMM model")
    try:
        with Simulation(str(inp)) as sim:
            sim.step_advance(3600)
            for _ in sim:
                pass
            errs = finished_errors(sim)
    except Exception as exc:  # swmm-toolkit raises plain Exception
        # the engine's message leaves the object's name out ("Conduit %s"); its report
        # names it
        rpt = inp.with_suffix(".rpt")
        raise OriginalRefused(model.path, inp, rpt, report_errors(rpt)
                              or [" ".join(str(exc).split())]) from None
    with Output(str(inp.with_suffix(".out"))) as out:
        names = list(out.links)
        n = len(out.times)
        total = np.zeros(len(names))
        for k in range(n):
            vals = out.link_attribute(LinkAttribute.FLOW_RATE, k)
            total += np.array([vals[x] for x in names])
    mean = total / max(n, 1) * model.gpd_per_flow
    kinds = dict(zip(model.conduits["main_id"], ["conduit"] * len(model.conduits),
                     strict=True))
    kinds.update(zip(model.links["main_id"], model.links["swmm_type"], strict=True))
    links = pd.DataFrame({"name": names, "swmm_type": [kinds.get(x, "") for x in names],
                          "flow_gpd": mean})
    return OriginalRun(links, errs[1], errs[0], inp, window, notes)


#: Relative difference above which gisnet's flow and SWMM's are said to differ (5 %).
ORIGINAL_RTOL = 0.05
#: Flows (gpd) at or below which a link counts as dry.
DRY_GPD = 1.0
ORIGINAL_COLUMNS = ["main_id", "edge_key", "swmm_type", "from_node", "to_node", "avg_flow_gpd",
                    "swmm_flow_gpd", "flow_diff_pct", "split_share", "split_rule",
                    "explanation", "geometry"]


@dataclass
class Agreement:
    """How far gisnet's dry-weather flows agree with SWMM's run of the original.

    Attributes
    ----------
    links
        Links compared (in both).
    wet
        Links carrying more than ``min_gpd`` in gisnet or SWMM.
    within
        Of those, links within :data:`ORIGINAL_RTOL`.
    trunk
        ``(link, gisnet gpd, SWMM gpd, difference %)`` of the link carrying the
        most into an outfall.
    dry_in_swmm_wet_in_gisnet
        Links dry in SWMM (<= :data:`DRY_GPD`) that carry flow in gisnet.
    """

    links: int
    wet: int
    within: int
    trunk: tuple[str, float, float, float] | None
    dry_in_swmm_wet_in_gisnet: list[str]

    @property
    def share_within(self) -> float:
        """``within / wet`` (1 when no link is wet)."""
        return self.within / self.wet if self.wet else 1.0

    def text(self) -> str:
        """One line per figure."""
        lines = [f"{self.links} link(s) compared; {self.within} of {self.wet} carrying more "
                 f"than 100 gpd within {ORIGINAL_RTOL:.0%} of SWMM ({self.share_within:.1%})"]
        if self.trunk:
            k, g, q, d = self.trunk
            lines.append(f"trunk to the outfall {k}: gisnet {g:,.0f} gpd, SWMM {q:,.0f} gpd "
                         f"({d:+.2f} %)")
        lines.append(f"links dry in SWMM carrying flow in gisnet: "
                     f"{len(self.dry_in_swmm_wet_in_gisnet)}"
                     + (f" ({', '.join(self.dry_in_swmm_wet_in_gisnet[:10])})"
                        if self.dry_in_swmm_wet_in_gisnet else ""))
        return "\n".join(lines)


def _reasons(G, pipes: pd.DataFrame, diff: np.ndarray) -> np.ndarray:
    from .compare import below

    flags = pipes["flags"].astype(str).to_numpy()
    u = pipes["from_node"].astype(str).to_numpy(object)
    rule = pipes["split_rule"].fillna("").astype(str).to_numpy(object)
    share = pipes["split_share"].to_numpy(float)
    is_split = np.array(["flow_split" in f for f in flags])
    split_rule = dict(zip(u[is_split], rule[is_split], strict=True))
    under_split = below(G, set(u[is_split]))
    under_cycle = below(G, set(u[np.array(["cycle" in f for f in flags])]))
    pumps = {str(b) for a, b, d in G.edges(data=True) if not d.get("gravity", True)}
    under_pump = below(G, pumps)
    out = np.full(len(pipes), "", dtype=object)
    for i in np.flatnonzero(diff):
        if "cycle" in flags[i]:
            out[i] = "loop: gisnet computes no flow in a cycle, SWMM routes it"
        elif is_split[i]:
            out[i] = (f"split at node {u[i]} (rule {rule[i]}): gisnet gives this link "
                      f"{share[i]:.0%} of the node's flow, SWMM's hydraulics another share; "
                      "state it in the town file's [splits] if SWMM's is right")
        elif u[i] in under_split:
            x = under_split[u[i]]
            out[i] = f"downstream of the split at node {x} (rule {split_rule.get(x, '')})"
        elif u[i] in under_cycle:
            out[i] = f"downstream of a loop through node {under_cycle[u[i]]}"
        elif u[i] in under_pump:
            out[i] = ("downstream of a pump: SWMM runs it by its curve and controls, gisnet "
                      "carries what reaches the wet well")
        else:
            out[i] = ("not explained by a split, loop or pump: storage, a monthly or daily "
                      "pattern gisnet averages, or SWMM not settled")
    return out


def original_comparison(G, pipes: pd.DataFrame, run: OriginalRun, model: SwmmModel,
                        report=None, min_gpd: float = 100.0):
    """gisnet's flows (``pipes_capacity``) against SWMM's dry-weather run of the original:
    the ``swmm_original_comparison`` layer and the :class:`Agreement`.

    Every link over :data:`ORIGINAL_RTOL` apart (and carrying more than
    :data:`DRY_GPD` in either) gets an explanation, and a finding
    ``swmm_original_difference`` in ``report`` when one is given.
    """
    import geopandas as gpd

    sw = run.links.set_index("name")
    p = pipes[pipes["edge_key"].astype(str).isin(sw.index)].reset_index(drop=True)
    q = sw["flow_gpd"].reindex(p["edge_key"].astype(str)).to_numpy(float)
    g = np.nan_to_num(p["avg_flow_gpd"].to_numpy(float))
    big = np.maximum(np.abs(g), np.abs(q))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(big > DRY_GPD, (q - g) / big, 0.0)
    diff = (np.abs(rel) > ORIGINAL_RTOL) & (big > DRY_GPD)
    expl = _reasons(G, p, diff)
    layer = gpd.GeoDataFrame({
        "main_id": p["main_id"], "edge_key": p["edge_key"],
        "swmm_type": sw["swmm_type"].reindex(p["edge_key"].astype(str)).to_numpy(object),
        "from_node": p["from_node"], "to_node": p["to_node"], "avg_flow_gpd": g,
        "swmm_flow_gpd": q, "flow_diff_pct": rel * 100.0,
        "split_share": p["split_share"].to_numpy(float), "split_rule": p["split_rule"],
        "explanation": expl}, geometry=p.geometry.to_numpy(), crs=pipes.crs)[ORIGINAL_COLUMNS]
    if report is not None:
        for i in np.flatnonzero(diff):
            report.add("swmm_original_difference", "warning",
                       f"link {p.at[i, 'edge_key']}: gisnet {g[i]:,.0f} gpd, SWMM (original "
                       f"model, dry weather) {q[i]:,.0f} gpd ({rel[i] * 100:+.1f} %): "
                       f"{expl[i]}", layer="mains", feature_id=str(p.at[i, "edge_key"]))
    wet = big > min_gpd
    outfalls = set(model.nodes.loc[model.nodes["swmm_type"] == "outfall", "node_id"])
    into = np.flatnonzero(p["to_node"].astype(str).isin(outfalls).to_numpy())
    trunk = None
    if into.size:
        t = int(into[np.argmax(q[into])])
        trunk = (str(p.at[t, "edge_key"]), float(g[t]), float(q[t]), float(rel[t] * 100.0))
    dry = [str(k) for k, a, b in zip(p["edge_key"], g, q, strict=True)
           if b <= DRY_GPD and a > DRY_GPD]
    agr = Agreement(len(p), int(wet.sum()), int((wet & ~diff).sum()), trunk, dry)
    return layer, agr
