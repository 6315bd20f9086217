"""SanText and SanText+ (Yue et al. 2021), the baselines of custext_customized_sanitization.txt.

SanText: p(y | x) proportional to exp(-epsilon * d(x, y) / 2) over the sensitive words V_s,
d = Euclidean distance of the word vectors. Guarantee: epsilon*d metric LDP (the normaliser
ratio contributes at most e^(eps*d/2), the weight ratio the other half).

SanText+: V_s is the fraction ``sensitive_fraction`` (w) of least frequent words by public
frequency; a sensitive word is always replaced by a draw from V_s; a non-sensitive word is
kept with probability 1 - p and otherwise replaced by a draw from V_s with the same weights.
Non-sensitive words are public by the method's assumption: the report counts them as kept.

Exact sampling without a |V| x |V_s| table: per input word the weights of its m nearest
sensitive words are tabulated, and the total weight of all other sensitive words (Z_far) is
precomputed in one blocked pass. A draw picks the near part with probability
Z_near / (Z_near + Z_far) (inverse CDF on the table), else a far word by rejection: propose
uniformly from V_s, reject near words, accept with weight / (largest far weight). Every far word
is at least as far as the m-th neighbour, so the acceptance ratio is <= 1 and the draw exact.
All weights of a row are taken relative to its nearest sensitive word (``shift``), so that large
epsilons cannot underflow them to zero (a row with no weight left would never finish a draw).
"""

from __future__ import annotations

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import WordMechanism, check_probability, register
from dptext.mechanisms.frequency import frequency_order
from dptext.validation import check_bool

_BLOCK = 1024


@register
class SanText(WordMechanism):
    name = "santext"
    capabilities = frozenset({"sample_rows", "distribution", "likelihood_matrix", "fit_many"})
    summary = "exponential weights exp(-eps*d/2) over all (sensitive) words (metric DP)"
    guarantee_summary = "epsilon*d metric DP over sensitive words, d = Euclidean distance"

    def __init__(
        self, *, epsilon: float = 2.0, sensitive_fraction: float = 1.0, p: float = 0.0, **common
    ) -> None:
        super().__init__(epsilon=epsilon, **common)
        self.sensitive_fraction = check_probability(sensitive_fraction, "sensitive_fraction")
        if self.sensitive_fraction == 0.0:
            raise DPTextError("sensitive_fraction must be > 0")
        self.p = check_probability(p, "p")

    def _table_params(self) -> dict:
        return {"epsilon": self.epsilon, "w": self.sensitive_fraction, "p": self.p}

    @property
    def guarantee(self) -> TokenGuarantee:
        space = self._fitted_space()
        scope = "all words" if self.sensitive_fraction == 1.0 else "sensitive words (V_s)"
        return TokenGuarantee(
            GuaranteeKind.METRIC, self.epsilon, scope=scope,
            metric=space.metric_description, diameter=space.delta_max,
        )

    # ---------------------------------------------------------------- fit
    def _sensitive_mask(self, space: EmbeddingSpace) -> np.ndarray:
        n = len(space)
        n_sensitive = max(1, int(round(self.sensitive_fraction * n)))
        mask = np.zeros(n, dtype=bool)
        mask[frequency_order(space)[n - n_sensitive :]] = True
        return mask

    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        return self._fit_tables_many(space, [self.epsilon])[0]

    def _fit_tables_many(self, space: EmbeddingSpace, epsilons: list[float]
                         ) -> list[dict[str, np.ndarray]]:
        """The tables of this mechanism at each of ``epsilons`` from ONE pass over all pairs.

        The distance pass (|V| x |V_s| distances, the whole cost of a fit) does not depend on
        epsilon; only the weights exp(-eps d / 2) taken from it do. Each epsilon's tables come
        from exactly the operations a single fit performs, so they are identical to it.
        """
        if space.metric != "euclidean":
            raise DPTextError("SanText needs a euclidean space")
        import torch

        sensitive = self._sensitive_mask(space)
        geo = space.geometry()
        n, m = geo.neighbors.shape
        half = [float(e) / 2.0 for e in epsilons]
        near_ok = sensitive[geo.neighbors]
        near = np.where(near_ok, geo.neighbors, -1)
        x = torch.from_numpy(space.vectors)
        sq = (x * x).sum(1)
        # Every weight of a row is divided by exp(-half_eps * shift), shift ~ the distance to the
        # row's nearest sensitive word: no probability changes, but the largest weight stays near
        # 1 whatever epsilon, so no row underflows to all zeros (in float32 or float64).
        near_d = np.where(near_ok, geo.distances.astype(np.float64), np.inf)
        shift = near_d.min(1)
        z_far = np.empty((len(half), n))
        all_sensitive = bool(sensitive.all())
        off_vs = torch.from_numpy(~sensitive)
        for s in range(0, n, _BLOCK):
            e = min(n, s + _BLOCK)
            # d = sqrt(|x|^2 + |y|^2 - 2 x.y), fused and in place: this pass dominates fit time.
            d = torch.addmm(sq[s:e, None] + sq[None, :], x[s:e], x.T, alpha=-2.0)
            d.clamp_(min=0.0).sqrt_()
            if not all_sensitive:
                d.masked_fill_(off_vs, torch.inf)  # sensitive columns only
                lost = ~np.isfinite(shift[s:e])  # rows whose kNN list has no sensitive word
                if lost.any():
                    shift[s:e][lost] = d[torch.from_numpy(lost)].min(1).values.double().numpy()
            shift_t = torch.from_numpy(shift[s:e]).float()[:, None]
            ok_t = torch.from_numpy(near_ok[s:e])
            cols = torch.from_numpy(geo.neighbors[s:e]).long()
            for j, half_eps in enumerate(half):
                last = j == len(half) - 1  # the last epsilon may overwrite d in place
                w = (d.sub_(shift_t) if last else d - shift_t).mul_(-half_eps).exp_()  # 0 off V_s
                total = w.sum(1, dtype=torch.float64).numpy()
                near_approx = (torch.gather(w, 1, cols).double() * ok_t).sum(1).numpy()
                z_far[j, s:e] = np.maximum(total - near_approx, 0.0)
        out = []
        for j, half_eps in enumerate(half):
            near_w = np.where(near_ok, np.exp(-half_eps * (near_d - shift[:, None])), 0.0)
            # Every word outside the kNN row is at least as far as its last entry.
            far_max = np.exp(-half_eps * (geo.distances[:, -1].astype(np.float64) - shift))
            if m >= n:  # the kNN rows hold every word: nothing is far
                z_far[j] = 0.0
            z_near = near_w.sum(1)
            cum = np.cumsum(near_w, 1) / np.where(z_near > 0, z_near, 1.0)[:, None]
            out.append({
                "sensitive": sensitive, "near": near, "cum": cum, "far_max": far_max,
                "p_near": z_near / (z_near + z_far[j]),
                "n_sensitive": np.array(int(sensitive.sum())),
                "near_count": near_ok.sum(1), "shift": shift.copy(),
            })
        return out

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
        super()._use_tables(tables)
        v = self.space.vectors.astype(np.float64)
        self._sq_norms = (v * v).sum(1)
        self._sensitive_rows = np.flatnonzero(tables["sensitive"])
        # Column of the last sensitive word of each kNN row (SanText+ rows have -1 gaps, so this
        # is not near_count - 1); rows without one are never drawn from the near table.
        valid = tables["near"] >= 0
        self._near_last = valid.shape[1] - 1 - np.argmax(valid[:, ::-1], axis=1)
        if "shift" not in tables:  # tables saved before the shift: weights were unshifted
            tables["shift"] = np.zeros(len(valid))

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
        t = self._tables
        out = np.empty(len(rows), dtype=np.int64)
        go_near = rng.random(len(rows)) < t["p_near"][rows]
        idx = np.flatnonzero(go_near)
        if len(idx):
            # u in (0, 1]: the first column whose cumulative weight reaches u has weight > 0
            # (never a -1 gap); past the last sensitive column only by rounding of the cumsum.
            u = 1.0 - rng.random(len(idx))
            j = (t["cum"][rows[idx]] < u[:, None]).sum(1)
            j = np.minimum(j, self._near_last[rows[idx]])
            out[idx] = t["near"][rows[idx], j]
        pending = np.flatnonzero(~go_near)
        vec, sq = self.space.vectors, self._sq_norms
        half_eps = self.epsilon / 2.0
        while len(pending):
            x = rows[pending]
            y = self._sensitive_rows[rng.integers(0, len(self._sensitive_rows), len(pending))]
            # float32 dot products (rounding ~1e-7 in d), the rest in float64
            dot = np.einsum("ij,ij->i", vec[x], vec[y]).astype(np.float64)
            d = np.sqrt(np.maximum(sq[x] + sq[y] - 2.0 * dot, 0.0))
            w = np.exp(-half_eps * (d - t["shift"][x]))
            ok = (t["near"][x] != y[:, None]).all(1) & (rng.random(len(x)) * t["far_max"][x] < w)
            out[pending[ok]] = y[ok]
            pending = pending[~ok]
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
    runtime_parameters = frozenset({"warn_entities"})

    def __init__(self, *, sensitive_fraction: float = 0.9, p: float = 0.3,
                 warn_entities: bool = False, **params) -> None:
        """``warn_entities``: also run the spaCy entity detector over the texts and warn
        (report ``warnings["non_sensitive_entity"]``) about every non-sensitive word released
        verbatim inside a detected entity; the capitalisation warning is always on."""
        super().__init__(sensitive_fraction=sensitive_fraction, p=p, **params)
        self.warn_entities = check_bool(warn_entities, "warn_entities")
