"""What a run's manifest records of the town, so its results can be served alone.

``gisnet serve --results`` answers from a finished run without loading the town:
the manifest's ``town_info`` (written by :func:`town_record`) holds what the
result layers do not: the working CRS, the feet per unit, each input layer's
feature count and source (as a client may see it, :func:`public_source`), the
mains' extent (the box a request point must fall in), the snap tolerance, the profile (its parsed
TOML) and the analyses the run could not compute, with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

#: Version of the ``town_info`` record; a record of another format is refused.
TOWN_INFO_FORMAT = 1


def public_source(source: str | None, town_dir: Path | None) -> str | None:
    """A layer's source as a client may see it: a URL or connection string as the
    loader left it (credentials already removed), a file relative to the town's
    folder, or by its name alone when outside it; never the server's absolute path."""
    if source is None:
        return None
    s = str(source)
    if "://" in s or (":" in s and not s.startswith("/") and s.split(":", 1)[0].isupper()):
        return s
    p = Path(s)
    if not p.is_absolute():
        return s
    if town_dir is not None:
        try:
            return p.resolve().relative_to(town_dir).as_posix()
        except ValueError:
            pass
    return p.name


def town_dir(town: Any) -> Path | None:
    """The folder of the town's ``gisnet.toml``, if it came from one."""
    tf = town.settings.extra.get("town_file") if town.settings else None
    return None if tf is None else Path(tf).resolve().parent


def without_paths(text: str, town: Any) -> str:
    """``text`` with the town's folder and the working folder, as absolute paths, cut
    out (``/srv/towns/x/mains.shp`` -> ``mains.shp``)."""
    roots = [Path.cwd()]
    folder = town_dir(town)
    if folder is not None:
        roots.insert(0, folder)
    for root in roots:
        for form in {str(root), str(root.resolve())}:
            if len(form) > 1:
                text = text.replace(form + "/", "").replace(form, ".")
    return text


def _jsonable(value: Any) -> Any:
    """A parsed TOML value as JSON (dates and times as ISO text)."""
    return json.loads(json.dumps(value, default=str))


def town_record(town: Any, unavailable: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The manifest's ``town_info``: what serving the run's results needs of the town.

    Parameters
    ----------
    town
        The town the run analysed.
    unavailable
        Analysis -> reason it could not be computed (``Results.unavailable``).
    """
    folder = town_dir(town)
    mains = town.layers.get("mains")
    bounds = None
    if mains is not None and len(mains):
        b = shapely.total_bounds(mains.geometry.values)
        bounds = [float(v) for v in b] if np.all(np.isfinite(b)) else None
    return {
        "format": TOWN_INFO_FORMAT,
        "crs": CRS.from_user_input(town.crs).to_wkt(),
        "ft_per_unit": float(town.ft_per_unit),
        # a list: the manifest's keys are sorted, the layers keep the town's order
        "layers": [{"role": role, "features": len(gdf),
                    "source": public_source(town.sources.get(role), folder)}
                   for role, gdf in town.layers.items()],
        "mains_bounds": bounds,
        "snap_tolerance_ft": float(town.settings.snap_tolerance_ft),
        "profile": _jsonable(town.profile.raw),
        "profile_path": None if town.profile.path is None else Path(town.profile.path).name,
        "unavailable": {k: without_paths(str(v), town)
                        for k, v in dict(unavailable or {}).items()},
    }
