"""SanText and SanText+ (Yue et al. 2021), the baselines of custext_customized_sanitization.txt.

SanText: p(y | x) proportional to exp(-epsilon * d(x, y) / 2) over the sensitive words V_s,
d = Euclidean distance of the word vectors. Guarantee: epsilon*d metric LDP (the normaliser
ratio contributes at most e^(eps*d/2), the weight ratio the other half).

SanText+: V_s is the fraction ``sensitive_fraction`` (w) of least frequent words by public
frequency; a sensitive word is always replaced by a draw from V_s; a non-sensitive word is
kept with probability 1 - p and otherwise replaced by a draw from V_s with the same weights.
Non-sensitive words are public by the method's assumption: the report counts them as kept.

Exact sampling without a |V| x |V_s| table and without any epsilon-dependent pass over all
pairs: per input word the weights of its m nearest sensitive words are tabulated (from the kNN
table of the space's geometry, which does not depend on epsilon and is cached with the space).
Every other sensitive word is at least as far as the m-th neighbour, so its weight is at most
``far_max``; U = |V_s| * far_max bounds the far mass Z_far from above for any epsilon. One round
of a draw picks the near part with probability Z_near / (Z_near + U) and returns a draw from the
near table; otherwise it proposes y uniformly from V_s and returns it with
probability weight(y) / far_max if y is not a near word, and starts a new round if not. A round
returns y with probability weight(y) / (Z_near + U) for every sensitive y, so the output is an
exact draw (rejection sampling with the envelope U), and the expected number of far proposals
per draw, U / (Z_near + Z_far), equals that of drawing the far part with the exact Z_far. A fit
is therefore O(|V| m) at any new epsilon (the exact Z_far needed an O(|V| |V_s| d) pass).
All weights of a row are taken relative to its nearest sensitive word (``shift``), so that large
epsilons cannot underflow them to zero (a row with no weight left would never finish a draw).

Exactness (docs/reliability.md, "Sampling on the double grid"): no decision is an inverse CDF
on the 2^-53 grid of a double. The near/far branch is an exact Bernoulli of the far part's
probability kept as a logarithm (``log_p_far``; ``1 - p_near`` would round to 0 at large
epsilon and switch the far words off); the near draw is dptext.exact_sampling's (ascending
cumulative sums, an exact uniform, blocks beyond 600 nats); the rejection test is an exact
Bernoulli of weight(y) / far_max in the log domain. :func:`_check_near_sampler` checks at every
fit and load that the near sampler realizes each probability to within 1e-9 nats, so every
sensitive word keeps a positive probability within exp(+-1e-9) of its target at any epsilon
and the printed guarantee is what the sampler delivers (for the float32-stored distances:
docs/reliability.md).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dptext import exact_sampling
from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.io import atomic_write
from dptext.mechanisms.base import TypicalEpsilon
from dptext.mechanisms.frequency import frequency_order
from dptext.mechanisms.registry import register
from dptext.mechanisms.word import WordMechanism
from dptext.validation import check_bool, check_probability

#: spaces at least this large keep their epsilon-free part on disk (reading it beats the
#: frequency lookups, ~6 s for 50k words); smaller ones recompute it in milliseconds
_DISK_CACHE_MIN_WORDS = 10_000



@register
class SanText(WordMechanism):
    name = "santext"
    capabilities = frozenset({"sample_rows", "distribution", "likelihood_matrix", "fit_many"})
    summary = "exponential weights exp(-eps*d/2) over all (sensitive) words (metric DP)"
    guarantee_summary = "epsilon*d metric DP over sensitive words, d = Euclidean distance"
    typical_epsilon = TypicalEpsilon(
        12, 20, "eps*d metric DP over the whole vocabulary (d <= 1.57 in the default space), "
                "per word",
        "below 10 nearly every word becomes a random far word; 11% unchanged at 14, 82% at 20")
    typical_epsilon_spaces = {"glove-6b-50d": TypicalEpsilon(
        3, 5,
        "eps*d metric DP over the whole vocabulary (d <= 18.9 in glove-6b-50d), per word",
        "on glove-6b-50d: below 2 nearly every word becomes a random far word; 16% unchanged "
        "at 3, 65% at 4, 92% at 5")}

    # where the fit's distance pass runs (the tables are the same up to float32 rounding)
    runtime_parameters = frozenset({"device"})

    def __init__(
        self, *, epsilon: float = 14.0, sensitive_fraction: float = 1.0, p: float = 0.0,
        device: str = "cpu", **common
    ) -> None:
        """``device`` ("cpu", "cuda", "auto"): where the fit's pass over distances beyond the
        kNN table runs (SanText+ rows whose kNN list holds no sensitive word: a |rows| x |V_s|
        float32 GEMM with a row minimum); the epsilon-dependent tables and the exact sampler
        stay in float64 on the CPU."""
        from dptext.devices import check_device

        super().__init__(epsilon=epsilon, **common)
        self.device = check_device(device)
        self.sensitive_fraction = check_probability(sensitive_fraction, "sensitive_fraction")
        if self.sensitive_fraction == 0.0:
            raise DPTextError("sensitive_fraction must be > 0")
        self.p = check_probability(p, "p")

    table_parameters = frozenset({"epsilon", "sensitive_fraction", "p"})
    table_key_names = {"sensitive_fraction": "w"}

    @property
    def guarantee(self) -> TokenGuarantee:
        space = self.resolved_space()
        scope = "all words" if self.sensitive_fraction == 1.0 else "sensitive words (V_s)"
        return TokenGuarantee(
            GuaranteeKind.METRIC, self.epsilon, scope=scope,
            metric=space.metric_description, diameter=space.delta_max,
        )

    # ---------------------------------------------------------------- fit
    def _sensitive_mask(self, space: EmbeddingSpace) -> np.ndarray:
        n = len(space)
        n_sensitive = max(1, int(round(self.sensitive_fraction * n)))
        if n_sensitive == n:  # every word: no frequency lookups (seconds for 50k words)
            return np.ones(n, dtype=bool)
        mask = np.zeros(n, dtype=bool)
        mask[frequency_order(space)[n - n_sensitive :]] = True
        return mask

    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        return self._fit_tables_many(space, [self.epsilon])[0]

    def _epsilon_free(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        """What every epsilon's tables share: V_s, the kNN rows restricted to V_s and each row's
        shift (its distance to the nearest sensitive word). Only rows whose kNN list holds no
        sensitive word (SanText+) need distances beyond the cached kNN table."""
        if space.metric != "euclidean":
            raise DPTextError("SanText needs a euclidean space")
        geo = space.geometry()
        path = self._free_cache_path(space) if len(space) >= _DISK_CACHE_MIN_WORDS else None
        if path is not None and path.is_file():
            with np.load(path, allow_pickle=False) as z:
                sensitive, shift = z["sensitive"], z["shift"]
            near_ok = sensitive[geo.neighbors]
            near_d = _near_distances(geo, near_ok)
        else:
            sensitive = self._sensitive_mask(space)
            near_ok = sensitive[geo.neighbors]
            near_d = _near_distances(geo, near_ok)
            shift = near_d.min(1)
            lost = np.flatnonzero(~np.isfinite(shift))
            if len(lost):
                shift[lost] = _nearest_distance(space.vectors, lost, np.flatnonzero(sensitive),
                                                device=self.device)
            if path is not None:
                _save_npz(path, sensitive=sensitive, shift=shift)
        return {"sensitive": sensitive, "near_ok": near_ok, "near_d": near_d, "shift": shift,
                "near": np.where(near_ok, geo.neighbors, -1),
                "last_d": geo.distances[:, -1].astype(np.float64)}

    #: 2: the exact sampler (exact_sampling tables for the near part, log-domain branch and
    #: rejection probabilities); 1 was the grid inverse CDF
    LAYOUT = 2

    def _table_params(self) -> dict:
        # Each sampler's tables mean something else: they get their own cache paths, so that
        # no version loads another's (a wrong distribution).
        return {**super()._table_params(), "sampler": "exact-envelope"}

    def _free_cache_path(self, space: EmbeddingSpace):
        """Where the epsilon-free part (V_s and the shifts) of this space and w is cached."""
        import hashlib
        import json

        from dptext.mechanisms.tables import _version
        from dptext.resources import cache_dir

        key = json.dumps({"santext-free": 1, "space": space.fingerprint(),
                          "w": self.sensitive_fraction, "wordfreq": _version("wordfreq")},
                         sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_dir() / "fitted" / f"santext-free-{digest}.npz"

    def _fit_tables_many(self, space: EmbeddingSpace, epsilons: list[float]
                         ) -> list[dict[str, np.ndarray]]:
        """The tables of this mechanism at each of ``epsilons`` (one epsilon-free part shared).

        Each epsilon costs O(|V| m) array operations on the kNN table (see the module
        docstring); the tables are identical to those of a single fit at that epsilon.
        """
        free = self._epsilon_free(space)
        out = []
        for eps in epsilons:
            log_w, log_p_far, log_far_max = _log_weights(free, float(eps))
            near = exact_sampling.build_tables(_drawable(log_w))
            out.append({
                "sensitive": free["sensitive"], "near": free["near"],
                # the near part's exact sampler (exact_sampling.build_tables): the kNN column
                # at each sorted position, cumulative probabilities in ascending order, blocks
                **{("near_order" if k == "order" else k): v for k, v in near.items()},
                "log_far_max": log_far_max, "log_p_far": log_p_far,
                "p_near": -np.expm1(log_p_far),  # informational: the draw uses log_p_far
                "n_sensitive": np.array(int(free["sensitive"].sum())),
                "near_count": free["near_ok"].sum(1), "shift": free["shift"].copy(),
                "layout": np.array(self.LAYOUT),
            })
        return out

    def validate_tables(self, tables: dict[str, np.ndarray]) -> None:
        """Structure and guarantee of fitted tables (docs/reliability.md, "The cache"): the
        sensitive set is this mechanism's own, the near table is exactly the space's kNN rows
        restricted to it, its cumulative weights are exp(-eps d / 2) of those rows (recomputed:
        O(|V| m)), and the near/far split lies within the bounds the distances allow."""
        super().validate_tables(tables)
        need = {"sensitive", "near", "cum", "p_near", "n_sensitive", "near_count"}
        missing = sorted(need - set(tables))
        if missing:
            raise DPTextError(f"tables lack {', '.join(missing)}")
        space = self.space
        geo = space.geometry()
        n, m = geo.neighbors.shape
        sensitive = np.asarray(tables["sensitive"])
        if sensitive.shape != (n,) or sensitive.dtype != bool:
            raise DPTextError("the sensitive mask does not match the space")
        if not np.array_equal(sensitive, self._sensitive_mask(space)):
            raise DPTextError("the sensitive set is not this mechanism's (public frequencies, "
                              f"w={self.sensitive_fraction:g})")
        near_ok = sensitive[geo.neighbors]
        if not np.array_equal(tables["near"], np.where(near_ok, geo.neighbors, -1)):
            raise DPTextError("the near table is not the space's kNN rows over V_s")
        if int(tables["n_sensitive"]) != int(sensitive.sum()) or not np.array_equal(
                tables["near_count"], near_ok.sum(1)):
            raise DPTextError("the sensitive counts do not match the mask")
        near_d = _near_distances(geo, near_ok)
        # tables saved before the shift existed hold unshifted weights (see _use_tables)
        shift = np.asarray(tables.get("shift", np.zeros(n)), dtype=np.float64)
        has_near = near_ok.any(1) & ("shift" in tables)
        if shift.shape != (n,) or not np.isfinite(shift).all() or (shift < 0).any() or (
                has_near.any() and not np.allclose(shift[has_near], near_d[has_near].min(1),
                                                   rtol=1e-6, atol=1e-6)):
            raise DPTextError("the weight shift is not each row's nearest sensitive distance")
        if int(np.asarray(tables.get("layout", 1))) != self.LAYOUT:
            # an earlier sampler's tables: never sampled from - _use_tables refits them (the
            # parts they share with these were checked above)
            return
        need = {"near_order", "log_far_max", "log_p_far"}
        missing = sorted(need - set(tables))
        if missing:
            raise DPTextError(f"tables lack {', '.join(missing)}")
        free = {"near_ok": near_ok, "near_d": near_d, "shift": shift,
                "last_d": geo.distances[:, -1].astype(np.float64), "sensitive": sensitive}
        log_w, log_p_far, log_far_max = _log_weights(free, self.epsilon)
        if not np.allclose(tables["log_far_max"], log_far_max, rtol=1e-9, atol=1e-9):
            raise DPTextError("far_max is not the weight of the last kNN distance")
        got = np.asarray(tables["log_p_far"], dtype=np.float64)
        if got.shape != (n,) or not _close_logs(got, log_p_far):
            raise DPTextError("the far-part probabilities are not the envelope sampler's "
                              "(n_s * far_max against the near mass)")
        if not np.allclose(tables["p_near"], -np.expm1(log_p_far), rtol=1e-9, atol=1e-300):
            raise DPTextError("p_near is not 1 - p_far")
        _check_near_sampler(tables, _drawable(log_w))

    @classmethod
    def fit_many(cls, epsilons, *, progress: bool = False, **params) -> list[SanText]:
        """Fitted mechanisms at each epsilon (same other ``params``), sharing one distance pass
        among those not already in the on-disk cache (each is saved there, as by ``fit``)."""
        ms = [cls(epsilon=e, **params) for e in epsilons]
        if not ms:
            return []
        if ms[0].space is None:
            from dptext.resources import default_space

            space = default_space(progress=progress)
            for m in ms:
                m.space = space
        todo = [m for m in ms if not m._cache_path(m.space).is_file()]
        if todo:
            tables = todo[0]._fit_tables_many(todo[0].space, [m.epsilon for m in todo])
            for m, t in zip(todo, tables, strict=True):
                m.save(m._cache_path(m.space), t)
        return [m.fit() for m in ms]

    def _use_tables(self, tables: dict[str, np.ndarray]) -> None:
        if int(np.asarray(tables.get("layout", 1))) != self.LAYOUT:
            # tables of an earlier sampler (grid inverse CDF, or the exact far mass): the
            # rounds of _draw must not use them. A fit at one epsilon takes seconds.
            tables = self._fit_tables(self.space)
        super()._use_tables(tables)
        self._sq_norms = _squared_norms(self.space.vectors)
        self._sensitive_rows = np.flatnonzero(tables["sensitive"])
        self._near_tables = {k: tables[k] for k in ("cum", "block_end", "log_cont")
                             if k in tables}

    # ------------------------------------------------------------- sample
    def _output_rows(self) -> np.ndarray | None:
        return None if self.sensitive_fraction == 1.0 else self._sensitive_rows

    def _protected(self, rows: np.ndarray) -> np.ndarray | None:
        return None if self.sensitive_fraction == 1.0 else self._tables["sensitive"][rows]

    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        t = self._tables
        out = self._draw(rows, rng)
        if self.sensitive_fraction < 1.0:  # SanText+: non-sensitive words kept w.p. 1 - p
            keep = ~t["sensitive"][rows] & (rng.random(len(rows)) >= self.p)
            out[keep] = rows[keep]
        return out

    def _draw(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Exact draws (module docstring, "Exactness"): every decision is an exact Bernoulli
        or an exact draw from the stored doubles (dptext.exact_sampling), none an inverse CDF
        on the 2^-53 grid."""
        t = self._tables
        out = np.empty(len(rows), dtype=np.int64)
        vec, sq = self.space.vectors, self._sq_norms
        half_eps = self.epsilon / 2.0
        pending = np.arange(len(rows))
        while len(pending):  # one round per pending row (module docstring)
            x = rows[pending]
            go_far = exact_sampling.bernoulli_log(t["log_p_far"][x], rng)
            idx = np.flatnonzero(~go_far)
            if len(idx):
                xi = x[idx]
                pos = exact_sampling.sample(self._near_tables, xi, rng)
                out[pending[idx]] = t["near"][xi, t["near_order"][xi, pos]]
            far = np.flatnonzero(go_far)
            x = x[far]
            y = self._sensitive_rows[rng.integers(0, len(self._sensitive_rows), len(far))]
            ok = (t["near"][x] != y[:, None]).all(1)
            cand = np.flatnonzero(ok)
            xc, yc = x[cand], y[cand]
            # float32 dot products (rounding ~1e-7 in d), the rest in float64
            dot = np.einsum("ij,ij->i", vec[xc], vec[yc]).astype(np.float64)
            d = np.sqrt(np.maximum(sq[xc] + sq[yc] - 2.0 * dot, 0.0))
            # accept with probability weight(y) / far_max, exactly (also below 2^-53)
            log_ratio = np.minimum(-half_eps * (d - t["shift"][xc]) - t["log_far_max"][xc], 0.0)
            ok[cand] = exact_sampling.bernoulli_log(log_ratio, rng)
            out[pending[far[ok]]] = y[ok]
            pending = pending[far[~ok]]
        return out

    def realized_log_probabilities(self, row: int) -> np.ndarray:
        """ln P(_draw returns y | x = ``row``) for every word y, computed from the tables as
        the sampler uses them (its near probabilities as realized by exact_sampling, its
        branch and rejection probabilities, the far distances from the same float32 dot
        products): the law the guarantee must hold for (-inf outside V_s)."""
        t = self._tables
        self._fitted_space()
        n = len(self.space)
        x = int(row)
        lp_far = float(t["log_p_far"][x])
        log_stay = math.log(-math.expm1(lp_far)) if lp_far < 0 else -math.inf
        out = np.full(n, -np.inf)
        rounds = np.full(n, -np.inf)  # ln P(the first round returns y)
        realized = exact_sampling.realized_log_probabilities(self._near_tables, [x])[0]
        order = t["near_order"][x]
        cols = order[order >= 0]
        rounds[t["near"][x, cols]] = log_stay + realized[order >= 0]
        far = np.setdiff1d(self._sensitive_rows, t["near"][x][t["near"][x] >= 0])
        log_accept = -math.inf
        if len(far) and lp_far > -math.inf:
            vec, sq = self.space.vectors, self._sq_norms
            dot = (vec[far] @ vec[x]).astype(np.float64)
            d = np.sqrt(np.maximum(sq[x] + sq[far] - 2.0 * dot, 0.0))
            log_ratio = np.minimum(-self.epsilon / 2.0 * (d - t["shift"][x])
                                   - t["log_far_max"][x], 0.0)
            base = lp_far - math.log(len(self._sensitive_rows))
            rounds[far] = base + log_ratio
            log_accept = float(np.logaddexp.reduce(rounds[far]))
        # a round ends with a word with probability (1 - p_far) + P(far accepted)
        log_end = float(np.logaddexp(log_stay, log_accept))
        out[:] = rounds - log_end
        return out

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        space = self._fitted_space()
        row = space.lookup(word)
        if row < 0:
            raise DPTextError(f"{word!r} is not in the vocabulary of {space.name!r}")
        cand = self._sensitive_rows
        logits = -self.epsilon / 2.0 * space.pairwise([row], cand)[0]
        w = np.exp(logits - logits.max())
        words, probs = [space.words[i] for i in cand], w / w.sum()
        if self.sensitive_fraction < 1.0 and not self._tables["sensitive"][row]:
            # SanText+: a non-sensitive word is kept w.p. 1 - p, else drawn as above
            words, probs = [*words, space.words[row]], np.append(self.p * probs, 1.0 - self.p)
        return words, probs


    def likelihood_matrix(self, inputs, outputs, *, block: int = 512) -> np.ndarray:
        """p(y | x) for every input row x (rows of the result) and output row y (columns), exact
        in float64 like :meth:`distribution`, one blocked pass over the sensitive words (the
        Bayes attack of dptext.evaluation.inversion needs thousands of such rows)."""
        space = self._fitted_space()
        inputs, outputs = np.asarray(inputs, dtype=np.int64), np.asarray(outputs, dtype=np.int64)
        cand = self._sensitive_rows
        sensitive = self._tables["sensitive"]
        out = np.empty((len(inputs), len(outputs)))
        for s in range(0, len(inputs), block):
            x = inputs[s : s + block]
            logits = -self.epsilon / 2.0 * space.pairwise(x, cand)
            top = logits.max(1, keepdims=True)
            z = np.exp(logits - top).sum(1, keepdims=True)
            p = np.exp(-self.epsilon / 2.0 * space.pairwise(x, outputs) - top) / z
            p[:, ~sensitive[outputs]] = 0.0
            if self.sensitive_fraction < 1.0:  # SanText+: non-sensitive inputs kept w.p. 1 - p
                public = ~sensitive[x]
                p[public] *= self.p
                p[public] += (1.0 - self.p) * (x[public, None] == outputs[None, :])
            out[s : s + block] = p
        return out


@register
class SanTextPlus(SanText):
    name = "santext+"
    summary = "SanText over the rarest w of words; other words kept w.p. 1-p"

    # the entity check reads the texts, not the tables
    runtime_parameters = frozenset({"warn_entities", "device"})

    def __init__(self, *, sensitive_fraction: float = 0.9, p: float = 0.3,
                 warn_entities: bool = False, **params) -> None:
        """``warn_entities``: also run the spaCy entity detector over the texts and warn
        (report ``warnings["non_sensitive_entity"]``) about every non-sensitive word released
        verbatim inside a detected entity; the capitalisation warning is always on."""
        super().__init__(sensitive_fraction=sensitive_fraction, p=p, **params)
        self.warn_entities = check_bool(warn_entities, "warn_entities")


def _near_distances(geo, near_ok: np.ndarray) -> np.ndarray:
    """The kNN distances in float64, inf where the neighbour is not sensitive (in place on
    the one copy: the fit's peak memory)."""
    near_d = geo.distances.astype(np.float64)
    near_d[~near_ok] = np.inf
    return near_d


def _log_weights(free: dict, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log-weights of the kNN columns, -eps/2 (d - shift), -inf where not sensitive; log of
    each row's far-part probability in one round, log(U / (Z_near + U)) with the envelope
    U = n_s * far_max; log far_max), all in the log domain: nothing underflows at any
    epsilon (module docstring)."""
    near_ok, near_d, shift = free["near_ok"], free["near_d"], free["shift"]
    n, m = near_ok.shape
    n_sensitive = int(free["sensitive"].sum())
    half = epsilon / 2.0
    log_w = near_d - shift[:, None]  # in place from here: the fit's peak memory
    log_w *= -half
    log_w[~near_ok] = -np.inf
    # Every sensitive word outside the kNN row is at least as far as its last entry and as the
    # row's nearest sensitive word (shift): its weight is at most far_max <= 1.
    log_far_max = -half * (np.maximum(free["last_d"], shift) - shift)
    has_far = (near_ok.sum(1) < n_sensitive) & (m < n)  # m >= n: the kNN rows hold every word
    log_env = np.where(has_far, math.log(max(n_sensitive, 1)) + log_far_max, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        top = np.max(log_w, axis=1)
        safe = np.where(np.isfinite(top), top, 0.0)
        scaled = log_w - safe[:, None]
        np.exp(scaled, out=scaled)
        log_z_near = safe + np.log(scaled.sum(1))
        del scaled
        log_p_far = np.minimum(log_env - np.logaddexp(log_z_near, log_env), 0.0)
    return log_w, np.where(np.isfinite(log_env), log_p_far, -np.inf), log_far_max


def _drawable(log_w: np.ndarray) -> np.ndarray:
    """``log_w`` with a placeholder outcome in rows without a sensitive kNN word (SanText+):
    the exact sampler needs one possible outcome per row; such rows always go to the far
    part (log_p_far = 0), so it is never drawn."""
    empty = ~np.isfinite(log_w).any(1)
    if not empty.any():
        return log_w
    out = log_w.copy()
    out[empty, 0] = 0.0
    return out


def _close_logs(a: np.ndarray, b: np.ndarray, tol: float = 1e-9) -> bool:
    same_inf = np.isneginf(a) == np.isneginf(b)
    fin = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore"):
        gap = np.subtract(a, b)
        np.abs(gap, out=gap)
    return bool(same_inf.all() and np.all((gap <= tol) | ~fin)
                and (np.isfinite(a) | np.isneginf(a)).all())


def _check_near_sampler(tables: dict, log_w: np.ndarray, tol: float = 1e-9) -> None:
    """The stored near sampler realizes each kNN column's probability w / Z_near to within
    ``tol`` nats (what exact_sampling.sample draws: realized_log_probabilities), and its order
    is a permutation of the possible columns."""
    order = np.asarray(tables["near_order"])
    cum = np.asarray(tables["cum"], dtype=np.float64)
    n, m = log_w.shape
    if order.shape != (n, m) or cum.shape != (n, m):
        raise DPTextError("the near sampling tables do not match the kNN table")
    possible = np.isfinite(log_w)
    if (order < -1).any() or (order >= m).any() or not np.array_equal(
            (order >= 0).sum(1), possible.sum(1)):
        raise DPTextError("the near sampling order is not a permutation of the kNN columns")
    hit = np.zeros((n, m + 1), dtype=bool)  # column m: where the impossible ones point
    hit[np.arange(n)[:, None], np.where(order >= 0, order, m)] = True
    if not np.array_equal(hit[:, :m], possible):
        raise DPTextError("the near sampling order is not a permutation of the kNN columns")
    if np.isnan(cum).any():
        raise DPTextError("the near cumulative weights are not exp(-eps d / 2) of the kNN "
                          "distances (NaN)")
    realized = exact_sampling.realized_log_probabilities(
        {k: tables[k] for k in ("cum", "block_end", "log_cont") if k in tables})
    top = log_w.max(1, keepdims=True)
    want = log_w - top  # in place: the same arithmetic as log_w - logsumexp(log_w)
    np.exp(want, out=want)
    lse = top + np.log(want.sum(1, keepdims=True))
    np.subtract(log_w, lse, out=want)
    sorted_want = np.take_along_axis(want, np.maximum(order, 0), 1)
    del want
    sorted_want[order < 0] = -np.inf
    if not _close_logs(realized, sorted_want, tol):
        raise DPTextError("the near cumulative weights are not exp(-eps d / 2) of the kNN "
                          "distances (realized probabilities differ)")


def _nearest_distance(vectors: np.ndarray, rows: np.ndarray, columns: np.ndarray,
                      block: int = 256, device: str = "cpu") -> np.ndarray:
    """min over ``columns`` of the Euclidean distance from each of ``rows`` (float64 result
    from float32 products, blocked so memory stays ~block x len(columns) floats). ``device``
    other than "cpu": the same computation in torch there (:func:`_nearest_distance_torch`)."""
    from dptext.devices import resolve_device

    if resolve_device(device) != "cpu":
        return _nearest_distance_torch(vectors, rows, columns, device=resolve_device(device))
    cols = vectors[columns]
    col_sq = np.einsum("ij,ij->i", cols, cols)
    out = np.empty(len(rows))
    for s in range(0, len(rows), block):
        x = vectors[rows[s : s + block]]
        d2 = (col_sq[None, :] - 2.0 * (x @ cols.T)).min(1).astype(np.float64)
        out[s : s + block] = np.sqrt(np.maximum(d2 + np.einsum("ij,ij->i", x, x), 0.0))
    return out


def _nearest_distance_torch(vectors: np.ndarray, rows: np.ndarray, columns: np.ndarray, *,
                            device: str, block: int = 4096) -> np.ndarray:
    """:func:`_nearest_distance` in torch on ``device`` (full float32: TF32 off): the sensitive
    words stay on the device, each block of rows is one GEMM and a row minimum."""
    import torch

    dev = torch.device(device)
    cols = torch.from_numpy(np.ascontiguousarray(vectors[columns], dtype=np.float32)).to(dev)
    col_sq = (cols * cols).sum(1)
    out = np.empty(len(rows))
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for s in range(0, len(rows), block):
            x = torch.from_numpy(np.ascontiguousarray(vectors[rows[s : s + block]],
                                                      dtype=np.float32)).to(dev)
            d2 = (col_sq[None, :] - 2.0 * (x @ cols.T)).min(1).values
            d2 = d2.double() + (x * x).sum(1).double()
            out[s : s + block] = torch.sqrt(torch.clamp(d2, min=0.0)).cpu().numpy()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return out


def _squared_norms(vectors: np.ndarray, block: int = 4096) -> np.ndarray:
    """Row squared norms in float64 without a float64 copy of the whole matrix."""
    out = np.empty(len(vectors))
    for s in range(0, len(vectors), block):
        v = vectors[s : s + block].astype(np.float64)
        out[s : s + block] = np.einsum("ij,ij->i", v, v)
    return out


def _save_npz(path: Path, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to ``path`` atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as f:
        np.savez(f, **arrays)
