"""Canary exposure (Carlini et al. 2019, "The Secret Sharer", section 4).

A canary is a sentence with a made-up secret (a phone number of ``length`` digits) planted in one
user's data. exposure = log2 |R| - log2 rank, where rank is the canary's rank by model loss among
the candidates R (all fillings of the secret); estimated from ``n_candidates`` random fillings as
-log2((1 + #{candidates with loss <= canary}) / (n_candidates + 1)).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dptext.training.lstm import Params, sentence_nll
from dptext.training.vocab import Vocabulary

TEMPLATE = "my phone number is {}"


def canary_text(digits: tuple[int, ...]) -> str:
    return TEMPLATE.format(" ".join(str(d) for d in digits))


def random_secret(length: int, rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(0, 10, length))


@torch.no_grad()
def exposure(params: Params, vocab: Vocabulary, secret: tuple[int, ...], *,
             n_candidates: int = 2000, rng: np.random.Generator | None = None,
             max_len: int = 24) -> float:
    """Estimated exposure of the canary with ``secret`` (bits; at most log2(n_candidates + 1))."""
    rng = rng or np.random.default_rng()
    candidates = {canary_text(random_secret(len(secret), rng)) for _ in range(n_candidates)}
    candidates.discard(canary_text(secret))
    texts = [canary_text(secret), *sorted(candidates)]
    nll, _ = sentence_nll(params, vocab.encode(texts, max_len))
    rank = int((nll[1:] <= nll[0]).sum()) + 1
    return -math.log2(rank / (len(texts)))
