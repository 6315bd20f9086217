"""Groups of rows decoded at once on worker threads (dptext.lm.threads.run_groups, issue 19
part 3): the output with a seed does not depend on it, the groups really run at the same time
when it is on, and one group at a time when fewer than two cores are free. Tiny random Llama of
test_lm_mechanisms (fp32)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rng_spy import recording_generator  # noqa: E402
from tiny_lms import CLIP, WORDS  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.lm import decoding, sampling, threads  # noqa: E402

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def llama(tiny_llama_dir):
    return tiny_llama_dir


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 12))) + "." for _ in range(n)]


def _outputs(m, texts, workers, monkeypatch, *, rng=11):
    monkeypatch.setattr(threads, "WORKERS", workers)
    return [(r.text, r.report.epsilon) for r in m.privatize_batch(texts, rng=rng)]


# ------------------------------------------------------------- the policy
def test_workers_follow_the_free_cores_unless_forced():
    assert threads.ThreadPolicy(2, measure=lambda: 2).workers_for(4) == 2
    assert threads.ThreadPolicy(2, measure=lambda: 1).workers_for(4) == 1  # a core is taken
    assert threads.ThreadPolicy(1, measure=lambda: 2).workers_for(4) == 1  # the user's ceiling
    assert threads.ThreadPolicy(8, measure=lambda: 8).workers_for(3) == 3  # no more than groups
    assert threads.ThreadPolicy(2, measure=lambda: 2).workers_for(1) == 1
    forced = threads.ThreadPolicy(1, measure=lambda: 1, workers=2)
    assert forced.workers_for(5) == 2 and forced.workers_for(1) == 1


def test_one_free_core_runs_the_groups_one_after_another_on_the_calling_thread():
    policy = threads.ThreadPolicy(2, measure=lambda: 1)
    seen: list = []
    threads.run_groups(policy, [lambda k=k: seen.append((k, threading.get_ident()))
                                for k in range(3)], costs=[1, 3, 2])
    assert seen == [(k, threading.get_ident()) for k in range(3)]


def test_worker_threads_run_on_one_pinned_torch_thread_each():
    before = torch.get_num_threads()
    policy = threads.ThreadPolicy(2, measure=lambda: 2)
    inside: list = []

    def job():
        inside.append((torch.get_num_threads(), policy.before_pass(10_000),
                       threading.current_thread().name))

    threads.run_groups(policy, [job, job, job])
    assert len(inside) == 3
    # the policy never flips torch's (process-wide) count while groups share it
    assert all(n == 1 and b == 1 and name.startswith("dptext-lm") for n, b, name in inside)
    assert torch.get_num_threads() == before


def test_a_nested_pin_keeps_the_outer_one():
    before = torch.get_num_threads()
    policy = threads.ThreadPolicy(2, measure=lambda: 2)
    with policy.pinned(1):
        with policy.pinned(2):
            assert torch.get_num_threads() == 1 and policy.before_pass(10_000) == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_the_first_failing_group_in_group_order_is_raised_after_all_have_run():
    policy = threads.ThreadPolicy(2, measure=lambda: 2, workers=2)
    ran: list = []

    def fail(k):
        ran.append(k)
        raise ValueError(f"group {k}")

    jobs = [lambda: ran.append(0), lambda: fail(1), lambda: fail(2), lambda: ran.append(3)]
    with pytest.raises(ValueError, match="group 1"):
        threads.run_groups(policy, jobs, costs=[0, 1, 5, 2])  # group 2 starts first
    assert sorted(ran) == [0, 1, 2, 3]


def test_spawned_generators_depend_on_the_parent_alone():
    def streams(seed):
        gens = sampling.spawn_generators(torch.Generator().manual_seed(seed), 3)
        return [torch.randint(0, 2**62, (4,), generator=g).tolist() for g in gens]

    assert streams(5) == streams(5)
    assert streams(5) != streams(6)
    assert len({tuple(s) for s in streams(5)}) == 3  # three different streams
    assert sampling.spawn_generators(None, 2) == [None, None]


# ---------------------------------------------------- the mechanisms' output
def test_dpmlm_seeded_output_is_the_same_with_groups_at_once_or_one_at_a_time(
        llama, monkeypatch):
    """Plain groups (batch 3), a long text in segments (its own group) and a text decoded
    alone with cache rebuilds (longer than the window): the same output with one worker and
    with two, and with two the groups really ran on two threads."""
    m = mechanism("dpmlm", model=llama, epsilon=3.0, keep_stopwords=False, batch_size=3,
                  segment_words=8, max_length=96, **CLIP).fit()
    long = " ".join(WORDS[(7 * i) % len(WORDS)] for i in range(40)) + "."
    texts = _texts(10) + [long, "the dog. " * 30]
    names: set = set()
    forward = decoding.ScoreHead.forward

    def spy(self, *args):
        names.add(threading.current_thread().name)
        return forward(self, *args)

    monkeypatch.setattr(decoding.ScoreHead, "forward", spy)
    serial = _outputs(m, texts, 1, monkeypatch)
    assert {n for n in names if n.startswith("dptext-lm")} == set()
    at_once = _outputs(m, texts, 2, monkeypatch)
    assert len({n for n in names if n.startswith("dptext-lm")}) == 2
    assert at_once == serial
    assert _outputs(m, texts, 2, monkeypatch, rng=12) != serial  # the seed matters
    assert all(eps > 0 for _, eps in serial)


def test_dpprompt_seeded_output_is_the_same_with_groups_at_once_or_one_at_a_time(
        llama, monkeypatch):
    m = mechanism("dpprompt", model=llama, epsilon=3.0, batch_size=2, **CLIP).fit()
    texts = _texts(7, seed=1)
    serial = _outputs(m, texts, 1, monkeypatch)
    assert _outputs(m, texts, 2, monkeypatch) == serial
    assert _outputs(m, texts, 3, monkeypatch) == serial


def test_groups_are_decoded_at_the_same_time(llama, monkeypatch):
    """Each group's first pass waits at a barrier for the other group's: if the groups ran one
    after another, the barrier would break (timeout) and the call would fail."""
    m = mechanism("dpmlm", model=llama, epsilon=3.0, keep_stopwords=False, batch_size=4,
                  **CLIP).fit()
    texts = _texts(8, seed=2)
    assert len(decoding.cost_groups([len(t) for t in texts], 4, lanes=threads.LANES)) == 2
    barrier = threading.Barrier(2, timeout=20)
    first: set = set()
    forward = decoding.ScoreHead.forward

    def meeting(self, ids, mask, positions, state):
        if state is None and threading.get_ident() not in first:
            first.add(threading.get_ident())
            barrier.wait()  # both groups are in flight at once
        return forward(self, ids, mask, positions, state)

    monkeypatch.setattr(decoding.ScoreHead, "forward", meeting)
    monkeypatch.setattr(threads, "WORKERS", 2)
    results = m.privatize_batch(texts, rng=0)
    assert len(first) == 2 and not barrier.broken
    assert all(r.report.tokens_privatized for r in results)


def test_without_a_seed_the_groups_draw_fresh_randomness(llama, monkeypatch):
    m = mechanism("dpmlm", model=llama, epsilon=0.5, keep_stopwords=False, batch_size=2,
                  **CLIP).fit()
    monkeypatch.setattr(threads, "WORKERS", 2)
    texts = _texts(6, seed=3)
    outs = {tuple(r.text for r in m.privatize_batch(texts)) for _ in range(3)}
    assert len(outs) > 1


def test_masked_batches_follow_the_thread_policy_and_the_output_does_not(tmp_path,
                                                                         monkeypatch):
    """The masked backend's passes take their torch threads from the policy (issue 36: one
    policy for both backends): a small batch one thread, a large one the free cores (2 here),
    a large one with one free core one thread; the seeded output is the same under each."""
    from tiny_lms import _bert

    m = mechanism("dpmlm", backend="mlm", model=_bert(tmp_path / "bert"), epsilon=3.0,
                  keep_stopwords=False, batch_size=4, **CLIP).fit()
    texts = _texts(5, seed=4)
    seen = []
    real = threads.ThreadPolicy.before_pass

    def spy(self, token_rows):
        n = real(self, token_rows)
        seen.append((token_rows, n, torch.get_num_threads()))
        return n

    monkeypatch.setattr(threads.ThreadPolicy, "before_pass", spy)
    batches = -(-sum(m.token_counts(texts)) // 4)
    outs, chosen = [], []
    for free, small in ((2, 64), (1, 64), (2, 10**6)):
        monkeypatch.setattr(threads, "free_cores", lambda free=free: free)
        monkeypatch.setattr(threads, "SMALL_PASS", small)
        seen.clear()
        torch.set_num_threads(2)  # the ceiling the policy starts from
        try:
            outs.append([(r.text, r.report.epsilon) for r in m.privatize_batch(texts, rng=5)])
        finally:
            torch.set_num_threads(1)
        assert len(seen) == batches
        want = [1 if (rows < small or free < 2) else 2 for rows, _, _ in seen]
        assert [n for _, n, _ in seen] == want
        assert [t for _, _, t in seen] == want
        chosen.append(want)
    assert 1 in chosen[0] and 2 in chosen[0]  # small and large passes in the first round
    assert set(chosen[1]) == set(chosen[2]) == {1}
    assert outs[0] == outs[1] == outs[2]


# ------------------------------------------------------------ rng="secure"
def test_secure_children_are_chacha20_with_distinct_keys_from_the_parent_alone():
    from dptext.rng import is_secure, secure_children, secure_generator

    def keys(gen):
        return [tuple(g.bit_generator.state["state"]["keysetup"]) for g in gen]

    a = secure_children(secure_generator(seed=4), 3)
    assert all(is_secure(g) for g in a) and len(set(keys(a))) == 3
    assert keys(a) == keys(secure_children(secure_generator(seed=4), 3))
    assert keys(a) != keys(secure_children(secure_generator(seed=5), 3))
    with pytest.raises(Exception, match="secure"):
        secure_children(np.random.default_rng(1), 2)


@pytest.mark.parametrize("name", ["dpmlm", "dpprompt"])
def test_secure_rng_draws_every_lm_word_from_the_chacha20_keystream(llama, monkeypatch, name):
    """Under rng="secure" the LM draws (groups at once included) come from ChaCha20: the
    secure generator is consumed, and no PCG64 or torch generator is seeded for a draw (either
    would raise here). Before, a torch Mersenne Twister seeded from it made every draw."""
    from dptext.rng import secure_generator

    params = ({"keep_stopwords": False, "batch_size": 3} if name == "dpmlm"
              else {"batch_size": 2})
    m = mechanism(name, model=llama, epsilon=3.0, **params, **CLIP).fit()
    texts = _texts(7, seed=3)
    calls: list = []
    def refuse(*a, **k):
        raise AssertionError("a non-secure generator was seeded for an LM draw")

    spy = recording_generator(secure_generator().bit_generator, calls, ("integers", "random"))
    monkeypatch.setattr(threads, "WORKERS", 2)
    with monkeypatch.context() as patched:
        for owner, attr in ((np.random, "default_rng"), (np.random, "PCG64"),
                            (torch, "Generator")):
            patched.setattr(owner, attr, refuse)
        results = m.privatize_batch(texts, rng=spy)
    assert calls and len(results) == len(texts)
    unit = "mechanism" if name == "dpmlm" else "generated"
    assert sum(r.report.privatized_by_reason.get(unit, 0) for r in results) > 0
