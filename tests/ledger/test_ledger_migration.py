"""A ledger written in schema version 1 (one chained entry per record) opens, migrates to the
current version, verifies, and goes on charging - on SQLite and on a real PostgreSQL server.

``write_v1_ledger`` is the fixture generator: it writes, through a plain connection, exactly
what dptext's version-1 ledger wrote (its tables, ``schema.V1``; one ``charge`` or
``withhold`` entry per record, hash-chained with ``chain.entry_hash``; the derived tables), so
the migration is tested against real v1 data without keeping the v1 code.
"""

from __future__ import annotations

import uuid

import pytest
from ledger_backends import *  # noqa: F403 - the fixtures ledger_url, pg_server, pg_url
from ledger_backends import raw

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger import Ledger, schema
from dptext.ledger.chain import canonical, entry_hash, genesis
from dptext.ledger.keys import Keyring

SECRET = "v1-fixture-secret-0123456789abcdef"
EV = [PrivacyEvent("pure", 1.0, count=2, mechanism="custext", scope="per token")]
E9 = 10**9


def write_v1_ledger(url: str) -> dict:
    """A v1 ledger: budget epsilon 5 for clinic/notes; one release; ann charged twice (the
    first released, the second pending) and withheld once, bob charged once (released)."""
    conn, mark = raw(url)
    dialect = "postgresql" if url.startswith("postgresql") else "sqlite"

    def q(sql: str) -> str:
        return sql.replace("?", mark)

    for stmt in schema.V1:
        conn.execute(schema.ddl(stmt, dialect))
    keyring = Keyring(SECRET)
    ledger_id = uuid.uuid4().hex
    created = "2026-11-30T12:00:00.000000+00:00"
    entries: list[tuple] = []
    head = [genesis(ledger_id)]

    def append(kind, *, release_id="", owner="", dataset="", unit="", record="", eps_n=0,
               delta_n=0, body=None, status="") -> int:
        seq = len(entries) + 1
        values = (seq, kind, release_id, owner, dataset, unit, record, eps_n, delta_n,
                  canonical(body or {}), created, head[0])
        head[0] = entry_hash(values)
        entries.append((*values, head[0], status))
        return seq

    append("budget", owner="clinic", dataset="notes", eps_n=5 * E9,
           body={"epsilon": 5.0, "delta": 0.0})
    rid = uuid.uuid4().hex
    params = {"epsilon": 1.0}
    open_seq = append("open", release_id=rid, owner="clinic", dataset="notes",
                      body={"mechanism": "custext", "params": params,
                            "tool_version": "dptext 0.1", "release_key": None})
    events = {"events": [{k: v for k, v in e.to_dict().items() if k != "scope"} for e in EV]}
    ann, bob = keyring.unit("ann"), keyring.unit("bob")
    ids = {}
    for key, unit, status in (("n1", ann, "released"), ("n2", ann, "pending"),
                              ("n4", bob, "released")):
        ids[key] = append("charge", release_id=rid, owner="clinic", dataset="notes",
                          unit=unit, record=keyring.record(rid, key), eps_n=2 * E9,
                          body=events, status=status)
    reason = "over budget for owner 'clinic', dataset 'notes': the unit has spent 4"
    ids["n3"] = append("withhold", release_id=rid, owner="clinic", dataset="notes", unit=ann,
                       record=keyring.record(rid, "n3"), body={**events, "reason": reason},
                       status="withheld")
    append("commit", release_id=rid, body={"charges": [[ids["n1"], ids["n1"]],
                                                         [ids["n4"], ids["n4"]]]})
    cols = ("seq, kind, release_id, owner, dataset, unit, record, eps_n, delta_n, body, "
            "created, prev_hash, hash, status")
    for row in entries:
        conn.execute(q(f"INSERT INTO ledger_entries ({cols}) VALUES "
                       f"({', '.join('?' * 14)})"), row)
    conn.execute(q("INSERT INTO ledger_releases (release_id, key_hash, owner, dataset, "
                   "mechanism, params, tool_version, created, seq) VALUES "
                   "(?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                 (rid, None, "clinic", "notes", "custext", canonical(params), "dptext 0.1",
                  created, open_seq))
    conn.execute(q("INSERT INTO ledger_budgets (owner, dataset, eps_n, delta_n, seq) VALUES "
                   "(?, ?, ?, ?, ?)"), ("clinic", "notes", 5 * E9, 0, 1))
    for unit, eps in ((ann, 4 * E9), (bob, 2 * E9)):
        conn.execute(q("INSERT INTO ledger_units (owner, dataset, unit, eps_n, delta_n) "
                       "VALUES (?, ?, ?, ?, ?)"), ("clinic", "notes", unit, eps, 0))
    meta = {"schema_version": "1", "ledger_id": ledger_id, "created": created,
            "delta": repr(1e-6), "key_location": "external",
            "key_check": keyring.check_value(ledger_id), "head_seq": str(len(entries)),
            "head_hash": head[0], "tool_version": "dptext 0.1"}
    for k, v in meta.items():
        conn.execute(q("INSERT INTO ledger_meta (key, value) VALUES (?, ?)"), (k, v))
    conn.close()
    return {"release": rid, "ids": ids, "entries": len(entries), "reason": reason}


def test_a_v1_ledger_migrates_verifies_and_keeps_charging(ledger_url):
    v1 = write_v1_ledger(ledger_url)
    ledger = Ledger(ledger_url, secret=SECRET)
    assert ledger._meta()["schema_version"] == str(schema.SCHEMA_VERSION)
    r = ledger.verify()
    assert (r.entries, r.releases, r.units, r.charges, r.pending) == (v1["entries"], 1, 2, 3, 1)
    s = ledger.spent("ann", owner="clinic", dataset="notes")
    assert (s.epsilon_basic, s.records, s.pending, s.withheld) == (4.0, 1, 1, 1)
    assert ledger.unit_events("ann") == [PrivacyEvent("pure", 1.0, count=4)]
    assert {(u.records, u.pending, u.withheld) for u in ledger.units()} == {(1, 1, 1),
                                                                             (1, 0, 0)}
    assert ledger.pending() == [v1["ids"]["n2"]]
    rid = v1["release"]
    # the v1 decisions are found again (idempotent reserve across the migration)
    again = ledger.reserve(rid, [("n1", "ann", EV), ("n3", "ann", EV), ("n4", "bob", EV)])
    assert [d.already for d in again] == [True] * 3
    assert [d.charge_id for d in again] == [v1["ids"]["n1"], None, v1["ids"]["n4"]]
    assert again[1].reason == v1["reason"]
    # new records: v2 charge rows, ids past every v1 entry; the budget counts v1 charges
    new = ledger.reserve(rid, [("n5", "bob", EV), ("n6", "ann", EV), ("n7", "bob", EV)])
    assert [d.allowed for d in new] == [True, False, False]
    assert new[0].charge_id > v1["entries"]
    assert ledger.reserve(rid, [("n5", "bob", EV)])[0].charge_id == new[0].charge_id
    # a v1 pending charge and a v2 charge committed in one call
    ledger.commit(rid, [v1["ids"]["n2"], new[0].charge_id])
    assert ledger.pending() == []
    s = ledger.spent("bob", owner="clinic", dataset="notes")
    assert (s.epsilon_basic, s.records, s.pending, s.withheld) == (4.0, 2, 0, 1)
    kinds = [h["kind"] for h in ledger.history("ann")]
    assert kinds == ["charge", "charge", "withhold", "withhold"]
    assert len(list(ledger.charges(rid))) == 7
    r = ledger.verify()
    assert (r.charges, r.pending) == (4, 0)
    ledger.close()
    # a v1 entry edited after the migration is still caught
    conn, mark = raw(ledger_url)
    conn.execute(f"UPDATE ledger_entries SET eps_n = 0 WHERE seq = {mark}", (v1["ids"]["n2"],))
    conn.close()
    with pytest.raises(DPTextError, match=f"entry {v1['ids']['n2']} was edited"):
        Ledger(ledger_url, secret=SECRET).verify()


def test_a_v1_ledger_that_is_read_only_is_not_migrated(tmp_path):
    import stat

    path = tmp_path / "v1.sqlite"
    write_v1_ledger(str(path))
    path.chmod(stat.S_IRUSR)
    try:
        with pytest.raises(DPTextError, match="schema version 1.* needs migrating .* read-only"):
            Ledger(path, secret=SECRET)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    ledger = Ledger(path, secret=SECRET)  # writable again: migrated on open
    assert ledger.verify().charges == 3
