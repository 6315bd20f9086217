"""The clipped exponential mechanism over the candidate set (DP-MLM paper, sections 3.2.1, 4.1).

Score u(x, y) = clip(logit_y(x), lo, hi); the sensitivity of u is Delta_u = hi - lo for ANY two
inputs x, x'. Sampling y with probability proportional to exp(epsilon * u / (2 Delta_u)) is the
exponential mechanism (McSherry & Talwar 2007): epsilon-DP. In the paper's terms this is
temperature sampling with T = 2 Delta_u / epsilon. We sample with the Gumbel-max trick on the
whole batch of rows at once (torch), never a Python loop over the vocabulary.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms.base import check_epsilon


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
    """One draw per row of ``scores`` (rows x candidates): the index of the chosen candidate."""
    import torch

    logp = clipped_log_probs(scores.float(), epsilon=epsilon, lo=lo, hi=hi)
    u = torch.rand(logp.shape, generator=generator, dtype=torch.float64)
    u = u.clamp_min(torch.finfo(torch.float64).tiny)
    gumbel = -torch.log(-torch.log(u))
    return torch.argmax(logp.double() + gumbel, dim=-1).numpy()
