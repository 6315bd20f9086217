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

Sampling is exact (dptext.exact_sampling): the inverse CDF over each row's outcomes in ascending
order of probability with an infinite-precision uniform, so that no probability of the
exponential mechanism is lost below the 2^-53 grid of a double (at eps=100 most of them are).
:meth:`CusText.validate_tables` measures the privacy loss the stored tables realize before they
are used (docs/reliability.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dptext import exact_sampling
from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import TypicalEpsilon
from dptext.mechanisms.frequency import frequency_order
from dptext.mechanisms.registry import register
from dptext.mechanisms.word import WordMechanism
from dptext.validation import check_choice, check_int, check_memory

#: (space fingerprint, K) -> CusText's output sets, built once per process (``_output_sets``)
_OUTPUT_SETS: dict[tuple[str, int], np.ndarray] = {}

#: version of the output sets cached on disk (``_output_sets_path``): bump it when
#: build_output_sets' result or the file's layout changes, so that no older file is read
SETS_FORMAT = 1
#: spaces at least this large keep their output sets on disk (smaller ones build them in well
#: under a second - and as SanText's epsilon-free part, they are not worth a cache file)
_DISK_SETS_MIN_WORDS = 10_000


@register
class CusText(WordMechanism):
    name = "custext"
    capabilities = frozenset({"sample_rows", "distribution"})
    summary = "exponential mechanism over customized output sets of K similar words"
    guarantee_summary = "epsilon-DP among words sharing an output set (per word)"
    typical_epsilon = TypicalEpsilon(
        1, 8, "eps-DP among the K similar words of a word's output set, per word",
        "unchanged words: 8% at 1, 61% at 8, 97% at 16")
    typical_epsilon_spaces = {"glove-6b-50d": TypicalEpsilon(
        1, 8, "eps-DP among the K similar GloVe words of a word's output set, per word",
        "unchanged words on glove-6b-50d: 8% at 1, 57% at 8, 95% at 16")}

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
            bounded_range=True,  # exp(eps * u / 2), u in [0, 1]: eps-bounded-range
        )

    # ---------------------------------------------------------------- fit
    table_layout = 2  # 2: exact sampling tables (out, cum) instead of member-order cumsums

    #: whether :meth:`_output_sets` may read and write the on-disk cache (``fit(cache=False)``
    #: turns it off along with the tables' cache)
    _sets_on_disk = True

    def fit(self, *, cache: bool = True, progress: bool = False) -> CusText:
        self._sets_on_disk = cache
        return super().fit(cache=cache, progress=progress)

    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        if self.k > len(space):
            raise DPTextError(f"k must be <= the vocabulary size {len(space)}, got {self.k}")
        # the (|V|, K) cumulative table and the K x K similarities of one set, in float64
        check_memory(8.0 * len(space) * self.k * 2 + 8.0 * 4 * self.k * self.k,
                     f"fitting custext with k={self.k} over {len(space)} words")
        members = self._output_sets(space)
        set_of = np.empty(len(space), dtype=np.int64)
        log_w = np.full((len(space), members.shape[1]), -np.inf)
        for s, row in enumerate(members):
            m = row[row >= 0]
            set_of[m] = s
            log_w[m, : len(m)] = self._log_weights(space, m)
        tables = exact_sampling.build_tables(log_w)
        order = tables.pop("order")
        # the output row at each sorted position (-1: padding of a smaller set)
        out = np.where(order >= 0, members[set_of[:, None], np.maximum(order, 0)], -1)
        return {"members": members, "set_of": set_of, "out": out.astype(np.int32), **tables}

    def _output_sets(self, space: EmbeddingSpace) -> np.ndarray:
        """f_map for this space and K. It does not depend on epsilon (nor on ``similarity``:
        the walk uses the space's own metric) and it is most of a fit's work (a
        nearest-neighbour walk over the whole vocabulary, ~28 CPU-s for the default space; the
        epsilon-dependent part is one K x K block per set). So it is kept read-only in the
        process - a process that fits several epsilons, a document budget's per-token
        epsilons, builds it once - and in the on-disk cache (:func:`_cached_output_sets`), so
        that a fresh process fitting a new epsilon does not build it again. Only for the
        public word order: sets for user ``frequencies`` are built every time, never stored."""
        if self.frequencies is not None:
            return build_output_sets(space, self.k, frequency_order(space, self.frequencies))
        key = (space.fingerprint(), self.k)
        members = _OUTPUT_SETS.get(key)
        if members is None:
            if self._sets_on_disk and len(space) >= _DISK_SETS_MIN_WORDS:
                members = _cached_output_sets(space, self.k)
            else:
                members = build_output_sets(space, self.k, frequency_order(space, None))
            members.setflags(write=False)
            if len(_OUTPUT_SETS) >= 4:
                _OUTPUT_SETS.pop(next(iter(_OUTPUT_SETS)))
            _OUTPUT_SETS[key] = members
        return members

    def _log_weights(self, space: EmbeddingSpace, m: np.ndarray) -> np.ndarray:
        """Row i: ln p(. | m[i]) over the set m up to a constant (exponential mechanism,
        Delta_u = 1): epsilon * u / 2, u the min-max normalised similarity."""
        if self.similarity == "cosine":
            x = space.vectors[m].astype(np.float64)
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)
            sim = x @ x.T
        else:
            sim = -_euclid(space, m)
        lo, hi = sim.min(1, keepdims=True), sim.max(1, keepdims=True)
        span = hi - lo
        u = np.where(span > 0, (sim - lo) / np.where(span > 0, span, 1.0), 1.0)
        return self.epsilon * u / 2.0

    def _probabilities(self, space: EmbeddingSpace, m: np.ndarray) -> np.ndarray:
        """Row i: p(. | m[i]) over the set m (exponential mechanism, Delta_u = 1)."""
        logits = self._log_weights(space, m)
        w = np.exp(logits - logits.max(1, keepdims=True))
        return w / w.sum(1, keepdims=True)

    def validate_tables(self, tables: dict[str, np.ndarray]) -> None:
        """Structure and guarantee of fitted tables (raises DPTextError naming the defect):
        f_map's disjoint sets covering the vocabulary (all of K words but one smaller last
        set), exact-sampling tables consistent with them, and the privacy loss the tables
        realize between any two words of a set at most epsilon (+1e-9 relative)."""
        need = {"members", "set_of", "out", "cum"}
        _require(tables, need)
        n = len(self.space)
        members, set_of, out, cum = (np.asarray(tables[k]) for k in ("members", "set_of",
                                                                      "out", "cum"))
        k = min(self.k, n)
        _check(members.ndim == 2 and members.shape[1] == k and members.dtype.kind == "i",
               f"members has shape {members.shape}, expected (sets, {k}) integers")
        _check(set_of.shape == (n,) and out.shape == (n, k) and cum.shape == (n, k),
               "set_of/out/cum do not match the vocabulary size and K")
        _check(((members >= -1) & (members < n)).all(), "members holds rows outside the space")
        valid = members >= 0
        sizes = valid.sum(1)
        _check((valid == (np.arange(k)[None, :] < sizes[:, None])).all(),
               "members rows are not filled from the left")
        flat = members[valid]
        _check(len(flat) == n and np.array_equal(np.sort(flat), np.arange(n)),
               "output sets are not disjoint or do not cover the vocabulary")
        _check((sizes[:-1] == k).all() and sizes[-1] >= 1,
               f"an output set other than the last has fewer than K={k} words")
        set_idx, col = np.nonzero(valid)
        home = np.empty(n, dtype=np.int64)
        home[flat] = set_idx
        colpos = np.empty(n, dtype=np.int64)
        colpos[flat] = col
        _check(np.array_equal(set_of, home), "set_of does not name each word's own set")
        _check(np.isfinite(cum).all() and (cum >= 0).all() and (cum <= 1).all(),
               "cumulative sums are not finite numbers in [0, 1]")
        _check((cum[:, -1] == 1.0).all(), "cumulative sums do not end at 1")
        if "block_end" not in tables:
            _check((np.diff(cum, axis=1) >= 0).all(), "cumulative sums are not monotone")
        pad = out < 0
        _check((pad == (np.arange(k)[None, :] < (k - sizes[set_of])[:, None])).all(),
               "padding of smaller sets is not in front")
        _check(np.array_equal(np.sort(out, 1), np.sort(members[set_of], 1)),
               "sampling table outputs are not a permutation of the word's output set")
        realized = exact_sampling.realized_log_probabilities(tables)
        _check(not np.isnan(realized).any() and (realized <= 1e-12).all()
               and np.isneginf(realized[pad]).all(), "sampling tables give invalid probabilities")
        # lp[x, c]: ln of the probability that word x outputs the c-th word of its set
        lp = np.full((n, k), -np.inf)
        rows = np.broadcast_to(np.arange(n)[:, None], out.shape)
        lp[rows[~pad], colpos[out[~pad]]] = realized[~pad]
        block = lp[np.maximum(members, 0)]  # (sets, K inputs, K outputs)
        live = valid[:, :, None] & valid[:, None, :]
        _check(np.isfinite(block[live]).all(), "an output of a set is impossible for one of its "
                                               "words (unbounded privacy loss)")
        spread = np.where(live, block, -np.inf).max(1) - np.where(live, block, np.inf).min(1)
        worst = float(np.where(np.isfinite(spread), spread, 0.0).max())
        _check(worst <= self.epsilon * (1 + 1e-9) + 1e-12,
               f"the tables realize a privacy loss of {worst:.6g} > epsilon={self.epsilon:g}")

    # ------------------------------------------------------------- sample
    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        t = self._tables
        pos = exact_sampling.sample(t, rows, rng)
        out = t["out"]
        return out.ravel()[rows * out.shape[1] + pos].astype(np.int64)

    def output_set(self, word: str) -> list[str]:
        space = self.fitted_space()
        row = self._row(word)
        m = self._tables["members"][self._tables["set_of"][row]]
        return [space.words[i] for i in m[m >= 0]]

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        """The output distribution the sampler realizes, over the word's output set."""
        space = self.fitted_space()
        row = self._row(word)
        m = self._tables["members"][self._tables["set_of"][row]]
        m = m[m >= 0]
        realized = exact_sampling.realized_probabilities(self._tables, [row])[0]
        out = self._tables["out"][row]
        probs = np.zeros(len(m))
        col = {int(w): i for i, w in enumerate(m)}
        for j in np.flatnonzero(out >= 0):
            probs[col[int(out[j])]] = realized[j]
        return [space.words[i] for i in m], probs

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


def _require(tables: dict, names: set[str]) -> None:
    missing = sorted(names - set(tables))
    if missing:
        raise DPTextError(f"tables lack {', '.join(missing)}")


def _check(ok, message: str) -> None:
    if not bool(ok):
        raise DPTextError(message)


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
    x = space.prepared()
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


def _output_sets_path(space: EmbeddingSpace, k: int):
    """Where CusText's output sets for ``space`` and ``k`` (public word order) are cached: the
    key holds everything build_output_sets' result depends on - the space's content and metric
    (its fingerprint; the metric also by name), K, the word order (wordfreq's public English
    frequencies, hence its version) and :data:`SETS_FORMAT`. Not epsilon, not ``similarity``."""
    import hashlib
    import json

    from dptext.mechanisms.tables import _version
    from dptext.resources import cache_dir

    key = json.dumps({"custext-sets": SETS_FORMAT, "space": space.fingerprint(),
                      "metric": space.metric, "k": int(k), "order": "wordfreq-en",
                      "wordfreq": _version("wordfreq")}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "fitted" / f"custext-sets-{digest}.npz"


def _cached_output_sets(space: EmbeddingSpace, k: int) -> np.ndarray:
    """build_output_sets(space, k, public order), from the on-disk cache where an intact entry
    is there, else built and stored (atomically, with its content hash; one builder among
    concurrent processes: the cache's build lock). An entry that does not match its hash, or
    is not the sets' shape, is not trusted: rebuilt with a one-line warning. A read-only cache
    leaves the sets in memory (save_npz warns)."""
    from dptext import cache as cache_files

    path = _output_sets_path(space, k)
    members = _read_output_sets(path, space, k)
    if members is None:
        with cache_files.build_lock(path, "custext output sets"):
            members = _read_output_sets(path, space, k)  # another process may have built it
            if members is None:
                members = build_output_sets(space, k, frequency_order(space, None))
                cache_files.save_npz(path, {"members": members})
    return members


def _read_output_sets(path, space: EmbeddingSpace, k: int) -> np.ndarray | None:
    """The verified output sets at ``path`` (a copy); None if absent or not trusted."""
    from dptext import cache as cache_files

    if not path.is_file():
        return None
    try:
        if not cache_files.verify(path):  # no digest: dptext never wrote one of these so
            raise cache_files.CorruptArtefact(f"{path} has no content hash")
        arrays = cache_files.load_npz(path, verified=True)
        if set(arrays) != {"members"}:
            raise cache_files.CorruptArtefact(f"{path} holds {sorted(arrays)}, not the sets")
        members = np.array(arrays["members"])
        n, width = len(space), min(k, len(space))
        flat = members[members >= 0] if members.ndim == 2 else members
        if (members.dtype != np.int64 or members.ndim != 2 or members.shape[1] != width
                or len(flat) != n or not np.array_equal(np.sort(flat), np.arange(n))):
            raise cache_files.CorruptArtefact(f"{path} does not hold output sets of "
                                              f"{n} words, K={width}")
    except cache_files.CorruptArtefact as err:
        cache_files.warn(f"{err}; rebuilding the custext output sets")
        return None
    return members
