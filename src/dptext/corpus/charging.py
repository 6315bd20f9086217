"""Charging the ledger beside the driver: batches reserved in groups, in a writer thread.

The driver's order per batch was: privatize, reserve (one fsynced transaction), write. Here
:func:`charged` takes the executor's stream of :class:`~dptext.corpus.work.BatchResult` and
yields each with its ledger decisions, having

- **grouped** consecutive batches into one ``reserve`` (one transaction, one chained entry, one
  fsync) of about :data:`GROUP_RECORDS` records: the per-transaction work (the head, the
  budget and unit-row reads, the pages of ``ledger_units`` a transaction rewrites, the fsync)
  is shared by 64 of the word mechanisms' 512-record batches instead of paid by each - and
  the per-unit work too: a unit with several records in a group has its row read, checked and
  updated once (100,000 records of 10,000 people: some 31,000 unit updates in groups of
  32,768, 49,000 in groups of 16,384, 84,000 in groups of 4,096); and
- **overlapped** the reserve of one group, in a writer thread, with privatizing the next group
  in the driver (the inline executor privatizes inside the stream's ``next()``): SQLite and the
  fsync run without the GIL.

Charge before release is kept: a batch is yielded - and only then written to a shard or to
stdout - after the ``reserve`` transaction holding its records has committed. The decisions are
those of a ``reserve`` per batch in order (one ``reserve`` decides its records in order,
counting the earlier ones), so a record withheld is the same record. An exception of the
writer thread (a ``DPTextError`` such as a locked ledger) is raised in the driver, by the
batch that needed it; a batch behind it is never yielded. When the driver stops early (an
error, Ctrl-C), the group in flight is waited for: its charges, committed or not, stay pending
(charged, never released - safe), and a resumed job re-reserves those records and gets the same
decisions back (``already``). Resume is unchanged: a shard's charges are still committed after
the shard is durable (``ledger_committed`` in the manifest); grouping only decides when
records are reserved, never what a shard holds.

A group is closed at :data:`GROUP_RECORDS` records or :data:`GROUP_SECONDS` after its first
batch came - unless the writer thread is still in the previous group's transaction (a slow
commit: a busy disk makes each fsync take tens to hundreds of milliseconds). Then the group
keeps growing, up to :data:`MAX_GROUP_RECORDS`, instead of the driver waiting: the slower the
commits, the more records each carries, so the fsyncs per record fall exactly when they cost
most (issue 36), and a fast disk keeps the groups of :data:`GROUP_RECORDS`. Nothing is yielded
earlier for it: a batch still waits for the transaction holding its records (a finished one's
batches are yielded as soon as the next batch comes, not when the growing group closes). A slow
producer (a batch took :data:`GROUP_SECONDS` or more to come: language-model
mechanisms, a trickle on stdin) gets its group reserved and yielded at once, so output is not
held back behind the next batch; the overlap only matters where privatizing is fast.

While batches are in flight here (a group gathering, one being reserved: 16,000-50,000 records
with their reports, items and decisions), CPython's collector sees them survive its young
generations and, every tenth middle collection, walks the whole heap again (with the ledger,
8 full collections instead of 5 in 100,000 records: 0.2 s of CPU, most of the collector's
extra). :func:`_fewer_full_collections` makes full collections rarer while :func:`charged`
runs (the third threshold :data:`FULL_COLLECTION_THRESHOLD` instead of 10) and restores the
thresholds after; the young collections, which free cycles of short-lived objects, are
unchanged (issue 36, docs/ledger.md "Speed").
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from dptext.corpus.draws import reserve_in_order

GROUP_RECORDS = 32768
GROUP_SECONDS = 2.0
# the most records a group gathers while the writer is still in the previous transaction
MAX_GROUP_RECORDS = 65536
# the collector's third threshold while batches are in flight (CPython's default: 10)
FULL_COLLECTION_THRESHOLD = 100

_gc_lock = threading.Lock()
_gc_users = 0
_gc_restore: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None


@contextmanager
def _fewer_full_collections():
    """Full collections every :data:`FULL_COLLECTION_THRESHOLD` middle ones (where the current
    threshold is lower and the collector's thresholds are on) while the block runs. The
    thresholds found are restored when the last concurrent user (jobs in threads of one
    process) leaves - unless someone set others meanwhile, which are then left alone."""
    global _gc_users, _gc_restore
    with _gc_lock:
        if _gc_users == 0:
            found = gc.get_threshold()
            first, middle, full = found
            if first and full < FULL_COLLECTION_THRESHOLD:
                gc.set_threshold(first, middle, FULL_COLLECTION_THRESHOLD)
                _gc_restore = (found, gc.get_threshold())
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_restore is not None:
                found, ours = _gc_restore
                if gc.get_threshold() == ours:
                    gc.set_threshold(*found)
                _gc_restore = None


def charged(results: Iterable, session, *, group_records: int | None = None,
            group_seconds: float | None = None, draws=None,
            max_group_records: int | None = None) -> Iterator[tuple]:
    """``(batch result, decisions)`` for each result in order; ``decisions`` is None without a
    ledger (``session`` None) or for a batch with nothing to reserve, else that batch's list of
    :class:`dptext.ledger.Decision`, one per ``result.items`` entry. ``draws``: the job's
    :class:`~dptext.corpus.draws.SharedDraws` (``--consistent unit``): a group is reserved in
    segments, each record charged for the shared draws no released record paid for yet."""
    if session is None:
        for out in results:
            yield out, None
        return
    group_records = GROUP_RECORDS if group_records is None else group_records
    group_seconds = GROUP_SECONDS if group_seconds is None else group_seconds
    most = MAX_GROUP_RECORDS if max_group_records is None else max_group_records
    writer = _Writer(session, draws)
    pool = ThreadPoolExecutor(1, thread_name_prefix="dptext-ledger")
    with _fewer_full_collections():
        yield from _charged(results, writer, pool, group_records, group_seconds, most)


def _charged(results, writer, pool, group_records, group_seconds, most) -> Iterator[tuple]:
    """The grouping loop of :func:`charged` (module docstring)."""
    inflight: tuple[list, Future] | None = None
    group: list = []
    count = 0
    first = 0.0
    try:
        last = time.monotonic()
        for out in results:
            now = time.monotonic()
            slow, last = now - last >= group_seconds, now  # this batch took that long to come
            if not group:
                first = now
            group.append(out)
            count += len(out.items or ())
            if inflight is not None and inflight[1].done():  # charged: hand its batches on
                yield from _ready(*inflight)
                inflight = None
            if count < group_records and now - first < group_seconds and not slow:
                continue
            if inflight is not None and not slow and count < most:
                continue  # the writer is still committing: this group grows meanwhile
            future = pool.submit(writer.reserve, group)
            if inflight is not None:
                yield from _ready(*inflight)
            inflight = (group, future)
            group, count = [], 0
            if slow:  # a slow producer: no output held back
                yield from _ready(*inflight)
                inflight = None
            last = time.monotonic()
        if group:
            future = pool.submit(writer.reserve, group)
            if inflight is not None:
                yield from _ready(*inflight)
            inflight = (group, future)
        if inflight is not None:
            yield from _ready(*inflight)
            inflight = None
    finally:
        if inflight is not None:  # stopped early: let the transaction in flight end
            inflight[1].exception()
        pool.shutdown(wait=True)


class _Writer:
    """The writer thread's side: one ``reserve`` per group, in order; after a failed one, no
    later group is charged (its records would be decided before the failed group's)."""

    def __init__(self, session, draws=None) -> None:
        self.session = session
        self.draws = draws
        self.failed = False

    def reserve(self, group: list) -> list[list | None]:
        """One ``reserve`` for the items of every batch of ``group``; the decisions per
        batch."""
        if self.failed:
            raise RuntimeError("an earlier group's reserve failed")  # never surfaces: the
            # driver raises the earlier group's error first
        items = [item for out in group for item in (out.items or ())]
        try:
            if self.draws is not None and any(out.draws for out in group):
                decisions = reserve_in_order(
                    self.draws, [(out, i) for out in group for i in range(len(out.items or ()))],
                    self.session.reserve)
            else:
                decisions = self.session.reserve(items)
        except BaseException:
            self.failed = True
            raise
        out_lists: list[list | None] = []
        at = 0
        for out in group:
            n = len(out.items or ())
            out_lists.append(decisions[at:at + n] if n else None)
            at += n
        return out_lists


def _ready(group: list, future: Future) -> Iterator[tuple]:
    decided = future.result()  # the writer thread's exception, raised here
    yield from zip(group, decided, strict=True)
