"""The worklist: the fixes a technician can make to a town's data, ranked.

The ``quality`` layer holds one row per finding (thousands on a real town: a row
per dangling end, per piece without a plant, per main without a diameter). The
worklist groups them into a few tens of rows, one per kind of fix, or one per
place where the place matters (a plant gap, a piece without an outlet, a cycle:
the :data:`PLACES_SHOWN` largest, the rest in one row), each with a plain-words
action, how many features, the first ids and a geometry to zoom to.

Rank: by the share of the network's pipe length whose answers depend on the fix
(:func:`worklist`): a piece drained to an assumed outlet counts with all its
pipes; named pipes count with their length; named structures and pipe ends with
the pipes that meet them. Ties: errors before warnings, then the larger count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import shapely
from shapely.geometry.base import BaseGeometry

from .schema import ID_COLUMN

__all__ = ["IDS_SHOWN", "PLACES_SHOWN", "WORK_KINDS", "finding_ids", "worklist", "worklist_lines"]

#: Ids listed in a row's ``ids`` (the rest counted in ``more_ids``).
IDS_SHOWN = 10
#: Place rows of one kind shown one by one (the largest); the rest make one row.
PLACES_SHOWN = 10
#: Kinds whose findings are one row each (one place each), largest first.
PLACE_KINDS = ("plant_gap", "plant_not_connected", "outlet_assumed")
#: Place kinds about a piece of network: they count with the piece's whole length.
PIECE_KINDS = ("plant_gap", "plant_not_connected", "outlet_assumed")
#: Kinds left out: the same features as another kind's rows (disconnected pieces are
#: the pieces of ``outlet_assumed``, cycles not computed those of ``cycle``, pipes of
#: unknown capacity for want of a diameter those of ``missing_diameter``).
SAME_AS = {"disconnected_piece": "outlet_assumed", "cycle_not_computed": "cycle",
           "capacity_unknown_no_diameter": "missing_diameter",
           "diameter_assumed": "missing_diameter", "no_outlet": "outlet_assumed",
           "no_capacity_adverse_slope": "adverse_slope",
           "no_capacity_flat_slope": "flat_slope"}
#: Kind -> the action, in plain words (``{n}``: the count; per-place kinds get the
#: finding's own words after it). Warnings and errors of other kinds get a generic one.
WORK_KINDS: dict[str, str] = {
    "plant_gap": "connect the piece to the plant",
    "plant_not_connected": "draw the pipe that reaches the plant",
    "outlet_assumed": "join the piece to the network, or name its outlet",
    "cycle": "check the flow direction around the {n} cycle(s) (their flows are not "
             "computed)",
    "duplicate_structure": "delete the duplicate structures at {n} spot(s)",
    "collapsed_main": "redraw the {n} main(s) whose two ends meet one node (left out of "
                      "the graph)",
    "direction_assumed": "give the {n} pipe(s) whose flow direction was assumed from/to node "
                         "ids or inverts",
    "direction_conflict": "check the {n} pipe(s) whose direction clues disagree",
    "missing_diameter": "enter the diameter of the {n} main(s) without one (capacity "
                        "unknown)",
    "gap_not_snapped": "join the {n} pipe end(s) that stop short of a pipe or manhole",
    "dangling_end": "connect or check the {n} pipe end(s) that meet nothing",
    "node_id_mismatch": "correct the from/to node ids of the {n} main(s)",
    "adverse_slope": "check the inverts of the {n} main(s) sloping uphill",
    "flat_slope": "check the inverts of the {n} main(s) with slope 0",
    "capacity_unknown_no_slope": "enter inverts or slopes of the {n} pipe(s) without one",
    "implausible_diameter": "check the {n} diameter(s) outside 2-144 in",
    "outlet_not_connected": "connect the {n} named outlet node(s)",
    "duplicate_id": "make the {n} repeated id(s) unique",
    "missing_id": "give ids to the {n} feature(s) without one",
}
_SEVERITY_ORDER = {"error": 0, "warning": 1}


def finding_ids(values: Sequence[Any]) -> list[str]:
    """Feature ids of findings (comma-separated), in order, each once."""
    seen: dict[str, None] = {}
    for v in values:
        if isinstance(v, str) and v:
            for x in v.split(","):
                if x:
                    seen.setdefault(x, None)
    return list(seen)


class _Network:
    """Lengths for the ranking: per main, per node (the pipes meeting it) and per piece."""

    def __init__(self, G: nx.MultiDiGraph, town: Any) -> None:
        self.main_ft: dict[str, float] = {}
        self.node_ft: dict[Any, float] = {}
        for u, v, d in G.edges(data=True):
            ln = float(d.get("length_ft") or 0.0)
            mid = str(d.get("main_id"))
            self.main_ft[mid] = self.main_ft.get(mid, 0.0) + ln
            self.node_ft[u] = self.node_ft.get(u, 0.0) + ln
            self.node_ft[v] = self.node_ft.get(v, 0.0) + ln
        self.piece: dict[Any, int] = {}
        self.piece_ft: list[float] = []
        for i, comp in enumerate(nx.weakly_connected_components(G)):
            for nd in comp:
                self.piece[nd] = i
            self.piece_ft.append(0.5 * sum(self.node_ft.get(nd, 0.0) for nd in comp))
        self.nodes = {str(n): n for n in G.nodes}
        self.at = {(round(float(d.get("x", np.nan)), 3), round(float(d.get("y", np.nan)), 3)): n
                   for n, d in G.nodes(data=True)}
        mains = town.layers.get("mains") if town is not None else None
        self.lines: dict[str, BaseGeometry] = {}
        self.points: dict[str, BaseGeometry] = {}
        if mains is not None and len(mains):
            self.lines = dict(zip(mains["main_id"].astype(str), mains.geometry.values,
                                  strict=True))
            fpu = float(getattr(town, "ft_per_unit", 1.0))
            for k, g in self.lines.items():  # mains left out of the graph (collapsed)
                self.main_ft.setdefault(k, float(shapely.length(g)) * fpu)
        self.total_ft = float(sum(self.main_ft.values())) or 1.0
        self.town = town
        self.extent = None if mains is None or not len(mains) else \
            shapely.box(*mains.total_bounds)
        for role, col in (("manholes", "node_id"), ("plants", "plant_id")):
            lay = town.layers.get(role) if town is not None else None
            if lay is not None and len(lay) and col in lay.columns:
                self.points.update(zip(lay[col].astype(str), lay.geometry.values, strict=True))

    def piece_of(self, feature_id: Any, g: BaseGeometry | None) -> int | None:
        """The piece a finding is about: its first id's, else where its place starts
        (a plant gap's line starts at the piece's end)."""
        first = str(feature_id).split(",")[0] if isinstance(feature_id, str) else ""
        if first in self.nodes:
            return self.piece[self.nodes[first]]
        if g is None or g.is_empty:
            return None
        x, y = shapely.get_coordinates(g)[0]
        nd = self.at.get((round(float(x), 3), round(float(y), 3)))
        return None if nd is None else self.piece[nd]

    def length_ft(self, kind: str, ids: list[str], geoms: list[BaseGeometry],
                  feature_ids: Sequence[Any] = ()) -> float:
        """Pipe length (ft) whose answers depend on the fix of these ids: for a piece
        kind, the pieces of the findings (``feature_ids``, ``geoms``) whole."""
        if kind in PIECE_KINDS:
            pieces = {self.piece_of(f, g) for f, g in zip(feature_ids, geoms, strict=True)}
            return float(sum(self.piece_ft[p] for p in pieces if p is not None))
        mains = [self.main_ft[i] for i in ids if i in self.main_ft]
        if mains:
            return float(sum(mains))
        return float(sum(self.node_ft.get(self.nodes[i], 0.0) for i in ids if i in self.nodes))

    def _features(self, layers: Sequence[str], ids: list[str]) -> list[BaseGeometry]:
        """The shapes of ``ids`` in the town layers the findings name."""
        out: list[BaseGeometry] = []
        for role in layers:
            lay = None if self.town is None else self.town.layers.get(role)
            col = ID_COLUMN.get(role)
            if lay is None or col is None or col not in lay.columns or not ids:
                continue
            hit = lay[lay[col].astype(str).isin(ids)]
            out += [g for g in hit.geometry.values if g is not None and not g.is_empty]
        return out

    def geometry(self, kind: str, ids: list[str], geoms: list[BaseGeometry],
                 layers: Sequence[str] = ()) -> Any:
        """The row's place: the findings' shapes; a duplicate's structures as a multipoint."""
        if kind == "duplicate_structure":
            pts = [self.points[i] for i in ids if i in self.points]
            if pts:
                return shapely.multipoints(pts)
        shapes = [g for g in geoms if g is not None and not g.is_empty]
        if not shapes:
            shapes = [self.lines[i] for i in ids if i in self.lines] or \
                [self.points[i] for i in ids if i in self.points] or \
                self._features(layers, ids)
        if not shapes:  # a town-wide finding: the network's extent
            return self.extent
        if len(shapes) == 1:
            return shapes[0]
        types = {s.geom_type for s in shapes}
        if types <= {"Point"}:
            return shapely.multipoints(shapes)
        # lines (pipes, gap lines) and points: the lines (one geometry type per row)
        lines = [s for s in shapes if s.geom_type == "LineString"]
        lines += [part for s in shapes if s.geom_type == "MultiLineString"
                  for part in shapely.get_parts(s)]
        if lines:
            return shapely.multilinestrings(lines)
        return shapely.union_all(shapes)


_GAP = re.compile(r"(the [\d,]+-node piece).* ends ([\d,.]+) ft from plant (.+?) \(beyond")


def _action(kind: str, n: int, messages: list[str], place: bool) -> str:
    if kind == "plant_gap" and len(messages) == 1 and (m := _GAP.search(messages[0])):
        return f"connect {m[1]} to plant {m[3]}: it ends {m[2]} ft away"
    if place:
        head = WORK_KINDS.get(kind, f"fix the {kind.replace('_', ' ')}")
        return f"{head}: {messages[0]}" if len(messages) == 1 else \
            f"{head} ({n:,} places): {messages[0]} ..."
    text = WORK_KINDS.get(kind)
    if text is None:
        text = f"review the {{n}} {kind.replace('_', ' ')} finding(s)"
    out = text.format(n=f"{n:,}")
    if len(messages) == 1 and not place:
        out += f" ({messages[0]})"
    return out


def _count(kind: str, ids: list[str], findings: pd.DataFrame) -> int:
    """Features a row is about: its distinct ids; for a kind of one finding per spot
    (duplicate structures) or a finding without ids, its findings."""
    if kind == "duplicate_structure" or not ids:
        return len(findings)
    # a grouped finding lists at most some ids but says how many at its start
    said = findings["message"].astype(str).str.extract(r"^([\d,]+) ")[0]
    said = pd.to_numeric(said.str.replace(",", ""), errors="coerce")
    return max(len(ids), int(np.nansum(said.to_numpy(dtype=float)))
               if said.notna().all() else len(ids))


def worklist(quality: pd.DataFrame, G: nx.MultiDiGraph, town: Any = None) -> gpd.GeoDataFrame:
    """The ranked worklist of a run's ``quality`` layer.

    Parameters
    ----------
    quality
        The quality layer (``kind``, ``severity``, ``message``, ``feature_id``, geometry).
    G
        The sewer graph (lengths and pieces for the ranking).
    town
        The town (mains and structures: the geometry of ids a finding has none for,
        a duplicate's structures).

    Returns
    -------
    geopandas.GeoDataFrame
        Layer ``worklist`` (docs/results.md): ``rank, kind, severity, action, count,
        ids, more_ids, affected_length_ft, share`` and the geometry to zoom to (points, lines
        or a collection; working CRS), ordered by ``rank``.
    """
    crs = G.graph.get("crs")
    cols = ["rank", "kind", "severity", "action", "count", "ids", "more_ids",
            "affected_length_ft", "share"]
    q = quality[quality["severity"].isin(list(_SEVERITY_ORDER))] if len(quality) else quality
    q = q[~q["kind"].isin(list(SAME_AS))] if len(q) else q
    if not len(q):
        return gpd.GeoDataFrame({c: [] for c in cols}, geometry=gpd.GeoSeries([], crs=crs),
                                crs=crs)
    net = _Network(G, town)
    geom = q.geometry.to_numpy() if isinstance(q, gpd.GeoDataFrame) else \
        np.full(len(q), None, dtype=object)
    q = pd.DataFrame(q).assign(_g=list(geom))
    rows: list[dict[str, Any]] = []

    def row(kind: str, part: pd.DataFrame, place: bool) -> None:
        ids = finding_ids(part["feature_id"].tolist())
        geoms = list(part["_g"])
        n = len(part) if place else _count(kind, ids, part)
        length = net.length_ft(kind, ids, geoms, part["feature_id"].tolist())
        sev = min(part["severity"].astype(str), key=lambda s: _SEVERITY_ORDER[s])
        rows.append({"kind": kind, "severity": sev,
                     "action": _action(kind, n, part["message"].astype(str).tolist(), place),
                     "count": max(n, 1), "ids": ",".join(ids[:IDS_SHOWN]),
                     "more_ids": max(max(n, len(ids)) - IDS_SHOWN, 0),
                     "affected_length_ft": length,
                     "share": min(length / net.total_ft, 1.0),
                     "geometry": net.geometry(kind, ids, geoms,
                                              sorted(set(part["layer"].dropna().astype(str))))})

    for kind, part in q.groupby("kind", sort=True):
        kind = str(kind)
        if kind not in PLACE_KINDS:
            row(kind, part, False)
            continue
        sizes = [net.length_ft(kind, finding_ids([f]), [g], [f]) for f, g in
                 zip(part["feature_id"], part["_g"], strict=True)]
        order = np.argsort(-np.asarray(sizes, dtype=float), kind="stable")
        for i in order[:PLACES_SHOWN].tolist():
            row(kind, part.iloc[[i]], True)
        if len(order) > PLACES_SHOWN:
            row(kind, part.iloc[order[PLACES_SHOWN:]], True)
    out = pd.DataFrame(rows)
    sev = out["severity"].map(_SEVERITY_ORDER)
    out = out.assign(_s=sev).sort_values(["share", "_s", "count", "kind"],
                                         ascending=[False, True, False, True], kind="stable")
    out = out.drop(columns="_s").reset_index(drop=True)
    out.insert(0, "rank", np.arange(1, len(out) + 1, dtype=np.int64))
    out["count"] = out["count"].astype(np.int64)
    out["more_ids"] = out["more_ids"].astype(np.int64)
    return gpd.GeoDataFrame(out, geometry=gpd.GeoSeries(list(out.pop("geometry")), crs=crs),
                            crs=crs)


def worklist_lines(wl: pd.DataFrame, top: int | None = None) -> list[str]:
    """The worklist as text lines, top rows first: rank, action, share of the
    network's pipe length, the first ids (and how many more).

    Parameters
    ----------
    wl
        A :func:`worklist` layer.
    top
        Print only this many rows (and say how many are left); None: every row.
    """
    out = []
    shown = wl if top is None else wl.head(top)
    for r in shown.itertuples(index=False):
        ids = f"; ids {r.ids}" + (f" and {int(r.more_ids):,} more" if r.more_ids else "") \
            if r.ids else ""
        out.append(f"{int(r.rank)}. [{r.kind}] {r.action} ({float(r.share):.1%} of the "
                   f"pipe length{ids})")
    if len(shown) < len(wl):
        out.append(f"... and {len(wl) - len(shown)} more row(s) in the worklist layer")
    return out
