"""``--search auto`` (issue 36): what it chose on this CPU, what choosing and the cached choice
cost, the int8 set-up with and without its cache, and the Laplace mechanism's nearest-word
search with ``search="auto"`` against ``search="exact"`` in the same run.

    OMP_NUM_THREADS=2 python benchmarks/bench_search_auto.py [--points 8192] [--rounds 3]
        [--epsilon 75]

On the default space (built once, cached), with a fresh temporary cache directory for the
choice and the int8 codes (the space itself is read from the usual cache): the first
``AutoSearch`` measures (CPU and wall of the whole choice, and the CPU seconds of each
candidate on the 1,024 probe points), a second one reads and verifies the cached choice; then
``Int8Search`` is built without and with its cached codes; then ``--rounds`` interleaved
rounds of the mechanism's own sampling (``MultivariateLaplace._sample``: the noise and the
search, ``--points`` tokens at ``--epsilon``) with a mechanism of each search (built and warmed
before), by process CPU time and wall: medians and the pairwise ratio auto / exact. The words
of the two are compared for every point (they must be identical: the choice is certified).
``uptime`` and the CPU model/flags are printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from _machine import machine  # benchmarks/_machine.py (the script's folder is on sys.path)


def timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=8192)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epsilon", type=float, default=75.0)
    args = p.parse_args()
    import numpy as np

    from dptext import mechanism
    from dptext.resources import default_space

    print(json.dumps({"when": "start", **machine()}), flush=True)
    space = default_space(progress=False)
    tmp = tempfile.TemporaryDirectory()
    os.environ["DPTEXT_CACHE"] = tmp.name  # the choice and the int8 codes: fresh
    from dptext.mechanisms.search import AutoSearch, Int8Search

    fp = space.fingerprint()
    first = AutoSearch(space.vectors, fingerprint=fp)
    _, cpu, wall = timed(lambda: first.resolve(10**9))
    print(json.dumps({"row": "search auto: first choice (measured)", "choice": first.choice,
                      "candidate_cpu_s_on_1024_points": {k: round(v, 3) for k, v in
                                                         first.timings.items()},
                      "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}), flush=True)
    second = AutoSearch(space.vectors, fingerprint=fp)
    _, cpu, wall = timed(lambda: second.resolve(10**9))
    print(json.dumps({"row": "search auto: cached choice (read + verified)",
                      "choice": second.choice, "source": second.source,
                      "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}), flush=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, cpu_u, wall_u = timed(lambda: Int8Search(space.vectors))  # no cache
        Int8Search(space.vectors, fingerprint=fp)  # the codes cached (if auto did not)
        _, cpu_c, wall_c = timed(lambda: Int8Search(space.vectors, fingerprint=fp))
        setup = {"uncached": [round(cpu_u, 2), round(wall_u, 2)],
                 "cached": [round(cpu_c, 2), round(wall_c, 2)]}
    print(json.dumps({"row": "int8 set-up (cpu s, wall s)", **setup}), flush=True)

    mechs = {}
    for name in ("auto", "exact"):
        m = mechanism("laplace", epsilon=args.epsilon, search=name)
        m.fit()
        m._sample(np.zeros(args.points, dtype=np.int64), np.random.default_rng(0))  # warm
        mechs[name] = m
    rows = np.random.default_rng(1).integers(0, len(space), args.points)
    cpu = {n: [] for n in mechs}
    wall = {n: [] for n in mechs}
    for r in range(args.rounds):
        words = {}
        for name, m in mechs.items():
            words[name], c, w = timed(lambda m=m, r=r: m._sample(rows, np.random.default_rng(r)))
            cpu[name].append(c)
            wall[name].append(w)
        assert np.array_equal(words["auto"], words["exact"]), "auto changed a word"
    ratio_cpu = statistics.median(a / b for a, b in zip(cpu["auto"], cpu["exact"], strict=True))
    ratio_wall = statistics.median(a / b for a, b in zip(wall["auto"], wall["exact"],
                                                         strict=True))
    print(json.dumps({
        "row": f"laplace eps {args.epsilon:g}, {args.points} tokens: search auto vs exact",
        "auto_took": mechs["auto"]._searcher().choice,
        "cpu_s_auto": [round(x, 3) for x in cpu["auto"]],
        "cpu_s_exact": [round(x, 3) for x in cpu["exact"]],
        "wall_s_auto": [round(x, 3) for x in wall["auto"]],
        "wall_s_exact": [round(x, 3) for x in wall["exact"]],
        "auto_over_exact_cpu_median_pairwise": round(ratio_cpu, 3),
        "auto_over_exact_wall_median_pairwise": round(ratio_wall, 3),
        "same_words": True}), flush=True)
    print(json.dumps({"when": "end", **machine()}), flush=True)


if __name__ == "__main__":
    main()
