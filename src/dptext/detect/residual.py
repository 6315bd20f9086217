"""The residual net (Philter's allow-list idea): what no detector claimed but is not an ordinary
word is treated as an identifier of category ``RESIDUAL``.

A token outside every detected span is residual when it is

- a capitalised word (or an all-capitals one) that is not in the public vocabulary of common
  words - the 100,000 most frequent English words of ``wordfreq`` *minus* every first name and
  surname of Faker's per-locale name lists (86 locales, about 30,000 names, MIT licence) -
  so "Ferndale-Ostrowski", "Villegas" and "Brown" are residual, "Patient" and "Denies" are not
  (nor the recognizers' context words: "MRN", "SSN", "Acct");
- any token with a run of three or more digits (record numbers, extensions, codes), except a
  lone year (1900-2099, which Safe Harbor keeps) and a measurement ("500 mg", "98.6");
- a token with ``@``, or a mixed letter-digit shape ("FB59", "VP-559A"), except a number with a
  unit glued on ("5mg", "10mL", "3rd").

A lower-case word is residual only when public English text does not know it at all (not one
of wordfreq's ~320,000 English words, names included: "stiallfentiall", "yefremova") and it
has not the shape of a medical term ("bibasilar") nor a letter drawn out ("greaaat"); a
lower-case name that is also a word ("kennedy", "holmes") is left to the recognizers (after a
title, a relative, "pt", "per", in a dictation line).

A token is a run of characters between spaces and the separators of tables and lists (``,``
between letters, ``;``, ``|``, brackets, quotes): "1,Smith,John,5550142" is four tokens. A
token a detected span covers in part is looked at in the parts the span leaves ("Melikov" of
"Melikov,8 July 2020" when the date is found). Beside a residual or detected name: a lone
capital is its initial ("SMITH, JOHN A"), a surname particle between two name words is part
of it ("van den" of "Ries van den Nieuwenhuizen"), and a capitalised word outside the 25,000
most frequent English words (not a clinical term) is residual ("Takumi Maruyama", "Fleischer
Susanne": names that are also words), as is such a word beside another one.
The vocabulary is built once per process (about 2.5 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dptext.detect.categories import RESIDUAL
from dptext.detect.entities import Entity
from dptext.detect.normalize import fold
from dptext.detect.vocabulary import (
    common_words,
    frequent_words,
    is_clinical,
    is_medical_word,
    known_words,
)

_TOKEN = re.compile(r"(?:[^\s,;|<>\"()\[\]{}]|(?<=\d),(?=\d{3}(?!\d)))+")
_INITIAL = re.compile(r"[A-Z]\.?")
_SPACE = re.compile(r"[ \t]+")
_ELONGATED = re.compile(r"(.)\1\1")  # "greaaaat", "reallll": a word drawn out, no name
_LOWER_NEXT = re.compile(r"[ \t]*[a-z]")  # "Smith A new": an article, not an initial
_PARTICLE = re.compile(r"van|von|der|den|de|del|della|di|da|du|la|le|bin|ibn|al|el|ten|ter|"
                       r"dos|das|do|af|zu|y")
_PARTICLES_BETWEEN = re.compile(rf"(?:[ \t]+(?:{_PARTICLE.pattern}))*[ \t]+")
# spans a name's initial, particle or rare word may stand beside (an engine may take a
# foreign surname for a place: "Ries van den Nieuwenhuizen")
_NAMES = frozenset({"PERSON", "DENY_LIST", RESIDUAL, "GPE", "LOC", "FAC", "ORG", "NORP"})
_AFTER_NAME = re.compile(r"[ \t]*,?[ \t]*")  # "SMITH, JOHN A", "Ruiz, A."
_BEFORE_NAME = re.compile(r"\.?[ \t]*")  # "J. Smith", "J Smith"
_EDGE = re.compile(r"^[^\w@+]+|[^\w@]+$")
_DIGIT_RUN = re.compile(r"\d{3,}")
_FREQUENCY = re.compile(r"(?i)q\d{1,2}(?:-\d{1,2})?(?:h|hr|hrs|min|d|wk)")  # q6h, q4-6h
_YEAR = re.compile(r"(?:19|20)\d\d(?:s|'s)?")
_MEASURE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+")  # 1,000 and 98.6
_UNITS = ("mg|mcg|ug|g|kg|ml|l|dl|cc|cm|mm|km|m|h|hr|hrs|min|mins|sec|s|x|d|wk|wks|mo|yr|yrs|"
          "mmhg|bpm|lb|lbs|oz|iu|u|units?|meq|mmol|st|nd|rd|th|am|pm|f|c|%")
_WITH_UNIT = re.compile(rf"(?i)\d+(?:\.\d+)?(?:{_UNITS})")
UNIT_AFTER = re.compile(rf"(?i)\s*(?:{_UNITS}|percent|mg/dl|mg/kg|ml/h|mmhg|degrees|tabs?|"
                         r"tablets?|pills?|cells|beats|puffs|drops|hours?|days?|weeks?|months?|"
                         r"years?|times|minutes?|seconds?|cc|ml|kcal|calories)\b")


def _no_lookalikes(text: str, found: list[Entity]) -> list[Entity]:
    """Less the tokens inside clinical content (:mod:`dptext.detect.clinical`: "0800", "I48.91",
    "Crohn's disease", "ADMISSION DATE:")."""
    if not found:
        return found
    from dptext.detect.clinical import Coverage

    cov = Coverage(text)
    return [e for e in found if not cov.inside(e.start, e.end)] if cov.spans else found


@dataclass
class ResidualNet:
    """Finds residual tokens (module docstring) outside the given spans. ``allow``: words that
    are never identifiers (case-folded); ``vocabulary``: the ordinary words (default
    :func:`common_words`)."""

    allow: frozenset[str] = frozenset()
    vocabulary: frozenset[str] | None = None
    _vocab: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # an allowed phrase allows its words
        self.allow = frozenset(w for a in self.allow for w in [a.casefold(),
                                                               *a.casefold().split()])
        self._vocab = self.vocabulary if self.vocabulary is not None else common_words()

    def is_residual(self, token: str, after: str = "") -> bool:
        """Whether one token (edge punctuation already stripped) is residual; ``after``: the
        text that follows it (a unit after a number)."""
        low = token.casefold()
        if not token or low in self.allow:
            return False
        if "@" in token:
            return True
        has_digit = any(c.isdigit() for c in token)
        has_alpha = any(c.isalpha() for c in token)
        if has_digit and has_alpha:  # "q6h", "B12": clinical vocabulary is no identifier
            return not _WITH_UNIT.fullmatch(token) and not is_clinical(token) and \
                not _FREQUENCY.fullmatch(token)
        if has_digit:
            if not _DIGIT_RUN.search(token):
                return False
            if _YEAR.fullmatch(token) or _MEASURE.fullmatch(token):
                return False
            return not (token.isdigit() and UNIT_AFTER.match(after))
        if not token[0].isupper():
            return token.islower() and self._unknown_lower(token)
        for part in re.split(r"[-/']", token):
            low = part.casefold()
            if low in ("s", "") or low in self._vocab or low in self.allow or is_clinical(part):
                continue
            return True
        return False

    def _unknown_lower(self, token: str) -> bool:
        """A lower-case word public English text does not know (module docstring)."""
        parts = [p for p in re.split(r"[-/']", token) if p]
        return any(len(p) >= 4 and p.isalpha() and p not in known_words()
                   and not is_medical_word(p) and p not in self.allow
                   and not _ELONGATED.search(p) for p in parts)

    def find(self, text: str, spans: Sequence = ()) -> list[Entity]:
        """Residual tokens of ``text`` outside ``spans`` (objects with ``start``/``end``),
        read on the text's view (:mod:`dptext.detect.normalize`: "Sm\u200bith" is one token
        "Smith"), as spans of ``text``."""
        view = fold(text)
        if view.identity:
            return _no_lookalikes(text, self._find(text, spans))
        moved = [Entity("", getattr(s, "category", None), *view.to_view(s.start, s.end))
                 for s in spans]
        return [Entity(e.key, e.category, *view.to_original(e.start, e.end))
                for e in _no_lookalikes(view.text, self._find(view.text, moved))]

    def _find(self, text: str, spans: Sequence = ()) -> list[Entity]:
        covered = sorted((s.start, s.end) for s in spans)
        pieces: list[tuple[int, int, bool]] = []  # (start, end, residual) outside the spans
        j = 0
        for m in _TOKEN.finditer(text):
            while j < len(covered) and covered[j][1] <= m.start():
                j += 1
            cuts = [(a, b) for a, b in covered[j:j + 4] if a < m.end() and m.start() < b]
            pos = m.start()
            for a, b in [*cuts, (m.end(), m.end())]:
                if a > pos:
                    pieces.append(self._piece(text, pos, a))
                pos = max(pos, b)
        pieces = [p for p in pieces if p is not None]
        names = [(s.start, s.end) for s in spans if getattr(s, "category", None) in _NAMES]
        names += [(a, b) for a, b, res in pieces
                  if res and text[a].isupper() and not any(c.isdigit() for c in text[a:b])]
        rare = {i for i, (a, b, res) in enumerate(pieces) if not res and self._rare(text[a:b])}
        for i in sorted(rare):  # a rare capitalised word beside a name or another one
            a, b, _ = pieces[i]
            near = [j for j in (i - 1, i + 1) if 0 <= j < len(pieces)
                    and _SPACE.fullmatch(text, *sorted((pieces[j][1], a) if j < i
                                                       else (b, pieces[j][0])))]
            if any(j in rare or pieces[j][2] for j in near) or any(
                    _SPACE.fullmatch(text, e, a) or _SPACE.fullmatch(text, b, s_)
                    for s_, e in names):
                pieces[i] = (a, b, True)
        names += [(a, b) for a, b, res in pieces if res and (a, b) not in names]
        out = []
        for start, end, res in pieces:
            if not res and _PARTICLE.fullmatch(text, start, end):  # "Ries van den Nieuwenhuizen"
                res = any(b <= start and _PARTICLES_BETWEEN.fullmatch(text, b, start)
                          for _, b in names) \
                    and any(a >= end and _PARTICLES_BETWEEN.fullmatch(text, end, a)
                            for a, _ in names)
            if not res and _INITIAL.fullmatch(text, start, end) and (
                    text.startswith(".", end)  # "I" is a pronoun, "A" before a word an article
                    or text[start] != "I" and not _LOWER_NEXT.match(text, end)):
                res = any(b <= start and _AFTER_NAME.fullmatch(text, b, start)
                          or a >= end and _BEFORE_NAME.fullmatch(text, end, a)
                          for a, b in names)
            if res:
                out.append(Entity(text[start:end].casefold(), RESIDUAL, start, end))
        return out

    def _rare(self, word: str) -> bool:
        """A capitalised (or capitals) word outside the most frequent English words that is no
        clinical or medical term ("Takumi", "Fleischer", "MAMORU")."""
        if not (word[:1].isupper() and (word[1:2].islower() or len(word) >= 3 and
                                        word.isupper())) or \
                not word.replace("-", "").replace("'", "").isalpha():
            return False
        low = word.casefold()
        return (low not in frequent_words() and low not in self.allow and not is_clinical(word)
                and not is_medical_word(low))

    def _piece(self, text: str, start: int, end: int) -> tuple[int, int, bool] | None:
        """(start, end, residual?) of the word in ``text[start:end]`` less edge punctuation."""
        raw = text[start:end]
        core = _EDGE.sub("", raw)
        if not core:
            return None
        start += raw.find(core)
        end = start + len(core)
        return start, end, self.is_residual(core, text[end:end + 16])

    def find_many(self, texts: Iterable[str], spans: Iterable[Sequence]) -> list[list[Entity]]:
        return [self.find(t, s) for t, s in zip(texts, spans, strict=True)]
