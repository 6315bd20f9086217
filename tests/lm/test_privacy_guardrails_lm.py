"""Guard rails for DP-MLM and DP-Prompt (issue 11, item 4) on tiny models built here: two inputs
that differ only in the case of one word (or in a name that used to be a stopword) get slot /
token distributions within the per-token guarantee (|log p - log p'| <= epsilon: the clipped
exponential mechanism), the case is not copied by default and is reported when it is, and the
guarantee texts state the shape they hold for."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tiny_lms import CLIP, _bert, _llama  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.lm.sampling import clipped_log_probs  # noqa: E402
from dptext.text import split_words  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms-guard")
    return {"bert": _bert(root / "bert"), "llama": _llama(root / "llama")}


def _slot_log_probs(m, text, eps):
    from dptext.lm.alignment import align

    parts = split_words(text)
    aligned = align(m._lm[1], text, parts)
    _, _, slots, _ = m._plan(text, __import__("numpy").random.default_rng(0))
    scores = m._backend.scores([m._backend.input_ids(aligned.ids, s.start, s.end)
                                for s in slots])
    return clipped_log_probs(scores, epsilon=eps, lo=CLIP["clip_low"], hi=CLIP["clip_high"])


def test_dpmlm_case_of_a_word_within_the_guarantee_and_not_copied(lms):
    eps = 2.0
    m = mechanism("dpmlm", backend="mlm", model=lms["bert"], epsilon=eps,
                  keep_stopwords=False, **CLIP).fit()
    a = _slot_log_probs(m, "john saw the Dog", eps)
    b = _slot_log_probs(m, "john saw the dog", eps)
    assert float((a - b).abs().max()) <= eps + 1e-5  # every slot: any two contexts, eps-DP
    outs = [r.text for r in m.privatize_batch(["john saw the Dog"] * 30, rng=1)]
    assert not any(split_words(t)[7][:1].isupper() for t in outs)  # mid-sentence: as drawn
    assert all(split_words(t)[1][:1].isupper() for t in outs)  # the text starts: capitalised
    report = m.privatize("john saw the Dog", rng=1).report
    assert not report.unprotected_attributes
    assert "same number of words and the same kept tokens" in report.document_guarantee()
    kept = mechanism("dpmlm", backend="mlm", model=lms["bert"], epsilon=eps,
                     keep_stopwords=False, keep_case=True, **CLIP).fit()
    report = kept.privatize("john saw the Dog", rng=1).report
    assert report.unprotected_attributes == {"case_pattern": 1}


def test_dpmlm_privatizes_a_name_that_was_a_stopword(lms):
    m = mechanism("dpmlm", backend="mlm", model=lms["bert"], epsilon=1.0, **CLIP).fit()
    report = m.privatize("we met Will and May", rng=0).report  # stopwords kept by default
    assert report.kept == {"stopword": 2}  # "we", "and"
    assert report.privatized_by_reason == {"mechanism": 3}


def _first_token_log_probs(m, text, eps):
    from dptext.lm.decoding import decode_side_by_side, pad_id

    captured = []

    def draw(rows, scores):
        captured.append(scores)
        return [None] * len(rows)

    decode_side_by_side(m._head, [m._prompt_ids(text)], draw, pad_id(m._lm[1]))
    return clipped_log_probs(captured[0], epsilon=eps, lo=CLIP["clip_low"],
                             hi=CLIP["clip_high"])


def test_dpprompt_case_of_a_word_within_the_guarantee_and_shape_stated(lms):
    eps = 3.0
    m = mechanism("dpprompt", epsilon=eps, model=lms["llama"], **CLIP).fit()
    a = _first_token_log_probs(m, "john went to Paris", eps)
    b = _first_token_log_probs(m, "john went to paris", eps)
    assert float((a - b).abs().max()) <= eps + 1e-5
    report = m.privatize("john went to paris", rng=0).report
    assert "same number of tokens" in report.document_guarantee()
