"""The fold: the one place that turns a batch's per-record results and the ledger's decisions
into what is released - the bytes (or Parquet rows) to write, the job's report and the
per-person totals. A worker's batch result assumes every record is released; when the ledger
withholds some, the fold keeps the others' bytes, report and totals (and rejects the withheld
with the ledger's reason)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dptext.accounting.units import add_unit_cost
from dptext.corpus import budget as budget_mod
from dptext.corpus.aggregate import JobAggregate, combine
from dptext.corpus.draws import SharedDraws
from dptext.corpus.shards import Shard
from dptext.corpus.sources import Source
from dptext.corpus.work import BatchResult, max_record_epsilon, reject_line


class Fold:
    def __init__(self, fields: list[str], sources: list[Source], parquet: bool,
                 units_tracked: bool, draws: SharedDraws | None = None) -> None:
        self.fields, self.sources = fields, sources
        self.parquet, self.units_tracked = parquet, units_tracked
        self.draws = draws  # --consistent unit without a ledger: charged here, in order

    def __call__(self, agg: JobAggregate, out: BatchResult, shard: Shard, ledger: Any,
                 decisions: Sequence | None = None) -> bytes | list[dict]:
        """Fold the batch's ledger ``decisions`` (reserved before its shard can become durable;
        reserved here when not given) and what is released into ``agg`` and ``shard``; the
        bytes (or Parquet rows) to write."""
        if out.rejects:
            shard.rejects.append(out.rejects)
        parquet = self.parquet
        payload: bytes | list[dict] = (out.rows or []) if parquet else out.data
        parts, max_eps, units = out.field_reports, out.max_record_epsilon, out.units
        released = out.written
        if ledger is None and out.draws is not None and out.items:
            units = {}  # every written record is released: each pays its draws not paid yet
            for i, (key, unit, own) in enumerate(out.items):
                events = self.draws.cost(own, out.draws[i])
                paid = self.draws.settle(out.draws[i], True)
                shard.paid.extend(paid)
                _count_paid(parts, out, i, paid)
                out.items[i] = (key, unit, events)
                add_unit_cost(units, unit, *budget_mod.event_totals(events))
        if ledger is not None and out.items:
            if decisions is None:
                decisions = ledger.reserve(out.items)
            ids = [d.charge_id for d in decisions if d.allowed]
            if len(ids) == len(decisions):  # the usual case: nothing withheld
                keep = range(len(decisions))
                shard.charges.extend([c for c in ids if c is not None])
            else:
                keep = []
                for i, d in enumerate(decisions):
                    if d.allowed:
                        keep.append(i)
                        if d.charge_id is not None:
                            shard.charges.append(d.charge_id)
                    else:
                        shard.withheld += 1
                        ordinal, line = out.where[0][i], out.where[1][i]
                        shard.rejects.append(reject_line(
                            self.sources[out.source], ordinal, line,
                            f"withheld by the ledger: {d.reason}"))
            if out.paid:  # the draws its released records paid for (withheld: none)
                for i in sorted(out.paid):
                    shard.paid.extend(out.paid[i])
            if len(keep) < out.written:
                released = len(keep)
                if parquet:
                    payload = [out.rows[i] for i in keep]
                else:
                    starts = [0, *out.ends[:-1]]
                    payload = b"".join(out.data[starts[i]:out.ends[i]] for i in keep)
                parts = [combine([col[i] for i in keep]) if keep else None
                         for col in out.reports]
                rec_eps = None if out.record_epsilon is None else \
                    [out.record_epsilon[i] for i in keep]
                max_eps = max_record_epsilon(parts, rec_eps) if keep else None
            for i in sorted(out.paid or ()):  # each shared draw counted once, where paid
                _count_paid(parts, out, i, out.paid[i])
            if self.units_tracked:
                units = {}
                totals = {}  # id of an events list (shared by equal ones) -> its totals
                for i in keep:
                    _, unit, events = out.items[i]
                    if unit is None:
                        continue
                    tot = totals.get(id(events))
                    if tot is None:
                        tot = totals[id(events)] = budget_mod.event_totals(events)
                    add_unit_cost(units, unit, *tot)
        for f, r in zip(self.fields, parts, strict=True):  # the report counts what is released
            if r is not None:
                agg.add(f, r)
        if max_eps is not None:
            agg.note_record_epsilon(max_eps)
        for unit, (eps, delta, n) in (units or {}).items():
            add_unit_cost(shard.units, unit, eps, delta, n)
        shard.rejected += out.records_in - out.written
        shard.records += released
        return payload


def _count_paid(parts: list, out: BatchResult, i: int, paid) -> None:
    """Add to the batch's field reports the token events of the shared draws record ``i`` paid
    for (``--consistent unit``: the worker took them out of every record's report, so the
    job's report counts each draw once - by the record that paid for it)."""
    events = out.draw_events[i] if out.draw_events else {}
    for k in paid:
        for f, tokens in events.get(k, ())[:1]:  # one draw, in the first field that shows it
            if parts[f] is not None:
                parts[f].draws = list(parts[f].draws) + list(tokens)
