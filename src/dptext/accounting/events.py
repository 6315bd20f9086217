"""Privacy events: what a mechanism did, described, not composed.

Mechanisms never do composition arithmetic themselves (ARCHITECTURE.md, after dp_accounting's
``dp_event``): a word-level mechanism emits one :class:`TokenEvent` per guarantee it applied,
with the number of tokens it applied it to. :mod:`dptext.accounting.composition` composes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


class GuaranteeKind(Enum):
    PURE = "pure"  # epsilon-DP between any two inputs in the stated scope
    METRIC = "metric"  # epsilon * d(x, x') - DP (d_chi-privacy) for the stated metric
    INDEPENDENT = "independent"  # output independent of which input in scope (0-DP)
    NONE = "none"  # released verbatim: no protection


@dataclass(frozen=True, slots=True)
class TokenGuarantee:
    """The local guarantee one token gets.

    ``scope`` says between which inputs the guarantee holds (e.g. "words sharing a CusText
    output set"). For metric guarantees ``metric`` names the distance and ``diameter`` is the
    largest distance between two inputs in scope, so ``epsilon * diameter`` is the pure-DP
    worst case between any two of them.
    """

    kind: GuaranteeKind
    epsilon: float = 0.0
    scope: str = ""
    metric: str | None = None
    diameter: float | None = None

    @property
    def worst_case_epsilon(self) -> float:
        """The pure-DP epsilon between any two inputs in scope."""
        if self.kind is GuaranteeKind.NONE:
            return math.inf
        if self.kind is GuaranteeKind.INDEPENDENT:
            return 0.0
        if self.kind is GuaranteeKind.METRIC:
            return self.epsilon * (self.diameter if self.diameter is not None else math.inf)
        return self.epsilon

    def describe(self) -> str:
        if self.kind is GuaranteeKind.NONE:
            return "no protection (released verbatim)"
        if self.kind is GuaranteeKind.INDEPENDENT:
            return f"output independent of the input among {self.scope} (0-DP)"
        if self.kind is GuaranteeKind.METRIC:
            worst = (
                "no finite worst case: the diameter is unknown"
                if self.diameter is None
                else f"worst case {self.worst_case_epsilon:.4g}-DP at the diameter "
                f"{self.diameter:.4g}"
            )
            return f"{self.epsilon:g}*d metric DP, d = {self.metric}, among {self.scope} ({worst})"
        return f"{self.epsilon:g}-DP among {self.scope}"


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """``count`` tokens each privatized (or kept) under ``guarantee``; ``reason`` names why."""

    guarantee: TokenGuarantee
    count: int
    reason: str
