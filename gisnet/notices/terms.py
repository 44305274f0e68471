"""What a connection order says by law: its quotations, its deadline, and the town's blocks.

Three things are settled here before any letter is written:

- **Quotations** (:func:`quotations`): every passage a letter presents as the
  ordinance's words is a profile ``*quote`` key, a reference into the shipped
  text (section + words, "…" for words left out), checked word for word against
  :func:`gisnet.profile.ordinance_text`; a quotation that is not the text's
  words, or a section with no quotation, is an error naming the profile file and
  the key.
- **Deadlines** (:func:`deadline`): never before the letter's date, never
  sooner than the letter's date plus the ordinance's least time to comply
  (``[connection] compliance_days``, e.g. Berlin's "The time allotted for
  compliance shall not be less than thirty (30) days."). A date the rule set
  that has passed is said to be overdue, and the compliance period is given.
- **Blocks** (:func:`letter_blocks`): the signatory and title, the contact,
  the penalty and appeal (or hearing) paragraphs. Penalty and appeal are the
  profile's quotations where it has them, else the town file's ``[notices]``
  ``penalty`` / ``appeal``; signatory, title and contact always come from the
  town file. A block missing is an error listing every missing one and where
  to give it, raised before anything is written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..profile import ordinance_text
from ..profile.quotes import Quote, quote_problem
from ..townfile import NOTICE_BLOCKS


def _date(v: Any) -> dt.date | None:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    t = pd.Timestamp(v)
    return None if pd.isna(t) else t.date()


def _where(profile: Any) -> str | Path:
    return profile.path if profile.path is not None else f"profile {profile.id}"


# --------------------------------------------------------------------------- quotations


def quotations(profile: Any) -> dict[str, Quote]:
    """The quotation of each section a letter may cite, checked against the text.

    Returns
    -------
    dict
        Section -> :class:`~gisnet.profile.quotes.Quote`: the connection rule
        (``section``/``quote``), the existing-plumbing rule
        (``septic_section``/``septic_quote``), the private-system notice
        (``septic_notice_section``/``septic_notice_quote``), the compliance
        period, penalty and appeal, each where the profile has it.

    Raises
    ------
    ConfigError
        A quotation is not the ordinance's words (the message names the key and
        the words not found).
    """
    c = profile.connection
    text = ordinance_text(profile)
    out: dict[str, Quote] = {}
    for sec_key, quote_key in (("section", "quote"), ("septic_section", "septic_quote"),
                               ("septic_notice_section", "septic_notice_quote"),
                               ("compliance_section", "compliance_quote"),
                               ("penalty_section", "penalty_quote"),
                               ("appeal_section", "appeal_quote")):
        section, words = getattr(c, sec_key), getattr(c, quote_key)
        if not section or not words:
            continue
        problem = quote_problem(text, words)
        if problem is not None:
            raise ConfigError(f"[connection] {quote_key} is not the ordinance's words: "
                              f"{problem} ({profile.profile.source})", path=_where(profile))
        out.setdefault(section, Quote(section, " ".join(words.split())))
    return out


def quote_for(profile: Any, quotes: Mapping[str, Quote], section: str) -> Quote:
    """The quotation of the section a letter cites.

    Raises
    ------
    ConfigError
        The profile quotes nothing for that section.
    """
    if section in quotes:
        return quotes[section]
    key = {profile.connection.septic_section: "septic_quote",
           profile.connection.septic_notice_section: "septic_notice_quote"}.get(section, "quote")
    raise ConfigError(f"a letter cites {section}, but the profile gives no [connection] "
                      f"{key}: the ordinance's words of that section (verbatim, \u2026 where "
                      "words are left out) are needed to write it", path=_where(profile))


# --------------------------------------------------------------------------- deadlines


@dataclass(frozen=True)
class Deadline:
    """A letter's deadline.

    Attributes
    ----------
    days
        Days from the letter's date (or from the notice served before) to the date.
    date
        The date to connect by: never before the letter's date plus the least
        compliance period.
    text
        The deadline in sentences, citing where each number comes from.
    overdue_since
        The date the rule set, where it had passed on the letter's date.
    """

    days: int | None
    date: dt.date
    text: str
    overdue_since: dt.date | None = None


def compliance(profile: Any) -> tuple[int, str]:
    """``(days, section)``: the least time the ordinance allows to comply with a notice.

    Raises
    ------
    ConfigError
        The profile sets no ``[connection] compliance_days``.
    """
    c = profile.connection
    if c.compliance_days is None:
        raise ConfigError("the profile sets no [connection] compliance_days (with "
                          "compliance_section): the least time its ordinance allows to "
                          "comply with a notice, which no letter's deadline may undercut",
                          path=_where(profile))
    return int(c.compliance_days), str(c.compliance_section)


def deadline(row: Mapping[str, Any], letter_date: dt.date, profile: Any) -> Deadline:
    """The deadline of a connection order dated ``letter_date``.

    The rule's own date comes first: the date a notice served before set
    (``notice_date`` + ``deadline_days``), else ``deadline_days`` after this
    letter, else the existing-plumbing date (``septic_deadline``); an order with
    none of these (a health hazard the City finds) gets the least compliance
    period. The date is then never sooner than ``letter_date`` +
    ``compliance_days``; a rule date already passed is said to be overdue.
    """
    least, least_section = compliance(profile)
    floor = letter_date + dt.timedelta(days=least)
    days = row.get("deadline_days")
    days = None if days is None or pd.isna(days) else int(days)
    served, due_served = _date(row.get("notice_date")), _date(row.get("deadline_date"))
    septic = _date(row.get("septic_deadline"))
    period = (f"the ordinance allows no less than {least} days to comply "
              f"({least_section})")
    if served is not None and due_served is not None:
        why = f"official notice was served on {served.isoformat()}"
        rule_date, basis = due_served, (f"{why}; the connection was due within {days} days, "
                                        f"by {due_served.isoformat()}" if days is not None
                                        else f"{why}; it set {due_served.isoformat()}")
    elif days is not None:
        due = letter_date + dt.timedelta(days=days)
        if due >= floor:
            return Deadline(days, due, f"Connect within {days} days after the date of this "
                                       f"notice ({letter_date.isoformat()}): by "
                                       f"{due.isoformat()}.")
        return Deadline(least, floor, f"Connect by {floor.isoformat()}: {days} days after "
                                      f"this notice, but {period}.")
    elif septic is not None:
        years = profile.connection.septic_max_years
        rule_date = septic
        basis = (f"the {years}-year limit for existing plumbing "
                 f"({profile.connection.septic_section}) falls on {septic.isoformat()}")
    else:
        return Deadline(least, floor, f"Connect within {least} days after the date of this "
                                      f"notice ({letter_date.isoformat()}): by "
                                      f"{floor.isoformat()}; {period}.")
    if rule_date < letter_date:
        return Deadline(least, floor,
                        f"The connection is overdue since {rule_date.isoformat()}: {basis}. "
                        f"Connect within {least} days after the date of this notice, by "
                        f"{floor.isoformat()}; {period}.", overdue_since=rule_date)
    if rule_date < floor:
        return Deadline(least, floor, f"{basis[:1].upper()}{basis[1:]}; {period}: connect "
                                      f"by {floor.isoformat()}.")
    return Deadline((rule_date - letter_date).days, rule_date,
                    f"{basis[:1].upper()}{basis[1:]}: connect by {rule_date.isoformat()}.")


# --------------------------------------------------------------------------- blocks


def town_blocks(town: Any) -> dict[str, str]:
    """The ``[notices]`` blocks of the town file (empty without a town file)."""
    tf_path = getattr(getattr(town, "settings", None), "extra", {}).get("town_file")
    if tf_path is None or not Path(tf_path).is_file():
        return {}
    from ..townfile import read_town_file

    return dict(read_town_file(tf_path).notice_blocks)


def letter_blocks(town: Any, given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The blocks a town puts its name to: signatory, title, contact, penalty, appeal.

    Parameters
    ----------
    town
        The loaded town (its town file's ``[notices]`` and its profile).
    given
        Blocks given directly (override the town file's), by the keys of
        :data:`gisnet.townfile.NOTICE_BLOCKS`.

    Returns
    -------
    dict
        ``signatory``, ``title``, ``contact``, ``penalty``, ``appeal``: the
        penalty and appeal paragraphs in the ordinance's words with their
        section where the profile quotes them, else the town's own text.

    Raises
    ------
    ConfigError
        A block is missing: every missing one is named with where to give it.
    """
    prof = town.profile
    c = prof.connection
    own = {**town_blocks(town), **(dict(given) if given else {})}
    unknown = sorted(set(own) - set(NOTICE_BLOCKS))
    if unknown:
        raise ConfigError(f"unknown letter block {unknown[0]!r}; blocks are "
                          f"{', '.join(NOTICE_BLOCKS)}")
    quotes = quotations(prof)
    out = {k: own[k] for k in ("signatory", "title", "contact") if own.get(k)}
    for k in ("penalty", "appeal"):
        section = getattr(c, f"{k}_section")
        if own.get(k):
            out[k] = own[k]
        elif section in quotes:
            out[k] = f"{section} reads: \u201c{quotes[section].words}\u201d"
    missing = [k for k in NOTICE_BLOCKS if k not in out]
    if missing:
        where = town.settings.extra.get("town_file") if hasattr(town, "settings") else None
        raise ConfigError(
            "a connection order must carry these blocks, and the town file gives none: "
            + "; ".join(f"[notices] {k} ({NOTICE_BLOCKS[k]})" for k in missing)
            + ". Give them in the town file's [notices] table; nothing was written",
            path=where or "gisnet.toml")
    return out
