"""How many torch threads a forward pass gets: chosen by the work of the pass, never more than
the cores that are free.

Why (issue 19): an OpenMP parallel region waits for its slowest thread. On a machine where
another process holds a core, a 2-thread pass of a few tokens waits for a thread that is not
scheduled - one ``Linear`` on a [1, 2, 576] input took 20 ms with 2 threads against 0.26 ms
with one. Small passes (an incremental step of a few tokens) gain nothing from a second
thread even on an idle machine: they are bound by reading the weights. So:

- a pass of fewer than :data:`SMALL_PASS` token-rows runs on one thread;
- a larger pass runs on ``min(ceiling, free cores)`` threads, ``ceiling`` being the thread count
  torch had when the policy was entered (the user's ``torch.set_num_threads`` is a ceiling we
  never exceed), free cores the idle share of the CPUs this process may run on, measured from
  ``/proc/stat`` over a short interval (:func:`free_cores`) and refreshed every
  :data:`REFRESH_S` seconds.

The policy restores torch's thread count when it is left.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from dptext.devices import usable_cores  # noqa: F401 - also this module's public name

SMALL_PASS = 64  # token-rows (batch rows x tokens fed): below it, one thread
REFRESH_S = 2.0  # seconds between two measurements of the free cores
_SAMPLE_S = 0.02  # length of one measurement


def _cpu_times() -> tuple[float, float] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat, or None where it cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [float(x) for x in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    return idle, sum(values[:8])  # guest time is already counted in user time


def free_cores(interval: float = _SAMPLE_S) -> int:
    """Cores idle over the next ``interval`` seconds (this process sleeps meanwhile), >= 1.

    Where /proc/stat is missing (not Linux) every usable core counts as free.
    """
    cores = usable_cores()
    first = _cpu_times()
    if first is None:
        return cores
    time.sleep(interval)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return cores
    idle_share = (second[0] - first[0]) / (second[1] - first[1])
    total_cpus = os.cpu_count() or cores
    # idle CPUs of the whole machine, rounded to the nearest whole core, within our affinity
    return max(1, min(cores, int(idle_share * total_cpus + 0.5)))


class ThreadPolicy:
    """Sets torch's thread count before each pass (see the module docstring)."""

    def __init__(self, ceiling: int | None = None, *, measure=free_cores) -> None:
        import torch

        self._torch = torch
        self.ceiling = max(1, int(ceiling if ceiling is not None else torch.get_num_threads()))
        self._measure = measure
        self._free: int | None = None
        self._measured_at = -float("inf")

    def free(self) -> int:
        now = time.monotonic()
        if self._free is None or now - self._measured_at > REFRESH_S:
            self._free = self._measure() if self.ceiling > 1 else 1
            self._measured_at = time.monotonic()
        return self._free

    def threads_for(self, token_rows: int) -> int:
        """Threads for a pass over ``token_rows`` (rows x tokens)."""
        if token_rows < SMALL_PASS or self.ceiling == 1:
            return 1
        return max(1, min(self.ceiling, self.free()))

    def before_pass(self, token_rows: int) -> int:
        n = self.threads_for(token_rows)
        if self._torch.get_num_threads() != n:
            self._torch.set_num_threads(n)
        return n


@contextmanager
def thread_policy(ceiling: int | None = None):
    """A :class:`ThreadPolicy` for the block; torch's thread count is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    policy = ThreadPolicy(ceiling if ceiling is not None else before)
    try:
        yield policy
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
