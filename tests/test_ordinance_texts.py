"""The ordinance texts shipped in ``gisnet/ordinances``: verbatim copies, read by
:func:`gisnet.profile.ordinance_text`, and every section a profile cites found in them.

Neither text prints its section headings (``gisnet/ordinances/README.md``, "How the
sections are cited"): Poughkeepsie's sections are the runs of subsection letters that
start again at ``A.``, Berlin's numbers appear only in cross-references, its definitions
and one list of discharge prohibitions are numbered. The checks below find each citation
in that form, and the falsified citations at the end show they can fail.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path

import pytest

from gisnet.errors import ConfigError
from gisnet.profile import (
    builtin_ordinances,
    builtin_profiles,
    load_profile,
    ordinance_text,
    profile_from_dict,
)

README = Path(__file__).resolve().parents[1] / "gisnet" / "ordinances" / "README.md"
#: SHA-256 of the texts as gathered (the files the profiles were written from).
SHA256 = {
    "poughkeepsie-fourth-ward.txt":
        "d22a1296a02ab1be864e12dee593adf17c91e106f13567f8a638f25900153669",
    "berlin-nh.txt": "81683ca2397ff097b3ba962c5c1ea45053820c416e2d8a6cbc81af006f29b8af",
}


# --------------------------------------------------------------------------- the files


def test_shipped_texts_are_the_verbatim_copies() -> None:
    assert builtin_ordinances() == ["ordinances/berlin-nh.txt",
                                    "ordinances/poughkeepsie-fourth-ward.txt"]
    readme = README.read_text(encoding="utf-8")
    for name, digest in SHA256.items():
        data = resources.files("gisnet").joinpath("ordinances", name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
        assert f"{digest}  {name}" in readme, name
        assert b"\r" not in data  # "\n" line ends, as gathered


def test_each_profile_reads_its_own_text() -> None:
    assert builtin_profiles() == ["berlin-nh", "poughkeepsie-fourth-ward"]
    for name in builtin_profiles():
        prof = load_profile(name)
        assert prof.profile.source == f"ordinances/{name}.txt"
        raw = resources.files("gisnet").joinpath("ordinances", f"{name}.txt").read_bytes()
        assert ordinance_text(prof) == ordinance_text(name) == raw.decode("utf-8")
    pk = ordinance_text("poughkeepsie-fourth-ward")
    assert "the Fourth Ward Sewer Improvement Area of the Town of Poughkeepsie" in pk
    assert "within 300 feet of the property line" in pk
    be = ordinance_text("berlin-nh")
    assert be.startswith("City of Berlin, NH - Chapter 16\n")
    assert "two hundred (200) feet of the building measured on a straight line" in be


def _own(tmp_path: Path, source: str) -> object:
    """Berlin's profile as if read from tmp_path/own.toml, with another source."""
    raw = load_profile("berlin-nh").raw
    raw["profile"]["source"] = source
    return profile_from_dict(raw, path=tmp_path / "own.toml")


def test_a_town_profile_reads_its_own_text_or_a_shipped_one(tmp_path: Path) -> None:
    words = "Sec. 1. Every building within 150 feet shall connect.\r\n\u00a7 2. Fees\r\n"
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "ours.txt").write_bytes(words.encode("utf-8"))
    # beside the profile file, line ends untouched
    assert ordinance_text(_own(tmp_path, "texts/ours.txt")) == words
    # an absolute path
    assert ordinance_text(_own(tmp_path, str(tmp_path / "texts" / "ours.txt"))) == words
    # a copied built-in profile, its text not beside it: the shipped text
    copied = _own(tmp_path, "ordinances/berlin-nh.txt")
    assert ordinance_text(copied) == ordinance_text("berlin-nh")
    # a text of the same name beside the profile wins over the shipped one
    (tmp_path / "ordinances").mkdir()
    (tmp_path / "ordinances" / "berlin-nh.txt").write_text("amended text\n", encoding="utf-8")
    assert ordinance_text(copied) == "amended text\n"


@pytest.mark.parametrize("source,words", [
    ("missing.txt", "no such ordinance text (looked beside the profile file and among the "
                    "shipped texts: ordinances/berlin-nh.txt, ordinances/poughkeepsie-"),
    ("/nowhere/ord.txt", "no such ordinance text (looked at that path)"),
    ("https://example.org/code/ch16", "is a URL"),
    ("latin1.txt", "is not UTF-8 text"),
])
def test_an_unreadable_source_is_a_config_error(tmp_path: Path, source: str, words: str) -> None:
    (tmp_path / "latin1.txt").write_bytes("Ordonnance \u00e9t\u00e9".encode("latin-1"))
    with pytest.raises(ConfigError) as exc:
        ordinance_text(_own(tmp_path, source))
    msg = str(exc.value)
    assert words in msg and repr(source) in msg
    assert msg.startswith(str(tmp_path / "own.toml"))


# --------------------------------------------------------------------------- the sections


def _section_strings(node: object, where: str = "") -> list[tuple[str, str]]:
    """(key, value) of every section citation of a parsed profile: keys ``section`` and
    ``*_section``, and every entry of a ``sections`` table."""
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            w = f"{where}.{k}" if where else k
            if isinstance(v, str) and (k == "section" or k.endswith("_section")
                                       or where.endswith("sections")):
                out.append((w, v))
            else:
                out.extend(_section_strings(v, w))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_section_strings(v, f"{where}[{i}]"))
    return out


#: Poughkeepsie's lettered runs, in order, are these sections of ch. 168 (22.6 - 22.8
#: have no lettered subsections; 22.7 is an editor's note of its repeal).
POUGH_RUNS = ("22.1", "22.2", "22.3", "22.4", "22.5", "22.9", "22.10")


def _outline(text: str) -> dict[str, dict[str, dict]]:
    """Poughkeepsie's text as {section: {letter: {"items": {n: {sub, ...}}, "lines": [...]}}}.

    Letters (``A.``), items (``(1)``) and sub-items (``(a)``) stand alone on their line,
    followed by a non-breaking space; the line after holds their words.
    """
    runs: list[dict[str, dict]] = []
    letter = item = None
    for line in text.splitlines():
        s = line.strip()
        if m := re.fullmatch(r"([A-Z])\.", s):
            if m[1] == "A":
                runs.append({})
            assert chr(ord("A") + len(runs[-1])) == m[1], f"letter {m[1]} out of order"
            letter, item = runs[-1].setdefault(m[1], {"items": {}, "lines": []}), None
        elif m := re.fullmatch(r"\((\d+)\)", s):
            item = letter["items"].setdefault(m[1], set())
        elif m := re.fullmatch(r"\(([a-z])\)", s):
            item.add(m[1])
        elif letter is not None:
            letter["lines"].append(s)
    assert len(runs) == len(POUGH_RUNS)
    return dict(zip(POUGH_RUNS, runs, strict=True))


POUGH_REF = re.compile(r"§ 168-(\d+\.\d+)([A-Z])?(?:\((\d+)\))?(?:\(([a-z])\))?")
#: A defined term named with a citation: "(BUILDING DRAIN)", "(NORMAL SEWAGE: ...",
#: "definition of SLUDGE".
POUGH_TERM = re.compile(r"\(([A-Z][A-Z ]*[A-Z])[:)]|definition of ([A-Z][A-Z ]*[A-Z])\b")


def _poughkeepsie_problems(value: str, outline: dict) -> tuple[int, list[str]]:
    """(citations checked, problems) of one Poughkeepsie section string."""
    problems, n = [], 0
    for m in POUGH_REF.finditer(value):
        n += 1
        sec, letter, item, sub = m.groups()
        node = outline.get(sec)
        if node is None or (letter and letter not in node):
            problems.append(f"{m[0]}: no such section or letter")
        elif item and item not in node[letter]["items"]:
            problems.append(f"{m[0]}: no item ({item})")
        elif sub and sub not in node[letter]["items"][item]:
            problems.append(f"{m[0]}: no sub-item ({sub})")
    for m in POUGH_TERM.finditer(value):
        n += 1
        if (m[1] or m[2]) not in outline["22.1"]["A"]["lines"]:
            problems.append(f"{m[1] or m[2]}: not a term defined in § 168-22.1A")
    return n, problems


#: Berlin paragraphs whose number the text does not print, by the words a profile names
#: them with, and words of the paragraph.
BERLIN_PARAGRAPHS = {
    "existing-plumbing paragraph": "A resident shall be required to connect an existing "
                                   "plumbing system",
    "pro-rata share paragraph": "shall pay their pro rata share of such line or lines "
                                "before tapping",
    "DES-approval paragraph": "must be approved by DES",
    "general discharge prohibitions": "No person shall discharge or cause to be discharged",
    "enforcement paragraph (a)": "The time allotted for compliance shall not be less than "
                                 "thirty (30) days.",
    "enforcement paragraph (i)": "(i) Criminal Prosecution: Any person or industrial user",
    "appeal paragraph": "Any property owner aggrieved by any portion of this article",
    "sewer permit classes paragraph": "There shall be two (2) classes of sewer permits",
}
BERLIN_REF = re.compile(r"\b16-\d+(?:\([a-z]\))?")
BERLIN_DEF = re.compile(r"definitions, no\. (\d+)(?: \(([A-Za-z][A-Za-z ]*)[:)])?")
BERLIN_ITEM = re.compile(r"discharge prohibitions, item \((\d+)\)")


def _berlin_problems(value: str, text: str) -> tuple[int, list[str]]:
    """(citations checked, problems) of one Berlin section string."""
    problems, n = [], 0
    for m in BERLIN_REF.finditer(value):
        n += 1
        if not re.search(rf"\b{re.escape(m[0])}(?![\d(])", text):
            problems.append(f"{m[0]}: not in the text")
    for m in BERLIN_DEF.finditer(value):
        n += 1
        if not re.search(rf"^{m[1]}\. {re.escape(m[2] or '')}", text, re.M):
            problems.append(f"definition no. {m[1]} {m[2] or ''}: not in the text")
    for m in BERLIN_ITEM.finditer(value):
        n += 1
        start = text.find(BERLIN_PARAGRAPHS["general discharge prohibitions"])
        if start < 0 or not re.search(rf"^\({m[1]}\) ", text[start:], re.M):
            problems.append(f"discharge prohibition item ({m[1]}): not in the text")
    if "not printed" in value:
        named = [k for k in BERLIN_PARAGRAPHS if k in value]
        n += len(named)
        if not named:
            problems.append("names no paragraph this test knows (BERLIN_PARAGRAPHS)")
        for k in named:
            line = next((ln for ln in text.splitlines() if BERLIN_PARAGRAPHS[k] in ln), None)
            if line is None:
                problems.append(f"{k}: its words are not in the text")
            elif (m := re.match(r"(\d+\.|\(\w+\)|Sec)", line)) and m[1] not in k:
                # (an item letter the profile names, "paragraph (a)", is printed; the
                # section's number is not)
                problems.append(f"{k}: its number is printed after all")
    return n, problems


#: A section string that cites no part of its ordinance must say why: the ordinance sets
#: no such rule, or the rule is another document's.
NOT_IN_THE_TEXT = {"poughkeepsie-fourth-ward": re.compile(r"^(not set by the Poughkeepsie "
                                                          r"article|40 CFR )"),
                   "berlin-nh": re.compile(r"^(not set by the Berlin text|40 CFR )")}


def _problems(profile_id: str, value: str) -> list[str]:
    text = ordinance_text(profile_id)
    if profile_id == "poughkeepsie-fourth-ward":
        n, problems = _poughkeepsie_problems(value, _outline(text))
    else:
        n, problems = _berlin_problems(value, text)
    if n == 0 and not NOT_IN_THE_TEXT[profile_id].match(value):
        problems.append("cites nothing found in the text, and does not say why")
    return problems


def test_poughkeepsie_outline_agrees_with_the_texts_own_cross_references() -> None:
    """The numbering of the lettered runs is the text's: 22.3A and C cite 22.2G (the
    300 ft rule), 22.5D cites 22.5C, 22.9A excepts 22.6, 22.7 is a repealed section. (The
    text writes a non-breaking space after "§".)"""
    text = ordinance_text("poughkeepsie-fourth-ward")
    sec = "\u00a7\u00a0168-"
    o = _outline(text)
    assert [len(o[s]) for s in POUGH_RUNS] == [2, 8, 6, 10, 12, 3, 5]
    assert "within 300 feet of the property line" in " ".join(o["22.2"]["G"]["lines"])
    for letter in ("A", "C"):
        assert f"{sec}22.2G" in " ".join(o["22.3"][letter]["lines"])
    assert o["22.5"]["D"]["lines"][0].startswith(f"Notwithstanding the provisions of {sec}22.5C")
    assert len(o["22.5"]["C"]["items"]) == 17 and o["22.5"]["G"]["items"]["4"] == set("abcd")
    assert f"except {sec}22.6 " in " ".join(o["22.9"]["A"]["lines"])
    assert f"Former {sec}22.7, Fees, as amended, was repealed" in text
    assert "BUILDING DRAIN" in o["22.1"]["A"]["lines"]


@pytest.mark.parametrize("profile_id", ["poughkeepsie-fourth-ward", "berlin-nh"])
def test_every_section_a_profile_cites_is_in_its_text(profile_id: str) -> None:
    cited = _section_strings(load_profile(profile_id).raw)
    assert len(cited) >= 20
    bad = {key: p for key, value in cited if (p := _problems(profile_id, value))}
    assert bad == {}


@pytest.mark.parametrize("profile_id,value", [
    ("poughkeepsie-fourth-ward", "§ 168-22.5M"),              # 22.5 ends at L
    ("poughkeepsie-fourth-ward", "§ 168-22.5G(5)"),           # G has items (1)-(4)
    ("poughkeepsie-fourth-ward", "§ 168-22.5G(4)(e)"),        # (4) has (a)-(d)
    ("poughkeepsie-fourth-ward", "§ 168-22.2G(1)"),           # G has no items
    ("poughkeepsie-fourth-ward", "§ 168-22.6A"),              # 22.6 has no letters
    ("poughkeepsie-fourth-ward", "§ 168-22.1A (BUILDING LATERAL)"),
    ("poughkeepsie-fourth-ward", "Fourth Ward article, connection paragraph"),
    ("berlin-nh", "sec. 16-52"),
    ("berlin-nh", "sec. 16-99(e)"),
    ("berlin-nh", "ch. 16 definitions, no. 30"),
    ("berlin-nh", "ch. 16 definitions, no. 66 (Sludge)"),
    ("berlin-nh", "ch. 16 discharge prohibitions, item (8)"),
    ("berlin-nh", "ch. 16, grease-trap paragraph (number not printed)"),
    ("berlin-nh", "not set by the Poughkeepsie article"),  # the other profile's excuse
])
def test_a_citation_not_in_the_text_is_caught(profile_id: str, value: str) -> None:
    assert _problems(profile_id, value)
