"""Quotations of an ordinance: references into its shipped text, checked word for word.

A passage gisnet presents as the ordinance's own words (a letter's "which
reads: ...", a profile's ``*quote`` keys, a quoted phrase in a reason or in the
``law`` of a rule) must be the text's words, in the text's order, with "…"
(or ``...``) standing for words left out. :func:`quote_problem` checks one
passage against a text; :func:`quoted_passages` finds the passages in quotation
marks inside a longer sentence; :func:`profile_quote_problems` checks every quote
key of a profile against :func:`gisnet.profile.ordinance_text`.

White space is compared as one space (the texts break lines where a web page
did); letters, digits, punctuation and apostrophes are compared exactly.

Examples
--------
>>> text = "shall be connected, at the expense of the property owner, with the public sewer"
>>> quote_problem(text, "shall be connected … with the public sewer") is None
True
>>> quote_problem(text, "shall be connected with the public sewer")
"'shall be connected with the public sewer' is not in the text"
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: What stands for words left out of a quotation.
ELLIPSES = ("\u2026", "...")
#: The profile keys whose values are the ordinance's words (verbatim, "…" for omissions),
#: by table; every other text key is gisnet's summary and may quote only inside
#: quotation marks.
VERBATIM_KEYS: dict[str, tuple[str, ...]] = {
    "connection": ("quote", "applies_to_text", "text", "notice_condition", "septic_quote",
                   "septic_notice_quote", "compliance_quote", "penalty_quote",
                   "appeal_quote"),
    "limits.narrative": ("text",),
    "monthly_increase": ("text",),
}

_SPACE = re.compile(r"\s+")
#: A passage in double quotation marks (straight or curly).
_DOUBLE = re.compile(r"[\"\u201c]([^\"\u201c\u201d]+)[\"\u201d]")
#: A passage in single quotation marks: the opening mark not after a letter, the closing
#: one not before a letter (so "City's" inside a passage does not end it).
_SINGLE = re.compile(r"(?<![A-Za-z])['\u2018](.+?)['\u2019](?![A-Za-z])")


@dataclass(frozen=True)
class Quote:
    """A passage of an ordinance: the section it is in and its words.

    Attributes
    ----------
    section
        The section cited (``§ 168-22.2G``, ``sec. 16-50``).
    words
        The words, verbatim, with "…" where words are left out.
    """

    section: str
    words: str


def flat(text: str) -> str:
    """White space (line breaks, non-breaking spaces) as one space, ends stripped."""
    return _SPACE.sub(" ", text.replace("\u00a0", " ")).strip()


def pieces(words: str) -> list[str]:
    """The runs of a quotation between its omission marks (empty runs dropped)."""
    parts = [flat(words)]
    for mark in ELLIPSES:
        parts = [q for p in parts for q in p.split(mark)]
    return [p.strip(" ") for p in parts if p.strip(" ")]


def quote_problem(text: str, words: str) -> str | None:
    """None if ``words`` is a verbatim passage of ``text``, else what is wrong.

    Each run between omission marks must be found in the text, each after the
    one before (a quotation keeps the text's order). A run that opens or closes
    a quotation may begin or end mid-sentence; capitals are compared exactly, so
    a quotation that starts a sentence of its own with a capital the text does
    not have is not verbatim.

    Parameters
    ----------
    text
        The ordinance text (:func:`gisnet.profile.ordinance_text`).
    words
        The quotation.
    """
    body = flat(text)
    runs = pieces(words)
    if not runs:
        return "the quotation is empty"
    at = 0
    for run in runs:
        found = body.find(run, at)
        if found < 0:
            if body.find(run) >= 0:
                return f"{run!r} is in the text, but not after the words quoted before it"
            return f"{run!r} is not in the text"
        at = found + len(run)
    return None


def quoted_passages(sentence: str) -> list[str]:
    """The passages in quotation marks (double or single) inside a sentence."""
    out = [m[1] for m in _DOUBLE.finditer(sentence)]
    rest = _DOUBLE.sub(" ", sentence)
    out += [m[1] for m in _SINGLE.finditer(rest)]
    return [p for p in out if p.strip()]


def _strings(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, str):
        yield where, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            yield from _strings(v, f"{where}[{i}]")


def profile_quote_problems(profile: Any, text: str | None = None) -> dict[str, str]:
    """Every quotation of a profile that is not its ordinance's words: ``{key: problem}``.

    The keys of :data:`VERBATIM_KEYS` are checked whole; in every other text
    value of the profile, the passages in quotation marks are checked.

    Parameters
    ----------
    profile
        A loaded :class:`~gisnet.profile.Profile` (or a name :func:`load_profile` takes).
    text
        The ordinance text (default: :func:`gisnet.profile.ordinance_text` of the profile).
    """
    from .load import load_profile
    from .texts import ordinance_text

    prof = load_profile(profile)
    text = ordinance_text(prof) if text is None else text
    raw = prof.raw
    out: dict[str, str] = {}
    for where, value in _strings(raw, ""):
        table, _, key = where.rpartition(".")
        if key in VERBATIM_KEYS.get(re.sub(r"\[\d+\]", "", table), ()):
            if value.strip() and (p := quote_problem(text, value)) is not None:
                out[where] = p
            continue
        for passage in quoted_passages(value):
            if (p := quote_problem(text, passage)) is not None:
                out[where] = p
                break
    return out
