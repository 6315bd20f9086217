"""Words (from :func:`dptext.text.split_words`) aligned to tokens (from fast-tokenizer offsets)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Aligned:
    """A text's token ids and, per word, the token range ``[start, end)`` that covers it.

    A word spanning several sub-word tokens gets their whole range (masked as one position). A
    word no token covers (a tokenizer that drops characters) gets an empty range at the place
    it would have been, so it is still masked/inserted there, never skipped.
    """

    ids: list[int]
    starts: np.ndarray
    ends: np.ndarray


def word_spans(parts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Character (start, end) of each word in ``"".join(parts)`` (words at odd positions)."""
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return offsets[1:-1:2], offsets[2::2]


def align(tokenizer, text: str, parts: list[str]) -> Aligned:
    """Tokenize ``text`` (no special tokens) and map every word to its token range."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                    split_special_tokens=True)
    offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    w_start, w_end = word_spans(parts)
    t_start, t_end = offsets[:, 0], offsets[:, 1]
    # first token ending after the word start / first token starting at or after the word end
    first = np.searchsorted(np.maximum.accumulate(t_end), w_start, side="right")
    stop = np.searchsorted(t_start, w_end, side="left")
    stop = np.maximum(stop, first)
    return Aligned(list(enc["input_ids"]), first, stop)
