"""Surrogates drawn independently of the input (issue 45): the output law is the same for two
inputs of one shape (chi-square tests, thresholds from the sample size), shapes and kinds kept.

Each test draws N surrogates for two inputs and compares the two samples' counts over a few
cells with Pearson's chi-square test of homogeneity; the threshold is the 1 - 1e-6 quantile of
chi-square with (cells - 1) degrees of freedom, so a correct draw fails one run in a million.
The cells are chosen where the audited faults put their mass (the input's own initial or words):
a fault of the old kind (P = 0 for one input, about 1/25 or the word's natural rate for the
other) gives a statistic far above the threshold at these N.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.stats import chi2, chi2_contingency

from dptext.targeted.place_surrogates import kind_of, surrogate_word
from dptext.targeted.surrogates import NameDraws, name_law, split_title, surrogate_name

N = 3000
ALPHA = 1e-6
SPACE = dict(words=["call", "or", "the", "patient", "was", "seen"], seed=3, dim=4,
             name="surrogates-law")  # the space fixture


def _same_law(a: list[str], b: list[str], cells) -> None:
    """Chi-square test of homogeneity of two samples over ``cells`` (functions value -> bool,
    plus one cell for the rest)."""
    def counts(xs):
        row = [sum(c(x) for x in xs) for c in cells]
        return row + [len(xs) - sum(row)]
    table = np.array([counts(a), counts(b)])
    table = table[:, table.sum(axis=0) > 0]
    stat = chi2_contingency(table, correction=False)[0]
    limit = chi2.ppf(1 - ALPHA, table.shape[1] - 1)
    assert stat < limit, (stat, limit, table.tolist())


def test_the_initial_of_a_surrogate_does_not_depend_on_the_input_initial():
    # the audit: "J. Quixwright" was never "J." (25 letters), so P("K.") was 1/25 for one
    # input and 0 for "K. Quixwright"
    g = np.random.default_rng(1)
    a = [surrogate_name("J. Quixwright", g)[0] for _ in range(N)]
    b = [surrogate_name("K. Quixwright", g)[0] for _ in range(N)]
    letters = sorted(set(a) | set(b))
    _same_law(a, b, [lambda x, c=c: x == c for c in letters if a.count(c) + b.count(c) >= 20])
    assert a.count("J") > 0 and b.count("K") > 0  # the input's own letter comes back


def test_names_on_the_lists_get_their_own_words_at_the_natural_rate():
    # the audit: "Mary Jones" never got "Mary" back while "John Smith" got it
    g = np.random.default_rng(2)
    first, p = name_law("first")
    common = [first[i] for i in np.argsort(-p)[:2]]  # the two commonest first names
    x, y = (f"{common[0]} Jones", f"{common[1]} Smith")
    a = [surrogate_name(x, g).split() for _ in range(N)]
    b = [surrogate_name(y, g).split() for _ in range(N)]
    cells = [lambda w, n=n: w[0] == n for n in common] + \
        [lambda w: w[1] == "Jones", lambda w: w[1] == "Smith"]
    _same_law(a, b, cells)
    assert sum(w[0] == common[0] for w in a) > 0


def test_the_word_law_is_zipf_on_the_population_ranks_with_the_census_head():
    from faker.providers.person.en_US import Provider

    first, p = name_law("first", "GB")
    assert len(first) > 10_000 and abs(p.sum() - 1) < 1e-9 and np.all(np.diff(p) <= 0)
    first, p = name_law("first", "US")
    assert len(first) > 15_000 and abs(p.sum() - 1) < 1e-9
    census = {**Provider.first_names_female, **Provider.first_names_male}
    a, b = first.index("Jose"), first.index("Mary")
    assert abs(p[a] / p[b] - census["Jose"] / census["Mary"]) < 1e-9
    tail = [i for i in range(200, 400) if first[i] not in census]
    assert np.all(np.diff(p[tail]) <= 0)  # the tail: Zipf on the rank
    g = np.random.default_rng(3)
    draws = NameDraws(g)
    top = first[int(np.argmax(p))]
    hits = sum(draws.word("first", f"w{i}") == top for i in range(N))
    q = p.max()
    assert abs(hits - N * q) < 5 * np.sqrt(N * q * (1 - q)) + 1, (hits, N * q)


@pytest.mark.parametrize("value, prefix", [
    ("Daughter Kevin Young", "Daughter "), ("Dear Dr. Smith", "Dear Dr. "),
    ("wife mary", "wife "), ("Mrs. J. Lopez", "Mrs. "), ("Patient Ann Lee", "Patient ")])
def test_relation_and_title_words_are_kept(value, prefix):
    assert split_title(value)[0] == prefix
    g = np.random.default_rng(4)
    for _ in range(20):
        out = surrogate_name(value, g)
        assert out.startswith(prefix) and len(out.split()) == len(value.split()), out


def test_the_shape_is_kept():
    g = np.random.default_rng(5)
    for _ in range(50):
        assert re.fullmatch(r"[A-Z]{2}", surrogate_name("JS", g))
        assert re.fullmatch(r"[A-Z]\.[A-Z]\.", surrogate_name("J.S.", g))
        out = surrogate_name("SMITH, JOHN A", g)
        assert out.isupper() and re.fullmatch(r"[^,]+, \S+ [A-Z]", out), out
        assert surrogate_name("Ann Lee, MD, PhD", g).endswith(", MD, PhD")
        assert surrogate_name("wife mary", g).islower()
        assert surrogate_name("Ann Quorvath-Putnam", g).count("-") == 1


def test_one_surrogate_per_word_in_a_scope_and_a_shared_surname_stays_shared():
    g = np.random.default_rng(6)
    for _ in range(30):
        d = NameDraws(g)
        a, b = surrogate_name("Mr. Brown", draws=d), surrogate_name("Hannah Brown", draws=d)
        assert a.split()[-1] == b.split()[-1] and a.startswith("Mr. ")
        assert surrogate_name("HANNAH BROWN", draws=d) == b.upper()


def test_keyed_draws_give_a_person_the_same_surrogate_in_every_call():
    from dptext.targeted.dates import keyed_generator

    key = b"k" * 32
    one = surrogate_name("Dr. Carly Jones", draws=NameDraws(keyed=keyed_generator(key, "p1")))
    again = surrogate_name("Carly Jones", draws=NameDraws(keyed=keyed_generator(key, "p1")))
    assert one.split()[-2:] == again.split()
    others = {surrogate_name("Carly Jones", draws=NameDraws(keyed=keyed_generator(key, f"p{i}")))
              for i in range(2, 40)}
    assert len(others) > 30  # another person: another, independent draw


@pytest.mark.parametrize("category, value, kind", [
    ("ORG", "Springfield Memorial Hospital", "hospital"), ("ORG", "Northgate Clinic", "clinic"),
    ("ORG", "CVS Pharmacy", "pharmacy"), ("FAC", "Lodi General Hospital", "hospital"),
    ("ORG", "Lincoln High School", "school"), ("ORG", "Harbor Bank", "bank"),
    ("GPE", "Boston", "city"), ("GPE", "Mexico", "country"), ("GPE", "Ohio", "state"),
    ("ORG", "Acme Inc", "company")])
def test_a_place_or_organisation_surrogate_is_of_its_kind(category, value, kind):
    assert kind_of(category, value) == kind
    g = np.random.default_rng(7)
    for _ in range(30):
        assert kind_of(category, surrogate_word(category, value, g)) == kind


def test_a_place_surrogate_law_does_not_depend_on_the_input_words():
    g = np.random.default_rng(8)
    a = [surrogate_word("ORG", "Springfield Memorial Hospital", g) for _ in range(N)]
    b = [surrogate_word("ORG", "Lodi Medical Center", g) for _ in range(N)]
    _same_law(a, b, [lambda x: "Memorial Hospital" in x, lambda x: "Medical Center" in x,
                     lambda x: x.startswith("St. ")])


@pytest.mark.parametrize("category, value, shape", [
    ("PHONE_NUMBER", "(617) 555-0142", r"\([2-9]\d\d\) [2-9]\d\d-\d{4}"),
    ("PHONE_NUMBER", "+1-559-555-0142", r"\+1-[2-9]\d\d-[2-9]\d\d-\d{4}"),
    ("EMAIL_ADDRESS", "anna.lee@mail.com", r"[a-z]+\.[a-z]+@[a-z]+\.[a-z]+"),
    ("MEDICAL_RECORD", "4821933", r"\d{7}"), ("ID_NUMBER", "AB-12345x", r"[A-Z]{2}-\d{5}[a-z]"),
    ("STREET_ADDRESS", "12 Oak Hill Road", r"[1-9]\d [A-Z][a-z]+ Road"),
    ("ZIP_CODE", "14850-1234", r"\d{5}-\d{4}"), ("US_SSN", "123-45-6789", r"\d{3}-\d\d-\d{4}"),
    ("DATE", "March 3, 2024", r"[A-Z][a-z]+ \d{1,2}, \d{4}")])
def test_a_realistic_surrogate_keeps_the_shape_and_is_of_its_kind(category, value, shape):
    from dptext.targeted.shapes import realistic

    g = np.random.default_rng(9)
    seen = {realistic(category, value, g) for _ in range(40)}
    assert all(re.fullmatch(shape, v) for v in seen), seen
    assert len(seen) > 30 and value not in seen


def test_a_realistic_surrogate_law_depends_on_the_shape_only():
    from dptext.targeted.shapes import realistic

    g = np.random.default_rng(10)
    a = [realistic("PHONE_NUMBER", "(617) 555-0142", g) for _ in range(N)]
    b = [realistic("PHONE_NUMBER", "(212) 867-5309", g) for _ in range(N)]
    _same_law(a, b, [lambda x, d=d: x[1] == d for d in "23456789"]
              + [lambda x: x[1:4] == "617", lambda x: x[-4:] == "0142"])


def test_the_mechanism_replaces_patterns_by_realistic_surrogates(space, tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    from dptext import mechanism
    from dptext.targeted import TargetedMechanism

    m = TargetedMechanism(mechanism("custext", epsilon=2, k=3, space=space), detector=None,
                          pattern_policy="realistic")
    text = "call (617) 555-0142 or anna.lee@mail.com"
    spans = [[type("S", (), {"start": 5, "end": 19, "category": "PHONE_NUMBER"})(),
              type("S", (), {"start": 23, "end": 40, "category": "EMAIL_ADDRESS"})()]]
    r = m.privatize_spans([text], spans, rng=0)[0]
    assert re.fullmatch(r"call \(\d{3}\) \d{3}-\d{4} or \S+@\S+\.\w+", r.text), r.text
    assert r.report.epsilon == 0 and "of the same shape" in str(r.report)
