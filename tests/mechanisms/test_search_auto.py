"""``search="auto"`` (dptext.mechanisms.search.auto): the fastest certified search, measured once
and cached, verified before it is trusted - and the int8 set-up cached with the tables.

Every test runs in its own cache directory on a small random space (the choice itself depends
on the CPU, so no test asserts which search wins: only that it is a certified one, what the
cache does, and that the words are the exact search's)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from dptext import mechanism
from dptext.cache import CacheWarning
from dptext.embeddings import EmbeddingSpace
from dptext.mechanisms.search import ExactSearch, make_search
from dptext.mechanisms.search import auto as auto_search

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    return tmp_path


def _words(m: int = 1200, d: int = 24, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, d)).astype(np.float32)


def _entry(cache) -> list:
    return sorted((cache / "search").glob("auto-*.json"))


def test_the_choice_is_a_certified_search_with_the_exact_words(cache):
    words = _words()
    search = auto_search.AutoSearch(words, min_work=0)
    points = auto_search.probe_points(words, 700, seed=5)
    got = search(points)
    assert search.choice in auto_search.CANDIDATES and search.source == "measured"
    assert "ivf" not in auto_search.CANDIDATES and "hnsw" not in auto_search.CANDIDATES
    assert set(search.timings) <= set(auto_search.CANDIDATES) and "exact" in search.timings
    np.testing.assert_array_equal(got, ExactSearch(words)(points))
    body = json.loads(_entry(cache)[0].read_text())["body"]
    assert body["choice"] == search.choice and body["key"]["shape"] == [1200, 24]


def test_a_search_other_than_exact_must_win_by_the_margin(cache, monkeypatch):
    """int8 (or torch) only where it wins: with a margin no search can meet, exact is kept."""
    monkeypatch.setattr(auto_search, "WIN_MARGIN", 0.0)
    search = auto_search.AutoSearch(_words(), min_work=0)
    search.resolve(10)
    assert search.choice == "exact" and len(search.timings) >= 1


def test_small_calls_take_the_exact_search_and_measure_nothing(cache):
    words = _words()
    search = auto_search.AutoSearch(words)  # the default threshold: 5,000 points x 50k words
    points = auto_search.probe_points(words, 300, seed=2)
    np.testing.assert_array_equal(search(points), ExactSearch(words)(points))
    assert search.choice is None and not (cache / "search").exists()


def test_the_cache_is_used_the_second_time(cache, monkeypatch):
    words = _words()
    first = auto_search.AutoSearch(words, min_work=0)
    first.resolve(10)

    def no_measuring(self):
        raise AssertionError("measured again")

    real = auto_search.AutoSearch._measure
    monkeypatch.setattr(auto_search.AutoSearch, "_measure", no_measuring)
    second = auto_search.AutoSearch(words, min_work=0)
    points = auto_search.probe_points(words, 400, seed=3)
    np.testing.assert_array_equal(second(points), ExactSearch(words)(points))
    assert second.source == "cache" and second.choice == first.choice
    # another table shape is another machine key: measured for itself
    monkeypatch.setattr(auto_search.AutoSearch, "_measure", real)
    other = auto_search.AutoSearch(_words(900), min_work=0)
    other.resolve(10)
    assert other.source == "measured" and len(_entry(cache)) == 2


@pytest.mark.parametrize("damage", ["garbage", "digest", "choice"])
def test_a_corrupt_entry_is_measured_again_and_rewritten(cache, damage):
    words = _words()
    auto_search.AutoSearch(words, min_work=0).resolve(10)
    path = _entry(cache)[0]
    entry = json.loads(path.read_text())
    if damage == "garbage":
        path.write_bytes(b"\x00{not json")
    elif damage == "digest":  # a choice edited without its sha256
        entry["body"]["choice"] = "int8" if entry["body"]["choice"] != "int8" else "exact"
        path.write_text(json.dumps(entry))
    else:  # a consistent entry naming an approximate search: never trusted
        entry["body"]["choice"] = "hnsw"
        entry["sha256"] = auto_search._digest(entry["body"])
        path.write_text(json.dumps(entry))
    with pytest.warns(CacheWarning, match="measured again"):
        again = auto_search.AutoSearch(words, min_work=0)
        again.resolve(10)
    assert again.source == "measured"
    body, why = auto_search.read_entry(path, again.key())
    assert why is None and body["choice"] == again.choice


def test_a_cached_choice_that_gives_other_words_is_not_trusted(cache, monkeypatch):
    """Verified before trusted: a cached non-exact choice must give exact's words on the
    verify points, else it is measured again."""
    words = _words()
    first = auto_search.AutoSearch(words, min_work=0, candidates=("exact", "torch"))
    first.resolve(10)
    path = _entry(cache)[0]
    entry = json.loads(path.read_text())
    entry["body"]["choice"] = "torch"  # as if torch had won
    entry["sha256"] = auto_search._digest(entry["body"])
    path.write_text(json.dumps(entry))

    class Wrong(ExactSearch):
        def search_blocks(self, n, points_of, *, unit=1):
            return (super().search_blocks(n, points_of, unit=unit) + 1) % len(self.words)

    real = auto_search.AutoSearch._build
    monkeypatch.setattr(auto_search.AutoSearch, "_build",
                        lambda self, name: Wrong(self.vectors) if name == "torch"
                        else real(self, name))
    with pytest.warns(CacheWarning, match="torch did not give the exact search's words"):
        again = auto_search.AutoSearch(words, min_work=0, candidates=("exact", "torch"))
        again.resolve(10)
    assert again.source == "measured" and again.choice == "exact"  # the wrong one never wins


def test_auto_never_changes_the_words_of_a_seed(cache, monkeypatch):
    """A seeded Laplace run gives the same words with search='auto' as with the search it
    chose (and as exact), over calls that take the chosen path and calls below the
    threshold."""
    monkeypatch.setattr(auto_search, "AUTO_MIN_WORK", 400 * 1200)
    words = _words()
    space = EmbeddingSpace([f"w{i}" for i in range(len(words))], words, name="auto-test")
    texts = [" ".join(f"w{i}" for i in np.random.default_rng(k).integers(0, 1200, n))
             for k, n in ((1, 700), (2, 30))]
    auto = mechanism("laplace", epsilon=8.0, space=space).fit(cache=False)
    assert auto.search == "auto"
    got = [auto.privatize(t, rng=np.random.default_rng(7)) for t in texts]
    chosen = auto._searcher().choice
    assert chosen in auto_search.CANDIDATES
    from dptext.mechanisms.search import SEARCHES

    # "torch" (the exact search on torch's GEMM) is auto's own path, not a search= value: where
    # it was chosen, auto's words are compared with exact's
    for name in {chosen, "exact"} & set(SEARCHES):
        m = mechanism("laplace", epsilon=8.0, space=space, search=name).fit(cache=False)
        assert [m.privatize(t, rng=np.random.default_rng(7)) for t in texts] == got


def test_the_int8_setup_is_cached_and_checked(cache, monkeypatch):
    pytest.importorskip("torch")
    from dptext.errors import DPTextError
    from dptext.mechanisms.search import int8_setup

    words = _words(1500, 32, 4)
    try:
        first = make_search(words, "int8", fingerprint="f" * 16)
    except DPTextError as exc:  # no oneDNN int8 kernel (not an x86 build of torch)
        pytest.skip(str(exc))
    path = int8_setup.setup_path("f" * 16, first.levels)
    assert path.is_file()
    points = auto_search.probe_points(words, 500, seed=6)
    want = ExactSearch(words)(points)
    np.testing.assert_array_equal(first(points), want)

    real = int8_setup.word_codes
    calls = []
    monkeypatch.setattr(int8_setup, "word_codes",
                        lambda w, levels, rows=None: calls.append(rows) or real(w, levels, rows))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        second = make_search(words, "int8", fingerprint=lambda: "f" * 16)
    assert calls and all(r is not None for r in calls)  # spot checks only: codes from the cache
    np.testing.assert_array_equal(second(points), want)

    # codes changed on disk (digest recomputed, so only the spot checks can see it)
    arrays = dict(np.load(path))
    arrays["w_err"] = arrays["w_err"] * 0.5  # errors too small: the bound would not hold
    from dptext.cache import save_npz

    save_npz(path, arrays)
    calls.clear()
    with pytest.warns(CacheWarning, match="int8 set-up .* is rebuilt: w_err differs"):
        third = make_search(words, "int8", fingerprint="f" * 16)
    assert any(r is None for r in calls)  # recomputed
    np.testing.assert_array_equal(third(points), want)
    path.write_bytes(b"junk")  # no longer its digest
    with pytest.warns(CacheWarning, match="rebuilt"):
        np.testing.assert_array_equal(make_search(words, "int8", fingerprint="f" * 16)(points),
                                      want)
