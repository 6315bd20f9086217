"""Tokenization round trips, word positions, case restoration, punctuation and stopwords."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dptext.text import (
    Kind,
    Segment,
    apply_case,
    case_pattern,
    count_punctuation,
    default_stopwords,
    detokenize,
    is_word_char,
    normalize_word,
    resolve_stopwords,
    split_words,
    tokenize,
)

# Arbitrary unicode (surrogates cannot be encoded, everything else may appear), plus a strategy
# biased towards the characters the tokenizer treats specially.
_TRICKY = st.sampled_from(
    list("aZ09_'\u2019-., !?\t\n\r\u00a0\u2003\u0301\u0300\u00e9\u00df\u0130\u4e2d\U0001f600\x00")
)
texts = st.one_of(
    st.text(),
    st.text(alphabet=_TRICKY),
    st.text(alphabet=st.characters(codec="utf-8")),
)

EXAMPLES = [
    "",
    " ",
    "Hello, world!",
    "Don't stop o'neill\u2019s co-op!",
    "  leading and trailing  \n",
    "\u0301combining first, caf\u00e9 and cafe\u0301",
    "snake_case __init__ 3.14",
    "\r\n\t\u00a0",
    "\u4e2d\u6587 \U0001f600 \u0130stanbul",
]


@settings(max_examples=300, deadline=None)
@given(texts)
@example("Alice met Bob in Paris.")
@example("it's--'quoted'' '' ' don\u2019t")
def test_round_trip(t: str) -> None:
    segments = tokenize(t)
    assert detokenize(segments) == t
    assert detokenize(s.text for s in segments) == t  # plain strings join too
    parts = split_words(t)
    assert "".join(parts) == t
    assert len(parts) % 2 == 1


@settings(max_examples=300, deadline=None)
@given(texts)
def test_words_at_odd_positions(t: str) -> None:
    parts = split_words(t)
    words = parts[1::2]
    glue = parts[0::2]
    # every word is non-empty and starts with a word character (a letter, mark or digit of any
    # script, or a letter-like symbol: docs/reliability.md)
    for w in words:
        assert w and is_word_char(w[0]), (t, w)
    # no letter, mark or digit is left in the glue between words
    for g in glue:
        assert not any(c.isalnum() or is_word_char(c) for c in g), (t, g)
    # tokenize agrees: its WORD segments are exactly the odd positions of split_words
    segments = tokenize(t)
    assert [s.text for s in segments if s.kind is Kind.WORD] == words
    for s in segments:
        assert s.text
        if s.kind is Kind.SPACE:
            assert s.text.isspace()
        elif s.kind is Kind.PUNCT:
            assert not any(c.isspace() for c in s.text)


@pytest.mark.parametrize("t", EXAMPLES)
def test_round_trip_examples(t: str) -> None:
    assert detokenize(tokenize(t)) == t
    assert "".join(split_words(t)) == t


def test_split_words_examples() -> None:
    assert split_words("Alice met Bob in Paris.") == [
        "", "Alice", " ", "met", " ", "Bob", " ", "in", " ", "Paris", ".",
    ]
    assert split_words("don't o'neill\u2019s") == ["", "don't", " ", "o'neill\u2019s", ""]
    # hyphens and trailing apostrophes are not part of a word
    assert split_words("co-op") == ["", "co", "-", "op", ""]
    assert split_words("dogs' ") == ["", "dogs", "' "]
    # combining accents stay inside the word; underscores never join words
    assert split_words("cafe\u0301!") == ["", "cafe\u0301", "!"]
    assert split_words("a_b") == ["", "a", "_", "b", ""]
    assert split_words("") == [""]
    assert split_words("...") == ["..."]


def test_tokenize_kinds() -> None:
    assert tokenize("Hi,  there!\n") == [
        Segment("Hi", Kind.WORD),
        Segment(",", Kind.PUNCT),
        Segment("  ", Kind.SPACE),
        Segment("there", Kind.WORD),
        Segment("!", Kind.PUNCT),
        Segment("\n", Kind.SPACE),
    ]
    assert tokenize("") == []


@pytest.mark.parametrize(
    ("replacement", "original", "expected"),
    [
        ("paris", "Bob", "Paris"),  # Title
        ("paris", "NASA", "PARIS"),  # UPPER
        ("paris", "bob", "paris"),  # lower
        ("paris", "I", "Paris"),  # a single capital letter is Title, not UPPER
        ("paris", "i", "paris"),
        ("paris", "A", "Paris"),
        ("new", "McDonald", "New"),  # mixed case starting upper: Title
        ("new", "iPhone", "new"),  # mixed case starting lower: lower
        ("paris", "3M", "Paris"),  # one cased letter: Title
        ("paris", "42", "paris"),  # no letters: lower
        ("", "Bob", ""),
        ("\u00e9t\u00e9", "\u00c9T\u00c9", "\u00c9T\u00c9"),
    ],
)
def test_apply_case(replacement: str, original: str, expected: str) -> None:
    assert apply_case(replacement, original) == expected


def test_case_pattern() -> None:
    assert case_pattern("I") == "title"
    assert case_pattern("IT") == "upper"
    assert case_pattern("It") == "title"
    assert case_pattern("it") == "lower"
    assert case_pattern("") == "lower"


def test_normalize_word() -> None:
    assert normalize_word("Don\u2019T") == "don't"
    assert normalize_word("PARIS") == "paris"


@pytest.mark.parametrize(
    ("glue", "expected"),
    [
        ([], 0),
        ([""], 0),
        (["", " ", " ", "."], 1),
        (["", ", ", "!! ?", "."], 4),  # a maximal run of non-space characters is one token
        (["(", ") -- ", "..."], 4),
        (["!", "!"], 2),  # glue strings never merge across the word between them
        (["  \n\t"], 0),
    ],
)
def test_count_punctuation(glue: list[str], expected: int) -> None:
    assert count_punctuation(glue) == expected


def test_count_punctuation_matches_tokenize() -> None:
    t = "Well... (she said) \u201cno\u201d -- right?!  Yes."
    n_punct = sum(s.kind is Kind.PUNCT for s in tokenize(t))
    assert count_punctuation(split_words(t)[0::2]) == n_punct == 8


def test_default_stopwords_are_spacy() -> None:
    from spacy.lang.en.stop_words import STOP_WORDS

    default = resolve_stopwords(None)
    assert default is default_stopwords()
    # spaCy's list without the common given names / months (docs/privacy.md)
    assert default == frozenset(normalize_word(w) for w in STOP_WORDS) - {"may", "will"}
    assert {"may", "will"} <= frozenset(STOP_WORDS)
    assert {"the", "and", "in", "of", "i"} <= default
    assert "paris" not in default
    assert all(w == normalize_word(w) for w in default)  # lower case, ASCII apostrophes


def test_stopword_override() -> None:
    custom = resolve_stopwords(["Foo", "BAR", "don\u2019t"])
    assert custom == frozenset({"foo", "bar", "don't"})
    assert "the" not in custom
    assert resolve_stopwords([]) == frozenset()
    assert resolve_stopwords(w for w in ("A", "b")) == frozenset({"a", "b"})
    with pytest.raises(TypeError):
        resolve_stopwords("the")


def test_default_stopwords_do_not_import_spacy() -> None:
    # spaCy's package import takes seconds; its English list is one self-contained file
    import subprocess
    import sys

    code = (
        "import sys; from dptext.text import default_stopwords; s = default_stopwords(); "
        "assert 'the' in s and len(s) > 300, len(s); "
        "assert 'spacy' not in sys.modules, 'spacy imported'"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
