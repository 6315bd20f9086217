"""The engine with a privacy ledger: an in-memory fake that implements LEDGER_API.md (until the
real dptext.ledger is merged). Budgets withhold records, charges are reserved before a batch is
written and committed only once its shard is in the manifest, and a resumed job never charges
a record twice."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from dptext.corpus import CorpusJob, run
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.registry import mechanism
from dptext.text import split_words

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["alice", "bob", "met", "in", "paris", "the", "and", "city", "river", "dog"]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    charge_id: int | None
    reason: str | None
    already: bool


class FakeLedger:
    """The contract of LEDGER_API.md, in memory; ``workdir`` lets commit() check that the
    charges it releases are in a committed shard."""

    def __init__(self, workdir: Path | None = None) -> None:
        self.budgets: dict = {}
        self.releases: dict = {}
        self.charges: dict[int, dict] = {}
        self.decided: dict = {}
        self.workdir = workdir
        self.fail_commit_at: int | None = None
        self.commits = 0

    def set_budget(self, owner, dataset, epsilon, delta=0.0):
        self.budgets[(owner, dataset)] = (epsilon, delta)

    def open_release(self, *, owner, dataset, mechanism, params, release_key=None,
                     exclusive=False):
        key = release_key or f"r{len(self.releases)}"
        if exclusive and key in self.releases:
            from dptext.ledger import ReleaseExists

            raise ReleaseExists("release key already used", self.releases[key]["id"], "")
        return self.releases.setdefault(key, {"id": f"rel-{len(self.releases)}",
                                              "owner": owner, "dataset": dataset})["id"]

    def _release(self, rid):
        return next(r for r in self.releases.values() if r["id"] == rid)

    def spent(self, unit, owner, dataset):
        return sum(c["epsilon"] for c in self.charges.values() if c["unit"] == unit
                   and c["owner"] == owner and c["dataset"] == dataset)

    def reserve(self, release_id, items):
        rel = self._release(release_id)
        budget = self.budgets.get((rel["owner"], rel["dataset"]), (float("inf"), 0))[0]
        out = []
        for record_key, unit, events in items:
            if (release_id, record_key) in self.decided:
                d = self.decided[(release_id, record_key)]
                out.append(Decision(d.allowed, d.charge_id, d.reason, True))
                continue
            eps = sum(e.epsilon * e.count for e in events)
            if self.spent(unit, rel["owner"], rel["dataset"]) + eps > budget + 1e-9:
                d = Decision(False, None, f"unit {unit} would exceed its budget {budget:g}",
                             False)
            else:
                cid = len(self.charges) + 1
                self.charges[cid] = {"unit": unit, "epsilon": eps, "state": "pending",
                                     "record": record_key, "owner": rel["owner"],
                                     "dataset": rel["dataset"]}
                d = Decision(True, cid, None, False)
            self.decided[(release_id, record_key)] = d
            out.append(d)
        return out

    def commit(self, release_id, charge_ids):
        self.commits += 1
        if self.fail_commit_at == self.commits:
            raise KeyboardInterrupt  # killed between the manifest and the ledger commit
        if self.workdir is not None:
            manifest = json.loads((self.workdir / "manifest.json").read_text())
            durable = set()
            for shard in manifest["shards"]:
                if shard["charges"]:
                    durable.update(json.loads((self.workdir / shard["charges"]).read_text()))
            assert set(charge_ids) <= durable, "committed before its shard was durable"
        for cid in charge_ids:
            self.charges[cid]["state"] = "released"


@pytest.fixture(scope="module")
def mech(tmp_path_factory):
    root = tmp_path_factory.mktemp("ledger-cache")
    with pytest.MonkeyPatch.context() as mp:  # this module's own cache, then restored
        mp.setenv("DPTEXT_CACHE", str(root))
        rng = np.random.default_rng(7)
        words = WORDS + [f"w{i}" for i in range(190)]
        space = EmbeddingSpace(words, rng.standard_normal((200, 8)), name="tiny")
        space.geometry(16)
        yield mechanism("custext", epsilon=1.0, k=5, space=space).fit()


def write(path: Path, n: int, users: int = 5) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"text": " ".join(WORDS[j % 10] for j in range(i % 4 + 1)),
                                "user": f"u{i % users}"}) + "\n")
    return path


def job(m, src, out, ledger, **kw):
    kw.setdefault("seed", 1)
    return CorpusJob(m, str(src), str(out), user_field="user", ledger=ledger, owner="clinic",
                     dataset="notes", **kw)


def test_budget_withholds_records_into_rejects(mech, tmp_path):
    src = write(tmp_path / "in.jsonl", 100)
    out = tmp_path / "o.jsonl"
    ledger = FakeLedger(tmp_path / "o.jsonl.partial")
    result = run(job(mech, src, out, ledger, budget=12.0, batch_size=8, shard_records=16))
    # record i costs (i % 4 + 1) epsilon 1 tokens; each unit (i % 5) may spend 12
    expected, spent = [], {}
    for i in range(100):
        u, cost = i % 5, i % 4 + 1
        if spent.get(u, 0) + cost <= 12:
            spent[u] = spent.get(u, 0) + cost
            expected.append(i)
    lines = out.read_text().splitlines()
    assert len(lines) == len(expected) < 100
    s = result.summary
    assert s["records"] == len(expected) and s["records_withheld"] == 100 - len(expected)
    rejects = [json.loads(x) for x in (tmp_path / "o.jsonl.rejects.jsonl").read_text()
               .splitlines()]
    assert [r["record"] - 1 for r in rejects] == [i for i in range(100) if i not in expected]
    assert all("withheld by the ledger" in r["reason"] for r in rejects)
    assert all(c["state"] == "released" for c in ledger.charges.values())
    assert len(ledger.charges) == len(expected)
    assert s["units"]["units"] == 5 and s["units"]["epsilon_max"] == max(spent.values())
    assert s["ledger_release"] == "rel-0"


def test_resume_never_charges_twice(mech, tmp_path):
    src = write(tmp_path / "in.jsonl", 200)
    ref_ledger = FakeLedger()
    run(job(mech, src, tmp_path / "ref.jsonl", ref_ledger, batch_size=10, shard_records=40))
    out = tmp_path / "o.jsonl"
    ledger = FakeLedger(tmp_path / "o.jsonl.partial")
    ledger.fail_commit_at = 2  # dies after shard 1 is durable, before its charges commit
    with pytest.raises(KeyboardInterrupt):
        run(job(mech, src, out, ledger, batch_size=10, shard_records=40))
    pending = {c["record"] for c in ledger.charges.values() if c["state"] == "pending"}
    # shard 1's records: charged, never released (and the records reserved ahead of the
    # writer, dptext.corpus.charging: pending too, never in a shard)
    assert {f"in.jsonl#{i}" for i in range(41, 81)} <= pending
    assert sum(c["state"] == "released" for c in ledger.charges.values()) == 40

    from dptext.corpus import driver  # second interruption: mid-shard, after reserve

    original = driver.Driver._commit_shard
    driver.Driver._commit_shard = lambda self, wd, shard: (_ for _ in ()).throw(
        KeyboardInterrupt())
    ledger.fail_commit_at = None
    try:
        with pytest.raises(KeyboardInterrupt):
            run(job(mech, src, out, ledger, batch_size=10, shard_records=40))
    finally:
        driver.Driver._commit_shard = original
    assert sum(c["state"] == "released" for c in ledger.charges.values()) == 80
    result = run(job(mech, src, out, ledger, batch_size=10, shard_records=40))
    assert out.read_bytes() == (tmp_path / "ref.jsonl").read_bytes()
    keys = [c["record"] for c in ledger.charges.values()]
    assert len(keys) == len(set(keys)) == 200  # one charge per record, ever
    assert all(c["state"] == "released" for c in ledger.charges.values())
    assert [c["epsilon"] for c in ledger.charges.values()] == \
        [c["epsilon"] for c in ref_ledger.charges.values()]
    assert result.summary["records"] == 200 and len(ledger.releases) == 1


def test_ledger_needs_owner_and_dataset(mech, tmp_path):
    src = write(tmp_path / "in.jsonl", 3)
    with pytest.raises(DPTextError, match="owner= and dataset="):
        run(CorpusJob(mech, str(src), str(tmp_path / "o.jsonl"), ledger=FakeLedger()))
    with pytest.raises(DPTextError, match="budget= needs ledger="):
        run(CorpusJob(mech, str(src), str(tmp_path / "o.jsonl"), budget=1.0))


def test_without_user_field_each_record_is_its_own_unit(mech, tmp_path):
    src = write(tmp_path / "in.jsonl", 20)
    ledger = FakeLedger()
    result = run(CorpusJob(mech, str(src), str(tmp_path / "o.jsonl"), ledger=ledger,
                           owner="o", dataset="d", budget=2.0, seed=1))
    # records with 3 or 4 tokens cost more than 2: withheld
    assert result.summary["records"] == 10 and result.summary["records_withheld"] == 10
    assert result.summary["units"]["units"] == 10
    assert {len(split_words(json.loads(x)["text"])[1::2]) for x in
            (tmp_path / "o.jsonl").read_text().splitlines()} == {1, 2}


# ------------------------------------------------------------------ the real ledger
def _stopped_after_the_second_shard(make) -> None:
    """Run ``make()`` and stop it (KeyboardInterrupt) right after its second shard's ledger
    commit, before the manifest notes that commit."""
    from dptext.corpus import driver

    original, calls = driver.Driver._commit_shard, {"n": 0}

    def commit(self, wd, shard):
        original(self, wd, shard)
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    driver.Driver._commit_shard = commit
    try:
        with pytest.raises(KeyboardInterrupt):
            make()
    finally:
        driver.Driver._commit_shard = original


def test_real_ledger_withholds_and_a_resumed_job_charges_each_record_once(mech, tmp_path):
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    src = write(tmp_path / "in.jsonl", 100)
    out = tmp_path / "o.jsonl"
    make = lambda: run(job(mech, src, out, ledger, budget=12.0, batch_size=8,  # noqa: E731
                           shard_records=16))
    _stopped_after_the_second_shard(make)
    result = make()
    expected, spent = 0, {}
    for i in range(100):
        u, cost = i % 5, i % 4 + 1
        if spent.get(u, 0) + cost <= 12:
            spent[u] = spent.get(u, 0) + cost
            expected += 1
    assert result.summary["records"] == expected == len(out.read_text().splitlines())
    assert result.summary["records_withheld"] == 100 - expected
    for u, eps in spent.items():
        s = ledger.spent(f"u{u}", owner="clinic", dataset="notes", pld=False)
        assert s.epsilon_basic == pytest.approx(eps) and s.pending == 0
    assert ledger.pending() == []
    ledger.verify()


def test_a_shards_commit_is_noted_with_the_next_manifest_and_a_resume_commits_it_again(
        mech, tmp_path):
    """The ledger commits each shard's charges once the shard is durable; the manifest notes
    it (``ledger_committed``) with its next write, not with a write of its own. A job stopped
    in between leaves a manifest one shard behind the ledger: the resume commits that shard's
    charges again, which changes nothing (no second commit entry), and finishes with every
    charge released exactly once."""
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    src = write(tmp_path / "in.jsonl", 64)
    out = tmp_path / "o.jsonl"
    make = lambda: run(job(mech, src, out, ledger, batch_size=8,  # noqa: E731
                           shard_records=16))
    _stopped_after_the_second_shard(make)
    manifest = json.loads((tmp_path / "o.jsonl.partial" / "manifest.json").read_text())
    assert len(manifest["shards"]) == 2 and manifest["ledger_committed"] == 1
    commits = lambda: [e for e in ledger.entries() if e["kind"] == "commit"]  # noqa: E731
    released = lambda: sorted(i for e in commits()  # noqa: E731
                              for lo, hi in json.loads(e["body"])["charges"]
                              for i in range(lo, hi + 1))
    # both shards' charges released (later records may be reserved ahead: pending)
    assert len(commits()) == 2 and len(released()) == 32
    assert not set(released()) & set(ledger.pending())
    result = make()
    assert result.summary["records"] == 64 == len(out.read_text().splitlines())
    # 64 records in shards of 16: four commit entries, the resumed commit added none
    assert len(commits()) == 4
    assert len(released()) == len(set(released())) == 64
    assert ledger.pending() == []
    ledger.verify()


def test_two_workers_withhold_the_same_records_as_one(mech, tmp_path):
    """The driver drops withheld records from the bytes a worker process sent (per-record
    offsets) and reports only the released ones: the same files as inline."""
    from dptext.ledger import Ledger

    src = write(tmp_path / "in.jsonl", 100)
    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"o{workers}.jsonl"
        ledger = Ledger(tmp_path / f"ledger{workers}.sqlite")
        result = run(job(mech, src, out, ledger, budget=12.0, batch_size=8, shard_records=16,
                         seed=3, workers=workers))
        assert 0 < result.summary["records_withheld"] < 100
        outs[workers] = [p.read_bytes() for p in
                         (out, tmp_path / f"o{workers}.jsonl.rejects.jsonl")]
        outs[workers].append(json.dumps({k: v for k, v in result.summary.items()
                                         if k != "ledger_release"}, sort_keys=True))
    assert outs[1] == outs[2]


# ------------------------------------------------------- reruns (issue 32 item 1)
def test_a_rerun_after_completion_is_a_new_release_charged_again(mech, tmp_path):
    """Before: the same command reopened the completed release (the key was the settings,
    inputs and output path), every record was 'already decided', nothing was charged and
    fresh noise was released: 3 runs, 3 different outputs, the ledger saying one."""
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    src, out = write(tmp_path / "in.jsonl", 20), tmp_path / "o.jsonl"
    outputs = []
    for _ in range(3):
        run(job(mech, src, out, ledger, seed=None, batch_size=8, shard_records=8))
        outputs.append(out.read_text())
    assert len(set(outputs)) == 3  # fresh randomness each time ...
    assert len(ledger.releases()) == 3  # ... each its own release
    one = sum((i % 4 + 1) * 1.0 for i in range(20) if i % 5 == 0)  # u0: 4 records
    assert ledger.spent("u0", owner="clinic", dataset="notes", pld=False).epsilon_basic == \
        pytest.approx(3 * one)  # ... charged three times
    assert ledger.pending() == []
    ledger.verify()


def test_once_refuses_a_job_released_before(mech, tmp_path):
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    src, out = write(tmp_path / "in.jsonl", 20), tmp_path / "o.jsonl"
    run(job(mech, src, out, ledger, once=True))
    first = out.read_bytes()
    before = ledger.spent("u0", owner="clinic", dataset="notes", pld=False).epsilon_basic
    # the same job again, or to another output path: refused, nothing charged or written
    for target in (out, tmp_path / "elsewhere.jsonl"):
        with pytest.raises(DPTextError, match="--once: this job .* was released before"):
            run(job(mech, src, target, ledger, once=True))
    assert out.read_bytes() == first and not (tmp_path / "elsewhere.jsonl").exists()
    assert ledger.spent("u0", owner="clinic", dataset="notes",
                        pld=False).epsilon_basic == before
    assert len(ledger.releases()) == 1
    with pytest.raises(DPTextError, match="once= needs ledger="):
        run(job(mech, src, out, None, once=True))


def test_a_seeded_identical_rerun_is_charged_too_whatever_its_output_path(mech, tmp_path):
    """The same seed gives the same bytes (nothing new is released), but the ledger cannot
    tell a copy kept from a copy lost: charged again, also to another output path."""
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    src = write(tmp_path / "in.jsonl", 20)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run(job(mech, src, a, ledger, seed=5))
    once = ledger.spent("u1", owner="clinic", dataset="notes", pld=False).epsilon_basic
    run(job(mech, src, a, ledger, seed=5))
    bytes_a = a.read_bytes()
    run(job(mech, src, b, ledger, seed=5))
    assert b.read_bytes() == bytes_a
    assert ledger.spent("u1", owner="clinic", dataset="notes",
                        pld=False).epsilon_basic == pytest.approx(3 * once)


# ------------------------------------------------ pending charges (issue 32 item 6)
def _killed_before_its_first_shard(mech, src, out, ledger, monkeypatch):
    """A run killed (as by kill -9: nothing cleaned up) after its first reserve, before its
    first shard is committed."""
    from dptext.corpus import driver

    def killed(self, wd, shard):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(driver.Driver, "_commit_shard", killed)
        with pytest.raises(KeyboardInterrupt):
            run(job(mech, src, out, ledger, batch_size=8, shard_records=8))


def test_a_run_killed_before_its_first_shard_is_continued_not_orphaned(mech, tmp_path,
                                                                      monkeypatch):
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    src, out = write(tmp_path / "in.jsonl", 20), tmp_path / "o.jsonl"
    _killed_before_its_first_shard(mech, src, out, ledger, monkeypatch)
    assert ledger.pending() and len(ledger.releases()) == 1
    run(job(mech, src, out, ledger, batch_size=8, shard_records=8))
    assert len(ledger.releases()) == 1 and ledger.pending() == []  # the same release, done
    one = sum((i % 4 + 1) * 1.0 for i in range(20) if i % 5 == 0)
    assert ledger.spent("u0", owner="clinic", dataset="notes",
                        pld=False).epsilon_basic == pytest.approx(one)
    ledger.verify()


def test_ledger_pending_lists_and_void_clears_what_provably_never_left(mech, tmp_path,
                                                                      monkeypatch, capsys):
    from dptext.cli import main
    from dptext.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path)
    src, out = write(tmp_path / "in.jsonl", 20), tmp_path / "o.jsonl"
    _killed_before_its_first_shard(mech, src, out, ledger, monkeypatch)
    pending = ledger.pending()
    before = ledger.spent("u0", owner="clinic", dataset="notes", pld=False)
    assert before.pending > 0
    capsys.readouterr()
    assert main(["ledger", "pending", "--ledger", str(path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 1 and rows[0]["count"] == len(pending)
    assert rows[0]["owner"] == "clinic" and rows[0]["age_seconds"] >= 0
    release = rows[0]["release_id"]
    workdir = tmp_path / "o.jsonl.partial"
    assert (workdir / "release.json").is_file()
    # evidence from another job's directory is refused; a reason is required
    other = tmp_path / "other.partial"
    other.mkdir()
    (other / "release.json").write_text(json.dumps({"release_key": "x", "job_key": "y"}))
    assert main(["ledger", "void", release, "--ledger", str(path), "--job-dir", str(other),
                 "--reason", "killed"]) == 2
    assert "not the work directory of release" in capsys.readouterr().err
    assert main(["ledger", "void", release, "--ledger", str(path), "--job-dir",
                 str(workdir), "--reason", "server killed; job abandoned"]) == 0
    said = capsys.readouterr().out
    assert f"voided {len(pending)} pending charges" in said and "removed" in said
    ledger = Ledger(path)
    assert ledger.pending() == [] and not workdir.exists()
    after = ledger.spent("u0", owner="clinic", dataset="notes", pld=False)
    assert after.pending == 0 and after.epsilon_basic == pytest.approx(
        before.epsilon_basic - before.epsilon_pending)
    entry = [e for e in ledger.entries() if e["kind"] == "void"]
    assert len(entry) == 1 and "job abandoned" in entry[0]["body"]
    ledger.verify()
    # a voided record is never released later: withheld in its release, its commit refused
    rid, ids = release, pending
    with pytest.raises(DPTextError, match="voided"):
        ledger.commit(rid, ids[:1])
    # a rerun is a new release, every record charged again and written
    run(job(mech, src, out, ledger, batch_size=8, shard_records=8))
    assert len(out.read_text().splitlines()) == 20 and ledger.pending() == []
    ledger.verify()


def test_void_refuses_released_charges_and_a_reason_is_kept(tmp_path):
    from dptext.accounting.events import PrivacyEvent
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "l.sqlite")
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={})
    ev = [PrivacyEvent("pure", 1.0)]
    d = ledger.reserve(rid, [("r1", "ann", ev), ("r2", "ann", ev)])
    ledger.commit(rid, [d[0].charge_id])
    with pytest.raises(DPTextError, match="not pending"):
        ledger.void(rid, [d[0].charge_id, d[1].charge_id], reason="x")
    with pytest.raises(DPTextError, match="reason"):
        ledger.void(rid, [d[1].charge_id], reason=" ")
    assert ledger.void(rid, [d[1].charge_id], reason="never sent", by="op") == 1
    assert ledger.spent("ann", owner="o", dataset="d", pld=False).epsilon_basic == 1.0
    again = ledger.reserve(rid, [("r2", "ann", ev)])[0]
    assert not again.allowed and "voided" in again.reason
    ledger.verify()
