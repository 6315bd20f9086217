"""Real processes: concurrent writers never lose an update or overspend; kill -9 at random
points never leaves released text uncharged (on SQLite and PostgreSQL)."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ledger_backends import *  # noqa: F403 - the fixtures ledger_url, pg_server, pg_url

import dptext
from dptext.accounting.events import PrivacyEvent
from dptext.ledger import Ledger

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORKER = Path(__file__).resolve().parents[1] / "support" / "ledger_worker.py"
SRC = str(Path(dptext.__file__).resolve().parents[1])


# ------------------------------------------------------------------- concurrent writers
def _charge_shared(url, barrier, worker, attempts, out):
    ledger = Ledger(url, timeout=60)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="m", params={},
                              release_key="shared-release")
    barrier.wait()
    allowed = []
    for k in range(0, attempts, 3):
        items = [(f"w{worker}-{k + j}", "shared", [PrivacyEvent("pure", 0.1)])
                 for j in range(3)]
        ds = ledger.reserve(rid, items)
        ids = [d.charge_id for d in ds if d.allowed]
        allowed += ids
        if k % 2:
            ledger.commit(rid, ids)
    out.put((worker, allowed))


def test_concurrent_processes_never_lose_an_update_or_overspend(ledger_url):
    ledger = Ledger(ledger_url)
    ledger.set_budget("o", "d", 5.0)  # room for exactly 50 charges of 0.1
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_charge_shared, args=(ledger_url, barrier, w, 30, out))
             for w in range(4)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    ids = [i for w in results.values() for i in w]
    assert len(ids) == len(set(ids)) == 50  # 120 attempts, 50 fit: none lost, none extra
    s = ledger.spent("shared", owner="o", dataset="d")
    assert s.epsilon_basic == 5.0 and s.records + s.pending == 50 and s.withheld == 70
    assert sum(len(w) > 0 for w in results.values()) >= 2  # they really interleaved
    r = ledger.verify()
    assert r.charges == 50 and r.releases == 1


# ----------------------------------------------------------------------------- kill -9
def _start(url, output, n):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen([sys.executable, str(WORKER), url, str(output), str(n)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        p.kill()
        raise AssertionError(f"worker did not start: {line} {p.stderr.read()[-2000:]}")
    return p


def _read_until(p, want: str) -> str:
    """The worker's output lines up to ``want`` (returned), or up to "done" / its end."""
    while True:
        line = p.stdout.readline().strip()
        if line in (want, "done", ""):
            return line


def _output_keys(output: Path) -> list[str]:
    data = output.read_bytes() if output.exists() else b""
    data = data[: data.rfind(b"\n") + 1]
    return [line.split(b"\t")[0].decode() for line in data.splitlines()]


def _check_consistent(url, output, budget):
    ledger = Ledger(url)
    ledger.verify()  # the chain survived the kill
    rid = ledger.releases()[0]["release_id"]
    charged = {e["record"]: e["status"] for e in ledger.charges() if e["kind"] == "charge"}
    keys = _output_keys(output)
    assert len(keys) == len(set(keys)), "a record was released twice"
    for key in keys:  # never released and uncharged
        assert ledger._keys.record(rid, key) in charged, f"{key} released but not charged"
    released = {r for r, st in charged.items() if st == "released"}
    written = {ledger._keys.record(rid, k) for k in keys}
    assert released <= written, "a charge marked released has no durable output"
    for row in ledger.units():
        assert row.epsilon <= budget
    ledger.close()
    return keys


@pytest.mark.slow  # ~8 real worker processes started and killed: 5-10 s on 2 idle cores
def test_kill_9_anywhere_leaves_every_released_record_charged_once(ledger_url, tmp_path):
    n, budget, kills = 1000, 20.0, 6
    rng = random.Random(13)
    output = tmp_path / "out.tsv"
    Ledger(ledger_url).set_budget("o", "d", budget)
    killed_mid_run = 0
    batches = -(-n // 50)  # ledger_worker.BATCH
    for _ in range(kills):
        p = _start(ledger_url, output, n)
        # a point of the worker's own progress (every run goes through every batch: a resumed
        # one reserves the done ones again), then a few ms into the reserve/write/fsync/commit
        # of that batch - not a point of the clock, which a fast machine outruns
        _read_until(p, f"reserved {rng.randrange(batches - 1)}")
        time.sleep(rng.uniform(0.0, 0.005))
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            killed_mid_run += 1
        p.wait(30)
        p.stdout.close()
        p.stderr.close()
        _check_consistent(ledger_url, output, budget)
    assert killed_mid_run >= kills // 2
    p = _start(ledger_url, output, n)
    assert _read_until(p, "done") == "done", p.stderr.read()[-2000:]
    p.wait(30)
    p.stdout.close()
    p.stderr.close()
    keys = _check_consistent(ledger_url, output, budget)
    ledger = Ledger(ledger_url)
    assert ledger.pending() == []
    # (a) every released record charged exactly once: one charge per output line
    charges = [e for e in ledger.charges() if e["kind"] == "charge"]
    assert len(charges) == len(keys) and all(e["status"] == "released" for e in charges)
    # (c) the same output as a run without kills (a fresh ledger)
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref_url = str(ref_dir / "ref.sqlite")
    Ledger(ref_url).set_budget("o", "d", budget)
    ref_out = ref_dir / "out.tsv"
    p = _start(ref_url, ref_out, n)
    assert _read_until(p, "done") == "done", p.stderr.read()[-2000:]
    p.wait(30)
    p.stdout.close()
    p.stderr.close()
    assert output.read_bytes() == ref_out.read_bytes()
    # (b) no unit over budget, and the budget really bound
    rows = ledger.units()
    assert len(rows) == 13 and max(r.epsilon for r in rows) <= budget
    assert sum(r.withheld for r in rows) > 0
