"""Plausible deniability statistics N_w and S_w (Feyisetan et al. 2020; truncated Gumbel paper,
section "Plausible Deniability Analysis").

For each word w of a sample, the mechanism is run M times on w alone:
N_w = number of runs whose output is w itself, S_w = number of distinct outputs.
A mechanism that never changes a word has N_w = M and S_w = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError
from dptext.evaluation.word_sampling import privatize_words
from dptext.mechanisms.base import Mechanism
from dptext.text import normalize_word


@dataclass(frozen=True)
class Deniability:
    words: list[str]
    n_w: np.ndarray  # int, per word
    s_w: np.ndarray  # int, per word
    runs: int

    def summary(self) -> dict[str, float]:
        return {
            "N_w_mean": float(self.n_w.mean()), "N_w_std": float(self.n_w.std()),
            "S_w_mean": float(self.s_w.mean()), "S_w_std": float(self.s_w.std()),
            "N_w_fraction": float(self.n_w.mean() / self.runs), "runs": self.runs,
            "words": len(self.words),
        }


def plausible_deniability(m: Mechanism, words: Sequence[str], *, runs: int,
                          rng: np.random.Generator) -> Deniability:
    if runs < 1:
        raise DPTextError(f"runs must be >= 1, got {runs}")
    words = [normalize_word(w) for w in words]
    outputs = np.array(privatize_words(m, np.repeat(words, runs).tolist(), rng), dtype=object)
    outputs = outputs.reshape(len(words), runs)
    n_w = (outputs == np.array(words, dtype=object)[:, None]).sum(1).astype(np.int64)
    s_w = np.array([len(set(row)) for row in outputs], dtype=np.int64)
    return Deniability(words, n_w, s_w, runs)
