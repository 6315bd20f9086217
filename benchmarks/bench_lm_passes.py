"""Where a run of the batched benchmark spends its forward passes (issue 19 part 3): DP-MLM
causal default (``a``) or DP-Prompt (``b``) on the first 2,000 headline words, 64 rows side by
side: passes, real tokens fed, process time of the large (>= 256 tokens) and the small passes
per token, and the time outside the model (the draw, bookkeeping).

    OMP_NUM_THREADS=1 python benchmarks/bench_lm_passes.py a|b [--threads 1]
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_lm import _load, sample_texts  # noqa: E402


def main() -> None:
    from dptext import mechanism
    from dptext.lm import decoding

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", choices=("a", "b"))
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    texts = sample_texts(2000)
    m = (mechanism("dpmlm", epsilon=50, keep_stopwords=False) if args.which == "a"
         else mechanism("dpprompt", epsilon=50)).fit()
    m.privatize_batch(texts[:4])
    forward = decoding.ScoreHead.forward
    stats = []

    def timed(self, ids, mask, positions, state):
        start = time.process_time()
        out = forward(self, ids, mask, positions, state)
        real = ids.numel() if mask is None else int(mask.sum())
        stats.append((real, time.process_time() - start))
        return out

    decoding.ScoreHead.forward = timed
    start = time.process_time()
    results = m.privatize_batch(texts, rng=0)
    total = time.process_time() - start
    n = sum(r.report.privatized_by_reason.get("mechanism", 0)
            + r.report.privatized_by_reason.get("generated", 0) for r in results)
    model = sum(t for _, t in stats)
    print(f"{args.which}: {n} words/tokens, {total:.1f} s CPU: forward passes {model:.1f} s, "
          f"outside the model {total - model:.1f} s; {len(stats)} passes, "
          f"{sum(r for r, _ in stats)} real tokens; load {_load()}")
    for name, group in (("large", [s for s in stats if s[0] >= 256]),
                        ("small", [s for s in stats if s[0] < 256])):
        if group:
            tokens, seconds = sum(r for r, _ in group), sum(t for _, t in group)
            print(f"  {name} passes: {len(group)}, {tokens} tokens, {seconds:.1f} s "
                  f"({seconds / tokens * 1000:.2f} ms per token)")


if __name__ == "__main__":
    main()
