"""Requests/s and latency of `dptext serve` on this machine, against a real server on
127.0.0.1 (bounded: each phase runs for --seconds and stops by itself).

    python benchmarks/bench_service.py [--seconds 60] [--clients 32] [--lm-clients 16]

Phases: custext with 1-text and 32-text requests from --clients concurrent clients; DP-MLM
(the packaged SmolLM2) from --lm-clients clients, batched by the server's request queue vs one
request at a time (the same server with batching off: --batch-window 0 sends each request's
texts alone). Prints req/s, texts/s, p50/p99 latency, errors, and `uptime`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from service_helpers import Server  # noqa: E402

from dptext.ledger import Ledger  # noqa: E402
from dptext.service.keys import KeyStore  # noqa: E402

TEXT = "Alice Smith met Dr. Jones in Boston on Monday to talk about her chest pain."


def phase(url: str, headers: dict, body: dict, clients: int, seconds: float) -> dict:
    latencies, errors, lock = [], [], threading.Lock()
    stop = time.monotonic() + seconds

    def run() -> None:
        with httpx.Client(timeout=300) as s:
            while time.monotonic() < stop:
                t = time.perf_counter()
                try:
                    ok = s.post(f"{url}/v1/privatize", headers=headers, json=body
                                ).status_code == 200
                except httpx.HTTPError:
                    ok = False
                with lock:
                    latencies.append(time.perf_counter() - t)
                    if not ok:
                        errors.append(1)

    start = time.perf_counter()
    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    lat = sorted(latencies)
    return {"requests_per_s": len(lat) / wall,
            "texts_per_s": len(lat) * len(body["texts"]) / wall,
            "p50_ms": 1000 * statistics.median(lat) if lat else None,
            "p99_ms": 1000 * lat[int(0.99 * (len(lat) - 1))] if lat else None,
            "requests": len(lat), "errors": len(errors)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--lm-clients", type=int, default=16)
    ap.add_argument("--skip-lm", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dptext-bench-service-"))
    ledger = tmp / "l.sqlite"
    key = KeyStore(Ledger(str(ledger)).url).create("bench")
    h = {"Authorization": f"Bearer {key}"}
    fast = ["--rate-per-second", "1e9", "--rate-burst", "1000000000"]
    out = {"uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    server = Server(ledger, tmp / "d", extra=fast).start()
    try:
        one = {"texts": [TEXT], "params": {"epsilon": 2}}
        httpx.post(f"{server.url}/v1/privatize", headers=h, json=one, timeout=300)
        out["custext_1_text"] = phase(server.url, h, one, args.clients, args.seconds)
        many = {"texts": [TEXT] * 32, "params": {"epsilon": 2}}
        out["custext_32_texts"] = phase(server.url, h, many, args.clients, args.seconds)
    finally:
        server.stop()
    if not args.skip_lm:
        lm = {"texts": [TEXT], "mechanism": "dpmlm", "params": {"epsilon": 50}}
        for label, window in (("dpmlm_batched", "0.01"), ("dpmlm_one_at_a_time", "0")):
            server = Server(ledger, tmp / "d", extra=[*fast, "--batch-window", window]).start()
            try:
                httpx.post(f"{server.url}/v1/privatize", headers=h, json=lm, timeout=600)
                out[label] = phase(server.url, h, lm, args.lm_clients, args.seconds)
            finally:
                server.stop()
        out["dpmlm_batching_speedup"] = (out["dpmlm_batched"]["texts_per_s"]
                                         / out["dpmlm_one_at_a_time"]["texts_per_s"])
    out["uptime_after"] = subprocess.run(["uptime"], capture_output=True,
                                         text=True).stdout.strip()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
