"""The fast Llama forward (dptext.lm.fast_llama, issue 19) gives transformers' hidden states on
every kind of pass the decoders make: padded first passes (matrix products on the real tokens
only), cached steps of one and of many tokens, rows leaving the cache, a prefix shared by all
rows, and the full-sequence scoring of independent draws. Tiny random Llama of
test_lm_mechanisms (fp32); transformers' forward (same weights, the modules' weights are views
of the fused ones) is the reference."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tiny_lms import CLIP  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.lm import decoding, fast_llama  # noqa: E402
from dptext.lm.loading import load_model  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def llama(tiny_llama_dir):
    model, _ = load_model(tiny_llama_dir, causal=True)
    return tiny_llama_dir, model, fast_llama.fast_forward(model)


def _reference(model, seq):
    with torch.inference_mode():
        return model.base_model(input_ids=torch.tensor([seq])).last_hidden_state[0]


def _padded(rows, width=None):
    width = width or max(map(len, rows))
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    valid = torch.zeros((len(rows), width), dtype=torch.bool)
    for r, q in enumerate(rows):
        ids[r, width - len(q):] = torch.tensor(q)
        valid[r, width - len(q):] = True
    return ids, valid


def test_cached_padded_steps_and_row_selection_match_transformers(llama):
    _, model, fast = llama
    assert fast is not None
    gen = torch.Generator().manual_seed(0)
    rows = [torch.randint(3, 300, (n,), generator=gen).tolist() for n in (5, 12, 1, 7)]
    ids, valid = _padded(rows)
    cache = fast.new_cache(len(rows), 4)  # too small: it must grow
    with torch.inference_mode():
        out = fast.run(ids, valid, (valid.long().cumsum(1) - 1).clamp_min(0), cache,
                       last_only=True)
        for r, q in enumerate(rows):
            torch.testing.assert_close(out[r], _reference(model, q)[-1], atol=1e-5, rtol=1e-5)
        seen = valid.sum(1)
        alive = list(range(len(rows)))
        for step, w in enumerate((1, 3, 10, 2)):  # 10 > SMALL_QUERY: SDPA's path
            new = torch.randint(3, 300, (len(alive), w), generator=gen)
            chunk = torch.ones((len(alive), w), dtype=torch.bool)
            chunk[0, : w - 1] = False  # the first row left-padded within the pass
            pos = seen[:, None] + (chunk.long().cumsum(1) - 1).clamp_min(0)
            out = fast.run(new, chunk, pos, cache, last_only=True)
            seen = seen + chunk.sum(1)
            for k, r in enumerate(alive):
                rows[r] = rows[r] + new[k][chunk[k]].tolist()
                torch.testing.assert_close(out[k], _reference(model, rows[r])[-1], atol=1e-5,
                                           rtol=1e-5)
            if step == 1:  # a row leaves
                keep = torch.tensor([0, 2, 3])
                cache.select(keep)
                seen = seen[keep]
                alive = [alive[k] for k in keep.tolist()]


def test_shared_prefix_is_attended_in_place(llama):
    _, model, fast = llama
    gen = torch.Generator().manual_seed(1)
    prefix = torch.randint(3, 300, (20,), generator=gen).tolist()
    one = fast.new_cache(1, 8)
    with torch.inference_mode():
        fast.run(torch.tensor([prefix]), None, None, one, last_only=True)
        shared = one.shared(3, capacity=2)
        assert shared.prefix_length == 20 and shared.length == 0
        rows = [torch.randint(3, 300, (n,), generator=gen).tolist() for n in (4, 1, 9)]
        ids, valid = _padded(rows)
        pos = 20 + (valid.long().cumsum(1) - 1).clamp_min(0)
        out = fast.run(ids, valid, pos, shared, last_only=True)
        for r, q in enumerate(rows):
            torch.testing.assert_close(out[r], _reference(model, prefix + q)[-1], atol=1e-5,
                                       rtol=1e-5)
        new = torch.randint(3, 300, (3, 1), generator=gen)
        out = fast.run(new, None, (20 + valid.sum(1))[:, None], shared, last_only=True)
        for r, q in enumerate(rows):
            want = _reference(model, prefix + q + [int(new[r, 0])])[-1]
            torch.testing.assert_close(out[r], want, atol=1e-5, rtol=1e-5)


def test_full_sequence_scoring_with_padding(llama):
    _, model, fast = llama
    gen = torch.Generator().manual_seed(2)
    rows = [torch.randint(3, 300, (n,), generator=gen).tolist() for n in (9, 3, 6)]
    ids, valid = _padded(rows)
    with torch.inference_mode():
        out = fast.run(ids, valid, (valid.long().cumsum(1) - 1).clamp_min(0), None,
                       last_only=False)
    for r, q in enumerate(rows):
        torch.testing.assert_close(out[r, ids.shape[1] - len(q):], _reference(model, q),
                                   atol=1e-5, rtol=1e-5)


def test_the_mechanisms_use_it_and_fall_back_where_it_does_not_apply(llama):
    path = llama[0]
    fp32 = mechanism("dpmlm", model=path, epsilon=5.0, **CLIP).fit()
    assert fp32._backend.head.fast is not None
    prompt = mechanism("dpprompt", model=path, epsilon=5.0, **CLIP).fit()
    assert prompt._head.fast is not None
    int8 = mechanism("dpmlm", model=path, epsilon=5.0, precision="int8", keep_stopwords=False,
                     **CLIP).fit()
    assert int8._backend.head.fast is None  # quantized linear layers: transformers' forward
    assert int8.privatize("the dog sat", rng=0).report.tokens_privatized == 3


def test_dpprompt_runs_the_instruction_once_per_group(llama, monkeypatch):
    path = llama[0]
    m = mechanism("dpprompt", model=path, epsilon=5.0, batch_size=4, **CLIP).fit()
    seen = []
    real = decoding.decode_side_by_side

    def spy(head, prompts, draw, pad, *, prefix=None, policy=None):
        seen.append((len(prefix or []), [len(p) for p in prompts]))
        return real(head, prompts, draw, pad, prefix=prefix, policy=policy)

    monkeypatch.setattr(decoding, "decode_side_by_side", spy)
    texts = ["the dog sat on a mat", "john went to paris", "a big red car"]
    m.privatize_batch(texts, rng=0)
    full = [len(m._prompt_ids(t)) for t in texts]
    assert len(seen) == 1
    shared, rest = seen[0]
    assert shared > 0 and all(r >= 1 for r in rest)
    assert sorted(shared + r for r in rest) == sorted(full)
