"""What every nearest-word search shares: the interface (:class:`Search`: ``search(points)``
and ``search_blocks(n, points_of)``), the BLAS thread control, the blocks of points given to the
worker threads, and the float64 distance every exact re-check ranks by."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from dptext.devices import usable_cores

MIN_ROWS = 128  # fewer points per worker than this: one worker
_blas = None  # threadpoolctl's controller of the BLAS numpy uses (found once)


def _blas_controller():
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController().select(user_api="blas")
    return _blas


def blas_threads() -> int:
    """Threads the BLAS may use now (its setting: ``OMP_NUM_THREADS``, threadpoolctl), at
    most the cores this process may run on."""
    threads = [c.num_threads for c in _blas_controller().lib_controllers]
    return max(1, min(usable_cores(), min(threads) if threads else 1))


def one_blas_thread() -> AbstractContextManager:
    """The BLAS at one thread for the duration (each worker thread runs its own GEMMs)."""
    controller = _blas_controller()
    return controller.limit(limits=1) if controller.lib_controllers else nullcontext()


def exact_sq_distances(words: np.ndarray, cand: np.ndarray, points64: np.ndarray) -> np.ndarray:
    """|p - y|^2 in float64 for the words ``words[cand]`` and ``points64`` (one point, or one
    row per candidate), from the differences, row by row: not a BLAS product, whose kernels
    round identical rows differently at different positions, which would break exact ties.
    numpy's einsum sums each row alone in an order fixed by its length, so every search that
    ranks through this function ranks alike."""
    diff = words[cand].astype(np.float64)
    diff -= points64
    return np.einsum("ij,ij->i", diff, diff)


def blocks(n: int, block: int, workers: int, unit: int = 1) -> list[tuple[int, int]]:
    """The blocks [start, stop) of ``n`` points for ``workers`` threads, on multiples of
    ``unit``: rounds of one full block (``block`` rows, rounded down to a multiple of
    ``unit``) per worker; what is left after them is split evenly over the workers (at least
    ``MIN_ROWS`` rows each) or, if that is too little to share, spread over the last round's
    blocks (up to ``MIN_ROWS`` rows more than ``block``) - so that the threads finish
    together instead of one searching a last block alone (3,000 points, 2 threads: 1024,
    1024, 512, 440 instead of 1024, 1024, 952; 4,104: 1024, 1024, 1024, 1032 instead of a
    fifth block of 8 points)."""
    size = max(unit, block - block % unit)
    least = min(MIN_ROWS, size)
    rounds = n // (workers * size)
    rest = n - rounds * workers * size
    if rounds and rest < workers * least:  # spread over the last round (blocks <= size + least)
        rounds -= 1
        rest += workers * size
    start = rounds * workers * size
    spans = [(i * size, (i + 1) * size) for i in range(rounds * workers)]
    k = min(workers, -(-rest // least))  # threads that share the rest
    cuts = [start + round(i * rest / k / unit) * unit for i in range(k)] + [n]
    return spans + [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


class Search:
    """A nearest-word search: ``search(points)`` gives the row of the word nearest to each
    point; ``search_blocks(n, points_of)`` the same for ``n`` points made by ``points_of(start,
    stop)`` (a search that works in blocks makes each block's points in the thread that
    searches it; by default all the points are made at once)."""

    @classmethod
    def build(cls, name: str, vectors: np.ndarray, *, fingerprint=None, **options) -> Search:
        """The search registered as ``name`` (:data:`dptext.mechanisms.search.SEARCHES`) over
        ``vectors``; ``fingerprint``: the space's, for a search that caches a set-up under it
        (the others ignore it)."""
        return cls(vectors, **options)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def search_blocks(self, n: int, points_of: Callable[[int, int], np.ndarray], *,
                      unit: int = 1) -> np.ndarray:
        return self(points_of(0, n))
