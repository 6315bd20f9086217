"""Faults and load against a real server on 127.0.0.1 (bounded, stopping by themselves):
kill -9 in the middle of a job and restart - the job resumes, no record released twice or
released uncharged; 32 concurrent clients for a few seconds - no error, and the ledger's totals
equal what the clients were told was released."""

from __future__ import annotations

import json
import statistics
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
httpx = pytest.importorskip("httpx")

from service_helpers import Server  # noqa: E402

from dptext.ledger import Ledger  # noqa: E402
from dptext.service.keys import KeyStore  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def _setup(tmp_path):
    ledger_path = tmp_path / "l.sqlite"
    key = KeyStore(Ledger(str(ledger_path)).url).create("clinic")
    return ledger_path, {"Authorization": f"Bearer {key}"}


def test_kill_9_mid_job_then_restart_resumes_exactly_once(tmp_path):
    ledger_path, h = _setup(tmp_path)
    n = 1200
    lines = "".join(json.dumps({"id": f"r{i}", "text": f"Patient {i} saw the nurse on Monday "
                                                     f"about a cough"}) + "\n"
                    for i in range(n))
    server = Server(ledger_path, tmp_path / "data").start()
    try:
        r = httpx.post(f"{server.url}/v1/jobs", headers=h, timeout=120,
                       files={"file": ("notes.jsonl", lines.encode())},
                       data={"mechanism": "laplace", "params": json.dumps({"epsilon": 50}),
                             "unit_field": "id", "keep": "id"})
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # kill once part of the job is done, not all
            done = httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=h).json()["records_done"]
            if done >= 128:
                break
            time.sleep(0.05)
        server.kill()
        assert 0 < done < n, done
    finally:
        server.kill()
    restarted = Server(ledger_path, tmp_path / "data").start()
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            job = httpx.get(f"{restarted.url}/v1/jobs/{job_id}", headers=h).json()
            if job["state"] in ("done", "failed"):
                break
            time.sleep(0.2)
        assert job["state"] == "done", job
        out = httpx.get(f"{restarted.url}/v1/jobs/{job_id}/output", headers=h).text
        # a sample of units, read through the service's own ledger: each charged exactly once
        spent = {i: httpx.get(f"{restarted.url}/v1/units/r{i}/budget", headers=h,
                              timeout=60).json()
                 for i in range(0, n, 37)}
    finally:
        restarted.stop()
    ids = [json.loads(line)["id"] for line in out.splitlines()]
    assert len(ids) == len(set(ids)) == n  # none lost, none twice (no budget: none withheld)
    for i, answer in spent.items():
        assert "spent" in answer, (i, answer, job, _ledger_state(ledger_path, n))
        assert answer["spent"]["records"] == 1 and answer["spent"]["pending"] == 0, (i, answer)
    ledger = Ledger(str(ledger_path))  # every unit, read from the database itself
    for i in range(n):
        s = ledger.spent(f"r{i}", owner="clinic", pld=False)
        assert (s.records, s.pending, s.withheld) == (1, 0, 0), (i, s)


def _ledger_state(ledger_path, n: int) -> dict:
    """What the database itself holds, for a failure message (the in-suite failure of
    2026-12-01 is not root-caused: this says whether the charges are missing or unreadable)."""
    ledger = Ledger(str(ledger_path))
    missing = [i for i in range(n) if ledger.spent(f"r{i}", owner="clinic", pld=False).records
               + ledger.spent(f"r{i}", owner="clinic", pld=False).pending == 0]
    return {"units_without_charges": len(missing), "first": missing[:10],
            "charges": sum(1 for _ in ledger.charges()), "pending": len(ledger.pending()),
            "releases": len(ledger.releases()),
            "files": sorted(p.name for p in ledger_path.parent.iterdir())}


def test_32_concurrent_clients(tmp_path):
    ledger_path, h = _setup(tmp_path)
    server = Server(ledger_path, tmp_path / "data",
                    extra=["--rate-per-second", "100000", "--rate-burst", "100000"]).start()
    latencies, errors, told = [], [], {}
    lock = threading.Lock()
    body = {"texts": ["Alice met Bob in Paris on Monday."], "params": {"epsilon": 2}}
    try:
        httpx.post(f"{server.url}/v1/privatize", headers=h, json=body, timeout=120)  # warm
        # the 8 s start after the warm-up (on a loaded machine the first request's fit took
        # most of them, and the clients found the time up before their first request)
        stop = time.monotonic() + 8.0

        def client(c: int) -> None:
            with httpx.Client(timeout=60) as session:
                i = 0
                while time.monotonic() < stop:
                    unit = f"u{c}-{i % 3}"
                    t = time.perf_counter()
                    try:
                        r = session.post(f"{server.url}/v1/privatize", headers=h,
                                         json={**body, "units": [unit]})
                        ok = r.status_code == 200
                    except httpx.HTTPError as err:
                        ok, r = False, err
                    with lock:
                        latencies.append(time.perf_counter() - t)
                        if not ok:
                            errors.append(str(r))
                        else:
                            res = r.json()["results"][0]
                            if not res["withheld"]:
                                told[unit] = told.get(unit, 0.0) + \
                                    res["report"]["document_epsilon"]
                    i += 1

        threads = [threading.Thread(target=client, args=(c,)) for c in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1.0, stop + 240 - time.monotonic()))
        # a client still waiting for its last answer would add to `told` after the ledger is
        # read below (a mismatch that is the test's, not the service's): wait for all of them
        assert not any(t.is_alive() for t in threads), "a client did not finish in 4 minutes"
        # the service's ledger totals, as the service reports them, per unit
        recorded = {unit: httpx.get(f"{server.url}/v1/units/{unit}/budget", headers=h,
                                    timeout=60).json()["spent"]["epsilon_basic"]
                    for unit in told}
    finally:
        server.stop()
    assert not errors, errors[:3]
    assert len(latencies) > 32
    for unit, eps in told.items():
        assert recorded[unit] == pytest.approx(eps, rel=1e-9), unit
    p50 = statistics.median(latencies)
    p99 = sorted(latencies)[int(0.99 * (len(latencies) - 1))]
    print(f"32 clients: {len(latencies) / 8.0:.1f} req/s, p50 {p50 * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms, errors 0")
