"""Wall time of the default evaluation grid (the command of docs/evaluation.md), end to end.

    python benchmarks/bench_grid.py [--workers 1,2] [--fresh-tables] [--keep DIR]

Runs ``dptext evaluate --mechanisms custext,santext,laplace,gumbel --epsilons 1,2,4,8
--dataset rotten_tomatoes`` (default metrics: utility, inversion, deniability, cost; 72 cells,
16 of them skipped: Gumbel below its admissible epsilon) into a new directory once per
``--workers`` value, as a user would (a fresh ``dptext`` process), and prints the wall time,
the sum of the cells' own times, the CPU time of all its processes (workers included: on a busy
machine CPU time / workers estimates the wall time on free cores), ``uptime`` before and after,
and whether the runs gave the same values (timings aside). The fitted tables come from the
usual cache (built by the first run if missing: say so with the figure); ``--fresh-tables``
uses an empty table cache instead (every CusText and SanText fit included; the default space
is linked from the usual cache).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRID = ["--mechanisms", "custext,santext,laplace,gumbel", "--epsilons", "1,2,4,8",
        "--dataset", "rotten_tomatoes", "--no-progress"]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def values(out: Path) -> dict:
    skip = ("seconds", "tokens_per_s")
    cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    return {c["key"]: {k: v for k, v in c["values"].items() if not any(s in k for s in skip)}
            for c in cells}


def run(workers: int, out: Path, env: dict) -> dict:
    cmd = [sys.executable, "-m", "dptext.cli", "evaluate", *GRID, "--out", str(out),
           "--workers", str(workers)]
    before = uptime()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers' time included
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    if done.returncode:
        raise SystemExit(f"workers={workers} failed:\n{done.stderr[-3000:]}")
    cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    return {"workers": workers, "wall_s": wall, "cpu_s": cpu, "cells": len(cells),
            "skipped": sum(c["status"] != "ok" for c in cells),
            "cell_s": sum(c.get("seconds", 0.0) for c in cells),
            "fit_s": sum(c.get("fit_seconds", 0.0) for c in cells),
            "uptime_before": before, "uptime_after": uptime()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", default="1,2", help="comma list of --workers values to time")
    p.add_argument("--fresh-tables", action="store_true")
    p.add_argument("--keep", help="write the grids under this directory (default: a temp dir)")
    args = p.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="dptext-grid-"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    from dptext.resources import cache_dir

    if args.fresh_tables:  # an empty fitted-table cache; the default space and models linked
        cache = root / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        for entry in cache_dir().iterdir():
            if entry.name != "fitted" and not (cache / entry.name).exists():
                (cache / entry.name).symlink_to(entry)
        env["DPTEXT_CACHE"] = str(cache)
    print(f"tables: {'empty cache' if args.fresh_tables else 'the usual cache'}; {uptime()}")
    results = []
    for w in [int(x) for x in args.workers.split(",")]:
        out = root / f"workers-{w}"
        r = run(w, out, env)
        results.append((r, out))
        print(f"workers={w}: {r['wall_s'] / 60:.2f} min wall ({r['wall_s']:.0f} s), "
              f"{r['cells']} cells ({r['skipped']} skipped), cells' own time {r['cell_s']:.0f} s "
              f"(fits {r['fit_s']:.0f} s); CPU time of all its processes {r['cpu_s']:.0f} s "
              f"(/ {w} = {r['cpu_s'] / w / 60:.2f} min: the wall time with {w} free cores and "
              f"perfect balance)\n  before: {r['uptime_before']}\n  after:  "
              f"{r['uptime_after']}", flush=True)
    if len(results) > 1:
        same = all(values(o) == values(results[0][1]) for _, o in results[1:])
        print(f"same values in every run (timings aside): {same}")
    print(f"grids in {root}")


if __name__ == "__main__":
    main()
