"""Population-based genetic word-substitution attack (Alzantot et al. 2018) whose mutations are
draws of a metric-DP word mechanism (truncated_gumbel_metric_dp.txt, section 5).

For each text x (all texts of a batch are attacked together; the whole population of every
text goes through the model in one forward pass per generation):
1. initial population: ``population`` copies of x, each with one random substitutable word
   replaced by a mechanism draw;
2. per generation: fitness = 1 - p(true label); if a member is misclassified the attack
   succeeds (the text is not robust) and stops; else the fittest member survives (elitism),
   the other members are children of two parents sampled with probability
   softmax(fitness / temperature), taking each word from either parent (uniform crossover),
   then mutated by one more mechanism draw at a random substitutable word;
3. after ``generations`` generations, or when the query budget is spent, the text counts as
   robust.

A mutation draws a replacement for the *original* word at that position, ``M(x_i)``, so every
candidate is a possible output of the mechanism on x restricted to a subset of positions. The
draws come fresh from the mechanism, or from a :class:`~dptext.robustness.draws.DrawPool` shared
by the attacks on several models (same distribution per attack; see ``draws.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.word import WordMechanism
from dptext.rng import RngLike, as_generator
from dptext.robustness.draws import DrawPool, FreshDraws
from dptext.robustness.encoding import substitutable
from dptext.validation import check_int


class Classifier(Protocol):
    def predict_proba(self, ids: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class AttackResult:
    success: np.ndarray  # (n,) bool: a misclassified candidate was found
    queries: np.ndarray  # (n,) int: model evaluations spent
    adversarial: np.ndarray  # (n, L) ids: the fooling candidate (the original where none)


class GeneticAttack:
    """``attack(model, ids, labels, rng=) -> AttackResult``; ``ids`` from ``encoding.encode``
    over the mechanism's (fitted) space."""

    def __init__(self, mechanism: WordMechanism, *, population: int = 20, generations: int = 10,
                 max_queries: int | None = None, temperature: float = 0.3) -> None:
        self.mechanism = mechanism
        self.population = check_int(population, "population", minimum=2)
        self.generations = check_int(generations, "generations", minimum=1)
        self.max_queries = (None if max_queries is None
                            else check_int(max_queries, "max_queries", minimum=1))
        if not temperature > 0:
            raise DPTextError(f"temperature must be > 0, got {temperature!r}")
        self.temperature = float(temperature)

    def _mutate(self, pop: np.ndarray, texts: np.ndarray, subs: np.ndarray, source,
                rng: np.random.Generator) -> None:
        """In place: one random substitutable position of each member gets a mechanism draw
        (``texts``: the attacked-text index of each row of ``pop``; ``subs`` aligned with it)."""
        n, p, _ = pop.shape
        scores = np.where(subs[:, None, :], rng.random(pop.shape), -1.0)
        pos = scores.argmax(2)  # uniform among substitutable positions
        ex = np.broadcast_to(np.arange(n)[:, None], (n, p))
        ok = subs[ex, pos]
        ex, mem, pos = ex[ok], np.broadcast_to(np.arange(p), (n, p))[ok], pos[ok]
        if len(ex):
            pop[ex, mem, pos] = source.draw(texts[ex], pos)

    def attack(self, model: Classifier, ids: np.ndarray, labels: np.ndarray, *,
               rng: RngLike = None, pool: DrawPool | None = None,
               texts: np.ndarray | None = None) -> AttackResult:
        """Attack every row of ``ids``. With ``pool``, mutations read the pool's shared draws
        for rows ``texts`` of the pool's id matrix (default: ``ids`` is that matrix)."""
        gen = as_generator(rng)
        space = self.mechanism.fitted_space()
        ids = np.asarray(ids, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        n, length = ids.shape
        if pool is None:
            source = FreshDraws(self.mechanism, ids, gen)
        else:
            source = pool.session(texts)
            if not np.array_equal(pool.ids[source.texts], ids):
                raise DPTextError("the draw pool was built for other texts")
        p = self.population
        budget = self.max_queries or p * self.generations
        subs = substitutable(ids, space)
        pop = np.repeat(ids[:, None, :], p, axis=1)
        everyone = np.arange(n)
        self._mutate(pop, everyone, subs, source, gen)
        success = np.zeros(n, dtype=bool)
        queries = np.zeros(n, dtype=np.int64)
        adversarial = ids.copy()
        active = np.flatnonzero(subs.any(1))
        for g in range(self.generations):
            active = active[queries[active] + p <= budget]
            if not len(active):
                break
            probs = model.predict_proba(pop[active].reshape(-1, length))
            probs = probs.reshape(len(active), p, -1)
            queries[active] += p
            y = labels[active]
            fitness = 1.0 - probs[np.arange(len(active)), :, y]
            fooled = probs.argmax(2) != y[:, None]
            won = fooled.any(1)
            first = fooled.argmax(1)
            success[active[won]] = True
            adversarial[active[won]] = pop[active[won], first[won]]
            keep = ~won
            active, fitness = active[keep], fitness[keep]
            if g == self.generations - 1 or not len(active):
                break
            pop[active] = self._next_generation(pop[active], fitness, active, subs[active],
                                                source, gen)
        return AttackResult(success, queries, adversarial)

    def _next_generation(self, pop: np.ndarray, fitness: np.ndarray, texts: np.ndarray,
                         subs: np.ndarray, source, rng: np.random.Generator) -> np.ndarray:
        n, p, length = pop.shape
        rows = np.arange(n)[:, None]
        elite = pop[np.arange(n), fitness.argmax(1)]
        z = fitness / self.temperature
        w = np.exp(z - z.max(1, keepdims=True))
        cdf = np.cumsum(w / w.sum(1, keepdims=True), axis=1)
        cdf[:, -1] = 1.0

        def parents() -> np.ndarray:
            u = rng.random((n, p - 1))
            return np.minimum((u[:, :, None] > cdf[:, None, :]).sum(2), p - 1)

        first, second = pop[rows, parents()], pop[rows, parents()]
        children = np.where(rng.random((n, p - 1, length)) < 0.5, first, second)
        self._mutate(children, texts, subs, source, rng)
        return np.concatenate([elite[:, None], children], axis=1)


def adversarial_accuracy(model: Classifier, ids: np.ndarray, labels: np.ndarray,
                         attack: GeneticAttack, *, rng: RngLike = None,
                         pool: DrawPool | None = None) -> tuple[float, dict]:
    """Fraction of texts that are classified correctly and survive the attack (texts the model
    already gets wrong count as not robust and are not attacked). ``pool``: shared draws for
    ``ids`` (see ``draws.py``)."""
    labels = np.asarray(labels, dtype=np.int64)
    correct = model.predict_proba(ids).argmax(1) == labels
    result = attack.attack(model, ids[correct], labels[correct], rng=rng, pool=pool,
                           texts=np.flatnonzero(correct))
    robust = int((~result.success).sum())
    stats = {"attacked": int(correct.sum()), "fooled": int(result.success.sum()),
             "mean_queries": float(result.queries.mean()) if len(result.queries) else 0.0}
    return robust / max(len(labels), 1), stats
