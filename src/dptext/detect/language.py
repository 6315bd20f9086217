"""The language of a record, offline: ``py3langid`` (langid.py's model, BSD licence, shipped in
the package; 97 languages) behind a script check.

Short clinical notes are hard for character n-gram models (record numbers, abbreviations,
names), so the decision is made in two steps: a text whose letters are mostly outside the
Latin script is that script's language family (``zh``, ``ja``, ``ko``, ``ru``, ``ar``, ...,
or ``und``: never English); a Latin-script text is English unless the model gives another
language a probability of at least :data:`CONFIDENT` *and* fewer than :data:`ENGLISH_SHARE`
of its words are English rather than of the guessed language (among wordfreq's 25,000 most
frequent English words or the clinical abbreviations, and more frequent in English than in the
guessed language where wordfreq knows it): a short or tabular English record ("Pt | Name |
DOB | ...", abbreviations and numbers) that the model takes for Nigerian Pidgin (``pcm``) or
Scots is English, never withheld as another language, while a French or Spanish note, whose
words are mostly not English ones, still is. docs/deid.md has the measurements
(``benchmarks/bench_deid.py --languages``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

CONFIDENT = 0.6
ENGLISH_SHARE = 0.6
_SCRIPTS = {"CJK": "zh", "HIRAGANA": "ja", "KATAKANA": "ja", "HANGUL": "ko", "CYRILLIC": "ru",
            "ARABIC": "ar", "HEBREW": "he", "GREEK": "el", "DEVANAGARI": "hi", "THAI": "th"}


@dataclass(frozen=True)
class Language:
    """A detected language: ISO 639-1 code (``und``: undetermined), probability, and how it
    was decided (``script`` or ``model``)."""

    code: str
    probability: float
    by: str


@cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def script_language(text: str) -> str | None:
    """The language family of a text written mostly outside the Latin script, else None."""
    counts: dict[str, int] = {}
    letters = 0
    for c in text:
        if not c.isalpha():
            continue
        letters += 1
        if c.isascii():
            continue
        name = unicodedata.name(c, "")
        for key in _SCRIPTS:
            if key in name:
                counts[key] = counts.get(key, 0) + 1
                break
        else:
            if "LATIN" not in name:
                counts["OTHER"] = counts.get("OTHER", 0) + 1
    if not letters:
        return None
    key, n = max(counts.items(), key=lambda kv: kv[1], default=(None, 0))
    if key is None or n < 0.3 * letters:
        return None
    return _SCRIPTS.get(key, "und")


_WORD = re.compile(r"[^\W\d_]{2,}")


@cache
def _wordfreq_languages() -> frozenset[str]:
    import wordfreq

    return frozenset(wordfreq.available_languages())


@cache
def _english_words() -> frozenset[str]:
    import wordfreq

    from dptext.detect.vocabulary import CLINICAL_ABBREVIATIONS

    return frozenset(wordfreq.top_n_list("en", 25_000)) | CLINICAL_ABBREVIATIONS


def english_share(text: str, other: str | None = None) -> float:
    """The share of a text's words (two letters or more) that are English rather than of
    language ``other``: more frequent in English than in ``other`` (wordfreq) where wordfreq
    knows ``other``, else among the 25,000 most frequent English words (or a clinical
    abbreviation); capitalised words (names, headers) are left out where three words or more
are in lower case; 0 for a text without words."""
    import wordfreq

    words = _WORD.findall(text)
    lower = [w for w in words if w[0].islower()]  # names and headers are no language's
    words = [w.casefold() for w in (lower if len(lower) >= 3 else words)]
    if not words:
        return 0.0
    english = _english_words()
    if other in _wordfreq_languages() and other != "en":
        def ours(w: str) -> bool:
            return w in english and wordfreq.word_frequency(w, "en") > \
                wordfreq.word_frequency(w, other)
    else:
        def ours(w: str) -> bool:
            return w in english
    return sum(map(ours, words)) / len(words)


def detect_language(text: str) -> Language:
    """The language of ``text`` (module docstring)."""
    family = script_language(text)
    if family is not None:
        return Language(family, 1.0, "script")
    if sum(c.isalpha() for c in text) < 20:
        return Language("en", 0.0, "default")
    code, prob = _identifier().classify(text)
    if code != "en" and prob >= CONFIDENT:
        if english_share(text, code) >= ENGLISH_SHARE:
            return Language("en", 1.0 - float(prob), "words")
        return Language(code, float(prob), "model")
    return Language("en", float(prob) if code == "en" else 1.0 - float(prob), "model")
