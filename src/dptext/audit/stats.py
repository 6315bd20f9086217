"""Confidence bounds the auditor reports: Clopper-Pearson intervals, the privacy-loss lower bound
of one event, and the (epsilon, delta) lower bound from an attack's error rates.

Clopper & Pearson (1934): for k successes in n Bernoulli trials, the one-sided lower bound at level
1 - a is the a-quantile of Beta(k, n - k + 1) (0 when k = 0), the upper bound the (1 - a)-quantile
of Beta(k + 1, n - k) (1 when k = n). They are exact (conservative): P(p < lower) <= a for every p.
"""

from __future__ import annotations

import math

from scipy.stats import beta as beta_dist

from dptext.errors import DPTextError


def _check(k: int, n: int, a: float) -> None:
    if not (0 <= k <= n and n >= 1):
        raise DPTextError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0.0 < a < 1.0:
        raise DPTextError(f"the error level must lie in (0, 1), got {a}")


def cp_lower(k: int, n: int, a: float) -> float:
    """One-sided Clopper-Pearson lower bound on p at level 1 - ``a``."""
    _check(k, n, a)
    return 0.0 if k == 0 else float(beta_dist.ppf(a, k, n - k + 1))


def cp_upper(k: int, n: int, a: float) -> float:
    """One-sided Clopper-Pearson upper bound on p at level 1 - ``a``."""
    _check(k, n, a)
    return 1.0 if k == n else float(beta_dist.ppf(1.0 - a, k + 1, n - k))


def log_ratio_lower_bound(k1: int, n1: int, k2: int, n2: int, a: float) -> float:
    """Lower bound, at level 1 - ``a``, on log(P[E|x] / P[E|x']) from k1 of n1 draws of x and k2
    of n2 draws of x' in E: log(lower(p1) / upper(p2)), each side at level 1 - a/2 (union bound).
    -inf when k1 = 0 (no evidence)."""
    lo = cp_lower(k1, n1, a / 2.0)
    hi = cp_upper(k2, n2, a / 2.0)
    return -math.inf if lo == 0.0 else math.log(lo / hi)


def log_ratio_estimate(k1: int, n1: int, k2: int, n2: int) -> float:
    """Point estimate of log(P[E|x] / P[E|x']) with half a count added to each side (finite)."""
    return math.log((k1 + 0.5) / (n1 + 1.0)) - math.log((k2 + 0.5) / (n2 + 1.0))


def epsilon_from_error_rates(fpr_hi: float, fnr_hi: float, delta: float) -> float:
    """The epsilon lower bound of an attack with false-positive and false-negative rates at most
    ``fpr_hi`` and ``fnr_hi`` against an (epsilon, delta)-DP algorithm (Kairouz et al. 2015,
    used by Jagielski et al. 2020, arXiv:2006.07709, and Nasr et al. 2021, arXiv:2101.04535):
    FPR + e^eps FNR >= 1 - delta and FNR + e^eps FPR >= 1 - delta, so
    eps >= max(log((1 - delta - FPR) / FNR), log((1 - delta - FNR) / FPR)); 0 if neither is
    positive."""
    best = 0.0
    for a, b in ((fpr_hi, fnr_hi), (fnr_hi, fpr_hi)):
        top = 1.0 - delta - a
        if top > 0 and b > 0:
            best = max(best, math.log(top / b))
        elif top > 0:
            return math.inf
    return best


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P-value of ``v`` correct guesses out of ``r`` on ``m`` canaries under (epsilon, delta)-DP
    (Steinke, Nasr, Jagielski 2023, "Privacy auditing with one (1) training run",
    arXiv:2305.08846, Theorem 5.2 and their Algorithm for it): the probability that an
    (epsilon, delta)-DP algorithm lets a guesser get at least ``v`` right is at most
    ``P[Binomial(r, e^eps / (1 + e^eps)) >= v] + 2 m delta max_i P[v > B >= v - i] / i``."""
    from scipy.stats import binom

    if not 0 <= v <= r <= m:
        raise DPTextError(f"need 0 <= correct <= guesses <= canaries, got {v}, {r}, {m}")
    if not (epsilon >= 0 and 0.0 <= delta <= 1.0):
        raise DPTextError(f"need epsilon >= 0 and delta in [0, 1], got {epsilon}, {delta}")
    q = 1.0 / (1.0 + math.exp(-epsilon))
    tail = float(binom.sf(v - 1, r, q))  # P[Binomial(r, q) >= v]
    alpha = 0.0
    if v > 0 and delta > 0:
        import numpy as np

        i = np.arange(1, v + 1)
        below = np.cumsum(binom.pmf(v - i, r, q))  # P[v > Binomial(r, q) >= v - i]
        alpha = float((below / i).max())
    return min(1.0, tail + alpha * delta * 2 * m)


def one_run_epsilon_lower_bound(m: int, r: int, v: int, delta: float, p: float) -> float:
    """The largest epsilon that ``v`` correct of ``r`` guesses on ``m`` canaries rejects at
    significance ``p`` (the empirical lower bound of one-run auditing; 0 when none is
    rejected): bisection on :func:`one_run_p_value`, which grows with epsilon."""
    if not 0.0 < p < 1.0:
        raise DPTextError(f"significance must lie in (0, 1), got {p}")
    if one_run_p_value(m, r, v, 0.0, delta) >= p:
        return 0.0
    lo, hi = 0.0, 1.0
    while one_run_p_value(m, r, v, hi, delta) < p:
        lo, hi = hi, hi * 2
        if hi > 1e3:
            return math.inf
    for _ in range(40):
        mid = (lo + hi) / 2
        if one_run_p_value(m, r, v, mid, delta) < p:
            lo = mid
        else:
            hi = mid
    return lo
