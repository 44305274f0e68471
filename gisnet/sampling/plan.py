"""The sampling plan: each industrial user's control manhole, plant and SIU status.

Every industrial user with its control manhole (:mod:`gisnet.tracing`), the
plant it drains to, its Significant Industrial User status under 40 CFR
403.3(v) (>= 25,000 gpd average process wastewater, >= 5 % of the plant's
design flow, or categorical; the numbers are the profile's ``[pretreatment]``)
and the profile's local review threshold (Poughkeepsie § 168-22.5G(4): average
flow > 10,000 gpd), each with its reason and section. A user the users layer
marks not industrial (``industrial`` = no: a restaurant, a laundromat) is a
discharger, not an industrial user: it is never an SIU (``industrial_user``
False, said in ``siu_reason``); one with no ``industrial`` value counts as an
industrial user, the layer's meaning, and its reason says so.

Flows in gpd, plant design flow in MGD.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd

from ..rules import exceeds
from ..tracing import DownstreamIndex, connection_points, control_manholes

if TYPE_CHECKING:  # pragma: no cover
    from ..town import Town

log = logging.getLogger(__name__)

PLAN_COLUMNS = [
    "user_id", "name", "building_id", "parcel_id", "main_id", "control_manhole_id", "plant_id",
    "path_length_ft", "process_flow_gpd", "categorical", "plant_design_flow_mgd",
    "plant_share_pct", "industrial_user", "siu", "siu_reason", "review", "review_reason",
    "section",
]


#: Reasons that say something of a user other than why it is significant.
_NOT_SIU = ("process flow unknown", "not an industrial user", "industrial not recorded")


def _siu_reasons(reasons: list[str]) -> list[str]:
    """The reasons that make a user significant."""
    return [r for r in reasons if not r.startswith(_NOT_SIU)]


def fmt_gpd(x: float) -> str:
    """A flow in gpd as text (``12,500 gpd``)."""
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
    pre = town.profile.pretreatment
    uid = users["user_id"].astype(object)
    flow = pd.to_numeric(users.get("process_flow_gpd"), errors="coerce").astype(float) \
        if "process_flow_gpd" in users else pd.Series(np.nan, index=users.index)
    categorical = users["categorical"].fillna(False).astype(bool) \
        if "categorical" in users else pd.Series(False, index=users.index)
    marked = users["industrial"].astype("boolean") if "industrial" in users \
        else pd.Series(pd.NA, index=users.index, dtype="boolean")
    industrial = marked.fillna(True).astype(bool)
    plant_id = uid.map(cm["plant_id"])
    design = _plant_design_mgd(town)
    design_mgd = plant_id.map(design).astype(float)
    share = flow / (design_mgd * 1e6)
    rows_reason: list[str] = []
    rows_review: list[str] = []
    siu = np.zeros(len(users), bool)
    review = np.zeros(len(users), bool)
    thr = float(pre.siu_process_flow_gpd)
    frac = float(pre.siu_plant_fraction)
    local = pre.local_review_flow_gpd
    # each column's values held once (a lookup by position in a Series is slow)
    flow_v, share_v, cat_v = flow.to_numpy(), share.to_numpy(), categorical.to_numpy()
    ind_v, marked_v = industrial.to_numpy(), marked.array
    plant_v, design_v = plant_id.to_numpy(), design_mgd.to_numpy()
    for i in range(len(users)):
        f, s, c = flow_v[i], share_v[i], bool(cat_v[i])
        reasons = []
        if not ind_v[i]:
            reasons.append("not an industrial user (users layer: industrial = no): a "
                           "discharger, not an industrial user or SIU")
        elif pd.isna(marked_v[i]):
            reasons.append("industrial not recorded: counted as an industrial user")
        if ind_v[i] and pd.notna(f) and exceeds(f, thr, strict=False):
            reasons.append(f"process wastewater {fmt_gpd(f)} >= {fmt_gpd(thr)}")
        if ind_v[i] and pd.notna(s) and exceeds(s, frac, strict=False):
            reasons.append(
                f"process wastewater {s:.1%} of plant {plant_v[i]} design flow "
                f"{design_v[i]:g} MGD (>= {frac:.0%})"
            )
        # a profile that leaves siu_categorical out (None) does not count categorical users
        if ind_v[i] and c and pre.siu_categorical:
            reasons.append("categorical industrial user")
        if ind_v[i] and pd.isna(f) and not _siu_reasons(reasons):
            reasons.append("process flow unknown: status cannot be decided")
        siu[i] = bool(ind_v[i]) and bool(_siu_reasons(reasons))
        rows_reason.append("; ".join(reasons))
        rr = ""
        if local is not None:
            if pd.notna(f) and exceeds(f, float(local)):
                review[i] = True
                rr = f"average flow {fmt_gpd(f)} > {fmt_gpd(float(local))}"
            elif pd.isna(f):
                rr = "process flow unknown"
        rows_review.append(rr)
    # the control-manhole section of each user's row: § 168-22.5J, or 22.5K
    # where the owner installed the control manhole
    sec_cm = uid.map(cm["section"]).where(uid.map(cm["section"]).notna(),
                                          town.profile.control_manhole.section)
    sections = []
    sec_v = sec_cm.to_numpy()
    for i in range(len(users)):
        parts = [p for p in (sec_v[i],) if p]
        if siu[i]:
            parts.append(str(pre.siu_section))
        if review[i] and pre.local_review_section:
            parts.append(str(pre.local_review_section))
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
            "industrial_user": industrial.to_numpy(bool),
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
