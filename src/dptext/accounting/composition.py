"""Composition of token events into a document guarantee - the only place it is done.

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

from dptext.accounting.events import GuaranteeKind, TokenEvent


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
