"""The corpus engine at scale: memory, throughput, workers, Ray, DP-MLM (docs/scale.md).

Each measurement runs ``dptext sanitize`` as a subprocess on generated short records (8 words
drawn from the 5,000 most frequent English words of wordfreq, a public list) and samples the
resident memory of its whole process tree every 0.1 s. Reported per run: wall time, records/s
(or words/min), peak RSS, the CPU seconds of the whole process tree (driver and workers, from
``getrusage``) and ``uptime`` before and after (the machine may be shared: a wall-clock ratio
measured under load is a lower bound; the CPU seconds are not depressed by load).

Two sizes per setting give the steady-state rate (the slope: what a larger job approaches) and
the fixed cost (starting processes or Ray, loading the tables) apart from the end-to-end figure.

    python benchmarks/bench_corpus.py quick      # workers + ray + dpmlm: < 3 min on 2 quiet cores
    python benchmarks/bench_corpus.py workers    # --workers 2 vs 1, custext and laplace
    python benchmarks/bench_corpus.py ray        # --engine ray vs one process, end to end
    python benchmarks/bench_corpus.py raybatch   # Ray's cost per batch, timed inside the actors
    python benchmarks/bench_corpus.py dpmlm      # DP-MLM words/min: 1 x 1 thread, 1 x 2, 2 x 1
    python benchmarks/bench_corpus.py scale      # 100k vs 1M records, txt and JSONL, custext (long)
    python benchmarks/bench_corpus.py quick --repeat 3 --out results.json

Medians over ``--repeat`` runs (default 1). Issue 14's executor figures (wall and process-tree
CPU of 1 and 2 workers and Ray, end to end and on a running cluster) in one command:
``benchmarks/bench_corpus_executors.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def load() -> float:
    return os.getloadavg()[0]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def make_records(path: Path, n: int, fmt: str, seed: int = 0) -> Path:
    import wordfreq

    vocab = wordfreq.top_n_list("en", 5000)
    rnd = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(rnd.choices(vocab, k=8))
            f.write(json.dumps({"id": i, "text": text}) + "\n" if fmt == "jsonl" else text + "\n")
    return path


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def watch(p: subprocess.Popen, tick=None) -> tuple[int, float]:
    """Poll ``p`` every 0.1 s until it exits (calling ``tick()`` each time): the peak RSS of
    its process tree in bytes and the CPU seconds of ``p`` alone (its last sample: <= 0.1 s
    short)."""
    import psutil

    proc, peak, driver = psutil.Process(p.pid), 0, 0.0
    while p.poll() is None:
        try:
            rss = proc.memory_info().rss + sum(c.memory_info().rss
                                               for c in proc.children(recursive=True))
            peak = max(peak, rss)
            c = proc.cpu_times()
            driver = c.user + c.system
        except psutil.Error:
            pass
        if tick is not None:
            tick()
        time.sleep(0.1)
    return peak, driver


def sanitize(args: list[str], cwd: Path) -> dict:
    """Run ``dptext sanitize ARGS``: wall seconds, CPU seconds of the process tree, peak RSS."""
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    before, up = load(), uptime()
    cpu0 = _cpu_children()
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize", "--no-progress",
                          *args], cwd=cwd, env=env, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    peak, driver = watch(p)
    err = p.stderr.read()
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"dptext sanitize {' '.join(args)} failed:\n{err}")
    return {"seconds": wall, "cpu_seconds": _cpu_children() - cpu0, "driver_cpu_seconds": driver,
            "peak_rss_mb": peak / 2**20,
            "load_before": before, "load_after": load(), "uptime": up}


def median_run(args: list[str], cwd: Path, repeat: int, out: str) -> dict:
    runs = []
    for _ in range(repeat):
        (cwd / out).unlink(missing_ok=True)
        runs.append(sanitize([*args, "-o", out], cwd))
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
            "driver_cpu_seconds": statistics.median(r["driver_cpu_seconds"] for r in runs),
            "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
            "loads": [(round(r["load_before"], 1), round(r["load_after"], 1)) for r in runs],
            "uptime_before": runs[0]["uptime"], "runs": len(runs)}


def _show(label: str, r: dict) -> None:
    rate = f"{r['records_per_s']:,.0f} records/s" if "records_per_s" in r else \
        f"{r['words_per_min']:,.0f} words/min"
    print(f"{label:28s} {r['seconds']:7.2f} s  {rate:>20s}  cpu {r['cpu_seconds']:6.2f} s "
          f"(driver {r['driver_cpu_seconds']:5.2f})  rss {r['peak_rss_mb']:5.0f} MB  | "
          f"{r['uptime_before']}", flush=True)


def _steady(res: dict, key_small: str, key_big: str, n_small: int, n_big: int) -> float:
    """Records/s from the slope between two sizes (the fixed cost cancels)."""
    return (n_big - n_small) / max(1e-9, res[key_big]["seconds"] - res[key_small]["seconds"])


def bench_scale(d: Path, repeat: int) -> dict:
    res = {}
    for fmt in ("txt", "jsonl"):
        for n in (100_000, 1_000_000):
            src = make_records(d / f"in-{n}.{fmt}", n, fmt)
            r = median_run(["-m", "custext", "-e", "2", "-i", src.name, "--seed", "1"], d,
                           repeat, f"out-{n}.{fmt}")
            r["records_per_s"] = n / r["seconds"]
            res[f"{fmt}-{n}"] = r
            print(fmt, n, json.dumps(r), flush=True)
        a, b = res[f"{fmt}-100000"]["peak_rss_mb"], res[f"{fmt}-1000000"]["peak_rss_mb"]
        res[f"{fmt}-rss_ratio_1M_vs_100k"] = b / a
    return res


def bench_workers(d: Path, repeat: int) -> dict:
    res: dict = {}
    for mech, sizes, eps in (("custext", (50_000, 200_000), "2"), ("laplace", (300, 1200), "10")):
        for n in sizes:
            src = make_records(d / f"w-{mech}-{n}.txt", n, "txt")
            for workers in (1, 2):
                r = median_run(["-m", mech, "-e", eps, "-i", src.name, "--seed", "1",
                                "--workers", str(workers)], d, repeat,
                               f"w-{mech}-{n}-{workers}.out")
                r["records_per_s"] = n / r["seconds"]
                res[f"{mech}-{n}-workers{workers}"] = r
                _show(f"{mech} {n:,} --workers {workers}", r)
            if (d / f"w-{mech}-{n}-1.out").read_bytes() != (d / f"w-{mech}-{n}-2.out").read_bytes():
                raise SystemExit(f"{mech}: 1 and 2 workers gave different bytes")
        small, big = sizes
        one, two = res[f"{mech}-{big}-workers1"], res[f"{mech}-{big}-workers2"]
        s1 = _steady(res, f"{mech}-{small}-workers1", f"{mech}-{big}-workers1", small, big)
        s2 = _steady(res, f"{mech}-{small}-workers2", f"{mech}-{big}-workers2", small, big)
        res[f"{mech}-speedup"] = one["seconds"] / two["seconds"]
        res[f"{mech}-steady_records_per_s"] = {"workers1": s1, "workers2": s2}
        res[f"{mech}-steady_speedup"] = s2 / s1
        res[f"{mech}-cpu_ratio"] = two["cpu_seconds"] / one["cpu_seconds"]
        # what the CPU seconds allow on 2 idle cores, the driver counted as fully serial (an
        # estimate, not a measurement: the driver overlaps the workers for most of its time)
        workers_cpu = two["cpu_seconds"] - two["driver_cpu_seconds"]
        res[f"{mech}-cpu_bound_estimate"] = one["cpu_seconds"] / (
            two["driver_cpu_seconds"] + workers_cpu / 2)
        print(f"{mech}: --workers 2 / --workers 1 = {res[f'{mech}-speedup']:.2f}x end to end "
              f"({big:,} records), {s2 / s1:.2f}x steady state ({s1:,.0f} -> {s2:,.0f} "
              f"records/s); CPU seconds x{res[f'{mech}-cpu_ratio']:.2f}; estimate on 2 idle "
              f"cores from the CPU seconds {res[f'{mech}-cpu_bound_estimate']:.2f}x",
              flush=True)
    return res


def bench_ray(d: Path, repeat: int) -> dict:
    res: dict = {}
    sizes = (50_000, 150_000)
    for n in sizes:
        src = make_records(d / f"r-{n}.txt", n, "txt")
        for engine in ("local", "ray"):
            extra = ["--engine", "ray", "--workers", "2"] if engine == "ray" else []
            r = median_run(["-m", "custext", "-e", "2", "-i", src.name, "--seed", "1", *extra],
                           d, repeat, f"r-{n}-{engine}.out")
            r["records_per_s"] = n / r["seconds"]
            res[f"{engine}-{n}"] = r
            _show(f"custext {n:,} {'ray x2' if engine == 'ray' else 'one process'}", r)
        if (d / f"r-{n}-local.out").read_bytes() != (d / f"r-{n}-ray.out").read_bytes():
            raise SystemExit("Ray and one process gave different bytes")
    small, big = sizes
    batches = (big - small) / 512
    slope_ray = (res[f"ray-{big}"]["seconds"] - res[f"ray-{small}"]["seconds"]) / batches
    slope_one = (res[f"local-{big}"]["seconds"] - res[f"local-{small}"]["seconds"]) / batches
    res["speedup_big"] = res[f"local-{big}"]["seconds"] / res[f"ray-{big}"]["seconds"]
    res["steady_speedup"] = slope_one / slope_ray
    res["fixed_cost_s"] = res[f"ray-{small}"]["seconds"] - small / 512 * slope_ray
    res["fixed_cost_one_process_s"] = res[f"local-{small}"]["seconds"] - small / 512 * slope_one
    # two actors work in parallel: a batch costs 2 * slope actor-seconds in the pipeline
    res["per_batch_overhead_ms"] = 1000 * (2 * slope_ray - slope_one)
    res["per_batch_inline_ms"] = 1000 * slope_one
    print(f"ray: {res['speedup_big']:.2f}x one process end to end ({big:,} records), "
          f"{res['steady_speedup']:.2f}x steady state; fixed cost {res['fixed_cost_s']:.1f} s "
          f"(one process {res['fixed_cost_one_process_s']:.1f} s); per 512-record batch "
          f"{res['per_batch_inline_ms']:.1f} ms inline, Ray overhead "
          f"{res['per_batch_overhead_ms']:.1f} actor-ms", flush=True)
    return res


def bench_ray_batches(d: Path, n: int = 200_000) -> dict:
    """Ray's cost per batch, from inside: the engine's executor (``RayExecutor``, 2 actors on
    a local Ray) over the batches of ``n`` records against the same batches run inline, with
    each actor's CPU seconds from its process (``/proc``): its start-up (Ray's worker and the
    imports), attaching the mechanism (and checking its fingerprint), the calls (with and
    without Ray's own threads meanwhile) and the rest (receiving tasks, sending results).
    CPU seconds are not depressed by the load of other jobs; wall seconds are."""
    sys.path.insert(0, SRC)
    os.environ["PYTHONPATH"] = SRC
    from dptext.corpus.executors.ray import RayExecutor
    from dptext.corpus.ranges import scan
    from dptext.corpus.shared import export
    from dptext.corpus.sources import expand
    from dptext.corpus.work import BatchTask, JobLayout, Worker
    from dptext.mechanisms.registry import mechanism

    src = make_records(d / f"rb-{n}.txt", n, "txt")
    m = mechanism("custext", epsilon=2.0).fit()
    sources = expand(str(src))
    layout = JobLayout(sources, ["text"], "txt", "txt", 1, False, 4 << 20)
    tasks = [BatchTask(i, 0, range=r) for i, r in enumerate(scan(src, "txt", 512))]
    w = Worker(m, layout)
    c = time.process_time()
    inline = [w.run(t).data for t in tasks]
    inline_cpu = (time.process_time() - c) / len(tasks)
    shared = export(m, d / "rb-shared")
    t = time.monotonic()
    ex = RayExecutor(shared, layout, workers=2)
    init = time.monotonic() - t
    first, got = None, []
    t, c = time.monotonic(), time.process_time()
    for r in ex.map(tasks):
        first = first or time.monotonic() - t
        got.append(r.data)
    total, driver = time.monotonic() - t, time.process_time() - c
    stats = ex.actor_stats()
    ex.close()
    import ray

    ray.shutdown()
    if got != inline:
        raise SystemExit("Ray and inline batches differ")
    nb = len(tasks)
    run_cpu = sum(s["run"] for s in stats)
    rest = sum(s["now"] - s["started"] - s["configure"] - s["run"] for s in stats)
    res = {"batches": nb, "records": n, "actors": len(stats),
           "ray_init_s": init, "first_result_s": first, "map_s": total,
           "actor_start_cpu_s": [s["started"] for s in stats],
           "actor_configure_cpu_s": [s["configure"] for s in stats],
           "calls": sum(s["calls"] for s in stats),
           "actor_cpu_ms_per_batch": 1000 * run_cpu / nb,
           "actor_thread_cpu_ms_per_batch": 1000 * sum(s["run_thread"] for s in stats) / nb,
           "actor_rest_cpu_ms_per_batch": 1000 * rest / nb,
           "inline_cpu_ms_per_batch": 1000 * inline_cpu,
           "overhead_cpu_ms_per_batch": 1000 * ((run_cpu + rest) / nb - inline_cpu),
           "driver_cpu_ms_per_batch": 1000 * driver / nb,
           "uptime": uptime()}
    print(f"ray batches: {nb} of 512 records in {res['calls']} calls on {len(stats)} actors: "
          f"CPU in the calls {res['actor_cpu_ms_per_batch']:.2f} ms/batch (the calling thread "
          f"{res['actor_thread_cpu_ms_per_batch']:.2f}) + outside them "
          f"{res['actor_rest_cpu_ms_per_batch']:.2f}, vs inline "
          f"{res['inline_cpu_ms_per_batch']:.2f} ms/batch: overhead "
          f"{res['overhead_cpu_ms_per_batch']:+.2f} ms/batch in the actors, "
          f"{res['driver_cpu_ms_per_batch']:.2f} ms/batch in the driver; per actor start-up "
          f"{', '.join(f'{x:.2f}' for x in res['actor_start_cpu_s'])} s CPU, attach "
          f"{', '.join(f'{x:.2f}' for x in res['actor_configure_cpu_s'])} s; ray.init "
          f"{init:.1f} s, first result after {first:.1f} s, all {total:.1f} s | "
          f"{res['uptime']}", flush=True)
    return res


def bench_dpmlm(d: Path, repeat: int, words: int) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_lm import sample_texts

    from dptext.text import split_words

    texts = sample_texts(words)
    n_words = sum(len(split_words(t)[1::2]) for t in texts)
    (d / "headlines.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    res = {"words": n_words}
    for workers, threads in ((1, 1), (1, 2), (2, 1)):
        r = median_run(["-m", "dpmlm", "-e", "25", "-p", "keep_stopwords=false", "-i",
                        "headlines.txt", "--seed", "1", "--workers", str(workers),
                        "--torch-threads", str(threads)], d, repeat,
                       f"mlm-{workers}-{threads}.out")
        r["words_per_min"] = n_words / r["seconds"] * 60
        res[f"workers{workers}-threads{threads}"] = r
        _show(f"dpmlm --workers {workers} --torch-threads {threads}", r)
    best = max((k for k in res if k.startswith("workers")),
               key=lambda k: res[k]["words_per_min"])
    res["fastest"] = best
    print(f"dpmlm: fastest {best} ({res[best]['words_per_min']:,.0f} words/min)", flush=True)
    return res


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("quick", "scale", "workers", "ray", "raybatch", "dpmlm",
                                    "all"))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--words", type=int, default=None,
                   help="DP-MLM: words of headlines (default 200 for quick, else 600)")
    p.add_argument("--ray-records", type=int, default=200_000,
                   help="raybatch: records (batches of 512)")
    p.add_argument("--out", help="write the results as JSON")
    a = p.parse_args()
    results = {"load_start": load(), "uptime_start": uptime()}
    print("start:", results["uptime_start"], flush=True)
    t = time.monotonic()
    parts = {"quick": ("workers", "ray", "raybatch", "dpmlm"),
             "all": ("scale", "workers", "ray", "raybatch", "dpmlm")}
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
        d = Path(tmp)
        for what in parts.get(a.what, (a.what,)):
            if what == "dpmlm":
                words = a.words or (200 if a.what == "quick" else 600)
                results[what] = bench_dpmlm(d, a.repeat, words)
            elif what == "raybatch":
                results[what] = bench_ray_batches(d, a.ray_records)
            else:
                results[what] = {"scale": bench_scale, "workers": bench_workers,
                                 "ray": bench_ray}[what](d, a.repeat)
    results["load_end"] = load()
    results["uptime_end"] = uptime()
    results["seconds"] = time.monotonic() - t
    print("end:", results["uptime_end"], f"({results['seconds']:.0f} s)", flush=True)
    text = json.dumps(results, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
