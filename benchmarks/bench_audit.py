"""Samples the quick audit needs to flag each planted bug, and its time (docs/audit.md).

For each bug: the smallest number of draws per input, on a grid, at which the audit reports a
VIOLATION for each of three seeds, and the audit's time there; the real mechanism at the same
settings is audited at that size too (it must be consistent). Training bugs: the smallest number
of runs per world. One torch thread.

    OMP_NUM_THREADS=1 PYTHONPATH=src:tests python benchmarks/bench_audit.py [--only NAME]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import torch  # noqa: E402
from planted_bugs import (  # noqa: E402
    HalfDistanceSanText,
    HotCusText,
    LeakySanText,
    WideClipDPMLM,
    per_tensor_clipping_train,
    rig_worst_case,
    squared_std_train,
    tiny_bert,
    tiny_space,
)

from dptext.audit import Pair, audit  # noqa: E402
from dptext.audit.training import audit_training  # noqa: E402
from dptext.mechanisms.custext import CusText  # noqa: E402
from dptext.mechanisms.dpmlm import DPMLM  # noqa: E402
from dptext.mechanisms.santext import SanText  # noqa: E402

SEEDS = (21, 22, 23)
GRID = (500, 1000, 2000, 4000, 8000, 16_000, 32_000, 64_000)
TRIALS = (25, 50, 100, 200, 400)


def _lm_pair():
    path = tiny_bert(Path(tempfile.mkdtemp()) / "bert")
    out = []
    for cls in (DPMLM, WideClipDPMLM):
        m = cls(epsilon=3.0, backend="mlm", model=path, clip_low=-2.0, clip_high=2.0).fit()
        rig_worst_case(m, "cat", "dog", "river")
        out.append(m)
    return out, {"pairs": [Pair("cat", "dog"), Pair("dog", "cat")]}


def cases():
    tiny = tiny_space(60, 2, 3)
    return {
        "custext-temperature (tiny 60-word space, K=10, eps=2)": lambda: (
            [CusText(epsilon=2.0, k=10, space=tiny).fit(cache=False),
             HotCusText(epsilon=2.0, k=10, space=tiny).fit(cache=False)], {}),
        "santext-half-distance (tiny 60-word space, eps=2)": lambda: (
            [SanText(epsilon=2.0, space=tiny).fit(cache=False),
             HalfDistanceSanText(epsilon=2.0, space=tiny).fit()], {}),
        "pass-through-1% (SanText, default 50k space, eps=2)": lambda: (
            [SanText(epsilon=2.0).fit(), LeakySanText(epsilon=2.0).fit()], {}),
        "dpmlm-clip-range-1.5x (worst-case tiny BERT, eps=3)": _lm_pair,
    }


def samples_needed(name, build) -> None:
    (real, bug), kw = build()
    for n in GRID:
        started = time.perf_counter()
        verdicts = [audit(bug, samples=n, seed=s, **kw).verdict for s in SEEDS]
        seconds = (time.perf_counter() - started) / len(SEEDS)
        if all(v == "VIOLATION" for v in verdicts):
            honest = audit(real, samples=n, seed=SEEDS[0], **kw)
            print(f"{name}: flagged at {n} draws per input (3/3 seeds), {seconds:.1f} s per "
                  f"audit; real mechanism at {n}: {honest.verdict} "
                  f"(lower bound {honest.epsilon_lower_bound:.3g})", flush=True)
            return
    print(f"{name}: not flagged up to {GRID[-1]} draws per input", flush=True)


def trials_needed(name, train_fn) -> None:
    for r in TRIALS:
        started = time.perf_counter()
        results = [audit_training(trials=r, train_fn=train_fn, seed=s) for s in range(3)]
        seconds = (time.perf_counter() - started) / 3
        if all(x.verdict == "VIOLATION" for x in results):
            honest = audit_training(trials=r, seed=0)
            print(f"{name}: flagged at {r} runs per world (3/3 seeds), {seconds:.1f} s per "
                  f"audit, lower bound {results[0].epsilon_lower_bound:.3g} vs accountant "
                  f"{results[0].accountant_epsilon:.3g}; real trainer: {honest.verdict} "
                  f"(lower bound {honest.epsilon_lower_bound:.3g})", flush=True)
            return
    print(f"{name}: not flagged up to {TRIALS[-1]} runs per world", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--only", help="run the cases whose name contains this")
    args = p.parse_args()
    torch.set_num_threads(1)
    for name, build in cases().items():
        if not args.only or args.only in name:
            samples_needed(name, build)
    for name, fn in (("userdp-per-tensor-clipping (64 tensors, z=2, beta=0.05)",
                      per_tensor_clipping_train),
                     ("userdp-noise-std-squared (z=2, beta=0.05)", squared_std_train)):
        if not args.only or args.only in name:
            trials_needed(name, fn)


if __name__ == "__main__":
    main()
