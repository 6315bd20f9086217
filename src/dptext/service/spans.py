"""Which characters of a sanitized text were privatized, kept or replaced, and why.

Word mechanisms replace word i of the input by word i of the output and keep everything between
words verbatim, so the output's words line up with the input's (``dptext.text.split_words``);
each output word gets the kind the pipeline gave the input word (``WordMechanism.word_kinds``).
Where the output does not line up (an LM rewriting, a multi-word placeholder), the whole text
is one span of kind ``rewritten``.
"""

from __future__ import annotations

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


def _tokens(text: str) -> tuple[list[str], list[int]]:
    """The words and the separators between them, and where each starts (one more: the end)."""
    parts = [p for p in split_words(text) if p]
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p)
    return parts, starts + [pos]


def entity_spans(m, original: str, released: str, report) -> list[dict]:
    """Spans over ``released`` for entity mode: text that differs from the original is one
    span of ``kind`` ``"entity"`` with the ``category`` of the detected span it replaced (its
    treatment as the reason); text released as it was is ``"verbatim"``. The two texts are
    aligned word by word (difflib), so every character of the output is in one span."""
    from difflib import SequenceMatcher

    found = m.detect([original])[0]
    found = sorted(list(found) + m.residual_tokens(original, found), key=lambda s: s.start)
    treatments = {cat: info.get("treatment", "") for cat, info in
                  (getattr(report, "spans", None) or {}).items()}
    a, a_at = _tokens(original)
    b, b_at = _tokens(released)
    out: list[dict] = []

    def verbatim(start: int, end: int) -> None:
        if start >= end:
            return
        if out and out[-1]["kind"] == "verbatim" and out[-1]["end"] == start:
            out[-1]["end"] = end
        else:
            out.append({"start": start, "end": end, "kind": "verbatim", "reason": VERBATIM})

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
        cats = [s.category for s in found if s.start < hi and s.end > lo] or ["REPLACED"]
        cat = cats[0]
        out.append({"start": start + head, "end": end - tail, "kind": "entity", "category": cat,
                    "reason": f"{cat}: {treatments.get(cat) or 'replaced'}"})
        verbatim(end - tail, end)
    return out
