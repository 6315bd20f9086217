"""A process with several connections to one SQLite ledger keeps its POSIX locks.

Closing any descriptor of a file drops every advisory lock the process holds on it, also
SQLite's ("How To Corrupt An SQLite Database File", section 2.2). The ledger once read the
file's header with a plain open()/close() on every connect: a process's second connection
then dropped the first one's locks, the last *other* connection to close took the database
for unused, checkpointed it and deleted the WAL, and everything the process committed after
that went into the unlinked file: lost at the next kill, while the output it covered had been
released. This is the service (a ledger and a key store) killed mid-job, reduced to its cause.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dptext
from dptext.ledger import Ledger
from dptext.ledger.backends import check_sqlite_file, live_connections

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

SRC = str(Path(dptext.__file__).resolve().parents[1])
N = 200

CHILD = textwrap.dedent(f"""
    import sys, time
    sys.path.insert(0, {SRC!r})
    from dptext.accounting.events import PrivacyEvent
    from dptext.ledger import Ledger
    first = Ledger(sys.argv[1])
    second = Ledger(sys.argv[1])  # a second connection (the service's key store)
    rid = first.open_release(owner="o", dataset="d", mechanism="m", params={{}})
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range({N}):
        item = (f"r{{i}}", f"u{{i}}", [PrivacyEvent("pure", 1.0)])
        first.commit(rid, [d.charge_id for d in first.reserve(rid, [item])])
    print("wrote", flush=True)
    time.sleep(600)
""")


def test_commits_survive_kill_after_another_process_closes_its_connection(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    other = Ledger(path)  # this process's connection, closed while the child runs
    other.releases()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        other.close()  # with the child's locks gone, this close deleted the WAL
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "wrote"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(60)
    with Ledger(path) as ledger:
        assert sum(1 for _ in ledger.charges()) == N
        assert ledger.spent("u7", owner="o", dataset="d").records == 1
        ledger.verify()


def test_header_check_runs_only_without_a_live_connection(tmp_path, monkeypatch):
    import dptext.ledger.backends as backends

    path = tmp_path / "l.sqlite"
    calls = []
    monkeypatch.setattr(backends, "check_sqlite_file", lambda p: calls.append(p))
    a = Ledger(path)
    assert live_connections(path) >= 1 and calls == []  # a new file: nothing to check
    b = Ledger(path)
    assert calls == []  # a's connection is live: the file is not opened by hand
    a.close()
    b.close()
    assert live_connections(path) == 0
    c = Ledger(path)
    assert calls == [path]  # no live connection: checked
    c.close()
    del c
    check_sqlite_file(path)  # the real check accepts the ledger


def test_a_dropped_ledger_forgets_its_connection(tmp_path):
    import gc

    path = tmp_path / "l.sqlite"
    Ledger(path)  # never closed
    gc.collect()
    assert live_connections(path) == 0
    assert os.path.exists(path)
