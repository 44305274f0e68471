"""Industrial users, the sampling plan and checks of sample results.

- :func:`sampling_plan`: every industrial user with its control manhole
  (:mod:`gisnet.tracing`), the plant it drains to, its Significant Industrial
  User status under 40 CFR 403.3(v) (>= 25,000 gpd average process
  wastewater, >= 5 % of the plant's design flow, or categorical; numbers from
  the profile's ``[pretreatment]``) and the profile's local review threshold
  (Poughkeepsie § 168-22.5G(4): average flow > 10,000 gpd), each with its reason
  and section.
- :func:`check_samples`: a CSV of lab results (``manhole_id, datetime,
  parameter, value, unit``) against the profile's ``[limits]``: each
  parameter's max/min, the hourly rule ("at no time shall the hourly
  concentration be three times the average concentration") and the slug rule
  (more than ``slug_factor`` x normal strength of BOD/SS for more than
  ``slug_minutes``). Each exceedance lists the industrial users upstream of its
  manhole, largest process flow first.

Units: flows in gpd, plant design flow in MGD, concentrations in mg/L (ppm is
taken as equal to mg/L, as the ordinances use it for dilute wastewater), µg/L
and ppb as 0.001 mg/L, temperature in °F (°C converted exactly). No other
conversion is guessed: an unknown unit or parameter is reported as such.
"""

from __future__ import annotations

import csv
import datetime as dt
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from .capacity import exceeds
from .errors import LayerError, SchemaError
from .tracing import DownstreamIndex, connection_points, control_manholes, trace_upstream

if TYPE_CHECKING:  # pragma: no cover
    from .town import Town

log = logging.getLogger(__name__)

#: 40 CFR 403.3(v)(1), used when the profile has no [pretreatment] table.
FEDERAL_SIU = {
    "siu_process_flow_gpd": 25_000.0,
    "siu_plant_fraction": 0.05,
    "siu_categorical": True,
    "siu_section": "40 CFR 403.3(v)(1)",
}

PLAN_COLUMNS = [
    "user_id", "name", "building_id", "parcel_id", "main_id", "control_manhole_id", "plant_id",
    "path_length_ft", "process_flow_gpd", "categorical", "plant_design_flow_mgd",
    "plant_share_pct", "siu", "siu_reason", "review", "review_reason", "section",
]

SAMPLE_COLUMNS = ("manhole_id", "datetime", "parameter", "value", "unit")

CHECK_COLUMNS = [
    "kind", "rule", "manhole_id", "parameter", "start", "end", "duration_min", "n_samples",
    "value", "unit", "limit", "limit_unit", "section", "message", "lines", "suspects",
    "suspect_user_ids",
]

# -- parameters and units ----------------------------------------------------

#: Canonical parameter name -> spellings accepted in a results file.
PARAMETER_ALIASES: dict[str, tuple[str, ...]] = {
    "bod": ("bod", "bod5", "bod 5", "biochemical oxygen demand", "5 day bod"),
    "ss": ("ss", "tss", "suspended solids", "total suspended solids"),
    "ph": ("ph",),
    "temperature": ("temperature", "temp"),
    "cyanide": ("cyanide", "cn", "total cyanide", "cyanide total"),
    "iron": ("iron", "fe"),
    "chromium": ("chromium", "cr", "total chromium"),
    "nickel": ("nickel", "ni"),
    "copper": ("copper", "cu"),
    "cadmium": ("cadmium", "cd"),
    "zinc": ("zinc", "zn"),
    "h2s": ("h2s", "hydrogen sulfide", "hydrogen sulphide"),
    "so2": ("so2", "sulfur dioxide", "sulphur dioxide"),
    "nox": ("nox", "oxides of nitrogen", "nitrogen oxides"),
    "emulsified_oil_grease": ("emulsified oil grease", "oil and grease", "o&g", "fog",
                              "emulsified oil and grease"),
}

#: Unit spelling -> (dimension, factor to the canonical unit). Canonical units:
#: concentration mg/L, pH standard units, temperature °F (handled apart).
UNITS: dict[str, tuple[str, float]] = {
    "mg/l": ("concentration", 1.0),
    "ppm": ("concentration", 1.0),
    "mg l": ("concentration", 1.0),
    "ug/l": ("concentration", 0.001),
    "µg/l": ("concentration", 0.001),
    "μg/l": ("concentration", 0.001),
    "ppb": ("concentration", 0.001),
    "ph": ("ph", 1.0),
    "su": ("ph", 1.0),
    "s.u.": ("ph", 1.0),
    "std units": ("ph", 1.0),
    "standard units": ("ph", 1.0),
    "degf": ("temperature_f", 1.0),
    "°f": ("temperature_f", 1.0),
    "f": ("temperature_f", 1.0),
    "deg f": ("temperature_f", 1.0),
    "fahrenheit": ("temperature_f", 1.0),
    "degc": ("temperature_c", 1.0),
    "°c": ("temperature_c", 1.0),
    "c": ("temperature_c", 1.0),
    "deg c": ("temperature_c", 1.0),
    "celsius": ("temperature_c", 1.0),
}
CANONICAL_UNIT = {"concentration": "mg/L", "ph": "pH", "temperature": "degF"}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", str(text).strip().lower().replace("_", " ").replace("-", " "))


_ALIAS = {_norm(a): k for k, names in PARAMETER_ALIASES.items() for a in names}


def canonical_parameter(name: str, known: set[str] | None = None) -> str | None:
    """Canonical parameter name of a spelling, or None if unknown.

    ``known`` adds the profile's own parameter names.
    """
    n = _norm(name)
    if n in _ALIAS:
        return _ALIAS[n]
    for k in known or ():
        if _norm(k) == n:
            return k
    return None


def to_canonical(value: float, unit: str) -> tuple[str, float] | None:
    """``(dimension, value in canonical unit)``; None if the unit is unknown.

    Dimensions: ``concentration`` (mg/L), ``ph``, ``temperature`` (°F).
    """
    u = UNITS.get(str(unit).strip().lower().replace("º", "°"))
    if u is None:
        u = UNITS.get(_norm(unit))
    if u is None:
        return None
    dim, factor = u
    if dim == "temperature_c":
        return "temperature", value * 9.0 / 5.0 + 32.0
    if dim == "temperature_f":
        return "temperature", value
    return dim, value * factor


# -- profile access -----------------------------------------------------------


def _section(profile: Any, name: str) -> dict[str, Any]:
    """A profile section as a plain dict (empty if the profile has none)."""
    part = getattr(profile, name, None) if profile is not None else None
    if part is None:
        return {}
    if hasattr(part, "to_dict"):
        return part.to_dict()
    return dict(part)


@dataclass(frozen=True)
class _Limit:
    parameter: str
    dimension: str
    max: float | None
    min: float | None
    unit: str
    section: str
    basis: str | None
    where: str | None


def _limits(profile: Any) -> tuple[dict[str, list[_Limit]], dict[str, Any]]:
    lim = _section(profile, "limits")
    out: dict[str, list[_Limit]] = {}
    for p in lim.get("parameter", []) or []:
        conv_max = to_canonical(p["max"], p["unit"]) if p.get("max") is not None else None
        conv_min = to_canonical(p["min"], p["unit"]) if p.get("min") is not None else None
        dim_src = to_canonical(0.0, p["unit"])
        if dim_src is None:
            log.warning("profile limit %s has unit %r gisnet does not know; not checked",
                        p["name"], p["unit"])
            continue
        out.setdefault(p["name"], []).append(
            _Limit(p["name"], dim_src[0], None if conv_max is None else conv_max[1],
                   None if conv_min is None else conv_min[1],
                   CANONICAL_UNIT[dim_src[0]], p["section"], p.get("basis"), p.get("where"))
        )
    return out, lim


# -- sampling plan -------------------------------------------------------------


def _fmt_gpd(x: float) -> str:
    return f"{x:,.0f} gpd"


def sampling_plan(
    town: Town,
    G: nx.MultiDiGraph,
    *,
    index: DownstreamIndex | None = None,
    points: gpd.GeoDataFrame | None = None,
) -> gpd.GeoDataFrame:
    """Industrial users with their control manhole, SIU status and review flag.

    Parameters
    ----------
    town
        Loaded town; its ``users`` layer (``process_flow_gpd``, ``categorical``)
        and ``plants`` layer (``design_flow_mgd``) are used.
    G
        Sewer graph.
    index, points
        A :class:`~gisnet.tracing.DownstreamIndex` and
        :func:`~gisnet.tracing.connection_points` output to reuse.

    Returns
    -------
    GeoDataFrame
        One row per user: ``user_id, name, building_id, parcel_id, main_id,
        control_manhole_id, plant_id, path_length_ft, process_flow_gpd,
        categorical, plant_design_flow_mgd, plant_share_pct`` (process flow as
        % of the plant's design flow), ``siu`` (bool), ``siu_reason``,
        ``review`` (bool), ``review_reason``, ``section``; geometry = the tap
        point (working CRS). ``review`` applies the profile's
        ``local_review_flow_gpd`` (strictly greater) to the user's average
        process flow, the only flow the users layer carries.
    """
    idx = DownstreamIndex.of(G, index)
    users = town.layer("users")
    crs = idx.crs
    if users is None or not len(users):
        df = pd.DataFrame({c: pd.Series([], dtype=object) for c in PLAN_COLUMNS})
        return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries([], crs=crs), crs=crs)
    if points is None:
        points = connection_points(town, G, index=idx)
    upts = points[points["user_id"].notna()]
    cm = control_manholes(town, G, points=upts, index=idx, paths=False)["control_manholes"]
    cm = cm.drop_duplicates("user_id").set_index("user_id")
    pre = {**FEDERAL_SIU, **_section(town.profile, "pretreatment")}
    uid = users["user_id"].astype(object)
    flow = pd.to_numeric(users.get("process_flow_gpd"), errors="coerce").astype(float) \
        if "process_flow_gpd" in users else pd.Series(np.nan, index=users.index)
    categorical = users["categorical"].fillna(False).astype(bool) \
        if "categorical" in users else pd.Series(False, index=users.index)
    plant_id = uid.map(cm["plant_id"])
    design = _plant_design_mgd(town)
    design_mgd = plant_id.map(design).astype(float)
    share = flow / (design_mgd * 1e6)
    rows_reason: list[str] = []
    rows_review: list[str] = []
    siu = np.zeros(len(users), bool)
    review = np.zeros(len(users), bool)
    thr = float(pre["siu_process_flow_gpd"])
    frac = float(pre["siu_plant_fraction"])
    local = pre.get("local_review_flow_gpd")
    for i in range(len(users)):
        f, s, c = flow.iloc[i], share.iloc[i], bool(categorical.iloc[i])
        reasons = []
        if pd.notna(f) and f >= thr:
            reasons.append(f"process wastewater {_fmt_gpd(f)} >= {_fmt_gpd(thr)}")
        if pd.notna(s) and exceeds(s, frac, strict=False):
            reasons.append(
                f"process wastewater {s:.1%} of plant {plant_id.iloc[i]} design flow "
                f"{design_mgd.iloc[i]:g} MGD (>= {frac:.0%})"
            )
        if c and pre.get("siu_categorical", True):
            reasons.append("categorical industrial user")
        if pd.isna(f) and not reasons:
            reasons.append("process flow unknown: status cannot be decided")
        siu[i] = any(not r.startswith("process flow unknown") for r in reasons)
        rows_reason.append("; ".join(reasons))
        rr = ""
        if local is not None:
            if pd.notna(f) and f > float(local):
                review[i] = True
                rr = f"average flow {_fmt_gpd(f)} > {_fmt_gpd(float(local))}"
            elif pd.isna(f):
                rr = "process flow unknown"
        rows_review.append(rr)
    sec_cm = _section(town.profile, "control_manhole").get("section")
    sections = []
    for i in range(len(users)):
        parts = [p for p in (sec_cm,) if p]
        if siu[i]:
            parts.append(str(pre["siu_section"]))
        if review[i] and pre.get("local_review_section"):
            parts.append(str(pre["local_review_section"]))
        sections.append("; ".join(parts))

    def from_cm(col: str) -> np.ndarray:
        return uid.map(cm[col]).to_numpy(dtype=object) if col in cm else np.full(len(uid), None)

    out = gpd.GeoDataFrame(
        {
            "user_id": uid.to_numpy(dtype=object),
            "name": users["name"].to_numpy(dtype=object) if "name" in users else None,
            "building_id": from_cm("building_id"),
            "parcel_id": from_cm("parcel_id"),
            "main_id": from_cm("main_id"),
            "control_manhole_id": from_cm("control_manhole_id"),
            "plant_id": plant_id.to_numpy(dtype=object),
            "path_length_ft": pd.to_numeric(uid.map(cm["path_length_ft"]),
                                            errors="coerce").to_numpy(float),
            "process_flow_gpd": flow.to_numpy(float),
            "categorical": categorical.to_numpy(bool),
            "plant_design_flow_mgd": design_mgd.to_numpy(float),
            "plant_share_pct": (share * 100).to_numpy(float),
            "siu": siu,
            "siu_reason": rows_reason,
            "review": review,
            "review_reason": rows_review,
            "section": sections,
        },
        geometry=gpd.GeoSeries(uid.map(cm["geometry"]).to_numpy(dtype=object), crs=crs),
        crs=crs,
    )
    log.info("sampling plan: %d users, %d SIU, %d for review", len(out), int(siu.sum()),
             int(review.sum()))
    return out


def _plant_design_mgd(town: Town) -> dict[Any, float]:
    plants = town.layer("plants")
    if plants is None or "design_flow_mgd" not in plants:
        return {}
    d: dict[Any, float] = {}
    flows = pd.to_numeric(plants["design_flow_mgd"], errors="coerce")
    for col in ("node_id", "plant_id"):  # plant_id wins where both exist
        if col in plants:
            for k, f in zip(plants[col].astype(object), flows, strict=True):
                if k is not None and pd.notna(k) and pd.notna(f):
                    d[k] = float(f)
    return d


# -- sample checks ---------------------------------------------------------------


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
    limits, lim = _limits(town.profile)
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
    slug_factor = lim.get("slug_factor")
    slug_minutes = lim.get("slug_minutes")
    normal = {"bod": lim.get("normal_bod_mg_l"), "ss": lim.get("normal_ss_mg_l")}
    hourly_x = lim.get("hourly_max_over_average")
    hourly_sec = lim.get("hourly_section")
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
                    sec = "; ".join([str(lim.get("slug_section"))] + [x.section for x in also])
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
                label += f" ({_fmt_gpd(f)})" if f is not None and pd.notna(f) else \
                    " (process flow unknown)"
                names.append(label)
            cache[mh] = ("; ".join(names), ",".join(str(x) for x in up["user_id"]))
    for e in events:
        e["suspects"], e["suspect_user_ids"] = cache.get(e["manhole_id"], ("", ""))
