"""Checks of sample results against the profile's limits, naming upstream suspects.

:func:`check_samples` reads a CSV of lab results (``manhole_id, datetime,
parameter, value, unit``) and checks it against the profile's ``[limits]``:
each parameter's max/min, the hourly rule ("at no time shall the hourly
concentration be three times the average concentration") and the slug rule
(more than ``slug_factor`` x normal strength of BOD/SS for more than
``slug_minutes``). Each exceedance lists the industrial users upstream of its
manhole (:func:`gisnet.tracing.trace_upstream`), largest process flow first.
Units are those of :mod:`.parameters`.
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
from .parameters import CANONICAL_UNIT, canonical_parameter, profile_limits, to_canonical
from .plan import fmt_gpd

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

SAMPLE_COLUMNS = ("manhole_id", "datetime", "parameter", "value", "unit")

CHECK_COLUMNS = [
    "kind", "rule", "manhole_id", "parameter", "start", "end", "duration_min", "n_samples",
    "value", "unit", "limit", "limit_unit", "section", "message", "lines", "suspects",
    "suspect_user_ids",
]


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


def _runs(flag: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) inclusive index pairs of consecutive True runs."""
    out = []
    i, n = 0, len(flag)
    while i < n:
        if flag[i]:
            j = i
            while j + 1 < n and flag[j + 1]:
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def check_samples(
    town: Town,
    G: nx.MultiDiGraph,
    csv_path: str | Path,
    *,
    index: DownstreamIndex | None = None,
    points: gpd.GeoDataFrame | None = None,
) -> pd.DataFrame:
    """Check lab results against the profile's limits; name upstream suspects.

    Rules, per manhole and parameter, samples in time order:

    - ``max`` / ``min``: each result against the profile's limit for the
      parameter; consecutive results beyond the same limit are one exceedance.
    - ``slug``: BOD or SS above ``slug_factor`` x normal strength
      (``normal_bod_mg_l`` / ``normal_ss_mg_l``) in consecutive results spanning
      more than ``slug_minutes`` (first to last result of the run). The
      results of a slug are reported once, as the slug, with the section of
      the plain limit they also break.
    - ``hourly``: a clock hour's mean at or above ``hourly_max_over_average`` x the
      mean of all results of the file for that manhole and parameter (only
      for parameters limited in the same section as the hourly rule, the
      metals table in Poughkeepsie; all concentrations if none is).

    Problems are rows too: ``malformed`` (with the line), ``unknown_parameter``,
    ``unknown_unit`` (wrong dimension or unknown spelling), ``no_limit``
    (known parameter the profile does not limit) and ``unknown_manhole``.

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
        One row per exceedance or problem: ``kind`` (``exceedance`` |
        ``problem``), ``rule``, ``manhole_id``, ``parameter``, ``start``,
        ``end``, ``duration_min``, ``n_samples``, ``value`` (the worst, in
        ``unit``, the canonical unit), ``limit``, ``limit_unit``, ``section``,
        ``message``, ``lines`` (line numbers in the file), ``suspects``
        (upstream industrial users, largest process flow first, as text) and
        ``suspect_user_ids``. Exceedances come first, in time order.
    """
    df, bad = read_samples(csv_path)
    lim = town.profile.limits
    limits = profile_limits(town.profile)
    rows: list[dict[str, Any]] = []
    for b in bad:
        rows.append(_row("problem", "malformed", manhole_id=b.get("manhole_id"),
                         parameter=b.get("parameter"), lines=str(b["line"]),
                         message=f"line {b['line']}: {b['problem']}"))
    known = set(limits)
    if len(df):
        df["param"] = [canonical_parameter(p, known) for p in df["parameter"]]
        conv = [to_canonical(v, u) for v, u in zip(df["value"], df["unit"], strict=True)]
        df["dim"] = [None if c is None else c[0] for c in conv]
        df["cvalue"] = [np.nan if c is None else c[1] for c in conv]
    else:
        df = df.assign(param=None, dim=None, cvalue=np.nan)
    # unknown parameters
    for name, g in df[df["param"].isna()].groupby("parameter", sort=True):
        rows.append(_row("problem", "unknown_parameter", parameter=name,
                         lines=_lines(g), n_samples=len(g),
                         message=f"parameter {name!r} is not known; {len(g)} result(s) not "
                                 "checked"))
    df = df[df["param"].notna()]
    # known parameter without a limit in the profile
    for name, g in df[~df["param"].isin(known)].groupby("param", sort=True):
        rows.append(_row("problem", "no_limit", parameter=name, lines=_lines(g),
                         n_samples=len(g),
                         message=f"the profile sets no limit for {name}; {len(g)} result(s) "
                                 "not checked"))
    df = df[df["param"].isin(known)].copy()
    # unit of the wrong dimension or unknown
    lim_dim = {p: ls[0].dimension for p, ls in limits.items()}
    wrong = df["dim"].isna() | (df["dim"] != df["param"].map(lim_dim))
    for (name, unit), g in df[wrong].groupby(["param", "unit"], sort=True):
        rows.append(_row("problem", "unknown_unit", parameter=name, unit=unit,
                         lines=_lines(g), n_samples=len(g),
                         message=f"unit {unit!r} cannot be converted exactly to "
                                 f"{CANONICAL_UNIT[lim_dim[name]]} for {name}; "
                                 f"{len(g)} result(s) not checked"))
    df = df[~wrong].sort_values(["manhole_id", "param", "datetime", "line"], kind="stable")
    # unknown manholes: still checked, but nobody can be named upstream
    for mh, g in df[~df["manhole_id"].isin(set(G.nodes))].groupby("manhole_id", sort=True):
        rows.append(_row("problem", "unknown_manhole", manhole_id=mh, lines=_lines(g),
                         n_samples=len(g),
                         message=f"manhole {mh!r} is not in the sewer graph; its results are "
                                 "checked but no upstream users can be named"))
    events: list[dict[str, Any]] = []
    slug_factor = lim.slug_factor
    slug_minutes = lim.slug_minutes
    normal = {"bod": lim.normal_bod_mg_l, "ss": lim.normal_ss_mg_l}
    hourly_x = lim.hourly_max_over_average
    hourly_sec = lim.hourly_section
    hourly_params = {p for p, ls in limits.items() if any(x.section == hourly_sec for x in ls)}
    if not hourly_params:
        hourly_params = {p for p, d in lim_dim.items() if d == "concentration"}
    for (mh, param), g in df.groupby(["manhole_id", "param"], sort=True):
        g = g.reset_index(drop=True)
        vals = g["cvalue"].to_numpy(float)
        times = pd.to_datetime(g["datetime"]).to_numpy()
        in_slug = np.zeros(len(g), bool)
        # slug
        if param in normal and normal[param] and slug_factor and slug_minutes is not None:
            thr = float(slug_factor) * float(normal[param])
            for a, b in _runs(vals > thr):
                minutes = (times[b] - times[a]) / np.timedelta64(1, "m")
                if minutes > float(slug_minutes):
                    in_slug[a:b + 1] = True
                    also = [x for x in limits[param] if x.max is not None
                            and (vals[a:b + 1] > x.max).any()]
                    sec = "; ".join([str(lim.slug_section)] + [x.section for x in also])
                    msg = (f"slug: {param} above {slug_factor:g} x normal "
                           f"({thr:g} mg/L) for {minutes:g} min (> {slug_minutes:g} min), "
                           f"peak {vals[a:b + 1].max():g} mg/L")
                    if also:
                        msg += "; also above the limit " + ", ".join(
                            f"{x.max:g} {x.unit} ({x.section})" for x in also)
                    events.append(_event("slug", mh, param, g.iloc[a:b + 1], vals[a:b + 1].max(),
                                         "mg/L", thr, "mg/L", sec, msg, times[a], times[b]))
        # plain limits
        for x in limits[param]:
            for kind, bound in (("max", x.max), ("min", x.min)):
                if bound is None:
                    continue
                over = (vals > bound) if kind == "max" else (vals < bound)
                over &= ~in_slug
                for a, b in _runs(over):
                    seg = vals[a:b + 1]
                    worst = seg.max() if kind == "max" else seg.min()
                    word = "above the maximum" if kind == "max" else "below the minimum"
                    msg = f"{param} {worst:g} {x.unit} {word} {bound:g} {x.unit}"
                    if x.basis or x.where:
                        msg += " (limit basis: " + ", ".join(
                            s for s in (x.basis, x.where) if s) + ")"
                    events.append(_event(kind, mh, param, g.iloc[a:b + 1], worst, x.unit, bound,
                                         x.unit, x.section, msg, times[a], times[b]))
        # hourly
        if hourly_x and param in hourly_params and len(g) > 1:
            avg = vals.mean()
            hours = pd.Series(vals).groupby(pd.to_datetime(times).floor("h").to_numpy())
            hmean = hours.mean()
            unit = CANONICAL_UNIT[lim_dim[param]]
            for h, m in hmean.items():
                if avg > 0 and exceeds(m, float(hourly_x) * avg, strict=False):
                    sel = pd.to_datetime(times).floor("h") == h
                    msg = (f"hourly: {param} mean {m:g} {unit} in the hour from {h} is "
                           f"{m / avg:.2f} x the average {avg:g} {unit} (limit "
                           f"{float(hourly_x):g} x)")
                    events.append(_event("hourly", mh, param, g[sel], m, unit,
                                         float(hourly_x) * avg, unit, str(hourly_sec), msg,
                                         np.datetime64(h), np.datetime64(h) +
                                         np.timedelta64(59, "m")))
    _add_suspects(town, G, events, index=index, points=points)
    events.sort(key=lambda e: (e["start"], e["manhole_id"], e["parameter"], e["rule"]))
    out = pd.DataFrame(events + rows, columns=CHECK_COLUMNS)
    log.info("samples: %d exceedance(s), %d problem(s)", len(events), len(rows))
    return out


def _lines(g: pd.DataFrame) -> str:
    return ",".join(str(int(x)) for x in g["line"])


def _row(kind: str, rule: str, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(CHECK_COLUMNS)
    r.update(kind=kind, rule=rule, **kw)
    return r


def _event(rule: str, mh: Any, param: str, g: pd.DataFrame, value: float, unit: str,
           limit: float, limit_unit: str, section: str, message: str, t0: Any, t1: Any
           ) -> dict[str, Any]:
    t0, t1 = pd.Timestamp(t0), pd.Timestamp(t1)
    return _row("exceedance", rule, manhole_id=mh, parameter=param, start=t0, end=t1,
                duration_min=(t1 - t0).total_seconds() / 60.0, n_samples=len(g),
                value=float(value), unit=unit, limit=float(limit), limit_unit=limit_unit,
                section=section, message=message, lines=_lines(g))


def _add_suspects(town: Town, G: nx.MultiDiGraph, events: list[dict[str, Any]], *,
                  index: DownstreamIndex | None, points: gpd.GeoDataFrame | None) -> None:
    if not events:
        return
    users = town.layer("users")
    mhs = {e["manhole_id"] for e in events if e["manhole_id"] in G}
    cache: dict[Any, tuple[str, str]] = {}
    if users is not None and len(users) and mhs:
        idx = DownstreamIndex.of(G, index)
        if points is None:
            points = connection_points(town, G, index=idx)
        for mh in sorted(mhs, key=str):
            up = trace_upstream(town, G, mh, points=points, index=idx)["users"]
            names = []
            for _, u in up.iterrows():
                f = u.get("process_flow_gpd")
                label = str(u["user_id"])
                nm = u.get("name")
                if nm is not None and pd.notna(nm) and str(nm) != label:
                    label += f" {nm}"
                label += f" ({fmt_gpd(f)})" if f is not None and pd.notna(f) else \
                    " (process flow unknown)"
                names.append(label)
            cache[mh] = ("; ".join(names), ",".join(str(x) for x in up["user_id"]))
    for e in events:
        e["suspects"], e["suspect_user_ids"] = cache.get(e["manhole_id"], ("", ""))
