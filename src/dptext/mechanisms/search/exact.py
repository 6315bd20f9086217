"""Nearest word (Euclidean) to many points: the search of the multivariate Laplace mechanism.

Exact search (the default): argmin_y |p - y|^2 = argmax_y (p.y - |y|^2 / 2). Points go in
blocks of ``block`` rows (1024), words in tiles of ``tile`` rows (1024); per (block, tile) one
float32 GEMM (numpy's BLAS, OpenBLAS here, which reaches a higher float32 rate than torch's on
this CPU) of the points [p, 1] against [y, -|y|^2/2] (the score comes out of the GEMM: no
subtraction pass; the 385th column costs 0.3%), written into a preallocated row-major buffer,
then one argmax per row over the tile while it is still in cache; the tile's runner-up (the
winner set to -inf, a max) is computed only for the rows whose tile top is a new best (about
ln(#tiles) of the 49 tiles of the default space), and each tile's best score is kept per point
(so a near tie is re-checked over the tiles that may hold the best only). No float64 copy of
the vectors is made.

Parallelism: ``workers`` threads (default: the BLAS's thread count, i.e. ``OMP_NUM_THREADS``;
capped by the cores this process may use), each searching whole blocks with a one-thread BLAS
(threadpoolctl, restored after the call; during it, other threads of the process also get a
one-thread BLAS). Two independent single-thread GEMMs beat one two-thread GEMM on this machine
(no barrier per call, and the argmax passes run in parallel too): see
``benchmarks/bench_laplace.py``, which measures both layouts as the bound. The blocks are
balanced over the threads (:func:`~dptext.mechanisms.search.base.blocks`: full blocks while
every thread gets one, the rest shared, no short last block searched alone).
:meth:`ExactSearch.search_blocks` takes a function that makes a block's points and calls it in
the thread that searches the block: the Laplace mechanism draws its noise there (in parallel,
and no array of all the points).

Exactness: a float32 score differs from the exact one by at most
``B = (d + 4) * u * (|p| * r + r^2 / 2) * 1.01`` (u = 2^-24, r the largest word norm, d the
dimension: the standard bound gamma_(d+1) * (sum |p_i y_i| + |y|^2/2) of the augmented dot
product [p, 1].[y, -|y|^2/2] in any summation order, plus the rounding of the point and of
|y|^2/2 to float32). Where the best and the
second-best float32 scores are within ``2B``, the order may be wrong: those points (rare) are
re-scored in float64 (|p - y|^2 from the differences, row by row) over every word whose
float32 score is within ``2B`` of the best. The result equals a brute-force float64 search
(the point itself taken in float64; exact ties: the lowest index).

On a GPU (``device="cuda"``, :mod:`~dptext.mechanisms.search.torch`) the same search runs
with torch: the word matrix stays on the device, each block of points is one float32 GEMM
(full float32: TF32 is switched off for the call, so the bound above holds) with a top-two, and
the near ties are re-checked in float64 on the CPU exactly as above.

Certified int8 search (``search="int8"``, :mod:`dptext.mechanisms.search.int8`): the same words
as the exact search, through an int8 pre-filter with rigorous error bounds.

Indexed search (``search="ivf"`` or ``"hnsw"``, :mod:`~dptext.mechanisms.search.faiss`): an
approximate nearest neighbour over an index built from the public word vectors alone. The word
returned is still a function of the noisy point alone - post-processing of the Laplace
output - so the metric-DP guarantee is unchanged; only the agreement with the exact nearest
word is below 100% (``benchmarks/bench_laplace.py --indexed`` reports it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.search.base import (
    Search,
    blas_threads,
    blocks,
    exact_sq_distances,
    one_blas_thread,
)

_U32 = 2.0**-24


class ExactSearch(Search):
    """Exact nearest word, float32 GEMM with a certified float64 re-check of near ties.

    ``block`` points x ``tile`` words per GEMM; ``workers`` threads, each searching whole
    blocks of points with a one-thread BLAS (``None``: as many as the BLAS has threads now,
    so ``OMP_NUM_THREADS=1`` or :func:`threadpoolctl.threadpool_limits` make it serial)."""

    def __init__(self, vectors: np.ndarray, *, block: int = 1024, tile: int = 1024,
                 workers: int | None = None) -> None:
        self.words = np.ascontiguousarray(vectors, dtype=np.float32)
        self.half_sq = 0.5 * np.einsum("ij,ij->i", self.words, self.words, dtype=np.float64)
        self.half_sq32 = self.half_sq.astype(np.float32)
        self.radius = float(np.sqrt(2.0 * self.half_sq.max())) if len(self.words) else 0.0
        if block < 1 or tile < 1 or (workers is not None and workers < 1):
            raise DPTextError("block, tile and workers must be positive")
        self.block, self.tile, self.workers = int(block), int(tile), workers
        self.rechecked = 0  # points re-scored in float64 so far (for the benchmark)
        # [y, -|y|^2/2]: the score p.y - |y|^2/2 comes out of the GEMM of [p, 1] (no pass over
        # the scores to subtract it; d + 1 = 385 columns cost 0.3% more than d)
        m, d = self.words.shape
        self.augmented = np.empty((m, d + 1), dtype=np.float32)
        self.augmented[:, :d] = self.words
        self.augmented[:, d] = -self.half_sq32

    def error_bound(self, point_norms: np.ndarray) -> np.ndarray:
        d, r = self.words.shape[1], self.radius
        return (d + 4) * _U32 * (point_norms * r + 0.5 * r * r) * 1.01

    def __call__(self, points: np.ndarray) -> np.ndarray:
        points64 = np.asarray(points, dtype=np.float64)
        return self.search_blocks(len(points64), lambda s, e: points64[s:e])

    def search_blocks(self, n: int, points_of: Callable[[int, int], np.ndarray], *,
                      unit: int = 1) -> np.ndarray:
        """Nearest words of ``n`` points that ``points_of(start, stop)`` makes block by block
        (float64, rows ``start:stop``): each block's points are made in the worker thread that
        searches them, so making them (e.g. the Laplace noise) runs in parallel too and no
        array of all the points exists. Blocks start and end on multiples of ``unit`` (or at
        ``n``); ``points_of`` is called once per block, from any thread, in any order."""
        out = np.empty(n, dtype=np.int64)
        if n == 0:
            return out
        if len(self.words) == 0:
            raise DPTextError("cannot search an empty vocabulary")
        workers = self._workers()
        spans = blocks(n, self.block, workers, unit)

        def run(span: tuple[int, int]) -> int:  # one block, near ties re-checked here: how many
            s, e = span
            points64 = points_of(s, e)
            bound2 = 2.0 * self.error_bound(np.sqrt(np.einsum("ij,ij->i", points64, points64)))
            arg, margin, tops = self._search_block(points64)
            near = np.flatnonzero(margin < bound2)
            for k in near.tolist():
                arg[k] = self._recheck_tiles(points64[k], tops[k], float(bound2[k]))
            out[s:e] = arg
            return len(near)

        workers = min(workers, len(spans))
        if workers == 1:
            self.rechecked += sum(map(run, spans))
        else:
            with one_blas_thread(), ThreadPoolExecutor(workers) as pool:
                self.rechecked += sum(pool.map(run, spans))
        return out

    def _workers(self) -> int:
        if self.workers is not None:
            return self.workers
        return blas_threads()

    def _search_block(self, points64: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best word, float32 margin best - second best, and each tile's best score, for
        one block of points (one GEMM per tile into a buffer that stays in cache, then an
        argmax over each row while it is there)."""
        b, (m, d), tile = len(points64), self.words.shape, self.tile
        words = self.augmented
        p = np.empty((b, d + 1), dtype=np.float32)
        p[:, :d] = points64  # rounded to float32 once
        p[:, d] = 1.0
        buf = np.empty(b * min(tile, m), dtype=np.float32)  # one tile's scores, row-major
        best = np.full(b, -np.inf, dtype=np.float32)
        second = np.full(b, -np.inf, dtype=np.float32)
        arg = np.zeros(b, dtype=np.int64)
        rows = np.arange(b)
        tops = np.empty((b, -(-m // tile)), dtype=np.float32)  # each tile's best score
        at = None
        for k, t in enumerate(range(0, m, tile)):
            width = min(tile, m - t)
            scores = buf[: b * width]
            sc = scores.reshape(b, width)  # contiguous: each point's scores in a row
            np.matmul(p, words[t: t + width].T, out=sc)
            j = sc.argmax(1)  # first index on ties
            if at is None or width != tile:
                starts = rows * width
            at = starts + j
            top = scores[at]
            tops[:, k] = top
            new = np.flatnonzero(top > best)  # an equal score keeps the earlier (lower) index
            np.maximum(second, top, out=second)  # right for every row but the new bests
            if len(new):
                # the tile's runner-up matters only where its top is the new best: the
                # winner's score set to -inf, a max over those rows (all rows: in place)
                if 2 * len(new) >= b:
                    scores[at] = -np.inf
                    runner = sc.max(1)[new]
                else:
                    sub = sc[new]
                    sub[np.arange(len(new)), j[new]] = -np.inf
                    runner = sub.max(1)
                second[new] = np.maximum(best[new], runner)
                best[new] = top[new]
                arg[new] = t + j[new]
        return arg, best.astype(np.float64) - second, tops

    def _recheck_tiles(self, point64: np.ndarray, tops: np.ndarray, bound2: float) -> int:
        """Exact float64 nearest word among the words whose float32 score is at least
        best - 2B (in the tiles whose best reaches that): the true best is among them (its
        score, evaluated any way in float32, is within B of the exact one, and so is the
        best's)."""
        limit = float(tops.max()) - bound2
        m, tile = len(self.words), self.tile
        p = np.append(point64.astype(np.float32), np.float32(1.0))
        cand = []
        for t in np.flatnonzero(tops >= limit).tolist():  # every tile that may hold the best
            approx = self.augmented[t * tile: min((t + 1) * tile, m)] @ p
            cand.append(t * tile + np.flatnonzero(approx >= limit))
        cand = np.concatenate(cand)
        return int(cand[np.argmin(exact_sq_distances(self.words, cand, point64))])

    def _recheck(self, point64: np.ndarray, point32: np.ndarray, best: float,
                 bound2: float) -> int:
        """Exact float64 argmax over the words whose float32 score is within ``bound2`` of
        ``best`` (the true best is among them)."""
        approx = self.words @ point32 - self.half_sq32
        cand = np.flatnonzero(approx >= best - bound2)
        exact = exact_sq_distances(self.words, cand, point64)
        return int(cand[np.argmin(exact)])  # the lowest index among exact ties
