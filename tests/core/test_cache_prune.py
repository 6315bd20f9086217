"""The cache is bounded (issue 47 N6: each new epsilon wrote 12.2 MB of fitted tables that
were never pruned, +2.34 GB after 192 epsilons in the service): past the cap
(``$DPTEXT_CACHE_MAX_MB``, 1 GB by default) the least recently used fitted tables go when new
ones are written, and ``dptext cache prune`` does it on demand."""

from __future__ import annotations

import numpy as np
import pytest

import dptext
from dptext import EmbeddingSpace
from dptext.cli import main
from dptext.resources import cache_entries, prune_cache


def _space() -> EmbeddingSpace:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(120)]
    return EmbeddingSpace(words, rng.normal(size=(120, 6)).astype(np.float32), name="prune")


def _fit(space, epsilon):
    return dptext.mechanism("custext", space=space, epsilon=epsilon, k=5).fit()


def _fitted():
    return {e.path.name: e.bytes for e in cache_entries() if e.kind == "fitted"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.slow
def test_many_epsilons_stay_under_the_cap_least_recently_used_out_first(cache, monkeypatch):
    space = _space()
    _fit(space, 1.0)
    first = _fitted()
    (name_1,) = first  # one entry per epsilon (no epsilon-free sets for so small a space)
    one = first[name_1]
    cap = 6 * one + one // 2  # room for six
    monkeypatch.setenv("DPTEXT_CACHE_MAX_MB", str(cap / 2**20))
    for e in range(2, 9):
        _fit(space, float(e))
    assert len(_fitted()) == 6 and name_1 not in _fitted()  # the oldest went first
    for e in range(20, 30):  # 10 new epsilons: never more than the cap
        _fit(space, float(e))
        assert sum(_fitted().values()) <= cap
    assert len(_fitted()) == 6
    monkeypatch.setenv("DPTEXT_CACHE_MAX_MB", "none")
    for e in range(50, 54):
        _fit(space, float(e))
    assert len(_fitted()) == 10  # no cap: nothing removed


def test_a_reused_entry_outlives_older_ones(cache, monkeypatch):
    space = _space()
    _fit(space, 1.0)
    (name_1,) = _fitted()
    one = _fitted()[name_1]
    monkeypatch.setenv("DPTEXT_CACHE_MAX_MB", str((4 * one + one // 2) / 2**20))
    for e in (2.0, 3.0, 4.0):
        _fit(space, e)
    _fit(space, 1.0)  # epsilon 1 read again
    _fit(space, 5.0)
    _fit(space, 6.0)
    left = set(_fitted())
    assert name_1 in left and len(left) == 4  # epsilons 2 and 3 went, 1 stayed


def test_cache_prune_command(cache, capsys):
    space = _space()
    for e in range(1, 11):
        _fit(space, float(e))
    sizes = _fitted()
    one = max(sizes.values())
    assert main(["cache", "prune", "--max-size", str(3 * one)]) == 0
    out = capsys.readouterr().out
    assert "removed 7 least recently used entries" in out and len(_fitted()) == 3
    assert main(["cache", "prune", "--max-size", "0", "--kind", "nope"]) == 2
    assert "unknown cache kind 'nope'" in capsys.readouterr().err
    left = sum(_fitted().values())
    assert prune_cache(0) == (left, 3) and _fitted() == {}
