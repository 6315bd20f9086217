"""What the faster charging path must keep: the same keyed hashes, the same decisions, charge
before release, errors surfacing in the driver, and ledgers of schema version 2 migrating to 3
(the pending charges indexed by id)."""

from __future__ import annotations

import gc
import hashlib
import hmac
import json
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field

import pytest
from ledger_backends import *  # noqa: F403 - the fixtures ledger_url, pg_server, pg_url

from dptext.accounting.events import PrivacyEvent
from dptext.corpus import charging
from dptext.errors import DPTextError
from dptext.ledger import Decision, Ledger, schema
from dptext.ledger.keys import Keyring

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

EV = [PrivacyEvent("pure", 1.0, count=1, mechanism="m", scope="per token")]


@pytest.mark.parametrize("secret", ["s" * 16, "k" * 64, "long" * 40, bytes(range(48))])
def test_record_hashes_are_hmac_sha256(secret):
    keyring = Keyring(secret)
    key = secret.encode() if isinstance(secret, str) else secret
    keys = ["in.jsonl#1", "é#2", "", "x" * 500]
    want = [hmac.new(key, b"record\x00rel\x00" + k.encode(), hashlib.sha256).hexdigest()[:32]
            for k in keys]
    assert keyring.records("rel", keys) == want == [keyring.record("rel", k) for k in keys]
    # unit ids: from the same pad states, equal to the one-shot HMAC
    units = ["author-1", "é", "x" * 500, "42"]
    want_units = [hmac.new(key, b"unit\x00" + u.encode(), hashlib.sha256).hexdigest()[:32]
                  for u in units]
    assert [keyring.unit(u) for u in units] == want_units
    assert [keyring.unit(u) for u in units] == want_units  # cached
    assert [keyring._mac(b"unit", u) for u in units] == want_units


def test_decisions_are_named_tuples_with_the_contract_fields(ledger_url):
    ledger = Ledger(ledger_url)
    ledger.set_budget("o", "d", 1.5)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    first, second = ledger.reserve(rid, [("a", "u", EV), ("b", "u", EV)])
    assert (first.allowed, first.reason, first.already) == (True, None, False)
    assert isinstance(first.charge_id, int)
    assert not second.allowed and second.charge_id is None and "over budget" in second.reason
    again = ledger.reserve(rid, [("b", "u", EV), ("a", "u", EV)])
    assert again == [second._replace(already=True), first._replace(already=True)]
    assert isinstance(again[0], Decision)


def test_reserve_in_one_call_decides_like_one_call_per_batch(ledger_url):
    """The engine groups batches into one reserve: same decisions, same totals."""
    events = [[PrivacyEvent("pure", 0.5 + (i % 3) * 0.25, count=1 + i % 2)] for i in range(60)]
    items = [(f"r{i}", f"u{i % 4}", events[i]) for i in range(60)]
    ledger = Ledger(ledger_url)
    out = []
    for dataset in ("per-batch", "grouped"):  # two scopes of one ledger
        ledger.set_budget("o", dataset, 9.0)
        rid = ledger.open_release(owner="o", dataset=dataset, mechanism="m", params={})
        if dataset == "grouped":
            got = ledger.reserve(rid, items)
        else:
            got = [d for s in range(0, 60, 7) for d in ledger.reserve(rid, items[s:s + 7])]
        out.append(([(d.allowed, d.reason and d.reason.replace(dataset, "D")) for d in got],
                    [ledger.spent(f"u{u}", owner="o", dataset=dataset, pld=False)
                     .epsilon_basic for u in range(4)]))
    ledger.verify()
    ledger.close()
    assert out[0] == out[1]
    assert 0 < sum(a for a, _ in out[0][0]) < 60  # some withheld, some not


def test_schema_2_ledger_migrates_to_3(ledger_url, monkeypatch):
    v2 = [m for m in schema.MIGRATIONS if m[0] <= 2]
    monkeypatch.setattr("dptext.ledger.store.MIGRATIONS", v2)
    monkeypatch.setattr("dptext.ledger.store.SCHEMA_VERSION", 2)
    ledger = Ledger(ledger_url)
    ledger.set_budget("o", "d", 10.0)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    decided = ledger.reserve(rid, [(f"r{i}", f"u{i % 2}", EV) for i in range(6)])
    ledger.commit(rid, [d.charge_id for d in decided[:2]])
    assert ledger._meta()["schema_version"] == "2"
    ledger.close()
    monkeypatch.undo()

    ledger = Ledger(ledger_url)
    assert ledger._meta()["schema_version"] == str(schema.SCHEMA_VERSION) == "3"
    b = ledger._backend
    if b.name == "sqlite":
        names = {r[0] for r in b.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    else:
        names = {r[0] for r in b.execute("SELECT indexname FROM pg_indexes")}
    assert "ledger_charges_pending_ids" in names and "ledger_charges_pending" not in names
    assert ledger.pending(rid) == sorted(d.charge_id for d in decided[2:])
    s = ledger.spent("u0", owner="o", dataset="d", pld=False)
    assert (s.records, s.pending, s.epsilon_basic) == (1, 2, 3.0)
    more = ledger.reserve(rid, [("r0", "u0", EV), ("r9", "u0", EV)])
    assert more[0].already and more[0].charge_id == decided[0].charge_id and more[1].allowed
    assert ledger.spent("u0", owner="o", dataset="d", pld=False).pending == 3
    assert [u.pending for u in ledger.units(owner="o")] == [3, 2]
    assert ledger.verify().pending == 5
    ledger.close()


# ------------------------------------------------------------------- the charging pipeline
@dataclass
class Out:
    """A batch result as the pipeline sees it."""

    batch: int
    items: list = field(default_factory=list)


class Session:
    """Records what was reserved (and when) and what the driver was handed."""

    def __init__(self, fail_at: int | None = None, delay: float = 0.0) -> None:
        self.reserved: set = set()
        self.calls: list[list] = []
        self.fail_at = fail_at
        self.delay = delay
        self.thread_names: set = set()

    def reserve(self, items):
        self.thread_names.add(threading.current_thread().name)
        self.calls.append([k for k, _, _ in items])
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise DPTextError("ledger is locked")
        time.sleep(self.delay)
        self.reserved.update(k for k, _, _ in items)
        return [Decision(k % 3 != 0, k, None if k % 3 else "budget", False)
                for k, _, _ in items]


def batches(n: int, size: int = 10):
    for b in range(n):
        yield Out(b, [(b * size + i, "u", EV) for i in range(size)])


def test_pipeline_releases_nothing_before_its_reserve_committed():
    session = Session(delay=0.01)
    seen = []
    # fixed groups of 3 batches (no growing while the writer commits: see the next test)
    for out, decisions in charging.charged(batches(20), session, group_records=30,
                                           max_group_records=30):
        keys = [k for k, _, _ in out.items]
        assert set(keys) <= session.reserved  # charge before release
        assert [d.charge_id for d in decisions] == keys  # its own decisions, in order
        assert [d.allowed for d in decisions] == [k % 3 != 0 for k in keys]
        seen.append(out.batch)
    assert seen == list(range(20))
    assert [len(c) for c in session.calls] == [30] * 6 + [20]  # grouped: 3 batches a call
    assert session.thread_names == {"dptext-ledger_0"}  # in the writer thread


@pytest.mark.parametrize("delay", [0.1])
def test_slow_commits_grow_the_groups_and_nothing_is_released_before_its_charge(delay):
    """While the writer is in a transaction (slow commits: a busy disk), the next group keeps
    gathering batches, up to max_group_records, instead of the driver waiting: fewer, larger
    transactions - and still every batch is handed on only after its records are reserved,
    in order, with its own decisions."""
    session = Session(delay=delay)
    made = []

    def fast():  # a batch every 2 ms: many batches come during one transaction
        for out in batches(150):
            made.append(out.batch)
            yield out
            time.sleep(0.002)

    seen = []
    for out, decisions in charging.charged(fast(), session, group_records=30,
                                           max_group_records=200, group_seconds=60):
        keys = [k for k, _, _ in out.items]
        assert set(keys) <= session.reserved  # charge before release
        assert [d.charge_id for d in decisions] == keys
        seen.append(out.batch)
    assert seen == list(range(150))
    sizes = [len(c) for c in session.calls]
    assert sum(sizes) == 1500 and sizes[0] == 30  # the first group: before any commit
    assert all(30 <= n <= 200 for n in sizes[:-1]) and sizes[-1] <= 200
    # groups that never grew would be 50 transactions of 30 records
    assert max(sizes) > 30 and len(sizes) < 50
    assert made == list(range(150))


def test_pipeline_raises_the_writer_threads_error_and_charges_nothing_after_it():
    session = Session(fail_at=2)
    got = []
    with pytest.raises(DPTextError, match="ledger is locked"):
        for out, _ in charging.charged(batches(20), session, group_records=30):
            got.append(out.batch)
    assert got == [0, 1, 2]  # the first group; nothing of the failed one or after it
    assert len(session.calls) == 2  # no group reserved after the failed one


def test_pipeline_stopped_early_waits_for_the_reserve_in_flight():
    session = Session(delay=0.2)
    stream = charging.charged(batches(20), session, group_records=10)
    next(stream)
    stream.close()  # e.g. the driver failed writing the shard
    done = len(session.reserved)
    time.sleep(0.3)
    assert len(session.reserved) == done  # nothing still running behind the driver's back
    assert not any(t.name.startswith("dptext-ledger") for t in threading.enumerate())


def test_pipeline_slow_producer_is_not_held_back():
    """A group that took GROUP_SECONDS to fill is yielded without waiting for the next."""
    session = Session()
    stamps = []

    def slow():
        for out in batches(3):
            stamps.append(("made", out.batch))
            yield out
            time.sleep(0.05)

    for out, _ in charging.charged(slow(), session, group_records=10**6, group_seconds=0.0):
        stamps.append(("handed", out.batch))
    assert stamps == [("made", 0), ("handed", 0), ("made", 1), ("handed", 1), ("made", 2),
                      ("handed", 2)]


def test_pipeline_reserves_one_group_while_the_next_is_made():
    session = Session()
    stamps = []

    def fast():
        for out in batches(3):
            stamps.append(("made", out.batch))
            yield out

    # fixed groups (max_group_records = group_records): whether the writer has finished a
    # group when the next batch comes is a race, and a busy writer would let a group grow
    for out, _ in charging.charged(fast(), session, group_records=10, group_seconds=60,
                                   max_group_records=10):
        stamps.append(("handed", out.batch))
    assert stamps == [("made", 0), ("made", 1), ("handed", 0), ("made", 2), ("handed", 1),
                      ("handed", 2)]


def test_pipeline_without_a_ledger_passes_results_through():
    outs = list(batches(3))
    before = gc.get_threshold()
    for _ in charging.charged(iter(outs), None):
        assert gc.get_threshold() == before  # nothing in flight: the collector as it was
    assert list(charging.charged(iter(outs), None)) == [(o, None) for o in outs]


@pytest.mark.parametrize("end", ["exhausted", "closed early", "writer failed"])
def test_full_collections_are_rarer_only_while_batches_are_in_flight(end):
    """While charged() runs, the collector's third threshold is FULL_COLLECTION_THRESHOLD
    (the batches in flight would make every tenth middle collection a full one); however the
    pipeline ends, the thresholds found are restored."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # CPython's defaults
        session = Session(fail_at=2 if end == "writer failed" else None)
        stream = charging.charged(batches(6), session, group_records=10)
        seen = []
        with pytest.raises(DPTextError) if end == "writer failed" else nullcontext():
            for _ in stream:
                seen.append(gc.get_threshold())
                if end == "closed early":
                    stream.close()
                    break
        assert seen and set(seen) == {(700, 10, charging.FULL_COLLECTION_THRESHOLD)}
        assert gc.get_threshold() == (700, 10, 10)
        # thresholds someone set meanwhile are theirs: left as they are
        stream = charging.charged(batches(3), Session(), group_records=10)
        next(stream)
        gc.set_threshold(500, 5, 5)
        list(stream)
        assert gc.get_threshold() == (500, 5, 5)
        # a higher third threshold, or the collector's thresholds off, are not touched
        for found in ((700, 10, 1000), (0, 10, 10)):
            gc.set_threshold(*found)
            assert {gc.get_threshold() for _ in charging.charged(batches(3), Session(),
                                                                 group_records=10)} == {found}
            assert gc.get_threshold() == found
    finally:
        gc.set_threshold(*before)


@pytest.fixture(scope="module")
def mech(tmp_path_factory):
    import numpy as np

    from dptext.embeddings import EmbeddingSpace
    from dptext.mechanisms.registry import mechanism

    root = tmp_path_factory.mktemp("speed-cache")
    with pytest.MonkeyPatch.context() as mp:  # this module's own cache, then restored
        mp.setenv("DPTEXT_CACHE", str(root))
        words = ["alice", "bob", "met", "in", "paris"] + [f"w{i}" for i in range(45)]
        space = EmbeddingSpace(words, np.random.default_rng(7).standard_normal((50, 8)),
                               name="tiny-speed")
        space.geometry(16)
        yield mechanism("custext", epsilon=1.0, k=5, space=space).fit()


def test_engine_output_is_the_same_grouped_or_not(mech, tmp_path, monkeypatch):
    """A real ledger that withholds records: grouped (default) and one reserve per batch give
    the same output bytes, rejects and unit totals, and every charge is released."""
    from dptext.corpus import CorpusJob, run

    words = ["alice", "bob", "met", "in", "paris"]
    src = tmp_path / "in.jsonl"
    with open(src, "w") as f:
        for i in range(300):
            f.write(json.dumps({"text": " ".join(words[: 1 + i % 5]),
                                "user": f"u{i % 7}"}) + "\n")
    results = []
    for group in (1, charging.GROUP_RECORDS):
        monkeypatch.setattr(charging, "GROUP_RECORDS", group)
        out = tmp_path / f"o{group}.jsonl"
        ledger = Ledger(tmp_path / f"l{group}.sqlite")
        run(CorpusJob(mech, str(src), str(out), user_field="user", ledger=ledger, owner="o",
                      dataset="d", budget=60.0, batch_size=16, shard_records=50, seed=3))
        rejects = (tmp_path / f"o{group}.jsonl.rejects.jsonl").read_text()
        results.append((out.read_bytes(), rejects,
                        [ledger.spent(f"u{u}", pld=False).epsilon_basic for u in range(7)]))
        assert ledger.pending() == []
        ledger.verify()
        ledger.close()
    assert results[0] == results[1]
    assert "withheld by the ledger" in results[0][1]
