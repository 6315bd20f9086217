"""``--workers N``: the batches on N processes (:class:`ProcessExecutor`). On Linux, for a
mechanism that does not use torch, from a driver with one thread, they are forked once the
mechanism is loaded: they share its arrays copy-on-write and import nothing (:func:`fork_safe`).
Otherwise they are spawned and each attaches the mechanism from memory-mapped arrays
(:mod:`dptext.corpus.shared`) once, with one torch thread."""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice

from dptext.corpus.executors.base import Executor
from dptext.corpus.executors.inline import set_threads
from dptext.corpus.work import BatchResult, BatchTask, JobLayout, Worker

# ------------------------------------------------------------------ processes
_WORKER: dict = {}


def _die_with_driver(driver: int) -> None:
    """Linux: this worker is killed when the driver dies (kill -9 of the driver alone left the
    workers waiting for tasks forever)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - best effort
        return
    if os.getppid() != driver:  # the driver died before the request was made
        os._exit(1)


def _init_worker(torch_threads: int, close_fds: tuple[int, ...] = (),
                 driver: int | None = None) -> None:
    if driver is not None:
        _die_with_driver(driver)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver handles ^C and stops the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker: not the driver's handler
    for fd in close_fds:  # a forked worker's copies of the driver's locks (the work directory's)
        with contextlib.suppress(OSError):
            os.close(fd)
    # read by torch when (if) a language-model mechanism imports it
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(torch_threads)
    _WORKER["threads"] = torch_threads


#: the jobs of forked pools: token -> (mechanism, layout), set before the pool forks
_FORKED: dict[int, tuple] = {}


def fork_safe() -> bool:
    """Whether worker processes may be forked from this process now: on Linux (macOS's system
    libraries are not fork-safe), with no other thread (a lock another thread holds would stay
    locked in the child forever: a server's threads) and without torch loaded (its OpenMP pool
    does not survive a fork). Forking is then safe and costs the worker no imports, no copy of
    the tables and no start-up; otherwise the workers are spawned."""
    import multiprocessing as mp
    import threading

    return (sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods()
            and threading.active_count() == 1 and "torch" not in sys.modules)


def forks(setup) -> bool:
    """Whether the workers are forked once the mechanism is loaded (a word mechanism, and
    :func:`fork_safe`): no imports, no copy of the tables."""
    return setup.word and fork_safe()


def _work_forked(token: int, task: BatchTask) -> BatchResult:
    """Run ``task`` in a forked worker: the mechanism was inherited from the driver."""
    w = _WORKER.get("w")
    if w is None or _WORKER.get("config") != token:
        w = _WORKER["w"] = Worker(*_FORKED[token])
        _WORKER["config"] = token
    return w.run(task)


def _warm(torch: bool) -> None:
    """Import what a batch needs while the driver loads the mechanism (torch too for a
    mechanism that uses it: a second or two of CPU per worker, overlapped with the driver)."""
    import dptext.corpus.shared  # noqa: F401
    import dptext.corpus.work  # noqa: F401
    import dptext.mechanisms.registry  # noqa: F401

    if torch:
        set_threads(_WORKER.get("threads", 1))


def _work(config: bytes, task: BatchTask) -> BatchResult:
    """Run ``task``; ``config`` (the pickled shared mechanism and job layout, a few kB) is
    attached once per worker process."""
    if _WORKER.get("config") != config:
        from dptext.corpus.shared import attach

        old = _WORKER.pop("w", None)
        if old is not None:
            old.close()
        shared, layout = pickle.loads(config)
        _WORKER["w"] = Worker(attach(shared), layout)
        _WORKER["config"] = config
        set_threads(_WORKER.get("threads", 1), imported_only=True)
    return _WORKER["w"].run(task)


def _run_chunk(work, config, tasks: list[BatchTask]) -> tuple[list[BatchResult], float]:
    """Consecutive tasks in one round trip, and the worker's CPU seconds they took."""
    start = time.process_time()
    results = [work(config, t) for t in tasks]
    return results, time.process_time() - start


class ProcessExecutor(Executor):
    """N worker processes, spawned or forked.

    Spawned (the default): the pool starts (and imports) as soon as it is made - the engine
    makes it before it loads the mechanism - and :meth:`configure` then names the mechanism and
    the job, which every worker attaches with its first batch. Forked (:meth:`forked`, when
    :func:`fork_safe`): made once the mechanism is loaded; the workers inherit it."""

    name = "process"

    @classmethod
    def prepare(cls, setup):
        """Spawned workers start (and import) while the driver loads the mechanism; forked
        ones wait for it (:meth:`build`)."""
        if forks(setup):
            return None
        # language-model mechanisms import torch; word mechanisms never do on the CPU (the
        # Laplace family's nearest-word search is numpy: importing torch cost each worker
        # 1.5-3.5 s of CPU for nothing)
        return cls(setup.workers, setup.torch_threads or 1, uses_torch=not setup.word)

    @classmethod
    def build(cls, setup):
        threads = setup.torch_threads or 1
        if setup.started is None and forks(setup):
            setup.before_fork()
            return cls.forked(setup.workers, setup.mechanism, setup.layout, threads,
                              close_fds=setup.close_fds)
        pool = setup.started or cls.prepare(setup)
        return pool.configure(setup.export(), setup.layout)

    def __init__(self, workers: int, torch_threads: int = 1, *, uses_torch: bool = False,
                 _fork: tuple | None = None, close_fds: tuple[int, ...] = ()) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self.config: bytes | int | None = None
        self._work = _work
        self._token = None
        if _fork is not None:
            self._token = self.config = id(self)
            _FORKED[self._token] = _fork
            self._work = _work_forked
        self.pool = ProcessPoolExecutor(
            workers, mp_context=mp.get_context("fork" if _fork else "spawn"),
            initializer=_init_worker, initargs=(torch_threads, tuple(close_fds), os.getpid()))
        if _fork is None:
            self._warming = [self.pool.submit(_warm, uses_torch) for _ in range(workers)]
            return
        # a fork pool starts every process at its first submit, here: flush what the driver
        # buffered (a child flushes its copies when it exits) and keep the driver's objects out
        # of the children's garbage collector (their pages stay shared, not copied)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()
        try:
            self._warming = [self.pool.submit(int) for _ in range(workers)]
        finally:
            gc.unfreeze()

    @classmethod
    def forked(cls, workers: int, mechanism, layout: JobLayout, torch_threads: int = 1, *,
               close_fds: tuple[int, ...] = ()) -> ProcessExecutor:
        """A pool of ``workers`` processes forked now, each with ``mechanism`` and ``layout``
        (copy-on-write) and with ``close_fds`` (the driver's locks) closed."""
        return cls(workers, torch_threads, _fork=(mechanism, layout), close_fds=close_fds)

    def configure(self, shared: dict, layout: JobLayout) -> ProcessExecutor:
        self.config = pickle.dumps((shared, layout), protocol=pickle.HIGHEST_PROTOCOL)
        return self

    #: worker CPU seconds a task aims at: consecutive batches go to a worker together, so
    #: that the cost of a round trip (about 1 ms of the driver's CPU and some of the
    #: worker's, measured) is small next to the work, yet a task is short enough that the
    #: workers finish together
    TASK_SECONDS = 0.2
    MAX_CHUNK = 16

    def map(self, tasks: Iterable[BatchTask]) -> Iterator[BatchResult]:
        from concurrent.futures.process import BrokenProcessPool

        pending: deque = deque()
        limit = 3 * self.workers
        chunk, per_batch = 1, None  # batches per task: one until a batch has been timed
        it = iter(tasks)
        try:
            for f in self._warming:
                f.result()
            while group := list(islice(it, chunk)):
                pending.append(self.pool.submit(_run_chunk, self._work, self.config, group))
                while len(pending) >= limit:
                    results, seconds = pending.popleft().result()
                    one = seconds / len(results)
                    per_batch = one if per_batch is None else 0.7 * per_batch + 0.3 * one
                    chunk = max(1, min(self.MAX_CHUNK,
                                       int(self.TASK_SECONDS / max(per_batch, 1e-6))))
                    yield from results
            while pending:
                yield from pending.popleft().result()[0]
        except BrokenProcessPool:
            from dptext.corpus.job import ResumableError

            # resumable: a plain DPTextError would make the engine remove the work directory
            raise ResumableError("a worker process died (out of memory, or killed); the "
                                 "committed shards are kept: rerun to continue") from None

    def close(self) -> None:
        if self.pool is None:
            return
        procs = getattr(self.pool, "_processes", None) or {}
        for p in list(procs.values()):
            if p.is_alive():
                p.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None
        _FORKED.pop(self._token, None)


__all__ = ["ProcessExecutor", "fork_safe"]
