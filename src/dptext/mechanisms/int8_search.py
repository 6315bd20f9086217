"""Certified int8 nearest-word search (``search="int8"``): the exact search's words, faster.

The score of word y for point p is S(y) = p.y - |y|^2/2 (the nearest word maximises it). An
int8 pre-filter computes it approximately for all words, bounds the error of every
approximation rigorously, rules out every word whose upper bound is below the best lower bound,
and re-ranks the few words left exactly - in float64, by the formula and tie rule of
:class:`~dptext.mechanisms.nearest.ExactSearch`. The result is the exact search's word for every
point, not an approximation: the agreement with the exact search is 100% by construction
(tested on every epsilon the benchmarks use and on planted near ties), and like every search
the word is a function of the noisy point alone, so the guarantee is unchanged.

Quantization (issue 19 part 1, "a certified quantized pre-filter with exact re-ranking of the
candidates it cannot rule out"): each word row y gets its own scale s_y = max|y_j| / 127 and
integers q_y = round(y / s_y) in [-127, 127] (fixed once). Scales: point i is divided by m_i,
its largest |coordinate| (where the words' |y|^2/2 are equal to 1e-6 relative, as in a unit-norm
space; otherwise m_i is the block's largest, the same for every row), so ps = p / m_i has
coordinates in [-1, 1], and ps gets the integers q_p = round(127 ps) (stored as uint8 q_p +
128). Ranking the words of a point by S(y) / m_i is ranking them by S(y). With y^ = s_y q_y
and p^ = q_p / 127, the integer dot product q_p.q_y is exact (int32 accumulation, |q_p.q_y| <=
d 127^2 < 2^24, so exact in float32 too), and

    |ps.y - p^.y^| <= |ps - p^| |y| + |p^| |y - y^|        (Cauchy-Schwarz)

with both error vectors known exactly (float64). The kernel's bias is -tau |y|^2/2 with one tau
per block (the median of 1/m_i): S(y) / m_i - (tau - 1/m_i) h_mid differs from ps.y - tau |y|^2/2
by at most |tau - 1/m_i| * |(|y|^2/2) - h_mid| (h_mid the middle of the words' |y|^2/2; a
per-row constant does not change the ranking) - nothing in a unit-norm space, zero when all
m_i are equal. The kernel returns its result rounded in float32 (the scale product, the
multiplication and the bias: bounded by 8u (|p^| |y^| + tau |y|^2/2) + 3u tau |y|^2/2 with
u = 2^-24, the bias's own float32 products included). So every word's true (scaled, shifted)
score lies in [O - E, O + E] for the kernel's output O and the sum E of these bounds.

Search of a block: one int8 GEMM per tile of ``tile`` words (oneDNN's u8 x s8 kernel through
torch, float32 output), then the maximum of each group of columns (g, g + 64, ...). A word can
be the nearest only if O + E >= max(O - E) over the words. The words are sorted by their
quantization error into tiles, so that a tile's largest E (per point) is close to its words';
the running lower bound max(tile max - tile E) over the tiles seen so far is at most the final
one, so scanning each tile with it keeps a superset of the words that can win (the first tile
waits and is scanned last, with the final bound); only the groups whose maximum reaches the
bound are read. The pairs kept are then filtered with each pair's own E; where a point keeps
more than one word, the exact search's own float32 test narrows them (float32 scores
[p, 1].[y, -|y|^2/2] are within the bound B of :meth:`ExactSearch.error_bound`: only words
within 2B of the best can win), and a point with more than one word still left is re-ranked in
float64 (|p - y|^2 from the differences, lowest index among exact ties, as
:meth:`ExactSearch._recheck` does). On the default space about 20 words per point pass the
int8 filter at eps 10 and 50, one at eps 200, and 0.6% of points reach float64.

The kernel must be exact for the argument to hold: int8 kernels without VNNI multiply pairs of
u8 x s8 into int16 with saturation (255 x 127 x 2 > 32767). At construction a probe compares
the kernel with exact integer arithmetic on extreme and random inputs at several row counts; if
it is not exact, the words are quantized to [-63, 63] (no pair can saturate) and probed again;
if that fails too, or torch has no oneDNN int8 kernel (not an x86 build), ``search="int8"`` is
refused with a one-line error. Threads: ``workers`` (default: the BLAS's thread count, as the
exact search), each searching whole blocks with one torch thread (the noise of its blocks is
drawn there too).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.nearest import ExactSearch, _blas_threads, _blocks, exact_sq_distances

_U32 = 2.0**-24
_PROBE_ROWS = (1, 3, 17, 128, 1024)
_GROUPS = 64  # groups of a tile's columns (g, g + 64, ...) whose maxima the scan reads first


def _kernel():
    """torch's oneDNN int8 linear ops (prepack, pointwise), or a one-line error."""
    import torch

    ops = getattr(torch.ops, "onednn", None)
    try:
        return ops.qlinear_prepack, ops.qlinear_pointwise
    except (AttributeError, RuntimeError):
        raise DPTextError("search='int8' needs torch's oneDNN int8 kernels (an x86 build of "
                          "torch); use search='exact'") from None


def _score_error(p_err, q_norm, shift, tau, norm, w_err, w_q_norm, half, spread):
    """The bound E on |true scaled score - kernel output| (module docstring): quantization
    of point and word (Cauchy-Schwarz), the common bias's miss, the kernel's float32 rounding
    of product, scale and bias. Point terms (``p_err``, ``q_norm``, ``shift``) and word terms
    (``norm``, ``w_err``, ``w_q_norm``, ``half``, ``spread`` = ||y|^2/2 - h_mid|) are arrays
    of one pair each, or a word term is a tile's maximum (the tile's bound per point)."""
    return (p_err * norm + q_norm * w_err + shift * spread
            + 8 * _U32 * (q_norm * w_q_norm + tau * half) + 3 * _U32 * tau * half)


class Int8Search:
    """Exact nearest word through a certified int8 pre-filter (module docstring)."""

    def __init__(self, vectors: np.ndarray, *, block: int = 1024, tile: int = 1024,
                 workers: int | None = None) -> None:
        if block < 1 or tile < 1 or (workers is not None and workers < 1):
            raise DPTextError("block, tile and workers must be positive")
        self.exact = ExactSearch(vectors)  # the float32 words, |y|^2/2 and the re-rank rule
        self.block, self.tile, self.workers = int(block), int(tile), workers
        self.rechecked = 0  # points re-ranked in float64 (more than one word left)
        self.candidates = 0  # words re-ranked in float64, all points
        words = self.exact.words
        w64 = words.astype(np.float64)  # set-up only: not kept (153 MB for the default space)
        self.norm = np.sqrt(np.einsum("ij,ij->i", w64, w64))
        self.half = self.exact.half_sq  # float64
        self.max_half = float(self.half.max()) if len(words) else 0.0
        low = float(self.half.min()) if len(words) else 0.0
        self.mid_half = (self.max_half + low) / 2
        # each point its own scale where the words' |y|^2/2 are equal to 1e-6 (a unit-norm
        # space): the common bias then costs nothing; else one scale per block
        self.row_scaled = self.max_half - low <= 1e-6 * max(self.max_half, 1e-30)
        self._prepack, self._pointwise = _kernel()
        for levels in (127, 63):
            self._quantize(w64, levels)
            if self._probe(levels):
                break
        else:
            raise DPTextError("search='int8': torch's int8 kernel is not exact on this CPU; "
                              "use search='exact'")
        self.levels = levels

    # ------------------------------------------------------------------ set-up
    def _quantize(self, w64: np.ndarray, levels: int) -> None:
        """Integer codes and scales of the words, their exact errors, and the tiles: the
        words sorted by their error (so each tile's largest error, which bounds its words in
        the scan, is close to theirs), each tile prepacked for the kernel with its bounds."""
        import torch

        words, d = self.exact.words, self.exact.words.shape[1]
        top = np.abs(words).max(1) if len(words) else np.zeros(0, np.float32)
        scale = (top / np.float32(levels)).astype(np.float32)
        scale[scale == 0] = 1.0  # a zero row: q = 0, exact
        q = np.clip(np.rint(w64 / scale[:, None].astype(np.float64)), -levels, levels)
        approx = q * scale[:, None].astype(np.float64)  # exact in float64
        self.w_err = np.sqrt(((w64 - approx) ** 2).sum(1))
        self.q_norm = np.sqrt((approx * approx).sum(1))
        self.order = np.argsort(self.w_err, kind="stable")  # tile position -> word index
        q8 = torch.from_numpy(q[self.order].astype(np.int8))
        half32 = torch.from_numpy(self.exact.half_sq32[self.order])
        scales = torch.from_numpy(scale[self.order])
        self.tiles = []
        for t in range(0, len(words), self.tile):
            sl = self.order[t: t + self.tile]
            stop = t + len(sl)
            bounds = (float(self.norm[sl].max()), float(self.w_err[sl].max()),
                      float(self.q_norm[sl].max()), float(self.half[sl].max()),
                      float(np.abs(self.half[sl] - self.mid_half).max()))
            self.tiles.append((t, self._prepack(q8[t:stop].contiguous(), [self.block, d]),
                               scales[t:stop].contiguous(),
                               torch.zeros(stop - t, dtype=torch.int64),
                               half32[t:stop].contiguous(), bounds))

    def _probe(self, levels: int) -> bool:
        """Whether the kernel equals exact integer arithmetic (to float32 rounding) on
        points with every code at its extreme, on random ones, at several row counts, with
        weights at +-``levels`` (the pairs that saturate an int16 kernel) and random."""
        import torch

        d = self.exact.words.shape[1]
        rng = np.random.default_rng(0)
        n = min(self.tile, 256)
        w = rng.integers(-levels, levels + 1, (n, d))
        w[0], w[1], w[2] = levels, -levels, np.where(np.arange(d) % 2, levels, -levels)
        packed = self._prepack(torch.from_numpy(w.astype(np.int8)), [self.block, d])
        ones = torch.ones(n, dtype=torch.float32)
        zeros = torch.zeros(n, dtype=torch.int64)
        for rows in _PROBE_ROWS:
            x = rng.integers(1, 256, (rows, d))
            x[0] = 255
            if rows > 2:
                x[1], x[2] = 1, np.where(np.arange(d) % 2, 255, 1)
            got = self._pointwise(torch.from_numpy(x.astype(np.uint8)), 1.0, 128, packed, ones,
                                  zeros, None, 1.0, 0, torch.float32, "none", [], "").numpy()
            want = ((x - 128) @ w.T).astype(np.float64)  # exact int64
            if not np.array_equal(got.astype(np.float64), want):
                return False
        return True

    # ------------------------------------------------------------------ search
    def __call__(self, points: np.ndarray) -> np.ndarray:
        points64 = np.asarray(points, dtype=np.float64)
        return self.search_blocks(len(points64), lambda s, e: points64[s:e])

    def search_blocks(self, n: int, points_of: Callable[[int, int], np.ndarray], *,
                      unit: int = 1) -> np.ndarray:
        """Nearest words of ``n`` points made block by block by ``points_of(start, stop)``
        (float64 rows; blocks on multiples of ``unit``): ``workers`` threads (default: the
        BLAS's thread count, as the exact search), each searching whole blocks with one torch
        thread (OpenMP's count is per calling thread), so the noise, the quantization and the
        re-ranking run in parallel too."""
        import torch

        out = np.empty(n, dtype=np.int64)
        if n == 0:
            return out
        if len(self.exact.words) == 0:
            raise DPTextError("cannot search an empty vocabulary")
        workers = self.workers or _blas_threads()
        spans = _blocks(n, self.block, workers, unit)
        workers = min(workers, len(spans))

        def run(span: tuple[int, int]) -> tuple[int, int]:
            s, e = span
            out[s:e], rechecked, candidates = self._search_block(points_of(s, e))
            return rechecked, candidates

        if workers == 1:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                counts = list(map(run, spans))
            finally:
                torch.set_num_threads(threads)
        else:
            with ThreadPoolExecutor(workers, initializer=torch.set_num_threads,
                                    initargs=(1,)) as pool:
                counts = list(pool.map(run, spans))
        self.rechecked += sum(c[0] for c in counts)
        self.candidates += sum(c[1] for c in counts)
        return out

    def _search_block(self, p: np.ndarray) -> np.ndarray:
        import torch

        b = len(p)
        if not np.isfinite(p).all():
            raise DPTextError("the points to search must be finite")
        # scaled units: point i divided by m_i, its largest coordinate where the words' |y|^2/2
        # are (nearly) equal, else by the block's (module docstring, "Scales")
        m = np.abs(p).max(1)
        if not self.row_scaled:
            m = np.full(b, m.max())
        m[m == 0] = 1.0
        inv = 1.0 / m
        tau = float(np.float32(np.median(inv)))  # the bias is -tau |y|^2/2 for every row
        shift = np.abs(tau - inv)  # what the common bias misses, times |y|^2/2 - its middle
        ps = p * inv[:, None]
        scale = float(np.float32(1.0 / 127))
        q = np.clip(np.rint(ps / scale), -127, 127)  # uint8 codes q + 128
        codes = torch.from_numpy((q + 128).astype(np.uint8))
        approx = q * scale  # exact in float64
        p_err = np.sqrt(((ps - approx) ** 2).sum(1))
        q_norm = np.sqrt((approx * approx).sum(1))
        p_norm = np.sqrt(np.einsum("ij,ij->i", p, p))
        # a margin far above the float64 rounding of the bounds and of ps (and far below any
        # score gap that matters)
        slack = 1e-9 * (p_norm * inv * self.exact.radius + tau * self.max_half + 1.0)
        below = np.float32(-np.inf)
        lower = np.full(b, -np.inf)  # a lower bound of each point's best score
        first = None
        found: list[tuple] = []

        def bound(tile_bounds) -> np.ndarray:  # the largest error of each point in a tile
            return _score_error(p_err, q_norm, shift, tau, *tile_bounds) + slack

        def scan(out, tops, limit64, t) -> None:  # every word of the tile with O >= limit
            # numpy on the kernel's output (no copy): its nonzero is 4x torch's on these sizes
            limit = np.nextafter(limit64.astype(np.float32), below)  # rounded down: a superset
            o = out.numpy()
            width = o.shape[1]
            if tops is None:
                r, c = np.divmod(np.flatnonzero(o >= limit[:, None]), width)
                found.append((r, c + t, o[r, c]))
                return
            # the groups whose maximum reaches the limit; group g holds columns g + k G
            hit_r, hit_g = np.divmod(np.flatnonzero(tops.numpy() >= limit[:, None]), _GROUPS)
            index = (hit_r * width + hit_g)[:, None] + np.arange(0, width, _GROUPS)
            vals = o.reshape(-1)[index]
            hit, k = np.divmod(np.flatnonzero(vals >= limit[hit_r, None]), index.shape[1])
            found.append((hit_r[hit], k * _GROUPS + hit_g[hit] + t, vals[hit, k]))

        minus_tau = torch.tensor(-tau, dtype=torch.float32)
        for t, packed, scales, zeros, half32, tile_bounds in self.tiles:
            out = self._pointwise(codes, scale, 128, packed, scales, zeros, half32 * minus_tau,
                                  1.0, 0, torch.float32, "none", [], "")
            tops = None if out.shape[1] % _GROUPS else out.view(b, -1, _GROUPS).amax(1)
            err = bound(tile_bounds)
            tile_top = (out if tops is None else tops).amax(1).numpy().astype(np.float64)
            if first is None:  # the first tile is scanned last, with the final bound
                first = (out, tops, err, t)
            else:
                # the running bound is at most the final one: a superset of the words kept
                scan(out, tops, lower - err, t)
            np.maximum(lower, tile_top - err, out=lower)
        scan(first[0], first[1], lower - first[2], first[3])
        rows = np.concatenate([f[0] for f in found])
        cols = self.order[np.concatenate([f[1] for f in found])]
        vals = np.concatenate([f[2] for f in found]).astype(np.float64)
        # each pair's own bound; keep the words whose upper bound reaches the best lower bound
        err = _score_error(p_err[rows], q_norm[rows], shift[rows], tau, self.norm[cols],
                           self.w_err[cols], self.q_norm[cols], self.half[cols],
                           np.abs(self.half[cols] - self.mid_half))
        best = np.full(b, -np.inf)
        np.maximum.at(best, rows, vals - err)
        keep = vals + err >= best[rows] - slack[rows]
        rows, cols = self._float32_filter(p, p_norm, rows[keep], cols[keep])
        return self._rerank(p, rows, cols)

    def _float32_filter(self, p: np.ndarray, p_norm: np.ndarray, rows: np.ndarray,
                        cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pairs of points with several candidates, narrowed by the exact search's own
        float32 test: the float32 score [p, 1].[y, -|y|^2/2] is within B of the exact one
        (:meth:`ExactSearch.error_bound`, any summation order), so only the words within 2B
        of a point's best float32 score can be its nearest."""

        b, d = p.shape
        many = np.bincount(rows, minlength=b)[rows] > 1
        if not many.any():
            return rows, cols
        r, c = rows[many], cols[many]
        order = np.argsort(r, kind="stable")
        r, c = r[order], c[order]
        point = np.empty(d + 1, dtype=np.float32)
        point[d] = 1.0
        score = np.empty(len(r), dtype=np.float32)
        edges = np.flatnonzero(np.r_[True, r[1:] != r[:-1], True])
        words = self.exact.augmented
        for a, z in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
            point[:d] = p[r[a]]  # rounded to float32, as the exact search rounds it
            np.matmul(words[c[a:z]], point, out=score[a:z])
        score = score.astype(np.float64)
        best = np.full(b, -np.inf)
        np.maximum.at(best, r, score)
        bound2 = 2.0 * self.exact.error_bound(p_norm)
        near = score >= best[r] - bound2[r]
        return np.r_[rows[~many], r[near]], np.r_[cols[~many], c[near]]

    def _rerank(self, p: np.ndarray, rows: np.ndarray, cols: np.ndarray
                ) -> tuple[np.ndarray, int, int]:
        """The nearest word of each point among its candidate pairs (``rows``, ``cols``):
        |p - y|^2 in float64 by the exact search's own :func:`exact_sq_distances`, lowest
        index among exact ties, so both searches rank the same."""
        b = len(p)
        counts = np.bincount(rows, minlength=b)
        if (counts == 0).any():
            raise AssertionError("int8 search lost a point")
        result = np.empty(b, dtype=np.int64)
        one = counts[rows] == 1
        result[rows[one]] = cols[one]
        rows, cols = rows[~one], cols[~one]
        if len(rows):
            dist = np.empty(len(rows))
            for a in range(0, len(rows), 4096):  # chunks: bounded temporaries
                dist[a: a + 4096] = exact_sq_distances(self.exact.words, cols[a: a + 4096],
                                                       p[rows[a: a + 4096]])
            order = np.lexsort((cols, dist, rows))  # by point, distance, then word index
            rows, cols = rows[order], cols[order]
            first = np.r_[True, rows[1:] != rows[:-1]]
            result[rows[first]] = cols[first]
        return result, int((counts > 1).sum()), len(rows)
