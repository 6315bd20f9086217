"""DP-MLM on detected spans only, the whole text as context (tiny models built here)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tiny_lms import CLIP, _bert, _llama  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.lm.alignment import align  # noqa: E402
from dptext.targeted import Span, TargetedMechanism  # noqa: E402
from dptext.text import split_words  # noqa: E402

TEXT = "the big dog saw john and anna by the river, then went to paris"


# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    return {"bert": _bert(root / "bert"), "llama": _llama(root / "llama")}


def _dpmlm(lms, kind, **kw):
    backend = "causal" if kind == "llama" else "mlm"
    return mechanism("dpmlm", backend=backend, model=lms[kind], **{**CLIP, **kw}).fit()


def _range(text, surface):
    start = text.index(surface)
    return start, start + len(surface)


@pytest.mark.parametrize("kind", ["bert", "llama"])
def test_only_the_span_words_change(lms, kind):
    m = _dpmlm(lms, kind, epsilon=3.0)
    ranges = [_range(TEXT, "john and anna"), _range(TEXT, "paris")]
    for seed in range(3):
        (john, paris), = m.privatize_spans([TEXT], [ranges], rng=seed)
        words = split_words(john.text)[1::2]
        assert len(words) == 3 and words[1] == "and"  # a stopword inside a span is kept
        assert all(w.lower() in {c.lower() for c in m.candidates} for w in (words[0], words[2]))
        assert len(split_words(paris.text)[1::2]) == 1
        assert john.report.tokens_privatized == 2 and john.report.kept == {"stopword": 1}
        assert john.report.epsilon == pytest.approx(6.0)
        assert paris.report.epsilon == pytest.approx(3.0)


def test_masked_slots_see_the_whole_text(lms, monkeypatch):
    """The input scored for a span's word is the one the full-text rewrite scores for it."""
    m = _dpmlm(lms, "bert", epsilon=2.0, keep_stopwords=False)
    seen = []
    original = m._backend.scores
    monkeypatch.setattr(m._backend, "scores", lambda inputs: seen.extend(inputs) or
                        original(inputs))
    m.privatize_spans([TEXT], [[_range(TEXT, "anna")]], rng=0)
    parts = split_words(TEXT)
    aligned = align(m._lm[1], TEXT, parts)
    i = parts[1::2].index("anna")
    expected = m._backend.input_ids(aligned.ids, int(aligned.starts[i]), int(aligned.ends[i]))
    assert seen == [expected]
    assert len(expected) > 2 * len(aligned.ids)  # the original text and its masked copy


def test_targeted_mechanism_runs_dpmlm_on_span_words(lms):
    m = TargetedMechanism(_dpmlm(lms, "llama", epsilon=2.0), entities=["PERSON", "GPE"],
                          detector=None, consistent="document")
    spans = [Span(*_range(TEXT, "john"), "PERSON", "john"),
             Span(*_range(TEXT, "anna"), "PERSON", "anna"),
             Span(*_range(TEXT, "paris"), "GPE", "paris")]
    text2 = "anna met anna"
    spans2 = [Span(0, 4, "PERSON", "anna"), Span(9, 13, "PERSON", "anna")]
    r, r2 = m.privatize_spans([TEXT, text2], [spans, spans2], rng=4)
    out = split_words(r.text)
    original = split_words(TEXT)
    keep = [i for i, w in enumerate(original) if w not in ("john", "anna", "paris")]
    assert [out[i] for i in keep] == [original[i] for i in keep]
    assert r.report.epsilon == pytest.approx(6.0) and r.report.tokens_undetected == 12
    w2 = split_words(r2.text)[1::2]
    assert w2[0] == w2[2] and w2[1] == "met" and r2.report.epsilon == pytest.approx(2.0)


def test_add_delete_variant_is_refused_for_spans(lms):
    m = _dpmlm(lms, "bert", epsilon=2.0, p_del=0.2)
    with pytest.raises(DPTextError, match="add/delete"):
        m.privatize_spans([TEXT], [[_range(TEXT, "anna")]])
    with pytest.raises(DPTextError, match="add/delete"):
        TargetedMechanism(m, detector=None)
