"""Where a sample was taken decides which limit applies; standards in words only.

A profile may give one quantity several limits at different places: Berlin's
discharge prohibition (7) limits wastewater to 150 degF, "but in no case
wastewater that causes the temperature at the introduction into the POTW
treatment plant to exceed 104°F". :func:`limits_at` picks, for a sample point
(the plant's influent, or a structure of the sewer), the limits of that place
and the kind of finding a result beyond each gives.

Some standards have no number: Poughkeepsie § 168-22.5C(7) (phenols "in such
quantities that the aggregate of contributions ... creates treatment
difficulties") and C(2) (grease or oil that would solidify), Berlin's item (5).
A result of such a parameter (the profile's ``[[limits.narrative]]``) is
reported as ``narrative``, and where it might be taken for a numeric limit it is
not (total oil and grease against C(3)'s emulsified oil and grease) as
``not_comparable`` (:func:`narrative_rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .findings import lines, row
from .parameters import CANONICAL_UNIT, Limit

if TYPE_CHECKING:  # pragma: no cover
    from ..profile import Profile

#: The sample points: the sewage as it arrives at the treatment plant, and a
#: structure (manhole) of the sewer.
PLANT_INFLUENT = "plant_influent"
SEWER = "sewer"


def limits_at(limits: list[Limit], at_plant: bool) -> list[tuple[Limit, str]]:
    """The limits of one quantity that apply at a sample point, with the kind of row
    a result beyond each gives.

    At the plant's influent: the limits for there (``where = "plant_influent"``)
    and those with no place are ``exceedance``; a limit for the sewer
    (``where = "sewer"``) applies there only where the quantity has no limit of the
    plant's own. At a structure of the sewer: the sewer's limits and those with no
    place are ``exceedance``; a limit on the plant's influent only screens
    (``screening_exceedance``). A normal-strength line is ``above_normal_strength``
    anywhere (the basis of surcharge, not a prohibition).

    Parameters
    ----------
    limits
        The limits of one quantity (:func:`gisnet.sampling.parameters.profile_limits`).
    at_plant
        The sample was taken at a plant's influent.
    """
    own_plant_limit = any(x.where == PLANT_INFLUENT for x in limits)
    out: list[tuple[Limit, str]] = []
    for x in limits:
        if x.basis == "normal_strength":
            out.append((x, "above_normal_strength"))
        elif at_plant:
            if x.where == SEWER and own_plant_limit:
                continue
            out.append((x, "exceedance"))
        else:
            out.append((x, "screening_exceedance" if x.where == PLANT_INFLUENT
                        else "exceedance"))
    return out


def narrative_names(profile: Profile) -> set[str]:
    """The parameters the profile limits in words only (``[[limits.narrative]]``)."""
    return {n.name for n in profile.limits.narrative or ()}


def narrative_rows(profile: Profile, df: pd.DataFrame, slug_note: str = ""
                   ) -> list[dict[str, Any]]:
    """One ``narrative`` row per parameter limited in words only, with its results.

    Parameters
    ----------
    profile
        The town's profile (``[[limits.narrative]]``, ``[[limits.parameter]]``).
    df
        The results (``param``, ``dim``, ``cvalue``, ``value``, ``unit``, ``line``).
    slug_note
        Said of the results where the slug rule still measures them (Berlin's
        slug is "any given constituent").

    Returns
    -------
    list of dict
        Rows of kind ``narrative``: rule ``narrative``, or ``not_comparable``
        where the entry names a numeric limit its results are not comparable with.
    """
    out: list[dict[str, Any]] = []
    for n in profile.limits.narrative or ():
        g = df[df["param"] == n.name]
        if not len(g):
            continue
        worst = _worst(g)
        said = (f"{len(g)} result(s) of {n.name}" + (f", highest {worst[0]:g} {worst[1]}"
                                                    if worst else ""))
        words = f"{n.section} limits it in words only, not by a number: \"{n.text}\""
        rule = "narrative"
        msg = f"{said}: {words}; not judged against a number, a person judges them"
        other = profile.limit(n.not_comparable_with) if n.not_comparable_with else None
        if other is not None:
            rule = "not_comparable"
            limit = f"{other.max:g} {other.unit}" if other.max is not None else "limit"
            quoted = f" (\"{other.text}\")" if other.text else ""
            msg = (f"{said}: not {other.name}; the {limit} of {other.section}{quoted} is on "
                   f"{other.name.replace('_', ' ')} only, so these results are not comparable "
                   f"with it; {words}")
        out.append(row("narrative", rule, parameter=n.name, lines=lines(g),
                       n_samples=len(g), value=None if worst is None else worst[0],
                       unit=None if worst is None else worst[1], section=n.section,
                       message=msg + slug_note))
    return out


def _worst(g: pd.DataFrame) -> tuple[float, str] | None:
    """The highest result of a group in its canonical unit (None if none converts)."""
    ok = g["dim"].notna() & np.isfinite(pd.to_numeric(g["cvalue"], errors="coerce"))
    if not ok.any():
        return None
    k = g.loc[ok, "cvalue"].astype(float).idxmax()
    return float(g.at[k, "cvalue"]), CANONICAL_UNIT[str(g.at[k, "dim"])]
