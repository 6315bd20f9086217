"""Bounded-range composition of exponential-mechanism tokens
(:func:`dptext.accounting.composition.br_epsilon`): checked against dp_accounting (its RDP
conversion and its PLD) and against exact computations for small k - the optimal composition of
k generalized randomized responses (Dong, Durfee & Rogers 2020), adaptive choices of t included,
and a concrete composition of exponential mechanisms enumerated output by output."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import comb

from dptext.accounting.composition import (
    br_epsilon,
    br_kl,
    pld_epsilon,
    zcdp_epsilon,
)
from dptext.accounting.events import GuaranteeKind, PrivacyEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.accounting.units import UnitComposer


def _br(count: int, eps: float) -> list[PrivacyEvent]:
    return [PrivacyEvent("pure", eps, count=count, bounded_range=True)]


def _grr(t: float, eps: float) -> tuple[float, float, float, float]:
    """Generalized randomized response at t: P(a), P(b), Q(a), Q(b); loss (1-t)eps on a,
    -t eps on b (the worst eps-BR pairs, DDR 2020 sec. 4)."""
    p = math.expm1(t * eps) / (math.exp(t * eps) - math.exp(-(1 - t) * eps))
    return p, 1 - p, p * math.exp(-(1 - t) * eps), (1 - p) * math.exp(t * eps)


def test_br_kl_is_the_largest_mean_loss_of_generalized_randomized_response():
    for eps in (0.01, 0.1, 0.5, 1.0, 3.0, 10.0):
        ts = np.linspace(1e-6, 1 - 1e-6, 20001)
        kl = max(pa * (1 - t) * eps - pb * t * eps
                 for t in ts for pa, pb, _, _ in [_grr(t, eps)])
        assert br_kl(eps) == pytest.approx(kl, rel=1e-6)
        assert br_kl(eps) <= eps**2 / 8  # hence eps^2/8-zCDP's mean


def test_zcdp_conversion_matches_dp_accounting_rdp():
    from dp_accounting import GaussianDpEvent
    from dp_accounting.rdp import RdpAccountant

    orders = [1 + x / 20.0 for x in range(1, 200)] + list(range(12, 2000))
    for sigma in (0.5, 1.0, 3.0, 10.0):
        rho = 1 / (2 * sigma**2)  # the Gaussian's RDP is rho * alpha
        acc = RdpAccountant(orders)
        acc.compose(GaussianDpEvent(sigma))
        theirs = acc.get_epsilon(1e-6)
        ours = zcdp_epsilon(rho, 1e-6)
        assert ours <= theirs * (1 + 1e-9)  # a continuous order: never worse
        assert ours == pytest.approx(theirs, rel=0.01)


@pytest.mark.parametrize("count,eps,pld_published", [(200, 0.1, 7.2), (200, 0.5, 55),
                                                     (200, 1.0, 147)])
def test_tighter_than_dp_accountings_pld_of_pure_events(count, eps, pld_published):
    """The issue's figures: dp_accounting's PLD of k eps-DP events at delta 1e-6 gives 7.2,
    55, 147 for 200 tokens at 0.1, 0.5, 1; bounded-range composition is tighter still."""
    pure = [PrivacyEvent("pure", eps, count=count)]
    assert pld_epsilon(pure, 1e-6) == pytest.approx(pld_published, rel=0.02)
    ours = br_epsilon(_br(count, eps), 1e-6)
    assert ours < 0.55 * pld_epsilon(pure, 1e-6)
    # the same events not marked bounded-range get no BR credit (PLD, zCDP at eps^2/2 ...)
    assert br_epsilon(pure, 1e-6) == pytest.approx(pld_epsilon(pure, 1e-6), rel=1e-9) \
        or br_epsilon(pure, 1e-6) < pld_epsilon(pure, 1e-6)
    assert br_epsilon(pure, 1e-6) > ours


def _optimal_delta_nonadaptive(k: int, eps: float, eps_g: float) -> float:
    """DDR 2020 Thm. 3: the optimal delta of k eps-BR mechanisms composed non-adaptively,
    max over t of the k-fold generalized randomized response (t on a fine grid)."""
    best = 0.0
    i = np.arange(k + 1)
    for t in np.linspace(1e-4, 1 - 1e-4, 4001):
        pa, pb, qa, qb = _grr(float(t), eps)
        c = comb(k, i)
        d = np.maximum(c * pa**i * pb ** (k - i) - math.exp(eps_g) * c * qa**i * qb ** (k - i),
                       0).sum()
        best = max(best, float(d))
    return best


def _optimal_delta_adaptive(k: int, eps: float, eps_g: float) -> float:
    """The largest delta(eps_g) over adaptive sequences of generalized randomized responses
    (t chosen from the privacy loss so far; t on a grid): dynamic programming on the loss,
    delta = E_P[(1 - e^(eps_g - L))_+]."""
    ts = np.linspace(0.0, 1.0, 41)[1:-1]
    grr = [_grr(float(t), eps) for t in ts]

    def value(step: int, loss: float, memo: dict) -> float:
        key = (step, round(loss, 9))
        if key in memo:
            return memo[key]
        if step == k:
            v = max(0.0, 1.0 - math.exp(eps_g - loss))
        else:
            v = max(pa * value(step + 1, loss + (1 - t) * eps, memo)
                    + pb * value(step + 1, loss - t * eps, memo)
                    for t, (pa, pb, _, _) in zip(ts, grr, strict=True))
        memo[key] = v
        return v

    return value(0, 0.0, {})


@pytest.mark.parametrize("k,eps", [(1, 1.0), (4, 1.0), (8, 0.5), (10, 2.0)])
def test_the_bound_holds_against_the_exact_optimum_for_small_k(k, eps):
    delta = 1e-3
    ours = br_epsilon(_br(k, eps), delta)
    assert ours <= k * eps
    assert _optimal_delta_nonadaptive(k, eps, ours) <= delta
    if k <= 4:  # the adaptive optimum (over grid t's): the bound holds there too
        assert _optimal_delta_adaptive(k, eps, ours) <= delta


def test_a_concrete_composition_of_exponential_mechanisms_enumerated():
    """Four tokens, each an exponential mechanism exp(eps * u / 2) over five outputs with
    utilities in [0, 1] (CusText's form); every one of the 5^4 outputs enumerated for two
    neighbouring inputs: the exact delta at our epsilon is within delta."""
    rng = np.random.default_rng(0)
    k, n, eps, delta = 4, 5, 3.0, 1e-2
    u_x, u_y = rng.random((k, n)), rng.random((k, n))
    u_x[:, 0], u_y[:, 0] = 1.0, 0.0  # inputs that disagree as much as the utility allows
    u_x[:, 1], u_y[:, 1] = 0.0, 1.0

    def law(u):
        w = np.exp(eps * u / 2)
        return w / w.sum(1, keepdims=True)

    p, q = law(u_x), law(u_y)
    ours = br_epsilon(_br(k, eps), delta)
    assert ours < k * eps  # a real gain at this size
    for a, b in ((p, q), (q, p)):
        exact = sum(max(0.0, math.prod(a[i, o] for i, o in enumerate(out))
                        - math.exp(ours) * math.prod(b[i, o] for i, o in enumerate(out)))
                    for out in itertools.product(range(n), repeat=k))
        assert exact <= delta


def test_events_reports_units_carry_the_bounded_range_flag():
    e = PrivacyEvent("pure", 0.5, count=3, mechanism="custext", bounded_range=True)
    assert PrivacyEvent.from_dict(e.to_dict()) == e
    assert "bounded_range" not in PrivacyEvent("pure", 0.5).to_dict()  # older entries unchanged
    with pytest.raises(ValueError, match="bounded-range"):
        PrivacyEvent("approx", 0.5, 1e-6, bounded_range=True)
    g = TokenGuarantee(GuaranteeKind.PURE, 0.5, "set", bounded_range=True)
    from dptext.accounting.events import TokenEvent

    r = PrivacyReport("custext", g, [TokenEvent(g, 200, "mechanism")])
    (ev,) = r.privacy_events()
    assert ev.bounded_range and ev.count == 200
    composed = r.to_dict()["composed"]
    assert composed["epsilon_basic"] == 100
    assert composed["epsilon"] == pytest.approx(br_epsilon(_br(200, 0.5), 1e-6))
    assert "bounded-range composition" in str(r)
    units = UnitComposer("author")
    units.add("a", r)
    units.add("a", r)
    s = units.summary(delta=1e-6)
    assert s.max_epsilon == 200
    assert s.worst_epsilon_pld == pytest.approx(br_epsilon(_br(400, 0.5), 1e-6))


def test_custext_and_lm_guarantees_are_bounded_range():
    import dptext

    assert dptext.mechanism("dpmlm", epsilon=50).guarantee.bounded_range
    assert dptext.mechanism("dpprompt", epsilon=50).guarantee.bounded_range
    from dptext.mechanisms.custext import CusText

    m = CusText(epsilon=2)
    assert m.guarantee.bounded_range
