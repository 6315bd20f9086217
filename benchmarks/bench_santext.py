"""SanText fit at a never-fitted epsilon on the default 50k-word space: wall time and peak RSS,
with the epsilon-free part (the kNN table of the space's geometry) warm (loaded with the cached
space, the usual case) and cold (the geometry recomputed: one pass over all pairs), and the
sampling rate of the fitted mechanism. Each measurement runs in its own process so that peak
RSS is the fit's own. The child runs SanText as ``dptext sanitize -m santext`` does, without
torch (SanText's CPU fit does not use it; importing torch alone costs 240-280 MB of RSS);
``--torch`` imports it first, as the figures before 2 December 2026 did.

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/bench_santext.py
        [--cold] [--plus] [--threads 1] [--tokens 200000] [--torch]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def _child(cold: bool, plus: bool, threads: int, tokens: int, with_torch: bool) -> None:
    import numpy as np  # its BLAS threads: OMP_NUM_THREADS, set by the parent

    if with_torch:
        import torch

        torch.set_num_threads(threads)
    from dptext.mechanisms.santext import SanText, SanTextPlus
    from dptext.resources import default_space

    t0 = time.perf_counter()
    space = default_space(progress=False)
    load_s = time.perf_counter() - t0
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if cold:
        space._geometry, space._geometry_k = None, 0
    # an epsilon never fitted before (and not in the on-disk table cache: cache=False)
    eps = float(np.round(1.0 + np.random.default_rng(time.time_ns()).random() * 7.0, 6))
    cls = SanTextPlus if plus else SanText
    t0 = time.perf_counter()
    m = cls(epsilon=eps, space=space).fit(cache=False)
    fit_s = time.perf_counter() - t0
    rss_fit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # sampling: rows of the 20k most frequent words, as in running text
    from dptext.mechanisms.frequency import frequency_order

    rows = np.asarray(frequency_order(space)[:20000])
    rows = rows[np.random.default_rng(0).integers(0, len(rows), tokens)]
    t0 = time.perf_counter()
    m._sample(rows, np.random.default_rng(1))
    sample_s = time.perf_counter() - t0
    print(json.dumps({"mechanism": cls.name, "epsilon": eps, "cold": cold, "load_s": load_s,
                      "fit_s": fit_s, "rss_after_load_mb": rss_loaded,
                      "peak_rss_mb": rss_fit, "tokens_per_s": tokens / sample_s,
                      "torch": "torch" in sys.modules}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cold", action="store_true", help="also measure with the geometry recomputed")
    ap.add_argument("--plus", action="store_true", help="also measure SanText+ (w=0.9, p=0.3)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=200_000)
    ap.add_argument("--torch", action="store_true",
                    help="import torch in the measured process first (+240-280 MB RSS)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child[0] == "cold", a.child[1] == "plus", a.threads, a.tokens, a.torch)
        return
    print(f"load: {os.getloadavg()[0]:.2f} (1-min), cpus {os.cpu_count()}, device cpu, "
          f"threads {a.threads}")
    cases = [("warm", "santext")] + ([("warm", "plus")] if a.plus else [])
    cases += [("cold", "santext")] if a.cold else []
    for cache, kind in cases:
        r = subprocess.run([sys.executable, __file__, "--child", cache, kind, "--threads",
                            str(a.threads), "--tokens", str(a.tokens)]
                           + (["--torch"] if a.torch else []),
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "OMP_NUM_THREADS": str(a.threads)})
        d = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{d['mechanism']:9s} eps={d['epsilon']:<9g} epsilon-free part {cache}: "
              f"fit {d['fit_s']:6.2f} s (space load {d['load_s']:.2f} s), peak RSS "
              f"{d['peak_rss_mb']:.0f} MB ({d['rss_after_load_mb']:.0f} MB after load), "
              f"sampling {d['tokens_per_s']:,.0f} tokens/s; torch in the process: "
              f"{'yes' if d['torch'] else 'no'}")


if __name__ == "__main__":
    main()
