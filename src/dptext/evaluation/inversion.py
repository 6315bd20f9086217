"""Token inversion attacks on word-level outputs, and the success rate the guarantee allows.

Protocol (issue 5; CusText paper section "Privacy experiments", the token inference attacks):
input words x are drawn i.i.d. from the public prior pi (wordfreq frequencies of the space's
words, normalised over the vocabulary); each is privatized once, giving y.

* Nearest-neighbour attack: the adversary guesses the k nearest words of y in the embedding space
  (y itself first); success when x is among them (reported for k = 1 and k = ``k``).
* Bayes (MAP) attack, for mechanisms exposing ``distribution(word)``: guess
  argmax_x pi(x) p(y | x). Because x really is drawn from pi, this is the Bayes-optimal attack
  and its success rate estimates the Bayes risk. The argmax runs over candidates C(y): the support
  of ``distribution(y)`` when it is smaller than the vocabulary (CusText: the output set of y,
  which is exactly the set of inputs that can produce y, so the argmax is exact), otherwise the
  ``top`` most probable words under pi plus the ``knn`` nearest words of y (SanText: an
  approximation; words outside C(y) are never guessed, so the rate is a lower bound of the
  Bayes-optimal one). Mechanisms with a ``likelihood_matrix(inputs, outputs)`` method get all
  p(y | x') of the candidates in one batched call.

Bounds (what the guarantee allows; a measured rate clearly above it is a bug to chase):

* pure epsilon-DP among the words of a set S (CusText): the posterior of any x in S is at most
  e^eps times its prior within S, so Pr[success] <= E_{x~pi}[min(1, e^eps max_{x' in S(x)}
  pi(x' | S(x)))]; S(x) is taken as the support of ``distribution(x)``.
* epsilon*d metric DP: p(y|x') >= e^(-eps d(x, x')) p(y|x) gives posterior(x | y) <= B(x) =
  pi(x) / sum_x' pi(x') e^(-eps d(x, x')), so Pr[success] <= max_x B(x). The sum is taken over
  x and the ``bound_top`` most probable words only: dropping terms can only raise B, so the bound
  stays valid (and is computed exactly over all x).
* output independent of the input: Pr[success] <= max_x pi(x); no protection: 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dptext.accounting.events import GuaranteeKind
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.evaluation.word_sampling import privatize_words
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.frequency import public_frequencies

_PRIORS: dict[str, np.ndarray] = {}


def word_prior(space: EmbeddingSpace) -> np.ndarray:
    """pi over the rows of ``space``: wordfreq frequencies normalised (unknown words get the
    smallest positive frequency, so every word has prior mass)."""
    key = space.fingerprint()
    if key not in _PRIORS:
        freq = public_frequencies(space)
        positive = freq[freq > 0]
        freq[freq <= 0] = positive.min() if len(positive) else 1.0
        _PRIORS[key] = freq / freq.sum()
    return _PRIORS[key]


@dataclass(frozen=True)
class Inversion:
    samples: int
    nn_top1: float
    nn_topk: float
    k: int
    bayes: float | None  # MAP success rate (None: no computable distribution)
    bayes_samples: int
    bound: float  # success rate the guarantee allows
    prior_max: float  # success of guessing the most frequent word, ignoring the output

    def summary(self) -> dict[str, float | None]:
        se = None
        if self.bayes is not None:
            se = math.sqrt(max(self.bayes * (1 - self.bayes), 1e-12) / self.bayes_samples)
        return {
            "nn_top1": self.nn_top1, "nn_topk": self.nn_topk, "k": self.k,
            "bayes": self.bayes, "bayes_se": se, "bound": self.bound,
            "prior_max": self.prior_max, "samples": self.samples,
            "bayes_samples": self.bayes_samples,
            "bayes_above_bound": None if se is None else bool(self.bayes - 3 * se > self.bound),
        }


def _distribution_rows(m: Mechanism, space: EmbeddingSpace, word: str
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    if not m.supports("distribution"):
        return None
    try:
        words, probs = m.distribution(word)
    except (NotImplementedError, DPTextError):  # none, or not computable at this size
        return None
    probs = np.asarray(probs, dtype=np.float64)
    if len(words) == len(space) and words == space.words:  # the whole vocabulary, in order
        return np.arange(len(space)), probs
    rows = np.array([space.index.get(w, -1) for w in words], dtype=np.int64)
    keep = rows >= 0
    return rows[keep], probs[keep]


def nearest_neighbour_success(space: EmbeddingSpace, x: np.ndarray, y: np.ndarray, k: int
                              ) -> tuple[float, float]:
    """(top-1, top-k) success of guessing the k nearest words of each output (y = -1: a miss)."""
    neighbors = space.geometry(max(k, 1)).neighbors[:, :k]
    valid = y >= 0
    top1 = np.zeros(len(x), dtype=bool)
    topk = np.zeros(len(x), dtype=bool)
    top1[valid] = y[valid] == x[valid]
    topk[valid] = (neighbors[y[valid]] == x[valid, None]).any(1)
    return float(top1.mean()), float(topk.mean())


def map_guesses(m: Mechanism, space: EmbeddingSpace, prior: np.ndarray, observed: np.ndarray,
                *, top: int = 500, knn: int = 8) -> dict[int, int] | None:
    """Output row -> MAP input row, argmax_{x' in C(y)} pi(x') p(y | x') (module docstring);
    None when the mechanism has no computable distribution."""
    observed = np.unique(observed[observed >= 0])
    if len(observed) == 0:
        return {}
    if m.supports("likelihood_matrix"):
        return _map_guesses_dense(m, space, prior, observed, top=top, knn=knn)
    if _distribution_rows(m, space, space.words[int(observed[0])]) is None:
        return None
    col = {int(r): j for j, r in enumerate(observed)}
    top_rows = np.argsort(-prior, kind="stable")[:top]
    neighbors = space.geometry(max(knn, 1)).neighbors
    candidates: dict[int, np.ndarray] = {}
    for r in observed.tolist():
        support, _ = _distribution_rows(m, space, space.words[r])
        if len(support) < len(space):
            candidates[r] = np.unique(support)
        else:
            candidates[r] = np.unique(np.concatenate([top_rows, neighbors[r, :knn]]))
    likelihood: dict[int, np.ndarray] = {}  # x' -> p(y | x') at the observed outputs
    for c in np.unique(np.concatenate(list(candidates.values()))).tolist():
        rows, probs = _distribution_rows(m, space, space.words[c])
        if len(rows) == len(space):  # the whole vocabulary, in order
            likelihood[c] = probs[observed]
            continue
        vec = np.zeros(len(observed))
        hit = np.array([col.get(int(r), -1) for r in rows], dtype=np.int64)
        np.add.at(vec, hit[hit >= 0], probs[hit >= 0])
        likelihood[c] = vec
    guess = {}
    for r, cand in candidates.items():
        score = prior[cand] * np.array([likelihood[int(c)][col[r]] for c in cand])
        guess[r] = int(cand[int(np.argmax(score))])
    return guess


def _map_guesses_dense(m: Mechanism, space: EmbeddingSpace, prior: np.ndarray,
                       observed: np.ndarray, *, top: int, knn: int) -> dict[int, int]:
    """MAP guesses for mechanisms whose outputs can come from (almost) any input and which give
    p(y | x) as a matrix (``likelihood_matrix(inputs, outputs)``; SanText, random): candidates
    C(y) = the ``top`` most probable words + the ``knn`` nearest words of y, all likelihoods in
    one batched call."""
    top_rows = np.argsort(-prior, kind="stable")[:top]
    neighbors = space.geometry(max(knn, 1)).neighbors[observed, :knn]
    cand = np.unique(np.concatenate([top_rows, neighbors.ravel()]))
    score = prior[cand, None] * m.likelihood_matrix(cand, observed)  # (candidates, outputs)
    allowed = np.zeros((len(cand), len(observed)), dtype=bool)
    allowed[np.searchsorted(cand, top_rows)] = True
    allowed[np.searchsorted(cand, neighbors), np.arange(len(observed))[:, None]] = True
    best = np.where(allowed, score, -1.0).argmax(0)
    return {int(r): int(cand[b]) for r, b in zip(observed.tolist(), best.tolist(), strict=True)}


def bayes_success(m: Mechanism, space: EmbeddingSpace, prior: np.ndarray, x: np.ndarray,
                  y: np.ndarray, *, top: int = 500, knn: int = 8) -> float | None:
    """Success rate of the MAP guesses on the pairs (x, y) (y = -1: a miss)."""
    guess = map_guesses(m, space, prior, y, top=top, knn=knn)
    if guess is None or len(x) == 0:
        return None
    hits = [y_i >= 0 and guess[y_i] == x_i for x_i, y_i in zip(x.tolist(), y.tolist(),
                                                                strict=True)]
    return float(np.mean(hits))


def success_bound(m: Mechanism, space: EmbeddingSpace, prior: np.ndarray, x: np.ndarray, *,
                  bound_top: int = 2000) -> float:
    """The success rate the mechanism's per-token guarantee allows (module docstring)."""
    g = m.guarantee
    if g.kind is GuaranteeKind.NONE:
        return 1.0
    if g.kind is GuaranteeKind.INDEPENDENT:
        return float(prior.max())
    if g.kind is GuaranteeKind.PURE:
        bounds = {}
        for r in np.unique(x).tolist():
            found = _distribution_rows(m, space, space.words[r])
            s = np.arange(len(space)) if found is None else np.unique(found[0])
            within = prior[s]
            bounds[r] = min(1.0, math.exp(g.epsilon) * within.max() / within.sum())
        return float(np.mean([bounds[r] for r in x.tolist()]))
    # metric DP: max over all x of pi(x) / (pi(x) + sum over the top words x' != x)
    top_rows = np.argsort(-prior, kind="stable")[:bound_top]
    best = 0.0
    for s in range(0, len(space), 4096):
        rows = np.arange(s, min(len(space), s + 4096))
        weights = np.exp(-g.epsilon * space.pairwise(rows, top_rows)) * prior[top_rows]
        weights[rows[:, None] == top_rows[None, :]] = 0.0
        b = prior[rows] / (prior[rows] + weights.sum(1))
        best = max(best, float(b.max()))
    return best


def token_inversion(m: Mechanism, space: EmbeddingSpace, *, samples: int, rng: np.random.Generator,
                    k: int = 10, bayes_samples: int | None = None, top: int = 500,
                    knn: int = 8) -> Inversion:
    """Draw ``samples`` words from the prior, privatize each once, run both attacks."""
    prior = word_prior(space)
    x = rng.choice(len(space), size=samples, p=prior)
    outputs = privatize_words(m, [space.words[i] for i in x.tolist()], rng)
    y = np.array([space.lookup(w) for w in outputs], dtype=np.int64)
    top1, topk = nearest_neighbour_success(space, x, y, k)
    nb = samples if bayes_samples is None else min(samples, bayes_samples)
    bayes = bayes_success(m, space, prior, x[:nb], y[:nb], top=top, knn=knn)
    return Inversion(
        samples=samples, nn_top1=top1, nn_topk=topk, k=k, bayes=bayes, bayes_samples=nb,
        bound=success_bound(m, space, prior, x), prior_max=float(prior.max()),
    )
