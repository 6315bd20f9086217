"""device="cpu" | "cuda" | "auto": the torch search gives the exact search's words (run here on
the CPU through the same code), "cuda" without a GPU is a one-line error, and the cuda cases
run only where torch sees a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dptext
from dptext.devices import check_device, resolve_device
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.search import ExactSearch, TorchExactSearch

GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="no CUDA GPU on this machine")


def brute_force(words: np.ndarray, points: np.ndarray) -> np.ndarray:
    w = words.astype(np.float64)
    return np.argmin(((points[:, None, :] - w[None, :, :]) ** 2).sum(-1), axis=1)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    words = rng.standard_normal((700, 16)).astype(np.float32)
    words[1] = words[0]  # an exact tie: the lowest index wins in every search
    points = words[rng.integers(0, len(words), 900)].astype(np.float64)
    points += rng.standard_normal(points.shape) * 0.3
    points[:5] = words[0]
    return words, points


def test_torch_search_on_cpu_equals_the_exact_search(data):
    words, points = data
    ref = brute_force(words, points)
    torch_search = TorchExactSearch(words, device="cpu", block=128)
    np.testing.assert_array_equal(torch_search(points), ref)
    np.testing.assert_array_equal(ExactSearch(words)(points), ref)
    assert (ref[:5] == 0).all()


@needs_gpu
def test_torch_search_on_the_gpu_equals_the_exact_search(data):
    words, points = data
    np.testing.assert_array_equal(TorchExactSearch(words, device="cuda")(points),
                                  brute_force(words, points))


def test_device_values():
    assert check_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if GPU else "cpu")
    with pytest.raises(DPTextError, match="device must be one of"):
        check_device("tpu")


@pytest.mark.skipif(GPU, reason="checks the error raised without a GPU")
def test_cuda_without_a_gpu_is_a_one_line_error():
    with pytest.raises(DPTextError) as e:
        dptext.mechanism("laplace", epsilon=5.0, device="cuda")
    assert "\n" not in str(e.value) and "no CUDA GPU" in str(e.value)


def test_laplace_device_auto_gives_the_cpu_words(data):
    words, _ = data
    space = EmbeddingSpace([f"w{i}" for i in range(len(words))], words, name="device-test")
    rows = np.arange(len(words)).repeat(2)
    a = dptext.mechanism("laplace", epsilon=3.0, space=space).fit(cache=False)
    b = dptext.mechanism("laplace", epsilon=3.0, space=space, device="auto").fit(cache=False)
    np.testing.assert_array_equal(a.sample_rows(rows, np.random.default_rng(2)),
                                  b.sample_rows(rows, np.random.default_rng(2)))


@needs_gpu
def test_faiss_search_is_refused_on_the_gpu():
    with pytest.raises(DPTextError, match="faiss"):
        dptext.mechanism("laplace", epsilon=3.0, search="ivf", device="cuda")


# ------------------------------------------------------------ SanText fit, truncated Gumbel
def test_santext_distance_pass_in_torch_on_cpu_equals_numpy(data):
    from dptext.mechanisms.santext import _nearest_distance, _nearest_distance_torch

    words, _ = data
    rows, cols = np.arange(0, 700, 3), np.arange(1, 700, 7)
    ref = np.sqrt(((words[rows, None, :].astype(np.float64)
                    - words[None, cols, :].astype(np.float64)) ** 2).sum(-1)).min(1)
    got_np = _nearest_distance(words, rows, cols)
    got_torch = _nearest_distance_torch(words, rows, cols, device="cpu", block=100)
    # float32 products: |d^2| errors ~1e-6, so up to ~3e-3 in d where d = 0 (a row among
    # the columns)
    np.testing.assert_allclose(got_np, ref, rtol=1e-5, atol=5e-3)
    np.testing.assert_allclose(got_torch, ref, rtol=1e-5, atol=5e-3)


def _space(words):
    return EmbeddingSpace([f"w{i}" for i in range(len(words))], words, name="device-test")


def test_santext_plus_device_auto_fits_the_cpu_tables(data):
    space = _space(data[0])
    params = dict(epsilon=3.0, space=space, sensitive_fraction=0.02, p=1.0)
    a = dptext.mechanism("santext+", **params).fit(cache=False)
    b = dptext.mechanism("santext+", device="auto", **params).fit(cache=False)
    assert (a._tables["near_count"] == 0).sum() > 100  # the distance pass is exercised
    for key in ("shift", "log_p_far", "cum"):
        np.testing.assert_allclose(a._tables[key], b._tables[key], rtol=1e-6)


def test_gumbel_large_k_candidates_in_torch_on_cpu_equal_numpy(data):
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    space = _space(data[0][1:])  # without the duplicate (Delta_min > 0)
    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    m = dptext.mechanism("gumbel", space=space,
                         epsilon=2 * minimum_epsilon(**geo, rule="paper")).fit(cache=False)
    rows, ks = np.array([0, 1, 5, 698]), np.array([699, 100, 699, 65])
    for (c1, d1), (c2, d2) in zip(m._large_candidates(rows, ks),
                                  m._large_candidates(rows, ks, torch_device="cpu"),
                                  strict=True):
        np.testing.assert_array_equal(c1, c2)
        np.testing.assert_allclose(d1, d2, rtol=1e-12, atol=1e-12)
    assert next(m._large_candidates(rows[:1], ks[:1]))[0][0] == 0  # the word itself first


@pytest.mark.skipif(GPU, reason="checks the error raised without a GPU")
@pytest.mark.parametrize("name", ["santext", "santext+", "gumbel"])
def test_santext_gumbel_cuda_without_a_gpu_is_a_one_line_error(name):
    with pytest.raises(DPTextError) as e:
        dptext.mechanism(name, epsilon=500.0, device="cuda")
    assert "\n" not in str(e.value) and "no CUDA GPU" in str(e.value)
    with pytest.raises(DPTextError, match="device must be one of"):
        dptext.mechanism(name, epsilon=500.0, device="gpu0")


def test_sanitize_cli_device_option(data, tmp_path, capsys):
    from dptext.cli import main

    space = _space(data[0])
    path = space.save(tmp_path / "s.npz")
    base = ["sanitize", "-m", "santext", "-e", "3", "--space", str(path), "--text", "w1 w2",
            "--no-progress"]
    assert main(base + ["--device", "auto"]) == 0
    assert capsys.readouterr().out.strip()
    assert main(base + ["--device", "tpu"]) != 0
    err = capsys.readouterr().err.strip()
    assert "device must be one of" in err and len(err.splitlines()) == 1


@needs_gpu
def test_santext_and_gumbel_on_the_gpu_match_the_cpu(data):
    from dptext.mechanisms.santext import _nearest_distance, _nearest_distance_torch

    words, _ = data
    rows, cols = np.arange(0, 700, 3), np.arange(1, 700, 7)
    np.testing.assert_allclose(_nearest_distance_torch(words, rows, cols, device="cuda"),
                               _nearest_distance(words, rows, cols), rtol=1e-5, atol=5e-3)
    space = _space(words[1:])
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    m = dptext.mechanism("gumbel", space=space,
                         epsilon=2 * minimum_epsilon(**geo, rule="paper")).fit(cache=False)
    rows, ks = np.array([0, 5]), np.array([699, 300])
    for (c1, _), (c2, _) in zip(m._large_candidates(rows, ks),
                                m._large_candidates(rows, ks, torch_device="cuda"), strict=True):
        np.testing.assert_array_equal(c1, c2)


ZEN2 = """processor\t: 0
model name\t: AMD EPYC 7B12
flags\t\t: fpu sse2 avx fma avx2 f16c
processor\t: 1
model name\t: AMD EPYC 7B12
flags\t\t: fpu sse2 avx fma avx2 f16c
"""
SPR = ("model name\t: Intel Xeon\n"
       "flags\t\t: avx2 avx512f avx512_vnni avx512_bf16 amx_tile amx_int8\n")


def test_cpu_features_are_read_from_cpuinfo():
    """The CPU features dptext's speed depends on, parsed from /proc/cpuinfo text (a Zen 2
    without VNNI and a Sapphire Rapids with AMX), and something sane for this machine."""
    from dptext.devices import CPU_FEATURES, cpu_features, cpu_info, has_int8_dot

    assert cpu_info(ZEN2) == ("AMD EPYC 7B12", {"fpu", "sse2", "avx", "fma", "avx2", "f16c"})
    zen2 = cpu_features(ZEN2)
    assert zen2["AVX2"] and not any(v for k, v in zen2.items() if k != "AVX2")
    assert not has_int8_dot(ZEN2)
    spr = cpu_features(SPR)
    assert spr["AMX"] and spr["AVX-512 VNNI"] and spr["AVX-512 BF16"] and not spr["AVX-VNNI"]
    assert has_int8_dot(SPR)
    assert cpu_info("") == ("unknown", set())
    here = cpu_features()
    assert set(here) == set(CPU_FEATURES) and all(isinstance(v, bool) for v in here.values())


def test_resources_prints_the_cpu_features(capsys):
    from dptext.cli import main
    from dptext.devices import cpu_info

    assert main(["resources", "--list"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("cpu "))
    assert cpu_info()[0] in line
    for name in ("AVX2", "AVX-512", "AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX-512 BF16"):
        assert f"{name} yes" in line or f"{name} no" in line
    assert "torch CPU capability" in out and "--search int8" in out
