"""Streaming a job to stdout (``--output -``): no work directory, nothing to resume; each
batch goes through the driver's executor, ledger reservation and fold as in a sharded run and is
written at once, its charges committed once it is written; the rejects and the report are
written when the stream ends."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sys
from pathlib import Path

from dptext.corpus.aggregate import UnitTotals
from dptext.corpus.job import JobResult, now
from dptext.corpus.paths import remove_stale_temps, temp_beside, write_durably
from dptext.corpus.shards import Shard
from dptext.io import atomic_write


def run_stream(d) -> JobResult:
    """Run the :class:`~dptext.corpus.driver.Driver` ``d`` with stdout as its output."""
    j, plan = d.job, d.plan
    for _, target in plan.targets():
        remove_stale_temps(target)
    d._start_pool()
    d._fit()
    d.units = UnitTotals(None, j.user_field)
    settings = d.settings()
    d.manifest = {"settings": settings, "inputs": [], "shards": []}
    d.ledger = d._ledger_session(hashlib.sha256(json.dumps(
        [settings, now()], sort_keys=True).encode()).hexdigest())
    out = sys.stdout.buffer
    rejects = (atomic_write(plan.rejects, "wb", durable=True, temp=temp_beside(plan.rejects))
               if plan.rejects else contextlib.nullcontext())
    executor = d._executor(None)
    bar = d._progress(0)  # after the executor: see _loop
    header_written = False
    try:
        with rejects as rejects_f:  # renamed into place once the stream has ended
            for batch_out, decisions in d._charged(executor.map(d._batches(0))):
                shard = Shard(0, 0, None, d.out_fmt)
                payload = d._process(batch_out, shard, decisions)
                if not header_written:
                    out.write(d.writer.header_text().encode())
                    header_written = True
                out.write(payload)
                out.flush()
                if rejects_f is not None and shard.rejects:
                    rejects_f.write(b"".join(shard.rejects))
                if d.ledger is not None:
                    d.ledger.commit(shard.charges)
                c = d.agg.counts
                c["records_in"] += batch_out.records_in
                c["records_out"] += shard.records
                c["rejected"] += shard.rejected
                c["withheld"] += shard.withheld
                if shard.units:
                    d.units.add(0, shard.units)
                if bar is not None:
                    bar.update(batch_out.records_in)
            if not header_written:
                out.write(d.writer.header_text().encode())
            out.flush()
            report, summary = d._summary()
        if plan.report is not None:
            write_durably(plan.report, (json.dumps(summary, indent=2) + "\n").encode())
    finally:
        if bar is not None:
            bar.close()
        executor.close()
    return JobResult(report, summary, None, plan.report, 0,
                     {k: summary[k] for k in ("records_in", "records", "records_rejected",
                                              "records_withheld")})


def stream_shared_dir() -> Path:
    import atexit
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="dptext-shared-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d
