"""Guard rails (issue 11, item 4): for every word mechanism, two inputs that differ in exactly one
protected attribute - the case of a word, a name that is a stopword, a frequent name under
SanText+ - either get output distributions that agree within the stated guarantee, or the
report lists the attribute as unprotected. docs/privacy.md says which test checks what.
"""

from __future__ import annotations

import numpy as np
import pytest

import dptext
from dptext.accounting.report import PrivacyReport
from dptext.mechanisms import truncated_gumbel as tg
from dptext.text import NAME_STOPWORDS, default_stopwords, split_words

WORDS = ["doctor", "hospital", "john", "london", "the", "came", "we", "met", "in", "today",
         "will", "may", "paul", "google", "and", "is", "nurse", "city"]
WORD_MECHANISMS = ["custext", "custext+", "santext", "santext+", "laplace", "gumbel"]


SPACE = dict(words=WORDS + [f"tok{i:03d}" for i in range(60 - len(WORDS))], seed=5, dim=8,
             float32=True, name="guardrails")  # the space fixture (conftest.py)


def _mechanism(name, space, **kw):
    if name == "gumbel":
        eps = 1.5 * tg.minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                       delta_min=space.delta_min, rule="tight")
        return dptext.mechanism("gumbel", space=space, epsilon=eps, b="tight", **kw).fit(
            cache=False)
    params = {"custext": {"k": 5}, "custext+": {"k": 5}}.get(name, {})
    return dptext.mechanism(name, space=space, epsilon=3, **params, **kw).fit(cache=False)


def _words(text):
    return split_words(text)[1::2]


# ------------------------------------------------------------------ case
@pytest.mark.parametrize("name", WORD_MECHANISMS)
def test_case_of_a_word_is_not_used_by_default(space, name):
    # "Doctor" and "doctor" (and "DOCTOR"): the default pipeline never reads the case, so with
    # the same random stream the outputs are identical - the distributions agree exactly - and
    # P(capitalised output) is the same (0 mid-sentence, 1 at a sentence start)
    m = _mechanism(name, space)
    for variants in (["we met the Doctor today", "we met the doctor today",
                      "we met the DOCTOR today"],
                     ["Doctor came.", "doctor came.", "DOCTOR came."]):
        outs = [[r.text for r in m.privatize_batch([v] * 50, rng=9)] for v in variants]
        assert outs[0] == outs[1] == outs[2]
        reports = [m.privatize(v, rng=1).report for v in variants]
        assert all(not r.unprotected_attributes for r in reports)
    texts = [r.text for r in m.privatize_batch(["we met the Doctor today"] * 50, rng=2)]
    assert not any(_words(t)[3][:1].isupper() for t in texts)
    texts = [r.text for r in m.privatize_batch(["Doctor came. doctor came."] * 50, rng=2)]
    assert all(_words(t)[0][:1].isupper() and _words(t)[2][:1].isupper() for t in texts)


@pytest.mark.parametrize("name", WORD_MECHANISMS)
def test_keep_case_reports_the_case_pattern_as_unprotected(space, name):
    m = _mechanism(name, space, keep_case=True)
    upper, lower = (m.privatize(t, rng=3) for t in ("we met the Doctor in LONDON",
                                                    "we met the doctor in london"))
    n_public = 0
    if name == "santext+":  # a verbatim non-sensitive word is unprotected anyway
        sensitive = m._tables["sensitive"]
        out = _words(upper.text)
        n_public = sum(not sensitive[space.lookup(o)] and w.lower() == o.lower()
                       for w, o in zip([out[3], out[5]], ["Doctor", "LONDON"], strict=True))
    assert upper.report.unprotected_attributes.get("case_pattern", 0) == 2 - n_public
    assert not lower.report.unprotected_attributes
    if 2 - n_public:
        assert "case pattern" in upper.report.document_guarantee()
        assert "case_pattern" in upper.report.to_dict()["unprotected_attributes"]
    out = _words(upper.text)
    assert out[3][:1].isupper() and out[5].isupper()  # copied: Title, UPPER


# ------------------------------------------------------- names as stopwords
def test_default_stopwords_hold_no_common_given_name_or_month():
    months = {"january", "february", "march", "april", "may", "june", "july", "august",
              "september", "october", "november", "december"}
    # given names that are also English words (US Census 1990 frequent first names)
    names = {"will", "may", "bill", "mark", "rose", "june", "april", "august", "grace", "hope",
             "joy", "faith", "dawn", "art", "sue", "pat", "ray", "jack", "frank", "bob"}
    stop = default_stopwords()
    assert not stop & months and not stop & names and NAME_STOPWORDS <= names


@pytest.mark.parametrize("name", ["custext+"])
def test_a_name_that_was_a_stopword_is_privatized(space, name):
    # CusText+ keeps stopwords; "Will" and "May" are names, so they get the word guarantee
    m = _mechanism(name, space)
    for text in ("we met Will today", "we met May today"):
        r = m.privatize(text, rng=0).report
        assert r.kept == {"stopword": 1} and r.privatized_by_reason["mechanism"] == 3  # "we"
    # a real stopword is still kept, and the report says so
    r = m.privatize("we met the doctor", rng=0).report
    assert r.kept.get("stopword", 0) == 2  # "we", "the"


def test_stopwords_kept_are_listed_as_unprotected(space):
    # two inputs differing only in a kept stopword: the output differs deterministically, and
    # the report lists the kept stopwords as released verbatim
    m = _mechanism("custext+", space)
    a, b = (m.privatize(t, rng=4) for t in ("we met the doctor", "we met in doctor"))
    assert _words(a.text)[2] == "the" and _words(b.text)[2] == "in"
    assert a.report.kept["stopword"] == 2 and "stopword 2" in a.report.document_guarantee()


# ----------------------------------------------- SanText+ frequent names
def test_santext_plus_frequent_names_are_reported_and_warned(space):
    # V_s = the 80% least frequent words of this 60-word space: the 12 most frequent (the, and,
    # ..., john, london) are "non-sensitive"
    m = _mechanism("santext+", space, p=0.3, sensitive_fraction=0.8)
    sensitive = m._tables["sensitive"]
    public = {w for w in WORDS if not sensitive[space.lookup(w)]}
    assert {"john", "london", "the"} <= public  # the most frequent words are "non-sensitive"
    n = 400
    results = m.privatize_batch(["we met John in London"] * n, rng=5)
    verbatim = resampled = warned = 0
    for r in results:
        out = _words(r.text)
        really = sum(o.lower() == w for o, w in zip(out[2:5:2], ["john", "london"],
                                                    strict=True))
        counted = r.report.kept.get("non_sensitive", 0)
        redrawn = r.report.resampled_unprotected.get("non_sensitive_resampled", 0)
        public_here = sum(w in public for w in ("we", "met", "john", "in", "london"))
        # counted as what happened: verbatim or redrawn, never "kept" when redrawn
        assert counted + redrawn == public_here
        verbatim += counted
        resampled += redrawn
        warned += r.report.warnings.get("non_sensitive_capitalized", 0)
        assert r.report.warnings.get("non_sensitive_capitalized", 0) == really
    total = verbatim + resampled
    assert abs(resampled / total - 0.3) < 5 * np.sqrt(0.3 * 0.7 / total)
    assert warned > 0 and all(("WARNING" in str(r.report))
                              == bool(r.report.warnings) for r in results)
    # combined over the file: the names are listed as released verbatim, not protected
    combined = PrivacyReport.combine([r.report for r in results])
    assert combined.warnings["non_sensitive_capitalized"] == warned
    assert f"non_sensitive {verbatim}" in combined.document_guarantee()


def test_santext_plus_rare_name_is_protected_within_the_guarantee(space):
    # two sensitive (rare) words differ: their output laws obey the metric guarantee exactly
    m = _mechanism("santext+", space, p=0.3)
    sensitive = m._tables["sensitive"]
    a, b = [w for w in space.words if sensitive[space.lookup(w)]][:2]
    words_a, pa = m.distribution(a)
    words_b, pb = m.distribution(b)
    assert words_a == words_b
    d = float(space.pairwise([space.lookup(a)], [space.lookup(b)])[0, 0])
    assert np.abs(np.log(pa) - np.log(pb)).max() <= m.epsilon * d + 1e-9


@pytest.mark.slow
def test_santext_plus_warns_about_verbatim_words_inside_detected_entities(space):
    m = _mechanism("santext+", space, p=0.3, sensitive_fraction=0.8, warn_entities=True)
    results = m.privatize_batch(["we met John in London today"] * 40, rng=6)
    for r in results:
        out = _words(r.text)
        # spaCy finds John (PERSON), London (GPE) and today (DATE)
        really = sum(o.lower() == w for o, w in zip([out[2], out[4], out[5]],
                                                    ["john", "london", "today"], strict=True))
        assert r.report.warnings.get("non_sensitive_entity", 0) == really
    assert any("detected entity" in line for r in results for line in r.report.warning_lines())
