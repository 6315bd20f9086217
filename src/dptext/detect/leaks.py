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

**Independent evidence** (:func:`evidence_survivors`, on by default - in ``dptext check``
and ``sanitize --check``; a measurement against gold spans, ``numbers=False``, leaves it
out): a check that only looks up what the release's own detectors found shares their blind
spots, so every token of the original that survives verbatim in the release is also weighed
by evidence those detectors did not use, each a category of its own:

- ``NAME_LIST``: a name of the 105 countries' lists (:mod:`dptext.detect.namelists`) outside
  the frequent English words, or of Faker's outside the 3,000 most frequent, capitalised away
  from the start of a sentence, a line or a field, or in lower case right after a word that
  announces a name ("seen by Kayode", "pt chidi");
- ``CAPITALISED``: a capitalised word away from the start of a sentence, a line or a field,
  none of whose parts is among the 25,000 most frequent English words or clinical or medical
  vocabulary ("seen by Thornbury");
- ``RARE_WORD``: a lower-case word of four letters or more that public English text does not
  know (wordfreq's ~320,000 words; not of a medical shape) right after such a word (a typo
  elsewhere is no identifier);
- ``NUMBER``: a run of four digits or more, as above;
- ``LEARNED``: a span of the learned detector (:mod:`dptext.detect.learned`), where it is
  installed and asked for.

Clinical content is never evidence (:func:`dptext.detect.clinical.clinical_spans`: "I48.91",
"CPT 99213", "0800", "K 3.9", "Crohn's disease" are kept by design), nor a title, a month or
a section header. In this mode the detectors' own survivors are kept only where they are
credible identifiers (:func:`_credible`): a date with a year or a month name, an age over 89,
four digits or more, an address, e-mail, URL or IP, a name, place or organisation with a word
that may name someone (:func:`_name_like`: not an ordinary English word, or a name of the
lists capitalised away from a sentence's start) - a check must not cry wolf on every
ordinary word a detector over-reached on ("Trace", "MD", "pain 10/10").
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
              ordinary: frozenset[str] | None = None, numbers: bool = True,
              evidence: bool | None = None, learned=None) -> list[Survivor]:
    """The identifiers of ``original`` (objects with ``category``, ``start``, ``end``) found in
    ``released`` (module docstring), and with ``evidence`` the tokens the independent
    evidence marks (:func:`evidence_survivors`; ``learned``: a recognizer whose spans are
    evidence too; by default with ``numbers``: a measurement against gold spans, which passes
    ``numbers=False``, looks those spans up alone). ``ordinary``: words never counted alone
    (default: the residual net's vocabulary)."""
    if evidence is None:
        evidence = numbers
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
        from dptext.detect.clinical import Coverage

        view = fold(original)
        cov = Coverage(original)  # "I48.91" reads "148.91" in the view: codes in the original
        for m in _NUMBER.finditer(view.text):
            value = m.group()
            if _YEAR.fullmatch(value) or len(_digits(value)) < 4 or \
                    UNIT_AFTER.match(view.text, m.end()):
                continue
            start, end = view.to_original(*m.span())
            if sum(c.isdigit() and not cov.mask[i] for i, c in
                   enumerate(original[start:end], start)) < 4:
                continue  # four digits or more outside clinical content ("O24.419   3")
            if any(s.start <= start < s.end for s in out):
                continue
            if digits_survive(value):
                out.append(Survivor(NUMBER, start, end))
    if evidence:
        out = _credible(original, out)
        taken = bytearray(len(original))
        for s in out:
            taken[s.start:s.end] = b"\x01" * (s.end - s.start)
        out += [s for s in evidence_survivors(original, released, learned=learned)
                if taken.find(1, s.start, s.end) < 0]
    return out


_MONTHS = frozenset("january february march april may june july august september october "
                    "november december jan feb mar apr jun jul aug sep sept oct nov dec "
                    "monday tuesday wednesday thursday friday saturday sunday".split())
_DATE_SHAPE = re.compile(r"(?i)\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}|\d{8}|"
                         r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?[\s-]*\d|"
                         r"\d[\s-]*(?:st|nd|rd|th)?\s*(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|"
                         r"aug|sep|oct|nov|dec)|(?:first|second|third|\w+th)\s+of\s+[a-z]")
_DIGITS4 = re.compile(r"\d(?:\D?\d){3}")
_ANNOUNCED_BEFORE = re.compile(
    r"(?i)\b(?:pt|pt's|patient|per|seen by|spoke with|spoke to|called|wife|husband|spouse|"
    r"partner|son|daughter|mother|father|mom|dad|sister|brother|niece|nephew|aunt|uncle|cousin|grandson|granddaughter|"
    r"friend|dr|mr|mrs|ms|rn|np|md|attending|resident|name|contact|"
    r"(?:dictated|transcribed|typed|entered|signed|reviewed|written)[ \t]+by)[.:,]?[ \t]+$")


def _name_like(text: str, start: int, end: int, place: bool = False,
               person: bool = True) -> bool:
    """Whether a word a detector found may name someone or somewhere - every word but the
    ordinary ones: clinical, medical or title words, months, an English word (wordfreq's
    25,000 most frequent) that no name list holds (for a place: unless capitalised within a
    sentence and not among the 3,000 most frequent), a known English word in capitals ("TRIAGE")
    or opening a sentence, a line or a field ("Osseous", "Trace") that no list holds, and a
    listed name that is among the 3,000 most frequent English words opening one."""
    from dptext.detect.namelists import english_top, everyday_words, rare_listed
    from dptext.detect.vocabulary import (
        TITLE_WORDS,
        is_clinical,
        is_medical_word,
        known_words,
        name_list,
    )

    word = fold_text(text[start:end]).strip(".'’-")  # "Sm\u200bith" is "Smith"
    low = word.casefold()
    if len(word) < 2 or low in TITLE_WORDS or low in _MONTHS or is_clinical(word) or \
            not word.replace("-", "").isalpha():
        return False
    parts = [p for p in low.split("-") if p]
    if any(is_clinical(p) or is_medical_word(p) for p in parts):
        return False
    if word.isupper() and len(word) <= 3:
        return person  # a person's initials ("JQ"; "MD", "ED" are clinical above)
    named = low in name_list() or low in rare_listed()
    opening = word[0].isupper() and bool(_SENTENCE_START.search(text, max(0, start - 6), start))
    common = all(p in english_top() for p in parts)
    if word.islower():  # a name in lower case: after a word that announces one, or listed
        return bool(_ANNOUNCED_BEFORE.search(text, max(0, start - 24), start)) or (
            named and not common) or (person and (
                (named and low not in everyday_words()) or (len(low) <= 3 and common is False)))
    if named:
        if place and word[0].isupper() and not opening:
            return True  # "from Boston": a place's name within a sentence
        return not (opening and common) and not (common and low in everyday_words())
    if common:
        # a place's name is often an English word too ("Bangor", "Boston"): capitalised
        # within a sentence, a city of the GeoNames gazetteer or outside the 3,000 most
        # frequent words, it still names one
        if not (place and word[0].isupper() and not opening):
            return False
        from dptext.detect.places import gazetteer

        cities = gazetteer() or frozenset()
        return low in cities or low not in everyday_words()
    if (word.isupper() or opening) and all(p in known_words() for p in parts):
        return False
    return True


def _credible(original: str, found: list[Survivor]) -> list[Survivor]:
    """The survivors a check reports (module docstring): not clinical content; a date with a
    year or a month; an age over 89; a number of four digits or more; an address, e-mail,
    URL, IP; a name, place or organisation with a name-like word (:func:`_name_like`)."""
    from dptext.detect.clinical import Coverage

    cov = Coverage(original)
    view = fold(original)
    out = []
    for s in found:
        value = original[s.start:s.end]
        if cov.inside(s.start, s.end):
            continue
        if s.category == "DATE":
            ok = bool(_DATE_SHAPE.search(value))
        elif s.category == "AGE":
            ok = any(int(d) > 89 for d in re.findall(r"\d+", value))
        elif s.category in ("EMAIL_ADDRESS", "URL", "IP_ADDRESS", "STREET_ADDRESS"):
            ok = True
        elif any(c.isdigit() for c in value):
            ok = bool(_DIGITS4.search(value)) or s.category == "ZIP_CODE"
        else:
            place = s.category in ("GPE", "LOC", "FAC", "ORG", "NORP")
            a, b = view.to_view(s.start, s.end)  # words read in the view ("Sm\u200bithers")
            ok = any(_name_like(view.text, a + m.start(), a + m.end(), place,
                                s.category in ("PERSON", "DENY_LIST"))
                     for m in _TOKEN.finditer(view.text[a:b]))
        if ok:
            out.append(s)
    return out


_TOKEN = re.compile(r"[^\W\d_][\w'’-]*[^\W_]|[^\W\d_]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;|•*>\-\n\t(\[\"]|[ \t]{2})[ \t\"'(]*$")
_RELEASED_WORD = re.compile(r"[^\W_][\w'’-]*[^\W_]|[^\W_]")


def evidence_survivors(original: str, released: str, *, learned=None) -> list[Survivor]:
    """The tokens of ``original`` that survive verbatim (the same surface as a whole word) in
    ``released`` and are identifier-like by evidence independent of the detectors (module
    docstring). Positions are in the original; never a value."""
    from dptext.detect.clinical import Coverage
    from dptext.detect.namelists import english_top, everyday_words, rare_listed
    from dptext.detect.vocabulary import (
        TITLE_WORDS,
        frequent_words,
        is_clinical,
        is_medical_word,
        known_words,
        name_list,
    )

    view = fold(original)
    text = view.text
    kept = set(_RELEASED_WORD.findall(_PLACEHOLDER.sub(" ", fold_text(released))))
    if not kept:
        return []
    cov = Coverage(original)
    frequent, listed, faker = frequent_words(), rare_listed(), name_list()
    out: list[Survivor] = []
    for m in _TOKEN.finditer(text):
        word = m.group()
        if word not in kept or len(word) < 2 or cov.inside(*view.to_original(*m.span())):
            continue
        low = word.casefold()
        if low in TITLE_WORDS or is_clinical(word) or low in frequent:
            continue
        kind = None
        capital = word[0].isupper() and any(c.islower() for c in word) and \
            not _SENTENCE_START.search(text, max(0, m.start() - 6), m.start())
        announced = word.islower() and bool(
            _ANNOUNCED_BEFORE.search(text, max(0, m.start() - 16), m.start()))
        if low in _MONTHS or is_medical_word(low) or any(
                is_clinical(p) for p in low.split("-") if p):
            continue
        if (low in listed or (low in faker and low not in everyday_words())) and (
                capital or announced):
            kind = "NAME_LIST"
        elif capital and all(p not in english_top() for p in low.split("-") if p):
            kind = "CAPITALISED"
        elif announced and len(word) >= 4 and word.isalpha() and low not in known_words():
            kind = "RARE_WORD"
        if kind is not None:
            out.append(Survivor(kind, *view.to_original(*m.span())))
    if learned is not None:
        place = ("GPE", "LOC", "FAC", "ORG")
        for e in learned.find(text):
            a, b = view.to_original(e.start, e.end)
            if cov.inside(a, b) or any(s.start < b and a < s.end for s in out):
                continue
            # a word of the span that survives and may name someone or somewhere, or four
            # digits that survive (the learned detector's own errors are ordinary words)
            value = text[e.start:e.end]
            digits = _digits(value)
            hit = len(digits) >= 4 and any(digits in _digits(w) for w in kept if w[:1].isdigit())
            hit = hit or any(m.group() in kept and _name_like(
                text, e.start + m.start(), e.start + m.end(), e.category in place,
                e.category == "PERSON") for m in _TOKEN.finditer(value))
            if hit:
                out.append(Survivor("LEARNED", a, b))
    return out
