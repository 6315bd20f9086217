"""Cost of charging the budget ledger: reserve + commit per batch of records, against the cost
of privatizing the same records.

    python benchmarks/bench_ledger.py [--records 100000] [--batch 512] [--units 10000]
                                      [--mechanism custext|none] [--ledger URL]

Short records (8-20 words drawn from public English frequencies, one author each out of
``--units``) are privatized in batches with ``--mechanism`` on the default space; each batch's
real privacy events (``report.privacy_events()``) are then charged to a fresh ledger (a temp
SQLite file unless ``--ledger``) with a per-unit budget: one ``reserve`` (one transaction,
fsynced) and one ``commit`` per batch, the protocol of ``dptext sanitize --ledger``. The two are
timed batch by batch, interleaved, so that a shared machine's load hits both alike.
``ratio`` = (privatize + ledger) / privatize estimates ``sanitize --user-field --ledger`` over
``sanitize``; ``ratio_user_field`` = (privatize + events + ledger) / (privatize + events)
estimates ``sanitize --user-field --ledger`` over ``sanitize --user-field``, which computes the
events for its per-unit report either way. The real run also parses and writes files, which
makes the true ratios smaller.

``--sanitize`` measures that instead: the same records as a JSONL file, ``dptext sanitize
--user-field author`` run as a process without and with ``--ledger`` (a fresh SQLite file,
a budget), in the order off, on, on, off (``--rounds`` times) after an untimed warm-up (so that
warm caches and a drifting load favour neither); the same mechanism, batch size and (one)
worker both ways. ``sanitize_ratio`` = (sum of the wall times with the ledger) / (sum
without), ``sanitize_cpu_ratio`` the same of their CPU times (user + system: less distorted by
other processes on a shared machine, but it leaves out waiting for fsync and counts the
ledger's writer thread even where it overlaps privatizing), ``*_median_ratio`` the ratios of
the medians. The issue's target (13): ``sanitize_ratio`` <= 1.3 at 100,000 records. One
command, about 2 minutes on a quiet 2-core machine:

    OMP_NUM_THREADS=1 python benchmarks/bench_ledger.py --records 100000 --sanitize --rounds 2

``--baseline-src DIR`` (before/after in one run): a third kind of run, ``base``, the same
command with the ledger but ``DIR`` (another checkout's ``src``) first on ``PYTHONPATH``; each
round is then off, on, base, base, on, off, and the output adds the base runs and their ratios
to the same off runs (``base_*``; medians of the pairwise ratios too: ``*_pair_median``):

    OMP_NUM_THREADS=1 python benchmarks/bench_ledger.py --records 100000 --sanitize \
        --rounds 3 --baseline-src /path/to/old/src [--busy-disk]

``--busy-disk`` (issue 36): the same with a competing writer beside every run - another process
writing 4 MiB and fsyncing it, over and over, to a file in the same directory (the busy disk
a shared machine or a database server gives the ledger's fsyncs). ``--disk-writer DIR`` runs
that writer alone (until killed or ``--seconds``), ``--make-input PATH`` writes the records'
JSONL, so that other tools can time the two commands themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# benchmarks/_machine.py (the script's folder is on sys.path)
from _machine import machine, run_child


def make_records(n: int, units: int, seed: int = 0) -> list[tuple[str, str]]:
    import numpy as np
    import wordfreq

    words = wordfreq.top_n_list("en", 30_000)
    freq = np.array([wordfreq.word_frequency(w, "en") for w in words])
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 21, size=n)
    draws = rng.choice(len(words), size=int(lengths.sum()), p=freq / freq.sum())
    out, at = [], 0
    for k in lengths:
        text = " ".join(words[j] for j in draws[at:at + k])
        at += k
        out.append((f"author-{rng.integers(units)}", text[:1].upper() + text[1:] + "."))
    return out


def _time_sql(ledger) -> dict[str, float]:
    """Wrap the ledger's backend so the time spent inside SQL statements and inside COMMIT
    (where SQLite fsyncs) is summed apart from the Python around them."""
    b, out = ledger._backend, {"sql": 0.0, "commit": 0.0}

    def timed(fn, key):
        def call(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                out[key] += time.perf_counter() - t
        return call

    b.execute, b.executemany = timed(b.execute, "sql"), timed(b.executemany, "sql")
    b.commit = timed(b.commit, "commit")
    return out


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def disk_writer(directory: str, seconds: float | None = None) -> None:
    """Write 4 MiB and fsync it, over and over, to one file in ``directory`` (rewritten from
    the start every 256 MiB): a competing process keeping the disk's write queue busy (on the
    machine of issue 36 it made a 4 KiB fsync take a median 12 ms instead of 2)."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # terminate(): remove the file
    block = os.urandom(4 << 20)
    path = Path(directory) / f"busy-disk-{os.getpid()}.bin"
    stop = None if seconds is None else time.monotonic() + seconds
    try:
        with open(path, "wb") as f:
            while stop is None or time.monotonic() < stop:
                if f.tell() >= 256 << 20:
                    f.seek(0)
                f.write(block)
                f.flush()
                os.fsync(f.fileno())
    finally:
        path.unlink(missing_ok=True)


def start_disk_writer(directory: str):
    import subprocess

    return subprocess.Popen([sys.executable, __file__, "--disk-writer", directory],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_input(path: Path, records: int, units: int) -> None:
    with open(path, "w") as f:
        for unit, text in make_records(records, units):
            f.write(json.dumps({"author": unit, "text": text}) + "\n")


def sanitize_runs(args) -> int:
    """Whole `dptext sanitize --user-field` runs, off/on/on/off the ledger, each a process of
    its own (after an untimed warm-up run): wall time, and CPU time (user + system), which a
    shared machine's load distorts less (but which leaves out waiting for fsync)."""

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    tmp = tempfile.TemporaryDirectory()
    d = Path(tmp.name)
    src = d / "in.jsonl"
    write_input(src, args.records, args.units)
    warm = d / "warm.jsonl"
    warm.write_text("".join(src.read_text().splitlines(keepends=True)[:256]))
    walls: dict[str, list[float]] = {"off": [], "on": [], "base": []}
    cpus: dict[str, list[float]] = {"off": [], "on": [], "base": []}
    loads = [_load()]
    where = machine()
    writer = start_disk_writer(str(d)) if args.busy_disk else None
    try:
        _sanitize_rounds(args, env, d, src, warm, walls, cpus, loads)
    finally:
        if writer is not None:
            writer.terminate()
            writer.wait()
    out = {
        "records": args.records, "units": args.units, "batch": args.batch,
        "mechanism": args.mechanism, "order": ",".join([",".join(_order(args))] * args.rounds),
        "busy_disk": bool(args.busy_disk), **where,
        "wall_s_without_ledger": [round(x, 2) for x in walls["off"]],
        "wall_s_with_ledger": [round(x, 2) for x in walls["on"]],
        "cpu_s_without_ledger": [round(x, 2) for x in cpus["off"]],
        "cpu_s_with_ledger": [round(x, 2) for x in cpus["on"]],
        "sanitize_ratio": round(sum(walls["on"]) / sum(walls["off"]), 3),
        "sanitize_cpu_ratio": round(sum(cpus["on"]) / sum(cpus["off"]), 3),
        "wall_median_ratio": round(statistics.median(walls["on"])
                                   / statistics.median(walls["off"]), 3),
        "cpu_median_ratio": round(statistics.median(cpus["on"])
                                  / statistics.median(cpus["off"]), 3),
        "loadavg_before_and_after_each_run": loads, "uptime_after": machine()["uptime"]}
    if args.baseline_src:
        out.update(_with_baseline(args, walls, cpus))
    print(json.dumps(out))
    return 0


def _order(args) -> tuple[str, ...]:
    return ("off", "on", "base", "base", "on", "off") if args.baseline_src else \
        ("off", "on", "on", "off")


def _with_baseline(args, walls, cpus) -> dict:
    """The base runs (``--baseline-src``) beside the others: their times, their ratios to the
    same off runs, and per round the medians of the pairwise ratios (each on or base run over
    the mean of its round's two off runs)."""
    med = statistics.median
    out: dict = {"baseline_src": args.baseline_src,
                 "wall_s_with_ledger_base": [round(x, 2) for x in walls["base"]],
                 "cpu_s_with_ledger_base": [round(x, 2) for x in cpus["base"]]}
    for what, times in (("wall", walls), ("cpu", cpus)):
        offs = [(times["off"][2 * r] + times["off"][2 * r + 1]) / 2 for r in range(args.rounds)]
        for kind in ("on", "base"):
            pairs = [times[kind][2 * r + k] / offs[r] for r in range(args.rounds)
                     for k in (0, 1)]
            out[f"{kind}_{what}_ratio_pair_median"] = round(med(pairs), 3)
            out[f"{kind}_{what}_median_ratio"] = round(med(times[kind]) / med(times["off"]), 3)
    return out


def _sanitize_rounds(args, env, d, src, warm, walls, cpus, loads) -> None:

    for k, mode in enumerate(("warm", *_order(args) * args.rounds)):
        cmd = [sys.executable, "-m", "dptext.cli", "sanitize", "-m", args.mechanism, "-e",
               str(args.epsilon), "--seed", "1", "--no-progress", "--input",
               str(warm if mode == "warm" else src), "--field", "text", "--user-field",
               "author", "-o", str(d / f"out{k}.jsonl"), "--batch-size", str(args.batch)]
        run_env = env
        if mode in ("on", "base"):
            cmd += ["--ledger", args.ledger or str(d / f"ledger{k}.sqlite"), "--owner",
                    "bench", "--dataset", f"notes{k}", "--budget", "1000000"]
        if mode == "base":
            run_env = {**env, "PYTHONPATH": os.pathsep.join(
                p for p in (args.baseline_src, env.get("PYTHONPATH")) if p)}
        cpu, wall = run_child(cmd, run_env, tail=2000)
        if mode != "warm":  # (the first run may fill caches on disk: not timed)
            walls[mode].append(wall)
            cpus[mode].append(cpu)
            loads.append(_load())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--mechanism", default="custext", help="custext, santext, ... or none")
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--ledger", help="ledger URL (default: a fresh temp SQLite file)")
    ap.add_argument("--sanitize", action="store_true",
                    help="time whole `dptext sanitize` runs with and without --ledger")
    ap.add_argument("--rounds", type=int, default=1,
                    help="--sanitize: repeat the off,on,on,off runs this many times")
    ap.add_argument("--baseline-src", metavar="DIR",
                    help="--sanitize: also time runs with DIR (another checkout's src) first on "
                    "PYTHONPATH: before and after in one run")
    ap.add_argument("--busy-disk", action="store_true",
                    help="--sanitize: a competing process fsyncing to the same disk throughout")
    ap.add_argument("--disk-writer", metavar="DIR",
                    help="only run the competing fsync writer in DIR (until killed)")
    ap.add_argument("--seconds", type=float, help="--disk-writer: stop after this long")
    ap.add_argument("--make-input", metavar="PATH",
                    help="only write the records as JSONL (fields author, text) to PATH")
    args = ap.parse_args(argv)
    if args.disk_writer:
        disk_writer(args.disk_writer, args.seconds)
        return 0
    if args.make_input:
        write_input(Path(args.make_input), args.records, args.units)
        return 0
    if args.sanitize:
        return sanitize_runs(args)

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    import dptext
    from dptext.accounting.events import PrivacyEvent
    from dptext.ledger import Ledger

    records = make_records(args.records, args.units)
    mech = None
    if args.mechanism != "none":
        mech = dptext.mechanism(args.mechanism, epsilon=args.epsilon)
        mech.privatize_batch([t for _, t in records[:256]], rng=0)  # warm the caches

    tmp = tempfile.TemporaryDirectory()
    url = args.ledger or str(Path(tmp.name) / "ledger.sqlite")
    ledger = Ledger(url)
    ledger.set_budget("bench", "notes", 1e6)
    rid = ledger.open_release(owner="bench", dataset="notes", mechanism=args.mechanism,
                              params={"epsilon": args.epsilon})
    sql = _time_sql(ledger)
    load_before = _load()
    t_mech = t_events = t_reserve = t_commit = 0.0
    per_batch = []
    for start in range(0, len(records), args.batch):
        chunk = records[start:start + args.batch]
        t0 = time.perf_counter()
        if mech is not None:
            results = mech.privatize_batch([t for _, t in chunk], rng=start)
        t1 = time.perf_counter()
        if mech is not None:
            events = [r.report.privacy_events() for r in results]
        else:
            events = [[PrivacyEvent("pure", args.epsilon, count=len(t.split()))]
                      for _, t in chunk]
        t2 = time.perf_counter()
        items = [(f"rec-{start + i}", unit, ev)
                 for i, ((unit, _), ev) in enumerate(zip(chunk, events, strict=True))]
        decisions = ledger.reserve(rid, items)
        t3 = time.perf_counter()
        ledger.commit(rid, [d.charge_id for d in decisions if d.allowed])
        t4 = time.perf_counter()
        t_mech += t1 - t0
        t_events += t2 - t1
        t_reserve += t3 - t2
        t_commit += t4 - t3
        per_batch.append(t4 - t2)
    load_after = _load()
    t0 = time.perf_counter()
    result = ledger.verify()
    t_verify = time.perf_counter() - t0
    t0 = time.perf_counter()
    ledger.spent("author-1")
    t_spent = time.perf_counter() - t0
    n = len(records)
    t_ledger = t_events + t_reserve + t_commit
    out = {
        "records": n, "batch": args.batch, "units": args.units, "backend": ledger.backend,
        "mechanism": args.mechanism,
        "ledger_records_per_s": round(n / (t_reserve + t_commit)),
        "ledger_incl_privacy_events_records_per_s": round(n / t_ledger),
        "reserve_ms_per_batch": round(1000 * t_reserve / len(per_batch), 2),
        "commit_ms_per_batch": round(1000 * t_commit / len(per_batch), 2),
        "median_batch_ms": round(1000 * statistics.median(per_batch), 2),
        "us_per_record_sql_statements": round(1e6 * sql["sql"] / n, 1),
        "us_per_record_fsynced_commits": round(1e6 * sql["commit"] / n, 1),
        "us_per_record_python": round(1e6 * (t_reserve + t_commit - sql["sql"] - sql["commit"])
                                      / n, 1),
        "verify_s": round(t_verify, 2), "spent_query_s": round(t_spent, 3),
        "entries": result.entries, "loadavg_before": load_before, "loadavg_after": load_after,
    }
    if mech is not None:
        out["privatize_records_per_s"] = round(n / t_mech)
        out["ratio_estimate"] = round((t_mech + t_ledger) / t_mech, 3)
        # `sanitize --user-field` computes every record's events for the per-unit report with
        # or without a ledger (accounting.units.UnitComposer): with --ledger it adds reserve +
        # commit only
        out["ratio_user_field"] = round((t_mech + t_ledger) / (t_mech + t_events), 3)
    if not args.ledger:
        out["ledger_mb"] = round(sum(p.stat().st_size for p in Path(tmp.name).iterdir())
                                 / 2**20, 1)
    ledger.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
