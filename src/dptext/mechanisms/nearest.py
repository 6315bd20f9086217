"""Nearest word (Euclidean) to many points: the search of the multivariate Laplace mechanism.

Exact search (the default): argmin_y |p - y|^2 = argmax_y (p.y - |y|^2 / 2). Points go in
blocks of ``block`` rows; per block, the words in tiles of ``tile`` rows: one float32 GEMM per
tile (numpy's BLAS, OpenBLAS here, which reaches a higher float32 rate than torch's on this
CPU) written into a preallocated buffer, minus |y|^2/2, and a running top-two per point. No
float64 copy of the vectors is made.

Exactness: a float32 score differs from the exact one by at most
``B = (d + 4) * u * (|p| * r + r^2 / 2) * 1.01`` (u = 2^-24, r the largest word norm, d the
dimension: the standard bound gamma_d * sum |p_i y_i| of a dot product in any summation order,
plus the rounding of the point, of |y|^2/2 and of the subtraction). Where the best and the
second-best float32 scores are within ``2B``, the order may be wrong: those points (rare) are
re-scored in float64 over every word whose float32 score is within ``2B`` of the best. The
result equals a brute-force float64 search (the point itself taken in float64).

On a GPU (``device="cuda"``, :class:`TorchExactSearch`) the same search runs with torch: the
word matrix stays on the device, each block of points is one float32 GEMM (full float32: TF32
is switched off for the call, so the bound above holds) with a top-two, and the near ties are
re-checked in float64 on the CPU exactly as above.

Indexed search (``search="ivf"`` or ``"hnsw"``, faiss-cpu, optional extra ``faiss``): an
approximate nearest neighbour over an index built from the public word vectors alone. The word
returned is still a function of the noisy point alone - post-processing of the Laplace
output - so the metric-DP guarantee is unchanged; only the agreement with the exact nearest
word is below 100% (``benchmarks/bench_mechanisms.py --laplace`` reports it).
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError

SEARCHES = ("exact", "ivf", "hnsw")
_U32 = 2.0**-24


class ExactSearch:
    """Exact nearest word, float32 GEMM with a certified float64 re-check of near ties."""

    def __init__(self, vectors: np.ndarray, *, block: int = 256, tile: int = 8192) -> None:
        self.words = np.ascontiguousarray(vectors, dtype=np.float32)
        self.half_sq = 0.5 * np.einsum("ij,ij->i", self.words, self.words, dtype=np.float64)
        self.half_sq32 = self.half_sq.astype(np.float32)
        self.radius = float(np.sqrt(2.0 * self.half_sq.max())) if len(self.words) else 0.0
        self.block, self.tile = int(block), int(tile)
        self.rechecked = 0  # points re-scored in float64 so far (for the benchmark)

    def error_bound(self, point_norms: np.ndarray) -> np.ndarray:
        d, r = self.words.shape[1], self.radius
        return (d + 4) * _U32 * (point_norms * r + 0.5 * r * r) * 1.01

    def __call__(self, points: np.ndarray) -> np.ndarray:
        points64 = np.asarray(points, dtype=np.float64)
        n, m = len(points64), len(self.words)
        out = np.empty(n, dtype=np.int64)
        if n == 0:
            return out
        if m == 0:
            raise DPTextError("cannot search an empty vocabulary")
        bound2 = 2.0 * self.error_bound(np.linalg.norm(points64, axis=1))
        buf = np.empty((self.block, min(self.tile, m)), dtype=np.float32)
        for s in range(0, n, self.block):
            p = points64[s: s + self.block].astype(np.float32)
            b = len(p)
            best = np.full(b, -np.inf, dtype=np.float32)
            second = np.full(b, -np.inf, dtype=np.float32)
            arg = np.zeros(b, dtype=np.int64)
            rows = np.arange(b)
            for t in range(0, m, self.tile):
                w = self.words[t: t + self.tile]
                sc = buf[:b, : len(w)]
                np.matmul(p, w.T, out=sc)
                sc -= self.half_sq32[t: t + len(w)]
                j = sc.argmax(1)
                top = sc[rows, j]
                sc[rows, j] = -np.inf
                nxt = sc.max(1)
                sc[rows, j] = top
                # merge the tile's top two into the running top two
                new_best = top > best
                second = np.where(new_best, np.maximum(best, nxt), np.maximum(second, top))
                arg = np.where(new_best, t + j, arg)
                best = np.where(new_best, top, best)
            out[s: s + b] = arg
            close = np.flatnonzero(best.astype(np.float64) - second < bound2[s: s + b])
            for k in close:
                out[s + k] = self._recheck(points64[s + k], p[k], float(best[k]),
                                           float(bound2[s + k]))
            self.rechecked += len(close)
        return out

    def _recheck(self, point64: np.ndarray, point32: np.ndarray, best: float,
                 bound2: float) -> int:
        """Exact float64 argmax over the words whose float32 score is within ``bound2`` of
        ``best`` (the true best is among them)."""
        approx = self.words @ point32 - self.half_sq32
        cand = np.flatnonzero(approx >= best - bound2)
        exact = self.words[cand].astype(np.float64) @ point64 - self.half_sq[cand]
        return int(cand[np.argmax(exact)])  # the lowest index among exact ties


class TorchExactSearch(ExactSearch):
    """:class:`ExactSearch` with the float32 GEMM and top-two in torch on ``device``."""

    def __init__(self, vectors: np.ndarray, *, device: str = "cuda", block: int = 4096) -> None:
        import torch

        super().__init__(vectors, block=block)
        self.device = torch.device(device)
        self._words = torch.from_numpy(self.words).to(self.device)
        self._half_sq32 = torch.from_numpy(self.half_sq32).to(self.device)

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
            raise DPTextError(f"search={search!r} runs on the CPU (faiss-cpu); device='cuda' "
                              "is for search='exact'")
        return TorchExactSearch(vectors, device="cuda", **options)
    if search == "exact":
        return ExactSearch(vectors, **options)
    if search in ("ivf", "hnsw"):
        return FaissSearch(vectors, search, **options)
    raise DPTextError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
