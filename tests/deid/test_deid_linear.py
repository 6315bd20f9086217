"""De-identification is linear in a record's length (issue 44 item 6): the span snapping, the
propagation of detected names and the service's span alignment give the outputs of the old
quadratic algorithms, and the work they do per span does not grow with the record. Nothing
here is timed."""

from __future__ import annotations

import random

import pytest

from dptext.detect.entities import Entity, _propagate
from dptext.service.spans import _FirstOverlap, _pins
from dptext.targeted.spans import _POSSESSIVE, _snap, merge_spans, outside, word_bounds

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def _snap_scan(text, start, end, words):
    """The algorithm before the bisection: every word of the record per span."""
    grown = end
    for a, b in words:
        if a < end and b > start:
            start = min(start, a)
            if text[end:b].lower() not in _POSSESSIVE:
                grown = max(grown, b)
    return start, grown


def _text(rng: random.Random, n_words: int) -> str:
    vocab = ["Smith", "Stone's", "(212)", "555-0187", "the", "of", "Dr.", "Ann", "x", "O'Neil",
             "2024-03-01", "[a]", "\u00c9lise", "mg", "I48.91"]
    seps = [" ", "  ", ", ", "\n", "; ", "-", "/"]
    return "".join(rng.choice(vocab) + rng.choice(seps) for _ in range(n_words))


def test_snap_by_bisection_gives_the_scan_s_spans():
    rng = random.Random(7)
    for _ in range(40):
        text = _text(rng, rng.randint(1, 60))
        words = word_bounds(text)
        ends = [b for _, b in words]
        for _ in range(30):
            a = rng.randrange(len(text))
            b = rng.randint(a, min(len(text), a + 12))
            got = _snap(text, a, b, words, False, ends)
            assert got == _snap_scan(text, a, b, words), (text, a, b)


class _Counting(list):
    reads = 0

    def __getitem__(self, i):
        type(self).reads += 1
        return super().__getitem__(i)


def test_snap_reads_only_the_words_a_span_touches_whatever_the_record_s_length():
    for n in (100, 10_000):
        text = "word " * n
        words = _Counting(word_bounds(text))
        ends = [b for _, b in words]
        _Counting.reads = 0
        mid = len(text) // 2
        assert _snap(text, mid + 1, mid + 3, words, False, ends) == (mid, mid + 4)
        assert _Counting.reads <= 3  # the one word it touches and the one after: O(k), not O(n)


def _propagate_scan(text, entities):
    """_propagate with the old overlap test (every taken span per mention)."""
    import dptext.detect.entities as E

    real = bytearray
    taken_list = []

    class Scan:  # a stand-in for the bytearray that answers as the list scan did
        def __init__(self, n):
            pass

        def __setitem__(self, key, value):
            taken_list.append((key.start, key.stop))

        def find(self, _v, at, end):
            return 0 if any(a < end and at < b for a, b in taken_list) else -1

    E.bytearray = Scan
    try:
        return E._propagate(text, entities)
    finally:
        del E.bytearray
        assert bytearray is real


def test_propagate_with_a_coverage_map_finds_what_the_span_scan_found():
    rng = random.Random(3)
    names = ["Kleist", "Merced", "Ortiz-Vega", "Anna Lee", "Oakridge Clinic"]
    for _ in range(30):
        parts, ents, pos = [], [], 0
        for _ in range(rng.randint(1, 40)):
            w = rng.choice(names + ["the", "pt", "seen", "today", "and"])
            cat = rng.choice(["PERSON", "GPE", "ORG", None, None])
            if w in names and cat:
                ents.append(Entity(w.casefold(), cat, pos, pos + len(w)))
            parts.append(w + " ")
            pos += len(w) + 1
        text = "".join(parts)
        got = _propagate(text, ents)
        assert got == _propagate_scan(text, ents)
        # every mention of a detected surface is covered
        for e in ents:
            surface = text[e.start:e.end]
            at = text.find(surface)
            while at >= 0:
                assert any(g.start <= at < g.end for g in got)
                at = text.find(surface, at + 1)


def test_service_pins_every_piece_of_an_unambiguous_release_and_leaves_windows_small():
    rng = random.Random(5)
    text = _text(rng, 400)
    ents = [Entity("x", "PERSON", a, b) for a, b in word_bounds(text)
            if text[a:b] in ("Smith", "Ann", "O'Neil")]
    spans = merge_spans(text, ents)
    rest = outside(text, spans)
    released = rest[0] + "".join(f"<{i}>" + r for i, r in enumerate(rest[1:]))
    pins = _pins(released, rest, [0] + [s.end for s in spans])
    assert pins is not None
    assert len(pins) >= 0.6 * len(rest)  # most pieces are pinned: each window is small
    for o, r, n in pins:
        assert released[r:r + n] == text[o:o + n]
    # a release that is not the original with its spans replaced is not pinned
    assert _pins("something else", rest, [0] + [s.end for s in spans]) is None


def test_first_overlap_is_the_first_span_by_start_that_overlaps():
    spans = [Entity("a", "A", 0, 10), Entity("b", "B", 2, 4), Entity("c", "C", 12, 20),
             Entity("d", "D", 15, 16)]
    first = _FirstOverlap(spans)
    for lo in range(0, 22):
        for hi in range(lo + 1, 23):
            want = next((s.category for s in spans if s.start < hi and s.end > lo), "REPLACED")
            assert first(lo, hi) == want
