"""A reserved batch as one chained entry: the digest of its charge rows, and the record index.

Since schema version 2 a ``reserve`` call appends *one* entry (kind ``batch``) whose hashed
body is ``{"charges": [first_id, last_id], "count": n, "digest": D}``, its records being the
rows ``first_id..last_id`` of ``ledger_charges``. ``D`` is the SHA-256 of the rows' canonical
JSON, one line each, in id order (:func:`charge_line`): ``[id, unit, record, eps_n, delta_n,
events digest, reason]``. ``verify`` recomputes it, so editing, deleting or adding a charge
row is detected as surely as editing an entry; the ``events`` digest is the SHA-256 of the
event list's text in ``ledger_events`` (content-addressed: editing a body breaks its digest,
editing the digest too breaks the batch's ``D``).

:class:`RecordIndex`: a reserve must give a record already decided in its release the first
decision again. A database index on the random record hash would dirty a random page per
record at every fsynced COMMIT (most of the cost of the version-1 ledger), so each Ledger keeps,
per release, the record hashes it has seen, brought up to date inside every write transaction
(under the write lock) from the release's batch entries appended since its last look - an
indexed, in-order read. It is a cache of the database: exact, whatever other processes wrote.
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring

EVENTS_HEX = 32  # content address of an event list: 128 bits of its SHA-256


def events_digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()[:EVENTS_HEX]


def charge_line(row: tuple) -> str:
    """One charge row ``(id, unit, record, eps_n, delta_n, events, reason)`` as the canonical
    JSON the batch digest covers (``json.dumps(list(row), separators=(",", ":"),
    ensure_ascii=False)``), plus a newline."""
    i, unit, record, eps_n, delta_n, events, reason = row
    return (f"[{int(i)},{encode_basestring(unit)},{encode_basestring(record)},{int(eps_n)},"
            f"{int(delta_n)},{encode_basestring(events)},{encode_basestring(reason)}]\n")


def fast_line(i: int, unit: str, record: str, eps_n: int, delta_n: int, events: str,
              reason: str) -> str:
    """:func:`charge_line` for rows the ledger writes: unit, record and events are hex, which
    JSON needs no escapes for."""
    if reason:
        reason = encode_basestring(reason)
    else:
        reason = '""'
    return f'[{i},"{unit}","{record}",{eps_n},{delta_n},"{events}",{reason}]\n'


def digest(lines: list[str]) -> str:
    return hashlib.sha256("".join(lines).encode()).hexdigest()


class RecordIndex:
    """The record hashes of one release, with their charge ids (see the module docstring)."""

    __slots__ = ("upto", "ids")

    def __init__(self) -> None:
        self.upto = 0  # the last batch entry of the release read into ``ids``
        self.ids: dict[str, int] = {}

    def sync(self, backend, release_id: str) -> None:
        """Read the release's batches appended since the last look (call inside the write
        transaction)."""
        batches = backend.execute(
            "SELECT seq, body FROM ledger_entries WHERE release_id = ? AND seq > ? AND "
            "kind = 'batch' ORDER BY seq", (release_id, self.upto)).fetchall()
        ids = self.ids
        for seq, body in batches:
            lo, hi = batch_range(body)
            for record, cid in backend.execute(
                    "SELECT record, id FROM ledger_charges WHERE id BETWEEN ? AND ?",
                    (lo, hi)).fetchall():
                ids.setdefault(record, int(cid))
            self.upto = int(seq)


def batch_range(body: str) -> tuple[int, int]:
    """The charge ids ``(first, last)`` a batch entry's body names."""
    first, last = json.loads(body)["charges"]
    return int(first), int(last)


def ranges(ids: list[int]) -> list[list[int]]:
    """Sorted ids as [first, last] runs (a commit of a contiguous batch is one pair)."""
    out: list[list[int]] = []
    for i in ids:
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def expand_ranges(runs: list[list[int]]) -> list[int]:
    return [i for a, b in runs for i in range(a, b + 1)]


def batch_sums(units: list[str], units_of, eps_l, delta_l) -> tuple[list, list, list, list] | None:
    """What a batch adds to each of ``units`` (sorted, distinct: every unit of ``units_of``),
    all its records charged: (eps_n, delta_n, records, withheld = 0) per unit, as lists in the
    order of ``units``; None when an amount is negative or the sums could leave int64 (never
    in practice: then the records are decided one by one)."""
    import numpy as np

    n = len(units_of)
    if not n or min(eps_l) < 0 or min(delta_l) < 0 or max(eps_l) * n >= 2**63 \
            or max(delta_l) * n >= 2**63:
        return None
    index = dict(zip(units, range(len(units)), strict=True))
    codes = np.fromiter(map(index.__getitem__, units_of), dtype=np.intp, count=n)
    out = []
    for amounts in (eps_l, delta_l):
        top = max(amounts)
        if not top:
            out.append([0] * len(units))
        elif top * n < 2**53:  # every partial sum an integer below 2**53: exact in float64
            total = np.bincount(codes, weights=np.array(amounts, dtype=np.float64),
                                minlength=len(units))
            out.append(total.astype(np.int64).tolist())
        else:  # np.add.at: exact int64, 5x slower
            total = np.zeros(len(units), dtype=np.int64)
            np.add.at(total, codes, np.array(amounts, dtype=np.int64))
            out.append(total.tolist())
    records = np.bincount(codes, minlength=len(units)).tolist()
    return out[0], out[1], records, [0] * len(units)


def all_fit(units: list[str], sums, rows_now: dict, limits: list) -> bool:
    """Whether each unit's whole batch (``sums``, :func:`batch_sums`) fits every limit -
    (budget eps, budget delta, the scope's totals by unit, or None for the release's own
    scope, whose totals are ``rows_now``). Amounts are never negative, so each record's
    running total is then within every budget too: every record is charged."""
    eps_s, delta_s = sums[0], sums[1]
    for b_eps, b_delta, tot in limits:
        for u, e, n in zip(units, eps_s, delta_s, strict=True):
            cur = rows_now[u] if tot is None else tot.get(u)
            if cur is None:
                if e > b_eps or n > b_delta:
                    return False
            elif cur[0] + e > b_eps or cur[1] + n > b_delta:
                return False
    return True
