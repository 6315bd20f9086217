"""CusText's output sets (f_map, epsilon-free) are kept in the on-disk cache: the cached sets
are the freshly built ones bit for bit, a damaged entry is not trusted (rebuilt with a warning),
a fresh process fitting a new epsilon reads them instead of building them, and the key
separates everything the sets depend on (K, the space's metric) and nothing else (epsilon,
``similarity``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import dptext
from dptext import EmbeddingSpace
from dptext import cache as cache_files
from dptext.mechanisms import custext as custext_module
from dptext.mechanisms.custext import _output_sets_path, build_output_sets
from dptext.mechanisms.frequency import frequency_order

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

SRC = str(Path(__file__).resolve().parents[2] / "src")
WORDS = ["the", "of", "and", "to", "in", "is", "for", "on", "that", "with", "as", "was",
         "at", "by", "from", "this", "be", "are", "or", "an"]


def make_space(metric: str = "euclidean", n: int = 240) -> EmbeddingSpace:
    rng = np.random.default_rng(7)
    words = WORDS + [f"w{i}" for i in range(n - len(WORDS))]
    vectors = rng.normal(size=(n, 6)).astype(np.float32)
    return EmbeddingSpace(words, vectors, metric=metric, name=f"sets-{metric}")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty cache, no sets in the process, and the disk cache on for small spaces."""
    root = tmp_path / "cache"
    monkeypatch.setenv("DPTEXT_CACHE", str(root))
    monkeypatch.setattr(custext_module, "_OUTPUT_SETS", {})
    monkeypatch.setattr(custext_module, "_DISK_SETS_MIN_WORDS", 0)
    return root


@pytest.fixture
def builds(monkeypatch):
    """Counts the calls of build_output_sets (still building)."""
    calls = []

    def counting(space, k, order):
        calls.append(k)
        return build_output_sets(space, k, order)

    monkeypatch.setattr(custext_module, "build_output_sets", counting)
    return calls


def fit(space, **kw):
    return dptext.mechanism("custext", space=space, **{"epsilon": 2.0, "k": 5, **kw}).fit()


def test_cached_sets_are_the_built_sets_bit_for_bit(cache_dir):
    space = make_space()
    m = fit(space)
    path = _output_sets_path(space, 5)
    assert path.is_file() and cache_files.verify(path)  # written with its content hash
    stored = cache_files.load_npz(path)
    fresh = build_output_sets(space, 5, frequency_order(space, None))
    assert list(stored) == ["members"]
    assert stored["members"].dtype == fresh.dtype and np.array_equal(stored["members"], fresh)
    assert np.array_equal(m._tables["members"], fresh)
    # read back (a new process: nothing in memory) it is the same array again
    custext_module._OUTPUT_SETS.clear()
    again = fit(space, epsilon=3.0)._tables["members"]
    assert again.dtype == fresh.dtype and np.array_equal(again, fresh)
    assert not again.flags.writeable
    from dptext.resources import cache_entries

    assert ("fitted", path) in {(e.kind, e.path) for e in cache_entries()}  # `cache list`


def test_a_new_epsilon_reads_the_sets_and_samples_the_same_bytes(cache_dir, builds):
    space = make_space()
    text = " ".join(space.words[:60])
    cold = fit(space)
    assert builds == [5]
    cold_out = cold.privatize(text, rng=123).text
    # drop the epsilon's tables and the in-process sets: the refit reads the sets from disk
    for p in (cache_dir / "fitted").glob("custext-[0-9a-f]*.npz"):
        p.unlink()
    custext_module._OUTPUT_SETS.clear()
    warm = fit(space)
    assert builds == [5]
    assert all(np.array_equal(cold._tables[k], warm._tables[k]) for k in cold._tables)
    assert warm.privatize(text, rng=123).text == cold_out


_SECOND_PROCESS = textwrap.dedent("""
    import sys
    import dptext
    from dptext import EmbeddingSpace
    from dptext.mechanisms import custext

    def refuse(*args, **kwargs):
        raise SystemExit("build_output_sets was called")

    custext._DISK_SETS_MIN_WORDS = 0
    custext.build_output_sets = refuse  # the sets must come from the cache
    space = EmbeddingSpace.load(sys.argv[1])
    m = dptext.mechanism("custext", space=space, epsilon=float(sys.argv[2]), k=5).fit()
    print(int(m._tables["members"].sum()), m.privatize("the of and to in is", rng=0).text)
""")


def test_a_second_process_fitting_a_new_epsilon_does_not_build_the_sets(cache_dir, tmp_path):
    space = make_space()
    space.save(tmp_path / "space.npz")
    space = EmbeddingSpace.load(tmp_path / "space.npz")  # the second process's fingerprint
    first = fit(space, epsilon=2.0)
    assert _output_sets_path(space, 5).is_file()
    env = {**os.environ, "PYTHONPATH": SRC, "DPTEXT_CACHE": str(cache_dir),
           "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, str(tmp_path / "space.npz"),
                        "7.5"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    total, out = r.stdout.strip().split(" ", 1)
    assert int(total) == int(first._tables["members"].sum())
    here = dptext.mechanism("custext", space=space, epsilon=7.5, k=5).fit(cache=False)
    assert out == here.privatize("the of and to in is", rng=0).text


def _flip(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:-40])


def _drop_digest(p: Path) -> None:
    cache_files.digest_path(p).unlink()


@pytest.mark.parametrize("damage", [_flip, _truncate, _drop_digest])
def test_a_damaged_entry_is_not_trusted_but_rebuilt(cache_dir, builds, damage):
    space = make_space()
    fresh = fit(space)._tables["members"]
    path = _output_sets_path(space, 5)
    damage(path)
    custext_module._OUTPUT_SETS.clear()
    with pytest.warns(cache_files.CacheWarning, match="rebuilding the custext output sets"):
        again = fit(space, epsilon=4.0)._tables["members"]
    assert builds == [5, 5]  # built again, not read
    assert np.array_equal(again, fresh)
    assert cache_files.verify(path)  # and stored again, intact
    custext_module._OUTPUT_SETS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit(space, epsilon=5.0)
    assert builds == [5, 5]


def test_sets_of_another_shape_under_a_valid_digest_are_not_trusted(cache_dir, builds):
    space = make_space()
    fresh = fit(space)._tables["members"]
    path = _output_sets_path(space, 5)
    cache_files.save_npz(path, {"members": fresh[:, :4].copy()})  # a hash of wrong contents
    custext_module._OUTPUT_SETS.clear()
    with pytest.warns(cache_files.CacheWarning, match="does not hold output sets"):
        assert np.array_equal(fit(space, epsilon=4.0)._tables["members"], fresh)
    assert builds == [5, 5]


def test_the_key_separates_k_and_the_metric_but_not_epsilon_or_similarity(cache_dir, builds):
    euclid, cosine = make_space("euclidean"), make_space("cosine")
    paths = {_output_sets_path(euclid, 5), _output_sets_path(euclid, 6),
             _output_sets_path(cosine, 5), _output_sets_path(cosine, 6)}
    assert len(paths) == 4
    fit(euclid, k=5, similarity="euclidean")
    custext_module._OUTPUT_SETS.clear()
    fit(euclid, k=5, similarity="cosine", epsilon=9.0)  # same sets: read from disk
    assert builds == [5]
    fit(euclid, k=6)
    fit(cosine, k=5)
    assert builds == [5, 6, 5]
    names = sorted(p.name for p in (cache_dir / "fitted").glob("custext-sets-*.npz"))
    assert names == sorted(p.name for p in paths if p != _output_sets_path(cosine, 6))
    # the similarity does not enter the walk: its sets are the same for either
    assert np.array_equal(
        build_output_sets(cosine, 5, frequency_order(cosine, None)),
        fit(cosine, k=5, similarity="euclidean", epsilon=3.0)._tables["members"])


def test_no_disk_cache_without_the_cache_or_for_user_frequencies(cache_dir, builds):
    space = make_space()
    dptext.mechanism("custext", space=space, epsilon=2.0, k=5).fit(cache=False)
    freqs = {w: float(i) for i, w in enumerate(space.words)}
    fit(space, k=7, frequencies=freqs)
    assert not list(cache_dir.rglob("custext-sets-*"))
    assert builds == [5, 7]


def test_small_spaces_keep_their_sets_in_memory_only(cache_dir, monkeypatch):
    monkeypatch.setattr(custext_module, "_DISK_SETS_MIN_WORDS", 241)
    fit(make_space())
    assert not list(cache_dir.rglob("custext-sets-*"))
    assert len(list((cache_dir / "fitted").glob("custext-*.npz"))) == 1  # the tables
