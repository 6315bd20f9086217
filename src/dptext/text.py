"""Tokenization that round-trips, stopwords and case restoration.

A text is split into *segments*: word tokens (letters/digits, with internal apostrophes or
hyphen-free joins such as ``don't``), punctuation tokens (maximal runs of other non-space
characters) and whitespace. ``detokenize(tokenize(t)) == t`` for every string ``t``: nothing
is normalised away, so spacing, line breaks and punctuation survive exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path


class Kind(Enum):
    WORD = "word"
    PUNCT = "punct"
    SPACE = "space"


# A word: one or more letters/digits, optionally joined by a single apostrophe (don't, o'neill).
_WORD = r"(?:[^\W_][\u0300-\u036f]*)+(?:['\u2019](?:[^\W_][\u0300-\u036f]*)+)*"
_WORD_SPLIT = re.compile(rf"({_WORD})")
# The same split for text without combining marks (any ASCII text): a much faster pattern.
_WORD_SPLIT_ASCII = re.compile(r"([^\W_]+(?:['\u2019][^\W_]+)*)")
_GLUE = re.compile(r"(?P<space>\s+)|(?P<punct>\S+)")
_NONSPACE_RUN = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    kind: Kind


def split_words(text: str) -> list[str]:
    """``[glue, word, glue, word, ..., glue]``: words at odd positions, the rest between them.

    The fast path of every word-level mechanism: one C-level split, ``"".join`` inverts it.
    """
    return (_WORD_SPLIT_ASCII if text.isascii() else _WORD_SPLIT).split(text)


def count_punctuation(glue: list[str]) -> int:
    """Number of punctuation tokens (maximal runs of non-space characters) in glue strings."""
    return len(_NONSPACE_RUN.findall("\n".join(glue)))


def tokenize(text: str) -> list[Segment]:
    """Split ``text`` into word, punctuation and whitespace segments covering it exactly."""
    out = []
    for i, part in enumerate(split_words(text)):
        if i % 2:
            out.append(Segment(part, Kind.WORD))
        else:
            out.extend(Segment(m.group(), Kind(m.lastgroup)) for m in _GLUE.finditer(part))
    return out


def detokenize(segments: Iterable[Segment | str]) -> str:
    """Join segments (or plain strings) back into text; the inverse of :func:`tokenize`."""
    return "".join(s.text if isinstance(s, Segment) else s for s in segments)


def normalize_word(word: str) -> str:
    """The lookup key of a word: lower case, typographic apostrophe folded to ASCII."""
    return word.lower().replace("\u2019", "'")


def case_pattern(word: str) -> str:
    """``"upper"`` (ALL CAPS, two or more cased letters), ``"title"``, or ``"lower"``.

    Decided by the letters of ``word``: all of them upper case (at least two) is UPPER; else the
    first letter upper case is Title; everything else (no letters included) is lower.
    """
    if word.islower():
        return "lower"
    first = next((c for c in word if c.isalpha()), "")
    if word.isupper():
        letters = [c for c in word if c.isalpha()]
        if len(letters) >= 2 and all(c.isupper() for c in letters):
            return "upper"
    return "title" if first.isupper() else "lower"


def apply_case(replacement: str, original: str) -> str:
    """Render ``replacement`` with the case pattern of ``original`` (Title, UPPER, lower)."""
    if original.islower():  # the common case, decided without a scan
        return replacement
    pattern = case_pattern(original)
    if pattern == "upper":
        return replacement.upper()
    if pattern == "title":
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _spacy_english_stopwords() -> set[str]:
    """``spacy.lang.en.stop_words.STOP_WORDS`` without importing spaCy itself.

    ``import spacy.lang.en.stop_words`` runs ``spacy/__init__`` (several seconds: thinc, the
    pipeline machinery) for a module that is one self-contained set literal, so we execute that
    file alone; if spaCy's layout ever differs, fall back to the ordinary import.
    """
    import sys

    module = sys.modules.get("spacy.lang.en.stop_words")
    if module is None:
        try:
            import importlib.util

            spec = importlib.util.find_spec("spacy")
            roots = list(spec.submodule_search_locations or []) if spec else []
            path = Path(roots[0]) / "lang" / "en" / "stop_words.py"
            namespace: dict = {"__name__": "_dptext_spacy_en_stop_words"}
            exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
            return set(namespace["STOP_WORDS"])
        except Exception:  # any surprise: use spaCy's own import
            from spacy.lang.en import stop_words as module
    return set(module.STOP_WORDS)


# spaCy stopwords that are also common given names or months, which a stopword list must not
# release verbatim ("Will", "May"): every spaCy stopword that is a month name, or a first name of
# the US Census 1990 name lists (the `names` package's dist.male.first / dist.female.first)
# held by at least 0.01% of people. Below that threshold the census lists also hold "an", "in",
# "my", "so", "see", "else", "many" (0.001-0.003%), which are kept as stopwords.
NAME_STOPWORDS = frozenset({"may", "will"})


@lru_cache(maxsize=1)
def default_stopwords() -> frozenset[str]:
    """spaCy's English stopword list (lower case, ASCII apostrophes) without the words that are
    common given names or months (:data:`NAME_STOPWORDS`): those are privatized like any word."""
    return frozenset(normalize_word(w) for w in _spacy_english_stopwords()) - NAME_STOPWORDS


def resolve_stopwords(stopwords: Iterable[str] | None) -> frozenset[str]:
    """``None`` gives spaCy's list; any iterable of words overrides it."""
    if stopwords is None:
        return default_stopwords()
    if isinstance(stopwords, str):
        raise TypeError("stopwords must be an iterable of words, not a single string")
    return frozenset(normalize_word(w) for w in stopwords)


# A sentence break inside the glue between two words: ., !, ? or ... followed by whitespace (after
# closing quotes/brackets), or a blank line.
_SENTENCE_BREAK = re.compile(r"[.!?\u2026][^\w\s]*\s|\n[^\S\n]*\n")
_TRAILING_NON_WORD = re.compile(r"[\W_]*\Z")


def starts_sentence(glue: str) -> bool:
    """Whether a word after ``glue`` (the non-word text since the previous word) starts a new
    sentence. Reads only the glue, which every mechanism releases verbatim, so capitalising by
    it is post-processing of public output."""
    return _SENTENCE_BREAK.search(glue) is not None


def trailing_glue(text: str) -> str:
    """The non-word characters at the end of ``text`` (the glue before a word appended to it)."""
    return _TRAILING_NON_WORD.search(text[-256:]).group()


def capitalize_first(word: str) -> str:
    """``word`` with its first character upper case (sentence-initial rendering)."""
    return word[:1].upper() + word[1:]
