"""One charge per person for each shared draw (``--consistent unit``), decided in input order.

With ``--consistent unit`` every record of a person that shows an entity shows the same
replacement: the draw comes from a generator keyed by the job's draw key and (person,
category, entity) (:func:`dptext.corpus.randomness.draw_generator`), so every batch, worker
process and Ray actor draws the same value without sharing any state. The draw is one
release, to be charged once to its person - by the first record that shows it *and is
released*. Only the driver knows which records are released (the ledger may withhold one, or
the mechanism's own check), and it sees them in input order, so the charges are settled here:

* a worker's batch result names, per written record, the draws it shows
  (``BatchResult.draws``: draw id -> privacy events) and holds in ``items`` the record's own cost
  without them;
* :class:`SharedDraws` adds to a record's cost each of its draws not yet :meth:`paid
  <SharedDraws.settle>` for its person, in input order;
* with a ledger (:mod:`dptext.corpus.charging`) a group of records is reserved in segments: a
  record that shows a draw an earlier record of the same segment pays for starts a new segment,
  reserved once the earlier one's decisions are in - so a draw is charged to the next record
  that shows it exactly when the record that paid for it was withheld (the audit's case, issue
  31: the withheld record's draw came out with the person's next record and the ledger showed
  0 spent). Without a ledger every written record is released (:mod:`dptext.corpus.fold`).

A draw travels from a worker to the driver as a 16-byte id (keyed BLAKE2b of person, category
and entity under the job's draw key: no name leaves a worker). The book holds one id per
(person, entity) paid for, in memory, for the job's lifetime. Each committed shard keeps the
ids its released records paid for (``draws-NNNNN.bin`` beside its part, named with its SHA-256
in the manifest entry that commits the shard, so they are committed exactly when the shard's
charges are: a resume commits again the charges of every shard in the manifest); a resumed job
starts with the book of its committed shards - the book the interrupted run had when it
reached the first batch the resume runs again, so every later record is charged as in an
uninterrupted run. A book that does not match the manifest stops the resume (fewer draws would
release one unpaid). The job's report counts each draw once too, as the per-person figures
(``units``, the ledger) do: the worker takes a record's shared draws out of its report
(``BatchResult.draw_events`` keeps them) and the fold adds each to the report of the record
that pays for it (issue 45: 30 draws were reported where 6 were made).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from dptext.corpus.workdir import DRAW_KEY

#: a draw id's length (:func:`draw_id`)
ID_BYTES = 16


def book_bytes(ids: Sequence[bytes]) -> bytes:
    """The draws a shard paid for, as its work directory keeps them: the ids one after the
    other (no names: keyed ids of the job's draw key)."""
    return b"".join(ids)


def draw_id(key: bytes, name: str) -> bytes:
    """A shared draw's id: keyed BLAKE2b (the job's draw key) of its name - person, category,
    entity - so that no name travels from a worker to the driver or sits in its memory."""
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass"), key=key,
                           digest_size=ID_BYTES).digest()


class SharedDraws:
    """The draws paid for so far, per person (module docstring)."""

    def __init__(self) -> None:
        self._paid: set[bytes] = set()

    def unpaid(self, ids) -> set[bytes]:
        return {k for k in ids if k not in self._paid}

    def cost(self, own: Sequence, draws: dict[bytes, list]) -> list:
        """A record's events: its own, plus each of its draws (id -> events) not paid yet."""
        events = list(own)
        for k, ev in draws.items():
            if k not in self._paid:
                events += ev
        return events

    def settle(self, draws: dict[bytes, list], released: bool) -> list[bytes]:
        """A record's decision: released, its draws are paid for (free to show from now on);
        withheld, nothing changes (the next record that shows them pays). The ids it paid
        for (the record's shard keeps them for a resume: :func:`book_bytes`)."""
        if not released:
            return []
        new = [k for k in draws if k not in self._paid]
        self._paid.update(new)
        return new

    def add(self, data: bytes) -> None:
        """Draws paid for by a committed shard (:func:`book_bytes`), on a resume."""
        self._paid.update(data[i:i + ID_BYTES] for i in range(0, len(data), ID_BYTES))


def reserve_in_order(book: SharedDraws, records: list, reserve) -> list:
    """Decisions for ``records`` - ``(batch result, index)`` pairs, in input order - reserved
    with ``reserve(items)`` in segments (module docstring); each record's item in its batch
    result is set to what it was charged."""
    decisions: list = []
    segment: list = []
    pending: set[bytes] = set()

    def flush() -> None:
        items = []
        for out, i in segment:
            key, unit, own = out.items[i]
            out.items[i] = (key, unit, book.cost(own, out.draws[i]))
            items.append(out.items[i])
        got = reserve(items)
        for (out, i), d in zip(segment, got, strict=True):
            paid = book.settle(out.draws[i], bool(d.allowed))
            if paid:  # for the record's shard (corpus/fold.py): the book of a resume
                if out.paid is None:
                    out.paid = {}
                out.paid[i] = paid
        decisions.extend(got)
        segment.clear()
        pending.clear()

    for out, i in records:
        ids = out.draws[i].keys()
        if ids & pending:  # an earlier record of this segment pays for one of its draws
            flush()
        segment.append((out, i))
        pending.update(book.unpaid(ids))
    if segment:
        flush()
    return decisions


def shared_draws(m, user_field: str | None) -> SharedDraws | None:
    """A book for an entity-targeted mechanism with ``consistent="unit"`` (which needs the
    person of each record, and a word mechanism); else None."""
    from dptext.errors import ParameterError
    from dptext.mechanisms.word import WordMechanism
    from dptext.targeted import TargetedMechanism

    if not isinstance(m, TargetedMechanism) or m.consistent != "unit":
        return None
    if not user_field:
        raise ParameterError("`consistent` unit needs a unit field: give `user_field` naming "
                             "each record's person; without one every record is its own person "
                             "(use `consistent` document)")
    if not isinstance(m.mechanism, WordMechanism):
        raise ParameterError(f"`consistent` unit needs a word mechanism, not "
                             f"{m.mechanism.name}: its draw depends on the sentence around the "
                             f"entity (use `consistent` document)")
    return SharedDraws()


def job_draw_key(directory: Path | None, seed) -> bytes:
    """The job's draw key (:func:`dptext.corpus.randomness.draw_key`): from an int seed; else
    the one an interrupted run of the work ``directory`` kept; else a new secret, written
    there (mode 0600, fsynced) before any draw; in memory without a work directory."""
    import os

    from dptext.corpus.randomness import draw_key

    if directory is None or (isinstance(seed, int) and not isinstance(seed, bool)):
        return draw_key(seed)
    path = Path(directory) / DRAW_KEY
    try:
        data = path.read_bytes()
        if len(data) == 32:
            return data
    except FileNotFoundError:
        pass
    key = draw_key(None)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key
