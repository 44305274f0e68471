"""Column helpers shared by the graph stages: text and float columns, ids, findings.

Every stage reads the canonical layers' columns through these, so a missing
value is ``None`` (text) or NaN (numbers) everywhere, and ids are strings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..io.ids import unique_ids as unique_ids_shared
from ..report import Finding

#: Id prefix of generated ids (a feature without one), per layer role.
ID_PREFIX = {"mains": "MAIN", "manholes": "MH", "plants": "PLANT"}


def as_text(s: pd.Series) -> pd.Series:
    """Series as object dtype: str values, None for missing.

    Whole floats read as integers (``12.0`` -> ``"12"``): numeric ids come
    back as the ids people typed.
    """
    mask = s.isna().to_numpy()
    out = s.astype(object)
    if mask.any():
        out = out.where(~mask, None)
    if pd.api.types.is_string_dtype(s.dtype) and not pd.api.types.is_object_dtype(s.dtype):
        return out
    return out.map(lambda v: v if v is None or isinstance(v, str) else id_text(v))


def id_text(v: Any) -> str:
    """One id value as text (``12.0`` -> ``"12"``)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def text_column(df: pd.DataFrame, col: str) -> pd.Series:
    """``df[col]`` through :func:`as_text`; all None when the column is missing."""
    if col in df.columns:
        return as_text(df[col])
    return pd.Series([None] * len(df), dtype=object, index=df.index)


def as_floats(s: pd.Series | None, n: int) -> np.ndarray:
    """Numbers of a column (NaN where missing or not a number); all NaN without one."""
    if s is None:
        return np.full(n, np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def none_for_nan(a: np.ndarray) -> list[Any]:
    """Float array as a list with None for NaN (NaN != NaN would break equality)."""
    a = np.asarray(a, dtype=float)
    out = a.tolist()
    if np.isnan(a).any():
        for i in np.flatnonzero(np.isnan(a)).tolist():
            out[i] = None
    return out


def shared_values(a: np.ndarray) -> list[Any]:
    """``a.tolist()``, in which equal values are one object (a main's ``kind``,
    ``owner``, ``status``: a few distinct texts over 300,000 edges). The graph
    holds each attribute as a Python object per edge; made from arrays, each
    would be its own copy (about 55 bytes per text). Missing values (None, NaN)
    are kept as they are."""
    arr = np.asarray(a, dtype=object)
    codes, uniques = pd.factorize(arr, use_na_sentinel=True)
    one = uniques.tolist()
    vals = arr.tolist()
    return [one[c] if c >= 0 else v for c, v in zip(codes.tolist(), vals, strict=True)]


def unique_ids(ids: pd.Series, role: str, report_dups: bool,
               geoms: np.ndarray) -> tuple[list[str], list[Finding]]:
    """Ids as str; missing ids generated, duplicates suffixed ``#2``, ``#3``.

    The renaming is :func:`gisnet.io.ids.unique_ids` (the loader's): an id
    used once is kept, a repeat gets the first ``#k`` no other feature uses,
    and a generated id (``MAIN-row3``) yields to a source id it clashes with.

    Returns
    -------
    (ids, findings)
        The ids, and one ``duplicate_id`` finding per renamed id when
        ``report_dups`` (layers that did not come through the loader, which
        reports duplicates itself).
    """
    t = as_text(ids)
    if t.notna().all() and t.is_unique and not (t == "").any():
        return t.tolist(), []
    prefix = ID_PREFIX[role]
    given = (t.notna() & (t != "")).to_numpy()
    filled = [v if ok else f"{prefix}-row{i + 1}"
              for i, (v, ok) in enumerate(zip(t.tolist(), given, strict=True))]
    new, _ = unique_ids_shared(pd.Series(filled, dtype=object), keep=given)
    out = new.tolist()
    found: list[Finding] = []
    if report_dups:
        for i in np.flatnonzero(np.array(out, dtype=object) != np.array(filled, dtype=object)):
            found.append(Finding(
                "duplicate_id", "warning",
                f"{role} id {filled[i]!r} appears more than once; this one is renamed "
                f"{out[i]!r}", role, out[i], geoms[i]))
    return out, found
