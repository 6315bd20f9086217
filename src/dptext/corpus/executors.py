"""Executors: where :func:`~dptext.corpus.work.run_batch` runs.

Every executor maps an iterator of ``(context, BatchTask)`` to ``(context, BatchOutput)`` in
input order, with a bounded number of batches in flight (constant memory); ``context`` (the
records themselves) never leaves the driver process.

* :class:`InlineExecutor` (``--workers 1``): in this process.
* :class:`ProcessExecutor` (``--workers N``): N spawned processes; each attaches the mechanism
  from memory-mapped arrays (:mod:`dptext.corpus.shared`) once, with one torch thread.
* :class:`RayExecutor` (``--engine ray``): Ray Data. The driver stages the batches in chunk
  files in the work directory, one ``ray.data.from_items`` over the chunk paths is mapped with
  ``map_batches`` on an actor pool (each actor attaches the mechanism once) and the outputs are
  read back in order. ``ray.init()`` joins the cluster named by ``RAY_ADDRESS`` or starts a
  local one; on a cluster the work directory must be on storage every node mounts.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dptext.corpus.work import BatchOutput, BatchTask, run_batch
from dptext.errors import DPTextError

Item = tuple[Any, BatchTask]


class InlineExecutor:
    name = "inline"

    def __init__(self, mechanism, seed: int | None, *, skip: bool) -> None:
        self.m, self.seed, self.skip = mechanism, seed, skip
        self.workers = 1

    def map(self, items: Iterable[Item]) -> Iterator[tuple[Any, BatchOutput]]:
        for ctx, task in items:
            yield ctx, run_batch(self.m, task, self.seed, skip=self.skip)

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ processes
_WORKER: dict = {}


def _set_threads(torch_threads: int) -> None:
    try:
        import torch

        torch.set_num_threads(torch_threads)
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass


def _init_worker(shared: dict, seed: int | None, skip: bool, torch_threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver handles ^C and stops the pool
    os.environ.setdefault("OMP_NUM_THREADS", str(torch_threads))
    _set_threads(torch_threads)
    from dptext.corpus.shared import attach

    _WORKER.update(m=attach(shared), seed=seed, skip=skip)


def _work(task: BatchTask) -> BatchOutput:
    return run_batch(_WORKER["m"], task, _WORKER["seed"], skip=_WORKER["skip"])


class ProcessExecutor:
    name = "processes"

    def __init__(self, shared: dict, seed: int | None, *, skip: bool, workers: int,
                 torch_threads: int = 1) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self.pool = ProcessPoolExecutor(
            workers, mp_context=mp.get_context("spawn"), initializer=_init_worker,
            initargs=(shared, seed, skip, torch_threads))

    def map(self, items: Iterable[Item]) -> Iterator[tuple[Any, BatchOutput]]:
        from concurrent.futures.process import BrokenProcessPool

        pending: deque = deque()
        limit = 2 * self.workers
        try:
            for ctx, task in items:
                pending.append((ctx, self.pool.submit(_work, task)))
                while len(pending) >= limit:
                    ctx0, fut = pending.popleft()
                    yield ctx0, fut.result()
            while pending:
                ctx0, fut = pending.popleft()
                yield ctx0, fut.result()
        except BrokenProcessPool:
            raise DPTextError("a worker process died (out of memory, or killed); the "
                              "committed shards are kept: rerun to continue") from None

    def close(self) -> None:
        for p in list(getattr(self.pool, "_processes", {}).values()):
            if p.is_alive():
                p.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


# ------------------------------------------------------------------ ray
class _RayPrivatizer:
    """A Ray Data actor: attaches the mechanism once, then privatizes chunk after chunk."""

    def __init__(self, shared: dict, seed: int | None, skip: bool, torch_threads: int) -> None:
        _set_threads(torch_threads)
        from dptext.corpus.shared import attach

        self.m, self.seed, self.skip = attach(shared), seed, skip

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        out = []
        for path in batch["path"]:
            with open(path, "rb") as f:
                tasks = pickle.load(f)
            out.append(pickle.dumps([run_batch(self.m, t, self.seed, skip=self.skip)
                                     for t in tasks]))
        return {"chunk": np.asarray(batch["chunk"]), "result": np.array(out, dtype=object)}


def ray_init(workers: int):
    try:
        import ray
    except ImportError:
        raise DPTextError("--engine ray needs Ray: pip install 'dptext[ray]'") from None
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        env = {k: os.environ[k] for k in ("PYTHONPATH", "DPTEXT_CACHE", "HF_HUB_OFFLINE",
                                          "TRANSFORMERS_OFFLINE") if k in os.environ}
        kwargs: dict = {"runtime_env": {"env_vars": env}, "log_to_driver": False,
                        "include_dashboard": False, "logging_level": logging.ERROR}
        if not address:
            kwargs["num_cpus"] = workers
        ray.init(address=address or None, **kwargs)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    return ray


class RayExecutor:
    name = "ray"

    def __init__(self, shared: dict, seed: int | None, *, skip: bool, workers: int,
                 stage_dir: Path, chunk_batches: int = 8, torch_threads: int = 1) -> None:
        self.ray = ray_init(workers)
        self.shared, self.seed, self.skip = shared, seed, skip
        self.workers, self.stage, self.chunk = workers, stage_dir, chunk_batches
        self.torch_threads = torch_threads

    def _stage(self, items: Iterable[Item]) -> list[tuple[Path, Path]]:
        self.stage.mkdir(parents=True, exist_ok=True)
        chunks, ctxs, tasks = [], [], []

        def flush() -> None:
            i = len(chunks)
            paths = (self.stage / f"chunk-{i:06d}.tasks", self.stage / f"chunk-{i:06d}.ctx")
            for path, obj in zip(paths, (tasks, ctxs), strict=True):
                with open(path, "wb") as f:
                    pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
            chunks.append(paths)
            ctxs.clear()
            tasks.clear()

        for ctx, task in items:
            ctxs.append(ctx)
            tasks.append(task)
            if len(tasks) == self.chunk:
                flush()
        if tasks:
            flush()
        return chunks

    def map(self, items: Iterable[Item]) -> Iterator[tuple[Any, BatchOutput]]:
        ray = self.ray
        chunks = self._stage(items)
        if not chunks:
            return
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ds = ray.data.from_items([{"chunk": i, "path": str(t)} for i, (t, _) in
                                  enumerate(chunks)])
        ds = ds.map_batches(
            _RayPrivatizer, batch_size=1, num_cpus=1,
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            fn_constructor_kwargs={"shared": self.shared, "seed": self.seed,
                                   "skip": self.skip, "torch_threads": self.torch_threads})
        expected = 0
        for row in ds.iter_rows():
            if int(row["chunk"]) != expected:  # preserve_order should make this impossible
                raise DPTextError(f"Ray returned chunk {row['chunk']} before {expected}")
            tasks_path, ctx_path = chunks[expected]
            with open(ctx_path, "rb") as f:
                contexts = pickle.load(f)
            outputs = pickle.loads(row["result"])
            yield from zip(contexts, outputs, strict=True)
            tasks_path.unlink(missing_ok=True)
            ctx_path.unlink(missing_ok=True)
            expected += 1

    def close(self) -> None:
        pass  # the Ray runtime stays up for the process (ray.shutdown() at exit)
