"""Cells of one grid on several cores: worker processes, one BLAS/OpenMP/torch thread each.

The pending cells are grouped into *runs* - the cells of one (mechanism, epsilon), which share
the fitted mechanism - and a mechanism that fits all its epsilons in one shared pass
(``fit_many``, SanText) is one run of all its epsilons, so that two workers never compute the
same pass. Runs go to the workers longest
first (by :data:`RUN_COST`, a rough measured share of the default grid), each worker keeps its
own :class:`~dptext.evaluation.context.GridContext` (data, encoder cache, space) for its life,
and the parent stores every record as it arrives - an interrupted parallel grid resumes like a
serial one.

A cell's values do not depend on where or after which cells it ran: each draws from its own
seeded generator (:func:`dptext.evaluation.cells.cell_seed`), and each process embeds the clean
texts (training and test splits) in one fixed pass before any cell's sanitized texts
(:meth:`GridContext.embed_clean`), so their embeddings are computed the same way everywhere.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from dptext.embeddings import EmbeddingSpace
from dptext.evaluation.cells import Cell, GridConfig

#: relative cost of one run of a mechanism (all default metrics), measured on the default grid;
#: only the order in which runs are handed out depends on it
RUN_COST = {"laplace": 10.0, "santext": 4.0, "santext+": 4.0, "gumbel": 3.0, "dpmlm": 50.0,
            "dpprompt": 50.0}
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

_worker_context = None  # the GridContext of this worker process


def available_cores() -> int:
    """Cores this process may run on (:func:`dptext.devices.usable_cores`)."""
    from dptext.devices import usable_cores

    return usable_cores()


def group_runs(config: GridConfig, cells: list[Cell]) -> list[list[Cell]]:
    """The cells grouped into runs (see the module docstring), longest first."""
    from dptext.evaluation.baselines import split_spec
    from dptext.mechanisms.registry import registered

    runs: dict[tuple, list[Cell]] = {}
    for cell in cells:
        key: tuple = (cell.mechanism, cell.epsilon)
        cls = registered().get(split_spec(cell.mechanism)[0])
        if cls is not None and cls.supports("fit_many"):
            key = (cell.mechanism, "every epsilon")
        runs.setdefault(key, []).append(cell)

    def cost(run: list[Cell]) -> float:
        return RUN_COST.get(split_spec(run[0].mechanism)[0], 1.0) * len(run)

    return sorted(runs.values(), key=cost, reverse=True)


def _die_with_parent(parent: int) -> None:
    """Linux: this worker gets SIGTERM when the grid's process ends, however it ends (a
    SIGKILL or SIGTERM of the parent leaves no worker computing on)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown only
        pass
    if os.getppid() != parent:  # the parent ended before prctl took effect
        os._exit(1)


def _init_worker(config: GridConfig, space: EmbeddingSpace | None, encoder: str,
                 parent: int) -> None:
    global _worker_context
    from threadpoolctl import threadpool_limits

    _die_with_parent(parent)

    from dptext.evaluation.context import GridContext
    from dptext.evaluation.encoders import make_encoder

    threadpool_limits(1)
    _worker_context = GridContext(config, space, make_encoder(encoder))


def _run(cells: list[Cell]) -> list[dict[str, Any]]:
    from dptext.evaluation.metrics import run_cell

    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # torch is a core dependency; an environment without it still runs
        pass
    return [run_cell(_worker_context, cell) for cell in cells]


def run_parallel(config: GridConfig, cells: list[Cell], *, workers: int,
                 space: EmbeddingSpace | None, encoder: str,
                 on_record: Callable[[dict[str, Any]], None]) -> None:
    """Run ``cells`` on ``workers`` processes; ``on_record`` gets each record as it arrives
    (in the parent, which stores it)."""
    runs = group_runs(config, cells)
    saved = {k: os.environ.get(k) for k in _THREAD_VARIABLES}
    os.environ.update({k: "1" for k in _THREAD_VARIABLES})  # read by the workers' libraries
    try:
        pool = ProcessPoolExecutor(max_workers=min(workers, len(runs)),
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker,
                                   initargs=(config, space, encoder, os.getpid()))
        try:
            for records in _as_completed(pool, runs):
                for record in records:
                    on_record(record)
        except BaseException:  # Ctrl-C, a failed cell: runs not started are dropped
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _as_completed(pool: ProcessPoolExecutor, runs: list[list[Cell]]
                  ) -> Iterator[list[dict[str, Any]]]:
    """Each run's records as soon as it finishes; on an exception (Ctrl-C included) the runs
    not started are cancelled."""
    futures = {pool.submit(_run, run) for run in runs}
    try:
        while futures:
            done, futures = wait(futures, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        for future in futures:
            future.cancel()
