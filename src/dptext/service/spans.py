"""Which characters of a sanitized text were privatized, kept or replaced, and why.

Word mechanisms replace word i of the input by word i of the output and keep everything between
words verbatim, so the output's words line up with the input's (``dptext.text.split_words``);
each output word gets the kind the pipeline gave the input word (``WordMechanism.word_kinds``).
Where the output does not line up (an LM rewriting, a multi-word placeholder), the whole text
is one span of kind ``rewritten``.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism
from dptext.text import split_words

REASONS = {
    "privatized": "drawn by the mechanism ({guarantee})",
    "stopword": "stopword kept verbatim by configuration (not protected)",
    "oov": "out of vocabulary: {oov}",
    "non_sensitive": "SanText+ non-sensitive word: {outcome}",
    "punctuation": "punctuation or symbols, kept verbatim (not protected)",
    "rewritten": "rewritten by the language model ({guarantee} per rewritten word; the number "
                 "of words and the kept tokens are released)",
}


def spans(m: Mechanism, original: str, sanitized: str) -> list[dict]:
    """``[{start, end, kind, reason}]`` over ``sanitized`` (character offsets); every
    character is in exactly one span."""
    guarantee = m.guarantee.describe()
    if not isinstance(m, WordMechanism):
        return [{"start": 0, "end": len(sanitized), "kind": "rewritten",
                 "reason": REASONS["rewritten"].format(guarantee=guarantee)}] if sanitized else []
    before, after = split_words(original), split_words(sanitized)
    if len(before) != len(after):
        return [{"start": 0, "end": len(sanitized), "kind": "rewritten",
                 "reason": "replaced (the output's words do not line up with the input's)"}]
    kinds = m.word_kinds(before[1::2])
    oov = {"placeholder": "replaced by a placeholder (output independent of the word)",
           "sample": "replaced by a uniform draw (output independent of the word)",
           "keep": "released verbatim (not protected)"}[m.oov]
    out, pos = [], 0
    for i, part in enumerate(after):
        if not part:
            continue
        if i % 2 == 0:
            if part.strip():
                kind = "punctuation"
                reason = REASONS[kind]
            else:
                pos += len(part)
                continue
        else:
            kind = kinds[i // 2]
            outcome = ("kept verbatim (not protected)" if part == before[i]
                       else "resampled by the mechanism")
            reason = REASONS[kind].format(guarantee=guarantee, oov=oov, outcome=outcome)
        out.append({"start": pos, "end": pos + len(part), "kind": kind, "reason": reason})
        pos += len(part)
    return out


VERBATIM = "released as written: not detected as an identifier, so not protected"


_PIECES = re.compile(r"\w+|\s+|[^\w\s]")


def _tokens(text: str) -> tuple[list[str], list[int]]:
    """Runs of word characters, runs of spaces and single punctuation characters, and where
    each starts (one more: the end). Punctuation alone, so that the comma between two
    replaced spans ("Andrea,[DATE]") is matched and parts them (issue 45: one window took the
    first span's category for all)."""
    parts = _PIECES.findall(text)
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p)
    return parts, starts + [pos]


def entity_spans(m, original: str, released: str, report) -> list[dict]:
    """Spans over ``released`` for entity mode: text that differs from the original is one
    span of ``kind`` ``"entity"`` with the ``category`` of the detected span it replaced (its
    treatment as the reason); text released as it was is ``"verbatim"``; every character of
    the output is in one span.

    Linear in the record's length: the release is the original with the detected spans
    replaced and the pieces between them released as written
    (:func:`dptext.targeted.spans.outside`), so each piece is looked for in the release by
    ``str.find`` from the left and ``str.rfind`` from the right; where both agree it is
    pinned, and only the windows between pinned pieces (a span and its replacement, or a run
    of spans whose separators also stand inside their replacements) are aligned word by word
    (difflib), each on its own. A release not so made is aligned whole, as before."""
    from dptext.targeted.spans import merge_spans, outside

    found = m.detect([original])[0]
    found = sorted(list(found) + m.residual_tokens(original, found), key=lambda s: s.start)
    treatments = {cat: info.get("treatment", "") for cat, info in
                  (getattr(report, "spans", None) or {}).items()}
    category = _FirstOverlap(found)
    out: list[dict] = []

    def verbatim(start: int, end: int) -> None:
        if start >= end:
            return
        if out and out[-1]["kind"] == "verbatim" and out[-1]["end"] == start:
            out[-1]["end"] = end
        else:
            out.append({"start": start, "end": end, "kind": "verbatim", "reason": VERBATIM})

    merged = merge_spans(original, found)
    pins = _pins(released, outside(original, merged), [0] + [s.end for s in merged])
    if pins is None:  # not the original with its spans replaced: one window
        pins = [(0, 0, 0), (len(original), len(released), 0)]
    for (o0, r0, n0), (o1, r1, _) in zip(pins, pins[1:], strict=False):
        verbatim(r0, r0 + n0)  # a pinned piece, as written
        _align(original, released, (o0 + n0, o1), (r0 + n0, r1), verbatim, out, category,
               treatments)
    verbatim(pins[-1][1], pins[-1][1] + pins[-1][2])
    return out


def _pins(released: str, rest: list[str], o_at: list[int]) -> list[tuple] | None:
    """``(start in the original, start in the release, length)`` of each piece between spans
    whose place in the release is certain - the first and the last always - or None when the
    release is not the original with its spans replaced. ``o_at``: each piece's start in the
    original."""
    n = len(rest)
    first, last = len(rest[0]), len(released) - len(rest[-1])
    if not (released.startswith(rest[0]) and released.endswith(rest[-1])) or \
            (n > 1 and first > last):
        return None
    if n == 1:
        return [(0, 0, len(rest[0]))] if released == rest[0] else None
    lo = [0] * n  # earliest start of each piece in the release
    pos = first
    for i in range(1, n - 1):
        lo[i] = released.find(rest[i], pos, last)
        if lo[i] < 0:
            return None
        pos = lo[i] + len(rest[i])
    lo[-1] = last
    hi = [0] * n  # latest start
    hi[-1], limit = last, last
    for i in range(n - 2, 0, -1):
        hi[i] = released.rfind(rest[i], lo[i], limit)
        if hi[i] < 0:
            return None
        limit = hi[i]
    return [(o_at[i], lo[i], len(rest[i])) for i in range(n) if i in (0, n - 1) or lo[i] == hi[i]]


class _FirstOverlap:
    """The category of the first span (by start) overlapping ``[lo, hi)``, by bisection on the
    running maximum of the spans' ends (not a scan of every span per window)."""

    def __init__(self, found) -> None:
        self.found = found
        self.starts = [s.start for s in found]
        self.reach, top = [], -1
        for s in found:
            top = max(top, s.end)
            self.reach.append(top)

    def within(self, lo: int, hi: int) -> list:
        """The spans overlapping ``[lo, hi)``, by start."""
        j = bisect_right(self.reach, lo)
        out = []
        while j < len(self.found) and self.starts[j] < hi:
            if self.found[j].end > lo:
                out.append(self.found[j])
            j += 1
        return out

    def __call__(self, lo: int, hi: int) -> str:
        j = bisect_right(self.reach, lo)  # the first span ending after lo
        if j < len(self.found) and self.starts[j] < hi:
            return self.found[j].category
        return "REPLACED"


def _align(original: str, released: str, o: tuple[int, int], r: tuple[int, int], verbatim,
           out: list[dict], category, treatments: dict) -> None:
    """Word-by-word alignment (difflib) of ``original[o]`` with ``released[r]``, adding the
    spans of the release's window to ``out``."""
    from difflib import SequenceMatcher

    if r[0] >= r[1]:
        return
    a, a_at = _tokens(original[o[0]:o[1]])
    b, b_at = _tokens(released[r[0]:r[1]])
    a_at = [x + o[0] for x in a_at]
    b_at = [x + r[0] for x in b_at]
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if j1 == j2:
            continue
        start, end = b_at[j1], b_at[j2]
        if tag == "equal":
            verbatim(start, end)
            continue
        lo, hi = a_at[i1], a_at[i2]
        before, after = original[lo:hi], released[start:end]
        # the separators the replaced words keep on either side are verbatim
        head = len(before) - len(before.lstrip(" \t\n.,;:()[]'\""))
        head = next((k for k in range(min(head, len(after)))
                     if before[k] != after[k]), min(head, len(after)))
        tail = len(before) - len(before.rstrip(" \t\n.,;:()[]'\""))
        tail = next((k for k in range(min(tail, len(after) - head))
                     if before[-1 - k] != after[-1 - k]), min(tail, len(after) - head))
        verbatim(start, start + head)
        if start + head >= end - tail:
            continue
        lo, hi = lo + head, hi - tail
        for a0, a1, cat in _split(original, released, (lo, hi), (start + head, end - tail),
                                  category):
            if cat is None:
                verbatim(a0, a1)
            else:
                out.append({"start": a0, "end": a1, "kind": "entity", "category": cat,
                            "reason": f"{cat}: {treatments.get(cat) or 'replaced'}"})
        verbatim(end - tail, end)


def _split(original: str, released: str, o: tuple[int, int], r: tuple[int, int], category
           ) -> list[tuple[int, int, str | None]]:
    """A replaced window of the release cut at the text between the original spans it
    replaces, where that text stands in the release at one place only (the leftmost and the
    rightmost search agree): each part gets its own span's category, the text between them
    is verbatim (``None``). Otherwise the window whole, with its first span's category."""
    spans = category.within(*o)
    whole = [(r[0], r[1], category(*o))]
    if len(spans) < 2:
        return whole
    gaps = [original[a.end:b.start] for a, b in zip(spans, spans[1:], strict=False)]
    if any(not g or a.end > b.start for g, (a, b) in zip(gaps, zip(spans, spans[1:],
                                                                   strict=False), strict=True)):
        return whole
    left, pos = [], r[0]
    for g in gaps:
        at = released.find(g, pos, r[1])
        if at < 0:
            return whole
        left.append(at)
        pos = at + len(g)
    right, limit = [], r[1]
    for g in reversed(gaps):
        at = released.rfind(g, r[0], limit)
        right.append(at)
        limit = at
    if left != right[::-1]:
        return whole
    out, pos = [], r[0]
    for s, at, g in zip(spans, left, gaps, strict=False):
        out.append((pos, at, s.category))
        out.append((at, at + len(g), None))
        pos = at + len(g)
    out.append((pos, r[1], spans[-1].category))
    return [p for p in out if p[0] < p[1]]
