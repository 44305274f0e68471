"""One town of a batch, as one task: read, analyse, write, return one summary row.

:func:`run_town` runs where the scheduler puts it. It reads the town's layers
there, writes the town's whole output set into ``DIR/<town>/`` exactly as
``gisnet run --out DIR/<town>`` does (:func:`gisnet.pipeline.run`), keeps the
town's record (:mod:`gisnet.batch.state`) and returns only the small summary
row (:func:`summary_row`): no layer ever travels back to the client.

A town that fails (a :class:`~gisnet.errors.GisnetError` for bad data, or any
other exception) returns its row with ``status`` ``failed`` and the error in
one line; the task itself never raises, so the other towns go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, GisnetError
from ..obligations import STATUSES
from .region import TownEntry

log = logging.getLogger(__name__)

#: ``status`` of a row: the town ran, was skipped as unchanged, or failed.
DONE, UNCHANGED, FAILED = "done", "unchanged", "failed"
#: Obligation statuses counted in the summary (``obligations_<status>`` columns).
OBLIGATION_STATUSES = tuple(STATUSES)
#: Steps whose seconds are reported (``time_<step>_s``), ``total`` last.
TIMED = ("load", "graph", "obligations", "control", "capacity", "write", "maps", "total")


@dataclass(frozen=True)
class Options:
    """How every town of a batch is run (the same for all).

    Attributes
    ----------
    maps
        Write the web maps (``--no-maps``: False).
    self_contained
        Pages with their scripts inside.
    tables
        Extra table formats (as ``gisnet run --tables``).
    force
        Run towns even when unchanged.
    threads
        Threads each town's parallel steps may use (:func:`gisnet.threads.thread_limit`);
        None: :func:`gisnet.threads.default_threads`. :func:`~gisnet.batch.run_region`
        sets it to the cores of a machine divided by the task slots on it, so that
        towns running side by side do not crowd each other out. Results never
        depend on it.
    """

    maps: bool = True
    self_contained: bool = False
    tables: tuple[str, ...] = ()
    force: bool = False
    threads: int | None = None

    def recorded(self) -> dict[str, Any]:
        """The options that change a town's outputs (part of its fingerprint)."""
        return {"maps": self.maps, "self_contained": self.self_contained,
                "tables": list(self.tables)}


def empty_row(entry: TownEntry) -> dict[str, Any]:
    """A row with every column of the summary, nothing known yet."""
    row: dict[str, Any] = {"town": entry.name, "name": None, "status": None, "error": None,
                           "profile": None, "crs": None, "parcels": None, "mains": None}
    row.update({f"obligations_{s}": None for s in OBLIGATION_STATUSES})
    row.update({"connection_points": None, "control_manholes": None,
                "unresolved_points": None, "pipes": None, "pipes_over_threshold": None,
                "pipes_surcharged": None, "plants": None, "plant_ratio": None,
                "plants_over_threshold": None, "quality_errors": None,
                "quality_warnings": None})
    row.update({f"time_{s}_s": None for s in TIMED})
    row.update({"out_dir": None, "run_id": None, "worker": None, "geometry": None})
    return row


#: The columns of a summary row, in order.
ROW_COLUMNS: tuple[str, ...] = tuple(empty_row(TownEntry("", Path("."))))


def summary_row(entry: TownEntry, res: Any, out: Path) -> dict[str, Any]:
    """The region-summary row of a finished town (plain values; ``geometry`` is
    the town's extent, a polygon in EPSG:4326).

    Parameters
    ----------
    entry
        The town.
    res
        Its :class:`gisnet.pipeline.Results`.
    out
        Its output folder.
    """
    s = res.summary()
    row = empty_row(entry)
    row.update(name=s["town"], profile=s["profile"], crs=s["crs"], out_dir=str(out),
               parcels=int(s["layers"].get("parcels", 0)),
               mains=int(s["layers"].get("mains", 0)))
    ob = s.get("obligations", {})
    for st in OBLIGATION_STATUSES:
        row[f"obligations_{st}"] = int(ob.get(st, 0))
    unknown = set(ob) - set(OBLIGATION_STATUSES)
    if unknown:  # a status added to gisnet later is not dropped silently
        log.warning("%s: obligation status(es) %s not in the region summary", entry.name,
                    sorted(unknown))
    cm = s.get("control_manholes", {})
    row.update(connection_points=cm.get("connection_points", 0),
               control_manholes=cm.get("distinct_manholes", 0),
               unresolved_points=cm.get("unresolved", 0))
    p = s.get("pipes", {})
    row.update(pipes=p.get("pipes", 0), pipes_over_threshold=p.get("over_threshold", 0),
               pipes_surcharged=p.get("surcharged", 0))
    plants = s.get("plants", [])
    ratios = [pl["ratio"] for pl in plants if pl.get("ratio") is not None]
    row.update(plants=len(plants), plant_ratio=max(ratios) if ratios else None,
               plants_over_threshold=sum(bool(pl.get("over_threshold")) for pl in plants))
    q = s.get("quality", {})
    row.update(quality_errors=int(q.get("error", 0)), quality_warnings=int(q.get("warning", 0)))
    for k, v in s.get("timings_s", {}).items():
        if f"time_{k}_s" in row:
            row[f"time_{k}_s"] = round(float(v), 3)
    row["geometry"] = town_extent(res.town)
    return row


def town_extent(town: Any) -> Any:
    """The box around a town's parcels, mains, manholes and plants, in EPSG:4326
    (None when empty)."""
    import geopandas as gpd
    import shapely

    boxes = []
    for role in ("parcels", "mains", "manholes", "plants"):
        g = town.layer(role)
        if g is not None and len(g):
            b = g.total_bounds
            if np.all(np.isfinite(b)):
                boxes.append(b)
    if not boxes:
        return None
    b = np.array(boxes)
    box = shapely.box(b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max())
    side = max(b[:, 2].max() - b[:, 0].min(), b[:, 3].max() - b[:, 1].min(), 1e-9)
    # densified, so the box still holds the town once reprojected (its sides curve)
    box = shapely.segmentize(box, side / 64)
    return gpd.GeoSeries([box], crs=town.crs).to_crs("EPSG:4326").iloc[0]


def _worker_name() -> str | None:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return None


def run_town(entry: TownEntry, out_root: str | Path, options: Options | None = None
             ) -> dict[str, Any]:
    """Run one town and return its summary row; never raises.

    Parameters
    ----------
    entry
        The town (folder and overrides).
    out_root
        The batch output folder; the town's outputs go to ``out_root/<name>``.
    options
        How to run it (:class:`Options`).

    Returns
    -------
    dict
        The row (:func:`summary_row`): ``status`` ``done``, ``unchanged``
        (skipped: its record matched) or ``failed`` (``error`` says why).
    """
    t0 = time.perf_counter()
    options = options or Options()
    root = Path(out_root)
    out = root / entry.name
    row = empty_row(entry)
    row["out_dir"] = str(out)
    row["worker"] = _worker_name()
    try:
        from ..io import load_town
        from ..pipeline import run as run_pipeline
        from ..threads import thread_limit
        from . import state

        if not entry.folder.is_dir():
            raise ConfigError("town folder not found", path=entry.folder)
        if not entry.town_file.is_file():
            raise ConfigError(f"no {entry.town_file.name} in the town folder", path=entry.folder)
        fp = state.fingerprint(entry, options.recorded())
        if not options.force:
            old = state.unchanged(root, entry.name, fp)
            if old is not None:
                return {**old, "status": UNCHANGED, "worker": row["worker"],
                        "geometry": _geometry_of(old.get("geometry"))}
        ov = entry.overrides
        with thread_limit(options.threads):
            t = time.perf_counter()
            town = load_town(entry.folder, profile=ov.get("profile"), crs=ov.get("crs"),
                             snap_tolerance_ft=ov.get("snap_tolerance_ft"),
                             engine=ov.get("engine", "pyogrio"))
            load_s = time.perf_counter() - t
            res = run_pipeline(town, out, maps=options.maps,
                               self_contained=options.self_contained, tables=options.tables)
        res.timings_s["load"] = load_s
        res.timings_s["total"] = time.perf_counter() - t0
        row = {**summary_row(entry, res, out), "worker": row["worker"]}
        row["status"] = DONE
        row["run_id"] = state.published_run_id(out)
        state.write_record(root, entry.name, fp, row["run_id"], _plain_row(row))
        return row
    except GisnetError as exc:
        row.update(status=FAILED, error=str(exc))
    except Exception as exc:  # any failure of one town must not stop the others
        log.exception("town %s failed", entry.name)
        row.update(status=FAILED, error=f"{type(exc).__name__}: {exc}".splitlines()[0])
    row["time_total_s"] = round(time.perf_counter() - t0, 3)
    return row


def _plain_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row for the JSON record (geometry as WKT)."""
    g = row.get("geometry")
    return {**row, "geometry": None if g is None else g.wkt}


def _geometry_of(wkt: Any) -> Any:
    import shapely

    return None if not wkt else shapely.from_wkt(wkt)
