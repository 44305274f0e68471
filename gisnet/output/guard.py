"""The one output check of every command that writes: nothing gisnet writes can hurt a town.

Every writer (``gisnet run`` and its tables, ``map``, ``figure``, ``notices``,
``init``, ``import-swmm``, ``export-swmm``, ``batch``, the CSVs of ``samples``
and ``frontage``) calls :func:`guard_outputs` with every path it may write,
before it analyses or writes anything. The rules:

1. **No output is an input** of the town being read (:func:`input_files`: each
   layer's source with its sidecars, the town file, the plant-flows table, the
   letter template, the profile file) nor one of the ``inputs`` the command
   names (a SWMM model, a samples CSV): refused, ``--force`` or not.
2. **No output is an input layer of a town on disk**: the ``gisnet.toml`` in an
   output's folder (or a town folder the command names) is read (its text only,
   no layer) and the files it names are refused like rule 1, ``--force`` or
   not. When that town file cannot be read, no file that looks like a layer
   (:data:`LAYER_SUFFIXES`) in its folder is replaced.
3. **An existing town file** (``gisnet.toml``, or the file ``gisnet init --out``
   names) **or layer** (an output of kind ``layer``, or an existing file with a
   layer suffix that gisnet did not write: not the results GeoPackage, not in
   a ``tables`` folder, not listed in the folder's ``gisnet-manifest.json``) is
   replaced only with ``--force``.

A refusal is a :class:`~gisnet.errors.ConfigError` naming both paths (exit 2).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, GisnetError
from ..townfile import TOWN_FILE, is_virtual_source

#: The results GeoPackage's file name (also :data:`gisnet.output.writing.RESULTS_FILE`).
RESULTS_FILE = "gisnet-results.gpkg"
#: The QGIS project of the results, beside them (:mod:`gisnet.output.qgis_project`).
PROJECT_FILE = "gisnet.qgz"
#: The manifest of a published output folder (also :data:`gisnet.output.MANIFEST_FILE`).
MANIFEST_FILE = "gisnet-manifest.json"
#: Files that belong to a shapefile: writing any of them would change the layer.
SHAPEFILE_PARTS = (".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx",
                   ".shp.xml", ".aih", ".ain", ".atx", ".fbn", ".fbx", ".ixs", ".mxs")
#: Files beside any input that its format reads or writes (SQLite / GeoPackage
#: journals, GDAL's auxiliary metadata).
SIDECAR_SUFFIXES = ("-journal", "-wal", "-shm", ".aux.xml", ".ovr")
#: Suffixes of files that hold GIS layers (``gisnet init`` reads these).
LAYER_SUFFIXES = (*SHAPEFILE_PARTS, ".gpkg", ".geojson", ".json", ".fgb", ".sqlite", ".gml",
                  ".kml", ".gdb")
#: Kinds of output (:class:`Output`).
KINDS = ("file", "town_file", "layer")


@dataclass(frozen=True)
class Output:
    """A path a command writes, and what it is.

    Attributes
    ----------
    path
        The file (or folder) to write.
    kind
        ``file`` (an ordinary output), ``town_file`` (a ``gisnet.toml``) or
        ``layer`` (a GIS layer file, which replaces a town's data).
    """

    path: Path
    kind: str = "file"


def with_sidecars(paths: Iterable[Any]) -> set[Path]:
    """Each local path (resolved) with the files its format keeps beside it: a
    shapefile's parts in either case, journals, GDAL's ``.aux.xml``. Virtual
    sources (``PG:...``, ``/vsizip/...``, URLs) and None are skipped."""
    found: set[Path] = set()
    for p in paths:
        if p is None or str(p) == "" or is_virtual_source(p):
            continue
        p = Path(p).resolve()
        found.add(p)
        if p.suffix.lower() in SHAPEFILE_PARTS:
            base = p.with_suffix("")
            for ext in SHAPEFILE_PARTS:
                found.update({Path(f"{base}{ext}"), Path(f"{base}{ext.upper()}")})
        for sfx in SIDECAR_SUFFIXES:
            found.add(Path(f"{p}{sfx}"))
    return found


def input_files(town: Any, *extra: str | os.PathLike[str] | None) -> set[Path]:
    """Every file ``town`` was read from, resolved: each layer's source with its
    sidecars (a shapefile's ``.shx``/``.dbf``/``.prj``/``.cpg``/``.qix``... in
    either case, a GeoPackage's journals), the town file, the plant-flows table,
    the letter template and the profile file its town file names
    (``town.settings.extra``), and ``extra`` paths (a ``--profile`` file, a
    samples CSV). A folder source (FileGDB) stands for everything inside it."""
    x = town.settings.extra
    return with_sidecars([*town.sources.values(), x.get("town_file"),
                          x.get("plant_flows_file"), x.get("profile_file"),
                          x.get("notice_template"), *extra])


def town_file_inputs(town_file: str | os.PathLike[str]) -> set[Path]:
    """The files a town file on disk names (layers with sidecars, plant flows,
    letter template, a profile file), read from its text alone.

    Raises
    ------
    GisnetError
        The town file cannot be read or is not a valid town file.
    """
    from ..townfile import read_town_file

    tf = read_town_file(Path(town_file))
    prof = tf.profile if tf.profile and Path(tf.profile).is_absolute() else None
    return with_sidecars([*(s.path for s in tf.layers.values()), tf.plant_flows,
                          tf.notice_template, prof])


def input_clash(output: str | os.PathLike[str], inputs: set[Path]) -> Path | None:
    """The input that ``output`` would overwrite (the same file, a file inside an
    input folder, or an input folder itself), or None."""
    target = Path(output).resolve()
    if target in inputs:
        return target
    low = {str(i).lower(): i for i in inputs}  # a case-insensitive file system
    if str(target).lower() in low and os.path.exists(target) \
            and os.path.exists(low[str(target).lower()]) \
            and os.path.samefile(target, low[str(target).lower()]):
        return low[str(target).lower()]
    for parent in target.parents:
        if parent in inputs and parent.is_dir():
            return parent
    return None


#: Names of files gisnet writes (results, their QGIS project, manifests, the batch
#: region summary).
OWN_NAMES = (RESULTS_FILE, PROJECT_FILE, MANIFEST_FILE, "region-summary.gpkg")


def _written_by_gisnet(path: Path) -> bool:
    """True for a file gisnet writes under that name (:data:`OWN_NAMES`, a table in
    a ``tables`` folder, a file the folder's manifest lists)."""
    if path.name in OWN_NAMES or path.parent.name == "tables":
        return True
    try:
        with (path.parent / MANIFEST_FILE).open(encoding="utf-8") as fh:
            files = json.load(fh).get("files", {})
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(files, dict) and path.name in files


def _looks_like_layer(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s) for s in LAYER_SUFFIXES)


class _Towns:
    """Town files on disk next to the outputs, read once each."""

    def __init__(self, folders: Iterable[Path]) -> None:
        self.inputs: dict[Path, set[Path]] = {}
        self.broken: dict[Path, str] = {}
        for f in folders:
            self.add(f)

    def add(self, folder: Path) -> None:
        tf = (folder / TOWN_FILE).resolve()
        if tf in self.inputs or tf in self.broken or not tf.is_file():
            return
        try:
            self.inputs[tf] = town_file_inputs(tf)
        except GisnetError as exc:
            self.broken[tf] = str(exc)

    def clash(self, target: Path) -> tuple[Path, Path] | None:
        for tf, inputs in self.inputs.items():
            hit = input_clash(target, inputs)
            if hit is not None:
                return tf, hit
        return None


def guard_outputs(outputs: Iterable[str | os.PathLike[str] | Output], *, town: Any = None,
                  inputs: Iterable[str | os.PathLike[str] | None] = (), force: bool = False,
                  force_option: str | None = None, town_dirs: Iterable[Any] = (),
                  what: str = "output file") -> None:
    """Refuse, before anything is written, any output that would hurt a town.

    Parameters
    ----------
    outputs
        Every path the command may write (a path, or an :class:`Output` saying
        it is a town file or a layer).
    town
        The town being read (its inputs, :func:`input_files`), or None.
    inputs
        Further files the command reads (a SWMM model, a ``--profile`` file).
    force
        ``--force`` was given: an existing town file or layer may be replaced
        (never an input, never a town's input layer).
    force_option
        The option that allows it (``"--force"``), for the message; None when
        the command has none.
    town_dirs
        Further town folders whose ``gisnet.toml`` names files to keep (the
        folder of each output is always looked at).
    what
        What the outputs are, for the message (``"notice file"``).

    Raises
    ------
    ConfigError
        One line naming the output and what it would replace.
    """
    outs = [o if isinstance(o, Output) else Output(Path(o)) for o in outputs]
    known = input_files(town, *inputs) if town is not None else with_sidecars(inputs)
    towns = _Towns(Path(d) for d in town_dirs)
    for o in outs:
        if o.kind not in KINDS:
            raise ValueError(f"unknown output kind {o.kind!r}")
        hit = input_clash(o.path, known)
        if hit is not None:
            raise ConfigError(f"refusing to write the {what} {o.path} over the input {hit}; "
                              "name another output folder or path", path=o.path)
        target = Path(o.path).resolve()
        towns.add(target.parent)
        theirs = towns.clash(target)
        if theirs is not None:
            tf, hit = theirs
            raise ConfigError(f"refusing to write the {what} {o.path} over {hit}, an input of "
                              f"the town {tf}; gisnet never replaces a town's layers, even with "
                              "--force: name another output folder or path", path=o.path)
        exists = os.path.lexists(target) and not target.is_dir()
        is_town_file = target.name == TOWN_FILE or o.kind == "town_file"
        is_layer = o.kind == "layer" or (_looks_like_layer(target)
                                         and not _written_by_gisnet(target))
        broken = towns.broken.get((target.parent / TOWN_FILE).resolve())
        if exists and is_layer and broken is not None and target.name != TOWN_FILE:
            raise ConfigError(f"refusing to replace {o.path}: the town file beside it cannot "
                              f"be read ({broken}), so it may be one of its layers; name "
                              "another output folder or path", path=o.path)
        if exists and (is_town_file or is_layer) and not force:
            thing = "a town file" if is_town_file else "a layer file"
            how = (f"give {force_option} to replace it" if force_option
                   else "name another output folder or path")
            raise ConfigError(f"{o.path} exists already and is {thing}: gisnet does not "
                              f"replace it without being told; {how}", path=o.path)
