"""Issue 19 part 3 in one run: the three CPU figures of DP-MLM / DP-Prompt and their targets.

    OMP_NUM_THREADS=1 python benchmarks/bench_lm_targets.py        # about 2-3 minutes, quiet

(a) the batched benchmark: DP-MLM, causal default (SmolLM2, sequential draws), the first
    2,000 words of public Guardian headlines (every word privatized, epsilon 50), 64 texts
    side by side: privatized words/min, target >= 7,500.
(b) DP-Prompt on the same headlines: generated tokens/min, target >= 5,174 (2x 2,587).
(c) one long document (the first 500 headline words as ONE text) with the default mode:
    privatized words/min alone and beside a competing process (``while 1: pass``, started
    here on one core and killed afterwards), target >= 1,500 each.

Beside every figure: the load (``uptime``) when it was measured, and a figure the load
distorts less - CPU seconds per privatized word / generated token of this process
(``resource.getrusage``, all its threads; the competing process is not counted). Torch
threads: the ceiling is the usable cores (``--threads``), each pass takes what
``dptext.lm.threads`` chooses below it (one thread for small passes, never more than the
free cores). Groups of rows run on worker threads where two cores are free
(``dptext.lm.threads.run_groups``; ``--workers 1`` or ``2`` forces the count, for a comparison
on a loaded machine where the free-core measure says one). ``--only a,b,c`` runs a subset;
``--seeds`` repeats each figure; ``--precision bf16`` (or int8) runs the models in that
precision (``precision=`` of the mechanisms; fp32 is their default). The script runs older
checkouts too (``PYTHONPATH=<old>/src``): ``--workers`` is then ignored, with a note.
``--batch-size N`` overrides the mechanisms' default (64). ``--breakdown``: (a) once more on
one thread, one group at a time, with the CPU seconds of its first passes, decoding passes
(and a least-squares fit of a decoding pass's cost: fixed + per token), draws and the rest.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_lm import long_text, sample_texts  # noqa: E402

TARGETS = {"a": 7500.0, "b": 5174.0, "c": 1500.0}


def load() -> str:
    out = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    return out.split("load average:")[-1].strip()


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


CHOSEN: list[int] = []  # groups at once, per call of run_groups (this checkout's)
GROUP_CPU: list[float] = []  # CPU seconds of each group's decode (its own thread's)


def _record_workers() -> None:
    """Record the groups-at-once choice and each group's CPU time (its thread's), for the
    estimate of the wall time on two idle cores (:func:`two_core_wall`)."""
    try:
        from dptext.lm import threads
    except ImportError:  # a checkout from before the thread policy
        return
    if not hasattr(threads, "run_groups"):
        return
    real = threads.ThreadPolicy.workers_for

    def workers_for(self, groups):
        n = real(self, groups)
        CHOSEN.append(n)
        return n

    threads.ThreadPolicy.workers_for = workers_for
    run = threads.run_groups

    def timed(policy, jobs, costs=None):
        def wrap(job):
            def f():
                c = time.thread_time()
                try:
                    job()
                finally:
                    GROUP_CPU.append(time.thread_time() - c)
            return f

        return run(policy, [wrap(j) for j in jobs], costs)

    threads.run_groups = timed


def two_core_wall(cpu: float) -> float | None:
    """Wall seconds the call would take on two idle cores, from what was measured: the groups
    (their CPU times, longest first on whichever core frees first, as ``run_groups`` orders
    them) plus the rest of the call's CPU on one core. None where there is one group or none:
    the estimate is for groups at once only."""
    if len(GROUP_CPU) < 2:
        return None
    lanes = [0.0, 0.0]
    for g in sorted(GROUP_CPU, reverse=True):
        lanes[lanes.index(min(lanes))] += g
    return max(lanes) + max(0.0, cpu - sum(GROUP_CPU))


def measure(mech, texts, unit: str, seed: int) -> tuple[float, float, int, str, str]:
    """(units per wall minute, CPU seconds per unit, units, load, groups at once) of one
    privatize_batch."""
    CHOSEN.clear()
    GROUP_CPU.clear()
    c0, t0 = cpu_seconds(), time.perf_counter()
    results = mech.privatize_batch(texts, rng=seed)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    n = sum(r.report.privatized_by_reason.get(unit, 0) for r in results)
    est = two_core_wall(cpu)
    return (n / wall * 60.0, cpu / n, n, load(), ",".join(map(str, CHOSEN)) or "-",
            None if est is None else n / est * 60.0)


def report(label: str, key: str, figure: tuple, what: str) -> None:
    rate, cpu, n, avg, workers, idle = figure
    target = TARGETS[key]
    mark = "met" if rate >= target else "NOT met"
    print(f"  {label:34s} {rate:7.0f} {what}/min  {cpu * 1000:6.1f} ms CPU per {what[:-1]}  "
          f"({n} {what}; target {target:,.0f}: {mark}; groups at once {workers})  load {avg}",
          flush=True)
    if idle is not None and workers.split(",")[0] != "1":
        print(f"  {'':34s} estimate on two idle cores from the groups' CPU times: "
              f"{idle:7.0f} {what}/min ({len(GROUP_CPU)} groups: "
              f"{', '.join(f'{g:.1f}' for g in GROUP_CPU)} s CPU)", flush=True)


def breakdown(m, texts) -> None:
    """(a) on one torch thread, one group at a time: CPU seconds of the first passes, the
    decoding passes, the draws and the rest (``time.thread_time`` around each)."""
    import numpy as np
    import torch

    from dptext.lm import decoding, sampling, threads

    before, workers = torch.get_num_threads(), getattr(threads, "WORKERS", None)
    torch.set_num_threads(1)
    threads.WORKERS = 1
    passes: list[tuple[int, bool, float]] = []  # rows of the matrix products, first?, CPU s
    draws: list[float] = []
    forward, sample = decoding.ScoreHead.forward, sampling.sample

    def timed_forward(self, ids, mask, positions, state):
        c = time.thread_time()
        out = forward(self, ids, mask, positions, state)
        rows = int(mask.sum()) if mask is not None else ids.numel()
        passes.append((rows, state is None, time.thread_time() - c))
        return out

    def timed_sample(scores, **kw):
        c = time.thread_time()
        out = sample(scores, **kw)
        draws.append(time.thread_time() - c)
        return out

    decoding.ScoreHead.forward, sampling.sample = timed_forward, timed_sample
    try:
        c0 = cpu_seconds()
        m.privatize_batch(texts, rng=0)
        total = cpu_seconds() - c0
    finally:
        decoding.ScoreHead.forward, sampling.sample = forward, sample
        threads.WORKERS = workers
        torch.set_num_threads(before)
    first = [(r, t) for r, f, t in passes if f]
    dec = [(r, t) for r, f, t in passes if not f]
    fixed, per = np.linalg.lstsq(np.array([[1.0, r] for r, _ in dec]),
                                 np.array([t for _, t in dec]), rcond=None)[0]
    f_cpu, d_cpu = sum(t for _, t in first), sum(t for _, t in dec)
    print(f"  breakdown (one thread, one group at a time), load {load()}: {total:.1f} s CPU; "
          f"first passes {len(first)} ({sum(r for r, _ in first)} tokens) {f_cpu:.1f} s; "
          f"decoding passes {len(dec)} ({sum(r for r, _ in dec)} tokens) {d_cpu:.1f} s "
          f"(a pass ~{fixed * 1000:.0f} ms + {per * 1000:.2f} ms per token); "
          f"draws {sum(draws):.1f} s; the rest {total - f_cpu - d_cpu - sum(draws):.1f} s",
          flush=True)


def main() -> None:
    import torch

    from dptext import mechanism

    try:
        from dptext.lm.threads import usable_cores
    except ImportError:  # a checkout from before the thread policy (issue 19)
        def usable_cores() -> int:
            return len(os.sched_getaffinity(0))

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="a,b,c")
    p.add_argument("--threads", type=int, default=usable_cores(),
                   help="torch's thread ceiling (default: the usable cores)")
    p.add_argument("--words", type=int, default=2000)
    p.add_argument("--long", type=int, default=500)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--workers", type=int, default=None,
                   help="groups decoded at once (default: by the free cores)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="rows decoded side by side (default: the mechanisms' own, 64)")
    p.add_argument("--precision", default="fp32",
                   help="the models' precision: fp32 (the default), bf16 or int8")
    p.add_argument("--breakdown", action="store_true",
                   help="where (a)'s CPU goes, on one thread (see the module docstring)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    try:
        from dptext.lm import threads
    except ImportError:  # before the thread policy: torch's threads as set above
        threads = None
    if not hasattr(threads, "run_groups"):
        print("(this checkout decodes one group at a time: --workers ignored)", flush=True)
    elif args.workers is not None:
        threads.WORKERS = args.workers
    _record_workers()
    only = set(args.only.split(","))
    workers = getattr(threads, "WORKERS", None)
    try:
        from dptext.lm.quantize import native_bf16
        bf16 = "yes" if native_bf16() else "no: bf16 is emulated here"
    except ImportError:  # older checkouts
        bf16 = "-"
    print(f"device cpu, torch thread ceiling {torch.get_num_threads()} (per pass: "
          f"dptext.lm.threads), usable cores {usable_cores()}, groups at once: "
          f"{'by the free cores' if workers is None else workers}; precision "
          f"{args.precision} (oneDNN bf16 kernels: {bf16}); load {load()}", flush=True)
    texts = sample_texts(args.words)
    size = {} if args.batch_size is None else {"batch_size": args.batch_size}
    if args.precision != "fp32":  # left out for fp32: older checkouts have no such option
        size["precision"] = args.precision
    if only & {"a", "c"}:
        m = mechanism("dpmlm", epsilon=50, keep_stopwords=False, **size).fit()
        m.privatize_batch(texts[:4], rng=0)  # warm-up: first-call allocations
        if "a" in only:
            print(f"(a) batched: {len(texts)} headlines, batch {m.batch_size}", flush=True)
            for seed in range(args.seeds):
                report("DP-MLM causal default", "a", measure(m, texts, "mechanism", seed),
                       "words")
        if args.breakdown:
            breakdown(m, texts)
        if "c" in only:
            doc = long_text(args.long)
            print(f"(c) one text of {args.long} words, default (sequential) mode", flush=True)
            for seed in range(args.seeds):
                report("alone", "c", measure(m, [doc], "mechanism", seed), "words")
            spin = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
            try:
                time.sleep(0.5)
                for seed in range(args.seeds):
                    report("beside a competing process", "c",
                           measure(m, [doc], "mechanism", seed), "words")
            finally:
                spin.kill()
                spin.wait()
        del m
    if "b" in only:
        d = mechanism("dpprompt", epsilon=50, **size).fit()
        d.privatize_batch(texts[:4], rng=0)
        print(f"(b) DP-Prompt: {len(texts)} headlines, batch {d.batch_size}", flush=True)
        for seed in range(args.seeds):
            report("DP-Prompt", "b", measure(d, texts, "generated", seed), "tokens")
    print(f"done; load {load()}")


if __name__ == "__main__":
    main()
