"""What changed since the previous run into the same output, and what is overdue.

:func:`previous_run` reads the previous run's ``obligations`` (parcel, status,
deadlines, distance) and its id and time from the output a run is about to
replace: the folder's ``gisnet-results.gpkg`` and ``gisnet-manifest.json``, or
the PostGIS schema's ``obligations`` table and last ``gisnet_runs`` row.
:func:`changes_layer` compares it with this run's ``obligations``: one row per
parcel that is new, gone, or whose status, deadline or distance changed.
:func:`overdue_layer` lists the parcels whose deadline has passed and that are
not connected.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..io.postgis import DEFAULT_SCHEMA, RUNS_TABLE, connect, detail, is_database, parse_database
from .entries import live, register_state

log = logging.getLogger(__name__)

#: The previous run's obligations columns :func:`changes_layer` compares.
COMPARED = ("parcel_id", "status", "deadline_date", "septic_deadline", "distance_ft")
#: Columns of the ``changes`` layer (docs/results.md).
CHANGES_COLUMNS = ("parcel_id", "change", "status_before", "status_after", "deadline_before",
                   "deadline_after", "distance_before_ft", "distance_after_ft", "reason",
                   "run_before", "run_before_at", "run_after", "run_after_at")
#: Columns of the ``overdue`` layer (docs/results.md).
OVERDUE_COLUMNS = ("parcel_id", "address", "owner_name", "mailing_address", "status",
                   "notice_date", "deadline", "overdue_days", "as_of", "letter_id",
                   "section", "reason")
#: Distances closer than this (ft) are the same (the files keep 0.1 ft).
SAME_DISTANCE_FT = 0.05


@dataclass
class PreviousRun:
    """The run a new run replaces: its id, when it finished (ISO 8601 UTC) and its
    ``obligations`` (:data:`COMPARED` columns; None when it wrote none)."""

    run_id: str | None
    finished_at: str | None
    obligations: pd.DataFrame | None


def _iso(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    text = str(v)
    return text.replace("+00:00", "Z")


def _gpkg_previous(out: Path) -> PreviousRun | None:
    import pyogrio

    from ..output import RESULTS_FILE
    from ..output.publish import read_manifest

    gpkg = out / RESULTS_FILE
    if not gpkg.is_file():
        return None
    man = read_manifest(out) or {}
    try:
        layers = {name for name, _t in pyogrio.list_layers(gpkg)}
        ob = None
        if "obligations" in layers:
            info = pyogrio.read_info(gpkg, layer="obligations")
            cols = [c for c in COMPARED if c in list(info["fields"])]
            ob = pyogrio.read_dataframe(gpkg, layer="obligations", columns=cols,
                                        read_geometry=False)
    except Exception as exc:  # a damaged previous GeoPackage: no comparison, said once
        log.warning("%s: the previous results cannot be read (%s): no changes layer "
                    "against them", gpkg, exc)
        return None
    return PreviousRun(man.get("run_id"), _iso(man.get("created_utc")), ob)


def pg_previous(cur: Any, schema: str) -> PreviousRun | None:
    """The previous run of a PostGIS schema, read with cursor ``cur``."""
    from psycopg import sql

    cur.execute("SELECT to_regclass(%s)", (f'"{schema}"."{RUNS_TABLE}"',))
    if cur.fetchone()[0] is None:
        return None
    cur.execute(sql.SQL("SELECT run_id, finished_at FROM {} ORDER BY finished_at DESC "
                        "LIMIT 1").format(sql.Identifier(schema, RUNS_TABLE)))
    got = cur.fetchone()
    if got is None:
        return None
    cur.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                "AND table_name = 'obligations'", (schema,))
    present = {r[0] for r in cur.fetchall()}
    ob = None
    if "parcel_id" in present:
        cols = [c for c in COMPARED if c in present]
        cur.execute(sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in cols),
            sql.Identifier(schema, "obligations")))
        ob = pd.DataFrame(cur.fetchall(), columns=cols)
    return PreviousRun(str(got[0]), _iso(got[1]), ob)


def previous_run(out: str | os.PathLike[str]) -> PreviousRun | None:
    """The previous run into output ``out`` (a folder or a PostGIS URL), or None."""
    if not is_database(out):
        return _gpkg_previous(Path(out))
    db = parse_database(out)
    schema = db.schema or DEFAULT_SCHEMA
    with connect(db, what="output database", error=ConfigError, read_only=True) as conn:
        try:
            with conn.cursor() as cur:
                return pg_previous(cur, schema)
        except Exception as exc:
            raise ConfigError(f"cannot read the previous run: {detail(exc)}",
                              path=db.shown) from None


def _deadline(df: pd.DataFrame) -> pd.Series:
    """Each row's deadline: ``deadline_date``, else ``septic_deadline`` (dates, NaT)."""
    out = pd.Series(pd.NaT, index=df.index, dtype="datetime64[ms]")
    for c in ("septic_deadline", "deadline_date"):
        if c in df.columns:
            v = pd.to_datetime(df[c], errors="coerce").astype("datetime64[ms]")
            out = v.where(v.notna(), out)
    return out.dt.normalize()


def _empty(crs: Any) -> gpd.GeoDataFrame:
    cols: dict[str, Any] = {}
    for c in CHANGES_COLUMNS:
        if c.endswith("_ft"):
            cols[c] = pd.Series(dtype=float)
        elif c.startswith("deadline_"):
            cols[c] = pd.Series(dtype="datetime64[ms]")
        else:
            cols[c] = pd.Series(dtype=object)
    return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries([], crs=crs), crs=crs)


def changes_layer(previous: PreviousRun | None, obligations: pd.DataFrame, *, run_id: str,
                  run_at: str, register: pd.DataFrame | None = None) -> gpd.GeoDataFrame:
    """The ``changes`` layer: this run's obligations against the previous run's.

    Parameters
    ----------
    previous
        :func:`previous_run` (None, or one without obligations: no rows).
    obligations
        This run's ``obligations`` layer.
    run_id, run_at
        This run's id and time (ISO 8601 UTC).
    register
        The register read for this run: entries entered since the previous run that
        concern a changed parcel are named in its ``reason``.

    Returns
    -------
    GeoDataFrame
        Columns :data:`CHANGES_COLUMNS` and the parcel's geometry (null for a parcel
        gone), in parcel-id order.
    """
    crs = getattr(obligations, "crs", None)
    if previous is None or previous.obligations is None or "parcel_id" not in \
            previous.obligations.columns:
        return _empty(crs)
    # only the columns compared (a county's obligations are a million rows), the ids
    # matched and sorted by pandas, not one Python object a parcel
    wanted = ["parcel_id", "status", "distance_ft", "reason", "septic_deadline",
              "deadline_date"]

    def keyed(df: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame({c: df[c] for c in wanted if c in df.columns})
        out["parcel_id"] = out["parcel_id"].astype(str)
        out["_here"] = True
        return out.drop_duplicates("parcel_id").set_index("parcel_id")

    before = keyed(previous.obligations)
    after = keyed(obligations)
    ids_index = before.index.union(after.index).sort_values()
    b = before.reindex(ids_index)
    a = after.reindex(ids_index)
    sb, sa = b.get("status"), a.get("status")
    db, da = _deadline(b), _deadline(a)
    xb = pd.to_numeric(b.get("distance_ft"), errors="coerce").round(1)
    xa = pd.to_numeric(a.get("distance_ft"), errors="coerce").round(1)
    new = b["_here"].isna().to_numpy()
    gone = a["_here"].isna().to_numpy()
    st = (sb.fillna("") != sa.fillna("")).to_numpy() & ~new & ~gone
    dl = ~((db == da) | (db.isna() & da.isna())).to_numpy() & ~new & ~gone
    ds = (((xb - xa).abs() > SAME_DISTANCE_FT) | (xb.isna() != xa.isna())).to_numpy() \
        & ~new & ~gone
    keep = new | gone | st | dl | ds
    since = _recent(register, previous.finished_at)
    rows = []
    for k in np.flatnonzero(keep):
        pid = ids_index[k]
        what = ("new" if new[k] else "removed" if gone[k] else
                ";".join(n for n, f in (("status", st[k]), ("deadline", dl[k]),
                                        ("distance", ds[k])) if f))
        reason = _reason(what, sb.iloc[k], sa.iloc[k], a.get("reason", pd.Series()).get(pid),
                         since.get(pid))
        rows.append({
            "parcel_id": pid, "change": what,
            "status_before": None if gone[k] and pd.isna(sb.iloc[k]) else sb.iloc[k],
            "status_after": sa.iloc[k],
            "deadline_before": db.iloc[k], "deadline_after": da.iloc[k],
            "distance_before_ft": xb.iloc[k], "distance_after_ft": xa.iloc[k],
            "reason": reason,
            "run_before": previous.run_id, "run_before_at": previous.finished_at,
            "run_after": run_id, "run_after_at": run_at,
        })
    if not rows:
        return _empty(crs)
    df = pd.DataFrame(rows)
    geoms = np.full(len(df), None, dtype=object)  # the parcel's shape now (none: gone)
    if isinstance(obligations, gpd.GeoDataFrame):
        first = ~obligations["parcel_id"].astype(str).duplicated().to_numpy()
        shapes = np.asarray(obligations.geometry.array, dtype=object)[first]
        at = pd.Index(obligations["parcel_id"].astype(str)[first]).get_indexer(df["parcel_id"])
        geoms[at >= 0] = shapes[at[at >= 0]]
    df["geometry"] = geoms
    for c in ("status_before", "status_after"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    for c in ("deadline_before", "deadline_after"):
        df[c] = pd.to_datetime(df[c]).astype("datetime64[ms]")
    for c in ("distance_before_ft", "distance_after_ft"):
        df[c] = df[c].astype(float)
    return gpd.GeoDataFrame(df[list(CHANGES_COLUMNS)],
                            geometry=gpd.GeoSeries(df["geometry"].tolist(), crs=crs), crs=crs)


def _recent(register: pd.DataFrame | None, since: str | None) -> dict[str, list[str]]:
    """Parcel id -> the register entries entered after ``since``, as short phrases."""
    if register is None or not len(register):
        return {}
    out: dict[str, list[str]] = {}
    for r in live(register).to_dict("records"):
        if since is not None and str(r.get("entered_at") or "") < since:
            continue
        when = r.get("event_date")
        words = str(r["event"]).replace("_", " ")
        ground = r.get("notice_ground")
        if isinstance(ground, str) and ground.strip():
            words += f" ({ground.replace('_', ' ')})"
        if when is not None and not (isinstance(when, float) and when != when):
            words += f" {when}"
        out.setdefault(str(r["parcel_id"]), []).append(f"entry {r['entry_id']}: {words}")
    return out


def _reason(what: str, before: Any, after: Any, why: Any, entries: list[str] | None) -> str:
    def s(v: Any) -> str:
        return "none" if v is None or (isinstance(v, float) and v != v) else str(v)

    if what == "new":
        head = f"new parcel: {s(after)}"
    elif what == "removed":
        head = f"parcel no longer in the parcels layer (was {s(before)})"
    elif "status" in what.split(";"):
        head = f"{s(before)} -> {s(after)}"
    else:
        head = f"{what} changed"
    parts = [head]
    if entries:
        parts.append("register " + "; ".join(entries))
    if isinstance(why, str) and why and what != "removed":
        parts.append(why)
    return ". ".join(parts)


def overdue_layer(obligations: pd.DataFrame, as_of: dt.date,
                  register: pd.DataFrame | None = None,
                  parcels: pd.DataFrame | None = None) -> gpd.GeoDataFrame:
    """The ``overdue`` layer: parcels whose deadline has passed by ``as_of``, not connected.

    The deadline is ``deadline_date`` (notice + the profile's days), else
    ``septic_deadline``; a parcel is overdue when it is before ``as_of`` and the
    status is not ``connected`` (a connection recorded in the register makes the
    parcel connected: :func:`gisnet.register.apply_register`). ``letter_id`` is the
    latest letter the register names for the parcel; ``mailing_address`` the owner's
    mailing address from ``parcels`` (the town's parcels layer), where it maps one.
    """
    crs = getattr(obligations, "crs", None)
    due = _deadline(obligations)
    limit = pd.Timestamp(as_of)
    pick = (due.notna() & (due < limit) & (obligations["status"] != "connected")).to_numpy()
    rows = obligations[pick]
    state = register_state(register) if register is not None and len(register) else {}
    ids = rows["parcel_id"].astype(str)
    days = (limit - due[pick]).dt.days.astype("Int64")
    df = pd.DataFrame({
        "parcel_id": ids.to_numpy(),
        "address": _col(rows, "address"), "owner_name": _col(rows, "owner_name"),
        "mailing_address": _mailing(ids, parcels),
        "status": rows["status"].to_numpy(),
        "notice_date": pd.to_datetime(rows["notice_date"]).astype("datetime64[ms]").to_numpy(),
        "deadline": due[pick].to_numpy(),
        "overdue_days": days.to_numpy(),
        "as_of": np.full(len(rows), np.datetime64(as_of, "ms")),
        "letter_id": [state[p].letter_id if p in state else None for p in ids],
        "section": rows["section"].to_numpy(), "reason": rows["reason"].to_numpy(),
    })
    df["overdue_days"] = df["overdue_days"].astype("Int64")
    df = df.sort_values(["overdue_days", "parcel_id"], ascending=[False, True],
                        kind="stable")
    geom = (np.asarray(rows.geometry.array, dtype=object)[df.index.to_numpy()]
            if isinstance(rows, gpd.GeoDataFrame) else [None] * len(df))
    df = df.reset_index(drop=True)
    return gpd.GeoDataFrame(df[list(OVERDUE_COLUMNS)],
                            geometry=gpd.GeoSeries(list(geom), crs=crs), crs=crs)


def _col(df: pd.DataFrame, name: str) -> Any:
    return df[name].to_numpy(dtype=object) if name in df.columns else [None] * len(df)


def _mailing(ids: pd.Series, parcels: pd.DataFrame | None) -> list[Any]:
    """The parcels' ``mailing_address`` for ``ids`` (None where unknown)."""
    if parcels is None or "mailing_address" not in parcels.columns or not len(ids):
        return [None] * len(ids)
    # the last row of a parcel id given twice, as a dict built from the rows keeps it
    m = pd.Series(parcels["mailing_address"].to_numpy(dtype=object),
                  index=parcels["parcel_id"].astype(str).to_numpy(dtype=object))
    m = m[~m.index.duplicated(keep="last")]
    got = pd.Series(ids.to_numpy(dtype=object)).map(m).to_numpy(dtype=object)
    return [None if pd.isna(v) else v for v in got]
