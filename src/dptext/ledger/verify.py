"""``verify``: the hash chain end to end, then the derived tables rebuilt from the entries.

The entries are walked in order; beside them the charge rows of ``ledger_charges`` in id order,
each ``batch`` entry consuming the rows of its id range and recomputing their digest
(:mod:`dptext.ledger.batches`), so a charge row edited, deleted or added outside a batch breaks
the chain as an entry would; each event list's content address is recomputed too. The first
failure is raised as a one-line DPTextError naming the entry (or the row, or the derived row).
"""

from __future__ import annotations

import json
from collections import defaultdict

from dptext.errors import DPTextError
from dptext.ledger.batches import charge_line, digest, events_digest, expand_ranges
from dptext.ledger.chain import ENTRY_COLUMNS, canonical, entry_hash, genesis
from dptext.ledger.results import VerifyResult

KINDS = ("budget", "open", "charge", "withhold", "batch", "commit", "void")  # charge/withhold: v1


def _broken(msg: str) -> DPTextError:
    return DPTextError(f"ledger hash chain broken: {msg}")


def verify(b, meta: dict[str, str]):
    problem = b.integrity_problem()
    if problem:
        raise DPTextError(f"ledger {b.where} is corrupt: {problem}")
    prev = genesis(meta["ledger_id"])
    expected = 1
    budgets: dict[tuple, tuple] = {}
    releases: dict[str, tuple] = {}
    charges: dict[int, list] = {}
    statuses: dict[int, str] = {}
    base = int(meta.get("charge_base", "0"))
    rows_iter = _charge_rows(b)
    pending_row = [None]  # a charge row read but not yet consumed by a batch
    events_used: set[str] = set()
    last_id = 0  # the last charge row a batch entry covered
    cur = b.execute(f"SELECT {', '.join(ENTRY_COLUMNS)}, status FROM ledger_entries "
                    "ORDER BY seq")
    while rows := cur.fetchmany(2000):
        for row in rows:
            (seq, kind, release_id, owner, dataset, unit, record, eps_n, delta_n, body,
             _created, prev_hash, stored, status) = row
            row = row[:-1]
            seq, eps_n, delta_n = int(seq), int(eps_n), int(delta_n)
            if seq != expected:
                raise _broken(f"entry {expected} is missing (deleted?): the entries jump from "
                              f"{expected - 1} to {seq}")
            if prev_hash != prev:
                raise _broken(f"entry {seq} does not chain to entry {seq - 1} (an entry "
                              "before it was edited or replaced)")
            if entry_hash(tuple(row[:-1])) != stored:
                raise _broken(f"entry {seq} was edited (its hash does not match its contents)")
            prev, expected = stored, seq + 1
            try:
                data = json.loads(body)
            except ValueError:
                raise _broken(f"entry {seq} has an unreadable body") from None
            if kind == "budget":
                budgets[(owner, dataset)] = (eps_n, delta_n, seq)
            elif kind == "open":
                releases[release_id] = (data.get("release_key"), owner, dataset,
                                        data["mechanism"], canonical(data["params"]),
                                        data["tool_version"], seq)
            elif kind == "batch":
                if status:
                    raise DPTextError(f"ledger entry {seq} (batch) has a charge status "
                                      f"{status!r} (edited outside dptext?)")
                rel = releases.get(release_id)
                if rel is None or (rel[1], rel[2]) != (owner, dataset):
                    raise _broken(f"entry {seq} charges release {release_id} that was not "
                                  "opened before it (or for another owner/dataset)")
                try:
                    first, last = (int(x) for x in data["charges"])
                    count, want = int(data["count"]), data["digest"]
                except (KeyError, TypeError, ValueError):
                    raise _broken(f"entry {seq} has an unreadable body") from None
                if count != last - first + 1 or first <= max(base, last_id):
                    raise _broken(f"entry {seq} names charge rows {first}-{last} out of order")
                lines, e_sum, d_sum = [], 0, 0
                for cid in range(first, last + 1):
                    crow = pending_row[0] or next(rows_iter, None)
                    pending_row[0] = None
                    if crow is not None and int(crow[0]) < cid:
                        raise _broken(f"charge row {crow[0]} belongs to no batch entry "
                                      "(added outside dptext?)")
                    if crow is None or int(crow[0]) > cid:
                        pending_row[0] = crow
                        raise _broken(f"charge row {cid} of entry {seq} is missing (deleted?)")
                    c_id, c_entry, unit_c, rec_c, e_c, d_c, ev, reason, c_status = crow
                    e_c, d_c = int(e_c), int(d_c)
                    if int(c_entry) != seq:
                        raise _broken(f"charge row {cid} names entry {c_entry}, but entry "
                                      f"{seq} covers it")
                    lines.append(charge_line((cid, unit_c, rec_c, e_c, d_c, ev, reason)))
                    events_used.add(ev)
                    if reason:
                        charges[cid] = [release_id, rec_c, owner, dataset, unit_c, 0, 0,
                                        "withheld"]
                    else:
                        charges[cid] = [release_id, rec_c, owner, dataset, unit_c, e_c, d_c,
                                        "pending"]
                        e_sum += e_c
                        d_sum += d_c
                    statuses[cid] = c_status
                last_id = last
                if digest(lines) != want or (e_sum, d_sum) != (eps_n, delta_n):
                    raise _broken(f"the charge rows of entry {seq} ({first}-{last}) were "
                                  "edited (their digest does not match the entry)")
            elif kind in ("charge", "withhold"):
                rel = releases.get(release_id)
                if rel is None or (rel[1], rel[2]) != (owner, dataset):
                    raise _broken(f"entry {seq} charges release {release_id} that was not "
                                  "opened before it (or for another owner/dataset)")
                if kind == "charge":
                    charges[seq] = [release_id, record, owner, dataset, unit, eps_n, delta_n,
                                    "pending"]
                else:
                    charges[seq] = [release_id, record, owner, dataset, unit, 0, 0, "withheld"]
                statuses[seq] = status
            elif status:
                raise DPTextError(f"ledger entry {seq} ({kind}) has a charge status "
                                  f"{status!r} (edited outside dptext?)")
            elif kind == "commit":
                for cid in expand_ranges(data["charges"]):
                    c = charges.get(cid)
                    if c is None or c[0] != release_id or c[7] == "withheld":
                        raise _broken(f"entry {seq} commits charge {cid}, which is not a "
                                      f"charge of release {release_id}")
                    if c[7] == "voided":
                        raise _broken(f"entry {seq} commits charge {cid}, which was voided")
                    c[7] = "released"  # (committing a released charge again changes nothing)
            elif kind == "void":
                rel = releases.get(release_id)
                if rel is None or (rel[1], rel[2]) != (owner, dataset):
                    raise _broken(f"entry {seq} voids charges of release {release_id} that "
                                  "was not opened before it (or for another owner/dataset)")
                for cid in expand_ranges(data["charges"]):
                    c = charges.get(cid)
                    if c is None or c[0] != release_id or c[7] != "pending":
                        raise _broken(f"entry {seq} voids charge {cid}, which is not a "
                                      f"pending charge of release {release_id}")
                    c[7] = "voided"
            else:
                raise _broken(f"entry {seq} has an unknown kind {kind!r}")
    last = expected - 1
    if str(last) != meta["head_seq"] or prev != meta["head_hash"]:
        raise _broken(f"the ledger's head is entry {meta['head_seq']} but the entries end at "
                      f"{last} (entries after it were deleted, or the head was edited)")

    extra = pending_row[0] or next(rows_iter, None)
    if extra is not None:
        raise _broken(f"charge row {extra[0]} belongs to no batch entry (added outside "
                      "dptext?)")
    for dig, body in b.execute("SELECT digest, body FROM ledger_events").fetchall():
        if events_digest(body) != dig:
            raise _broken(f"event list {dig} was edited (its digest does not match it)")
        events_used.discard(dig)
    if events_used:
        raise _broken(f"event list {sorted(events_used)[0]} named by a charge row is missing "
                      "(deleted?)")

    # derived tables
    for cid, c in charges.items():
        if statuses[cid] != c[7]:
            what = "entry" if cid <= base else "charge"
            raise DPTextError(f"ledger {what} {cid} has status {statuses[cid]!r} but the "
                              f"commit entries make it {c[7]!r} (edited outside dptext?)")
    # per unit: [eps_n, delta_n, charges (pending or released), withheld]
    units: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for c in charges.values():
        acc = units[(c[2], c[3], c[4])]
        if c[7] == "withheld":
            acc[3] += 1
        elif c[7] == "voided":  # never released: out of the unit's totals
            continue
        else:
            acc[0] += c[5]
            acc[1] += c[6]
            acc[2] += 1
    got = {(r[0], r[1], r[2]): [int(x) for x in r[3:]] for r in b.execute(
        "SELECT owner, dataset, unit, eps_n, delta_n, charges, withheld FROM ledger_units")}
    for key in sorted(set(got) | set(units)):
        if got.get(key) != units.get(key):
            raise DPTextError(f"ledger table ledger_units disagrees with the entries for unit "
                              f"{key[2]} (owner {key[0]!r}, dataset {key[1]!r})")
    got_b = {(r[0], r[1]): (int(r[2]), int(r[3]), int(r[4]))
             for r in b.execute("SELECT owner, dataset, eps_n, delta_n, seq FROM ledger_budgets")}
    if got_b != budgets:
        raise DPTextError("ledger table ledger_budgets disagrees with the budget entries")
    got_r = {r[0]: (r[1], r[2], r[3], r[4], r[5], r[6], int(r[7]))
             for r in b.execute("SELECT release_id, key_hash, owner, dataset, mechanism, params, "
                                "tool_version, seq FROM ledger_releases")}
    if got_r != releases:
        raise DPTextError("ledger table ledger_releases disagrees with the release entries")
    # a unit: a person with a record in the ledger - charged, withheld or voided - counted as
    # `ledger spent` counts them (the rows of ledger_units, checked above, grouped by unit)
    return VerifyResult(entries=last, head_hash=prev, releases=len(releases),
                        units=len({key[2] for key in units}),
                        charges=sum(c[7] not in ("withheld", "voided") for c in charges.values()),
                        pending=sum(c[7] == "pending" for c in charges.values()))


def _charge_rows(b):
    """The charge rows in id order, read in pages (by id, so no cursor stays open across the
    entries' own reads)."""
    last = -1
    while True:
        rows = b.execute("SELECT id, entry, unit, record, eps_n, delta_n, events, reason, "
                         "status FROM ledger_charges WHERE id > ? ORDER BY id LIMIT 5000",
                         (last,)).fetchall()
        if not rows:
            return
        yield from rows
        last = int(rows[-1][0])
