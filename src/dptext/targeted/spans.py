"""Detected spans: snapped to whole words, overlaps merged, each marked word or pattern.

A *word* span (a name, a place, an organisation) is privatized word by word by a mechanism; a
*pattern* span (an e-mail address, a phone number, a date, an ID, a number) is replaced whole,
so its shape (``(ddd) ddd-dddd``) is never released.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dptext.detect.entities import Entity, normalize_entity
from dptext.text import split_words

WORD_CATEGORIES = frozenset({"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT",
                             "WORK_OF_ART", "LAW", "LANGUAGE"})
_OPENERS = "([{+<"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_POSSESSIVE = ("'s", "\u2019s")


def is_pattern(category: str) -> bool:
    """Pattern PII (contact details, IDs, dates, numbers) is replaced whole, never word by word."""
    return category not in WORD_CATEGORIES


@dataclass(frozen=True, slots=True)
class Span:
    """A detected entity to privatize: character range ``[start, end)``, category, identity."""

    start: int
    end: int
    category: str
    key: str

    @property
    def pattern(self) -> bool:
        return is_pattern(self.category)


def word_bounds(text: str) -> list[tuple[int, int]]:
    """Character range of every word of ``text`` (the words of :func:`split_words`)."""
    out, pos = [], 0
    for i, part in enumerate(split_words(text)):
        if i % 2:
            out.append((pos, pos + len(part)))
        pos += len(part)
    return out


def _snap(text: str, start: int, end: int, words: list[tuple[int, int]],
          pattern: bool, ends: list[int] | None = None) -> tuple[int, int]:
    """Grow ``[start, end)`` to whole words (but not over a possessive ``'s`` right after it,
    so "Bob Stone's" is the entity "bob stone"); a pattern span also takes the brackets and the
    ``+`` glued to its front (``(212) 555-0187``, ``+1 212 ...``) and a closing bracket whose
    opener it then holds, so no piece of the value's shape stays outside.

    ``words`` are sorted and disjoint (:func:`word_bounds`), so the words a span touches are
    one run of them, found by bisection on their ends (``ends``, the list of each word's end;
    computed here when not given): O(log n + k) per span, not a scan of every word of the
    record."""
    if ends is None:
        ends = [b for _, b in words]
    grown = end
    i = bisect_right(ends, start)  # the first word ending after ``start``
    while i < len(words) and words[i][0] < end:
        a, b = words[i]
        start = min(start, a)
        if text[end:b].lower() not in _POSSESSIVE:  # "Stone's": the span stays "Stone"
            grown = max(grown, b)
        i += 1
    end = grown
    if pattern:
        while start > 0 and text[start - 1] in _OPENERS:
            start -= 1
        while end < len(text) and text[end] in _CLOSERS and \
                text[start:end].count(_CLOSERS[text[end]]) > text[start:end].count(text[end]):
            end += 1
    return start, end


def merge_spans(text: str, entities: Iterable[Entity | Span],
                categories: frozenset[str] | None = None) -> list[Span]:
    """Snap detections to words and merge overlapping ones (from one or several detectors).

    A merged span is a pattern span if any of its parts is one (replaced whole: the safer
    treatment); otherwise it takes the category of its longest part. Sorted by position.
    """
    words = word_bounds(text)
    ends = [b for _, b in words]
    pieces = []
    for e in entities:
        if categories is not None and e.category not in categories:
            continue
        start, end = _snap(text, e.start, e.end, words, is_pattern(e.category), ends)
        if end > start and text[start:end].strip():
            pieces.append((start, end, e.category, e.end - e.start))
    pieces.sort()
    merged: list[list] = []
    for start, end, category, length in pieces:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            last[2].append((is_pattern(category), length, category))
        else:
            merged.append([start, end, [(is_pattern(category), length, category)]])
    return [Span(s, e, max(parts)[2], normalize_entity(text[s:e]) or text[s:e])
            for s, e, parts in merged]


def outside(text: str, spans: Sequence[Span]) -> list[str]:
    """The pieces of ``text`` no span covers, in order (first before the first span, ...)."""
    out, pos = [], 0
    for s in spans:
        out.append(text[pos:s.start])
        pos = s.end
    out.append(text[pos:])
    return out

