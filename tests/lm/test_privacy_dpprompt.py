"""DP-Prompt never draws a special or added control token (issue 11, item 2): a tokenizer with
tokens registered only in ``added_tokens_decoder`` (as SmolLM2's ids 3-16, ``<repo_name>``,
``<filename>``, ...) next to its ``all_special_ids``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tiny_tokenizers import byte_level_bpe  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.mechanisms.dpprompt import control_token_ids  # noqa: E402

CORPUS = ["the cat sat on the mat", "a dog ran to the big house", "my name is anna",
          "john went to paris", "the red car saw a green tree by the river road"] * 4
CONTROL = ["<repo_name>", "<filename>", "<gh_stars>"]


# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama-added")
    tk = byte_level_bpe(CORPUS, ["<|endoftext|>", *CONTROL[:2]], vocab_size=330)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>",
                                  bos_token="<|endoftext|>")
    tok.add_tokens([CONTROL[2]], special_tokens=True)  # appended: an added special token
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                      max_position_embeddings=256, eos_token_id=0, bos_token_id=0)
    torch.manual_seed(2)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():  # make the control tokens the most likely next tokens
        ids = tok.convert_tokens_to_ids(CONTROL)
        model.lm_head.weight[ids] = 0.0
        model.lm_head.weight[ids, 0] = 50.0 * torch.sign(model.lm_head.weight[:, 0].mean() + 1)
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return str(path), ids, tok


def test_the_tokenizer_has_control_tokens_outside_all_special_ids(model_dir):
    _, ids, tok = model_dir
    added = {int(i) for i in tok.added_tokens_decoder}
    assert set(ids) <= added
    assert set(ids) - set(tok.all_special_ids)  # the old rule (all_special_ids) missed these
    assert set(ids) <= control_token_ids(tok) and tok.eos_token_id not in control_token_ids(tok)


def _drawn_ids(path, monkeypatch, rule=None):
    """The token ids DP-Prompt draws for 40 texts (recorded at the sampler)."""
    import dptext.mechanisms.dpprompt as dpprompt

    if rule is not None:
        monkeypatch.setattr(dpprompt, "control_token_ids", rule)
    m = mechanism("dpprompt", epsilon=8.0, model=path, clip_low=-2.0, clip_high=2.0).fit()
    drawn: list[int] = []
    original = m._draw

    def recording(scores, generator):
        cols = original(scores, generator)
        drawn.extend(int(m._allowed[c]) for c in cols)
        return cols

    monkeypatch.setattr(m, "_draw", recording)
    m.privatize_batch(["the dog sat on a mat by the big red house"] * 40, rng=0)
    return m, drawn


def test_dpprompt_never_draws_a_control_token(model_dir, monkeypatch):
    path, ids, tok = model_dir
    m, drawn = _drawn_ids(path, monkeypatch)
    assert not set(m._allowed.tolist()) & set(ids) and tok.eos_token_id in m._allowed.tolist()
    assert len(drawn) > 100 and not set(drawn) & set(ids)


def test_the_old_rule_draws_them(model_dir, monkeypatch):
    # the check above can fail: with only all_special_ids excluded they are drawn
    path, ids, tok = model_dir

    def old_rule(tokenizer):
        return set(tokenizer.all_special_ids) - {tokenizer.eos_token_id}

    _, drawn = _drawn_ids(path, monkeypatch, old_rule)
    assert set(drawn) & set(ids)
