"""The whole-batch path of ``reserve`` (issue 36): a batch whose every unit can take all of its
records is decided per unit, not per record, and must give exactly what deciding the records
one by one gives - the decisions, the charge rows the chain covers, the unit totals -; the
charge rows written many to a statement; event lists that differ only in ``bounded_range``
kept apart."""

from __future__ import annotations

import json

import pytest
from ledger_backends import *  # noqa: F403 - the fixtures ledger_url, pg_server, pg_url

from dptext.accounting.events import PrivacyEvent
from dptext.ledger import Ledger, batches, writes

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

SECRET = "batch-path-test-secret-0123456789"


def _events(i: int) -> list[PrivacyEvent]:
    return [PrivacyEvent("pure", 0.5 + (i % 3) * 0.25, count=1 + i % 2, mechanism="m",
                         scope="per token")]


def _ledger(url, budgets) -> tuple[Ledger, str]:
    ledger = Ledger(url, secret=SECRET)
    for owner, dataset, eps in budgets:
        ledger.set_budget(owner, dataset, eps)
    return ledger, ledger.open_release(owner="o", dataset="d", mechanism="m", params={})


def _state(ledger: Ledger, rid: str, keys: list[str], decisions) -> tuple:
    """What the two paths must agree on: decisions (charge ids included), each batch entry's
    amounts, count and charge range, and its rows as the chain covers them (the record hash
    is keyed with the release id, random per ledger: named by its key here), the unit totals;
    and the chain verifies."""
    key_of = {ledger._keys.record(rid, k): k for k in keys}
    batch = []
    for e in ledger.entries():
        if e["kind"] == "batch":
            body = json.loads(e["body"])
            rows = [{**c, "record": key_of[c["record"]]} for c in e["charges"]]
            batch.append((e["eps_n"], e["delta_n"], body["charges"], body["count"], rows,
                          e["events"]))
    units = sorted((u.unit, u.epsilon, u.delta, u.records, u.withheld, u.pending)
                   for u in ledger.units(owner="o", dataset="d"))
    ledger.verify()
    return decisions, batch, units


SCENARIOS = {
    # (budgets, batches of (record, unit, events index))
    "every unit fits": ([("o", "d", 100.0)],
                        [[(f"r{i}", f"u{i % 7}", i) for i in range(300)]]),
    "no budget": ([], [[(f"r{i}", f"u{i % 5}", i) for i in range(50)]]),
    "a unit over budget": ([("o", "d", 6.0)],
                           [[(f"r{i}", f"u{i % 4}", i) for i in range(60)]]),
    "budgets of several scopes": ([("o", "d", 40.0), ("*", "*", 30.0), ("o", "*", 35.0)],
                                  [[(f"r{i}", f"u{i % 3}", i) for i in range(40)]]),
    "a record twice in a batch": ([("o", "d", 100.0)],
                                  [[(f"r{i % 20}", f"u{i % 20 % 3}", i % 20)
                                    for i in range(40)]]),
    "records decided before": ([("o", "d", 100.0)],
                               [[(f"r{i}", f"u{i % 3}", i) for i in range(30)],
                                [(f"r{i}", f"u{i % 3}", i) for i in range(20, 50)]]),
    "second batch reaches the budget": ([("o", "d", 20.0)],
                                        [[(f"r{i}", f"u{i % 2}", i) for i in range(16)],
                                         [(f"r{i}", f"u{i % 2}", i) for i in range(16, 40)]]),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_whole_batch_path_decides_like_one_record_at_a_time(ledger_url, monkeypatch, request,
                                                           name):
    budgets, calls = SCENARIOS[name]
    taken = []
    real = batches.batch_sums

    def spy(*args):
        out = real(*args)
        taken.append(out is not None)
        return out

    results = []
    for one_by_one in (False, True):
        url = ledger_url if not one_by_one else _second_url(ledger_url, request)
        monkeypatch.setattr(writes, "batch_sums",
                            (lambda *a: None) if one_by_one else spy)
        ledger, rid = _ledger(url, budgets)
        decisions = [ledger.reserve(rid, [(r, u, _events(k)) for r, u, k in call])
                     for call in calls]
        keys = [r for call in calls for r, _, _ in call]
        results.append(_state(ledger, rid, keys, decisions))
        ledger.close()
    assert results[0] == results[1]
    if name in ("every unit fits", "no budget", "budgets of several scopes"):
        assert taken == [True]  # the whole-batch path was the one tested
    if name == "a unit over budget":
        assert any(not d.allowed for d in results[0][0][0])


def _second_url(url: str, request) -> str:
    """Another fresh ledger beside ``url``: a SQLite file, or a PostgreSQL schema of the same
    server (dropped after the test)."""
    if not url.startswith("postgresql"):
        return url + ".second.sqlite"
    import psycopg

    server, _, name = url.partition("?options=-csearch_path%3D")
    other = f"{name}_b"
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {other}")

    def drop():
        with psycopg.connect(server, autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {other} CASCADE")

    request.addfinalizer(drop)
    return f"{server}?options=-csearch_path%3D{other}"


def test_many_charge_rows_to_a_statement_all_land_and_verify(tmp_path, monkeypatch):
    """More rows than one multi-row INSERT holds, and a rest: every row is stored and the
    chain's digest of them verifies; a resumed reserve finds them all."""
    from dptext.ledger import backends

    monkeypatch.setattr(backends, "ROWS_PER_INSERT", 7)
    ledger, rid = _ledger(tmp_path / "l.sqlite", [("o", "d", 1000.0)])
    n = 53
    items = [(f"r{i}", f"u{i % 11}", _events(i)) for i in range(n)]
    first = ledger.reserve(rid, items)
    assert [d.charge_id for d in first] == list(range(first[0].charge_id,
                                                      first[0].charge_id + n))
    result = ledger.verify()
    assert result.charges == n and result.pending == n
    again = ledger.reserve(rid, items)
    assert again == [d._replace(already=True) for d in first]
    ledger.commit(rid, [d.charge_id for d in first])
    assert ledger.verify().pending == 0


def test_event_lists_differing_only_in_bounded_range_are_stored_apart(tmp_path):
    """Two records whose one event differs only in ``bounded_range`` keep their own event
    lists (the per-event cost cache is keyed by every stored field)."""
    ledger, rid = _ledger(tmp_path / "l.sqlite", [])
    br = PrivacyEvent("pure", 1.0, count=3, mechanism="m", scope="s", bounded_range=True)
    plain = PrivacyEvent("pure", 1.0, count=3, mechanism="m", scope="s")
    ledger.reserve(rid, [("a", "u", [br]), ("b", "u", [plain])])
    bodies = sorted(r[0] for r in ledger._backend.execute(
        "SELECT body FROM ledger_events").fetchall())
    assert len(bodies) == 2
    assert ["bounded_range" in b for b in bodies].count(True) == 1
    ledger.verify()


@pytest.mark.parametrize("top", [10**9, 2**47, 2**56])
def test_batch_sums_are_exact_integers(top):
    """The per-unit sums of a batch equal Python's exact integer sums, whether they are
    summed in float64 (every partial sum below 2**53) or, for larger amounts, in int64; a
    unit with nothing charged sums to 0, amounts that could leave int64 give None."""
    import random

    rng = random.Random(top)
    units = [f"u{k:02d}" for k in range(13)]
    units_of = [rng.choice(units[:12]) for _ in range(40)]  # u12: no record
    eps = [rng.randrange(top - 1000, top) for _ in units_of]
    delta = [rng.randrange(0, 7) for _ in units_of]
    sums = batches.batch_sums(units, units_of, eps, delta)
    want = ([sum(e for u2, e in zip(units_of, eps, strict=True) if u2 == u) for u in units],
            [sum(d for u2, d in zip(units_of, delta, strict=True) if u2 == u) for u in units],
            [units_of.count(u) for u in units], [0] * len(units))
    assert sums == want
    assert all(type(x) is int for part in sums for x in part)
    assert batches.batch_sums(units, units_of, [2**62] * len(units_of), delta) is None
