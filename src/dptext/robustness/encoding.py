"""Texts as padded matrices of embedding-space rows, the input of the classifier and the attack.

Row ``i < len(space)`` is word ``i`` of the space; ``unk_id(space) == len(space)`` stands for
every out-of-vocabulary word (a zero vector: the model sees "some unknown word"); padding is
``PAD = -1`` (masked out). Only in-vocabulary positions can be substituted by a mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.embeddings import EmbeddingSpace
from dptext.text import normalize_word, split_words

PAD = -1


def unk_id(space: EmbeddingSpace) -> int:
    return len(space)


def encode(texts: Sequence[str], space: EmbeddingSpace, *, max_len: int = 64) -> np.ndarray:
    """``(len(texts), L)`` int64 rows (``L`` = longest text, at most ``max_len``; longer texts
    are truncated), ``PAD`` after the end of each text. An empty text gets one UNK token."""
    unk = unk_id(space)
    index = space.index
    encoded = []
    for text in texts:
        words = split_words(text)[1::2][:max_len]
        encoded.append([index.get(normalize_word(w), unk) for w in words] or [unk])
    width = max((len(e) for e in encoded), default=1)
    out = np.full((len(encoded), width), PAD, dtype=np.int64)
    for i, e in enumerate(encoded):
        out[i, : len(e)] = e
    return out


def substitutable(ids: np.ndarray, space: EmbeddingSpace) -> np.ndarray:
    """Mask of positions a word mechanism can replace (in-vocabulary words)."""
    return (ids >= 0) & (ids < len(space))
