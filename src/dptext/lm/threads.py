"""How many torch threads a forward pass gets: chosen by the work of the pass, never more than
the cores that are free.

Why (issue 19): an OpenMP parallel region waits for its slowest thread. On a machine where
another process holds a core, a 2-thread pass of a few tokens waits for a thread that is not
scheduled - one ``Linear`` on a [1, 2, 576] input took 20 ms with 2 threads against 0.26 ms
with one. Small passes (an incremental step of a few tokens) gain nothing from a second
thread even on an idle machine: they are bound by reading the weights. So:

- a pass of fewer than :data:`SMALL_PASS` token-rows runs on one thread (token-rows: the rows
  its matrix products run on - the real tokens on the fast Llama path, which packs them, every
  row x token on transformers'; :meth:`dptext.lm.decoding.ScoreHead.work`);
- a larger pass runs on ``min(ceiling, free cores)`` threads, ``ceiling`` being the thread count
  torch had when the policy was entered (the user's ``torch.set_num_threads`` is a ceiling we
  never exceed), free cores the idle share of the CPUs this process may run on, measured from
  ``/proc/stat`` over a short interval (:func:`free_cores`) and refreshed every
  :data:`REFRESH_S` seconds.

The policy restores torch's thread count when it is left.

**Groups on worker threads** (:func:`run_groups`, round 3 of issue 19). The decoders split
their rows into independent groups (:func:`dptext.lm.decoding.cost_groups`), each decoded with
its own cache. Decoding passes of fewer than :data:`SMALL_PASS` token-rows run on one thread
and the draws between them are serial Python, so one group at a time keeps about 1.2 of 2
cores busy. Where two or more cores are free (and the ceiling allows), the groups run on
``workers`` Python threads instead, every torch op on one intra-op thread: with one intra-op
thread an op runs inline on its calling thread and releases the GIL, so two Python threads
keep two cores busy, with no OpenMP barrier to wait at. While they run, torch's (process-wide)
thread count is pinned (:meth:`ThreadPolicy.pinned`) and ``before_pass`` leaves it alone. The
output never depends on this choice: each group draws from its own generator, derived before
any group starts (:func:`dptext.lm.sampling.spawn_generators`), and which groups exist does
not depend on the cores either. :data:`WORKERS` (or ``thread_policy(workers=...)``) forces a
count, for tests and benchmarks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager

from dptext.devices import usable_cores  # noqa: F401 - also this module's public name

SMALL_PASS = 64  # token-rows (batch rows x tokens fed): below it, one thread
REFRESH_S = 2.0  # seconds between two measurements of the free cores
_SAMPLE_S = 0.02  # length of one measurement
WORKERS: int | None = None  # groups decoded at once; None: by the free cores (run_groups)
# The decoders make their number of groups a multiple of LANES (decoding.cost_groups): a
# constant, not the cores of the moment, so the grouping - and the output - never depends on
# the load; 2 for the 2-core machines this is tuned on.
LANES = 2


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

    def __init__(self, ceiling: int | None = None, *, measure=None,
                 workers: int | None = None) -> None:
        import torch

        self._torch = torch
        self.ceiling = max(1, int(ceiling if ceiling is not None else torch.get_num_threads()))
        self._measure = measure
        self.forced_workers = None if workers is None else max(1, int(workers))
        self._free: int | None = None
        self._measured_at = -float("inf")
        self._pinned: int | None = None

    def free(self) -> int:
        now = time.monotonic()
        if self._free is None or now - self._measured_at > REFRESH_S:
            measure = self._measure or free_cores
            self._free = measure() if self.ceiling > 1 else 1
            self._measured_at = time.monotonic()
        return self._free

    def workers_for(self, groups: int) -> int:
        """Groups to decode at once: the forced count, else ``min(groups, ceiling, free
        cores)`` - 1 (one group at a time) where fewer than two cores are free."""
        if groups < 2:
            return 1
        if self.forced_workers is not None:
            return min(groups, self.forced_workers)
        if self.ceiling < 2:
            return 1
        return max(1, min(groups, self.ceiling, self.free()))

    @contextmanager
    def pinned(self, threads: int):
        """Torch's thread count fixed at ``threads`` for the block (``before_pass`` leaves it
        alone): it is process-wide, and groups on several Python threads share it. Inside a
        pinned block (a nested call) the outer pin stays."""
        if self._pinned is not None:
            yield
            return
        before = self._torch.get_num_threads()
        self._torch.set_num_threads(threads)
        self._pinned = threads
        try:
            yield
        finally:
            self._pinned = None
            if self._torch.get_num_threads() != before:
                self._torch.set_num_threads(before)

    def threads_for(self, token_rows: int) -> int:
        """Threads for a pass over ``token_rows`` (rows x tokens)."""
        if token_rows < SMALL_PASS or self.ceiling == 1:
            return 1
        return max(1, min(self.ceiling, self.free()))

    def before_pass(self, token_rows: int) -> int:
        if self._pinned is not None:
            return self._pinned
        n = self.threads_for(token_rows)
        if self._torch.get_num_threads() != n:
            self._torch.set_num_threads(n)
        return n


@contextmanager
def thread_policy(ceiling: int | None = None, *, workers: int | None = None):
    """A :class:`ThreadPolicy` for the block; torch's thread count is restored afterwards.
    ``workers``: groups decoded at once (default :data:`WORKERS`; None: by the free cores)."""
    import torch

    before = torch.get_num_threads()
    policy = ThreadPolicy(ceiling if ceiling is not None else before,
                          workers=WORKERS if workers is None else workers)
    try:
        yield policy
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def run_groups(policy: ThreadPolicy, jobs: Sequence[Callable[[], None]],
               costs: Sequence[float] | None = None) -> None:
    """Run ``jobs`` (one per group; independent of each other) one after another, or on
    :meth:`ThreadPolicy.workers_for` Python threads at once, the most costly first (``costs``:
    an estimate per job, e.g. its tokens; the longest-processing-time-first order keeps the
    workers busy until the end). On worker threads torch is pinned to ``max(1, cores //
    workers)`` intra-op threads, ``cores`` = ``min(ceiling, free cores)`` (the ceiling where the
    count is forced): one each on two cores. The first job's
    exception, in job order, is raised once every started job is done. The jobs must not
    share mutable state nor draw from a shared generator: whatever they compute must not depend
    on which runs first."""
    workers = policy.workers_for(len(jobs))
    if workers < 2:
        for job in jobs:
            job()
        return
    from concurrent.futures import ThreadPoolExecutor

    torch = policy._torch
    cores = policy.ceiling if policy.forced_workers is not None else min(policy.ceiling,
                                                                         policy.free())
    each = max(1, cores // workers)
    order = sorted(range(len(jobs)), key=lambda k: -(costs[k] if costs is not None else 0))

    def start() -> None:  # OpenMP's thread count is per calling thread: set it in each worker
        torch.set_num_threads(each)

    with policy.pinned(each):
        pool = ThreadPoolExecutor(workers, initializer=start, thread_name_prefix="dptext-lm")
        try:
            futures = {k: pool.submit(jobs[k]) for k in order}
            errors = [futures[k].exception() for k in range(len(jobs))]
        except BaseException:  # ^C: the jobs not started yet are dropped
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    for err in errors:
        if err is not None:
            raise err
