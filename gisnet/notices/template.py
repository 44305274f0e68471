"""Letter templates of the notices: one shipped per profile, a town's own by its town file.

A template is UTF-8 text. A line starting ``# `` is a heading; blank lines
separate paragraphs; ``{name}`` is replaced by the packet's value of that
name (:data:`PLACEHOLDERS`), ``{{`` and ``}}`` are literal braces. Which
template a town uses (:func:`find_template`): ``--template FILE``, else the
town file's ``[notices] template``, else the profile's shipped
``gisnet/profiles/letters/<profile id>.txt``, else the shipped generic one
(said once). A placeholder gisnet does not know is an error naming the
template file and the placeholder, found before anything is written.

A template file is checked as a layer file is (:func:`load_template`): a
regular file (never a FIFO or a device, which would block or never end), at
most :data:`MAX_TEMPLATE_BYTES`, UTF-8 text; a template the town file names
must lie inside the town's folder (its text is printed into letters sent
out; a file elsewhere is named with ``--template`` on the command line).
``gisnet notices`` finds and checks it before the analysis starts.
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..townfile import file_problem

#: Characters of one value (address, owner ...) shown in a PDF or figure; the rest is "…".
MAX_VALUE_CHARS = 300
#: Longest run of characters without a space laid out as it is.
MAX_WORD_CHARS = 80
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}")

#: Bytes a letter template may hold (a letter of a few pages is a few kB).
MAX_TEMPLATE_BYTES = 64 * 1024

#: Folder of the shipped templates.
LETTERS_DIR = Path(__file__).resolve().parents[1] / "profiles" / "letters"
#: The template of a profile gisnet ships none for.
GENERIC = "generic"

#: Placeholder -> what it is replaced by.
PLACEHOLDERS: dict[str, str] = {
    "parcel_id": "the parcel id",
    "address": "the parcel's address (or 'address not recorded')",
    "owner_name": "the owner of record (or 'Owner of record' when the parcels layer has none)",
    "mailing_address": "the owner's mailing address (parcels `mailing_address`, e.g. "
                       "MAIL_ADDR, OWNER_ADDR), else the property's address",
    "letter_id": "the letter's id, as entered in the register (drafted); staff quote it "
                 "when they record the notice served",
    "town": "the town's name (town file `name`)",
    "jurisdiction": "the profile's jurisdiction",
    "ordinance": "the ordinance the profile cites",
    "section": "the section that decided the parcel's status",
    "rule_text": "that section in the ordinance's words, verbatim (the profile's quote)",
    "distance": "the measured distance, e.g. '25.1 ft'",
    "distance_limit": "the profile's connection distance, e.g. '300 ft'",
    "measured_from": "'property line' or 'building' (what the distance was measured from)",
    "measure_text": "how it was measured, e.g. 'from the property line, straight line'",
    "main_id": "the sewer main measured to",
    "abutting_text": "whether the parcel abuts a street holding the sewer, in a sentence",
    "status_label": "the parcel's status in words (gisnet.labels; staff-facing)",
    "reason": "gisnet's one-sentence reason for the status (staff-facing: not for an owner)",
    "notice_date": "the date of this notice (YYYY-MM-DD)",
    "notice_served": "the date official notice was served before, where the parcels layer "
                     "records one (else empty)",
    "deadline_days": "days after the notice to connect (empty where none applies)",
    "deadline_date": "date to connect by (empty where none applies)",
    "deadline_text": "the deadline in sentences, citing the ordinance's least compliance period",
    "overdue_since": "the date the rule set, where it had passed (else empty)",
    "ground_text": "the ground the order stands on (a health hazard, a highway program ...)",
    "signatory": "who signs (town file [notices] signatory)",
    "title": "the signatory's title (town file [notices] title)",
    "contact": "where the owner asks questions (town file [notices] contact)",
    "penalty": "the penalty paragraph: the profile's quotation, else the town file's",
    "appeal": "the appeal or hearing paragraph: the profile's quotation, else the town file's",
}


@dataclass(frozen=True)
class Template:
    """A letter template: its text, the file it came from and how it was chosen."""

    text: str
    path: Path
    origin: str  # "--template", "town file", "profile", "generic"

    def render(self, values: dict[str, Any]) -> str:
        """The letter of one packet (every placeholder is known: :func:`load_template`)."""
        return self.text.format_map({k: ("" if v is None else v) for k, v in values.items()})


def placeholders(text: str, path: Path) -> list[str]:
    """The placeholder names in ``text`` (in order, repeated ones once).

    Raises
    ------
    ConfigError
        A malformed template (an unmatched brace), or a placeholder with a
        format spec, conversion or attribute (only ``{name}`` is allowed).
    """
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ConfigError(f"letter template is malformed ({exc}); write literal braces as "
                          "{{ and }}", path=path) from None
    out: list[str] = []
    for _lit, name, spec, conv in parsed:
        if name is None:
            continue
        if spec or conv or not name.isidentifier():
            raise ConfigError(f"letter template placeholder {{{name}}} is not a plain "
                              "{name}; write {name} only", path=path)
        if name not in out:
            out.append(name)
    return out


def load_template(path: str | os.PathLike[str], origin: str = "--template",
                  folder: str | os.PathLike[str] | None = None) -> Template:
    """Read and check a letter template.

    Parameters
    ----------
    path
        The template file.
    origin
        How it was chosen (``--template``, ``town file``, ``profile``, ``generic``).
    folder
        The folder the template must lie in (the town's folder, for a template
        the town file names), or None.

    Raises
    ------
    ConfigError
        The file is not a regular file (a FIFO, a device, a folder, missing),
        lies outside ``folder``, is over :data:`MAX_TEMPLATE_BYTES`, cannot be
        read, is not UTF-8, is empty or malformed, or uses a placeholder gisnet
        does not know (the message names the file and the placeholder).
    """
    path = Path(path)
    if folder is not None:
        inside = Path(folder).resolve()
        real = path.resolve()
        if real != inside and inside not in real.parents:
            raise ConfigError(f"the letter template the town file names lies outside the town "
                              f"folder {inside}; keep it inside, or give it with --template",
                              path=path)
    problem = file_problem(path)
    if problem is not None:
        raise ConfigError(f"letter template {problem}", path=path)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read the letter template: {exc.strerror or exc}",
                          path=path) from None
    if len(data) > MAX_TEMPLATE_BYTES:
        raise ConfigError(f"letter template is over {MAX_TEMPLATE_BYTES // 1024} KiB; a letter "
                          "template is a few pages of text", path=path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("letter template is not UTF-8 text", path=path) from None
    if "\x00" in text:
        raise ConfigError("letter template is not text (it holds NUL bytes)", path=path)
    unknown = [n for n in placeholders(text, path) if n not in PLACEHOLDERS]
    if unknown:
        raise ConfigError(f"unknown placeholder {{{unknown[0]}}} in the letter template; "
                          f"placeholders are: {', '.join(PLACEHOLDERS)}", path=path)
    if not text.strip():
        raise ConfigError("letter template is empty", path=path)
    return Template(text, path, origin)


def find_template(town: Any, override: str | os.PathLike[str] | None = None) -> Template:
    """The letter template of ``town`` (see the module docstring for the order)."""
    if override is not None:
        return load_template(override, "--template")
    tf_path = town.settings.extra.get("town_file")
    if tf_path is not None and Path(tf_path).is_file():
        from ..townfile import read_town_file

        tf = read_town_file(tf_path)
        if tf.notice_template is not None:
            return load_template(tf.notice_template, "town file", folder=Path(tf_path).parent)
    shipped = LETTERS_DIR / f"{town.profile.profile.id}.txt"
    if shipped.is_file():
        return load_template(shipped, "profile")
    return load_template(LETTERS_DIR / f"{GENERIC}.txt", "generic")


def shorten(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, ending in "…" when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def breakable(text: str) -> str:
    """``text`` with a space every :data:`MAX_WORD_CHARS` characters of any longer
    run without one, so that a line can break there."""
    return _LONG_WORD.sub(lambda m: " ".join(
        m.group(0)[i:i + MAX_WORD_CHARS] for i in range(0, len(m.group(0)), MAX_WORD_CHARS)),
        text)


def paragraphs(letter: str) -> list[tuple[str, str]]:
    """A rendered letter as ``(kind, text)`` blocks: ``heading`` or ``para``
    (the lines of a paragraph joined by line breaks kept as ``\\n``)."""
    blocks: list[tuple[str, str]] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(("para", "\n".join(para)))
            para.clear()

    for line in letter.splitlines():
        if line.startswith("# "):
            flush()
            blocks.append(("heading", line[2:].strip()))
        elif not line.strip():
            flush()
        else:
            para.append(line.rstrip())
    flush()
    return blocks
