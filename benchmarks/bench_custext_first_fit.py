"""CPU seconds of a fresh ``dptext sanitize -m custext --epsilon E --text hi`` at an epsilon whose
tables are not cached yet (a user trying epsilons, a worker, the service), for this checkout's
dptext and, with ``--ref-src``, another checkout's (e.g. main before the output sets were cached).

Each checkout gets its own empty cache holding only a copy of the default space; one warm-up run
(its first fit: CusText's output sets are built, and stored where they are cached) is followed by
``--reps`` runs, each at a new epsilon, interleaved between the checkouts. Prints the CPU model,
flags and ``uptime`` beside the figures.

    PYTHONPATH=src python benchmarks/bench_custext_first_fit.py --ref-src /work/main/src
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine, run_child  # noqa: E402

HERE = str(Path(__file__).resolve().parents[1] / "src")


def fresh_cache(root: Path, space: Path) -> Path:
    """An empty cache holding a copy of the default space (and its digest files)."""
    root.mkdir(parents=True)
    for item in space.parent.glob(space.name + "*"):
        shutil.copy2(item, root / item.name)
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref-src", help="another checkout's src/ to time beside this one")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--k", type=int, default=20)
    args = ap.parse_args()

    sys.path.insert(0, HERE)
    from dptext.resources import default_space_path

    space = default_space_path()
    if not space.is_file():
        raise SystemExit(f"build the default space first ({space}): dptext demo")
    srcs = {"this": HERE, **({"ref": args.ref_src} if args.ref_src else {})}
    print(machine())
    with tempfile.TemporaryDirectory(prefix="bench-custext-") as tmp:
        envs = {name: {**os.environ, "PYTHONPATH": src,
                       "DPTEXT_CACHE": str(fresh_cache(Path(tmp) / name, space))}
                for name, src in srcs.items()}
        cpu: dict[str, list[float]] = {name: [] for name in srcs}
        for i in range(-1, args.reps):  # -1: the warm-up, the cache's first fit
            eps = 50.0 if i < 0 else round(1.1 + 0.37 * i, 2)
            for name, env in envs.items():
                cmd = [sys.executable, "-m", "dptext.cli", "sanitize", "-m", "custext",
                       "-p", f"k={args.k}", "--epsilon", str(eps), "--text", "hi"]
                c, w = run_child(cmd, env)
                label = "warm-up (first fit)" if i < 0 else f"new epsilon {eps}"
                print(f"{name:4s} {label:22s} cpu {c:6.2f} s  wall {w:6.2f} s", flush=True)
                if i >= 0:
                    cpu[name].append(c)
        for name, values in cpu.items():
            print(f"{name}: median cpu of a fresh process fitting a new epsilon "
                  f"{statistics.median(values):.2f} s over {len(values)} runs "
                  f"(min {min(values):.2f}, max {max(values):.2f})")
        if "ref" in cpu:
            print(f"ratio ref/this (medians): "
                  f"{statistics.median(cpu['ref']) / statistics.median(cpu['this']):.1f}")
    print(machine()["uptime"])


if __name__ == "__main__":
    main()
