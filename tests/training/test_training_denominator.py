"""The denominator q_u |U| of the private estimators (issue 47; arXiv 2605.15648, "Rethinking
the security of DP-SGD": dividing the noised sum by a data-dependent size is not the subsampled
Gaussian mechanism the accountant composes). A run given a public ``population`` divides by it;
a run without one divides by the corpus's count released once with Gaussian noise, and the
accountant composes that release with the rounds. Before this, a run divided by the exact count
of its training corpus - one more user in D' scaled the whole release by |U| / (|U| + 1), which
the noise's spread over d coordinates reveals whatever z is."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import torch
from dp_accounting import rdp
from scipy.stats import chi2

from dptext.accounting.uedp import RDP_ORDERS, TrainingPrivacy
from dptext.rng import secure_generator
from dptext.training.corpus import UserCorpus
from dptext.training.sampling import RoundCoins
from dptext.training.tasks import ClassificationTask, classification_rows
from dptext.training.trainer import COUNT_Z, FederatedTrainer, TrainConfig, released_population

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _trainer(n_users=6, dim=5, classes=3, **config):
    users = tuple(f"u{i}" for i in range(n_users))
    sentences = tuple(f"s{i}" for i in range(2 * n_users))
    owner = np.arange(2 * n_users) % n_users
    corpus = UserCorpus(users, sentences, owner, (), (), tuple(() for _ in sentences), None)
    g = torch.Generator().manual_seed(3)
    rows = classification_rows(torch.randn(2 * n_users, dim, generator=g),
                               torch.arange(2 * n_users) % classes)
    task = ClassificationTask(dim, classes, rows[:2])
    cfg = TrainConfig(**{"algo": "userdp", "rounds": 2, "q_u": 0.5, "z": 1.0, "beta": 0.1,
                         "seed": 1, **config})
    return FederatedTrainer(corpus, rows, task, cfg)


def test_without_a_public_population_the_denominator_is_a_released_noisy_count():
    trainer = _trainer()
    privacy = trainer.config.privacy()
    assert privacy.count_z == COUNT_Z and privacy.count_std == COUNT_Z * 1
    assert trainer.population != 6  # not the exact count of the data
    # the accountant composes the count's Gaussian with the rounds
    acc = rdp.RdpAccountant(list(RDP_ORDERS))
    acc.compose(dp_accounting.ComposedDpEvent([
        dp_accounting.GaussianDpEvent(COUNT_Z),
        dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
            0.5, dp_accounting.GaussianDpEvent(1.0)), 2)]))
    assert privacy.epsilon(2, 1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)
    rounds_only = TrainingPrivacy("userdp", 0.5, 1.0).epsilon(2, 1e-5)
    assert privacy.epsilon(2, 1e-5) > rounds_only
    # the count alone is charged even before the first round
    assert privacy.epsilon(0, 1e-5) > 0


def test_a_public_population_is_divided_by_as_given_and_releases_no_count():
    trainer = _trainer(population=50)
    assert trainer.population == 50.0
    privacy = trainer.config.privacy()
    assert privacy.count_z is None
    assert privacy.epsilon(2, 1e-5) == TrainingPrivacy("userdp", 0.5, 1.0).epsilon(2, 1e-5)


@pytest.mark.parametrize(("algo", "extra", "sensitivity"), [
    ("userdp", {}, 1), ("uedp", {"entity_users": 2}, 3), ("uedp", {"entity_users": 0}, 2),
    ("uedp-naive", {"entity_users": 2}, 3), ("dpsgd-example", {"examples_per_user": 4}, 4)])
def test_the_released_count_has_the_accounted_standard_deviation(algo, extra, sensitivity):
    config = TrainConfig(algo=algo, z=1.0, q_u=0.5, **extra)
    privacy = config.privacy()
    assert privacy.count_sensitivity == sensitivity
    gen = np.random.default_rng(0)
    n = 4000
    noise = np.array([released_population(10_000, config, privacy, gen) - 10_000
                      for _ in range(n)])
    std = privacy.count_std
    stat = float((noise ** 2).sum()) / std ** 2  # chi-square with n degrees of freedom
    assert chi2.ppf(1e-6, n) < stat < chi2.ppf(1 - 1e-6, n)
    assert abs(noise.mean()) < 5 * std / math.sqrt(n)


def test_a_wide_entity_epsilon_keeps_the_count_std():
    p = TrainingPrivacy("uedp", 0.5, 1.0, 0.5, 1.0, 1, count_z=COUNT_Z)
    wide = p.for_entity_users(9)
    # the same count noise (std 20 x 3 users) against a count that moves by up to 10
    assert wide.count_std == pytest.approx(p.count_std)
    assert wide.epsilon(3, 1e-5) > p.epsilon(3, 1e-5)


def test_a_resumed_trainer_keeps_the_released_count():
    # 200 users: the count + N(0, 20^2) is never floored at 1, so two draws differ
    first = _trainer(n_users=200, secure_rng=True, seed=None)
    state = first.state_dict()
    again = _trainer(n_users=200, secure_rng=True, seed=None)  # keyed afresh: another draw
    assert again.population != first.population
    again.load_state_dict(state)
    assert again.population == first.population


def test_the_release_scale_gives_the_denominator_back():
    """Why the exact count was a leak: from one round's release with nobody sampled, the
    spread of the noise over d coordinates gives q_u |U| back to within ~sqrt(2/d) - 0.3% at
    d = 200,000, so |U| = 100 and 101 are told apart at any z. The denominator read back is
    the released count (already paid for), not the corpus's."""
    trainer = _trainer(n_users=100, dim=2000, classes=100, q_u=0.01, z=2.0)
    trainer.sampler.draw_coins = lambda rng: RoundCoins(np.zeros(100, dtype=bool))
    # nobody sampled: the release is the noise alone
    before = {k: v.clone() for k, v in trainer.params.items()}
    trainer.step()
    step = torch.cat([(trainer.params[k] - before[k]).flatten() for k in before]).double()
    d = step.numel()
    assert d > 200_000
    read_back = 2.0 * 0.1 * 1.0 / (float(step.std()) * 0.01)  # z beta S / (std q_u)
    assert read_back == pytest.approx(trainer.population, rel=5 * math.sqrt(0.5 / d))


def test_the_secure_generator_draws_the_count_too():
    config = TrainConfig(algo="userdp", z=1.0, q_u=0.5)
    a = released_population(100, config, config.privacy(), secure_generator(5))
    b = released_population(100, config, config.privacy(), secure_generator(5))
    assert a == b != 100


def test_a_public_population_is_zero_out_adjacency_with_the_same_epsilon():
    """With |U| public the neighbour of D is D with u' present and its data removed (zero-out,
    dp_accounting's REPLACE_SPECIAL): its Poisson-sampled Gaussian is the add/remove one."""
    p = TrainingPrivacy("userdp", 0.1, 1.3)
    acc = rdp.RdpAccountant(list(RDP_ORDERS),
                            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(p.event(50))
    assert acc.get_epsilon(1e-5) == pytest.approx(p.epsilon(50, 1e-5), rel=1e-12)
