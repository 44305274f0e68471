"""Canonical mapping of one layer: columns, ids, geometry, derived flags, working CRS.

:func:`canonical_layer` runs the stages of one layer in order:

1. column matching (:func:`gisnet.townfile.match_columns`: town-file mapping,
   then the aliases of :mod:`gisnet.schema`);
2. feature ids (:func:`source_ids`; generated from row numbers where missing);
3. geometry clean-up, features far outside the CRS's area or the layer's
   extent excluded (:func:`gisnet.io.extent.far_features`), explode
   (:mod:`gisnet.io.geometry`);
4. attribute values (:mod:`gisnet.io.values`);
5. unique ids (:func:`gisnet.io.ids.unique_ids`: an id used once is kept, repeats
   suffixed ``#2``, ``#3`` ... with a suffix no other feature uses);
   then the mains' plausibility findings (:mod:`gisnet.io.plausibility`);
6. the derived ``public`` / ``active`` columns of mains and manholes
   (:func:`derived_flags`, by :func:`gisnet.rules.is_public` and
   :func:`gisnet.rules.is_active`), and what features with no owner or status
   value are taken to be, said once (:func:`assumed_values`);
7. unmapped source columns, kept under their names (:func:`extra_columns`);
8. reprojection to the working CRS.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from .. import rules, schema
from ..errors import SchemaError
from ..report import Report
from ..townfile import LayerSpec, match_columns
from .extent import far_features
from .geometry import clean_geometry, explode_parts
from .ids import unique_ids
from .notes import LayerNotes, ids_text
from .plausibility import check_mains
from .postgis import redact
from .reading import NO_GEOMETRY_ATTR, LayerInfo, crs_label
from .values import as_text, column_values

#: Roles whose canonical layer also has the derived ``public`` and ``active`` columns.
FLAGGED_ROLES = ("mains", "manholes")
#: The derived columns: not read from the source (a source column of the same
#: name is not kept), computed by :func:`derived_flags`.
DERIVED_COLUMNS = ("public", "active")

_DTYPES = {"str": "str", "float": "float64", "int": "Int64", "bool": "boolean",
           "date": "datetime64[ms]"}


def source_ids(raw: gpd.GeoDataFrame, src: str | None, notes: LayerNotes) -> pd.Series:
    """Each feature's id as text, from column ``src``; ``ROLE:ROW`` where there is none.

    ``raw`` has a RangeIndex. A missing id column is an info finding
    (``generated_id``), features without an id a warning (``missing_id``).
    """
    role = notes.role

    def row_ids() -> pd.Series:  # (made only where an id is missing)
        return pd.Series([f"{role}:{i + 1}" for i in range(len(raw))], dtype="str")

    if src is None:
        rows = row_ids()
        notes.add("generated_id", "info",
                  f"no id column; ids made from row numbers ({rows.iloc[0]} ...)")
        return rows
    ids = as_text(raw[src].reset_index(drop=True))
    given = ids.dropna()  # (compared with the first: unique_ids hashes them next)
    one_value = not len(given) or bool((given == given.iloc[0]).all())
    if len(ids) > 1 and one_value:
        # a column with one value (OBJECTID 0 on every row) or none is no id:
        # one finding, the rows themselves in the quality layer's feature ids
        rows = row_ids()
        held = f"{given.iloc[0]!r} on every row" if len(given) else "no values"
        notes.add("generated_id", "info",
                  f"id column {src} holds {held}; ids made from row numbers "
                  f"({rows.iloc[0]} ...)")
        return rows
    missing = ids.isna()
    if not missing.any():
        return ids
    rows = row_ids()
    notes.add("missing_id", "warning",
              f"{int(missing.sum())} features have no {src}; ids made from row numbers: "
              f"{ids_text(rows[missing])}", rows[missing])
    return ids.fillna(rows)


def derived_flags(owner: pd.Series, status: pd.Series) -> dict[str, pd.Series]:
    """The ``public`` and ``active`` columns from the mapped ``owner`` and ``status``.

    The rules are :func:`gisnet.rules.is_public` (owner ``public`` or none given)
    and :func:`gisnet.rules.is_active` (status ``active`` or none given); a value
    the loader did not recognise counts as neither.
    """
    df = pd.DataFrame({"owner": owner, "status": status})
    return {"public": pd.Series(rules.is_public(df), index=df.index, dtype=bool),
            "active": pd.Series(rules.is_active(df), index=df.index, dtype=bool)}


def assumed_values(owner: pd.Series, status: pd.Series, notes: LayerNotes) -> None:
    """Say once per layer what features with no owner / status value are taken to be.

    ``owner_assumed`` / ``status_assumed`` (info, :func:`gisnet.rules.not_given_message`):
    most municipal layers have no owner column, and every analysis then counts
    their mains as public (in service).
    """
    for column, values in (("owner", owner), ("status", status)):
        missing = int(values.isna().sum())
        if missing:
            notes.add(f"{column}_assumed", "info",
                      rules.not_given_message(column, missing, len(values), notes.role))


def extra_columns(raw: gpd.GeoDataFrame, role: str, used: set[str],
                  pos: np.ndarray) -> dict[str, pd.Series]:
    """Unmapped source columns at rows ``pos``, under their source names, in canonical dtypes.

    A source column named like a canonical or derived column (case-insensitive)
    that was not mapped is left out.
    """
    reserved = {c.lower() for c in schema.column_names(role)}
    reserved |= {"geometry", *DERIVED_COLUMNS}
    out: dict[str, pd.Series] = {}
    for c in raw.columns:
        if c == raw.geometry.name or c in used or c.lower() in reserved:
            continue
        s = raw[c].iloc[pos].reset_index(drop=True)
        if pd.api.types.is_bool_dtype(s):
            s = s.astype("boolean")
        elif pd.api.types.is_integer_dtype(s):
            s = s.astype("Int64")
        elif pd.api.types.is_float_dtype(s):
            s = s.astype("float64")
        elif pd.api.types.is_datetime64_any_dtype(s):
            if getattr(s.dt, "tz", None) is not None:
                s = s.dt.tz_convert("UTC").dt.tz_localize(None)
            s = s.astype("datetime64[ms]")
        else:
            s = s.astype("str")
        out[c] = s
    return out


def canonical_layer(
    raw: gpd.GeoDataFrame,
    spec: LayerSpec,
    working_crs: CRS,
    report: Report,
    info: LayerInfo | None = None,
) -> gpd.GeoDataFrame:
    """Map one raw layer to its role's canonical schema in the working CRS.

    Parameters
    ----------
    raw
        The layer as read by :func:`gisnet.io.read_layer` (it must have a CRS).
    spec
        Its town-file entry (role, column and value mappings, units).
    working_crs
        Projected CRS to reproject to.
    report
        Findings are added here.
    info
        Filled with what was read (a new one is made when None).

    Returns
    -------
    geopandas.GeoDataFrame
        Canonical columns (see :mod:`gisnet.schema`), ``public``/``active`` on
        mains and manholes, then unmapped source columns; RangeIndex; unique ids.

    Raises
    ------
    SchemaError
        A column mapping names a column the source does not have.
    LayerError
        Every feature has the wrong geometry type.
    """
    role = spec.role
    if info is None:
        info = LayerInfo(role, redact(spec.path), spec.layer, spec.where, "pyogrio",
                         None if raw.crs is None else raw.crs.to_string())
    info.features_read = len(raw)
    raw = raw.reset_index(drop=True)
    try:
        info.mapping = match_columns(role, [c for c in raw.columns if c != raw.geometry.name],
                                     spec.columns)
    except SchemaError as exc:
        raise SchemaError(exc.message, path=redact(spec.path), layer=role) from None
    notes = LayerNotes(role, report)
    idcol = schema.ID_COLUMN[role]
    ids = source_ids(raw, info.mapping.get(idcol), notes)
    clean = clean_geometry(raw.geometry, ids, redact(spec.path), notes)
    info.geometry_types = clean.geometry_types
    if not raw.attrs.get(NO_GEOMETRY_ATTR) and clean.keep.any():
        kept = clean.geoms.copy()
        kept[~clean.keep] = None
        far, why = far_features(kept, raw.crs)
        if far.any():
            clean.keep &= ~far
            notes.add("coordinates_out_of_range", "warning",
                      f"{int(far.sum())} features with a vertex {why} excluded (a mistyped "
                      f"coordinate?): {ids_text(ids[far])}", ids[far])
    parts = explode_parts(clean, ids, notes)
    cols: dict[str, Any] = {}
    for col in schema.columns(role):
        src = info.mapping[col.name]
        values = None if src is None else raw[src].iloc[parts.pos].reset_index(drop=True)
        cols[col.name] = (parts.ids if col.name == idcol else
                          column_values(col, values, spec, parts.ids, notes))
    src_id = info.mapping.get(idcol)
    own = (np.zeros(len(parts.ids), bool) if src_id is None else
           (as_text(raw[src_id]).iloc[parts.pos].to_numpy(dtype=object)
            == parts.ids.to_numpy(dtype=object)))
    uids, dups = unique_ids(cols[idcol], keep=own)
    if dups:
        notes.add("duplicate_id", "warning",
                  f"{len(dups)} ids used by more than one feature; all kept, later ones "
                  f"suffixed #2, #3 ...: {ids_text(dups)}", dups)
    cols[idcol] = uids
    if role == "mains":
        check_mains(cols, uids, spec.diameter_units, spec.slope_units, notes)
    if role in FLAGGED_ROLES:
        cols.update(derived_flags(cols["owner"], cols["status"]))
        assumed_values(cols["owner"], cols["status"], notes)
    used = {s for s in info.mapping.values() if s is not None}
    cols.update(extra_columns(raw, role, used, parts.pos))
    no_geometry = bool(raw.attrs.get(NO_GEOMETRY_ATTR))
    read_crs = CRS.from_user_input(raw.crs) if raw.crs is not None else working_crs
    src_crs = read_crs.to_2d() if len(read_crs.axis_info) > 2 else read_crs
    if no_geometry:
        src_crs = working_crs
    gdf = gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries(parts.geoms, crs=src_crs), crs=src_crs)
    if src_crs != working_crs:
        gdf = gdf.to_crs(working_crs)
        how = "geographic (lon/lat) input" if src_crs.is_geographic else "input"
        report.add("reprojected", "info",
                   f"{role}: {how} in {crs_label(read_crs)} reprojected to "
                   f"{crs_label(working_crs)}", layer=role)
    info.features_kept = len(gdf)
    return gdf


def empty_layer(role: str, crs: CRS) -> gpd.GeoDataFrame:
    """A canonical layer with no features (every canonical column, right dtypes)."""
    cols = {c.name: pd.Series([], dtype=_DTYPES[c.dtype]) for c in schema.columns(role)}
    if role in FLAGGED_ROLES:
        cols.update({c: pd.Series([], dtype=bool) for c in DERIVED_COLUMNS})
    return gpd.GeoDataFrame(cols, geometry=gpd.GeoSeries([], crs=crs), crs=crs)
