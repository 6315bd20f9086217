"""DP-MLM building blocks without a model: candidates, alignment, windows, sampling, bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from dptext.errors import DPTextError
from dptext.lm.alignment import align
from dptext.lm.bounds import percentile_rule
from dptext.lm.candidates import candidate_set
from dptext.lm.sampling import clipped_log_probs, sample, temperature
from dptext.lm.windows import centred, masked_window
from dptext.text import split_words

torch = pytest.importorskip("torch")
WORDS = "the a cat dog sat on mat big house run walk".split()


def wordpiece_tokenizer() -> PreTrainedTokenizerFast:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + WORDS + ["##s", "##ing", "##ed", "!"])}
    tk = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def test_candidates_exclude_specials_continuations_and_punctuation():
    tok = wordpiece_tokenizer()
    cands = candidate_set(tok)
    assert sorted(cands.words) == sorted(WORDS)
    assert set(cands.ids.tolist()).isdisjoint(tok.all_special_ids)
    assert [tok.convert_ids_to_tokens(int(i)) for i in cands.ids] == cands.words


def test_alignment_masks_multi_token_words_as_one_range():
    tok = wordpiece_tokenizer()
    text = "the cats walking, a dog!"
    parts = split_words(text)
    al = align(tok, text, parts)
    toks = tok.convert_ids_to_tokens(al.ids)
    spans = [toks[s:e] for s, e in zip(al.starts, al.ends, strict=True)]
    assert spans == [["the"], ["cat", "##s"], ["walk", "##ing"], ["a"], ["dog"]]


def test_alignment_of_a_long_text_points_at_the_right_word():
    tok = wordpiece_tokenizer()
    words = [WORDS[i % len(WORDS)] for i in range(500)]
    text = " ".join(words)
    al = align(tok, text, split_words(text))
    assert len(al.starts) == 500
    for k in (0, 137, 499):
        assert tok.convert_ids_to_tokens(al.ids[al.starts[k]]) == words[k]


@pytest.mark.parametrize("n,start,end,budget", [(10, 3, 4, 20), (100, 0, 1, 9), (100, 99, 100, 9),
                                                (100, 50, 53, 10)])
def test_centred_window_holds_the_word_and_fits(n, start, end, budget):
    lo, hi = centred(n, start, end, budget)
    assert 0 <= lo <= start and end <= hi <= n and hi - lo == min(n, budget)


def test_masked_window_keeps_the_neighbours_of_the_mask():
    ids = list(range(100))
    out = masked_window(ids, 40, 43, 9, -1)
    assert out == [36, 37, 38, 39, -1, 43, 44, 45, 46]
    assert masked_window(ids, 98, 100, 5, -1) == [94, 95, 96, 97, -1]
    assert masked_window(ids, 5, 5, 3, -1) == [4, -1, 5]  # an insertion point


def test_sampling_matches_the_clipped_softmax():
    gen = torch.Generator().manual_seed(0)
    scores = torch.tensor([[-9.0, 0.0, 1.0, 2.0, 8.0]])
    eps, lo, hi = 6.0, -1.0, 3.0
    probs = clipped_log_probs(scores, epsilon=eps, lo=lo, hi=hi).exp()[0].numpy()
    t = temperature(eps, lo, hi)
    expected = np.exp(np.clip([-9.0, 0.0, 1.0, 2.0, 8.0], lo, hi) / t)
    assert np.allclose(probs, expected / expected.sum(), atol=1e-6)
    n = 20000
    draws = sample(scores.expand(n, -1), epsilon=eps, lo=lo, hi=hi, generator=gen)
    observed = np.bincount(draws, minlength=5)
    chi2 = float(((observed - n * probs) ** 2 / (n * probs)).sum())
    assert chi2 < 18.47  # chi-square, 4 degrees of freedom, p = 0.001


def test_each_row_is_drawn_from_its_own_clipped_softmax():
    gen = torch.Generator().manual_seed(3)
    rows = torch.tensor([[5.0, 0.0, 0.0, -5.0], [-5.0, 0.0, 2.0, 5.0]])
    eps, lo, hi = 4.0, -2.0, 3.0
    probs = clipped_log_probs(rows, epsilon=eps, lo=lo, hi=hi).exp().numpy()
    n = 20000
    draws = sample(rows.repeat(n, 1), epsilon=eps, lo=lo, hi=hi, generator=gen).reshape(n, 2)
    for r in range(2):
        observed = np.bincount(draws[:, r], minlength=4)
        chi2 = float(((observed - n * probs[r]) ** 2 / (n * probs[r])).sum())
        assert chi2 < 16.27  # chi-square, 3 degrees of freedom, p = 0.001


def test_exact_probability_ratio_is_bounded_by_e_epsilon():
    rng = np.random.default_rng(1)
    a, b = (torch.tensor(rng.normal(0, 8, (1, 200)), dtype=torch.float32) for _ in range(2))
    eps, lo, hi = 2.0, -3.0, 5.0
    la = clipped_log_probs(a, epsilon=eps, lo=lo, hi=hi)
    lb = clipped_log_probs(b, epsilon=eps, lo=lo, hi=hi)
    assert float((la - lb).abs().max()) <= eps + 1e-5
    # without clipping the same scores break the bound: the clip is what delivers it
    unclipped = torch.log_softmax(a / temperature(eps, lo, hi), -1) - torch.log_softmax(
        b / temperature(eps, lo, hi), -1)
    assert float(unclipped.abs().max()) > eps


def test_percentile_rule():
    scores = np.arange(20, dtype=float).reshape(4, 5)  # row maxima 4, 9, 14, 19
    lo, hi = percentile_rule(scores)
    assert lo == pytest.approx(9.5) and hi == pytest.approx(11.5)
    with pytest.raises(DPTextError):
        percentile_rule(np.zeros((3, 4)))
    assert math.isfinite(temperature(1.0, lo, hi))


@pytest.mark.parametrize("epsilon", [2.0, 150.0, 3000.0])  # 3000: log-weights span > 600 nats
def test_sampler_realizes_the_clipped_softmax_exactly(epsilon):
    """lm.sampling.sample draws from the sorted clipped scores, then uniformly among the
    candidates of the drawn score: the law it realizes (computed from its own tables, also far
    below 2^-53 and below the double range) is the clipped softmax to 1e-9 in log space, for
    every candidate, ties at the clip bounds and exact duplicates included."""
    from dptext.lm.sampling import realized_log_probabilities

    rng = np.random.default_rng(7)
    s = rng.normal(-8.0, 4.0, (2, 31_664)).astype(np.float32)
    s[:, :50] = s[:, 50:100]  # exact duplicates inside the clip range
    lo, hi = -12.0, 2.0
    lp = realized_log_probabilities(torch.from_numpy(s), epsilon=epsilon, lo=lo, hi=hi)
    z = np.clip(s.astype(np.float64), lo, hi) / temperature(epsilon, lo, hi)
    ref = z - np.logaddexp.reduce(z, axis=1, keepdims=True)
    assert np.isfinite(lp).all()
    np.testing.assert_allclose(lp, ref, atol=1e-9, rtol=0)
    assert np.abs(lp[0] - lp[1]).max() <= epsilon * (1 + 1e-12)


def test_tied_candidates_are_drawn_uniformly():
    """Three candidates above hi (clipped to the same score) and two exactly equal ones: each
    of a tie gets its own share (chi-square on 5 outcomes against the clipped softmax)."""
    gen = torch.Generator().manual_seed(11)
    scores = torch.tensor([[9.0, 5.0, 7.0, 0.5, 0.5]])
    eps, lo, hi = 3.0, -1.0, 2.0
    probs = clipped_log_probs(scores, epsilon=eps, lo=lo, hi=hi).exp()[0].numpy()
    n = 30000
    draws = sample(scores.expand(n, -1), epsilon=eps, lo=lo, hi=hi, generator=gen)
    observed = np.bincount(draws, minlength=5)
    chi2 = float(((observed - n * probs) ** 2 / (n * probs)).sum())
    assert chi2 < 18.47  # chi-square, 4 degrees of freedom, p = 0.001


@pytest.mark.slow
def test_gguf_conversion_bar_only_on_a_terminal():
    """Issue 36: without a terminal the GGUF conversion prints one stage line, not
    transformers' per-tensor bar (~200 redraws in a log); the bar is restored afterwards."""
    import io

    pytest.importorskip("transformers")
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    from dptext.lm.loading import gguf_bars

    def drawn(show: bool) -> str:
        buf = io.StringIO()
        with gguf_bars(show):
            for _ in gguf_utils.tqdm(range(3), desc="Converting", file=buf):
                pass
        return buf.getvalue()

    original = gguf_utils.tqdm
    assert drawn(False) == ""
    assert "Converting" in drawn(True)
    assert gguf_utils.tqdm is original


def test_gguf_is_parsed_once_during_the_conversion(tmp_path):
    """Issue 36: inside gguf_parsed_once() a GGUF file is parsed once however often
    transformers opens it, the name map is built once per (arch, layers), the parsed content is
    the file's, and both gguf names are restored afterwards."""
    gguf = pytest.importorskip("gguf")
    from dptext.lm.loading import gguf_parsed_once

    path = tmp_path / "t.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with gguf_parsed_once():
        a, b = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
        assert a is b
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)
        (t,) = a.tensors
        assert np.array_equal(np.asarray(t.data).ravel(), np.arange(12, dtype=np.float32))
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is name_map
    assert gguf.GGUFReader(path) is not gguf.GGUFReader(path)
