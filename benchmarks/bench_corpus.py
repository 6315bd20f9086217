"""The corpus engine at scale: memory, throughput, workers, Ray, DP-MLM (docs/scale.md).

Each measurement runs ``dptext sanitize`` as a subprocess on generated short records (8 words
drawn from the 5,000 most frequent English words of wordfreq, a public list) and samples the
resident memory of its whole process tree every 0.1 s. Reported: wall time, records/s (or
words/min), peak RSS, and the 1-minute load average before and after (the machine is shared).

    python benchmarks/bench_corpus.py scale      # 100k vs 1M records, txt and JSONL, custext
    python benchmarks/bench_corpus.py workers    # --workers 2 vs 1, custext and laplace
    python benchmarks/bench_corpus.py ray        # --engine ray vs one process; per-batch cost
    python benchmarks/bench_corpus.py dpmlm      # DP-MLM words/min, 1 and 2 workers
    python benchmarks/bench_corpus.py all [--repeat 3] [--out results.json]

Medians over ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def load() -> float:
    return os.getloadavg()[0]


def make_records(path: Path, n: int, fmt: str, seed: int = 0) -> Path:
    import wordfreq

    vocab = wordfreq.top_n_list("en", 5000)
    rnd = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(rnd.choices(vocab, k=8))
            f.write(json.dumps({"id": i, "text": text}) + "\n" if fmt == "jsonl" else text + "\n")
    return path


def sanitize(args: list[str], cwd: Path) -> dict:
    """Run ``dptext sanitize ARGS``; wall seconds and the peak RSS of the process tree."""
    import psutil

    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    before = load()
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize", "--no-progress",
                          *args], cwd=cwd, env=env, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    proc, peak = psutil.Process(p.pid), 0
    while p.poll() is None:
        try:
            rss = proc.memory_info().rss + sum(c.memory_info().rss
                                               for c in proc.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.1)
    err = p.stderr.read()
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"dptext sanitize {' '.join(args)} failed:\n{err}")
    return {"seconds": wall, "peak_rss_mb": peak / 2**20, "load_before": before,
            "load_after": load()}


def median_run(args: list[str], cwd: Path, repeat: int, out: str) -> dict:
    runs = []
    for _ in range(repeat):
        (cwd / out).unlink(missing_ok=True)
        runs.append(sanitize([*args, "-o", out], cwd))
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
            "loads": [(round(r["load_before"], 1), round(r["load_after"], 1)) for r in runs],
            "runs": len(runs)}


def bench_scale(d: Path, repeat: int) -> dict:
    res = {}
    for fmt in ("txt", "jsonl"):
        for n in (100_000, 1_000_000):
            src = make_records(d / f"in-{n}.{fmt}", n, fmt)
            r = median_run(["-m", "custext", "-e", "2", "-i", src.name, "--seed", "1"], d,
                           repeat, f"out-{n}.{fmt}")
            r["records_per_s"] = n / r["seconds"]
            res[f"{fmt}-{n}"] = r
            print(fmt, n, json.dumps(r), flush=True)
        a, b = res[f"{fmt}-100000"]["peak_rss_mb"], res[f"{fmt}-1000000"]["peak_rss_mb"]
        res[f"{fmt}-rss_ratio_1M_vs_100k"] = b / a
    return res


def bench_workers(d: Path, repeat: int) -> dict:
    res = {}
    for mech, n, eps in (("custext", 200_000, "2"), ("laplace", 1_000, "10")):
        src = make_records(d / f"w-{mech}.txt", n, "txt")
        for workers in (1, 2):
            r = median_run(["-m", mech, "-e", eps, "-i", src.name, "--seed", "1", "--workers",
                            str(workers)], d, repeat, f"w-{mech}-{workers}.out")
            r["records_per_s"] = n / r["seconds"]
            res[f"{mech}-workers{workers}"] = r
            print(mech, workers, json.dumps(r), flush=True)
        res[f"{mech}-speedup"] = (res[f"{mech}-workers1"]["seconds"]
                                  / res[f"{mech}-workers2"]["seconds"])
        if (d / f"w-{mech}-1.out").read_bytes() != (d / f"w-{mech}-2.out").read_bytes():
            raise SystemExit(f"{mech}: 1 and 2 workers gave different bytes")
    return res


def bench_ray(d: Path, repeat: int) -> dict:
    res = {}
    for n in (50_000, 200_000):
        src = make_records(d / f"r-{n}.txt", n, "txt")
        for engine in ("local", "ray"):
            extra = ["--engine", "ray", "--workers", "2"] if engine == "ray" else []
            r = median_run(["-m", "custext", "-e", "2", "-i", src.name, "--seed", "1", *extra],
                           d, repeat, f"r-{n}-{engine}.out")
            r["records_per_s"] = n / r["seconds"]
            res[f"{engine}-{n}"] = r
            print(engine, n, json.dumps(r), flush=True)
        if (d / f"r-{n}-local.out").read_bytes() != (d / f"r-{n}-ray.out").read_bytes():
            raise SystemExit("Ray and one process gave different bytes")
    batches = (200_000 - 50_000) / 512
    slope_ray = (res["ray-200000"]["seconds"] - res["ray-50000"]["seconds"]) / batches
    slope_one = (res["local-200000"]["seconds"] - res["local-50000"]["seconds"]) / batches
    res["speedup_200k"] = res["local-200000"]["seconds"] / res["ray-200000"]["seconds"]
    res["fixed_cost_s"] = res["ray-50000"]["seconds"] - 50_000 / 512 * slope_ray
    # two actors work in parallel: a batch costs 2 * slope actor-seconds in the pipeline
    res["per_batch_overhead_ms"] = 1000 * (2 * slope_ray - slope_one)
    res["per_batch_inline_ms"] = 1000 * slope_one
    return res


def bench_dpmlm(d: Path, repeat: int, words: int) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_lm import sample_texts

    from dptext.text import split_words

    texts = sample_texts(words)
    n_words = sum(len(split_words(t)[1::2]) for t in texts)
    (d / "headlines.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    res = {"words": n_words}
    for workers, threads in ((1, 1), (1, 2), (2, 1)):
        r = median_run(["-m", "dpmlm", "-e", "25", "-p", "keep_stopwords=false", "-i",
                        "headlines.txt", "--seed", "1", "--workers", str(workers),
                        "--torch-threads", str(threads)], d, repeat,
                       f"mlm-{workers}-{threads}.out")
        r["words_per_min"] = n_words / r["seconds"] * 60
        res[f"workers{workers}-threads{threads}"] = r
        print(workers, threads, json.dumps(r), flush=True)
    return res


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("scale", "workers", "ray", "dpmlm", "all"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--words", type=int, default=600, help="DP-MLM: words of headlines")
    p.add_argument("--out", help="write the results as JSON")
    a = p.parse_args()
    results = {"load_start": load()}
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
        d = Path(tmp)
        for what in ("scale", "workers", "ray", "dpmlm") if a.what == "all" else (a.what,):
            if what == "dpmlm":
                results[what] = bench_dpmlm(d, a.repeat, a.words)
            else:
                results[what] = {"scale": bench_scale, "workers": bench_workers,
                                 "ray": bench_ray}[what](d, a.repeat)
    results["load_end"] = load()
    text = json.dumps(results, indent=1)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
