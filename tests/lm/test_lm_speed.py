"""Speed machinery of the LM mechanisms (issue 19) on the tiny random models of
test_lm_mechanisms: thread policy, pass widths, cost groups, no head-of-line blocking,
segmented long texts and independent draws give the scores of plain forward passes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tiny_lms import CLIP, WORDS  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402
from dptext.lm import decoding, threads  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def llama(tiny_llama_dir):
    return tiny_llama_dir


def _causal(path, **kw):
    return mechanism("dpmlm", model=path, keep_stopwords=False, **{**CLIP, **kw}).fit()


# ------------------------------------------------------------------ threads
def test_small_passes_get_one_thread_and_large_ones_the_free_cores():
    policy = threads.ThreadPolicy(4, measure=lambda: 3)
    assert policy.threads_for(1) == 1 and policy.threads_for(threads.SMALL_PASS - 1) == 1
    assert policy.threads_for(threads.SMALL_PASS) == 3  # free cores below the ceiling
    assert threads.ThreadPolicy(2, measure=lambda: 3).threads_for(10_000) == 2  # the ceiling
    assert threads.ThreadPolicy(1, measure=lambda: 8).threads_for(10_000) == 1


def test_free_cores_sees_a_busy_process():
    """A busy loop on one core leaves at most (cores - 1) free; the measure stays in range."""
    import multiprocessing as mp

    cores = threads.usable_cores()
    assert 1 <= threads.free_cores() <= cores
    if cores > 2 or threads._cpu_times() is None:
        pytest.skip("needs /proc/stat and a machine of at most 2 usable cores")
    ctx = mp.get_context("spawn")
    busy = [ctx.Process(target=_spin, daemon=True) for _ in range(cores)]
    for p in busy:
        p.start()
    try:
        import time

        time.sleep(0.3)
        assert threads.free_cores(0.2) == 1  # every core busy: never more than the floor of 1
    finally:
        for p in busy:
            p.kill()
            p.join()


def _spin():  # pragma: no cover - runs in a child process
    while True:
        pass


def test_thread_policy_restores_torch_threads():
    before = torch.get_num_threads()
    with threads.thread_policy() as policy:
        policy.before_pass(threads.SMALL_PASS * 100)
        policy.before_pass(1)
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


# ------------------------------------------------------------ pass shapes
@pytest.mark.parametrize("lengths, expected", [
    ([5], 5),  # alone: the whole queue
    ([1] * 32 + [300], 1),  # many rows: the shortest queue, no padding for them
    ([1, 2], 2),  # two rows: padding one token is cheaper than a second pass
])
def test_width_minimises_cost_per_token(lengths, expected):
    assert decoding.width(lengths) == expected


def test_cost_groups_put_a_long_prompt_alone_and_respect_the_batch_size():
    groups = decoding.cost_groups([20, 22, 900, 21, 25, 19], batch_size=3)
    # by length: 19 20 21 | 22 25 (a run of 5 rows, two groups of about equal cost) | 900
    assert sorted(map(sorted, groups)) == [[0, 3, 5], [1, 4], [2]]
    assert all(len(g) <= 3 for g in groups)


def test_cost_groups_come_in_lanes_of_equal_cost():
    """169 rows of similar prompts in batches of 64: 3 groups, or 4 with lanes=2 - never
    64 + 64 + 41 - of about the same cost (the weights), so that two workers finish
    together."""
    lengths = [17 + (7 * i) % 22 for i in range(169)]
    weights = [2 * n + 5 for n in lengths]
    for lanes, count in ((1, 3), (2, 4)):
        groups = decoding.cost_groups(lengths, 64, lanes=lanes, weights=weights)
        assert len(groups) == count and all(1 <= len(g) <= 64 for g in groups)
        assert sorted(i for g in groups for i in g) == list(range(169))
        edges = sorted((min(lengths[i] for i in g), max(lengths[i] for i in g)) for g in groups)
        assert all(edges[k][1] <= edges[k + 1][0] for k in range(len(edges) - 1))  # by length
        if lanes == 2:  # equal cost to about one row (3 groups: the first one is full)
            sums = [sum(weights[i] for i in g) for g in groups]
            assert max(sums) - min(sums) <= 2 * max(weights)
    # what cannot be split more stays as it is: one row, or rows in runs of their own
    assert decoding.cost_groups([5], 64, lanes=2) == [[0]]
    assert decoding.cost_groups([5, 900, 3000], 64, lanes=2) == [[0], [1], [2]]
    assert list(map(len, decoding.cost_groups([5] * 512, 64, lanes=2))) == [64] * 8


def _feed_counter(monkeypatch):
    fed = {"token_rows": 0, "passes": 0}
    forward = decoding.ScoreHead.forward

    def counting(self, ids, *args):
        fed["token_rows"] += ids.numel()
        fed["passes"] += 1
        return forward(self, ids, *args)

    monkeypatch.setattr(decoding.ScoreHead, "forward", counting)
    return fed


def test_one_hostile_row_does_not_hold_32_normal_ones(llama, monkeypatch):
    """Work (token-rows fed, the cost of the passes) of a hostile row with long literal text
    beside 32 normal texts stays within 1.5x of the two batches run apart (issue 19: it was
    11x, the first pass padded every row to the hostile prompt)."""
    m = _causal(llama, epsilon=5.0)
    rng = np.random.default_rng(0)
    normal = [" ".join(rng.choice(WORDS, size=rng.integers(4, 12))) for _ in range(32)]
    hostile = "john" + " ." * 120 + " anna saw the river."
    fed = _feed_counter(monkeypatch)
    apart = 0
    for texts in (normal, [hostile]):
        m.privatize_batch(texts, rng=1)
        apart += fed["token_rows"]
        fed["token_rows"] = 0
    together = m.privatize_batch(normal + [hostile], rng=1)
    assert fed["token_rows"] <= 1.5 * apart
    assert all(r.report.tokens_privatized for r in together)


# ------------------------------------------------- scores of plain passes
def _full_scores(m, seq):
    model = m._lm[0]
    with torch.inference_mode():
        return model(input_ids=torch.tensor([seq])).logits[0, -1, m._backend.candidate_ids]


def test_segments_give_the_scores_of_their_own_context(llama):
    """A long text in segments: every slot's scores equal a plain forward pass over the
    segment's context - original + separator, the original's tail before the segment
    (teacher forcing), then the segment's own output so far."""
    m = _causal(llama, epsilon=5.0, segment_words=8)
    text = " ".join(WORDS[i % len(WORDS)] for i in range(40)) + "."
    aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
    backend = m._backend
    jobs = [(aligned.ids, [(s.glue, s.start) for s in slots])]
    segs = backend.segments(len(slots))
    assert len(segs) == min(backend.max_segments, len(slots) // 8) > 1
    rows: dict = {}

    def greedy(_, scores):
        return scores.argmax(1).tolist()

    seen = []
    chosen = backend.rewrite_batch(
        jobs, lambda r, sc, _: (seen.extend(sc.clone()), greedy(r, sc))[1])
    assert len(chosen[0]) == len(slots) and len(seen) == len(slots)
    cids = backend.candidate_ids
    for a, b in segs:
        head = backend._prefix(aligned.ids, (slots[a].start + slots[b - 1].start) // 2, [])
        tail = max(0, slots[a].start - backend.SEGMENT_TAIL)
        seq = head + (backend.encode(slots[0].glue.rstrip(" ")) if a == 0 else
                      list(aligned.ids[tail: slots[a].start]))
        for k in range(a, b):
            if k > a:
                glue = slots[k].glue[:-1] if slots[k].glue.endswith(" ") else slots[k].glue
                seq = seq + [int(cids[chosen[0][k - 1]])] + backend.encode(glue)
            rows[k] = _full_scores(m, seq)
    # segments draw in parallel, so ``seen`` is in pass order: match each by value
    for k, want in rows.items():
        assert int(want.argmax()) == chosen[0][k]
        assert any(torch.allclose(want, got, atol=1e-4) for got in seen)


def test_independent_draws_score_each_word_after_the_original_prefix(llama, monkeypatch):
    m = _causal(llama, epsilon=5.0, draws="independent")
    text = "the dog sat, john went to paris"
    aligned, _, slots, _ = m._plan(text, np.random.default_rng(0))
    passes = []
    real = decoding.ScoreHead.score_positions
    monkeypatch.setattr(decoding.ScoreHead, "score_positions",
                        lambda self, ids, *a: passes.append(ids.shape) or real(self, ids, *a))
    got = m._backend.score_independent([(aligned.ids, [(s.glue, s.start) for s in slots])])[0]
    assert len(passes) == 1 and passes[0][0] == 1  # one pass, one row, for all the words
    head = m._backend._prefix(aligned.ids, 0, [])
    assert got.shape == (len(slots), len(m._backend.candidate_ids))
    for k, s in enumerate(slots):
        assert torch.allclose(got[k], _full_scores(m, head + list(aligned.ids[: s.start])),
                              atol=1e-4)
    res = m.privatize(text, rng=3)
    assert res.report.tokens_privatized == len(slots)


def test_independent_draws_need_the_causal_backend():
    with pytest.raises(DPTextError, match="causal backend"):
        mechanism("dpmlm", epsilon=1, backend="mlm", model="x", draws="independent")
    with pytest.raises(DPTextError, match="precision"):
        mechanism("dpmlm", epsilon=1, precision="int4")


def test_int8_model_scores_stay_close_to_fp32(llama):
    fp32, int8 = _causal(llama, epsilon=5.0), _causal(llama, epsilon=5.0, precision="int8")
    quantized = [type(x).__module__ for x in int8._lm[0].modules()]
    assert any("quantized" in q for q in quantized)
    text = "the red car saw a green tree"
    aligned, _, slots, _ = fp32._plan(text, np.random.default_rng(0))
    job = [(aligned.ids, [(s.glue, s.start) for s in slots])]
    a = fp32._backend.score_independent(job)[0]
    b = int8._backend.score_independent(job)[0]
    assert (a - b).abs().max() < 0.1 * a.std()


def _bf16_weights(fast) -> set:
    return {w.dtype for layer in fast.layers for w in (layer[2], layer[3], layer[6], layer[7])}


def test_bf16_products_stay_close_to_fp32_and_leave_the_fp32_weights_alone(llama):
    """precision="bf16": the fast path's four products per layer take bfloat16 weights; the
    model's own weights, the fp32 mechanism's path and the candidate projection stay float32.
    Measured on this tiny model: max |bf16 - fp32| = 0.3% of the scores' standard deviation
    (bfloat16 keeps 8 bits: ~0.4% per rounded input); the bound leaves 7x room, and a zero
    difference would mean bfloat16 did not run."""
    fp32, bf16 = _causal(llama, epsilon=5.0), _causal(llama, epsilon=5.0, precision="bf16")
    assert _bf16_weights(bf16._backend.head.fast) == {torch.bfloat16}
    assert _bf16_weights(fp32._backend.head.fast) == {torch.float32}
    assert {p.dtype for p in bf16._lm[0].parameters()} == {torch.float32}
    assert bf16._backend.head.weight.dtype == torch.float32
    text = "the red car saw a green tree"
    aligned, _, slots, _ = fp32._plan(text, np.random.default_rng(0))
    job = [(aligned.ids, [(s.glue, s.start) for s in slots])]
    a = fp32._backend.score_independent(job)[0]
    b = bf16._backend.score_independent(job)[0]
    assert b.dtype == torch.float32
    assert 0 < (a - b).abs().max() < 0.02 * a.std()
    out = bf16.privatize(text, rng=0)
    assert out.report.tokens_privatized == len(slots)
    same = fp32.privatize(text, rng=0).report
    assert out.report.document_guarantee() == same.document_guarantee()


def test_bf16_without_the_fast_path_runs_transformers_under_autocast(llama, monkeypatch):
    """A model off the fast path (here: the fast path refused) and DP-Prompt: bfloat16
    through ``torch.autocast``, scores float32 and close to fp32's (same 2% bound as above:
    the candidate projection stays float32 there too)."""
    from dptext.lm import fast_llama

    prompt = mechanism("dpprompt", model=llama, epsilon=5.0, precision="bf16", **CLIP).fit()
    assert _bf16_weights(prompt._head.fast) == {torch.bfloat16}
    assert len(prompt.privatize("the dog sat", rng=0).text) > 0
    monkeypatch.setattr(fast_llama, "_plain_llama", lambda model: False)
    fp32, bf16 = _causal(llama, epsilon=5.0), _causal(llama, epsilon=5.0, precision="bf16")
    assert bf16._backend.head.fast is None and fp32._backend.head.fast is None
    seen = []
    real = torch.nn.functional.linear

    def spy(x, w, b=None):
        seen.append(torch.is_autocast_enabled("cpu"))
        return real(x, w, b)

    text = "the red car saw a green tree"
    aligned, _, slots, _ = fp32._plan(text, np.random.default_rng(0))
    job = [(aligned.ids, [(s.glue, s.start) for s in slots])]
    a = fp32._backend.score_independent(job)[0]
    monkeypatch.setattr(torch.nn.functional, "linear", spy)
    b = bf16._backend.score_independent(job)[0]
    assert any(seen) and not all(seen)  # the model's layers under autocast, the projection not
    assert b.dtype == torch.float32
    assert 0 < (a - b).abs().max() < 0.02 * a.std()


# ------------------------------------------------- attention, devices
def test_packed_gqa_attention_gives_the_scores_of_transformers_sdpa(llama):
    """Incremental passes of several masked rows (where transformers copies the key/value
    cache per query head) give the same hidden states with dptext_gqa as with "sdpa"."""
    from dptext.lm import attention

    m = _causal(llama, epsilon=5.0)
    model = m._lm[0]
    assert model.config._attn_implementation == attention.NAME
    calls = []
    real = attention.packed_gqa_attention

    def spy(*args, **kw):
        calls.append(args[1].shape[2])
        return real(*args, **kw)

    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, 200, (3, 12), generator=gen)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, :4] = 0  # a left-padded row
    step = torch.randint(3, 200, (3, 3), generator=gen)
    out = {}
    from transformers import AttentionInterface

    for impl in ("sdpa", attention.NAME):
        model.set_attn_implementation(impl)
        AttentionInterface.register(attention.NAME, spy)
        with torch.inference_mode():
            first = model.base_model(input_ids=prompt, attention_mask=mask, use_cache=True)
            full = torch.cat([mask, torch.ones(3, 3, dtype=torch.long)], 1)
            pos = (full.cumsum(1) - 1).clamp_min(0)[:, -3:]
            res = model.base_model(input_ids=step, attention_mask=full, position_ids=pos,
                                   cache=first.cache, use_cache=True)
        out[impl] = res.last_hidden_state
    AttentionInterface.register(attention.NAME, real)
    assert 3 in calls  # the packed path ran on the 3-token step
    torch.testing.assert_close(out[attention.NAME], out["sdpa"], atol=1e-5, rtol=1e-5)


def test_device_is_checked_and_cpu_or_auto_runs_here(llama):
    from dptext.devices import cuda_available

    with pytest.raises(DPTextError, match="device must be one of"):
        mechanism("dpmlm", epsilon=1, device="tpu")
    with pytest.raises(DPTextError, match="device must be one of"):
        mechanism("dpprompt", epsilon=1, device="gpu")
    for device in ("cpu", "auto"):
        m = _causal(llama, epsilon=5.0, device=device)
        want = "cuda" if device == "auto" and cuda_available() else "cpu"
        assert m._lm[0].device.type == want
        assert m.privatize("the dog sat on the mat", rng=0).report.tokens_privatized
    if not cuda_available():
        with pytest.raises(DPTextError, match="no CUDA GPU"):
            mechanism("dpmlm", epsilon=1, device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")
@pytest.mark.parametrize("draws", ["sequential", "independent"])
def test_cuda_gives_the_scores_of_the_cpu(llama, draws):
    cpu = _causal(llama, epsilon=5.0, draws=draws)
    gpu = _causal(llama, epsilon=5.0, draws=draws, device="cuda")
    text = "the dog sat, john went to paris"
    aligned, _, slots, _ = cpu._plan(text, np.random.default_rng(0))
    job = [(aligned.ids, [(s.glue, s.start) for s in slots])]
    a = cpu._backend.score_independent(job)[0]
    b = gpu._backend.score_independent(job)[0].cpu()
    torch.testing.assert_close(a, b, atol=1e-3, rtol=1e-3)
    assert gpu.privatize(text, rng=0).report.tokens_privatized == len(slots)
    with pytest.raises(DPTextError, match="CPU only"):
        mechanism("dpmlm", epsilon=1, device="cuda", precision="int8")
