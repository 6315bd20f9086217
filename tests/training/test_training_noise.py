"""The noise a private round actually adds (issue 47, "the training comparison says privacy is
free"): captured from real rounds of the trainer, its standard deviation is z * beta * S (S the
algorithm's sensitivity factor) and it is divided by q_u |U| before the server step - checked
with a chi-square interval on the sum of squares over every coordinate of several rounds
(tail 1e-6 each side), not with a fixed tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chi2

import dptext.training.trainer as trainer_module
from dptext.training.corpus import UserCorpus
from dptext.training.sampling import RoundCoins
from dptext.training.tasks import ClassificationTask, classification_rows
from dptext.training.trainer import FederatedTrainer, TrainConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CASES = [  # algo, options, sensitivity factor S
    ("userdp", {}, 1.0),
    ("uedp", {"entity_users": 1}, 3.0),
    ("uedp", {"entity_users": 2}, 5.0),
    ("uedp-naive", {"entity_users": 0}, 1.0),
    ("dpsgd-example", {"examples_per_user": 3}, 3.0),
]


def _trainer(algo, options, population=None, seed=2):
    n_users, dim, classes = 12, 60, 40  # 2,440 parameters
    users = tuple(f"u{i}" for i in range(n_users))
    sentences = tuple(f"s{i}" for i in range(3 * n_users))
    owner = np.arange(3 * n_users) % n_users
    corpus = UserCorpus(users, sentences, owner, (), (), tuple(() for _ in sentences), None)
    g = torch.Generator().manual_seed(3)
    rows = classification_rows(torch.randn(3 * n_users, dim, generator=g),
                               torch.arange(3 * n_users) % classes)
    task = ClassificationTask(dim, classes, rows[:2])
    config = TrainConfig(algo=algo, rounds=3, q_u=0.5, q_e=0.5, q_s=0.5, z=1.7, beta=0.3,
                         server_lr=0.5, seed=seed, population=population, **options)
    return FederatedTrainer(corpus, rows, task, config)


def _capture(monkeypatch):
    calls = []
    real = trainer_module.gaussian_release

    def recording(total, std, denominator, generator=None):
        out = real(total, std, denominator, generator)
        calls.append((total, denominator, out))
        return out

    monkeypatch.setattr(trainer_module, "gaussian_release", recording)
    return calls


@pytest.mark.parametrize(("algo", "options", "factor"), CASES,
                         ids=[f"{a}-{o}" for a, o, _ in CASES])
@pytest.mark.parametrize("population", [None, 40])
def test_the_noise_added_in_rounds_has_std_z_beta_s(monkeypatch, algo, options, factor,
                                                    population):
    calls = _capture(monkeypatch)
    trainer = _trainer(algo, options, population)
    noise = []
    for _ in range(3):
        before = {k: v.clone() for k, v in trainer.params.items()}
        trainer.step()
        total, denominator, out = calls[-1]
        # the release is what moved the model, divided by q_u |U| of this run
        assert denominator == pytest.approx(0.5 * trainer.population, rel=1e-12)
        for k in before:
            torch.testing.assert_close(trainer.params[k] - before[k], 0.5 * out[k],
                                       rtol=1e-5, atol=1e-6)
        noise += [(out[k].double() * denominator - total[k].double()).flatten()
                  for k in out]
    noise = torch.cat(noise).numpy()
    n = noise.size
    std = 1.7 * 0.3 * factor  # z * beta * S
    stat = float((noise ** 2).sum()) / std ** 2  # chi-square with n degrees of freedom
    assert chi2.ppf(1e-6, n) < stat < chi2.ppf(1 - 1e-6, n), (stat / n, n)
    # neither the variance (std^2) nor the wrong sensitivity would pass
    for wrong in (std ** 2, std * (factor + 2) / factor):
        assert not chi2.ppf(1e-6, n) < float((noise ** 2).sum()) / wrong ** 2 < chi2.ppf(
            1 - 1e-6, n)


def test_the_noise_is_released_when_nobody_trained(monkeypatch):
    calls = _capture(monkeypatch)
    trainer = _trainer("userdp", {}, population=40)
    trainer.sampler.draw_coins = lambda rng: RoundCoins(np.zeros(12, dtype=bool))
    trainer.step()
    assert len(calls) == 1 and trainer.metrics[-1]["users"] == 0
    total, denominator, out = calls[0]
    noise = torch.cat([(out[k].double() * denominator).flatten() for k in out]).numpy()
    stat = float((noise ** 2).sum()) / (1.7 * 0.3) ** 2
    assert chi2.ppf(1e-6, noise.size) < stat < chi2.ppf(1 - 1e-6, noise.size)
