"""A resumed ``--consistent unit`` job continues with the book of shared draws its committed
shards paid for (corpus/draws.py): a person is charged once for a draw released before the
interruption, so the resumed job spends, writes and reports exactly what an uninterrupted run
of the same seed does. The job is killed with SIGKILL (nothing cleaned up) at the moments that
matter: inside a shard (its records reserved, not committed), after a shard's manifest write
and before its ledger commit, and after the ledger commit whose note in the manifest waits for
the next write (the resume is one shard behind and commits that shard's charges again)."""

from __future__ import annotations

import json
import os
import re
import signal

import numpy as np
import pytest

from dptext import EmbeddingSpace, mechanism
from dptext.corpus import CorpusJob, run
from dptext.detect.entities import Entity, EntityDetector
from dptext.errors import DPTextError
from dptext.targeted import TargetedMechanism

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

NAMES = ["Anna", "John", "Bob", "Kim"]
WORDS = ["anna", "john", "bob", "kim", "met", "today", "lee", "ash", "rose", "mia", "tom",
         "eve", "max", "zoe"] + [f"w{i}" for i in range(24)]
PEOPLE = [f"u{i}" for i in range(6)]
SECRET = "a test secret, 16+ bytes"


class Names(EntityDetector):
    """PERSON = one of :data:`NAMES` (no models to load)."""

    def detect(self, texts):
        return [[Entity(m.group().lower(), "PERSON", m.start(), m.end())
                 for m in re.finditer(r"\b(Anna|John|Bob|Kim)\b", t)] for t in texts]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    from dptext.corpus import charging

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    # groups of one shard: a killed job has reserved only a shard or two ahead, so the
    # resumed job reserves most of its records afresh (else the ledger answers "already")
    monkeypatch.setattr(charging, "GROUP_RECORDS", 8)
    monkeypatch.setattr(charging, "MAX_GROUP_RECORDS", 8)


@pytest.fixture
def src(tmp_path):
    """48 records of 6 people; each names two of NAMES (a person's names recur in records
    of several shards)."""
    space = tmp_path / "space.npz"
    EmbeddingSpace(WORDS, np.random.default_rng(0).standard_normal((len(WORDS), 6)),
                   name="drawbook-tiny").save(space)
    rng = np.random.default_rng(0)
    path = tmp_path / "in.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(48):
            a, b = rng.choice(len(NAMES), 2, replace=False)
            f.write(json.dumps({"pid": PEOPLE[rng.integers(6)], "i": i,
                                "text": f"{NAMES[a]} met {NAMES[b]} today."}) + "\n")
    return path, space


def _job(src, out, ledger_path=None, budget=None, **kw):
    from dptext.ledger import Ledger

    path, space = src
    inner = mechanism("custext", epsilon=2, k=5, space=EmbeddingSpace.load(space))
    m = TargetedMechanism(inner, entities=["PERSON"], detector=Names(), consistent="unit")
    ledger = None if ledger_path is None else Ledger(ledger_path, secret=SECRET)
    extra = {} if ledger is None else {"ledger": ledger, "owner": "clinic",
                                       "dataset": "notes", "budget": budget}
    return CorpusJob(m, str(path), str(out), user_field="pid", seed=5, batch_size=4,
                     shard_records=8, **extra, **kw)


def _killed(make_job, where: str, at: int) -> None:
    """Run the job in a child process that kills itself with SIGKILL at shard ``at``:
    ``inside`` (before the shard is committed), ``before_ledger`` (its manifest written, its
    charges not committed) or ``after_commit`` (committed; the manifest's ledger_committed
    note not written)."""
    pid = os.fork()
    if pid == 0:
        try:
            from dptext.corpus import budget, driver

            calls = {"shard": 0, "ledger": 0}
            commit_shard, ledger_commit = driver.Driver._commit_shard, budget.LedgerSession.commit

            def shard(self, wd, s):
                calls["shard"] += 1
                if where == "inside" and calls["shard"] == at:
                    os.kill(os.getpid(), signal.SIGKILL)
                commit_shard(self, wd, s)
                if where == "after_commit" and calls["shard"] == at:
                    os.kill(os.getpid(), signal.SIGKILL)

            def ledger(self, ids):
                calls["ledger"] += 1
                if where == "before_ledger" and calls["ledger"] == at:
                    os.kill(os.getpid(), signal.SIGKILL)
                ledger_commit(self, ids)

            driver.Driver._commit_shard = shard
            budget.LedgerSession.commit = ledger
            run(make_job())
        finally:
            os._exit(0)  # not killed: the test fails below
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _summary(out):
    summary = json.loads(out.with_name(out.name + ".report.json").read_text())
    summary.pop("ledger_release", None)  # each ledger names its own release
    return summary


def _spent(ledger_path):
    from dptext.ledger import Ledger

    ledger = Ledger(ledger_path, secret=SECRET)
    assert ledger.pending() == []
    return {p: ledger.spent(p, owner="clinic", dataset="notes").epsilon_basic for p in PEOPLE}


@pytest.mark.parametrize("where", ["inside", "before_ledger", "after_commit"])
@pytest.mark.parametrize("budget", [None, 6.0])
def test_a_resumed_job_charges_each_draw_once_like_an_uninterrupted_one(src, tmp_path, where,
                                                                         budget):
    ref = tmp_path / "ref.jsonl"
    run(_job(src, ref, tmp_path / "ref.sqlite", budget))
    out = tmp_path / "out.jsonl"
    at = 3 if budget is None else 2  # withheld records make later shards reach further
    _killed(lambda: _job(src, out, tmp_path / "l.sqlite", budget), where, at)
    manifest = json.loads((tmp_path / "out.jsonl.partial" / "manifest.json").read_text())
    assert len(manifest["shards"]) == (at - 1 if where == "inside" else at)
    result = run(_job(src, out, tmp_path / "l.sqlite", budget))
    assert 0 < result.resumed_records < 48
    spent = _spent(tmp_path / "l.sqlite")
    assert spent == _spent(tmp_path / "ref.sqlite")
    assert out.read_bytes() == ref.read_bytes()
    assert _summary(out) == _summary(ref)
    # each person pays 2 (custext's epsilon) once per distinct name in their released records
    rows = {r["i"]: r for r in map(json.loads, src[0].read_text().splitlines())}
    shown = {(rows[r["i"]]["pid"], n) for r in map(json.loads, out.read_text().splitlines())
             for n in NAMES if n in rows[r["i"]]["text"]}
    assert sum(spent.values()) == pytest.approx(2.0 * len(shown))
    if budget is not None:
        assert max(spent.values()) <= budget + 1e-9
        assert _summary(out)["records_withheld"] > 0


@pytest.mark.parametrize("where", ["inside", "after_commit"])
def test_without_a_ledger_the_resumed_report_counts_each_draw_once(src, tmp_path, where):
    ref = tmp_path / "ref.jsonl"
    run(_job(src, ref))
    out = tmp_path / "out.jsonl"
    _killed(lambda: _job(src, out), where, 3)
    result = run(_job(src, out))
    assert 0 < result.resumed_records < 48
    assert out.read_bytes() == ref.read_bytes()
    assert _summary(out) == _summary(ref)


def _interrupted(src, tmp_path):
    out = tmp_path / "out.jsonl"
    _killed(lambda: _job(src, out, tmp_path / "l.sqlite"), "after_commit", 3)
    workdir = tmp_path / "out.jsonl.partial"
    manifest = json.loads((workdir / "manifest.json").read_text())
    books = [s["draws"] for s in manifest["shards"] if s.get("draws")]
    assert books  # the committed shards paid for draws
    return out, workdir / books[-1]


@pytest.mark.parametrize("damage", ["truncate", "flip", "remove"])
def test_a_damaged_book_of_draws_stops_the_resume(src, tmp_path, damage):
    """A committed shard's book that does not match the manifest is never read as fewer
    draws (which would release a draw unpaid): the resume stops and says what to do."""
    out, book = _interrupted(src, tmp_path)
    data = book.read_bytes()
    assert len(data) % 16 == 0 and data
    if damage == "truncate":
        book.write_bytes(data[:-16])
    elif damage == "flip":
        book.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    else:
        book.unlink()
    with pytest.raises(DPTextError, match="draws"):
        run(_job(src, out, tmp_path / "l.sqlite"))
    assert (tmp_path / "out.jsonl.partial" / "manifest.json").is_file()  # kept
