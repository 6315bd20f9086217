"""Issue 13's kill -9 check, at full size, through the real command line.

`dptext sanitize` of N records (default 20,000) about U people with `--user-field`, a SQLite
ledger and a per-person budget is killed with SIGKILL at K random moments (default 20); after
each kill the same command is run again (it resumes). At the end:

(a) every released record is charged exactly once: for every person, the ledger's released
    charges equal that person's records in the output, and nothing is pending;
(b) no person exceeds the budget (basic composition, the rule the ledger enforces);
(c) the output, report and rejects equal those of one uninterrupted run (same seed, a fresh
    ledger);
plus the hash chain verifies.

    python benchmarks/kill_sanitize_ledger.py [--records 20000] [--kills 20]

Prints the kill times, how many kills hit a running job, and the checks; exits 1 if any fails.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("alice bob carol met saw the nurse doctor in paris boston on monday tuesday about "
         "a cough fever and went home today clinic visit").split()


def write_input(path: Path, n: int, people: int, seed: int) -> None:
    rnd = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 9)))
            f.write(json.dumps({"id": i, "author": f"p{rnd.randrange(people)}",
                                "text": text}) + "\n")


def command(inp: Path, out: Path, ledger: Path, budget: float) -> list[str]:
    return [sys.executable, "-m", "dptext.cli", "sanitize", "-m", "custext", "-e", "1",
            "--input", str(inp), "--output", str(out), "--user-field", "author",
            "--ledger", str(ledger), "--owner", "bench", "--dataset", "kill",
            "--budget", str(budget), "--seed", "7", "--batch-size", "200",
            "--shard-size", "500", "--no-progress"]


def run_to_end(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"run failed ({p.returncode}): {p.stderr[-2000:]}")
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--people", type=int, default=400)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    from dptext.ledger import Ledger

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    tmp = Path(tempfile.mkdtemp(prefix="dptext-kill-"))
    inp = tmp / "notes.jsonl"
    write_input(inp, args.records, args.people, args.seed)
    print(f"uptime: {os.popen('uptime').read().strip()}")

    ref_dir = tmp / "ref"
    ref_dir.mkdir()
    ref_out = ref_dir / "out.jsonl"
    seconds = run_to_end(command(inp, ref_out, ref_dir / "l.sqlite", args.budget), env)
    print(f"uninterrupted run: {args.records} records in {seconds:.1f} s")
    small = tmp / "small.jsonl"
    write_input(small, 10, 3, args.seed)
    start = run_to_end(command(small, tmp / "small.out.jsonl", tmp / "small.sqlite",
                               args.budget), env)
    work = max(seconds - start, 1.0)
    print(f"start-up (a 10-record run): {start:.1f} s; one kill in four during the start-up, "
          f"the others at U(0, {work / args.kills:.2f} s) after the run's first own shard")

    run_dir = tmp / "run"
    run_dir.mkdir()
    out, ledger_path = run_dir / "out.jsonl", run_dir / "l.sqlite"
    cmd = command(inp, out, ledger_path, args.budget)
    rnd = random.Random(args.seed)
    hit = 0
    partial = Path(str(out) + ".partial")
    for k in range(args.kills):
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if k % 4 == 0:  # every fourth kill at a random moment of the start-up
            delay = start * rnd.uniform(0.2, 1.0)
            time.sleep(delay)
        else:  # the others once this run has committed a shard of its own, at random
            before = len(list(partial.glob("part-*.jsonl"))) if partial.exists() else 0
            while p.poll() is None and (not partial.exists()
                                        or len(list(partial.glob("part-*.jsonl"))) <= before):
                time.sleep(0.01)
            delay = rnd.uniform(0, 2 * work / (2 * args.kills))
            time.sleep(delay)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            hit += 1
        p.wait(60)
        p.stderr.close()
        shards = len(list(partial.glob("part-*.jsonl"))) if partial.exists() else 0
        print(f"kill {k + 1}: {'start-up' if k % 4 == 0 else 'working'} + {delay:.2f} s; "
              f"{shards} shards committed so far")
        if out.exists():  # the output appears only complete
            break
    run_to_end(cmd, env)  # the same command once more finishes the job
    print(f"{hit} kills hit a running job")

    failures = []
    for suffix in ("", ".report.json", ".rejects.jsonl"):
        a, b = Path(str(out) + suffix), Path(str(ref_out) + suffix)
        same = a.exists() == b.exists() and (not a.exists() or a.read_bytes() == b.read_bytes())
        if suffix == ".report.json" and a.exists():  # the release id differs (other ledger)
            ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
            ra.pop("ledger_release", None)
            rb.pop("ledger_release", None)
            same = ra == rb
        print(f"(c) {('output' + suffix):28s} identical to the uninterrupted run: {same}")
        if not same:
            failures.append(f"(c) {suffix or 'output'} differs")

    per_person = collections.Counter(json.loads(line)["author"]
                                     for line in out.read_text(encoding="utf-8").splitlines())
    people = {json.loads(line)["author"] for line in inp.read_text().splitlines()}
    ledger = Ledger(str(ledger_path))
    over, mismatched = 0, 0
    for person in sorted(people):
        s = ledger.spent(person, owner="bench", dataset="kill", pld=False)
        if s.records != per_person.get(person, 0) or s.pending:
            mismatched += 1
        if s.epsilon_basic > args.budget + 1e-9:
            over += 1
    pending = len(ledger.pending())
    ledger.verify()
    print(f"(a) people whose released charges differ from their released records: "
          f"{mismatched} of {len(people)}; pending charges: {pending}")
    print(f"(b) people over the budget of {args.budget:g}: {over}")
    print(f"hash chain: verified; output records {sum(per_person.values())} of "
          f"{args.records} (the rest withheld by the budget)")
    if mismatched or pending:
        failures.append("(a)")
    if over:
        failures.append("(b)")
    print("FAILED: " + ", ".join(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
