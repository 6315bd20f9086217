"""The clipped exponential mechanism over the candidate set (DP-MLM paper, sections 3.2.1, 4.1).

Score u(x, y) = clip(logit_y(x), lo, hi); the sensitivity of u is Delta_u = hi - lo for ANY two
inputs x, x'. Sampling y with probability proportional to exp(epsilon * u / (2 Delta_u)) is the
exponential mechanism (McSherry & Talwar 2007): epsilon-DP. In the paper's terms this is
temperature sampling with T = 2 Delta_u / epsilon. Draws are exact for every probability,
also below 2^-53 (:func:`sample`, through :mod:`dptext.exact_sampling`), never a Python loop
over the vocabulary. A draw over 31,664 candidates costs about 1 ms (a value sort of the
float32 scores instead of an argsort of float64 ones; 4 ms before).
"""

from __future__ import annotations

import numpy as np

from dptext.rng import is_secure, secure_children
from dptext.validation import check_epsilon

CHUNK_ROWS = 16  # rows sorted and tabulated together: their tables stay in the cache


def temperature(epsilon: float, lo: float, hi: float) -> float:
    """T = 2 (hi - lo) / epsilon."""
    return 2.0 * (hi - lo) / check_epsilon(epsilon)


def clipped_log_probs(scores, *, epsilon: float, lo: float, hi: float):
    """log softmax(clip(scores, lo, hi) / T) along the last axis (torch tensor in and out)."""
    import torch

    return torch.log_softmax(scores.clamp(lo, hi) / temperature(epsilon, lo, hi), dim=-1)


def torch_generator(rng: np.random.Generator):
    """The stream an LM mechanism's draws come from: a torch generator seeded from ``rng``
    (itself OS entropy unless seeded by the caller); under ``rng="secure"`` the ChaCha20
    generator itself, so that every draw (:func:`sample`, :func:`spawn_generators`) comes from
    the secure keystream - not from a Mersenne Twister or a PCG64 seeded from it."""
    import torch

    if is_secure(rng):
        return rng
    return torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))


def spawn_generators(generator, n: int) -> list:
    """``n`` torch generators, the k-th seeded with the k-th 63-bit draw from ``generator``
    (None: ``n`` times None; under ``rng="secure"``, ChaCha20 generators keyed from it:
    :func:`dptext.rng.secure_children`). The decoders give one to each group of rows they decode
    (:func:`dptext.lm.threads.run_groups`), derived in group order before any group starts,
    so a group's draws do not depend on when the others run - on one thread or on several."""
    import torch

    if generator is None:
        return [None] * n
    if isinstance(generator, np.random.Generator):  # rng="secure" (torch_generator)
        return secure_children(generator, n)
    seeds = torch.randint(0, 2**63 - 1, (n,), generator=generator).tolist()
    return [torch.Generator().manual_seed(int(s)) for s in seeds]


def sample(scores, *, epsilon: float, lo: float, hi: float, generator) -> np.ndarray:
    """One draw per row of ``scores`` (rows x candidates): the index of the chosen candidate.

    Exact: a plain inverse CDF against one double uniform realizes probabilities only on the
    2^-53 grid, so a candidate whose probability is below 2^-53 (at epsilon 150 over 31,664
    candidates, most of them) would be drawn with probability 0 or ~2^-53, and the realized
    privacy loss would be unbounded. The draw is :mod:`dptext.exact_sampling`'s (ascending
    cumulative sums, an exact uniform; docs/reliability.md) over the rows' sorted clipped
    scores (:func:`sorted_tables`), then a uniform choice among the candidates that share the
    drawn score (:func:`realized_probabilities` gives the law it realizes). Its generator is
    seeded from ``generator``'s stream (itself OS entropy unless seeded), or is ``generator``
    itself when that is a (secure) NumPy generator (:func:`torch_generator`)."""
    import torch

    from dptext import exact_sampling

    if isinstance(generator, np.random.Generator):  # rng="secure": its keystream itself
        rng = generator
    else:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))
    s = _as_float32(scores)
    out = np.empty(len(s), dtype=np.int64)
    for a in range(0, len(s), CHUNK_ROWS):
        part = s[a: a + CHUNK_ROWS]
        values, tables = sorted_tables(part, epsilon=epsilon, lo=lo, hi=hi)
        pos = exact_sampling.sample(tables, np.arange(len(part)), rng)
        if "order" in tables:  # several blocks: exact_sampling's own order of the sorted row
            pos = tables["order"][np.arange(len(part)), pos]
        chosen = values[np.arange(len(part)), pos].astype(np.float64)
        for r in range(len(part)):
            members = _ties(part[r], float(chosen[r]), lo, hi)
            out[a + r] = members[0] if len(members) == 1 else members[rng.integers(len(members))]
    return out


def sorted_tables(s: np.ndarray, *, epsilon: float, lo: float, hi: float):
    """(the rows of ``s`` sorted ascending, the :mod:`dptext.exact_sampling` tables of their
    clipped log-weights ``clip(s, lo, hi) / T``).

    Clipping and dividing by T > 0 keep the order, so the float32 rows are sorted once (values
    only: a SIMD sort, 4-5x cheaper than an argsort). Within one block (``epsilon / 2 <=
    BLOCK_NATS``, the range of the log-weights) the tables are ``exact_sampling.build_tables``'
    for an already sorted row (its ``order`` is the identity and is left out); otherwise
    ``build_tables`` itself makes them."""
    from dptext import exact_sampling

    values = np.sort(s, axis=1)
    t = temperature(epsilon, lo, hi)
    z = values.astype(np.float64)  # one float64 buffer, every step below in place
    np.clip(z, lo, hi, out=z)
    z /= t
    if (hi - lo) / t > exact_sampling.BLOCK_NATS:
        return values, exact_sampling.build_tables(z)
    z -= z[:, -1:].copy()
    np.exp(z, out=z)
    np.cumsum(z, axis=1, out=z)
    z /= z[:, -1:].copy()
    z[:, -1] = 1.0
    return values, {"cum": z}


def _ties(row: np.ndarray, value: float, lo: float, hi: float) -> np.ndarray:
    """Candidates of ``row`` whose clipped score equals that of the sorted value drawn."""
    # np.float64: a Python float would be compared in float32 (NEP 50), the clip is in float64
    if value <= lo:
        return np.flatnonzero(row <= np.float64(lo))
    if value >= hi:
        return np.flatnonzero(row >= np.float64(hi))
    return np.flatnonzero(row == np.float32(value))


def realized_log_probabilities(scores, *, epsilon: float, lo: float, hi: float) -> np.ndarray:
    """ln of the law :func:`sample` realizes over each row's candidates (rows x candidates):
    the probability exact_sampling realizes for each sorted position (also far below the
    double range), shared equally by the candidates of one clipped score (the tie is broken
    by a uniform choice)."""
    from dptext import exact_sampling

    s = _as_float32(scores)
    values, tables = sorted_tables(s, epsilon=epsilon, lo=lo, hi=hi)
    lp_sorted = exact_sampling.realized_log_probabilities(tables)
    if "order" in tables:
        back = np.full_like(lp_sorted, -np.inf)
        np.put_along_axis(back, tables["order"].astype(np.int64), lp_sorted, axis=1)
        lp_sorted = back
    out = np.empty(s.shape, dtype=np.float64)
    clipped = np.clip(values.astype(np.float64), lo, hi)
    for r in range(len(s)):
        # equal clipped scores are consecutive in the sorted row
        starts = np.flatnonzero(np.diff(clipped[r], prepend=-np.inf) > 0)
        group_lp = np.logaddexp.reduceat(lp_sorted[r], starts)
        group_lp -= np.log(np.diff(starts, append=s.shape[1]))
        key = np.searchsorted(clipped[r][starts], np.clip(s[r].astype(np.float64), lo, hi))
        out[r] = group_lp[key]
    return out


def realized_probabilities(scores, *, epsilon: float, lo: float, hi: float) -> np.ndarray:
    """:func:`realized_log_probabilities`, exponentiated (float64)."""
    return np.exp(realized_log_probabilities(scores, epsilon=epsilon, lo=lo, hi=hi))


def _as_float32(scores) -> np.ndarray:
    """Scores (torch tensor on any device, or array) as a C-contiguous float32 array."""
    if hasattr(scores, "detach"):
        import torch

        scores = scores.detach().to("cpu", dtype=torch.float32).numpy()
    s = np.ascontiguousarray(scores, dtype=np.float32)
    if s.ndim != 2:
        raise ValueError("scores must be rows x candidates")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    return s
