"""``--workers 1``: the batches in this process (:class:`InlineExecutor`), and the torch thread
setting every executor's workers apply (:func:`set_threads`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from dptext.corpus.executors.base import Executor
from dptext.corpus.work import BatchResult, BatchTask, JobLayout, Worker


class InlineExecutor(Executor):
    """In this process. ``torch_threads`` is applied once torch is loaded - never by importing
    it, which costs a word mechanism that does not use torch a second or two (a mechanism that
    imports it on its first batch runs that batch with torch's default; results do not depend
    on the thread count)."""

    name = "inline"

    @classmethod
    def build(cls, setup):
        return cls(setup.mechanism, setup.layout, setup.torch_threads)

    def __init__(self, mechanism, layout: JobLayout, torch_threads: int | None = None) -> None:
        self.worker = Worker(mechanism, layout)
        self.workers = 1
        self.threads = torch_threads

    def map(self, tasks: Iterable[BatchTask]) -> Iterator[BatchResult]:
        for task in tasks:
            if self.threads is not None and "torch" in sys.modules:
                set_threads(self.threads)
                self.threads = None
            yield self.worker.run(task)

    def close(self) -> None:
        self.worker.close()


def set_threads(torch_threads: int, *, imported_only: bool = False) -> None:
    """Torch's intra-op threads. ``imported_only``: only if torch is loaded already (a word
    mechanism never needs torch: importing it costs a worker about a second of CPU)."""
    if imported_only and "torch" not in sys.modules:
        return
    try:
        import torch

        torch.set_num_threads(torch_threads)
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
