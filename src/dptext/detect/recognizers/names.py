"""Names in lower case after a word that announces one (:class:`NameContextRecognizer`), and the
validators of the name patterns of :mod:`dptext.detect.recognizers.builtin`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dptext.detect.entities import Entity
from dptext.detect.recognizers.atoms import _CONTEXT_WORDS, _LO, _context_re
from dptext.detect.recognizers.base import Recognizer
from dptext.detect.vocabulary import TITLES, common_words, frequent_words


@dataclass
class NameContextRecognizer(Recognizer):
    """Names in lower case after a word that announces a name - a title ("dr smith"), a
    relative ("wife mary", "son, tom"), "pt", "patient", "per", "seen by", "spoke with", ... -
    one to three words, each a first name or surname of the public lists that is not an
    ordinary word, or a word public English text does not know at all (not a medical term).
    Capitalised names there are the residual net's and the other rules' (this rule never
    takes an ordinary word: "wife is", "per protocol")."""

    def find(self, text: str) -> list[Entity]:
        out = []
        for c in _NAME_CONTEXT.finditer(text):
            run = _LOWER_RUN.match(text, c.end())
            if run is None:
                continue
            end = None
            context = " ".join(c.group().casefold().split())
            words = list(re.finditer(r"\S+", run.group("v")))
            if context in _AUTHORSHIP and _LOWER_INITIALS.fullmatch(words[0].group()) and \
                    words[0].group() not in frequent_words():
                out.append(self._entity(text, run.start("v"), run.start("v") + words[0].end()))
                continue
            strong = context in _STRONG
            if not strong and len(words) > 1 and not _lower_name(words[0].group(), False):
                # "pt petrine larsen": a rare first word counts when a name follows it
                strong = _lower_name(words[0].group(), True) and \
                    _lower_name(words[1].group(), False)
            for w in words:
                if not _lower_name(w.group(), strong or end is not None):
                    break
                end = run.start("v") + w.end()
            if end is not None:
                out.append(self._entity(text, run.start("v"), end))
        return out


def _not_clinical(value: str) -> bool:
    from dptext.detect.vocabulary import is_clinical

    return not is_clinical(value)


def _first_not_context(value: str) -> bool:
    """"LAST, First": the first name is no context word of an identifier ("SMITH, Acct #",
    "SMITH, Record number" are no names), and neither part is clinical vocabulary ("BID,
    Eliquis")."""
    from dptext.detect.vocabulary import is_clinical

    last, rest = value.split(",", 1)
    first = rest.split()
    return bool(first) and first[0].casefold() not in _CONTEXT_WORDS and \
        not is_clinical(last.strip()) and not is_clinical(first[0])


def _not_ordinary_after(value: str) -> bool:

    words = re.findall(r"[^\W\d_][\w'-]*", value)
    return len(words) > 1 and words[1].casefold() not in common_words()


_RELATIVES = ("wife", "husband", "spouse", "partner", "son", "daughter", "mother", "father",
              "mom", "dad", "sister", "brother", "niece", "nephew", "aunt", "uncle", "cousin",
              "grandson", "granddaughter", "grandmother", "grandfather", "grandma", "grandpa",
              "stepson", "stepdaughter", "fiance", "fiancee", "boyfriend", "girlfriend",
              "friend", "neighbor", "neighbour", "caregiver", "guardian", "roommate")
# who wrote, typed or signed a record: the word after is a name or initials ("jmk", "lrt")
_AUTHORSHIP = ("dictated by", "transcribed by", "typed by", "entered by", "written by",
               "reviewed by", "signed by", "co-signed by", "cosigned by", "approved by",
               "prepared by", "verified by", "electronically signed by", "authored by")
_NAME_CONTEXT = _context_re(tuple(t.lower() for t in TITLES) + _RELATIVES + _AUTHORSHIP + (
    "pt", "patient", "per", "seen by", "spoke with", "spoke to", "talked to", "discussed with",
    "called", "cc", "signed", "attending", "resident", "np", "rn", "name", "mrs", "mr", "ms"))
_LOWER_RUN = re.compile(rf"[.:,]?[ \t]+(?P<v>[{_LO}][{_LO}'-]*(?:[ \t]+[{_LO}][{_LO}'-]*){{0,2}})")


_LOWER_INITIALS = re.compile(r"[a-z]{2,3}")
_STRONG = frozenset(t.casefold() for t in TITLES) | frozenset(_RELATIVES) | {"mr", "mrs", "ms"}


def _lower_name(word: str, strong: bool) -> bool:
    """A lower-case word that is a name of the public lists and no ordinary word, or one
    public English text does not know (:class:`NameContextRecognizer`); after a title or a
    relative (``strong``), or after a first name, any word outside the most frequent English
    words ("dr abramovich", "sister alik") that is no clinical term."""
    from dptext.detect.vocabulary import (
        common_words,
        frequent_words,
        is_clinical,
        is_medical_word,
        known_words,
        name_list,
    )

    low = word.casefold().strip("'-")
    if not low.isalpha() or len(low) < 2 or is_clinical(low):
        return False
    if low in name_list():
        return low not in common_words()  # "will", "may": stopwords
    if strong:
        return len(low) >= 3 and low not in frequent_words() and not is_medical_word(low)
    return len(low) >= 3 and low not in known_words() and not is_medical_word(low)
