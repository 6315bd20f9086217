"""Nearest-word search of the multivariate Laplace mechanism (dptext.mechanisms.search)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dptext import mechanism
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.search import ExactSearch, make_search


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


# ------------------------------------------- noise drawn in the search threads (pipelined)
def _laplace(n_words: int = 300, dim: int = 16, eps: float = 4.0, seed: int = 21):
    rng = np.random.default_rng(seed)
    space = EmbeddingSpace([f"w{i}" for i in range(n_words)],
                           rng.standard_normal((n_words, dim)).astype(np.float32), name="pipe")
    return mechanism("laplace", epsilon=eps, space=space).fit(cache=False), space


@pytest.mark.parametrize("workers, block", [(1, 1024), (2, 128), (2, 1024), (3, 256), (2, 100)])
def test_noise_drawn_per_block_gives_the_serial_words(workers, block):
    """``_sample`` draws each block's noise in the thread that searches it; with a seed the
    words equal the serial path (all of ``noise()``'s points, then a float64 brute force),
    whatever the threads and the blocks (1,000 points: 8 chunks, the last one short)."""
    m, space = _laplace()
    rows = np.random.default_rng(0).integers(0, len(space), 1000)
    points = space.vectors[rows].astype(np.float64) + m.noise(len(rows),
                                                              np.random.default_rng(7))
    ref = _brute_force(points, space.vectors)
    m._search = ExactSearch(space.vectors, block=block, workers=workers)
    np.testing.assert_array_equal(m.sample_rows(rows, rng=7), ref)


def test_search_blocks_makes_each_blocks_points_in_a_worker_thread():
    import threading

    rng = np.random.default_rng(8)
    words = rng.standard_normal((500, 12)).astype(np.float32)
    points = rng.standard_normal((2000, 12)) * 2
    calls, main = [], threading.get_ident()

    def points_of(start, stop):
        calls.append((start, stop, threading.get_ident()))
        return points[start:stop]

    search = ExactSearch(words, block=512, workers=2)
    np.testing.assert_array_equal(search.search_blocks(2000, points_of, unit=128),
                                  _brute_force(points, words))
    assert sorted(c[:2] for c in calls) == [(0, 512), (512, 1024), (1024, 1536), (1536, 2000)]
    assert main not in {c[2] for c in calls}  # made beside the other thread's search


def test_gpu_and_indexed_searches_get_the_same_noisy_points():
    """The searches without per-block points (torch, faiss) are given all the points at
    once: the same noise as the exact CPU search, so the torch search gives its words."""
    from dptext.mechanisms.search import TorchExactSearch

    m, space = _laplace(seed=22)
    rows = np.random.default_rng(1).integers(0, len(space), 700)
    cpu = m.sample_rows(rows, rng=3)
    m._search = TorchExactSearch(space.vectors, device="cpu", block=256)
    np.testing.assert_array_equal(m.sample_rows(rows, rng=3), cpu)
    seen = []

    from dptext.mechanisms.search import Search

    class Whole(Search):  # a search that takes points only all at once, like FaissSearch
        def __call__(self, points):
            seen.append(len(points))
            return _brute_force(points, space.vectors)

    m._search = Whole()
    np.testing.assert_array_equal(m.sample_rows(rows, rng=3), cpu)
    assert seen == [700]


def test_noise_streams_are_seeded_independent_and_secure_when_asked():
    from dptext.mechanisms.laplace import NOISE_CHUNK, NoiseStreams
    from dptext.rng import is_secure, secure_generator

    m, space = _laplace(dim=8)
    # at most one chunk: the noise draws from the generator itself, one Gaussian array then
    # the radii (the seeded outputs of such calls are those of the serial code before)
    gen = np.random.default_rng(5)
    z = gen.standard_normal((NOISE_CHUNK, 8))
    r = gen.gamma(shape=8, scale=1 / m.epsilon, size=NOISE_CHUNK)
    np.testing.assert_allclose(m.noise(NOISE_CHUNK, np.random.default_rng(5)),
                               z * (r / np.linalg.norm(z, axis=1))[:, None], rtol=1e-12)
    # several chunks: reproducible with a seed, a fresh stream per chunk and per call
    a, b = m.noise(5 * NOISE_CHUNK, np.random.default_rng(6)), m.noise(5 * NOISE_CHUNK,
                                                                       np.random.default_rng(6))
    np.testing.assert_array_equal(a, b)
    chunks = a.reshape(5, NOISE_CHUNK, 8)
    for i in range(5):
        for j in range(i):  # no two chunks share values (independent generators)
            assert not np.isin(chunks[i], chunks[j]).any()
    gen = np.random.default_rng(6)
    first, second = m.noise(300, gen), m.noise(300, gen)
    assert not np.isin(first, second).any()  # the parent advanced: the next call differs
    # the secure generator's chunks draw from ChaCha20 (20 rounds) too, keyed from it
    streams = NoiseStreams(secure_generator(), 3 * NOISE_CHUNK)
    assert len(streams) == 3 and all(is_secure(streams[c]) for c in range(3))
    keys = {bytes(streams[c].bit_generator.state["state"]["keysetup"]) for c in range(3)}
    assert len(keys) == 3


def test_blocks_cover_the_points_on_chunk_bounds_and_balance_the_threads():
    from dptext.mechanisms.search.base import blocks as _blocks

    for n, block, workers, unit in [(4104, 1024, 2, 128), (3000, 1024, 2, 128),
                                    (1000, 100, 3, 128), (200, 1024, 2, 1), (5, 7, 4, 1)]:
        spans = _blocks(n, block, workers, unit)
        assert [s for s, _ in spans] == [0] + [e for _, e in spans[:-1]] and spans[-1][1] == n
        size = max(unit, block - block % unit)
        assert all(s % unit == 0 and e - s <= size + min(128, size) for s, e in spans)
    # 3,000 points, 2 threads: 1024 + 512 and 1024 + 440 rows, not 2,048 and 952
    assert _blocks(3000, 1024, 2, 128) == [(0, 1024), (1024, 2048), (2048, 2560), (2560, 3000)]
    # 4,104: the last 8 points join the last block instead of a fifth block searched alone
    assert _blocks(4104, 1024, 2, 128) == [(0, 1024), (1024, 2048), (2048, 3072), (3072, 4104)]
    assert _blocks(200, 1024, 2) == [(0, 100), (100, 200)]
