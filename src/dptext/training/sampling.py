"""The two-level Poisson sampling of UeDP-Alg (Algorithm 1, lines 8-10).

Each round samples users with probability q_u, detected entities with q_e and extended entities
(sentences of S) with q_s, all independently. A sentence of a sampled user is used when every
detected entity in it was sampled (so a sentence holding the differing entity e' is used only in
rounds that sampled e' - the fact q_eff rests on, docs/uedp.md), or, for a sentence of S, when it
was sampled itself. Its inclusion probability is pi = q_e ** k (k distinct entities) or q_s; the
Horvitz-Thompson weight 1 / pi makes the estimator f_E+ unbiased.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError
from dptext.training.corpus import UserCorpus


@dataclass(frozen=True)
class RoundCoins:
    """One round's independent coins: ``users`` [|U|], ``entities`` [|E|], ``extended``
    [sentences] (only the coins of sentences of S are read; None where the mode has none)."""

    users: np.ndarray
    entities: np.ndarray | None = None
    extended: np.ndarray | None = None


@dataclass(frozen=True)
class RoundSample:
    """Sampled users and, for each, its usable sentences and their weights 1 / pi."""

    users: np.ndarray
    sentences: list[np.ndarray]
    weights: list[np.ndarray]


class RoundSampler:
    """Draws :class:`RoundSample` s for one corpus.

    ``mode``: ``uedp`` (E and S, f_E+), ``uedp-naive`` (E only, f_E), ``user`` (all sentences of
    a sampled user: user-level DP-FedAvg and the noiseless/de-identified baselines).
    """

    def __init__(self, corpus: UserCorpus, *, q_u: float, q_e: float = 1.0, q_s: float = 1.0,
                 mode: str = "uedp") -> None:
        if mode not in ("uedp", "uedp-naive", "user"):
            raise DPTextError(f"unknown sampling mode {mode!r}")
        for name, q in (("q_u", q_u), ("q_e", q_e), ("q_s", q_s)):
            if not 0.0 < q <= 1.0:
                raise DPTextError(f"{name} must lie in (0, 1], got {q}")
        self.corpus, self.q_u, self.q_e, self.q_s, self.mode = corpus, q_u, q_e, q_s, mode
        self._incidence = corpus.incidence()
        self._n_entities = np.asarray(self._incidence.sum(axis=1)).ravel()
        self._is_extended = self._n_entities == 0
        order = np.argsort(corpus.sentence_user, kind="stable")
        bounds = np.searchsorted(corpus.sentence_user[order], np.arange(corpus.n_users + 1))
        self._by_user = [order[bounds[u]:bounds[u + 1]] for u in range(corpus.n_users)]
        if mode == "user":
            self._pi = np.ones(len(corpus.sentences))
        else:
            q_s_eff = q_s if mode == "uedp" else 0.0
            self._pi = np.where(self._is_extended, q_s_eff, q_e ** self._n_entities)

    def draw_coins(self, rng: np.random.Generator) -> RoundCoins:
        """The round's Poisson coins, all independent (users, entities, sentences of S)."""
        users = rng.random(self.corpus.n_users) < self.q_u
        if self.mode == "user":
            return RoundCoins(users)
        entities = rng.random(self.corpus.n_entities) < self.q_e
        if self.mode == "uedp-naive":
            return RoundCoins(users, entities)
        return RoundCoins(users, entities, rng.random(len(self.corpus.sentences)) < self.q_s)

    def usable(self, coins: RoundCoins) -> np.ndarray:
        """Boolean mask over all sentences: usable this round if their user is sampled. A
        sentence's usability reads only the coins of its own detected entities or, for a
        sentence of S, its own coin (docs/uedp.md, "Sensitivity")."""
        if self.mode == "user":
            return np.ones(len(self.corpus.sentences), dtype=bool)
        missing = self._incidence @ (~coins.entities).astype(np.int32)
        sensitive_ok = (missing == 0) & ~self._is_extended
        if self.mode == "uedp-naive":
            return sensitive_ok
        return sensitive_ok | (self._is_extended & coins.extended)

    def usable_sentences(self, rng: np.random.Generator) -> np.ndarray:
        """The usable-sentence mask of freshly drawn coins (the user coins are ignored)."""
        return self.usable(self.draw_coins(rng))

    def select(self, coins: RoundCoins) -> RoundSample:
        """The sampled users and their usable sentences with weights 1 / pi."""
        users = np.flatnonzero(coins.users)
        usable = self.usable(coins)
        sentences, weights = [], []
        for u in users:
            idx = self._by_user[u][usable[self._by_user[u]]]
            sentences.append(idx)
            weights.append(1.0 / self._pi[idx])
        return RoundSample(users, sentences, weights)

    def sample(self, rng: np.random.Generator) -> RoundSample:
        return self.select(self.draw_coins(rng))
