"""How dry-weather flow is shared at a node with several outgoing links.

:class:`SplitRule` decides, at each node where the flow can leave by more than
one link, the share each takes of the flow arriving there
(:func:`gisnet.capacity.network.accumulate` asks it node by node, once the
arriving flow is known). In order:

1. **The town says.** ``[splits]`` in the town file names a node and the
   share of each of its outgoing links (by main id or edge key); links it does
   not name take none. Rule ``town file``.
2. **A pump takes what reaches its wet well.** When a pump (a link of SWMM
   type ``pump``, or a force main of a GIS town) leaves the node, the pumps
   carry all of it, shared equally; the other links (the wet well's
   overflow) take none. Rule ``pump``. The pump's own capacity is not
   checked.
3. **The hydraulics of the node.** The continuing conduits are the gravity
   conduits whose inlet is lowest (within 0.01 ft). When a weir, orifice or
   outlet lies lower than every conduit (a bottom orifice at the invert, a
   regulator chamber's throttle), it is the continuing link: the level is its
   crest or offset plus the head at which it passes the arriving flow (SWMM's
   weir, orifice and outlet equations: :mod:`gisnet.capacity.regulators`);
   links above it take none (rule ``level``); without its SWMM parameters the
   lowest links take all (rule ``lowest inlet``). The level dry-weather
   flow reaches at the node is the inlet invert plus the **normal depth** of
   the arriving flow in the continuing conduit (Manning, its own slope and
   n; :func:`gisnet.capacity.sections.normal_depth_ft`), or, for a shape
   with no closed form of its partial area, the conduit's **crown** (its
   full height: an upper bound below surcharge). Every other link whose
   inlet (a conduit's inlet invert, a weir's crest, an orifice's or
   outlet's offset, as elevations) lies above that level takes none: it is
   an overflow, dry in dry weather. Conduits at or below the level share the
   flow in proportion to their full-flow capacity. Rule ``level``.
   A regulator (weir, orifice, outlet) whose inlet lies *below* the level
   takes flow SWMM's hydraulics would size; gisnet shares it equally among
   the links at or below the level and says so: rule ``regulator below
   dry-weather level`` (state the share in the town file).
   When the arriving flow is more than the continuing conduits' full-flow
   capacity, they carry their capacity and the excess is shared equally
   among the other links: rule ``continuing conduit full``.
4. **Nothing to compare.** Without inlet elevations (no inverts, no crests)
   the gravity links share in proportion to full-flow capacity, equally when
   any capacity is unknown (rule ``full-flow capacity`` / ``equal``), as
   gisnet always did.

Units: elevations in feet, flows in gpd (cfs for Manning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..units import CFS_TO_GPD
from .regulators import head_for_flow
from .sections import Sections

__all__ = ["SPLIT_RULES", "SplitRule", "split_rule"]

#: Inlets within this height (ft) of the lowest count as the lowest.
LEVEL_TOL_FT = 0.01
#: The rules (the ``split_rule`` column of ``pipes_capacity``).
SPLIT_RULES = ("town file", "pump", "level", "regulator below dry-weather level",
               "lowest inlet", "continuing conduit full", "full-flow capacity", "equal")
REGULATORS = ("weir", "orifice", "outlet")


@dataclass
class SplitRule:
    """The facts each split is decided on (arrays aligned with the graph's edges).

    Attributes
    ----------
    keys, main_id
        Edge keys and main ids.
    link_type
        ``conduit``, ``pump``, ``weir``, ``orifice``, ``outlet``.
    inlet_ft
        Elevation at which flow enters the link: a conduit's inlet invert, a
        regulator's crest or offset (NaN unknown).
    capacity_cfs, slope, manning_n
        Full-flow capacity, slope and Manning n of each edge.
    sections
        The edges' cross-sections (normal depth).
    shares
        Node id -> {main id or edge key: share} from the town file.
    node_ids
        Node id of each node position.
    levels
        Node id -> (level_ft, how it was found), filled as splits are decided.
    """

    keys: np.ndarray
    main_id: np.ndarray
    link_type: np.ndarray
    inlet_ft: np.ndarray
    capacity_cfs: np.ndarray
    slope: np.ndarray
    manning_n: np.ndarray
    sections: Sections
    shares: dict[str, dict[str, float]]
    node_ids: list[str]
    levels: dict[str, tuple[float, str]] = field(default_factory=dict)
    #: Each edge's SWMM regulator parameters (``regulator_type``, ``discharge_coeff``,
    #: ``discharge_coeff2``, ``outlet_expon``, ``rating_curve``), None where unknown.
    regulator: dict[str, np.ndarray] = field(default_factory=dict)

    def _regulator_head(self, e: int, q_cfs: float) -> float:
        """Head above its crest or offset at which regulator ``e`` passes ``q_cfs``."""
        r = self.regulator
        if not r:
            return math.nan

        def num(col: str) -> float:
            v = r[col][e]
            return float(v) if v is not None and np.isfinite(float(v)) else math.nan

        rating = r["rating_curve"][e]
        return head_for_flow(str(self.link_type[e]), str(r["regulator_type"][e] or ""),
                             str(self.sections.shape[e]), self.sections.geom[e],
                             num("discharge_coeff"), num("discharge_coeff2"),
                             num("outlet_expon"), None if rating is None else str(rating),
                             q_cfs)

    def __call__(self, x: int, es: np.ndarray, q_gpd: float) -> tuple[np.ndarray, str]:
        """Shares of the out-edges ``es`` of node position ``x`` for ``q_gpd`` arriving."""
        node = self.node_ids[x]
        if node in self.shares:
            return self._stated(node, es), "town file"
        kind = self.link_type[es]
        pump = kind == "pump"
        if pump.any():
            return pump / pump.sum(), "pump"
        return self._hydraulic(node, es, q_gpd)

    def _stated(self, node: str, es: np.ndarray) -> np.ndarray:
        want = self.shares[node]
        got = np.array([want.get(str(self.keys[e]), want.get(str(self.main_id[e]), 0.0))
                        for e in es], dtype=float)
        named = {str(self.keys[e]) for e in es} | {str(self.main_id[e]) for e in es}
        unknown = sorted(set(want) - named)
        if unknown:
            raise ConfigError(f"town file [splits] {node!r}: {', '.join(unknown)} do(es) not "
                              f"leave node {node} (links leaving it: "
                              f"{', '.join(str(self.keys[e]) for e in es)})")
        if not got.sum() > 0:
            raise ConfigError(f"town file [splits] {node!r}: the shares add up to 0")
        return got / got.sum()

    def _by_capacity(self, es: np.ndarray) -> tuple[np.ndarray, str]:
        cap = self.capacity_cfs[es]
        if np.all(np.isfinite(cap)) and cap.sum() > 0:
            return cap / cap.sum(), "full-flow capacity"
        return np.full(len(es), 1.0 / len(es)), "equal"

    def _hydraulic(self, node: str, es: np.ndarray, q_gpd: float) -> tuple[np.ndarray, str]:
        kind = self.link_type[es]
        inlet = self.inlet_ft[es]
        conduit = kind == "conduit"
        reg = np.isin(kind, REGULATORS)
        known = (conduit | reg) & np.isfinite(inlet)
        if not known.any():
            return self._by_capacity(es)
        low = float(np.nanmin(np.where(known, inlet, np.nan)))
        lowest = known & (inlet <= low + LEVEL_TOL_FT)
        if not (lowest & conduit).any():
            return self._regulators_lowest(node, es, q_gpd, lowest, low)
        cont = lowest & conduit
        ce = es[cont]
        frac_c, _ = self._by_capacity(ce)
        # the level in the continuing conduit carrying the largest share
        k = int(np.argmax(frac_c))
        e = int(ce[k])
        q_cfs = q_gpd / CFS_TO_GPD
        depth, how = self.sections.normal_depth(e, q_cfs * frac_c[k], float(self.slope[e]),
                                                float(self.manning_n[e]))
        if not math.isfinite(depth):
            return self._by_capacity(es)
        level = low + depth
        self.levels[node] = (level, how)
        cap_c = float(np.nansum(self.capacity_cfs[ce]))
        others = ~cont
        if how == "full" and others.any() and np.isfinite(cap_c) and q_cfs > cap_c > 0:
            out = np.zeros(len(es))
            out[cont] = self.capacity_cfs[ce] / q_cfs
            out[others] = (1.0 - cap_c / q_cfs) / others.sum()
            return out, "continuing conduit full"
        wet = cont | (np.isfinite(inlet) & (inlet <= level + 1e-9)) | ~np.isfinite(inlet)
        if (wet & ~conduit).any():
            return wet / wet.sum(), "regulator below dry-weather level"
        frac_w, _ = self._by_capacity(es[wet])
        out = np.zeros(len(es))
        out[wet] = frac_w
        return out, "level"

    def _regulators_lowest(self, node: str, es: np.ndarray, q_gpd: float,
                           lowest: np.ndarray, low: float) -> tuple[np.ndarray, str]:
        """A weir, orifice or outlet lies lowest (a bottom orifice at the invert, a
        regulator chamber's throttle): the level is its crest or offset plus the head
        at which it passes the arriving flow (shared equally when several lie
        lowest). Links above that level take none (rule ``level``); any other at or
        below it shares equally (``regulator below dry-weather level``). Without the
        regulator's parameters (no head to compute), the lowest links take it all:
        rule ``lowest inlet``."""
        inlet = self.inlet_ft[es]
        q_cfs = q_gpd / CFS_TO_GPD / int(lowest.sum())
        heads = [self._regulator_head(int(e), q_cfs) for e in es[lowest]]
        if not all(math.isfinite(h) for h in heads):
            return lowest / lowest.sum(), "lowest inlet"
        level = low + max(heads)
        self.levels[node] = (level, "regulator head")
        wet = lowest | (np.isfinite(inlet) & (inlet <= level + 1e-9)) | ~np.isfinite(inlet)
        if (wet & ~lowest).any():
            return wet / wet.sum(), "regulator below dry-weather level"
        return lowest / lowest.sum(), "level"


def _lookup(mains: pd.DataFrame | None, main_id: np.ndarray, col: str) -> np.ndarray:
    """``mains[col]`` of each edge's main (None where the layer has no such column)."""
    out = np.full(len(main_id), None, dtype=object)
    if mains is None or col not in mains.columns or not len(mains):
        return out
    t = mains.drop_duplicates("main_id")
    s = pd.Series(t[col].to_numpy(object), index=t["main_id"].astype(str).to_numpy())
    pos = s.index.get_indexer(pd.Index(main_id.astype(str)))
    vals = s.to_numpy(object)
    out[pos >= 0] = vals[pos[pos >= 0]]
    return out


def _floats(a: np.ndarray) -> np.ndarray:
    return pd.to_numeric(pd.Series(a, dtype=object), errors="coerce").to_numpy(float)


def split_rule(town: Any, net: Any, capacity_cfs: np.ndarray, slope: np.ndarray,
               manning_n: np.ndarray, sections: Sections) -> SplitRule:
    """The :class:`SplitRule` of a town's graph.

    Parameters
    ----------
    town
        The town: its mains (``swmm_type``, ``crest_ft``,
        ``swmm_up_invert_ft`` where imported from SWMM) and its town file's
        ``[splits]`` (``town.settings.extra["splits"]``).
    net
        The graph arrays (:class:`gisnet.capacity.network.Network`).
    capacity_cfs, slope, manning_n, sections
        Of each edge, as the capacity step computed them.
    """
    mains = town.layers.get("mains") if hasattr(town, "layers") else None
    st = _lookup(mains, net.main_id, "swmm_type")
    link_type = np.array([str(t).lower() if isinstance(t, str) and t else
                          ("conduit" if g else "pump") for t, g in zip(st, net.gravity,
                                                                       strict=True)],
                         dtype=object)
    crest = _floats(_lookup(mains, net.main_id, "crest_ft"))
    swmm_up = _floats(_lookup(mains, net.main_id, "swmm_up_invert_ft"))
    # a main cut at T-connections: only its first piece starts at the main's inlet
    first = np.array([str(k) == str(m) for k, m in zip(net.keys, net.main_id, strict=True)])
    inlet = np.where(np.isfinite(net.up_inv), net.up_inv, np.where(first, swmm_up, np.nan))
    reg = np.isin(link_type, REGULATORS)
    inlet = np.where(reg, crest, inlet)
    extra = getattr(getattr(town, "settings", None), "extra", {}) or {}
    shares = {str(k): {str(a): float(b) for a, b in v.items()}
              for k, v in dict(extra.get("splits") or {}).items()}
    regulator = {c: _lookup(mains, net.main_id, c) for c in
                 ("regulator_type", "discharge_coeff", "discharge_coeff2", "outlet_expon",
                  "rating_curve")}
    for c in ("discharge_coeff", "discharge_coeff2", "outlet_expon"):
        regulator[c] = _floats(regulator[c])
    return SplitRule(net.keys, net.main_id, link_type, inlet, capacity_cfs, slope, manning_n,
                     sections, shares, [str(n) for n in net.nodes], regulator=regulator)
