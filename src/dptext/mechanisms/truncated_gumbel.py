"""Truncated Gumbel mechanism (Xu et al. 2021; truncated_gumbel_metric_dp.txt, Definition 1,
Algorithms 1-2 and Appendix A, Theorem 1).

For each word w:
1. k ~ TruncatedPoisson(ln|W|; 1, |W|) exactly as Definition 1: draw Y ~ Poisson(ln|W|); k = Y
   if 1 <= Y < |W|, else k = |W| (the whole vocabulary - not "keep the word").
2. Candidates: the k nearest words of w, w itself first (distance 0).
3. Add i.i.d. Gumbel(0, b) noise truncated to [-Delta_max, Delta_max] to the distances (truncation
   is conditioning: inverse CDF on the truncated range, not clipping) and return the argmin
   (Algorithm 1).

Scale b (Appendix A, with lambda = ln|W|, n = |W|): K1 = 2(1 + ln|W|)/Delta_min,
alpha = (epsilon - K1)/3, b = max(2 Delta_max / W0(2 alpha Delta_max),
2 Delta_max / ln(alpha Delta_min)) where the second term applies only when alpha Delta_min > 1.
Both come from the sufficient condition K1 + (1/Delta_min + 2/b) exp(2 Delta_max / b) <= epsilon,
which we check; ``b="tight"`` takes the smallest b meeting it (the left side decreases in b).
"""

from __future__ import annotations

import math

import numpy as np

from dptext.accounting.events import GuaranteeKind, TokenGuarantee
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.mechanisms.base import TypicalEpsilon
from dptext.mechanisms.registry import register
from dptext.mechanisms.word import WordMechanism
from dptext.validation import check_epsilon


def bound(b: float, *, vocab_size: int, delta_max: float, delta_min: float) -> float:
    """The epsilon that scale ``b`` guarantees (Appendix A's sufficient condition)."""
    k1 = 2.0 * (1.0 + math.log(vocab_size)) / delta_min
    with np.errstate(over="ignore"):
        return k1 + (1.0 / delta_min + 2.0 / b) * float(np.exp(2.0 * delta_max / b))


def paper_scale(epsilon: float, *, vocab_size: int, delta_max: float, delta_min: float) -> float:
    """b from the paper's closed form (Algorithm 2); nan where it is undefined."""
    from scipy.special import lambertw

    k1 = 2.0 * (1.0 + math.log(vocab_size)) / delta_min
    alpha = (epsilon - k1) / 3.0
    if alpha <= 0:
        return math.nan
    b = 2.0 * delta_max / float(lambertw(2.0 * alpha * delta_max).real)
    if alpha * delta_min > 1.0:
        b = max(b, 2.0 * delta_max / math.log(alpha * delta_min))
    return b


def tight_scale(epsilon: float, *, vocab_size: int, delta_max: float, delta_min: float) -> float:
    """The smallest b with bound(b) <= epsilon (nan if none: epsilon <= K1 + 1/Delta_min)."""
    from scipy.optimize import brentq

    geo = dict(vocab_size=vocab_size, delta_max=delta_max, delta_min=delta_min)
    if epsilon <= minimum_epsilon(**geo, rule="tight"):
        return math.nan
    hi = delta_max
    while bound(hi, **geo) > epsilon:
        hi *= 2.0
    lo = hi / 2.0
    while bound(lo, **geo) <= epsilon and lo > 1e-300:
        lo /= 2.0
    b = brentq(lambda x: bound(x, **geo) - epsilon, lo, hi, xtol=1e-15, rtol=1e-12)
    while bound(b, **geo) > epsilon:  # land on the admissible side of the root
        b = math.nextafter(b, math.inf)
    return b


def minimum_epsilon(*, vocab_size: int, delta_max: float, delta_min: float, rule: str) -> float:
    """Infimum of the admissible epsilons: K1 + 1/Delta_min for ``tight``; for ``paper`` the
    smallest epsilon whose closed-form b passes the check (found by bisection)."""
    geo = dict(vocab_size=vocab_size, delta_max=delta_max, delta_min=delta_min)
    k1 = 2.0 * (1.0 + math.log(vocab_size)) / delta_min
    floor = k1 + 1.0 / delta_min
    if rule == "tight":
        return floor

    def ok(eps: float) -> bool:
        b = paper_scale(eps, **geo)
        return math.isfinite(b) and bound(b, **geo) <= eps * (1 + 1e-12)

    lo, hi = floor, 2.0 * floor
    while not ok(hi):
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def truncated_gumbel(shape, b: float, c: float, rng: np.random.Generator) -> np.ndarray:
    """Gumbel(0, b) conditioned on [-c, c], by inverse CDF (F(x) = exp(-exp(-x/b)))."""
    with np.errstate(over="ignore"):  # c / b past ~709: F(-c) underflows to 0, as it should
        lo, hi = float(np.exp(-np.exp(c / b))), float(np.exp(-np.exp(-c / b)))
    u = lo + (hi - lo) * rng.random(shape)
    u = np.clip(u, max(lo, np.finfo(float).tiny), hi)
    return np.clip(-b * np.log(-np.log(u)), -c, c)


# Relative margin under the float64 Delta_min: the rounding error of a float64 Euclidean
# distance (a sum of dim squares and a square root) is below (dim + 2) * 2**-53 relative,
# ~4.5e-14 for 384 dimensions; 1e-12 covers any dimension below ~18,000.
_DELTA_MIN_MARGIN = 1e-12


def exact_delta_min(space: EmbeddingSpace) -> float:
    """Delta_min for the noise rule, in float64 and rounded down (the safe direction).

    The kNN table keeps its distances in float32 (``Geometry.distances``), so
    ``space.delta_min`` is the exact distance rounded to the nearest float32 - up about half the
    time (issue 47, F7: 0.13768360018730164 for 0.13768359426686017). A Delta_min rounded up
    makes K1 and 1/Delta_min smaller, so b="tight" - which leaves no slack - chose a b whose
    true bound exceeded epsilon (250.0000102 > 250). Rounding to nearest is monotone, so the
    pair of least exact distance is among the rows whose float32 nearest-neighbour distance
    equals the float32 minimum: those are recomputed in float64 from the vectors
    (``EmbeddingSpace.pairwise``) and the least is taken, lowered by ``_DELTA_MIN_MARGIN``
    relative so that float64 rounding cannot put it above the real distance."""
    d32 = space.delta_min  # also ensures a table with the nearest neighbour (k >= 2)
    if not math.isfinite(d32):
        return d32
    geo = space.cached_geometry
    column = geo.distances[:, 1]
    rows = np.flatnonzero(column == column.min())
    exact = min(float(space.pairwise([int(r)], [int(geo.neighbors[r, 1])])[0, 0])
                for r in rows)
    return exact * (1.0 - _DELTA_MIN_MARGIN)


_EXACT_LIMIT = 200  # words; exact distribution() costs O(|W|^2) quadratures


@register
class TruncatedGumbel(WordMechanism):
    name = "gumbel"
    capabilities = frozenset({"sample_rows", "distribution"})
    summary = "noisy argmin over a truncated-Poisson number of nearest words (metric DP)"
    guarantee_summary = (
        "epsilon*d metric DP (Theorem 1), d = Euclidean; epsilon must exceed a vocabulary bound"
    )
    typical_epsilon = TypicalEpsilon(
        194, None, "eps*d metric DP (truncated Gumbel), per word; epsilon must exceed the "
                   "space's bound (194 on the default space)",
        "the bound of the default space; 34-51% unchanged over 200-5000")
    typical_epsilon_spaces = {"glove-6b-50d": TypicalEpsilon(
        75.8, None, "eps*d metric DP (truncated Gumbel), per word; epsilon must exceed the "
                    "space's bound (75.8 on glove-6b-50d)",
        "the bound of glove-6b-50d; 17-24% unchanged over 76-5000")}

    # where the candidate search of a large k (beyond the kNN table) runs
    runtime_parameters = frozenset({"device"})

    def __init__(self, *, epsilon: float = 250.0, b: str | float = "paper", device: str = "cpu",
                 **common) -> None:
        """``b``: ``"paper"`` (closed form of Algorithm 2), ``"tight"`` (smallest b meeting the
        same bound) or a number (checked against the bound). ``device`` ("cpu", "cuda",
        "auto"): where the candidates of a k beyond the kNN table (k = |W| when the Poisson
        draw is 0 or >= |W|) are found - the float64 distances to every word and their stable
        sort, in torch on the GPU; the noise is drawn on the CPU from the mechanism's
        generator either way."""
        from dptext.devices import check_device

        super().__init__(epsilon=epsilon, **common)
        self.device = check_device(device)
        if b not in ("paper", "tight"):
            b = check_epsilon(b, "b")
        self.b_rule = b

    table_parameters = frozenset({"epsilon", "b"})
    table_attributes = {"b": "b_rule"}
    # 2: b from the float64 Delta_min (exact_delta_min); tables of layout 1 were fitted with
    # the kNN table's float32 Delta_min, which may be rounded up (a b too small)
    table_layout = 2

    def _geometry(self, space: EmbeddingSpace) -> dict:
        return dict(vocab_size=len(space), delta_max=space.delta_max,
                    delta_min=exact_delta_min(space))

    def least_epsilon(self) -> float:
        """The infimum of the admissible epsilons on this space (Appendix A's bound): for
        ``b="paper"``/``"tight"`` :func:`minimum_epsilon`, for a given b its bound."""
        geo = self._geometry(self.resolved_space())
        if isinstance(self.b_rule, float):
            return bound(self.b_rule, **geo)
        return minimum_epsilon(**geo, rule=self.b_rule)

    def check_admissible(self) -> None:
        """Refuse an epsilon below the bound from the space's geometry alone, before any
        table is fitted or cached (``sanitize -m gumbel -e 150`` used to announce and start
        a fit first)."""
        self._scale(self.resolved_space())

    def _scale(self, space: EmbeddingSpace) -> float:
        """The noise scale b for this epsilon, or DPTextError naming the bound."""
        if space.metric != "euclidean":
            raise DPTextError("the truncated Gumbel mechanism needs a euclidean space")
        geo = self._geometry(space)
        if isinstance(self.b_rule, float):
            b = self.b_rule
        else:
            rule = paper_scale if self.b_rule == "paper" else tight_scale
            b = rule(self.epsilon, **geo)
        if not (math.isfinite(b) and bound(b, **geo) <= self.epsilon * (1 + 1e-12)):
            rule = "tight" if self.b_rule == "tight" else "paper"
            least = minimum_epsilon(**geo, rule=rule)
            raise DPTextError(
                f"epsilon={self.epsilon:g} is below the truncated Gumbel bound for this vocabulary "
                f"(|W|={geo['vocab_size']}, Delta_min={geo['delta_min']:.4g}, "
                f"Delta_max={geo['delta_max']:.4g}): b={self.b_rule!r} needs epsilon > "
                f"{least:.6g}"
            )
        return b

    def _fit_tables(self, space: EmbeddingSpace) -> dict[str, np.ndarray]:
        return {"b": np.array(self._scale(space))}

    def validate_tables(self, tables: dict[str, np.ndarray]) -> None:
        """The scale b must meet Appendix A's sufficient condition for this epsilon (a smaller
        b is less noise and a weaker guarantee than the one printed)."""
        super().validate_tables(tables)
        if "b" not in tables:
            raise DPTextError("tables lack b")
        b = float(np.asarray(tables["b"]))
        if not (math.isfinite(b) and b > 0):
            raise DPTextError(f"scale b={b!r} is not a positive number")
        got = bound(b, **self._geometry(self.space))
        if not got <= self.epsilon * (1 + 1e-12):
            raise DPTextError(f"scale b={b:g} guarantees only epsilon={got:.6g} > "
                              f"{self.epsilon:g}")

    @property
    def b(self) -> float:
        self._fitted_space()
        return float(self._tables["b"])

    @property
    def guarantee(self) -> TokenGuarantee:
        space = self.resolved_space()
        return TokenGuarantee(
            GuaranteeKind.METRIC, self.epsilon, scope="all words of the space (Theorem 1)",
            metric=space.metric_description, diameter=space.delta_max,
        )

    def distribution(self, word: str) -> tuple[list[str], np.ndarray]:
        """Exact output distribution: the mixture over k of exact argmin probabilities
        (numerical integration; vocabularies of at most 200 words). Used to audit Theorem 1."""
        from scipy.stats import poisson

        space = self._fitted_space()
        n = len(space)
        if n > _EXACT_LIMIT:
            raise DPTextError(
                f"the exact truncated Gumbel distribution is computed for vocabularies of at most "
                f"{_EXACT_LIMIT} words (numerical integration); this one has {n}"
            )
        row = space.lookup(word)
        if row < 0:
            raise DPTextError(f"{word!r} is not in the vocabulary of {space.name!r}")
        d = space.pairwise([row])[0]
        d[row] = -1.0
        order = np.argsort(d, kind="stable")
        d[row] = 0.0
        pk = poisson.pmf(np.arange(n + 1), math.log(n))
        pk[0] = 0.0
        pk[n] = 1.0 - pk[1:n].sum()
        probs = np.zeros(n)
        for k in np.flatnonzero(pk > 1e-15):
            cand = order[:k]
            probs[cand] += pk[k] * argmin_probabilities(d[cand], self.b, space.delta_max)
        return list(space.words), probs

    def sample_k(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """k ~ TruncatedPoisson(ln|W|; 1, |W|) (Definition 1)."""
        n = len(self.space)
        y = rng.poisson(math.log(n), count)
        return np.where((y >= 1) & (y < n), y, n)

    def _sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        space, b = self.space, self.b
        c = space.delta_max
        geo = space.geometry()
        m = geo.neighbors.shape[1]
        k = self.sample_k(len(rows), rng)
        out = np.empty(len(rows), dtype=np.int64)
        small = np.flatnonzero(k <= m)
        if len(small):
            kk = k[small]
            width = int(kk.max())
            d = geo.distances[rows[small], :width].astype(np.float64)
            noisy = d + truncated_gumbel(d.shape, b, c, rng)
            noisy[np.arange(width)[None, :] >= kk[:, None]] = np.inf
            out[small] = geo.neighbors[rows[small], noisy.argmin(1)]
        large = np.flatnonzero(k > m)  # rare: more candidates than the kNN table holds
        if len(large):
            from dptext.devices import resolve_device

            on = None if resolve_device(self.device) == "cpu" else "cuda"
            for i, (cand, dist) in zip(large, self._large_candidates(rows[large], k[large], on),
                                       strict=True):
                out[i] = cand[np.argmin(dist + truncated_gumbel(len(cand), b, c, rng))]
        return out

    def _large_candidates(self, rows: np.ndarray, ks: np.ndarray, torch_device: str | None = None):
        """For each row, its ``k`` nearest words (itself first; exact float64 distances, ties
        in row order) and their distances. ``torch_device``: the distances and the stable sort
        in torch on that device (float64, the formula of EmbeddingSpace.pairwise); None: numpy."""
        space = self.space
        device = torch_device
        if device is None:
            for r, kk in zip(rows.tolist(), ks.tolist(), strict=True):
                d = space.pairwise([r])[0]
                d[r] = -1.0
                cand = np.argsort(d, kind="stable")[:kk]
                yield cand, np.maximum(d[cand], 0.0)
            return
        import torch

        dev = torch.device(device)
        if getattr(self, "_device_words", None) is None or self._device_words[0] != device:
            w = torch.from_numpy(space.vectors.astype(np.float64)).to(dev)  # euclidean
            self._device_words = (device, w, (w * w).sum(1))
        _, w, w_sq = self._device_words
        from dptext.embeddings import CANCELLATION

        for r, kk in zip(rows.tolist(), ks.tolist(), strict=True):
            a = w[r : r + 1]
            norms = (a * a).sum(1) + w_sq
            d2 = norms - 2.0 * (a @ w.T)[0]
            close = torch.nonzero(d2 <= CANCELLATION * norms).squeeze(1)  # as pairwise does
            d2[close] = ((w[close] - a) ** 2).sum(1)
            d = torch.sqrt(torch.clamp(d2, min=0.0))
            d[r] = -1.0
            cand = torch.sort(d, stable=True).indices[:kk]
            yield cand.cpu().numpy(), torch.clamp(d[cand], min=0.0).cpu().numpy()


def argmin_probabilities(d: np.ndarray, b: float, c: float) -> np.ndarray:
    """Exact P(argmin_i d_i + g_i = i) for g_i i.i.d. Gumbel(0, b) conditioned on [-c, c].

    P(i) = integral over t in [-c, c] of f(t) * prod_{j != i} S(t + d_i - d_j), with f the
    truncated density and S its survival function; adaptive quadrature split at the kinks of S.
    """
    from scipy.integrate import quad

    lo, hi = math.exp(-math.exp(c / b)), math.exp(-math.exp(-c / b))
    mass = hi - lo

    def survival(x: np.ndarray) -> np.ndarray:
        x = np.clip(x, -c, c)
        return 1.0 - (np.exp(-np.exp(-x / b)) - lo) / mass

    def density(t: float) -> float:
        return math.exp(-t / b - math.exp(-t / b)) / (b * mass)

    d = np.asarray(d, dtype=np.float64)
    out = np.empty(len(d))
    for i in range(len(d)):
        shift = d[i] - np.delete(d, i)
        kinks = np.concatenate([-c - shift, c - shift])
        kinks = sorted(set(kinks[(kinks > -c) & (kinks < c)].tolist()))
        out[i] = quad(lambda t, s=shift: density(t) * np.prod(survival(t + s)), -c, c,
                      points=kinks or None, limit=400, epsabs=1e-13, epsrel=1e-11)[0]
    return out
