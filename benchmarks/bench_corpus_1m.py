"""Issue 14's figures at full size: `--workers 2` against `--workers 1` at 1,000,000 custext
records and 4,000 laplace records (end to end, identical bytes checked), and the peak RSS of
custext at 100k vs 1M records in txt and JSONL (bench_corpus.py's helpers).

    OMP_NUM_THREADS=1 python benchmarks/bench_corpus_1m.py     # about 4 minutes on 2 idle cores
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_corpus as bc  # noqa: E402


def main() -> int:
    d = Path(tempfile.mkdtemp(prefix="dptext-corpus-1m-"))
    res = {}
    for mech, n, eps in (("custext", 1_000_000, "2"), ("laplace", 4000, "10")):
        src = bc.make_records(d / f"w-{mech}-{n}.txt", n, "txt")
        for workers in (1, 2):
            r = bc.median_run(["-m", mech, "-e", eps, "-i", src.name, "--seed", "1",
                               "--workers", str(workers)], d, 1, f"w-{mech}-{n}-{workers}.out")
            r["records_per_s"] = n / r["seconds"]
            res[f"{mech}-{n}-workers{workers}"] = r
            bc._show(f"{mech} {n:,} --workers {workers}", r)
        one = (d / f"w-{mech}-{n}-1.out").read_bytes()
        two = (d / f"w-{mech}-{n}-2.out").read_bytes()
        speedup = res[f"{mech}-{n}-workers1"]["seconds"] / res[f"{mech}-{n}-workers2"]["seconds"]
        res[f"{mech}-speedup"] = speedup
        print(f"{mech} {n:,}: --workers 2 / --workers 1 = {speedup:.2f}x end to end; "
              f"identical bytes: {one == two}", flush=True)
    res["scale"] = bc.bench_scale(d, 1)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
