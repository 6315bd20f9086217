"""Certified int8 nearest-word search (dptext.mechanisms.search.int8): the exact search's words.

Every test compares with a brute-force float64 search or with ``ExactSearch`` on points where
the int8 approximation alone would often pick another word (high noise: near ties among many
words), so a bound that is too tight, a candidate dropped by the scan, or a re-rank with another
tie rule fails them.
"""

from __future__ import annotations

import numpy as np
import pytest

from dptext import mechanism
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.search import ExactSearch, Int8Search, make_search
from dptext.mechanisms.search import int8 as int8_search

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

pytest.importorskip("torch")
try:
    int8_search._kernel()
except DPTextError as exc:  # not an x86 build of torch: no oneDNN int8 kernel
    pytest.skip(str(exc), allow_module_level=True)


def _exact_at(levels: int) -> bool:
    """Whether this CPU's int8 kernel is exact with word codes in [-levels, levels] (the
    search's own probe decides; 127 needs int8 dot products without int16 saturation)."""
    try:
        Int8Search(_words(64, 8, 0), block=64, tile=64, levels=levels)
    except DPTextError:
        return False
    return True


def _words(n: int, d: int, seed: int, unit: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, d)).astype(np.float32)
    if unit:
        w /= np.linalg.norm(w, axis=1, keepdims=True)
    else:
        w *= rng.uniform(0.2, 3.0, (n, 1)).astype(np.float32)  # norms that differ
    return w


# Both paths of the search: the 7-bit word codes run on every CPU (forced); the 8-bit ones
# where the kernel is exact at 127 (VNNI or AMX), skipped with the reason elsewhere.
EXACT_AT_127 = _exact_at(127)
NATIVE_LEVELS = 127 if EXACT_AT_127 else 63
LEVEL_PATHS = [63, pytest.param(127, marks=pytest.mark.skipif(
    not EXACT_AT_127, reason="this CPU's int8 kernel saturates u8 x s8 pairs at 127 levels "
    "(no AVX-512 VNNI, AVX-VNNI or AMX); the 63-level path is tested instead"))]


def _brute_force(points64: np.ndarray, words: np.ndarray) -> np.ndarray:
    w = words.astype(np.float64)
    d2 = ((points64[:, None, :] - w[None, :, :]) ** 2).sum(-1)
    return d2.argmin(1)


@pytest.mark.parametrize("unit", [True, False])
@pytest.mark.parametrize("block, tile", [(64, 128), (1024, 2048), (33, 200)])
def test_int8_search_equals_brute_force_at_every_noise_level(unit, block, tile):
    words = _words(1500, 48, 0, unit)
    rng = np.random.default_rng(1)
    points = words[rng.integers(0, len(words), 600)].astype(np.float64)
    # from almost no noise (the word itself) to noise 30x the words' scale (near ties)
    points += rng.standard_normal(points.shape) * rng.choice([1e-4, 0.05, 0.5, 5.0, 30.0],
                                                            (len(points), 1))
    search = Int8Search(words, block=block, tile=tile)
    np.testing.assert_array_equal(search(points), _brute_force(points, words))
    assert search.levels == NATIVE_LEVELS  # 63 where the CPU's kernel saturates int16 pairs


@pytest.mark.parametrize("levels", LEVEL_PATHS)
def test_int8_search_equals_the_exact_search_on_laplace_noise(levels):
    """The mechanism's own noise at small and large epsilon, two worker threads, and more
    points than one block: the same words as the exact search, point for point, on the
    7-bit path (every CPU) and the 8-bit one (VNNI/AMX)."""
    words = _words(3000, 64, 2)
    space = EmbeddingSpace([f"w{i}" for i in range(len(words))], words, name="int8-test")
    rng = np.random.default_rng(3)
    for eps in (2.0, 20.0, 200.0, 5000.0):
        m = mechanism("laplace", epsilon=eps, space=space).fit(cache=False)
        rows = rng.integers(0, len(words), 2500)
        points = words[rows].astype(np.float64) + m.noise(len(rows), rng)
        want = ExactSearch(words)(points)
        for workers in (1, 2):
            got = Int8Search(words, block=1024, workers=workers, levels=levels)(points)
            np.testing.assert_array_equal(got, want)


def test_planted_ties_and_twins_go_where_the_exact_search_sends_them():
    words = _words(400, 32, 4)
    words = np.vstack([words, words[7:8], words[300:301]])  # exact twins at rows 400, 401
    a, b = words[3].astype(np.float64), words[250].astype(np.float64)
    mid = (a + b) / 2.0
    push = (b - a) / np.linalg.norm(b - a)
    points = np.stack([mid + 1e-12 * push, mid - 1e-12 * push,
                       words[7] + 1e-3, words[300] - 1e-3] * 6).astype(np.float64)
    got = Int8Search(words, block=5, tile=64)(points)
    assert list(got) == [250, 3, 7, 300] * 6  # the truly nearer word; twins: the lower row
    np.testing.assert_array_equal(got, ExactSearch(words)(points))


def test_laplace_with_int8_releases_the_exact_searchs_words():
    words = _words(2000, 32, 5)
    space = EmbeddingSpace([f"w{i}" for i in range(len(words))], words, name="int8-laplace")
    texts = [" ".join(f"w{(7 * i + j) % 2000}" for j in range(60)) for i in range(20)]
    for eps in (5.0, 100.0):
        exact = mechanism("laplace", epsilon=eps, space=space).fit(cache=False)
        fast = mechanism("laplace", epsilon=eps, space=space, search="int8").fit(cache=False)
        a = [r.text for r in exact.privatize_batch(texts, rng=11)]
        b = [r.text for r in fast.privatize_batch(texts, rng=11)]
        assert a == b
        rows = np.arange(500) % 2000
        np.testing.assert_array_equal(exact.sample_rows(rows, rng=4),
                                      fast.sample_rows(rows, rng=4))


def test_make_search_and_the_mechanism_know_int8():
    words = _words(100, 8, 6)
    assert isinstance(make_search(words, "int8"), Int8Search)
    m = mechanism("laplace", epsilon=1.0, search="int8")
    assert m.search == "int8"
    s = Int8Search(words)
    assert s(np.zeros((0, 8))).shape == (0,)
    with pytest.raises(DPTextError, match="finite"):
        s(np.full((2, 8), np.inf))
    with pytest.raises(DPTextError, match="positive"):
        Int8Search(words, tile=0)


@pytest.mark.parametrize("d", [1, 7, 25])
def test_dimensions_the_kernel_pads_give_the_exact_words(d):
    words = _words(500, d, 10, unit=False)
    rng = np.random.default_rng(11)
    points = words[rng.integers(0, 500, 300)].astype(np.float64)
    points += rng.standard_normal(points.shape) * 2.0
    np.testing.assert_array_equal(Int8Search(words)(points), _brute_force(points, words))


def test_a_zero_word_and_zero_points_are_handled_exactly():
    words = _words(200, 16, 7)
    words[10] = 0.0
    points = np.zeros((3, 16))
    points[1] = 1e-6
    np.testing.assert_array_equal(Int8Search(words)(points), _brute_force(points, words))


def _int16_pair_kernel():
    """An emulation of a pre-VNNI int8 kernel (vpmaddubsw): raw uint8 codes times int8 weights,
    adjacent pairs summed with int16 saturation, then the zero point taken out exactly."""

    def prepack(w, shape):
        return w.clone()

    def pointwise(x, x_scale, x_zp, w, w_scales, w_zps, bias, out_scale, out_zp, dtype, *rest):
        xi, wi = x.long(), w.long()
        pairs = (xi.view(len(xi), 1, -1, 2) * wi.view(1, len(wi), -1, 2)).sum(-1)
        acc = pairs.clamp(-32768, 32767).sum(-1) - x_zp * wi.sum(1)[None, :]
        out = acc.double() * x_scale * w_scales.double()[None, :]
        if bias is not None:
            out = out + bias.double()[None, :]
        return out.to(dtype)

    return prepack, pointwise


def test_a_saturating_kernel_is_caught_by_the_probe(monkeypatch):
    """An int8 kernel that saturates u8 x s8 pairs in int16 (pre-VNNI CPUs: 255 x 127 x 2 >
    32767) must not be trusted: the probe switches to 7-bit word codes (no pair can saturate)
    and the words stay exact; a kernel wrong even then is refused with a one-line error."""
    monkeypatch.setattr(int8_search, "_kernel", _int16_pair_kernel)
    words = _words(300, 16, 8)
    search = Int8Search(words, block=64, tile=128)
    assert search.levels == 63
    rng = np.random.default_rng(9)
    points = words[rng.integers(0, 300, 200)].astype(np.float64)
    points += rng.standard_normal(points.shape) * rng.choice([0.01, 0.5, 3.0], (200, 1))
    np.testing.assert_array_equal(search(points), _brute_force(points, words))

    with pytest.raises(DPTextError, match="not exact on this CPU at 127 levels"):
        Int8Search(words, levels=127)  # 127 forced where the kernel saturates: refused
    with pytest.raises(DPTextError, match="levels must be one of 127, 63"):
        Int8Search(words, levels=100)

    prepack, pointwise = _int16_pair_kernel()
    monkeypatch.setattr(int8_search, "_kernel",
                        lambda: (prepack, lambda *a: pointwise(*a) + 1.0))
    with pytest.raises(DPTextError, match="not exact on this CPU"):
        Int8Search(words)


def test_the_7bit_path_is_said_once_in_one_line(monkeypatch, capsys):
    """Where the kernel saturates (emulated here, so on every CPU), the first int8 search of a
    process says so once - what it does instead and what it costs - and the command line
    prints it as one line; the 8-bit path says nothing."""
    import warnings

    from dptext.cli import main

    monkeypatch.setattr(int8_search, "_NOTICED", set())
    monkeypatch.setattr(int8_search, "_kernel", _int16_pair_kernel)
    words = _words(200, 8, 15)
    with pytest.warns(int8_search.Int8SpeedWarning, match="7-bit codes .63 levels. are used"):
        Int8Search(words, block=64, tile=128)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Int8Search(words, block=64, tile=128)  # once a process: no second warning
    monkeypatch.setattr(int8_search, "_NOTICED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 7 bits asked for: nothing said about the CPU
        Int8Search(words, block=64, tile=128, levels=63)

    monkeypatch.setattr(int8_search, "_NOTICED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        main(["resources", "--list"])  # installs the one-line display of dptext's warnings
        capsys.readouterr()
        int8_search._notice_saturating_kernel()
    err = capsys.readouterr().err
    assert err.startswith("dptext: warning: search='int8': this CPU") and err.count("\n") == 1


def _laplace_points(words: np.ndarray, n: int, eps: float, seed: int) -> np.ndarray:
    space = EmbeddingSpace([f"w{i}" for i in range(len(words))], words, name="int8-window")
    m = mechanism("laplace", epsilon=eps, space=space).fit(cache=False)
    rng = np.random.default_rng(seed)
    return words[rng.integers(0, len(words), n)].astype(np.float64) + m.noise(n, rng)


@pytest.mark.parametrize("rise, path", [(0.0, 0), (1.5, 0), (4.0, 0), (1000.0, 1)])
def test_any_8bit_window_gives_the_exact_words(monkeypatch, rise, path):
    """The tiles after the first read 8-bit levels in a window set per block: a window whose
    top is each point's first lower bound (rise 0: most points' best words read 255, kept
    unexamined) or one 2.5x wider than the default (coarse levels) changes how many words
    reach the float32 test, never which word wins; a window too coarse for the errors is not
    used (the float32 output instead)."""
    monkeypatch.setattr(int8_search, "_RISE", rise)
    words = _words(3000, 48, 12)
    # two workers whatever the BLAS's thread count here: the blocks (and so the counts
    # below) depend on the number of workers
    search = Int8Search(words, block=256, tile=256, workers=2)
    for eps, seed in ((3.0, 1), (30.0, 2), (400.0, 3)):
        points = _laplace_points(words, 700, eps, seed)
        np.testing.assert_array_equal(search(points), _brute_force(points, words))
    print(search.window_blocks)
    assert search.window_blocks[path] == 6  # every block (2 an epsilon): 8-bit (0) or float32 (1)
    assert search.window_blocks[1 - path] == 0


@pytest.mark.parametrize("levels", LEVEL_PATHS)
def test_an_8bit_output_off_by_a_level_is_not_trusted(monkeypatch, levels):
    """A kernel whose 8-bit output is one level high (a rounding the window's bounds do not
    allow) fails the probe: the search keeps the float32 output for every tile and stays
    exact - with either word-code width."""
    prepack, pointwise = int8_search._kernel()

    def high(*a):
        out = pointwise(*a)
        return (out.int() + 1).clamp(0, 255).to(out.dtype) if a[9] is None else out

    monkeypatch.setattr(int8_search, "_kernel", lambda: (prepack, high))
    words = _words(2000, 32, 13)
    search = Int8Search(words, block=256, tile=256, levels=levels, workers=2)
    assert search.u8 is False and search.levels == levels
    points = _laplace_points(words, 600, 20.0, 4)
    np.testing.assert_array_equal(search(points), _brute_force(points, words))
    assert search.window_blocks == [0, 2]  # 600 points: two blocks


def test_the_sampled_float32_scores_are_probed_and_match_the_loop(monkeypatch):
    """Candidate pairs' float32 scores come from torch's sampled dense product (one call);
    it must give what the per-point loop gives (the exact words either way), and a product
    that is not float32-accurate (bfloat16 inputs) is caught by the probe."""
    words = _words(2500, 40, 14)
    search = Int8Search(words, block=512, tile=512)
    assert search.sampled  # torch 2.13 (constraints.txt) has it on the CPU
    points = _laplace_points(words, 900, 15.0, 5)
    fast = search(points)
    search.sampled = False
    np.testing.assert_array_equal(search(points), fast)
    np.testing.assert_array_equal(fast, _brute_force(points, words))

    import torch

    real = int8_search._sampled_dot

    def bf16(points, words_t, counts, cols):
        return real(torch.from_numpy(points).bfloat16().float().numpy(), words_t, counts, cols)

    monkeypatch.setattr(int8_search, "_sampled_dot", bf16)
    assert Int8Search(words, block=512, tile=512).sampled is False
