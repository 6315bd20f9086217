"""The tokenizer never releases a letter of any script as glue (issue 12, "Privacy leaks through
the tokenizer"): letter-like symbols and combining marks of every script are part of words, so
every word mechanism replaces them; the split still round-trips exactly."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dptext
from dptext import EmbeddingSpace
from dptext.text import (
    Kind,
    _fold_word_chars,
    count_punctuation,
    detokenize,
    is_word_char,
    split_words,
    tokenize,
)

_VARIATION_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_LETTER_PROPERTY = regex.compile(r"[\p{L}\p{M}\p{Alphabetic}]")


def has_letter_property(c: str) -> bool:
    """The oracle, written independently of the tokenizer's character class: a Unicode letter
    or mark (Python's own unicodedata or the regex module's newer tables), an Alphabetic
    character, or a character whose NFKC fold contains a letter. Variation selectors (Mn) are
    presentation, not letters (documented exception)."""
    if _VARIATION_SELECTOR.fullmatch(c):
        return False
    if unicodedata.category(c)[0] in "LM" or _LETTER_PROPERTY.fullmatch(c):
        return True
    return any(unicodedata.category(x)[0] == "L" for x in unicodedata.normalize("NFKC", c))


ISSUE_EXAMPLES = [
    "Ⓐⓛⓘⓒⓔ Ⓢⓜⓘⓣⓗ ⓗⓐⓢ ⓒⓐⓝⓒⓔⓡ",  # circled letters
    "🄰🄻🄸🄲🄴 🅰🅻🅸🅲🅴",  # squared and negative squared
    "🇦🇱🇮🇨🇪",  # regional indicators
    "㋐㋑㋒",  # circled katakana
    "रमेश कुमार",  # Devanagari with vowel signs (marks outside U+0300-036F)
    "ﾀﾛｳ ℌ𝔢𝔩𝔩𝔬 ⒜⒝⒞",  # half-width katakana, mathematical letters, parenthesized letters
    "Z̷̢̛a̴̡l̵g̸o̵",  # zalgo
    "\u0301leading mark",
    "tag\U000e0061\U000e0062 letters",  # tag characters spell ASCII invisibly
]


@pytest.mark.parametrize("text", ISSUE_EXAMPLES)
def test_letter_like_characters_are_words(text):
    parts = split_words(text)
    assert "".join(parts) == text
    glue = "".join(parts[0::2])
    assert not any(has_letter_property(c) for c in glue), glue
    assert count_punctuation(parts[0::2]) == 0  # nothing of these texts is "punctuation"


def test_issue_examples_are_replaced_not_released():
    space = EmbeddingSpace([f"w{i}" for i in range(30)],
                           np.random.default_rng(0).standard_normal((30, 4)), name="tiny")
    m = dptext.mechanism("custext", space=space, epsilon=2, k=5).fit(cache=False)
    r = m.privatize("Ⓐⓛⓘⓒⓔ Ⓢⓜⓘⓣⓗ ⓗⓐⓢ ⓒⓐⓝⓒⓔⓡ", rng=0)
    assert r.text == "[UNK] [UNK] [UNK] [UNK]"
    assert r.report.kept == {} and r.report.privatized_by_reason == {"oov_placeholder": 4}
    assert m.privatize("रमेश कुमार", rng=0).text == "[UNK] [UNK]"


def test_joiners_and_variation_selectors():
    assert split_words("❤️ ok") == ["❤️ ", "ok", ""]  # a selector after a symbol is glue
    assert split_words("👨\u200d👩") == ["👨\u200d👩"]  # ZWJ between symbols is glue
    assert split_words("क्\u200dष") == ["", "क्\u200dष", ""]  # ZWJ inside a word joins it
    assert split_words("don\u2019t o'neill") == ["", "don\u2019t", " ", "o'neill", ""]
    assert split_words("a_b co-op") == ["", "a", "_", "b", " ", "co", "-", "op", ""]


def test_ascii_fast_path_agrees_with_the_general_pattern():
    from dptext.text import _WORD_SPLIT

    for t in ["Hello, world! don't 3.14 a_b", "it's--'quoted'' ''", "x'y'z' 'a", ""]:
        assert split_words(t) == _WORD_SPLIT.split(t)


def test_generated_symbol_table_is_complete():
    """_FOLD_LETTERS holds every symbol whose NFKC fold is a letter/number under this Python's
    unicodedata (regenerate with dptext.text._fold_word_chars() when it grows)."""
    missing = sorted(c for c in _fold_word_chars() if not is_word_char(c))
    assert not missing, [f"U+{ord(c):04X}" for c in missing[:20]]


_LETTERS = st.characters(categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me"))
_SYMBOLS = st.sampled_from(
    list("Ⓐⓩ🄰🅰🇦㋐⼀™℃№⒜①²") + ["\u200d", "\u200c", "\ufe0f", "\U000e0061", "'", "\u2019"]
)
_SEPARATORS = st.sampled_from(list(" \t\n.,!?-_()\"") + ["\u00a0", "\u2028", "\U0001f600"])
_TEXTS = st.lists(st.one_of(_LETTERS, _SYMBOLS, _SEPARATORS, st.characters(codec="utf-8")),
                  max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
@example("Ⓐⓛⓘⓒⓔ rमेश")
def test_glue_never_holds_a_letter(text):
    segments = tokenize(text)
    assert detokenize(segments) == text
    for s in segments:
        if s.kind is not Kind.WORD:
            assert not any(has_letter_property(c) for c in s.text), (text, s)


# ----------------------------------------------------------- every word mechanism
VOCAB = ["alpha", "beta", "gamma", "delta", "the", "and", "of", "omega", "sigma", "kappa"]


@pytest.fixture(scope="module")
def mechanisms():
    rng = np.random.default_rng(7)
    words = VOCAB + [f"tok{i}" for i in range(30)]
    space = EmbeddingSpace(words, rng.standard_normal((len(words), 6)).astype(np.float32),
                           name="ascii-40")
    out = {}
    for name in ("custext", "custext+", "santext", "santext+", "laplace", "gumbel"):
        params = {"k": 5} if name.startswith("custext") else {}
        if name == "gumbel":
            from dptext.mechanisms.truncated_gumbel import minimum_epsilon

            geo = dict(vocab_size=len(space), delta_max=space.geometry().delta_max,
                       delta_min=space.geometry().delta_min)
            params["epsilon"] = 1.5 * minimum_epsilon(**geo, rule="paper")
        else:
            params["epsilon"] = 2.0
        out[name] = dptext.mechanism(name, space=space, **params).fit(cache=False)
    return out


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_TEXTS, min_size=1, max_size=4))
@example(["Ⓐⓛⓘⓒⓔ Ⓢⓜⓘⓣⓗ ⓗⓐⓢ ⓒⓐⓝⓒⓔⓡ", "रमेश कुमार", "alpha Ⓑeta"])
def test_no_letter_leaves_verbatim_through_any_word_mechanism(mechanisms, texts):
    """By default (oov="placeholder") every output letter comes from the ASCII vocabulary or the
    placeholder: no letter or mark of the input outside it is ever released - by the regex
    split of small batches and by the vectorized split of large ones (dptext.text.split_batch,
    forced here for these small batches)."""
    from dptext import text as T

    old = T.VECTOR_MIN_CHARS
    try:
        for name, m in mechanisms.items():
            for min_chars in (old, 0):
                T.VECTOR_MIN_CHARS = min_chars
                _check_no_leak(name, m, texts)
    finally:
        T.VECTOR_MIN_CHARS = old


def _check_no_leak(name, m, texts):
    for text, result in zip(texts, m.privatize_batch(texts, rng=1), strict=True):
        leaked = {c for c in result.text if has_letter_property(c) and not c.isascii()}
        assert not leaked, (name, text, result.text)
        # glue is released verbatim and counted as punctuation: never a letter
        glue = split_words(text)[0::2]
        assert result.report.kept.get("punctuation", 0) == count_punctuation(glue)
