"""Throughput and peak memory of each word-level mechanism on a 100k-token text.

    python benchmarks/bench_mechanisms.py [--tokens 100000] [--mechanisms custext,...]
        [--cached-tables] [--non-ascii]

Each mechanism runs in its own process (so peak RSS is its own) on the default 50k-word space:
fit (precomputation; cached tables are not used unless --cached-tables) is timed separately
from privatization. Privatization runs REPEATS times: "first s" includes filling the
word-lookup cache; tokens/s is the median of the later runs (steady state of a long stream),
by the wall clock and by the process's CPU time (the figure to trust when other processes load
the machine: `uptime` is printed before and after). ``--non-ascii`` also privatizes the same
text with accented letters (a -> à, e -> é, o -> ö): the tokenizer's non-ASCII path.
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

REPEATS = 6
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


def to_non_ascii(text: str) -> str:
    return text.translate(str.maketrans({"a": "\u00e0", "e": "\u00e9", "o": "\u00f6"}))


def run_one(name: str, n_tokens: int, *, cached: bool = False, non_ascii: bool = False) -> dict:
    import dptext
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon
    from dptext.resources import default_space

    space = default_space(progress=False)
    eps = EPSILON.get(name)
    if name == "gumbel":
        eps = math.ceil(1.05 * minimum_epsilon(vocab_size=len(space), delta_max=space.delta_max,
                                               delta_min=space.delta_min, rule="paper"))
    text = make_text(n_tokens)
    if non_ascii:
        text = to_non_ascii(text)
    lines = text.split(". ")
    m = dptext.mechanism(name, epsilon=eps, space=space)
    t0 = time.perf_counter()
    m.fit(cache=cached)
    fit_s = time.perf_counter() - t0
    times, cpu = [], []
    for seed in range(REPEATS):  # the first run also fills the word-lookup cache
        t0, c0 = time.perf_counter(), time.process_time()
        results = m.privatize_batch(lines, rng=np.random.default_rng(seed))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    first_s, run_s, cpu_s = times[0], float(np.median(times[1:])), float(np.median(cpu[1:]))
    report = dptext.PrivacyReport.combine(r.report for r in results)
    return {
        "mechanism": name + (" (non-ASCII)" if non_ascii else ""), "epsilon": eps,
        "tokens": report.tokens_total, "privatized": report.tokens_privatized,
        "fit_s": round(fit_s, 2), "first_s": round(first_s, 3), "privatize_s": round(run_s, 3),
        "tokens_per_s": round(report.tokens_total / run_s),
        "cpu_tokens_per_s": round(report.tokens_total / cpu_s),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=100_000)
    p.add_argument("--mechanisms", default="custext,custext+,santext,santext+,gumbel,laplace")
    p.add_argument("--cached-tables", action="store_true",
                   help="load fitted tables from the cache (fit s is then the load)")
    p.add_argument("--non-ascii", action="store_true",
                   help="also run each mechanism on the accented version of the text")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--variant", default="ascii", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.tokens, cached=args.cached_tables,
                                 non_ascii=args.variant == "non-ascii")))
        return
    from dptext.resources import default_space

    default_space()  # build once, outside the timed runs
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    header = f"{'mechanism':22s} {'eps':>6s} {'tokens':>7s} {'fit s':>7s} {'first s':>8s} " \
             f"{'run s':>7s} {'tokens/s':>10s} {'CPU tok/s':>10s} {'peak MB':>8s}"
    print(header)
    variants = ["ascii", "non-ascii"] if args.non_ascii else ["ascii"]
    for name in args.mechanisms.split(","):
        for variant in variants:
            cmd = [sys.executable, __file__, "--one", name, "--tokens", str(args.tokens),
                   "--variant", variant] + (["--cached-tables"] if args.cached_tables else [])
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if out.returncode:
                print(f"{name:22s} failed: {out.stderr.strip().splitlines()[-1]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{r['mechanism']:22s} {r['epsilon']:6g} {r['tokens']:7d} {r['fit_s']:7.1f} "
                  f"{r['first_s']:8.2f} {r['privatize_s']:7.2f} {r['tokens_per_s']:10,d} "
                  f"{r['cpu_tokens_per_s']:10,d} {r['peak_rss_mb']:8d}", flush=True)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
