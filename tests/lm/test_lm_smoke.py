"""The real default model (packaged SmolLM2-135M) on one sentence, with the shipped bounds.

Reuses the user cache's fp32 copy of the model (converting the GGUF alone takes ~50 s on the
shared 2-core machine, beyond this test's budget); if it is missing, this test builds it there.
"""

from __future__ import annotations

import pytest

from dptext import mechanism
from dptext.lm.bounds import shipped_bounds
from dptext.lm.loading import DEFAULT_CAUSAL
from dptext.text import split_words

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

pytest.importorskip("torch")


@pytest.mark.slow
def test_default_causal_model_rewrites_one_sentence():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # shared CPU: avoid OpenMP spin-waiting
    try:
        m = mechanism("dpmlm", epsilon=50, keep_case=True).fit()
        assert m.bounds == pytest.approx((shipped_bounds()[DEFAULT_CAUSAL]["lo"],
                                          shipped_bounds()[DEFAULT_CAUSAL]["hi"]))
        text = "My sister Anna lives in Berlin."
        res = m.privatize(text, rng=0)
    finally:
        torch.set_num_threads(before)
    words = split_words(res.text)[1::2]
    cands = set(m.candidates)
    assert len(words) == 6 and words[0] == "My" and words[4] == "in"  # stopwords kept
    assert all(w in cands or w.lower() in cands for w in (words[1], words[2], words[3], words[5]))
    assert words[2][0].isupper() and words[5][0].isupper()  # Title case of Anna, Berlin copied
    assert res.report.unprotected_attributes == {"case_pattern": 2}  # ... and reported
    assert res.text.endswith(".")
    r = res.report
    assert r.tokens_privatized == 4 and r.kept == {"stopword": 2, "punctuation": 1}
    assert r.epsilon == pytest.approx(200.0)
