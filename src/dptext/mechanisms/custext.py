"""CusText and CusText+ (Chen et al. 2023, custext_customized_sanitization.txt).

* ``f_map`` (section "Mapping function"): walk the vocabulary in descending public frequency;
  an unassigned word takes its K nearest still-unassigned words (itself included) as its output
  set, and every word of the set maps to that set. Sets are disjoint; the last one may be
  smaller than K.
* ``f_sample`` (exponential mechanism, Definition 2): score u(x, y) = similarity of y to x,
  min-max normalised to [0, 1] over the set (so the sensitivity Delta_u = 1), and
  p(y | x) proportional to exp(epsilon * u(x, y) / 2). Similarity is the cosine similarity or
  the negated Euclidean distance. When every similarity in a row ties, u = 1 for all y
  (uniform), never NaN.
* Guarantee: epsilon-DP between any two inputs that share an output set (the paper's adjacency):
  p(y|x) / p(y|x') <= e^(eps/2) * Z(x')/Z(x) <= e^eps.
* CusText+ keeps stopwords (spaCy's list) unchanged; they are counted as kept in the report.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.frequency import frequency_order
from dptext.mechanisms.registry import register
from dptext.mechanisms.word import WordMechanism
from dptext.validation import check_choice, check_int, check_memory


@register
class CusText(WordMechanism):
    name = "custext"
    capabilities = frozenset({"sample_rows", "distribution"})
    summary = "exponential mechanism over customized output sets of K similar words"
    guarantee_summary = "epsilon-DP among words sharing an output set (per word)"

    def __init__(
        self,
        *,
        epsilon: float = 2.0,
        k: int = 20,
        similarity: str = "euclidean",
        frequencies: Mapping[str, float] | None = None,
        keep_stopwords: bool = False,
        **common,
    ) -> None:
        """``frequencies`` (optional) orders the vocabulary by a user corpus instead of the
        public wordfreq list; the mapping then depends on that corpus (docs/mechanisms.md)."""
        super().__init__(epsilon=epsilon, keep_stopwords=keep_stopwords, **common)
        self.k = check_int(k, "k", minimum=1)
        self.similarity = check_choice(similarity, "similarity", ("euclidean", "cosine"))
        self.frequencies = dict(frequencies) if frequencies is not None else None

    table_parameters = frozenset({"epsilon", "k", "similarity", "frequencies"})

    @property
    def guarantee(self) -> TokenGuarantee:
        return TokenGuarantee(
            GuaranteeKind.PURE, self.epsilon,
            scope=f"words sharing a CusText output set (K={self.k}, {self.similarity})",
        )

    # ---------------------------------------------------------------- fit
    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        if self.k > len(space):
            raise DPTextError(f"k must be <= the vocabulary size {len(space)}, got {self.k}")
        # the (|V|, K) cumulative table and the K x K similarities of one set, in float64
        check_memory(8.0 * len(space) * self.k * 2 + 8.0 * 4 * self.k * self.k,
                     f"fitting custext with k={self.k} over {len(space)} words")
        members = build_output_sets(space, self.k, frequency_order(space, self.frequencies))
        set_of = np.empty(len(space), dtype=np.int64)
        for s, row in enumerate(members):
            set_of[row[row >= 0]] = s
        cum = np.ones((len(space), members.shape[1]), dtype=np.float64)
        for row in members:
            m = row[row >= 0]
            probs = self._probabilities(space, m)
            cum[m, : len(m)] = np.cumsum(probs, axis=1)
        cum[np.arange(len(space)), (members[set_of] >= 0).sum(1) - 1] = 1.0
        return {"members": members, "set_of": set_of, "cum": cum}

    def _probabilities(self, space: EmbeddingSpace, m: np.ndarray) -> np.ndarray:
        """Row i: p(. | m[i]) over the set m (exponential mechanism, Delta_u = 1)."""
        if self.similarity == "cosine":
            x = space.vectors[m].astype(np.float64)
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)
            sim = x @ x.T
        else:
            sim = -_euclid(space, m)
        lo, hi = sim.min(1, keepdims=True), sim.max(1, keepdims=True)
        span = hi - lo
        u = np.where(span > 0, (sim - lo) / np.where(span > 0, span, 1.0), 1.0)
        logits = self.epsilon * u / 2.0
        w = np.exp(logits - logits.max(1, keepdims=True))
        return w / w.sum(1, keepdims=True)

    # ------------------------------------------------------------- sample
    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        t = self._tables
        u = rng.random(len(rows))
        j = (t["cum"][rows] < u[:, None]).sum(1)
        return t["members"][t["set_of"][rows], j]

    def output_set(self, word: str) -> list[str]:
        space = self.fitted_space()
        row = self._row(word)
        m = self._tables["members"][self._tables["set_of"][row]]
        return [space.words[i] for i in m[m >= 0]]

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        space = self.fitted_space()
        row = self._row(word)
        m = self._tables["members"][self._tables["set_of"][row]]
        m = m[m >= 0]
        cum = self._tables["cum"][row, : len(m)]
        return [space.words[i] for i in m], np.diff(cum, prepend=0.0)

    def _row(self, word: str) -> int:
        row = self.fitted_space().lookup(word)
        if row < 0:
            raise DPTextError(f"{word!r} is not in the vocabulary of {self.space.name!r}")
        return row


@register
class CusTextPlus(CusText):
    name = "custext+"
    summary = "CusText that keeps stopwords (counted as kept in the report)"

    def __init__(self, *, keep_stopwords: bool = True, **params) -> None:
        super().__init__(keep_stopwords=keep_stopwords, **params)


def _euclid(space: EmbeddingSpace, m: np.ndarray) -> np.ndarray:
    x = space.vectors[m].astype(np.float64)
    return np.sqrt(np.maximum(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1), 0.0))


def build_output_sets(space: EmbeddingSpace, k: int, order: np.ndarray) -> np.ndarray:
    """CusText's f_map: disjoint sets of up to ``k`` rows, padded with -1, leaders first.

    Walk ``order``; an unassigned word takes its ``k`` nearest unassigned words (itself first).
    Neighbours come from the space's exact kNN table; when too many of them are taken, the
    word's full distance row is used instead.
    """
    n = len(space)
    k = min(k, n)
    geo = space.geometry()
    assigned = np.zeros(n, dtype=bool)
    sets = []
    x = space._prepared()
    sq = (x * x).sum(1)
    for leader in order:
        if assigned[leader]:
            continue
        cand = geo.neighbors[leader]
        cand = cand[~assigned[cand]]
        if len(cand) < k:
            d = sq - 2.0 * (x @ x[leader])
            d[assigned] = np.inf
            d[leader] = -np.inf
            cand = np.argsort(d, kind="stable")[: min(k, int((~assigned).sum()))]
        chosen = cand[:k]
        assigned[chosen] = True
        sets.append(np.pad(chosen, (0, k - len(chosen)), constant_values=-1))
    return np.asarray(sets, dtype=np.int64)
