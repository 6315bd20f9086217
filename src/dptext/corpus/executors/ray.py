"""``--engine ray``: the batches on Ray actors, on this machine or on a cluster.

``--workers`` plain Ray actors (``ray.remote`` classes, one CPU each) each attach the mechanism
once from the memory-mapped files the driver exported (:mod:`dptext.corpus.shared`) after
checking that those files are the driver's (:func:`check_export`), copy its small sampling
tables into their own memory (:func:`private_tables`), and then run calls of consecutive
batches - reading their byte ranges of the input themselves, as a process worker does. The
driver keeps at most :attr:`RayExecutor.PER_ACTOR` calls queued on each actor (one running,
one waiting, so an actor never waits for a round trip), takes results as they finish
(``ray.wait``) and hands them on in input order, holding at most :attr:`RayExecutor.WINDOW`
calls per actor, done or not (bounded memory). A call is sized from the CPU the actors report
to take about :attr:`RayExecutor.TASK_SECONDS` (at most :attr:`RayExecutor.MAX_CHUNK`
batches); batches, their generators and results stay one per batch, so the bytes do not
depend on it. An actor that never gets a CPU (more ``--workers`` than the cluster has) is
simply never given work.

Why plain actors and not Ray Data (``from_items`` -> ``map_batches`` on an actor pool ->
``iter_batches``, the design before): the batches are already cut by the driver and read by
the workers, so Ray Data only carried tasks and results - and it cost a Ray Data import
(pyarrow, pandas: ~1 s of CPU) in the driver and in each actor, three detached helper actors
on a fresh cluster (~8 s of CPU) and its streaming executor's threads in the driver
(docs/scale.md has the figures).

``ray.init()`` joins the cluster named by ``RAY_ADDRESS`` or starts a new local one; on a
cluster the input (and the work directory, with the shared tables) must be on storage every
node mounts at the same path.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from dptext.corpus.executors.base import Executor
from dptext.corpus.work import BatchResult, BatchTask, JobLayout, Worker
from dptext.errors import DPTextError


class _Privatizer:
    """The actor (made a Ray actor class by :func:`_actor_class`): attaches the mechanism once
    (:meth:`configure`) and runs calls of consecutive batches (:meth:`run`). Its constructor
    takes no arguments, so that it runs before this process deserializes anything (see
    :func:`_lean_serialization`)."""

    def __init__(self) -> None:
        _lean_serialization()
        self.worker: Worker | None = None
        self.started_cpu = _process_cpu()  # Ray's worker start-up and imports until here
        self.cpu = {"run": 0.0, "run_thread": 0.0, "configure": 0.0, "calls": 0, "batches": 0}

    def configure(self, torch_threads: int, env: dict[str, str] | None, shared: dict,
                  layout: JobLayout, digest: str | None) -> float | None:
        """Attach the mechanism; the CPU seconds it took. None, attaching nothing, when this
        process's environment is not ``env`` (the driver's ``PYTHONPATH`` and cache/offline
        variables): the driver then starts an actor with that environment instead."""
        if env is not None and any(os.environ.get(k) != v for k, v in env.items()):
            return None
        # read by torch when (if) a language-model mechanism imports it
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(torch_threads)
        from dptext.corpus.executors.inline import set_threads
        from dptext.corpus.shared import attach

        start = time.process_time()
        check_export(shared, digest)
        self.worker = Worker(private_tables(attach(shared)), layout)
        set_threads(torch_threads, imported_only=True)
        self.cpu["configure"] = seconds = time.process_time() - start
        return seconds

    def run(self, tasks: list[BatchTask]) -> tuple[list[BatchResult], float]:
        """The tasks' results in order and the CPU seconds they took here."""
        start, thread = time.process_time(), time.thread_time()
        results = [self.worker.run(t) for t in tasks]
        seconds = time.process_time() - start
        c = self.cpu
        c["run"] += seconds
        c["run_thread"] += time.thread_time() - thread  # without Ray's threads meanwhile
        c["calls"] += 1
        c["batches"] += len(tasks)
        return results, seconds

    def stats(self) -> dict:
        """CPU seconds of this actor's process (benchmarks): at the start of its constructor,
        now, in :meth:`configure`, in :meth:`run` (with and without Ray's own threads); and
        which optional packages it imported."""
        return {"pid": os.getpid(), "started": self.started_cpu, "now": _process_cpu(),
                "imported": sorted(m for m in ("pyarrow", "pydantic", "starlette", "torch",
                                               "transformers", "pandas") if m in sys.modules),
                **self.cpu}


def _lean_serialization() -> None:
    """Skip Ray's extra serializers in this actor's process. On its first (de)serialization
    every Ray worker registers serializers for pydantic models, starlette's ``State`` and
    Arrow-backed objects (``ray.util.serialization_addons.apply``), importing pydantic,
    starlette and pyarrow when they are installed - about 0.35 s of CPU per actor, measured.
    An actor of ours sends and receives only dptext's dataclasses, dicts and bytes, and its
    process runs nothing else (it is dedicated to the actor and ends with it), so it needs
    none of them. The driver is left alone: it may be a program of the user's that sends
    such objects through Ray."""
    try:
        from ray.util import serialization_addons
    except ImportError:  # pragma: no cover - another Ray layout: keep its serializers
        return
    if callable(getattr(serialization_addons, "apply", None)):
        serialization_addons.apply = lambda context: None


def _process_cpu() -> float:
    """CPU seconds of this process since it started (``/proc``; elsewhere ``process_time``,
    which misses what ran before Python did)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return time.process_time()


#: sampling tables up to this size (all of them together) are copied into each actor's memory
PRIVATE_TABLES_BYTES = 64 << 20


def private_tables(m):
    """``m`` with its sampling tables copied from the memory-mapped files into this process's
    memory when they are small (CusText's: 12 MB; the space's vectors stay mapped and
    shared). Random lookups into mapped file pages cost custext ~2.4 ms more CPU per
    512-record batch (17%) than into memory numpy allocates, which Linux backs with huge pages
    (fewer TLB misses) - measured, ``benchmarks/bench_corpus.py raybatch``; the copy costs a
    few ms."""
    import numpy as np

    from dptext.corpus import shared as shared_mod
    from dptext.mechanisms.word import WordMechanism
    from dptext.targeted import TargetedMechanism

    if isinstance(m, TargetedMechanism):  # the word mechanism it wraps
        private_tables(m.mechanism)
        return m
    if not isinstance(m, WordMechanism) or not m.is_fitted:
        return m
    tables = shared_mod.fitted_tables(m)
    if sum(a.nbytes for a in tables.values()) <= PRIVATE_TABLES_BYTES:
        shared_mod._install(m, m.space, {k: np.array(a) for k, a in tables.items()})
    return m


def export_digest(shared: dict) -> str | None:
    """SHA-256 over the files :func:`~dptext.corpus.shared.export` wrote (names and bytes):
    what every actor must see before it maps them. None for a mechanism without files."""
    from dptext.corpus.shared import files_of

    shared = files_of(shared)
    if shared is None:
        return None
    directory = Path(shared["dir"])
    h = hashlib.sha256()
    for path in sorted(directory.iterdir()):
        if path.name == "space.json" or path.suffix == ".npy":
            with open(path, "rb") as f:
                h.update(path.name.encode() + b"\0" + hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()


def check_export(shared: dict, digest: str | None) -> None:
    """Refuse tables that are not the driver's: on a cluster a node may see another copy of
    the work directory (a stale network-filesystem cache, a path that is not shared), and a
    mechanism with other tables would not deliver the guarantee the job prints. The files are
    hashed before they are mapped (~0.06 s of CPU per actor for the default space's 90 MB, in
    the page cache); the driver hashed the files it wrote from its own mechanism, whose
    tables were verified when they were fitted or loaded."""
    if digest is None:
        return
    seen = export_digest(shared)
    if seen != digest:
        from dptext.corpus.shared import files_of

        raise DPTextError(f"the shared tables in {files_of(shared)['dir']} are not the ones "
                          f"this job wrote (another copy of the directory?): every Ray node "
                          f"must see the work directory on the same shared storage")


_ACTOR = None


def _actor_class(ray):
    global _ACTOR
    if _ACTOR is None:
        # no retries: a batch is run once per job (its randomness is drawn once); an actor
        # that dies fails the job, which the next run continues after the last shard
        _ACTOR = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Privatizer)
    return _ACTOR


#: what a cluster's actors must share with the driver: which dptext they import, where the
#: cache is, whether a model hub may be reached
SHARED_ENV = ("PYTHONPATH", "DPTEXT_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def ray_init(workers: int):
    """Ray, initialised: the cluster in ``RAY_ADDRESS``, else a new local instance with
    ``workers`` CPUs (``address="local"``: ``ray.init()`` without an address joins the latest
    cluster on the machine, which may be another job's) whose workers inherit this process's
    environment."""
    try:
        import ray
    except ImportError:
        raise DPTextError("--engine ray needs Ray: pip install 'dptext[ray]'") from None
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        kwargs: dict = {"log_to_driver": False, "include_dashboard": False,
                        "logging_level": logging.ERROR}
        if not address:
            address = "local"
            kwargs["num_cpus"] = workers
        ray.init(address=address, **kwargs)
    return ray


def cluster_env() -> dict[str, str] | None:
    """The variables of :data:`SHARED_ENV` a cluster's actors must have as this process has
    them (None: a local instance, whose workers inherit this environment)."""
    if not os.environ.get("RAY_ADDRESS"):
        return None
    return {k: os.environ[k] for k in SHARED_ENV if k in os.environ}


class RayExecutor(Executor):
    """``workers`` Ray actors; see the module docstring. :meth:`start` creates them (Ray
    starts their processes while this one goes on), :meth:`configure` hands them the
    mechanism (and the digest of its exported files, which each actor checks); ``RayExecutor
    (shared, layout, workers=...)`` does both.

    On a cluster an actor is first made without a ``runtime_env``: a worker process with one
    is started through Ray's runtime-env setup, which imports Ray twice (about 0.9 s more CPU
    per actor, measured). If its environment is not the driver's (:data:`SHARED_ENV`), or it
    cannot import dptext, it is replaced by one made with the driver's variables as its
    ``runtime_env`` - what every actor got before."""

    name = "ray"

    @classmethod
    def build(cls, setup):
        """A cluster's workers run in another directory: the tables and sources by absolute
        path."""
        import dataclasses

        layout = dataclasses.replace(setup.layout,
                                     sources=[s.absolute() for s in setup.layout.sources])
        return cls(setup.export(absolute=True), layout, workers=setup.workers,
                   torch_threads=setup.torch_threads or 1)
    #: calls queued on one actor: one running, one waiting (no idle round trip)
    PER_ACTOR = 2
    #: calls an actor held by the driver, done or not (bounded memory: results in order)
    WINDOW = 3
    #: actor CPU seconds a call aims at, at most MAX_CHUNK batches: a call costs the driver
    #: ~3-5 ms of CPU (Ray's submission, wait and result), more than a process pool's round
    #: trip (measured, ``bench_corpus.py raybatch``); the last call of a job may leave the
    #: other actors idle for as long
    TASK_SECONDS = 0.4
    MAX_CHUNK = 64

    def __init__(self, shared: dict | None = None, layout: JobLayout | None = None, *,
                 workers: int, torch_threads: int = 1) -> None:
        self.ray = ray_init(workers)
        self.workers, self.threads = workers, torch_threads
        self.env = cluster_env()
        self.actors = [self._actor(None) for _ in range(workers)]
        self.with_env = [False] * workers
        self._ready: dict = {}  # configure call -> actor index
        self._config: tuple | None = None
        self.up: list[int] = []  # the actors configured, in the order they came up
        self.attach_seconds: list[float] = []
        if shared is not None:
            self.configure(shared, layout)

    @classmethod
    def start(cls, workers: int, torch_threads: int = 1) -> RayExecutor:
        """Actors without a mechanism yet (their processes start and import meanwhile)."""
        return cls(workers=workers, torch_threads=torch_threads)

    def _actor(self, env: dict[str, str] | None):
        cls = _actor_class(self.ray)
        if env is not None:
            cls = cls.options(runtime_env={"env_vars": env})
        return cls.remote()

    def configure(self, shared: dict, layout: JobLayout) -> RayExecutor:
        self._config = (shared, layout, export_digest(shared))
        for i in range(len(self.actors)):
            self._configure(i)
        return self

    def _configure(self, i: int) -> None:
        shared, layout, digest = self._config
        env = None if self.with_env[i] else self.env
        ref = self.actors[i].configure.remote(self.threads, env, shared, layout, digest)
        self._ready[ref] = i

    def _came_up(self, ref) -> int | None:
        """Actor ``i`` whose configure call ``ref`` finished, if it is ready; else it is
        replaced by one with the driver's environment (once) and None."""
        i = self._ready.pop(ref)
        try:
            seconds = self.ray.get(ref)
        except self.ray.exceptions.RayActorError:
            # its process could not start or unpickle the class (dptext not importable there)
            if self.env is None or self.with_env[i]:
                raise
            seconds = None
        if seconds is not None:
            self.attach_seconds.append(seconds)
            return i
        if self.with_env[i]:  # pragma: no cover - a runtime_env sets these variables
            raise DPTextError("a Ray actor does not have the driver's environment")
        self._kill(self.actors[i])
        self.actors[i], self.with_env[i] = self._actor(self.env), True
        self._configure(i)
        return None

    def _error(self, err: BaseException) -> BaseException:
        """What a Ray failure means for the job: a worker's own error as it was raised (a bad
        record: the job fails as inline); an actor that died (killed, out of memory): the
        committed shards are kept."""
        cause = getattr(err, "cause", None)
        if isinstance(err, self.ray.exceptions.RayTaskError) and isinstance(cause, Exception):
            return cause
        from dptext.corpus.job import ResumableError

        return ResumableError(f"a Ray actor died ({type(err).__name__}); the committed shards "
                              f"are kept: rerun to continue")

    def map(self, tasks: Iterable[BatchTask]) -> Iterator[BatchResult]:
        if self._config is None:
            raise DPTextError("RayExecutor.configure() before map()")
        ray = self.ray
        it = iter(tasks)
        queued = [0] * len(self.actors)  # calls not yet finished, per actor
        up = self.up
        pending: deque = deque()  # calls in input order
        owner: dict = {}  # unfinished call -> actor
        chunk, per_batch, exhausted = 1, None, False
        try:
            while True:
                while not exhausted and up and len(pending) < self.WINDOW * len(up):
                    a = min(up, key=queued.__getitem__)
                    if queued[a] >= self.PER_ACTOR:
                        break
                    group = list(islice(it, chunk))
                    if not group:
                        exhausted = True
                        break
                    ref = self.actors[a].run.remote(group)
                    pending.append(ref)
                    owner[ref] = a
                    queued[a] += 1
                if not pending and exhausted:
                    return
                if not pending and not self._ready and not up:  # pragma: no cover - defensive
                    raise DPTextError("no Ray actor came up to run the job's batches")
                if pending and pending[0] not in owner:  # the oldest call is done
                    results, seconds = ray.get(pending.popleft())
                    one = seconds / max(1, len(results))
                    per_batch = one if per_batch is None else 0.7 * per_batch + 0.3 * one
                    chunk = max(1, min(self.MAX_CHUNK,
                                       int(self.TASK_SECONDS / max(per_batch, 1e-6))))
                    yield from results
                    continue
                done, _ = ray.wait([*owner, *self._ready], num_returns=1)
                for ref in done:
                    if ref in owner:
                        queued[owner.pop(ref)] -= 1
                    elif (i := self._came_up(ref)) is not None:
                        up.append(i)
        except (ray.exceptions.RayTaskError, ray.exceptions.RayActorError) as err:
            raise self._error(err) from None

    def actor_stats(self) -> list[dict]:
        """Each configured actor's :meth:`_Privatizer.stats` (benchmarks; an actor still
        waiting for a CPU would never answer)."""
        return self.ray.get([self.actors[i].stats.remote() for i in self.up])

    def _kill(self, actor) -> None:
        try:
            self.ray.kill(actor)
        except Exception:  # noqa: BLE001 - an actor that is gone already
            pass

    def close(self) -> None:
        """Stop the actors (their CPUs go back to the cluster at once); Ray itself stays up
        for the process (``ray.shutdown()`` at exit)."""
        for a in self.actors:
            self._kill(a)
        self.actors, self._ready = [], {}
