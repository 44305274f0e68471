"""Flows, peaking, Manning full-flow capacity, utilization, plants and what-if.

Everything here is in US customary units: diameters in inches, lengths and
inverts in feet, slopes in ft/ft, flows in gallons per day (gpd) or cubic feet
per second (cfs), plant flows in MGD. Geometry stays in the town's working CRS.

The pipeline is:

1. :func:`parcel_flows` -- the average daily flow of every parcel (metered, else
   the profile's unit design flows), its population and population equivalents.
2. :func:`edge_inflows` -- parcels and industrial users attach at their
   connection points (:func:`gisnet.tracing.connection_points`): one row per
   graph edge with the domestic flow, industrial flow and population tapped
   into it.
3. :func:`accumulate` -- one topological pass, level by level in numpy, carrying
   domestic flow, industrial flow and population down the graph. At a node
   with several outgoing pipes the flow is split in proportion to full-flow
   capacity. Cycles are found first; each is contracted to one node so that
   everything downstream is still computed, and its own pipes are marked
   ``computed=False``.
4. :func:`compute_capacity` -- Manning full-flow capacity of every pipe, peak
   flow (Harmon peaking on the domestic part), utilization and the threshold
   flags, plus the plants' 3-consecutive-month ratio to design flow.
5. :func:`whatif` -- a proposed connection: only the pipes downstream of its
   connection point are recomputed from the stored result.
"""

from __future__ import annotations

import gc
import heapq
import logging
import operator
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from .errors import ConfigError, NotFoundError, TopologyError
from .report import Report
from .units import CFS_TO_GPD, MGD_TO_GPD

log = logging.getLogger(__name__)

#: (1.486 / 4^(2/3)) * pi / 4: Manning full-flow Q_cfs = K / n * D_ft^(8/3) * S^(1/2).
MANNING_K = 1.486 * np.pi / 4.0 / 4.0 ** (2.0 / 3.0)

#: Fallbacks used only when a profile leaves a value out (DESIGN.md constants).
DEFAULTS: dict[str, Any] = {
    "manning_n": 0.013,
    "utilization_threshold": 0.80,
    "deficient": 0.91,
    "surcharged": 1.0,
    "plant_threshold": 0.80,
    "plant_months": 3,
    "plant_strict": True,
    "plant_section": None,
    "min_velocity_fps": 2.0,
    "gpd_per_person": 100.0,
    "gpd_per_pe": 100.0,
    "peaking_formula": "harmon",
    "peaking_cap": 4.0,
    "peaking_min": None,
}

#: Main kinds that carry sanitary flow (storm mains carry none).
FLOW_KINDS = frozenset({"sanitary", "combined", "force", "unknown", None})


#: Relative tolerance within which a computed ratio or slope equals its limit:
#: decimal inputs do not divide exactly in binary (1.712 / 2.14 MGD gives
#: 0.8000000000000002, (100.28 - 100.00) / 100 ft gives 0.0027999999999997).
LIMIT_RTOL = 1e-9


def exceeds(x: Any, limit: Any, strict: bool = True, rtol: float = LIMIT_RTOL) -> Any:
    """``x > limit`` (``strict``) or ``x >= limit``, a value within ``rtol`` of
    the limit counting as equal to it; NaN never exceeds.

    Parameters
    ----------
    x, limit
        Values and limit in the same unit (scalars or arrays, broadcast).
    strict
        True for "in excess of" / "more than", False for "at least".
    rtol
        Relative tolerance of the equality.

    Returns
    -------
    bool or numpy.ndarray of bool
    """
    xa = np.asarray(x, dtype="float64")
    la = np.asarray(limit, dtype="float64")
    with np.errstate(invalid="ignore"):
        close = np.abs(xa - la) <= rtol * np.abs(la)
        out = ((xa > la) & ~close) if strict else ((xa >= la) | close)
    return bool(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------- formulas


def manning_full_flow_cfs(diameter_in: Any, slope: Any, n: Any = 0.013) -> Any:
    """Full-pipe capacity of circular pipes by Manning's formula, US units.

    ``Q = (1.486 / n) A R^(2/3) S^(1/2)`` with ``A = pi D^2 / 4`` and
    ``R = D / 4``, i.e. ``0.46318 / n * D_ft^(8/3) * S^(1/2)``.

    Parameters
    ----------
    diameter_in
        Inside diameter, inches (scalar or array).
    slope
        Slope, ft/ft (scalar or array, broadcast against ``diameter_in``).
    n
        Manning roughness (scalar or array), default 0.013.

    Returns
    -------
    float or numpy.ndarray
        Capacity in cubic feet per second. NaN (never 0) where the diameter is
        missing or not positive, or the slope is missing, zero or adverse.

    Examples
    --------
    >>> round(float(manning_full_flow_cfs(8, 0.004)), 3)
    0.764
    """
    d = np.asarray(diameter_in, dtype="float64")
    s = np.asarray(slope, dtype="float64")
    nn = np.asarray(n, dtype="float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (d > 0) & (s > 0) & (nn > 0)
        q = np.where(
            ok,
            MANNING_K / np.where(ok, nn, 1.0) * (np.where(ok, d, 0.0) / 12.0) ** (8.0 / 3.0)
            * np.sqrt(np.where(ok, s, 0.0)),
            np.nan,
        )
    return float(q) if q.ndim == 0 else q


def harmon_peaking_factor(
    population: Any, cap: float | None = 4.0, minimum: float | None = None
) -> Any:
    """Ten States / Harmon peaking factor ``(18 + sqrt(P)) / (4 + sqrt(P))``.

    Parameters
    ----------
    population
        Persons served upstream (scalar or array); ``P`` in the formula is this
        divided by 1,000. Negative or missing populations count as 0.
    cap
        Upper bound of the factor (default 4.0; the formula gives 4.5 at P=0).
        None for no cap.
    minimum
        Lower bound of the factor, if the profile sets one.

    Returns
    -------
    float or numpy.ndarray
        Dimensionless peaking factor.

    Examples
    --------
    >>> round(float(harmon_peaking_factor(10_000)), 4)   # P = 10 thousand
    2.9547
    """
    p = np.asarray(population, dtype="float64")
    p = np.where(np.isfinite(p) & (p > 0), p, 0.0) / 1000.0
    r = np.sqrt(p)
    pf = (18.0 + r) / (4.0 + r)
    if cap is not None:
        pf = np.minimum(pf, cap)
    if minimum is not None:
        pf = np.maximum(pf, minimum)
    return float(pf) if pf.ndim == 0 else pf


# --------------------------------------------------------------------------- profile access


def _sec(profile: Any, name: str) -> Any:
    """A profile section as an object or mapping (None if absent)."""
    if profile is None or isinstance(profile, str):
        return None
    if isinstance(profile, dict):
        return profile.get(name)
    sec = getattr(profile, name, None)
    if sec is None:
        raw = getattr(profile, "raw", None)
        if isinstance(raw, dict):
            sec = raw.get(name)
    return sec


def _val(obj: Any, key: str, default: Any = None) -> Any:
    if obj is None:
        return default
    v = obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)
    return default if v is None else v


def _profile(town: Any) -> Any:
    """The town's profile; a name is loaded, and a town without one gets the
    default profile (:data:`gisnet.profile.DEFAULT_PROFILE`)."""
    prof = getattr(town, "profile", None)
    if prof is None or isinstance(prof, str):
        from .profile import load_profile

        prof = load_profile(prof)
    return prof


def _cap_cfg(town: Any) -> dict[str, Any]:
    prof = _profile(town)
    cap = _sec(prof, "capacity")
    flow = _sec(prof, "flow")
    cfg = {k: _val(cap, k, v) for k, v in DEFAULTS.items()}
    for k in ("gpd_per_person", "gpd_per_pe", "peaking_formula", "peaking_cap", "peaking_min"):
        cfg[k] = _val(flow, k, DEFAULTS[k])
    cfg["min_slope_pct"] = {float(k): float(v) for k, v in dict(_val(cap, "min_slope_pct", {}))
                            .items()}
    mat = _val(cap, "manning_n_material", {}) or {}
    cfg["manning_n_material"] = {str(k).strip().upper(): float(v) for k, v in dict(mat).items()}
    formula = str(cfg["peaking_formula"]).lower().replace("-", "_").replace(" ", "_")
    if formula not in {"harmon", "ten_states", "none"}:
        raise ConfigError(f"unknown peaking_formula {cfg['peaking_formula']!r} "
                          "(harmon, ten_states or none)", layer="profile")
    cfg["peaking_formula"] = formula
    return cfg


def _peaking(pop: Any, cfg: dict[str, Any]) -> Any:
    if cfg["peaking_formula"] == "none":
        return np.ones_like(np.asarray(pop, dtype="float64"))
    return harmon_peaking_factor(pop, cap=cfg["peaking_cap"], minimum=cfg["peaking_min"])


# --------------------------------------------------------------------------- parcel flows


def _num(s: pd.Series | None, n: int) -> np.ndarray:
    if s is None:
        return np.full(n, np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def parcel_flows(town: Any) -> pd.DataFrame:
    """Average daily flow of every parcel, its population and population equivalents.

    The basis, in order: metered ``flow_gpd`` (``metered``); bedrooms times the
    profile's ``gpd_per_bedroom`` (``bedrooms``); dwelling units times
    ``gpd_per_dwelling_unit`` (else ``persons_per_dwelling_unit`` x
    ``gpd_per_person``) (``dwelling_units``); the profile's
    ``[flow.land_use_gpd]`` for the parcel's land use (``land_use``); else 0
    (``none``). Parcels marked ``septic`` and not ``connected`` discharge
    nothing to the sewer: they keep their design flow here but
    ``sewered=False``.

    Parameters
    ----------
    town
        A :class:`gisnet.town.Town` with a ``parcels`` layer.

    Returns
    -------
    pandas.DataFrame
        ``parcel_id, avg_flow_gpd, population, pe, basis, sewered``, in parcel
        order. ``population`` = flow / ``gpd_per_person`` (the equivalent
        population that Ten States peaking uses), ``pe`` = flow /
        ``gpd_per_pe``.
    """
    parcels = town.layers["parcels"]
    n = len(parcels)
    flow_cfg = _sec(_profile(town), "flow")
    gpp = float(_val(flow_cfg, "gpd_per_person", DEFAULTS["gpd_per_person"]))
    gppe = float(_val(flow_cfg, "gpd_per_pe", DEFAULTS["gpd_per_pe"]))
    per_bed = _val(flow_cfg, "gpd_per_bedroom")
    per_du = _val(flow_cfg, "gpd_per_dwelling_unit")
    if per_du is None and _val(flow_cfg, "persons_per_dwelling_unit") is not None:
        per_du = float(_val(flow_cfg, "persons_per_dwelling_unit")) * gpp
    lu_table = {str(k).strip().lower(): float(v)
                for k, v in dict(_val(flow_cfg, "land_use_gpd", {}) or {}).items()}

    metered = _num(parcels.get("flow_gpd"), n)
    beds = _num(parcels.get("bedrooms"), n)
    dus = _num(parcels.get("dwelling_units"), n)
    if "land_use" in parcels:
        lu = parcels["land_use"].astype("string").str.strip().str.lower()
        lu_flow = lu.map(lu_table).to_numpy(dtype="float64", na_value=np.nan)
    else:
        lu_flow = np.full(n, np.nan)

    flow = np.zeros(n)
    basis = np.full(n, "none", dtype=object)
    todo = np.ones(n, dtype=bool)
    candidates = [("metered", metered, 1.0)]
    if per_bed is not None:
        candidates.append(("bedrooms", beds, float(per_bed)))
    if per_du is not None:
        candidates.append(("dwelling_units", dus, float(per_du)))
    candidates.append(("land_use", lu_flow, 1.0))
    for name, values, factor in candidates:
        ok = todo & np.isfinite(values) & (values >= 0)
        if name != "metered" and name != "land_use":
            ok &= values > 0
        flow[ok] = values[ok] * factor
        basis[ok] = name
        todo &= ~ok

    septic = parcels["septic"].astype("boolean").fillna(False).to_numpy(dtype=bool) \
        if "septic" in parcels else np.zeros(n, dtype=bool)
    connected = parcels["connected"].astype("boolean").fillna(False).to_numpy(dtype=bool) \
        if "connected" in parcels else np.zeros(n, dtype=bool)
    return pd.DataFrame({
        "parcel_id": parcels["parcel_id"].astype(str).to_numpy(),
        "avg_flow_gpd": flow,
        "population": flow / gpp,
        "pe": flow / gppe,
        "basis": basis,
        "sewered": ~septic | connected,
    })


def _ids(values: Any) -> np.ndarray:
    """Ids as an object array of str, None where missing."""
    arr = pd.Series(values, dtype=object).to_numpy(dtype=object)
    miss = pd.isna(arr)
    if pd.api.types.infer_dtype(arr, skipna=True) in ("string", "empty"):
        out = arr.copy()
    else:
        out = np.empty(len(arr), dtype=object)
        out[:] = [None if m else str(x) for x, m in zip(arr.tolist(), miss.tolist(), strict=True)]
    out[miss] = None
    return out


def edge_inflows(town: Any, points: pd.DataFrame, flows: pd.DataFrame | None = None
                 ) -> pd.DataFrame:
    """Flow tapped into each graph edge by the parcels and users connected to it.

    A parcel's flow is shared equally among its connection points (one per
    building); a user's ``process_flow_gpd`` enters at the user's own point
    as industrial flow (not peaked, no population).

    Parameters
    ----------
    town
        The town (parcels, optional users layer).
    points
        Connection points as from :func:`gisnet.tracing.connection_points`:
        at least ``parcel_id``, ``user_id`` and ``edge_key``.
    flows
        Parcel flows (default: :func:`parcel_flows`).

    Returns
    -------
    pandas.DataFrame
        Indexed by edge key: ``dom_gpd, ind_gpd, population`` (gpd, gpd, persons).
    """
    if flows is None:
        flows = parcel_flows(town)
    n = len(points)
    none = np.full(n, None, dtype=object)
    pid = _ids(points["parcel_id"]) if "parcel_id" in points else none
    uid = _ids(points["user_id"]) if "user_id" in points else none
    ekey = _ids(points["edge_key"]) if "edge_key" in points else none
    has_edge = pd.notna(ekey)
    codes, uniq = pd.factorize(pd.Series(ekey, dtype=object), use_na_sentinel=True)
    out = np.zeros((len(uniq), 3))

    # Parcels: flow / number of the parcel's points, domestic.
    prc = has_edge & pd.isna(uid) & pd.notna(pid)
    if prc.any():
        fl = flows[flows["sewered"].to_numpy(dtype=bool)]
        pos = pd.Index(_ids(fl["parcel_id"]), dtype=object).get_indexer(
            pd.Index(pid[prc], dtype=object))
        pcode, _ = pd.factorize(pd.Series(pid[prc], dtype=object))
        share = np.bincount(pcode)[pcode].astype("float64")
        f = np.where(pos >= 0, fl["avg_flow_gpd"].to_numpy(dtype="float64")[pos], 0.0) / share
        p = np.where(pos >= 0, fl["population"].to_numpy(dtype="float64")[pos], 0.0) / share
        c = codes[prc]
        out[:, 0] += np.bincount(c, weights=f, minlength=len(uniq))
        out[:, 2] += np.bincount(c, weights=p, minlength=len(uniq))
    users = town.layers.get("users") if hasattr(town, "layers") else None
    usr = has_edge & pd.notna(uid)
    if users is not None and usr.any() and "process_flow_gpd" in users:
        uf = pd.Series(_num(users["process_flow_gpd"], len(users)),
                       index=pd.Index(_ids(users["user_id"]), dtype=object))
        uf = uf[~uf.index.duplicated()]
        pos = uf.index.get_indexer(pd.Index(uid[usr], dtype=object))
        q = np.where(pos >= 0, np.nan_to_num(uf.to_numpy()[pos]), 0.0)
        out[:, 1] += np.bincount(codes[usr], weights=q, minlength=len(uniq))
    return pd.DataFrame(out, index=pd.Index(np.asarray(uniq, dtype=object), dtype=object,
                                            name="edge_key"),
                        columns=["dom_gpd", "ind_gpd", "population"])


# --------------------------------------------------------------------------- graph arrays


@dataclass
class _Net:
    """The graph as integer arrays (edge i: u[i] -> v[i])."""

    nodes: list[Any]
    node_idx: dict[Any, int]
    keys: np.ndarray          # edge keys (object)
    key_idx: dict[str, int]
    u: np.ndarray
    v: np.ndarray
    main_id: np.ndarray
    diameter_in: np.ndarray
    length_ft: np.ndarray
    up_inv: np.ndarray
    down_inv: np.ndarray
    stored_slope: np.ndarray
    material: np.ndarray
    kind: np.ndarray
    active: np.ndarray
    gravity: np.ndarray
    geometry: list[Any]


_EDGE_ATTRS = ("main_id", "diameter_in", "length_ft", "up_invert_ft", "down_invert_ft", "slope",
               "material", "kind", "active", "gravity", "geometry")


_get_attrs = operator.itemgetter(*_EDGE_ATTRS)


def _floats(values: tuple[Any, ...]) -> np.ndarray:
    try:
        return np.array(values, dtype="float64")  # None -> NaN
    except (TypeError, ValueError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce") \
            .to_numpy(dtype="float64", na_value=np.nan)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small tuples
    (it otherwise rescans them all repeatedly: ~40 % of the time here)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _graph_arrays(G: nx.MultiDiGraph) -> _Net:
    """One pass over the graph's adjacency into parallel arrays."""
    with _gc_paused():
        return _graph_arrays_impl(G)


def _graph_arrays_impl(G: nx.MultiDiGraph) -> _Net:
    nodes = list(G.nodes)
    node_idx = {nd: i for i, nd in enumerate(nodes)}
    us: list[int] = []
    vs: list[int] = []
    ks: list[Any] = []
    data: list[tuple[Any, ...]] = []
    for u, nbrs in G._succ.items():
        iu = node_idx[u]
        for v, kd in nbrs.items():
            iv = node_idx[v]
            for k, d in kd.items():
                us.append(iu)
                vs.append(iv)
                ks.append(k)
                try:
                    data.append(_get_attrs(d))
                except KeyError:
                    data.append(tuple(map(d.get, _EDGE_ATTRS)))
    cols = list(zip(*data, strict=True)) if data else [()] * len(_EDGE_ATTRS)
    keys = np.array([str(k) for k in ks], dtype=object)
    mids = np.array([str(k) if m is None else str(m) for m, k in zip(cols[0], ks, strict=True)],
                    dtype=object)

    def flag(values: tuple[Any, ...]) -> np.ndarray:  # missing -> True
        return np.array([x is None or bool(x) for x in values], dtype=bool)

    return _Net(
        nodes=nodes, node_idx=node_idx, keys=keys,
        key_idx={k: i for i, k in enumerate(keys)},
        u=np.array(us, dtype=np.int64), v=np.array(vs, dtype=np.int64), main_id=mids,
        diameter_in=_floats(cols[1]), length_ft=_floats(cols[2]), up_inv=_floats(cols[3]),
        down_inv=_floats(cols[4]), stored_slope=_floats(cols[5]),
        material=np.array(cols[6], dtype=object), kind=np.array(cols[7], dtype=object),
        active=flag(cols[8]), gravity=flag(cols[9]), geometry=list(cols[10]),
    )


def _gather(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenate the index ranges [starts[i], starts[i] + counts[i])."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum(counts)
    offs = np.repeat(starts - (ends - counts), counts)
    return offs + np.arange(total, dtype=np.int64)


def _csr(u: np.ndarray, edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Out-edges grouped by tail node: (edge ids ordered by tail, offsets of length n+1)."""
    order = edges[np.argsort(u[edges], kind="stable")]
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u[order], minlength=n), out=off[1:])
    return order, off


def _levels(u: np.ndarray, v: np.ndarray, edges: np.ndarray, n: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Kahn's algorithm level by level over ``edges``.

    Returns node levels (-1 for nodes never freed: in or below a cycle) and
    edge levels (-1 likewise).
    """
    order, off = _csr(u, edges, n)
    indeg = np.bincount(v[edges], minlength=n)
    node_level = np.full(n, -1, dtype=np.int64)
    edge_level = np.full(len(u), -1, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    lvl = 0
    while frontier.size:
        node_level[frontier] = lvl
        es = order[_gather(off[frontier], off[frontier + 1] - off[frontier])]
        if es.size == 0:
            break
        edge_level[es] = lvl
        heads, cnt = np.unique(v[es], return_counts=True)
        indeg[heads] -= cnt
        frontier = heads[indeg[heads] == 0]
        lvl += 1
    return node_level, edge_level


# --------------------------------------------------------------------------- accumulation


@dataclass
class Accumulation:
    """Result of :func:`accumulate` (arrays aligned with the graph's edges).

    Attributes
    ----------
    edge_flow
        (m, 3) domestic gpd, industrial gpd and population leaving each edge
        at its downstream end (NaN where not computed).
    node_flow
        (n, 3) the same arriving at each node (for a contracted cycle, at its
        representative node).
    computed
        Edges whose flow was accumulated (flow-carrying and not in a cycle).
    in_cycle
        Edges inside a cycle.
    frac
        Share of the flow arriving at its tail node that each edge carries.
    rep
        Node -> representative node (itself unless in a cycle).
    node_level
        Topological level of every (representative) node.
    out_order, out_off
        Out-edges of every representative node (CSR), flow edges only.
    cycles
        Main ids of each cycle's pipes.
    splits
        Nodes with several outgoing pipes: ``node_id, main_ids, fractions, basis``.
    """

    edge_flow: np.ndarray
    node_flow: np.ndarray
    computed: np.ndarray
    in_cycle: np.ndarray
    frac: np.ndarray
    rep: np.ndarray
    node_level: np.ndarray
    out_order: np.ndarray
    out_off: np.ndarray
    cycles: list[list[str]]
    splits: pd.DataFrame


def accumulate(net: _Net, local: np.ndarray, flow_edge: np.ndarray, capacity: np.ndarray
               ) -> Accumulation:
    """Carry flows and population down the graph in one topological pass.

    Parameters
    ----------
    net
        Graph arrays.
    local
        (m, 3) domestic gpd, industrial gpd and population tapped into each edge.
    flow_edge
        Edges that carry sanitary flow (active, not storm).
    capacity
        Full-flow capacity of each edge (any unit; NaN unknown), used to split
        the flow at nodes with several outgoing pipes.

    Returns
    -------
    Accumulation
    """
    n, m = len(net.nodes), len(net.u)
    fe = np.flatnonzero(flow_edge)
    node_level, edge_level = _levels(net.u, net.v, fe, n)
    rep = np.arange(n, dtype=np.int64)
    in_cycle = np.zeros(m, dtype=bool)
    cycles: list[list[str]] = []
    left = fe[edge_level[fe] < 0]
    if left.size:
        # Only the nodes Kahn could not free are searched for cycles.
        H = nx.DiGraph()
        H.add_edges_from(zip(net.u[left].tolist(), net.v[left].tolist(), strict=True))
        for comp in nx.strongly_connected_components(H):
            if len(comp) == 1:
                (x,) = comp
                if not H.has_edge(x, x):
                    continue
            c = np.fromiter(comp, dtype=np.int64)
            rep[c] = c.min()
        in_cycle[fe] = (rep[net.u[fe]] == rep[net.v[fe]]) & (
            (rep[net.u[fe]] != net.u[fe]) | (rep[net.v[fe]] != net.v[fe])
            | (net.u[fe] == net.v[fe]))
        groups: dict[int, list[str]] = {}
        for e in np.flatnonzero(in_cycle):
            groups.setdefault(int(rep[net.u[e]]), []).append(str(net.main_id[e]))
        cycles = [sorted(set(g)) for g in groups.values()]
    ru, rv = rep[net.u], rep[net.v]
    dag = fe[~in_cycle[fe]]
    if cycles:
        node_level, edge_level = _levels(ru, rv, dag, n)
    out_order, out_off = _csr(ru, dag, n)

    # Split fractions by capacity among the out-edges of each node.
    frac = np.zeros(m)
    cnt = np.bincount(ru[dag], minlength=n)
    capd = capacity[dag]
    nan = ~np.isfinite(capd)
    csum = np.bincount(ru[dag], weights=np.where(nan, 0.0, capd), minlength=n)
    nnan = np.bincount(ru[dag], weights=nan.astype(float), minlength=n)
    t = ru[dag]
    equal = (nnan[t] > 0) | (csum[t] <= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac[dag] = np.where(equal, 1.0 / cnt[t], capd / csum[t])
    split_nodes = np.flatnonzero(cnt > 1)
    srows = []
    for x in split_nodes:
        es = out_order[out_off[x]:out_off[x + 1]]
        srows.append({
            "node_id": str(net.nodes[x]),
            "main_ids": ",".join(str(k) for k in net.keys[es]),
            "fractions": ",".join(f"{frac[e]:.4f}" for e in es),
            "basis": "equal (capacity unknown)" if (nnan[x] > 0 or csum[x] <= 0)
            else "full-flow capacity",
        })
    splits = pd.DataFrame(srows, columns=["node_id", "main_ids", "fractions", "basis"])

    # Local inflow of cycle edges arrives at the cycle's representative node.
    node_flow = np.zeros((n, 3))
    cyc = np.flatnonzero(in_cycle)
    if cyc.size:
        np.add.at(node_flow, ru[cyc], local[cyc])
    edge_flow = np.full((m, 3), np.nan)
    lv = edge_level[dag]
    order = dag[np.argsort(lv, kind="stable")]
    bounds = np.searchsorted(lv[np.argsort(lv, kind="stable")], np.arange(lv.max() + 2)) \
        if dag.size else np.array([0])
    for i in range(len(bounds) - 1):
        es = order[bounds[i]:bounds[i + 1]]
        if es.size == 0:
            continue
        val = local[es] + node_flow[ru[es]] * frac[es, None]
        edge_flow[es] = val
        np.add.at(node_flow, rv[es], val)
    computed = np.zeros(m, dtype=bool)
    computed[dag] = True
    return Accumulation(edge_flow, node_flow, computed, in_cycle, frac, rep, node_level,
                        out_order, out_off, cycles, splits)


# --------------------------------------------------------------------------- capacity


def _min_slope(diam: np.ndarray, table: dict[float, float]) -> np.ndarray:
    """Minimum slope (ft/ft) for each diameter: the entry of the largest tabulated
    diameter not above it; NaN below the table or without a diameter."""
    out = np.full(diam.shape, np.nan)
    if not table:
        return out
    ds = np.array(sorted(table))
    vals = np.array([table[d] for d in ds]) / 100.0
    pos = np.searchsorted(ds, diam, side="right") - 1
    ok = np.isfinite(diam) & (pos >= 0)
    out[ok] = vals[pos[ok]]
    return out


@dataclass
class CapacityResult:
    """Capacity of every pipe and plant, and what the what-if needs to reuse.

    Attributes
    ----------
    pipes
        Layer ``pipes_capacity`` (one row per graph edge, working CRS).
    plants
        Layer ``plants``.
    splits
        Nodes where the flow is split between outgoing pipes.
    cycles
        Main ids of each cycle (pipes not computed).
    report
        Findings of the capacity run (cycles, splits, unusable pipes).
    points
        The connection points used.
    flows
        Parcel flows used (:func:`parcel_flows`).
    """

    pipes: gpd.GeoDataFrame
    plants: gpd.GeoDataFrame
    splits: pd.DataFrame
    cycles: list[list[str]]
    report: Report
    points: pd.DataFrame
    flows: pd.DataFrame
    cfg: dict[str, Any] = field(repr=False)
    _net: _Net = field(repr=False)
    _acc: Accumulation = field(repr=False)
    _capacity_gpd: np.ndarray = field(repr=False)
    _index: Any = field(default=None, repr=False)

    def layers(self) -> dict[str, gpd.GeoDataFrame]:
        """The result layers for :func:`gisnet.io.write_results`."""
        return {"pipes_capacity": self.pipes, "plants": self.plants}


def _connection_points(town: Any, G: nx.MultiDiGraph, index: Any = None
                       ) -> tuple[pd.DataFrame, Any]:
    """Where parcels and users attach (the tracing module's connection points),
    and the downstream index built for them (reused by :func:`whatif`)."""
    from .tracing import DownstreamIndex, connection_points

    if index is None:
        index = DownstreamIndex(G)
    return connection_points(town, G, index=index), index


def compute_capacity(town: Any, G: nx.MultiDiGraph, *, points: pd.DataFrame | None = None,
                     index: Any = None) -> CapacityResult:
    """Flows accumulated down the network against every pipe's and plant's capacity.

    Parameters
    ----------
    town
        The town (parcels, optional users and plants, profile, settings,
        ``plant_flows``).
    G
        The sewer graph (:func:`gisnet.graph.build_sewer_graph`).
    points
        Connection points (default :func:`gisnet.tracing.connection_points`).
    index
        A :class:`gisnet.tracing.DownstreamIndex` of ``G`` to reuse (for the
        connection points and the what-if's control manhole).

    Returns
    -------
    CapacityResult
        ``.pipes`` (layer ``pipes_capacity``, one row per graph edge, working
        CRS): ``main_id, edge_key, from_node, to_node, diameter_in, length_ft,
        slope`` (ft/ft), ``slope_source`` (inverts | stored | none),
        ``manning_n, capacity_gpd, capacity_cfs`` (full flow, NaN when
        unknown), ``avg_flow_gpd, industrial_flow_gpd, peak_flow_gpd,
        population`` (persons upstream), ``peaking_factor, utilization,
        over_threshold, deficient, surcharged, velocity_fps`` (full flow),
        ``min_slope`` (ft/ft, NaN where the profile tabulates none),
        ``min_slope_ok`` (True where no minimum applies), ``computed`` (flows
        accumulated: False in cycles and for storm/inactive pipes) and
        ``flags`` (``;``-separated: no_slope, adverse_slope, flat_slope,
        no_diameter, force_main, inactive, no_sanitary_flow, cycle,
        low_velocity, below_min_slope, flow_split).
        ``.plants`` (layer ``plants``): ``plant_id, name, node_id,
        design_flow_mgd, avg_flow_mgd`` (the flow compared), ``ratio,
        threshold, over_threshold, basis`` (monthly_3mo | avg_flow |
        accumulated), ``window`` (``YYYY-MM..YYYY-MM``), ``gaps`` (missing
        months), ``months, reported_avg_flow_mgd, accumulated_flow_mgd,
        section``.

    Notes
    -----
    Slope is ``(up_invert_ft - down_invert_ft) / length_ft`` when both inverts
    and the length exist, else the stored slope. A zero or adverse slope, or
    no diameter, gives no capacity (NaN) and a flag; it is never floored.
    Peak flow = domestic average x Harmon(upstream population) + industrial
    average. Utilization = peak / full-flow capacity; ``over_threshold``,
    ``deficient`` and ``surcharged`` are strict ``>`` comparisons with the
    profile's 0.80 / 0.91 / 1.0, and ``below_min_slope`` a strict ``<``; a value
    within :data:`LIMIT_RTOL` of its limit counts as equal to it (:func:`exceeds`).
    """
    cfg = _cap_cfg(town)
    report = Report()
    net = _graph_arrays(G)
    m = len(net.keys)

    # Slope and capacity.
    with np.errstate(invalid="ignore", divide="ignore"):
        inv_slope = (net.up_inv - net.down_inv) / net.length_ft
    from_inv = np.isfinite(inv_slope) & (net.length_ft > 0)
    slope = np.where(from_inv, inv_slope, net.stored_slope)
    slope_source = np.where(from_inv, "inverts",
                            np.where(np.isfinite(net.stored_slope), "stored", "none"))
    n_arr = np.full(m, float(cfg["manning_n"]))
    settings = getattr(town, "settings", None)
    if getattr(settings, "manning_n_by_material", False) and cfg["manning_n_material"]:
        mat = pd.Series(net.material, dtype="string").str.strip().str.upper()
        n_mat = mat.map(cfg["manning_n_material"]).to_numpy(dtype="float64", na_value=np.nan)
        n_arr = np.where(np.isfinite(n_mat), n_mat, n_arr)
    cap_cfs = manning_full_flow_cfs(net.diameter_in, slope, n_arr)
    cap_cfs = np.where(net.gravity, cap_cfs, np.nan)
    cap_gpd = cap_cfs * CFS_TO_GPD
    area = np.pi * (net.diameter_in / 12.0) ** 2 / 4.0
    with np.errstate(invalid="ignore", divide="ignore"):
        velocity = cap_cfs / area
    min_slope = _min_slope(net.diameter_in, cfg["min_slope_pct"])

    # Flows.
    flows = parcel_flows(town)
    no_basis = flows["sewered"].to_numpy(dtype=bool) & (flows["basis"] == "none").to_numpy()
    if no_basis.any():
        ids = flows["parcel_id"].to_numpy(dtype=object)[no_basis]
        parcels = town.layers["parcels"]
        uses = sorted({str(x) for x in parcels.loc[no_basis, "land_use"].dropna()
                       if str(x).strip()}) if "land_use" in parcels else []
        report.add("parcel_flow_unknown", "warning",
                   f"{len(ids)} sewered parcel(s) have no metered flow, bedrooms, dwelling "
                   "units or a land use in the profile's [flow.land_use_gpd] and count as "
                   "0 gpd" + (f" (land uses not in the table: {', '.join(uses[:20])})"
                              if uses else "") + f": {', '.join(map(str, ids[:10]))}",
                   layer="parcels", feature_id=",".join(map(str, ids[:200])))
    if points is None:
        points, index = _connection_points(town, G, index)
    inflow = edge_inflows(town, points, flows)
    local = np.zeros((m, 3))
    get = net.key_idx.get
    idx = np.fromiter((get(k, -1) for k in inflow.index.to_numpy(dtype=object)), np.int64,
                      len(inflow))
    unknown = inflow.index[idx < 0]
    if len(unknown):
        report.add("unknown_edge", "warning",
                   f"{len(unknown)} connection point(s) name edges not in the graph: "
                   f"{', '.join(map(str, unknown[:10]))}", layer="mains",
                   feature_id=",".join(map(str, unknown[:50])))
    ok = idx >= 0
    local[idx[ok]] = inflow.to_numpy()[ok]
    kinds = pd.Series(net.kind, dtype=object)
    flow_edge = net.active & kinds.isin(FLOW_KINDS).to_numpy()
    stray = (local.sum(axis=1) > 0) & ~flow_edge
    if stray.any():
        report.add("flow_on_excluded_main", "warning",
                   f"{int(stray.sum())} pipe(s) that carry no sanitary flow (storm or inactive) "
                   "have connections; their flow is not carried",
                   layer="mains", feature_id=",".join(net.main_id[stray][:50]))
    acc = accumulate(net, local, flow_edge, cap_gpd)
    for ids in acc.cycles:
        report.add("cycle_not_computed", "warning",
                   f"pipes {', '.join(ids)} form a cycle: their flows are not computed; "
                   "everything entering the cycle leaves by its outlets", layer="mains",
                   feature_id=",".join(ids))
    for row in acc.splits.itertuples():
        report.add("flow_split", "info",
                   f"flow at node {row.node_id} is split between pipes {row.main_ids} "
                   f"(fractions {row.fractions}, by {row.basis})", layer="mains",
                   feature_id=row.main_ids)

    dom, ind, pop = acc.edge_flow[:, 0], acc.edge_flow[:, 1], acc.edge_flow[:, 2]
    pf = np.where(acc.computed, _peaking(pop, cfg), np.nan)
    avg = dom + ind
    peak = dom * pf + ind
    with np.errstate(invalid="ignore", divide="ignore"):
        util = peak / cap_gpd

    # Flags: one mask per flag, joined with ";" only where set.
    grav = net.gravity
    cnt = np.diff(acc.out_off)
    low_v = np.isfinite(velocity) & (velocity < float(cfg["min_velocity_fps"]))
    ms_known = np.isfinite(min_slope) & np.isfinite(slope)
    below = ms_known & exceeds(min_slope, slope)
    masks = {
        "no_slope": grav & (slope_source == "none"),
        "adverse_slope": grav & np.isfinite(slope) & (slope < 0),
        "flat_slope": grav & np.isfinite(slope) & (slope == 0),
        "no_diameter": grav & ~(net.diameter_in > 0),
        "force_main": ~grav,
        "inactive": ~flow_edge & ~net.active,
        "no_sanitary_flow": ~flow_edge & net.active,
        "cycle": acc.in_cycle,
        "low_velocity": low_v,
        "below_min_slope": below & (slope > 0),
        "flow_split": acc.computed & (cnt[acc.rep[net.u]] > 1),
    }
    flags = np.full(m, "", dtype=object)
    for name, mask in masks.items():
        if mask.any():
            flags[mask] = flags[mask] + (";" + name)
    has = flags != ""
    flags[has] = np.array([f[1:] for f in flags[has]], dtype=object)
    for name in ("adverse_slope", "flat_slope", "no_diameter", "no_slope"):
        mask = masks[name]
        if mask.any():
            report.add(f"no_capacity_{name}", "warning",
                       f"{int(mask.sum())} pipe(s) have no capacity ({name.replace('_', ' ')}): "
                       f"{', '.join(net.keys[mask][:10])}", layer="mains",
                       feature_id=",".join(net.keys[mask][:200]))

    thr, dfc, sur = (float(cfg["utilization_threshold"]), float(cfg["deficient"]),
                     float(cfg["surcharged"]))
    with np.errstate(invalid="ignore"):
        over, defi, surc = exceeds(util, thr), exceeds(util, dfc), exceeds(util, sur)
    node_ids = np.array([str(x) for x in net.nodes], dtype=object)
    crs = G.graph.get("crs")
    pipes = gpd.GeoDataFrame({
        "main_id": net.main_id,
        "edge_key": net.keys,
        "from_node": node_ids[net.u] if m else np.array([], dtype=object),
        "to_node": node_ids[net.v] if m else np.array([], dtype=object),
        "diameter_in": net.diameter_in,
        "length_ft": net.length_ft,
        "slope": slope,
        "slope_source": slope_source,
        "manning_n": n_arr,
        "capacity_gpd": cap_gpd,
        "capacity_cfs": cap_cfs,
        "avg_flow_gpd": avg,
        "industrial_flow_gpd": ind,
        "peak_flow_gpd": peak,
        "population": pop,
        "peaking_factor": pf,
        "utilization": util,
        "over_threshold": over,
        "deficient": defi,
        "surcharged": surc,
        "velocity_fps": velocity,
        "min_slope": min_slope,
        "min_slope_ok": np.where(ms_known, ~below, True) if m else np.array([], dtype=bool),
        "computed": acc.computed,
        "flags": flags,
    }, geometry=gpd.GeoSeries(net.geometry, crs=crs), crs=crs)

    plants = _plants(town, net, acc, cfg)
    log.info("capacity: %d pipes, %d over %.2f, %d cycles, %d splits", m, int(over.sum()), thr,
             len(acc.cycles), len(acc.splits))
    return CapacityResult(pipes=pipes, plants=plants, splits=acc.splits, cycles=acc.cycles,
                          report=report, points=points, flows=flows, cfg=cfg, _net=net,
                          _acc=acc, _capacity_gpd=cap_gpd, _index=index)


# --------------------------------------------------------------------------- plants

PLANT_COLUMNS = ["plant_id", "name", "node_id", "design_flow_mgd", "avg_flow_mgd", "ratio",
                 "threshold", "over_threshold", "basis", "window", "gaps", "months",
                 "reported_avg_flow_mgd", "accumulated_flow_mgd", "section"]


def plant_window(months: pd.DataFrame, k: int = 3) -> tuple[float, str, list[str], int]:
    """Worst mean of ``k`` consecutive calendar months of a plant's monthly flows.

    Parameters
    ----------
    months
        ``month`` (``YYYY-MM``) and ``avg_flow_mgd`` rows of one plant.
    k
        Window length in months.

    Returns
    -------
    (mean_mgd, window, gaps, n_months)
        The highest k-month mean (NaN if no complete window), the window as
        ``YYYY-MM..YYYY-MM``, the months missing (or without a value) between
        the first and last month given, and the number of months with a value.
        A window never spans a gap.
    """
    per = pd.PeriodIndex(pd.to_datetime(months["month"].astype(str), format="%Y-%m"), freq="M")
    vals = pd.Series(pd.to_numeric(months["avg_flow_mgd"], errors="coerce").to_numpy(),
                     index=per)
    vals = vals.groupby(level=0).mean()
    if vals.empty:
        return float("nan"), "", [], 0
    full = pd.period_range(vals.index.min(), vals.index.max(), freq="M")
    s = vals.reindex(full)
    gaps = [str(p) for p in s.index[s.isna()]]
    roll = s.rolling(k, min_periods=k).mean()
    if roll.notna().sum() == 0:
        return float("nan"), "", gaps, int(s.notna().sum())
    end = roll.idxmax()
    start = end - (k - 1)
    return float(roll.max()), f"{start}..{end}", gaps, int(s.notna().sum())


def _plants(town: Any, net: _Net, acc: Accumulation, cfg: dict[str, Any]
            ) -> gpd.GeoDataFrame:
    layer = town.layers.get("plants")
    crs = getattr(town, "crs", None)
    if layer is None or len(layer) == 0:
        empty = gpd.GeoDataFrame({c: [] for c in PLANT_COLUMNS},
                                 geometry=gpd.GeoSeries([], crs=crs), crs=crs)
        return empty
    thr = float(cfg["plant_threshold"])
    k = int(cfg["plant_months"])
    strict = bool(cfg["plant_strict"])
    monthly = getattr(town, "plant_flows", None)
    rows = []
    for rec in layer.itertuples(index=False):
        pid = str(rec.plant_id)
        node = pid if pid in net.node_idx else (
            str(rec.node_id) if getattr(rec, "node_id", None) is not None
            and str(rec.node_id) in net.node_idx else None)
        accum = float("nan")
        if node is not None:
            accum = float(acc.node_flow[acc.rep[net.node_idx[node]], :2].sum()) / MGD_TO_GPD
        design = pd.to_numeric(pd.Series([getattr(rec, "design_flow_mgd", None)]),
                               errors="coerce").iloc[0]
        reported = pd.to_numeric(pd.Series([getattr(rec, "avg_flow_mgd", None)]),
                                 errors="coerce").iloc[0]
        window, gaps, nmonths, flow, basis = "", [], 0, float("nan"), ""
        if monthly is not None and len(monthly):
            mine = monthly[monthly["plant_id"].astype(str) == pid]
            if len(mine):
                flow, window, gaps, nmonths = plant_window(mine, k)
                if np.isfinite(flow):
                    basis = f"monthly_{k}mo"
        if not basis and np.isfinite(reported):
            flow, basis = float(reported), "avg_flow"
        if not basis and np.isfinite(accum):
            flow, basis = accum, "accumulated"
        ratio = flow / design if np.isfinite(flow) and design > 0 else float("nan")
        over = exceeds(ratio, thr, strict)
        rows.append({
            "plant_id": pid, "name": getattr(rec, "name", None), "node_id": node,
            "design_flow_mgd": design, "avg_flow_mgd": flow, "ratio": ratio, "threshold": thr,
            "over_threshold": over, "basis": basis or "none", "window": window,
            "gaps": ",".join(gaps), "months": nmonths, "reported_avg_flow_mgd": reported,
            "accumulated_flow_mgd": accum, "section": cfg["plant_section"],
            "geometry": rec.geometry,
        })
    return gpd.GeoDataFrame(rows, columns=[*PLANT_COLUMNS, "geometry"], geometry="geometry",
                            crs=crs)


# --------------------------------------------------------------------------- what-if


@dataclass
class WhatIfResult:
    """What one proposed connection changes downstream.

    Attributes
    ----------
    flow_gpd, industrial
        The proposed average flow (gpd) and whether it is industrial wastewater.
    connection
        The connection point: ``parcel_id, main_id, edge_key, x, y,
        tap_distance_ft, source``.
    control_manhole
        First public, active manhole downstream of the connection point.
    pipes
        Every downstream pipe that receives the flow, in flow order, with
        ``*_before`` / ``*_after`` flows and utilization (working CRS).
    crossings
        Main ids of the pipes that go from at or below the threshold to over it.
    plants
        Plants reached: ratio before and after, over before and after.
    plant_crossings
        Plant ids that go from at or below the plant threshold to over it.
    approvals
        Approvals and reviews the profile's rules trigger: ``id, trigger,
        authority, section, text, reason``.
    threshold
        The pipes' utilization threshold used (profile, 0.80).
    notes
        Anything the engineer should know (cycles crossed, splits).
    """

    flow_gpd: float
    industrial: bool
    connection: dict[str, Any]
    control_manhole: str | None
    pipes: gpd.GeoDataFrame
    crossings: list[str]
    plants: pd.DataFrame
    plant_crossings: list[str]
    approvals: list[dict[str, Any]]
    threshold: float
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (pipes without geometry)."""
        pipes = pd.DataFrame(self.pipes.drop(columns="geometry", errors="ignore"))
        return {
            "flow_gpd": self.flow_gpd,
            "industrial": self.industrial,
            "connection": self.connection,
            "control_manhole": self.control_manhole,
            "threshold": self.threshold,
            "pipes": _records(pipes),
            "crossings": list(self.crossings),
            "plants": _records(self.plants),
            "plant_crossings": list(self.plant_crossings),
            "approvals": list(self.approvals),
            "notes": list(self.notes),
        }


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict(orient="records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and not np.isfinite(v):
                v = None
            clean[k] = v
        out.append(clean)
    return out


def _locate(town: Any, G: nx.MultiDiGraph, result: CapacityResult, parcel_id: Any,
            point: Any, crs: Any) -> dict[str, Any]:
    if (parcel_id is None) == (point is None):
        raise ConfigError("give exactly one of a parcel id or a point")
    if parcel_id is not None:
        pid = str(parcel_id)
        pts = result.points
        sel = pts[(pts["parcel_id"].astype("string") == pid)
                  & (pts["user_id"].isna() if "user_id" in pts else True)]
        if sel.empty:
            if pid not in set(result.flows["parcel_id"]):
                raise NotFoundError(f"no parcel {pid}", layer="parcels", feature=pid)
            raise NotFoundError(f"parcel {pid} has no connection point on an eligible main",
                                layer="parcels", feature=pid)
        row = sel.iloc[0]  # first building in layer order, as gisnet.tracing does
        geom = row.get("geometry")
        return {
            "parcel_id": pid,
            "building_id": None if pd.isna(row.get("building_id")) else str(row["building_id"]),
            "main_id": str(row.get("main_id", "")),
            "edge_key": str(row["edge_key"]),
            "x": None if geom is None else float(geom.x),
            "y": None if geom is None else float(geom.y),
            "tap_distance_ft": _float(row.get("tap_distance_ft")),
            "source": row.get("source", "projected"),
        }
    from .tracing import trace_downstream

    tr = trace_downstream(town, G, point=point, crs=crs, index=_downstream_index(result, G))
    cp = tr["connection"].iloc[0]
    geom = cp.get("geometry")
    return {
        "parcel_id": None,
        "building_id": None,
        "main_id": str(cp.get("main_id")),
        "edge_key": str(cp.get("edge_key")),
        "x": None if geom is None else float(geom.x),
        "y": None if geom is None else float(geom.y),
        "tap_distance_ft": _float(cp.get("tap_distance_ft")),
        "source": "point",
    }


def _float(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def _downstream_index(result: CapacityResult, G: nx.MultiDiGraph) -> Any:
    """The tracing module's downstream index of ``G``, built once per result."""
    if result._index is None:
        from .tracing import DownstreamIndex

        result._index = DownstreamIndex(G)
    return result._index


def _control_manhole(result: CapacityResult, G: nx.MultiDiGraph, e0: int) -> str | None:
    """First public active manhole at or below the downstream end of edge ``e0``
    (as :mod:`gisnet.tracing` defines it: the node itself if it is one)."""
    idx = _downstream_index(result, G)
    v = idx.node_index[result._net.nodes[int(result._net.v[e0])]]
    mh = int(idx.manhole[v])
    return None if mh < 0 else str(idx.nodes[mh])


def whatif(town: Any, G: nx.MultiDiGraph, result: CapacityResult, *, parcel_id: Any = None,
           point: Any = None, crs: Any = None, flow_gpd: float,
           industrial: bool = False) -> WhatIfResult:
    """What a proposed connection changes, recomputing only the downstream path.

    Parameters
    ----------
    town, G
        The town and its sewer graph (the same as for ``result``).
    result
        The precomputed :func:`compute_capacity` result; it is not modified.
    parcel_id
        The parcel to connect (at its connection point), or
    point, crs
        An ``(x, y)`` point and its CRS (default the town's working CRS).
    flow_gpd
        Proposed average daily flow, gpd (> 0).
    industrial
        Industrial wastewater: added without peaking and triggers the
        profile's ``industrial`` approvals.

    Returns
    -------
    WhatIfResult

    Raises
    ------
    NotFoundError
        Unknown parcel, or no connection point.
    ConfigError
        Flow not positive, or neither/both of parcel and point.
    """
    if not (flow_gpd is not None and np.isfinite(flow_gpd) and flow_gpd > 0):
        raise ConfigError(f"flow_gpd must be a positive number, not {flow_gpd!r}")
    flow_gpd = float(flow_gpd)
    cfg = result.cfg
    net, acc = result._net, result._acc
    conn = _locate(town, G, result, parcel_id, point, crs)
    e0 = net.key_idx.get(conn["edge_key"])
    if e0 is None:
        raise NotFoundError(f"edge {conn['edge_key']} of the connection point is not in the graph",
                            layer="mains", feature=conn["edge_key"])
    control = _control_manhole(result, G, e0)
    notes: list[str] = []
    delta = np.array([0.0, flow_gpd, 0.0]) if industrial else \
        np.array([flow_gpd, 0.0, flow_gpd / float(cfg["gpd_per_person"])])

    # Propagate the added flow downstream in topological order (heap by level).
    edge_delta: dict[int, float] = {}
    node_delta: dict[int, np.ndarray] = {}
    start = int(acc.rep[net.u[e0]])
    if acc.computed[e0]:
        edge_delta[e0] = 1.0
        start = int(acc.rep[net.v[e0]])
    elif acc.in_cycle[e0]:
        notes.append(f"the connection is on pipe {net.main_id[e0]}, inside a cycle: "
                     "its own flow is not computed")
    else:
        raise TopologyError(f"pipe {net.main_id[e0]} carries no sanitary flow",
                            layer="mains", feature=net.main_id[e0])
    node_delta[start] = np.array([1.0])
    heap = [(int(acc.node_level[start]), start)]
    queued = {start}
    reached_nodes: list[int] = []
    while heap:
        _, x = heapq.heappop(heap)
        share = float(node_delta[x][0])
        reached_nodes.append(x)
        es = acc.out_order[acc.out_off[x]:acc.out_off[x + 1]]
        if es.size > 1:
            notes.append(f"the flow splits at node {net.nodes[x]} between pipes "
                         f"{', '.join(net.keys[es])} by full-flow capacity")
        for e in es:
            s = share * float(acc.frac[e])
            edge_delta[int(e)] = s
            y = int(acc.rep[net.v[e]])
            if y in queued:
                node_delta[y][0] += s
            else:
                node_delta[y] = np.array([s])
                queued.add(y)
                heapq.heappush(heap, (int(acc.node_level[y]), y))
    cyc_reps = {int(acc.rep[net.u[e]]) for e in np.flatnonzero(acc.in_cycle)}
    for x in reached_nodes:
        if x in cyc_reps:
            notes.append(f"the flow passes through a cycle at node {net.nodes[x]}: "
                         "the cycle's pipes are not computed")

    idx = np.fromiter(edge_delta, dtype=np.int64, count=len(edge_delta))
    share = np.fromiter(edge_delta.values(), dtype="float64", count=len(edge_delta))
    order = np.argsort(acc.node_level[acc.rep[net.u[idx]]], kind="stable")
    idx, share = idx[order], share[order]
    before = acc.edge_flow[idx]
    after = before + share[:, None] * delta[None, :]
    cap = result._capacity_gpd[idx]
    pk_b = before[:, 0] * _peaking(before[:, 2], cfg) + before[:, 1]
    pk_a = after[:, 0] * _peaking(after[:, 2], cfg) + after[:, 1]
    thr = float(cfg["utilization_threshold"])
    with np.errstate(invalid="ignore", divide="ignore"):
        ub, ua = pk_b / cap, pk_a / cap
        ob, oa = exceeds(ub, thr), exceeds(ua, thr)
    crosses = ~ob & oa
    crs_g = G.graph.get("crs")
    pipes = gpd.GeoDataFrame({
        "order": np.arange(len(idx)),
        "main_id": net.main_id[idx],
        "edge_key": net.keys[idx],
        "share": share,
        "capacity_gpd": cap,
        "avg_flow_gpd_before": before[:, 0] + before[:, 1],
        "avg_flow_gpd_after": after[:, 0] + after[:, 1],
        "peak_flow_gpd_before": pk_b,
        "peak_flow_gpd_after": pk_a,
        "utilization_before": ub,
        "utilization_after": ua,
        "over_threshold_before": ob,
        "over_threshold_after": oa,
        "crosses_threshold": crosses,
    }, geometry=gpd.GeoSeries([net.geometry[i] for i in idx], crs=crs_g), crs=crs_g)
    crossings = [str(x) for x in pipes.loc[pipes["crosses_threshold"], "main_id"]]
    if np.any(~np.isfinite(cap)):
        bad = net.main_id[idx][~np.isfinite(cap)]
        notes.append(f"no capacity known for downstream pipe(s) {', '.join(bad[:10])}")

    # Plants reached.
    plant_rows = []
    pthr = float(cfg["plant_threshold"])
    strict = bool(cfg["plant_strict"])
    reached = {int(x): float(node_delta[x][0]) for x in reached_nodes}
    for rec in result.plants.itertuples(index=False):
        if rec.node_id is None or rec.node_id not in net.node_idx:
            continue
        r = int(acc.rep[net.node_idx[rec.node_id]])
        if r not in reached:
            continue
        add_mgd = reached[r] * flow_gpd / MGD_TO_GPD
        base = float(rec.avg_flow_mgd)
        design = float(rec.design_flow_mgd)
        rb = base / design if design > 0 else float("nan")
        ra = (base + add_mgd) / design if design > 0 else float("nan")
        over_b = exceeds(rb, pthr, strict)
        over_a = exceeds(ra, pthr, strict)
        plant_rows.append({
            "plant_id": rec.plant_id, "design_flow_mgd": design, "basis": rec.basis,
            "avg_flow_mgd_before": base, "avg_flow_mgd_after": base + add_mgd,
            "ratio_before": rb, "ratio_after": ra, "over_threshold_before": over_b,
            "over_threshold_after": over_a, "crosses_threshold": (not over_b) and over_a,
            "section": rec.section,
        })
    plants = pd.DataFrame(plant_rows, columns=[
        "plant_id", "design_flow_mgd", "basis", "avg_flow_mgd_before", "avg_flow_mgd_after",
        "ratio_before", "ratio_after", "over_threshold_before", "over_threshold_after",
        "crosses_threshold", "section"])
    plant_crossings = [str(p) for p in plants.loc[plants["crosses_threshold"], "plant_id"]]
    if plants.empty:
        notes.append("the flow reaches no treatment plant in the plants layer")

    approvals = _approvals(town, flow_gpd, industrial, plants, pthr)
    return WhatIfResult(
        flow_gpd=flow_gpd, industrial=bool(industrial), connection=conn,
        control_manhole=control, pipes=pipes, crossings=crossings,
        plants=plants, plant_crossings=plant_crossings, approvals=approvals, threshold=thr,
        notes=list(dict.fromkeys(notes)),
    )


def _approvals(town: Any, flow_gpd: float, industrial: bool, plants: pd.DataFrame,
               plant_thr: float) -> list[dict[str, Any]]:
    prof = _profile(town)
    rules = _sec(prof, "approvals") or []
    out = []
    for a in rules:
        trig = str(_val(a, "trigger", ""))
        limit = _val(a, "flow_gpd")
        reason = None
        if trig in ("flow_over", "review_flow_over"):
            if limit is not None and flow_gpd > float(limit):
                reason = f"{flow_gpd:,.0f} gpd is over {float(limit):,.0f} gpd"
        elif trig == "plant_over":
            over = plants[plants["over_threshold_before"] | plants["over_threshold_after"]]
            if len(over):
                p = over.iloc[0]
                when = "already operates" if p["over_threshold_before"] else "would operate"
                reason = (f"plant {p['plant_id']} {when} in excess of {plant_thr:.0%} of design "
                          f"flow ({p['ratio_before']:.1%} before, {p['ratio_after']:.1%} after)")
        elif trig == "industrial":
            if industrial:
                reason = "industrial wastewater"
        else:
            log.warning("approval %s has unknown trigger %r", _val(a, "id"), trig)
            continue
        if reason:
            out.append({
                "id": _val(a, "id"), "trigger": trig, "authority": _val(a, "authority"),
                "section": _val(a, "section"), "text": _val(a, "text"), "reason": reason,
            })
    return out
