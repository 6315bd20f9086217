"""DP-MLM and DP-Prompt end to end on tiny random models built here (no download)."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")


from tiny_lms import CLIP, WORDS, _bert, _llama, _roberta  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.lm.sampling import clipped_log_probs  # noqa: E402
from dptext.text import split_words  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    return {"bert": _bert(root / "bert"), "roberta": _roberta(root / "roberta"),
            "llama": _llama(root / "llama")}


def _dpmlm(lms, kind, **kw):
    backend = "causal" if kind == "llama" else "mlm"
    return mechanism("dpmlm", backend=backend, model=lms[kind], **{**CLIP, **kw}).fit()


def _slot_scores(m, text):
    aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
    return m._backend.scores([m._backend.input_ids(aligned.ids, s.start, s.end) for s in slots])


def test_mlm_draws_follow_the_clipped_softmax(lms):
    from scipy.stats import chi2 as chi2_dist

    m = _dpmlm(lms, "bert", epsilon=3.0, keep_stopwords=False)
    text = "dog"  # one word: its output distribution is exactly softmax(clip(scores) / T)
    probs = clipped_log_probs(_slot_scores(m, text), epsilon=3.0, lo=-2.0, hi=2.0).exp()[0]
    n = 800
    out = [r.text for r in m.privatize_batch([text] * n, rng=7)]
    index = {w: i for i, w in enumerate(m.candidates)}
    # the one word starts the text: capitalised (post-processing of its public position)
    observed = np.bincount([index[w[:1].lower() + w[1:]] for w in out], minlength=len(index))
    expected = n * probs.numpy()
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert expected.min() > 5  # the chi-square approximation holds
    assert chi2 < chi2_dist.ppf(0.999, len(index) - 1)


def test_mlm_bf16_runs_under_autocast_close_to_fp32(lms):
    """precision="bf16" on the masked backend: transformers' forward under bfloat16 autocast
    (the output head included). Measured here: max |bf16 - fp32| = 1.1% of the scores'
    standard deviation; the bound leaves 5x room, and zero would mean bfloat16 did not run."""
    text = "the cat sat on the mat"
    a = _slot_scores(_dpmlm(lms, "bert", epsilon=5.0), text)
    b = _slot_scores(_dpmlm(lms, "bert", epsilon=5.0, precision="bf16"), text)
    assert b.dtype == torch.float32
    assert 0 < (a - b).abs().max() < 0.05 * a.std()


def test_batched_and_unbatched_scores_agree(lms):
    text = "the big dog sat on a mat, john went to paris"
    batched = _slot_scores(_dpmlm(lms, "bert", epsilon=1.0, batch_size=64,
                                  keep_stopwords=False), text)
    single = _slot_scores(_dpmlm(lms, "bert", epsilon=1.0, batch_size=1,
                                 keep_stopwords=False), text)
    assert batched.shape[0] == len(split_words(text)[1::2])
    assert torch.allclose(batched, single, atol=1e-4)


def test_sampler_draws_keep_the_ratio_of_two_contexts_within_e_epsilon():
    """The sampling path itself (not a formula): two adversarial score rows, far outside the
    clip range and opposite to each other, drawn 40,000 times each. A sampler that skipped the
    clip or used the wrong temperature would put almost all mass on different candidates; the
    real one gives every candidate a ratio <= e^eps. Each empirical log-ratio is tested against
    the bound with a 99.99% Clopper-Pearson interval on each side (so a correct sampler fails
    this test with probability < 1e-3 over the 5 candidates)."""
    from scipy.stats import beta

    from dptext.lm.sampling import sample, torch_generator

    eps, lo, hi, n = 2.0, -2.0, 2.0, 40_000
    a = torch.tensor([[100.0, -100.0, 0.0, 50.0, -50.0]]).repeat(n, 1)
    b = torch.tensor([[-100.0, 100.0, 0.0, -50.0, 50.0]]).repeat(n, 1)
    gen = torch_generator(np.random.default_rng(5))
    ca = np.bincount(sample(a, epsilon=eps, lo=lo, hi=hi, generator=gen), minlength=5)
    cb = np.bincount(sample(b, epsilon=eps, lo=lo, hi=hi, generator=gen), minlength=5)
    alpha = 1e-4
    for i in range(5):
        # lower bound of P_a(i) over upper bound of P_b(i), both ways
        for x, y in ((ca[i], cb[i]), (cb[i], ca[i])):
            low = beta.ppf(alpha, x, n - x + 1) if x > 0 else 0.0
            high = beta.ppf(1 - alpha, y + 1, n - y) if y < n else 1.0
            assert low <= np.exp(eps) * high, (i, ca, cb)
    # and the draws follow the clipped softmax (not merely bounded): exact law, chi-square
    probs = clipped_log_probs(a[:1], epsilon=eps, lo=lo, hi=hi).exp()[0].numpy()
    chi2 = float(((ca - n * probs) ** 2 / (n * probs)).sum())
    from scipy.stats import chi2 as chi2_dist

    assert chi2 < chi2_dist.ppf(0.999, 4)


@pytest.mark.parametrize("kind", ["bert", "roberta", "llama"])
def test_every_word_is_privatized_or_counted(lms, kind):
    m = _dpmlm(lms, kind, epsilon=5.0, keep_stopwords=False)
    text = "The cats walked, JOHN went to Paris!"
    res = m.privatize(text, rng=3)
    cands = {w.lower() for w in m.candidates}
    out_words = split_words(res.text)[1::2]
    assert len(out_words) == 7 and all(w.lower() in cands for w in out_words)
    # the input's case is not used: the drawn word as is, capitalised at the sentence start
    assert out_words[0][0].isupper() and out_words[1:] == [w.lower() for w in out_words[1:]]
    assert split_words(res.text)[0::2] == split_words(text)[0::2]  # punctuation/spacing kept
    r = res.report
    assert r.tokens_privatized == 7 and r.kept == {"punctuation": 2}
    assert r.epsilon == pytest.approx(35.0) and not r.unprotected_attributes
    assert "same number of words" in r.document_guarantee()
    # keep_case=True: Title and UPPER restored, and reported as released unprotected
    cased = _dpmlm(lms, kind, epsilon=5.0, keep_stopwords=False, keep_case=True)
    res = cased.privatize(text, rng=3)
    out_words = split_words(res.text)[1::2]
    assert out_words[0][0].isupper() and out_words[3].isupper() and out_words[6][0].isupper()
    assert res.report.unprotected_attributes == {"case_pattern": 3}
    assert "case pattern" in res.report.document_guarantee()


@pytest.mark.parametrize("kind", ["bert", "llama"])
def test_texts_without_words(lms, kind):
    m = _dpmlm(lms, kind, epsilon=1.0)
    res = m.privatize_batch(["", "?!", "the dog"], rng=0)
    assert [r.text for r in res[:2]] == ["", "?!"]
    assert res[1].report.kept == {"punctuation": 1} and res[0].report.tokens_total == 0
    assert res[2].report.tokens_privatized == 1
    assert m.privatize_batch([]) == []


def test_stopwords_are_kept_and_counted(lms):
    m = _dpmlm(lms, "bert", epsilon=5.0)
    res = m.privatize("the dog sat on a mat", rng=4)
    words = res.text.split()
    assert [words[i] for i in (0, 3, 4)] == ["the", "on", "a"]
    assert res.report.kept == {"stopword": 3} and res.report.tokens_privatized == 3


def test_long_text_uses_a_window_centred_on_the_word(lms):
    m = _dpmlm(lms, "bert", epsilon=5.0, max_length=20, keep_stopwords=False)
    words = [WORDS[i % len(WORDS)] for i in range(300)]
    text = " ".join(words)
    aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
    tok = m._lm[1]
    s = slots[250]
    ids = m._backend.input_ids(aligned.ids, s.start, s.end)
    assert len(ids) <= 20
    toks = tok.convert_ids_to_tokens(ids)
    cut = toks.index("[SEP]")
    assert words[250] in toks[:cut]  # the context copy holds the word ...
    masked = toks[cut + 1:]
    at = masked.index("[MASK]")
    assert masked[at - 1] == words[249] and masked[at + 1] == words[251]  # ... and its place
    res = m.privatize(text, rng=5)
    assert res.report.tokens_privatized == 300 and len(res.text.split()) == 300


def test_causal_cache_gives_the_scores_of_a_full_forward_pass(lms):
    m = _dpmlm(lms, "llama", epsilon=5.0, keep_stopwords=False, separator=" =>")
    model, tok = m._lm
    text = "the dog sat, john went"
    aligned, pieces, slots, _ = m._plan(text, np.random.default_rng(0))
    rows, chosen = [], []

    def choose(row):
        rows.append(row.clone())
        chosen.append(int(torch.argmax(row)))
        return chosen[-1]

    m._backend.rewrite(aligned.ids, [(s.glue, s.start) for s in slots], choose)
    # rebuild each prefix without a cache: original + separator + output so far
    cids = m._backend.candidate_ids
    prefix = aligned.ids + tok(" =>", add_special_tokens=False)["input_ids"]
    for k, s in enumerate(slots):
        glue = s.glue[:-1] if s.glue.endswith(" ") else s.glue
        prefix = prefix + (tok(glue, add_special_tokens=False)["input_ids"] if glue else [])
        with torch.inference_mode():
            full = model(input_ids=torch.tensor([prefix])).logits[0, -1, cids]
        assert torch.allclose(full, rows[k], atol=1e-4)
        prefix = prefix + [int(cids[chosen[k]])]


def test_causal_window_rebuilds_for_long_texts(lms):
    m = _dpmlm(lms, "llama", epsilon=5.0, max_length=32, keep_stopwords=False)
    text = " ".join(WORDS[i % len(WORDS)] for i in range(60))
    res = m.privatize(text, rng=6)
    assert len(res.text.split()) == 60 and res.report.tokens_privatized == 60


def test_add_delete_variant_counts_insertions_and_deletions(lms):
    text = "the dog sat on a mat"
    m = _dpmlm(lms, "bert", epsilon=2.0, keep_stopwords=False, p_add=1.0)
    r = m.privatize(text, rng=1)
    assert len(r.text.split()) == 12
    assert r.report.privatized_by_reason == {"mechanism": 6, "inserted": 6}
    assert r.report.epsilon == pytest.approx(24.0)
    assert r.report.worst_case_epsilon == pytest.approx(2 * 6 * 2.0)
    gone = _dpmlm(lms, "bert", epsilon=2.0, p_del=1.0).privatize(text + ".", rng=1)
    assert gone.text.strip() == "." and gone.report.privatized_by_reason == {"deleted": 6}
    assert gone.report.epsilon == 0.0
    some = _dpmlm(lms, "llama", epsilon=2.0, p_add=0.5, p_del=0.3).privatize(text, rng=2)
    c = some.report.privatized_by_reason
    words = len(some.text.split())
    assert words == 6 - c.get("deleted", 0) + c.get("inserted", 0)
    assert "Worst case" in some.report.document_guarantee()
    tail = _dpmlm(lms, "bert", epsilon=2.0, p_del=1.0, keep_stopwords=False)
    assert tail.privatize("dog, cat.", rng=0).text == ",."


def test_dpprompt_generates_at_most_the_input_length(lms):
    m = mechanism("dpprompt", epsilon=4.0, model=lms["llama"], **CLIP).fit()
    res = m.privatize("the dog sat on a mat", rng=3)
    n_input = len(m._lm[1]("the dog sat on a mat", add_special_tokens=False)["input_ids"])
    drawn = res.report.privatized_by_reason.get("generated", 0)
    assert 1 <= drawn <= n_input
    assert res.report.epsilon == pytest.approx(4.0 * drawn)


def _greedy(scores, generator):
    return scores.argmax(-1).numpy()


def test_dpprompt_side_by_side_matches_one_text_at_a_time(lms, monkeypatch):
    texts = ["the dog sat on a mat", "john went to paris", "", "a big red car by the river"]
    outs = {}
    for batch_size in (1, 3):
        m = mechanism("dpprompt", epsilon=4.0, model=lms["llama"], batch_size=batch_size,
                      **CLIP).fit()
        monkeypatch.setattr(m, "_draw", _greedy)  # deterministic: the argmax of the scores
        outs[batch_size] = [(r.text, r.report.epsilon) for r in m.privatize_batch(texts)]
    assert outs[1] == outs[3]
    assert outs[1][2] == ("", 0.0)


def test_score_head_uses_the_full_model_when_slicing_would_change_the_logits(lms):
    from dptext.lm.decoding import ScoreHead, decode_side_by_side
    from dptext.lm.loading import load_model

    model, _ = load_model(lms["llama"], causal=True)
    ids = torch.arange(5, 40)
    prompts = [[3, 4, 5, 6], [7, 8]]

    def check(head):
        got: list = []

        def draw(rows, scores):
            got.extend((r, s.clone()) for r, s in zip(rows, scores, strict=True))
            return [None] * len(rows)

        decode_side_by_side(head, prompts, draw, pad_id=0)
        assert sorted(r for r, _ in got) == [0, 1]
        for r, scores in got:
            expect = model(input_ids=torch.as_tensor([prompts[r]])).logits[0, -1, ids]
            assert torch.allclose(scores, expect, atol=1e-4)

    sliced = ScoreHead(model, ids, [3, 4, 5])
    assert sliced.weight is not None
    check(sliced)
    forward = model.forward
    model.forward = lambda *a, **k: _scaled(forward(*a, **k))  # a model that scales its logits
    full = ScoreHead(model, ids, [3, 4, 5])
    assert full.weight is None
    check(full)


def _scaled(out):
    out.logits = out.logits * 3.0
    return out


def test_calibrate_writes_bounds_beside_the_model(lms, tmp_path, capsys):
    from dptext.cli import main

    public = tmp_path / "public.txt"
    public.write_text("the cat sat on the mat\njohn went to paris\n", encoding="utf-8")
    assert main(["calibrate", "--model", lms["bert"], "--backend", "mlm",
                 "--text", str(public)]) == 0
    with open(f"{lms['bert']}/dptext_bounds.json", encoding="utf-8") as f:
        data = json.load(f)
    assert data["hi"] > data["lo"] and data["words_scored"] == 6
    m = mechanism("dpmlm", epsilon=1.0, backend="mlm", model=lms["bert"]).fit()
    assert m.bounds == pytest.approx((data["lo"], data["hi"]))


@pytest.mark.parametrize("params,message", [
    ({"backend": "gpt"}, "backend"), ({"p_add": 1.5}, "p_add"), ({"clip_low": 1.0}, "both"),
    ({"context": "left"}, "context"), ({"epsilon": 0}, "epsilon"),
])
def test_parameters_are_validated(params, message):
    with pytest.raises(DPTextError, match=message):
        mechanism("dpmlm", **{"epsilon": 1.0, **params})


def test_packaged_names_match_their_backend_and_a_model_needs_bounds(lms):
    with pytest.raises(DPTextError, match="is a causal LM"):
        mechanism("dpmlm", epsilon=1.0, backend="mlm", model="smollm2-135m-instruct").fit()
    with pytest.raises(DPTextError, match="is a masked LM"):
        mechanism("dpmlm", epsilon=1.0, backend="causal", model="minilm-mlm").fit()
    with pytest.raises(DPTextError, match="no clip bounds"):
        mechanism("dpmlm", epsilon=1.0, backend="causal", model=lms["llama"]).fit()


def test_cli_sanitize_with_dpmlm(lms, tmp_path, capsys):
    from dptext.cli import main

    src = tmp_path / "in.txt"
    src.write_text("the dog sat on a mat.\njohn went to paris\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    code = main(["sanitize", "-m", "dpmlm", "-e", "5", "-p", "backend=mlm", "-p",
                 f"model={lms['bert']}", "-p", "clip_low=-2", "-p", "clip_high=2", "-p",
                 "p_add=0.5", "-i", str(src), "-o", str(out), "--seed", "1"])
    assert code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and lines[0].endswith(".")
    report = json.loads((tmp_path / "out.txt.report.json").read_text(encoding="utf-8"))
    # stopwords: the, on, a, to; privatized: dog, sat, mat, john, went, paris
    assert report["records"] == 2 and report["kept_by_reason"] == {"stopword": 4,
                                                                   "punctuation": 1}
    assert report["privatized_by_reason"]["mechanism"] == 6


def test_causal_batch_decoding_gives_the_scores_of_one_text_at_a_time(lms):
    m = _dpmlm(lms, "llama", epsilon=5.0, keep_stopwords=False)
    texts = ["the dog sat, john went", "a big red car", "anna saw the blue river by a tree."]
    jobs = []
    for t in texts:
        aligned, _, slots, _ = m._plan(t, np.random.default_rng(0))
        jobs.append((aligned.ids, [(s.glue, s.start) for s in slots]))
    batched_rows: dict = {r: [] for r in range(len(texts))}

    def greedy_batch(rows, scores, generator):
        for r, row in zip(rows, scores, strict=True):
            batched_rows[r].append(row.clone())
        return scores.argmax(1).tolist()

    chosen = m._backend.rewrite_batch(jobs, greedy_batch)
    for r, (ids, slots) in enumerate(jobs):
        rows: list = []

        def greedy(row, rows=rows):
            rows.append(row.clone())
            return int(row.argmax())

        m._backend.rewrite(ids, slots, greedy)
        assert chosen[r] == [int(x.argmax()) for x in rows]
        assert len(batched_rows[r]) == len(rows) == len(slots)
        for batched, single in zip(batched_rows[r], rows, strict=True):
            assert torch.allclose(batched, single, atol=1e-4)
