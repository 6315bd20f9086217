"""Entity mode through the corpus engine with 1 and 2 workers: notes per second (issue 31).

Writes ``--notes N`` generated clinical notes (:func:`dptext.deid.notes.generate_notes`, a
patient id per note, 20 patients) as JSONL, then runs the command line as a user would::

    dptext sanitize -m custext -e 3 -i notes.jsonl -f note --user-field patient \\
        --entities PHI --detector spacy --consistent unit --seed 1 --workers W -o out.jsonl

for each W of ``--workers`` (default 1,2), ``--rounds`` times in turn (1, 2, 1, 2, ...), each a
fresh process (its start-up, imports and model loads included: what a user waits for). With
``--busy`` one competing busy process (a pure-Python loop) runs meanwhile. Prints wall seconds,
notes/s and the children's CPU seconds per run, the median per W, checks that every run wrote
the same bytes, and prints ``lscpu`` model/flags and ``uptime`` before and after.

    OMP_NUM_THREADS=1 python benchmarks/bench_entity_workers.py --notes 600 [--busy]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def machine() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                  if line.startswith("Model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in out.splitlines()
                  if line.startswith("Flags")), [])
    cpus = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("CPU(s)")), "?")
    simd = [f for f in flags if f.startswith(("avx", "amx", "sse4"))]
    return f"{model}; {cpus} CPUs; flags {' '.join(simd)}"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def write_notes(path: Path, n: int) -> None:
    from dptext.deid.notes import generate_notes

    with open(path, "w", encoding="utf-8") as f:
        for i, r in enumerate(generate_notes(n, seed=0)):
            f.write(json.dumps({"patient": f"p{i % 20}", "note": r.text}) + "\n")


def run_once(src: Path, out: Path, workers: int, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its workers) of one run."""
    for p in out.parent.glob(out.name + "*"):
        p.unlink()
    cmd = [sys.executable, "-m", "dptext.cli", "sanitize", "-m", "custext", "-e", "3",
           "-i", str(src), "-f", "note", "--user-field", "patient", "--entities", "PHI",
           "--detector", "spacy", "--consistent", "unit", "--seed", "1", "--no-progress",
           "--workers", str(workers), "-o", str(out), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=600)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--busy", action="store_true", help="one competing busy process meanwhile")
    ap.add_argument("--extra", default="", help="more sanitize options, space-separated")
    args = ap.parse_args()
    print(f"machine: {machine()}", flush=True)
    print(f"before: {uptime()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-entity-"))
    src = tmp / "notes.jsonl"
    write_notes(src, args.notes)
    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    results: dict[int, list] = {}
    digests = set()
    try:
        for _ in range(args.rounds):
            for w in (int(x) for x in args.workers.split(",")):
                out = tmp / f"out{w}.jsonl"
                wall, cpu = run_once(src, out, w, args.extra.split())
                digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
                results.setdefault(w, []).append((wall, cpu))
                print(f"workers {w}: {wall:.1f} s wall, {args.notes / wall:.1f} notes/s, "
                      f"{cpu:.1f} CPU s ({args.notes / cpu:.1f} notes per CPU-second)",
                      flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    print(f"after: {uptime()}", flush=True)
    print(f"same bytes in every run: {len(digests) == 1}")
    for w, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        print(f"median workers {w}: {wall:.1f} s, {args.notes / wall:.1f} notes/s "
              f"({len(runs)} runs, {args.notes} notes{', one busy process' if busy else ''})")
    os.system(f"rm -rf {tmp}")


if __name__ == "__main__":
    main()
