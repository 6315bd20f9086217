"""Privatize isolated words many times: the input of the deniability and inversion metrics.

Word-level mechanisms are sampled through their vectorized core (``sample_rows`` over vocabulary
rows: no tokenization, one draw for all repetitions). Any other mechanism (a language-model
rewriter) privatizes each word as a one-word text; its output is compared after
:func:`dptext.text.normalize_word` of the stripped text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism
from dptext.text import normalize_word


def privatize_words(m: Mechanism, words: Sequence[str], rng: np.random.Generator) -> list[str]:
    """One independent privatization of each word (repeat a word to sample it again)."""
    if isinstance(m, WordMechanism):
        space = m.fitted_space()
        rows = np.array([space.lookup(w) for w in words], dtype=np.int64)
        out = list(words)
        ok = np.flatnonzero(rows >= 0)
        if len(ok):
            drawn = m.sample_rows(rows[ok], rng)
            for i, r in zip(ok.tolist(), drawn.tolist(), strict=True):
                out[i] = space.words[r]
        return [normalize_word(w) for w in out]
    results = m.privatize_batch(list(words), rng=rng)
    return [normalize_word(r.text.strip()) for r in results]
