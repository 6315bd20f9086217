"""The language of a record, offline: ``py3langid`` (langid.py's model, BSD licence, shipped in
the package; 97 languages) behind a script check.

Short clinical notes are hard for character n-gram models (record numbers, abbreviations,
names), so the decision is made in two steps: a text whose letters are mostly outside the
Latin script is that script's language family (``zh``, ``ja``, ``ko``, ``ru``, ``ar``, ...,
or ``und``: never English); a Latin-script text is English unless the model gives another
language a probability of at least :data:`CONFIDENT`. docs/deid.md has the measurements
(``benchmarks/bench_deid.py --languages``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

CONFIDENT = 0.6
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


def detect_language(text: str) -> Language:
    """The language of ``text`` (module docstring)."""
    family = script_language(text)
    if family is not None:
        return Language(family, 1.0, "script")
    if sum(c.isalpha() for c in text) < 20:
        return Language("en", 0.0, "default")
    code, prob = _identifier().classify(text)
    if code != "en" and prob >= CONFIDENT:
        return Language(code, float(prob), "model")
    return Language("en", float(prob) if code == "en" else 1.0 - float(prob), "model")
