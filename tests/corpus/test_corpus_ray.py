"""``--engine ray`` (dptext.corpus.executors.ray) on one local Ray instance with 2 CPUs: the
inline bytes with multi-batch calls and more actors than CPUs, actors whose environment is not
the driver's replaced by ones with a runtime_env, shared tables that are not the driver's
refused, a bad record failing the job as inline, and a killed actor (or process worker)
keeping the committed shards for the next run.

Slow by nature (about 25 s here): a local Ray takes 5-15 s to start on 2 loaded cores; the
module starts one and stops it at the end (the engine test in test_corpus.py reuses it when it
runs first)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from corpus_jobs import job, mech, write_jsonl  # noqa: F401  (mech: the module's fixture)

from dptext.corpus import ResumableError, driver, run
from dptext.corpus.executors import ProcessExecutor
from dptext.corpus.executors import ray as rx
from dptext.corpus.ranges import scan
from dptext.corpus.shared import export
from dptext.corpus.sources import expand
from dptext.corpus.work import BatchTask, JobLayout, Worker
from dptext.errors import DPTextError

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'dptext[ray]')")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)  # never a cluster of the machine's
        mp.setenv("RAY_AUTH_MODE", "disabled")
        started = not ray.is_initialized()
        rx.ray_init(2)
        yield
        if started:
            ray.shutdown()


@pytest.fixture
def batches(mech, tmp_path):  # noqa: F811
    """(mechanism exported, layout, tasks, inline results) of 1,500 records in 30 batches."""
    src = write_jsonl(tmp_path / "in.jsonl", 1500, seed=5)
    layout = JobLayout(expand(str(src)), ["text"], "jsonl", "jsonl", 3, False, 1 << 20)
    tasks = [BatchTask(i, 0, range=r) for i, r in enumerate(scan(src, "jsonl", 50))]
    w = Worker(mech, layout)
    inline = [w.run(t) for t in tasks]
    w.close()
    return export(mech, tmp_path / "shared"), layout, tasks, inline


def _same(results, inline) -> None:
    assert [r.batch_id for r in results] == [r.batch_id for r in inline]
    assert [r.data for r in results] == [r.data for r in inline]
    assert [r.field_reports for r in results] == [r.field_reports for r in inline]


def test_multi_batch_calls_on_more_actors_than_cpus_give_the_inline_results(
        batches, monkeypatch):
    shared, layout, tasks, inline = batches
    # 7 batches a call once the first has been timed; 3 actors on 2 CPUs: one never starts
    monkeypatch.setattr(rx.RayExecutor, "TASK_SECONDS", 100.0)
    monkeypatch.setattr(rx.RayExecutor, "MAX_CHUNK", 7)
    ex = rx.RayExecutor(shared, layout, workers=3)
    try:
        results = list(ex.map(iter(tasks)))
        stats = ex.actor_stats()
    finally:
        ex.close()
    _same(results, inline)
    assert 1 <= len(ex.up) <= 2  # the third actor waited for a CPU the whole time
    assert sum(s["batches"] for s in stats) == len(tasks)  # all run by the actors that were up
    assert max(s["calls"] for s in stats) < len(tasks) // 2  # several batches a call
    for s in stats:  # Ray's serializers for pydantic, starlette and Arrow were skipped
        assert not {"pyarrow", "pydantic", "starlette", "torch"} & set(s["imported"])


def test_an_actor_without_the_drivers_environment_is_replaced_by_one_with_it(
        batches, monkeypatch):
    shared, layout, tasks, inline = batches
    # as on a cluster whose workers lack one of the driver's variables (the local workers
    # inherit this process's environment, which lacks it too: the runtime_env sets it)
    monkeypatch.setattr(rx, "cluster_env", lambda: {"DPTEXT_TEST_RAY_ENV": "42"})
    ex = rx.RayExecutor(shared, layout, workers=2)
    try:
        results = list(ex.map(iter(tasks)))
        # both replacements (one may still be starting when the other has run every batch)
        env = ex.ray.get([a.configure.remote(1, {"DPTEXT_TEST_RAY_ENV": "42"}, shared, layout,
                                             None) for a in ex.actors])
    finally:
        ex.close()
    _same(results, inline)
    assert ex.with_env == [True, True]
    assert len(env) == 2 and None not in env  # they have the variable now


def test_shared_tables_that_are_not_the_drivers_are_refused(batches, monkeypatch):
    shared, layout, tasks, _ = batches
    # the driver's digest of what it wrote differs from the files the actors find (another
    # copy of the work directory on a node): simulated by changing one table file after
    # export, which the driver's digest (computed here first) does not cover
    digest = rx.export_digest(shared)
    shared_dir = Path(shared["dir"])
    table = next(p for p in shared_dir.iterdir() if p.name.startswith("table-"))
    raw = bytearray(table.read_bytes())
    raw[-1] ^= 1
    table.write_bytes(bytes(raw))
    monkeypatch.setattr(rx, "export_digest", lambda s: digest)  # the driver's side only
    ex = rx.RayExecutor(shared, layout, workers=2)
    try:
        with pytest.raises(DPTextError, match="not the ones this job wrote"):
            list(ex.map(iter(tasks)))
    finally:
        ex.close()
    assert shared_dir.is_dir()


def test_a_bad_record_fails_the_job_with_the_inline_message(mech, tmp_path):  # noqa: F811
    src = write_jsonl(tmp_path / "in.jsonl", 400, seed=2)
    lines = src.read_text(encoding="utf-8").splitlines()
    lines[333] = json.dumps({"id": 333, "title": "no text"})
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    messages = []
    for kw in ({}, {"engine": "ray", "workers": 2}):
        out = tmp_path / f"out-{len(messages)}.jsonl"
        with pytest.raises(DPTextError) as err:
            run(job(mech, src, out, batch_size=50, **kw))
        assert type(err.value) is DPTextError  # not resumable: fixing the input changes it
        messages.append(str(err.value))
        assert not out.exists() and not (tmp_path / f"{out.name}.partial").exists()
    assert messages[0] == messages[1] and "line 334" in messages[0]


@pytest.mark.parametrize("kw", [{"engine": "ray", "workers": 2}, {"workers": 2}],
                         ids=["ray-actor", "process-worker"])
def test_a_killed_worker_keeps_the_committed_shards_and_the_job_resumes(
        mech, tmp_path, monkeypatch, kw):  # noqa: F811
    src = write_jsonl(tmp_path / "in.jsonl", 3000, seed=4)
    # small calls: the killed worker still has batches to run when it is killed
    monkeypatch.setattr(rx.RayExecutor, "MAX_CHUNK", 2)
    monkeypatch.setattr(ProcessExecutor, "MAX_CHUNK", 1)
    ref = tmp_path / "ref.jsonl"
    run(job(mech, src, ref, batch_size=50, shard_records=500))
    executors = []
    for cls in (rx.RayExecutor, ProcessExecutor):
        real_map = cls.map

        def spy(self, tasks, _real=real_map):
            executors.append(self)
            return _real(self, tasks)

        monkeypatch.setattr(cls, "map", spy)
    real_commit = driver.Driver._commit_shard
    commits = []

    def commit_then_kill(self, wd, shard):
        real_commit(self, wd, shard)
        commits.append(shard)
        if len(commits) == 2:  # kill one worker (SIGKILL, as the OOM killer does)
            ex = executors[0]
            if isinstance(ex, rx.RayExecutor):
                pid = ex.actor_stats()[0]["pid"]
            else:
                pid = next(iter(ex.pool._processes))
            os.kill(pid, signal.SIGKILL)

    monkeypatch.setattr(driver.Driver, "_commit_shard", commit_then_kill)
    out = tmp_path / "out.jsonl"
    with pytest.raises(ResumableError, match="committed shards are kept"):
        run(job(mech, src, out, batch_size=50, shard_records=500, **kw))
    assert (tmp_path / "out.jsonl.partial" / "manifest.json").is_file()
    monkeypatch.setattr(driver.Driver, "_commit_shard", real_commit)
    result = run(job(mech, src, out, batch_size=50, shard_records=500, **kw))
    assert result.resumed_records >= 1000
    assert out.read_bytes() == ref.read_bytes()
