"""Neighbouring inputs the claimed guarantee covers, chosen from public attributes only.

* CusText (pure DP among the words of one output set): in each of a few output sets (found with
  the public ``output_set``), the two words farthest apart. For y = x the exponential mechanism's
  weight ratio is then the largest it can be (u(x, x) = 1, u(x', x) = 0), so the pair is the
  best single candidate for a violation a wrong temperature would cause.
* Metric word mechanisms (epsilon*d): the claim grows with d(x, x'), the loss of a violation often
  does not, so close pairs matter most: the most isolated words with their nearest neighbour (the
  normaliser ratio Z(x')/Z(x) is largest there), frequent words with their nearest neighbour,
  and a few far pairs. The distance is the space's (the metric the guarantee names).
* Language-model mechanisms (pure DP between any two texts): one-word texts that differ in the
  word, so a text's whole output is the event space and the claim is the per-word epsilon.

* Case: a word mechanism may take another branch for a capitalised or upper-case word than for
  its lower-case form (the vocabulary is lower case). In the sampled audit the last pair is
  replaced by its capitalised form and, with four pairs or more, the one before by its upper-case
  form (:func:`case_variants`), with the same distance: a mechanism that leaks only capitalised
  words is then seen (tests/audit/test_audit_planted.py).

Both directions of each pair are tried. Only inputs whose report says the word was privatized
under the mechanism's guarantee are used (SanText+ keeps non-sensitive words; CusText+ keeps
stopwords): the guarantee says nothing about the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.accounting.events import GuaranteeKind
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism

# Public words for the LM mechanisms' one-word texts (any text is a valid input).
LM_TEXTS = ("good", "bad", "London", "Paris", "doctor", "teacher", "Alice", "Bob")


@dataclass(frozen=True)
class Pair:
    """Two neighbouring inputs; ``distance`` is d(x, x') for a metric guarantee (else None)."""

    x: str
    x_prime: str
    distance: float | None = None
    why: str = ""

    def reversed(self) -> Pair:
        return Pair(self.x_prime, self.x, self.distance, self.why)


def both_directions(pairs: Sequence[Pair]) -> list[Pair]:
    return [q for p in pairs for q in (p, p.reversed())]


def privatized(mechanism: Mechanism, words: Sequence[str]) -> list[bool]:
    """Whether each one-word text is privatized under the mechanism's guarantee (its report)."""
    results = mechanism.privatize_batch(list(words), rng=0)
    return [r.report.privatized_by_reason.get("mechanism", 0) == r.report.tokens_total == 1
            for r in results]


def _cased(mechanism: Mechanism, pairs: list[Pair], cased: bool) -> list[Pair]:
    return case_variants(mechanism, pairs) if cased else pairs


def choose_pairs(mechanism: Mechanism, *, count: int, rng: np.random.Generator,
                 cased: bool = False) -> list[Pair]:
    """About ``count`` ordered pairs (both directions of count/2 pairs) for ``mechanism``;
    ``cased``: with case variants (:func:`case_variants`; the sampled audit)."""
    from dptext.mechanisms.custext import CusText
    from dptext.mechanisms.dpmlm import LMMechanism

    half = max(1, count // 2)
    if isinstance(mechanism, CusText):
        return both_directions(_cased(mechanism, custext_pairs(mechanism, half, rng), cased))
    if isinstance(mechanism, WordMechanism) and mechanism.guarantee.kind is GuaranteeKind.METRIC:
        return both_directions(_cased(mechanism, metric_pairs(mechanism, half, rng), cased))
    if isinstance(mechanism, LMMechanism):
        words = list(LM_TEXTS)
        pairs = [Pair(words[2 * i], words[2 * i + 1], None, "one-word texts")
                 for i in range(min(half, len(words) // 2))]
        return both_directions(pairs)
    raise DPTextError(
        f"no default neighbouring pairs for mechanism {getattr(mechanism, 'name', mechanism)!r}: "
        "pass pairs=[Pair(x, x_prime, distance), ...]"
    )


def case_variants(mechanism: Mechanism, pairs: Sequence[Pair]) -> list[Pair]:
    """``pairs`` (unordered, one direction each) with the last replaced by its capitalised form
    and, from four pairs on, the one before by its upper-case form, where the mechanism
    privatizes those forms under its guarantee and they differ from the pair; with a single
    pair the capitalised form is added instead. LM pairs are left as they are (their texts mix
    cases already)."""
    pairs = list(pairs)
    if not isinstance(mechanism, WordMechanism) or not pairs:
        return pairs
    slots = [(len(pairs) - 1, str.capitalize, "capitalised")]
    if len(pairs) >= 4:
        slots.append((len(pairs) - 2, str.upper, "upper case"))
    out = list(pairs)
    for i, form, name in slots:
        p = pairs[i]
        q = Pair(form(p.x), form(p.x_prime), p.distance, f"{p.why}, {name}")
        if (q.x, q.x_prime) == (p.x, p.x_prime) or not all(privatized(mechanism,
                                                                   [q.x, q.x_prime])):
            continue
        if len(pairs) == 1:
            out.append(q)
        else:
            out[i] = q
    return out


def _candidate_rows(mechanism: WordMechanism, n: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``n`` privatized vocabulary rows: half among the 2,000 most frequent, half random."""
    space = mechanism.space
    top = min(len(space), 2000)
    rows = np.unique(np.concatenate([rng.choice(top, min(top, n), replace=False),
                                     rng.choice(len(space), min(len(space), n), replace=False)]))
    rng.shuffle(rows)
    ok = privatized(mechanism, [space.words[r] for r in rows])
    return rows[np.asarray(ok, dtype=bool)]


def custext_pairs(mechanism, n_sets: int, rng: np.random.Generator) -> list[Pair]:
    """The farthest two privatized words of each of ``n_sets`` CusText output sets."""
    space = mechanism.space
    pairs, seen = [], set()
    for row in _candidate_rows(mechanism, 8 * n_sets, rng):
        members = tuple(mechanism.output_set(space.words[row]))
        if members in seen or len(members) < 2:
            continue
        seen.add(members)
        words = [w for w, ok in zip(members, privatized(mechanism, members), strict=True) if ok]
        if len(words) < 2:
            continue
        idx = np.array([space.lookup(w) for w in words])
        d = space.pairwise(idx, idx)
        i, j = np.unravel_index(int(np.argmax(d)), d.shape)
        pairs.append(Pair(words[i], words[j], None, "farthest pair of an output set"))
        if len(pairs) == n_sets:
            break
    if not pairs:
        raise DPTextError(f"{mechanism.name}: no output set has two privatized words")
    return pairs


def metric_pairs(mechanism: WordMechanism, n: int, rng: np.random.Generator) -> list[Pair]:
    """Isolated words with their nearest neighbour, frequent words with theirs, far pairs."""
    space = mechanism.space
    geo = space.geometry()
    rows = _candidate_rows(mechanism, 4 * n + 8, rng)
    if len(rows) < 2:
        raise DPTextError(f"{mechanism.name}: fewer than two privatized words to pair")
    isolated = np.argsort(-geo.distances[:, 1], kind="stable")
    n_iso, n_near = max(1, n // 2), max(1, n - n // 2 - max(1, n // 4))
    chosen: list[tuple[int, int, str]] = []

    def nearest_privatized(r: int) -> int | None:
        cand = [int(c) for c in geo.neighbors[r, 1:9]]
        ok = privatized(mechanism, [space.words[c] for c in cand])
        return next((c for c, good in zip(cand, ok, strict=True) if good), None)

    iso_ok = privatized(mechanism, [space.words[r] for r in isolated[: 4 * n_iso]])
    for r in isolated[: 4 * n_iso][np.asarray(iso_ok, dtype=bool)][:n_iso]:
        c = nearest_privatized(int(r))
        if c is not None:
            chosen.append((int(r), c, "isolated word and its nearest neighbour"))
    for r in rows[:n_near]:
        c = nearest_privatized(int(r))
        if c is not None:
            chosen.append((int(r), c, "word and its nearest neighbour"))
    far = rows[n_near:]
    for a, b in zip(far[0::2], far[1::2], strict=False):
        if len(chosen) >= n:
            break
        chosen.append((int(a), int(b), "two random words"))
    pairs, seen = [], set()
    for a, b, why in chosen[:n]:
        key = (min(a, b), max(a, b))
        if a == b or key in seen:
            continue
        seen.add(key)
        d = float(space.pairwise([a], [b])[0, 0])
        pairs.append(Pair(space.words[a], space.words[b], d, why))
    return pairs
