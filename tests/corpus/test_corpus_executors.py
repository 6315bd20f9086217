"""The process executor's two ways of starting workers (forked, spawned), its multi-batch tasks,
the work directory's lock in forked workers, workers dying with a killed driver, and sources
made absolute for a Ray cluster's workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from corpus_jobs import job, mech, write_jsonl  # noqa: F401  (mech: the module's fixture)

from dptext.corpus import run
from dptext.corpus.executors import ProcessExecutor, fork_safe
from dptext.corpus.executors import process as process_executor
from dptext.corpus.sources import expand
from dptext.corpus.workdir import WorkDir
from dptext.errors import DPTextError

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

LINUX = sys.platform.startswith("linux")


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_forked_and_spawned_workers_with_multi_batch_tasks_give_the_inline_bytes(
        mech, tmp_path, monkeypatch, start):  # noqa: F811
    if start == "fork" and not LINUX:
        pytest.skip("workers are forked on Linux only")
    src = write_jsonl(tmp_path / "in.jsonl", 3000, seed=3)
    ref = tmp_path / "ref.jsonl"
    run(job(mech, src, ref, batch_size=40, shard_records=700))
    monkeypatch.setattr(process_executor, "fork_safe", lambda: start == "fork")
    # 16 batches a task (the most) from the second round trip on; a chunk then spans shards
    monkeypatch.setattr(ProcessExecutor, "TASK_SECONDS", 100.0)
    seen = []
    real = ProcessExecutor.__init__

    def spy(self, *a, **kw):
        seen.append("fork" if kw.get("_fork") else "spawn")
        real(self, *a, **kw)

    monkeypatch.setattr(ProcessExecutor, "__init__", spy)
    out = tmp_path / "w2.jsonl"
    run(job(mech, src, out, batch_size=40, shard_records=700, workers=2))
    assert seen == [start]
    assert out.read_bytes() == ref.read_bytes()
    assert (tmp_path / "w2.jsonl.report.json").read_bytes() == \
        (tmp_path / "ref.jsonl.report.json").read_bytes()


def test_fork_is_refused_while_another_thread_runs():
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not fork_safe()  # a lock held by that thread would stay locked in a child
    finally:
        stop.set()
        t.join()


def _alive(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


@pytest.mark.skipif(not LINUX, reason="workers are forked on Linux only")
def test_a_forked_worker_does_not_hold_the_job_lock(tmp_path):
    wd = WorkDir(tmp_path / "o.jsonl.partial")
    wd.open()
    (fd,) = wd.lock_fds()
    closing = ProcessExecutor.forked(1, None, None, close_fds=wd.lock_fds())
    keeping = ProcessExecutor.forked(1, None, None)
    try:
        assert closing.pool.submit(_alive, fd).result() is False
        assert keeping.pool.submit(_alive, fd).result() is True
        wd.close()  # the driver is done (or killed): its lock goes with its descriptor...
        again = WorkDir(wd.path)
        with pytest.raises(DPTextError, match="another dptext run"):
            again.open()  # ...unless a worker kept a copy
        keeping.close()
        again.open()  # the worker that closed its copy never blocked it
        again.close()
    finally:
        closing.close()
        keeping.close()


@pytest.mark.slow  # 3 fresh interpreters importing dptext: ~14 s each variant at load 5
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_workers_die_with_a_killed_driver_and_the_job_resumes(tmp_path, start):
    """kill -9 of the driver alone (not its process group): its workers go too, at once, and
    the same command then continues the job to the uninterrupted run's bytes."""
    if not LINUX:
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    import psutil

    src = write_jsonl(tmp_path / "in.jsonl", 3000, seed=5)
    ref, out = tmp_path / "ref.jsonl", tmp_path / "o.jsonl"
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        import numpy as np
        from dptext.corpus import CorpusJob, driver, run
        from dptext.corpus.driver import Driver
        from dptext.embeddings import EmbeddingSpace
        from dptext.mechanisms.registry import mechanism
        from dptext.corpus.executors import process as process_executor
        process_executor.fork_safe = lambda: {start == "fork"!r}
        commit = Driver._commit_shard
        def slow(self, wd, shard):  # a job long enough to be killed in the middle
            commit(self, wd, shard)
            time.sleep(0.2 * (self.job.workers > 1))
        Driver._commit_shard = slow
        if __name__ == "__main__":  # (spawned workers import this file)
            words = [f"w{{i}}" for i in range(200)]
            space = EmbeddingSpace(words, np.random.default_rng(7).standard_normal((200, 8)),
                                   name="tiny")
            m = mechanism("custext", epsilon=2.0, k=5, space=space).fit()
            workers = int(sys.argv[1])
            run(CorpusJob(m, {str(src)!r}, {str(ref)!r} if workers == 1 else {str(out)!r},
                          seed=11, batch_size=20, shard_records=300, workers=workers))
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "DPTEXT_CACHE": str(tmp_path / "cache")}
    subprocess.run([sys.executable, str(script), "1"], env=env, check=True)
    p = subprocess.Popen([sys.executable, str(script), "2"], env=env)
    partial = tmp_path / "o.jsonl.partial"
    deadline = time.monotonic() + 60
    while (not list(partial.glob("part-*.jsonl")) and p.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.05)
    workers = psutil.Process(p.pid).children()
    assert workers and list(partial.glob("part-*.jsonl")), "the job did not start"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"workers {[w.pid for w in alive]} outlived the killed driver"
    assert not out.exists()
    subprocess.run([sys.executable, str(script), "2"], env=env, check=True)
    assert out.read_bytes() == ref.read_bytes()
    assert not partial.exists()


def test_an_absolute_source_keeps_its_name_and_how_messages_show_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("alice\n", encoding="utf-8")
    (rel,) = expand("in.txt")
    a = rel.absolute()
    assert a.path == tmp_path / "in.txt" and a.path.is_absolute()
    assert (a.name, a.fmt, a.shown) == (rel.name, rel.fmt, "in.txt")
    assert a.absolute() is a


@pytest.mark.parametrize(("hold", "wait", "ok"), [(0.5, 10.0, True), (3.0, 0.3, False)])
def test_a_lock_left_by_a_dead_run_is_awaited_briefly(tmp_path, monkeypatch, hold, wait, ok):
    """A run killed while forking leaves a child with a copy of the lock for a moment: the next
    run waits for it (its writer is dead), but not for longer than DEAD_HOLDER_WAIT."""
    path = tmp_path / "o.jsonl.partial"
    ready = tmp_path / "ready"
    script = textwrap.dedent(f"""
        import os, time
        from pathlib import Path
        from dptext.corpus.workdir import WorkDir
        wd = WorkDir(Path({str(path)!r}))
        wd.open()
        if os.fork() == 0:  # the child keeps the lock's descriptor after the parent died
            time.sleep(0.2)
            Path({str(ready)!r}).touch()
            time.sleep({hold})
            os._exit(0)
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    monkeypatch.setattr(WorkDir, "DEAD_HOLDER_WAIT", wait)
    wd = WorkDir(path)
    if ok:
        wd.open()  # waited for the child to exit
        wd.close()
    else:
        with pytest.raises(DPTextError, match="another dptext run"):
            wd.open()
