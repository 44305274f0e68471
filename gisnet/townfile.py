"""The town file: ``gisnet.toml``, which says which file is which layer.

A town's layers folder holds one ``gisnet.toml``::

    name = "Fourth Ward"                    # optional, else the folder name
    profile = "poughkeepsie-fourth-ward"   # built-in name or a path to a profile TOML
    crs = "EPSG:2260"                      # working CRS; optional
    snap_tolerance_ft = 1.0                # optional
    outlet_nodes = ["OUT-1"]               # optional node ids that are outlets

    [units]                                # optional, for every layer
    slope = "percent"                      # "ft/ft" (default) or "percent"
    diameter = "mm"                        # "in" (default) or "mm"

    [plant_flows]                          # optional monthly plant flows
    path = "plant_flows.csv"               # CSV: plant_id, month (YYYY-MM), avg_flow_mgd
                                           # (+ optional ss_mg_l, bod_mg_l, grease_mg_l)

    [output]                               # optional: where 'gisnet run' writes
    path = "postgresql://gis@db/town?schema=gisnet"   # or a folder (default maps/)
    lock_timeout_s = 5                     # optional: PostGIS wait for others' locks

    [elevation]                            # optional ground elevation raster (DEM)
    raster = "dem.tif"                     # relative to this file (needs gisnet[raster])
    units = "m"                            # "ft" or "m"; required if the raster
                                           # does not state its vertical unit
    band = 1                               # optional (default 1)
    nodata = -9999                         # optional (default: the raster's own)
    min_drop_ft = 5.0                      # optional: least fall that decides a pipe
    crs = "EPSG:26918"                     # optional, for a raster without a CRS

    [layers.mains]
    path = "mains.shp"                     # relative to this file; or PG:..., /vsizip/...,
                                           # a URL, WFS:..., OAPIF:... (any OGR source)
    layer = "pipes"                        # optional, for multi-layer sources
    where = "Type = 'Sanitary Line'"       # optional OGR SQL attribute filter
    crs = "EPSG:4326"                      # optional, for sources without one
    [layers.mains.columns]                 # canonical name = source column
    main_id = "FACILITYID"
    [layers.mains.values.kind]             # optional value mapping: source = canonical
    "Sanitary Line" = "sanitary"
    [layers.mains.defaults]                # optional: value for nulls of a column
    owner = "public"
    [layers.mains.units]                   # optional, overrides [units] for this layer
    diameter = "mm"

``[layers.mains] inverts`` says how the invert columns are read:
``"upstream_downstream"`` (the pipe's upstream / downstream end, whichever way
the line is drawn) or ``"start_end"`` (the drawn line's first / last vertex).
Without it the column names decide: UPELEV/DOWNELEV, US_INV/DS_INV ... name the
upstream/downstream end, START_INV/END_INV, FROM_INV/TO_INV ... the drawn ends.

Every key is checked: an unknown key, an unknown layer role, a value of the
wrong type or a file that is not valid TOML raises
:class:`~gisnet.errors.ConfigError` naming the file and the key.

Canonical columns the town file does not map are found by
:func:`match_columns` from the alias lists of :mod:`gisnet.schema`.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pyproj import CRS
from pyproj.exceptions import CRSError as _PyprojCRSError

from . import schema
from .errors import ConfigError, SchemaError

log = logging.getLogger(__name__)

TOWN_FILE = "gisnet.toml"
#: ``--layers layers/sample``: that folder of the current folder if it exists (the
#: repository's ``layers/sample`` links to the package's sample), else the sample town.
DEFAULT_LAYERS = Path("layers") / "sample"
#: The bundled sample town's folder in the package (package data ``gisnet/sample``).
SAMPLE_DATA = "sample"

SLOPE_UNITS = ("ft/ft", "percent")
#: ``[notices]`` keys a town fills in for its letters -> what each is.
NOTICE_BLOCKS: dict[str, str] = {
    "signatory": "the name of the official who signs the letters",
    "title": "the signatory's title (e.g. Superintendent, Public Works Director)",
    "contact": "where the owner asks questions: office, address, telephone",
    "penalty": "the penalty paragraph, where the profile quotes none (penalty_quote)",
    "appeal": "the appeal or hearing paragraph, where the profile quotes none (appeal_quote)",
}
DIAMETER_UNITS = ("in", "mm")

_TOP_KEYS = {
    "name", "profile", "crs", "snap_tolerance_ft", "plant_tolerance_ft", "outlet_nodes",
    "units", "layers", "plant_flows", "manning_n_by_material", "notices", "output",
    "splits", "swmm", "assume_diameters", "elevation",
}
#: ``[elevation] units``: the raster's vertical unit, and feet in one of it.
ELEVATION_UNITS: dict[str, float] = {"ft": 1.0, "m": 1 / 0.3048}
_ELEVATION_KEYS = {"raster", "units", "band", "nodata", "min_drop_ft", "crs"}
#: ``assume_diameters`` values: how a pipe without a diameter gets one for its capacity
#: (:func:`gisnet.capacity.diameters.assume_diameters`).
ASSUME_DIAMETERS = ("largest_upstream",)
_LAYER_KEYS = {"path", "layer", "where", "crs", "columns", "values", "defaults", "units",
               "inverts"}
_UNIT_KEYS = {"slope": SLOPE_UNITS, "diameter": DIAMETER_UNITS}

#: Canonical value sets of the normalised columns, with their fallback
#: (:data:`gisnet.schema.VALUE_FALLBACK`: ``kind`` gets ``unknown`` too).
NORMALISED: dict[tuple[str, str], tuple[str, ...]] = {
    key: (*vals, schema.VALUE_FALLBACK[key[1]]) if key[1] in schema.VALUE_FALLBACK
    else tuple(vals)
    for key, vals in schema.VALUE_ALIASES.items()
}


@dataclass
class LayerSpec:
    """How to read one layer role.

    Attributes
    ----------
    role
        Layer role (see :data:`gisnet.schema.ROLES`).
    path
        Source file or folder (FileGDB), absolute; a GDAL virtual path or
        connection string (:func:`is_virtual_source`) stays the text written.
    layer
        Layer name inside a multi-layer source, or None for the first.
    where
        OGR SQL attribute filter, or None.
    crs
        CRS to assume when the source has none (any ``pyproj`` input), or None.
    columns
        Canonical column -> source column, as written in the town file.
    values
        Canonical column -> {source value: canonical value}.
    defaults
        Canonical column -> value given to features where it is null.
    slope_units, diameter_units
        Units of the source ``slope`` / ``diameter`` columns.
    inverts
        Mains only: how the invert columns are read, ``upstream_downstream``
        (the pipe's upstream / downstream end) or ``start_end`` (the drawn
        line's first / last vertex); None: as their names say
        (:data:`gisnet.schema.INVERT_COLUMNS`).
    """

    role: str
    path: Path | str
    layer: str | int | None = None
    where: str | None = None
    crs: str | None = None
    columns: dict[str, str] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    slope_units: str = "ft/ft"
    diameter_units: str = "in"
    inverts: str | None = None


@dataclass(frozen=True)
class ElevationSpec:
    """``[elevation]``: a ground elevation raster (DEM) the town already has.

    Attributes
    ----------
    raster
        The raster file, absolute (or a GDAL virtual path as written).
    units
        ``ft`` or ``m`` (:data:`ELEVATION_UNITS`) as the town file says it, or
        None: the raster must state its vertical unit itself.
    band
        Band read (1 = the first).
    nodata
        Cell value meaning "no elevation", or None for the raster's own.
    min_drop_ft
        How far (feet) the ground must fall along a pipe before it decides the
        pipe's direction, or None for :data:`gisnet.rules.DEFAULT_DEM_MIN_DROP_FT`.
    crs
        CRS to assume when the raster has none, or None.
    """

    raster: Path | str
    units: str | None = None
    band: int = 1
    nodata: float | None = None
    min_drop_ft: float | None = None
    crs: str | None = None


@dataclass
class TownFile:
    """A parsed ``gisnet.toml``.

    Attributes
    ----------
    path
        The town file (None for a town assembled from command-line paths).
    name
        Town name, or None (then the folder name is used).
    profile
        Profile name, or an absolute path when the town file names a file.
    crs
        Working CRS as written, or None.
    snap_tolerance_ft
        Snap tolerance in feet, or None for the default.
    plant_tolerance_ft
        How far (feet) a plant may lie from the nearest pipe node and still
        be joined to it, or None for :data:`gisnet.rules.DEFAULT_PLANT_TOLERANCE_FT`.
    outlet_nodes
        Node ids named as outlets.
    slope_units, diameter_units
        Town-wide source units (layers may override).
    manning_n_by_material
        Use as-built Manning n by material.
    assume_diameters
        ``largest_upstream``: a pipe without a diameter takes the largest diameter
        upstream of it for its capacity (flagged ``diameter_assumed``); None: its
        capacity stays unknown.
    plant_flows
        Monthly plant-flow CSV, absolute, or None.
    notice_template
        ``[notices] template``: the town's own letter template for
        ``gisnet notices`` (absolute), or None for the profile's shipped one.
    notice_blocks
        ``[notices]`` blocks a town fills in for its letters (:data:`NOTICE_BLOCKS`:
        ``signatory``, ``title``, ``contact``, and ``penalty`` / ``appeal`` where the
        profile quotes no such paragraph), by key.
    layers
        Role -> :class:`LayerSpec`, in the town file's order.
    output
        ``[output] path``: where ``gisnet run`` writes without ``--out``, a
        folder (absolute) or a database URL (``postgresql://...?schema=NAME``,
        kept as written); None for the default ``maps/``.
    output_lock_timeout_s
        ``[output] lock_timeout_s``: seconds a PostGIS write waits for another
        client's lock before it stops (None: the default, 5 s).
    splits
        ``[splits]``: node id -> {main id or edge key: share} of the flow
        leaving the node (docs/swmm.md, "Splits").
    swmm_model
        ``[swmm] model``: the SWMM model the town was imported from (absolute),
        which ``gisnet check-swmm`` compares with; None.
    elevation
        ``[elevation]``: a ground elevation raster (:class:`ElevationSpec`), or None.
    """

    path: Path | None
    name: str | None = None
    profile: str | None = None
    crs: str | None = None
    snap_tolerance_ft: float | None = None
    plant_tolerance_ft: float | None = None
    outlet_nodes: tuple[str, ...] = ()
    slope_units: str = "ft/ft"
    diameter_units: str = "in"
    manning_n_by_material: bool = False
    assume_diameters: str | None = None
    plant_flows: Path | None = None
    notice_template: Path | None = None
    notice_blocks: dict[str, str] = field(default_factory=dict)
    layers: dict[str, LayerSpec] = field(default_factory=dict)
    output: Path | str | None = None
    output_lock_timeout_s: float | None = None
    splits: dict[str, dict[str, float]] = field(default_factory=dict)
    swmm_model: Path | None = None
    elevation: ElevationSpec | None = None

    @property
    def folder(self) -> Path:
        """Folder relative paths are resolved against."""
        return self.path.parent if self.path is not None else Path.cwd()


#: How a layer path names something that is not a local file: a GDAL virtual
#: path (``/vsizip/...``, ``/vsicurl/...``), a URL (``https://``, a database's
#: ``postgresql://``) or a connection string (``PG:...``, ``WFS:...``, ``OAPIF:...``).
_VIRTUAL_PREFIXES = ("/vsi",)
_URL_SCHEMES = ("postgresql://", "postgres://", "http://", "https://", "ftp://")


def is_virtual_source(path: str | Path) -> bool:
    """True for a GDAL virtual path, a URL or a connection string (``PG:dbname=...``),
    which are read as they are written, never as a local file."""
    s = str(path)
    if s.startswith(_VIRTUAL_PREFIXES) or s.lower().startswith(_URL_SCHEMES):
        return True
    head, sep, _ = s.partition(":")
    return bool(sep) and len(head) >= 2 and head.isalpha() and head.isupper()


def file_problem(path: Path, *, folder_ok: bool = False) -> str | None:
    """Why ``path`` cannot be read as an input file, or None when it can.

    A regular file is fine (a folder too when ``folder_ok``); anything else
    gets one phrase: not found, a symbolic link loop, a folder, or a special
    file (FIFO, socket, device), which would block or never end if opened.
    """
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop (the link points back to itself)"
        if exc.errno == errno.ENOENT:
            return ("is a broken symbolic link (its target does not exist)"
                    if path.is_symlink() else "file not found")
        return f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        return None if folder_ok else "is a folder, not a file"
    what = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "a device" if
            stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a special file")
    return f"is {what}, not a regular file; refusing to read it"


def sample_resource() -> Traversable:
    """The bundled sample town as package data (``gisnet/sample``).

    Found through :mod:`importlib.resources`, so it is the installed package's
    copy wherever gisnet is run from (a wheel, an editable install, a checkout).

    Returns
    -------
    importlib.resources.abc.Traversable
        The folder; its files are read with ``read_bytes`` (``gisnet sample DIR``
        copies them out).

    Raises
    ------
    ConfigError
        The install has no sample town (its ``gisnet.toml`` is missing).
    """
    node = resources.files("gisnet").joinpath(SAMPLE_DATA)
    if not node.joinpath(TOWN_FILE).is_file():
        raise ConfigError(f"the bundled sample town is missing from this gisnet install (no "
                          f"{TOWN_FILE} in gisnet/{SAMPLE_DATA}); reinstall gisnet")
    return node


def default_layers_dir() -> Path:
    """The bundled sample town's folder (``--sample``), package data ``gisnet/sample``.

    Raises
    ------
    ConfigError
        The install has no sample town, or gisnet is installed zipped so that
        the sample is not a folder the layer readers can open (``gisnet sample
        DIR`` still copies it out).
    """
    node = sample_resource()
    if not isinstance(node, Path):
        raise ConfigError(f"the bundled sample town is inside a zipped gisnet install "
                          f"({node}), not a folder on disk: copy it out with 'gisnet sample "
                          f"DIR' and run 'gisnet run --layers DIR'")
    return node


def find_town_file(layers_dir: str | Path | None) -> Path:
    """The ``gisnet.toml`` of a layers folder (or the file itself if given).

    Parameters
    ----------
    layers_dir
        Folder holding ``gisnet.toml``, or the path of a town file;
        ``layers/sample`` is that folder where it exists under the current
        folder, else the bundled sample town (:func:`default_layers_dir`).

    Raises
    ------
    ConfigError
        If no folder is given, or it does not exist or has no ``gisnet.toml``.
    """
    if layers_dir is None:
        raise ConfigError(f"no town folder given: name the folder holding {TOWN_FILE} "
                          "(write one with 'gisnet init')")
    p = Path(layers_dir)
    if p == DEFAULT_LAYERS and not p.exists():  # the sample, wherever gisnet is run from
        p = default_layers_dir()
    problem = file_problem(p, folder_ok=True)
    if problem == "file not found":
        raise ConfigError("layers folder does not exist", path=p)
    if problem is not None:
        raise ConfigError(problem, path=p)
    if not p.is_dir():
        return p
    f = p / TOWN_FILE
    problem = file_problem(f)
    if problem == "file not found":
        raise ConfigError(f"no {TOWN_FILE} in this folder (it says which file is which "
                          f"layer; write one with 'gisnet init {p}')", path=p)
    if problem is not None:
        raise ConfigError(problem, path=f)
    return f


def read_town_file(path: str | Path | None) -> TownFile:
    """Read and check a town file.

    Parameters
    ----------
    path
        A ``gisnet.toml`` or the folder holding it (None: the default folder).

    Raises
    ------
    ConfigError
        No town file, invalid TOML, an unknown key or role, or a wrong type.
    """
    f = find_town_file(path)
    try:
        # utf-8-sig: a byte-order mark some editors write first is not part of the TOML
        data = tomllib.loads(f.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=f) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: {exc}", path=f) from None
    except RecursionError:
        raise ConfigError("not a usable town file: its tables or arrays are nested too deeply "
                          "to read", path=f) from None
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", path=f) from None
    return parse_town_file(data, f)


def parse_town_file(data: Mapping[str, Any], path: Path | None) -> TownFile:
    """Check a town file's content (already parsed from TOML).

    Parameters
    ----------
    data
        The TOML document as a dict.
    path
        The town file, for messages and resolving relative paths; None to
        resolve against the current folder.

    Raises
    ------
    ConfigError
        An unknown key or role, or a value of the wrong type.
    """
    tf = TownFile(path=None if path is None else Path(path).resolve())
    _Checker(tf.path).top(data, tf)
    return tf


class _Checker:
    """Type checks that name the file and the dotted key."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.folder = path.parent if path is not None else Path.cwd()

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"key {key!r}: {problem}", path=self.path)

    def unknown(self, keys: Iterable[str], allowed: Iterable[str], where: str) -> None:
        extra = sorted(set(keys) - set(allowed))
        if extra:
            prefix = f"{where}." if where else ""
            raise self.fail(prefix + extra[0],
                            f"unknown key; allowed here: {', '.join(sorted(allowed))}")

    def str_(self, v: Any, key: str) -> str:
        if not isinstance(v, str) or not v.strip():
            raise self.fail(key, f"must be a non-empty string, not {v!r}")
        return v

    def table(self, v: Any, key: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(key, f"must be a table, not {type(v).__name__}")
        return v

    def crs(self, v: Any, key: str) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            v = f"EPSG:{v}"
        v = self.str_(v, key)
        try:
            CRS.from_user_input(v)
        except _PyprojCRSError as exc:
            raise self.fail(key, f"not a CRS pyproj knows: {v!r} ({exc})") from None
        return v

    def file(self, v: Any, key: str) -> Path | str:
        if is_virtual_source(self.str_(v, key)):  # /vsizip/..., PG:... go to GDAL as written
            return v  # (a Path would fold /vsizip//tmp/... into a relative /vsizip/tmp/...)
        p = Path(self.str_(v, key)).expanduser()
        return Path(os.path.normpath(p if p.is_absolute() else (self.folder / p)))

    def units(self, v: Any, key: str, into: Any) -> None:
        t = self.table(v, key)
        self.unknown(t, _UNIT_KEYS, key)
        for k, allowed in _UNIT_KEYS.items():
            if k in t:
                if t[k] not in allowed:
                    raise self.fail(f"{key}.{k}", f"must be one of {allowed}, not {t[k]!r}")
                setattr(into, f"{k}_units", t[k])

    def top(self, data: Mapping[str, Any], tf: TownFile) -> None:
        self.unknown(data, _TOP_KEYS, "")
        if "name" in data:
            tf.name = self.str_(data["name"], "name")
        if "profile" in data:
            prof = self.str_(data["profile"], "profile")
            cand = Path(prof).expanduser()
            cand = cand if cand.is_absolute() else self.folder / cand
            looks_like_file = prof.endswith(".toml") or "/" in prof or "\\" in prof
            if looks_like_file and not cand.is_file():
                raise self.fail("profile", f"profile file {cand} does not exist")
            tf.profile = str(cand.resolve()) if looks_like_file else prof
        if "crs" in data:
            tf.crs = self.crs(data["crs"], "crs")
            if not CRS.from_user_input(tf.crs).is_projected:
                raise self.fail("crs", f"the working CRS must be projected (in feet or metres); "
                                       f"{tf.crs} is not (name it on the layer instead)")
        for key in ("snap_tolerance_ft", "plant_tolerance_ft"):
            if key in data:
                v = data[key]
                if (isinstance(v, bool) or not isinstance(v, int | float)
                        or not math.isfinite(v) or v < 0):
                    raise self.fail(key, f"must be a finite number >= 0 (feet), not {v!r}")
                setattr(tf, key, float(v))
        if "outlet_nodes" in data:
            v = data["outlet_nodes"]
            if not isinstance(v, list) or not all(isinstance(x, str | int) for x in v):
                raise self.fail("outlet_nodes", f"must be a list of node ids, not {v!r}")
            tf.outlet_nodes = tuple(str(x) for x in v)
        if "manning_n_by_material" in data:
            if not isinstance(data["manning_n_by_material"], bool):
                raise self.fail("manning_n_by_material", "must be true or false")
            tf.manning_n_by_material = data["manning_n_by_material"]
        if "assume_diameters" in data:
            v = data["assume_diameters"]
            if v not in ASSUME_DIAMETERS:
                raise self.fail("assume_diameters", f"must be one of {ASSUME_DIAMETERS}, "
                                                    f"not {v!r}")
            tf.assume_diameters = v
        if "units" in data:
            self.units(data["units"], "units", tf)
        if "plant_flows" in data:
            v = data["plant_flows"]
            if isinstance(v, str):
                v = {"path": v}
            t = self.table(v, "plant_flows")
            self.unknown(t, {"path"}, "plant_flows")
            if "path" not in t:
                raise self.fail("plant_flows.path", "missing")
            tf.plant_flows = Path(self.file(t["path"], "plant_flows.path"))
        if "notices" in data:
            t = self.table(data["notices"], "notices")
            self.unknown(t, {"template", *NOTICE_BLOCKS}, "notices")
            if "template" in t:
                tf.notice_template = Path(self.file(t["template"], "notices.template"))
            for k in NOTICE_BLOCKS:
                if k in t:
                    tf.notice_blocks[k] = self.str_(t[k], f"notices.{k}").strip()
        if "output" in data:
            t = self.table(data["output"], "output")
            self.unknown(t, {"path", "lock_timeout_s"}, "output")
            if "lock_timeout_s" in t:
                v = t["lock_timeout_s"]
                if isinstance(v, bool) or not isinstance(v, int | float) \
                        or not math.isfinite(v) or v <= 0:
                    raise self.fail("output.lock_timeout_s", "must be a number of seconds > 0")
                tf.output_lock_timeout_s = float(v)
            if "path" not in t and "lock_timeout_s" not in t:
                raise self.fail("output.path", "missing (a folder, or postgresql://... for "
                                               "a PostGIS database)")
            if "path" in t:
                tf.output = self.file(t["path"], "output.path")
        if "splits" in data:
            for node, t in self.table(data["splits"], "splits").items():
                t = self.table(t, f"splits.{node}")
                for link, v in t.items():
                    if (isinstance(v, bool) or not isinstance(v, int | float)
                            or not math.isfinite(v) or v < 0):
                        raise self.fail(f"splits.{node}.{link}", "must be a share >= 0 "
                                        f"(a fraction of the node's flow), not {v!r}")
                tf.splits[str(node)] = {str(k): float(v) for k, v in t.items()}
        if "swmm" in data:
            t = self.table(data["swmm"], "swmm")
            self.unknown(t, {"model"}, "swmm")
            if "model" in t:
                tf.swmm_model = Path(self.file(t["model"], "swmm.model"))
        if "elevation" in data:
            tf.elevation = self.elevation(self.table(data["elevation"], "elevation"))
        layers = self.table(data.get("layers", {}), "layers")
        for role, spec in layers.items():
            if role not in schema.ROLES:
                raise self.fail(f"layers.{role}",
                                f"unknown layer role; roles are: {', '.join(schema.ROLES)}")
            tf.layers[role] = self.layer(role, self.table(spec, f"layers.{role}"), tf)

    def elevation(self, t: dict[str, Any]) -> ElevationSpec:
        self.unknown(t, _ELEVATION_KEYS, "elevation")
        if "raster" not in t:
            raise self.fail("elevation.raster", "missing (the elevation raster file, e.g. "
                                                "\"dem.tif\")")
        raster = self.file(t["raster"], "elevation.raster")
        if isinstance(raster, Path) and (why := file_problem(raster)) is not None:
            raise self.fail("elevation.raster", f"{raster}: {why}")
        units = t.get("units")
        if units is not None and units not in ELEVATION_UNITS:
            raise self.fail("elevation.units", f"must be one of {tuple(ELEVATION_UNITS)} (the "
                                               f"raster's vertical unit), not {units!r}")
        band = t.get("band", 1)
        if isinstance(band, bool) or not isinstance(band, int) or band < 1:
            raise self.fail("elevation.band", f"must be a band number >= 1, not {band!r}")
        nums: dict[str, float | None] = {}
        for k in ("nodata", "min_drop_ft"):
            v = t.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                                  or not math.isfinite(v) or (k == "min_drop_ft" and v < 0)):
                want = "a finite number >= 0 (feet)" if k == "min_drop_ft" else "a number"
                raise self.fail(f"elevation.{k}", f"must be {want}, not {v!r}")
            nums[k] = None if v is None else float(v)
        crs = self.crs(t["crs"], "elevation.crs") if "crs" in t else None
        return ElevationSpec(raster=raster, units=units, band=band, nodata=nums["nodata"],
                             min_drop_ft=nums["min_drop_ft"], crs=crs)

    def layer(self, role: str, t: dict[str, Any], tf: TownFile) -> LayerSpec:
        key = f"layers.{role}"
        self.unknown(t, _LAYER_KEYS, key)
        if "path" not in t:
            raise self.fail(f"{key}.path", "missing (the file this layer is read from)")
        spec = LayerSpec(role=role, path=self.file(t["path"], f"{key}.path"),
                         slope_units=tf.slope_units, diameter_units=tf.diameter_units)
        if "layer" in t:
            v = t["layer"]
            if isinstance(v, bool) or not isinstance(v, str | int):
                raise self.fail(f"{key}.layer", f"must be a layer name or index, not {v!r}")
            spec.layer = v
        if "where" in t:
            spec.where = self.str_(t["where"], f"{key}.where")
        if "crs" in t:
            spec.crs = self.crs(t["crs"], f"{key}.crs")
        canon = set(schema.column_names(role))
        if "columns" in t:
            cols = self.table(t["columns"], f"{key}.columns")
            self.unknown(cols, canon, f"{key}.columns")
            spec.columns = {k: self.str_(v, f"{key}.columns.{k}") for k, v in cols.items()}
        if "values" in t:
            vals = self.table(t["values"], f"{key}.values")
            self.unknown(vals, canon, f"{key}.values")
            for col, mapping in vals.items():
                m = self.table(mapping, f"{key}.values.{col}")
                allowed = NORMALISED.get((role, col))
                for src, dst in m.items():
                    k2 = f"{key}.values.{col}.{src}"
                    if isinstance(dst, dict | list):
                        raise self.fail(k2, "must be a single value")
                    if allowed is not None and dst not in allowed:
                        raise self.fail(k2, f"must be one of {', '.join(allowed)}, not {dst!r}")
                spec.values[col] = dict(m)
        if "defaults" in t:
            d = self.table(t["defaults"], f"{key}.defaults")
            self.unknown(d, canon, f"{key}.defaults")
            for col, v in d.items():
                allowed = NORMALISED.get((role, col))
                if isinstance(v, dict | list):
                    raise self.fail(f"{key}.defaults.{col}", "must be a single value")
                if allowed is not None and v not in allowed:
                    raise self.fail(f"{key}.defaults.{col}",
                                    f"must be one of {', '.join(allowed)}, not {v!r}")
            spec.defaults = dict(d)
        if "units" in t:
            self.units(t["units"], f"{key}.units", spec)
        if "inverts" in t:
            if role != "mains":
                raise self.fail(f"{key}.inverts", "only the mains layer has inverts")
            v = t["inverts"]
            if v not in schema.INVERT_MEANINGS:
                raise self.fail(f"{key}.inverts",
                                f"must be one of {', '.join(schema.INVERT_MEANINGS)}, not {v!r}")
            spec.inverts = v
        return spec


def _truncations(name: str) -> set[str]:
    """Lower-case spellings a source column may use for ``name``: itself and
    its 10-character shapefile truncation."""
    low = name.lower()
    return {low, low[:10]}


def match_columns(
    role: str,
    source_columns: Iterable[str],
    explicit: Mapping[str, str] | None = None,
) -> dict[str, str | None]:
    """Map each canonical column of a role to a source column.

    Explicit mappings (from the town file) win. Every other canonical column
    takes the first source column that equals, case-insensitively, its own name
    or one of its aliases (:data:`gisnet.schema.COLUMNS`), or the 10-character
    shapefile truncation of either; failing that, one that equals it once
    spaces, underscores and hyphens are ignored (``Facility Name``). A source
    column is used at most once by this fallback.

    Parameters
    ----------
    role
        Layer role.
    source_columns
        Column names of the source (without the geometry column).
    explicit
        Canonical -> source column names, which must exist (case-insensitive).

    Returns
    -------
    dict
        Canonical column -> source column name, or None when none matched.

    Raises
    ------
    SchemaError
        An explicit mapping names a column the source does not have (the
        caller adds file and layer).

    Examples
    --------
    >>> match_columns("mains", ["FACILITYI", "Diameter", "UPSTREAMIN"])["up_invert_ft"]
    'UPSTREAMIN'
    """
    src = [c for c in source_columns if c.lower() != "geometry"]
    by_lower: dict[str, str] = {}
    for c in src:
        by_lower.setdefault(c.lower(), c)
    explicit = dict(explicit or {})
    out: dict[str, str | None] = {}
    used: set[str] = set()
    for canon, name in explicit.items():
        hit = name if name in src else by_lower.get(name.lower())
        if hit is None:
            raise SchemaError(
                f"column {name!r} mapped to {canon} does not exist; the source has: "
                f"{', '.join(src) or '(no columns)'}"
            )
        out[canon] = hit
        used.add(hit)
    for col in schema.columns(role):
        if col.name in out:
            continue
        hit = None
        for candidate in (col.name, *col.aliases):
            for spelling in sorted(_truncations(candidate), key=len, reverse=True):
                found = by_lower.get(spelling)
                if found is not None and found not in used:
                    hit = found
                    break
            if hit is not None:
                break
        out[col.name] = hit
        if hit is not None:
            used.add(hit)
    # last, spellings that differ only in spaces, underscores or hyphens
    # ("Facility Name" for FACILITYNAME, "Design Hydraulic Capacity In MGD")
    by_bare: dict[str, str] = {}
    for c in src:
        by_bare.setdefault(_bare(c), c)
    for col in schema.columns(role):
        if out[col.name] is not None:
            continue
        for candidate in (col.name, *col.aliases):
            found = by_bare.get(_bare(candidate))
            if found is not None and found not in used:
                out[col.name] = found
                used.add(found)
                break
    return {c.name: out[c.name] for c in schema.columns(role)}


def _bare(name: str) -> str:
    """A column name lower-cased without spaces, underscores, hyphens or dots."""
    return "".join(ch for ch in name.lower() if ch.isalnum())
