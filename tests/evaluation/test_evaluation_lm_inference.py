"""The LM token inference attack on tiny models built here (no download): a model rigged to copy
(an induction rule: predict what followed the previous occurrence of the current token) recovers
every unchanged word and no changed one; the batched fast path equals the plain forward."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tiny_tokenizers import byte_level_bpe  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from dptext.evaluation.lm_inference import (  # noqa: E402
    HEAD,
    SECOND,
    _predict,
    _prepare,
    lm_token_inference,
)

WORDS = ("cat dog sat on mat big small red house run walk john paris anna river tree car road "
         "blue green went saw quick brown fox jumps over lazy").split()
TEXTS = ["the cat sat on a mat", "John went to Paris, by car.", "a quick brown fox jumps over",
         "anna saw the big red house"]
CORPUS = TEXTS + [" ".join(WORDS), HEAD + SECOND] * 3


# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    tk = byte_level_bpe(CORPUS, ["<|endoftext|>"], vocab_size=400)
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>")


class CopyLM(torch.nn.Module):
    """Logits: one-hot on the token that followed the previous occurrence of the current one."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab = vocab

    def forward(self, input_ids, attention_mask=None):
        logits = torch.zeros(*input_ids.shape, self.vocab)
        for b, ids in enumerate(input_ids.tolist()):
            last: dict[int, int] = {}
            for t, tok in enumerate(ids):
                if tok in last:
                    logits[b, t, ids[last[tok] + 1]] = 1.0
                last[tok] = t
        return SimpleNamespace(logits=logits)


def everything(word: str) -> bool:
    return True


def test_copying_model_on_unchanged_text_always_succeeds(tokenizer):
    out = lm_token_inference(CopyLM(len(tokenizer)), tokenizer, TEXTS, TEXTS, everything,
                             batch_size=3)
    words = sum(len(t.replace(",", " ").split()) for t in TEXTS)
    assert out.words == words and out.texts == len(TEXTS) and out.texts_skipped == 0
    assert out.success == 1.0 and out.success_kept == 1.0 and out.copy_rate == 1.0
    assert out.success_changed is None
    # every scored word is one token of this tokenizer: the whole word is predicted too
    assert out.success_word == 1.0


def test_copying_model_fails_exactly_on_the_changed_words(tokenizer):
    sanitized = ["the dog sat on a mat", "anna went to river, by car.",
                 "a quick brown tree jumps over", "anna saw the big blue house"]
    out = lm_token_inference(CopyLM(len(tokenizer)), tokenizer, TEXTS, sanitized, everything)
    changed = 5  # cat, John, Paris, fox, red
    assert out.words == 24
    assert out.copy_rate == pytest.approx(1 - changed / out.words)
    assert out.success == pytest.approx(out.copy_rate)
    assert out.success_changed == 0.0 and out.success_kept == 1.0


def test_only_vocabulary_words_are_scored_and_misaligned_texts_skipped(tokenizer):
    vocab = {"cat", "mat", "paris"}
    sanitized = [TEXTS[0], "John went to Paris by car and more words.", TEXTS[2], TEXTS[3]]
    out = lm_token_inference(CopyLM(len(tokenizer)), tokenizer, TEXTS, sanitized,
                             lambda w: w.lower() in vocab)
    assert out.texts_skipped == 1 and out.texts == 3
    assert out.words == 2  # cat, mat ("paris" was in the skipped text)
    assert out.success == 1.0


def test_scored_position_is_the_token_before_each_word(tokenizer):
    item = _prepare(tokenizer, "John went to Paris, by car.", "anna went to river, by car.",
                    everything, max_words=4)
    assert item is not None and len(item.positions) == 4  # max_words caps the words
    ids = item.ids
    for pos, target in zip(item.positions.tolist(), ["anna", "went", "to", "river"],
                           strict=True):
        assert tokenizer.decode([ids[pos + 1]]).strip().lower() == target
    assert item.targets == ["john", "went", "to", "paris"]
    assert item.changed.tolist() == [True, False, False, True]


def test_fast_path_equals_the_plain_forward_on_a_random_llama(tokenizer):
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                      max_position_embeddings=256, eos_token_id=0, bos_token_id=0)
    torch.manual_seed(3)
    model = LlamaForCausalLM(cfg).eval()

    class Plain(torch.nn.Module):  # no get_output_embeddings: the full-logits path
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, **kw):
            return self.inner(**kw)

    items = [_prepare(tokenizer, t, t, everything, 64) for t in TEXTS]
    fast = _predict(model, items, 0, batch_size=2)  # padded batches of unequal lengths
    plain = _predict(Plain(), items, 0, batch_size=1)  # no padding at all
    for a, b in zip(fast, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    out = lm_token_inference(model, tokenizer, TEXTS, TEXTS, everything)
    assert 0.0 <= out.success <= 1.0 and out.words == 24


def test_grid_cell_with_a_local_model(tokenizer, tmp_path, monkeypatch):
    import wordfreq

    from dptext.embeddings import EmbeddingSpace
    from dptext.evaluation.grid import GridConfig, run_grid

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                      max_position_embeddings=512, eos_token_id=0, bos_token_id=0)
    torch.manual_seed(4)
    path = tmp_path / "llama"
    tokenizer.save_pretrained(path)
    LlamaForCausalLM(cfg).save_pretrained(path)
    words = [w for w in wordfreq.top_n_list("en", 300) if w.isalpha()][:120]
    space = EmbeddingSpace(words, np.random.default_rng(2).standard_normal((len(words), 4)),
                           name="lm-grid")
    config = GridConfig(mechanisms=["custext"], epsilons={"custext": [3.0]},
                        metrics=["lm_inference"], lm_texts=6, lm_model=str(path),
                        encoder="hashing")
    records = run_grid(config, tmp_path / "grid", space=space, progress=False)
    by = {r["mechanism"]: r["values"] for r in records}
    assert set(by) == {"noiseless", "random", "custext"}
    for values in by.values():
        assert values["texts"] + values["texts_skipped"] == 6 and values["words"] > 0
    assert by["noiseless"]["copy_rate"] == 1.0
    assert by["random"]["copy_rate"] < 0.2
    assert (tmp_path / "grid" / "lm_inference_vs_epsilon.png").is_file()
    assert "LM token inference" in (tmp_path / "grid" / "report.md").read_text()
