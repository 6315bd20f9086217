"""Kill -9 at random points of a 50k-record job, resume each time, compare with a clean run.

The issue's full-size version of the test
``test_corpus.py::test_kill9_at_random_points_then_resume_is_byte_identical`` (which runs 6,000
records to keep ``make test`` short). A seeded CusText job (eps 2, K 5, a
200-word random space: the engine, not the mechanism, is under test) over ``--records`` JSONL
records is run once uninterrupted (the reference), then started again and again and killed with
SIGKILL (the whole process group: driver and workers) at ``--kills`` points spread at random over
the job - after a random number of committed shards, at a random moment of the next shard - each
run continuing the previous one's committed shards; a last run finishes it. After
every kill the final output either does not exist or is complete and identical; at the end the
output and its report are byte-identical to the reference's, and no temporary is left behind.

    python benchmarks/kill_resume.py                      # 50,000 records, 20 kills, inline
    python benchmarks/kill_resume.py --workers 2          # the same with two worker processes
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SHARD = 1000
WORDS = ["alice", "bob", "met", "in", "paris", "the", "and", "city", "river", "dog"]


def mechanism():
    import numpy as np

    from dptext.embeddings import EmbeddingSpace
    from dptext.mechanisms.registry import mechanism as make

    rng = np.random.default_rng(7)
    words = WORDS + [f"w{i}" for i in range(200 - len(WORDS))]
    space = EmbeddingSpace(words, rng.standard_normal((200, 8)), name="tiny")
    space.geometry(16)
    return make("custext", epsilon=2.0, k=5, space=space).fit()


def write_jsonl(path: Path, n: int, seed: int = 3) -> Path:
    rnd = random.Random(seed)
    vocab = WORDS + [f"w{i}" for i in range(30)]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            rec = {"id": i, "text": " ".join(rnd.choices(vocab, k=rnd.randint(1, 8))),
                   "title": " ".join(rnd.choices(vocab, k=2)), "user": f"u{i % 7}"}
            f.write(json.dumps(rec) + "\n")
    return path


def run_job(m, src: Path, out: Path, workers: int):
    from dptext.corpus import CorpusJob, run

    return run(CorpusJob(m, str(src), str(out), seed=11, batch_size=100, shard_records=SHARD,
                         workers=workers))


def kill_at(fn, partial: Path, shards: int, extra: float, limit: float) -> bool:
    """Run ``fn`` in a forked child (own process group) and SIGKILL the group ``extra``
    seconds after the job has committed ``shards`` shards (or after ``limit`` seconds);
    whether the child was still running when killed."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setpgid(0, 0)
            fn()
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    start, reached = time.monotonic(), None
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
        now = time.monotonic()
        if reached is None and (committed(partial) >= shards or now - start > limit):
            reached = now
        if reached is not None and now - reached >= extra:
            break
        time.sleep(0.005)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    return True


def committed(partial: Path) -> int:
    try:
        return len(json.loads((partial / "manifest.json").read_text())["shards"])
    except (OSError, ValueError):
        return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=50_000)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seed", type=int, default=5, help="where the kills fall")
    a = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"start: {up}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kill-resume-") as tmp:
        d = Path(tmp)
        os.environ["DPTEXT_CACHE"] = str(d / "cache")
        m = mechanism()
        src = write_jsonl(d / "in.jsonl", a.records)
        t = time.monotonic()
        run_job(m, src, d / "ref.jsonl", a.workers)
        total = time.monotonic() - t
        n_shards = -(-a.records // SHARD)
        shard_time = total / n_shards
        print(f"reference: {a.records:,} records in {total:.1f} s ({n_shards} shards)",
              flush=True)
        out, partial = d / "out.jsonl", d / "out.jsonl.partial"
        ref = (d / "ref.jsonl").read_bytes()
        rnd = random.Random(a.seed)
        # kill points spread over the job: after a random number of committed shards, at a
        # random moment of the next shard (mid-batch, mid-commit, before the first...)
        points = sorted(rnd.randrange(n_shards) for _ in range(a.kills))
        effective, shards = 0, []
        t = time.monotonic()
        for k in points:
            if kill_at(lambda: run_job(m, src, out, a.workers), partial, k,
                       rnd.uniform(0.0, shard_time), limit=4 * total):
                effective += 1
            shards.append(committed(partial))
            if out.exists() and out.read_bytes() != ref:
                raise SystemExit("FAIL: an output appeared that differs from the reference")
        result = run_job(m, src, out, a.workers)
        seconds = time.monotonic() - t
        same = out.read_bytes() == ref and \
            (d / "out.jsonl.report.json").read_bytes() == (d / "ref.jsonl.report.json").read_bytes()
        debris = [q.name for q in d.iterdir() if q.name.endswith((".tmp", ".partial"))]
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"{a.kills} kills ({effective} while the job ran), shards committed at each: "
              f"{shards}", flush=True)
        print(f"resumed {result.resumed_records:,} records in the last run; all runs "
              f"{seconds:.1f} s; output and report identical to the reference: {same}; "
              f"debris: {debris or 'none'}", flush=True)
        print(f"end: {up}", flush=True)
        if not same or debris or result.summary["records"] != a.records:
            raise SystemExit("FAIL")
        print("OK")


if __name__ == "__main__":
    main()
