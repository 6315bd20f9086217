"""Our numbers beside the seed papers' (issue 34, item 3): CusText and SanText on real GloVe.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/paper_tables.py run \
        --out results/paper_tables [--seeds 0,1,2 --train 500 --test 300 --lm-texts 30]
    .venv/bin/python benchmarks/paper_tables.py table --out results/paper_tables

``run`` runs, for every seed s, the ``dptext evaluate`` grid of the CusText paper's comparison
(CusText with K = 20 and SanText at epsilon 1, 2, 3 - and SanText also at 4, where it starts to
keep words in this space - with the noiseless and random baselines) on Rotten Tomatoes (the
stand-in for SST-2: both are Pang and Lee's Rotten Tomatoes snippets) in the glove-6b-50d space,
with ``--seed s --split-seed s``: each seed is another train/test split and other mechanism
draws, so the spread over seeds covers both. Metrics: utility (accuracy of a classifier trained
on the sanitized train split, BLEU, cosine), token inversion (nearest neighbour, Bayes MAP) and
the mask-token attack of the CusText/SanText papers (``lm_inference --lm-kind masked``, the
packaged ``minilm-mlm`` as the attacker). The exact command of each seed is printed before it
runs; a rerun resumes (finished cells are never recomputed). ``table`` prints the Markdown
tables of docs/evaluation.md: the mean over seeds +- the standard deviation over seeds (n seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

SPACE = "glove-6b-50d"
EPSILONS = ["1,2,3", "santext=1,2,3,4"]
MECHANISMS = "custext,santext"
METRICS = "utility,inversion,lm_inference"


def seed_command(out: Path, seed: int, args) -> list[str]:
    cmd = [sys.executable, "-m", "dptext.cli", "evaluate", "--mechanisms", MECHANISMS,
           "--space", SPACE, "--dataset", "rotten_tomatoes",
           "--lm-kind", "masked", "--lm-texts", str(args.lm_texts), "--metrics", args.metrics,
           "--train", str(args.train), "--test", str(args.test),
           "--seed", str(seed), "--split-seed", str(seed), "--workers", "1",
           "--out", str(out / f"seed{seed}"), "--no-progress"]
    for e in EPSILONS:
        cmd += ["--epsilons", e]
    return cmd


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["sh", "-c", "lscpu | grep 'Model name'; lscpu | grep -o -w -E "
                    "'avx2|fma|avx512[a-z_]*|avx_vnni' | sort -u | tr '\\n' ' '; echo; uptime"],
                   check=False)
    for seed in [int(s) for s in args.seeds.split(",")]:
        cmd = seed_command(out, seed, args)
        print(f"$ {shlex.join(['dptext'] + cmd[3:])}", flush=True)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        print(f"seed {seed}: {time.perf_counter() - start:.0f} s wall", flush=True)
        subprocess.run(["uptime"], check=False)


# ------------------------------------------------------------------ tables
def _records(out: Path) -> dict[int, list[dict]]:
    found = {}
    for d in sorted(out.glob("seed*")):
        f = d / "cells.jsonl"  # the finished cells (also those of a run still going)
        if f.is_file():
            found[int(d.name[4:])] = [json.loads(line) for line in
                                      f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return found


def _value(records: list[dict], mechanism: str, epsilon, metric: str, key: str):
    for r in records:
        if (r.get("mechanism") == mechanism and r.get("metric") == metric
                and r.get("status", "ok") == "ok"
                and (r.get("epsilon") is None if epsilon is None
                     else r.get("epsilon") is not None and float(r["epsilon"]) == epsilon)):
            v = r.get("values", {}).get(key)
            return v if isinstance(v, (int, float)) else None
    return None


def _cell(per_seed: dict[int, list[dict]], mechanism: str, epsilon, metric: str, key: str,
          digits: int) -> str:
    vals = [v for recs in per_seed.values()
            if (v := _value(recs, mechanism, epsilon, metric, key)) is not None]
    if not vals:
        return "-"
    mean = statistics.fmean(vals)
    if len(vals) == 1:
        return f"{mean:.{digits}f} (1 seed)"
    return f"{mean:.{digits}f} +- {statistics.stdev(vals):.{digits}f}"


ROWS = [("noiseless", None), ("random", None)] + [("custext", e) for e in (1, 2, 3)] + [
    ("santext", e) for e in (1, 2, 3, 4)]
COLUMNS = [("utility", "accuracy", 3), ("utility", "bleu", 1), ("utility", "cosine", 3),
           ("inversion", "nn_top1", 3), ("inversion", "bayes", 3),
           ("lm_inference", "success", 3), ("lm_inference", "success_changed", 3)]
LABELS = ["accuracy", "BLEU", "cosine", "NN top-1", "Bayes MAP", "mask-token attack",
          "attack on changed words"]


def table(args) -> None:
    per_seed = _records(Path(args.out))
    if not per_seed:
        raise SystemExit(f"no seed*/cells.jsonl under {args.out}: run first")
    print(f"seeds: {sorted(per_seed)} (mean +- standard deviation over seeds)\n")
    head = ["mechanism", "epsilon"] + LABELS
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for mech, eps in ROWS:
        cells = [_cell(per_seed, mech, eps, m, k, d) for m, k, d in COLUMNS]
        label = "-" if eps is None else f"{eps:g}"
        print(f"| {mech} | {label} | " + " | ".join(cells) + " |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--seeds", default="0,1,2")
    r.add_argument("--train", type=int, default=500)
    r.add_argument("--test", type=int, default=300)
    r.add_argument("--lm-texts", type=int, default=30)
    r.add_argument("--metrics", default=METRICS, help="the mask-token attack (lm_inference) "
                   "costs most: leave it out for some seeds")
    t = sub.add_parser("table")
    t.add_argument("--out", required=True)
    args = p.parse_args()
    (run if args.cmd == "run" else table)(args)


if __name__ == "__main__":
    main()
