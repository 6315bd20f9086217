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

Lower-case words are never residual: a lower-case name ("holmes" in a dictation line) is left
to the recognizers. The vocabulary is built once per process (about 1.5 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dptext.detect.categories import RESIDUAL
from dptext.detect.entities import Entity
from dptext.detect.vocabulary import common_words, is_clinical

_TOKEN = re.compile(r"[^\s]+")
_EDGE = re.compile(r"^[^\w@+]+|[^\w@]+$")
_DIGIT_RUN = re.compile(r"\d{3,}")
_YEAR = re.compile(r"(?:19|20)\d\d(?:s|'s)?")
_MEASURE = re.compile(r"\d+(?:[.,]\d+)+")
_UNITS = ("mg|mcg|ug|g|kg|ml|l|dl|cc|cm|mm|km|m|h|hr|hrs|min|mins|sec|s|x|d|wk|wks|mo|yr|yrs|"
          "mmhg|bpm|lb|lbs|oz|iu|u|units?|meq|mmol|st|nd|rd|th|am|pm|f|c|%")
_WITH_UNIT = re.compile(rf"(?i)\d+(?:\.\d+)?(?:{_UNITS})")
UNIT_AFTER = re.compile(rf"(?i)\s*(?:{_UNITS}|percent|mg/dl|mg/kg|ml/h|mmhg|degrees|tabs?|"
                         r"tablets?|pills?|cells|beats|puffs|drops|hours?|days?|weeks?|months?|"
                         r"years?|times|minutes?|seconds?|cc|ml|kcal|calories)\b")


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
        if has_digit and has_alpha:
            return not _WITH_UNIT.fullmatch(token)
        if has_digit:
            if not _DIGIT_RUN.search(token):
                return False
            if _YEAR.fullmatch(token) or _MEASURE.fullmatch(token):
                return False
            return not (token.isdigit() and UNIT_AFTER.match(after))
        if not token[0].isupper():
            return False
        for part in re.split(r"[-/']", token):
            low = part.casefold()
            if low in ("s", "") or low in self._vocab or low in self.allow or is_clinical(part):
                continue
            return True
        return False

    def find(self, text: str, spans: Sequence = ()) -> list[Entity]:
        """Residual tokens of ``text`` outside ``spans`` (objects with ``start``/``end``)."""
        covered = sorted((s.start, s.end) for s in spans)
        out, j = [], 0
        for m in _TOKEN.finditer(text):
            raw = m.group()
            lead = len(raw) - len(_EDGE.sub("", raw, count=1)) if raw else 0
            core = _EDGE.sub("", raw)
            if not core:
                continue
            start = m.start() + (raw.find(core) if lead else 0)
            end = start + len(core)
            while j < len(covered) and covered[j][1] <= start:
                j += 1
            if any(a < end and start < b for a, b in covered[j:j + 3]):
                continue
            if self.is_residual(core, text[end:end + 16]):
                out.append(Entity(core.casefold(), RESIDUAL, start, end))
        return out

    def find_many(self, texts: Iterable[str], spans: Iterable[Sequence]) -> list[list[Entity]]:
        return [self.find(t, s) for t, s in zip(texts, spans, strict=True)]
