"""Shared predicates: the one place each rule about mains, limits and distances lives.

Every analysis (graph, obligations, tracing, capacity), the loader and the map
styling decide these questions through this module and nowhere else:

==============================  ==================================================
question                        predicate
==============================  ==================================================
public sewer?                   :func:`is_public` (owner ``public``, or none given)
in service?                     :func:`is_active` (status ``active``, or none given)
owner / status not recognised?  :func:`owner_unrecognised`, :func:`status_unrecognised`
public and in service unknown?  :func:`is_undetermined_for_connection`
gravity main?                   :func:`is_gravity` (kind is not ``force``)
counts for "must connect"?      :func:`is_eligible_for_connection`
carries sanitary flow?          :func:`carries_sanitary_flow`
a main's kind for the rules     :func:`effective_kind` (unknown -> sanitary)
"in excess of" / "at least"     :func:`exceeds`
"within N ft"                   :func:`within`
==============================  ==================================================

A main whose kind is not known (no kind column, or a value gisnet cannot map)
is treated as :data:`UNKNOWN_KIND_TREATED_AS` by *every* analysis; the loader
reports that assumption once, as the ``kind_assumed`` finding (see
:func:`unknown_kind_message`).

A main (or manhole) is public only for the owner value ``public`` and in
service only for the status value ``active``. A value the loader does not
recognise ("developer", "under construction") is kept as written and counts as
neither: such a main orders nobody (parcels near it alone are ``review``,
:func:`is_undetermined_for_connection`). A main with *no* owner (status) value
at all, as in most municipal layers, which have no owner column, is taken as
:data:`NOT_GIVEN_OWNER_TREATED_AS` (:data:`NOT_GIVEN_STATUS_TREATED_AS`); the
loader says so once per layer (``owner_assumed``, ``status_assumed``,
:func:`not_given_message`).

All predicates take a canonical layer (a DataFrame with the columns of
:mod:`gisnet.schema`) and return a numpy boolean array aligned with its rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

#: The kinds a canonical main may have (``kind`` column; null reads as unknown).
MAIN_KINDS = ("sanitary", "storm", "combined", "force", "unknown")
#: What a main of unknown kind is taken to be, by every analysis.
UNKNOWN_KIND_TREATED_AS = "sanitary"
#: Kinds whose mains carry sanitary sewage (accumulated by capacity, followed by
#: control-manhole and upstream traces). Storm mains carry none.
SANITARY_FLOW_KINDS = ("sanitary", "combined", "force")
#: Kinds that count for a connection obligation when a profile does not say
#: (both shipped profiles say the same: a public sanitary or combined sewer).
DEFAULT_ELIGIBLE_KINDS = ("sanitary", "combined")
#: Kinds that flow under gravity (force mains are pressurised; nobody taps one).
NON_GRAVITY_KINDS = ("force",)
#: The ``owner`` values the loader recognises (after value mapping); any other
#: value is kept as written and is not known to be public.
OWNER_VALUES = ("public", "private")
#: ``owner`` values that mean "public" (a main with no owner value counts too:
#: :data:`NOT_GIVEN_OWNER_TREATED_AS`).
PUBLIC_OWNERS = ("public",)
#: The ``status`` values the loader recognises (after value mapping).
STATUS_VALUES = ("active", "inactive", "abandoned", "proposed")
#: ``status`` values (after value mapping) that mean "in service"; null counts too
#: (:data:`NOT_GIVEN_STATUS_TREATED_AS`).
ACTIVE_STATUSES = ("active",)
#: What a main or manhole with no owner value is taken to be, by every analysis.
NOT_GIVEN_OWNER_TREATED_AS = "public"
#: What a main or manhole with no status value is taken to be, by every analysis.
NOT_GIVEN_STATUS_TREATED_AS = "active"

#: Relative tolerance within which a computed ratio equals its limit: decimal
#: inputs do not divide exactly in binary (1.12 / 1.4 MGD gives
#: 0.8000000000000002, (100.28 - 100.00) / 100 ft gives 0.0027999999999997).
LIMIT_RTOL = 1e-9
#: Absolute tolerance, in feet, of "within N ft": a distance that prints as
#: 300.00 ft is within 300 ft whatever the binary rounding of the geometry.
DISTANCE_TOLERANCE_FT = 0.005
#: Default snap tolerance (feet) when neither the town file nor the command
#: line gives one.
DEFAULT_SNAP_TOLERANCE_FT = 1.0
#: How far (feet) a treatment plant's point may lie from the nearest pipe node
#: and still be joined to it: plant layers mark the facility (its office or
#: outfall), commonly tens to a few hundred feet from the last pipe's end.
DEFAULT_PLANT_TOLERANCE_FT = 300.0
#: How far (feet) the ground read from an elevation raster must fall from one end
#: of a pipe to the other before it decides the pipe's direction: two manholes
#: of one pipe commonly differ in depth by several feet (6 to 12 ft deep is
#: usual), so a smaller fall of the ground says nothing about the sewer's.
DEFAULT_DEM_MIN_DROP_FT = 5.0


def _coded(df: pd.DataFrame, col: str) -> tuple[np.ndarray, list[str]] | None:
    """A coded text column as (codes, distinct values stripped and lower-cased).

    Missing values get the last code, whose value is ``""``. Coded columns hold a
    handful of values over hundreds of thousands of rows, so every predicate is
    decided once per distinct value and spread back with the codes.
    """
    if col not in df.columns:
        return None
    codes, uniques = pd.factorize(df[col], use_na_sentinel=True)
    values = [str(u).strip().lower() for u in uniques] + [""]
    codes = np.where(codes < 0, len(values) - 1, codes)
    return codes, values


def _decide(df: pd.DataFrame, col: str, test: Any, missing_column: bool) -> np.ndarray:
    coded = _coded(df, col)
    if coded is None:
        return np.full(len(df), missing_column, dtype=bool)
    codes, values = coded
    return np.array([bool(test(v)) for v in values], dtype=bool)[codes]


def _bool(df: pd.DataFrame, col: str, default: bool) -> np.ndarray:
    return df[col].astype("boolean").fillna(default).to_numpy(dtype=bool)


def is_public(df: pd.DataFrame) -> np.ndarray:
    """Rows owned by the public: ``owner`` is ``public``, or no owner is given.

    An owner value the loader did not recognise (kept as written: "developer",
    "homeowners association") is not public (:func:`owner_unrecognised`). The
    loader's ``public`` column is used when present (it is this same rule,
    applied once at load time).
    """
    if "public" in df.columns:
        return _bool(df, "public", True)
    return _decide(df, "owner", lambda v: v in ("", *PUBLIC_OWNERS), True)


def is_active(df: pd.DataFrame) -> np.ndarray:
    """Rows in service: ``status`` is ``active``, or no status is given.

    Inactive, abandoned and proposed features are not, nor a status value the
    loader did not recognise ("under construction", "not accepted",
    :func:`status_unrecognised`). The loader's ``active`` column is used when
    present.
    """
    if "active" in df.columns:
        return _bool(df, "active", True)
    return _decide(df, "status", lambda v: v in ("", *ACTIVE_STATUSES), True)


def owner_unrecognised(df: pd.DataFrame) -> np.ndarray:
    """Rows whose ``owner`` value is given but is none of :data:`OWNER_VALUES`."""
    return _decide(df, "owner", lambda v: v not in ("", *OWNER_VALUES), False)


def status_unrecognised(df: pd.DataFrame) -> np.ndarray:
    """Rows whose ``status`` value is given but is none of :data:`STATUS_VALUES`."""
    return _decide(df, "status", lambda v: v not in ("", *STATUS_VALUES), False)


def not_given_message(column: str, n: int, total: int, what: str = "mains") -> str:
    """The one ``owner_assumed`` / ``status_assumed`` message: ``n`` of ``total``
    ``what`` have no ``column`` value and are taken as public / in service."""
    taken = (f"{NOT_GIVEN_OWNER_TREATED_AS} sewers" if column == "owner"
             else f"{NOT_GIVEN_STATUS_TREATED_AS} (in service)")
    return (f"{n} of {total} {what} have no {column} value: every analysis counts them as "
            f"{taken}; a value given but not recognised counts as neither (map such values "
            f"in the town file)")


def _effective(value: str) -> str:
    return UNKNOWN_KIND_TREATED_AS if value in ("", "unknown") else value


def kind_is_unknown(df: pd.DataFrame) -> np.ndarray:
    """Mains whose kind is unknown (null, empty or ``unknown``)."""
    return _decide(df, "kind", lambda v: v in ("", "unknown"), True)


def effective_kind(df: pd.DataFrame) -> np.ndarray:
    """Each main's kind as the rules read it: unknown -> :data:`UNKNOWN_KIND_TREATED_AS`."""
    coded = _coded(df, "kind")
    if coded is None:
        return np.full(len(df), UNKNOWN_KIND_TREATED_AS, dtype=object)
    codes, values = coded
    return np.array([_effective(v) for v in values], dtype=object)[codes]


def is_gravity(df: pd.DataFrame) -> np.ndarray:
    """Gravity mains: every kind but ``force`` (an unknown kind counts as gravity)."""
    return _decide(df, "kind", lambda v: _effective(v) not in NON_GRAVITY_KINDS,
                   _effective("") not in NON_GRAVITY_KINDS)


def carries_sanitary_flow(df: pd.DataFrame) -> np.ndarray:
    """Active mains that carry sanitary flow (sanitary, combined, force; unknown -> sanitary).

    Ownership does not matter: a private main still carries its users' flow
    into the public sewer.
    """
    kind_ok = _decide(df, "kind", lambda v: _effective(v) in SANITARY_FLOW_KINDS,
                      _effective("") in SANITARY_FLOW_KINDS)
    return is_active(df) & kind_ok


def is_eligible_for_connection(
    df: pd.DataFrame, eligible_kinds: Iterable[str] | None = None
) -> np.ndarray:
    """Mains a connection obligation can be measured to.

    Public, active, gravity mains of an eligible kind (the profile's
    ``connection.eligible_kinds``, default :data:`DEFAULT_ELIGIBLE_KINDS`);
    a main of unknown kind counts as :data:`UNKNOWN_KIND_TREATED_AS`.
    Geometry is not looked at here.
    """
    kinds = tuple(DEFAULT_ELIGIBLE_KINDS if eligible_kinds is None else eligible_kinds)
    kinds = tuple(k for k in kinds if k not in NON_GRAVITY_KINDS)
    kind_ok = _decide(df, "kind", lambda v: _effective(v) in kinds, _effective("") in kinds)
    return is_public(df) & is_active(df) & kind_ok


def is_undetermined_for_connection(
    df: pd.DataFrame, eligible_kinds: Iterable[str] | None = None
) -> np.ndarray:
    """Mains that would count for a connection but for an owner or status value the
    loader did not recognise.

    Gravity mains of an eligible kind, not known to be private nor out of
    service, whose owner or status value (or both) is unrecognised
    (:func:`owner_unrecognised`, :func:`status_unrecognised`): not known to be a
    public sewer in service, so they order nobody, but a parcel near one is
    left to a person.
    """
    kinds = tuple(DEFAULT_ELIGIBLE_KINDS if eligible_kinds is None else eligible_kinds)
    kinds = tuple(k for k in kinds if k not in NON_GRAVITY_KINDS)
    kind_ok = _decide(df, "kind", lambda v: _effective(v) in kinds, _effective("") in kinds)
    o_unk = owner_unrecognised(df)
    s_unk = status_unrecognised(df)
    owner_ok = _decide(df, "owner", lambda v: v in ("", *PUBLIC_OWNERS), True) | o_unk
    status_ok = _decide(df, "status", lambda v: v in ("", *ACTIVE_STATUSES), True) | s_unk
    return kind_ok & owner_ok & status_ok & (o_unk | s_unk)


def unknown_kind_message(n: int) -> str:
    """The one ``kind_assumed`` message, for ``n`` mains of unknown kind."""
    return (f"{n} main(s) have no sewer kind (sanitary/storm/...); every analysis treats "
            f"them as {UNKNOWN_KIND_TREATED_AS} mains (connection obligations, control "
            "manholes and capacity alike)")


def exceeds(value: Any, limit: Any, strict: bool = True, rtol: float = LIMIT_RTOL) -> Any:
    """``value > limit`` ("in excess of", ``strict``) or ``value >= limit`` ("at least").

    A value within ``rtol`` (relative) of the limit counts as equal to it; NaN
    never exceeds. Scalars give a bool, arrays an array of bool (broadcast).
    """
    xa = np.asarray(value, dtype="float64")
    la = np.asarray(limit, dtype="float64")
    with np.errstate(invalid="ignore"):
        close = np.abs(xa - la) <= rtol * np.abs(la)
        out = ((xa > la) & ~close) if strict else ((xa >= la) | close)
    return bool(out) if out.ndim == 0 else out


def within(distance_ft: Any, limit_ft: Any, tol_ft: float = DISTANCE_TOLERANCE_FT) -> Any:
    """``distance_ft <= limit_ft`` ("within N feet"), to :data:`DISTANCE_TOLERANCE_FT`.

    NaN (no distance) is never within. Scalars give a bool, arrays an array.
    """
    da = np.asarray(distance_ft, dtype="float64")
    la = np.asarray(limit_ft, dtype="float64")
    with np.errstate(invalid="ignore"):
        out = da <= la + tol_ft
    return bool(out) if out.ndim == 0 else out


def utilization_class(utilization: Any, capacity_gpd: Any, threshold: float, deficient: float,
                      surcharged: float, no_capacity: Any = None) -> np.ndarray:
    """Class of each pipe: ``ok``, ``threshold``, ``deficient``, ``surcharged``,
    ``nocapacity`` (capacity 0 or not computable from a flat/adverse slope) or
    ``unknown`` (no utilization), judged with :func:`exceeds` (strictly over).

    ``no_capacity`` (optional boolean mask) marks pipes known to have no
    capacity (adverse or flat slope) whose utilization is NaN.
    Used by capacity's flags and the maps' colours alike.
    """
    u = np.asarray(utilization, dtype="float64")
    cap = np.asarray(capacity_gpd, dtype="float64")
    out = np.full(u.shape, "ok", dtype=object)
    out[exceeds(u, threshold)] = "threshold"
    out[exceeds(u, deficient)] = "deficient"
    out[exceeds(u, surcharged)] = "surcharged"
    out[np.isnan(u)] = "unknown"
    if no_capacity is not None:
        out[np.asarray(no_capacity, dtype=bool) & np.isnan(u)] = "nocapacity"
    with np.errstate(invalid="ignore"):
        out[cap <= 0] = "nocapacity"
    return out
