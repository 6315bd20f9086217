"""Throughput and peak memory of each word-level mechanism on a 100k-token text.

    python benchmarks/bench_mechanisms.py [--tokens 100000] [--mechanisms custext,...]

Each mechanism runs in its own process (so peak RSS is its own) on the default 50k-word space:
fit (precomputation; cached tables are not used) is timed separately from privatization.
Privatization runs REPEATS times: "first s" includes filling the word-lookup cache; tokens/s is
the median of the later runs (steady state of a long stream).
The text is synthetic but realistic in its statistics: words drawn from public English
frequencies (wordfreq), sentences of 8-25 words with capitals and punctuation.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

import numpy as np

REPEATS = 4
EPSILON = {"custext": 2.0, "custext+": 2.0, "santext": 2.0, "santext+": 2.0, "laplace": 10.0}


def make_text(n_tokens: int, seed: int = 0) -> str:
    import wordfreq

    words = wordfreq.top_n_list("en", 60_000)
    freq = np.array([wordfreq.word_frequency(w, "en") for w in words])
    rng = np.random.default_rng(seed)
    draws = rng.choice(len(words), size=n_tokens, p=freq / freq.sum())
    out, count, sentence = [], 0, 0
    for i in draws:
        w = words[i]
        if sentence == 0:
            w = w[:1].upper() + w[1:]
        out.append(w)
        count += 1
        sentence += 1
        if sentence >= rng.integers(8, 26):
            out[-1] += rng.choice([".", "!", "?", ","])
            count += 1
            sentence = 0
        if count >= n_tokens:
            break
    return " ".join(out)


def run_one(name: str, n_tokens: int) -> dict:
    import dptext
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon
    from dptext.resources import default_space

    space = default_space(progress=False)
    eps = EPSILON.get(name)
    if name == "gumbel":
        eps = math.ceil(1.05 * minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                               delta_min=space.delta_min, rule="paper"))
    text = make_text(n_tokens)
    lines = text.split(". ")
    m = dptext.mechanism(name, epsilon=eps, space=space)
    t0 = time.perf_counter()
    m.fit(cache=False)
    fit_s = time.perf_counter() - t0
    times = []
    for seed in range(REPEATS):  # the first run also fills the word-lookup cache
        t0 = time.perf_counter()
        results = m.privatize_batch(lines, rng=np.random.default_rng(seed))
        times.append(time.perf_counter() - t0)
    first_s, run_s = times[0], float(np.median(times[1:]))
    report = dptext.PrivacyReport.combine(r.report for r in results)
    return {
        "mechanism": name, "epsilon": eps, "tokens": report.tokens_total,
        "privatized": report.tokens_privatized, "fit_s": round(fit_s, 2),
        "first_s": round(first_s, 3), "privatize_s": round(run_s, 3),
        "tokens_per_s": round(report.tokens_total / run_s),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=100_000)
    p.add_argument("--mechanisms", default="custext,custext+,santext,santext+,gumbel,laplace")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.tokens)))
        return
    from dptext.resources import default_space

    default_space()  # build once, outside the timed runs
    header = f"{'mechanism':10s} {'eps':>6s} {'tokens':>7s} {'fit s':>7s} {'first s':>8s} " \
             f"{'run s':>7s} {'tokens/s':>10s} {'peak MB':>8s}"
    print(header)
    for name in args.mechanisms.split(","):
        out = subprocess.run(
            [sys.executable, __file__, "--one", name, "--tokens", str(args.tokens)],
            capture_output=True, text=True, check=False,
        )
        if out.returncode:
            print(f"{name:10s} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:10s} {r['epsilon']:6g} {r['tokens']:7d} {r['fit_s']:7.1f} "
              f"{r['first_s']:8.2f} {r['privatize_s']:7.2f} {r['tokens_per_s']:10,d} "
              f"{r['peak_rss_mb']:8d}")


if __name__ == "__main__":
    main()
