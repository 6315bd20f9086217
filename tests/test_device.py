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
from dptext.mechanisms.nearest import ExactSearch, TorchExactSearch

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
