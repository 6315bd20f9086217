"""What an audit found: one test per pair of neighbouring inputs, and the verdict.

``consistent``: no lower bound exceeds the claim, and at least one claim was within what the
draws could show. ``not testable``: every claim is above the largest lower bound the audit's
draws can give at all (every draw of x in E, none of x' - about 7.3 at 10,000 estimation draws
and the default confidence): no sample of this size could have found a violation, so the
audit says nothing either way. ``VIOLATION``: some lower bound exceeds its claim; the test
names the pair, the event and the counts (or, in exact mode, the output and its probabilities),
and the result carries the seed, so anyone can reproduce it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dptext.audit.pairs import Pair
from dptext.audit.stats import log_ratio_lower_bound

CONSISTENT, VIOLATION, NOT_TESTABLE = "consistent", "VIOLATION", "not testable"
# Exact mode: a log-ratio above the claim by less than this (relative) is float64 rounding.
EXACT_TOLERANCE = 1e-9
SHOWN = 8  # tests listed in the summary, closest to a violation first


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class _PairTest:
    """What every test of a pair (x, x') has: the pair, the claim, the scale of a metric claim
    and the first fields of its JSON form."""

    pair: Pair
    claim: float

    @property
    def scale(self) -> float:
        return self.pair.distance if self.pair.distance is not None else 1.0

    def _pair_dict(self) -> dict[str, Any]:
        return {"x": self.pair.x, "x_prime": self.pair.x_prime, "distance": self.pair.distance,
                "why": self.pair.why, "claim": self.claim}


@dataclass(frozen=True)
class SampledTest(_PairTest):
    """Pair (x, x'), event E chosen on the selection half, counts on the estimation half:
    ``k_x`` of ``n_x`` draws of x and ``k_x_prime`` of ``n_x_prime`` draws of x' fell in E.
    ``lower_bound`` holds for log(P[E|x] / P[E|x']) at level 1 - ``level`` (and all tests of an
    audit hold together at its confidence, by the union bound)."""

    event: tuple[str, ...]
    k_x: int
    n_x: int
    k_x_prime: int
    n_x_prime: int
    lower_bound: float
    estimate: float
    level: float

    @property
    def violation(self) -> bool:
        return self.lower_bound > self.claim

    @property
    def reachable(self) -> float:
        """The largest lower bound these draws could give: every draw of x in E, none of x'."""
        return log_ratio_lower_bound(self.n_x, self.n_x, 0, self.n_x_prime, self.level)

    @property
    def testable(self) -> bool:
        """Whether a violation of the claim could show at all with these draws."""
        return self.claim < self.reachable

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._pair_dict(), "reachable": self.reachable,
            "testable": self.testable, "event": list(self.event),
            "counts": {"in_event_x": self.k_x, "draws_x": self.n_x,
                       "in_event_x_prime": self.k_x_prime, "draws_x_prime": self.n_x_prime},
            "lower_bound": _finite(self.lower_bound), "estimate": self.estimate,
            "level": self.level, "violation": self.violation,
        }

    def describe(self) -> str:
        event = ", ".join(repr(e) for e in self.event[:5])
        if len(self.event) > 5:
            event += f", ... ({len(self.event)} outputs)"
        d = "" if self.pair.distance is None else f", d={self.pair.distance:.4g}"
        return (f"x={self.pair.x!r}, x'={self.pair.x_prime!r}{d}: E={{{event}}}: "
                f"{self.k_x}/{self.n_x} estimation draws of x and {self.k_x_prime}/"
                f"{self.n_x_prime} of x' in E; log P[E|x]/P[E|x'] >= {self.lower_bound:.4g} "
                f"(claim {self.claim:.4g})")


def split_draws(samples: int) -> tuple[int, int, int]:
    """How the ``samples`` draws of each input are used: (ranking the outputs, choosing the
    event E, estimating the bound) - the first quarter, the second, the second half."""
    half, quarter = samples // 2, samples // 4
    return quarter, half - quarter, samples - half


@dataclass(frozen=True)
class ExactTest(_PairTest):
    """The exact worst log-ratio of pair (x, x') over all outputs, from ``distribution()``."""

    output: str
    p_x: float
    p_x_prime: float

    @property
    def lower_bound(self) -> float:  # exact: the loss itself
        if self.p_x_prime == 0.0:
            return math.inf
        return math.log(self.p_x) - math.log(self.p_x_prime)

    @property
    def violation(self) -> bool:
        return self.lower_bound > self.claim + EXACT_TOLERANCE * max(1.0, abs(self.claim))

    testable = True  # exact: no sampling limit

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._pair_dict(), "output": self.output,
            "p_x": self.p_x, "p_x_prime": self.p_x_prime,
            "log_ratio": _finite(self.lower_bound), "violation": self.violation,
        }

    def describe(self) -> str:
        d = "" if self.pair.distance is None else f", d={self.pair.distance:.4g}"
        return (f"x={self.pair.x!r}, x'={self.pair.x_prime!r}{d}: output {self.output!r}: "
                f"P={self.p_x:.6g} vs {self.p_x_prime:.6g}; log-ratio {self.lower_bound:.6g} "
                f"(claim {self.claim:.6g})")


@dataclass
class AuditResult:
    """An audit of one mechanism at its settings."""

    mechanism: str
    settings: str
    guarantee: str
    metric: bool
    epsilon: float
    mode: str  # "sampled" or "exact"
    samples: int  # draws per input (0 in exact mode)
    confidence: float
    pairs_tried: int
    tests: list = field(default_factory=list)
    seed: int | None = None
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        if any(t.violation for t in self.tests):
            return VIOLATION
        if self.tests and not any(t.testable for t in self.tests):
            return NOT_TESTABLE
        return CONSISTENT

    @property
    def untestable(self) -> int:
        """Tests whose claim is above what their draws could show."""
        return sum(not t.testable for t in self.tests)

    @property
    def worst(self):
        """The test furthest above (or least below) its claim, per unit of distance."""
        if not self.tests:
            return None
        return max(self.tests, key=lambda t: (t.lower_bound - t.claim) / t.scale)

    @property
    def epsilon_lower_bound(self) -> float:
        """max over tests of the lower bound (divided by d for metric DP), floored at 0."""
        return max([0.0] + [t.lower_bound / t.scale for t in self.tests])

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism, "settings": self.settings, "guarantee": self.guarantee,
            "metric": self.metric, "epsilon": self.epsilon, "mode": self.mode,
            "samples_per_input": self.samples, "confidence": self.confidence,
            "pairs_tried": self.pairs_tried, "pairs_tested": len(self.tests),
            "epsilon_lower_bound": _finite(self.epsilon_lower_bound),
            "verdict": self.verdict, "untestable_tests": self.untestable,
            "seed": self.seed, "seconds": round(self.seconds, 3),
            "tests": [t.to_dict() for t in self.tests],
        }

    def summary(self) -> str:
        unit = "epsilon (per unit of d)" if self.metric else "epsilon"
        if self.mode == "sampled":
            rank, choose, estimate = split_draws(self.samples)
            how = (f"{self.samples} draws per input ({rank} rank the outputs, {choose} choose "
                   f"the event E, {estimate} estimate the bound), confidence "
                   f"{self.confidence:g}")
        else:
            how = "exact output distributions"
        lines = [
            f"audit of {self.settings}: {self.mode}, {how}",
            f"  claim        {self.guarantee}",
            f"  pairs        {self.pairs_tried} tried, {len(self.tests)} tested"
            + (" (Bonferroni)" if self.mode == "sampled" else ""),
        ]
        ranked = sorted(self.tests, key=lambda t: -(t.lower_bound - t.claim) / t.scale)
        for t in ranked[:SHOWN]:
            mark = "!" if t.violation else " " if t.testable else "?"
            lines.append(f"    {mark} {t.describe()}")
        if len(ranked) > SHOWN:
            lines.append(f"      ... {len(ranked) - SHOWN} more (all in the JSON output)")
        bound = self.epsilon_lower_bound
        lines.append(f"  lower bound  {unit} >= {bound:.4g} (claimed {self.epsilon:g})")
        verdict = self.verdict
        if verdict == VIOLATION:
            lines.append(f"  verdict      VIOLATION: {self.worst.describe()}"
                         + (f"; reproduce with seed {self.seed}" if self.seed is not None else ""))
        elif verdict == NOT_TESTABLE:
            reach = max(t.reachable for t in self.tests)
            lines.append(f"  verdict      not testable by sampling at {self.samples} draws: every "
                         f"claim is above the largest lower bound these draws can give "
                         f"({reach:.4g}, every draw of x in E and none of x'); nothing was "
                         "shown either way")
        else:
            lines.append("  verdict      consistent (no lower bound exceeds the claim)")
            if self.untestable:
                lines.append(f"               {self.untestable} of {len(self.tests)} tests not "
                             f"testable by sampling at {self.samples} draws (claim above "
                             "what the draws can show)")
        lines.append(f"  time         {self.seconds:.1f} s")
        return "\n".join(lines)
