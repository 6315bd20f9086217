"""Multivariate Laplace: the exact nearest-word search and the whole mechanism against the BLAS
bound, measured in the same run.

    python benchmarks/bench_laplace.py [--tokens 4096] [--repeats 3] [--epsilons 10,50,200]
        [--indexed] [--certified] [--torch] [--previous REV] [--serial-noise]

Data: Rotten Tomatoes records (``dptext.datasets``), taken in order until they hold
``--tokens`` privatized tokens; the search's points are the default-space vectors of those
tokens plus Laplace noise at each epsilon. Every figure is the median of ``--repeats`` runs,
interleaved (bound, dptext, bound, dptext, ...) so that each sees the same load:

- bound: a pure float32 GEMM points x words^T (dim 384, numpy's BLAS, no reduction, output into
  a preallocated buffer) - the time no exact search over all words can beat with this BLAS -
  as tokens/s (2 x 49,916 x 384 flops per token): the best of several layouts, each timed in
  every repeat: the BLAS's own threads on (block x tile) = the search's shape, 512 x all words
  and 256 x 8192; and ``T`` worker threads with a one-thread BLAS each (the search's layout) on
  the search's shape and on 512 x all words;
- exact: ``ExactSearch`` (one GEMM per tile + fused argmax + float64 re-check of near ties),
  its ratio to the bound and the share of points re-checked;
- mechanism: ``MultivariateLaplace.privatize_batch`` on the records (tokenizing, noise in
  float64, search, output text and reports) and ``sample_rows`` (what ``dptext evaluate``'s
  cells call: noise + search), as privatized tokens/s and ratio to the bound (after one
  warm-up call: the search's word matrix and the vocabulary arrays are built once);
- ``--indexed``: faiss ivf / hnsw at several settings (post-processing of the noisy point: the
  guarantee is unchanged) and the certified int8 search (``search="int8"``: the exact words by
  construction), tokens/s and top-1 agreement with the exact search; ``--int8``: the int8
  search alone (faiss's OpenMP threads, which spin after each search, can slow what follows);
- ``--certified``: the share of the words two certified pre-filters (k-means clusters with
  their radii; the top 64 principal directions with Cauchy-Schwarz on the rest) cannot rule
  out, even given the exact best score - why no exact indexed search is faster here;
- ``--previous REV``: the exact search of an earlier revision (same words asserted);
- ``--serial-noise``: also ``privatize_batch`` with the ``_sample`` of before issue 19 (restated
  in ``serial_sample``: all the noise as one array in the calling thread, then the search of
  all the points; with ``--previous REV``, that revision's search), back to back with the
  current one in alternating order - an A/B (the median of the per-pair wall-clock ratios;
  on a loaded machine many ``--repeats`` are needed to resolve a few percent);
- ``--torch``: torch matmul + argmax over all words, 1,024 points a block (the old baseline).
- ``--kernels``: the raw rate of the lower-precision products this CPU offers, points x all
  words, 1,024 points a block, the product alone (no argmax, no re-ranking): torch float32,
  bfloat16 (words converted once), int8 x int8 -> int32 (``torch._int_mm``, points quantized
  per row) and oneDNN's static quantized linear (uint8 x int8 -> uint8: the fastest int8 path,
  though its 8-bit output cannot rank the words); and, for int8, the share of words a certified
  int8 pre-filter would leave to re-rank exactly (score error bounded by Cauchy-Schwarz on the
  exact quantization errors of point and word) - the ceiling of an int8 indexed search.

Each line gives the wall clock and the process CPU time (the CPU-time ratio is the one to read
on a loaded machine) and ``uptime``'s load; for ``privatize_batch`` also the CPU time of the
calling thread alone - the serial part, which on a quiet machine runs while a core idles (a
figure the load hardly changes). ``T`` = the BLAS's thread count (``OMP_NUM_THREADS``).

One command, < 3 min on a quiet 2-core machine:

    OMP_NUM_THREADS=2 PYTHONPATH=src .venv/bin/python benchmarks/bench_laplace.py
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def load() -> str:
    return "load " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


class Clock:
    """Wall-clock and process CPU seconds of a block, and the CPU seconds of the calling
    thread alone (``main``: the serial part, while the search threads wait or work)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.main = time.thread_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
        self.main = time.thread_time() - self.main


def gemm_blocks(points32: np.ndarray, words: np.ndarray, block: int, tile: int) -> None:
    buf = np.empty(len(points32) * min(tile, len(words)), np.float32)
    for s in range(0, len(points32), block):
        p = points32[s: s + block]
        for t in range(0, len(words), tile):
            w = words[t: t + tile]
            np.matmul(p, w.T, out=buf[: len(p) * len(w)].reshape(len(p), len(w)))


def split(n: int, block: int, workers: int) -> list[tuple[int, int]]:
    """The blocks the search gives its threads (``nearest._blocks``; before it existed: equal
    blocks of min(block, n / workers))."""
    try:
        from dptext.mechanisms.search.base import blocks as _blocks
    except ImportError:
        size = min(block, -(-n // workers))
        return [(s, min(n, s + size)) for s in range(0, n, size)]
    return _blocks(n, block, workers)


def gemm(points32: np.ndarray, words: np.ndarray, block: int, tile: int, workers: int) -> Clock:
    """The pure GEMM: ``workers`` = 0 -> one caller, the BLAS's own threads; else that many
    threads with a one-thread BLAS, blocks split as the search splits them."""
    n = len(points32)
    with Clock() as c:
        if workers == 0:
            gemm_blocks(points32, words, block, tile)
        else:
            from threadpoolctl import threadpool_limits

            spans = split(n, block, workers)
            with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
                list(pool.map(lambda se: gemm_blocks(points32[se[0]: se[1]], words, block,
                                                     tile), spans))
    return c


def torch_baseline(points: np.ndarray, words: np.ndarray) -> Clock:
    import torch

    w = torch.from_numpy(words)
    half = 0.5 * (w * w).sum(1)
    pts = torch.from_numpy(points.astype(np.float32))
    with Clock() as c:
        for s in range(0, len(pts), 1024):
            sc = pts[s: s + 1024] @ w.T
            sc -= half
            sc.argmax(1)
    return c


def benchmark_records(n_tokens: int, m) -> tuple[list[str], np.ndarray]:
    """Rotten Tomatoes records until they hold ``n_tokens`` privatized tokens, and the
    vocabulary rows of those tokens (the search's points), as the mechanism splits them."""
    from dptext.datasets import load_dataset
    from dptext.mechanisms.word import _SplitBatch

    texts = load_dataset("rotten_tomatoes", split="all").texts[: n_tokens // 4 + 1]
    batch = _SplitBatch(texts, {}, m._word_code)
    searched = np.cumsum(batch.per_text(batch.codes >= 0))
    keep = int(np.searchsorted(searched, n_tokens)) + 1
    texts = texts[:keep]
    codes = _SplitBatch(texts, {}, m._word_code).codes
    return texts, codes[codes >= 0]


def certified_survivors(points: np.ndarray, words: np.ndarray, best: np.ndarray,
                        centroids: np.ndarray, assign: np.ndarray, pcs: int = 64
                        ) -> tuple[float, float]:
    """Share of the words that two certified pre-filters could NOT rule out, given even the
    exact best score (an oracle lower bound, so the shares are the least any such filter
    scans): (a) clusters (k-means, faiss): score(y) <= p.mu_c + |p| rho_c - min|y|^2/2 over the
    cluster, rho_c its radius; (b) the top ``pcs`` principal directions: score(y) <=
    p_k.y_k + |p_r| |y_r| - |y|^2/2 (Cauchy-Schwarz on the rest)."""
    w64 = words.astype(np.float64)
    half = 0.5 * np.einsum("ij,ij->i", w64, w64)
    y = w64[best]
    lower = np.einsum("ij,ij->i", points, y) - half[best]  # the exact best score
    k = len(centroids)
    radius = np.zeros(k)
    np.maximum.at(radius, assign, np.linalg.norm(w64 - centroids[assign], axis=1))
    half_min = np.full(k, np.inf)
    np.minimum.at(half_min, assign, half)
    size = np.bincount(assign, minlength=k)
    upper = points @ centroids.T + np.linalg.norm(points, axis=1)[:, None] * radius - half_min
    clusters = float(((upper >= lower[:, None]) * size).sum(1).mean() / len(words))
    mean = w64.mean(0)
    _, _, vt = np.linalg.svd(w64 - mean, full_matrices=False)
    basis = vt[:pcs]  # words and points in the basis: y = y_k + y_r exactly (float64)
    yk = w64 @ basis.T
    yr = np.sqrt(np.maximum(np.einsum("ij,ij->i", w64, w64) - (yk * yk).sum(1), 0))
    pk = points @ basis.T
    pr = np.sqrt(np.maximum(np.einsum("ij,ij->i", points, points) - (pk * pk).sum(1), 0))
    bound = pk @ yk.T + pr[:, None] * yr[None, :] - half[None, :]
    projected = float((bound >= lower[:, None] - 1e-9).mean())
    return clusters, projected


def previous_search(rev: str, words: np.ndarray):
    """``ExactSearch`` at git revision ``rev`` (``mechanisms/search/exact.py``, before issue 29
    ``mechanisms/nearest.py``)."""
    import subprocess
    import types

    for path in ("src/dptext/mechanisms/search/exact.py", "src/dptext/mechanisms/nearest.py"):
        done = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
        if done.returncode == 0:
            break
    code = done.stdout
    module = types.ModuleType(f"nearest_{rev}")
    exec(compile(code, module.__name__, "exec"), module.__dict__)  # noqa: S102 - our own file
    return module.ExactSearch(words)


def serial_sample(m, search):
    """``m._sample`` as it was before issue 19: the noise of all the points drawn as one array
    in the calling thread (one Gaussian array, then the radii), then ``search`` of them."""

    def sample(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        kappa = rng.standard_normal((len(rows), m.space.dim))
        radius = rng.gamma(shape=m.space.dim, scale=1.0 / m.epsilon, size=len(rows))
        kappa *= (radius / np.sqrt(np.einsum("ij,ij->i", kappa, kappa)))[:, None]
        kappa += m.space.vectors[rows]
        return search(kappa)

    return sample


def kernel_rates(points32: np.ndarray, words: np.ndarray, repeats: int) -> dict[str, float]:
    """Tokens/s of points x words^T through each lower-precision kernel (``--kernels``):
    median of ``repeats`` wall-clock runs over all the points, 1,024 a block."""
    import warnings

    import torch

    warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
    blocks = [torch.from_numpy(points32[s: s + 1024]) for s in range(0, len(points32), 1024)]
    w32 = torch.from_numpy(words)
    w16 = w32.bfloat16()
    wscale = w32.abs().amax(1) / 127
    w8 = torch.round(w32 / wscale[:, None]).to(torch.int8).t()  # words x dim, read as dim x words
    q8 = []
    for b in blocks:
        s = b.abs().amax(1, keepdim=True) / 127
        q8.append(torch.round(b / s).to(torch.int8))
    runs: dict[str, object] = {
        "float32 (torch)": lambda: [b @ w32.T for b in blocks],
        "bfloat16": lambda: [b.bfloat16() @ w16.T for b in blocks],
        "int8 -> int32 (torch._int_mm)": lambda: [torch._int_mm(q, w8) for q in q8],
    }
    try:
        old = torch.backends.quantized.engine
        torch.backends.quantized.engine = "onednn"
        qw = torch.quantize_per_tensor(w32, float(w32.abs().max()) / 127, 0, torch.qint8)
        packed = torch.ops.quantized.linear_prepack(qw, None)
        qx = [torch.quantize_per_tensor(b, float(b.abs().max()) / 127, 128, torch.quint8)
              for b in blocks]
        runs["uint8 x int8 -> uint8 (oneDNN)"] = lambda: [
            torch.ops.quantized.linear(q, packed, 1.0, 0) for q in qx]
    except (RuntimeError, AttributeError):
        old = None
    rates = {}
    for name, f in runs.items():
        f()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        rates[name] = len(points32) / float(np.median(times))
    if old is not None:
        torch.backends.quantized.engine = old
    return rates


def int8_survivors(points: np.ndarray, words: np.ndarray, best: np.ndarray) -> float:
    """Share of the words a certified int8 pre-filter must re-rank exactly: score(y) = p.y -
    |y|^2/2 approximated with per-row int8 point and word, the error of each product bounded
    by |e_p| |y| + |p_q| |e_y| (Cauchy-Schwarz on the exact quantization errors); a word
    survives when its upper bound reaches the best word's lower bound."""
    w64 = words.astype(np.float64)
    ws = np.abs(w64).max(1) / 127
    wq = np.round(w64 / ws[:, None]) * ws[:, None]
    ew = np.linalg.norm(w64 - wq, axis=1)
    half = 0.5 * np.einsum("ij,ij->i", w64, w64)
    ps = np.abs(points).max(1) / 127
    pq = np.round(points / ps[:, None]) * ps[:, None]
    ep = np.linalg.norm(points - pq, axis=1)
    approx = pq @ wq.T - half
    err = ep[:, None] * np.linalg.norm(w64, axis=1)[None, :] \
        + np.linalg.norm(pq, axis=1)[:, None] * ew[None, :]
    rows = np.arange(len(points))
    lower = approx[rows, best] - err[rows, best]
    return float((approx + err >= lower[:, None]).mean())


def median(clocks: list[Clock], clock: str) -> float:
    return float(np.median([getattr(c, clock) for c in clocks]))


def main() -> None:
    import torch

    import dptext
    from dptext.mechanisms.search import ExactSearch, make_search
    from dptext.mechanisms.search.base import blas_threads as _blas_threads
    from dptext.resources import default_space

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilons", default="10,50,200")
    ap.add_argument("--indexed", action="store_true")
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--previous", metavar="REV",
                    help="also time nearest.py's ExactSearch as of git revision REV")
    ap.add_argument("--serial-noise", action="store_true",
                    help="A/B: privatize_batch with the noise drawn serially before the search")
    ap.add_argument("--certified", action="store_true",
                    help="share of words two certified pre-filters cannot rule out")
    ap.add_argument("--int8", action="store_true",
                    help="time the certified int8 search (also part of --indexed) without faiss")
    ap.add_argument("--kernels", action="store_true",
                    help="raw rates of the float32 / bfloat16 / int8 products, int8 re-rank share")
    args = ap.parse_args()
    torch.set_num_threads(max(1, _blas_threads()))
    space = default_space()
    words = np.ascontiguousarray(space.vectors, dtype=np.float32)
    n_flop = 2.0 * words.size
    search = ExactSearch(words)
    threads = _blas_threads()
    print(f"device: cpu ({os.cpu_count()} cores, BLAS threads T={threads}, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}); {len(words)} words x "
          f"{words.shape[1]}: {n_flop / 1e6:.0f} MFLOP per token; search: {search.block} x "
          f"{search.tile} blocks, {search._workers()} workers; {load()}")
    probe = dptext.mechanism("laplace", epsilon=10.0, space=space).fit()
    texts, rows = benchmark_records(args.tokens, probe)
    n_priv = len(rows)  # tokens searched (an out-of-vocabulary token is replaced without one)
    print(f"data: {len(texts)} Rotten Tomatoes records, {n_priv} tokens to search "
          f"(= search points: {len(rows)})")
    layouts = {f"BLAS x{threads} {search.block}x{search.tile}": (search.block, search.tile, 0),
               f"BLAS x{threads} 512xall": (512, len(words), 0),
               f"BLAS x{threads} 256x8192": (256, 8192, 0)}
    if threads > 1:
        layouts[f"{threads} workers {search.block}x{search.tile}"] = (search.block, search.tile,
                                                                     threads)
        layouts[f"{threads} workers 512xall"] = (512, len(words), threads)
    indexed = {}
    if args.indexed:  # one index per kind, searched at several settings
        for kind, setting, values in (("ivf", "nprobe", (16, 64, 256)),
                                      ("hnsw", "efSearch", (64, 256))):
            t0 = time.perf_counter()
            f = make_search(words, kind)
            print(f"{kind}: index built in {time.perf_counter() - t0:.1f}s")
            for v in values:
                indexed[f"{kind} {setting}={v}"] = (f, setting, v)
    if args.indexed or args.int8:
        t0 = time.perf_counter()
        indexed["int8 (certified)"] = (make_search(words, "int8"), None, None)
        print(f"int8: words quantized, tiles prepacked and the kernel probed in "
              f"{time.perf_counter() - t0:.1f}s")
    previous = previous_search(args.previous, words) if args.previous else None
    kmeans = None
    if args.certified:
        import faiss

        kmeans = faiss.Kmeans(words.shape[1], int(4 * np.sqrt(len(words))), niter=20, seed=0)
        kmeans.train(words)
        assign = kmeans.index.search(words, 1)[1][:, 0]
        centroids = kmeans.centroids.astype(np.float64)
    rng = np.random.default_rng(0)
    for eps in (float(e) for e in args.epsilons.split(",")):
        m = dptext.mechanism("laplace", epsilon=eps, space=space).fit()
        m.privatize_batch(texts[:2], rng=0)  # one-time set-up (search, vocabulary) not timed
        serial = None
        if args.serial_noise:
            serial = dptext.mechanism("laplace", epsilon=eps, space=space).fit()
            serial._sample = serial_sample(serial, previous or ExactSearch(words))
            serial.privatize_batch(texts[:2], rng=0)
        points = words[rows].astype(np.float64) + m.noise(len(rows), rng)
        points32 = points.astype(np.float32)
        bound: dict[str, list[Clock]] = {k: [] for k in layouts}
        exact, checked, mech, sampled, base, old, ser = [], [], [], [], [], [], []
        fast: dict[str, list] = {k: [] for k in indexed}
        load_before = load()
        for r in range(args.repeats):  # interleaved: each figure sees the same load
            for name, (b, t, w) in layouts.items():
                bound[name].append(gemm(points32, words, b, t, w))
            before = search.rechecked
            with Clock() as c:
                ref = search(points)
            exact.append(c)
            checked.append(search.rechecked - before)
            # the A/B pair back to back, in alternating order (ABBA): the same load on average
            pair = [(m, mech)] if serial is None else [(m, mech), (serial, ser)][:: 1 - 2 * (r % 2)]
            for mechanism, clocks in pair:
                with Clock() as c:
                    mechanism.privatize_batch(texts, rng=r)
                clocks.append(c)
            with Clock() as c:
                m.sample_rows(rows, rng=r)
            sampled.append(c)
            if args.torch:
                base.append(torch_baseline(points, words))
            if previous is not None:
                with Clock() as c:
                    same = previous(points)
                old.append(c)
                assert np.array_equal(same, ref), "the previous search returned other words"
            for name, (f, setting, v) in indexed.items():
                if setting is not None:
                    setattr(f.index.hnsw if setting == "efSearch" else f.index, setting, v)
                with Clock() as c:
                    got = f(points)
                fast[name].append((c, float((got == ref).mean())))
        n = len(points)
        print(f"eps {eps:g} ({load_before} -> {load()}):")
        for clock in ("cpu", "wall"):
            rates = {k: n / median(v, clock) for k, v in bound.items()}
            top = max(rates, key=rates.get)
            b = rates[top]
            e, mt, st = n / median(exact, clock), n_priv / median(mech, clock), \
                n / median(sampled, clock)
            print(f"  [{clock:4s}] bound {b:6.0f} tokens/s ({b * n_flop / 1e9:.1f} GFLOP/s, "
                  f"{top}; " + ", ".join(f"{k} {v:.0f}" for k, v in rates.items()) + ")")
            print(f"  [{clock:4s}] exact search {e:6.0f} tokens/s = {e / b:.3f} of the bound "
                  f"({np.median(checked) / n:.2%} re-checked) | privatize_batch {mt:6.0f} = "
                  f"{mt / b:.3f} | sample_rows {st:6.0f} = {st / b:.3f}")
            if base:
                t = n / median(base, clock)
                print(f"  [{clock:4s}] torch matmul+argmax {t:6.0f} tokens/s (exact / torch "
                      f"{e / t:.2f}x)")
            if old:
                t = n / median(old, clock)
                print(f"  [{clock:4s}] previous search ({args.previous}) {t:6.0f} tokens/s "
                      f"= {t / b:.3f} of the bound (now {e / t:.2f}x; same words)")
            for name, runs in fast.items():
                s = n / median([r[0] for r in runs], clock)
                print(f"  [{clock:4s}] {name}: {s:6.0f} tokens/s ({s / e:.1f}x exact), top-1 "
                      f"agreement with exact {runs[0][1]:.2%}")
        main_ms = 1e3 * median(mech, "main")
        print(f"  privatize_batch's calling thread alone (serial: tokenizing, output, reports; "
              f"and noise where it is not drawn in the search threads): {main_ms:.1f} ms CPU "
              f"= {main_ms / (1e3 * median(mech, 'cpu')):.2%} of its process CPU time, "
              f"{main_ms / (1e3 * median(mech, 'wall')):.2%} of its wall clock")
        # quiet-machine estimate from CPU times: the bound's T threads are busy throughout
        # (wall = CPU / T); privatize_batch's serial part runs while T - 1 cores idle
        # (wall = main + (CPU - main) / T); load-robust, but it ignores imbalance between
        # the threads - the wall-clock figure of a quiet run is the one to quote
        cpu_bound, main_s = min(median(v, "cpu") for v in bound.values()), median(mech, "main")
        est = cpu_bound / (threads * main_s + median(mech, "cpu") - main_s)
        print(f"  [est ] privatize_batch on a quiet machine (from CPU times, T={threads}): "
              f"{est:.3f} of the bound")
        if ser:
            pairs = [a.wall / b.wall for a, b in zip(ser, mech, strict=True)]
            print(f"  A/B privatize_batch, noise drawn serially (before issue 19"
                  f"{', search ' + args.previous if args.previous else ''}) vs in the search "
                  f"threads (now): wall {n_priv / median(ser, 'wall'):.0f} vs "
                  f"{n_priv / median(mech, 'wall'):.0f} tokens/s, CPU "
                  f"{n_priv / median(ser, 'cpu'):.0f} vs {n_priv / median(mech, 'cpu'):.0f}; "
                  f"now faster by {np.median(pairs):.3f}x (median of {len(pairs)} pairs "
                  f"{', '.join(f'{x:.3f}' for x in pairs)}); calling thread "
                  f"{1e3 * median(ser, 'main'):.1f} vs {1e3 * median(mech, 'main'):.1f} ms CPU")
        if kmeans is not None:
            sub = slice(0, min(512, n))
            clusters, projected = certified_survivors(points[sub], words, ref[sub], centroids,
                                                      assign)
            print(f"  certified pre-filters (oracle lower bound, {sub.stop} points): "
                  f"{len(centroids)} k-means clusters leave {clusters:.1%} of the words, "
                  f"64 principal directions {projected:.1%}")
        if args.kernels:
            rates = kernel_rates(points32, words, args.repeats)
            sub = slice(0, min(512, n))
            share = int8_survivors(points[sub], words, ref[sub])
            print(f"  kernels, the product alone (points x all words, wall, {load()}): "
                  + ", ".join(f"{k} {v:.0f} tokens/s" for k, v in rates.items())
                  + f"; a certified int8 pre-filter leaves {share:.3%} of the words to "
                  f"re-rank ({share * len(words):.0f} per point, {sub.stop} points)")
    print(f"done: {load()}")


if __name__ == "__main__":
    main()
