"""Per-unit composition within one release: what each person (privacy unit) has spent in it.

The privacy unit is the person a record is about or by, named by a field of the record
(``--user-field author``); a unit's records in one release compose sequentially (Dwork & Roth
2014, Thm 3.16): its guarantee is the basic composition of all its records' privacy events,
``(sum count*eps, sum count*delta)``, and optionally the tighter PLD view at a delta
(:func:`dptext.accounting.composition.pld_epsilon`). Without a unit field every record is its
own unit, and the summary says so in words, because then the guarantee is per record: a person
who wrote several records gets the sum of theirs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from dptext.accounting.composition import br_epsilon
from dptext.accounting.events import PrivacyEvent
from dptext.accounting.report import PrivacyReport

RECORD_IS_UNIT = "each record is one person; if a person wrote several records, add them up"


def nearest_rank(sorted_values: list[float], q: float) -> float:
    """The nearest-rank q-quantile (the ceil(q*n)-th smallest value): always one unit's value."""
    if not sorted_values:
        return 0.0
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def add_unit_cost(totals: dict, unit: str, epsilon: float, delta: float,
                  records: int = 1) -> None:
    """Add ``records`` records' cost (basic composition: ``epsilon``, ``delta``) to
    ``totals[unit]``, kept as ``[epsilon, delta, records]`` - the per-person sums a batch, a
    shard and a release carry between processes and in the work directory's manifests (the
    light form of :class:`UnitTotal`, whose events the ledger and the summary compose)."""
    t = totals.get(unit)
    if t is None:
        totals[unit] = [0.0 + epsilon, 0.0 + delta, records]  # floats, as sums of none
    else:
        t[0] += epsilon
        t[1] += delta
        t[2] += records


@dataclass
class UnitTotal:
    """One unit's records in a release and their composed cost."""

    unit: str
    records: int = 0
    epsilon: float = 0.0  # basic composition
    delta: float = 0.0
    events: Counter = field(default_factory=Counter)  # PrivacyEvent with count=1 -> count

    def add(self, events: Iterable[PrivacyEvent]) -> None:
        self.records += 1
        for e in events:
            if e.count:
                self.events[PrivacyEvent(e.kind, e.epsilon, e.delta, 1, e.mechanism,
                                         e.scope, e.bounded_range)] += e.count
        self.epsilon = math.fsum(k.epsilon * c for k, c in self.events.items())
        self.delta = math.fsum(k.delta * c for k, c in self.events.items())

    def privacy_events(self) -> list[PrivacyEvent]:
        return [PrivacyEvent(k.kind, k.epsilon, k.delta, c, k.mechanism, k.scope,
                             k.bounded_range) for k, c in self.events.items()]


@dataclass(frozen=True)
class UnitSummary:
    """The distribution of per-unit guarantees in one release.

    ``max/median/p95_epsilon`` are nearest-rank quantiles of the units' basic-composition
    epsilons; ``worst_epsilon_pld`` is the worst unit's epsilon at ``delta`` (when asked) by
    dp_accounting's PLD or, for exponential-mechanism events, bounded-range composition where
    that is tighter (:func:`dptext.accounting.composition.br_epsilon`).
    """

    unit_field: str | None
    units: int
    records: int
    worst_unit: str | None
    max_epsilon: float
    median_epsilon: float
    p95_epsilon: float
    max_delta: float
    delta: float | None = None
    worst_epsilon_pld: float | None = None

    def describe(self) -> str:
        if self.records == 0:
            return "no records"
        if self.unit_field is None:
            head = f"privacy unit: the record ({self.records} records) - {RECORD_IS_UNIT}"
            who = "per record"
            worst = ""
        else:
            head = (f"privacy unit: the person named by {self.unit_field!r} ({self.units} "
                    f"units, {self.records} records; each unit's records compose sequentially)")
            who = "per unit"
            worst = f" (unit {self.worst_unit!r})"
        text = (f"{head}; {who}: worst {_eps(self.max_epsilon)}-DP{worst}, median "
                f"{_eps(self.median_epsilon)}, p95 {_eps(self.p95_epsilon)} (basic composition)")
        if self.max_delta:
            text += f"; largest delta {self.max_delta:.3g}"
        if self.worst_epsilon_pld is not None and \
                self.worst_epsilon_pld < 0.99 * self.max_epsilon:  # (1% tighter or more)
            text += (f"; that unit by PLD / bounded-range composition: "
                     f"({_eps(self.worst_epsilon_pld)}, {self.delta:g})-DP")
        return text

    def to_dict(self) -> dict:
        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else x

        return {
            "unit_field": self.unit_field,
            "units": self.units,
            "records": self.records,
            "worst_unit": self.worst_unit,
            "max_epsilon": num(self.max_epsilon),
            "median_epsilon": num(self.median_epsilon),
            "p95_epsilon": num(self.p95_epsilon),
            "max_delta": self.max_delta,
            "delta": self.delta,
            "worst_epsilon_pld": num(self.worst_epsilon_pld),
            "summary": self.describe(),
        }


def _eps(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


class UnitComposer:
    """Collects the records of one release by unit and composes each unit's events.

    ``unit_field`` None: every record is its own unit (``add(None, ...)``). Accepts events or
    anything with ``privacy_events()`` (a :class:`~dptext.accounting.report.PrivacyReport`).
    """

    def __init__(self, unit_field: str | None = None):
        self.unit_field = unit_field
        self._units: dict[str, UnitTotal] = {}
        self._records = 0

    def add(self, unit: str | None, events) -> UnitTotal:
        if isinstance(events, PrivacyReport):
            events = events.privacy_events()
        if unit is None:
            if self.unit_field is not None:
                raise ValueError(f"a record has no unit but the unit field is {self.unit_field!r}")
            unit = f"record {self._records + 1}"
        self._records += 1
        total = self._units.get(unit)
        if total is None:
            total = self._units[unit] = UnitTotal(unit)
        total.add(events)
        return total

    def totals(self) -> dict[str, UnitTotal]:
        return dict(self._units)

    def summary(self, *, delta: float | None = None) -> UnitSummary:
        totals = sorted(self._units.values(), key=lambda t: (t.epsilon, t.delta))
        eps = [t.epsilon for t in totals]
        worst = totals[-1] if totals else None
        pld = None
        if delta is not None and worst is not None:
            pld = br_epsilon(worst.privacy_events(), delta)
        return UnitSummary(
            unit_field=self.unit_field,
            units=len(totals),
            records=self._records,
            worst_unit=worst.unit if worst is not None and self.unit_field else None,
            max_epsilon=eps[-1] if eps else 0.0,
            median_epsilon=nearest_rank(eps, 0.5),
            p95_epsilon=nearest_rank(eps, 0.95),
            max_delta=max((t.delta for t in totals), default=0.0),
            delta=delta,
            worst_epsilon_pld=pld,
        )
