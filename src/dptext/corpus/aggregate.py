"""The running report of a job: constant memory in the number of records.

Per field, the reports of each batch are folded into one :class:`PrivacyReport` (events grouped
by guarantee and reason, record count, largest record); the whole job's report adds the largest
record over all fields. Its state (:meth:`PrivacyReport.to_state`) is saved in the manifest
with every shard, so a resumed job continues the same sums. Per-unit totals (``--user-field``)
live in a small SQLite table in the job's work directory, not in memory: one row per unit and
shard; their summary is the
:class:`~dptext.accounting.units.UnitSummary` of :mod:`dptext.accounting.units`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from dptext.accounting.events import TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.accounting.units import UnitSummary, nearest_rank


def combine(reports: Sequence[PrivacyReport]) -> PrivacyReport:
    """Combine with the class's own rule (a subclass keeps its fields)."""
    return type(reports[0]).combine(reports)


# ------------------------------------------------------------------ aggregates
class JobAggregate:
    """Per-field running reports plus the record counts of the job."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = list(fields)
        self.per_field: dict[str, PrivacyReport | None] = {f: None for f in self.fields}
        self.counts = {"records_in": 0, "records_out": 0, "rejected": 0, "withheld": 0}
        self.max_record_epsilon = 0.0

    def add(self, field: str, report: PrivacyReport) -> None:
        current = self.per_field[field]
        self.per_field[field] = report if current is None else combine([current, report])

    def note_record_epsilon(self, eps: float) -> None:
        if eps > self.max_record_epsilon:
            self.max_record_epsilon = eps

    def state(self) -> dict:
        return {"per_field": {f: None if r is None else r.to_state()
                              for f, r in self.per_field.items()},
                "counts": dict(self.counts), "max_record_epsilon": self.max_record_epsilon}

    @classmethod
    def from_state(cls, fields: Sequence[str], state: dict) -> JobAggregate:
        agg = cls(fields)
        for f, s in state["per_field"].items():
            agg.per_field[f] = None if s is None else PrivacyReport.from_state(s)
        agg.counts.update(state["counts"])
        agg.max_record_epsilon = state["max_record_epsilon"]
        return agg

    def report(self, mechanism: str, per_token: TokenGuarantee) -> PrivacyReport:
        """The job's report over every field: the fields' events together, the number of
        records written, and the largest record over all its fields."""
        parts = [r for r in self.per_field.values() if r is not None]
        if not parts:
            return PrivacyReport(mechanism, per_token, [], records=0)
        total = combine(parts) if len(parts) > 1 else parts[0]
        return dataclasses.replace(total, records=self.counts["records_out"],
                                   max_record_epsilon=self.max_record_epsilon)


class _RankedEpsilons(Sequence):
    """The units' epsilons in ascending order, read from SQLite one at a time (what
    :func:`dptext.accounting.units.nearest_rank` needs, without holding every unit)."""

    def __init__(self, db: sqlite3.Connection, query: str, n: int) -> None:
        self.db, self.query, self.n = db, query, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rank):
        if isinstance(rank, slice) or not 0 <= rank < self.n:
            raise IndexError(rank)
        return self.db.execute(f"SELECT e FROM ({self.query}) ORDER BY e, d LIMIT 1 OFFSET ?",
                               (rank,)).fetchone()[0]


class UnitTotals:
    """What each privacy unit (``--user-field``) was charged by this job, on disk.

    Rows are (shard, unit, epsilon, delta, records); a resumed job drops the rows of shards
    that were not committed. Composition within a unit is basic (sums), which is what the
    ledger's ``epsilon_basic`` reports too. The summary is :mod:`dptext.accounting.units`'
    (:class:`~dptext.accounting.units.UnitSummary`, nearest-rank quantiles: each is one unit's
    value), computed by queries rather than from every unit in memory.
    """

    def __init__(self, path: Path | None, unit_field: str | None = None) -> None:
        self.unit_field = unit_field
        self.db = sqlite3.connect(":memory:" if path is None else str(path))
        self.db.execute("CREATE TABLE IF NOT EXISTS charges (shard INTEGER, unit TEXT, "
                        "epsilon REAL, delta REAL, records INTEGER)")
        self.db.commit()

    def keep_shards_below(self, shard: int) -> None:
        self.db.execute("DELETE FROM charges WHERE shard >= ?", (shard,))
        self.db.commit()

    def add(self, shard: int, totals: dict[str, list[float]]) -> None:
        self.db.executemany("INSERT INTO charges VALUES (?, ?, ?, ?, ?)",
                            [(shard, u, e, d, n) for u, (e, d, n) in totals.items()])
        self.db.commit()

    def summary(self) -> dict:
        """Unit count, the worst unit and the max / median / p95 of the units' epsilon."""
        q = ("SELECT unit, SUM(epsilon) AS e, SUM(delta) AS d, SUM(records) AS n "
             "FROM charges GROUP BY unit")
        n, records, max_delta = self.db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(n), 0), COALESCE(MAX(d), 0) FROM ({q})").fetchone()
        if n == 0:
            return {"units": 0}
        unit, eps, delta, unit_records = self.db.execute(
            f"SELECT unit, e, d, n FROM ({q}) ORDER BY e DESC, unit LIMIT 1").fetchone()
        ranked = _RankedEpsilons(self.db, q, n)
        s = UnitSummary(unit_field=self.unit_field, units=n, records=records,
                        worst_unit=unit if self.unit_field else None, max_epsilon=eps,
                        median_epsilon=nearest_rank(ranked, 0.5),
                        p95_epsilon=nearest_rank(ranked, 0.95), max_delta=max_delta)
        return {
            "units": n,
            "worst_unit": {"unit": unit, "epsilon": eps, "delta": delta,
                           "records": unit_records},
            "epsilon_max": eps, "epsilon_median": s.median_epsilon,
            "epsilon_p95": s.p95_epsilon,
            "composition": "basic (sum over the unit's records)",
            "unit_field": self.unit_field, "records": records, "max_delta": max_delta,
            "summary": s.describe(),
        }

    def close(self) -> None:
        self.db.close()
