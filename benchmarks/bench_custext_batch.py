"""CusText's batch pipeline in one process: the best and median CPU time of 15 batches of the
100k-token benchmark text (bench_mechanisms.make_text, split into sentences), ASCII and with
accented letters (the tokenizer's non-ASCII path), cached tables.

    PYTHONPATH=src python benchmarks/bench_custext_batch.py
    PYTHONPATH=/path/to/other/checkout/src python benchmarks/bench_custext_batch.py  # compare

The best CPU time is the figure least disturbed by other processes (on a quiet machine it is
close to the wall time); `uptime` is printed with it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_mechanisms import make_text, to_non_ascii  # noqa: E402

import dptext  # noqa: E402
from dptext.resources import default_space  # noqa: E402

RUNS = 15


def main() -> None:
    space = default_space(progress=False)
    text = make_text(100_000)
    m = dptext.mechanism("custext", epsilon=2.0, space=space).fit()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{dptext.__file__}; {load}")
    for name, t in (("ascii", text), ("non-ascii", to_non_ascii(text))):
        lines = t.split(". ")
        results = m.privatize_batch(lines, rng=0)  # also fills the lookup cache
        tokens = dptext.PrivacyReport.combine(r.report for r in results).tokens_total
        cpu, wall = [], []
        for seed in range(RUNS):
            c, w = time.process_time(), time.perf_counter()
            m.privatize_batch(lines, rng=np.random.default_rng(seed))
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
        print(f"{name}: {tokens} tokens, best CPU {min(cpu) * 1000:.1f} ms = "
              f"{tokens / min(cpu):,.0f} tokens/s, median CPU {tokens / np.median(cpu):,.0f}, "
              f"best wall {tokens / min(wall):,.0f}, median wall {tokens / np.median(wall):,.0f}")


if __name__ == "__main__":
    main()
