"""The masked backend's exact speed-ups (issue 36), on tiny random BERT and RoBERTa models
built here: the last layer computed at the mask alone gives the full layer's scores."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tiny_lms import CLIP, _bert, _roberta  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.lm import masked  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

TEXTS = ["the big dog sat on a mat, john went to paris", "anna saw the river",
         "a red car went on the road by the green tree and the blue house"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlm-speed")
    return {"bert": _bert(root / "bert"), "roberta": _roberta(root / "roberta")}


def _inputs(m, texts):
    plans = [m._plan(t, np.random.default_rng(0)) for t in texts]
    return [m._backend.input_ids(a.ids, s.start, s.end) for a, _, slots, _ in plans
            for s in slots]


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_last_layer_at_the_mask_gives_the_full_layers_scores(models, kind):
    """Texts of three lengths in padded passes: the scores with the last layer at the mask
    equal the full layer's up to float reassociation, and that layer's feed-forward block saw
    one position per input (the full layer: every position of each padded pass)."""
    m = mechanism("dpmlm", backend="mlm", model=models[kind], epsilon=5.0,
                  keep_stopwords=False, **CLIP).fit()
    backend = m._backend
    assert backend.last_layer_at_mask
    inputs = _inputs(m, TEXTS)
    assert len({len(x) for x in inputs}) >= 3  # padding and the attention mask are exercised
    rows: dict[str, list] = {"fast": [], "full": []}
    layer = m._lm[0].base_model.encoder.layer[-1]
    hook = layer.intermediate.register_forward_hook(
        lambda _m, args, _out: rows[run].append(tuple(args[0].shape[:2])))
    try:
        run = "fast"
        fast = backend.scores(inputs)
        last, backend._last = backend._last, None
        run = "full"
        full = backend.scores(inputs)
        backend._last = last
    finally:
        hook.remove()
    widths = [max(len(inputs[i]) for i in g) for g in backend.batches(inputs)]
    assert sorted(rows["fast"]) == sorted((len(g), 1) for g in backend.batches(inputs))
    assert sorted(rows["full"]) == sorted((len(g), w) for g, w in
                                          zip(backend.batches(inputs), widths, strict=True))
    assert "forward" not in vars(layer)  # the layer is itself again after the pass
    assert torch.allclose(fast, full, atol=1e-5, rtol=0)
    one = [list(range(len(inputs)))]  # every input in one padded pass: the attention mask
    padded = backend._scores(inputs, one)
    last, backend._last = backend._last, None
    try:
        padded_full = backend._scores(inputs, one)
    finally:
        backend._last = last
    assert torch.allclose(padded, padded_full, atol=1e-5, rtol=0)
    assert torch.allclose(padded, full, atol=1e-5, rtol=0)
    assert fast.shape == (len(inputs), len(backend.candidate_ids))


def test_a_layer_the_probe_rejects_runs_in_full(models, monkeypatch):
    """A last layer whose mask-only forward does not reproduce the full layer (here: a wrong
    one, patched in) is caught by the probe at fit time; the backend then runs the full layer
    and the scores are the full layer's."""
    def wrong(layer, local):
        def forward(hidden_states, attention_mask=None, *args, **kwargs):
            return hidden_states[torch.arange(len(local.at)), local.at].unsqueeze(1)
        return forward

    exact = mechanism("dpmlm", backend="mlm", model=models["bert"], epsilon=5.0,
                      keep_stopwords=False, **CLIP).fit()
    inputs = _inputs(exact, TEXTS[:1])
    expected = exact._backend.scores(inputs)
    monkeypatch.setattr(masked, "_mask_rows_forward", wrong)
    m = mechanism("dpmlm", backend="mlm", model=models["bert"], epsilon=5.0,
                  keep_stopwords=False, **CLIP).fit()
    assert not m._backend.last_layer_at_mask
    assert torch.allclose(m._backend.scores(inputs), expected, atol=1e-5)
    assert not torch.allclose(exact._backend.scores(inputs), expected, atol=1e-3)  # wrong


def test_only_bert_family_layers_qualify(models):
    """A layer with a forward of its own on the instance (accelerate's hooks) and a model
    without an encoder of BERT layers are left alone."""
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(models["roberta"])
    layer = model.base_model.encoder.layer[-1]
    assert masked.last_layer_at_mask(model) is layer
    layer.forward = layer.forward
    assert masked.last_layer_at_mask(model) is None
    assert masked.last_layer_at_mask(torch.nn.Linear(2, 2)) is None


def test_bf16_keeps_the_last_layer_at_the_mask(models):
    """The probe runs in float32 whatever the precision, so ``precision="bf16"`` (an opt-in
    model function of its own) also computes the last layer at the mask; its scores stay
    within bfloat16's error of the float32 ones."""
    fp32 = mechanism("dpmlm", backend="mlm", model=models["bert"], epsilon=5.0,
                     keep_stopwords=False, **CLIP).fit()
    bf16 = mechanism("dpmlm", backend="mlm", model=models["bert"], epsilon=5.0,
                     keep_stopwords=False, precision="bf16", **CLIP).fit()
    assert bf16._backend.last_layer_at_mask and bf16._backend.precision == "bf16"
    inputs = _inputs(fp32, TEXTS)
    a, b = fp32._backend.scores(inputs), bf16._backend.scores(inputs)
    assert 0 < float((a - b).abs().max()) < 0.05 * float(a.std())

