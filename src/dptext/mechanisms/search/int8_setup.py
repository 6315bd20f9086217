"""The set-up of the certified int8 search (:mod:`dptext.mechanisms.search.int8`): the kernel,
the probes that decide whether its bounds hold on this CPU, and the word codes - computed once
per (space, word levels) and cached beside the mechanism's fitted tables.

Word codes: each word row y gets its own scale s_y = max|y_j| / L and integers
q_y = round(y / s_y) in [-L, L] (L = 127, or 63 where the kernel saturates), their exact errors
|y - s_y q_y| and |s_y q_y| in float64, and the order of the words by that error (the tiles).

The kernel must be exact for the search's argument to hold: int8 kernels without VNNI multiply
pairs of u8 x s8 into int16 with saturation (255 x 127 x 2 > 32767). :func:`probe_kernel`
compares the kernel with exact integer arithmetic on extreme and random inputs at several row
counts - it depends on the CPU, the dimension and L, not on the words, so it runs before any word
is quantized, and only the levels that pass are coded (a CPU without VNNI codes the words once,
at 63 levels, instead of at 127 and again at 63). If no level passes, or torch has no oneDNN int8
kernel (not an x86 build), ``search="int8"`` is refused with a one-line error.

The cached codes (``fitted/int8-<space fingerprint>-<levels>.npz``, with its sha256 like every
cached table) are checked before they are trusted: the file's digest, the shapes, dtypes and
ranges, the order a permutation, and the codes and errors of 64 spot-checked words recomputed
from the vectors and compared exactly; anything else is rebuilt (with a warning), never used.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dptext.errors import DPTextError

_U32 = 2.0**-24
_PROBE_ROWS = (1, 3, 17, 128, 1024)
_U8_DELTA = 1e-3  # levels: bounds the float32 rounding of the kernel's requantization (~1e-5)
_SPOT_CHECKS = 64  # words whose cached codes and errors are recomputed before the file is used
SETUP_VERSION = 1  # of the cached codes' layout

LEVELS = (127, 63)  # word codes in [-L, L]: 127 where the kernel is exact, else 63


def kernel():
    """torch's oneDNN int8 linear ops (prepack, pointwise), or a one-line error."""
    import torch

    ops = getattr(torch.ops, "onednn", None)
    try:
        return ops.qlinear_prepack, ops.qlinear_pointwise
    except (AttributeError, RuntimeError):
        raise DPTextError("search='int8' needs torch's oneDNN int8 kernels (an x86 build of "
                          "torch); use search='exact'") from None


def sampled_dot(points: np.ndarray, words_t, counts: np.ndarray, cols: np.ndarray
                ) -> np.ndarray:
    """points[i] . words[j] in float32 for the pairs of a CSR pattern: ``counts[i]`` pairs of
    point i, their words ``cols`` (sorted by point, then word); ``words_t`` is the torch view
    of the words (rows)."""
    import warnings

    import torch

    crow = torch.from_numpy(np.r_[0, np.cumsum(counts)].astype(np.int64))
    with warnings.catch_warnings():  # "CSR support is in beta"
        warnings.simplefilter("ignore")
        pattern = torch.sparse_csr_tensor(crow, torch.from_numpy(cols.astype(np.int64)),
                                          torch.zeros(len(cols)), size=(len(points),
                                                                        len(words_t)),
                                          check_invariants=False)
        out = torch.sparse.sampled_addmm(pattern, torch.from_numpy(points), words_t.T,
                                         beta=0.0)
    return out.values().numpy()


# ---------------------------------------------------------------------- probes
def probe_kernel(prepack, pointwise, d: int, n: int, block: int, levels: int) -> bool:
    """Whether the kernel equals exact integer arithmetic (to float32 rounding) on ``n``
    words of dimension ``d`` with every code at its extreme and random ones, at several row
    counts, weights at +-``levels`` (the pairs that saturate an int16 kernel) and random."""
    import torch

    rng = np.random.default_rng(0)
    w = rng.integers(-levels, levels + 1, (n, d))
    w[0], w[1], w[2] = levels, -levels, np.where(np.arange(d) % 2, levels, -levels)
    packed = prepack(torch.from_numpy(w.astype(np.int8)), [block, d])
    ones = torch.ones(n, dtype=torch.float32)
    zeros = torch.zeros(n, dtype=torch.int64)
    for rows in _PROBE_ROWS:
        x = rng.integers(1, 256, (rows, d))
        x[0] = 255
        if rows > 2:
            x[1], x[2] = 1, np.where(np.arange(d) % 2, 255, 1)
        got = pointwise(torch.from_numpy(x.astype(np.uint8)), 1.0, 128, packed, ones,
                        zeros, None, 1.0, 0, torch.float32, "none", [], "").numpy()
        want = ((x - 128) @ w.T).astype(np.float64)  # exact int64
        if not np.array_equal(got.astype(np.float64), want):
            return False
    return True


def probe_u8(prepack, pointwise, d: int, n: int, block: int, levels: int) -> bool:
    """Whether the kernel's 8-bit output is its score divided by the output scale, rounded
    to the nearest level (within ``_U8_DELTA``) and clamped to 0..255, on random codes,
    word scales, biases and windows - what the 8-bit window's bounds assume."""
    import torch

    rng = np.random.default_rng(1)
    w = rng.integers(-levels, levels + 1, (n, d))
    word_scale = rng.uniform(1e-3, 1e-2, n).astype(np.float32)
    bias = rng.normal(0.0, 3.0, n).astype(np.float32)
    packed = prepack(torch.from_numpy(w.astype(np.int8)), [block, d])
    zeros = torch.zeros(n, dtype=torch.int64)
    x_scale = float(np.float32(1.0 / 127))
    for rows in _PROBE_ROWS:
        x = rng.integers(1, 256, (rows, d))
        exact = ((x - 128) @ w.T) * (x_scale * word_scale.astype(np.float64)) + bias
        lo, hi = np.percentile(exact, [10, 99])
        step = float((hi - lo) / 255)
        try:
            got = pointwise(torch.from_numpy(x.astype(np.uint8)), x_scale, 128, packed,
                            torch.from_numpy(word_scale), zeros,
                            torch.from_numpy(bias - np.float32(lo)), step, 0, None,
                            "none", [], "").numpy()
        except (RuntimeError, TypeError, ValueError):
            return False
        want = (exact - lo) / step
        if got.dtype != np.uint8 or got.shape != want.shape:
            return False
        low = np.clip(want - 0.5 - _U8_DELTA, 0, 255)
        high = np.clip(want + 0.5 + _U8_DELTA, 0, 255)
        if not np.all((got >= low) & (got <= high)):
            return False
    return True


def probe_sampled(d: int, dot=sampled_dot) -> bool:
    """Whether torch's sampled dense product (``dot``: :func:`sampled_dot`) gives float32 dot
    products within the float32 bound of :meth:`ExactSearch.error_bound` (not, say, bfloat16
    ones) on random pairs of dimension ``d`` + 1, patterns with empty rows included; else the
    per-point loop is used."""
    rng = np.random.default_rng(2)
    points = rng.standard_normal((7, d + 1)).astype(np.float32) * 3
    words = rng.standard_normal((300, d + 1)).astype(np.float32)
    counts = np.array([5, 0, 1, 40, 0, 3, 9])
    cols = np.concatenate([np.sort(rng.choice(300, k, replace=False)) for k in counts])
    try:
        import torch

        got = dot(points, torch.from_numpy(words), counts, cols)
    except (RuntimeError, TypeError, ValueError, AttributeError):
        return False
    rows = np.repeat(np.arange(len(points)), counts)
    p64, w64 = points[rows].astype(np.float64), words[cols].astype(np.float64)
    want = np.einsum("ij,ij->i", p64, w64)
    bound = (d + 3) * _U32 * np.einsum("ij,ij->i", np.abs(p64), np.abs(w64))
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= bound))


# ---------------------------------------------------------------------- word codes
def word_codes(words: np.ndarray, levels: int, rows: np.ndarray | None = None
               ) -> dict[str, np.ndarray]:
    """Scales, codes and exact errors of ``words`` (float32; only ``rows`` where given):
    ``scale`` (float32), ``q`` (int8 in [-levels, levels]), ``norm`` = |y|, ``w_err`` =
    |y - s q|, ``q_norm`` = |s q| (float64, exact from the codes)."""
    if rows is not None:
        words = words[rows]
    w64 = words.astype(np.float64)
    top = np.abs(words).max(1) if len(words) else np.zeros(0, np.float32)
    scale = (top / np.float32(levels)).astype(np.float32)
    scale[scale == 0] = 1.0  # a zero row: q = 0, exact
    q = np.clip(np.rint(w64 / scale[:, None].astype(np.float64)), -levels, levels)
    approx = q * scale[:, None].astype(np.float64)  # exact in float64
    return {"scale": scale, "q": q.astype(np.int8),
            "norm": np.sqrt(np.einsum("ij,ij->i", w64, w64)),
            "w_err": np.sqrt(((w64 - approx) ** 2).sum(1)),
            "q_norm": np.sqrt((approx * approx).sum(1))}


def setup_path(fingerprint: str, levels: int) -> Path:
    from dptext.cache import cache_dir

    return cache_dir() / "fitted" / f"int8-v{SETUP_VERSION}-{fingerprint[:16]}-{levels}.npz"


def cached_codes(words: np.ndarray, levels: int, fingerprint: str | None
                 ) -> dict[str, np.ndarray]:
    """:func:`word_codes` of every word (plus ``order``, the words by error), from the set-up
    cache where ``fingerprint`` (the space's) is given and the cached file passes every check
    (module docstring), else computed (and then cached)."""
    from dptext.cache import CorruptArtefact, load_npz, save_npz, verify, warn

    path = setup_path(fingerprint, levels) if fingerprint else None
    if path is not None and path.is_file():
        try:
            arrays = load_npz(path, verified=verify(path))
            why = _check_codes(arrays, words, levels)
        except CorruptArtefact as err:
            why = str(err)
        if why is None:
            return arrays
        warn(f"the cached int8 set-up {path.name} is rebuilt: {why}")
    codes = word_codes(words, levels)
    codes["order"] = np.argsort(codes["w_err"], kind="stable")  # tile position -> word index
    if path is not None:
        save_npz(path, codes)
    return codes


def _check_codes(arrays: dict[str, np.ndarray], words: np.ndarray, levels: int) -> str | None:
    """Why the cached codes cannot be used for ``words`` at ``levels`` (None: they can)."""
    m, d = words.shape
    want = {"scale": ((m,), np.float32), "q": ((m, d), np.int8), "norm": ((m,), np.float64),
            "w_err": ((m,), np.float64), "q_norm": ((m,), np.float64),
            "order": ((m,), np.int64)}
    for name, (shape, dtype) in want.items():
        a = arrays.get(name)
        if a is None or a.shape != shape or a.dtype != dtype:
            return f"{name} is missing or has the wrong shape or type"
    order = arrays["order"]
    if m and (np.abs(arrays["q"].astype(np.int16)).max() > levels or order.min() < 0
              or order.max() >= m or not (np.bincount(order, minlength=m) == 1).all()):
        return "codes out of range or the order is not a permutation"
    rows = np.random.default_rng(m).choice(m, min(m, _SPOT_CHECKS), replace=False)
    fresh = word_codes(words, levels, rows)
    for name, a in fresh.items():
        if not np.array_equal(arrays[name][rows], a):
            return f"{name} differs from the vectors' own (spot check)"
    return None
