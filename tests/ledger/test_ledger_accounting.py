"""Privacy events, their composition (basic and PLD), what a report charges, and per-unit
summaries of a release."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy.stats import binom

import dptext
from dptext.accounting.composition import basic_composition, pld_epsilon, pld_interval
from dptext.accounting.events import GuaranteeKind, PrivacyEvent, TokenEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.accounting.units import RECORD_IS_UNIT, UnitComposer, nearest_rank
from dptext.embeddings import EmbeddingSpace


def exact_rr_epsilon(eps0: float, k: int, delta: float) -> float:
    """Exact epsilon of the k-fold composition of eps0-DP (binary randomized response, the
    dominating pair; Kairouz et al. 2015), by bisection on the hockey-stick divergence."""
    q = 1.0 / (1.0 + math.exp(eps0))
    i = np.arange(k + 1)
    p_i = binom.pmf(i, k, q)
    loss = eps0 * (k - 2 * i)

    def delta_of(eps: float) -> float:
        return float(np.sum(p_i * np.maximum(0.0, 1.0 - np.exp(eps - loss))))

    lo, hi = 0.0, eps0 * k
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if delta_of(mid) <= delta else (mid, hi)
    return hi


# ----------------------------------------------------------------------------- the event
@pytest.mark.parametrize("kwargs", [
    dict(kind="gaussian", epsilon=1.0), dict(kind="pure", epsilon=-1.0),
    dict(kind="pure", epsilon=math.nan), dict(kind="pure", epsilon=1.0, delta=1e-5),
    dict(kind="approx", epsilon=1.0, delta=1.0), dict(kind="pure", epsilon=1.0, count=-1),
    dict(kind="pure", epsilon=1.0, count=1.5), dict(kind="pure", epsilon=1.0, count=True),
])
def test_privacy_event_rejects_nonsense(kwargs):
    with pytest.raises(ValueError):
        PrivacyEvent(**kwargs)


def test_privacy_event_round_trips_and_composes():
    events = [PrivacyEvent("pure", 0.5, count=4, mechanism="m", scope="s"),
              PrivacyEvent("approx", 1.0, 1e-6, 3), PrivacyEvent("pure", math.inf, count=0)]
    assert [PrivacyEvent.from_dict(e.to_dict()) for e in events] == events
    assert basic_composition(events) == (5.0, 3e-6)
    assert basic_composition([PrivacyEvent("pure", math.inf)])[0] == math.inf


# ------------------------------------------------------------------------------------ PLD
@pytest.mark.parametrize("eps0,k,delta", [(0.5, 200, 1e-6), (0.1, 1000, 1e-5),
                                          (2.0, 20, 1e-6), (1.0, 3, 1e-3)])
def test_pld_matches_the_exact_composition_of_pure_events(eps0, k, delta):
    exact = exact_rr_epsilon(eps0, k, delta)
    got = pld_epsilon([PrivacyEvent("pure", eps0, count=k)], delta)
    # a decimal epsilon is an exact multiple of the grid: only dp_accounting's tail
    # truncation (mass 1e-15) and floating point separate the two
    assert exact * (1 - 1e-9) <= got <= exact * (1 + 1e-6)
    assert got <= eps0 * k


def test_pld_of_mixed_events_is_an_upper_bound_below_basic():
    events = [PrivacyEvent("pure", 0.3, count=300), PrivacyEvent("pure", 0.7, count=40)]
    got = pld_epsilon(events, 1e-6)
    # the mixture is dominated by 340 tokens at 0.7 and dominates 340 at 0.3
    assert exact_rr_epsilon(0.3, 340, 1e-6) <= got <= exact_rr_epsilon(0.7, 340, 1e-6)
    assert got < basic_composition(events)[0]


def test_pld_with_approx_events_and_the_delta_they_consume():
    events = [PrivacyEvent("approx", 1.0, 1e-7, 10)]
    assert pld_epsilon(events, 5e-7) == math.inf  # the 10 deltas alone exceed 5e-7
    got = pld_epsilon(events, 1e-5)
    assert exact_rr_epsilon(1.0, 10, 1e-5) <= got < 10.0
    assert pld_epsilon(events, 0.0) == math.inf
    assert pld_epsilon([PrivacyEvent("pure", 2.0, count=3)], 0.0) == 6.0
    assert pld_epsilon([], 1e-6) == 0.0
    assert pld_epsilon([PrivacyEvent("pure", math.inf)], 1e-6) == math.inf


def test_pld_cost_is_bounded_for_huge_counts():
    t = time.perf_counter()
    got = pld_epsilon([PrivacyEvent("pure", 0.05, count=10**6),
                       PrivacyEvent("pure", 0.13, count=12345)], 1e-6)
    assert time.perf_counter() - t < 10
    assert got < 0.05 * 10**6
    assert pld_interval([PrivacyEvent("pure", 0.05, count=10**6)]) >= 1e-4


# ---------------------------------------------------------- what a report charges the unit
def _space(n=30):
    rng = np.random.default_rng(5)
    words = [f"w{i:02d}" for i in range(n)]
    return EmbeddingSpace(words, rng.standard_normal((n, 6)).astype(np.float32),
                          metric="euclidean", name="tiny")


@pytest.mark.parametrize("name,params", [("custext", {"k": 5}), ("santext", {}),
                                         ("laplace", {})])
def test_report_privacy_events_are_the_worst_case_per_privatized_token(name, params):
    space = _space()
    m = dptext.mechanism(name, space=space, epsilon=2, **params).fit(cache=False)
    r = m.privatize("w01 w02, w03 w04 unknownword!", rng=1).report
    events = r.privacy_events()
    assert len(events) == 1
    e = events[0]
    # the out-of-vocabulary word is replaced by a placeholder (0-DP): it costs nothing
    assert r.privatized_by_reason == {"mechanism": 4, "oov_placeholder": 1}
    assert e.kind == "pure" and e.count == 4 and e.mechanism == r.mechanism
    assert e.epsilon == r.per_token.worst_case_epsilon
    assert e.total_epsilon == pytest.approx(r.epsilon)
    if r.per_token.kind is GuaranteeKind.METRIC:
        assert "Delta_max" in e.scope and e.epsilon == pytest.approx(2 * r.per_token.diameter)
    both = PrivacyReport.combine([r, r])
    assert both.privacy_events()[0].count == 2 * e.count


def test_kept_tokens_cost_nothing_and_unknown_diameter_is_infinite():
    kept = TokenGuarantee(GuaranteeKind.NONE)
    r = PrivacyReport("m", kept, [TokenEvent(kept, 5, "punctuation")])
    assert r.privacy_events() == []
    zero = TokenGuarantee(GuaranteeKind.INDEPENDENT, scope="all")
    assert PrivacyReport("m", zero, [TokenEvent(zero, 3, "oov_placeholder")]
                         ).privacy_events() == []
    metric = TokenGuarantee(GuaranteeKind.METRIC, 1.0, scope="all", metric="d", diameter=None)
    ev = PrivacyReport("m", metric, [TokenEvent(metric, 2, "mechanism")]).privacy_events()
    assert ev[0].epsilon == math.inf and "unknown" in ev[0].scope


def test_add_delete_rewriting_is_charged_its_worst_case():
    from dptext.mechanisms.dpmlm import RewriteReport

    g = TokenGuarantee(GuaranteeKind.PURE, 1.5, scope="any two contexts")
    r = RewriteReport("dpmlm", g, [TokenEvent(g, 4, "mechanism")], worst_case_epsilon=1.5 * 14)
    assert [(e.epsilon, e.count) for e in r.privacy_events()] == [(1.5, 14)]
    plain = RewriteReport("dpmlm", g, [TokenEvent(g, 4, "mechanism")])
    assert [(e.epsilon, e.count) for e in plain.privacy_events()] == [(1.5, 4)]


# --------------------------------------------------------------------- per-unit summaries
def test_without_a_unit_field_each_record_is_a_person_and_it_says_so():
    c = UnitComposer()
    for k in (1, 2, 3, 4):
        c.add(None, [PrivacyEvent("pure", 1.0, count=k)])
    s = c.summary()
    assert (s.units, s.records, s.max_epsilon, s.worst_unit) == (4, 4, 4.0, None)
    assert RECORD_IS_UNIT in s.describe()
    assert s.to_dict()["summary"] == s.describe()


def test_per_unit_sequential_composition_and_distribution():
    c = UnitComposer("author")
    costs = {"ann": [1.0, 2.0, 3.0], "bob": [0.5], "cy": [1.0, 1.0]}
    for unit, eps in costs.items():
        for e in eps:
            c.add(unit, [PrivacyEvent("pure", e, count=2)])
    c.add("dee", [PrivacyEvent("approx", 1.0, 1e-6)])
    s = c.summary(delta=1e-5)
    assert (s.units, s.records, s.worst_unit, s.max_epsilon) == (4, 7, "ann", 12.0)
    # sorted per-unit totals: bob 1, dee 1, cy 4, ann 12 -> nearest-rank median 1, p95 12
    assert (s.median_epsilon, s.p95_epsilon, s.max_delta) == (1.0, 12.0, 1e-6)
    assert s.worst_epsilon_pld is not None and s.worst_epsilon_pld <= 12.0
    text = s.describe()
    assert "'author'" in text and "4 units, 7 records" in text and "'ann'" in text
    assert RECORD_IS_UNIT not in text
    with pytest.raises(ValueError):
        c.add(None, [])
    assert nearest_rank([], 0.5) == 0.0
