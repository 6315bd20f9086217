"""De-identification cost per 1,000 characters at 1k, 5k, 20k and 80k characters, on every
surface (issue 44 item 6): in-process (`build_deid(...).privatize`), the CLI (`dptext sanitize
--entities PHI --detector both --residual protect`) and the service (`/v1/privatize` in entity
mode on a real `dptext serve`, uvicorn on 127.0.0.1).

    .venv/bin/python benchmarks/bench_deid_scaling.py [--sizes 1000,5000,20000,80000]
        [--surfaces inprocess,cli,service]

A record of N characters is characters N to 2N of the generated notes of `dptext.deid.notes`
(seed 0) joined by blank lines (no repetition that would favour or penalise an algorithm, and
no size's text another's). CPU seconds, not wall time: in-process the process's CPU
time of one `privatize` after a warm-up on the 5k record; the CLI's child CPU time (user+sys)
of a run on the N-character record minus that of a run on a short record that loads every
list (``WARM``: start-up and first loads cancel); the service's CPU time (psutil, server
process) over one request minus that over a request of ``WARM`` (the service takes 20,000
characters a text at most: the 80k record goes as four 20k texts in one request). Printed:
seconds per 1,000 characters and the ratio of the 80k figure to the 1k figure (the issue's
bound: within 1.2x).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from _machine import machine, run_child  # noqa: E402

# a short record that touches every list the detectors load on first use (the residence
# phrase's gazetteer, the ICD-10-CM codes, the name lists, the clinical vocabulary): the
# baseline whose cost is taken off, so start-up and first loads cancel
WARM = ("Pt lives in boise with wife Will. Attending: Xu. Dx I48.91, CPT 99213. BP 120/80 at "
        "0800. | Okafor, Chidi | 45 | seen on 2/1 | MRN 4821933, call 555-0142.")


def record(n: int) -> str:
    from dptext.deid.notes import generate_notes

    parts, size, count = [], 0, 64
    while size < 2 * n:
        parts = [r.text for r in generate_notes(count, seed=0)]
        size = sum(len(p) + 2 for p in parts)
        count *= 2
    return "\n\n".join(parts)[n:2 * n]  # each size its own text (no detector memory helps)


def inprocess(sizes: list[int]) -> dict[int, float]:
    from dptext.targeted import build_deid

    m = build_deid("custext", epsilon=2, detector="both")
    # loads the engines, the lists, the gazetteer and the space; a text measured below is
    # never the warm-up's (a detector remembers its last texts)
    m.privatize(WARM)
    m.privatize(record(3000))
    out = {}
    for n in sizes:
        text = record(n)
        t0 = time.process_time()
        m.privatize(text)
        out[n] = time.process_time() - t0
    return out


def cli(sizes: list[int]) -> dict[int, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    tmp = Path(tempfile.mkdtemp(prefix="dptext-deid-scaling-"))

    def run(text: str) -> float:
        src, dst = tmp / "in.jsonl", tmp / "out.jsonl"
        src.write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
        dst.unlink(missing_ok=True)
        cpu, _ = run_child([sys.executable, "-m", "dptext.cli", "sanitize", "-m", "custext",
                            "-e", "2", "--entities", "PHI", "--detector", "both",
                            "--input", str(src), "--output", str(dst), "--seed", "0"], env)
        return cpu

    run(WARM)  # byte-compiles and fills the caches
    base = run(WARM)
    return {n: max(0.0, run(record(n)) - base) for n in sizes}


def service(sizes: list[int]) -> dict[int, float]:
    import httpx
    import psutil
    from service_helpers import Server

    from dptext.ledger import Ledger
    from dptext.service.keys import KeyStore

    tmp = Path(tempfile.mkdtemp(prefix="dptext-deid-scaling-"))
    ledger = tmp / "l.sqlite"
    key = KeyStore(Ledger(str(ledger)).url).create("bench")
    headers = {"Authorization": f"Bearer {key}"}
    server = Server(ledger, tmp / "d", extra=["--rate-per-second", "1e9", "--rate-burst",
                                              "1000000000"]).start(timeout=300)
    try:
        proc = psutil.Process(server.proc.pid)

        def cpu() -> float:
            t = proc.cpu_times()
            kids = sum(c.cpu_times().user + c.cpu_times().system
                       for c in proc.children(recursive=True))
            return t.user + t.system + kids

        def post(text: str) -> float:
            # the service takes at most 20,000 characters a text (Limits.max_chars): a longer
            # record goes as its 20,000-character pieces in one request
            texts = [text[i:i + 20_000] for i in range(0, len(text), 20_000)]
            before = cpu()
            r = httpx.post(f"{server.url}/v1/privatize", headers=headers, timeout=900,
                           json={"texts": texts, "mechanism": "custext",
                                 "params": {"epsilon": 2},
                                 "entities": {"entities": "PHI", "detector": "both"}})
            if r.status_code != 200:
                raise SystemExit(f"/v1/privatize: {r.status_code} {r.text[:300]}")
            return cpu() - before

        post(record(3000))  # loads the mechanism, the detectors and the gazetteer
        base = post(WARM)
        return {n: max(0.0, post(record(n)) - base) for n in sizes}
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,5000,20000,80000")
    ap.add_argument("--surfaces", default="inprocess,cli,service")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# {machine()}")
    runs = {"inprocess": inprocess, "cli": cli, "service": service}
    for name in args.surfaces.split(","):
        got = runs[name](sizes)
        per = {n: 1000 * s / n for n, s in got.items()}
        cells = "  ".join(f"{n // 1000}k {per[n]:.4f}" for n in sizes)
        ratio = per[sizes[-1]] / per[sizes[0]] if per[sizes[0]] else float("nan")
        print(f"{name:<10} CPU s per 1,000 chars: {cells}   "
              f"{sizes[-1] // 1000}k/{sizes[0] // 1000}k {ratio:.2f}x", flush=True)


if __name__ == "__main__":
    main()
