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
