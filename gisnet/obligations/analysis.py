"""Who must connect: measure every parcel, decide by the rule table, build the tables.

:func:`compute_obligations` runs the stages in order:

1. the eligible mains (:class:`~gisnet.obligations.measuring.EligibleMains`);
2. one nearest search for every measured geometry (parcel or building,
   :func:`~gisnet.obligations.spatial.nearest`), and one to the mains not known
   to be public sewers in service (:mod:`~gisnet.obligations.unknown_mains`);
3. already connected parcels (:func:`~gisnet.obligations.measuring.connected`);
4. the abutting test (:func:`~gisnet.obligations.streets.abutting`);
5. under a rule for new buildings, the newest building within reach
   (:func:`~gisnet.obligations.measuring.newest_building`);
6. the evidence lines, the within-the-distance bounds and the building age;
7. the decision (:func:`~gisnet.obligations.deciding.decide` over
   :data:`~gisnet.obligations.deciding.RULES`).

:func:`analyse_obligations` adds the connection zone and the frontage and
returns a :class:`gisnet.results.ObligationsResult`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..errors import NotFoundError
from ..results import ObligationsResult
from ..rules import within
from ..schema import column_names
from ..town import Town
from .building_sewers import BuildingSewers, building_sewers, sentence
from .deciding import Ordinance, ParcelFacts, decide
from .measuring import (
    EligibleMains,
    accessory_only,
    availability,
    building_age,
    building_rows,
    check_town,
    connected,
    measured_geometries,
    nearest_per_parcel,
    newest_building,
    septic,
)
from .notice import district_message, notice_facts
from .spatial import Clock, default_threads, nearest, text_values, threaded_pairs
from .street_frontage import frontage as frontage_layer
from .streets import abutting
from .unknown_mains import UnknownMains, nearest_unknown
from .zone import connection_zone

log = logging.getLogger(__name__)

#: Columns of the ``obligations`` layer, in order (then the parcel geometry).
OBLIGATION_COLUMNS = [
    "parcel_id", "address", "owner_name", "building_id", "main_id", "distance_ft",
    "within_distance", "abuts_sewered_street", "abutting_method", "status", "deadline_days",
    "septic_deadline", "measure",
    "section", "reason", "approximate", "distance_limit_ft", "abutting_main_id",
    "abutting_distance_ft", "nearest_x", "nearest_y", "from_x", "from_y", "built_date",
    "sewer_available_date", "notice_date", "deadline_date", "health_hazard", "highway_program",
    "notice_ground", "in_district", "profile",
]
#: Columns of the ``obligation_evidence`` layer (then the measured line).
EVIDENCE_COLUMNS = ["parcel_id", "building_id", "main_id", "distance_ft", "measure",
                    "section", "status", "abutting_method"]


def select_ids(values: Iterable[Any]) -> list[str]:
    """Parcel ids as strings, without blanks or repeats, in order."""
    seen: dict[str, None] = {}
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        s = str(v).strip()
        if s:
            seen.setdefault(s, None)
    return list(seen)


def select_parcels(town: Town, parcels: Any) -> gpd.GeoDataFrame:
    """The parcels asked for: all (None), by id (unknown ids raise), or given as a
    GeoDataFrame (reprojected to the town's CRS, missing canonical columns added)."""
    base = town.layers["parcels"]
    if parcels is None:
        return base.reset_index(drop=True)
    if isinstance(parcels, gpd.GeoDataFrame):
        out = parcels
        if out.crs is not None and town.crs is not None and not out.crs.equals(town.crs):
            out = out.to_crs(town.crs)
        for c in column_names("parcels"):
            if c not in out.columns:
                out = out.assign(**{c: None})
        return out.reset_index(drop=True)
    if isinstance(parcels, str):
        parcels = [parcels]
    ids = [str(p) for p in parcels]
    have = base["parcel_id"].astype(str)
    missing = sorted(set(ids) - set(have))
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise NotFoundError(f"{len(missing)} parcel id(s) not in the parcels layer: {shown}",
                            layer="parcels", feature=missing[0])
    return base[have.isin(ids).to_numpy()].reset_index(drop=True)


def compute_obligations(
    town: Town,
    *,
    parcels: Any = None,
    assume_abutting: bool = False,
    threads: int | None = None,
) -> dict[str, gpd.GeoDataFrame]:
    """Connection obligations of every parcel, by the town profile's measure.

    Parameters
    ----------
    town
        A loaded town (projected working CRS, profile with ``[connection]``).
    parcels
        None for every parcel; an iterable of parcel ids (unknown ids raise
        :class:`NotFoundError`); or a canonical parcels GeoDataFrame (e.g.
        geometry given to the HTTP service).
    assume_abutting
        Without a streets layer, treat parcels within the distance as
        abutting (``abutting_method`` ``assumed``) instead of deciding it
        from the parcel fabric (``parcel_fabric``).
    threads
        Threads for the nearest-main search (default :func:`default_threads`).

    Returns
    -------
    dict
        ``obligations``: one row per parcel (parcel polygon geometry) with the
        columns of :data:`OBLIGATION_COLUMNS`; ``obligation_evidence``: one
        LineString per measured parcel joining the two nearest points (from
        the parcel/building to the main), with ``parcel_id``, ``building_id``,
        ``main_id``, ``distance_ft``, ``measure``, ``section``, ``status``.

    Raises
    ------
    CRSError
        The town's working CRS is not projected.
    NotFoundError
        A parcel id asked for does not exist.
    """
    ob, ev = _obligations(town, parcels, assume_abutting, threads or default_threads())
    return {"obligations": ob, "obligation_evidence": ev}


def has_frontage_rule(town: Town) -> bool:
    """Whether the town's ordinance charges by street front footage (the profile's
    ``connection.frontage_section``): only then is the ``frontage`` layer part of a
    run. Poughkeepsie's article has no such charge; Berlin's chapter 16 has."""
    return town.profile.connection.frontage_section is not None


def frontage_reason(town: Town) -> str:
    """Why a run has no ``frontage`` layer (for the run's output)."""
    return (f"profile {town.profile.id} has no frontage rule (connection.frontage_section): "
            "the front footage of every parcel is measured only for an ordinance that "
            "charges by it; `gisnet frontage --main ID --cost USD` gives one main's shares")


def analyse_obligations(
    town: Town,
    *,
    parcels: Any = None,
    zone: bool | Callable[[], gpd.GeoDataFrame] = True,
    frontage: bool | None = None,
    assume_abutting: bool = False,
    threads: int | None = None,
    on_measured: Callable[[], None] | None = None,
) -> ObligationsResult:
    """Obligations, evidence and (when asked) the connection zone and frontage.

    Parameters
    ----------
    town, parcels, assume_abutting, threads
        As for :func:`compute_obligations`.
    zone
        Compute the connection zone (:func:`connection_zone`, the whole town); or
        the call that gives it, made after the obligations (the zone started
        beside an earlier step: :func:`gisnet.threads.in_background`).
    frontage
        Compute the frontage of every parcel of the town
        (:func:`gisnet.obligations.frontage`); default (None): when the profile
        has a frontage rule (``connection.frontage_section``, Berlin's pro-rata
        share by street front footage), as :func:`has_frontage_rule` says.
    on_measured
        Called once the nearest-main searches (the part of the step that keeps
        every core busy) are done: ``gisnet run`` starts the connection zone's union
        there, beside the rest of the step.

    Returns
    -------
    gisnet.results.ObligationsResult
    """
    ob, ev = _obligations(town, parcels, assume_abutting, threads or default_threads(),
                          on_measured)
    if frontage is None:
        frontage = has_frontage_rule(town)
    return ObligationsResult(
        obligations=ob, evidence=ev,
        connection_zone=(zone() if callable(zone) else connection_zone(town) if zone
                         else None),
        frontage=frontage_layer(town) if frontage else None,
    )


def _obligations(town: Town, parcels: Any, assume_abutting: bool, threads: int,
                 on_measured: Callable[[], None] | None = None,
                 ) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    check_town(town)
    prof = town.profile
    con = prof.connection
    fpu = float(town.ft_per_unit)
    limit_ft = float(con.distance_ft)
    measure = con.measure
    P = select_parcels(town, parcels)
    n = len(P)
    pgeom = np.asarray(P.geometry.values, dtype=object)
    mains = EligibleMains.of(town)
    mgeom = mains.geoms
    log.info("obligations: %d parcels, %d of %d mains eligible (%s)", n, len(mains.ids),
             mains.total, ", ".join(con.eligible_kinds))

    clock = Clock()
    # ---- distances: one nearest search for every measured geometry
    # each building's parcel, found once for the measuring and the accessory uses
    blds = town.layer("buildings")
    brows = None if blds is None else building_rows(P, blds.reset_index(drop=True))
    del blds
    all_geoms, all_meta = measured_geometries(town, P, measure, brows)
    j, d_u = nearest(all_geoms, mgeom, mains.rank, threads=threads)
    all_meta["j"] = j
    all_meta["distance_ft"] = d_u * fpu
    all_meta["geom_pos"] = np.arange(len(all_meta))
    meta, geoms = nearest_per_parcel(all_meta, all_geoms, measure)
    found = meta["j"].to_numpy() >= 0
    # mains not known to be public sewers in service: they order nobody, but a parcel
    # within the distance of one (and of no eligible main) is left to a person
    unknown = UnknownMains.of(town)
    near_unknown = nearest_unknown(unknown, all_geoms, all_meta["row"].to_numpy(), n, fpu,
                                   threads)
    clock.lap("nearest")
    if on_measured is not None:
        on_measured()
    # ---- building sewers: stubs and shared ones; then connected (parcels.connected, or a
    #      lateral that reaches a building serves the parcel)
    sewers = _building_sewers(town)
    is_connected, connected_by = connected(town, P, sewers.counts)
    pids = text_values(P["parcel_id"]).astype(str).to_numpy()
    for k in np.flatnonzero(is_connected & np.isin(pids, list(sewers.shared_parcels))):
        connected_by[k] = f"{connected_by[k]} {sewers.shared_parcels[pids[k]]}"
    clock.lap("connected")
    # ---- abutting test, for the parcels not connected
    ab = abutting(town, pgeom, geoms, mgeom, mains.rank,
                  np.flatnonzero(~is_connected & found), threads=threads,
                  assume=assume_abutting)
    clock.lap("abutting")
    if measure == "building" and con.applies_to == "new_buildings" and len(all_meta) > n:
        meta, geoms, abut_d = newest_building(meta, all_meta, all_geoms, ab.main, mgeom, fpu,
                                              limit_ft, con.unknown_age)
        ab = replace(ab, distance_ft=abut_d)
        clock.lap("newest building")
    j = meta["j"].to_numpy()
    dist_ft = meta["distance_ft"].to_numpy()
    found = j >= 0
    # ---- evidence: the two nearest points
    lines = np.full(n, None, dtype=object)
    coords = np.full((n, 4), np.nan)
    if found.any():  # shortest lines are two-point LineStrings: (from, to)
        lines[found] = threaded_pairs(shapely.shortest_line, geoms[found], mgeom[j[found]],
                                      threads)
        coords[found] = shapely.get_coordinates(lines[found]).reshape(-1, 4)
    clock.lap("evidence")
    # ---- within the distance (with the approximate-measure bounds)
    approx = meta["approximate"].to_numpy(dtype=bool)
    within_lo = found & within(dist_ft, limit_ft)   # lower bound within
    upper_ft = dist_ft.copy()
    if approx.any():
        b = shapely.bounds(pgeom[approx])
        diag = np.hypot(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) * fpu
        upper_ft[approx] = dist_ft[approx] + diag
    within_hi = found & within(upper_ft, limit_ft)  # surely within
    uncertain = within_lo & ~within_hi              # approximate, straddles the limit
    within_col = pd.array(within_lo, dtype="boolean")
    within_col[uncertain] = pd.NA
    within_col[~found] = pd.NA
    # ---- age of the building (Berlin: newly constructed buildings)
    built = pd.to_datetime(meta["built_date"]).to_numpy()
    avail = availability(P, mains.frame, j, ab.main)
    is_new, age_known = building_age(built, avail, con.new_construction_from)
    land_use = text_values(P["land_use"]).to_numpy(dtype=object)
    use = meta["use"].to_numpy(dtype=object) if "use" in meta.columns else \
        np.full(n, None, dtype=object)
    nf = notice_facts(town, P, pgeom, use, land_use)
    if not nf.district_given:
        _once(town, "district_assumed", "info", district_message(town), "district")

    facts = ParcelFacts(
        connected=is_connected, connected_by=np.asarray(connected_by, dtype=object),
        measured=found, eligible_mains=len(mains.ids), main_ids=mains.ids, main=j,
        distance_ft=dist_ft, approximate=approx, upper_ft=upper_ft, within=within_lo,
        uncertain=uncertain, abutting_tested=ab.tested, assume_abutting=assume_abutting,
        abuts=ab.abuts_mask, abutting_main=ab.main, abutting_distance_ft=ab.distance_ft,
        no_building=meta["no_building"].to_numpy(dtype=bool),
        land_use=land_use,
        is_new=is_new, age_known=age_known, sewer_available=avail, septic=septic(P),
        buildings_given=town.layer("buildings") is not None,
        district_given=nf.district_given, in_district=nf.in_district,
        notice_date=nf.notice_date, hazard=nf.hazard, highway=nf.highway,
        residential=nf.residential, use_known=nf.use_known, use=use,
        accessory_only=accessory_only(town, P, tuple(con.accessory_uses or ()), brows),
        unknown_ids=unknown.ids, unknown_values=unknown.values,
        unknown_main=near_unknown.main, unknown_distance_ft=near_unknown.distance_ft,
        unknown_within=(near_unknown.main >= 0) & within(near_unknown.distance_ft, limit_ft),
    )
    dec = decide(facts, Ordinance.of(con))

    out = pd.DataFrame({
        "parcel_id": text_values(P["parcel_id"]).to_numpy(),
        "address": _text_or_null(P, "address"),
        "owner_name": _text_or_null(P, "owner_name"),
        "building_id": meta["building_id"].to_numpy(dtype=object),
        "main_id": mains.id_at(np.where(found, j, -1)),
        "distance_ft": dist_ft,
        "within_distance": within_col,
        "abuts_sewered_street": ab.abuts,
        "abutting_method": pd.Series(ab.method, dtype=object),
        # (object dtype: no copy of a million reasons into Arrow strings)
        "status": pd.Series(dec.status, dtype=object),
        "deadline_days": dec.deadline_days,
        "septic_deadline": dec.septic_deadline,
        "measure": measure,
        "section": pd.Series(dec.section, dtype=object),
        "reason": pd.Series(dec.reason, dtype=object),
        "approximate": approx,
        "distance_limit_ft": limit_ft,
        "abutting_main_id": mains.id_at(ab.main),
        "abutting_distance_ft": ab.distance_ft,
        "nearest_x": coords[:, 2],
        "nearest_y": coords[:, 3],
        "from_x": coords[:, 0],
        "from_y": coords[:, 1],
        "built_date": pd.to_datetime(meta["built_date"]).astype("datetime64[ms]").to_numpy(),
        "sewer_available_date": avail,
        "notice_date": nf.notice_date,
        "deadline_date": dec.deadline_date,
        "health_hazard": nf.hazard,
        "highway_program": nf.highway,
        "notice_ground": pd.Series(dec.ground, dtype=object).where(
            pd.Series(dec.ground, dtype=object) != "", None),
        "in_district": pd.array(nf.in_district if nf.district_given
                                else np.full(n, None, dtype=object), dtype="boolean"),
        "profile": prof.id,
    })
    out = out[OBLIGATION_COLUMNS]
    ob = gpd.GeoDataFrame(out, geometry=gpd.GeoSeries(pgeom, crs=town.crs), crs=town.crs)
    ev = gpd.GeoDataFrame(
        out.loc[found, EVIDENCE_COLUMNS].reset_index(drop=True),
        geometry=gpd.GeoSeries(lines[found], crs=town.crs), crs=town.crs,
    )
    clock.lap("age+decide+tables")
    log.debug("obligations timings: %s", clock)
    counts = ob["status"].value_counts().to_dict()
    log.info("obligations: %s", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return ob, ev


def _text_or_null(parcels: pd.DataFrame, column: str) -> np.ndarray:
    """A parcels text column as an object array (None where empty or not mapped)."""
    if column not in parcels.columns:
        return np.full(len(parcels), None, dtype=object)
    return text_values(parcels[column]).to_numpy(dtype=object)


def _once(town: Town, kind: str, severity: str, message: str, layer: str | None,
          feature_id: str | None = None, geometry: Any = None) -> None:
    """Add a finding to the town's report unless the same one is there already (the
    obligations may be computed more than once for a town)."""
    town.report.add_once(kind, severity, message, layer=layer, feature_id=feature_id,
                         geometry=geometry)


def _building_sewers(town: Town) -> BuildingSewers:
    """Test the laterals against the footprints and report stubs and shared sewers."""
    sewers = building_sewers(town)
    if sewers.stubs:
        shown = ", ".join(sewers.stubs[:50]) + (" ..." if len(sewers.stubs) > 50 else "")
        _once(town, "stub_lateral", "warning",
              f"{len(sewers.stubs)} lateral(s) end more than {sewers.reach_ft:g} ft from every "
              f"building footprint (stubs, e.g. to the property line): they connect no "
              f"building; the parcels' connected/septic data decides: {shown}",
              "laterals", ",".join(sewers.stubs[:50]))
    con = town.profile.connection
    for sh in sewers.shared:
        severity = "info" if sh.allowed or con.separate_building_sewer_section is None \
            else "warning"
        _once(town, "shared_building_sewer", severity,
              sentence(town, sh),
              "laterals", ",".join([sh.lateral_id, *sh.building_ids]), sh.geometry)
    return sewers
