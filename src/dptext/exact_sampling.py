"""Exact sampling from finite distributions with any dynamic range (docs/reliability.md,
"Sampling on the double grid").

The textbook inverse CDF - ``u = rng.random()``, return the first ``j`` with ``u < C_j`` for
the cumulative sums ``C`` in the distribution's own order - does not realize small
probabilities: ``u`` lives on the grid of multiples of 2^-53, and near ``C = 1`` a double cannot
even hold an increment below 2^-53. An outcome of probability 1e-20 is then drawn with
probability 0 (its ``C_j`` equals ``C_{j-1}``) or 2^-53 (a grid point falls between them), so
the pure-DP ratio bound of the exponential mechanism fails for exactly the outcomes it is about.
At CusText eps=100 most probabilities of the default space are below 2^-53.

Here, per row:

1. outcomes are sorted by ascending weight and the cumulative sums are taken in that order, so
   each ``C_j`` is at most ``j`` times the weight ``w_j`` it adds: every outcome keeps its
   probability to a relative error of at most ``2 (K^2 + K) 2^-53`` (K outcomes; 1e-13 at
   K = 20), and no positive probability becomes 0;
2. the comparison ``U < C_j`` is made with an exact uniform ``U``: ``u`` on the 2^-53 grid
   decides it unless ``C_j`` falls inside ``[u, u + 2^-53)``; then the interval is rescaled by
   2^53 (exact in binary floating point) and a fresh ``u`` decides, and so on - an exact draw of
   an infinite-precision uniform, costing one extra comparison per draw;
3. weights spanning more than ``BLOCK_NATS`` (e^-600, still a normal double) are cut into blocks
   (top block = the largest weights): the draw first chooses the block - from the top, continue
   below with the exact probability ``S_below / S_this``, kept as a logarithm and drawn as a
   product of representable Bernoulli factors - then the outcome within the block by 1-2.

What the sampler realizes is therefore the distribution of the stored doubles exactly;
:func:`realized_probabilities` returns it, and callers check their guarantee against it.
"""

from __future__ import annotations

import math

import numpy as np

GRID = 2.0**-53
SCALE = 2.0**53
#: the widest range of log-weights (nats) within one block: e^-600 is a normal double, and so are
#: sums of up to 2^40 such terms
BLOCK_NATS = 600.0


def build_tables(log_weights: np.ndarray) -> dict[str, np.ndarray]:
    """Sampling tables for each row of ``log_weights`` (rows x K; ``-inf``: impossible outcome).

    Returns ``order`` (column of the row's outcome at each sorted position; -1 for impossible
    ones, which come first), ``cum`` (cumulative probabilities in sorted order, restarting in
    each block and ending each block at exactly 1.0) and, when some row needs several blocks,
    ``block_end`` (bool, the last position of each block) and ``log_cont`` (at a block's last
    position: log of the probability of continuing to the blocks below, -inf for the lowest).
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    if lw.ndim != 2 or lw.shape[1] == 0:
        raise ValueError("log_weights must be a non-empty 2-d array")
    if np.isnan(lw).any() or np.isposinf(lw).any():
        raise ValueError("log_weights must be finite or -inf")
    # in place where the values allow it: the fit of a 50k x 64 table peaked at six copies
    order64 = np.argsort(lw, axis=1, kind="stable")
    rel = np.take_along_axis(lw, order64, axis=1)  # sorted
    top = rel[:, -1:].copy()
    if not np.isfinite(top).all():
        raise ValueError("every row needs at least one possible outcome")
    rel -= top
    possible = np.isfinite(rel)
    order = order64.astype(np.int32 if lw.shape[1] < 2**31 else np.int64)
    del order64
    order[~possible] = -1
    # impossible outcomes sort first: a row's lowest possible value is its first finite one
    lowest = rel[np.arange(len(rel)), possible.argmax(1)]
    multi = np.flatnonzero(lowest < -BLOCK_NATS)
    rel_multi = rel[multi].copy()
    cum = np.exp(rel, out=rel)  # -inf -> 0
    np.cumsum(cum, axis=1, out=cum)
    cum /= cum[:, -1:]
    cum[:, -1] = 1.0
    tables = {"order": order, "cum": cum}
    if len(multi):
        block_end = np.zeros(lw.shape, dtype=bool)
        block_end[:, -1] = True
        log_cont = np.full(lw.shape, -np.inf)
        for i, r in enumerate(multi):
            _block_row(rel_multi[i], possible[r], cum[r], block_end[r], log_cont[r])
        tables.update(block_end=block_end, log_cont=log_cont)
    return tables


def _block_row(rel, possible, cum, block_end, log_cont) -> None:
    """Blocks of one row (in place): from the top, a block holds the weights within
    BLOCK_NATS of its largest one."""
    k = len(rel)
    first = int(np.argmax(possible))
    ends, starts = [], []
    end = k - 1
    while end >= first:
        start = end
        while start - 1 >= first and rel[start - 1] >= rel[end] - BLOCK_NATS:
            start -= 1
        ends.append(end)
        starts.append(start)
        end = start - 1
    starts[-1] = 0  # the impossible outcomes (cum 0) sit in the lowest block
    log_mass = []
    for s, e in zip(starts, ends, strict=True):
        w = np.exp(rel[s : e + 1] - rel[e])
        c = np.cumsum(w)
        cum[s : e + 1] = c / c[-1]
        cum[e] = 1.0
        block_end[e] = True
        log_mass.append(rel[e] + math.log(c[-1]))
    # log S_b (mass of block b and all below it), from the bottom up
    below = -np.inf
    log_s = [0.0] * len(ends)
    for b in range(len(ends) - 1, -1, -1):
        log_s[b] = np.logaddexp(log_mass[b], below)
        below = log_s[b]
    for b, e in enumerate(ends):
        log_cont[e] = log_s[b + 1] - log_s[b] if b + 1 < len(ends) else -np.inf


def bernoulli(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(q) for doubles ``q`` in [0, 1]: the event ``U < q`` of an
    infinite-precision uniform U, refined past the 2^-53 grid only when the grid cannot decide
    (probability 2^-53 per level)."""
    q = np.array(q, dtype=np.float64, copy=True)
    u = np.asarray(rng.random(q.size)).reshape(q.shape)
    out = u + GRID <= q
    undecided = ~out & (u < q)
    if not undecided.any():  # the grid decided every draw (all but ~2^-53 of them)
        return out
    q[undecided] = (q[undecided] - u[undecided]) * SCALE
    pending = np.flatnonzero(undecided.reshape(-1))
    flat_q, flat_out = q.reshape(-1), out.reshape(-1)
    while len(pending):
        u = rng.random(len(pending))
        qp = flat_q[pending]
        win = u + GRID <= qp
        flat_out[pending[win]] = True
        undecided = ~win & (u < qp)
        flat_q[pending[undecided]] = (qp[undecided] - u[undecided]) * SCALE
        pending = pending[undecided]
    return out


def bernoulli_log(log_q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(log_q)) for any ``log_q <= 0`` (also far below the double range):
    a product of independent Bernoulli factors of at least e^-BLOCK_NATS each."""
    log_q = np.asarray(log_q, dtype=np.float64)
    if log_q.size == 0 or log_q.min() >= -BLOCK_NATS or bool(
            (np.isneginf(log_q) | (log_q >= -BLOCK_NATS)).all()):
        return bernoulli(np.exp(log_q), rng)  # one factor each (exp(-inf) = 0: never)
    finite = np.isfinite(log_q)
    pieces = np.ones(log_q.shape, dtype=np.int64)
    pieces[finite] = np.maximum(1, np.ceil(-log_q[finite] / BLOCK_NATS)).astype(np.int64)
    out = np.ones(log_q.shape, dtype=bool)
    step = np.where(finite, log_q / pieces, -np.inf)
    for i in range(int(pieces.max(initial=1))):
        live = np.flatnonzero(out & (pieces > i))
        if not len(live):
            break
        out[live] = bernoulli(np.exp(step[live]), rng)
    return out


def sample(tables: dict[str, np.ndarray], rows: np.ndarray, rng: np.random.Generator
           ) -> np.ndarray:
    """Sorted positions drawn for ``rows`` (map them through ``tables["order"]``)."""
    cum = tables["cum"]
    rows = np.asarray(rows, dtype=np.int64)
    if "block_end" not in tables:
        u = rng.random(len(rows))
        pos = _count_at_most(cum, rows, u)
        k = cum.shape[1]
        amb = np.flatnonzero(cum.ravel()[rows * k + pos] < u + GRID)
        for i in amb:  # C_pos in [u, u + 2^-53): the grid cannot decide (rare)
            pos[i] = _refine(cum[rows[i]], int(pos[i]), float(u[i]), rng)
        return pos
    return _sample_blocks(tables, rows, rng)


def _count_at_most(cum: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per i, how many entries of the ascending row ``cum[rows[i]]`` are <= ``u[i]`` (the first
    index with ``C_j > u``), for ``u < 1`` and rows ending at 1: a binary search of log2(K)
    flat gathers instead of a (rows, K) copy."""
    k = cum.shape[1]
    flat = cum.ravel()
    base = rows * k - 1
    pos = np.zeros(len(rows), dtype=np.int64)
    probe = np.empty_like(pos)
    step = 1 << (k.bit_length() - 1)  # the largest power of two <= K
    while step:  # at least pos + step entries are <= u iff C_(pos+step-1) <= u
        np.add(pos, step, out=probe)
        np.minimum(probe, k, out=probe)  # beyond the row: C_(K-1) = 1 > u decides "no"
        probe += base
        pos += (flat[probe] <= u) * step
        step >>= 1
    return pos


def _refine(c: np.ndarray, pos: int, u: float, rng: np.random.Generator) -> int:
    """The first index p with U < c[p], for ascending ``c`` (``c[-1] >= u + 2^-53``), U uniform
    on [u, u + 2^-53) and ``pos`` the first index with c[pos] > u."""
    stop = pos + int(np.searchsorted(c[pos:], u + GRID, side="left"))  # first c >= u + 2^-53
    idx = np.arange(pos, stop)
    t = (c[pos:stop] - u) * SCALE  # thresholds of V = (U - u) 2^53, uniform on [0, 1): exact
    fallback = stop
    while True:
        v = float(rng.random())
        j = int((t <= v).sum())
        if j == len(t):
            return fallback
        if t[j] >= v + GRID:
            return int(idx[j])
        k = j + int(np.searchsorted(t[j:], v + GRID, side="left"))
        if k < len(t):
            fallback = int(idx[k])
        idx, t = idx[j:k], (t[j:k] - v) * SCALE


def _sample_blocks(tables, rows, rng) -> np.ndarray:
    cum, block_end, log_cont = tables["cum"], tables["block_end"], tables["log_cont"]
    k = cum.shape[1]
    end = np.full(len(rows), k - 1)
    pending = np.arange(len(rows))
    while len(pending):
        go = bernoulli_log(log_cont[rows[pending], end[pending]], rng)
        moving = pending[go]
        for i in moving:  # next lower block end
            e = end[i] - 1
            while not block_end[rows[i], e]:
                e -= 1
            end[i] = e
        pending = moving
    pos = np.empty(len(rows), dtype=np.int64)
    for i, (r, e) in enumerate(zip(rows.tolist(), end.tolist(), strict=True)):
        s = e
        while s > 0 and not block_end[r, s - 1]:
            s -= 1
        c = cum[r, s : e + 1]
        u = float(rng.random())
        j = int((c <= u).sum())
        if c[j] < u + GRID:
            j = _refine(c, j, u, rng)
        pos[i] = s + j
    return pos


def realized_log_probabilities(tables: dict[str, np.ndarray], rows=None) -> np.ndarray:
    """ln of the probability with which :func:`sample` returns each sorted position (rows x K;
    -inf for impossible outcomes), exact where the probability itself is below the double
    range (blocks far below the top)."""
    cum = np.asarray(tables["cum"] if rows is None else tables["cum"][rows], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # NaN across block restarts: redone
        lp = np.diff(cum, axis=1, prepend=0.0)
        np.log(lp, out=lp)
    if "block_end" not in tables:
        return lp
    ends = tables["block_end"] if rows is None else tables["block_end"][rows]
    conts = tables["log_cont"] if rows is None else tables["log_cont"][rows]
    for r in np.flatnonzero(ends[:, :-1].any(1)):
        log_reach = 0.0
        e_list = np.flatnonzero(ends[r])[::-1]
        for b, e in enumerate(e_list):
            s = e_list[b + 1] + 1 if b + 1 < len(e_list) else 0
            with np.errstate(divide="ignore"):
                seg = np.log(np.diff(cum[r, s : e + 1], prepend=0.0))
            lc = float(conts[r, e])
            log_stay = math.log(-math.expm1(lc)) if lc > -math.inf else 0.0
            lp[r, s : e + 1] = seg + log_reach + log_stay
            log_reach += lc
    return lp


def realized_probabilities(tables: dict[str, np.ndarray], rows=None) -> np.ndarray:
    """The probability with which :func:`sample` returns each sorted position (rows x K), in
    float64 (below ~1e-308 it shows as 0 here; the sampler still realizes it)."""
    return np.exp(realized_log_probabilities(tables, rows))


def grid_inverse_cdf_probabilities(probs: np.ndarray) -> np.ndarray:
    """What the plain inverse CDF realizes: ``u = k 2^-53`` against the float64 cumulative sums
    of ``probs`` in their given order (the DP-MLM/DP-Prompt sampler of lm/sampling.py, and
    CusText before this module): P(j) = (ceil(C_j 2^53) - ceil(C_{j-1} 2^53)) 2^-53."""
    probs = np.asarray(probs, dtype=np.float64)
    c = np.cumsum(probs, axis=-1)
    c = c / c[..., -1:]
    grid = np.ceil(c * SCALE)
    grid[..., -1] = SCALE
    return np.diff(grid, axis=-1, prepend=0.0) / SCALE


def pure_dp_epsilon(p: np.ndarray, q: np.ndarray) -> float:
    """max_y |ln p(y) - ln q(y)| (inf where exactly one of them is 0)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    both = (p > 0) & (q > 0)
    if ((p > 0) != (q > 0)).any():
        return math.inf
    if not both.any():
        return 0.0
    return float(np.abs(np.log(p[both]) - np.log(q[both])).max())


def hockey_stick_delta(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """The smallest delta with P(S) <= e^epsilon Q(S) + delta for every event S (both ways)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    e = math.exp(min(epsilon, 700.0))
    return float(max(np.maximum(p - e * q, 0.0).sum(), np.maximum(q - e * p, 0.0).sum()))


def sample_logits(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One exact draw per row of ``logits`` (rows x candidates, ``-inf`` allowed): index of the
    chosen candidate with P(i) = softmax(logits)_i realized exactly up to the rounding of the
    sorted cumulative sums (for the exponential mechanism of DP-MLM/DP-Prompt)."""
    tables = build_tables(logits)
    pos = sample(tables, np.arange(len(tables["cum"])), rng)
    return tables["order"][np.arange(len(pos)), pos].astype(np.int64)
