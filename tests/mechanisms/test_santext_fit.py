"""SanText's epsilon-free fit: a fit at a never-fitted epsilon reads only the cached kNN table
(no |V| x |V_s| pass), and the envelope sampler is exact there, including SanText+ rows whose
kNN list holds no sensitive word (their shift needs the distances beyond the table)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import dptext.mechanisms.santext as santext_module
from dptext.embeddings import EmbeddingSpace
from dptext.mechanisms.santext import SanText, SanTextPlus

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

P_MIN = 1e-4  # chi-square p-value below which a draw is called wrong (4 tests: ~4e-4 by chance)


def make_space(n: int, seed: int) -> EmbeddingSpace:
    """n > 64 (the kNN rows SanText uses): far draws are exercised."""
    v = np.random.default_rng(seed).standard_normal((n, 6)).astype(np.float32)
    return EmbeddingSpace([f"w{i:03d}" for i in range(n)], v, name=f"santext-fit-{seed}")


def exact_distances(space: EmbeddingSpace) -> np.ndarray:
    x = space.vectors.astype(np.float64)
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square goodness of fit, cells with expected count < 5 pooled."""
    expected = probs / probs.sum() * counts.sum()
    small = expected < 5
    obs, exp = counts[~small], expected[~small]
    if small.any():
        obs, exp = np.append(obs, counts[small].sum()), np.append(exp, expected[small].sum())
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))


def test_a_never_fitted_epsilon_needs_no_pass_over_all_pairs(monkeypatch):
    space = make_space(150, 3)

    def no_pass(*args, **kwargs):
        raise AssertionError("SanText (w=1) fit computed distances beyond the kNN table")

    monkeypatch.setattr(santext_module, "_nearest_distance", no_pass)
    monkeypatch.setattr(space, "pairwise", no_pass)
    m = SanText(epsilon=3.71, space=space).fit()
    assert m._tables["p_near"].shape == (150,)


@pytest.mark.parametrize("eps", [0.83, 7.3])  # epsilons no other test or cache has fitted
def test_sampling_at_a_new_epsilon_is_exact(eps):
    space = make_space(300, 4)
    m = SanText(epsilon=eps, space=space).fit()
    d = exact_distances(space)
    for x in (5, 90):
        ref = np.exp(-eps * d[x] / 2)
        ref /= ref.sum()
        _, probs = m.distribution(space.words[x])
        np.testing.assert_allclose(probs, ref, rtol=1e-9)
        n = 60_000
        counts = np.bincount(m._sample(np.full(n, x), np.random.default_rng(17 + x)),
                             minlength=len(space))
        near = np.argsort(d[x])[:64]
        if eps < 1:
            assert ref[near].sum() < 0.5  # most draws go through the envelope (far) rounds
        assert chi2_p(counts, ref) > P_MIN


def test_santext_plus_rows_without_a_sensitive_neighbour():
    space = make_space(400, 5)
    m = SanTextPlus(epsilon=2.9, space=space, sensitive_fraction=0.02, p=1.0).fit()
    sensitive = m._tables["sensitive"]
    lost = np.flatnonzero(m._tables["near_count"] == 0)
    assert len(lost) > 10  # the case is exercised
    d = exact_distances(space)
    np.testing.assert_allclose(m._tables["shift"][lost], d[lost][:, sensitive].min(1),
                               rtol=1e-5)
    x = int(lost[0])
    ref = np.where(sensitive, np.exp(-2.9 * d[x] / 2), 0.0)
    n = 40_000
    counts = np.bincount(m._sample(np.full(n, x), np.random.default_rng(3)),
                         minlength=len(space))
    assert counts[~sensitive].sum() == 0
    assert chi2_p(counts[sensitive], ref[sensitive]) > P_MIN


def test_tables_saved_by_the_exact_far_mass_sampler_are_refitted(tmp_path):
    space = make_space(100, 6)
    m = SanText(epsilon=2.2, space=space).fit(cache=False)
    old = {k: v for k, v in m._tables.items() if k != "layout"}
    old["p_near"] = np.full(len(space), 0.5)  # what the old format stored means something else
    path = m.save(tmp_path / "old.npz", old)
    again = SanText(epsilon=2.2, space=space).load(path)
    np.testing.assert_array_equal(again._tables["p_near"], m._tables["p_near"])


@pytest.mark.parametrize("eps", [19.1])  # an epsilon no other test or cache has fitted
def test_sampling_at_another_new_epsilon_matches_the_realized_law(eps):
    space = make_space(300, 8)
    m = SanText(epsilon=eps, space=space).fit()
    x = 42
    law = np.exp(m.realized_log_probabilities(x))
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    n = 60_000
    counts = np.bincount(m._sample(np.full(n, x), np.random.default_rng(5)),
                         minlength=len(space))
    assert chi2_p(counts, law) > P_MIN


def test_huge_epsilon_realizes_every_probability_and_the_guarantee():
    """At eps 400 most probabilities are far below 2^-53: the grid sampler realized them as 0
    (1 - p_near rounds to 0: no far word could ever be drawn); the exact sampler realizes each
    within float32 distance rounding of its target, so the privacy loss between two inputs is
    at most eps * d(x, x') (+ that rounding)."""
    eps = 400.0
    space = make_space(300, 9)
    m = SanText(epsilon=eps, space=space).fit()
    d = exact_distances(space)
    t = m._tables
    assert (1.0 - t["p_near"] == 0.0).any() and np.isfinite(t["log_p_far"]).all()
    laws = {}
    for x in (3, 4, 150):
        lp = m.realized_log_probabilities(x)
        target = -eps / 2 * d[x] - np.logaddexp.reduce(-eps / 2 * d[x])
        assert np.isfinite(lp).all()  # every word keeps a positive probability
        assert (np.exp(target) < 2.0**-53).sum() > 200  # the regime the grid cannot represent
        # float32 distances: |d~ - d| <~ 1e-6 here, so the log-probabilities agree to eps*1e-6
        np.testing.assert_allclose(lp, target, rtol=0, atol=eps * 2e-6)
        laws[x] = lp
    for a, b in ((3, 4), (3, 150), (4, 150)):
        loss = np.abs(laws[a] - laws[b]).max()
        assert loss <= eps * d[a, b] * (1 + 1e-5) + eps * 4e-6
