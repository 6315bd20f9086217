"""DP-Prompt generated tokens per CPU-minute (one torch thread, process time: a figure that a
shared machine's load distorts less than wall time): fp32, int8, and fp32 with the sampler
before issue 19's change (exact_sampling.sample_logits on float64 scores).

    OMP_NUM_THREADS=1 python benchmarks/bench_lm_cpu.py [--words 300]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_lm import _load, sample_texts  # noqa: E402

from dptext import mechanism  # noqa: E402
from dptext.exact_sampling import sample_logits  # noqa: E402
from dptext.lm import sampling  # noqa: E402


def old_sample(scores, *, epsilon, lo, hi, generator):
    z = scores.double().clamp(lo, hi) / sampling.temperature(epsilon, lo, hi)
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return sample_logits(z.numpy(), np.random.default_rng(seed))


def run(texts, **kw) -> tuple[int, float]:
    m = mechanism("dpprompt", epsilon=50, **kw).fit()
    m.privatize_batch(texts[:2])
    start = time.process_time()
    results = m.privatize_batch(texts)
    n = sum(r.report.privatized_by_reason.get("generated", 0) for r in results)
    return n, time.process_time() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--words", type=int, default=300)
    args = p.parse_args()
    torch.set_num_threads(1)
    texts = sample_texts(args.words)
    print(f"{len(texts)} headlines, 1 torch thread; load: {_load()}")
    for name, kw in (("fp32", {}), ("int8", {"precision": "int8"})):
        n, cpu = run(texts, **kw)
        print(f"  {name:22s} {n} tokens, {cpu:.1f} s CPU: {n / cpu * 60:.0f} tokens/CPU-min")
    new = sampling.sample
    sampling.sample = old_sample
    try:
        n, cpu = run(texts)
    finally:
        sampling.sample = new
    print(f"  {'fp32, previous sampler':22s} {n} tokens, {cpu:.1f} s CPU: "
          f"{n / cpu * 60:.0f} tokens/CPU-min; load: {_load()}")


if __name__ == "__main__":
    main()
