"""Federated fine-tuning of a pretrained causal LM on its last blocks (training/causal_lm.py):
with a tiny random LlamaForCausalLM and a word-level tokenizer built here, and one short run of
the packaged SmolLM2 through the CLI."""

import json
import math

import numpy as np
import pytest
import torch

from dptext.cli import main
from dptext.errors import DPTextError
from dptext.training.causal_lm import CausalLMTask
from dptext.training.corpus import UserCorpus
from dptext.training.federated import clip_updates, global_norms, local_updates
from dptext.training.trainer import RoundBatch, TrainConfig, round_updates, train

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

SENTENCES = [
    "the cat sat on the mat .",
    "a dog ran in the park today .",
    "we like the warm sun in the morning and the cool rain at night .",
    "my friend reads books .",
]


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    split = pre_tokenizers.Whitespace()
    words = sorted({w for s in SENTENCES for w, _ in split.pre_tokenize_str(s)})
    vocab = {"<|endoftext|>": 0, "[UNK]": 1, **{w: i + 2 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = split
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                                   eos_token="<|endoftext|>")


def _model(vocab_size, layers=3, seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, tie_word_embeddings=True)
    return LlamaForCausalLM(config).eval()


@pytest.fixture()
def task():
    tok = _tokenizer()
    return CausalLMTask(_model(len(tok.get_vocab())), tok, blocks=2, max_len=16)


def _corpus(n_users, per_user):
    sentences = tuple(SENTENCES[(u + j) % len(SENTENCES)]
                      for u in range(n_users) for j in range(per_user))
    return UserCorpus(tuple(f"u{u}" for u in range(n_users)), sentences,
                      np.repeat(np.arange(n_users), per_user), (), (),
                      tuple(() for _ in sentences))


def _trainable_names(n_layers, blocks):
    from itertools import product

    parts = ("input_layernorm.weight", "post_attention_layernorm.weight",
             "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
             "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
             "mlp.down_proj.weight")
    return {f"model.layers.{i}.{p}" for i, p in product(range(n_layers - blocks, n_layers), parts)
            } | {"model.norm.weight"}


def test_loss_is_the_models_own_token_nll(task):
    rows = task.rows(SENTENCES)[:]
    nll, count = task.loss(task.init(), rows)
    ids, lengths = task.token_ids(SENTENCES)
    assert ids[:, 0].eq(0).all()  # the <|endoftext|> start token
    with torch.no_grad():
        for i in range(len(SENTENCES)):
            x = ids[i:i + 1, : lengths[i]]
            ref = task.model(input_ids=x, labels=x).loss * (lengths[i] - 1)
            assert count[i] == lengths[i] - 1
            assert float(nll[i]) == pytest.approx(float(ref), rel=1e-5)


def test_rows_are_computed_once_and_shared_by_subsets(task):
    rows = task.rows(SENTENCES)
    calls = []
    original = task.prefix
    task.prefix = lambda ids, lengths: calls.append(len(ids)) or original(ids, lengths)
    sub = rows.subset(np.array([False, True, True, False]))
    assert len(sub) == 2 and sub.shape == (2, 17, task.hidden + 2)
    first = sub[np.array([1])]
    assert torch.equal(first[0], rows[2])
    assert calls == [1]  # rows[2] was computed by the subset's access
    torch.testing.assert_close(rows[:], task.prefix(*task.token_ids(SENTENCES)))


def test_one_round_changes_only_the_last_blocks_and_the_final_norm(task):
    before = {k: v.clone() for k, v in task.model.state_dict().items()}
    corpus = _corpus(3, 2)
    config = TrainConfig(algo="uedp", rounds=1, q_u=1.0, q_e=1.0, q_s=1.0, z=0.5, beta=0.5,
                         local_lr=0.5, seed=0)
    task.test = task.rows(SENTENCES)[:]
    params, metrics = train(corpus, task.rows(corpus.sentences), task, config)
    assert set(params) == _trainable_names(3, 2)
    for name, value in params.items():
        assert not torch.equal(value, before[name]), name
    after = task.model.state_dict()
    assert all(torch.equal(after[k], before[k]) for k in before)  # nothing changed in place
    assert metrics[0]["users"] == 3 and math.isfinite(metrics[0]["perplexity"])


def test_zero_blocks_trains_the_final_norm_only():
    tok = _tokenizer()
    task = CausalLMTask(_model(len(tok.get_vocab())), tok, blocks=0, max_len=16)
    assert set(task.init()) == {"model.norm.weight"}
    rows = task.rows(SENTENCES)[:].unsqueeze(0)
    up = local_updates(task.loss, task.init(), rows, torch.ones(1, 4), torch.tensor([4.0]),
                       steps=1, lr=0.5)
    assert up["model.norm.weight"].abs().sum() > 0


def test_clipping_bounds_the_global_norm_of_the_trainable_update(task):
    rows = task.rows(SENTENCES)[:]
    tokens = torch.stack([rows, rows.flip(0), rows[[0, 0, 2, 3]]])
    weights = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0], [2.0, 1.0, 1.0, 0.0]])
    batch = RoundBatch(task.trim(tokens), weights, torch.tensor([4.0, 2.0, 3.0]))
    config = TrainConfig(algo="uedp", local_lr=0.5, users_per_chunk=2)
    updates = round_updates(task.init(), batch, config, task.loss)
    assert set(updates) == _trainable_names(3, 2)
    beta = 0.5 * float(global_norms(updates).min())
    clipped = global_norms(clip_updates(updates, beta))
    assert (global_norms(updates) > beta).all()
    assert torch.allclose(clipped, torch.full((3,), beta), rtol=1e-5)


def test_vmap_over_users_matches_training_each_user_alone(task):
    rows = task.rows(SENTENCES)[:]
    tokens = torch.stack([rows, rows.flip(0), rows[[1, 1, 2, 0]]])
    weights = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.5]])
    sizes = torch.tensor([4.0, 2.0, 4.0])
    params = task.init()
    together = local_updates(task.loss, params, tokens, weights, sizes, steps=2, lr=0.3)
    for u in range(3):
        alone = local_updates(task.loss, params, tokens[u:u + 1], weights[u:u + 1],
                              sizes[u:u + 1], steps=2, lr=0.3)
        for k in params:
            torch.testing.assert_close(together[k][u], alone[k][0], rtol=1e-4, atol=1e-6)


def test_noiseless_training_lowers_the_loss_on_a_repeated_corpus(task):
    corpus = _corpus(4, 4)
    task.test = task.rows(SENTENCES)[:]
    start = task.evaluate(task.init())["loss"]
    config = TrainConfig(algo="noiseless", rounds=20, q_u=1.0, local_steps=5, local_lr=3.0,
                         seed=1)
    _, metrics = train(corpus, task.rows(corpus.sentences), task, config)
    losses = [m["loss"] for m in metrics]
    assert losses[-1] < start - 1.0, (start, losses)


def test_bad_block_counts_and_unsupported_models_are_refused():
    tok = _tokenizer()
    model = _model(len(tok.get_vocab()))
    for blocks in (4, -1):
        with pytest.raises(DPTextError, match="trainable blocks"):
            CausalLMTask(model, tok, blocks=blocks)
    forward = model.forward

    def shifted(**kwargs):  # a model whose forward is not its blocks run one by one
        out = forward(**kwargs)
        out.logits = out.logits + 1.0
        return out

    model.forward = shifted
    with pytest.raises(DPTextError, match="not a supported"):
        CausalLMTask(model, tok, blocks=1)


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "users.jsonl"
    rows = [{"user": f"u{u}", "text": " ".join(SENTENCES[(u + j) % 4] for j in range(2))}
            for u in range(10)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    tok = _tokenizer()
    _model(len(tok.get_vocab())).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_cli_trains_a_local_causal_lm_and_saves_only_the_trainable_tensors(
        corpus_file, tiny_dir, tmp_path, capsys):
    argv = ["train", "--algo", "uedp", "--model", str(tiny_dir), "--trainable-blocks", "1",
            "--data", str(corpus_file), "--output", str(tmp_path), "--rounds", "2",
            "--q-u", "0.5", "--z", "1.0", "--seed", "0", "--no-progress", "--max-len", "12",
            "--local-lr", "0.5"]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["model"] == str(tiny_dir) and metrics["trainable_blocks"] == 1
    assert metrics["config"]["max_len"] == 12 and metrics["config"]["users_per_chunk"] == 4
    assert metrics["pretrained"]["perplexity"] > 1
    assert [r["round"] for r in metrics["rounds"]] == [1, 2]
    assert metrics["rounds"][-1]["epsilon"] > 0
    ckpt = torch.load(tmp_path / "checkpoint.pt")
    assert set(ckpt["params"]) == _trainable_names(3, 1)
    assert ckpt["trainable_blocks"] == 1 and ckpt["start_token_id"] == 0
    assert "pretrained" in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (["--model", "TINY", "--trainable-blocks", "7"], "trainable blocks must be in 0..3"),
    (["--model", "TINY", "--trainable-blocks", "-1"], "--trainable-blocks must be >= 0"),
    (["--model", "/no/such/model"], "expected lstm, smollm2 or a local"),
    (["--trainable-blocks", "2"], "--trainable-blocks needs --model"),
    (["--model", "smollm2", "--task", "cls"], "--task nwp only"),
    (["--model", "TINY", "--max-len", "0"], "--max-len must be >= 1"),
    (["--model", "TINY", "--max-len", "64"], "max_len must be in 1..63 tokens"),
    (["--model", "TINY", "--local-lr", "0"], "--local-lr must be finite and > 0"),
])
def test_cli_rejects_bad_model_settings(corpus_file, tiny_dir, tmp_path, capsys, extra,
                                        message):
    extra = [str(tiny_dir) if a == "TINY" else a for a in extra]
    argv = ["train", "--algo", "noiseless", "--data", str(corpus_file), "--output",
            str(tmp_path), "--rounds", "1", "--no-progress", *extra]
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and message in errors[0]


def test_cli_smoke_run_of_the_packaged_smollm2(tmp_path):
    """One round, three users (one held out), a few sentences of the real model."""
    path = tmp_path / "users.jsonl"
    texts = ["The Prime Minister answered questions in the House. The vote was close.",
             "My constituents in Leeds want better trains. The minister should listen.",
             "I thank the honourable member for her question. We will publish the report."]
    path.write_text("".join(json.dumps({"user": f"mp{i}", "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    out = tmp_path / "out"
    out.mkdir()
    argv = ["train", "--algo", "noiseless", "--model", "smollm2", "--trainable-blocks", "1",
            "--data", str(path), "--output", str(out), "--rounds", "1", "--q-u", "1",
            "--max-len", "16", "--seed", "0", "--no-progress"]
    assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    first = metrics["rounds"][0]
    assert metrics["test_users"] == 1 and first["users"] == 2
    assert 1 < metrics["pretrained"]["perplexity"] < 10_000
    assert math.isfinite(first["perplexity"]) and first["perplexity"] != pytest.approx(
        metrics["pretrained"]["perplexity"], rel=1e-9)
    params = torch.load(out / "checkpoint.pt")["params"]
    assert set(params) == _trainable_names(30, 1)


@pytest.mark.parametrize("algo,extra", [("userdp", ["--z", "0.5"]), ("deid", [])])
def test_cli_baselines_with_a_causal_lm(corpus_file, tiny_dir, tmp_path, algo, extra):
    argv = ["train", "--algo", algo, "--model", str(tiny_dir), "--data", str(corpus_file),
            "--output", str(tmp_path), "--rounds", "1", "--q-u", "0.5", "--seed", "0",
            "--no-progress", "--max-len", "12", "--categories", "PERSON", *extra]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["trainable_blocks"] == 2
    assert (metrics["rounds"][0]["epsilon"] is None) == (algo == "deid")
    assert set(torch.load(tmp_path / "checkpoint.pt")["params"]) == _trainable_names(3, 2)


# ---------------------------------------------------------------- LoRA adapters (peft)
def _lora_names(n_layers, blocks):
    from dptext.training.causal_lm import LORA_MODULES

    where = {m: "self_attn" if m.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp"
             for m in LORA_MODULES}
    return {f"model.layers.{i}.{where[m]}.{m}.lora_{ab}.default.weight"
            for i in range(n_layers - blocks, n_layers) for m in LORA_MODULES for ab in "AB"}


@pytest.fixture()
def lora_task():
    pytest.importorskip("peft")
    tok = _tokenizer()
    return CausalLMTask(_model(len(tok.get_vocab())), tok, blocks=2, max_len=16, lora_rank=4)


def test_lora_trains_only_the_adapters_and_starts_as_the_pretrained_model(lora_task):
    task = lora_task
    tok = _tokenizer()
    plain = CausalLMTask(_model(len(tok.get_vocab())), tok, blocks=2, max_len=16)
    init = task.init(torch.Generator().manual_seed(3))
    assert set(init) == _lora_names(3, 2)
    # 7 linear layers a block, rank 4: A is [4, in], B is [out, 4]
    q = init["model.layers.2.self_attn.q_proj.lora_A.default.weight"]
    assert q.shape == (4, 32) and q.abs().max() <= 1 / math.sqrt(32) and q.abs().sum() > 0
    assert all(not v.any() for k, v in init.items() if ".lora_B." in k)
    torch.testing.assert_close(init, task.init(torch.Generator().manual_seed(3)))
    # B = 0: the untrained model is the pretrained one, sentence by sentence
    task.test = task.rows(SENTENCES)[:]
    plain.test = plain.rows(SENTENCES)[:]
    torch.testing.assert_close(task.sentence_losses(init), plain.sentence_losses(plain.init()))
    before = {k: v.clone() for k, v in task.model.state_dict().items()}
    corpus = _corpus(3, 2)
    config = TrainConfig(algo="userdp", rounds=2, q_u=1.0, z=0.5, beta=0.5, local_lr=0.5,
                         seed=0)
    params, metrics = train(corpus, task.rows(corpus.sentences), task, config)
    assert set(params) == _lora_names(3, 2)
    assert all(params[k].abs().sum() > 0 for k in params if ".lora_B." in k)
    after = task.model.state_dict()
    assert all(torch.equal(after[k], before[k]) for k in before)  # the model is never changed
    assert math.isfinite(metrics[-1]["perplexity"])


def test_lora_updates_are_vmapped_per_user_and_load_into_a_peft_model(lora_task):
    from dptext.training.causal_lm import add_lora

    task = lora_task
    rows = task.rows(SENTENCES)[:]
    tokens = torch.stack([rows, rows.flip(0)])
    weights = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 0.0, 0.0]])
    sizes = torch.tensor([4.0, 2.0])
    params = task.init(torch.Generator().manual_seed(0))
    together = local_updates(task.loss, params, tokens, weights, sizes, steps=2, lr=0.3)
    for u in range(2):
        alone = local_updates(task.loss, params, tokens[u:u + 1], weights[u:u + 1],
                              sizes[u:u + 1], steps=2, lr=0.3)
        for k in params:
            torch.testing.assert_close(together[k][u], alone[k][0], rtol=1e-4, atol=1e-6)
    # the trained adapters, loaded by name into a fresh peft-injected model, give its logits
    trained = {k: params[k] + together[k][0] for k in params}
    model = _model(task.model.config.vocab_size)
    add_lora(model, [1, 2], 4)
    missing = model.load_state_dict(trained, strict=False)
    assert not missing.unexpected_keys
    ids, lengths = task.token_ids(SENTENCES[:1])
    n = int(lengths[0])
    with torch.no_grad():
        ours = task._logits(trained, rows[:1, :n])
        theirs = model(input_ids=ids[:, :n]).logits[:, :-1]
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_cli_trains_lora_adapters_and_refuses_bad_lora_settings(corpus_file, tiny_dir,
                                                                tmp_path, capsys):
    pytest.importorskip("peft")
    argv = ["train", "--algo", "userdp", "--model", str(tiny_dir), "--lora-rank", "2",
            "--trainable-blocks", "3", "--data", str(corpus_file), "--rounds", "1",
            "--q-u", "1", "--z", "1", "--seed", "0", "--no-progress", "--max-len", "12",
            "--local-lr", "0.5"]
    assert main([*argv, "--output", str(tmp_path / "ok")]) == 0
    metrics = json.loads((tmp_path / "ok" / "metrics.json").read_text())
    assert metrics["lora_rank"] == 2 and metrics["trainable_blocks"] == 3
    ckpt = torch.load(tmp_path / "ok" / "checkpoint.pt")
    assert set(ckpt["params"]) == _lora_names(3, 3) and ckpt["lora_rank"] == 2
    capsys.readouterr()
    for extra, message in ((["--lora-rank", "0"], "--lora-rank must be >= 1"),
                           (["--trainable-blocks", "0"], "--trainable-blocks must be >= 1")):
        bad = [*argv, *extra, "--output", str(tmp_path / "bad")]
        assert main(bad) == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
        assert len(errors) == 1 and message in errors[0], errors
    lstm = ["train", "--algo", "noiseless", "--data", str(corpus_file), "--rounds", "1",
            "--lora-rank", "2", "--output", str(tmp_path / "lstm")]
    assert main(lstm) == 2
    assert "--lora-rank needs --model" in capsys.readouterr().err
