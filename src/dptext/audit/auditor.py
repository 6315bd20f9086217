"""The black-box auditor: an empirical lower bound on a mechanism's privacy loss from its own
outputs, next to the epsilon it claims (docs/audit.md).

Sampled mode (any mechanism; only ``privatize_batch`` and the report are used):

1. Neighbouring pairs (x, x') that the guarantee covers (:mod:`dptext.audit.pairs`; for word
   mechanisms one or two of them in capitalised and upper-case form).
2. ``samples`` draws of each input, split in two halves. On the selection half, for each pair,
   the event E is chosen: outputs ranked by their log-ratio estimated on its first quarter (and,
   for word mechanisms, by d(x', y) - d(x, y) in the space), E the prefix of a ranking with the
   largest Clopper-Pearson lower bound on its second quarter (a DP-Sniper-style threshold on an
   estimated likelihood ratio, Bichsel et al. 2021); the ``tested`` pairs with the largest
   margin over their claim on that quarter are kept.
3. On the estimation half (independent of every choice made), each kept pair's lower bound on
   log(P[E|x] / P[E|x']) at level 1 - (1 - confidence) / tested. By the union bound all of them
   hold together with probability >= confidence, so a correct mechanism is reported as a
   VIOLATION with probability at most 1 - confidence.

The claim for a pair: pure DP - the largest document epsilon the reports of its draws state (the
per-word epsilon for a one-word text); metric DP - epsilon * d(x, x').

Exact mode (mechanisms with ``distribution()``): the exact largest log-ratio over all outputs of
each pair; no sampling error, so no confidence level.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy.stats import beta as beta_dist

from dptext.accounting.events import GuaranteeKind
from dptext.audit.pairs import Pair, both_directions, choose_pairs, privatized
from dptext.audit.results import AuditResult, ExactTest, SampledTest, split_draws
from dptext.audit.stats import log_ratio_estimate, log_ratio_lower_bound
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism
from dptext.validation import check_int, check_probability

QUICK_PAIRS, FULL_PAIRS = 8, 32
TESTED = 4
CUTS = 256  # event sizes tried per ranking beyond the first 64


def default_samples(mechanism: Mechanism, *, full: bool) -> int:
    """Draws per input: 20,000 for word mechanisms (a few seconds), 1,000 for LM rewriting."""
    base = 20_000 if isinstance(mechanism, WordMechanism) else 1_000
    return base * (10 if full else 1)


def _seed(seed: int | None) -> int:
    """The seed of the audit's draws (recorded so a VIOLATION can be reproduced)."""
    return int(np.random.SeedSequence().entropy % 2**63) if seed is None else int(seed)


def _prepare(mechanism: Mechanism) -> None:
    if not isinstance(mechanism, Mechanism):
        raise DPTextError(f"expected a dptext Mechanism, got {type(mechanism).__name__}")
    mechanism.privatize_batch([], rng=0)  # fits it if needed (the public way)


def _is_metric(mechanism: Mechanism) -> bool:
    return mechanism.guarantee.kind is GuaranteeKind.METRIC


def _check_pairs(mechanism: Mechanism, pairs: Sequence[Pair]) -> list[Pair]:
    pairs = list(pairs)
    if not pairs:
        raise DPTextError("no pairs to audit")
    for p in pairs:
        if not isinstance(p, Pair):
            raise DPTextError("pairs must be dptext.audit.Pair(x, x_prime, distance)")
        if _is_metric(mechanism) and not (p.distance is not None and p.distance > 0):
            raise DPTextError(f"metric DP: pair {p.x!r}, {p.x_prime!r} needs a distance > 0")
    return pairs


def draw(mechanism: Mechanism, text: str, n: int, gen: np.random.Generator,
         chunk: int = 50_000) -> tuple[list[str], float]:
    """``n`` outputs of ``text`` and the largest document epsilon their reports state."""
    outs: list[str] = []
    epsilon = 0.0
    for start in range(0, n, chunk):
        results = mechanism.privatize_batch([text] * min(chunk, n - start), rng=gen)
        outs.extend(r.text for r in results)
        # the document epsilon of each distinct set of events (most draws share one)
        kinds = {tuple(r.report.events): r.report for r in results}
        epsilon = max([epsilon] + [rep.epsilon for rep in kinds.values()])
    return outs, epsilon


def _lower_bounds(k1: np.ndarray, n1: int, k2: np.ndarray, n2: int, a: float) -> np.ndarray:
    """Vectorized :func:`log_ratio_lower_bound`."""
    lo = np.where(k1 > 0, beta_dist.ppf(a / 2.0, np.maximum(k1, 1), n1 - k1 + 1), 0.0)
    hi = np.where(k2 >= n2, 1.0, beta_dist.ppf(1.0 - a / 2.0, k2 + 1, np.maximum(n2 - k2, 1)))
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(hi)


def choose_event(rank_x: Counter, rank_x_prime: Counter, cut_x: Counter, n1: int,
                 cut_x_prime: Counter, n2: int, level: float,
                 score=None) -> tuple[tuple[str, ...], float]:
    """The event (a set of outputs) for one pair, from the selection half only.

    Outputs are ranked by their estimated log-ratio on the first quarter of the draws
    (``rank_*``) - and, if ``score`` (outputs -> numbers) is given, also by it - and the event is
    the prefix of a ranking with the largest lower bound on the second quarter (``cut_*``, of
    ``n1`` and ``n2`` draws). Ranking and cutting on separate draws keeps the choice honest: the
    outputs seen once under x and never under x' look perfect on the draws that ranked them and
    ordinary on others.
    """
    outputs = list(rank_x | rank_x_prime | cut_x)
    r1 = np.array([rank_x.get(o, 0) for o in outputs])
    r2 = np.array([rank_x_prime.get(o, 0) for o in outputs])
    k1 = np.array([cut_x.get(o, 0) for o in outputs])
    k2 = np.array([cut_x_prime.get(o, 0) for o in outputs])
    rankings = [np.log(r1 + 0.5) - np.log(r2 + 0.5)]
    if score is not None:
        rankings.append(score(outputs))
    # prefix lengths tried: all of the first 64, then a geometric grid (the bound is smooth in
    # the length once the event holds many outputs)
    cuts = np.unique(np.concatenate([np.arange(1, min(64, len(outputs)) + 1), np.geomspace(
        1, len(outputs), CUTS).round().astype(np.int64)])) - 1
    best_event, best_bound = (), -np.inf
    for key in rankings:
        order = np.argsort(-key, kind="stable")
        bounds = _lower_bounds(np.cumsum(k1[order])[cuts], n1, np.cumsum(k2[order])[cuts], n2,
                               level)
        i = int(np.argmax(bounds))
        if bounds[i] > best_bound:
            size = int(cuts[i]) + 1
            best_event, best_bound = tuple(outputs[j] for j in order[:size]), float(bounds[i])
    return best_event, best_bound


def geometry_score(mechanism: Mechanism, pair: Pair):
    """For a word mechanism: output y -> d(x', y) - d(x, y) in its space (a public likelihood-
    ratio proxy: outputs nearer x than x' first); None for other mechanisms."""
    space = getattr(mechanism, "space", None)
    if not isinstance(mechanism, WordMechanism) or space is None:
        return None
    rx, rxp = space.lookup(pair.x), space.lookup(pair.x_prime)
    if rx < 0 or rxp < 0:
        return None

    def score(outputs: list[str]) -> np.ndarray:
        rows = np.array([space.lookup(o) for o in outputs], dtype=np.int64)
        out = np.full(len(outputs), -np.inf)
        ok = rows >= 0
        if ok.any():
            d = space.pairwise([rx, rxp], rows[ok])
            out[ok] = d[1] - d[0]
        return out

    return score


def audit(mechanism: Mechanism, *, samples: int | None = None, confidence: float = 0.99,
          pairs: Sequence[Pair] | None = None, full: bool = False, tested: int = TESTED,
          seed: int | None = None) -> AuditResult:
    """Audit ``mechanism``'s claimed epsilon from its outputs (see the module docstring).

    ``pairs``: neighbouring inputs to try (default: chosen from the mechanism's public
    attributes; ``full`` tries four times as many and draws ten times as many samples).
    ``seed``: the draws' seed (default: OS entropy, recorded in the result).
    """
    started = time.perf_counter()
    _prepare(mechanism)
    confidence = check_probability(confidence, "confidence")
    if not 0.0 < confidence < 1.0:
        raise DPTextError(f"confidence must lie in (0, 1), got {confidence}")
    samples = default_samples(mechanism, full=full) if samples is None else check_int(
        samples, "samples", minimum=20)
    tested = check_int(tested, "tested", minimum=1)
    seed = _seed(seed)
    gen = np.random.default_rng(seed)
    if pairs is None:
        pairs = choose_pairs(mechanism, count=FULL_PAIRS if full else QUICK_PAIRS, rng=gen,
                             cased=True)
    pairs = _check_pairs(mechanism, pairs)
    metric = _is_metric(mechanism)
    g = mechanism.guarantee

    quarter, n_cut, n_b = split_draws(samples)
    half = quarter + n_cut
    draws: dict[str, tuple[Counter, Counter, Counter, float]] = {}
    for text in dict.fromkeys(t for p in pairs for t in (p.x, p.x_prime)):
        outs, eps = draw(mechanism, text, samples, gen)
        draws[text] = (Counter(outs[:quarter]), Counter(outs[quarter:half]),
                       Counter(outs[half:]), eps)

    m = min(tested, len(pairs))
    level = (1.0 - confidence) / m
    screened = []
    for p in pairs:
        dx, dxp = draws[p.x], draws[p.x_prime]
        claim = g.epsilon * p.distance if metric else max(dx[3], dxp[3])
        event, bound_a = choose_event(dx[0], dxp[0], dx[1], n_cut, dxp[1], n_cut, level,
                                      geometry_score(mechanism, p))
        screened.append((bound_a - claim, p, claim, event))
    screened.sort(key=lambda s: -s[0] / (s[1].distance or 1.0))
    tests = []
    for _, p, claim, event in screened[:m]:
        bx, bxp = draws[p.x][2], draws[p.x_prime][2]
        k1, k2 = sum(bx.get(o, 0) for o in event), sum(bxp.get(o, 0) for o in event)
        tests.append(SampledTest(
            p, claim, event, k1, n_b, k2, n_b,
            lower_bound=log_ratio_lower_bound(k1, n_b, k2, n_b, level),
            estimate=log_ratio_estimate(k1, n_b, k2, n_b), level=level))
    return AuditResult(
        mechanism=mechanism.name, settings=repr(mechanism), guarantee=g.describe(),
        metric=metric, epsilon=g.epsilon, mode="sampled", samples=samples,
        confidence=confidence, pairs_tried=len(pairs), tests=tests, seed=seed,
        seconds=time.perf_counter() - started)


def _distribution(mechanism: Mechanism, word: str) -> dict[str, float]:
    try:
        words, probs = mechanism.distribution(word)
    except (NotImplementedError, AttributeError):
        raise DPTextError(
            f"{mechanism.name} has no exact output distribution: audit it by sampling"
        ) from None
    out: dict[str, float] = {}
    for w, p in zip(words, np.asarray(probs, dtype=np.float64).tolist(), strict=True):
        out[w] = out.get(w, 0.0) + p
    return out


def _exact_pairs(mechanism: Mechanism, full: bool, gen: np.random.Generator) -> list[Pair]:
    """CusText: every ordered pair of privatized words in a few output sets; others: the pairs
    of the sampled mode."""
    from dptext.audit.pairs import custext_pairs
    from dptext.mechanisms.custext import CusText

    count = FULL_PAIRS if full else QUICK_PAIRS
    if not isinstance(mechanism, CusText):
        return choose_pairs(mechanism, count=count, rng=gen)
    pairs = []
    for p in custext_pairs(mechanism, count // 2, gen):
        members = mechanism.output_set(p.x)
        words = [w for w, ok in zip(members, privatized(mechanism, members), strict=True) if ok]
        pairs += [Pair(a, b, None, "two words of an output set")
                  for i, a in enumerate(words) for b in words[i + 1:]]
    return both_directions(pairs)


def audit_exact(mechanism: Mechanism, *, pairs: Sequence[Pair] | None = None,
                full: bool = False, seed: int | None = None) -> AuditResult:
    """The exact largest log P[M(x) = y] / P[M(x') = y] over outputs y, for each pair, from
    ``distribution()`` (mechanisms that have it). ``seed`` only picks the default pairs."""
    started = time.perf_counter()
    _prepare(mechanism)
    seed = _seed(seed)
    gen = np.random.default_rng(seed)
    pairs = _check_pairs(mechanism, _exact_pairs(mechanism, full, gen) if pairs is None
                         else pairs)
    metric = _is_metric(mechanism)
    g = mechanism.guarantee
    cache: dict[str, dict[str, float]] = {}
    tests = []
    for p in pairs:
        for w in (p.x, p.x_prime):
            if w not in cache:
                cache[w] = _distribution(mechanism, w)
        px, pxp = cache[p.x], cache[p.x_prime]
        best, best_loss = None, -np.inf
        for y, a in px.items():
            if a <= 0.0:
                continue
            b = pxp.get(y, 0.0)
            loss = np.inf if b <= 0.0 else np.log(a) - np.log(b)
            if loss > best_loss:
                best, best_loss = y, loss
        if best is None:
            continue
        claim = g.epsilon * p.distance if metric else g.epsilon
        tests.append(ExactTest(p, claim, best, px[best], pxp.get(best, 0.0)))
    return AuditResult(
        mechanism=mechanism.name, settings=repr(mechanism), guarantee=g.describe(),
        metric=metric, epsilon=g.epsilon, mode="exact", samples=0, confidence=1.0,
        pairs_tried=len(pairs), tests=tests, seed=seed, seconds=time.perf_counter() - started)
