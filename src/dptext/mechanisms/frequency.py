"""Public word-frequency ordering (wordfreq), so that no table depends on private data."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dptext.embeddings import EmbeddingSpace
from dptext.text import normalize_word


def frequency_order(space: EmbeddingSpace, frequencies: Mapping[str, float] | None = None):
    """Rows of ``space`` from most to least frequent.

    Default: public English frequencies from wordfreq (ties keep row order). ``frequencies``
    (e.g. counts from a user corpus) replaces them; words it lacks count as 0.
    """
    if frequencies is None:
        freq = public_frequencies(space)
    else:
        table = {normalize_word(w): float(f) for w, f in frequencies.items()}
        freq = np.array([table.get(w, 0.0) for w in space.words])
    return np.argsort(-freq, kind="stable")


def public_frequencies(space: EmbeddingSpace) -> np.ndarray:
    """wordfreq's English frequency of every word of ``space`` (0 for unknown words)."""
    import wordfreq

    return np.array([wordfreq.word_frequency(w, "en") for w in space.words], dtype=np.float64)
