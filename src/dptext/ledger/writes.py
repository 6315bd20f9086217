"""The ledger's writes: open a release, reserve a batch of records (one chained entry, each
record decided against its unit's budgets), commit the released charges. A mixin of
:class:`dptext.ledger.core.Ledger`."""

from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from collections.abc import Sequence
from functools import partial
from operator import itemgetter

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger.amounts import checked_name, events_cost, fits, over_budget
from dptext.ledger.batches import (
    RecordIndex,
    all_fit,
    batch_sums,
    digest,
    events_digest,
    fast_line,
    ranges,
)
from dptext.ledger.chain import canonical
from dptext.ledger.queries import sql_marks
from dptext.ledger.results import Decision, ReleaseExists
from dptext.ledger.store import Tx, chunks, tool_version

# record hashes of one release kept in memory (about 150 bytes each); past it, each reserve
# reads the release's records again (correct, slower)
_MAX_INDEXED = 5_000_000



class LedgerWrites:
    """Releases, reserve and commit (a mixin of the Ledger)."""

    # ----------------------------------------------------------------------- releases
    def open_release(self, *, owner: str, dataset: str, mechanism: str, params: dict,
                     release_key: str | None = None, exclusive: bool = False,
                     origin: str = "") -> str:
        """Start a release (or, with the ``release_key`` of an earlier one, continue it;
        ``exclusive``: raise :class:`ReleaseExists` instead - in the same transaction, so two
        writers cannot both start the release of one key). ``origin`` (kept in the chained
        entry): what released it, e.g. ``service-privatize`` (a release that is committed
        before its text is sent: ``dptext ledger void`` may void its pending charges)."""
        owner, dataset = checked_name("owner", owner), checked_name("dataset", dataset)
        try:
            params_text = canonical(params)
        except (TypeError, ValueError) as err:
            raise DPTextError(f"release parameters must be JSON: {err}") from None
        key_hash = self._keys.release_key(str(release_key)) if release_key is not None else None
        with self._write("open a release") as tx:
            b = self._backend
            if key_hash is not None:
                row = b.execute("SELECT release_id, owner, dataset, created FROM "
                                "ledger_releases WHERE key_hash = ?", (key_hash,)).fetchone()
                if row is not None:
                    if exclusive:
                        raise ReleaseExists(f"release key already used by release {row[0]} "
                                            f"(opened {row[3]})", row[0], row[3])
                    if (row[1], row[2]) != (owner, dataset):
                        raise DPTextError(
                            f"release key already used by release {row[0]} of owner "
                            f"{row[1]!r}, dataset {row[2]!r}")
                    return row[0]
            release_id = uuid.uuid4().hex
            version = tool_version()
            seq = tx.append("open", release_id=release_id, owner=owner, dataset=dataset,
                            body={"mechanism": mechanism, "params": json.loads(params_text),
                                  "tool_version": version, "release_key": key_hash,
                                  **({"origin": str(origin)} if origin else {})})
            b.execute("INSERT INTO ledger_releases (release_id, key_hash, owner, dataset, "
                      "mechanism, params, tool_version, created, seq) VALUES "
                      "(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (release_id, key_hash, owner, dataset, mechanism, params_text, version,
                       tx.created, seq))
        return release_id

    def _release(self, release_id: str) -> tuple[str, str]:
        """(owner, dataset) of a release (fixed when it was opened)."""
        out = self._releases.get(release_id)
        if out is None:
            row = self._backend.execute("SELECT owner, dataset FROM ledger_releases WHERE "
                                        "release_id = ?", (release_id,)).fetchone()
            if row is None:
                raise DPTextError(f"unknown release {release_id!r} (open it with "
                                  "open_release)")
            out = self._releases[release_id] = (row[0], row[1])
        return out

    # ------------------------------------------------------------------ reserve/commit
    def reserve(self, release_id: str,
                items: Sequence[tuple[str, str, Sequence[PrivacyEvent]]], *,
                all_or_nothing: bool = False) -> list[Decision]:
        """Charge a batch of records, as pending, in one transaction; call before writing them.

        ``items``: ``(record_key, unit_id, events)``. A record whose unit would exceed any
        applicable budget (released + pending + this record, basic composition) is withheld:
        nothing is charged and the decision says why. A record already seen in this release
        gets its first decision again with ``already=True``. ``all_or_nothing``: when any record
        would be withheld, charge none and raise (training runs: a model cannot leave a user
        out after the fact).

        The batch is one chained entry (kind ``batch``) and one row per record in
        ``ledger_charges`` (:mod:`dptext.ledger.batches`). Per record only what differs
        between records is done: its keyed hash, its row and digest line; its unit's key, its
        events' cost and encoding are looked up (computed once per distinct value), the unit
        rows are read and written once per unit of the batch. The budget check is per unit
        when each unit's whole batch fits (:func:`~dptext.ledger.batches.all_fit`: then every
        record does), else per record in order (:meth:`_decide_each`); the charge rows are
        written many to a statement (``Backend.insert_rows``).
        """
        release_id = str(release_id)
        records, units_of, costs = self._prepare_all(release_id, items)
        if not records:
            return []
        with self._write("charge the ledger") as tx:
            b = self._backend
            owner, dataset = self._release(release_id)
            seen = self._seen(release_id, records)
            budgets = self._budgets_for(owner, dataset)
            units = sorted(set(units_of) if not seen else
                           {u for r, u in zip(records, units_of, strict=True) if r not in seen})
            rows_now = self._unit_rows_now(tx, owner, dataset, units)
            entry = tx.seq + 1  # the batch's entry, appended below
            row = b.execute("SELECT MAX(id) FROM ledger_charges").fetchone()[0]
            next_id = max(int(row or 0), self._charge_base) + 1
            first_id = next_id
            # the usual batch - no record decided before or twice, every unit's whole batch
            # within every budget - is decided per unit, not per record: the same decisions
            # (amounts are never negative, so each record's running total is at most its
            # unit's batch total), with the per-record work left to comprehensions
            sums = None
            if not seen and len(set(records)) == len(records):
                # costs: (eps_n, delta_n, events digest, events text)
                eps_l, delta_l, ev_l, _ = zip(*costs, strict=True)
                sums = batch_sums(units, units_of, eps_l, delta_l)
                if sums is not None and not all_fit(units, sums, rows_now, [
                        (bud[2], bud[3], None if bud[:2] == (owner, dataset)
                         else self._totals(units, bud[0], bud[1])) for bud in budgets]):
                    sums = None
            if sums is not None:
                ids = range(first_id, first_id + len(records))
                charged = list(zip(ids, units_of, records, eps_l, delta_l, ev_l, strict=True))
                withheld = []
                # batches.fast_line, inlined (hex fields, no reason)
                lines = [f'[{i},"{u}","{r}",{e},{n},"{v}",""]\n'
                         for i, u, r, e, n, v in charged]
                new = tuple.__new__
                decisions = [new(Decision, (True, i, None, False)) for i in ids]
                next_id = ids.stop
                decided_ids = dict(zip(records, ids, strict=True))
            else:
                decided_ids = None
                charged, withheld, lines, decisions, sums = self._decide_each(
                    records, units_of, costs, seen, units, rows_now, budgets, owner, dataset,
                    entry, next_id)
                next_id += len(lines)
            if withheld and all_or_nothing:
                raise DPTextError(f"{len(withheld)} of {len(records)} records would exceed "
                                  f"their unit's budget (first: {withheld[0][7]}); nothing "
                                  "was charged")
            if not lines:  # every record was decided before
                return decisions
            events = {c[2]: c[3] for c in set(costs)}
            new_events = [(k, v) for k, v in events.items() if k not in self._events_known]
            if new_events:
                b.executemany("INSERT INTO ledger_events (digest, body) VALUES (?, ?) "
                              "ON CONFLICT (digest) DO NOTHING", new_events)
            if charged:  # the constant columns in the statement: 6 parameters a row, not 9
                b.insert_rows("INSERT INTO ledger_charges (id, entry, unit, record, eps_n, "
                              "delta_n, events, reason, status)",
                              f"(?, {int(entry)}, ?, ?, ?, ?, ?, '', 'pending')", charged)
            if withheld:
                b.executemany("INSERT INTO ledger_charges (id, entry, unit, record, eps_n, "
                              "delta_n, events, reason, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                              "?)", withheld)
            # each unit's row: an update where the (exact) cache says there is one, else new;
            # the cached row brought up to date here (a failed transaction drops the cache)
            update, insert = [], []
            total_eps = total_delta = 0
            for u, e, n, c, w in zip(units, *sums, strict=True):  # key order
                row = rows_now[u]
                total_eps += e
                total_delta += n
                if row[2]:
                    update.append((e, n, c, w, u, owner, dataset))
                else:
                    insert.append((u, owner, dataset, e, n, c, w))
                    row[2] = True
                row[0] += e
                row[1] += n
            if update:
                n = b.executemany(
                    "UPDATE ledger_units SET eps_n = eps_n + ?, delta_n = delta_n + ?, "
                    "charges = charges + ?, withheld = withheld + ? WHERE unit = ? AND "
                    "owner = ? AND dataset = ?", update)
                if n not in (-1, len(update)):  # never: the cache is exact (rolled back)
                    raise DPTextError("the ledger's unit totals changed under this "
                                      "transaction: nothing was charged, try again")
            if insert:
                b.insert_rows("INSERT INTO ledger_units (unit, owner, dataset, eps_n, delta_n, "
                              "charges, withheld)", "(?, ?, ?, ?, ?, ?, ?)", insert)
            seq = tx.append("batch", release_id=release_id, owner=owner, dataset=dataset,
                            eps_n=total_eps, delta_n=total_delta, body={
                                "charges": [first_id, next_id - 1], "count": len(lines),
                                "digest": digest(lines)})
            if seq != entry:  # pragma: no cover - one entry per reserve
                raise AssertionError("the batch entry is not the one its rows name")
            if decided_ids is None:
                decided_ids = {c[2]: c[0] for c in charged}
                decided_ids.update({w[3]: w[0] for w in withheld})
            tx.after.append(partial(self._remember, release_id, entry, decided_ids,
                                    list(events)))
        return decisions

    def _decide_each(self, records, units_of, costs, seen, units, rows_now, budgets, owner,
                     dataset, entry, next_id):
        """Decide the records one by one, in order (a batch with records decided before or
        twice, or a unit that may not have its whole batch): (charged rows, withheld rows,
        digest lines, decisions, (eps_n, delta_n, charges, withheld) added per unit of
        ``units``)."""
        # the batch's running totals per unit, in its own scope (owner, dataset) and in
        # each other scope a budget covers; ``limits``: (budget eps, budget delta, totals)
        own = {u: rows_now[u][:2] for u in units}
        checks = [(bud, own if bud[:2] == (owner, dataset)
                   else self._totals(units, bud[0], bud[1])) for bud in budgets]
        limits = [(bud[2], bud[3], tot) for bud, tot in checks]
        if not any(tot is own for _, tot in checks):  # kept for the unit rows
            limits.append((math.inf, math.inf, own))
        decisions: list[Decision] = []
        decided = dict(seen)  # record -> its decision, earlier or in this call
        charged: list[tuple] = []  # (id, unit, record, eps_n, delta_n, events digest)
        withheld: list[tuple] = []  # (id, entry, unit, record, 0, 0, events, reason, status)
        lines: list[str] = []
        new = tuple.__new__
        single = len(limits) == 1 and limits[0][2] is own
        b_eps1, b_delta1 = limits[0][:2]
        for record, unit, cost in zip(records, units_of, costs, strict=True):
            d = decided.get(record)
            if d is not None:
                decisions.append(d if d.already else d._replace(already=True))
                continue
            eps_n, delta_n, ev = cost[0], cost[1], cost[2]
            if single:  # the usual one budget, of the release's own scope
                cur = own[unit]
                ok = cur[0] + eps_n <= b_eps1 and cur[1] + delta_n <= b_delta1
                if ok:
                    cur[0] += eps_n
                    cur[1] += delta_n
            else:
                ok = fits(limits, unit, eps_n, delta_n)
            if ok:
                charged.append((next_id, unit, record, eps_n, delta_n, ev))
                lines.append(f'[{next_id},"{unit}","{record}",{eps_n},{delta_n},"{ev}",""]\n')
                d = new(Decision, (True, next_id, None, False))
            else:
                reason = over_budget(checks, unit, eps_n, delta_n)
                withheld.append((next_id, entry, unit, record, 0, 0, ev, reason,
                                 "withheld"))
                lines.append(fast_line(next_id, unit, record, 0, 0, ev, reason))
                d = new(Decision, (False, None, reason, False))
            next_id += 1
            decided[record] = d
            decisions.append(d)
        n_charged = Counter(map(itemgetter(1), charged))
        n_withheld = Counter(map(itemgetter(2), withheld))
        sums = ([own[u][0] - rows_now[u][0] for u in units],
                [own[u][1] - rows_now[u][1] for u in units],
                [n_charged.get(u, 0) for u in units], [n_withheld.get(u, 0) for u in units])
        return charged, withheld, lines, decisions, sums

    def _remember(self, release_id: str, entry: int, ids: dict, events: list) -> None:
        """After a reserve committed: its records and event lists are in the database."""
        index = self._index(release_id)
        index.ids.update(ids)
        index.upto = max(index.upto, entry)
        self._events_known.update(events)
        if len(index.ids) > _MAX_INDEXED:  # bounded memory: read again from the ledger
            del self._indexes[release_id]

    def _unit_rows_now(self, tx: Tx, owner: str, dataset: str, units: list[str]
                       ) -> dict[str, list[int]]:
        """The cached ledger_units rows of (owner, dataset), with ``units`` among them, exact
        in this write transaction (read again when another writer came in between)."""
        if self._unit_rows_at != (tx.seq, tx.head) or sum(
                map(len, self._unit_rows.values())) > 1_000_000:
            self._unit_rows.clear()
        tx.units_fresh = True
        rows = self._unit_rows.setdefault((owner, dataset), {})
        missing = [u for u in units if u not in rows]
        for chunk in chunks(missing):
            for u in chunk:
                rows[u] = [0, 0, False]
            for u, e, n in self._backend.execute(
                    "SELECT unit, eps_n, delta_n FROM ledger_units WHERE owner = ? AND "
                    f"dataset = ? AND unit IN ({sql_marks(len(chunk))})",
                    (owner, dataset, *chunk)).fetchall():
                rows[u] = [int(e), int(n), True]
        return rows

    def _index(self, release_id: str) -> RecordIndex:
        index = self._indexes.get(release_id)
        if index is None:
            if len(self._indexes) >= 256:
                self._indexes.clear()
            index = self._indexes[release_id] = RecordIndex()
        return index

    def _seen(self, release_id: str, records: list[str]) -> dict[str, Decision]:
        """The records of this batch decided in an earlier call (in the write transaction)."""
        b = self._backend
        index = self._index(release_id)
        index.sync(b, release_id)
        seen: dict[str, Decision] = {}
        ids = index.ids
        hits = sorted({ids[r] for r in ids.keys() & records})  # the intersection in C
        for chunk in chunks(hits):
            for cid, record, status, reason in b.execute(
                    "SELECT id, record, status, reason FROM ledger_charges WHERE id IN "
                    f"({sql_marks(len(chunk))})", chunk).fetchall():
                if status == "withheld":
                    seen[record] = Decision(False, None, reason, True)
                elif status == "voided":  # never released: it must not be released now
                    seen[record] = Decision(False, None, "its charge was voided (dptext "
                                            "ledger void): never released", True)
                else:
                    seen[record] = Decision(True, int(cid), None, True)
        if self._legacy:  # version-1 entries, one per record (its own index)
            for chunk in chunks(records):
                for record, seq, status, body in b.execute(
                        "SELECT record, seq, status, body FROM ledger_entries WHERE "
                        f"release_id = ? AND record <> '' AND record IN ({sql_marks(len(chunk))})",
                        (release_id, *chunk)).fetchall():
                    if status == "withheld":
                        seen[record] = Decision(False, None, json.loads(body)["reason"], True)
                    else:
                        seen[record] = Decision(True, int(seq), None, True)
        return seen

    def _prepare_all(self, release_id: str, items) -> tuple[list, list, list]:
        """The record hashes, unit hashes and costs ((eps_n, delta_n, events digest, events
        text)) of the items, as three lists."""
        keys_, units, costs = [], [], []
        unit_hash, unit_cache = self._keys.unit, self._keys.unit_cache
        cache, cache1 = self._costs, self._costs1
        # the cost of each events list object of this call, by its id (the corpus engine's
        # records share one list per distinct event: corpus/work.py); ``items`` keeps every
        # list alive during the call, so an id names one list
        by_id: dict[int, tuple] = {}
        if not isinstance(items, list | tuple):  # a generator's lists could be freed
            items = list(items)
        for item in items:
            try:
                record_key, unit_id, events = item
            except (TypeError, ValueError):
                raise DPTextError("reserve() takes (record_key, unit_id, events) items") \
                    from None
            if type(record_key) is not str:
                record_key = record_text(record_key)
            keys_.append(record_key)
            unit = unit_cache.get(unit_id) if type(unit_id) is str else None
            if unit is None:
                unit = unit_hash(unit_id if type(unit_id) is str and unit_id
                                 else unit_text(unit_id, record_key))
            units.append(unit)
            if type(events) is list:
                cost = by_id.get(id(events))
                if cost is not None:
                    costs.append(cost)
                    continue
                ref = id(events)
            else:
                ref = None
            # the usual list of one event: its fields are the key (hashing them directly is
            # 2.5x cheaper than hashing the dataclass)
            if type(events) is list and len(events) == 1 and type(events[0]) is PrivacyEvent:
                e = events[0]
                key = (e.kind, e.epsilon, e.delta, e.count, e.mechanism, e.scope,
                       e.bounded_range)
                cost = cache1.get(key)
                if cost is None:
                    cost = cache1[key] = self._cost_of(record_key, tuple(events))
                    if len(cache1) >= 10_000:
                        cache1.clear()
            else:
                try:
                    events = tuple(events)
                    cost = cache.get(events)
                except TypeError:  # not a sequence of (hashable) events: said below
                    cost = None
                if cost is None:
                    cost = self._cost_of(record_key, events)
            if ref is not None:
                by_id[ref] = cost
            costs.append(cost)
        return self._keys.records(release_id, keys_), units, costs

    def _cost_of(self, record_key: str, events: tuple) -> tuple[int, int, str, str]:
        """(eps_n, delta_n, events digest, events text) of one record's events (cached)."""
        if not isinstance(events, tuple):
            raise DPTextError(f"record {record_key!r}: events must be a list of PrivacyEvent")
        for e in events:
            if not isinstance(e, PrivacyEvent):
                raise DPTextError(f"record {record_key!r}: events must be PrivacyEvent, "
                                  f"got {type(e).__name__}")
            if math.isinf(e.epsilon) and e.count:
                raise DPTextError(
                    f"record {record_key!r}: an event with an infinite epsilon cannot be "
                    f"charged ({e.mechanism or 'mechanism'}: "
                    f"{e.scope or 'no finite guarantee'})")
        eps_n, delta_n = events_cost(events)
        # the scope text is not stored per record: the release's mechanism and parameters
        # (its "open" entry) determine it
        body = canonical({"events": [{k: v for k, v in e.to_dict().items() if k != "scope"}
                                     for e in events if e.count]})
        cost = (eps_n, delta_n, events_digest(body), body)
        if len(self._costs) >= 10_000:
            self._costs.clear()
        self._costs[events] = cost
        return cost

    def commit(self, release_id: str, charge_ids: Sequence[int]) -> None:
        """Mark pending charges released (after their output is durable). Idempotent: ids
        already released are left as they are; an id that is not a charge of this release is
        an error (nothing is committed)."""
        release_id = str(release_id)
        ids = sorted(set(map(int, charge_ids)))
        if not ids:
            return
        # a shard's charges: usually one contiguous run
        runs = [[ids[0], ids[-1]]] if ids[-1] - ids[0] == len(ids) - 1 else ranges(ids)
        with self._write("commit charges", durable=False) as tx:
            b = self._backend
            base = self._charge_base
            new = [[max(lo, base + 1), hi] for lo, hi in runs if hi > base]
            old = [[lo, min(hi, base)] for lo, hi in runs if lo <= base]
            for lo, hi in new:
                # one pass over the run's rows: per batch entry, its rows, withheld and
                # the first voided one
                entries, voided = {}, []
                for entry, n, withheld, void in b.execute(
                        "SELECT entry, COUNT(*), SUM(CASE WHEN status = 'withheld' THEN 1 "
                        "ELSE 0 END), MIN(CASE WHEN status = 'voided' THEN id END) FROM "
                        "ledger_charges WHERE id BETWEEN ? AND ? GROUP BY entry",
                        (lo, hi)).fetchall():
                    entries[int(entry)] = (int(n), int(withheld))
                    if void is not None:
                        voided.append(int(void))
                if voided:
                    raise DPTextError(f"charge {min(voided)} was voided (dptext ledger void): "
                                      "its record must not be released; nothing was committed")
                if sum(n for n, _ in entries.values()) != hi - lo + 1 or any(
                        w for _, w in entries.values()) or any(
                        self._entry_release(e) != release_id for e in entries):
                    self._bad_commit(release_id, lo, hi)
            for lo, hi in old:
                n = b.execute("SELECT COUNT(*) FROM ledger_entries WHERE seq BETWEEN ? AND ? "
                              "AND release_id = ? AND kind = 'charge'",
                              (lo, hi, release_id)).fetchone()[0]
                if int(n) != hi - lo + 1:
                    self._bad_commit(release_id, lo, hi)
            changed = 0
            for table, key, runs_ in (("ledger_charges", "id", new),
                                      ("ledger_entries", "seq", old)):
                for lo, hi in runs_:
                    changed += b.execute(
                        f"UPDATE {table} SET status = 'released' WHERE {key} BETWEEN ? AND ? "
                        "AND status = 'pending'", (lo, hi)).rowcount
            if changed:
                tx.append("commit", release_id=release_id, body={"charges": runs})

    def void(self, release_id: str, charge_ids: Sequence[int], *, reason: str,
             by: str = "") -> int:
        """Void pending charges of ``release_id`` whose records were provably never released
        (the caller's evidence; ``dptext ledger void`` checks a job's work directory): each
        becomes ``voided``, its amount leaves its unit's totals, and one chained ``void``
        entry names them with ``reason`` and ``by``. A voided record is never released later:
        a reserve of it in this release answers withheld, a commit of it is an error. Only
        pending charges (not released, not withheld, not of a version-1 entry) can be voided;
        anything else is an error and nothing is voided. Returns the number voided."""
        release_id = str(release_id)
        ids = sorted({int(c) for c in charge_ids})
        reason = " ".join(str(reason or "").split())
        if not reason:
            raise DPTextError("a void needs a reason (it is kept in the ledger)")
        if not ids:
            return 0
        with self._write("void charges") as tx:
            b = self._backend
            rows = {}
            for chunk in chunks(ids):
                for cid, entry, unit, e, n, status in b.execute(
                        "SELECT id, entry, unit, eps_n, delta_n, status FROM ledger_charges "
                        f"WHERE id IN ({sql_marks(len(chunk))})", chunk).fetchall():
                    rows[int(cid)] = (int(entry), unit, int(e), int(n), status)
            for cid in ids:
                row = rows.get(cid)
                if row is None:
                    raise DPTextError(f"charge {cid} is not a charge of this ledger's batches "
                                      "(a version-1 entry or unknown): nothing was voided")
                if self._entry_release(row[0]) != release_id:
                    raise DPTextError(f"charge {cid} belongs to release "
                                      f"{self._entry_release(row[0])}, not {release_id}: "
                                      "nothing was voided")
                if row[4] != "pending":
                    raise DPTextError(f"charge {cid} is {row[4]}, not pending: only pending "
                                      "charges can be voided; nothing was voided")
            owner, dataset = self._release(release_id)
            per_unit: dict[str, list[int]] = {}
            for cid in ids:
                _, unit, e, n, _ = rows[cid]
                acc = per_unit.setdefault(unit, [0, 0, 0])
                acc[0] += e
                acc[1] += n
                acc[2] += 1
            runs = ranges(ids)
            for lo, hi in runs:
                b.execute("UPDATE ledger_charges SET status = 'voided' WHERE id BETWEEN ? AND ? "
                          "AND status = 'pending'", (lo, hi))
            b.executemany("UPDATE ledger_units SET eps_n = eps_n - ?, delta_n = delta_n - ?, "
                          "charges = charges - ? WHERE unit = ? AND owner = ? AND dataset = ?",
                          [(e, n, c, u, owner, dataset) for u, (e, n, c) in per_unit.items()])
            self._unit_rows.clear()  # the cached unit totals no longer hold
            tx.append("void", release_id=release_id, owner=owner, dataset=dataset,
                      body={"charges": runs, "reason": reason, "by": str(by)})
        return len(ids)

    def _entry_release(self, seq: int) -> str | None:
        rel = self._entry_releases.get(seq)
        if rel is None:
            row = self._backend.execute("SELECT release_id FROM ledger_entries WHERE seq = ? "
                                        "AND kind = 'batch'", (seq,)).fetchone()
            if row is None:
                return None
            rel = row[0]
            if len(self._entry_releases) >= 100_000:
                self._entry_releases.clear()
            self._entry_releases[seq] = rel
        return rel

    def _bad_commit(self, release_id: str, lo: int, hi: int) -> None:
        b = self._backend
        rows = {int(r[0]): (r[1], r[2]) for r in b.execute(
            "SELECT seq, release_id, kind FROM ledger_entries WHERE seq BETWEEN ? AND ? "
            "AND seq <= ?", (lo, hi, self._charge_base)).fetchall()}
        for r in b.execute("SELECT id, entry, status FROM ledger_charges WHERE id BETWEEN ? "
                           "AND ?", (lo, hi)).fetchall():
            rows[int(r[0])] = (self._entry_release(int(r[1])),
                               "withhold" if r[2] == "withheld" else "charge")
        for cid in range(lo, hi + 1):
            row = rows.get(cid)
            if row is None or row[1] not in ("charge", "withhold"):
                raise DPTextError(f"unknown charge id {cid}")
            if row[0] != release_id:
                raise DPTextError(f"charge {cid} belongs to release {row[0]}, not {release_id}")
            if row[1] == "withhold":
                raise DPTextError(f"charge {cid} was withheld: it has nothing to commit")
        raise DPTextError(f"charges {lo}-{hi} cannot be committed")


def record_text(key) -> str:
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise DPTextError(f"a record key must be a string or an integer, got {key!r}")
    return str(key)


def unit_text(unit, record_key: str | None = None) -> str:
    if unit is None or (isinstance(unit, str) and not unit):
        where = f"record {record_key!r} " if record_key is not None else ""
        raise DPTextError(f"{where}has no unit id (is the unit field missing or empty?)")
    if isinstance(unit, bool) or not isinstance(unit, (str, int)):
        raise DPTextError(f"a unit id must be a string or an integer, got {unit!r}")
    return str(unit)
