"""Audit of the truncated Gumbel guarantee (Theorem 1) with exact output distributions.

For small vocabularies, ``distribution()`` computes P(M(w) = u) exactly (mixture over the
truncated Poisson k of argmin probabilities by quadrature). The printed guarantee is
epsilon*d metric DP, so for every pair of inputs and every output,
log P(M(w)=u) - log P(M(w')=u) <= epsilon * d(w, w'). docs/mechanisms.md records why this is
worth checking (a step of the paper's proof is loose).
"""

import math

import numpy as np
import pytest

import dptext
import dptext.mechanisms.truncated_gumbel as tg
from dptext import EmbeddingSpace


def small_space(n: int, seed: int) -> EmbeddingSpace:
    rng = np.random.default_rng(seed)
    return EmbeddingSpace([f"w{i}" for i in range(n)],
                          rng.standard_normal((n, 3)).astype(np.float32), name=f"audit{seed}")


def exact_matrix(m) -> np.ndarray:
    return np.array([m.distribution(w)[1] for w in m.space.words])


@pytest.mark.parametrize(("rule", "factor", "seed"),
                         [("paper", 1.0001, 1), ("tight", 1.0001, 2), ("tight", 3.0, 3)])
def test_exact_privacy_loss_within_epsilon_d(rule, factor, seed):
    space = small_space(7, seed)
    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    eps = factor * tg.minimum_epsilon(**geo, rule=rule)
    m = dptext.mechanism("gumbel", space=space, epsilon=eps, b=rule).fit(cache=False)
    p = exact_matrix(m)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-9)
    d = space.pairwise(np.arange(len(space)))
    loss = np.log(p[:, None, :]) - np.log(p[None, :, :])  # [w, w', u]
    worst = loss.max(2)
    off = ~np.eye(len(space), dtype=bool)
    assert (worst[off] <= eps * d[off] + 1e-9).all()


def test_exact_distribution_matches_sampling():
    space = small_space(6, 4)
    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    m = dptext.mechanism("gumbel", space=space, b="tight",
                         epsilon=2 * tg.minimum_epsilon(**geo, rule="tight")).fit(cache=False)
    words, probs = m.distribution("w0")
    n = 100_000
    out = m._sample(np.zeros(n, dtype=np.int64), np.random.default_rng(5))
    freq = np.bincount(out, minlength=len(space)) / n
    tol = 5 * np.sqrt(probs * (1 - probs) / n) + 1e-12
    assert (np.abs(freq - probs) <= tol).all()
    assert words == space.words


def test_exact_distribution_refuses_large_vocabularies():
    space = small_space(tg._EXACT_LIMIT + 1, 6)
    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    m = dptext.mechanism("gumbel", space=space, b="tight",
                         epsilon=math.ceil(2 * tg.minimum_epsilon(**geo, rule="tight")))
    with pytest.raises(dptext.DPTextError, match="at most"):
        m.fit(cache=False).distribution("w0")
