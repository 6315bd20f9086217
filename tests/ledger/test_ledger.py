"""The budget ledger on SQLite and on a real PostgreSQL server (same tests, both backends)."""

from __future__ import annotations

import json
import math
import time

import pytest
from ledger_backends import *  # noqa: F403 - the fixtures ledger_url, pg_server, pg_url
from ledger_backends import raw

from dptext.accounting.events import PrivacyEvent
from dptext.errors import DPTextError
from dptext.ledger import Ledger, charge_training
from dptext.ledger.chain import entry_text
from dptext.ledger.training import training_preflight


def pure(eps: float, count: int = 1) -> list[PrivacyEvent]:
    return [PrivacyEvent("pure", eps, count=count, mechanism="test", scope="per token")]


def opened(url, *, budget=None, delta=0.0, owner="clinic", dataset="notes", key=None):
    ledger = Ledger(url)
    if budget is not None:
        ledger.set_budget(owner, dataset, budget, delta)
    rid = ledger.open_release(owner=owner, dataset=dataset, mechanism="custext",
                              params={"epsilon": 1.0}, release_key=key)
    return ledger, rid


def entry_count(ledger) -> int:
    return sum(1 for _ in ledger.entries())


# ------------------------------------------------------------------------ charge / budget
def test_budget_is_enforced_exactly_with_pending_counted(ledger_url):
    ledger, rid = opened(ledger_url, budget=3.0)
    items = [(f"r{i}", "alice", pure(1.0)) for i in range(5)]
    ds = ledger.reserve(rid, items)
    assert [d.allowed for d in ds] == [True, True, True, False, False]
    assert all(not d.already for d in ds)
    assert ds[3].charge_id is None and "over budget" in ds[3].reason
    # nothing committed yet: pending charges count as spent
    s = ledger.spent("alice", owner="clinic", dataset="notes")
    assert (s.epsilon_basic, s.records, s.pending, s.withheld) == (3.0, 0, 3, 2)
    assert ledger.remaining("alice", owner="clinic", dataset="notes") == 0.0
    ledger.commit(rid, [d.charge_id for d in ds if d.allowed])
    s = ledger.spent("alice", owner="clinic", dataset="notes")
    assert (s.epsilon_basic, s.records, s.pending, s.epsilon_pending) == (3.0, 3, 0, 0.0)
    # another unit has its own budget
    assert ledger.reserve(rid, [("b1", "bob", pure(2.5))])[0].allowed
    assert ledger.remaining("bob", owner="clinic", dataset="notes") == pytest.approx(0.5)
    assert ledger.would_exceed("bob", pure(0.6), owner="clinic", dataset="notes")
    assert not ledger.would_exceed("bob", pure(0.5), owner="clinic", dataset="notes")
    ledger.verify()


def test_decimal_epsilons_fill_the_budget_exactly(ledger_url):
    # 10 x 0.1 is 1.0000000000000002 in floating point: the fixed-point ledger charges 0.1
    ledger, rid = opened(ledger_url, budget=1.0)
    ds = ledger.reserve(rid, [(f"r{i}", "u", pure(0.1)) for i in range(11)])
    assert sum(d.allowed for d in ds) == 10


def test_no_budget_records_everything(ledger_url):
    ledger, rid = opened(ledger_url)
    ds = ledger.reserve(rid, [(f"r{i}", "u", pure(7.0, 3)) for i in range(4)])
    assert all(d.allowed for d in ds)
    assert ledger.remaining("u", owner="clinic", dataset="notes") is None
    assert ledger.spent("u").epsilon_basic == 84.0


def test_reserve_is_idempotent_per_release_and_record(ledger_url):
    ledger, rid = opened(ledger_url, budget=2.0)
    first = ledger.reserve(rid, [("a", "u", pure(1.0)), ("b", "u", pure(1.0)),
                                 ("c", "u", pure(1.0))])
    again = ledger.reserve(rid, [("c", "u", pure(1.0)), ("a", "u", pure(1.0)),
                                 ("a", "u", pure(1.0))])
    assert [d.already for d in again] == [True, True, True]
    assert again[0].allowed is False and again[0].reason == first[2].reason
    assert again[1].charge_id == again[2].charge_id == first[0].charge_id
    assert ledger.spent("u").epsilon_basic == 2.0
    # the same key twice in one batch: charged once
    ds = ledger.reserve(rid, [("d", "v", pure(1.0)), ("d", "v", pure(1.0))])
    assert ds[0].allowed and not ds[0].already and ds[1].already
    assert ds[1].charge_id == ds[0].charge_id
    assert ledger.spent("v").epsilon_basic == 1.0
    ledger.verify()


def test_release_key_continues_the_same_release(ledger_url):
    ledger, rid = opened(ledger_url, key="input-sha256+command")
    again = ledger.open_release(owner="clinic", dataset="notes", mechanism="custext",
                                params={"epsilon": 1.0}, release_key="input-sha256+command")
    assert again == rid
    other = ledger.open_release(owner="clinic", dataset="notes", mechanism="custext",
                                params={})
    assert other != rid
    with pytest.raises(DPTextError, match="release key already used"):
        ledger.open_release(owner="someone", dataset="notes", mechanism="custext", params={},
                            release_key="input-sha256+command")
    assert len(ledger.releases()) == 2


def test_commit_is_idempotent_and_checked(ledger_url):
    ledger, rid = opened(ledger_url, budget=1.0)
    ds = ledger.reserve(rid, [("a", "u", pure(1.0)), ("b", "u", pure(1.0))])
    ledger.commit(rid, [ds[0].charge_id])
    ledger.commit(rid, [ds[0].charge_id])  # again: nothing changes
    s = ledger.spent("u")
    assert (s.records, s.pending) == (1, 0)
    other = ledger.open_release(owner="clinic", dataset="notes", mechanism="m", params={})
    with pytest.raises(DPTextError, match="belongs to release"):
        ledger.commit(other, [ds[0].charge_id])
    with pytest.raises(DPTextError, match="unknown charge id"):
        ledger.commit(rid, [10**6])
    with pytest.raises(DPTextError, match="unknown release"):
        ledger.reserve("no-such-release", [("a", "u", pure(1.0))])
    assert ledger.pending() == []
    ledger.verify()


def test_wildcard_budget_spans_datasets_and_owners(ledger_url):
    ledger = Ledger(ledger_url)
    ledger.set_budget("*", "*", 3.0)  # a global per-person cap
    ledger.set_budget("clinic", "notes", 10.0)
    r1 = ledger.open_release(owner="clinic", dataset="notes", mechanism="m", params={})
    r2 = ledger.open_release(owner="lab", dataset="emails", mechanism="m", params={})
    assert ledger.reserve(r1, [("a", "p", pure(2.0))])[0].allowed
    d = ledger.reserve(r2, [("a", "p", pure(2.0))])[0]
    assert not d.allowed and "any owner, any dataset" in d.reason
    assert ledger.reserve(r2, [("b", "p", pure(1.0))])[0].allowed
    assert ledger.spent("p").epsilon_basic == 3.0
    assert ledger.spent("p", owner="lab").epsilon_basic == 1.0
    assert ledger.remaining("p", owner="clinic", dataset="notes") == 0.0


def test_delta_budget_with_approx_events(ledger_url):
    ledger, rid = opened(ledger_url, budget=100.0, delta=2e-5)
    ev = [PrivacyEvent("approx", 1.0, 1e-5, mechanism="dp-sgd")]
    ds = ledger.reserve(rid, [(f"r{i}", "u", ev) for i in range(3)])
    assert [d.allowed for d in ds] == [True, True, False]
    assert "delta" in ds[2].reason
    s = ledger.spent("u")
    assert s.delta_basic == pytest.approx(2e-5, rel=1e-12)
    assert s.epsilon_pld == math.inf  # the stored deltas exceed the ledger's 1e-6


def test_pld_is_reported_and_never_above_basic(ledger_url):
    ledger, rid = opened(ledger_url)
    ledger.reserve(rid, [(f"r{i}", "u", pure(0.1, 20)) for i in range(50)])
    s = ledger.spent("u")
    assert s.epsilon_basic == pytest.approx(100.0)
    assert s.delta == 1e-6
    assert 0 < s.epsilon_pld < 0.5 * s.epsilon_basic


def test_budget_below_one_record(ledger_url):
    ledger, rid = opened(ledger_url, budget=0.5)
    with pytest.raises(DPTextError, match="below what one record costs"):
        ledger.check_budget_covers("clinic", "notes", pure(1.0))
    ledger.check_budget_covers("clinic", "notes", pure(0.5))
    d = ledger.reserve(rid, [("a", "u", pure(1.0))])[0]
    assert not d.allowed and "alone costs" in d.reason
    assert ledger.spent("u").epsilon_basic == 0.0


def test_all_or_nothing_charges_nothing(ledger_url):
    ledger, rid = opened(ledger_url, budget=1.0)
    ledger.reserve(rid, [("x", "b", pure(1.0))])
    n = entry_count(ledger)
    with pytest.raises(DPTextError, match="nothing was charged"):
        ledger.reserve(rid, [("y", "a", pure(1.0)), ("z", "b", pure(1.0))],
                       all_or_nothing=True)
    assert entry_count(ledger) == n
    assert ledger.spent("a").epsilon_basic == 0.0
    ledger.verify()


@pytest.mark.parametrize("bad", [
    ("a", None, pure(1.0)), ("a", "", pure(1.0)), ("a", "u", [PrivacyEvent("pure", math.inf)]),
    ("a", "u", [("pure", 1.0)]), (None, "u", pure(1.0)), ("only two",),
])
def test_bad_items_refuse_the_whole_batch(ledger_url, bad):
    ledger, rid = opened(ledger_url)
    n = entry_count(ledger)
    with pytest.raises(DPTextError):
        ledger.reserve(rid, [("ok", "u", pure(1.0)), bad])
    assert entry_count(ledger) == n and ledger.spent("u").epsilon_basic == 0.0


def test_unit_field_missing_is_a_one_line_error(ledger_url):
    ledger, rid = opened(ledger_url)
    with pytest.raises(DPTextError, match="record 'r7' has no unit id") as err:
        ledger.reserve(rid, [("r7", None, pure(1.0))])
    assert "\n" not in str(err.value)


def test_bad_budgets_and_names(ledger_url):
    ledger = Ledger(ledger_url)
    for eps, delta in [(-1, 0), (math.inf, 0), (math.nan, 0), (1, 1.0), (1, -0.1)]:
        with pytest.raises(DPTextError):
            ledger.set_budget("o", "d", eps, delta)
    with pytest.raises(DPTextError, match="only for budgets"):
        ledger.open_release(owner="*", dataset="d", mechanism="m", params={})
    with pytest.raises(DPTextError, match="non-empty"):
        ledger.open_release(owner="", dataset="d", mechanism="m", params={})
    with pytest.raises(DPTextError, match="JSON"):
        ledger.open_release(owner="o", dataset="d", mechanism="m", params={"x": object()})


def test_lowering_a_budget_withholds_further_records(ledger_url):
    ledger, rid = opened(ledger_url, budget=5.0)
    ledger.reserve(rid, [("a", "u", pure(3.0))])
    ledger.set_budget("clinic", "notes", 2.0)
    assert not ledger.reserve(rid, [("b", "u", pure(0.1))])[0].allowed
    assert [b.epsilon for b in ledger.budgets()] == [2.0]
    ledger.verify()


# ------------------------------------------------------------------------ privacy of ids
def test_unit_ids_are_keyed_hashes_not_clear_text(ledger_url, tmp_path):
    ledger, rid = opened(ledger_url)
    ledger.reserve(rid, [("note-of-zelda-fitzgerald", "Zelda Fitzgerald", pure(1.0))])
    assert ledger.unit_hash("Zelda Fitzgerald") != "Zelda Fitzgerald"
    dump = "\n".join(json.dumps(e) for e in ledger.entries())
    assert "Zelda" not in dump and ledger.unit_hash("Zelda Fitzgerald") in dump
    ledger.close()
    if not ledger_url.startswith("postgresql"):
        for suffix in ("", "-wal"):
            p = tmp_path / f"ledger.sqlite{suffix}"
            if p.exists():
                assert b"Zelda" not in p.read_bytes()
    # the same name under another ledger's secret is another id
    other = Ledger(tmp_path / "other.sqlite")
    assert other.unit_hash("Zelda Fitzgerald") != Ledger(ledger_url).unit_hash(
        "Zelda Fitzgerald")


def test_wrong_secret_is_refused(ledger_url, monkeypatch):
    Ledger(ledger_url).close()
    with pytest.raises(DPTextError, match="secret does not match"):
        Ledger(ledger_url, secret="another secret of enough length")
    monkeypatch.setenv("DPTEXT_LEDGER_SECRET", "yet another secret, long enough")
    with pytest.raises(DPTextError, match="secret does not match"):
        Ledger(ledger_url)


def test_external_secret_is_not_stored(ledger_url, tmp_path):
    secret = "s3cret-from-a-vault-0123456789"
    Ledger(ledger_url, secret=secret).close()
    with pytest.raises(DPTextError, match="set DPTEXT_LEDGER_SECRET"):
        Ledger(ledger_url)
    assert Ledger(ledger_url, secret=secret).verify().entries == 0
    assert not (tmp_path / "ledger.sqlite.key").exists()


# ------------------------------------------------------------------------------ the chain
def _tamper(url, sql, params=()):
    conn, mark = raw(url)
    conn.execute(sql.replace("?", mark), params)
    conn.close()


def _batch_seqs(ledger) -> list[int]:
    return [e["seq"] for e in ledger.entries() if e["kind"] == "batch"]


def _two_batches(url, **kw):
    """A release with two reserved batches of 5 records (the first committed): entries 1 open,
    (budget,) batch, commit, batch."""
    ledger, rid = opened(url, **kw)
    first = ledger.reserve(rid, [(f"r{i}", "u", pure(1.0)) for i in range(5)])
    ledger.commit(rid, [d.charge_id for d in first])
    second = ledger.reserve(rid, [(f"s{i}", "u", pure(1.0)) for i in range(5)])
    ledger.verify()
    return ledger, rid, first, second


def test_verify_detects_an_edited_entry(ledger_url):
    ledger, rid, _, _ = _two_batches(ledger_url)
    target = _batch_seqs(ledger)[0]
    _tamper(ledger_url, "UPDATE ledger_entries SET eps_n = 1 WHERE seq = ?", (target,))
    with pytest.raises(DPTextError, match=f"entry {target} was edited"):
        ledger.verify()


def test_verify_detects_an_edit_with_a_recomputed_hash(ledger_url):
    from dptext.ledger.chain import ENTRY_FIELDS, entry_hash

    ledger, rid, _, _ = _two_batches(ledger_url)
    target = _batch_seqs(ledger)[0]
    row = next(e for e in ledger.entries() if e["seq"] == target)
    forged = dict(row, created="2020-01-01T00:00:00")  # a field nothing else cross-checks
    new_hash = entry_hash(tuple(forged[k] for k in ENTRY_FIELDS))
    _tamper(ledger_url, "UPDATE ledger_entries SET created = ?, hash = ? WHERE seq = ?",
            (forged["created"], new_hash, target))
    with pytest.raises(DPTextError, match=f"entry {target + 1} does not chain"):
        ledger.verify()


def test_verify_detects_a_deleted_entry(ledger_url):
    ledger, rid, _, _ = _two_batches(ledger_url)
    target = _batch_seqs(ledger)[0]
    _tamper(ledger_url, "DELETE FROM ledger_entries WHERE seq = ?", (target,))
    with pytest.raises(DPTextError, match=f"entry {target} is missing"):
        ledger.verify()


def test_verify_detects_deleted_last_entries(ledger_url):
    ledger, rid, _, _ = _two_batches(ledger_url)
    _tamper(ledger_url, "DELETE FROM ledger_entries WHERE seq >= ?",
            (_batch_seqs(ledger)[1],))
    with pytest.raises(DPTextError, match="entries after it were deleted"):
        ledger.verify()


@pytest.mark.parametrize("edit", ["eps_n = 1", "unit = 'ffff'", "record = 'ffff'",
                                  "reason = 'x'", "events = 'ffff'"])
def test_verify_detects_an_edited_charge_row(ledger_url, edit):
    ledger, rid, first, _ = _two_batches(ledger_url)
    target = first[2].charge_id
    _tamper(ledger_url, f"UPDATE ledger_charges SET {edit} WHERE id = ?", (target,))
    seq = _batch_seqs(ledger)[0]
    with pytest.raises(DPTextError, match=f"the charge rows of entry {seq} .* were edited"):
        ledger.verify()


def test_verify_detects_a_moved_charge_row(ledger_url):
    ledger, rid, first, second = _two_batches(ledger_url)
    seqs = _batch_seqs(ledger)
    _tamper(ledger_url, "UPDATE ledger_charges SET entry = ? WHERE id = ?",
            (seqs[1], first[0].charge_id))
    with pytest.raises(DPTextError, match=f"charge row {first[0].charge_id} names entry"):
        ledger.verify()


def test_verify_detects_a_deleted_charge_row(ledger_url):
    ledger, rid, first, second = _two_batches(ledger_url)
    for victim in (second[4], first[1]):  # the last row, then one inside a batch
        _tamper(ledger_url, "DELETE FROM ledger_charges WHERE id = ?", (victim.charge_id,))
        with pytest.raises(DPTextError, match=f"charge row {victim.charge_id} of entry .* "
                                              "is missing"):
            ledger.verify()


def test_verify_detects_an_added_charge_row(ledger_url):
    ledger, rid, first, second = _two_batches(ledger_url)
    seq = _batch_seqs(ledger)[1]
    extra = second[-1].charge_id + 1
    _tamper(ledger_url, "INSERT INTO ledger_charges (id, entry, unit, record, eps_n, delta_n, "
            "events, reason, status) SELECT ?, entry, unit, 'beef', eps_n, delta_n, events, "
            "reason, status FROM ledger_charges WHERE id = ?", (extra, second[0].charge_id))
    with pytest.raises(DPTextError, match=f"charge row {extra} belongs to no batch"):
        ledger.verify()
    assert seq


def test_verify_detects_an_edited_or_deleted_event_list(ledger_url):
    ledger, rid, _, _ = _two_batches(ledger_url)
    conn, mark = raw(ledger_url)
    (dig, body), = conn.execute("SELECT digest, body FROM ledger_events").fetchall()
    conn.execute(f"UPDATE ledger_events SET body = {mark}",
                 (body.replace('"epsilon":1.0', '"epsilon":0.1'),))
    with pytest.raises(DPTextError, match=f"event list {dig} was edited"):
        ledger.verify()
    conn.execute("DELETE FROM ledger_events")
    conn.close()
    with pytest.raises(DPTextError, match=f"event list {dig} named by a charge row is missing"):
        ledger.verify()


def test_verify_detects_edited_derived_state(ledger_url):
    ledger, rid = opened(ledger_url, budget=10.0)
    ds = ledger.reserve(rid, [(f"r{i}", "u", pure(1.0)) for i in range(5)])
    ledger.commit(rid, [d.charge_id for d in ds[:2]])
    ledger.verify()
    # someone lowers a unit's total to get budget back
    _tamper(ledger_url, "UPDATE ledger_units SET eps_n = 0")
    with pytest.raises(DPTextError, match="ledger_units disagrees"):
        ledger.verify()
    _tamper(ledger_url, "UPDATE ledger_units SET eps_n = ?", (5 * 10**9,))
    ledger.verify()
    _tamper(ledger_url, "UPDATE ledger_units SET charges = 0")
    with pytest.raises(DPTextError, match="ledger_units disagrees"):
        ledger.verify()
    _tamper(ledger_url, "UPDATE ledger_units SET charges = 5")
    ledger.verify()
    _tamper(ledger_url, "UPDATE ledger_charges SET status = 'released' WHERE id = ?",
            (ds[4].charge_id,))
    with pytest.raises(DPTextError, match=f"charge {ds[4].charge_id} has status"):
        ledger.verify()


def test_charge_rows_hash_the_canonical_json():
    from dptext.ledger.batches import charge_line, fast_line

    row = (7, "ab12", "cd34", 5, 0, "ef56", "over budget: \"x\" \u2028\n")
    want = json.dumps(list(row), separators=(",", ":"), ensure_ascii=False) + "\n"
    assert charge_line(row) == fast_line(*row) == want
    assert charge_line(row[:-1] + ("",)) == fast_line(*row[:-1], "")


def test_entries_hash_the_canonical_json():
    values = (1, "charge", "r\u00e9l\"\\\n", "own\u2028er", "d\x00s", "u", "rec", 5, 0,
              '{"a":"\\"x"}', "2026", "ab")
    assert entry_text(values) == json.dumps(list(values), separators=(",", ":"),
                                            ensure_ascii=False)


def test_verify_reports_counts(ledger_url):
    ledger, rid = opened(ledger_url, budget=2.0)
    ds = ledger.reserve(rid, [(f"r{i}", f"u{i % 2}", pure(1.0)) for i in range(6)])
    ledger.commit(rid, [ds[0].charge_id])
    r = ledger.verify()
    assert (r.releases, r.units, r.charges, r.pending) == (1, 2, 4, 3)
    # budget, open, one batch (4 charges, 2 withheld), commit
    assert r.entries == entry_count(ledger) == 1 + 1 + 1 + 1
    assert (r.entries, r.head_hash) == ledger.head()


# ------------------------------------------------------------------------ lock / timeout
def test_a_lock_held_past_the_timeout_is_a_one_line_error(ledger_url):
    ledger, rid = opened(ledger_url)
    other = Ledger(ledger_url, timeout=0.3)
    holder = Ledger(ledger_url)
    holder._backend.begin_write()  # another process's writer holds the lock
    try:
        t = time.monotonic()
        with pytest.raises(DPTextError, match="locked by another process") as err:
            other.reserve(rid, [("a", "u", pure(1.0))])
        assert 0.25 < time.monotonic() - t < 5
        assert "\n" not in str(err.value)
    finally:
        holder._backend.rollback()
    assert other.reserve(rid, [("a", "u", pure(1.0))])[0].allowed  # lock gone: works
    assert ledger.spent("u").epsilon_basic == 1.0


# ------------------------------------------------------------------------------ training
def test_charge_training_charges_every_user_once(ledger_url):
    ledger = Ledger(ledger_url)
    ledger.set_budget("lab", "forum", 10.0, 1e-4)
    users = ["ann", "bob", "ann", "cy"]
    tc = charge_training(ledger, users, 4.0, 1e-5, owner="lab", dataset="forum",
                         mechanism="uedp", params={"z": 1.1}, release_key="run-1")
    assert tc.users == 3 and tc.committed
    again = charge_training(ledger, users, 4.0, 1e-5, owner="lab", dataset="forum",
                            mechanism="uedp", params={"z": 1.1}, release_key="run-1")
    assert again.charge_ids == tc.charge_ids  # a retried call charges nothing twice
    s = ledger.spent("ann", owner="lab", dataset="forum")
    assert (s.epsilon_basic, s.delta_basic, s.records, s.pending) == (4.0, 1e-5, 1, 0)
    charge_training(ledger, ["ann"], 4.0, 1e-5, owner="lab", dataset="forum")
    assert training_preflight(ledger, ["ann", "bob", "dee"], 4.0, 1e-5, owner="lab",
                              dataset="forum") == ["ann"]
    before = entry_count(ledger)
    with pytest.raises(DPTextError, match="nothing was charged"):
        charge_training(ledger, ["ann", "dee"], 4.0, 1e-5, owner="lab", dataset="forum")
    assert ledger.spent("dee").epsilon_basic == 0.0
    assert entry_count(ledger) == before + 1  # only the release's "open" entry
    with pytest.raises(DPTextError, match="names no users"):
        charge_training(ledger, [], 1.0, 0.0, owner="lab", dataset="forum")
    ledger.verify()


# ------------------------------------------------------------------------------- queries
def test_units_history_and_pending(ledger_url):
    ledger, rid = opened(ledger_url, budget=2.0)
    ds = ledger.reserve(rid, [("a", "ann", pure(1.0)), ("b", "ann", pure(1.0)),
                              ("c", "ann", pure(1.0)), ("d", "bob", pure(0.5))])
    ledger.commit(rid, [ds[0].charge_id])
    rows = ledger.units()
    assert [r.unit for r in rows] == [ledger.unit_hash("ann"), ledger.unit_hash("bob")]
    assert (rows[0].epsilon, rows[0].records, rows[0].pending, rows[0].withheld) == \
        (2.0, 1, 1, 1)
    hist = ledger.history("ann")
    assert [h["kind"] for h in hist] == ["charge", "charge", "withhold"]
    assert [h["status"] for h in hist] == ["released", "pending", "withheld"]
    assert hist[2]["reason"].startswith("over budget")
    assert ledger.pending(rid) == [ds[1].charge_id, ds[3].charge_id]
    ev = ledger.unit_events("ann")
    assert [(e.kind, e.epsilon, e.count) for e in ev] == [("pure", 1.0, 2)]


# ------------------------------------------------------------------------ SQLite page size
def test_new_sqlite_ledger_pages_and_an_older_page_size_still_works(tmp_path, monkeypatch):
    import sqlite3

    from dptext.ledger import backends

    def page_size(path):
        with sqlite3.connect(path) as c:
            size = c.execute("PRAGMA page_size").fetchone()[0]
        c.close()
        return size

    new = tmp_path / "new.sqlite"
    Ledger(new).close()
    assert page_size(new) == backends.PAGE_SIZE == 16384

    old = tmp_path / "old.sqlite"  # a ledger made with SQLite's default pages (as before)
    monkeypatch.setattr(backends, "PAGE_SIZE", 4096)
    ledger, rid = opened(old, budget=2.0)
    ledger.reserve(rid, [("r0", "alice", pure(1.0))])
    ledger.close()
    monkeypatch.undo()
    ledger = Ledger(old)
    rid = ledger.open_release(owner="clinic", dataset="notes", mechanism="custext", params={})
    decisions = ledger.reserve(rid, [(f"r{i}", "alice", pure(1.0)) for i in range(2)])
    assert [d.allowed for d in decisions] == [True, False]
    ledger.commit(rid, [decisions[0].charge_id])
    assert ledger.spent("alice").epsilon_basic == 2.0
    assert ledger.verify().charges == 2
    ledger.close()
    assert page_size(old) == 4096


def test_two_ledger_objects_never_lose_an_update(ledger_url):
    """Each object caches its unit totals and its releases' records; a write by the other one
    (another connection, as another process would) must make it read them again."""
    a, rid = opened(ledger_url, budget=10.0)
    b = Ledger(ledger_url)
    for i in range(6):  # alternate writers, 2 per unit each time
        x = (a, b)[i % 2]
        ds = x.reserve(rid, [(f"r{i}-{j}", "u", pure(1.0)) for j in range(2)])
        assert [d.allowed for d in ds] == [i < 5, i < 5]
        x.commit(rid, [d.charge_id for d in ds if d.allowed])
    # a record decided through one object is "already" for the other
    first = a.reserve(rid, [("r1-0", "u", pure(1.0))])[0]
    assert first.already and first.allowed
    assert b.spent("u").epsilon_basic == a.spent("u").epsilon_basic == 10.0
    b.verify()


def test_a_release_past_the_in_memory_index_is_read_again(ledger_url, monkeypatch):
    import dptext.ledger.writes as writes

    monkeypatch.setattr(writes, "_MAX_INDEXED", 3)
    ledger, rid = opened(ledger_url, budget=100.0)
    first = ledger.reserve(rid, [(f"r{i}", "u", pure(1.0)) for i in range(5)])
    assert rid not in ledger._indexes  # dropped: more than 3 records
    ledger.reserve(rid, [("s0", "u", pure(1.0))])
    again = ledger.reserve(rid, [("r2", "u", pure(1.0)), ("s0", "u", pure(1.0))])
    assert [d.already for d in again] == [True, True]
    assert again[0].charge_id == first[2].charge_id
    assert ledger.spent("u").epsilon_basic == 6.0
