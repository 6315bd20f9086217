"""Privacy events, their composition and the PrivacyReport."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld
from scipy.stats import binom

from dptext.accounting import (
    GuaranteeKind,
    TokenEvent,
    TokenGuarantee,
    epsilon_for_delta,
    metric_epsilon,
    pure_epsilon,
)
from dptext.accounting.report import PrivacyReport

PURE_1 = TokenGuarantee(GuaranteeKind.PURE, 1.0, scope="all words")
PURE_HALF = TokenGuarantee(GuaranteeKind.PURE, 0.5, scope="all words")
KEPT = TokenGuarantee(GuaranteeKind.NONE)
INDEP = TokenGuarantee(GuaranteeKind.INDEPENDENT, scope="out-of-vocabulary words")
METRIC = TokenGuarantee(
    GuaranteeKind.METRIC, 3.0, scope="all words", metric="euclidean", diameter=1.5
)


def test_worst_case_epsilon() -> None:
    assert PURE_1.worst_case_epsilon == 1.0
    assert KEPT.worst_case_epsilon == math.inf
    assert INDEP.worst_case_epsilon == 0.0
    assert METRIC.worst_case_epsilon == pytest.approx(4.5)
    no_diameter = TokenGuarantee(GuaranteeKind.METRIC, 3.0, metric="euclidean")
    assert no_diameter.worst_case_epsilon == math.inf


def test_describe() -> None:
    assert PURE_1.describe() == "1-DP among all words"
    assert "no protection" in KEPT.describe()
    assert "0-DP" in INDEP.describe()
    text = METRIC.describe()
    assert "3*d metric DP" in text and "euclidean" in text and "4.5-DP" in text
    unknown = TokenGuarantee(GuaranteeKind.METRIC, 3.0, metric="euclidean").describe()
    assert "3*d metric DP" in unknown and "diameter is unknown" in unknown


def test_pure_epsilon_sums_counts_times_epsilon() -> None:
    events = [
        TokenEvent(PURE_1, 3, "mechanism"),
        TokenEvent(PURE_HALF, 4, "mechanism"),
        TokenEvent(INDEP, 10, "oov_placeholder"),
        TokenEvent(PURE_1, 0, "mechanism"),
    ]
    assert pure_epsilon(events) == pytest.approx(3 * 1.0 + 4 * 0.5)
    assert pure_epsilon([]) == 0.0
    assert pure_epsilon(e for e in events) == pytest.approx(5.0)  # any iterable
    # a token released verbatim makes the composition unbounded; zero such tokens do not
    assert pure_epsilon([*events, TokenEvent(KEPT, 1, "punctuation")]) == math.inf
    assert pure_epsilon([*events, TokenEvent(KEPT, 0, "punctuation")]) == pytest.approx(5.0)


def test_metric_events_give_worst_case() -> None:
    events = [TokenEvent(METRIC, 4, "mechanism")]
    assert pure_epsilon(events) == pytest.approx(4 * 3.0 * 1.5)
    assert metric_epsilon(events) == {"euclidean": 3.0}
    assert metric_epsilon([TokenEvent(PURE_1, 3, "mechanism")]) == {}
    assert metric_epsilon([TokenEvent(METRIC, 0, "mechanism")]) == {}
    other = TokenGuarantee(GuaranteeKind.METRIC, 5.0, metric="euclidean", diameter=1.0)
    both = [TokenEvent(METRIC, 1, "mechanism"), TokenEvent(other, 1, "mechanism")]
    assert metric_epsilon(both) == {"euclidean": 5.0}


# ------------------------------------------------------------ (eps, delta)
def _reference_pld_epsilon(groups: dict[float, int], delta: float) -> float:
    """dp_accounting's own accountant, one RandomizedResponseDpEvent per token."""
    acc = pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    for eps, count in groups.items():
        event = dp_accounting.RandomizedResponseDpEvent(
            noise_parameter=2.0 / (1.0 + math.exp(eps)), num_buckets=2
        )
        for _ in range(count):
            acc.compose(event)
    return acc.get_epsilon(delta)


def _exact_rr_epsilon(eps0: float, k: int, delta: float) -> float:
    """Exact epsilon of k-fold binary randomized response (the hockey-stick divergence)."""
    q = 1.0 / (1.0 + math.exp(eps0))
    i = np.arange(k + 1)
    p_i = binom.pmf(i, k, q)  # i flipped answers under the first input
    loss = eps0 * (k - 2 * i)

    def delta_of(eps: float) -> float:
        return float(np.sum(p_i * np.maximum(0.0, 1.0 - np.exp(eps - loss))))

    lo, hi = 0.0, eps0 * k
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if delta_of(mid) <= delta else (mid, hi)
    return hi


def test_epsilon_for_delta_zero_is_pure() -> None:
    events = [TokenEvent(PURE_1, 3, "m"), TokenEvent(METRIC, 2, "m"), TokenEvent(INDEP, 5, "o")]
    assert epsilon_for_delta(events, 0.0) == pure_epsilon(events)
    assert epsilon_for_delta(iter(events), 0.0) == pytest.approx(3 + 2 * 4.5)
    assert epsilon_for_delta([], 1e-5) == 0.0
    assert epsilon_for_delta([TokenEvent(INDEP, 7, "o")], 1e-5) == 0.0
    assert epsilon_for_delta([TokenEvent(KEPT, 1, "p"), *events], 1e-5) == math.inf


@pytest.mark.parametrize("delta", [-0.1, 1.0, 2.0])
def test_epsilon_for_delta_rejects_bad_delta(delta: float) -> None:
    with pytest.raises(ValueError, match="delta"):
        epsilon_for_delta([TokenEvent(PURE_1, 1, "m")], delta)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("groups", "delta"),
    [
        ({0.5: 100}, 1e-5),
        ({0.1: 300}, 1e-5),
        ({1.0: 40}, 1e-6),
        ({0.5: 50, 1.0: 20}, 1e-5),  # two guarantees in one document
    ],
)
def test_epsilon_for_delta_matches_pld(groups: dict[float, int], delta: float) -> None:
    events = [TokenEvent(PureG(eps), n, "mechanism") for eps, n in groups.items()]
    got = epsilon_for_delta(events, delta)
    pure = pure_epsilon(events)
    assert got <= pure
    assert got < pure  # many tokens: the PLD view is tighter than basic composition
    reference = _reference_pld_epsilon(groups, delta)
    assert got == pytest.approx(reference, rel=1e-3)
    if len(groups) == 1:
        ((eps0, k),) = groups.items()
        exact = _exact_rr_epsilon(eps0, k, delta)
        assert exact - 1e-9 <= got <= exact * 1.01  # PLD is a (tight) upper bound


def PureG(eps: float) -> TokenGuarantee:  # noqa: N802 - reads like a constructor
    return TokenGuarantee(GuaranteeKind.PURE, eps, scope="all words")


def test_epsilon_for_delta_never_exceeds_pure() -> None:
    # one token: no composition gain, the answer is capped at the pure epsilon
    for eps in (0.1, 1.0, 4.0):
        events = [TokenEvent(PureG(eps), 1, "m")]
        got = epsilon_for_delta(events, 1e-5)
        assert got <= eps
        assert got == pytest.approx(eps, rel=1e-3)
    # metric events enter with their worst case
    events = [TokenEvent(METRIC, 30, "m")]
    assert epsilon_for_delta(events, 1e-5) == pytest.approx(
        _reference_pld_epsilon({4.5: 30}, 1e-5), rel=1e-3
    )


# ------------------------------------------------------------ PrivacyReport
def _report(n_priv: int, n_punct: int, n_oov: int = 0, eps: float = 1.0) -> PrivacyReport:
    g = PureG(eps)
    events = [
        TokenEvent(g, n_priv, "mechanism"),
        TokenEvent(KEPT, n_punct, "punctuation"),
        TokenEvent(INDEP, n_oov, "oov_placeholder"),
    ]
    return PrivacyReport("custext", g, [e for e in events if e.count])


def test_report_counts_and_epsilon() -> None:
    r = PrivacyReport(
        "custext",
        PURE_1,
        [
            TokenEvent(PURE_1, 5, "mechanism"),
            TokenEvent(KEPT, 2, "punctuation"),
            TokenEvent(KEPT, 3, "stopword"),
            TokenEvent(INDEP, 1, "oov_placeholder"),
        ],
    )
    assert r.tokens_privatized == 6
    assert r.privatized_by_reason == {"mechanism": 5, "oov_placeholder": 1}
    assert r.kept == {"punctuation": 2, "stopword": 3}
    assert r.tokens_kept == 5
    assert r.tokens_total == 11
    # kept tokens are listed but excluded from the document epsilon
    assert r.epsilon == pytest.approx(5.0)
    assert r.epsilon_for_delta(0.0) == pytest.approx(5.0)
    assert r.epsilon_for_delta(1e-5) <= 5.0
    text = r.document_guarantee()
    assert "5-DP for the 6 privatized tokens" in text
    assert "Released verbatim and not protected: 5 tokens (punctuation 2, stopword 3)" in text
    s = str(r)
    assert s.splitlines()[0] == "Privacy report (custext)"
    assert "tokens total       11" in s


def test_report_without_privatized_tokens() -> None:
    r = _report(0, 3)
    assert r.tokens_privatized == 0 and r.epsilon == 0.0
    assert r.document_guarantee().startswith("no token was privatized")
    empty = PrivacyReport("custext", PURE_1, [], records=0)
    assert empty.tokens_total == 0 and empty.to_dict()["document_epsilon"] == 0.0


def test_report_metric_guarantee_text() -> None:
    r = PrivacyReport("gumbel", METRIC, [TokenEvent(METRIC, 2, "mechanism")])
    assert r.epsilon == pytest.approx(9.0)
    assert "3*sum_i d(x_i, x'_i) metric DP, d = euclidean" in r.document_guarantee()


def test_combine() -> None:
    a, b, c = _report(5, 1), _report(3, 2, n_oov=1), _report(0, 4)
    combined = PrivacyReport.combine([a, b, c])
    assert combined.records == 3
    assert combined.tokens_privatized == 9
    assert combined.kept == {"punctuation": 7}
    assert combined.privatized_by_reason == {"mechanism": 8, "oov_placeholder": 1}
    assert combined.tokens_total == a.tokens_total + b.tokens_total + c.tokens_total
    assert combined.epsilon == pytest.approx(8.0)  # composed over all records (one owner)
    assert combined.max_record_epsilon == pytest.approx(5.0)
    assert "composed over all 3 records" in combined.document_guarantee()
    assert "Largest single record: 5-DP" in combined.document_guarantee()
    # one event per (guarantee, reason): counts are summed, not listed per record
    assert len(combined.events) == 3
    with pytest.raises(ValueError):
        PrivacyReport.combine([])


def test_combine_of_combined_tracks_largest_record() -> None:
    first = PrivacyReport.combine([_report(5, 0), _report(4, 0)])
    second = PrivacyReport.combine([_report(2, 0), _report(6, 0)])
    both = PrivacyReport.combine([first, second, _report(1, 0)])
    assert both.records == 5
    assert both.epsilon == pytest.approx(18.0)
    assert both.max_record_epsilon == pytest.approx(6.0)
    # and with empty (zero-record) reports mixed in
    empty = PrivacyReport("custext", PURE_1, [], records=0)
    assert PrivacyReport.combine([empty, first]).max_record_epsilon == pytest.approx(5.0)
    assert PrivacyReport.combine([empty, first]).records == 2


def test_to_dict_keys() -> None:
    r = _report(5, 2)
    d = r.to_dict()
    assert list(d) == [
        "mechanism",
        "records",
        "tokens_total",
        "tokens_privatized",
        "privatized_by_reason",
        "tokens_kept",
        "kept_by_reason",
        "resampled_unprotected_by_reason",
        "unprotected_attributes",
        "warnings",
        "per_token_guarantee",
        "document_epsilon",
        "max_record_epsilon",
        "document_guarantee",
        "composed",
    ]
    # the charged events at the report's delta: basic sum beside the tighter composition
    assert d["composed"]["epsilon_basic"] == 5 and d["composed"]["delta"] == 1e-6
    assert d["composed"]["epsilon"] <= 5
    assert d["mechanism"] == "custext"
    assert d["records"] == 1
    assert (d["tokens_total"], d["tokens_privatized"], d["tokens_kept"]) == (7, 5, 2)
    assert d["kept_by_reason"] == {"punctuation": 2}
    assert d["per_token_guarantee"] == "1-DP among all words"
    assert d["document_epsilon"] == pytest.approx(5.0)
    assert d["max_record_epsilon"] == pytest.approx(5.0)
    combined = PrivacyReport.combine([r, _report(1, 0)]).to_dict()
    assert combined["records"] == 2
    assert combined["document_epsilon"] == pytest.approx(6.0)
    assert combined["max_record_epsilon"] == pytest.approx(5.0)
    unbounded = TokenGuarantee(GuaranteeKind.METRIC, 1.0, metric="euclidean")
    inf_report = PrivacyReport("x", unbounded, [TokenEvent(unbounded, 1, "mechanism")])
    assert inf_report.to_dict()["document_epsilon"] is None  # JSON has no infinity


def test_zcdp_minimum_is_scipys_bounded_brent_step_for_step():
    """composition._bounded_minimum (no scipy.optimize import at start-up, issue 36) returns
    exactly the value scipy's minimize_scalar(method="bounded") finds, over rho and delta."""
    from scipy.optimize import minimize_scalar

    from dptext.accounting.composition import _bounded_minimum

    rng = np.random.default_rng(0)
    for rho in [*rng.uniform(1e-6, 50, 60), 1e-9, 0.5, 1e3]:
        for delta in (1e-5, 1e-12, 0.3):
            log_inv = -math.log(delta)

            def eps(x, rho=rho, log_inv=log_inv):
                a = 1.0 + math.exp(x)
                return rho * a + (log_inv + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (
                    a - 1.0)

            g = math.log(math.sqrt(log_inv / rho))
            want = minimize_scalar(eps, bounds=(g - 12, g + 12), method="bounded",
                                   options={"xatol": 1e-10}).fun
            assert _bounded_minimum(eps, g - 12, g + 12, xatol=1e-10) == float(want)
