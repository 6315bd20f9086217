"""Mechanism draws for the genetic attack's mutations, fresh or shared between attacks.

A mutation replaces the word at position ``j`` of text ``i`` by a fresh draw ``M(x_ij)`` of the
mechanism (truncated_gumbel_metric_dp.txt, section 5). Attacking several models on the same texts
needs the same kind of draws many times; for multivariate Laplace each draw is an exact
nearest-word search over the whole vocabulary, the dominant cost of an attack.

:class:`DrawPool` keeps, for every (text, position) of an attack sample, the sequence of draws
made so far. Each attack opens a :meth:`~DrawPool.session` that reads that sequence from its
start: the ``m``-th mutation an attack makes at (i, j) is the ``m``-th draw of the pool there,
made (in one vectorized call with all other missing draws) only if no earlier attack needed it.
Within one attack every mutation is therefore still a fresh independent draw of the mechanism,
independent of everything the attack has seen (which position is mutated is decided by the
attack's own generator, never by the pool's values), so each attack is distributed exactly as
with fresh draws; attacks on different models share draws (common random numbers), which makes
their comparison less noisy and costs no draw twice.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms.word import WordMechanism
from dptext.rng import RngLike, as_generator


class FreshDraws:
    """Every request is a new vectorized mechanism call (no sharing)."""

    def __init__(self, mechanism: WordMechanism, orig: np.ndarray,
                 rng: np.random.Generator) -> None:
        self.mechanism, self.orig, self.rng = mechanism, orig, rng

    def draw(self, texts: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return self.mechanism.sample_rows(self.orig[texts, positions], self.rng)


class DrawPool:
    """Draws ``M(ids[i, j])`` shared by the attacks on ``ids`` (an ``(n, L)`` id matrix)."""

    def __init__(self, mechanism: WordMechanism, ids: np.ndarray, *, rng: RngLike = None,
                 depth: int = 8) -> None:
        self.mechanism = mechanism
        self.ids = np.asarray(ids, dtype=np.int64)
        self.rng = as_generator(rng)
        n, length = self.ids.shape
        self._draws = np.zeros((n * length, max(1, depth)), dtype=np.int64)
        self._filled = np.zeros(n * length, dtype=np.int64)
        self.drawn = 0  # mechanism draws made so far (all sessions together)

    def session(self, texts: np.ndarray | None = None) -> _Session:
        """A reader for one attack on ``ids[texts]`` (default: all rows), from the start of
        every position's sequence."""
        texts = np.arange(len(self.ids)) if texts is None else np.asarray(texts, np.int64)
        return _Session(self, texts)

    def _take(self, keys: np.ndarray, index: np.ndarray) -> np.ndarray:
        """The ``index``-th draw at each flat key (made now where missing)."""
        need = np.zeros(len(self._filled), dtype=np.int64)
        np.maximum.at(need, keys, index + 1)
        missing = np.maximum(need - self._filled, 0)
        if missing.any():
            depth = int(need.max())
            if depth > self._draws.shape[1]:
                grown = np.zeros((len(self._draws), max(depth, 2 * self._draws.shape[1])),
                                 dtype=np.int64)
                grown[:, : self._draws.shape[1]] = self._draws
                self._draws = grown
            where = np.flatnonzero(missing)
            counts = missing[where]
            flat_keys = np.repeat(where, counts)
            slots = np.repeat(self._filled[where] - np.cumsum(counts) + counts, counts)
            slots += np.arange(len(flat_keys))
            rows = self.ids.reshape(-1)[flat_keys]
            self._draws[flat_keys, slots] = self.mechanism.sample_rows(rows, self.rng)
            self._filled[where] += counts
            self.drawn += len(flat_keys)
        return self._draws[keys, index]


class _Session:
    def __init__(self, pool: DrawPool, texts: np.ndarray) -> None:
        self.pool, self.texts = pool, texts
        self._used = np.zeros(pool._filled.shape, dtype=np.int64)

    def draw(self, texts: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Draws for (local text, position) pairs; repeated pairs get successive draws."""
        keys = self.texts[texts] * self.pool.ids.shape[1] + positions
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        start = np.r_[0, np.flatnonzero(np.diff(sorted_keys)) + 1]
        rank_sorted = np.arange(len(keys)) - np.repeat(start, np.diff(np.r_[start, len(keys)]))
        rank = np.empty_like(rank_sorted)
        rank[order] = rank_sorted
        index = self._used[keys] + rank
        np.add.at(self._used, keys, 1)
        return self.pool._take(keys, index)
