"""Each metric on tiny inputs with known answers (hand computations, exact or within binomial
tolerances derived from the sample size)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.evaluation.attribute import attribute_inference, majority_accuracy, relative_gain
from dptext.evaluation.baselines import Noiseless, RandomReplacement, build_mechanism
from dptext.evaluation.deniability import plausible_deniability
from dptext.evaluation.encoders import make_encoder
from dptext.evaluation.inversion import (
    bayes_success,
    map_guesses,
    success_bound,
    token_inversion,
    word_prior,
)
from dptext.evaluation.utility import bleu, cosine_similarity, downstream_accuracy
from dptext.mechanisms.word import WordMechanism


def tiny_space(n: int = 60, dim: int = 6, seed: int = 1) -> EmbeddingSpace:
    import wordfreq

    words = [w for w in wordfreq.top_n_list("en", 3 * n) if w.isalpha()][:n]
    rng = np.random.default_rng(seed)
    return EmbeddingSpace(words, rng.standard_normal((n, dim)), name="tiny")


class MatrixMechanism(WordMechanism):
    """A toy word mechanism with an explicit transition matrix P[x, y] and a stated guarantee."""

    name = "matrix"
    summary = guarantee_summary = "test"
    capabilities = frozenset({"sample_rows", "distribution"})

    def __init__(self, *, space, matrix, guarantee: TokenGuarantee) -> None:
        super().__init__(epsilon=1.0, space=space)
        self.matrix = np.asarray(matrix, dtype=np.float64)
        self._g = guarantee

    @property
    def guarantee(self) -> TokenGuarantee:
        return self._g

    def _fit_tables(self, space):
        return {}

    def fit(self, **kwargs):
        return super().fit(cache=False)

    def _sample(self, rows, rng):
        cum = np.cumsum(self.matrix[rows], axis=1)
        return (cum < rng.random(len(rows))[:, None]).sum(1)

    def distribution(self, word):
        row = self._fitted_space().lookup(word)
        return list(self.space.words), self.matrix[row]


THREE = EmbeddingSpace(["apple", "bread", "cheese"], np.array([[0.0], [1.0], [3.0]]),
                       name="line")


def test_bayes_adversary_matches_hand_computation_on_three_words():
    # prior (0.5, 0.3, 0.2); P rows = inputs, columns = outputs
    prior = np.array([0.5, 0.3, 0.2])
    p = [[0.5, 0.4, 0.1], [0.2, 0.6, 0.2], [0.1, 0.2, 0.7]]
    m = MatrixMechanism(space=THREE, matrix=p,
                        guarantee=TokenGuarantee(GuaranteeKind.PURE, math.log(7), scope="all"))
    m.fit()
    # by hand: y=apple: .25 .06 .02 -> apple; y=bread: .20 .18 .04 -> apple;
    # y=cheese: .05 .06 .14 -> cheese. Bayes success = .25 + .20 + .14 = 0.59
    assert map_guesses(m, THREE, prior, np.array([0, 1, 2])) == {0: 0, 1: 0, 2: 2}
    rng = np.random.default_rng(3)
    n = 5000
    x = rng.choice(3, size=n, p=prior)
    y = m._sample(x, rng)
    rate = bayes_success(m, THREE, prior, x, y)
    assert abs(rate - 0.59) < 4 * math.sqrt(0.59 * 0.41 / n)


def test_pure_bound_matches_hand_computation():
    prior = np.array([0.5, 0.3, 0.2])
    p = [[0.4, 0.3, 0.3], [0.3, 0.4, 0.3], [0.3, 0.3, 0.4]]  # epsilon = ln(4/3)
    m = MatrixMechanism(space=THREE, matrix=p,
                        guarantee=TokenGuarantee(GuaranteeKind.PURE, math.log(4 / 3), scope="all"))
    m.fit()
    x = np.array([0, 1, 2, 0])
    assert success_bound(m, THREE, prior, x) == pytest.approx(4 / 3 * 0.5)
    # MAP always guesses apple here: success = prior(apple) = 0.5 <= 2/3
    assert map_guesses(m, THREE, prior, np.array([0, 1, 2])) == {0: 0, 1: 0, 2: 0}


def test_metric_bound_matches_hand_computation():
    prior = np.array([0.5, 0.3, 0.2])
    eps = 0.7
    m = MatrixMechanism(space=THREE, matrix=np.full((3, 3), 1 / 3),
                        guarantee=TokenGuarantee(GuaranteeKind.METRIC, eps, scope="all"))
    m.fit()
    d = np.array([[0, 1, 3], [1, 0, 2], [3, 2, 0]], dtype=float)
    by_hand = max(prior[i] / (prior * np.exp(-eps * d[i])).sum() for i in range(3))
    assert success_bound(m, THREE, prior, np.array([0])) == pytest.approx(by_hand)


def test_noiseless_mechanism_is_fully_invertible_and_never_deniable():
    space = tiny_space()
    m = Noiseless(space=space).fit()
    rng = np.random.default_rng(0)
    inv = token_inversion(m, space, samples=200, rng=rng)
    assert inv.nn_top1 == inv.nn_topk == inv.bayes == 1.0 and inv.bound == 1.0
    d = plausible_deniability(m, space.words[:10], runs=30, rng=rng)
    assert (d.n_w == 30).all() and (d.s_w == 1).all()


def test_uniform_mechanism_gives_the_chance_rates():
    space = tiny_space()
    v = len(space)
    m = RandomReplacement(space=space).fit()
    rng = np.random.default_rng(1)
    words, runs = space.words[:20], 400
    d = plausible_deniability(m, words, runs=runs, rng=rng)
    trials = len(words) * runs
    assert abs(d.n_w.sum() - trials / v) < 4 * math.sqrt(trials / v * (1 - 1 / v))
    expected_distinct = v * (1 - (1 - 1 / v) ** runs)
    assert abs(d.s_w.mean() - expected_distinct) < 1.0
    n = 4000
    inv = token_inversion(m, space, samples=n, bayes_samples=n, rng=rng)
    prior_max = word_prior(space).max()
    assert abs(inv.nn_top1 - 1 / v) < 4 * math.sqrt(1 / v / n)
    # output independent of the input: MAP guesses the most probable word, bound = max prior
    assert inv.bound == pytest.approx(prior_max)
    assert abs(inv.bayes - prior_max) < 4 * math.sqrt(prior_max * (1 - prior_max) / n)


def test_santext_bayes_rate_stays_under_the_metric_bound():
    space = tiny_space(n=80)
    rng = np.random.default_rng(2)
    for eps in (0.5, 3.0):
        m = build_mechanism("santext", eps, space)
        m.fit(cache=False)
        inv = token_inversion(m, space, samples=1500, bayes_samples=600, rng=rng, top=80)
        s = inv.summary()
        assert not s["bayes_above_bound"], s
        assert inv.bayes >= inv.prior_max - 4 * s["bayes_se"]  # MAP is never worse than the prior


def test_custext_bayes_is_exact_over_output_sets_and_beats_the_prior_guess():
    space = tiny_space(n=80)
    m = build_mechanism("custext", 8.0, space)
    m.fit(cache=False)
    inv = token_inversion(m, space, samples=1500, rng=np.random.default_rng(4))
    s = inv.summary()
    assert not s["bayes_above_bound"]
    assert inv.bayes > inv.prior_max + 4 * s["bayes_se"]


def test_bleu_and_cosine_of_identical_and_unrelated_text():
    enc = make_encoder("hashing")
    texts = ["the cat sat on the mat today", "a dog barked at the mailman loudly"]
    assert bleu(texts, texts) == pytest.approx(100.0)
    assert cosine_similarity(enc, texts, texts) == pytest.approx(1.0, abs=1e-6)
    other = ["zebra quantum violin", "purple elephant umbrella"]
    assert bleu(texts, other) < 1.0
    assert cosine_similarity(enc, texts, other) < 0.5


def test_encoder_cache_embeds_each_text_once():
    enc = make_encoder("hashing")
    enc.encode(["a b", "c d", "a b"])
    enc.encode(["c d", "e f"])
    assert enc.calls == 3


def _separable(n: int, rng) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    for i in range(n):
        label = "pos" if i % 2 else "neg"
        word = "wonderful" if label == "pos" else "dreadful"
        filler = " ".join(rng.choice(["movie", "plot", "actor", "scene", "film"], size=4))
        texts.append(f"{filler} {word} {filler}")
        labels.append(label)
    return texts, labels


def test_downstream_accuracy_and_attribute_inference_on_separable_data():
    rng = np.random.default_rng(5)
    enc = make_encoder("hashing")
    train, y_train = _separable(80, rng)
    test, y_test = _separable(40, rng)
    assert downstream_accuracy(enc, train, y_train, test, y_test)["accuracy"] == 1.0
    scrubbed_train = [t.replace("wonderful", "x").replace("dreadful", "x") for t in train]
    scrubbed_test = [t.replace("wonderful", "x").replace("dreadful", "x") for t in test]
    out = attribute_inference(enc, train, train, y_train, test, y_test)
    assert out["static_f1"] == out["adaptive_f1"] == 1.0
    assert out["static_points_above_majority"] == pytest.approx(50.0)
    hidden = attribute_inference(enc, train, scrubbed_train, y_train, scrubbed_test, y_test)
    assert hidden["adaptive_accuracy"] <= 0.75 and hidden["static_accuracy"] <= 0.75


def test_majority_and_relative_gain():
    assert majority_accuracy(["a", "a", "b"], ["a", "b", "b", "b"]) == 0.25
    # privacy F1 halved (+0.5) while utility kept 90% (-0.1): RG = 0.4
    assert relative_gain(0.9, 1.0, 0.4, 0.8) == pytest.approx(0.4)
    assert relative_gain(1.0, 1.0, 0.8, 0.8) == 0.0


def test_mechanism_without_a_computable_distribution_gets_no_bayes_rate():
    from dptext.errors import DPTextError

    class Opaque(MatrixMechanism):
        def distribution(self, word):
            raise DPTextError("not computable for this vocabulary size")

    m = Opaque(space=THREE, matrix=np.eye(3),
               guarantee=TokenGuarantee(GuaranteeKind.METRIC, 1.0, scope="all"))
    m.fit()
    inv = token_inversion(m, THREE, samples=50, rng=np.random.default_rng(0), k=2)
    assert inv.bayes is None and inv.nn_top1 == 1.0
