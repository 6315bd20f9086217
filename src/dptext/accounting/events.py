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
    #: a pure guarantee given by an exponential mechanism (or any epsilon-bounded-range
    #: mechanism, Dong, Durfee & Rogers 2020): composes more tightly than epsilon-DP
    #: (:func:`dptext.accounting.composition.br_epsilon`)
    bounded_range: bool = False

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


EVENT_KINDS = ("pure", "approx")


@dataclass(frozen=True, slots=True)
class PrivacyEvent:
    """One release's cost for one privacy unit, described, not composed.

    ``kind`` is ``"pure"`` (epsilon-DP, delta 0) or ``"approx"`` ((epsilon, delta)-DP); the
    event happened ``count`` times (sequential composition, Dwork & Roth 2014, Thm 3.16).
    ``mechanism`` names what produced it and ``scope`` says between which inputs it holds
    (e.g. "per privatized token, worst case eps*Delta_max"). An event with an infinite
    epsilon (a token released with no finite guarantee) is a valid description; the ledger
    refuses to charge it. Stability rule (after dp_accounting's ``dp_event``): the meaning of a
    field never changes; new fields are only added with defaults.
    """

    kind: str
    epsilon: float
    delta: float = 0.0
    count: int = 1
    mechanism: str = ""
    scope: str = ""
    #: a pure event of an epsilon-bounded-range mechanism (an exponential mechanism): see
    #: :class:`TokenGuarantee`
    bounded_range: bool = False

    def __post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            raise ValueError(f"privacy event kind must be one of {EVENT_KINDS}, got {self.kind!r}")
        if math.isnan(self.epsilon) or self.epsilon < 0:
            raise ValueError(f"privacy event epsilon must be >= 0, got {self.epsilon}")
        if not 0.0 <= self.delta < 1.0:
            raise ValueError(f"privacy event delta must be in [0, 1), got {self.delta}")
        if self.kind == "pure" and self.delta:
            raise ValueError("a pure privacy event has delta 0; use kind='approx'")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValueError(f"privacy event count must be an integer >= 0, got {self.count!r}")
        if self.bounded_range and self.kind != "pure":
            raise ValueError("only a pure privacy event can be bounded-range")

    @property
    def total_epsilon(self) -> float:
        """``count * epsilon``: this event's share of a basic-composition total."""
        return self.count * self.epsilon if self.count else 0.0

    @property
    def total_delta(self) -> float:
        return self.count * self.delta

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "epsilon": self.epsilon}
        if self.delta:
            out["delta"] = self.delta
        if self.count != 1:
            out["count"] = self.count
        if self.mechanism:
            out["mechanism"] = self.mechanism
        if self.scope:
            out["scope"] = self.scope
        if self.bounded_range:
            out["bounded_range"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict) -> PrivacyEvent:
        return cls(d["kind"], float(d["epsilon"]), float(d.get("delta", 0.0)),
                   int(d.get("count", 1)), d.get("mechanism", ""), d.get("scope", ""),
                   bool(d.get("bounded_range", False)))
