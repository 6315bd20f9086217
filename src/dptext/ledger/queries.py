"""The ledger's read side: a unit's totals, events and history, pending charges, releases and
the entries, as a mixin of :class:`dptext.ledger.core.Ledger` (which provides ``_read``,
``_backend``, ``_legacy``, ``_meta``, ``delta``, ``unit_hash`` and the budget lookups)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence

from dptext.accounting.composition import br_epsilon, pld_epsilon
from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger.amounts import checked_name, delta_of, eps_of, events_cost
from dptext.ledger.batches import batch_range
from dptext.ledger.chain import ENTRY_COLUMNS
from dptext.ledger.results import Spent, UnitRow


def sql_marks(n: int) -> str:
    """``?,?,...``: ``n`` placeholders."""
    return ",".join("?" * n)


def sql_filters(unit: str | None, owner: str | None, dataset: str | None, prefix: str = ""
                ) -> tuple[str, tuple]:
    """A WHERE clause (and its parameters) for the given unit/owner/dataset; None: any."""
    clauses, params = ["1 = 1"], []
    for col, val in (("unit", unit), ("owner", owner), ("dataset", dataset)):
        if val is not None:
            clauses.append(f"{prefix}{col} = ?")
            params.append(val)
    return " AND ".join(clauses), tuple(params)


class LedgerQueries:
    """Reads of the ledger; each runs in one read transaction (``self._read``)."""

    def spent(self, unit_id: str, *, owner: str | None = None, dataset: str | None = None,
              pld: bool = True) -> Spent:
        """What ``unit_id`` has been charged in releases by ``owner`` of ``dataset`` (None:
        all), pending included; with the PLD epsilon at the ledger's delta when ``pld``."""
        return self.spent_hashed(self.unit_hash(unit_id), owner=owner, dataset=dataset,
                                  pld=pld)

    def spent_hashed(self, unit: str, *, owner: str | None = None,
                      dataset: str | None = None, pld: bool = True) -> Spent:
        where, params = sql_filters(unit, owner, dataset)
        with self._read("read the ledger") as b:
            e, n, charges, wit = b.execute(
                "SELECT SUM(eps_n), SUM(delta_n), SUM(charges), SUM(withheld) FROM ledger_units "
                f"WHERE {where}", params).fetchone()
            pen, e_pen = self._pending_by_unit(unit, owner, dataset).get(unit, (0, 0))
            events = self._events_hashed(unit, owner, dataset) if pld else None
        eps_pld = pld_epsilon(events, self.delta) if events is not None else None
        eps_br = None
        if events is not None:
            eps_br = min(eps_pld, br_epsilon(events, self.delta, pld=False))
        return Spent(
            epsilon_basic=eps_of(int(e or 0)), delta_basic=delta_of(int(n or 0)),
            epsilon_pld=eps_pld, epsilon_br=eps_br,
            records=int(charges or 0) - pen, pending=pen, epsilon_pending=eps_of(e_pen),
            withheld=int(wit or 0), delta=self.delta)

    def _pending_by_unit(self, unit: str | None, owner: str | None, dataset: str | None
                         ) -> dict[str, tuple[int, int]]:
        """unit -> (pending charges, their eps_n), from the partial index of pending charges
        (and the v1 entries)."""
        b = self._backend
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        queries = []
        if self._legacy:
            where, params = sql_filters(unit, owner, dataset)
            queries.append(("SELECT unit, COUNT(*), SUM(eps_n) FROM ledger_entries WHERE "
                            f"unit <> '' AND status = 'pending' AND {where} GROUP BY unit",
                            params))
        where, params = sql_filters(None, owner, dataset, prefix="e.")
        one = "" if unit is None else " AND c.unit = ?"
        queries.append(("SELECT c.unit, COUNT(*), SUM(c.eps_n) FROM ledger_charges c JOIN "
                        "ledger_entries e ON e.seq = c.entry WHERE c.status = 'pending'"
                        f"{one} AND {where} GROUP BY c.unit",
                        (() if unit is None else (unit,)) + params))
        for sql, params in queries:
            for u, n, e in b.execute(sql, params).fetchall():
                acc = out[u]
                acc[0] += int(n)
                acc[1] += int(e or 0)
        return {u: (n, e) for u, (n, e) in out.items()}

    def _events_hashed(self, unit: str, owner: str | None, dataset: str | None
                       ) -> list[PrivacyEvent]:
        """A unit's charged events (a scan of the charge rows: no index by unit, see
        docs/ledger.md "Speed")."""
        b = self._backend
        counts: dict[tuple, int] = defaultdict(int)

        def add(body: str, times: int) -> None:
            for d in json.loads(body)["events"]:
                e = PrivacyEvent.from_dict(d)
                counts[(e.kind, e.epsilon, e.delta, e.bounded_range)] += e.count * times

        if self._legacy:
            where, params = sql_filters(unit, owner, dataset)
            for (body,) in b.execute(
                    f"SELECT body FROM ledger_entries WHERE unit <> '' AND {where} AND status "
                    "IN ('pending', 'released')", params):
                add(body, 1)
        where, params = sql_filters(None, owner, dataset, prefix="e.")
        for body, times in b.execute(
                "SELECT v.body, COUNT(*) FROM ledger_charges c JOIN ledger_entries e ON "
                "e.seq = c.entry JOIN ledger_events v ON v.digest = c.events WHERE c.unit = ? "
                f"AND c.status IN ('pending', 'released') AND {where} GROUP BY v.body",
                (unit, *params)).fetchall():
            add(body, int(times))
        return [PrivacyEvent(k, eps, dl, c, bounded_range=br)
                for (k, eps, dl, br), c in counts.items()]

    def remaining(self, unit_id: str, *, owner: str, dataset: str) -> float | None:
        """The epsilon ``unit_id`` may still spend in releases by ``owner`` of ``dataset``
        (the tightest applicable budget, pending charges counted); None when no budget
        applies. (A delta budget may bind first: :meth:`would_exceed` checks both.)"""
        unit = self.unit_hash(unit_id)
        owner, dataset = checked_name("owner", owner), checked_name("dataset", dataset)
        with self._read("read the ledger"):
            out = None
            for o, d, b_eps, _ in self._budgets_for(owner, dataset):
                cur = self._totals([unit], o, d).get(unit, (0, 0))
                left = max(0, b_eps - cur[0])
                out = left if out is None else min(out, left)
        return None if out is None else eps_of(out)

    def would_exceed(self, unit_id: str, events: Sequence[PrivacyEvent], *, owner: str,
                     dataset: str) -> bool:
        """Whether charging ``events`` to ``unit_id`` now would exceed an applicable budget."""
        unit = self.unit_hash(unit_id)
        owner, dataset = checked_name("owner", owner), checked_name("dataset", dataset)
        eps_n, delta_n = events_cost(events)
        with self._read("read the ledger"):
            for o, d, b_eps, b_delta in self._budgets_for(owner, dataset):
                cur = self._totals([unit], o, d).get(unit, (0, 0))
                if cur[0] + eps_n > b_eps or cur[1] + delta_n > b_delta:
                    return True
        return False

    def units(self, *, owner: str | None = None, dataset: str | None = None) -> list[UnitRow]:
        """Every unit (by keyed hash) with its totals in the scope, most spent first."""
        where, params = sql_filters(None, owner, dataset)
        with self._read("read the ledger") as b:
            rows = b.execute(
                "SELECT unit, SUM(eps_n), SUM(delta_n), SUM(charges), SUM(withheld) FROM "
                f"ledger_units WHERE {where} GROUP BY unit", params).fetchall()
            pending = self._pending_by_unit(None, owner, dataset)
        out = []
        for u, e, n, c, w in rows:
            p = pending.get(u, (0, 0))[0]
            out.append(UnitRow(u, eps_of(int(e)), delta_of(int(n)), int(c) - p, p, int(w)))
        out.sort(key=lambda r: (-r.epsilon, -r.delta, r.unit))
        return out

    def unit_events(self, unit_id: str, *, owner: str | None = None,
                    dataset: str | None = None) -> list[PrivacyEvent]:
        """Every charged event of ``unit_id`` (grouped by kind/epsilon/delta)."""
        unit = self.unit_hash(unit_id)
        with self._read("read the ledger"):
            return self._events_hashed(unit, owner, dataset)

    def history(self, unit_id: str, *, hashed: bool = False) -> list[dict]:
        """The charges and withheld records of ``unit_id``, oldest first, with each charge's
        id (``seq``), current status and its release's owner, dataset and mechanism."""
        unit = unit_id if hashed else self.unit_hash(unit_id)
        out = []
        with self._read("read the ledger") as b:
            if self._legacy:
                for seq, kind, rel, o, d, e, n, body, created, status, mech in b.execute(
                        "SELECT e.seq, e.kind, e.release_id, e.owner, e.dataset, e.eps_n, "
                        "e.delta_n, e.body, e.created, e.status, r.mechanism FROM "
                        "ledger_entries e LEFT JOIN ledger_releases r ON r.release_id = "
                        "e.release_id WHERE e.unit <> '' AND e.unit = ? ORDER BY e.seq",
                        (unit,)).fetchall():
                    out.append({"seq": int(seq), "kind": kind, "release_id": rel, "owner": o,
                                "dataset": d, "mechanism": mech, "epsilon": eps_of(int(e)),
                                "delta": delta_of(int(n)), "status": status, "created": created,
                                "reason": json.loads(body).get("reason")})
            for cid, rel, o, d, e, n, reason, created, status, mech in b.execute(
                    "SELECT c.id, e.release_id, e.owner, e.dataset, c.eps_n, c.delta_n, "
                    "c.reason, e.created, c.status, r.mechanism FROM ledger_charges c JOIN "
                    "ledger_entries e ON e.seq = c.entry LEFT JOIN ledger_releases r ON "
                    "r.release_id = e.release_id WHERE c.unit = ? ORDER BY c.id",
                    (unit,)).fetchall():
                out.append({"seq": int(cid), "kind": "withhold" if status == "withheld"
                            else "charge", "release_id": rel, "owner": o, "dataset": d,
                            "mechanism": mech, "epsilon": eps_of(int(e)), "delta": delta_of(int(n)),
                            "status": status, "created": created, "reason": reason or None})
        return out

    def pending(self, release_id: str | None = None) -> list[int]:
        """Charge ids still pending (charged, not marked released), of one release or all."""
        out = []
        with self._read("read the ledger") as b:
            if self._legacy:
                sql = "SELECT seq FROM ledger_entries WHERE status = 'pending'"
                params: tuple = ()
                if release_id is not None:
                    sql += " AND release_id = ?"
                    params = (str(release_id),)
                out += [int(r[0]) for r in b.execute(sql, params).fetchall()]
            sql = "SELECT c.id FROM ledger_charges c"
            params = ()
            if release_id is not None:
                sql += " JOIN ledger_entries e ON e.seq = c.entry AND e.release_id = ?"
                params = (str(release_id),)
            out += [int(r[0]) for r in b.execute(sql + " WHERE c.status = 'pending'",
                                                  params).fetchall()]
        return sorted(out)

    def pending_releases(self, *, owner: str | None = None) -> list[dict]:
        """Per release with charges still pending (charged, never marked released): its
        ``release_id``, ``owner``, ``dataset``, ``mechanism``, when it was opened
        (``created``), the pending charges' ``count``, ``ids``, summed ``epsilon`` and the time
        of the oldest batch that holds one (``oldest``), oldest first. Version-2 charge rows
        only (a version-1 entry still pending is listed by :meth:`pending`)."""
        where, params = ("", ()) if owner is None else (" AND r.owner = ?", (owner,))
        with self._read("read the ledger") as b:
            rows = b.execute(
                "SELECT r.release_id, r.owner, r.dataset, r.mechanism, r.created, c.id, "
                "c.eps_n, e.created FROM ledger_charges c JOIN ledger_entries e ON "
                "e.seq = c.entry JOIN ledger_releases r ON r.release_id = e.release_id "
                f"WHERE c.status = 'pending'{where} ORDER BY c.id", params).fetchall()
        out: dict[str, dict] = {}
        for rel, o, d, mech, created, cid, e, batch_created in rows:
            r = out.setdefault(rel, {"release_id": rel, "owner": o, "dataset": d,
                                     "mechanism": mech, "created": created, "count": 0,
                                     "ids": [], "epsilon": 0.0, "oldest": batch_created})
            r["count"] += 1
            r["ids"].append(int(cid))
            r["epsilon"] += eps_of(int(e))
            r["oldest"] = min(r["oldest"], batch_created)
        return sorted(out.values(), key=lambda r: r["oldest"])

    def release_origin(self, release_id: str) -> str:
        """The ``origin`` a release was opened with ('' when none was given)."""
        with self._read("read the ledger") as b:
            row = b.execute("SELECT e.body FROM ledger_releases r JOIN ledger_entries e ON "
                            "e.seq = r.seq WHERE r.release_id = ?", (str(release_id),)
                            ).fetchone()
        if row is None:
            raise DPTextError(f"unknown release {release_id!r}")
        return str(json.loads(row[0]).get("origin", ""))

    def release_of_key(self, release_key: str) -> str | None:
        """The release opened with ``release_key`` (a job's, from its manifest), else None."""
        key_hash = self._keys.release_key(str(release_key))
        with self._read("read the ledger") as b:
            row = b.execute("SELECT release_id FROM ledger_releases WHERE key_hash = ?",
                            (key_hash,)).fetchone()
        return row[0] if row else None

    def charges(self, release_id: str | None = None) -> Iterator[dict]:
        """Every per-record decision (a charge or a withheld record), v1 entries and v2 charge
        rows alike, oldest first: ``id`` (the charge id), ``kind`` (``charge``/``withhold``),
        ``release_id``, ``unit`` and ``record`` (keyed hashes), ``eps_n``, ``delta_n``,
        ``status``, ``reason``."""
        rel_sql, params = ("", ()) if release_id is None else (" AND e.release_id = ?",
                                                              (str(release_id),))
        with self._read("read the ledger") as b:
            rows = []
            if self._legacy:
                rows += [(int(s), k, r, u, rec, int(e), int(n), st,
                          json.loads(body).get("reason")) for s, k, r, u, rec, e, n, st, body
                         in b.execute(
                             "SELECT e.seq, e.kind, e.release_id, e.unit, e.record, e.eps_n, "
                             "e.delta_n, e.status, e.body FROM ledger_entries e WHERE "
                             f"e.record <> ''{rel_sql} ORDER BY e.seq", params).fetchall()]
            rows += [(int(c), "withhold" if st == "withheld" else "charge", r, u, rec, int(e),
                      int(n), st, reason or None) for c, r, u, rec, e, n, st, reason in
                     b.execute("SELECT c.id, e.release_id, c.unit, c.record, c.eps_n, "
                               "c.delta_n, c.status, c.reason FROM ledger_charges c JOIN "
                               f"ledger_entries e ON e.seq = c.entry WHERE 1 = 1{rel_sql} "
                               "ORDER BY c.id", params).fetchall()]
        cols = ("id", "kind", "release_id", "unit", "record", "eps_n", "delta_n", "status",
                "reason")
        for row in rows:
            yield dict(zip(cols, row, strict=True))

    def releases(self) -> list[dict]:
        with self._read("read the ledger") as b:
            rows = b.execute("SELECT release_id, owner, dataset, mechanism, params, "
                             "tool_version, created FROM ledger_releases ORDER BY seq").fetchall()
        return [{"release_id": r, "owner": o, "dataset": d, "mechanism": m,
                 "params": json.loads(p), "tool_version": v, "created": c}
                for r, o, d, m, p, v, c in rows]

    def entries(self) -> Iterator[dict]:
        """Every entry, in order, as stored (``body`` is the hashed JSON text) plus its
        ``status``; a ``batch`` entry also carries its ``charges`` (the rows its digest
        covers, with their status) and the ``events`` texts they name, by digest. Read in
        pages, each its own short transaction, so an abandoned iteration holds no lock
        (entries are append-only: the pages are consistent)."""
        cols = (*ENTRY_COLUMNS, "status")
        ccols = ("id", "unit", "record", "eps_n", "delta_n", "events", "reason", "status")
        last = 0
        while True:
            with self._read("read the ledger") as b:
                rows = b.execute(f"SELECT {', '.join(cols)} FROM ledger_entries WHERE seq > ? "
                                 "ORDER BY seq LIMIT 1000", (last,)).fetchall()
                out = [dict(zip(cols, row, strict=True)) for row in rows]
                for e in out:
                    if e["kind"] == "batch":
                        lo, hi = batch_range(e["body"])
                        e["charges"] = [dict(zip(ccols, r, strict=True)) for r in b.execute(
                            f"SELECT {', '.join(ccols)} FROM ledger_charges WHERE id BETWEEN "
                            "? AND ? ORDER BY id", (lo, hi)).fetchall()]
                        digests = sorted({c["events"] for c in e["charges"]})
                        e["events"] = dict(b.execute(
                            "SELECT digest, body FROM ledger_events WHERE digest IN "
                            f"({sql_marks(len(digests))})", digests).fetchall()) if digests else {}
            if not rows:
                return
            yield from out
            last = int(rows[-1][0])

    def head(self) -> tuple[int, str]:
        with self._read("read the ledger"):
            meta = self._meta()
        return int(meta["head_seq"]), meta["head_hash"]
