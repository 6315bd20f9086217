"""One-run audit of private training (Steinke, Nasr, Jagielski 2023; issue 35 item 4): the
p-value and bound of their theorem, and the audit on the real trainer and on the planted bugs."""

from __future__ import annotations

import math

import pytest
from planted_bugs import per_tensor_clipping_train, squared_std_train
from scipy.stats import binom

from dptext.audit.results import CONSISTENT, VIOLATION
from dptext.audit.stats import one_run_epsilon_lower_bound, one_run_p_value
from dptext.audit.training import audit_training_one_run, canary_directions
from dptext.cli import main
from dptext.errors import DPTextError


def test_p_value_without_delta_is_the_binomial_tail_of_randomized_response():
    q = 1 / (1 + math.exp(-1.5))
    assert one_run_p_value(1000, 100, 70, 1.5, 0.0) == pytest.approx(binom.sf(69, 100, q))
    # delta adds 2 m delta times the largest average of the probabilities just below v
    with_delta = one_run_p_value(1000, 100, 70, 1.5, 1e-6)
    pmf = binom.pmf(range(69, -1, -1), 100, q)
    alpha = max(sum(pmf[:i]) / i for i in range(1, 71))
    assert with_delta == pytest.approx(binom.sf(69, 100, q) + alpha * 1e-6 * 2000)


def test_all_correct_guesses_give_the_closed_form_bound():
    # delta = 0, v = r: p-value q^r, so the bound solves q^r = p: eps = log(q / (1 - q))
    q = 0.05 ** (1 / 100)
    assert one_run_epsilon_lower_bound(1000, 100, 100, 0.0, 0.05) == pytest.approx(
        math.log(q / (1 - q)), abs=1e-6)
    # half right is what a coin gives: no bound
    assert one_run_epsilon_lower_bound(1000, 100, 50, 1e-5, 0.05) == 0.0
    with pytest.raises(DPTextError, match="guesses"):
        one_run_p_value(10, 20, 5, 1.0, 0.0)


def test_canary_directions_are_orthonormal_and_spread_over_every_tensor():
    c = canary_directions(100, 1024)
    gram = c @ c.T
    assert float((gram - gram.diag().diag()).abs().max()) < 1e-6
    assert float((gram.diag() - 1).abs().max()) < 1e-5
    per_tensor = c.view(100, 64, 16).pow(2).sum(-1)  # each tensor's share of the norm
    assert float((per_tensor - 1 / 64).abs().max()) < 1e-6
    with pytest.raises(DPTextError, match="power of two"):
        canary_directions(2000, 1024)


@pytest.mark.parametrize("train_fn", [per_tensor_clipping_train, squared_std_train])
def test_one_run_audit_flags_the_planted_training_bugs(train_fn):
    """One run of 1,000 canary users: per-tensor clipping lets a canary reach sqrt(64) = 8x the
    clip bound, the squared std is 10x too small; either way every top/bottom-250 guess is
    right and the bound (4.5) passes the accountant's 2.17."""
    r = audit_training_one_run(train_fn=train_fn, seed=0)
    assert r.verdict == VIOLATION, r.summary()
    assert r.epsilon_lower_bound > r.accountant_epsilon
    assert r.correct == r.guesses == 500


def test_one_run_audit_of_the_real_trainer_stays_below_the_claim():
    """With probability >= 95% the bound is below the true epsilon (the theorem); the signal of
    a canary is 1/z = 0.5 noise sd, so guesses are right ~60% of the time, far from the claim."""
    r = audit_training_one_run(seed=0)
    assert r.verdict == CONSISTENT, r.summary()
    assert r.epsilon_lower_bound < r.accountant_epsilon / 2
    assert 0.5 < r.correct / r.guesses < 0.95


def test_cli_one_run(capsys):
    assert main(["audit-training", "--one-run", "--canaries", "200", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "one-run training audit" in out and "200 users" in out and "consistent" in out
    assert main(["audit-training", "--one-run", "--canaries", "2000"]) == 2
    assert "power of two" in capsys.readouterr().err
