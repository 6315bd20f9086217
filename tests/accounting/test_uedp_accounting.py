"""The UeDP accountant: q_eff, agreement with dp_accounting and with closed forms, calibration."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp
from scipy import optimize, stats

from dptext.accounting.uedp import (
    RDP_ORDERS,
    TrainingPrivacy,
    calibrate_z,
    pair_sampling_rate,
)
from dptext.errors import DPTextError


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of a Gaussian mechanism with mu = sensitivity / std (Balle & Wang 2018)."""
    def gap(eps):
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)
    return optimize.brentq(gap, 0.0, 100.0)


@pytest.mark.parametrize("q_u,q_e,k", [(0.05, 0.5, 1), (0.2, 0.3, 3), (0.1, 1.0, 0)])
def test_pair_rate_matches_simulated_sampling(q_u, q_e, k):
    # worst case of the proof: the other holders' coins are given and at least one is sampled
    rng = np.random.default_rng(1)
    n = 200_000
    user = rng.random(n) < q_u
    entity = rng.random(n) < q_e
    touched = (user | (entity & (k > 0))).mean()
    p = pair_sampling_rate(q_u, q_e, k)
    assert abs(touched - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_paper_fig4_rates_and_sensitivity():
    uedp = TrainingPrivacy("uedp", 0.05, 2.0, 0.5, 1.0, entity_users=1)
    naive = TrainingPrivacy("uedp-naive", 0.05, 2.0, 0.5, 1.0, entity_users=1)
    user = TrainingPrivacy("userdp", 0.05, 2.0)
    assert naive.sampling_rate == pytest.approx(1 - 0.95 * 0.5)
    assert uedp.sampling_rate == 1.0  # q_s = 1: an extended entity is used whenever its user is
    assert uedp.sensitivity_factor == 3.0 and user.sensitivity_factor == 1.0
    # an entity held only by the differing user: f_E costs one clipped update, but f_E+ must
    # still cover an extended entity (a sentence of S) held by another user
    assert TrainingPrivacy("uedp-naive", 0.05, 2.0, 0.5, 1.0, 0).sensitivity_factor == 1.0
    assert TrainingPrivacy("uedp", 0.05, 2.0, 0.5, 1.0, 0).sensitivity_factor == 3.0
    # protecting users and entities costs more than protecting users alone
    assert user.epsilon(200, 1e-5) < naive.epsilon(200, 1e-5) < uedp.epsilon(200, 1e-5)


def test_epsilon_is_dp_accounting_of_poisson_sampled_gaussian():
    p = TrainingPrivacy("uedp-naive", 0.05, 1.5, 0.2, 0.6, entity_users=2)
    acc = rdp.RdpAccountant(list(RDP_ORDERS))
    for _ in range(10):  # composed one by one: checks SelfComposedDpEvent's count is honoured
        acc.compose(dp_accounting.PoissonSampledDpEvent(
            p.sampling_rate, dp_accounting.GaussianDpEvent(1.5)))
    ours = p.epsilon(10, 1e-5)
    assert ours == pytest.approx(acc.get_epsilon(1e-5), rel=1e-6)
    assert p.epsilon(100, 1e-5) > 2 * ours


@pytest.mark.parametrize("accountant,rel", [("pld", 0.01), ("rdp", 0.35)])
def test_full_participation_matches_closed_form_gaussian(accountant, rel):
    # q = 1: T Gaussian rounds with multiplier z are one Gaussian with mu = sqrt(T) / z
    p = TrainingPrivacy("userdp", 1.0, 4.0)
    exact = _gaussian_epsilon(math.sqrt(16) / 4.0, 1e-5)
    got = p.epsilon(16, 1e-5, accountant=accountant)
    assert got >= exact * (1 - 1e-3)  # never below the truth
    assert got == pytest.approx(exact, rel=rel)


def test_pld_and_rdp_agree_roughly_and_rdp_is_looser():
    p = TrainingPrivacy("uedp", 0.05, 2.0, 0.5, 1.0)
    e_rdp, e_pld = p.epsilon(500, 1e-5), p.epsilon(500, 1e-5, accountant="pld")
    assert e_pld <= e_rdp < 1.5 * e_pld


@pytest.mark.slow
def test_pld_counts_self_composition():
    p = TrainingPrivacy("userdp", 0.1, 1.0)
    acc = pld.PLDAccountant(value_discretization_interval=1e-3)
    for _ in range(5):
        acc.compose(dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0)))
    assert p.epsilon(5, 1e-5, accountant="pld") == pytest.approx(acc.get_epsilon(1e-5), rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["uedp", "userdp"])
def test_calibration_inverts_the_accountant(algo):
    p = TrainingPrivacy(algo, 0.05, 1.0, 0.5, 1.0)
    z = calibrate_z(p, 200, 2.0, 1e-5)
    assert p.with_z(z).epsilon(200, 1e-5) <= 2.0
    assert p.with_z(z * 0.99).epsilon(200, 1e-5) > 2.0 * 0.99


def test_invalid_parameters_are_rejected():
    with pytest.raises(DPTextError):
        TrainingPrivacy("uedp", 1.5, 1.0)
    with pytest.raises(DPTextError):
        TrainingPrivacy("uedp", 0.1, 0.0)
    with pytest.raises(DPTextError):
        TrainingPrivacy("sample", 0.1, 1.0)
    with pytest.raises(DPTextError):
        TrainingPrivacy("userdp", 0.1, 1.0).epsilon(10, 0.0)
