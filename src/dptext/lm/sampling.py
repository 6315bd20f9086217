"""The clipped exponential mechanism over the candidate set (DP-MLM paper, sections 3.2.1, 4.1).

Score u(x, y) = clip(logit_y(x), lo, hi); the sensitivity of u is Delta_u = hi - lo for ANY two
inputs x, x'. Sampling y with probability proportional to exp(epsilon * u / (2 Delta_u)) is the
exponential mechanism (McSherry & Talwar 2007): epsilon-DP. In the paper's terms this is
temperature sampling with T = 2 Delta_u / epsilon. We sample all rows at once in torch by
inversion: one uniform per row against the float64 cumulative sum of the probabilities (exact
up to float64 rounding, and ~10x cheaper than Gumbel-max, which needs one random number and two
logarithms per candidate), never a Python loop over the vocabulary.
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
    """One draw per row of ``scores`` (rows x candidates): the index of the chosen candidate."""
    import torch

    z = scores.double().clamp(lo, hi) / temperature(epsilon, lo, hi)
    cdf = (z - z.amax(dim=-1, keepdim=True)).exp_().cumsum(dim=-1)
    u = torch.rand((cdf.shape[0], 1), generator=generator, dtype=torch.float64) * cdf[:, -1:]
    # the first index whose cumulative mass exceeds u: P(i) = p_i / sum(p)
    index = torch.searchsorted(cdf, u, right=True).squeeze(-1)
    return index.clamp_max(cdf.shape[-1] - 1).numpy()
