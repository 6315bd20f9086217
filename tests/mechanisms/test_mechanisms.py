"""Statistical and exact tests of the word-level mechanisms on small synthetic spaces.

Every statistical check uses a fixed seed and a tolerance derived from the sample size:
chi-square / KS p-values > 1e-4, or |freq - p| <= 5 * sqrt(p (1 - p) / N).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad

import dptext
from dptext import DPTextError, EmbeddingSpace
from dptext.mechanisms import truncated_gumbel as tg
from dptext.text import split_words

P_MIN = 1e-4  # smallest accepted p-value of a goodness-of-fit test


# ----------------------------------------------------------------- helpers
def make_space(n, dim, seed, *, metric="euclidean", words=None):
    rng = np.random.default_rng(seed)
    words = list(words or []) + [f"tok{i:03d}" for i in range(n - len(words or []))]
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return EmbeddingSpace(words, vectors, metric=metric, name=f"synthetic-{seed}")


def exact_distances(space):
    x = space.vectors.astype(np.float64)
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def chi2_pvalue(counts, probs):
    """Chi-square goodness of fit; cells with expected count < 5 are pooled into one."""
    counts, probs = np.asarray(counts, dtype=np.float64), np.asarray(probs, dtype=np.float64)
    n = counts.sum()
    expected = probs / probs.sum() * n
    small = expected < 5
    obs, exp = counts[~small], expected[~small]
    if small.any():
        obs, exp = np.append(obs, counts[small].sum()), np.append(exp, expected[small].sum())
    if len(obs) < 2:
        raise ValueError("a chi-square test needs at least 2 cells with expected count >= 5 "
                         "after pooling: draw more samples")
    return float(stats.chisquare(obs, exp).pvalue)


def draw_counts(mech, word, n_draws, seed):
    """Counts over the whole vocabulary of ``n_draws`` vectorized draws for ``word``."""
    row = mech.space.lookup(word)
    out = mech._sample(np.full(n_draws, row, dtype=np.int64), np.random.default_rng(seed))
    return np.bincount(out, minlength=len(mech.space))


def assert_matches_distribution(mech, word, n_draws, seed):
    words, probs = mech.distribution(word)
    counts = draw_counts(mech, word, n_draws, seed)
    rows = np.array([mech.space.lookup(w) for w in words])
    assert counts.sum() - counts[rows].sum() == 0, "draw outside the distribution's support"
    p = chi2_pvalue(counts[rows], probs)
    assert p > P_MIN, f"{mech.name} {word}: chi-square p={p:.2e}"


def binomial_ok(hits, n, p):
    return abs(hits / n - p) <= 5 * math.sqrt(p * (1 - p) / n)


# ----------------------------------------------------------------- CusText
def reference_output_sets(space, order, k):
    """CusText f_map written out from the paper's description, with exact distances."""
    x = space.vectors.astype(np.float64)
    if space.metric == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        dist = 1.0 - x @ x.T
    else:
        dist = exact_distances(space)
    assigned = np.zeros(len(space), dtype=bool)
    sets = []
    for leader in order:
        if assigned[leader]:
            continue
        free = np.flatnonzero(~assigned)
        d = dist[leader, free].copy()
        d[free == leader] = -1.0
        chosen = free[np.argsort(d, kind="stable")[:k]]
        assigned[chosen] = True
        sets.append([space.words[i] for i in chosen])
    return sets


@pytest.fixture(scope="module")
def freq_space():
    space = make_space(203, 8, seed=11)
    freqs = np.random.default_rng(12).random(len(space))
    return space, {w: float(f) for w, f in zip(space.words, freqs, strict=True)}


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("k", [20, 70])  # 70 > the 64-column kNN table: the full-row path
def test_custext_output_sets(freq_space, metric, k):
    base, freqs = freq_space
    space = EmbeddingSpace(base.words, base.vectors, metric=metric, name=f"sets-{metric}")
    m = dptext.mechanism("custext", space=space, epsilon=2, k=k, frequencies=freqs)
    m.fit(cache=False)
    order = np.argsort(-np.array([freqs[w] for w in space.words]), kind="stable")
    expected = reference_output_sets(space, order, k)
    # the most frequent word's set is its k nearest words (itself included)
    assert set(m.output_set(space.words[order[0]])) == set(expected[0])
    got = {frozenset(m.output_set(w)) for w in space.words}
    assert got == {frozenset(s) for s in expected}
    # disjoint, covering, size k except possibly one smaller set
    assert sum(len(s) for s in got) == len(space)
    assert set().union(*got) == set(space.words)
    sizes = sorted(len(s) for s in got)
    assert all(s == k for s in sizes[1:]) and 1 <= sizes[0] <= k
    assert all(w in m.output_set(w) for w in space.words)


def custext_reference_probs(space, members, x, epsilon, similarity):
    v = space.vectors.astype(np.float64)
    rows = [space.lookup(w) for w in members]
    if similarity == "cosine":
        u = v[rows] / np.linalg.norm(v[rows], axis=1, keepdims=True)
        sim = u @ u[members.index(space.words[x])]
    else:
        sim = -np.linalg.norm(v[rows] - v[x], axis=1)
    span = sim.max() - sim.min()
    score = (sim - sim.min()) / span if span > 0 else np.ones_like(sim)
    w = np.exp(epsilon * score / 2)
    return w / w.sum()


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
def test_custext_distribution_and_pure_dp(freq_space, similarity):
    space, freqs = freq_space
    eps = 3.0
    m = dptext.mechanism("custext", space=space, epsilon=eps, k=20, similarity=similarity,
                         frequencies=freqs).fit(cache=False)
    seen = set()
    worst = 0.0
    for word in space.words:
        if word in seen:
            continue
        members = m.output_set(word)
        seen.update(members)
        table = []
        for x in members:
            words, probs = m.distribution(x)
            assert words == members
            assert np.all(np.isfinite(probs)) and np.all(probs > 0)
            assert probs.sum() == pytest.approx(1.0, abs=1e-12)
            ref = custext_reference_probs(space, members, space.lookup(x), eps, similarity)
            np.testing.assert_allclose(probs, ref, rtol=1e-9, atol=1e-12)
            table.append(probs)
        table = np.log(np.array(table))
        # all pairs x, x' of the set: max_y ln p(y|x) - ln p(y|x')
        ratio = (table[:, None, :] - table[None, :, :]).max()
        assert ratio <= eps + 1e-9
        worst = max(worst, ratio)
    assert worst > eps / 2  # the bound is not met by a degenerate (uniform) mechanism


def test_custext_sampling_matches_distribution(freq_space):
    space, freqs = freq_space
    m = dptext.mechanism("custext", space=space, epsilon=4, k=20, frequencies=freqs)
    m.fit(cache=False)
    sizes = {w: len(m.output_set(w)) for w in space.words}
    small_set = min(sizes, key=sizes.get)  # a member of the last, smaller set
    leader = max(freqs, key=freqs.get)
    for i, word in enumerate([leader, space.words[57], small_set]):
        assert_matches_distribution(m, word, 200_000, seed=100 + i)


def test_custext_ties_give_valid_distribution():
    # collinear points (power-of-two scales): every cosine similarity in the set ties exactly
    direction = np.array([0.3, -1.2, 0.7, 2.0], dtype=np.float32)
    vectors = np.stack([direction * s for s in (0.5, 1.0, 2.0, 4.0)])
    space = EmbeddingSpace(["aa", "bb", "cc", "dd"], vectors, name="collinear")
    m = dptext.mechanism("custext", space=space, epsilon=2, k=4, similarity="cosine",
                         frequencies={"aa": 1.0}).fit(cache=False)
    for w in space.words:
        words, probs = m.distribution(w)
        assert sorted(words) == sorted(space.words)
        np.testing.assert_allclose(probs, 0.25, rtol=1e-12)
    counts = draw_counts(m, "bb", 40_000, seed=3)
    assert chi2_pvalue(counts, np.full(4, 0.25)) > P_MIN
    # k = 1: every word is its own set; probability 1, no NaN, output = input
    for similarity in ("euclidean", "cosine"):
        m1 = dptext.mechanism("custext", space=space, epsilon=2, k=1,
                              similarity=similarity).fit(cache=False)
        for w in space.words:
            words, probs = m1.distribution(w)
            assert words == [w] and probs.tolist() == [1.0]
        rows = np.arange(4).repeat(100)
        np.testing.assert_array_equal(m1._sample(rows, np.random.default_rng(0)), rows)


def test_custext_plus_keeps_stopwords():
    space = make_space(60, 8, seed=5, words=["the", "and", "of", "alpha", "beta", "gamma"])
    text = "The alpha and the beta of gamma."
    plus = dptext.mechanism("custext+", space=space, epsilon=1, k=10).fit(cache=False)
    r = plus.privatize(text, rng=0)
    out_words = split_words(r.text)[1::2]
    assert [out_words[i] for i in (0, 2, 3, 5)] == ["The", "and", "the", "of"]
    assert r.report.kept == {"stopword": 4, "punctuation": 1}
    assert r.report.privatized_by_reason == {"mechanism": 3}
    plain = dptext.mechanism("custext", space=space, epsilon=1, k=10).fit(cache=False)
    r = plain.privatize(text, rng=0)
    assert r.report.kept == {"punctuation": 1}
    assert r.report.privatized_by_reason == {"mechanism": 7}


# ------------------------------------------------------------------ SanText
@pytest.fixture(scope="module")
def san_space():
    return make_space(200, 8, seed=21)


def test_santext_distribution_formula(san_space):
    d = exact_distances(san_space)
    for eps in (0.5, 3.0):
        m = dptext.mechanism("santext", space=san_space, epsilon=eps).fit(cache=False)
        for x in (0, 77, 199):
            words, probs = m.distribution(san_space.words[x])
            assert words == san_space.words
            ref = np.exp(-eps * d[x] / 2)
            np.testing.assert_allclose(probs, ref / ref.sum(), rtol=1e-9, atol=0)


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_santext_sampling_matches_distribution(san_space, eps):
    m = dptext.mechanism("santext", space=san_space, epsilon=eps).fit(cache=False)
    nearest = np.argsort(exact_distances(san_space), axis=1)[:, :64]
    for i, x in enumerate((3, 120)):
        word = san_space.words[x]
        _, probs = m.distribution(word)
        near_mass = probs[nearest[x]].sum()
        if eps == 0.5:
            assert near_mass < 0.6  # most draws take the far (rejection) path
        if eps == 6.0:
            assert near_mass > 0.95  # the near table carries the distribution
        assert_matches_distribution(m, word, 200_000, seed=200 + i)


def test_santext_metric_dp_all_pairs():
    space = make_space(40, 8, seed=31)
    d = exact_distances(space)
    eps = 1.5
    m = dptext.mechanism("santext", space=space, epsilon=eps).fit(cache=False)
    logp = np.log(np.array([m.distribution(w)[1] for w in space.words]))
    ratio = (logp[:, None, :] - logp[None, :, :]).max(-1)
    off = ~np.eye(len(space), dtype=bool)
    assert np.all(ratio[off] <= eps * d[off] + 1e-9)
    assert (ratio[off] / (eps * d[off])).max() > 0.5  # not vacuous


def test_santext_plus(san_space):
    import wordfreq

    p = 0.3
    m = dptext.mechanism("santext+", space=san_space, epsilon=2, p=p).fit(cache=False)
    # V_s: the 90% least frequent words by public frequency
    freq = np.array([wordfreq.word_frequency(w, "en") for w in san_space.words])
    order = np.argsort(-freq, kind="stable")
    n_s = round(0.9 * len(san_space))
    sensitive = np.zeros(len(san_space), dtype=bool)
    sensitive[order[len(san_space) - n_s:]] = True
    s_words = [w for w, s in zip(san_space.words, sensitive, strict=True) if s]
    assert m.distribution(san_space.words[0])[0][:n_s] == s_words
    public = np.flatnonzero(~sensitive)
    secret = np.flatnonzero(sensitive)
    # outputs of sensitive words are always sensitive
    out = m._sample(np.repeat(secret, 500), np.random.default_rng(7))
    assert sensitive[out].all()
    # non-sensitive words: kept w.p. 1 - p, otherwise a draw from V_s
    n_draws = 20_000
    for x in public[:5]:
        out = m._sample(np.full(n_draws, x), np.random.default_rng(int(x)))
        kept = int((out == x).sum())
        assert binomial_ok(kept, n_draws, 1 - p)
        assert sensitive[out[out != x]].all()
    # full distributions, including words whose kNN rows mix both kinds
    for i, x in enumerate([public[0], secret[0], secret[-1]]):
        assert_matches_distribution(m, san_space.words[x], 200_000, seed=300 + i)
    # report: non-sensitive tokens kept
    text = " ".join(san_space.words[i] for i in [*public[:3], *secret[:4]]) + "."
    r = m.privatize(text, rng=1)
    out = r.text[:-1].split()[:3]
    verbatim = sum(w.lower() == san_space.words[i] for w, i in zip(out, public[:3], strict=True))
    resampled = r.report.resampled_unprotected.get("non_sensitive_resampled", 0)
    assert r.report.kept == {"punctuation": 1, **({"non_sensitive": verbatim} if verbatim else {})}
    assert verbatim + resampled == 3  # what really happened: kept verbatim or redrawn
    assert r.report.privatized_by_reason == {"mechanism": 4}
    assert r.report.tokens_total == 8


# ---------------------------------------------------------- Truncated Gumbel
def gumbel_argmin_probs(d, b, c):
    """P(argmin_i d_i + g_i = i) with g_i i.i.d. Gumbel(0, b) conditioned on [-c, c]."""
    lo, hi = math.exp(-math.exp(c / b)), math.exp(-math.exp(-c / b))

    def cdf(x):
        x = np.clip(x, -c, c)
        return (np.exp(-np.exp(-x / b)) - lo) / (hi - lo)

    def pdf(x):
        return math.exp(-x / b - math.exp(-x / b)) / (b * (hi - lo))

    d = np.asarray(d, dtype=np.float64)
    out = np.empty(len(d))
    for i in range(len(d)):
        others = np.delete(d, i)
        kinks = np.concatenate([others - d[i] - c, others - d[i] + c])
        kinks = sorted(set(kinks[(kinks > -c) & (kinks < c)].tolist()))
        val, _ = quad(lambda t, i=i, o=others: pdf(t) * np.prod(1 - cdf(t + d[i] - o)),
                      -c, c, points=kinks or None, limit=400, epsabs=1e-13, epsrel=1e-11)
        out[i] = val
    return out


def gumbel_mechanism(space, rule="tight", factor=1.5, **params):
    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    eps = factor * tg.minimum_epsilon(**geo, rule=rule)
    return dptext.mechanism("gumbel", space=space, epsilon=eps, b=rule, **params).fit(cache=False)


def test_gumbel_sample_k_is_truncated_poisson():
    space = make_space(6, 4, seed=41)
    m = gumbel_mechanism(space)
    n_draws = 200_000
    k = m.sample_k(n_draws, np.random.default_rng(1))
    lam = math.log(6)
    pmf = stats.poisson.pmf(np.arange(1, 6), lam)
    probs = np.append(pmf, 1 - pmf.sum())
    assert probs[-1] > 0.15  # k = |W| has visible mass (Pr(Y=0) = 1/6 goes there)
    assert k.min() >= 1 and k.max() <= 6
    counts = np.bincount(k, minlength=7)[1:]
    assert chi2_pvalue(counts, probs) > P_MIN


@pytest.mark.parametrize(("b", "c"), [(1.3, 0.8), (0.5, 2.0), (2.0, 20.0)])
def test_truncated_gumbel_is_conditioned_gumbel(b, c):
    g = tg.truncated_gumbel(100_000, b, c, np.random.default_rng(5))
    assert g.min() >= -c and g.max() <= c
    lo, hi = math.exp(-math.exp(c / b)), math.exp(-math.exp(-c / b))

    def cdf(x):
        return (np.exp(-np.exp(-np.clip(x, -c, c) / b)) - lo) / (hi - lo)

    assert stats.kstest(g, cdf).pvalue > P_MIN


def test_gumbel_noise_untruncated_gumbel_max():
    # truncation effectively off: Gumbel(0, b) itself (mean b * Euler gamma) ...
    b, n_draws = 0.7, 200_000
    d = np.array([0.0, 0.3, 0.5, 1.2, 2.0])
    g = tg.truncated_gumbel((n_draws, len(d)), b, 1e6, np.random.default_rng(9))
    assert stats.kstest(g[:, 0], stats.gumbel_r(scale=b).cdf).pvalue > P_MIN
    # ... so the Gumbel-max trick holds: argmax(-d + g) ~ softmax(-d / b)
    soft = np.exp(-d / b) / np.exp(-d / b).sum()
    counts = np.bincount((g - d).argmax(1), minlength=len(d))
    assert chi2_pvalue(counts, soft) > P_MIN
    # Algorithm 1 takes argmin(d + g) with the same noise: its law is the integral below,
    # which is not softmax(-d / b) (Gumbel noise is skewed)
    counts = np.bincount((d + g).argmin(1), minlength=len(d))
    exact = gumbel_argmin_probs(d, b, 50 * b)
    assert exact.sum() == pytest.approx(1.0, abs=1e-8)
    assert chi2_pvalue(counts, exact) > P_MIN
    assert chi2_pvalue(counts, soft) < P_MIN


def test_gumbel_mechanism_output_law():
    """End to end: mixture over k ~ TruncatedPoisson of Algorithm 1 on the k nearest words."""
    space = make_space(6, 4, seed=41)
    m = gumbel_mechanism(space, rule="paper")
    b, c = m.b, space.delta_max
    dist = exact_distances(space)
    lam, n = math.log(6), 6
    pk = np.append(stats.poisson.pmf(np.arange(1, n), lam), 0.0)
    pk[-1] = 1 - pk.sum()
    for x in (0, 4):
        order = np.argsort(dist[x], kind="stable")
        assert order[0] == x
        law = np.zeros(n)
        for k in range(1, n + 1):
            law[order[:k]] += pk[k - 1] * gumbel_argmin_probs(dist[x, order[:k]], b, c)
        assert law.sum() == pytest.approx(1.0, abs=1e-8)
        counts = draw_counts(m, space.words[x], 200_000, seed=60 + x)
        assert chi2_pvalue(counts, law) > P_MIN


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 10, 70])  # 70 > the 64-column kNN table
def test_gumbel_fixed_k_candidates(monkeypatch, k):
    space = make_space(70, 4, seed=43)
    m = gumbel_mechanism(space)
    monkeypatch.setattr(m, "sample_k", lambda count, rng: np.full(count, k))
    x = 5
    n_draws = 200_000 if k <= 64 else 20_000
    counts = draw_counts(m, space.words[x], n_draws, seed=k)
    if k == 1:  # the word itself is candidate 0
        assert counts[x] == n_draws
        return
    dist = exact_distances(space)[x]
    order = np.argsort(dist, kind="stable")[:k]
    assert order[0] == x
    law = np.zeros(len(space))
    law[order] = gumbel_argmin_probs(dist[order], m.b, space.delta_max)
    assert counts[law == 0].sum() == 0
    assert chi2_pvalue(counts[order], law[order]) > P_MIN


@pytest.mark.parametrize(("vocab_size", "delta_max", "delta_min"),
                         [(6, 5.4, 1.0), (1000, 8.0, 0.3), (400_000, 12.0, 0.05)])
def test_gumbel_scale_rules(vocab_size, delta_max, delta_min):
    geo = dict(vocab_size=vocab_size, delta_max=delta_max, delta_min=delta_min)
    floor = tg.minimum_epsilon(**geo, rule="tight")
    k1 = 2 * (1 + math.log(vocab_size)) / delta_min
    assert floor == pytest.approx(k1 + 1 / delta_min)
    least_paper = tg.minimum_epsilon(**geo, rule="paper")
    assert least_paper >= floor
    for eps in least_paper * np.array([1.001, 1.1, 2.0, 10.0]):
        paper, tight = tg.paper_scale(eps, **geo), tg.tight_scale(eps, **geo)
        assert tg.bound(paper, **geo) <= eps * (1 + 1e-12)
        assert tg.bound(tight, **geo) <= eps
        assert tight <= paper
        assert tg.bound(tight * (1 - 1e-9), **geo) > eps  # the smallest admissible b
    b = delta_max * np.logspace(-1, 3, 200)
    values = np.array([tg.bound(v, **geo) for v in b])
    assert np.all(np.diff(values) < 0)
    assert math.isnan(tg.tight_scale(floor * (1 - 1e-9), **geo))


@pytest.mark.parametrize("rule", ["paper", "tight"])
def test_gumbel_rejects_small_epsilon(rule):
    space = make_space(30, 4, seed=45)
    geo = dict(vocab_size=30, delta_max=space.delta_max, delta_min=space.delta_min)
    least = tg.minimum_epsilon(**geo, rule=rule)
    m = dptext.mechanism("gumbel", space=space, epsilon=least * 0.999, b=rule)
    with pytest.raises(DPTextError) as info:
        m.fit(cache=False)
    match = re.search(r"needs epsilon > ([0-9.e+]+)", str(info.value))
    assert match is not None, str(info.value)
    assert float(match.group(1)) == pytest.approx(least, rel=1e-5)
    ok = dptext.mechanism("gumbel", space=space, epsilon=least * 1.0001, b=rule)
    assert tg.bound(ok.fit(cache=False).b, **geo) <= least * 1.0001 * (1 + 1e-12)
    # a numeric b is checked against the bound too
    with pytest.raises(DPTextError):
        dptext.mechanism("gumbel", space=space, epsilon=least * 2, b=1e-3).fit(cache=False)


# ------------------------------------------------------------------ Laplace
def test_laplace_noise_law():
    space = make_space(50, 8, seed=51)
    eps, n_draws = 2.5, 100_000
    m = dptext.mechanism("laplace", space=space, epsilon=eps).fit(cache=False)
    kappa = m.noise(n_draws, np.random.default_rng(2))
    assert kappa.shape == (n_draws, 8)
    r = np.linalg.norm(kappa, axis=1)
    assert stats.kstest(r, stats.gamma(a=8, scale=1 / eps).cdf).pvalue > P_MIN
    u = kappa / r[:, None]
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-12)
    dim = 8
    # uniform on the sphere: E u = 0 (sd 1/sqrt(dim N)), E u_i^2 = 1/dim,
    # and (u_1 + 1) / 2 ~ Beta((dim - 1) / 2, (dim - 1) / 2)
    assert np.all(np.abs(u.mean(0)) <= 5 / math.sqrt(dim * n_draws))
    var_sq = 3 / (dim * (dim + 2)) - 1 / dim**2
    assert np.all(np.abs((u**2).mean(0) - 1 / dim) <= 5 * math.sqrt(var_sq / n_draws))
    half = (dim - 1) / 2
    assert stats.kstest((u[:, 0] + 1) / 2, stats.beta(half, half).cdf).pvalue > P_MIN
    # radius and direction independent: corr(r, u_1) ~ 0
    assert abs(np.corrcoef(r, u[:, 0])[0, 1]) <= 5 / math.sqrt(n_draws)


def test_laplace_output_is_nearest_word_to_noisy_vector():
    space = make_space(120, 8, seed=53)
    m = dptext.mechanism("laplace", space=space, epsilon=3).fit(cache=False)
    rows = np.arange(120).repeat(50)
    out = m._sample(rows, np.random.default_rng(4))
    kappa = m.noise(len(rows), np.random.default_rng(4))
    v = space.vectors.astype(np.float64)
    points = v[rows] + kappa.astype(np.float32)
    d = np.linalg.norm(points[:, None, :] - v[None, :, :], axis=-1)
    best = d.min(1)
    # exact argmin, up to float32 ties
    assert np.all(d[np.arange(len(rows)), out] <= best + 1e-4)
    assert (out == d.argmin(1)).mean() > 0.999


def test_laplace_keeps_word_more_often_as_epsilon_grows():
    space = make_space(100, 8, seed=55)
    rows = np.arange(100).repeat(200)
    n = len(rows)
    freqs = []
    for i, eps in enumerate((1.0, 2.0, 4.0, 8.0)):  # below saturation (keep < 1)
        m = dptext.mechanism("laplace", space=space, epsilon=eps).fit(cache=False)
        freqs.append(float((m._sample(rows, np.random.default_rng(i)) == rows).mean()))
    for a, b in zip(freqs, freqs[1:], strict=False):
        sd = math.sqrt(a * (1 - a) / n + b * (1 - b) / n)
        assert b - a > 5 * sd, freqs
    assert freqs[0] < 0.2 and freqs[-1] > 0.8


# ------------------------------------------------------------------ Reports
REPORT_WORDS = ["alpha", "beta", "gamma", "and", "the", "delta", "omega"]
SENTENCE = "Alpha, beta and the zeta-gamma!"  # 6 words (zeta out of vocabulary) + 3 punctuation


@pytest.fixture(scope="module")
def report_space():
    return make_space(40, 8, seed=61, words=REPORT_WORDS)


def fitted(name, space, oov):
    if name == "gumbel":
        return gumbel_mechanism(space, oov=oov)
    params = {"custext": {"k": 5}, "custext+": {"k": 5}}.get(name, {})
    return dptext.mechanism(name, space=space, epsilon=2, oov=oov, **params).fit(cache=False)


@pytest.mark.parametrize("name", ["custext", "custext+", "santext", "santext+", "laplace",
                                  "gumbel"])
@pytest.mark.parametrize("oov", ["placeholder", "sample", "keep"])
def test_report_counts_every_token(report_space, name, oov):
    m = fitted(name, report_space, oov)
    r = m.privatize(SENTENCE, rng=3)
    rep = r.report
    assert rep.tokens_total == 9
    assert rep.kept.get("punctuation") == 3
    parts = split_words(r.text) if oov != "placeholder" else None
    if oov == "keep":
        assert rep.kept.get("oov") == 1
        assert "oov" not in rep.privatized_by_reason
        assert parts[9] == "zeta"
    else:
        assert rep.privatized_by_reason.get(f"oov_{oov}") == 1
        assert "oov" not in rep.kept
    if oov == "placeholder":
        assert r.text.split("-")[0].endswith(" [UNK]")
        assert "zeta" not in r.text
    if parts is not None:
        assert parts[0::2] == split_words(SENTENCE)[0::2]  # punctuation and spacing intact
        assert parts[1][0].isupper()  # case pattern restored
        assert all(report_space.lookup(w) >= 0 for i, w in enumerate(parts[1::2])
                   if not (oov == "keep" and i == 4))
    n_stop = 2 if name == "custext+" else 0
    assert rep.kept.get("stopword", 0) == n_stop
    sensitive = m._tables["sensitive"] if name == "santext+" else None
    in_vocab = ["alpha", "beta", "and", "the", "gamma"]
    n_public = 0 if sensitive is None else int(
        sum(not sensitive[report_space.lookup(w)] for w in in_vocab))
    assert (rep.kept.get("non_sensitive", 0)
            + rep.resampled_unprotected.get("non_sensitive_resampled", 0)) == n_public
    assert rep.privatized_by_reason.get("mechanism", 0) == 5 - n_stop - n_public
    batch = m.privatize_batch([SENTENCE, "beta beta", SENTENCE], rng=4)
    assert [x.report.tokens_total for x in batch] == [9, 2, 9]


@pytest.mark.parametrize("name", ["santext+", "custext"])
def test_oov_sample_is_uniform_over_output_vocabulary(report_space, name):
    m = fitted(name, report_space, "sample")
    n_tokens = 20_000
    r = m.privatize("zeta " * n_tokens, rng=8)
    rows = np.array([report_space.lookup(w) for w in r.text.split()])
    assert len(rows) == n_tokens and rows.min() >= 0
    allowed = np.arange(len(report_space))
    if name == "santext+":
        allowed = np.flatnonzero(m._tables["sensitive"])
    counts = np.bincount(rows, minlength=len(report_space))
    assert counts.sum() == counts[allowed].sum()
    assert chi2_pvalue(counts[allowed], np.full(len(allowed), 1.0)) > P_MIN
    # placeholder: independent of which word was out of vocabulary
    m = fitted(name, report_space, "placeholder")
    assert m.privatize("zeta", rng=1).text == m.privatize("qwerty", rng=2).text == "[UNK]"


def test_santext_plus_huge_epsilon_does_not_underflow(san_space):
    # eps * d / 2 >> 745: unnormalised weights exp(-eps d / 2) of a non-sensitive word are all 0
    m = dptext.mechanism("santext+", space=san_space, epsilon=3000, p=1.0).fit(cache=False)
    assert np.isfinite(m._tables["p_near"]).all()  # else a draw would never finish
    sensitive = m._tables["sensitive"]
    d = exact_distances(san_space)
    for x in np.flatnonzero(~sensitive)[:5]:
        words, probs = m.distribution(san_space.words[x])
        assert np.isfinite(probs).all() and probs.sum() == pytest.approx(1.0)
        nearest = np.flatnonzero(sensitive)[d[x, sensitive].argmin()]
        counts = draw_counts(m, san_space.words[x], 2_000, seed=int(x))
        assert counts[nearest] == 2_000
