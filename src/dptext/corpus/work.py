"""The unit of work every executor runs: read, privatize and encode one batch of records.

A :class:`BatchTask` names a batch, not its texts: for plain-text and JSONL files it is a byte
range of the file (:mod:`dptext.corpus.ranges`) that the worker reads and decodes itself; only
records the driver had to read (CSV, Parquet, stdin) travel inside the task. :func:`run_batch`
is a pure function of (mechanism, task, seed) and its :class:`BatchResult` - the encoded output
lines, the encoded rejects, the batch's report per field and the per-record ledger items - is
the same whichever process computed it. The driver only writes bytes, asks the ledger and folds
the batch's reports into the job's.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from dptext.accounting.events import PrivacyEvent
from dptext.accounting.report import PrivacyReport
from dptext.accounting.units import add_unit_cost
from dptext.corpus import budget as budget_mod
from dptext.corpus.aggregate import combine
from dptext.corpus.columns import ColumnPlan
from dptext.corpus.draws import draw_id
from dptext.corpus.randomness import draw_generator, generator
from dptext.corpus.ranges import Range, read_range
from dptext.corpus.records import Record
from dptext.corpus.sources import Source
from dptext.corpus.writers import RecordWriter, dumps_strict
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism


@dataclass(frozen=True)
class JobLayout:
    """What a worker needs to know about the job besides the mechanism (sent once)."""

    sources: list[Source]
    fields: list[str]
    in_fmt: str
    out_fmt: str
    seed: int | str | None
    skip: bool
    max_record_bytes: int
    user_field: str | None = None
    ledger: bool = False  # the driver reserves each record: send the per-record items
    units: bool = False  # per-unit totals are reported
    columns: ColumnPlan | None = None  # every column's role (corpus/columns.py)
    # consistent="unit": the key of the per-person draws (corpus/randomness.draw_key); the
    # records' units reach the mechanism and their shared draws come back (corpus/draws.py)
    draw_key: bytes | None = field(default=None, repr=False)


@dataclass
class BatchTask:
    """Batch ``batch_id`` of source ``source``: a byte ``range`` the worker reads, or the
    ``records`` the driver read (with the CSV ``header``)."""

    batch_id: int
    source: int
    range: Range | None = None
    records: list[Record] | None = None
    header: list[str] | None = None


# every field of an event: equal keys, equal events (a ledger's items share their lists)
_event_key = attrgetter(*(f.name for f in dataclasses.fields(PrivacyEvent)))

def _without(draws: list, shared) -> list:
    """Token events ``draws`` less every event of the ``shared`` lists (by guarantee and
    reason)."""
    from collections import Counter

    from dptext.accounting.events import TokenEvent

    left: Counter = Counter()
    for e in draws:
        left[(e.guarantee, e.reason)] += e.count
    for events in shared:
        for e in events:
            left[(e.guarantee, e.reason)] -= e.count
    return [TokenEvent(g, c, r) for (g, r), c in left.items() if c > 0]


@dataclass
class BatchResult:
    """What comes back for one batch. ``data`` holds the encoded output of every written
    record in order (``rows`` for Parquet output); ``rejects`` the encoded reject lines.
    With a ledger, ``items[i]`` = (key, unit, events) of the i-th written record, ``ends[i]``
    where its bytes end in ``data``, ``reports[f][i]`` its report of field ``f``, ``where[0][i]``
    and ``where[1][i]`` its ordinal and line, ``record_epsilon[i]`` its epsilon over the fields:
    what the driver needs to drop a record the ledger withholds. Without a ledger, ``units``
    holds the batch's per-unit (epsilon, delta, records)."""

    batch_id: int
    source: int
    records_in: int
    written: int
    data: bytes = b""
    rows: list[dict] | None = None
    rejects: bytes = b""
    field_reports: list[PrivacyReport | None] = field(default_factory=list)
    max_record_epsilon: float | None = None
    units: dict[str, list] | None = None
    items: list[tuple[str, str | None, list]] | None = None
    ends: list[int] | None = None
    reports: list[list[PrivacyReport]] | None = None
    where: tuple[list[int], list[int]] | None = None
    record_epsilon: list[float] | None = None
    # consistent="unit": per written record, the draws it shares with its person's other
    # records (draw id -> privacy events); ``items`` then hold each record's own events only
    draws: list[dict[bytes, list]] | None = None
    # set in the driver (corpus/draws.py reserve_in_order): written record -> the draw ids
    # it paid for, when released with a ledger
    paid: dict[int, list[bytes]] | None = None
    # consistent="unit": per written record, draw id -> [(field, its token events)], for the
    # report of the record that pays for the draw (the report counts each draw once)
    draw_events: list[dict[bytes, list]] | None = None


def reject_line(source: Source, ordinal: int, line: int, reason: str) -> bytes:
    """A rejects entry names the record and the reason; it never holds the record's text
    (the rejects sit beside an output that may be shared)."""
    return (dumps_strict({"source": source.name, "record": ordinal, "line": line,
                          "reason": reason}) + "\n").encode()


def max_record_epsilon(parts: list[PrivacyReport | None],
                       record_epsilon: list[float] | None) -> float | None:
    """The largest record's epsilon over its fields (None: nothing was written)."""
    if record_epsilon is not None:
        return max(record_epsilon, default=None)
    r = parts[0]
    if r is None:
        return None
    return r.epsilon if r.records == 1 else r.max_record_epsilon


class Worker:
    """Runs batches of one job: the mechanism, the job's layout, open input files."""

    def __init__(self, m: Mechanism, layout: JobLayout) -> None:
        self.m, self.layout = m, layout
        self.writer = RecordWriter(layout.in_fmt, layout.out_fmt, layout.fields,
                                   layout.columns)
        self._fds: dict[int, int] = {}
        # a ledger's items: one list per distinct single event (all its fields: the key), not
        # one per record - the records in flight to the ledger then hold no events of their
        # own for the garbage collector to traverse; never mutated (read by the ledger/fold)
        self._same_events: dict[tuple, list] = {}

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _records(self, task: BatchTask) -> list[Record]:
        if task.records is not None:
            return task.records
        source = self.layout.sources[task.source]
        fd = self._fds.get(task.source)
        if fd is None:
            fd = self._fds[task.source] = os.open(source.path, os.O_RDONLY)
        return read_range(str(source.path), source.fmt, task.range, self.layout.fields,
                          self.layout.max_record_bytes, fd)

    def _unit(self, record: Record, key: str) -> tuple[str | None, str | None]:
        lay = self.layout
        uf = lay.user_field
        if uf is None:
            return (key if lay.ledger else None), None
        if lay.in_fmt == "csv":
            header = self.writer.header
            if uf not in header:
                raise DPTextError(f"--user-field {uf!r}: no such column in the CSV header")
            value = record.payload[header.index(uf)]
        else:
            value = record.payload.get(uf) if isinstance(record.payload, dict) else None
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            return None, f"line {record.line}: no privacy unit (--user-field {uf!r})"
        return str(value), None

    def _draw_rng(self):
        """The generator of each shared draw (``consistent="unit"``), by the draw's name."""
        key, secure = self.layout.draw_key, self.layout.seed == "secure"
        return lambda name: draw_generator(key, name, secure)

    def _privatize(self, texts: list[list[str]], keys: list[str], batch_key: str,
                   units: list[str | None] | None = None) -> tuple[list[list], dict[int, str]]:
        """Every field of the batch with the batch's generator (fields in order). If the
        mechanism refuses the batch and ``skip`` is set, each record is retried alone with a
        generator derived from its own key, so the records that can be privatized are,
        deterministically, and the others carry the mechanism's reason. ``units``: each
        record's unit, for per-person draws (``layout.draw_key``)."""
        m, seed = self.m, self.layout.seed
        extra = {} if units is None else {"draw_rng": self._draw_rng()}

        def run(columns: list[list[str]], rng, who=units) -> list[list]:
            more = {} if who is None else {**extra, "units": who}
            return [m.privatize_batch(col, rng=rng, **more) if col else [] for col in columns]

        try:
            return run(texts, generator(seed, batch_key)), {}
        except DPTextError as err:
            if not self.layout.skip:
                raise DPTextError(f"record {keys[0]} or a later one of its batch: {err}"
                                  ) from None
        errors: dict[int, str] = {}
        results: list[list] = [[None] * len(keys) for _ in texts]
        for i, key in enumerate(keys):
            try:
                one = run([[col[i]] for col in texts], generator(seed, key),
                          None if units is None else [units[i]])
            except DPTextError as e:
                errors[i] = str(e)
                continue
            for col, res in zip(results, one, strict=True):
                col[i] = res[0]
        return results, errors

    def _take_shared_draws(self, reports: list[list], n: int) -> tuple[list, list, list]:
        """Each of the ``n`` kept records' shared draws taken out of its reports: per record,
        its draws by id (their events), their tokens per field, and its own events."""
        draws: list = []
        draw_events: list = []
        own: list = []
        lay = self.layout
        for i in range(n):
            mine: dict[bytes, list] = {}
            tokens: dict[bytes, list] = {}
            events: list = []
            for f, col in enumerate(reports):
                r = col[i]
                if not getattr(r, "shared_draws", None):  # none (or not entity mode)
                    events += budget_mod.privacy_events(r)
                    continue
                for name, draw in r.shared_draws.items():
                    k = draw_id(lay.draw_key, name)
                    mine[k] = r.events_of(draw)
                    tokens.setdefault(k, []).append((f, list(draw)))
                events += r.own_events()
                # the report counts the record's own draws; a shared draw is added once,
                # by the record that pays for it (corpus/fold.py)
                r.draws = _without(r.draws, r.shared_draws.values())
                r.shared_draws = {}  # never serialized with the report
            draws.append(mine)
            draw_events.append(tokens)
            own.append(events)
        return draws, draw_events, own

    def run(self, task: BatchTask) -> BatchResult:
        lay = self.layout
        source = lay.sources[task.source]
        if task.header is not None:
            self.writer.set_header(task.header, source.name)
        records = self._records(task)
        rejects: list[bytes] = []
        good: list[Record] = []
        keys: list[str] = []
        units: list[str | None] = []
        for r in records:
            key = f"{source.name}#{r.ordinal}"
            unit = None
            if r.error is None:
                unit, err = self._unit(r, key)
                if err is not None:
                    r.error = err
            if r.error is not None:
                if not lay.skip:
                    raise DPTextError(f"{source.shown}: {r.error}")
                rejects.append(reject_line(source, r.ordinal, r.line, r.error))
                continue
            good.append(r)
            keys.append(key)
            units.append(unit)
        n_fields = len(lay.fields)
        out = BatchResult(task.batch_id, task.source, len(records), 0)
        if not good:
            out.rejects = b"".join(rejects)
            out.field_reports = [None] * n_fields
            return out
        texts = [[r.texts[f] for r in good] for f in range(n_fields)]
        shared = lay.draw_key is not None
        results, errors = self._privatize(texts, keys,
                                          f"{source.name}#{records[0].ordinal}",
                                          units if shared else None)
        parquet = lay.out_fmt == "parquet"
        encoded: list = []
        kept: list[int] = []  # indices into good of the records written
        for n, record in enumerate(good):
            reason = errors.get(n)
            withheld = None if reason is not None else next(
                (w for col in results if (w := col[n].report.withheld) is not None), None)
            if withheld is not None:  # the mechanism's own decision, not an error: never fatal
                rejects.append(reject_line(source, record.ordinal, record.line,
                                           f"withheld: {withheld}"))
                continue
            if reason is None:
                new = [col[n].text for col in results]
                try:
                    encoded.append(self.writer.row(record, new) if parquet
                                   else self.writer.encode(record, new).encode("utf-8"))
                    kept.append(n)
                    continue
                except (DPTextError, UnicodeEncodeError) as err:
                    reason = f"line {record.line}: output {err}"
            if not lay.skip:
                raise DPTextError(f"{source.shown}: {reason}")
            rejects.append(reject_line(source, record.ordinal, record.line, reason))
        out.rejects = b"".join(rejects)
        out.written = len(kept)
        if parquet:
            out.rows = encoded
        else:
            out.data = b"".join(encoded)
        reports = [[col[n].report for n in kept] for col in results]
        out.field_reports = [combine(col) if col else None for col in reports]
        rec_eps = None
        if n_fields > 1:
            rec_eps = [sum(col[i].epsilon for col in reports) for i in range(len(kept))]
        out.max_record_epsilon = max_record_epsilon(out.field_reports, rec_eps)
        if shared:  # each record's shared draws out of its own cost (corpus/draws.py)
            out.draws, out.draw_events, own = self._take_shared_draws(reports, len(kept))
            out.field_reports = [combine(col) if col else None for col in reports]
        if lay.ledger or shared:
            out.reports, out.record_epsilon = reports, rec_eps
            out.where = ([good[n].ordinal for n in kept], [good[n].line for n in kept])
            out.items = []
            same = self._same_events
            if len(same) > 10_000:
                same.clear()
            for i, n in enumerate(kept):
                if shared:
                    out.items.append((keys[n], units[n], own[i]))
                    continue
                rec = reports[0][i] if n_fields == 1 else combine([c[i] for c in reports])
                events = budget_mod.privacy_events(rec)
                if len(events) == 1:  # the usual one event: one list shared by equal ones
                    events = same.setdefault(_event_key(events[0]), events)
                out.items.append((keys[n], units[n], events))
            if not parquet:
                out.ends, total = [], 0
                for e in encoded:
                    total += len(e)
                    out.ends.append(total)
        elif lay.units:
            totals: dict[str, list] = {}
            for i, n in enumerate(kept):
                unit = units[n]
                if unit is None:
                    continue
                rec = reports[0][i] if n_fields == 1 else combine([c[i] for c in reports])
                add_unit_cost(totals, unit,
                              *budget_mod.event_totals(budget_mod.privacy_events(rec)))
            out.units = totals
        return out


def run_batch(m: Mechanism, layout: JobLayout, task: BatchTask) -> BatchResult:
    """One batch in a throw-away :class:`Worker` (tests, one-off use)."""
    w = Worker(m, layout)
    try:
        return w.run(task)
    finally:
        w.close()


__all__: list[Any] = ["BatchResult", "BatchTask", "JobLayout", "Worker", "max_record_epsilon",
                      "reject_line", "run_batch"]
