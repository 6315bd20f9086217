"""The mutation suite: each planted bug (tests/support/planted_bugs.py) is flagged VIOLATION by the
quick audit, while the real mechanism at the same settings and seed comes out consistent.
Samples and times: docs/audit.md ("Planted bugs"), measured by benchmarks/bench_audit.py."""

from __future__ import annotations

import numpy as np
import pytest
from planted_bugs import (
    CaseLeakSanText,
    ClippedGumbel,
    HalfDistanceSanText,
    HotCusText,
    LeakySanText,
    WideClipDPMLM,
    per_tensor_clipping_train,
    rig_worst_case,
    squared_std_train,
    tiny_bert,
    tiny_space,
)

import dptext.mechanisms.truncated_gumbel as tg
from dptext.audit import CONSISTENT, NOT_TESTABLE, VIOLATION, Pair, audit, audit_exact
from dptext.audit.stats import log_ratio_lower_bound
from dptext.audit.training import audit_training
from dptext.mechanisms.custext import CusText
from dptext.mechanisms.dpmlm import DPMLM
from dptext.mechanisms.santext import SanText

torch = pytest.importorskip("torch")


# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


def _pair_of_audits(real, broken, **kw):
    honest, bug = audit(real, seed=21, **kw), audit(broken, seed=21, **kw)
    assert honest.verdict == CONSISTENT, honest.summary()
    assert bug.verdict == VIOLATION, bug.summary()
    worst = bug.worst
    assert worst.violation and worst.lower_bound > worst.claim
    return honest, bug


def test_custext_with_twice_the_temperature():
    space = tiny_space(60, 2, 3)
    real = CusText(epsilon=2.0, k=10, space=space).fit(cache=False)
    broken = HotCusText(epsilon=2.0, k=10, space=space).fit(cache=False)
    _, bug = _pair_of_audits(real, broken, samples=6000)
    # the input word itself, as derived (capitalised: a one-word text starts a sentence)
    assert tuple(w.lower() for w in bug.worst.event) == (bug.worst.pair.x,)
    assert audit_exact(broken).verdict == VIOLATION and audit_exact(real).verdict == CONSISTENT


@pytest.mark.slow
def test_word_mechanism_passing_one_percent_through():
    """SanText on the real default space: p(x | x) ~ 7e-5 honestly, 1% with the leak. ~35 s:
    32,000 draws per input is the size at which three seeds of three flag it (bench_audit)."""
    real = SanText(epsilon=2.0).fit()
    broken = LeakySanText(epsilon=2.0).fit()  # the same (cached) tables; only sampling differs
    _, bug = _pair_of_audits(real, broken, samples=32_000)
    # one-word texts start a sentence: the output is capitalised (post-processing); the pairs
    # include case forms of a word since issue 32 item 7 ("LIVED"), so compare case-folded
    assert bug.worst.pair.x.lower() in {w.lower() for w in bug.worst.event}


def test_a_leak_of_capitalised_words_only():
    """Issue 32 item 7: the default pairs were lower-case vocabulary words only, so a leak in
    a case branch was never drawn. The sampled audit now tries a pair in capitalised form."""
    space = tiny_space(60, 2, 3)
    real = SanText(epsilon=2.0, space=space).fit(cache=False)
    broken = CaseLeakSanText(epsilon=2.0, space=space).fit(cache=False)
    def texts(m, word):
        return [r.text for r in m.privatize_batch([word] * 400, rng=np.random.default_rng(1))]

    assert texts(broken, "w004") == texts(real, "w004")  # lower case: the real mechanism
    assert texts(broken, "W004") != texts(real, "W004")
    _, bug = _pair_of_audits(real, broken, samples=4000)
    assert bug.worst.pair.x[:1].isupper() and "capitalised" in bug.worst.pair.why
    assert bug.worst.pair.x in bug.worst.event


def test_santext_with_the_distance_term_halved():
    space = tiny_space(60, 2, 3)
    real = SanText(epsilon=2.0, space=space).fit(cache=False)
    broken = HalfDistanceSanText(epsilon=2.0, space=space).fit()
    _pair_of_audits(real, broken, samples=4000)
    assert audit_exact(broken).verdict == VIOLATION


def test_dpmlm_with_the_clip_range_understated(tmp_path):
    """~10 s: 2 x 4,000 texts through a tiny BERT, the size the 1.5x bug needs (bench_audit)."""
    path = tiny_bert(tmp_path / "bert")
    pairs = [Pair("cat", "dog", None, "worst-case LM"), Pair("dog", "cat", None, "worst-case LM")]
    ms = []
    for cls in (DPMLM, WideClipDPMLM):
        m = cls(epsilon=3.0, backend="mlm", model=path, clip_low=-2.0, clip_high=2.0).fit()
        rig_worst_case(m, "cat", "dog", "river")
        ms.append(m)
    _, bug = _pair_of_audits(*ms, samples=4000, pairs=pairs)
    assert tuple(w.lower() for w in bug.worst.event) == ("river",)


def test_truncated_gumbel_with_clipping_is_out_of_reach():
    """Clipping instead of conditioning is not seen, and cannot be: the claim exp(eps * d) on
    the closest pair is beyond the largest lower bound any sample of this size can give."""
    space = tiny_space(12, 3, 5)
    eps = 1.5 * tg.minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                   delta_min=space.delta_min, rule="tight")
    m = ClippedGumbel(epsilon=eps, b="tight", space=space).fit(cache=False)
    r = audit(m, samples=4000, seed=21)
    # issue 32 item 7: reported as not testable, not as "consistent"
    assert r.verdict == NOT_TESTABLE and r.untestable == len(r.tests)
    assert "not testable by sampling at 4000 draws" in r.summary()
    n = r.samples // 2
    reachable = log_ratio_lower_bound(n, n, 0, n, r.tests[0].level)  # every draw in E vs none
    assert min(t.claim for t in r.tests) > reachable
    assert eps * space.delta_min > reachable


@pytest.mark.parametrize("train_fn", [per_tensor_clipping_train, squared_std_train])
def test_user_level_dp_fedavg_bugs(train_fn):
    """~10 s each: 200 training runs (100 per world) are what the bound needs (docs/audit.md)."""
    bug = audit_training(trials=100, train_fn=train_fn, seed=0)
    assert bug.verdict == VIOLATION, bug.summary()
    assert bug.epsilon_lower_bound > bug.accountant_epsilon
    # per-tensor clipping: sqrt(64) / z = 4 noise sd; squared sd: beta / (z beta)^2 = 5
    assert _shift(bug) > 3.0


def _shift(result) -> float:
    """Mean score shift of the canary in units of the noise standard deviation."""
    s_in, s_out = np.array(result.scores["with"]), np.array(result.scores["without"])
    return float((s_in.mean() - s_out.mean()) / s_out.std())


def test_user_level_dp_fedavg_real_trainer_is_consistent():
    """~10 s: the same 200 runs as the planted bugs, with the real trainer."""
    r = audit_training(trials=100, seed=0)
    assert r.verdict == CONSISTENT, r.summary()
    # the canary's clipped update moves the score by beta / denominator, the noise sd is
    # z * beta / denominator: a shift of 1/z = 0.5 noise sd (estimate's sd ~0.14), no larger
    assert 0.1 < _shift(r) < 0.9
