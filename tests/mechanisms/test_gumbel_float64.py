"""Issue 47, F7: the truncated Gumbel noise rule reads Delta_min in float64, never the kNN
table's float32 copy rounded up. b="tight" leaves no slack in Appendix A's condition
K1 + (1/Delta_min + 2/b) exp(2 Delta_max / b) <= epsilon, so a Delta_min 3e-8 too large gave a b
whose true bound exceeded epsilon (the audit: 250.0000102 > 250 on the default space). The
bound is checked here with Delta_min computed independently (all pairs, float64) and no
tolerance at all: it holds to the last digit."""

from __future__ import annotations

import numpy as np
import pytest

import dptext
import dptext.mechanisms.truncated_gumbel as tg
from dptext import EmbeddingSpace

# seeds 0 and 1: the float32 Delta_min is above the float64 one (the case that failed);
# seed 2: below it (the case that was already safe)
SEEDS = (0, 1, 2)


def _space(seed: int, n: int = 40, dim: int = 8) -> tuple[EmbeddingSpace, float]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    space = EmbeddingSpace([f"w{i}" for i in range(n)], vectors, name=f"f7-{seed}")
    x = vectors.astype(np.float64)
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    d[np.eye(n, dtype=bool)] = np.inf
    return space, float(d.min())


def test_the_seeds_cover_a_float32_delta_min_rounded_up():
    rounded_up = [_space(s)[0].delta_min > _space(s)[1] for s in SEEDS]
    assert rounded_up == [True, True, False]


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_delta_min_is_the_float64_minimum_never_above_it(seed):
    space, d64 = _space(seed)
    got = tg.exact_delta_min(space)
    assert got <= d64
    assert got == pytest.approx(d64, rel=2e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("factor", [1.000001, 1.5, 4.0])
def test_tight_scale_meets_the_float64_bound_to_the_last_digit(seed, factor):
    space, d64 = _space(seed)
    m = dptext.mechanism("gumbel", space=space, b="tight", epsilon=1.0)
    least = m.least_epsilon()
    # the infimum of the admissible epsilons is the float64 one, not below it
    assert least >= tg.minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                       delta_min=d64, rule="tight")
    eps = factor * least
    m = dptext.mechanism("gumbel", space=space, b="tight", epsilon=eps).fit(cache=False)
    true_bound = tg.bound(m.b, vocab_size=len(space), delta_max=space.delta_max, delta_min=d64)
    assert true_bound <= eps, (true_bound, eps)


@pytest.mark.parametrize("seed", SEEDS)
def test_paper_scale_meets_the_float64_bound(seed):
    space, d64 = _space(seed)
    least = dptext.mechanism("gumbel", space=space, b="paper", epsilon=1.0).least_epsilon()
    eps = 1.01 * least
    m = dptext.mechanism("gumbel", space=space, b="paper", epsilon=eps).fit(cache=False)
    assert tg.bound(m.b, vocab_size=len(space), delta_max=space.delta_max,
                    delta_min=d64) <= eps * (1 + 1e-12)


def test_a_table_fitted_with_the_float32_delta_min_is_refused():
    """A b computed from the rounded-up Delta_min (what a cached table of the old code holds)
    fails validation now."""
    space, _ = _space(1)
    geo32 = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    eps = 1.5 * tg.minimum_epsilon(**geo32, rule="tight")
    old_b = tg.tight_scale(eps, **geo32)
    m = dptext.mechanism("gumbel", space=space, b="tight", epsilon=eps).fit(cache=False)
    assert m.b > old_b
    with pytest.raises(dptext.DPTextError, match="guarantees only epsilon"):
        m.validate_tables({"b": np.array(old_b)})
