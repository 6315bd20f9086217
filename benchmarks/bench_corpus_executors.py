"""Issue 14's executor figures in one command: wall time and CPU seconds of `dptext sanitize` with
`--workers 1`, `--workers 2` and Ray - (a) end to end, Ray started by the job, and (b) on a
Ray cluster already running (`ray start --head --num-cpus 2`, as big corpora are run) - on
custext, and `--workers 1` / `--workers 2` on laplace; every output checked byte-identical.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_corpus_executors.py   # < 5 min quiet
    ... --custext 200000 --laplace 1000 --no-ray                                  # a short check
    ... --repeat 3 --out results.json                                             # minima of 3

CPU seconds are those of the whole process tree the job ran - the driver, its worker processes,
and for Ray every Ray process (for (b) the running cluster's daemons and actors during the job)
- read at one instant before and after each run: this process makes itself the child
subreaper (``prctl``), so processes that outlive their parent are re-parented here and their CPU
is not lost, and CPU(tree) = CPU of reaped children + the live descendants' own and reaped
children's CPU (``/proc/PID/stat``). The driver's own CPU is its last 0.1 s sample. The machine
may be shared: wall-clock ratios under load are lower bounds, CPU seconds much less so; the
speed-up 2 workers could reach on 2 free cores is 2 x CPU(1 worker) / CPU(2 workers), printed
as ``cpu-bound x``. `uptime` is printed with every run.

The cluster of (b) is started in a private temporary directory on a free port and stopped by
terminating its processes by pid (``ray stop`` would stop every Ray on the machine).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_corpus as bc  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed: the CPU of orphans would be lost")


def reap() -> None:
    """Collect every exited child (orphans re-parented here), adding their CPU to ours."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def tree_cpu() -> float:
    """CPU seconds of everything this process started, live or exited (see the docstring)."""
    import psutil

    reap()
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    for p in psutil.Process().children(recursive=True):
        try:
            c = p.cpu_times()
        except psutil.Error:
            continue
        total += c.user + c.system + c.children_user + c.children_system
    return total


def descendants() -> list:
    import psutil

    reap()
    return [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]


def wait_orphans(keep: set[int], timeout: float = 60.0) -> None:
    """Wait until only ``keep`` (a running cluster) is left of the processes started here."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not [p for p in descendants() if p.pid not in keep]:
            return
        time.sleep(0.2)
    left = [p.pid for p in descendants() if p.pid not in keep]
    raise SystemExit(f"processes {left} of the last run did not exit")


def run_job(args: list[str], cwd: Path, env: dict, out: str, keep: set[int] | None
            ) -> dict:
    import psutil

    (cwd / out).unlink(missing_ok=True)
    up = bc.uptime()
    cpu0 = tree_cpu()
    t = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "dptext.cli", "sanitize", "--no-progress",
                          *args, "-o", out], cwd=cwd, env=env, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    seen: dict[tuple[int, float], float] = {}  # (pid, start) -> its own CPU when last seen
    names: dict[tuple[int, float], str] = {}

    def sample() -> None:
        for c in psutil.Process().children(recursive=True):
            try:
                key, ct = (c.pid, c.create_time()), c.cpu_times()
                if names.get(key, "ray::IDLE") in ("ray::IDLE", "default_worker"):
                    names[key] = _role(c, p.pid)  # an actor's title, once it has one
            except psutil.Error:
                continue
            seen[key] = ct.user + ct.system

    sample()
    before = dict(seen)
    peak, driver = bc.watch(p, tick=sample)
    wall = time.monotonic() - t
    err = p.stderr.read()
    if p.returncode != 0:
        raise SystemExit(f"dptext sanitize {' '.join(args)} failed:\n{err}")
    if keep is None:  # a running cluster: its actors' teardown, then the figures
        for _ in range(20):
            sample()
            time.sleep(0.1)
    else:  # Ray's processes of (a) exit after the driver: their CPU counts
        wait_orphans(keep)
    # Ray's raylet does not collect its exited workers' CPU: the samples (every 0.1 s, so
    # short by the last 0.1 s of each process) count what the exact figure cannot
    sampled = sum(cpu - before.get(key, 0.0) for key, cpu in seen.items())
    exact = tree_cpu() - cpu0
    roles: dict[str, float] = {}
    for key, cpu in seen.items():
        role = names.get(key, "?")
        roles[role] = roles.get(role, 0.0) + cpu - before.get(key, 0.0)
    return {"seconds": wall, "cpu_seconds": max(exact, sampled), "cpu_exact": exact,
            "cpu_sampled": sampled, "driver_cpu_seconds": driver,
            "cpu_by_role": {k: round(v, 2) for k, v in sorted(roles.items(),
                                                              key=lambda kv: -kv[1])},
            "peak_rss_mb": peak / 2**20, "uptime": up}


def _role(proc, driver: int) -> str:
    """What a process of the tree is, for the CPU breakdown: the driver, a worker or Ray
    actor (by its title), or one of Ray's daemons (by its executable or script)."""
    if proc.pid == driver:
        return "driver"
    title = " ".join(proc.cmdline())
    if title.startswith("ray::"):
        return title.split()[0]  # ray::_Privatizer.run, ray::IDLE, ray::DashboardAgent ...
    for name in ("default_worker", "gcs_server", "raylet", "dashboard_agent", "runtime_env",
                 "log_monitor", "monitor.py", "multiprocessing"):
        if name in title:
            return name
    return proc.name()


def best(runs: list[dict]) -> dict:
    """The minimum of each figure over the repeats (load only ever adds to them)."""
    out = dict(runs[0])
    for key in ("seconds", "cpu_seconds", "driver_cpu_seconds", "peak_rss_mb"):
        out[key] = min(r[key] for r in runs)
    out["runs"] = len(runs)
    out["uptimes"] = [r["uptime"] for r in runs]
    return out


def show(label: str, n: int, r: dict) -> None:
    print(f"{label:30s} {r['seconds']:7.2f} s {n / r['seconds']:9,.0f} rec/s | cpu "
          f"{r['cpu_seconds']:6.2f} s = {1000 * r['cpu_seconds'] / n:6.3f} s/1k rec (driver "
          f"{r['driver_cpu_seconds']:5.2f}) | rss {r['peak_rss_mb']:5.0f} MB | {r['uptime']}",
          flush=True)
    if len(r.get("cpu_by_role", {})) > 1:
        print("    cpu by process:", ", ".join(f"{k} {v:.2f}" for k, v in r["cpu_by_role"].items()
                                                 if v >= 0.05), flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """``ray start --head --num-cpus 2`` in a private directory; stopped by pid."""

    def __init__(self, cpus: int, env: dict) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rayb-", dir="/tmp"))
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        t = time.monotonic()
        subprocess.run(["ray", "start", "--head", "--num-cpus", str(cpus),
                        "--include-dashboard=false", "--disable-usage-stats",
                        "--node-ip-address", "127.0.0.1", "--port", str(port),
                        "--temp-dir", str(self.dir)], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       executable=str(Path(sys.executable).with_name("ray")))
        self.start_seconds = time.monotonic() - t
        time.sleep(2)  # the prestarted workers come up
        self.pids = {p.pid for p in descendants()}

    def stop(self) -> None:
        import psutil

        procs = [p for p in descendants()]
        for p in procs:
            try:
                p.send_signal(signal.SIGTERM)
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(procs, timeout=10)
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)
        reap()
        subprocess.run(["rm", "-rf", str(self.dir)], check=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--custext", type=int, default=1_000_000, help="custext records")
    ap.add_argument("--laplace", type=int, default=4000, help="laplace records (0: none)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--runs", default="workers1,workers2,ray_a,ray_b",
                    help="which of workers1,workers2,ray_a,ray_b (workers1 always runs)")
    ap.add_argument("--out", help="write the results as JSON")
    a = ap.parse_args()
    become_subreaper()
    d = Path(tempfile.mkdtemp(prefix="bench-exec-"))
    env = {**os.environ, "PYTHONPATH": bc.SRC, "OMP_NUM_THREADS": "1",
           "RAY_TMPDIR": str(d / "ray"), "RAY_USAGE_STATS_ENABLED": "0",
           # a private cluster on 127.0.0.1 for this benchmark: no token (~/.ray's is shared)
           "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    (d / "ray").mkdir()
    res: dict = {"uptime_start": bc.uptime()}
    print("start:", res["uptime_start"], flush=True)
    t0 = time.monotonic()
    cluster = None
    try:
        for mech, n, eps in (("custext", a.custext, "2"), ("laplace", a.laplace, "10")):
            if not n:
                continue
            src = bc.make_records(d / f"{mech}-{n}.txt", n, "txt")
            base = ["-m", mech, "-e", eps, "-i", src.name, "--seed", "1"]
            runs = {"workers1": ["--workers", "1"], "workers2": ["--workers", "2"]}
            if mech == "custext" and not a.no_ray:
                runs["ray_a"] = ["--engine", "ray", "--workers", "2"]
                runs["ray_b"] = ["--engine", "ray", "--workers", "2"]
            wanted = {"workers1", *a.runs.split(",")}
            runs = {k: v for k, v in runs.items() if k in wanted}
            outs = {}
            for name, extra in runs.items():
                keep: set[int] | None = set()
                job_env = env
                if name == "ray_b":
                    cluster = Cluster(2, env)
                    keep = None
                    job_env = {**env, "RAY_ADDRESS": cluster.address}
                    # a cluster in use has run Ray Data before: its detached helper actors
                    # (stats, autoscaling coordinator, actor locations) are up
                    warm = bc.make_records(d / "warm.txt", 2000, "txt")
                    t = time.monotonic()
                    run_job(["-m", mech, "-e", eps, "-i", warm.name, "--engine", "ray",
                             "--workers", "2"], d, job_env, "warm.out", None)
                    print(f"ray (b) warm-up job of 2,000 records: {time.monotonic() - t:.1f} s",
                          flush=True)
                    print(f"ray start --head --num-cpus 2: {cluster.start_seconds:.1f} s "
                          f"({cluster.address}, {len(cluster.pids)} processes)", flush=True)
                r = best([run_job([*base, *extra], d, job_env, f"{mech}-{name}.out", keep)
                          for _ in range(a.repeat)])
                if cluster is not None:
                    cluster.stop()
                    cluster = None
                r["records"] = n
                r["records_per_s"] = n / r["seconds"]
                r["cpu_s_per_1k_records"] = 1000 * r["cpu_seconds"] / n
                res[f"{mech}-{name}"] = r
                show(f"{mech} {n:,} {name}", n, r)
                outs[name] = (d / f"{mech}-{name}.out").read_bytes()
            same = all(o == outs["workers1"] for o in outs.values())
            one = res[f"{mech}-workers1"]
            summary = {"identical_bytes": same}
            for name in runs:
                if name == "workers1":
                    continue
                r = res[f"{mech}-{name}"]
                summary[name] = {"wall_x": one["seconds"] / r["seconds"],
                                 "cpu_ratio": r["cpu_seconds"] / one["cpu_seconds"],
                                 "cpu_bound_x": 2 * one["cpu_seconds"] / r["cpu_seconds"]}
                print(f"{mech} {name} / workers1: {summary[name]['wall_x']:.2f}x wall, CPU "
                      f"x{summary[name]['cpu_ratio']:.2f}, cpu-bound "
                      f"{summary[name]['cpu_bound_x']:.2f}x on 2 free cores", flush=True)
            if "ray_a" in runs and "ray_b" in runs:
                batches = n / 512
                extra_ms = 1000 * (res[f"{mech}-ray_b"]["cpu_seconds"] - one["cpu_seconds"])
                summary["ray_overhead_cpu_ms_per_batch"] = extra_ms / batches
                summary["ray_a_fixed_s"] = (res[f"{mech}-ray_a"]["seconds"]
                                            - res[f"{mech}-ray_b"]["seconds"])
                print(f"{mech}: Ray's CPU over one process {extra_ms / batches:+.1f} ms per "
                      f"512-record batch (cluster running); start-up in (a) about "
                      f"{summary['ray_a_fixed_s']:.1f} s more than (b)", flush=True)
            print(f"{mech}: identical bytes across executors: {same}", flush=True)
            res[f"{mech}-summary"] = summary
            if not same:
                raise SystemExit(f"{mech}: the executors gave different bytes")
    finally:
        if cluster is not None:
            cluster.stop()
        subprocess.run(["rm", "-rf", str(d)], check=False)
    res["uptime_end"] = bc.uptime()
    res["seconds"] = time.monotonic() - t0
    print("end:", res["uptime_end"], f"({res['seconds']:.0f} s)", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
