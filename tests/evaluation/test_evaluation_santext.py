"""SanText in the grid: one shared distance pass for several epsilons gives the tables (hence the
distributions) of separate fits; the batched likelihoods of the Bayes attack equal
``distribution()`` and give the same MAP guesses as the per-word path."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.evaluation.grid import GridConfig, run_grid
from dptext.evaluation.inversion import map_guesses, word_prior
from dptext.mechanisms.santext import SanText, SanTextPlus

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

EPSILONS = [0.5, 3.0, 40.0]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))


def _many_words() -> list[str]:
    import wordfreq

    return [w for w in wordfreq.top_n_list("en", 300) if w.isalpha()][:150]


# kNN rows shorter than the vocabulary: the far part is exercised
SPACE = dict(words=_many_words, seed=11, dim=5, name="santext-many",
             geometry=16)  # the space fixture (conftest.py)


@pytest.mark.parametrize("cls", [SanText, SanTextPlus])
def test_one_pass_for_many_epsilons_gives_the_tables_of_separate_fits(space, cls):
    shared = cls.fit_many(EPSILONS, space=space)
    for eps, m in zip(EPSILONS, shared, strict=True):
        alone = cls(epsilon=eps, space=space).fit(cache=False)
        assert m.epsilon == eps
        assert set(m._tables) == set(alone._tables)
        for key, table in alone._tables.items():
            np.testing.assert_array_equal(m._tables[key], table, err_msg=f"{eps} {key}")
        # same tables and seed: the same draws
        rows = np.arange(len(space)).repeat(3)
        np.testing.assert_array_equal(m._sample(rows, np.random.default_rng(5)),
                                      alone._sample(rows, np.random.default_rng(5)))
    # the pass saved every epsilon: a later fit loads it, whatever the order
    again = cls.fit_many(EPSILONS[::-1], space=space)
    np.testing.assert_array_equal(again[-1]._tables["p_near"], shared[0]._tables["p_near"])


def test_shared_pass_keeps_the_sampling_distribution(space):
    """Draws of a shared-pass fit follow distribution() (chi-square-free check: every word's
    frequency within 4 binomial standard errors)."""
    m = SanText.fit_many([2.0, 9.0], space=space)[1]
    word = space.words[3]
    words, probs = m.distribution(word)
    n = 20000
    out = m._sample(np.full(n, 3), np.random.default_rng(8))
    freq = np.bincount(out, minlength=len(space)) / n
    expected = np.zeros(len(space))
    expected[[space.index[w] for w in words]] = probs
    assert np.all(np.abs(freq - expected) <= 4 * np.sqrt(expected * (1 - expected) / n) + 1e-3)


@pytest.mark.parametrize("cls", [SanText, SanTextPlus])
def test_likelihood_matrix_equals_distribution(space, cls):
    m = cls(epsilon=3.0, space=space).fit(cache=False)
    inputs = np.array([0, 5, 77, 149])
    outputs = np.arange(len(space))
    mat = m.likelihood_matrix(inputs, outputs, block=3)
    for i, r in enumerate(inputs):
        words, probs = m.distribution(space.words[r])
        dense = np.zeros(len(space))
        np.add.at(dense, [space.index[w] for w in words], probs)
        np.testing.assert_allclose(mat[i], dense, rtol=1e-12, atol=1e-15)
        assert mat[i].sum() == pytest.approx(1.0)


def test_batched_map_guesses_equal_the_per_word_path(space):
    m = SanText(epsilon=6.0, space=space).fit(cache=False)

    class PerWord:  # the same distribution, without the batched likelihoods
        distribution = m.distribution

        @staticmethod
        def supports(capability: str) -> bool:
            return capability == "distribution"

    prior = word_prior(space)
    observed = np.arange(0, len(space), 2)
    fast = map_guesses(m, space, prior, observed, top=40, knn=5)
    assert fast == map_guesses(PerWord(), space, prior, observed, top=40, knn=5)
    # at a large epsilon the MAP guess is mostly the output itself
    assert np.mean([fast[r] == r for r in observed.tolist()]) > 0.5


def test_grid_fits_santext_once_for_all_its_epsilons(space, tmp_path, monkeypatch):
    calls = []
    original = SanText._fit_tables_many

    def counting(self, s, epsilons):
        calls.append(list(epsilons))
        return original(self, s, epsilons)

    monkeypatch.setattr(SanText, "_fit_tables_many", counting)
    config = GridConfig(mechanisms=["santext"], epsilons={"santext": [1.0, 4.0]},
                        metrics=["cost", "inversion"], n_train=10, n_test=10,
                        inversion_samples=60, bayes_samples=20, encoder="hashing",
                        baselines=False)
    records = run_grid(config, tmp_path / "grid", space=space, progress=False)
    assert [r["status"] for r in records] == ["ok"] * 4
    assert calls == [[1.0, 4.0]]
    assert all(r["values"]["bayes"] is not None for r in records if r["metric"] == "inversion")
