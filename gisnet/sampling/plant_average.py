"""The flow-weighted average at a plant, from the users' results and process flows.

Poughkeepsie § 168-22.5C(9) limits copper, zinc, chromium and the like to
"average quantities in the sewage as it arrives at the treatment plant". Where
no sample was taken at the plant, the plant's average is bounded from below by
the loads measured upstream: at each sampled manhole the mean concentration of
its results times the process flow of the industrial users upstream of it (a
lower bound of the flow through it), summed over manholes that share no user
(the largest load first, so no load is counted twice), over the plant's
average flow. Every other inflow is counted as carrying none of the substance,
so the plant's average is at least this figure: above the limit, the plant's
average is above it too.

The plant's flow is, in order: its monthly flows (``plant_flows``) in the
months of the results used; else the latest ``capacity.plant_months``
consecutive complete months; else the plants layer's ``avg_flow_mgd``.

Units: concentrations in mg/L, flows in gpd.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import pandas as pd

from ..capacity.plants import plant_windows
from ..rules import exceeds
from ..units import MGD_TO_GPD
from .findings import event, row, user_labels

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town


def plant_ids(town: Town, G: nx.MultiDiGraph) -> dict[Any, str]:
    """Location -> plant id, for every plant's ``plant_id`` and ``node_id``."""
    out: dict[Any, str] = {}
    plants = town.layer("plants")
    if plants is None or "plant_id" not in plants:
        return out
    nodes = plants["node_id"] if "node_id" in plants else pd.Series(None, index=plants.index)
    for pid, nid in zip(plants["plant_id"], nodes, strict=True):
        if pid is None or pd.isna(pid):
            continue
        out[str(pid)] = str(pid)
        if nid is not None and pd.notna(nid):
            out[str(nid)] = str(pid)
    return out


def plant_flow_gpd(town: Town, plant_id: str, months: set[str]) -> tuple[float, str]:
    """A plant's average flow (gpd) for a flow-weighted average, and where it came from."""
    monthly = town.plant_flows
    if monthly is not None and len(monthly):
        mine = monthly[monthly["plant_id"].astype(str) == str(plant_id)]
        same = mine[mine["month"].astype(str).isin(months)]
        if len(same):
            f = float(same.groupby("month")["avg_flow_mgd"].mean().mean())
            used = ", ".join(sorted(set(same["month"].astype(str))))
            return f * MGD_TO_GPD, f"plant_flows of {used}"
        if len(mine):
            k = int(town.profile.capacity.plant_months)
            w = plant_windows(mine, k)
            if np.isfinite(w.latest_mgd):
                return w.latest_mgd * MGD_TO_GPD, \
                    f"plant_flows, latest {k} months {w.latest[0]}..{w.latest[-1]}"
    plants = town.layer("plants")
    if plants is not None and "avg_flow_mgd" in plants:
        sel = plants[plants["plant_id"].astype(str) == str(plant_id)]
        f = pd.to_numeric(sel["avg_flow_mgd"], errors="coerce").dropna()
        if len(f):
            return float(f.iloc[0]) * MGD_TO_GPD, "the plants layer's avg_flow_mgd"
    return float("nan"), ""


def flow_weighted_rows(ctx: Any, df: pd.DataFrame, events: list[dict[str, Any]]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Flow-weighted plant averages of the ``plant_influent`` limits.

    Parameters
    ----------
    ctx
        The check context of :func:`gisnet.sampling.check_samples` (``limits``,
        ``G``, ``town``, ``at_plant``, ``plant_id``, ``upstream_users``).
    df
        The checked results (``manhole_id, param, cvalue, datetime, line``).
    events
        The findings so far: each ``screening_exceedance`` of a parameter gets
        the plant's figure appended to its message.

    Returns
    -------
    (findings, problems)
        An ``exceedance`` (rule ``max``, basis ``flow_weighted_at_plant``,
        point ``plant_influent``) per plant and parameter whose flow-weighted
        average is above the limit; a ``plant_flow_unknown`` problem where the
        plant's flow is not known.
    """
    found: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    for param, ls in ctx.limits.items():
        xs = [x for x in ls if x.where == "plant_influent" and x.max is not None
              and x.dimension == "concentration"]
        if not xs or not len(df):
            continue
        x = xs[0]
        sub = df[df["param"] == param]
        keep = [mh in ctx.G and not ctx.at_plant(mh) for mh in sub["manhole_id"]]
        sub = sub[np.asarray(keep, bool)] if len(sub) else sub
        by_plant: dict[str, list[dict[str, Any]]] = {}
        for mh, g in sub.groupby("manhole_id", sort=True):
            plant = ctx.plant_id(mh)
            up = ctx.upstream_users(mh)
            if plant is None or not len(up):
                continue
            q = pd.to_numeric(up["process_flow_gpd"], errors="coerce")
            up = up[(q > 0).to_numpy()]
            if not len(up):
                continue
            qsum = float(pd.to_numeric(up["process_flow_gpd"]).sum())
            mean = float(g["cvalue"].mean())
            by_plant.setdefault(plant, []).append({
                "mh": mh, "mean": mean, "q": qsum, "load": mean * qsum, "g": g, "up": up,
                "users": set(up["user_id"].astype(str))})
        for plant, cands in sorted(by_plant.items()):
            chosen: list[dict[str, Any]] = []
            taken: set[str] = set()
            for c in sorted(cands, key=lambda c: (-c["load"], str(c["mh"]))):
                if c["users"] & taken:
                    continue
                chosen.append(c)
                taken |= c["users"]
            g_all = pd.concat([c["g"] for c in chosen])
            t = pd.to_datetime(g_all["datetime"])
            months = {f"{d:%Y-%m}" for d in t}
            qp, source = plant_flow_gpd(ctx.town, plant, months)
            if not (np.isfinite(qp) and qp > 0):
                problems.append(row(
                    "problem", "plant_flow_unknown", plant_id=plant, parameter=param,
                    manhole_id=plant, message=f"plant {plant} has no flow (plant_flows or "
                    f"avg_flow_mgd): the flow-weighted {param} average at the plant cannot be "
                    "computed"))
                continue
            load = sum(c["load"] for c in chosen)
            conc = load / qp
            over = bool(exceeds(conc, x.max))
            terms = " + ".join(f"{c['mean']:.4g} {x.unit} at {c['mh']} x {c['q']:,.0f} gpd"
                               for c in chosen)
            figure = (f"flow-weighted {param} at plant {plant} at least {conc:.4g} {x.unit} = "
                      f"({terms}) / plant flow {qp:,.0f} gpd ({source}); other inflows "
                      "counted as carrying none")
            for e in events:
                if e["kind"] == "screening_exceedance" and e["parameter"] == param \
                        and e.get("plant_id") == plant and e["rule"] != "hourly":
                    e["message"] += (f"; {figure}: {'above' if over else 'not above'} "
                                     f"{x.max:g} {x.unit}")
            if not over:
                continue
            up = pd.concat([c["up"] for c in chosen]).sort_values(
                "process_flow_gpd", ascending=False, kind="stable")
            suspects, ids = user_labels(up)
            msg = (f"{figure}: above the average limit {x.max:g} {x.unit} in the sewage as "
                   f"it arrives at the treatment plant")
            found.append(event("exceedance", "max", g_all, conc, x.unit, x.max, x.unit,
                               x.section, msg, t.min(), t.max(),
                               basis="flow_weighted_at_plant", point="plant_influent",
                               manhole_id=plant, plant_id=plant, parameter=param,
                               suspects=suspects, suspect_user_ids=ids))
    return found, problems
