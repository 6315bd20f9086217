"""Sampling rates, clipping, noise scale and the unbiasedness of f_E+ (UeDP Algorithm 1)."""

import math

import numpy as np
import pytest
import torch

from dptext.training.corpus import UserCorpus
from dptext.training.federated import clip_updates, global_norms, local_updates, noised_sum
from dptext.training.sampling import RoundSampler
from dptext.training.trainer import TrainConfig, aggregate, pack_round

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def _corpus(n_users=40, per_user=6, n_entities=12, seed=0):
    rng = np.random.default_rng(seed)
    n = n_users * per_user
    users = np.repeat(np.arange(n_users), per_user)
    ents = []
    for _ in range(n):
        k = rng.choice([0, 0, 1, 2])
        ents.append(tuple(sorted(set(rng.choice(n_entities, k, replace=False).tolist()))))
    return UserCorpus(tuple(f"u{i}" for i in range(n_users)), tuple(f"s{i}" for i in range(n)),
                      users, tuple(f"e{i}" for i in range(n_entities)), ("PERSON",) * n_entities,
                      tuple(ents))


def test_sampling_rates_of_users_entities_and_extended_sentences():
    corpus = _corpus()
    q_u, q_e, q_s = 0.3, 0.5, 0.7
    sampler = RoundSampler(corpus, q_u=q_u, q_e=q_e, q_s=q_s, mode="uedp")
    rng = np.random.default_rng(3)
    rounds = 3000
    user_hits = np.zeros(corpus.n_users)
    used = np.zeros(len(corpus.sentences))
    for _ in range(rounds):
        user_hits[sampler.sample(rng).users] += 1
        used += sampler.usable_sentences(rng)
    n_u = rounds * corpus.n_users
    assert abs(user_hits.sum() / n_u - q_u) < 5 * math.sqrt(q_u * (1 - q_u) / n_u)
    k = np.array([len(e) for e in corpus.sentence_entities])
    for kk, p in ((0, q_s), (1, q_e), (2, q_e ** 2)):
        got = used[k == kk].sum() / (rounds * (k == kk).sum())
        assert abs(got - p) < 5 * math.sqrt(p * (1 - p) / (rounds * (k == kk).sum())) + 0.02


def test_naive_estimator_never_uses_extended_sentences():
    corpus = _corpus()
    sampler = RoundSampler(corpus, q_u=1.0, q_e=1.0, q_s=1.0, mode="uedp-naive")
    usable = sampler.usable_sentences(np.random.default_rng(0))
    k = np.array([len(e) for e in corpus.sentence_entities])
    assert usable[k > 0].all() and not usable[k == 0].any()


def test_clipping_bounds_the_global_norm_over_all_parameters():
    g = torch.Generator().manual_seed(0)
    updates = {"a": torch.randn(8, 5, 3, generator=g) * 3, "b": torch.randn(8, 7, generator=g)}
    updates["a"][0] *= 1e-3
    updates["b"][0] *= 1e-3
    clipped = clip_updates(updates, 0.5)
    norms = global_norms(clipped)
    assert (norms <= 0.5 + 1e-5).all()
    assert norms[1:] == pytest.approx(torch.full((7,), 0.5), abs=1e-5)
    # a small update is left alone; each tensor alone within beta would not be enough
    assert torch.equal(clipped["a"][0], updates["a"][0])
    assert (global_norms(updates)[1:] > 0.5).all()


def test_noise_standard_deviation_is_z_times_sensitivity_not_its_square():
    zeros = {"w": torch.zeros(1, 200_000)}
    config = TrainConfig(algo="uedp", z=1.5, beta=1.0, entity_users=1, q_u=1.0)
    std = config.z * config.beta * config.privacy().sensitivity_factor  # 4.5 (squared: 20.25)
    out = aggregate(zeros, config, n_users=1, generator=torch.Generator().manual_seed(1))["w"]
    n = out.numel()
    assert float(out.std()) == pytest.approx(std, rel=5 / math.sqrt(2 * n))
    direct = noised_sum(zeros, 2.0, 4.0, torch.Generator().manual_seed(2))["w"]
    assert float(direct.std()) == pytest.approx(0.5, rel=5 / math.sqrt(2 * n))


def _linear_loss(p, x):
    # "nll" linear in the parameters: one SGD step moves w by -lr * x exactly
    return x @ p["w"], torch.ones(x.shape[0])


@pytest.mark.parametrize("mode,unbiased", [("uedp", True), ("uedp-naive", False)])
def test_weighted_estimator_is_unbiased_on_a_linear_model(mode, unbiased):
    # with the public normaliser c_u = max_sentences the update is linear in the sentence
    # weights: f_E+ is unbiased for the full-data gradient of sum_x nll(x) / (|U| C)
    corpus = _corpus(n_users=30, per_user=5, seed=4)
    dim, cap = 3, 100
    rng = np.random.default_rng(5)
    features = torch.as_tensor(rng.normal(1.0, 1.0, (len(corpus.sentences), dim)),
                               dtype=torch.float32)
    q_u = 0.5
    sampler = RoundSampler(corpus, q_u=q_u, q_e=0.5, q_s=0.5, mode=mode)
    params = {"w": torch.zeros(dim)}
    truth = -features.numpy().sum(0) / (corpus.n_users * cap)
    estimates = []
    for _ in range(800):
        batch = pack_round(sampler.sample(rng), features, cap, rng, "constant")
        if batch is None:
            estimates.append(np.zeros(dim))
            continue
        upd = local_updates(_linear_loss, params, batch.tokens, batch.weights, batch.sizes,
                            steps=1, lr=1.0)
        estimates.append(upd["w"].sum(0).numpy() / (q_u * corpus.n_users))
    est = np.array(estimates)
    err = np.abs(est.mean(0) - truth)
    tol = 5 * est.std(0) / math.sqrt(len(est))
    assert (err < tol).all() == unbiased


def test_usable_normaliser_is_the_weighted_mean_over_the_round_s_usable_sentences():
    corpus = _corpus(n_users=10, per_user=5, seed=6)
    features = torch.ones(len(corpus.sentences), 2)
    sampler = RoundSampler(corpus, q_u=1.0, q_e=0.5, q_s=0.5, mode="uedp")
    rng = np.random.default_rng(0)
    sample = sampler.sample(rng)
    batch = pack_round(sample, features, 100, rng, "usable")
    expected = [w.sum() for w in sample.weights if len(w)]
    assert batch.sizes.tolist() == pytest.approx(expected)
    # one step on the linear loss: every user moves by -lr * (its weighted mean feature) = -1
    upd = local_updates(_linear_loss, {"w": torch.zeros(2)}, batch.tokens, batch.weights,
                        batch.sizes, steps=1, lr=1.0)
    assert torch.allclose(upd["w"], torch.full_like(upd["w"], -1.0))
