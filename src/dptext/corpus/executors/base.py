"""The executor interface: how the driver builds, uses and closes where the batches run.

An executor maps an iterator of :class:`~dptext.corpus.work.BatchTask` to
:class:`~dptext.corpus.work.BatchResult` in input order (:meth:`Executor.map`) and is closed
once (:meth:`Executor.close`). The driver picks one by name from
:data:`dptext.corpus.executors.EXECUTORS` (``--engine NAME``; the local engine is ``inline``
with one worker, ``process`` with more) and builds it from an :class:`ExecutorSetup`
(:meth:`Executor.build`); :meth:`Executor.prepare` may start workers before the mechanism is
loaded (a spawned pool imports meanwhile). A new executor is one module with an
:class:`Executor` subclass and one line of :data:`~dptext.corpus.executors.EXECUTORS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dptext.corpus.work import BatchResult, BatchTask, JobLayout


@dataclass
class ExecutorSetup:
    """What an executor is built from: the mechanism and the batches' layout, the job's
    ``workers`` and ``torch_threads``, whether the mechanism is a word mechanism (numpy
    tables, no torch), the job's mechanism spec (for the exported tables), the work
    directory's ``shared_dir`` (None: streaming), the driver's descriptors a forked worker
    closes, what :meth:`Executor.prepare` started (``started``), and ``before_fork``: what
    the driver does before workers are forked (builds what they then share)."""

    mechanism: Any
    layout: JobLayout | None
    workers: int
    torch_threads: int | None
    word: bool
    spec: Any = None
    shared_dir: Path | None = None
    close_fds: tuple[int, ...] = ()
    started: Any = None
    before_fork: Callable[[], None] = lambda: None

    def export(self, absolute: bool = False) -> dict:
        """The mechanism's tables exported to files the workers attach
        (:func:`dptext.corpus.shared.export`)."""
        from dptext.corpus.shared import export
        from dptext.corpus.stream import stream_shared_dir

        where = self.shared_dir if self.shared_dir is not None else stream_shared_dir()
        return export(self.mechanism, where.resolve() if absolute else where, self.spec)


class Executor(ABC):
    """Where the batches run (module docstring)."""

    name: ClassVar[str]

    @classmethod
    def prepare(cls, setup: ExecutorSetup) -> Any:
        """Start what may start before the mechanism loads (None: nothing); the driver hands
        it back as ``setup.started`` and closes it at the end."""
        return None

    @classmethod
    @abstractmethod
    def build(cls, setup: ExecutorSetup) -> Executor:
        """The executor of a job, once the mechanism is loaded."""

    @abstractmethod
    def map(self, tasks: Iterable[BatchTask]) -> Iterator[BatchResult]:
        """The results of ``tasks``, in order, a bounded number in flight."""

    @abstractmethod
    def close(self) -> None:
        """Stop the workers (a second call does nothing)."""
