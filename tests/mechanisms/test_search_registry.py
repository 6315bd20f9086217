"""The nearest-word searches are a table that builds (issue 43): make_search is
SEARCHES[name].build, and a search added to the table is the one the Laplace mechanism uses."""

from __future__ import annotations

import numpy as np
import pytest

from dptext import mechanism
from dptext.errors import DPTextError
from dptext.mechanisms.search import SEARCHES, ExactSearch, FaissSearch, make_search

SPACE = dict(words=["alpha", "beta", "gamma", "delta", "w1", "w2", "w3", "w4"], seed=11,
             dim=4, name="search-tiny")  # the space fixture (conftest.py)


class Counting(ExactSearch):
    """The exact search, counting the points it was asked about (a test entry)."""

    asked = 0

    def __call__(self, points):
        Counting.asked += len(points)
        return super().__call__(points)

    def search_blocks(self, n, points_of, *, unit=1):
        Counting.asked += n
        return super().search_blocks(n, points_of, unit=unit)


def test_make_search_builds_the_named_entry():
    vectors = np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32)
    assert type(make_search(vectors, "exact")) is ExactSearch
    with pytest.raises(DPTextError, match="search must be one of"):
        make_search(vectors, "nope")
    assert SEARCHES["ivf"].build.__func__ is FaissSearch.build.__func__


def test_a_registered_search_is_used_by_the_laplace_mechanism(space, monkeypatch):
    monkeypatch.setitem(SEARCHES, "test-counting", Counting)
    Counting.asked = 0
    m = mechanism("laplace", epsilon=50, space=space, search="test-counting")
    r = m.privatize("alpha beta gamma", rng=0)
    assert Counting.asked == 3 and len(r.text.split()) == 3
    assert all(w.lower() in SPACE["words"] for w in r.text.split()), r.text
