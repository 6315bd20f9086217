"""SanText sampling rate (tokens/s of ``_sample``), this checkout against an earlier revision, side
by side in interleaved subprocesses (each version fits its tables in memory at each epsilon).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_santext_sampling.py \
        [--before REV] [--epsilons 2,8,50] [--tokens 200000] [--repeats 2]

``--before REV`` (e.g. the commit before the exact sampler) is exported with ``git archive`` to a
temporary directory; without it only this checkout is measured. Tokens: 200k draws of the 20k
most frequent words (by public frequency). Rates per CPU second of the process (what a loaded
machine can still compare) and per wall second. Prints ``uptime`` before and after: on a shared
machine the figures are lower bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import json, sys, time
import numpy as np, torch
torch.set_num_threads(1)
from dptext.mechanisms.santext import SanText
from dptext.mechanisms.frequency import frequency_order
from dptext.resources import default_space
eps, tokens = float(sys.argv[1]), int(sys.argv[2])
space = default_space(progress=False)
m = SanText(epsilon=eps, space=space)
t0 = time.perf_counter(); m.fit(cache=False); fit = time.perf_counter() - t0
rows = np.asarray(frequency_order(space)[:20000])
rows = rows[np.random.default_rng(0).integers(0, len(rows), tokens)]
m._sample(rows[:1000], np.random.default_rng(2))  # warm-up
t0, c0 = time.perf_counter(), time.process_time(); m._sample(rows, np.random.default_rng(1))
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"rate": tokens / wall, "cpu_rate": tokens / cpu, "fit": fit}))
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(src: Path, eps: float, tokens: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", WORKER, str(eps), str(tokens)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="git revision to compare with (git archive of its src/)")
    ap.add_argument("--epsilons", default="2,8,50")
    ap.add_argument("--tokens", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    print(f"load before: {uptime()}")
    versions = {"this checkout": ROOT / "src"}
    with tempfile.TemporaryDirectory() as tmp:
        if args.before:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "src"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            versions = {f"before ({args.before})": Path(tmp) / "src", **versions}
        for eps in (float(e) for e in args.epsilons.split(",")):
            results: dict[str, list[dict]] = {k: [] for k in versions}
            for _ in range(args.repeats):  # interleaved: both versions see the same load
                for name, src in versions.items():
                    results[name].append(run(src, eps, args.tokens))
            for name, rs in results.items():
                rates = sorted(r["rate"] for r in rs)
                cpu = sorted(r["cpu_rate"] for r in rs)
                print(f"eps {eps:g} {name:24s}: sampling {cpu[len(cpu) // 2]:>10,.0f} tokens per "
                      f"CPU second (runs: {', '.join(f'{r:,.0f}' for r in cpu)}), wall "
                      f"{rates[len(rates) // 2]:,.0f} tokens/s; fit "
                      f"{min(r['fit'] for r in rs):.1f}s")
    print(f"load after: {uptime()}")


if __name__ == "__main__":
    main()
