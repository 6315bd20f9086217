"""split_batch (the vectorized split of a whole batch) gives exactly split_words of every text,
whatever the script, and the word pipeline built on it gives the same texts and reports as the
text-by-text split."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dptext
from dptext import text as T
from dptext.text import is_word_char, split_batch, split_words


@contextmanager
def vector_min_chars(n: int):
    old = T.VECTOR_MIN_CHARS
    T.VECTOR_MIN_CHARS = n
    try:
        yield
    finally:
        T.VECTOR_MIN_CHARS = old


# the characters the rules treat specially: joiners, variation selectors (BMP and plane 14),
# tags, letter-like symbols, marks, a lone surrogate, noncharacters (the separator candidates)
_SPECIAL = st.sampled_from(list(
    "aZ09_'\u2019\u200c\u200d-., !?\t\n\r\u00a0\u0301\u00e9\u4e2d\ufe0f\ufe00\u24b6\u0930\u0947"
    "\udc00\ufdd0\ufdd1\U0001f600\U0001f1e6\U000e0100\U000e0061\U000e007f\U0010fffe\x80\x81"))
_TEXTS = st.lists(st.one_of(_SPECIAL, st.characters(), st.characters(max_codepoint=127)),
                  max_size=30).map("".join)
_ASCII = st.text(alphabet=st.sampled_from(list("ab9' .,\n'x\x00\x7f")), max_size=30)


def check(texts: list[str]) -> None:
    """split_batch against the regex split (the definition), text by text."""
    oracle = [T._split_regex(t) for t in texts]
    batch = split_batch(texts)
    assert len(batch) == len(texts)
    assert [batch.parts(t) for t in range(len(texts))] == oracle
    assert batch.words.tolist() == [len(p) // 2 for p in oracle]
    slots = np.ones(len(batch.pieces) // 2, dtype=bool)
    slots[batch.fillers()] = False
    assert [w for w, s in zip(batch.pieces[1::2], slots, strict=True) if s] == [
        w for p in oracle for w in p[1::2]]
    assert [split_words(t) for t in texts] == oracle  # long non-ASCII texts: vectorized


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_TEXTS, _ASCII), max_size=12))
@example(["", ""])
@example(["a", "\ufe0f", "'b", "c'", "\u200dd"])  # selectors and joiners at text boundaries
@example(["\U000e0100x\U000e0100", "x\ufe0f\ufe0f'y", "a''b", "a'\ufe0fb"])
def test_split_batch_is_split_words_of_every_text(texts):
    with vector_min_chars(0):
        check(texts)
    check(texts)  # the text-by-text path below the threshold


def test_ascii_and_unicode_batches_above_the_threshold():
    rng = np.random.default_rng(3)
    words = ["Alice", "don't", "o'neill", "3.14", "co-op", "x", "IT'S", "caf\u00e9", "\u0930\u092e"]
    glue = [" ", ", ", ". ", "!\n\n", "  ", "--", "'", " (", ") "]
    texts = ["".join(rng.choice(words) + rng.choice(glue) for _ in range(rng.integers(0, 30)))
             for _ in range(400)]
    ascii_texts = [t.encode("ascii", "ignore").decode() for t in texts]
    assert sum(map(len, ascii_texts)) > T.VECTOR_MIN_CHARS  # the vectorized paths run
    check(ascii_texts)
    check(texts)
    check(["".join(texts)])  # one long non-ASCII text: split_words itself is vectorized


def test_a_batch_holding_the_separator_candidates_falls_back_to_the_regex():
    texts = ["".join(T._NONCHARACTERS[:-1]) + " word", "x" * T.VECTOR_MIN_CHARS, "\u00e9t\u00e9"]
    check(texts)


def test_code_point_table_agrees_with_the_word_character_class():
    table = T._code_point_classes()
    rng = np.random.default_rng(0)
    sample = np.concatenate([rng.integers(0, 0x40000, 3000), np.arange(0x2100, 0x2200),
                             np.arange(0x1F100, 0x1F250), np.arange(0x300, 0x370)])
    for c in sample.tolist():
        assert bool(table[c] & T._IS_WORD) == is_word_char(chr(c)), hex(c)
    codes = np.array([0xE0061, 0xE0100, 0x10FFFE, 0xF0000], dtype=np.uint32)  # classified lazily
    classes = T._classes(codes)
    assert classes.tolist() == [T._IS_WORD, T._IS_SELECTOR, 0, 0]


# ------------------------------------------------------------ the word pipeline on top
VOCAB = ["alpha", "beta", "gamma", "delta", "the", "and", "of", "omega", "sigma", "kappa"]


SPACE = dict(words=VOCAB + [f"tok{i}" for i in range(30)], seed=7, dim=6,
             name="batch-40")  # the space fixture (conftest.py)


def corpus(n: int) -> list[str]:
    rng = np.random.default_rng(11)
    words = VOCAB + ["Alpha", "BETA", "Zeta", "qwerty", "Ⓐⓛⓟⓗⓐ", "\u0930\u092e", "don't", "42"]
    glue = [" ", ", ", ". ", "! ", "\n\n", " - "]
    return ["".join(str(rng.choice(words)) + str(rng.choice(glue))
                    for _ in range(rng.integers(0, 25))) for _ in range(n)]


@pytest.mark.parametrize("name,params", [
    ("custext", {"k": 5}), ("custext+", {"k": 5}), ("custext", {"k": 5, "keep_case": True}),
    ("custext", {"k": 5, "oov": "sample"}), ("custext", {"k": 5, "oov": "keep"}),
    ("santext+", {"p": 0.5}), ("laplace", {}),
])
def test_pipeline_gives_the_same_texts_and_reports_either_way(space, name, params):
    m = dptext.mechanism(name, space=space, epsilon=3.0, **params).fit(cache=False)
    texts = corpus(300)
    with vector_min_chars(10**9):
        each = m.privatize_batch(texts, rng=5)
    m._lookup_cache.clear()
    with vector_min_chars(0):
        vectorized = m.privatize_batch(texts, rng=5)
        again = m.privatize_batch(texts, rng=5)  # from the filled lookup cache
    for a, b, c in zip(each, vectorized, again, strict=True):
        assert a.text == b.text == c.text
        assert a.report == b.report == c.report
    total = dptext.PrivacyReport.combine(r.report for r in vectorized)
    assert total.tokens_total == sum(
        len(split_words(t)) // 2 + T.count_punctuation(split_words(t)[0::2]) for t in texts)


def test_reports_of_one_batch_share_no_mutable_part(space):
    m = dptext.mechanism("custext", space=space, epsilon=2.0, k=5, keep_case=True).fit(
        cache=False)
    a, b = m.privatize_batch(["Alpha beta.", "Alpha beta."], rng=0)
    assert a.report == b.report and a.report.unprotected_attributes == {"case_pattern": 1}
    a.report.events.clear()
    a.report.unprotected_attributes.clear()
    assert b.report.tokens_total == 3 and b.report.unprotected_attributes == {"case_pattern": 1}


def test_lookup_caches_are_bounded_and_gc_is_restored(space, monkeypatch):
    import gc

    from dptext.mechanisms import word

    m = dptext.mechanism("custext", space=space, epsilon=2.0, k=5).fit(cache=False)
    monkeypatch.setattr(word, "CACHE_ENTRIES", 50)
    # the glue cache is shared by every mechanism of the process: start it from a known state
    # (60 entries, over the bound), whatever the tests before this one put there
    monkeypatch.setattr(word, "_GLUE_CODES", {f"<glue {i}>": 0 for i in range(60)})
    texts = [" ".join(f"oov{i}x{j}" for j in range(20)) for i in range(10)]
    out = m.privatize_batch(texts, rng=0)
    assert len(m._lookup_cache) <= 50 + 200 and len(word._GLUE_CODES) <= 50 + 200
    assert "<glue 0>" not in word._GLUE_CODES  # emptied when new glue would pass the bound
    m.privatize_batch(texts, rng=0)
    assert len(m._lookup_cache) <= 250
    assert [r.report.privatized_by_reason for r in out] == [{"oov_placeholder": 20}] * 10
    assert gc.isenabled()
    gc.disable()
    try:
        m.privatize_batch(texts, rng=0)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_bad_batches_are_one_line_errors(space):
    m = dptext.mechanism("custext", space=space, epsilon=2.0, k=5).fit(cache=False)
    for bad in (["alpha", 3], ["alpha", b"beta"], "alpha beta"):
        with pytest.raises(dptext.DPTextError, match="strings"):
            m.privatize_batch(bad, rng=0)
    assert [r.text for r in m.privatize_batch(iter(["", "!"]), rng=0)] == ["", "!"]
