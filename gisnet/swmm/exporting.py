"""``gisnet export-swmm``: gisnet's network as a SWMM 5 model that runs as written.

:func:`export_model` turns the sewer graph and the capacity result (flows at
the connection points) into SWMM tables; :func:`inp_text` writes them.

- every graph edge that carries flow by gravity -> a conduit named by its
  edge key (the main id; ``main_id@2``... for the pieces of a split main),
  its cross-section (circular, Geom1 = diameter, or the shape and Geom1-4
  the mains carry, CUSTOM with its shape curve in [CURVES]), Length = gisnet's
  length, Manning n = the
  profile's (the ``manning_n`` gisnet's capacity used), offsets = the pipe's
  inverts above its nodes' inverts;
- weirs, orifices and outlets with their imported SWMM parameters -> [WEIRS],
  [ORIFICES], [OUTLETS] as imported (dynamic wave routing);
- other non-gravity edges (force mains, imported pumps, regulators without
  parameters) -> ideal
  pumps (SWMM's ``*`` curve: what enters the inlet node leaves by the pump)
  when they are the only link leaving their node (SWMM allows no other), else
  circular conduits (the hydraulics then share the flow);
- nodes -> junctions (invert = the lowest of the structure's invert and the
  pipe ends there; max depth = rim - invert where the rim is known, else 0,
  SWMM's "up to the highest crown"); outlets (plants, outfalls) and dead ends
  -> free outfalls; an outlet with several inflowing pipes becomes a junction
  with an outfall joined by a short conduit (SWMM allows one link per outfall);
- each connection point's average flow (gisnet's parcel and user flows) ->
  a constant [DWF] at the **upstream** node of the tapped pipe: gisnet counts a
  tap's flow in the whole tapped pipe, and SWMM counts a node's inflow in the
  pipe leaving it, so the two carry the same flow in every pipe of a tree; a
  parcel whose ``outlet_node`` names a node (an imported [DWF] inflow), which
  gisnet adds at that node, -> a [DWF] at that node.
- options: constant dry-weather flow, no rain, kinematic wave routing when no
  node has two outflowing links and no conduit an adverse slope (steady flow
  is then the exact sum of the inflows; SWMM's kinematic wave refuses both),
  dynamic wave otherwise; 12 hours, so the flow is steady at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from ..capacity.network import edge_inflows, node_inflows, parcels_at_nodes
from ..capacity.sections import edge_sections
from ..errors import ConfigError
from ..units import CFS_TO_GPD

__all__ = ["REGULATOR_COLUMNS", "SwmmExport", "export_model", "inp_text", "regulator_table"]

#: Hours simulated: long enough for constant inflows to reach every outfall.
SIM_HOURS = 12
OUTLET_LINK_FT = 10.0
#: Slope (ft/ft) of a pipe with no inverts, no slope and no profile minimum.
ASSUMED_SLOPE = 0.004
REGULATORS = ("weir", "orifice", "outlet")
#: The mains' columns a weir, orifice or outlet imported from SWMM carries.
PARAM_COLUMNS = ("swmm_type", "crest_ft", "regulator_type", "discharge_coeff",
                 "discharge_coeff2", "outlet_expon", "flap_gate", "end_contractions",
                 "can_surcharge", "road_width_ft", "road_surface", "close_time_h",
                 "rating_curve", "shape", "geom1_ft", "geom2_ft", "geom3_ft", "geom4_ft")
REGULATOR_COLUMNS = ["name", "main_id", "swmm_type", "from_node", "to_node", "height_ft",
                     *PARAM_COLUMNS[2:], "vertices"]


def regulator_table(mains: pd.DataFrame | None, main_id: np.ndarray) -> pd.DataFrame:
    """Each edge's SWMM link parameters from the mains layer (:data:`PARAM_COLUMNS`;
    missing columns are empty) and ``known``: a weir, orifice or outlet whose
    parameters are enough to write it (type, crest, and a coefficient and
    cross-section, or an outlet's rating)."""
    idx = pd.Index(main_id.astype(str))
    out = pd.DataFrame(index=range(len(main_id)))
    t = None
    if mains is not None and len(mains):
        t = mains.drop_duplicates("main_id")
        t = t.set_index(t["main_id"].astype(str))
    for c in PARAM_COLUMNS:
        if t is not None and c in t.columns:
            out[c] = t[c].reindex(idx).to_numpy(object)
        else:
            out[c] = None
    for c in ("crest_ft", "discharge_coeff", "discharge_coeff2", "outlet_expon",
              "end_contractions", "road_width_ft", "close_time_h", "geom1_ft", "geom2_ft",
              "geom3_ft", "geom4_ft"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    kind = out["swmm_type"].astype(str).str.lower()
    out["swmm_type"] = kind.where(kind.isin(REGULATORS), None)
    rtype = out["regulator_type"].astype(str).str.strip()
    has_type = out["regulator_type"].notna() & (rtype != "") & (rtype != "None")
    shaped = out["shape"].notna() & (out["geom1_ft"] > 0)
    coeff = np.isfinite(out["discharge_coeff"])
    rating = out["rating_curve"].notna() & (out["rating_curve"].astype(str).str.strip() != "")
    out["known"] = (has_type & np.isfinite(out["crest_ft"]) & (
        ((kind == "weir") | (kind == "orifice")) & shaped & coeff
        | (kind == "outlet") & rtype.str.upper().str.startswith("FUNCTIONAL") & coeff
        & np.isfinite(out["outlet_expon"])
        | (kind == "outlet") & rtype.str.upper().str.startswith("TABULAR") & rating))
    return out


def _inflows_at_nodes(town: Any, G: nx.MultiDiGraph, points: pd.DataFrame,
                      flows: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.Series]:
    """Parcels that enter the network at a node (``outlet_node``: an imported [DWF]
    inflow), as capacity takes them (:func:`gisnet.capacity.network.parcels_at_nodes`):
    the connection points left to tap the pipes, and each node's inflow (gpd). Written
    at that node, SWMM and gisnet add it at the same place, and the round trip gives
    SWMM each inflow where the model had it."""
    at = parcels_at_nodes(town.layer("parcels"), G.nodes) if flows is not None \
        else pd.DataFrame(columns=["parcel_id", "node_id", "known"])
    if not len(at) or not at["known"].any() or flows is None:
        return points, pd.Series(dtype=float)
    inflow = node_inflows(at, flows)
    ids = set(at.loc[at["known"].to_numpy(bool), "parcel_id"].astype(str))
    if "parcel_id" in points:
        own = points["parcel_id"].astype("string").isin(ids).fillna(False).to_numpy(bool)
        if "user_id" in points:
            own = own & points["user_id"].isna().to_numpy(bool)
        points = points[~own]
    q = inflow["dom_gpd"] + inflow["ind_gpd"]
    return points, q.set_axis([str(x) for x in q.index])


def _regulators(links: pd.DataFrame, regs: pd.DataFrame, up: np.ndarray,
                ninv: dict[str, float]) -> pd.DataFrame:
    """The weirs, orifices and outlets to write: crest (offset) height above the
    exported inlet node's invert (never below it: SWMM raises a weir's to the invert)."""
    if not len(links):
        return pd.DataFrame(columns=REGULATOR_COLUMNS)
    out = regs.drop(columns="known").reset_index(drop=True)
    out.insert(0, "name", links["name"].to_numpy(object))
    out.insert(1, "main_id", links["main_id"].to_numpy(object))
    out["from_node"] = links["from_node"].to_numpy(object)
    out["to_node"] = links["to_node"].to_numpy(object)
    base = np.array([ninv[n] for n in out["from_node"]])
    out["height_ft"] = out["crest_ft"].to_numpy(float) - base
    out["vertices"] = links["vertices"].to_numpy(object)
    return out[REGULATOR_COLUMNS]


@dataclass
class SwmmExport:
    """SWMM tables of a town's network.

    Attributes
    ----------
    junctions, outfalls
        ``name, invert_ft, max_depth_ft, x, y``.
    conduits
        ``name, main_id, from_node, to_node, length_ft, manning_n, up_offset_ft,
        down_offset_ft, geom1_ft, shape, geom2_ft, geom3_ft, geom4_ft, barrels,
        shape_curve, vertices`` (list of (x, y)).
    pumps
        ``name, main_id, from_node, to_node, vertices``.
    regulators
        Weirs, orifices and outlets with their SWMM parameters
        (:data:`REGULATOR_COLUMNS`; ``height_ft`` above the exported inlet
        node's invert, coefficients in CFS and feet).
    dwf
        ``node, flow_gpd``.
    routing
        ``KINWAVE`` or ``DYNWAVE``.
    notes
        What was assumed, one sentence each (also written in [TITLE]).
    """

    junctions: pd.DataFrame
    outfalls: pd.DataFrame
    conduits: pd.DataFrame
    pumps: pd.DataFrame
    dwf: pd.DataFrame
    routing: str
    title: str
    notes: list[str] = field(default_factory=list)
    regulators: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=REGULATOR_COLUMNS))


def _name(s: Any, what: str) -> str:
    t = str(s)
    if not t or any(c.isspace() for c in t) or any(c in t for c in ';"['):
        raise ConfigError(f"{what} {t!r} cannot be a SWMM name (spaces, ';', '\"' or '[')")
    return t


def _node_tables(town: Any) -> tuple[dict[str, float], dict[str, float]]:
    mh = town.layer("manholes")
    if mh is None or not len(mh):
        return {}, {}
    ids = mh["node_id"].astype(str)
    inv = pd.to_numeric(mh["invert_ft"], errors="coerce")
    rim = pd.to_numeric(mh["rim_ft"], errors="coerce")
    return ({i: v for i, v in zip(ids, inv, strict=True) if np.isfinite(v)},
            {i: v for i, v in zip(ids, rim, strict=True) if np.isfinite(v)})


def _inverts(pipes: pd.DataFrame, node_inv: dict[str, float],
             notes: list[str], gravity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Up and down invert of every pipe: its own, else the node's, else carried up
    from the downstream end by slope x length (the note names the gravity pipes laid at
    an assumed slope: a weir, orifice, outlet or pump sits at its nodes)."""
    up = pd.to_numeric(pipes["up_invert_ft"], errors="coerce").to_numpy(float).copy()
    dn = pd.to_numeric(pipes["down_invert_ft"], errors="coerce").to_numpy(float).copy()
    u = pipes["from_node"].to_numpy(object)
    v = pipes["to_node"].to_numpy(object)
    slope = pipes["slope"].to_numpy(float).copy()
    need = ~(np.isfinite(up) & np.isfinite(dn)) & ~np.isfinite(slope)
    if need.any():  # no inverts and no slope: the profile's minimum slope for the diameter
        ms = pipes["min_slope"].to_numpy(float)
        slope[need] = np.where(np.isfinite(ms[need]), ms[need], ASSUMED_SLOPE)
        said = need & gravity
        if said.any():
            notes.append(f"{int(said.sum())} pipe(s) have neither inverts nor a slope: laid "
                         "at the profile's minimum slope for their diameter (else "
                         f"{ASSUMED_SLOPE}): "
                         + ", ".join(map(str, pipes["edge_key"].to_numpy(object)[said][:10])))
    length = pipes["length_ft"].to_numpy(float)
    elev = dict(node_inv)
    filled = 0
    for _ in range(len(pipes) + 1):
        changed = False
        for i in range(len(pipes)):
            if not np.isfinite(dn[i]) and v[i] in elev:
                dn[i] = elev[v[i]]
                changed = True
            if not np.isfinite(up[i]) and u[i] in elev:
                up[i] = elev[u[i]]
                changed = True
            if np.isfinite(dn[i]) and not np.isfinite(up[i]) and np.isfinite(slope[i]):
                up[i] = dn[i] + slope[i] * length[i]
                filled += 1
                changed = True
            if np.isfinite(up[i]) and not np.isfinite(dn[i]) and np.isfinite(slope[i]):
                dn[i] = up[i] - slope[i] * length[i]
                filled += 1
                changed = True
            for n, z in ((u[i], up[i]), (v[i], dn[i])):
                if np.isfinite(z) and n not in elev:
                    elev[n] = z
                    changed = True
        if not changed:
            break
    missing = ~(np.isfinite(up) & np.isfinite(dn))
    if missing.any():
        ids = pipes["edge_key"].to_numpy(object)[missing]
        raise ConfigError(f"{int(missing.sum())} pipe(s) have no inverts, no node inverts and "
                          "no slope to place them in a SWMM model: "
                          f"{', '.join(map(str, ids[:10]))}")
    if filled:
        notes.append(f"{filled} pipe end invert(s) carried from the other end by the slope")
    return up, dn


def export_model(town: Any, G: nx.MultiDiGraph, capacity: Any, *,
                 routing: str | None = None) -> SwmmExport:
    """SWMM tables of the town's gravity network with its average dry-weather flows.

    Parameters
    ----------
    town
        The loaded town (structure inverts and rims, profile).
    G
        Its sewer graph.
    capacity
        :class:`gisnet.capacity.CapacityResult` of the same graph (pipes with
        the Manning n used, connection points, parcel flows).
    routing
        ``KINWAVE`` or ``DYNWAVE``; default: kinematic wave unless a node has
        several outflowing links.

    Returns
    -------
    SwmmExport

    Raises
    ------
    ConfigError
        A name SWMM cannot take, a gravity pipe without diameter, or pipes
        that cannot be given inverts.
    """
    notes: list[str] = []
    pipes = capacity.pipes
    node_inv, node_rim = _node_tables(town)
    grav = ~pipes["flags"].astype(str).str.contains("force_main").to_numpy()
    keep = ~pipes["flags"].astype(str).str.contains("inactive|no_sanitary_flow").to_numpy()
    if (~keep).any():
        notes.append(f"{int((~keep).sum())} inactive or storm pipe(s) left out")
    p = pipes[keep].reset_index(drop=True)
    grav = grav[keep]
    # A weir, orifice or outlet with its SWMM parameters (imported) is written back as
    # itself. Any other non-gravity link is an ideal pump (all that enters its inlet
    # node leaves by it) where SWMM allows one: as the only link leaving its node; else
    # a force-main conduit.
    regs = regulator_table(town.layer("mains"), p["main_id"].astype(str).to_numpy(object))
    is_reg = ~grav & regs["known"].to_numpy(bool)
    n_out = p.groupby("from_node")["edge_key"].transform("size").to_numpy()
    as_pump = ~grav & ~is_reg & (n_out == 1)
    as_conduit = ~grav & ~is_reg & ~as_pump
    unknown_reg = ~grav & ~is_reg & regs["swmm_type"].isin(REGULATORS).to_numpy(bool)
    if unknown_reg.any():
        notes.append(f"{int(unknown_reg.sum())} weir(s), orifice(s) or outlet(s) without "
                     "their SWMM parameters (type, crest or offset height, discharge "
                     "coefficient, cross-section or rating: not imported from a SWMM model) "
                     "are written as ideal pumps where they are their node's only outflow, "
                     "else as circular conduits: "
                     + ", ".join(p["edge_key"][unknown_reg].head(10)))
    if (as_conduit & ~unknown_reg).any():
        notes.append(f"{int((as_conduit & ~unknown_reg).sum())} non-gravity link(s) share "
                     "their inlet node with other outflowing links and are written as "
                     "conduits: " + ", ".join(p["edge_key"][as_conduit & ~unknown_reg]
                                              .head(10)))
    grav = grav | as_conduit
    sec = edge_sections(town.layer("mains"), p["main_id"].astype(str).to_numpy(object),
                        p["diameter_in"].to_numpy(float))
    diam = p["diameter_in"].to_numpy(float).copy()
    shaped = sec.shape != "CIRCULAR"
    bad = np.flatnonzero(grav & shaped & ~(sec.area_ft2 > 0))
    if bad.size:
        raise ConfigError(f"{bad.size} conduit(s) have a cross-section gisnet cannot write "
                          "to SWMM (no area from their shape and dimensions): "
                          + ", ".join(f"{p.at[i, 'edge_key']} ({sec.shape[i]})"
                                      for i in bad[:10]))
    nodiam = np.flatnonzero(grav & ~shaped & ~(diam > 0))
    for i in nodiam:  # SWMM needs one: the neighbours' (said in the notes)
        ends = {p.at[i, "from_node"], p.at[i, "to_node"]}
        near = diam[(p["from_node"].isin(ends) | p["to_node"].isin(ends)).to_numpy()
                    & (diam > 0)]
        diam[i] = float(np.median(near)) if near.size else float(np.nanmedian(diam[diam > 0]))
        notes.append(f"pipe {p.at[i, 'edge_key']} has no diameter: written with "
                     f"{diam[i]:g} in, the median of the pipes it meets")
    inverts = {k: (d.get("up_invert_ft"), d.get("down_invert_ft"))
               for _, _, k, d in G.edges(keys=True, data=True)}
    p["up_invert_ft"] = [inverts.get(k, (None, None))[0] for k in p["edge_key"]]
    p["down_invert_ft"] = [inverts.get(k, (None, None))[1] for k in p["edge_key"]]
    up, dn = _inverts(p, node_inv, notes, grav & ~as_conduit)
    names = [_name(k, "pipe") for k in p["edge_key"]]
    nodes_used = pd.unique(np.concatenate([p["from_node"].to_numpy(object),
                                           p["to_node"].to_numpy(object)]))
    ninv: dict[str, float] = {}
    for n, z in zip(np.concatenate([p["from_node"], p["to_node"]]),
                    np.concatenate([up, dn]), strict=True):
        ninv[n] = min(ninv.get(n, np.inf), z)
    for n in nodes_used:
        if n in node_inv:
            ninv[n] = min(ninv[n], node_inv[n])
    outs = p.groupby("from_node").size()
    ins = p.groupby("to_node").size()
    outlets = {str(o) for o in G.graph.get("outlets", [])}
    xy = {str(n): (float(d["x"]), float(d["y"])) for n, d in G.nodes(data=True)}

    jrows: list[tuple[Any, ...]] = []  # junctions and outfalls: name, invert, depth, x, y
    orows: list[tuple[Any, ...]] = []
    extra_conduits: list[dict[str, Any]] = []
    for n in nodes_used:
        nm = _name(n, "node")
        x, y = xy[n]
        is_out = int(outs.get(n, 0)) == 0
        if is_out and n not in outlets:
            notes.append(f"dead end {nm} made an outfall")
        depth = max(node_rim[n] - ninv[n], 0.0) if n in node_rim else 0.0
        if is_out and int(ins.get(n, 0)) > 1:
            jrows.append((nm, ninv[n], depth, x, y))
            out = f"{nm}_OUT"
            orows.append((out, ninv[n] - 0.01 * OUTLET_LINK_FT, 0.0, x + 1.0, y))
            extra_conduits.append({"name": f"{nm}_OUTLET", "main_id": None, "from_node": nm,
                                   "to_node": out, "length_ft": OUTLET_LINK_FT,
                                   "manning_n": 0.013, "up_offset_ft": 0.0,
                                   "down_offset_ft": 0.0,
                                   "geom1_ft": 2.0 * float(np.nanmax(np.where(
                                       shaped, sec.geom[:, 0], diam / 12.0))),
                                   "shape": "CIRCULAR", "geom2_ft": 0.0, "geom3_ft": 0.0,
                                   "geom4_ft": 0.0, "barrels": 1.0, "shape_curve": None,
                                   "vertices": []})
            notes.append(f"outlet {nm} receives {int(ins[n])} pipes: it is a junction with "
                         f"outfall {out} through conduit {nm}_OUTLET (SWMM allows one link "
                         "per outfall)")
        elif is_out:
            orows.append((nm, ninv[n], 0.0, x, y))
        else:
            jrows.append((nm, ninv[n], depth, x, y))
    cols = ["name", "invert_ft", "max_depth_ft", "x", "y"]
    junctions = pd.DataFrame(jrows, columns=cols)
    outfalls = pd.DataFrame(orows, columns=cols)

    geoms = p.geometry.to_numpy()
    verts = [[tuple(c) for c in list(g.coords)[1:-1]] if g is not None else [] for g in geoms]
    fn = p["from_node"].to_numpy(object)
    tn = p["to_node"].to_numpy(object)
    conduits = pd.DataFrame({
        "name": names, "main_id": p["main_id"], "from_node": fn, "to_node": tn,
        "length_ft": np.maximum(p["length_ft"].to_numpy(float), 0.01),
        "manning_n": p["manning_n"].to_numpy(float),
        "up_offset_ft": up - np.array([ninv[n] for n in fn]),
        "down_offset_ft": dn - np.array([ninv[n] for n in tn]),
        "geom1_ft": np.where(shaped, sec.geom[:, 0], diam / 12.0),
        "shape": sec.shape, "geom2_ft": np.where(shaped, sec.geom[:, 1], 0.0),
        "geom3_ft": np.where(shaped, sec.geom[:, 2], 0.0),
        "geom4_ft": np.where(shaped, sec.geom[:, 3], 0.0), "barrels": sec.barrels,
        "shape_curve": [" ".join(f"{v:.6g}" for v in sec.curves[i].ravel())
                        if i in sec.curves else None for i in range(len(p))],
        "vertices": verts})
    pumps = conduits[as_pump][["name", "main_id", "from_node", "to_node", "vertices"]]
    regulators = _regulators(conduits[is_reg], regs[is_reg], up[is_reg], ninv)
    conduits = pd.concat([conduits[grav], pd.DataFrame(extra_conduits)], ignore_index=True) \
        if extra_conduits else conduits[grav].reset_index(drop=True)
    if len(regulators):
        kinds = regulators["swmm_type"].value_counts()
        notes.append("written back with their SWMM parameters as imported: "
                     + ", ".join(f"{v} {k}(s)" for k, v in kinds.items()))
    if len(pumps):
        notes.append(f"{len(pumps)} non-gravity link(s) written as ideal pumps: "
                     + ", ".join(pumps["name"].head(10)))

    # Flows: each tapped edge's local inflow at its upstream node; a parcel entering at
    # a node (an imported [DWF] inflow) at that node, where gisnet adds it too.
    points, at_node = _inflows_at_nodes(town, G, capacity.points, capacity.flows)
    inflow = edge_inflows(town, points, capacity.flows)
    local = inflow["dom_gpd"] + inflow["ind_gpd"]
    by_key = p.set_index("edge_key")["from_node"]
    known = local.index.isin(by_key.index)
    lost = float(local[~known].sum())
    if lost > 0:
        notes.append(f"{lost:,.0f} gpd tapped on pipes left out of the model is not carried")
    node_flow = local[known].groupby(by_key.reindex(local.index[known]).to_numpy()).sum()
    if len(at_node):
        node_flow.index = [str(n) for n in node_flow.index]
        used = at_node.index.isin([str(n) for n in nodes_used])
        if (~used).any() and float(at_node[~used].sum()) > 0:
            notes.append(f"{float(at_node[~used].sum()):,.0f} gpd entering at node(s) left out "
                         "of the model is not carried: " + ", ".join(at_node.index[~used][:10]))
        node_flow = node_flow.add(at_node[used], fill_value=0.0)
        notes.append(f"{int((at_node[used] > 0).sum())} inflow(s) entering at a node "
                     "(outlet_node: a [DWF] imported from a SWMM model) written at that node")
    dwf = pd.DataFrame({"node": [str(n) for n in node_flow.index],
                        "flow_gpd": node_flow.to_numpy(float)})
    dwf = dwf[dwf["flow_gpd"] > 0].reset_index(drop=True)

    if routing is None:
        adverse = bool(np.any(conduits["up_offset_ft"].to_numpy(float)
                              + conduits["from_node"].map(ninv).to_numpy(float)
                              < conduits["down_offset_ft"].to_numpy(float)
                              + conduits["to_node"].map(ninv).to_numpy(float)))
        split = int(outs.max() if len(outs) else 0) > 1
        # a regulator's flow follows the head at its inlet node: dynamic wave
        routing = "DYNWAVE" if split or adverse or len(regulators) else "KINWAVE"
    routing = routing.upper()
    if routing not in ("KINWAVE", "DYNWAVE"):
        raise ConfigError(f"routing must be KINWAVE or DYNWAVE, not {routing!r}")
    notes.append(f"{routing} routing of constant dry-weather flow for {SIM_HOURS} h")
    title = f"{town.name}: gisnet network, average dry-weather flows"
    return SwmmExport(junctions, outfalls, conduits, pumps, dwf, routing, title, notes,
                      regulators)


def _f(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") if np.isfinite(x) else "0"


def _yn(v: Any, default: str) -> str:
    return v if v in ("YES", "NO") else default


def _regulator_sections(regs: pd.DataFrame) -> list[str]:
    """[WEIRS], [ORIFICES] and [OUTLETS] rows (SWMM 5's columns, CFS and feet)."""
    out: list[str] = []
    weirs = regs[regs["swmm_type"] == "weir"]
    if len(weirs):
        out += ["", "[WEIRS]", ";;Name From To Type CrestHt Qcoeff Gated EndCon EndCoeff "
                "Surcharge RoadWidth RoadSurf"]
        for r in weirs.itertuples():
            row = (f"{r.name} {r.from_node} {r.to_node} {r.regulator_type} "
                   f"{_f(max(r.height_ft, 0.0))} {_f(r.discharge_coeff)} "
                   f"{_yn(r.flap_gate, 'NO')} {_f(r.end_contractions)} "
                   f"{_f(r.discharge_coeff2)} {_yn(r.can_surcharge, 'YES')}")
            if str(r.regulator_type).upper() == "ROADWAY":
                row += f" {_f(r.road_width_ft)} {r.road_surface or 'PAVED'}"
            out.append(row)
    orifices = regs[regs["swmm_type"] == "orifice"]
    if len(orifices):
        out += ["", "[ORIFICES]", ";;Name From To Type Offset Qcoeff Gated CloseTime"]
        out += [f"{r.name} {r.from_node} {r.to_node} {r.regulator_type} {_f(r.height_ft)} "
                f"{_f(r.discharge_coeff)} {_yn(r.flap_gate, 'NO')} {_f(r.close_time_h)}"
                for r in orifices.itertuples()]
    outlets = regs[regs["swmm_type"] == "outlet"]
    if len(outlets):
        out += ["", "[OUTLETS]", ";;Name From To Offset Type QTable/Qcoeff Qexpon Gated"]
        for r in outlets.itertuples():
            head = f"{r.name} {r.from_node} {r.to_node} {_f(r.height_ft)} {r.regulator_type}"
            if str(r.regulator_type).upper().startswith("TABULAR"):
                out.append(f"{head} {r.name}_RATING {_yn(r.flap_gate, 'NO')}")
            else:
                out.append(f"{head} {r.discharge_coeff:.9g} {_f(r.outlet_expon)} "
                           f"{_yn(r.flap_gate, 'NO')}")
    return out


def inp_text(ex: SwmmExport) -> str:
    """The SWMM 5 input file of an export (US units: CFS, feet)."""
    step = "0:00:30" if ex.routing == "KINWAVE" else "0:00:05"
    out = ["[TITLE]", ex.title, *[f"note: {n}" for n in ex.notes], "",
           "[OPTIONS]", "FLOW_UNITS CFS", "INFILTRATION HORTON", f"FLOW_ROUTING {ex.routing}",
           "LINK_OFFSETS DEPTH", "MIN_SLOPE 0", "ALLOW_PONDING NO", "SKIP_STEADY_STATE NO",
           "IGNORE_RAINFALL YES", "IGNORE_SNOWMELT YES", "IGNORE_GROUNDWATER YES",
           "IGNORE_RDII YES", "IGNORE_QUALITY YES",
           "START_DATE 01/01/2020", "START_TIME 00:00:00", "REPORT_START_DATE 01/01/2020",
           "REPORT_START_TIME 00:00:00", "END_DATE 01/01/2020",
           f"END_TIME {SIM_HOURS:02d}:00:00", "REPORT_STEP 00:15:00", "WET_STEP 00:05:00",
           "DRY_STEP 00:05:00", f"ROUTING_STEP {step}", "NORMAL_FLOW_LIMITED BOTH",
           "INERTIAL_DAMPING PARTIAL", "VARIABLE_STEP 0.75", "MIN_SURFAREA 12.566", "",
           "[JUNCTIONS]", ";;Name Elevation MaxDepth InitDepth SurDepth Aponded"]
    out += [f"{r.name} {_f(r.invert_ft)} {_f(r.max_depth_ft)} 0 0 0"
            for r in ex.junctions.itertuples()]
    out += ["", "[OUTFALLS]", ";;Name Elevation Type Gated"]
    out += [f"{r.name} {_f(r.invert_ft)} FREE NO" for r in ex.outfalls.itertuples()]
    out += ["", "[CONDUITS]", ";;Name From To Length Roughness InOffset OutOffset InitFlow MaxFlow"]
    out += [f"{r.name} {r.from_node} {r.to_node} {_f(r.length_ft)} {r.manning_n:.4f} "
            f"{_f(r.up_offset_ft)} {_f(r.down_offset_ft)} 0 0" for r in ex.conduits.itertuples()]
    if len(ex.pumps):
        out += ["", "[PUMPS]", ";;Name From To Curve Status Startup Shutoff"]
        out += [f"{r.name} {r.from_node} {r.to_node} * ON 0 0" for r in ex.pumps.itertuples()]
    regs = ex.regulators
    out += _regulator_sections(regs)
    out += ["", "[XSECTIONS]", ";;Link Shape Geom1 Geom2 Geom3 Geom4 Barrels"]
    curves = []
    for r in regs[regs["swmm_type"].isin(["weir", "orifice"])].itertuples():
        out.append(f"{r.name} {r.shape} {_f(r.geom1_ft)} {_f(r.geom2_ft)} {_f(r.geom3_ft)} "
                   f"{_f(r.geom4_ft)}")
    for r in ex.conduits.itertuples():
        if r.shape == "CUSTOM":
            curves.append((f"{r.name}_SHAPE", r.shape_curve))
            out.append(f"{r.name} CUSTOM {_f(r.geom1_ft)} {r.name}_SHAPE 0 0 {r.barrels:g}")
        else:
            out.append(f"{r.name} {r.shape} {_f(r.geom1_ft)} {_f(r.geom2_ft)} "
                       f"{_f(r.geom3_ft)} {_f(r.geom4_ft)} {r.barrels:g}")
    ratings = [(f"{r.name}_RATING", r.rating_curve) for r in regs.itertuples()
               if r.swmm_type == "outlet" and str(r.regulator_type).upper().startswith("TABULAR")]
    if curves or ratings:
        out += ["", "[CURVES]", ";;Name Type X Y"]
        for kind, group in (("SHAPE", curves), ("Rating", ratings)):
            for name, text in group:
                v = text.split()
                out += [f"{name} {kind if k == 0 else ''} {v[k]} {v[k + 1]}"
                        for k in range(0, len(v), 2)]
    out += ["", "[DWF]", ";;Node Constituent Baseline Patterns"]
    out += [f"{r.node} FLOW {r.flow_gpd / CFS_TO_GPD:.9g}" for r in ex.dwf.itertuples()]
    out += ["", "[REPORT]", "INPUT NO", "CONTROLS NO", "NODES ALL", "LINKS ALL", "",
            "[COORDINATES]", ";;Node X Y"]
    for t in (ex.junctions, ex.outfalls):
        out += [f"{r.name} {r.x:.3f} {r.y:.3f}" for r in t.itertuples()]
    out += ["", "[VERTICES]", ";;Link X Y"]
    for t in (ex.conduits, ex.pumps, ex.regulators):
        for r in t.itertuples():
            out += [f"{r.name} {x:.3f} {y:.3f}" for x, y in r.vertices]
    return "\n".join(out) + "\n"
