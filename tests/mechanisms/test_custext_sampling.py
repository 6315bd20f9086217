"""The binary search of CusText's exact sampler (dptext.exact_sampling._count_at_most) counts
exactly what the (rows, K) comparison it replaced counted, ties and row ends included."""

from __future__ import annotations

import numpy as np
import pytest

from dptext import exact_sampling


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 9, 16, 20, 33])
def test_count_at_most_equals_the_full_comparison(k):
    rng = np.random.default_rng(k)
    cum = np.sort(rng.random((60, k)), axis=1)
    cum[::3, : k // 2] = cum[::3, :1]  # ties
    cum[::4, k // 2 :] = 1.0  # rows that reach 1 before their end
    cum[:, -1] = 1.0
    rows = rng.integers(0, 60, 5000)
    u = rng.random(5000)
    u[::5] = np.minimum(cum[rows[::5], rng.integers(0, k, 1000)], np.nextafter(1.0, 0.0))
    u[1::7] = 0.0
    expected = (cum[rows] <= u[:, None]).sum(1)
    assert np.array_equal(exact_sampling._count_at_most(cum, rows, u), expected)
