"""The clipped exponential mechanism over the candidate set (DP-MLM paper, sections 3.2.1, 4.1).

Score u(x, y) = clip(logit_y(x), lo, hi); the sensitivity of u is Delta_u = hi - lo for ANY two
inputs x, x'. Sampling y with probability proportional to exp(epsilon * u / (2 Delta_u)) is the
exponential mechanism (McSherry & Talwar 2007): epsilon-DP. In the paper's terms this is
temperature sampling with T = 2 Delta_u / epsilon. Draws are exact for every probability,
also below 2^-53 (:func:`sample`, through :mod:`dptext.exact_sampling`), never a Python loop
over the vocabulary.
"""

from __future__ import annotations

import numpy as np

from dptext.validation import check_epsilon


def temperature(epsilon: float, lo: float, hi: float) -> float:
    """T = 2 (hi - lo) / epsilon."""
    return 2.0 * (hi - lo) / check_epsilon(epsilon)


def clipped_log_probs(scores, *, epsilon: float, lo: float, hi: float):
    """log softmax(clip(scores, lo, hi) / T) along the last axis (torch tensor in and out)."""
    import torch

    return torch.log_softmax(scores.clamp(lo, hi) / temperature(epsilon, lo, hi), dim=-1)


def torch_generator(rng: np.random.Generator):
    """A torch generator seeded from ``rng`` (itself OS entropy unless seeded by the caller)."""
    import torch

    return torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))


def sample(scores, *, epsilon: float, lo: float, hi: float, generator) -> np.ndarray:
    """One draw per row of ``scores`` (rows x candidates): the index of the chosen candidate.

    Exact: a plain inverse CDF against one double uniform realizes probabilities only on the
    2^-53 grid, so a candidate whose probability is below 2^-53 (at epsilon 150 over 31,664
    candidates, most of them) would be drawn with probability 0 or ~2^-53, and the realized
    privacy loss would be unbounded. :func:`dptext.exact_sampling.sample_logits` draws every
    probability exactly (block first, then within the block; docs/reliability.md). Its
    generator is seeded from ``generator``'s stream (itself OS entropy unless seeded)."""
    import torch

    from dptext.exact_sampling import sample_logits

    z = scores.double().clamp(lo, hi) / temperature(epsilon, lo, hi)
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return sample_logits(z.numpy(), np.random.default_rng(seed))
