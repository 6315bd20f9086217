"""Multivariate Laplace nearest-word search against the BLAS bound measured in the same run.

    python benchmarks/bench_laplace.py [--tokens 4096] [--repeats 3] [--indexed]

Points: default-space vectors of words drawn by public frequency plus Laplace noise at each
epsilon. Figures (medians of ``--repeats`` interleaved runs):

- bound: the pure float32 GEMM points x words^T (dim 384), numpy's BLAS into a preallocated
  buffer, no reduction - the time no exact search over all words can beat with this BLAS - as
  tokens/s (2 * words * dim flops per token): the best of several (block x tile) shapes (the
  search's own, 256 x 8192, 512 x all words), each timed in every repeat;
- exact: ``ExactSearch`` (GEMM + fused top-two + float64 re-check of near ties), its ratio to
  the bound, and the share of points re-checked;
- baseline: the previous search (torch matmul + argmax over all words, 1,024 points a block);
- ``--indexed``: faiss ivf / hnsw (post-processing of the noisy point: the guarantee is
  unchanged) with their top-1 agreement with the exact search.
Prints ``uptime`` load and the device (CPU, thread count). Each figure is given by wall clock
and by process CPU time: on a shared machine the CPU-time ratio is the one to read (the
wall-clock one mostly measures which run another process's work fell into).

One command for a quiet machine (< 2 min):

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_laplace.py --epsilons 10,50,200
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

import numpy as np


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class Clock:
    """Wall-clock and process CPU seconds of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def gemm_only(points32: np.ndarray, words: np.ndarray, block: int, tile: int) -> Clock:
    buf = np.empty((block, min(tile, len(words))), np.float32)
    with Clock() as c:
        for s in range(0, len(points32), block):
            p = points32[s: s + block]
            for t in range(0, len(words), tile):
                w = words[t: t + tile]
                np.matmul(p, w.T, out=buf[: len(p), : len(w)])
    return c


def torch_baseline(points: np.ndarray, words: np.ndarray) -> float:  # wall seconds
    import torch

    w = torch.from_numpy(words)
    half = 0.5 * (w * w).sum(1)
    pts = torch.from_numpy(points.astype(np.float32))
    start = time.perf_counter()
    for s in range(0, len(pts), 1024):
        sc = pts[s: s + 1024] @ w.T
        sc -= half
        sc.argmax(1)
    return time.perf_counter() - start


def main() -> None:
    import dptext
    from dptext.mechanisms.nearest import ExactSearch, make_search
    from dptext.resources import default_space

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilons", default="10,50,200")
    ap.add_argument("--indexed", action="store_true")
    args = ap.parse_args()
    space = default_space()
    words = space.vectors
    n_flop = 2.0 * words.size
    import torch

    print(f"device: cpu ({os.cpu_count()} cores; numpy BLAS threads "
          f"{os.environ.get('OMP_NUM_THREADS', 'default')}, torch threads "
          f"{torch.get_num_threads()}); {len(words)} words x {words.shape[1]}; "
          f"{n_flop / 1e6:.0f} MFLOP per token")
    print(f"load before: {load()}")
    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(words), args.tokens)
    search = ExactSearch(words)
    indexed = {}
    if args.indexed:
        for kind in ("ivf", "hnsw"):
            t0 = time.perf_counter()
            indexed[kind] = make_search(words, kind)
            print(f"{kind} index built in {time.perf_counter() - t0:.1f}s")
    for eps in (float(e) for e in args.epsilons.split(",")):
        m = dptext.mechanism("laplace", epsilon=eps, space=space)
        points = words[rows].astype(np.float64) + m.noise(len(rows), rng)
        points32 = points.astype(np.float32)
        shapes = dict.fromkeys([(search.block, search.tile), (256, 8192), (512, len(words))])
        bound = {sh: [] for sh in shapes}
        exact, base, checked = [], [], []
        fast: dict[str, list] = {k: [] for k in indexed}
        for _ in range(args.repeats):  # interleaved: each figure sees the same load
            for sh in shapes:
                bound[sh].append(gemm_only(points32, words, *sh))
            before = search.rechecked
            with Clock() as c:
                ref = search(points)
            exact.append(c)
            checked.append(search.rechecked - before)
            base.append(torch_baseline(points, words))
            for kind, f in indexed.items():
                t0 = time.perf_counter()
                got = f(points)
                fast[kind].append((time.perf_counter() - t0, float((got == ref).mean())))
        n = len(points)
        t = float(np.median(base))
        for clock in ("cpu", "wall"):
            rates = {sh: n / float(np.median([getattr(r, clock) for r in rs]))
                     for sh, rs in bound.items()}
            top = max(rates, key=rates.get)
            b = n / rates[top]
            e = float(np.median([getattr(r, clock) for r in exact]))
            print(f"eps {eps:g} [{clock:4s}]: BLAS bound {n / b:8.0f} tokens/s "
                  f"({n * n_flop / b / 1e9:.1f} GFLOP/s, shape {top[0]}x{top[1]}; "
                  + ", ".join(f"{k[0]}x{k[1]} {v:.0f}" for k, v in rates.items())
                  + f") | exact {n / e:8.0f} tokens/s = {b / e:.3f} of the bound, "
                  f"{np.median(checked) / n:.2%} re-checked")
        print(f"eps {eps:g} torch baseline {n / t:8.0f} tokens/s wall (exact / baseline "
              f"{t / float(np.median([r.wall for r in exact])):.2f}x)")
        for kind, runs in fast.items():
            s = float(np.median([r[0] for r in runs]))
            print(f"   {kind}: {n / s:8.0f} tokens/s ({s and e / s:.1f}x exact), top-1 "
                  f"agreement with exact {runs[0][1]:.2%}")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
