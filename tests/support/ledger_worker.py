"""A job that releases records under the ledger's charge-before-release protocol, for the
kill -9 test: ``python ledger_worker.py URL OUTPUT N``.

Each batch is reserved, its allowed records are appended to OUTPUT and fsynced, and only then
committed; after each reserve it prints ``reserved K`` (K the batch's number), so that the test
can kill it at a point of its own progress rather than of the clock. On start it continues
the same release (same release key) from what OUTPUT holds, dropping a last line cut short by
a kill, and re-commits what a kill left pending.
"""

import os
import sys
import time

from dptext.accounting.events import PrivacyEvent
from dptext.ledger import Ledger

BATCH = 50


def cost(i: int) -> float:
    return 0.5 + (i % 5) * 0.25


def main(url: str, output: str, n: int) -> None:
    ledger = Ledger(url)
    rid = ledger.open_release(owner="o", dataset="d", mechanism="test", params={"n": n},
                              release_key="kill-test-job")
    with open(output, "a+b") as f:
        f.seek(0)
        data = f.read()
        keep = data[: data.rfind(b"\n") + 1]
        if len(keep) != len(data):  # a line cut by the kill: never completed, drop it
            f.truncate(len(keep))
        done = {line.split(b"\t")[0].decode() for line in keep.splitlines()}
        print("ready", flush=True)
        for start in range(0, n, BATCH):
            items = [(f"r{i}", f"u{i % 13}", [PrivacyEvent("pure", cost(i))])
                     for i in range(start, min(n, start + BATCH))]
            decisions = ledger.reserve(rid, items)
            print(f"reserved {start // BATCH}", flush=True)  # where the test may kill it
            lines = [f"{key}\ttext of {key} by {unit}\n".encode()
                     for (key, unit, _), d in zip(items, decisions, strict=True)
                     if d.allowed and key not in done]
            f.write(b"".join(lines))
            f.flush()
            os.fsync(f.fileno())
            time.sleep(0.002)  # the window between durable output and commit
            ledger.commit(rid, [d.charge_id for d in decisions if d.allowed])
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
