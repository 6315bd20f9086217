"""Which identifiers of an original record survive in its released version (the leak check).

For each identifier found in the original (a detection: its category and surface), the
released record is searched for it: the whole surface as a word sequence (case-folded); for
a name (PERSON, DENY_LIST, a capitalised RESIDUAL word) also each of its words of three
letters or more that is not an ordinary word or a title ("Sister"), as written (a surname
alone is a leak); for a value with four digits or more, its digits in any run of digits and
separators of the release, dashes included ("212-555-0187" survives as "(212) 555 0187" and
as "212\u2013555\u20130187"). Every number of four digits or more of the original is looked
up the same way (category ``NUMBER``), except a lone year (1900-2099), which Safe Harbor
allows, and a measurement ("1000 mg"). The result names categories and positions, never
values; identifiers that overlap (one name found by two detectors) count once; an
identifier of one letter or digit (an initial) is not looked up. Both texts are compared in
their views (:mod:`dptext.detect.normalize`): an identifier obfuscated in the original
("Sm\u200bith", "\uff15\uff15\uff15-0142") survives when the release has it plain, and the
other way round.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from dptext.detect.normalize import fold, fold_text
from dptext.detect.residual import UNIT_AFTER
from dptext.detect.vocabulary import TITLE_WORDS

NUMBER = "NUMBER"
_NAMEISH = frozenset({"PERSON", "DENY_LIST", "RESIDUAL"})
# in a release, hyphens, dashes and the minus sign (U+2010-U+2015, U+2212) separate digits too
_DIGIT_GROUP = re.compile(r"\d[\d\s().\-/\u2010-\u2015\u2212]*\d|\d")
_NUMBER = re.compile(r"\d(?:[\d\-./ ]*\d)?")
_YEAR = re.compile(r"(?:19|20)\d\d")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*\]")


@dataclass(frozen=True)
class Survivor:
    """One identifier of the original found in the release: its category and its character
    range in the original (never the value)."""

    category: str
    start: int
    end: int


def _digits(s: str) -> str:
    return "".join(c for c in s if c.isdigit())


def survivors(original: str, released: str, entities: Iterable, *,
              ordinary: frozenset[str] | None = None, numbers: bool = True) -> list[Survivor]:
    """The identifiers of ``original`` (objects with ``category``, ``start``, ``end``) found in
    ``released`` (module docstring). ``ordinary``: words never counted alone (default: the
    residual net's vocabulary)."""
    if ordinary is None:
        from dptext.detect.vocabulary import common_words  # noqa: PLC0415

        ordinary = common_words()
    released = fold_text(released)  # "Sm\u200bith" in a release is "Smith" released
    groups = [_digits(g) for g in _DIGIT_GROUP.findall(released)]
    released = _PLACEHOLDER.sub(" ", released)  # "[DATE]" is no release of the word "Date"
    low = released.casefold()
    out: list[Survivor] = []
    seen: set[tuple[int, int]] = set()

    def digits_survive(value: str) -> bool:
        d = _digits(value)
        return len(d) >= 4 and any(d in g for g in groups)

    for e in entities:
        value = fold_text(original[e.start:e.end]).strip()
        if sum(c.isalnum() for c in value) < 2 or (e.start, e.end) in seen:
            continue  # one letter (an initial) standing anywhere in the release says nothing
        if any(s.start < e.end and e.start < s.end for s in out):
            continue  # one identifier found by two detectors ("Dr. Ann Lee" and "Ann Lee")
        hit = digits_survive(value)
        if not hit and any(c.isalpha() for c in value):
            pattern = r"\s+".join(re.escape(w) for w in value.casefold().split())
            hit = re.search(rf"(?<!\w){pattern}(?!\w)", low) is not None
            if not hit and e.category in _NAMEISH:
                hit = any(len(w) >= 3 and w.casefold() not in ordinary
                          and w.casefold() not in TITLE_WORDS
                          and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", released)
                          for w in _WORD.findall(value))
        if hit:
            seen.add((e.start, e.end))
            out.append(Survivor(e.category, e.start, e.end))
    if numbers:
        view = fold(original)
        for m in _NUMBER.finditer(view.text):
            value = m.group()
            if _YEAR.fullmatch(value) or len(_digits(value)) < 4 or \
                    UNIT_AFTER.match(view.text, m.end()):
                continue
            start, end = view.to_original(*m.span())
            if any(s.start <= start < s.end for s in out):
                continue
            if digits_survive(value):
                out.append(Survivor(NUMBER, start, end))
    return out
