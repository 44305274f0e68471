"""Checks of sample results against the profile's limits, naming upstream suspects.

:func:`check_samples` reads a CSV of lab results (``manhole_id, datetime,
parameter, value, unit``) and checks it against the profile's ``[limits]``:
each parameter's max/min on the basis and at the place the profile gives
(``basis``, ``where``: a limit on the sewage as it arrives at the treatment
plant is judged at the plant, or on the flow-weighted plant average of
:mod:`.plant_average`; at a user's manhole it only screens), the
normal-strength line (the basis of surcharge, not a prohibition), the hourly
rule ("at no time shall the hourly concentration be three times the average
concentration", the same point's 24-hour average) and the slug rule (more than
``slug_factor`` x the slug baseline in a continuous run lasting more than
``slug_minutes``; with ``slug_flow``, Berlin's slug "in quantity of flow" too: a
flow reading over ``slug_factor`` x the point's own average 24-hour flow). Each
finding lists the industrial users upstream of its
manhole (:func:`gisnet.tracing.trace_upstream`), largest process flow first.
Units are those of :mod:`.parameters`; rows are :mod:`.findings`.
"""

from __future__ import annotations

import csv
import datetime as dt
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from ..errors import LayerError, SchemaError
from ..rules import exceeds
from ..tracing import DownstreamIndex, connection_points, trace_upstream
from .findings import CHECK_COLUMNS, event, fmt_time, lines, name_baseline, row, user_labels
from .hourly import hourly_events, hourly_params, span_note
from .parameters import (
    CANONICAL_UNIT,
    canonical_parameter,
    entry_quantities,
    named_unit,
    profile_limits,
    to_canonical,
)
from .places import limits_at, narrative_names, narrative_rows
from .plant_average import flow_weighted_rows, plant_ids

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

SAMPLE_COLUMNS = ("manhole_id", "datetime", "parameter", "value", "unit")


def _parse_time(text: str) -> dt.datetime | None:
    t = text.strip()
    if not t:
        return None
    try:
        d = dt.datetime.fromisoformat(t)
    except ValueError:
        d = None
        for fmt in ("%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %I:%M %p", "%m/%d/%Y"):
            try:
                d = dt.datetime.strptime(t, fmt)
                break
            except ValueError:
                continue
    if d is not None and d.tzinfo is not None:
        d = d.astimezone(dt.UTC).replace(tzinfo=None)
    return d


def read_samples(csv_path: str | Path) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Read a results CSV.

    Returns the good rows (``line, manhole_id, datetime, parameter, value,
    unit``; ``line`` is the 1-based line number in the file, the header being
    line 1) and one problem dict per malformed row.

    Raises
    ------
    LayerError
        If the file cannot be read.
    SchemaError
        If a required column is missing from the header.
    """
    path = Path(csv_path)
    try:
        fh = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise LayerError(f"cannot read sample results: {exc.strerror or exc}",
                         path=path, layer="samples") from exc
    good: list[dict[str, Any]] = []
    bad: list[dict[str, Any]] = []
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise SchemaError("sample results file is empty", path=path, layer="samples") \
                from None
        except (UnicodeDecodeError, csv.Error) as exc:
            raise LayerError(f"sample results are not a UTF-8 CSV file: {exc}", path=path,
                             layer="samples", feature="line 1") from None
        cols = [h.strip().lower() for h in header]
        missing = [c for c in SAMPLE_COLUMNS if c not in cols]
        if missing:
            raise SchemaError(
                f"missing column(s) {', '.join(missing)}; expected {', '.join(SAMPLE_COLUMNS)}",
                path=path, layer="samples")
        pos = {c: cols.index(c) for c in SAMPLE_COLUMNS}
        while True:
            start_line = reader.line_num + 1
            try:
                rec = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                bad.append({"line": start_line, "problem": f"unreadable CSV: {exc}"})
                continue
            except UnicodeDecodeError as exc:
                raise LayerError(f"sample results are not UTF-8 text: {exc}", path=path,
                                 layer="samples", feature=f"line {start_line}") from None
            if not any(x.strip() for x in rec):
                continue
            if len(rec) != len(cols):
                bad.append({"line": start_line,
                            "problem": f"{len(rec)} fields, the header has {len(cols)}"})
                continue
            r = {c: rec[pos[c]].strip() for c in SAMPLE_COLUMNS}
            problems = []
            if not r["manhole_id"]:
                problems.append("no manhole_id")
            when = _parse_time(r["datetime"])
            if when is None:
                problems.append(f"datetime {r['datetime']!r} is not a date and time")
            try:
                value = float(r["value"])
                if not np.isfinite(value):
                    raise ValueError
            except ValueError:
                value = None
                if r["value"].startswith(("<", ">")):
                    problems.append(f"censored value {r['value']!r} (below/above the "
                                    "reporting limit) cannot be checked")
                else:
                    problems.append(f"value {r['value']!r} is not a number")
            if not r["parameter"]:
                problems.append("no parameter")
            if value is not None and value < 0:
                dim = to_canonical(value, r["unit"])
                if dim is None or dim[0] != "temperature":
                    problems.append(f"value {r['value']!r} is negative; only a temperature "
                                    "can be")
            if problems:
                bad.append({"line": start_line, "problem": "; ".join(problems),
                            "manhole_id": r["manhole_id"] or None,
                            "parameter": r["parameter"] or None})
                continue
            good.append({"line": start_line, "manhole_id": r["manhole_id"], "datetime": when,
                         "parameter": r["parameter"], "value": value, "unit": r["unit"]})
    df = pd.DataFrame(good, columns=["line", *SAMPLE_COLUMNS])
    return df, bad


#: 24 hours: the sampling period over which an average concentration is taken.
DAY = np.timedelta64(24, "h")


def sampling_periods(times: np.ndarray) -> np.ndarray:
    """The 24-hour sampling period of each result time (times in ascending order).

    A period starts at a result and holds every result less than 24 hours after
    it; the next period starts at the first result after that. A sampling
    campaign from 08:00 to 08:00 the next morning is one period, however the
    clock days fall.

    Returns
    -------
    numpy.ndarray
        Period number (0, 1, ...) of each time.
    """
    out = np.zeros(len(times), dtype=int)
    if not len(times):
        return out
    start, k = times[0], 0
    for i, t in enumerate(times):
        if t - start >= DAY:
            k, start = k + 1, t
        out[i] = k
    return out


def _runs(flag: np.ndarray, times: np.ndarray | None = None,
          max_gap: np.timedelta64 | None = None) -> list[tuple[int, int]]:
    """(start, end) inclusive index pairs of consecutive True runs.

    With ``times`` and ``max_gap``, two flagged results further apart than
    ``max_gap`` end one run and start another (no continuity is shown between them).
    """
    out = []
    i, n = 0, len(flag)
    while i < n:
        if flag[i]:
            j = i
            while j + 1 < n and flag[j + 1] and (
                    max_gap is None or times is None or times[j + 1] - times[j] <= max_gap):
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


class _Context:
    """What every group of results is checked against: the profile's rules, the
    plants and the users upstream of each manhole (traced once)."""

    def __init__(self, town: Town, G: nx.MultiDiGraph, index: DownstreamIndex | None,
                 points: gpd.GeoDataFrame | None) -> None:
        self.town, self.G = town, G
        self.lim = town.profile.limits
        self.limits = profile_limits(town.profile)
        self._index, self._points = index, points
        self._up: dict[Any, pd.DataFrame] = {}
        self.plant_of = plant_ids(town, G)
        lim = self.lim
        self.slug_baseline = lim.slug_baseline or "normal_strength"
        self.normal = {"bod": lim.normal_bod_mg_l, "ss": lim.normal_ss_mg_l}
        gap = lim.slug_max_gap_min if lim.slug_max_gap_min is not None else lim.slug_minutes
        self.max_gap = np.timedelta64(round(float(gap) * 60), "s")
        self.slug_flow = bool(lim.slug_flow)

    def at_plant(self, mh: Any) -> bool:
        """A sample taken at a plant's influent: the location is a plant (id or node)
        or an outlet of the graph."""
        if mh in self.plant_of:
            return True
        if mh in self.G:
            return self.G.nodes[mh].get("kind") == "plant" or \
                mh in (self.G.graph.get("outlets") or ())
        return False

    def plant_id(self, mh: Any) -> Any:
        """The plant a location is at or drains to (None if not known)."""
        if mh in self.plant_of:
            return self.plant_of[mh]
        if mh not in self.G:
            return None
        out = self.index.outlet_of(mh)
        if out is None:
            return None
        return self.plant_of.get(out, out if self.G.nodes[out].get("kind") == "plant" else None)

    @property
    def index(self) -> DownstreamIndex:
        if self._index is None:
            self._index = DownstreamIndex.of(self.G)
        return self._index

    def upstream_users(self, mh: Any) -> pd.DataFrame:
        """Industrial users draining to a manhole, largest process flow first."""
        if mh not in self._up:
            users = self.town.layer("users")
            if users is None or not len(users) or mh not in self.G:
                self._up[mh] = pd.DataFrame({"user_id": [], "process_flow_gpd": []})
            else:
                if self._points is None:
                    self._points = connection_points(self.town, self.G, index=self.index)
                self._up[mh] = trace_upstream(self.town, self.G, mh, points=self._points,
                                              index=self.index)["users"]
        return self._up[mh]

    def slug_params(self, dim: dict[str, str]) -> set[str]:
        """Parameters the slug rule measures (``flow`` with ``slug_flow``)."""
        flow = {"flow"} if self.slug_flow else set()
        if self.lim.slug_parameters is not None:
            return set(self.lim.slug_parameters) | flow
        if self.slug_baseline == "normal_strength":
            return {"bod", "ss"} | flow
        return {p for p, d in dim.items() if d == "concentration"} | flow


def check_samples(
    town: Town,
    G: nx.MultiDiGraph,
    csv_path: str | Path,
    *,
    index: DownstreamIndex | None = None,
    points: gpd.GeoDataFrame | None = None,
) -> pd.DataFrame:
    """Check lab results against the profile's limits; name upstream suspects.

    Results are grouped by manhole and parameter, in time order, and into
    24-hour sampling periods (:func:`sampling_periods`). The rules:

    - ``max`` / ``min``: each result against the profile's limit; consecutive
      results beyond it, no more than ``slug_max_gap_min`` apart, are one row.
      A limit with ``basis = "average"`` is judged on each period's mean at
      the point instead (``basis`` column
      ``24h_average``). A limit with ``where = "plant_influent"`` (Poughkeepsie
      § 168-22.5C(9): "average quantities in the sewage as it arrives at the
      treatment plant") is a violation only at a plant (a location that is a
      plant id or an outlet) or on the flow-weighted average at the plant
      computed from the users' results and process flows
      (:func:`gisnet.sampling.plant_average.flow_weighted_rows`, ``basis``
      ``flow_weighted_at_plant``); a result above it at a user's manhole is a
      ``screening_exceedance``, never a violation.
    - ``normal_strength``: a limit with ``basis = "normal_strength"`` (Berlin
      ch. 16 definitions no. 29) is the basis of surcharge, not a
      prohibition: a result above it is ``above_normal_strength``.
    - the place: a result is judged by the limits of where it was taken
      (:func:`gisnet.sampling.places.limits_at`): entries of one quantity
      (``measures``) at different places are told apart by the sample point,
      not by how the parameter is spelled.
    - ``hourly``: a clock hour's mean at or above ``hourly_max_over_average`` x
      the average the profile's ``hourly_reading`` takes (:mod:`.hourly`):
      the listed average (``listed_average``, the default) or the same
      parameter's average at the same point over the 24-hour period
      (``measured_average``, the samples that formed it in ``baseline_*``);
      only for the parameters limited in the hourly rule's section (all
      concentrations if none is). With ``hourly_where = "plant_influent"`` it
      screens elsewhere.
    - ``narrative``: a parameter the ordinance limits in words only
      (``[[limits.narrative]]``) is reported, not judged
      (:func:`gisnet.sampling.places.narrative_rows`).
    - ``slug``: results above ``slug_factor`` x the baseline, in a continuous
      run (consecutive results no more than ``slug_max_gap_min`` apart) lasting
      more than ``slug_minutes`` from its first to its last result. The
      baseline is the profile's ``slug_baseline``: ``normal_strength`` (the
      ``normal_*_mg_l`` numbers) or ``own_24h_average`` (the point's own
      average over the 24-hour period during normal operation: the period's
      results without those above ``slug_factor`` x the period's median, so a
      slug never raises its own baseline). Results of a slug are reported once,
      as the slug. With ``[limits] slug_flow`` (Berlin definition no. 66, a slug
      "in quantity of flow"), flow readings (parameter ``flow``, in gpd) are
      checked the same way against the point's own average 24-hour flow during
      normal operation, whatever ``slug_baseline`` says.

    Problems are rows too: ``malformed`` (with the line), ``unknown_parameter``,
    ``unknown_unit`` (wrong dimension or unknown spelling), ``no_limit``
    (known parameter the profile does not limit), ``unknown_manhole`` and
    ``plant_flow_unknown`` (no flow for a flow-weighted plant average).

    Parameters
    ----------
    town, G
        Loaded town and its sewer graph.
    csv_path
        Results file with columns ``manhole_id,datetime,parameter,value,unit``.
    index, points
        Reuse a :class:`~gisnet.tracing.DownstreamIndex` / connection points.

    Returns
    -------
    DataFrame
        Columns :data:`CHECK_COLUMNS`, one row per finding or problem:
        ``kind`` (``exceedance`` | ``screening_exceedance`` |
        ``above_normal_strength`` | ``narrative`` | ``problem``), ``rule``, ``basis``, ``point``
        (``plant_influent`` | ``sewer``), ``manhole_id``, ``plant_id``,
        ``parameter``, ``start``, ``end``, ``duration_min``, ``n_samples``,
        ``value`` (the worst, in ``unit``, the canonical unit), ``limit``,
        ``limit_unit``, ``baseline`` (the average the hourly and slug rules
        multiply) with ``baseline_n``, ``baseline_lines``, ``baseline_start``,
        ``baseline_end``, ``section``, ``message``, ``lines`` (line numbers in
        the file), ``suspects`` (upstream industrial users, largest process
        flow first, as text) and ``suspect_user_ids``. Findings come first,
        in time order, then problems.
    """
    df, bad = read_samples(csv_path)
    ctx = _Context(town, G, index, points)
    limits = ctx.limits
    rows: list[dict[str, Any]] = []
    for b in bad:
        rows.append(row("problem", "malformed", manhole_id=b.get("manhole_id"),
                         parameter=b.get("parameter"), lines=str(b["line"]),
                         message=f"line {b['line']}: {b['problem']}"))
    entries = entry_quantities(town.profile)
    narrative = narrative_names(town.profile) - set(limits)
    known = set(limits)
    if len(df):
        names = known | set(entries) | narrative
        df["param"] = [entries.get(c, c) if c is not None else None
                       for c in (canonical_parameter(p, names) for p in df["parameter"])]
        df["unit"] = [named_unit(p, u) for p, u in zip(df["parameter"], df["unit"], strict=True)]
        conv = [to_canonical(v, u) for v, u in zip(df["value"], df["unit"], strict=True)]
        df["dim"] = [None if c is None else c[0] for c in conv]
        df["cvalue"] = [np.nan if c is None else c[1] for c in conv]
    else:
        df = df.assign(param=None, dim=None, cvalue=np.nan)
    # unknown parameters
    for name, g in df[df["param"].isna()].groupby("parameter", sort=True):
        rows.append(row("problem", "unknown_parameter", parameter=name,
                         lines=lines(g), n_samples=len(g),
                         message=f"parameter {name!r} is not known; {len(g)} result(s) not "
                                 "checked"))
    df = df[df["param"].notna()]
    lim_dim = {p: ls[0].dimension for p, ls in limits.items()}
    # known parameters without a limit: checked for slugs only where the slug rule
    # measures any constituent (or, with slug_flow, the quantity of flow), else not at all
    slug_any = ctx.lim.slug_parameters is None and ctx.slug_baseline == "own_24h_average"
    slug_dims = {"concentration"} if slug_any else set()
    if ctx.slug_flow:
        slug_dims.add("flow")
    # limited in words only: reported as narrative (or not comparable), not judged
    rows.extend(narrative_rows(town.profile, df, f"; checked for slugs only "
                               f"({ctx.lim.slug_section})" if slug_any else ""))
    unlimited = ~df["param"].isin(known)
    for name, g in df[unlimited & ~df["param"].isin(narrative)].groupby("param", sort=True):
        conc = g["dim"].isin(slug_dims)
        what = f"{len(g)} result(s) not checked"
        if name == "flow" and not ctx.slug_flow:
            what += f" (the slug rule, {ctx.lim.slug_section}, measures concentrations only)"
        if conc.any():
            what = (f"{int(conc.sum())} result(s) checked for slugs only "
                    f"({ctx.lim.slug_section})" +
                    (f", {int((~conc).sum())} not checked" if (~conc).any() else ""))
        rows.append(row("problem", "no_limit", parameter=name, lines=lines(g),
                         n_samples=len(g),
                         message=f"the profile sets no limit for {name}; {what}"))
    for name, d in df.loc[unlimited & df["dim"].isin(slug_dims), ["param", "dim"]
                          ].drop_duplicates().itertuples(index=False):
        lim_dim[name] = d
    if ctx.slug_flow:
        lim_dim.setdefault("flow", "flow")  # a flow reading in a unit not known: a problem
    df = df[df["param"].isin(set(lim_dim))].copy()
    # unit of the wrong dimension or unknown
    wrong = df["dim"].isna() | (df["dim"] != df["param"].map(lim_dim))
    told = known | ({"flow"} if ctx.slug_flow else set())
    for (name, unit), g in df[wrong & df["param"].isin(told)].groupby(["param", "unit"],
                                                                      sort=True):
        rows.append(row("problem", "unknown_unit", parameter=name, unit=unit,
                         lines=lines(g), n_samples=len(g),
                         message=f"unit {unit!r} cannot be converted exactly to "
                                 f"{CANONICAL_UNIT[lim_dim[name]]} for {name}; "
                                 f"{len(g)} result(s) not checked"))
    df = df[~wrong].sort_values(["manhole_id", "param", "datetime", "line"], kind="stable")
    # unknown manholes: still checked, but nobody can be named upstream
    unknown = ~df["manhole_id"].isin(set(G.nodes)) & ~df["manhole_id"].isin(set(ctx.plant_of))
    for mh, g in df[unknown].groupby("manhole_id", sort=True):
        rows.append(row("problem", "unknown_manhole", manhole_id=mh, lines=lines(g),
                         n_samples=len(g),
                         message=f"manhole {mh!r} is not in the sewer graph; its results are "
                                 "checked but no upstream users can be named"))
    events: list[dict[str, Any]] = []
    slug_params = ctx.slug_params(lim_dim)
    for (mh, param), g in df.groupby(["manhole_id", "param"], sort=True):
        g = g.reset_index(drop=True)
        events.extend(_check_group(ctx, mh, param, g, lim_dim[param], param in slug_params))
    fw, fw_problems = flow_weighted_rows(ctx, df, events)
    events.extend(fw)
    rows.extend(fw_problems)
    _add_suspects(ctx, events)
    events.sort(key=lambda e: (e["start"], str(e["manhole_id"]), e["parameter"], e["rule"]))
    out = pd.DataFrame(events + rows, columns=CHECK_COLUMNS)
    for c in ("n_samples", "baseline_n"):
        out[c] = pd.to_numeric(out[c]).astype("Int64")
    kinds = out["kind"].value_counts()
    log.info("samples: %d exceedance(s), %d screening, %d above normal strength, "
             "%d problem(s)", kinds.get("exceedance", 0), kinds.get("screening_exceedance", 0),
             kinds.get("above_normal_strength", 0), len(rows))
    return out


def _check_group(ctx: _Context, mh: Any, param: str, g: pd.DataFrame, dim: str, slug: bool
                 ) -> list[dict[str, Any]]:
    """The findings of one manhole's results of one parameter (time order)."""
    lim = ctx.lim
    vals = g["cvalue"].to_numpy(float)
    times = pd.to_datetime(g["datetime"]).to_numpy()
    period = sampling_periods(times)
    unit = CANONICAL_UNIT[dim]
    at_plant = ctx.at_plant(mh)
    point = "plant_influent" if at_plant else "sewer"
    plant = ctx.plant_id(mh)
    limits = ctx.limits.get(param, [])
    here = limits_at(limits, at_plant)
    events: list[dict[str, Any]] = []
    common = {"manhole_id": mh, "parameter": param, "point": point, "plant_id": plant}

    def status(where: str | None) -> str:
        return "screening_exceedance" if where == "plant_influent" and not at_plant \
            else "exceedance"

    # slug: of a concentration, or (slug_flow) of the quantity of flow
    in_slug = np.zeros(len(g), bool)
    flow = dim == "flow"
    baseline = "own_24h_average" if flow else ctx.slug_baseline
    if slug and lim.slug_factor:
        factor = float(lim.slug_factor)
        base, base_sel = _slug_baselines(ctx, param, vals, period, factor, baseline)
        with np.errstate(invalid="ignore"):
            over = np.asarray(exceeds(vals, factor * base), bool) & np.isfinite(base)
        for a, b in _runs(over, times, ctx.max_gap):
            minutes = (times[b] - times[a]) / np.timedelta64(1, "m")
            if not minutes > float(lim.slug_minutes):
                continue
            in_slug[a:b + 1] = True
            thr = factor * float(base[a])
            seg = vals[a:b + 1]
            also = [x for x, k in here if x.max is not None and x.basis is None
                    and k == "exceedance" and (seg > x.max).any()]
            normal_too = [x for x in limits if x.max is not None
                          and x.basis == "normal_strength" and (seg > x.max).any()]
            sec = "; ".join([str(lim.slug_section)] + [x.section for x in also])
            if baseline == "normal_strength":
                what = f"{factor:g} x normal strength {float(base[a]):g} {unit}"
            else:
                sel = base_sel[period[a]]
                what = (f"{factor:g} x its own 24-hour average {float(base[a]):.4g} {unit} "
                        f"during normal operation ({int(sel.sum())} result(s) "
                        f"{fmt_time(times[sel][0])}..{fmt_time(times[sel][-1])})")
            kind = "slug in quantity of flow" if flow else "slug"
            msg = (f"{kind}: {param} above {what} = {thr:.4g} {unit} for {minutes:g} min "
                   f"(> {float(lim.slug_minutes):g} min; results no more than "
                   f"{ctx.max_gap / np.timedelta64(1, 'm'):g} min apart), peak "
                   f"{seg.max():g} {unit}")
            if also:
                msg += "; also above the limit " + ", ".join(
                    f"{x.max:g} {x.unit} ({x.section})" for x in also)
            if normal_too:
                msg += "; also above normal strength " + ", ".join(
                    f"{x.max:g} {x.unit} ({x.section}, the basis of surcharge)"
                    for x in normal_too)
            ev = event("exceedance", "slug", g.iloc[a:b + 1], seg.max(), unit, thr, unit, sec,
                        msg, times[a], times[b], basis=baseline, **common)
            if baseline == "own_24h_average":
                name_baseline(ev, g[base_sel[period[a]]], float(base[a]))
            else:
                ev["baseline"] = float(base[a])
            events.append(ev)
    # plain limits: those of the place the sample was taken
    for x, kind in here:
        for side, bound in (("max", x.max), ("min", x.min)):
            if bound is None or (kind == "above_normal_strength" and side == "min"):
                continue
            if x.basis == "average" and kind == "exceedance":
                events.extend(_average_events(x, side, float(bound), g, vals, times, period,
                                              kind, common))
                continue
            over = exceeds(vals, bound) if side == "max" else exceeds(bound, vals)
            over = np.asarray(over, bool) & ~in_slug
            for a, b in _runs(over, times, ctx.max_gap):
                seg = vals[a:b + 1]
                worst = seg.max() if side == "max" else seg.min()
                word = "above the maximum" if side == "max" else "below the minimum"
                msg = f"{param} {worst:g} {x.unit} {word} {bound:g} {x.unit}"
                rule = side
                if kind == "above_normal_strength":
                    rule = "normal_strength"
                    msg = (f"{param} {worst:g} {x.unit} above normal strength {bound:g} "
                           f"{x.unit}: the basis of surcharge ({x.section}), not a prohibition")
                elif kind == "screening_exceedance":
                    what = ("a limit on the average in the sewage as it arrives at the "
                            "treatment plant" if x.basis == "average" else
                            "a limit at the treatment plant's influent")
                    msg = (f"screening: {param} {worst:g} {x.unit} at manhole {mh} is above "
                           f"{bound:g} {x.unit}, {what} ({x.section}); not a violation "
                           "at a user's manhole")
                events.append(event(kind, rule, g.iloc[a:b + 1], worst, x.unit, bound, x.unit,
                                     x.section, msg, times[a], times[b], basis="sample",
                                     **common))
    # hourly, by the profile's reading (gisnet.sampling.hourly)
    if lim.hourly_max_over_average and param in hourly_params(ctx.limits, lim.hourly_section):
        events.extend(hourly_events(lim, limits, g, vals, times, period, unit,
                                    status(lim.hourly_where), common))
    return events


def _slug_baselines(ctx: _Context, param: str, vals: np.ndarray, period: np.ndarray,
                    factor: float, baseline: str) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The slug baseline of each result, and the results that formed each period's one."""
    if baseline == "normal_strength":
        n = ctx.normal.get(param)
        return np.full(len(vals), float(n) if n else np.nan), {}
    base = np.full(len(vals), np.nan)
    used: dict[int, np.ndarray] = {}
    for k in np.unique(period):
        sel = period == k
        med = float(np.median(vals[sel]))
        normal = sel & ~np.asarray(exceeds(vals, factor * med), bool)
        used[int(k)] = normal
        mean = float(vals[normal].mean()) if normal.sum() >= 2 else np.nan
        base[sel] = mean if mean > 0 else np.nan
    return base, used


def _average_events(x: Any, side: str, bound: float, g: pd.DataFrame, vals: np.ndarray,
                    times: np.ndarray, period: np.ndarray, kind: str, common: dict[str, Any]
                    ) -> list[dict[str, Any]]:
    """A limit on the average: each 24-hour period's mean at the point."""
    out = []
    for k in np.unique(period):
        sel = period == k
        m = float(vals[sel].mean())
        if not (exceeds(m, bound) if side == "max" else exceeds(bound, m)):
            continue
        word = "above the maximum" if side == "max" else "below the minimum"
        where = "at the plant's influent" if common["point"] == "plant_influent" else \
            f"at {common['manhole_id']}"
        t = times[sel]
        msg = (f"{common['parameter']} 24-hour average {m:.4g} {x.unit} {where} "
               f"({int(sel.sum())} result(s) {fmt_time(t[0])}..{fmt_time(t[-1])}"
               f"{span_note(t)}) {word} {bound:g} {x.unit}")
        ev = event(kind, side, g[sel], m, x.unit, bound, x.unit, x.section, msg, t[0], t[-1],
                    basis="24h_average", **common)
        out.append(ev)
    return out


def _add_suspects(ctx: _Context, events: list[dict[str, Any]]) -> None:
    cache: dict[Any, tuple[str, str]] = {}
    for e in events:
        if e.get("suspects") is not None:
            continue
        mh = e["manhole_id"]
        if mh not in cache:
            up = ctx.upstream_users(mh) if mh in ctx.G else None
            cache[mh] = ("", "") if up is None or not len(up) else user_labels(up)
        e["suspects"], e["suspect_user_ids"] = cache[mh]
