"""What a batch remembers between runs: each town's input fingerprint.

A town is skipped by the next ``gisnet batch`` when nothing it was made from
changed. Its fingerprint is:

* the gisnet version;
* the town's overrides (``profile``, ``crs`` ...) and the output options
  (maps, self-contained pages, table formats);
* the size and modification time (ns) of every input file: the town file, each
  layer's source with its sidecars (a shapefile's ``.dbf``/``.shx``/``.prj``...,
  every file of a FileGDB folder), the plant-flows table and a profile file;
  plus the sha256 of the town file (small, and the file people edit).

The record of a finished town is ``DIR/.gisnet-batch/<town>.json`` (written
atomically by the task that ran it, so towns running at once never share a
file): the fingerprint, the run id of the manifest ``gisnet run`` published in
``DIR/<town>/gisnet-manifest.json``, and the town's summary row. A town is
skipped only when its record matches, it finished without error, and the
published manifest is still the one its run wrote.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..output import MANIFEST_FILE, atomic_write_text
from ..output.publish import sha256_file
from ..townfile import is_virtual_source, read_town_file
from .region import TownEntry

#: Folder of the per-town records, in the batch output folder.
STATE_DIR = ".gisnet-batch"


def _stat(p: Path) -> list[int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return [int(st.st_size), int(st.st_mtime_ns)]


def _with_sidecars(p: Path) -> list[Path]:
    """A source file with its sidecars, or every file of a folder source."""
    if p.is_dir():
        return sorted(x for x in p.rglob("*") if x.is_file())
    out = [p]
    if p.parent.is_dir():
        stem = p.stem.lower()
        out += sorted(x for x in p.parent.iterdir()
                      if x != p and x.is_file() and (x.stem.lower() == stem
                                                     or x.name.lower().startswith(p.name.lower())))
    return out


def input_paths(entry: TownEntry) -> list[Path | str]:
    """Every input of a town as its town file names them (sources, sidecars,
    plant flows, profile file); a GDAL virtual source or connection string is
    kept as its text. Raises :class:`~gisnet.errors.ConfigError` for a bad town file."""
    tf = read_town_file(entry.town_file)
    paths: list[Path | str] = [entry.town_file]
    for spec in tf.layers.values():
        if is_virtual_source(spec.path):
            paths.append(str(spec.path))
        else:
            paths += _with_sidecars(Path(spec.path))
    if tf.plant_flows is not None:
        paths.append(Path(tf.plant_flows))
    for prof in (tf.profile, entry.overrides.get("profile")):
        if prof and Path(prof).is_file():
            paths.append(Path(prof).resolve())
    return paths


def fingerprint(entry: TownEntry, options: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprint of a town's inputs (see the module docstring)."""
    from .. import __version__

    files: dict[str, Any] = {}
    for p in input_paths(entry):
        files[str(p)] = "virtual source" if isinstance(p, str) else _stat(p)
    return {
        "gisnet_version": __version__,
        "overrides": {k: entry.overrides[k] for k in sorted(entry.overrides)},
        "options": {k: options[k] for k in sorted(options)},
        "town_file_sha256": sha256_file(entry.town_file) if entry.town_file.is_file() else None,
        "files": files,
    }


def record_path(out_root: Path, name: str) -> Path:
    """Where the record of town ``name`` is kept."""
    return Path(out_root) / STATE_DIR / f"{name}.json"


def read_record(out_root: Path, name: str) -> dict[str, Any] | None:
    """The record of a town, or None (none, or unreadable: then the town runs again)."""
    p = record_path(out_root, name)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(out_root: Path, name: str, fp: Mapping[str, Any], run_id: str | None,
                 row: Mapping[str, Any]) -> Path:
    """Keep the record of a town that finished (atomically)."""
    p = record_path(out_root, name)
    os.makedirs(p.parent, exist_ok=True)
    text = json.dumps({"fingerprint": fp, "run_id": run_id, "row": row}, indent=1,
                      sort_keys=True, default=str)
    return atomic_write_text(p, text + "\n", "batch record")


def published_run_id(town_out: Path) -> str | None:
    """The run id of the manifest in a town's output folder, or None."""
    try:
        man = json.loads((Path(town_out) / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return man.get("run_id") if isinstance(man, dict) else None


def unchanged(out_root: Path, name: str, fp: Mapping[str, Any]) -> dict[str, Any] | None:
    """The recorded row of a town that need not run again, else None."""
    rec = read_record(out_root, name)
    if rec is None or rec.get("fingerprint") != json.loads(json.dumps(fp, default=str)):
        return None
    row = rec.get("row")
    if not isinstance(row, dict) or row.get("error"):
        return None
    run_id = rec.get("run_id")
    if run_id is None or published_run_id(Path(out_root) / name) != run_id:
        return None
    return row
