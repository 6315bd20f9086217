"""Where randomness comes from: OS entropy by default, a seed for experiments only."""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError

RngLike = np.random.Generator | int | None


def as_generator(rng: RngLike) -> np.random.Generator:
    """``None``: fresh OS entropy (the default). An int seeds a generator - for experiments
    only: a seeded run is reproducible, hence predictable to anyone who knows the seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, int) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise DPTextError(
        f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}"
    )
