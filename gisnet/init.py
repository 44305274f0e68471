"""``gisnet init``: look at every layer in a folder and write a commented ``gisnet.toml``.

:func:`inspect_folder` lists every layer of every source in a folder
(shapefiles, GeoPackage layers, GeoJSON, FileGDB: :func:`pyogrio.list_layers`)
with its geometry family, columns and feature count. :func:`propose` gives
each a role from its geometry, file name, columns and values, maps its
columns by the aliases of :mod:`gisnet.schema`, and for the coded columns it
maps (``kind``, ``owner``, ``status``, ``land_use``) lists the distinct source
values with the canonical value chosen for each. :func:`render_town_file`
writes it all as a town file in which every guess is marked ``# guess``.

A file that cannot be read (a FIFO, a broken link, a truncated or corrupt
shapefile, a GeoPackage that is not one, a layer whose columns cannot be
read) is skipped with its reason (:attr:`Proposal.skipped`), said on the
command line and as a comment in the town file; the rest is proposed as usual.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import schema
from .errors import ConfigError, LayerError
from .profile import builtin_profiles
from .rules import DEFAULT_PLANT_TOLERANCE_FT
from .townfile import NORMALISED, TOWN_FILE, file_problem, match_columns

#: File suffixes read as layers (a ``.gdb`` folder is a FileGDB).
SUFFIXES = (".shp", ".gpkg", ".geojson", ".json", ".fgb", ".sqlite", ".gml", ".kml")
#: Coded columns whose distinct values are listed (and mapped where the schema
#: has a canonical value set).
CODED = ("kind", "owner", "status", "land_use")
#: Distinct values listed per coded column before the rest are summarised.
MAX_VALUES = 40

# Words in a file or layer name that point to a role; the first family that
# matches wins. A name matching SKIP names a layer gisnet has no role for.
_NAME_HINTS: dict[str, tuple[tuple[str, str], ...]] = {
    "line": (("laterals", r"lateral|service.?line|house.?conn"),
             ("streets", r"street|road|centerline|centreline|row\b|highway"),
             ("mains", r"main|sewer|pipe|linear|gravity|sanitary|line|collection")),
    "point": (("plants", r"wwtf|wwtp|plant|treatment|potw|facilit"),
              ("users", r"user|industr|permit|discharger"),
              ("manholes", r"manhole|\bmh|node|structure|point|junction|fitting")),
    "polygon": (("parcels", r"parcel|tax|lot|propert|cadast|assess"),
                ("buildings", r"build|bldg|footprint|structure"),
                ("plants", r"wwtf|wwtp|plant|treatment")),
}
_SKIP = r"border|boundar|service.?area|limit|district|town.?line|extent|municipal"
#: A polygon layer named so is a sewer service area: proposed as the ``district`` layer.
_DISTRICT = r"service.?area|sewer.?(service|district|area)|sewershed"

# Keyword rules for coded values no alias names: (column, pattern, canonical),
# first match wins; per role.
_VALUE_RULES: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("mains", "kind"): (("combined|cso", "combined"), ("storm|drain|culvert", "storm"),
                        ("force|pressur|rising", "force"),
                        ("sanitary|sewer|wastewater|gravity|san\\b", "sanitary")),
    ("mains", "status"): (("abandon|removed|retired|remove", "abandoned"),
                          ("propos|plan|future|design", "proposed"),
                          ("inactive|out of service|not in service|disused", "inactive"),
                          ("exist|active|service|use|operat|current", "active")),
    ("mains", "owner"): (("priv|owner|homeowner", "private"),
                         ("public|city|town|village|municipal|district|county|state|"
                          "authority", "public")),
    ("manholes", "kind"): (("outfall|cso|discharge", "outfall"),
                           ("catch|\\bcb\\b|inlet", "catch_basin"),
                           ("clean", "cleanout"), ("pump|lift", "pump_station"),
                           ("plant|wwtf|wwtp", "plant"), ("manhole|\\bmh\\b", "manhole"),
                           ("junction|tee|wye", "junction")),
}
_VALUE_RULES[("manholes", "status")] = _VALUE_RULES[("mains", "status")]
_VALUE_RULES[("manholes", "owner")] = _VALUE_RULES[("mains", "owner")]

#: The profile written into a new town file (marked ``# guess``) when ``gisnet init``
#: is given none: the town must confirm it before the file is used.
PROPOSED_PROFILE = "poughkeepsie-fourth-ward"


@dataclass
class LayerFound:
    """One layer of one source in the folder, as inspected.

    Attributes
    ----------
    path
        The source (file, or ``.gdb`` folder).
    layer
        Layer name inside the source, or None when the source has one layer.
    geometry
        ``point``, ``line``, ``polygon`` or ``none``.
    features
        Feature count.
    columns
        Attribute column names.
    role
        The role proposed (None: not used).
    why
        Why this role, or why none.
    mapping
        Canonical column -> source column (aliases of :mod:`gisnet.schema`).
    values
        Coded canonical column -> list of ``(source value, count, canonical)``;
        canonical None where the column has no canonical value set.
    where
        OGR SQL filter proposed, or None.
    notes
        Further guesses to write as comments.
    """

    path: Path
    layer: str | None
    geometry: str
    features: int
    columns: list[str]
    role: str | None = None
    why: str = ""
    mapping: dict[str, str] = field(default_factory=dict)
    values: dict[str, list[tuple[Any, int, str | None]]] = field(default_factory=dict)
    where: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The file name, and the layer name inside it if any, for messages."""
        return self.path.name + (f" layer {self.layer!r}" if self.layer is not None else "")


@dataclass
class Proposal:
    """What ``gisnet init`` proposes for a folder: a role per layer and a profile;
    ``skipped`` lists ``(file, reason)`` for each file that could not be read."""

    folder: Path
    layers: list[LayerFound]
    profile: str
    profile_guessed: bool
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def chosen(self) -> dict[str, LayerFound]:
        """Role -> the layer proposed for it."""
        return {f.role: f for f in self.layers if f.role is not None}


def _family(geomtype: str | None) -> str:
    g = (geomtype or "").lower()
    if "point" in g:
        return "point"
    if "line" in g or "curve" in g:
        return "line"
    if "polygon" in g or "surface" in g:
        return "polygon"
    return "none" if not g or g == "none" else "unknown"


def sources(folder: Path) -> list[Path]:
    """The layer sources in a folder (not recursive), sorted by name: every entry
    with a layer suffix (a ``.gdb`` folder), readable or not."""
    out = []
    for p in sorted(folder.iterdir()):
        if p.suffix.lower() in SUFFIXES or (p.suffix.lower() == ".gdb" and p.is_dir()):
            out.append(p)
    return out


def _short(exc: BaseException, src: Path | None = None) -> str:
    """The first line of an error, for a skipped file's reason (GDAL's advice on
    drivers and the file's own path left out: the line names it already)."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    line = line.split("; It might help")[0]
    return line.replace(f"'{src}' ", "").replace(str(src), src.name) if src else line


def _inspect_source(src: Path) -> list[LayerFound]:
    """The layers of one source.

    Raises
    ------
    LayerError
        The source cannot be read (the reason, one line).
    """
    import pyogrio

    from .io.reading import check_shapefile

    problem = file_problem(src, folder_ok=src.suffix.lower() == ".gdb")
    if problem is not None:
        raise LayerError(problem, path=src)
    if src.suffix.lower() == ".shp":
        check_shapefile(src)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            listed = pyogrio.list_layers(src)
    except Exception as exc:  # an unreadable file is reported, never a traceback
        raise LayerError(f"cannot list the layers of this file ({_short(exc, src)})",
                         path=src) from None
    multi = len(listed) > 1 or src.suffix.lower() in (".gpkg", ".gdb", ".sqlite")
    found = []
    for name, geomtype in listed:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                info = pyogrio.read_info(src, layer=name)
                fam = _family(geomtype or info.get("geometry_type"))
                if fam == "unknown":
                    df = pyogrio.read_dataframe(src, layer=name, max_features=50)
                    fam = _family(str(df.geom_type.dropna().iloc[0])) if len(df) else "none"
        except Exception as exc:
            raise LayerError(f"cannot read layer {name!r} ({_short(exc, src)})",
                             path=src) from None
        found.append(LayerFound(path=src, layer=str(name) if multi else None, geometry=fam,
                                features=int(info.get("features", -1)),
                                columns=[str(c) for c in info["fields"]]))
    return found


def inspect_folder(folder: str | Path,
                   skipped: list[tuple[Path, str]] | None = None) -> list[LayerFound]:
    """Every layer of every source in ``folder``, with geometry family, columns, count.

    Parameters
    ----------
    folder
        The folder to look in.
    skipped
        Where to record ``(file, reason)`` for each source that cannot be read
        (skipped); None: the first such source is an error.

    Raises
    ------
    ConfigError
        The folder does not exist or holds no layer gisnet can read.
    LayerError
        A source cannot be read and ``skipped`` is None.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError("not a folder", path=folder)
    found: list[LayerFound] = []
    for src in sources(folder):
        try:
            found += _inspect_source(src)
        except LayerError as exc:
            if skipped is None:
                raise
            skipped.append((src, exc.message))
    if not found:
        also = (f"; skipped {len(skipped)} file(s) that cannot be read: "
                + "; ".join(f"{p.name}: {why}" for p, why in skipped)) if skipped else ""
        raise ConfigError(f"no layers here (looked for {', '.join(SUFFIXES)} files and "
                          f".gdb folders){also}", path=folder)
    return found


def _read_columns(f: LayerFound, cols: list[str]) -> pd.DataFrame:
    import pyogrio

    with warnings.catch_warnings():  # GDAL's notes (repeated FIDs) are no news here
        warnings.simplefilter("ignore", RuntimeWarning)
        return pyogrio.read_dataframe(f.path, layer=f.layer, columns=cols, read_geometry=False)


def _role_by_name(f: LayerFound) -> tuple[str | None, str]:
    """The role a layer's name and columns point to (None: none), and why."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", f"{f.path.stem} {f.layer or ''}").lower()
    if f.geometry == "polygon" and re.search(_DISTRICT, text):
        return "district", ("a sewer service area: proposed as the district the connection "
                            "rule binds (\"situated within the area\"); parcels outside it "
                            "are outside_district")
    if re.search(_SKIP, text):
        return None, "a boundary or service area: no gisnet role"
    cols = {c.lower() for c in f.columns}
    if f.geometry == "point" and cols & {"designhydrauliccapacityinmgd", "npdespermitnumber",
                                         "npdes", "design_mgd", "designflow"}:
        return "plants", "point layer with plant columns (design flow, NPDES permit)"
    if f.geometry == "polygon" and cols & {"print_key", "sbl", "parcel_id", "parcelid", "pin",
                                           "parid", "apn", "map_par_id"}:
        return "parcels", "polygon layer with a parcel id column"
    for role, pattern in _NAME_HINTS.get(f.geometry, ()):
        m = re.search(pattern, text)
        if m:
            return role, f"{f.geometry} layer whose name has {m.group(0)!r}"
    return None, f"{f.geometry} layer whose name and columns suggest no role"


def canonical_value(role: str, col: str, value: Any) -> str | None:
    """The canonical value a source value most likely means (None: no canonical set).

    Alias lists of :data:`gisnet.schema.VALUE_ALIASES` first, then keyword
    rules; ``unknown`` (for ``kind``) or None where nothing matches.
    """
    key = (role, col)
    if key not in schema.VALUE_ALIASES:
        return None
    text = str(value).strip().lower()
    for canon, aliases in schema.VALUE_ALIASES[key].items():
        if text == canon or text in aliases:
            return canon
    for pattern, canon in _VALUE_RULES.get(key, ()):
        if re.search(pattern, text):
            return canon
    return schema.VALUE_FALLBACK.get(col)


def _quote(v: str) -> str:
    return "'" + v.replace("'", "''") + "'"


def _guess_columns(f: LayerFound) -> None:
    role = f.role
    assert role is not None
    f.mapping = {c: s for c, s in match_columns(role, f.columns).items() if s is not None}
    idcol = schema.ID_COLUMN[role]
    wanted = [s for c, s in f.mapping.items() if c in CODED or c == idcol]
    df = _read_columns(f, sorted(set(wanted))) if wanted else pd.DataFrame()
    src_id = f.mapping.get(idcol)
    if src_id is not None and len(df):
        ids = df[src_id]
        if ids.isna().all() or (ids.nunique(dropna=True) <= 1 and len(df) > 1):
            held = ids.dropna().iloc[0] if ids.notna().any() else "nothing"
            f.notes.append(f"{src_id} holds {held} on every row: not an id; gisnet makes ids "
                           "from row numbers")
            del f.mapping[idcol]
    for col in CODED:
        src = f.mapping.get(col)
        if src is None or src not in df:
            continue
        counts = df[src].value_counts(dropna=True)
        f.values[col] = [(v, int(n), canonical_value(role, col, v)) for v, n in counts.items()
                         if str(v).strip() != ""]
    kinds = f.values.get("kind")
    if role == "mains" and kinds:
        not_sewer = [v for v, _, c in kinds if c == "storm"]
        if not_sewer and len(not_sewer) < len(kinds):
            f.where = (f"\"{f.mapping['kind']}\" NOT IN "
                       f"({', '.join(_quote(str(v)) for v in not_sewer)})")
            f.notes.append("storm lines are not sewers: left out by the where filter")
    if role == "plants":
        _plant_filter(f)


def _plant_filter(f: LayerFound) -> None:
    """A ``where`` keeping municipal plants where a column tells municipal from industrial."""
    text_cols = [c for c in f.columns if re.search(r"categor|type|class|program", c, re.I)]
    if not text_cols:
        return
    df = _read_columns(f, text_cols)
    for c in text_cols:
        vals = [str(v) for v in df[c].dropna().unique()]
        muni = [v for v in vals if re.search(r"municipal|public|potw", v, re.I)]
        other = [v for v in vals if re.search(r"industr|private", v, re.I)]
        if muni and other:
            f.where = f"\"{c}\" IN ({', '.join(_quote(v) for v in muni)})"
            f.notes.append(f"{c}: only the municipal plants ({', '.join(muni)}) receive the "
                           f"sewers; industrial dischargers ({', '.join(other)}) left out")
            return


def propose(folder: str | Path, profile: str | None = None) -> Proposal:
    """A role, column mapping and value maps for every layer of a folder.

    Each role takes at most one layer: the first named for it, else the one
    with the most features. Layers with no role stay listed, with why.
    """
    skipped: list[tuple[Path, str]] = []
    found = inspect_folder(folder, skipped)
    best: dict[str, LayerFound] = {}
    for f in found:
        role, why = _role_by_name(f)
        f.why = why
        if role is None or role not in schema.GEOMETRY:
            continue
        if f.geometry not in schema.GEOMETRY[role]:
            f.why = f"{why}, but a {role} layer cannot be {f.geometry}s"
            continue
        old = best.get(role)
        if old is None or f.features > old.features:
            if old is not None:
                old.role, old.why = None, f"{old.why}; another {role} layer has more features"
            f.role = role
            best[role] = f
        else:
            f.why = f"{why}; another {role} layer has more features"
    for role, f in list(best.items()):
        try:
            _guess_columns(f)
        except Exception as exc:  # its rows cannot be read: skipped, with the reason
            skipped.append((f.path, f"cannot read the {f.label} columns ({_short(exc)})"))
            found.remove(f)
            del best[role]
    guessed = profile is None
    prof = profile if profile is not None else PROPOSED_PROFILE
    return Proposal(Path(folder), found, prof, guessed, skipped)


def _toml_str(v: Any) -> str:
    s = str(v)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_town_file(p: Proposal, base: Path | None = None) -> str:
    """The proposal as a commented ``gisnet.toml``; every guess is marked ``# guess``.

    Layer paths are written relative to ``base`` (the town file's folder;
    default the layers folder).
    """
    base = (base or p.folder).resolve()
    out = [f"# gisnet town file written by 'gisnet init' for {p.folder.resolve().name}.",
           "# Every line marked '# guess' was inferred from the layers: check it.",
           f"name = {_toml_str(p.folder.resolve().name)}"]
    choices = ", ".join(builtin_profiles())
    if p.profile_guessed:
        out.append(f"profile = {_toml_str(p.profile)}  # guess: no --profile given; the "
                   f"jurisdiction's ordinance decides. Choices: {choices}, or a profile TOML")
    else:
        out.append(f"profile = {_toml_str(p.profile)}")
    chosen = p.chosen()
    if "plants" in chosen:
        out.append(f"plant_tolerance_ft = {DEFAULT_PLANT_TOLERANCE_FT:g}  # guess: a plant "
                   "point this close to a pipe end is joined to it")
    out.append("")
    for path, why in p.skipped:
        out.append(f"# skipped: {path.name}: {why}".replace("\n", " "))
    for f in p.layers:
        if f.role is None:
            out.append(f"# not used: {f.label} ({f.geometry}, {f.features} features): {f.why}")
    for role in schema.ROLES:
        if role not in chosen:
            continue
        f = chosen[role]
        out += ["", f"[layers.{role}]  # guess: {f.why}, {f.features} features",
                f"path = {_toml_str(os.path.relpath(f.path.resolve(), base))}"]
        if f.layer is not None:
            out.append(f"layer = {_toml_str(f.layer)}")
        if f.where:
            out.append(f"where = {_toml_str(f.where)}  # guess")
        out += [f"# {n}" for n in f.notes]
        if f.mapping:
            out.append(f"[layers.{role}.columns]")
            for canon, src in f.mapping.items():
                out.append(f"{canon} = {_toml_str(src)}  # guess (by name)")
        for col, vals in f.values.items():
            src = f.mapping[col]
            allowed = NORMALISED.get((role, col))
            if allowed is None:
                out.append(f"# {col} ({src}) values, kept as they are: " + ", ".join(
                    f"{v} ({n})" for v, n, _ in vals[:MAX_VALUES])
                    + (f" and {len(vals) - MAX_VALUES} more" if len(vals) > MAX_VALUES else ""))
                continue
            mapped = [(v, n, c) for v, n, c in vals if c is not None]
            unmapped = [(v, n) for v, n, c in vals if c is None]
            if not mapped and not unmapped:
                continue
            out.append(f"[layers.{role}.values.{col}]  # guess: distinct values of {src}")
            for v, n, c in mapped:
                out.append(f"{_toml_str(v)} = {_toml_str(c)}  # guess, {n} features")
            for v, n in unmapped:
                out.append(f"# {_toml_str(v)} = ?  # {n} features: {unmapped_note(col, allowed)}")
    return "\n".join(out) + "\n"


def unmapped_note(col: str, allowed: tuple[str, ...]) -> str:
    """What a town file says of a value ``gisnet init`` could not map: what it may be
    mapped to, and what an unmapped value means (for ``owner`` / ``status``: not known
    to be public / in service, :func:`gisnet.rules.is_public`)."""
    choices = ", ".join(allowed)
    if col in schema.VALUE_KEPT_WHEN_UNRECOGNISED:
        what = "public" if col == "owner" else "in service"
        return (f"not recognised: map it to one of {choices}; unmapped, a feature with it "
                f"is not known to be {what} and orders nobody to connect (review)")
    return f"not recognised: map it to one of {choices}; unmapped it is read as not given"


def summary_lines(p: Proposal) -> list[str]:
    """What ``gisnet init`` prints: each layer's role and each coded value's mapping."""
    lines = [f"  skipped {path.name}: {why}" for path, why in p.skipped]
    for f in p.layers:
        if f.role is None:
            lines.append(f"  {f.label}: not used ({f.why})")
            continue
        lines.append(f"  {f.label}: {f.role} ({f.why}, {f.features} features)")
        if f.where:
            lines.append(f"    where {f.where}")
        for n in f.notes:
            lines.append(f"    {n}")
        for col, vals in f.values.items():
            shown = ", ".join(f"{v!s} ({n}) -> {c}" if c else f"{v!s} ({n})"
                              for v, n, c in vals[:8])
            more = f" and {len(vals) - 8} more" if len(vals) > 8 else ""
            lines.append(f"    {col} <- {f.mapping[col]}: {shown}{more}")
            unmapped = [str(v) for v, _, c in vals if c is None]
            if unmapped and (f.role, col) in schema.VALUE_ALIASES:
                lines.append(f"    {col} values not recognised (map them in the town file): "
                             + ", ".join(repr(v) for v in unmapped))
    missing = [r for r in schema.REQUIRED_ROLES if r not in p.chosen()]
    if missing:
        lines.append(f"  no layer found for: {', '.join(missing)}")
    prof = f"{p.profile} (guess; choices: {', '.join(builtin_profiles())})" \
        if p.profile_guessed else p.profile
    lines.append(f"  profile: {prof}")
    return lines


def init_town(folder: str | Path, *, profile: str | None = None, force: bool = False,
              out: str | Path | None = None) -> tuple[Path, Proposal]:
    """Inspect ``folder`` and write its ``gisnet.toml``.

    Parameters
    ----------
    folder
        The folder holding the layers.
    profile
        Profile name or path to write (None: a guess, marked as such).
    force
        Replace an existing town file.
    out
        Where to write (default ``folder/gisnet.toml``); layer paths are then
        written relative to it, or absolute.

    Raises
    ------
    ConfigError
        The town file exists and ``force`` is not given, the target is one of
        the folder's layers (never replaced, :func:`gisnet.output.guard.guard_outputs`),
        or the folder holds no layer that can be read.
    """
    from .output.guard import Output, guard_outputs
    from .output.writing import atomic_write_text
    from .profile import load_profile

    if profile is not None:
        load_profile(profile)  # an unknown name fails here, not at the first run
    folder = Path(folder)
    target = Path(out) if out is not None else folder / TOWN_FILE
    layers = sources(folder) if folder.is_dir() else []
    guard_outputs([Output(target, "town_file")], inputs=layers, force=force,
                  force_option="--force", town_dirs=[folder], what="town file")
    p = propose(folder, profile)
    text = render_town_file(p, base=target.resolve().parent)
    atomic_write_text(target, text, "town file")
    return target, p
