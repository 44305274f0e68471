"""Reading a SWMM 5 input file (``.inp``) into tables in gisnet's units.

The sections come from swmmio (``swmmio.Model(path).inp``), the maintained
reader of SWMM input files. Two things swmmio cannot give are taken from the
file's own lines (:func:`scan_sections`):

- where each row is (section and line number), so that a bad model is one
  clear line naming the section and line;
- names as written: swmmio reads a link's inlet and outlet nodes as numbers
  when they look like numbers (node ``09`` becomes ``9.0``), so node names of
  links are taken from the file's tokens, row by row.

Units: a model in US units (``FLOW_UNITS`` CFS, GPM, MGD) has lengths in feet;
an SI model (CMS, LPS, MLD) in metres. Everything here is converted to feet,
inches (diameters) and gallons per day (flows). Coordinates stay as written
(map units of the CRS the caller names).
"""

from __future__ import annotations

import logging
import shlex
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..capacity.sections import GEOM_LENGTHS, SHAPES, UNSUPPORTED, full_area_radius
from ..errors import LayerError
from ..extras import needs_extra
from ..units import CFS_TO_GPD, FT_M, MGD_TO_GPD

__all__ = [
    "FLOW_UNITS_GPD",
    "LINK_SECTIONS",
    "NODE_SECTIONS",
    "SwmmModel",
    "read_model",
    "scan_sections",
]

log = logging.getLogger(__name__)

#: US gallons in one cubic metre.
GAL_PER_M3 = 264.17205236
#: gpd in one flow unit of each SWMM ``FLOW_UNITS``.
FLOW_UNITS_GPD = {
    "CFS": CFS_TO_GPD,
    "GPM": 1440.0,
    "MGD": MGD_TO_GPD,
    "CMS": GAL_PER_M3 * 86_400.0,
    "LPS": GAL_PER_M3 / 1000.0 * 86_400.0,
    "MLD": GAL_PER_M3 * 1000.0,
}
SI_UNITS = ("CMS", "LPS", "MLD")
#: Node sections and the structure kind gisnet gives each.
NODE_SECTIONS = {"JUNCTIONS": "junction", "OUTFALLS": "outfall", "STORAGE": "storage",
                 "DIVIDERS": "divider"}
#: Link sections other than conduits (non-gravity links in gisnet).
LINK_SECTIONS = {"PUMPS": "pump", "ORIFICES": "orifice", "WEIRS": "weir", "OUTLETS": "outlet"}
#: Fewest tokens a row of a section must have.
MIN_TOKENS = {"JUNCTIONS": 2, "OUTFALLS": 3, "STORAGE": 3, "DIVIDERS": 4, "CONDUITS": 7,
              "PUMPS": 3, "ORIFICES": 4, "WEIRS": 4, "OUTLETS": 4, "XSECTIONS": 3,
              "COORDINATES": 3, "VERTICES": 3, "POLYGONS": 3, "SUBCATCHMENTS": 4, "DWF": 3,
              "PATTERNS": 2}
#: Hours, days, months: how many factors each pattern type has.
PATTERN_LENGTHS = {"MONTHLY": 12, "DAILY": 7, "HOURLY": 24, "WEEKEND": 24}


@dataclass
class Row:
    """One data line of a section: 1-based line number and its tokens."""

    line: int
    tokens: list[str]


@dataclass
class SwmmModel:
    """A SWMM model's network in gisnet's units.

    Attributes
    ----------
    path
        The ``.inp`` file.
    flow_units
        ``FLOW_UNITS`` of the model (CFS, GPM, MGD, CMS, LPS, MLD).
    ft_per_length
        Feet in one length unit of the model (1 for US models, 3.28084 for SI).
    gpd_per_flow
        gpd in one flow unit of the model.
    link_offsets
        ``DEPTH`` (offsets above the node invert, SWMM's default) or ``ELEVATION``.
    nodes
        ``node_id, swmm_type`` (junction, outfall, storage, divider),
        ``invert_ft, max_depth_ft, rim_ft`` (invert + max depth; NaN where the
        model gives no positive depth), ``x, y``.
    conduits
        ``main_id, from_node, to_node, length_ft, roughness, up_offset_ft,
        down_offset_ft, up_invert_ft, down_invert_ft, shape, geom1_ft ...
        geom4_ft`` (SWMM's Geom1-4 in feet; side slopes as written),
        ``shape_curve`` (CUSTOM: the SHAPE curve's pairs as text),
        ``diameter_in`` (circular only, else NaN), ``barrels``, ``line``
        (of the row in [CONDUITS]).
    links
        Pumps, orifices, weirs and outlets: ``main_id, swmm_type, from_node,
        to_node, crest_ft`` (elevation of a weir's crest, an orifice's or
        outlet's bottom; NaN for pumps) and what the export writes back
        (:data:`LINK_COLUMNS`): ``regulator_type`` (the weir's, orifice's type,
        the outlet's rating), ``discharge_coeff`` (US units: CFS and feet),
        ``discharge_coeff2`` (a weir's end sections), ``outlet_expon``,
        ``flap_gate``, ``end_contractions``, ``can_surcharge``,
        ``road_width_ft``, ``road_surface``, ``close_time_h``,
        ``rating_curve`` (a tabular outlet's pairs, ft and cfs, as text),
        ``shape``, ``geom1_ft``... (the weir's or orifice's [XSECTIONS]).
    vertices
        Link name -> (k, 2) array of its [VERTICES].
    subcatchments
        ``parcel_id, outlet, area, coords`` (the [POLYGONS] ring, or None).
    dwf
        ``node_id, baseline, pattern_factor, avg_flow_gpd, patterns``: the
        average of each [DWF] flow (baseline x the mean of each of its
        patterns).
    title
        The [TITLE] text.
    notes
        What the reader assumed or could not use, one sentence each.
    """

    path: Path
    flow_units: str
    ft_per_length: float
    gpd_per_flow: float
    link_offsets: str
    nodes: pd.DataFrame
    conduits: pd.DataFrame
    links: pd.DataFrame
    vertices: dict[str, np.ndarray]
    subcatchments: pd.DataFrame
    dwf: pd.DataFrame
    title: str = ""
    notes: list[str] = field(default_factory=list)


def _fail(path: Path, section: str | None, line: int | None, problem: str) -> LayerError:
    where = f"{path.name}"
    if section:
        where += f" [{section}]"
    if line:
        where += f" line {line}"
    return LayerError(f"SWMM model {where}: {problem}")


def scan_sections(path: Path) -> dict[str, list[Row]]:
    """The file's data lines by section (upper-case name), comments and blank lines left out.

    Raises
    ------
    LayerError
        The file cannot be read or is not text.
    """
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        text = path.read_text(encoding="latin-1")
    except OSError as exc:
        raise LayerError(f"SWMM model {path}: cannot read ({exc.strerror or exc})") from None
    if "\x00" in text:
        raise _fail(path, None, None, "not a text file")
    out: dict[str, list[Row]] = {}
    current: list[Row] | None = None
    for i, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip() if current is not None and current is out.get("TITLE") \
            and not raw.strip().startswith("[") else raw.split(";", 1)[0].strip()
        if not s:
            continue
        if s.startswith("["):
            if not s.endswith("]"):
                raise _fail(path, None, i, f"section header {s!r} is not closed with ']'")
            current = out.setdefault(s[1:-1].strip().upper(), [])
            continue
        if current is None:
            raise _fail(path, None, i, "data before the first [SECTION] header")
        if current is out.get("TITLE"):
            current.append(Row(i, raw.split()))
            continue
        try:
            toks = shlex.split(s, posix=True)
        except ValueError:
            raise _fail(path, None, i, "unbalanced quotes") from None
        current.append(Row(i, toks))
    return out


def _num(path: Path, section: str, row: Row, k: int, what: str, default: float | None = None
         ) -> float:
    if k >= len(row.tokens):
        if default is not None:
            return default
        raise _fail(path, section, row.line, f"{what} missing (row ends after "
                    f"{len(row.tokens)} values)")
    tok = row.tokens[k]
    if tok == "*" and default is not None:
        return default
    try:
        v = float(tok)
    except ValueError:
        raise _fail(path, section, row.line, f"{what} {tok!r} is not a number") from None
    if not np.isfinite(v):
        raise _fail(path, section, row.line, f"{what} {tok!r} is not a finite number")
    return v


def _check_rows(path: Path, sections: dict[str, list[Row]]) -> None:
    """Row lengths (a truncated file), required sections, duplicate names."""
    for sec, rows in sections.items():
        need = MIN_TOKENS.get(sec)
        if need is None:
            continue
        for r in rows:
            if len(r.tokens) < need and not (sec == "PATTERNS" and len(r.tokens) >= 2):
                raise _fail(path, sec, r.line, f"row has {len(r.tokens)} value(s), at least "
                            f"{need} expected (truncated file?)")
    if not any(sections.get(s) for s in NODE_SECTIONS):
        raise _fail(path, "JUNCTIONS", None, "the model has no nodes (no [JUNCTIONS], "
                    "[OUTFALLS], [STORAGE] or [DIVIDERS] rows)")
    for req in ("CONDUITS", "XSECTIONS", "COORDINATES"):
        if not sections.get(req):
            raise _fail(path, req, None, f"section [{req}] is missing or empty: gisnet needs "
                        "the conduits, their cross-sections and the node coordinates")
    seen = _unique_names(path, sections, NODE_SECTIONS, "node")
    link_sections = ("CONDUITS", *LINK_SECTIONS)
    _unique_names(path, sections, link_sections, "link")
    _canonical_names(path, sections)
    for sec in link_sections:
        for r in sections.get(sec, []):
            name = r.tokens[0]
            for tok in r.tokens[1:3]:
                if tok not in seen:
                    raise _fail(path, sec, r.line, f"link {name!r} names node {tok!r}, "
                                "which no node section defines")
    coords = {r.tokens[0] for r in sections.get("COORDINATES", [])}
    for name, (sec, line) in seen.items():
        if name not in coords:
            raise _fail(path, "COORDINATES", None, f"node {name!r} ([{sec}] line {line}) has "
                        "no coordinates")
    xs = {r.tokens[0] for r in sections.get("XSECTIONS", [])}
    for r in sections.get("CONDUITS", []):
        if r.tokens[0] not in xs:
            raise _fail(path, "XSECTIONS", None, f"conduit {r.tokens[0]!r} ([CONDUITS] line "
                        f"{r.line}) has no cross-section")


def _unique_names(path: Path, sections: dict[str, list[Row]], names_of, what: str
                  ) -> dict[str, tuple[str, int]]:
    """Name -> (section, line) of the rows of ``names_of`` sections.

    SWMM reads names without regard to case (``Kurve4`` and ``kurve4`` are one
    name), so a name used twice, or two names that differ only in case, are an
    error naming both lines.
    """
    seen: dict[str, tuple[str, int]] = {}
    folded: dict[str, str] = {}
    for sec in names_of:
        for r in sections.get(sec, []):
            name = r.tokens[0]
            first = folded.get(name.upper())
            if first is not None:
                s0, l0 = seen[first]
                if first == name:
                    raise _fail(path, sec, r.line, f"{what} name {name!r} is used twice "
                                f"(first in [{s0}] line {l0})")
                raise _fail(path, sec, r.line, f"{what} names {first!r} ([{s0}] line {l0}) "
                            f"and {name!r} differ only in case: SWMM reads them as one name")
            seen[name] = (sec, r.line)
            folded[name.upper()] = name
    return seen


def _series_names(path: Path, rows: list[Row], what: str) -> dict[str, str]:
    """Upper-case name -> the name as first written, of a section whose objects run
    over several rows ([PATTERNS], [CURVES], [TIMESERIES]). Two spellings that
    differ only in case are an error naming both lines (SWMM reads them as one)."""
    out: dict[str, str] = {}
    line: dict[str, int] = {}
    for r in rows:
        name = r.tokens[0]
        first = out.setdefault(name.upper(), name)
        line.setdefault(name.upper(), r.line)
        if first != name:
            raise _fail(path, what, r.line, f"names {first!r} (line {line[name.upper()]}) "
                        f"and {name!r} differ only in case: SWMM reads them as one name")
    return out


#: Sections whose rows name a node, a link or a pattern (by token position):
#: rewritten to the name as its definition spells it.
NODE_REFS = {"CONDUITS": (1, 2), "PUMPS": (1, 2), "ORIFICES": (1, 2), "WEIRS": (1, 2),
             "OUTLETS": (1, 2), "COORDINATES": (0,), "DWF": (0,), "INFLOWS": (0,),
             "DIVIDERS": (2,)}
LINK_REFS = {"XSECTIONS": (0,), "VERTICES": (0,), "LOSSES": (0,)}


def _canonical_names(path: Path, sections: dict[str, list[Row]]) -> None:
    """Rewrite every reference to a node, link, pattern or curve to the spelling of
    its definition, as SWMM matches names without regard to case."""
    nodes = {n.upper(): n for sec in NODE_SECTIONS for n in
             (r.tokens[0] for r in sections.get(sec, []))}
    links = {n.upper(): n for sec in ("CONDUITS", *LINK_SECTIONS) for n in
             (r.tokens[0] for r in sections.get(sec, []))}
    pats = _series_names(path, sections.get("PATTERNS", []), "PATTERNS")
    curves = _series_names(path, sections.get("CURVES", []), "CURVES")
    _series_names(path, sections.get("TIMESERIES", []), "TIMESERIES")

    def fix(rows: list[Row], ks, names: dict[str, str]) -> None:
        for r in rows:
            for k in ks:
                if k < len(r.tokens):
                    r.tokens[k] = names.get(r.tokens[k].upper(), r.tokens[k])

    for sec, ks in NODE_REFS.items():
        fix(sections.get(sec, []), ks, nodes)
    for sec, ks in LINK_REFS.items():
        fix(sections.get(sec, []), ks, links)
    subs = {n.upper(): n for n in (r.tokens[0] for r in sections.get("SUBCATCHMENTS", []))}
    fix(sections.get("POLYGONS", []), (0,), subs)
    fix(sections.get("SUBCATCHMENTS", []), (2,), {**subs, **nodes})
    for r in sections.get("DWF", []):
        r.tokens[3:] = [pats.get(t.upper(), t) for t in r.tokens[3:]]
    fix(sections.get("PUMPS", []), (3,), curves)
    for r in sections.get("XSECTIONS", []):
        if len(r.tokens) > 3 and r.tokens[1].upper() == "CUSTOM":
            r.tokens[3] = curves.get(r.tokens[3].upper(), r.tokens[3])


def _options(path: Path, sections: dict[str, list[Row]]) -> dict[str, tuple[str, int]]:
    return {r.tokens[0].upper(): (r.tokens[1].upper() if len(r.tokens) > 1 else "", r.line)
            for r in sections.get("OPTIONS", [])}


def _swmmio_inp(path: Path):
    """swmmio's reader of the file (sections as DataFrames)."""
    with needs_extra("swmm", "reading a SWMM model (gisnet import-swmm)"):
        import swmmio

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return swmmio.Model(str(path)).inp
        except Exception as exc:  # swmmio raises plain exceptions on bad files
            raise _fail(path, None, None, f"swmmio cannot read the file ({exc})") from None


def _section(inp, name: str) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            df = getattr(inp, name)
        except Exception:  # a section swmmio does not know or cannot parse
            return pd.DataFrame()
    return df if df is not None else pd.DataFrame()


def _col(path: Path, section: str, rows: list[Row], df: pd.DataFrame, col: str) -> np.ndarray:
    """A numeric column of swmmio's frame of a section, row by row with the file's rows
    (``*`` and missing values -> NaN); a value that is not a number names its line."""
    if col not in df:
        return np.full(len(rows), np.nan)
    raw = df[col].to_numpy(dtype=object)
    out = pd.to_numeric(pd.Series(raw).replace("*", np.nan), errors="coerce").to_numpy(float)
    bad = np.flatnonzero(pd.notna(raw) & (raw != "*") & ~np.isfinite(out))
    if bad.size:
        raise _fail(path, section, rows[bad[0]].line, f"{col} {raw[bad[0]]!r} is not a number")
    return out


def _pattern_means(path: Path, rows: list[Row]) -> dict[str, float]:
    """Mean factor of each [PATTERNS] pattern (continuation rows carry on the factors)."""
    kinds: dict[str, str] = {}
    factors: dict[str, list[float]] = {}
    for r in rows:
        name = r.tokens[0]
        rest = r.tokens[1:]
        if name not in kinds:
            if not rest or rest[0].upper() not in PATTERN_LENGTHS:
                raise _fail(path, "PATTERNS", r.line, f"pattern {name!r} has no type "
                            f"({', '.join(PATTERN_LENGTHS)})")
            kinds[name] = rest[0].upper()
            rest = rest[1:]
        elif rest and rest[0].upper() in PATTERN_LENGTHS:
            rest = rest[1:]
        for k, _ in enumerate(rest):
            factors.setdefault(name, []).append(_num(path, "PATTERNS", r, k + len(r.tokens)
                                                     - len(rest), f"factor {k + 1}"))
    out = {}
    for name, kind in kinds.items():
        f = factors.get(name, [])
        if len(f) != PATTERN_LENGTHS[kind]:
            raise _fail(path, "PATTERNS", None, f"{kind} pattern {name!r} has {len(f)} "
                        f"factor(s), {PATTERN_LENGTHS[kind]} expected")
        out[name] = float(np.mean(f))
    return out


#: Token of the crest height (weirs) or offset (orifices, outlets) in its section's rows.
CREST_TOKEN = {"weir": 4, "orifice": 4, "outlet": 3}
#: Columns of :attr:`SwmmModel.links` (and of the imported mains of those links).
LINK_COLUMNS = ["main_id", "swmm_type", "from_node", "to_node", "crest_ft", "regulator_type",
                "discharge_coeff", "discharge_coeff2", "outlet_expon", "flap_gate",
                "end_contractions", "can_surcharge", "road_width_ft", "road_surface",
                "close_time_h", "rating_curve", "shape", "geom1_ft", "geom2_ft", "geom3_ft",
                "geom4_ft", "line"]
LINK_NUMBERS = ("crest_ft", "discharge_coeff", "discharge_coeff2", "outlet_expon",
                "end_contractions", "road_width_ft", "close_time_h", "geom1_ft", "geom2_ft",
                "geom3_ft", "geom4_ft")
#: Weir types whose discharge coefficient multiplies a head to the power 5/3 (side flow),
#: the others 3/2 or 5/2 (coefficients in CMS and metres in an SI model: SWMM 5 manual).
SIDEFLOW = "SIDEFLOW"


def _yes(tok: str | None) -> str | None:
    """SWMM's YES / NO as written (None when the row leaves it out)."""
    if tok is None or tok == "*":
        return None
    return "YES" if tok.upper() == "YES" else "NO"


def _curve_points(path: Path, rows: list[Row]) -> dict[str, np.ndarray]:
    """Every [CURVES] curve: upper-case name -> (k, 2) points as written."""
    pts: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    for r in rows:
        name, rest = r.tokens[0], r.tokens[1:]
        if name.upper() not in names:
            names[name.upper()] = name
            if rest and not _is_number(rest[0]):
                rest = rest[1:]
        elif rest and not _is_number(rest[0]):
            rest = rest[1:]
        for k, _ in enumerate(rest):
            pts.setdefault(name.upper(), []).append(
                _num(path, "CURVES", r, len(r.tokens) - len(rest) + k, f"curve value {k + 1}"))
    return {n: np.asarray(v, dtype=float).reshape(-1, 2) for n, v in pts.items()
            if len(v) >= 2 and len(v) % 2 == 0}


def _token_of(tokens: list[str]):
    """``tok(k)``: the row's k-th token, None past its end."""
    def tok(k: int) -> str | None:
        return tokens[k] if k < len(tokens) else None
    return tok


def _links(path: Path, sections: dict[str, list[Row]], node_inv: dict[str, float],
           offsets: str, ftl: float, gpf: float, xs: dict[str, Row], notes: list[str]
           ) -> pd.DataFrame:
    """Pumps, orifices, weirs and outlets with what SWMM needs to run them again.

    Heights become feet; a weir's coefficients (for CMS and metres in an SI model)
    become the coefficients for CFS and feet (x ft/m ** 0.5, side-flow weirs ft/m **
    (1/3)); an outlet's functional coefficient and its rating curve become CFS and
    feet; orifice coefficients have no unit.
    """
    curves = _curve_points(path, sections.get("CURVES", []))
    cfs_per_flow = gpf / CFS_TO_GPD
    rows = []
    lost: list[str] = []
    for sec, kind in LINK_SECTIONS.items():
        for r in sections.get(sec, []):
            t = r.tokens
            row: dict = {c: None for c in LINK_COLUMNS}
            row.update(main_id=t[0], swmm_type=kind, from_node=t[1], to_node=t[2],
                       crest_ft=np.nan, line=r.line)
            if kind in CREST_TOKEN:
                k = CREST_TOKEN[kind]
                star = k >= len(t) or t[k] == "*"
                off = _num(path, sec, r, k, "crest height or offset", 0.0)
                row["crest_ft"] = (node_inv[t[1]] if star else off * ftl) \
                    if offsets == "ELEVATION" else node_inv[t[1]] + off * ftl
            tok = _token_of(t)
            if kind == "weir":
                wtype = (tok(3) or "").upper()
                f = ftl ** (1 / 3) if wtype == SIDEFLOW else ftl ** 0.5
                row.update(regulator_type=wtype,
                           discharge_coeff=_num(path, sec, r, 5, "discharge coefficient") * f,
                           flap_gate=_yes(tok(6)),
                           end_contractions=_num(path, sec, r, 7, "end contractions", 0.0),
                           discharge_coeff2=_num(path, sec, r, 8, "end coefficient", 0.0)
                           * ftl ** 0.5,
                           can_surcharge=_yes(tok(9)))
                if wtype == "ROADWAY":
                    row.update(road_width_ft=_num(path, sec, r, 10, "road width", 0.0) * ftl,
                               road_surface=(tok(11) or "").upper() or None)
                if tok(12) not in (None, "*"):
                    lost.append(f"weir {t[0]}'s coefficient curve {tok(12)}")
            elif kind == "orifice":
                row.update(regulator_type=(tok(3) or "").upper(),
                           discharge_coeff=_num(path, sec, r, 5, "discharge coefficient"),
                           flap_gate=_yes(tok(6)),
                           close_time_h=_num(path, sec, r, 7, "close time", 0.0))
            elif kind == "outlet":
                otype = (tok(4) or "").upper()
                row["regulator_type"] = otype
                if otype.startswith("FUNCTIONAL"):
                    b = _num(path, sec, r, 6, "outlet exponent")
                    row.update(discharge_coeff=_num(path, sec, r, 5, "outlet coefficient")
                               * cfs_per_flow / ftl ** b, outlet_expon=b,
                               flap_gate=_yes(tok(7)))
                elif otype.startswith("TABULAR"):
                    c = curves.get((tok(5) or "").upper())
                    if c is None:
                        raise _fail(path, sec, r.line, f"outlet {t[0]!r} names rating curve "
                                    f"{tok(5)!r}, which [CURVES] does not define")
                    row.update(rating_curve=" ".join(
                        f"{h * ftl:.6g} {q * cfs_per_flow:.6g}" for h, q in c),
                        flap_gate=_yes(tok(6)))
                else:
                    raise _fail(path, sec, r.line, f"outlet {t[0]!r} has rating {tok(4)!r}: "
                                "FUNCTIONAL/DEPTH, FUNCTIONAL/HEAD, TABULAR/DEPTH or "
                                "TABULAR/HEAD expected")
            if kind in ("weir", "orifice"):
                x = xs.get(t[0])
                if x is None:
                    raise _fail(path, "XSECTIONS", None, f"{kind} {t[0]!r} ([{sec}] line "
                                f"{r.line}) has no cross-section")
                shape = x.tokens[1].upper()
                lengths = GEOM_LENGTHS.get(shape, (True, True, True))
                row["shape"] = shape
                row["geom1_ft"] = _num(path, "XSECTIONS", x, 2, "Geom1") * ftl
                for k in range(1, 4):
                    v = _num(path, "XSECTIONS", x, k + 2, f"Geom{k + 1}", 0.0)
                    row[f"geom{k + 1}_ft"] = v * ftl if lengths[k - 1] else v
            rows.append(row)
    if lost:
        notes.append("not kept (the export writes the link without it): " + ", ".join(lost))
    out = pd.DataFrame(rows, columns=LINK_COLUMNS)
    for col in LINK_NUMBERS:
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    return out


def _shape_curves(path: Path, rows: list[Row]) -> dict[str, np.ndarray]:
    """The [CURVES] of type SHAPE: name -> (k, 2) depth / full height, width / full height."""
    kind: dict[str, str] = {}
    pts: dict[str, list[float]] = {}
    for r in rows:
        name, rest = r.tokens[0], r.tokens[1:]
        if name not in kind:
            kind[name] = rest[0].upper() if rest else ""
            rest = rest[1:]
        elif rest and not _is_number(rest[0]):
            rest = rest[1:]
        for k, _ in enumerate(rest):
            pts.setdefault(name, []).append(_num(path, "CURVES", r, len(r.tokens) - len(rest)
                                                 + k, f"curve value {k + 1}"))
    out = {}
    for name, t in kind.items():
        if t != "SHAPE":
            continue
        v = pts.get(name, [])
        if len(v) < 4 or len(v) % 2:
            raise _fail(path, "CURVES", None, f"shape curve {name!r} has {len(v)} value(s): "
                        "pairs of depth / full height and width / full height expected")
        out[name] = np.asarray(v, dtype=float).reshape(-1, 2)
    return out


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _xsections(path: Path, rows: list[Row], names: list[str], shape: list[str],
               curves: dict[str, np.ndarray], ftl: float
               ) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """Geom1-4 (feet; side slopes as written), barrels and CUSTOM curves (as text) of
    the conduits; a shape gisnet cannot represent is an error naming the conduit."""
    geoms = np.zeros((len(rows), 4))
    barrels = np.ones(len(rows))
    curve_of: list[str | None] = [None] * len(rows)
    for i, r in enumerate(rows):
        s = shape[i]
        if s in UNSUPPORTED or s not in SHAPES:
            raise _fail(path, "XSECTIONS", r.line, f"conduit {names[i]!r} has shape {s}, which "
                        "gisnet cannot represent (it takes "
                        f"{', '.join(SHAPES)}); no capacity could be computed for it")
        geoms[i, 0] = _num(path, "XSECTIONS", r, 2, "Geom1") * ftl
        if s == "CUSTOM":
            if len(r.tokens) < 4 or r.tokens[3] not in curves:
                raise _fail(path, "XSECTIONS", r.line, f"conduit {names[i]!r} is CUSTOM with "
                            f"shape curve {r.tokens[3] if len(r.tokens) > 3 else None!r}, "
                            "which [CURVES] does not define as a SHAPE curve")
            c = curves[r.tokens[3]]
            curve_of[i] = " ".join(f"{v:.6g}" for v in c.ravel())
            bt = 6 if len(r.tokens) > 6 else 4
            barrels[i] = _num(path, "XSECTIONS", r, bt, "barrels", 1.0) or 1.0
            continue
        lengths = GEOM_LENGTHS.get(s, (True, True, True))
        for k in range(1, 4):
            v = _num(path, "XSECTIONS", r, k + 2, f"Geom{k + 1}", 0.0)
            geoms[i, k] = v * ftl if lengths[k - 1] else v
        barrels[i] = _num(path, "XSECTIONS", r, 6, "barrels", 1.0) or 1.0
        g1, g2, g3, g4 = (float(v) for v in geoms[i][:4])
        a, _ = full_area_radius(s, g1, g2, g3, g4)
        if not a > 0:
            raise _fail(path, "XSECTIONS", r.line, f"conduit {names[i]!r}: {s} with Geom1-4 "
                        f"{' '.join(r.tokens[2:6])} has no area gisnet can compute "
                        "(a dimension missing or not positive, or a standard size code)")
    return geoms, barrels, curve_of


def read_model(path: str | Path) -> SwmmModel:
    """Read a SWMM input file's network, in feet, inches and gpd.

    Parameters
    ----------
    path
        The ``.inp`` file.

    Returns
    -------
    SwmmModel

    Raises
    ------
    LayerError
        A bad model: a missing section, unknown flow units, a truncated row,
        a duplicate name, a link to an unknown node... (one line naming the
        section and line).
    """
    path = Path(path)
    if not path.is_file():
        raise LayerError(f"SWMM model {path}: no such file")
    sections = scan_sections(path)
    _check_rows(path, sections)
    opts = _options(path, sections)
    units, uline = opts.get("FLOW_UNITS", ("CFS", 0))
    notes: list[str] = []
    if "FLOW_UNITS" not in opts:
        notes.append("the model gives no FLOW_UNITS: SWMM's default CFS assumed")
    if units not in FLOW_UNITS_GPD:
        raise _fail(path, "OPTIONS", uline, f"unknown FLOW_UNITS {units!r}; SWMM knows "
                    f"{', '.join(FLOW_UNITS_GPD)}")
    ftl = 1.0 / FT_M if units in SI_UNITS else 1.0
    gpf = FLOW_UNITS_GPD[units]
    offsets = opts.get("LINK_OFFSETS", ("DEPTH", 0))[0] or "DEPTH"
    inp = _swmmio_inp(path)

    # Nodes (swmmio frames, in file order; names from the file's tokens).
    coords = {r.tokens[0]: (_num(path, "COORDINATES", r, 1, "X"),
                            _num(path, "COORDINATES", r, 2, "Y"))
              for r in sections["COORDINATES"]}
    frames = []
    for sec, kind in NODE_SECTIONS.items():
        rows = sections.get(sec, [])
        if not rows:
            continue
        df = _section(inp, sec.lower())
        if len(df) != len(rows):
            raise _fail(path, sec, rows[0].line, f"swmmio read {len(df)} row(s) of {len(rows)}")
        inv = _col(path, sec, rows, df, "InvertElev") * ftl
        if kind == "outfall":
            depth = np.full(len(rows), np.nan)
        elif kind == "divider":  # swmmio has no column names for the divider's depth
            depth = np.array([_num(path, sec, r, 5, "max depth", 0.0) for r in rows]) * ftl
        else:
            depth = np.nan_to_num(_col(path, sec, rows, df, "MaxD" if kind == "storage"
                                       else "MaxDepth")) * ftl
        frames.append(pd.DataFrame({
            "node_id": [r.tokens[0] for r in rows], "swmm_type": kind, "invert_ft": inv,
            "max_depth_ft": depth, "line": [r.line for r in rows]}))
    nodes = pd.concat(frames, ignore_index=True)
    nodes["rim_ft"] = np.where(nodes["max_depth_ft"] > 0,
                               nodes["invert_ft"] + nodes["max_depth_ft"], np.nan)
    nodes["x"] = [coords[n][0] for n in nodes["node_id"]]
    nodes["y"] = [coords[n][1] for n in nodes["node_id"]]
    node_inv = dict(zip(nodes["node_id"], nodes["invert_ft"], strict=True))

    # Conduits: swmmio's [CONDUITS] and [XSECTIONS], names from the file.
    crow = sections["CONDUITS"]
    cdf = _section(inp, "conduits")
    if len(cdf) != len(crow):
        raise _fail(path, "CONDUITS", crow[0].line, f"swmmio read {len(cdf)} of {len(crow)} rows")
    xs = {r.tokens[0]: r for r in sections["XSECTIONS"]}
    names = [r.tokens[0] for r in crow]
    frm = [r.tokens[1] for r in crow]
    to = [r.tokens[2] for r in crow]
    length = _col(path, "CONDUITS", crow, cdf, "Length") * ftl
    rough = _col(path, "CONDUITS", crow, cdf, "Roughness")
    bad = np.flatnonzero(~(length > 0))
    if bad.size:
        raise _fail(path, "CONDUITS", crow[bad[0]].line, f"conduit {names[bad[0]]!r} has "
                    "length <= 0")
    up_inv_node = np.array([node_inv[n] for n in frm])
    dn_inv_node = np.array([node_inv[n] for n in to])
    in_off = _col(path, "CONDUITS", crow, cdf, "InOffset")
    out_off = _col(path, "CONDUITS", crow, cdf, "OutOffset")
    if offsets == "ELEVATION":
        up_inv = np.where(np.isfinite(in_off), in_off * ftl, up_inv_node)
        dn_inv = np.where(np.isfinite(out_off), out_off * ftl, dn_inv_node)
    else:
        up_inv = up_inv_node + np.nan_to_num(in_off) * ftl
        dn_inv = dn_inv_node + np.nan_to_num(out_off) * ftl
    shape = [xs[n].tokens[1].upper() for n in names]
    curves = _shape_curves(path, sections.get("CURVES", []))
    geoms, barrels, curve_of = _xsections(path, [xs[n] for n in names], names, shape, curves,
                                          ftl)
    geom1 = geoms[:, 0]
    circ = np.array([s in ("CIRCULAR", "FORCE_MAIN") for s in shape])
    conduits = pd.DataFrame({
        "main_id": names, "from_node": frm, "to_node": to, "length_ft": length,
        "roughness": rough, "up_offset_ft": up_inv - up_inv_node,
        "down_offset_ft": dn_inv - dn_inv_node, "up_invert_ft": up_inv,
        "down_invert_ft": dn_inv, "shape": shape, "geom1_ft": geom1,
        "geom2_ft": geoms[:, 1], "geom3_ft": geoms[:, 2], "geom4_ft": geoms[:, 3],
        "shape_curve": curve_of,
        "diameter_in": np.where(circ, geom1 * 12.0, np.nan), "barrels": barrels,
        "line": [r.line for r in crow]})
    other = sorted({shape[i] for i in np.flatnonzero(~circ)})
    if other:
        notes.append(f"{int((~circ).sum())} conduit(s) have non-circular sections "
                     f"({', '.join(other)}): capacity from each shape's full area and "
                     "hydraulic radius")
    many = np.flatnonzero(barrels > 1)
    if many.size:
        notes.append(f"{many.size} conduit(s) have several barrels "
                     f"({', '.join(names[i] for i in many[:10])}): capacity is the barrels' "
                     "together, the diameter one barrel's")

    # Other links, with the parameters the export writes back (US units).
    links = _links(path, sections, node_inv, offsets, ftl, gpf, xs, notes)

    vertices: dict[str, list[tuple[float, float]]] = {}
    for r in sections.get("VERTICES", []):
        vertices.setdefault(r.tokens[0], []).append(
            (_num(path, "VERTICES", r, 1, "X"), _num(path, "VERTICES", r, 2, "Y")))
    polys: dict[str, list[tuple[float, float]]] = {}
    for r in sections.get("POLYGONS", []):
        polys.setdefault(r.tokens[0], []).append(
            (_num(path, "POLYGONS", r, 1, "X"), _num(path, "POLYGONS", r, 2, "Y")))
    srows = sections.get("SUBCATCHMENTS", [])
    subs = pd.DataFrame({
        "parcel_id": [r.tokens[0] for r in srows], "outlet": [r.tokens[2] for r in srows],
        "area": [_num(path, "SUBCATCHMENTS", r, 3, "area") for r in srows],
        "coords": [polys.get(r.tokens[0]) for r in srows],
        "line": [r.line for r in srows]})

    means = _pattern_means(path, sections.get("PATTERNS", []))
    drows = []
    for r in sections.get("DWF", []):
        if r.tokens[1].upper() != "FLOW":
            continue  # pollutant concentrations
        if r.tokens[0] not in node_inv:
            raise _fail(path, "DWF", r.line, f"node {r.tokens[0]!r} is not in the model")
        base = _num(path, "DWF", r, 2, "baseline")
        pats = [t for t in r.tokens[3:] if t]
        unknown = [p for p in pats if p not in means]
        if unknown:
            raise _fail(path, "DWF", r.line, f"pattern {unknown[0]!r} is not in [PATTERNS]")
        factor = float(np.prod([means[p] for p in pats])) if pats else 1.0
        drows.append({"node_id": r.tokens[0], "baseline": base, "pattern_factor": factor,
                      "avg_flow_gpd": base * factor * gpf, "patterns": " ".join(pats),
                      "line": r.line})
    dwf = pd.DataFrame(drows, columns=["node_id", "baseline", "pattern_factor", "avg_flow_gpd",
                                       "patterns", "line"])
    if len(dwf) and dwf["patterns"].str.len().gt(0).any():
        notes.append("[DWF] averages are baseline x the mean of each of the inflow's patterns "
                     "(monthly, daily, hourly and weekend factors taken as independent)")
    title = " ".join(" ".join(r.tokens) for r in sections.get("TITLE", []))
    return SwmmModel(path=path, flow_units=units, ft_per_length=ftl, gpd_per_flow=gpf,
                     link_offsets=offsets, nodes=nodes, conduits=conduits, links=links,
                     vertices={k: np.asarray(v, dtype=float) for k, v in vertices.items()},
                     subcatchments=subs, dwf=dwf, title=title, notes=notes)
