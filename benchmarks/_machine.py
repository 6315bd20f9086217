"""What the benchmark scripts print beside every figure, and how they time a child process."""

from __future__ import annotations

import resource
import subprocess
import time

from dptext.devices import cpu_info

# the flags that decide which kernels run (issue 28): printed beside every speed figure
_SHOWN = ("avx", "amx", "fma", "sse4", "vnni")


def machine() -> dict:
    """CPU model, the kernel-relevant flags and ``uptime`` (the load) right now."""
    model, flags = cpu_info()
    return {"model": model,
            "flags": " ".join(sorted(f for f in flags if f.startswith(_SHOWN))),
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}


def run_child(cmd: list[str], env: dict, *, tail: int = 1500) -> tuple[float, float]:
    """(CPU s, wall s) of one child process run to its end; a failure is a one-line exit
    naming the command with the end of its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-tail:]}")
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall)
