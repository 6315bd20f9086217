"""EmbeddingSpace: exact geometry against brute force, merging, save/load, errors, readers."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.embeddings import EmbeddingSpace, strip_accents
from dptext.errors import DPTextError

N_WORDS, DIM = 500, 16


def _words(n: int) -> list[str]:
    return [f"w{i:04d}" for i in range(n)]


def _random_space(seed: int, *, metric: str = "euclidean", n: int = N_WORDS, dim: int = DIM):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return EmbeddingSpace(_words(n), vectors, metric=metric, name=f"random-{seed}")


def _brute(vectors: np.ndarray, metric: str) -> np.ndarray:
    """All-pairs distances in float64, the straightforward way."""
    x = vectors.astype(np.float64)
    if metric == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        return np.clip(1.0 - x @ x.T, 0.0, 2.0)
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def _check_geometry_against_brute(space: EmbeddingSpace, k: int) -> None:
    n = len(space)
    d = _brute(space.vectors, space.metric)
    np.fill_diagonal(d, -1.0)  # the word itself first
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    np.fill_diagonal(d, 0.0)
    geo = space.geometry(k)
    assert geo.neighbors.shape == (n, k) and geo.distances.shape == (n, k)
    np.testing.assert_array_equal(geo.neighbors[:, 0], np.arange(n))
    np.testing.assert_array_equal(geo.distances[:, 0], 0.0)
    np.testing.assert_array_equal(geo.neighbors, order)
    expected = np.take_along_axis(d, order, 1)
    np.testing.assert_allclose(geo.distances, expected, rtol=1e-6, atol=1e-7)
    assert np.all(np.diff(geo.distances, axis=1) >= 0)  # ascending

    off = d + np.diag(np.full(n, np.inf))
    assert geo.delta_max == pytest.approx(d.max(), rel=1e-12)
    if k >= 2:
        assert geo.delta_min == pytest.approx(off.min(), rel=1e-6, abs=1e-9)
        i, j = geo.delta_min_pair
        assert d[i, j] == pytest.approx(off.min(), rel=1e-6, abs=1e-9)
    else:
        assert np.isnan(geo.delta_min)  # a table of the words themselves cannot tell
    # the space's own properties are exact whatever table is cached
    assert space.delta_min == pytest.approx(off.min(), rel=1e-6, abs=1e-9)
    assert space.delta_max == pytest.approx(d.max(), rel=1e-12)
    # far neighbours: each word's farthest word first, with its exact distance
    np.testing.assert_array_equal(geo.far_neighbors[:, 0], d.argmax(1))
    np.testing.assert_allclose(geo.far_distances[:, 0], d.max(1), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 20])
def test_geometry_matches_brute_force_euclidean(seed: int, k: int) -> None:
    _check_geometry_against_brute(_random_space(seed), k)


@pytest.mark.parametrize("seed", [3, 4])
def test_geometry_matches_brute_force_cosine(seed: int) -> None:
    space = _random_space(seed, metric="cosine")
    _check_geometry_against_brute(space, 20)
    assert space.delta_max <= 2.0


def test_geometry_larger_than_one_block() -> None:
    # more rows than one block of the blocked scan (1024), a few dims: exercises block seams
    _check_geometry_against_brute(_random_space(5, n=1100, dim=4), 8)


def test_geometry_self_first_with_large_norms() -> None:
    # |a|^2 + |b|^2 - 2ab in float32 is off by far more than 1 for norms ~1e4: a near-duplicate
    # must still never displace the word itself from column 0
    rng = np.random.default_rng(9)
    for _ in range(5):
        vectors = (rng.standard_normal((50, 64)) * 3000).astype(np.float32)
        vectors[1] = vectors[0]
        vectors[1, 0] += 0.5
        space = EmbeddingSpace(_words(50), vectors)
        geo = space.geometry(5)
        np.testing.assert_array_equal(geo.neighbors[:, 0], np.arange(50))
        assert geo.neighbors[0, 1] == 1 and geo.neighbors[1, 1] == 0
        assert geo.distances[0, 1] == pytest.approx(0.5, rel=1e-6)
        assert space.delta_min == pytest.approx(0.5, rel=1e-6)


def test_cosine_near_duplicates_exact() -> None:
    # cosine distances of near-duplicates (~1e-8) must come from float64 normalisation
    rng = np.random.default_rng(10)
    vectors = rng.standard_normal((30, 16)).astype(np.float32)
    vectors[1] = vectors[0] * 7.0
    vectors[1, 3] += 2e-3
    space = EmbeddingSpace(_words(30), vectors, metric="cosine")
    d = _brute(vectors, "cosine")
    assert space.delta_min == pytest.approx(d[0, 1], rel=1e-6)
    assert space.pairwise([0], [0])[0, 0] == pytest.approx(0.0, abs=1e-15)


def test_geometry_k_capped_and_cached() -> None:
    space = _random_space(6, n=10, dim=3)
    geo = space.geometry(64)
    assert geo.neighbors.shape == (10, 10)
    assert space.geometry(5) is geo  # a cached larger table serves smaller requests


def test_pairwise_is_exact_where_the_expansion_cancels() -> None:
    """|a|^2 + |b|^2 - 2 a.b loses the digits of a small distance between long vectors (and
    leaves ~1e-8 between a word and itself on some BLAS kernels): pairwise recomputes those
    pairs from the differences. A twin 1e-6 away from a word of norm ~100 and the word
    itself: the expansion alone would be off by ~1e-6 absolute (100% relative)."""
    rng = np.random.default_rng(3)
    vectors = (rng.standard_normal((6, 64)) * 12).astype(np.float32)
    vectors[1] = vectors[0]
    vectors[1, 5] = np.nextafter(vectors[0, 5], np.float32(np.inf))  # one float32 step away
    space = EmbeddingSpace(_words(6), vectors, metric="euclidean")
    x = vectors.astype(np.float64)
    want = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    got = space.pairwise(np.arange(6))
    assert np.all(np.diag(got) == 0.0)
    assert got[0, 1] == pytest.approx(want[0, 1], rel=1e-9) and want[0, 1] > 0
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=0)


def test_pairwise_and_neighbors_exact() -> None:
    space = _random_space(7)
    d = _brute(space.vectors, "euclidean")
    np.testing.assert_allclose(space.pairwise(np.arange(5)), d[:5], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        space.pairwise([1, 2], [3, 4, 5]), d[np.ix_([1, 2], [3, 4, 5])], rtol=1e-9
    )
    got = space.neighbors("W0003", k=5)
    row = d[3].copy()
    row[3] = np.inf
    top = np.argsort(row)[:5]
    assert [w for w, _ in got] == [space.words[j] for j in top]
    assert [x for _, x in got] == pytest.approx(row[top], rel=1e-9)
    with pytest.raises(DPTextError, match="not in the embedding space"):
        space.neighbors("nope")


def test_nearest_to_points_matches_brute_force() -> None:
    space = _random_space(8)
    rng = np.random.default_rng(80)
    points = rng.standard_normal((2000, DIM)) * 1.5
    x = space.vectors.astype(np.float64)
    d2 = ((points[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    expected = d2.argmin(1)
    got = space.nearest_to_points(points, block=333)  # several blocks, uneven tail
    assert got.dtype == np.int64 and got.shape == (2000,)
    np.testing.assert_array_equal(got, expected)
    # a point on a word is nearest to that word
    rows = np.array([0, 17, 499])
    np.testing.assert_array_equal(space.nearest_to_points(space.vectors[rows]), rows)


# ------------------------------------------------------------------ merging
def _space_with_duplicates(metric: str = "euclidean"):
    rng = np.random.default_rng(11)
    words = _words(N_WORDS)
    vectors = rng.standard_normal((N_WORDS, DIM)).astype(np.float32)
    # a planted near-duplicate pair: row 200 sits 1e-3 from row 10
    vectors[200] = vectors[10] + 1e-3 / np.sqrt(DIM)
    # a chain: 30 - 31 - 32, each link 0.01 but 30-32 at 0.02 * 0.75
    vectors[31] = vectors[30] + np.eye(DIM, dtype=np.float32)[0] * 0.01
    vectors[32] = vectors[31] + np.eye(DIM, dtype=np.float32)[1] * 0.01
    # accent variants with unrelated vectors: the folded form is another word of the space
    words[5], words[300] = "jose", "jos\u00e9"
    words[7], words[8] = "caf\u00e9", "cafe"  # accented form first: it is the representative
    return EmbeddingSpace(words, vectors, metric=metric, name="dups")


def test_merge_near_duplicates() -> None:
    space = _space_with_duplicates()
    tolerance = 0.02
    assert space.delta_min < tolerance
    merged = space.merge_near_duplicates(tolerance=tolerance)

    assert len(merged) == N_WORDS - 5
    assert merged.aliases == {
        "w0200": "w0010",
        "w0031": "w0030",
        "w0032": "w0030",
        "jos\u00e9": "jose",
        "cafe": "caf\u00e9",
    }
    for alias, rep in merged.aliases.items():
        assert alias not in merged.words
        row = merged.lookup(alias)
        assert row >= 0 and merged.words[row] == rep
        # the representative keeps its own (earlier) row's vector
        np.testing.assert_array_equal(merged.vectors[row], space.vectors[space.lookup(rep)])
    assert merged.lookup("JOS\u00c9") == merged.lookup("jose")
    assert merged.lookup("Cafe") == merged.lookup("caf\u00e9")
    # everything else keeps its relative order
    assert merged.words == [w for w in space.words if w not in merged.aliases]
    assert merged.delta_min > tolerance

    # the geometry derived from the pre-merge scan equals a freshly computed one
    derived = merged._geometry
    assert derived is not None
    k = derived.neighbors.shape[1]
    fresh = EmbeddingSpace(merged.words, merged.vectors).geometry(k)
    np.testing.assert_array_equal(derived.neighbors, fresh.neighbors)
    np.testing.assert_array_equal(derived.distances, fresh.distances)
    np.testing.assert_array_equal(derived.far_neighbors[:, 0], fresh.far_neighbors[:, 0])
    np.testing.assert_array_equal(derived.far_distances[:, 0], fresh.far_distances[:, 0])
    assert merged.delta_max == fresh.delta_max
    assert merged.delta_min == fresh.delta_min


def test_merge_keeps_earlier_row_and_chains_aliases() -> None:
    space = _space_with_duplicates()
    once = space.merge_near_duplicates(tolerance=0.02)
    # merging again with a larger tolerance re-points old aliases to the new representative
    d = _brute(once.vectors, "euclidean") + np.diag(np.full(len(once), np.inf))
    i, j = np.unravel_index(d.argmin(), d.shape)
    lo, hi = min(i, j), max(i, j)
    twice = once.merge_near_duplicates(tolerance=float(d.min()) * 1.0001)
    assert twice.aliases[once.words[hi]] == once.words[lo]
    for alias, rep in twice.aliases.items():
        assert rep in twice.words and rep not in twice.aliases
        assert twice.words[twice.lookup(alias)] == rep


def test_merge_without_accent_folding() -> None:
    merged = _space_with_duplicates().merge_near_duplicates(tolerance=0.02, fold_accents=False)
    assert "jos\u00e9" in merged.words and "jose" in merged.words
    assert set(merged.aliases) == {"w0200", "w0031", "w0032"}


def test_merge_cosine() -> None:
    space = _space_with_duplicates(metric="cosine")
    merged = space.merge_near_duplicates(tolerance=1e-5)
    assert merged.metric == "cosine"
    assert merged.aliases["w0200"] == "w0010"
    assert merged.delta_min > 1e-5
    fresh = EmbeddingSpace(merged.words, merged.vectors, metric="cosine")
    assert merged.delta_min == pytest.approx(fresh.delta_min, rel=1e-6)


def test_merge_negative_tolerance() -> None:
    with pytest.raises(DPTextError, match="tolerance"):
        _random_space(0, n=5).merge_near_duplicates(tolerance=-1)


def test_strip_accents() -> None:
    assert strip_accents("bogot\u00e1") == "bogota"
    assert strip_accents("jose\u0301") == "jose"
    assert strip_accents("plain") == "plain"


# ------------------------------------------------------------- save / load
def test_save_load_round_trip(tmp_path) -> None:
    space = _space_with_duplicates().merge_near_duplicates(tolerance=0.02)
    space.geometry(10)
    path = space.save(tmp_path / "sub" / "space.npz")
    assert path.is_file()
    assert [p.name for p in path.parent.iterdir()] == ["space.npz"]  # no temporary left
    loaded = EmbeddingSpace.load(path)
    assert loaded.words == space.words
    assert loaded.vectors.dtype == np.float32
    np.testing.assert_array_equal(loaded.vectors, space.vectors)
    assert loaded.aliases == space.aliases
    assert loaded.metric == space.metric and loaded.name == space.name
    assert loaded.lookup("jos\u00e9") == space.lookup("jose")
    assert loaded.fingerprint() == space.fingerprint()
    g, h = space._geometry, loaded._geometry
    assert h is not None and loaded._geometry_k == g.neighbors.shape[1]
    for field in ("neighbors", "distances", "far_neighbors", "far_distances"):
        np.testing.assert_array_equal(getattr(h, field), getattr(g, field))
    assert loaded.delta_min == space.delta_min and loaded.delta_max == space.delta_max


def test_save_load_without_geometry(tmp_path) -> None:
    space = _random_space(1, n=20, metric="cosine")
    loaded = EmbeddingSpace.load(space.save(tmp_path / "s.npz"))
    assert loaded._geometry is None
    assert loaded.metric == "cosine" and loaded.words == space.words
    assert loaded.delta_min == pytest.approx(space.delta_min)


def test_load_missing_file(tmp_path) -> None:
    with pytest.raises(DPTextError, match="no such embedding space file"):
        EmbeddingSpace.load(tmp_path / "missing.npz")


def test_fingerprint_changes_with_content() -> None:
    a = _random_space(0, n=20)
    b = EmbeddingSpace(a.words, a.vectors.copy())
    assert a.fingerprint() == b.fingerprint()
    vectors = a.vectors.copy()
    vectors[0, 0] += 1
    assert EmbeddingSpace(a.words, vectors).fingerprint() != a.fingerprint()
    assert EmbeddingSpace(a.words, a.vectors, metric="cosine").fingerprint() != a.fingerprint()


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_vectors_rejected(bad: float) -> None:
    vectors = np.ones((3, 2), dtype=np.float32)
    vectors[1, 1] = bad
    with pytest.raises(DPTextError, match="NaN or infinite"):
        EmbeddingSpace(["a", "b", "c"], vectors)


@pytest.mark.parametrize("words", [["a", "b", "a"], ["Paris", "x", "paris"]])
def test_duplicate_words_rejected(words: list[str]) -> None:
    with pytest.raises(DPTextError, match="duplicate word"):
        EmbeddingSpace(words, np.eye(3, dtype=np.float32))


def test_unknown_metric_rejected() -> None:
    with pytest.raises(DPTextError, match="unknown metric 'manhattan'"):
        EmbeddingSpace(["a", "b"], np.eye(2), metric="manhattan")


def test_other_construction_errors() -> None:
    with pytest.raises(DPTextError, match="matrix"):
        EmbeddingSpace(["a", "b", "c"], np.eye(2))
    with pytest.raises(DPTextError, match="at least two words"):
        EmbeddingSpace(["a"], np.ones((1, 2)))
    with pytest.raises(DPTextError, match="unknown word"):
        EmbeddingSpace(["a", "b"], np.eye(2), aliases={"c": "z"})
    assert issubclass(DPTextError, ValueError)


def test_lookup() -> None:
    space = EmbeddingSpace(["Don\u2019t", "b"], np.eye(2), aliases={"B\u00e9": "b"})
    assert space.words == ["don't", "b"]
    assert space.lookup("DON'T") == 0
    assert space.lookup("don\u2019t") == 0
    assert space.lookup("b\u00e9") == 1
    assert space.lookup("zzz") == -1


# ----------------------------------------------------------------- readers
def test_from_file_glove(tmp_path) -> None:
    rng = np.random.default_rng(12)
    words = ["The", "the", "cat", "sat", "caf\u00e9", "mat"]
    vectors = rng.standard_normal((len(words), 5)).astype(np.float32)
    path = tmp_path / "tiny.glove.txt"
    path.write_text(
        "".join(w + " " + " ".join(f"{v:.6f}" for v in row) + "\n"
                for w, row in zip(words, vectors, strict=True)),
        encoding="utf-8",
    )
    space = EmbeddingSpace.from_file(path)
    # "The" and "the" collide after lower-casing: the first (more frequent) row wins
    assert space.words == ["the", "cat", "sat", "caf\u00e9", "mat"]
    np.testing.assert_allclose(space.vectors, vectors[[0, 2, 3, 4, 5]], atol=1e-6)
    assert space.name == "tiny.glove.txt" and space.metric == "euclidean"
    assert space.lookup("Caf\u00e9") == 3

    limited = EmbeddingSpace.from_file(path, limit=3, metric="cosine")
    assert limited.words == ["the", "cat", "sat"] and limited.metric == "cosine"


def test_from_file_errors(tmp_path) -> None:
    with pytest.raises(DPTextError):
        EmbeddingSpace.from_file(tmp_path / "missing.txt")
    bad = tmp_path / "nan.txt"
    bad.write_text("a 1 2\nb nan 1\n", encoding="utf-8")
    with pytest.raises(DPTextError):
        EmbeddingSpace.from_file(bad)
