"""Nearest-word search of the multivariate Laplace mechanism (dptext.mechanisms.nearest)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dptext import mechanism
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.nearest import ExactSearch, make_search


def _brute_force(points64: np.ndarray, words: np.ndarray) -> np.ndarray:
    w = words.astype(np.float64)
    d2 = ((points64[:, None, :] - w[None, :, :]) ** 2).sum(-1)
    return d2.argmin(1)


@pytest.mark.parametrize("block, tile", [(7, 13), (256, 4096), (1, 50)])
def test_exact_search_equals_brute_force_float64(block, tile):
    rng = np.random.default_rng(0)
    words = rng.standard_normal((300, 24)).astype(np.float32)
    words /= np.linalg.norm(words, axis=1, keepdims=True)
    points = words[rng.integers(0, 300, 200)].astype(np.float64)
    points += rng.standard_normal(points.shape) * rng.choice([0.01, 0.3, 5.0], (200, 1))
    got = ExactSearch(words, block=block, tile=tile)(points)
    np.testing.assert_array_equal(got, _brute_force(points, words))


def test_near_ties_are_resolved_in_float64():
    """Points equidistant from two words up to 1e-12 (far below float32 resolution): the
    float32 scores cannot order them; the re-check returns the truly nearer word."""
    rng = np.random.default_rng(1)
    words = rng.standard_normal((50, 16)).astype(np.float32)
    a, b = words[3].astype(np.float64), words[40].astype(np.float64)
    mid = (a + b) / 2.0
    push = (b - a) / np.linalg.norm(b - a)
    points = np.stack([mid + 1e-12 * push, mid - 1e-12 * push] * 5)
    search = ExactSearch(words, block=4, tile=16)
    got = search(points)
    assert list(got) == [40, 3] * 5
    assert search.rechecked == len(points)
    # an exact tie (a duplicated word) goes to the lower row, like argmin
    dup = np.vstack([words, words[3:4]])
    assert ExactSearch(dup)(words[3:4].astype(np.float64) + 1e-3)[0] == 3


def test_laplace_uses_the_chosen_search_and_rejects_unknown_ones():
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(200)]
    space = EmbeddingSpace(words, rng.standard_normal((200, 8)), name="search-test")
    m = mechanism("laplace", epsilon=50.0, space=space).fit(cache=False)
    pts = space.vectors[:20].astype(np.float64) + 0.01
    np.testing.assert_array_equal(m.nearest(pts), _brute_force(pts, space.vectors))
    with pytest.raises(DPTextError, match="search must be one of"):
        mechanism("laplace", epsilon=1.0, search="kd-tree")
    with pytest.raises(DPTextError, match="search must be one of"):
        make_search(space.vectors, "kd-tree")


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_indexed_search_finds_words_near_their_own_vector(kind):
    pytest.importorskip("faiss")
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((500, 16)).astype(np.float32)
    search = make_search(vectors, kind)
    rows = rng.integers(0, 500, 100)
    got = search(vectors[rows].astype(np.float64) + 1e-4)
    assert (got == rows).mean() >= 0.95  # a word's own vector: any sane index finds it
    m = mechanism("laplace", epsilon=10.0, search=kind,
                  space=EmbeddingSpace([f"w{i}" for i in range(500)], vectors, name="ivf"))
    out = m.fit(cache=False).privatize("w1 w2 w3", rng=0)
    assert len(out.text.split()) == 3 and out.report.tokens_privatized == 3


@pytest.mark.parametrize("tile", [16, 1024])
def test_runner_up_inside_the_winning_tile_triggers_the_exact_check(tile):
    """The tie test's runner-up comes from the other tiles and from a re-score of the winning
    tile: near twins in the same tile and in another tile both resolve as float64 says."""
    rng = np.random.default_rng(11)
    words = rng.standard_normal((200, 12)).astype(np.float32)
    words[6] = words[5]                                        # exact twin, same tile
    words[5 + 16] = words[5]                                   # exact twin, another tile
    words[41] = words[40] + np.float32(3e-7) * rng.standard_normal(12).astype(np.float32)
    words[40 + 32] = words[40] + np.float32(3e-7) * rng.standard_normal(12).astype(np.float32)
    points = np.concatenate([np.repeat(words[[5, 40]].astype(np.float64), 20, axis=0)
                             + rng.standard_normal((40, 12)) * 1e-6,
                             rng.standard_normal((60, 12))])
    ref = np.argmin(((points[:, None, :] - words[None].astype(np.float64)) ** 2).sum(-1), 1)
    search = ExactSearch(words, block=32, tile=tile)
    np.testing.assert_array_equal(search(points), ref)
    assert search.rechecked >= 40  # every point next to the twins was re-checked


@pytest.mark.parametrize("workers, block, tile", [(2, 100, 37), (3, 64, 512), (2, 4096, 64)])
def test_worker_threads_give_the_brute_force_words(workers, block, tile):
    """Blocks searched by several threads (each with a one-thread BLAS): the same words as a
    float64 brute force, near ties (points halfway between two words) re-checked in every
    block, and the BLAS thread count restored afterwards."""
    from threadpoolctl import threadpool_info

    rng = np.random.default_rng(12)
    words = rng.standard_normal((400, 20)).astype(np.float32)
    words[340:] = words[:60] + np.float32(1e-3) * rng.standard_normal((60, 20)).astype(np.float32)
    mid = (words[:60].astype(np.float64) + words[340:]) / 2.0  # halfway between near twins
    points = np.concatenate([words[rng.integers(0, 400, 640)].astype(np.float64)
                             + rng.standard_normal((640, 20)) * 0.5, mid])
    points = points[rng.permutation(len(points))]
    threads_before = [lib["num_threads"] for lib in threadpool_info()]
    search = ExactSearch(words, block=block, tile=tile, workers=workers)
    np.testing.assert_array_equal(search(points), _brute_force(points, words))
    assert search.rechecked >= 60  # the 60 midpoints at least
    assert [lib["num_threads"] for lib in threadpool_info()] == threads_before


def test_default_workers_follow_the_blas_thread_setting():
    from threadpoolctl import threadpool_limits

    search = ExactSearch(np.eye(4, dtype=np.float32))
    with threadpool_limits(1, user_api="blas"):
        assert search._workers() == 1  # OMP_NUM_THREADS=1 / a one-thread worker: serial
    with threadpool_limits(2, user_api="blas"):
        assert search._workers() == min(2, len(os.sched_getaffinity(0)))
    assert ExactSearch(np.eye(4, dtype=np.float32), workers=3)._workers() == 3
    with pytest.raises(DPTextError, match="positive"):
        ExactSearch(np.eye(4, dtype=np.float32), tile=0)
