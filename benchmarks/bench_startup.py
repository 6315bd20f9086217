"""What a user meets first (issue 36): the CLI's start-up with a cached space and tables, and the
first ``-m dpmlm``'s GGUF -> fp32 conversion into a fresh cache.

    python benchmarks/bench_startup.py [--runs 5] [--gguf] [--reference PATH/src] [--phases]

Start-up: ``python -m dptext.cli sanitize --text hi`` (the default mechanism) run ``--runs``
times as child processes after one untimed run that fills the caches; CPU (user + system of the
child, from the OS) and wall, medians. ``--reference SRC``: the same command on another
checkout's ``src`` in turn (A B A B ...), with the pairwise ratios. Each side runs on a cache
directory of its own (hard links to the usual cache's default space and fitted tables with
their digests): the records a load writes beside them (``.checked`` names the code that checked
a file, ``.pieces``) are then each side's own, not replaced by the other side's run or by another
process using the shared cache between two timed runs. ``--phases``: where this checkout's
CPU goes - the same work in one child process timed phase by phase, in the command's order
(the CLI and the chosen command's parser, numpy, the mechanism's modules, the space, the
tables, privatizing), medians of ``--runs``.
``--gguf``: one conversion of the packaged SmolLM2 GGUF to the fp32 safetensors copy in a
fresh temporary cache (a child process; about a minute of CPU). ``uptime`` and the CPU
model/flags beside every figure; the child's environment keeps ``OMP_NUM_THREADS`` as given
(unset: the libraries' defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _machine import (  # benchmarks/_machine.py (the script's folder is on sys.path)
    machine,
    run_child,
)

SRC = str(Path(__file__).resolve().parents[1] / "src")


def private_cache(root: Path) -> Path:
    """A cache directory holding hard links (copies across file systems) to the usual cache's
    default spaces and fitted tables, with their digest files."""
    from dptext.cache import DIGEST_SUFFIX, cache_dir

    shared = cache_dir()
    for pattern in ("space-*.npz", "fitted/*.npz"):
        for item in shared.glob(pattern):
            for src in (item, item.with_name(item.name + DIGEST_SUFFIX)):
                dst = root / src.relative_to(shared)
                dst.parent.mkdir(parents=True, exist_ok=True)
                if src.is_file():
                    try:
                        os.link(src, dst)
                    except OSError:
                        shutil.copy2(src, dst)
    return root


def startup(runs: int, reference: str | None, tmp: Path) -> None:
    cmd = [sys.executable, "-m", "dptext.cli", "sanitize", "--text", "hi"]
    sides = {"this": SRC, **({"reference": reference} if reference else {})}
    envs = {k: {**os.environ, "PYTHONPATH": v, "DPTEXT_CACHE": str(private_cache(tmp / k))}
            for k, v in sides.items()}
    for name, env in envs.items():  # untimed: caches filled, bytecode compiled
        subprocess.run([sys.executable, "-m", "compileall", "-q", sides[name]], env=env,
                       stdout=subprocess.DEVNULL)
        run_child(cmd, env)
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in envs}
    for _ in range(runs):
        for name, env in envs.items():
            got[name].append(run_child(cmd, env))
    row = {"row": "CLI start-up: sanitize --text hi (cached space and tables)", "runs": runs}
    for name, values in got.items():
        row[f"{name}_cpu_s"] = [round(c, 3) for c, _ in values]
        row[f"{name}_wall_s"] = [round(w, 3) for _, w in values]
        row[f"{name}_cpu_median_s"] = round(statistics.median(c for c, _ in values), 3)
    if reference:
        row["this_over_reference_cpu"] = round(statistics.median(
            a[0] / b[0] for a, b in zip(got["this"], got["reference"], strict=True)), 3)
        row["this_over_reference_wall"] = round(statistics.median(
            a[1] / b[1] for a, b in zip(got["this"], got["reference"], strict=True)), 3)
    print(json.dumps(row), flush=True)


PHASES = """
import resource, json
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
out = {"interpreter and site": cpu()}
def phase(name, t):
    out[name] = cpu() - t
argv = ["sanitize", "--text", "hi"]
t = cpu(); import os, dptext.cli
timeout = getattr(dptext.cli, "BLAS_THREAD_TIMEOUT", None)  # what main() sets, where it does
if timeout and "OPENBLAS_THREAD_TIMEOUT" not in os.environ:
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = timeout
try:
    dptext.cli.parser(argv)  # only the chosen command's parser (since issue 36's second pass)
except TypeError:  # an older checkout: the whole parser
    dptext.cli.parser()
phase("dptext.cli and its parser", t)
t = cpu(); import numpy; phase("import numpy", t)
t = cpu(); import dptext.mechanisms
from dptext.mechanisms.registry import registered
lookup = getattr(dptext.mechanisms.registry, "lookup", lambda n: registered()[n])
lookup("custext"); phase("custext and its modules: text, accounting, ... (numpy done)", t)
t = cpu(); from dptext.resources import default_space; space = default_space(progress=False)
phase("the default space", t)
t = cpu(); m = dptext.mechanisms.mechanism("custext", epsilon=2.0, space=space); m.fit()
phase("the custext tables", t)
t = cpu(); str(m.privatize("hi").report); phase("privatize and the report", t)
out["total"] = cpu()
print(json.dumps(out))
"""


def phases(runs: int, tmp: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "DPTEXT_CACHE": str(tmp / "this")}
    got = []
    for _ in range(runs + 1):  # the first untimed
        done = subprocess.run([sys.executable, "-c", PHASES], env=env, capture_output=True,
                              text=True, check=True)
        got.append(json.loads(done.stdout.strip().splitlines()[-1]))
    row = {"row": "CLI start-up by phase (CPU s, medians)", "runs": runs}
    row.update({k: round(statistics.median(g[k] for g in got[1:]), 3) for k in got[0]})
    print(json.dumps(row), flush=True)


def gguf() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": SRC, "DPTEXT_CACHE": tmp}
        code = "from dptext.lm.loading import default_causal_dir; default_causal_dir()"
        cpu, wall = run_child([sys.executable, "-c", code], env)
    print(json.dumps({"row": "first -m dpmlm: GGUF -> fp32 conversion, fresh cache",
                      "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--gguf", action="store_true", help="also time the GGUF conversion")
    p.add_argument("--reference", help="another checkout's src, run in turn")
    p.add_argument("--phases", action="store_true", help="also time this checkout by phase")
    args = p.parse_args()
    print(json.dumps({"when": "start", **machine()}), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        startup(args.runs, args.reference, Path(tmp))
        if args.phases:
            phases(args.runs, Path(tmp))
    if args.gguf:
        gguf()
    print(json.dumps({"when": "end", **machine()}), flush=True)


if __name__ == "__main__":
    main()
