"""Certified int8 nearest-word search (``search="int8"``): the exact search's words, faster.

The score of word y for point p is S(y) = p.y - |y|^2/2 (the nearest word maximises it). An
int8 pre-filter computes it approximately for all words, bounds the error of every
approximation rigorously, rules out every word whose upper bound is below the best lower bound,
and re-ranks the few words left exactly - in float64, by the formula and tie rule of
:class:`~dptext.mechanisms.search.exact.ExactSearch`. The result is the exact search's word for
every point, not an approximation: the agreement with the exact search is 100% by construction
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
torch). A word can be the nearest only if its upper bound reaches the best lower bound over the
words. The words are sorted by their quantization error into tiles, so that a tile's largest E
(per point) is close to its words'.

- The first tile is read in float32 (output O): it gives every point a lower bound L of its
  best score, max(O - E), and it is scanned last, with the final bound.
- 8-bit output: the other tiles are read as levels 0..255 (the kernel's own requantization:
  its float32 score, shifted by v0 through the bias, divided by a step and rounded to the
  nearest level, clamped), 4x less to write and to read than float32. The window (v0, step)
  is set per block from the first tile: level 0 below every point's L minus its largest
  error, level 255 ``_RISE`` times (first tile's best - its mean) above the highest L. A level
  v in 1..254 says the score lies within step (v +- (1/2 + delta)) + v0 (+- zeta, the float32
  rounding of the shifted bias and of the sum), so with the word's E it is an interval; level
  255 gives only a lower end (the word is never ruled out: a window too low costs words to
  test, not exactness), level 0 only an upper end, which by the choice of v0 is below every
  point's L, so level 0 is never kept. Where the step would be coarser than ``_COARSEST``
  times the points' median E (points of very different scales in one block), the tiles are
  read in float32 as the first. At construction a probe checks that the 8-bit output reads
  as assumed (delta = ``_U8_DELTA`` levels) on random codes, scales, biases and windows; if it
  does not, every tile is read in float32.
- Each tile is scanned once, as soon as it is read, with the running lower bound max(tile top
  - tile E) over the tiles so far (at most the final one: a superset of the words that can
  win), through the maxima of column groups (g, g + G, ...): only the groups whose maximum
  reaches the bound are read.

The pairs kept are then filtered with each pair's own E; where a point keeps more than one
word, the exact search's own float32 test narrows them (float32 scores [p, 1].[y, -|y|^2/2]
are within the bound B of :meth:`ExactSearch.error_bound`, any summation order: only words
within 2B of the best can win; the pairs' scores come from one call of torch's sampled dense
product on their sparse pattern, probed at construction against float64 with that bound, else
a per-point loop), and a point with more than one word still left is re-ranked in float64
(|p - y|^2 from the differences, lowest index among exact ties, as
:meth:`ExactSearch._recheck` does). On the default space about 25 words per point pass the
int8 filter at eps 10 and 50, one at eps 200, and 0.6% of points reach float64.

The kernel must be exact for the argument to hold (int8 kernels without VNNI saturate u8 x s8
pairs in int16): probes at construction decide the word codes' width (127 or 63 levels) or
refuse ``search="int8"`` with a one-line error, and the word codes are cached with the
mechanism's tables (:mod:`~dptext.mechanisms.search.int8_setup`). Threads: ``workers``
(default: the BLAS's thread count, as the exact search), each searching whole blocks with one
torch thread (the noise of its blocks is drawn there too).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.search.base import Search, blas_threads, blocks, exact_sq_distances
from dptext.mechanisms.search.exact import ExactSearch
from dptext.mechanisms.search.int8_setup import (
    _U8_DELTA,
    LEVELS,
    cached_codes,
    probe_kernel,
    probe_sampled,
    probe_u8,
)
from dptext.mechanisms.search.int8_setup import kernel as _kernel
from dptext.mechanisms.search.int8_setup import sampled_dot as _sampled_dot

_U32 = 2.0**-24
_GROUPS = 64  # groups of a tile's columns (g, g + 64, ...) whose maxima the scan reads first
_GROUPS8 = 128  # the same for 8-bit tiles (torch's uint8 maximum is 10x faster at 128 than 64)
# the 8-bit window reaches this many times (first tile's best - its mean) above a point's lower
# bound: on the default space a point's best rarely lies higher (it would read 255 and be kept)
_RISE = 1.5
# the coarsest level allowed, in units of the points' median largest error: coarser levels keep
# more words for the float32 test (a pair's interval widens by about two levels)
_COARSEST = 2.0


class Int8SpeedWarning(UserWarning):
    """``search="int8"`` runs on a path slower than where it pays off (said once a process)."""


_NOTICED: set[str] = set()


def _notice_saturating_kernel() -> None:
    """One line, once a process: this CPU's int8 kernel saturates at 8-bit word codes, so
    7-bit codes are used - the same words, a smaller gain (the speed figures need VNNI/AMX)."""
    import warnings

    from dptext.devices import INT8_DOT_FEATURES, cpu_info

    if "levels" in _NOTICED:
        return
    _NOTICED.add("levels")
    model, _ = cpu_info()
    warnings.warn(
        f"search='int8': this CPU ({model}) has no {'/'.join(INT8_DOT_FEATURES)}, so its int8 "
        "kernel saturates at 8-bit word codes; 7-bit codes (63 levels) are used instead - the "
        "same exact words, but only about 1.2-1.3x the CPU time of search='exact' (3-5x needs "
        "VNNI or AMX)", Int8SpeedWarning, stacklevel=4)


def _score_error(p_err, q_norm, shift, tau, norm, w_err, w_q_norm, half, spread):
    """The bound E on |true scaled score - kernel output| (module docstring): quantization
    of point and word (Cauchy-Schwarz), the common bias's miss, the kernel's float32 rounding
    of product, scale and bias. Point terms (``p_err``, ``q_norm``, ``shift``) and word terms
    (``norm``, ``w_err``, ``w_q_norm``, ``half``, ``spread`` = ||y|^2/2 - h_mid|) are arrays
    of one pair each, or a word term is a tile's maximum (the tile's bound per point)."""
    return (p_err * norm + q_norm * w_err + shift * spread
            + 8 * _U32 * (q_norm * w_q_norm + tau * half) + 3 * _U32 * tau * half)


def _scan(out: np.ndarray, limit: np.ndarray, tops: np.ndarray | None, groups: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, columns, readings) of the entries of a tile ``out`` (points x words; float32
    scores or 8-bit levels) at or above their row's ``limit`` (of ``out``'s dtype): through
    the maxima ``tops`` of its column groups (group g holds columns g + k ``groups``) where
    given - only the groups whose maximum reaches the limit are read - else one pass over the
    whole tile. numpy on the kernel's output (no copy): its nonzero is 4x torch's here."""
    width = out.shape[1]
    if tops is None:
        r, c = np.divmod(np.flatnonzero(out >= limit[:, None]), width)
        return r, c, out[r, c]
    hit_r, hit_g = np.divmod(np.flatnonzero(tops >= limit[:, None]), groups)
    index = (hit_r * width + hit_g)[:, None] + np.arange(0, width, groups)
    vals = out.reshape(-1)[index]
    hit, k = np.divmod(np.flatnonzero(vals >= limit[hit_r, None]), index.shape[1])
    return hit_r[hit], k * groups + hit_g[hit], vals[hit, k]


def _scan_float(o: np.ndarray, limit64: np.ndarray, t: int, tops: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of a float32 tile ``o`` (starting at tile position ``t``) with a reading
    >= its point's ``limit64`` (rounded down to float32: a superset), groups of ``_GROUPS``;
    (rows, tile positions, reading, reading) - the reading is its own interval's two ends."""
    limit = np.nextafter(limit64.astype(np.float32), np.float32(-np.inf))
    r, c, vals = _scan(o, limit, tops, _GROUPS)
    vals = vals.astype(np.float64)
    return r, c + t, vals, vals


class Int8Search(Search):
    """Exact nearest word through a certified int8 pre-filter (module docstring)."""

    @classmethod
    def build(cls, name, vectors, *, fingerprint=None, **options):
        return cls(vectors, fingerprint=fingerprint() if callable(fingerprint) else fingerprint,
                   **options)

    def __init__(self, vectors: np.ndarray, *, block: int = 2048, tile: int = 2048,
                 workers: int | None = None, levels: int | None = None,
                 fingerprint: str | None = None) -> None:
        # 2048 x 2048 (8-bit tiles of 4 MB): 1.25x 1024 x 1024 on the AMX machine (medians of
        # 7 interleaved runs, 4,104 points, 2 threads; 2048 x 4096 and 512 x 1024 slower)
        # fingerprint: the space's (EmbeddingSpace.fingerprint); where given, the word codes
        # are cached with the mechanism's tables (int8_setup.cached_codes)
        if block < 1 or tile < 1 or (workers is not None and workers < 1):
            raise DPTextError("block, tile and workers must be positive")
        if levels is not None and levels not in LEVELS:
            raise DPTextError(f"levels must be one of {', '.join(map(str, LEVELS))} (or None: "
                              f"the widest this CPU's kernel does exactly), got {levels!r}")
        self.exact = ExactSearch(vectors)  # the float32 words, |y|^2/2 and the re-rank rule
        self.block, self.tile, self.workers = int(block), int(tile), workers
        self.rechecked = 0  # points re-ranked in float64 (more than one word left)
        self.candidates = 0  # words re-ranked in float64, all points
        self.window_blocks = [0, 0]  # blocks whose tiles after the first read 8-bit / float32
        words = self.exact.words
        self.half = self.exact.half_sq  # float64
        self.max_half = float(self.half.max()) if len(words) else 0.0
        low = float(self.half.min()) if len(words) else 0.0
        self.mid_half = (self.max_half + low) / 2
        # each point its own scale where the words' |y|^2/2 are equal to 1e-6 (a unit-norm
        # space): the common bias then costs nothing; else one scale per block
        self.row_scaled = self.max_half - low <= 1e-6 * max(self.max_half, 1e-30)
        self._prepack, self._pointwise = _kernel()
        # the kernel is probed before any word is coded (the probe does not depend on them)
        d, n = words.shape[1], min(self.tile, 256)
        for tried in LEVELS if levels is None else (levels,):
            if probe_kernel(self._prepack, self._pointwise, d, n, self.block, tried):
                break
        else:
            which = "" if levels is None else f" at {levels} levels"
            raise DPTextError(f"search='int8': torch's int8 kernel is not exact on this "
                              f"CPU{which}; use search='exact'")
        self.levels = tried
        if tried < LEVELS[0] and levels is None:  # the CPU chose 7 bits, not the caller
            _notice_saturating_kernel()
        self._tiles(cached_codes(words, tried, fingerprint))
        # the 8-bit output window, where it reads as assumed
        self.u8 = probe_u8(self._prepack, self._pointwise, d, n, self.block, tried)
        import torch

        self._augmented_t = torch.from_numpy(self.exact.augmented)
        self.sampled = probe_sampled(d, _sampled_dot)  # candidate pairs' scores in one call

    def _tiles(self, codes: dict[str, np.ndarray]) -> None:
        """The words' codes (:func:`~dptext.mechanisms.search.int8_setup.word_codes`) in tiles:
        the words sorted by their error (so each tile's largest error, which bounds its words
        in the scan, is close to theirs), each tile prepacked for the kernel with its bounds."""
        import torch

        d = self.exact.words.shape[1]
        self.norm, self.w_err, self.q_norm = codes["norm"], codes["w_err"], codes["q_norm"]
        self.order = codes["order"]  # tile position -> word index
        q8 = torch.from_numpy(np.ascontiguousarray(codes["q"][self.order]))
        half32 = torch.from_numpy(self.exact.half_sq32[self.order])
        scales = torch.from_numpy(np.ascontiguousarray(codes["scale"][self.order]))
        self.tiles = []
        self.half32 = half32  # |y|^2/2 in tile order (float32), the kernel's bias
        for t in range(0, len(self.order), self.tile):
            sl = self.order[t: t + self.tile]
            stop = t + len(sl)
            bounds = (float(self.norm[sl].max()), float(self.w_err[sl].max()),
                      float(self.q_norm[sl].max()), float(self.half[sl].max()),
                      float(np.abs(self.half[sl] - self.mid_half).max()))
            self.tiles.append((t, self._prepack(q8[t:stop].contiguous(), [self.block, d]),
                               scales[t:stop].contiguous(),
                               torch.zeros(stop - t, dtype=torch.int64),
                               half32[t:stop].contiguous(), bounds))
        # each tile's bounds as columns (norm, w_err, q_norm, half, spread), for all at once
        self.tile_bounds = np.array([tile[-1] for tile in self.tiles]).T[:, :, None]

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
        workers = self.workers or blas_threads()
        spans = blocks(n, self.block, workers, unit)
        workers = min(workers, len(spans))

        def run(span: tuple[int, int]) -> tuple[int, int, bool]:
            s, e = span
            out[s:e], rechecked, candidates, fell_back = self._search_block(points_of(s, e))
            return rechecked, candidates, fell_back

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
        fell_back = sum(c[2] for c in counts)
        self.window_blocks[0] += len(counts) - fell_back
        self.window_blocks[1] += fell_back
        return out

    def _search_block(self, p: np.ndarray) -> tuple[np.ndarray, int, int, bool]:
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
        # the codes q (uint8 q + 128) and the errors they make, computed exactly from them
        approx = np.rint(ps * (1.0 / scale))
        np.clip(approx, -127, 127, out=approx)
        codes = torch.from_numpy((approx + 128).astype(np.uint8))
        approx *= scale  # q * scale: exact in float64
        q_norm = np.sqrt(np.einsum("ij,ij->i", approx, approx))
        ps -= approx
        p_err = np.sqrt(np.einsum("ij,ij->i", ps, ps))
        p_norm = np.sqrt(np.einsum("ij,ij->i", p, p))
        # a margin far above the float64 rounding of the bounds and of ps (and far below any
        # score gap that matters)
        slack = 1e-9 * (p_norm * inv * self.exact.radius + tau * self.max_half + 1.0)
        # each tile's largest error per point (module docstring), the margin included
        errs = _score_error(p_err, q_norm, shift, tau, *self.tile_bounds) + slack  # tiles x b
        minus_tau = torch.tensor(-tau, dtype=torch.float32)
        # the first tile with float32 output: a lower bound of every point's best score
        t0, packed, scales, zeros, half32, _ = self.tiles[0]
        first = self._pointwise(codes, scale, 128, packed, scales, zeros, half32 * minus_tau,
                                1.0, 0, torch.float32, "none", [], "")
        top0 = first.amax(1).numpy().astype(np.float64)
        lower = top0 - errs[0]
        # (rows, tile positions, lo, hi): the kernel's reading of a pair as an interval that
        # holds the true score up to the pair's own error
        found: list[tuple] = []
        window = (self._window(first, top0, lower, errs, tau, p_norm * inv)
                  if self.u8 and len(self.tiles) > 1 else None)
        if window is None:
            self._float_tiles(codes, scale, minus_tau, lower, errs, found)
        else:
            self._u8_tiles(codes, scale, minus_tau, lower, errs, window, found)
        # the first tile last, with the final bound (the running one is at most it)
        found.append(_scan_float(first.numpy(), lower - errs[0], t0))
        rows = np.concatenate([f[0] for f in found])
        cols = self.order[np.concatenate([f[1] for f in found])]
        lo = np.concatenate([f[2] for f in found])
        hi = np.concatenate([f[3] for f in found])
        # each pair's own bound; keep the words whose upper bound reaches the best lower bound
        err = _score_error(p_err[rows], q_norm[rows], shift[rows], tau, self.norm[cols],
                           self.w_err[cols], self.q_norm[cols], self.half[cols],
                           np.abs(self.half[cols] - self.mid_half))
        best = np.full(b, -np.inf)
        np.maximum.at(best, rows, lo - err)
        keep = hi + err >= best[rows] - slack[rows]
        rows, cols = self._float32_filter(p, p_norm, rows[keep], cols[keep])
        return (*self._rerank(p, rows, cols), window is None)

    def _float_tiles(self, codes, scale, minus_tau, lower, errs, found) -> None:
        """Tiles 1.. with float32 output: each scanned at once with the running lower bound
        (at most the final one: a superset of the words that can win), through the maxima of
        its column groups; ``lower`` is raised in place."""
        import torch

        b = len(lower)
        for (t, packed, scales, zeros, half32, _), err in zip(self.tiles[1:], errs[1:],
                                                             strict=True):
            out = self._pointwise(codes, scale, 128, packed, scales, zeros, half32 * minus_tau,
                                  1.0, 0, torch.float32, "none", [], "")
            tops = None if out.shape[1] % _GROUPS else out.view(b, -1, _GROUPS).amax(1)
            tile_top = (out if tops is None else tops).amax(1).numpy().astype(np.float64)
            found.append(_scan_float(out.numpy(), lower - err, t,
                                     None if tops is None else tops.numpy()))
            np.maximum(lower, tile_top - err, out=lower)

    def _window(self, first, top0, lower, errs, tau, ps_norm) -> tuple[float, float, float] | None:
        """The 8-bit output window (v0, step, zeta) of a block's tiles 1..: level v reads the
        kernel's score as v0 + step * v (rounded to the nearest level, clamped to 0..255),
        zeta bounds the float32 rounding of the shifted bias and of the sum. Level 0 lies
        below every point's lower bound minus its largest error (so the scan never keeps a
        clamped-low word); 255 high enough above the first tile's best that a point's true
        best rarely reads 255 (a word that does is kept: it is never ruled out). None where
        the levels would be too coarse against the errors (points of very different scales
        in one block): the float32 output is used there."""
        e_max = np.max(errs, axis=0)
        rise = _RISE * (top0 - first.mean(1).numpy().astype(np.float64)) + 2.0 * e_max
        base, top = float(np.min(lower - e_max)), float(np.max(lower + rise))
        if not (np.isfinite(base) and np.isfinite(top)):
            return None
        zeta = 8 * _U32 * (max(abs(base), abs(top)) + float(ps_norm.max()) * self.exact.radius
                           + 2 * tau * self.max_half) + 1e-12
        step = (top - base + zeta) / 252.0
        if not step > 0 or step > _COARSEST * float(np.median(e_max)):
            return None
        return float(base - zeta - 2 * step), step, zeta

    def _u8_tiles(self, codes, scale, minus_tau, lower, errs, window, found) -> None:
        """Tiles 1.. with 8-bit output (module docstring, "8-bit output"), each scanned at
        once with the running lower bound (raised first by the tile's own top level): the
        pairs whose level can reach it; ``lower`` is raised in place."""
        import torch

        v0, step, zeta = window
        b = len(lower)
        bias = self.half32 * minus_tau - torch.tensor(v0, dtype=torch.float32)
        # the lower bound a top level v gives is step * v + low[t] (valid where v >= 1; a top
        # of 0 gives less than every point's lower bound, as level 0 lies below them all,
        # so it changes nothing); a pair can win only at a level >= lower / step - need[t]
        low = v0 - zeta - step * (0.5 + _U8_DELTA) - errs
        need = (v0 + zeta + errs) / step + (0.5 + _U8_DELTA)
        rows, cols, levels = [], [], []
        for k, (t, packed, scales, zeros, _, _) in enumerate(self.tiles[1:], start=1):
            out = self._pointwise(codes, scale, 128, packed, scales, zeros,
                                  bias[t: t + len(scales)], step, 0, None, "none", [], "")
            tops = None if out.shape[1] % _GROUPS8 else out.view(b, -1, _GROUPS8).amax(1)
            top = (out if tops is None else tops).amax(1).numpy()
            np.maximum(lower, step * top + low[k], out=lower)
            least = np.ceil(lower / step - need[k])
            r, c, v = _scan(out.numpy(), np.clip(least, 0, 255).astype(np.uint8),
                            None if tops is None else tops.numpy(), _GROUPS8)
            rows.append(r)
            cols.append(c + t)
            levels.append(v)
        levels = np.concatenate(levels).astype(np.float64)
        lo = np.where(levels >= 1, step * (levels - 0.5 - _U8_DELTA) + v0 - zeta, -np.inf)
        hi = np.where(levels <= 254, step * (levels + 0.5 + _U8_DELTA) + v0 + zeta, np.inf)
        found.append((np.concatenate(rows), np.concatenate(cols), lo, hi))

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
        order = np.lexsort((c, r))  # by point, then word: the rows of a CSR pattern
        r, c = r[order], c[order]
        if self.sampled:
            score = self._sampled_scores(p, r, c)
        else:
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

    def _sampled_scores(self, p: np.ndarray, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """float32 scores [p, 1].[y, -|y|^2/2] of the pairs (``r``, ``c``) sorted by point,
        then word: torch's sampled dense product on their CSR pattern (one C++ call; the
        per-point loop it replaces held the GIL for ~7 us a point)."""
        b, d = p.shape
        points = np.empty((b, d + 1), dtype=np.float32)
        points[:, :d] = p  # rounded to float32, as the exact search rounds it
        points[:, d] = 1.0
        return _sampled_dot(points, self._augmented_t, np.bincount(r, minlength=b), c)

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
