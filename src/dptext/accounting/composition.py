"""Composition of token events into a document guarantee, and of privacy events into a privacy
unit's total - the only place it is done.

Sequential composition over the tokens of one document (Dwork & Roth 2014, Thm 3.16): pure
guarantees add up; metric guarantees add up in the sum of per-token distances
(d(x, x') = sum_i d(x_i, x'_i), truncated Gumbel paper, end of Appendix A); a token released
verbatim makes the document unprotected. For an (epsilon, delta) view of many pure-DP tokens we
use dp_accounting's privacy-loss-distribution accountant on the dominating pair of an
epsilon-DP mechanism (binary randomized response, Kairouz et al. 2015).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dptext.accounting.events import GuaranteeKind, PrivacyEvent, TokenEvent


def pure_epsilon(events: Iterable[TokenEvent]) -> float:
    """Basic composition: the document is epsilon-DP with this epsilon (inf if unprotected).

    Metric events contribute their worst case ``epsilon * diameter``.
    """
    return math.fsum(e.count * e.guarantee.worst_case_epsilon for e in events if e.count)


def metric_epsilon(events: Iterable[TokenEvent]) -> dict[str, float]:
    """Per metric, the composed factor: the document is ``eps * sum_i d(x_i, x'_i)``-private."""
    out: dict[str, float] = {}
    for e in events:
        if e.count and e.guarantee.kind is GuaranteeKind.METRIC:
            # Each token is eps*d_i private; the product of ratios gives eps * sum d_i when all
            # tokens share eps. Different eps per token: bound by the largest.
            out[e.guarantee.metric] = max(out.get(e.guarantee.metric, 0.0), e.guarantee.epsilon)
    return out


def epsilon_for_delta(events: Iterable[TokenEvent], delta: float) -> float:
    """Smallest epsilon such that the document is (epsilon, delta)-DP, via dp_accounting PLD.

    Each token with a finite worst-case epsilon is dominated by binary randomized response with
    that epsilon. (dp_accounting 0.6.0's ``PLDAccountant`` ignores the ``count`` of a
    ``RandomizedResponseDpEvent``, so we self-compose the PLD directly; see docs/mechanisms.md.)
    """
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    events = [e for e in events if e.count]
    if delta == 0.0:
        return pure_epsilon(events)
    if any(math.isinf(e.guarantee.worst_case_epsilon) for e in events):
        return math.inf
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    groups: dict[float, int] = {}
    for e in events:
        eps = e.guarantee.worst_case_epsilon
        if eps > 0:
            groups[eps] = groups.get(eps, 0) + e.count
    if not groups:
        return 0.0
    pld = None
    for eps, count in groups.items():
        one = pld_lib.from_randomized_response(
            noise_parameter=2.0 / (1.0 + math.exp(eps)), num_buckets=2
        ).self_compose(count)
        pld = one if pld is None else pld.compose(one)
    return min(pld.get_epsilon_for_delta(delta), pure_epsilon(events))


# ------------------------------------------------------------------ privacy events (per unit)
# Upper bound on the number of grid points of a composed PLD (its dense loss array): keeps
# pld_epsilon below about a second whatever the number of stored events.
PLD_MAX_POINTS = 50_000
PLD_FINEST_INTERVAL = 1e-4  # dp_accounting's default discretization


def basic_composition(events: Iterable[PrivacyEvent]) -> tuple[float, float]:
    """Sequential composition (Dwork & Roth 2014, Thm 3.16): ``(sum count*eps, sum count*delta)``.

    This is what the ledger enforces against a budget. An event with an infinite epsilon makes
    the total infinite.
    """
    events = [e for e in events if e.count]
    return (math.fsum(e.total_epsilon for e in events),
            math.fsum(e.total_delta for e in events))


def _common_divisor(values: list[float]) -> float | None:
    """The largest g such that every value is an integer multiple of g, when the values are
    decimals of at most six places (0.5, 0.3, 1.25 ...); None otherwise."""
    from fractions import Fraction  # here: decimal and numbers for one helper (issue 36)

    fracs = [Fraction(v).limit_denominator(10**6) for v in values]
    if any(abs(float(f) - v) > 1e-12 * v for f, v in zip(fracs, values, strict=True)):
        return None
    den = math.lcm(*(f.denominator for f in fracs))
    return float(Fraction(math.gcd(*(f.numerator * (den // f.denominator) for f in fracs)), den))


def pld_interval(events: Iterable[PrivacyEvent]) -> float:
    """The discretization interval for :func:`pld_epsilon`: 1e-4 (dp_accounting's default)
    unless the composed loss would span more than ``PLD_MAX_POINTS`` grid points, then coarser;
    adjusted so the epsilons are exact multiples of it where they share a divisor that is not
    much finer, else so the smallest one is (rounding then costs nothing in the common case of
    one or a few decimal epsilons)."""
    events = [e for e in events if e.count and e.epsilon > 0]
    if not events:
        return PLD_FINEST_INTERVAL
    # dp_accounting truncates tails of mass < 1e-15: the composed loss lies within its mean
    # (sum of count*eps*tanh(eps/2)) plus ~8 standard deviations (each term eps^2) - a width
    # estimate, used only to size the grid.
    mean = math.fsum(e.count * e.epsilon * math.tanh(e.epsilon / 2) for e in events)
    sd = math.sqrt(math.fsum(e.count * e.epsilon**2 for e in events))
    width = min(2 * math.fsum(e.total_epsilon for e in events), 2 * (mean + 8 * sd))
    target = max(PLD_FINEST_INTERVAL, width / PLD_MAX_POINTS)
    base = _common_divisor(sorted({e.epsilon for e in events}))
    if base is None or base < target / 4:  # exactness for at most 4x the grid points
        base = min(e.epsilon for e in events)
    return base / math.ceil(base / target)


def pld_epsilon(events: Iterable[PrivacyEvent], delta: float) -> float:
    """Smallest epsilon such that the composition of ``events`` is (epsilon, delta)-DP, by
    dp_accounting's privacy-loss-distribution accountant, never above basic composition.

    Each event (epsilon_i, delta_i) is dominated by the pessimistic PLD of an
    (epsilon_i, delta_i)-DP mechanism (dp_accounting ``from_privacy_parameters``: loss +-eps_i,
    infinite with probability delta_i; for delta_i = 0 the binary randomized response pair of
    Kairouz et al. 2015), self-composed ``count`` times and composed across events. The
    discretization (:func:`pld_interval`) rounds losses up, so the result is an upper bound.
    ``inf`` when ``delta`` is below what the stored deltas alone consume (the PLD has more
    infinite-loss mass than ``delta``) or an event has an infinite epsilon.
    """
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    events = [e for e in events if e.count]
    basic_eps, basic_delta = basic_composition(events)
    if math.isinf(basic_eps):
        return math.inf
    fallback = basic_eps if basic_delta <= delta else math.inf
    if delta == 0.0 or not any(e.epsilon > 0 or e.delta > 0 for e in events):
        return fallback
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.pld.common import DifferentialPrivacyParameters

    interval = pld_interval(events)
    groups: dict[tuple[float, float], int] = {}
    for e in events:
        if e.epsilon > 0 or e.delta > 0:
            groups[(e.epsilon, e.delta)] = groups.get((e.epsilon, e.delta), 0) + e.count
    pld = None
    for (eps, d), count in sorted(groups.items()):
        one = pld_lib.from_privacy_parameters(
            DifferentialPrivacyParameters(eps, d), value_discretization_interval=interval
        ).self_compose(count)
        pld = one if pld is None else pld.compose(one)
    return min(pld.get_epsilon_for_delta(delta), fallback)


# ------------------------------------------------------------------ a document budget
#: The token counts a document budget divides by: every n up to 8, then 10, 12, 15, 20, 25, 30,
#: 40, 50, 60, 80 times each power of ten (consecutive steps at most 4/3 apart). A record of n
#: privatized tokens gets the per-token epsilon for the smallest step >= n, so it costs between
#: 3/4 of the document epsilon and all of it, and a corpus needs about ten distinct per-token
#: epsilons (fitted tables) per factor of ten in record length instead of one per length.
_STEPS = (10, 12, 15, 20, 25, 30, 40, 50, 60, 80)


def token_step(tokens: int) -> int:
    """The smallest step of the ladder (see ``_STEPS``) that is >= ``tokens`` (>= 1)."""
    if tokens <= 8:
        return max(1, int(tokens))
    scale = 1
    while True:
        for s in _STEPS:
            if s * scale >= tokens:
                return s * scale
        scale *= 10


def per_token_epsilon(document_epsilon: float, tokens: int, *, cost_per_epsilon: float = 1.0
                      ) -> float:
    """The per-token epsilon that keeps a record of ``tokens`` privatized tokens within
    ``document_epsilon`` under basic composition (what the ledger charges):
    ``tokens * eps * cost_per_epsilon <= document_epsilon``, with ``tokens`` rounded up to the
    ladder's step (:func:`token_step`). ``cost_per_epsilon`` is what one unit of per-token
    epsilon costs a token: 1 for a pure guarantee, the diameter Delta_max for a metric one
    (charged at its worst case ``eps * Delta_max``). A record with no token to privatize gets
    ``document_epsilon / cost_per_epsilon`` (it costs nothing)."""
    if not (document_epsilon > 0 and math.isfinite(document_epsilon)):
        raise ValueError(f"document epsilon must be finite and > 0, got {document_epsilon}")
    if not (cost_per_epsilon > 0 and math.isfinite(cost_per_epsilon)):
        raise ValueError(f"cost per epsilon must be finite and > 0, got {cost_per_epsilon}")
    step = token_step(tokens)
    eps = document_epsilon / (step * cost_per_epsilon)
    while step * eps * cost_per_epsilon > document_epsilon:  # float rounding: stay inside
        eps = math.nextafter(eps, 0.0)
    return eps


# ------------------------------------------------------------------ bounded-range composition
# An exponential mechanism with parameter eps is eps-bounded-range (eps-BR; Dong, Durfee &
# Rogers 2020, "Optimal differential privacy composition for exponential mechanisms"): for
# neighbours x, x' its privacy loss ln p(y|x)/p(y|x') lies, over the outputs y, in an interval of
# width eps (not 2 eps, as for a general eps-DP mechanism) - [-t eps, (1-t) eps] for some t in
# [0, 1]. Two bounds follow that hold under *adaptive* composition (DP-MLM's causal draws and
# DP-Prompt's tokens depend on the draws before them), and we report the smaller of them, of
# dp_accounting's PLD of the same events treated as eps-DP (:func:`pld_epsilon`) and of basic
# composition:
#
# * Azuma-Hoeffding (DDR 2020 sec. 7 / Durfee & Rogers 2019): each step's loss, given the past,
#   has a range of width w_i (eps_i for BR, 2 eps_i for eps-DP) and mean at most its largest KL
#   divergence b_i (BR: eps/(1-e^-eps) - 1 - ln(eps/(1-e^-eps)), DDR Lemma; eps-DP:
#   eps tanh(eps/2)), so P[L > sum b_i + s] <= exp(-2 s^2 / sum w_i^2):
#   eps_g = sum b_i + sqrt(sum w_i^2 * ln(1/delta) / 2).
# * zCDP: eps-BR is eps^2/8-zCDP (Cesar & Rogers 2021), eps-DP is eps^2/2-zCDP (Bun & Steinke
#   2016); zCDP adds up adaptively, and rho-zCDP is (eps, delta)-DP with
#   eps = min_a rho a + (ln(1/delta) + (a-1) ln(1-1/a) - ln a) / (a-1) (Canonne, Kamath &
#   Steinke 2020, Prop. 12 - the conversion dp_accounting's RDP accountant uses).
#
# The optimal *non-adaptive* composition of eps-BR mechanisms (DDR 2020 Thm. 3) is smaller
# still; it is not claimed here (it does not hold for adaptive draws) and serves as the exact
# reference in tests/accounting/test_br_composition.py.


def br_kl(epsilon: float) -> float:
    """The largest expected privacy loss (KL divergence) of an epsilon-BR mechanism:
    ``a - 1 - ln a`` with ``a = eps / (1 - e^-eps)`` (at t = ln((e^eps - 1)/eps)/eps)."""
    if epsilon <= 0:
        return 0.0
    if epsilon < 1e-4:  # a - 1 - ln a ~ (a-1)^2/2, a - 1 ~ eps/2
        return epsilon * epsilon / 8.0
    a = epsilon / -math.expm1(-epsilon)
    return (a - 1.0) - math.log(a)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The epsilon of a rho-zCDP mechanism at ``delta`` (Canonne, Kamath & Steinke 2020,
    Prop. 12, minimized over the Renyi order a > 1)."""
    if rho <= 0:
        return 0.0
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    log_inv = -math.log(delta)

    def eps(log_am1: float) -> float:
        a = 1.0 + math.exp(log_am1)
        return rho * a + (log_inv + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (a - 1.0)

    # the unconstrained optimum is near a = 1 + sqrt(ln(1/delta)/rho); search around it
    guess = math.log(math.sqrt(log_inv / rho))
    return float(min(_bounded_minimum(eps, guess - 12.0, guess + 12.0, xatol=1e-10),
                     eps(guess)))


def _bounded_minimum(func, lo: float, hi: float, *, xatol: float, maxiter: int = 500) -> float:
    """The smallest value Brent's bounded method finds for ``func`` on ``[lo, hi]``: scipy's
    ``minimize_scalar(method="bounded")`` (``_minimize_scalar_bounded``, BSD-3) step for step
    in plain floats - the same iterates, the same value - without importing scipy.optimize
    (0.3-0.5 s of CPU at the start of every command that prints a report; issue 36)."""
    sqrt_eps = math.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - math.sqrt(5.0))
    a, b = lo, hi
    fulc = a + golden_mean * (b - a)
    nfc = xf = fulc
    rat = e = 0.0
    fx = func(xf)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = True
        if abs(e) > tol1:  # a parabolic step, where acceptable
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r = e
            e = rat
            if abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf):
                rat = (p + 0.0) / q
                x = xf + rat
                if (x - a) < tol2 or (b - x) < tol2:
                    rat = tol1 * (1.0 if xm - xf >= 0 else -1.0)
            else:
                golden = True
        if golden:
            e = (a - xf) if xf >= xm else (b - xf)
            rat = golden_mean * e
        x = xf + (1.0 if rat >= 0 else -1.0) * max(abs(rat), tol1)
        fu = func(x)
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if fu <= fnfc or nfc == xf:
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxiter:
            break
    return fx


def _pure_parts(events: list[PrivacyEvent]) -> tuple[float, float, float]:
    """(sum of mean-loss bounds, sum of squared loss ranges, rho) of pure events."""
    mean = width2 = rho = 0.0
    for e in events:
        if e.bounded_range:
            mean += e.count * br_kl(e.epsilon)
            width2 += e.count * e.epsilon**2
            rho += e.count * e.epsilon**2 / 8.0
        else:
            mean += e.count * e.epsilon * math.tanh(e.epsilon / 2.0)
            width2 += e.count * 4.0 * e.epsilon**2
            rho += e.count * e.epsilon**2 / 2.0
    return mean, width2, rho


def br_epsilon(events: Iterable[PrivacyEvent], delta: float, *, pld: bool = True) -> float:
    """Smallest epsilon such that the (adaptive) composition of ``events`` is
    (epsilon, delta)-DP among: bounded-range-aware Azuma-Hoeffding, zCDP (module comment
    above), dp_accounting's PLD of the events as epsilon-DP (``pld=True``) and basic
    composition. Events of approximate DP (delta > 0) leave only the PLD and basic bounds.
    Never above basic composition; ``inf`` as :func:`pld_epsilon` says."""
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    events = [e for e in events if e.count and (e.epsilon > 0 or e.delta > 0)]
    basic_eps, basic_delta = basic_composition(events)
    best = pld_epsilon(events, delta) if pld else (
        basic_eps if basic_delta <= delta else math.inf)
    if delta == 0.0 or math.isinf(basic_eps) or not events \
            or any(e.kind != "pure" for e in events):
        return best
    mean, width2, rho = _pure_parts(events)
    azuma = mean + math.sqrt(width2 * -math.log(delta) / 2.0)
    return min(best, azuma, zcdp_epsilon(rho, delta), basic_eps)
