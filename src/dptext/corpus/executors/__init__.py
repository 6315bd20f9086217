"""Executors: where :class:`~dptext.corpus.work.Worker` runs the batches.

Every executor maps an iterator of :class:`BatchTask` to :class:`BatchResult` in input order,
with a bounded number of batches in flight (constant memory). A task is a byte range of the
input (or, for CSV, Parquet and stdin, the records the driver read), a result is encoded bytes
plus the batch's report: the driver never decodes, privatizes or encodes a record.

* :class:`InlineExecutor` (``--workers 1``): in this process.
* :class:`ProcessExecutor` (``--workers N``): N processes. On Linux, for a mechanism that does
  not use torch, from a driver with one thread, they are forked once the mechanism is loaded:
  they share its arrays copy-on-write and import nothing (:func:`fork_safe`). Otherwise they
  are spawned and each attaches the mechanism from memory-mapped arrays
  (:mod:`dptext.corpus.shared`) once, with one torch thread.
* :class:`~dptext.corpus.executors.ray.RayExecutor` (``--engine ray``): ``--workers`` Ray
  actors, each attaching the mechanism once and reading its ranges from the input itself
  (:mod:`dptext.corpus.executors.ray`).
"""

from dptext.corpus.executors.base import Executor, ExecutorSetup
from dptext.corpus.executors.inline import InlineExecutor
from dptext.corpus.executors.process import ProcessExecutor, fork_safe
from dptext.corpus.executors.ray import RayExecutor, ray_init  # imports Ray only when used

#: every executor by name (:mod:`~dptext.corpus.executors.base`): ``inline`` (the local engine,
#: ``--workers 1``), ``process`` (the local engine, ``--workers N``), ``ray`` (``--engine
#: ray``); another name is an engine of its own (``--engine NAME``)
EXECUTORS: dict[str, type[Executor]] = {
    "inline": InlineExecutor, "process": ProcessExecutor, "ray": RayExecutor}

#: the local engine's executors (one worker, several)
LOCAL = ("inline", "process")


def engines() -> tuple[str, ...]:
    """The names ``--engine`` takes: ``local`` and every executor of :data:`EXECUTORS` that is
    not one of the local engine's."""
    return ("local", *(n for n in EXECUTORS if n not in LOCAL))


__all__ = ["EXECUTORS", "LOCAL", "Executor", "ExecutorSetup", "InlineExecutor",
           "ProcessExecutor", "RayExecutor", "engines", "fork_safe", "ray_init"]
