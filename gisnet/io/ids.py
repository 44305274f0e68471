"""Unique feature ids: a feature whose id is its own keeps it; only repeats are renamed.

One algorithm for every place that makes ids unique (the loader, and the sewer
graph for layers that did not come through the loader), so a town's ids are the
same whichever way it was read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def unique_ids(ids: pd.Series, keep: np.ndarray | None = None) -> tuple[pd.Series, list[str]]:
    """Suffix repeated ids with ``#2``, ``#3`` ... so every id is unique.

    Rules:

    * an id used by one feature only is never changed (whatever it looks like,
      e.g. ``SM000149#2``);
    * of the features sharing an id, the first (among the ``keep`` rows when
      any of them has the id) keeps it;
    * each later one gets ``id#k``, the smallest ``k >= 2`` that no other
      feature uses and no earlier rename took.

    The loop looks at each candidate suffix once per id group, so it always
    ends (at most ``len(ids)`` candidates are taken).

    Parameters
    ----------
    ids
        Feature ids as text (no nulls).
    keep
        Boolean per row: ids that came from the source as they are. Rows whose
        id was made by gisnet (a part ``:1``, a row number) yield to them.

    Returns
    -------
    ids : pandas.Series
        Unique ids, same index.
    repeated : list of str
        The ids that were repeated, sorted.

    Examples
    --------
    >>> unique_ids(pd.Series(["A", "B", "A"]))[0].tolist()
    ['A', 'B', 'A#2']
    >>> unique_ids(pd.Series(["A", "A", "A#2"]))[0].tolist()
    ['A', 'A#3', 'A#2']
    """
    if ids.is_unique:  # (a hash of the ids as they are: most layers end here)
        return ids, []
    vals = ids.to_numpy(dtype=object)
    dup = pd.Series(vals).duplicated(keep=False).to_numpy()
    if not dup.any():
        return ids, []
    prio = np.ones(len(vals), bool) if keep is None else np.asarray(keep, bool)
    # the keeper of each id: its first priority row, else its first row
    order = np.lexsort((np.arange(len(vals)), ~prio))
    keeper: dict[str, int] = {}
    for i in order.tolist():
        keeper.setdefault(vals[i], i)
    taken = set(keeper)
    out = vals.copy()
    next_k: dict[str, int] = {}
    for i in np.flatnonzero(dup).tolist():
        v = vals[i]
        if keeper[v] == i:
            continue
        k = next_k.get(v, 2)
        while f"{v}#{k}" in taken:
            k += 1
        out[i] = f"{v}#{k}"
        taken.add(out[i])
        next_k[v] = k + 1
    return pd.Series(out, index=ids.index, dtype="str"), sorted(set(vals[dup]))


def in_ids(values: pd.Series, among: pd.Series) -> np.ndarray:
    """Whether each of ``values`` is one of ``among`` (missing values are in
    nothing): ``values.isin(among)`` as a bool array.

    When both are text held by Arrow (pandas' ``str``) they are matched by
    Arrow's ``is_in``: pandas' own ``isin`` makes a Python string of every value
    (about 10 s for a county's million parcel ids against its buildings').
    """
    among = among.dropna()
    if isinstance(values.dtype, pd.StringDtype) and isinstance(among.dtype, pd.StringDtype):
        import pyarrow as pa
        import pyarrow.compute as pc

        hit = pc.is_in(pa.array(values.array), value_set=pa.array(among.array).unique())
        return np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), dtype=bool)
    return values.isin(among).to_numpy(dtype=bool)


def first_positions(universe: pd.Series, values: pd.Series) -> np.ndarray:
    """Position in ``universe`` of the first row equal to each of ``values``; -1 where
    the value is missing or not there (``pd.Index(universe).get_indexer`` without its
    refusal of repeated ids).

    Text held by Arrow (pandas' ``str``) on both sides is matched as codes (one
    dictionary encoding of both): no Python string per row, where pandas' object
    hash tables make one of every value.
    """
    u = universe.reset_index(drop=True)
    v = values.reset_index(drop=True)
    if not (isinstance(u.dtype, pd.StringDtype) and isinstance(v.dtype, pd.StringDtype)):
        index = pd.Index(u.to_numpy(dtype=object), dtype=object)
        first = ~index.duplicated()
        pos = pd.Index(index[first], dtype=object).get_indexer(
            pd.Index(v.to_numpy(dtype=object), dtype=object))
        out = np.flatnonzero(first)[np.maximum(pos, 0)]
        out[(pos < 0) | v.isna().to_numpy(dtype=bool)] = -1
        return out.astype(np.int64)
    both, _ = pd.factorize(pd.concat([u.astype(v.dtype), v], ignore_index=True),
                           use_na_sentinel=True)
    cu, cv = both[:len(u)], both[len(u):]
    # one slot more than the codes: a missing value (code -1) reads that last slot, -1
    where = np.full(int(both.max(initial=-1)) + 2, -1, dtype=np.int64)
    rows = np.flatnonzero(cu >= 0)[::-1]  # the first row of each id wins
    where[cu[rows]] = rows
    return where[cv]
