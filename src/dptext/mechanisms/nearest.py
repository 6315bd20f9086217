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
balanced over the threads (:func:`_blocks`: full blocks while every thread gets one, the rest
shared, no short last block searched alone). :meth:`ExactSearch.search_blocks` takes a
function that makes a block's points and calls it in the thread that searches the block: the
Laplace mechanism draws its noise there (in parallel, and no array of all the points).

Exactness: a float32 score differs from the exact one by at most
``B = (d + 4) * u * (|p| * r + r^2 / 2) * 1.01`` (u = 2^-24, r the largest word norm, d the
dimension: the standard bound gamma_(d+1) * (sum |p_i y_i| + |y|^2/2) of the augmented dot
product [p, 1].[y, -|y|^2/2] in any summation order, plus the rounding of the point and of
|y|^2/2 to float32). Where the best and the
second-best float32 scores are within ``2B``, the order may be wrong: those points (rare) are
re-scored in float64 (|p - y|^2 from the differences, row by row) over every word whose
float32 score is within ``2B`` of the best. The result equals a brute-force float64 search
(the point itself taken in float64; exact ties: the lowest index).

On a GPU (``device="cuda"``, :class:`TorchExactSearch`) the same search runs with torch: the
word matrix stays on the device, each block of points is one float32 GEMM (full float32: TF32
is switched off for the call, so the bound above holds) with a top-two, and the near ties are
re-checked in float64 on the CPU exactly as above.

Certified int8 search (``search="int8"``, :mod:`dptext.mechanisms.int8_search`): the same words
as the exact search, through an int8 pre-filter with rigorous error bounds.

Indexed search (``search="ivf"`` or ``"hnsw"``, faiss-cpu, optional extra ``faiss``): an
approximate nearest neighbour over an index built from the public word vectors alone. The word
returned is still a function of the noisy point alone - post-processing of the Laplace
output - so the metric-DP guarantee is unchanged; only the agreement with the exact nearest
word is below 100% (``benchmarks/bench_laplace.py --indexed`` reports it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from dptext.devices import usable_cores
from dptext.errors import DPTextError

SEARCHES = ("exact", "int8", "ivf", "hnsw")  # int8: the exact words (int8_search)
_U32 = 2.0**-24
_MIN_ROWS = 128  # fewer points per worker than this: one worker
_blas = None  # threadpoolctl's controller of the BLAS numpy uses (found once)


def _blas_controller():
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController().select(user_api="blas")
    return _blas


def _blas_threads() -> int:
    """Threads the BLAS may use now (its setting: ``OMP_NUM_THREADS``, threadpoolctl), at
    most the cores this process may run on."""
    threads = [c.num_threads for c in _blas_controller().lib_controllers]
    return max(1, min(usable_cores(), min(threads) if threads else 1))


def _one_blas_thread() -> AbstractContextManager:
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


def _blocks(n: int, block: int, workers: int, unit: int = 1) -> list[tuple[int, int]]:
    """The blocks [start, stop) of ``n`` points for ``workers`` threads, on multiples of
    ``unit``: rounds of one full block (``block`` rows, rounded down to a multiple of
    ``unit``) per worker; what is left after them is split evenly over the workers (at least
    ``_MIN_ROWS`` rows each) or, if that is too little to share, spread over the last round's
    blocks (up to ``_MIN_ROWS`` rows more than ``block``) - so that the threads finish
    together instead of one searching a last block alone (3,000 points, 2 threads: 1024,
    1024, 512, 440 instead of 1024, 1024, 952; 4,104: 1024, 1024, 1024, 1032 instead of a
    fifth block of 8 points)."""
    size = max(unit, block - block % unit)
    least = min(_MIN_ROWS, size)
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


class ExactSearch:
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
        spans = _blocks(n, self.block, workers, unit)

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
            with _one_blas_thread(), ThreadPoolExecutor(workers) as pool:
                self.rechecked += sum(pool.map(run, spans))
        return out

    def _workers(self) -> int:
        if self.workers is not None:
            return self.workers
        return _blas_threads()

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


class TorchExactSearch(ExactSearch):
    """:class:`ExactSearch` with the float32 GEMM and top-two in torch on ``device``."""

    def __init__(self, vectors: np.ndarray, *, device: str = "cuda", block: int = 4096) -> None:
        import torch

        super().__init__(vectors, block=block)
        self.device = torch.device(device)
        self._words = torch.from_numpy(self.words).to(self.device)
        self._half_sq32 = torch.from_numpy(self.half_sq32).to(self.device)

    def search_blocks(self, n: int, points_of: Callable[[int, int], np.ndarray], *,
                      unit: int = 1) -> np.ndarray:
        """All ``n`` points made at once (the GPU searches them in its own blocks)."""
        return self(points_of(0, n)) if n else np.empty(0, dtype=np.int64)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        import torch

        points64 = np.asarray(points, dtype=np.float64)
        n, m = len(points64), len(self.words)
        out = np.empty(n, dtype=np.int64)
        if n == 0:
            return out
        if m == 0:
            raise DPTextError("cannot search an empty vocabulary")
        bound2 = 2.0 * self.error_bound(np.linalg.norm(points64, axis=1))
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False  # the error bound is for float32
        try:
            for s in range(0, n, self.block):
                p = points64[s: s + self.block].astype(np.float32)
                sc = torch.from_numpy(p).to(self.device) @ self._words.T
                sc -= self._half_sq32
                if m >= 2:
                    top, arg = sc.topk(2, dim=1)
                    best, second = top[:, 0].cpu().numpy(), top[:, 1].cpu().numpy()
                else:
                    top, arg = sc.max(1, keepdim=True)
                    best = top[:, 0].cpu().numpy()
                    second = np.full(len(p), -np.inf, dtype=np.float32)
                out[s: s + len(p)] = arg[:, 0].cpu().numpy()
                close = np.flatnonzero(best.astype(np.float64) - second < bound2[s: s + len(p)])
                for k in close:
                    out[s + k] = self._recheck(points64[s + k], p[k], float(best[k]),
                                               float(bound2[s + k]))
                self.rechecked += len(close)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        return out


class FaissSearch:
    """Approximate nearest word with a faiss index over the word vectors (public data only)."""

    def __init__(self, vectors: np.ndarray, kind: str, *, nlist: int | None = None,
                 nprobe: int = 8, hnsw_m: int = 32, ef_search: int = 64, seed: int = 0) -> None:
        try:
            import faiss
        except ImportError:
            raise DPTextError(f"search={kind!r} needs faiss: pip install 'dptext[faiss]'"
                              ) from None
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        d = x.shape[1]
        if kind == "ivf":
            nlist = nlist or max(1, int(4 * np.sqrt(len(x))))
            quantizer = faiss.IndexFlatL2(d)
            index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_L2)
            index.cp.seed = seed  # k-means seeded: the index is a fixed function of the vectors
            index.train(x)
            index.add(x)
            index.nprobe = nprobe
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_L2)
            index.add(x)
            index.hnsw.efSearch = ef_search
        else:
            raise DPTextError(f"unknown faiss search {kind!r}")
        self.index, self.kind = index, kind

    def __call__(self, points: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(points, dtype=np.float32)
        _, idx = self.index.search(q, 1)
        return idx[:, 0].astype(np.int64)


def make_search(vectors: np.ndarray, search: str = "exact", device: str = "cpu", **options):
    """The nearest-word search ``search`` over ``vectors`` (one of :data:`SEARCHES`) on
    ``device`` ("cpu", "cuda", "auto"; the faiss searches run on the CPU)."""
    from dptext.devices import resolve_device

    if resolve_device(device) == "cuda":
        if search != "exact":
            raise DPTextError(f"search={search!r} runs on the CPU; device='cuda' "
                              "is for search='exact'")
        return TorchExactSearch(vectors, device="cuda", **options)
    if search == "exact":
        return ExactSearch(vectors, **options)
    if search == "int8":
        from dptext.mechanisms.int8_search import Int8Search

        return Int8Search(vectors, **options)
    if search in ("ivf", "hnsw"):
        return FaissSearch(vectors, search, **options)
    raise DPTextError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
