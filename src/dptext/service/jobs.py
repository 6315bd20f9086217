"""File jobs: an uploaded JSONL or CSV file privatized in the background, with every record
charged to its privacy unit in the ledger before its output is written, and resumed after a
restart.

A job lives in its own directory (``<data>/jobs/<id>/``, the id random, the uploaded file
stored as ``input.jsonl`` / ``input.csv`` whatever it was called, so no file name from a
client reaches the file system). ``job.json`` is its state; ``output.part`` grows batch by
batch, each batch fsynced and then recorded in ``progress.json`` (records done, bytes); on
restart the part file is cut back to the recorded size and the job continues from the next
record. Records are charged by key ``<job id>:<record number>`` (the ledger's ``reserve`` is
idempotent per key), so a record whose batch was charged before a kill is not charged again;
charges are committed (released) once the batch is durable. The output, rejects and report can
be downloaded when the job is done.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dptext.accounting.events import GuaranteeKind, TokenEvent, TokenGuarantee
from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError
from dptext.io import read_json_objects, read_lines

FORMATS = ("jsonl", "csv")
BATCH = 64
STATES = ("queued", "running", "done", "failed")


@dataclass
class Job:
    id: str
    owner: str
    dataset: str
    mechanism: str
    params: dict
    fields: list[str]
    unit_field: str | None
    format: str
    state: str = "queued"
    records_total: int = 0
    records_done: int = 0
    released: int = 0
    withheld: int = 0
    rejected: int = 0
    error: str | None = None
    created: float = field(default_factory=time.time)
    finished: float | None = None

    def public(self) -> dict:
        d = asdict(self)
        d["progress"] = (self.records_done / self.records_total) if self.records_total else 0.0
        return d


def _fsync_write(path: Path, data: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _records(path: Path, fmt: str) -> Iterator[dict]:
    if fmt == "jsonl":
        for _, obj in read_json_objects(path):
            yield obj
        return
    text = "".join(line for _, line in read_lines(path, strip_bom=True))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    for row in reader:
        if None in row:
            raise DPTextError(f"CSV row {reader.line_num} has more fields than the header")
        yield row


class JobStore:
    """Jobs of every owner under ``root``; ``run(job)`` works through a job in a thread."""

    def __init__(self, root: Path, *, privatize: Callable, ledger, max_per_owner: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.privatize, self.ledger = privatize, ledger
        self.max_per_owner = max_per_owner
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    # ------------------------------------------------------------ state
    def dir(self, job_id: str) -> Path:
        if not job_id.isalnum():
            raise KeyError(job_id)
        return self.root / job_id

    def load(self, job_id: str) -> Job:
        path = self.dir(job_id) / "job.json"
        if not path.is_file():
            raise KeyError(job_id)
        return Job(**json.loads(path.read_text(encoding="utf-8")))

    def save(self, job: Job) -> None:
        _fsync_write(self.dir(job.id) / "job.json", json.dumps(asdict(job)))

    def jobs(self, owner: str) -> list[Job]:
        out = []
        for d in sorted(self.root.iterdir()):
            try:
                job = self.load(d.name)
            except (KeyError, ValueError, TypeError):
                continue
            if job.owner == owner:
                out.append(job)
        return out

    def active(self, owner: str) -> int:
        return sum(j.state in ("queued", "running") for j in self.jobs(owner))

    # ------------------------------------------------------------ create
    def create(self, *, owner: str, dataset: str, mechanism: str, params: dict,
               fields: list[str], unit_field: str | None, fmt: str, data: bytes) -> Job:
        if fmt not in FORMATS:
            raise DPTextError(f"a job file must be JSONL or CSV, got {fmt!r}")
        job = Job(id=secrets.token_hex(12), owner=owner, dataset=dataset, mechanism=mechanism,
                  params=params, fields=fields, unit_field=unit_field, format=fmt)
        d = self.dir(job.id)
        d.mkdir(mode=0o700)
        (d / f"input.{fmt}").write_bytes(data)
        # check the file before accepting the job: parsable, fields present
        total = 0
        for number, record in enumerate(_records(d / f"input.{fmt}", fmt), start=1):
            missing = [f for f in fields + ([unit_field] if unit_field else [])
                       if f not in record]
            if missing:
                raise DPTextError(f"record {number} has no field {missing[0]!r}")
            total += 1
        job.records_total = total
        self.save(job)
        return job

    # ------------------------------------------------------------ run
    def start(self, job: Job) -> None:
        with self._lock:
            t = self._threads.get(job.id)
            if t is not None and t.is_alive():
                return
            t = threading.Thread(target=self._run_safely, args=(job.id,), daemon=True,
                                 name=f"job-{job.id}")
            self._threads[job.id] = t
            t.start()

    def resume_all(self) -> list[str]:
        """Start every job that was queued or running when the server stopped."""
        started = []
        for d in sorted(self.root.iterdir()):
            try:
                job = self.load(d.name)
            except (KeyError, ValueError, TypeError):
                continue
            if job.state in ("queued", "running"):
                self.start(job)
                started.append(job.id)
        return started

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        t = self._threads.get(job_id)
        if t is not None:
            t.join(timeout)

    def _run_safely(self, job_id: str) -> None:
        import fcntl

        # one process runs a job (several service workers may try to resume it)
        with open(self.dir(job_id) / "lock", "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            self._run_locked(job_id)

    def _run_locked(self, job_id: str) -> None:
        job = self.load(job_id)
        try:
            self._run(job)
        except Exception as err:  # noqa: BLE001 - recorded in the job, never a half output
            job = self.load(job_id)
            job.state, job.error = "failed", " ".join(str(err).split())[:500]
            job.finished = time.time()
            self.save(job)

    def _run(self, job: Job) -> None:
        d = self.dir(job.id)
        progress_path = d / "progress.json"
        progress = (json.loads(progress_path.read_text()) if progress_path.is_file()
                    else {"records": 0, "bytes": 0, "rejects_bytes": 0, "report": None,
                          "released": 0, "withheld": 0, "rejected": 0})
        part, rejects = d / "output.part", d / "rejects.jsonl"
        for path, size in ((part, progress["bytes"]), (rejects, progress["rejects_bytes"])):
            with open(path, "a+b") as f:  # cut back what a killed run wrote after the record
                f.truncate(size)
        job.state = "running"
        self.save(job)
        release = self.ledger.open_release(owner=job.owner, dataset=job.dataset,
                                           mechanism=job.mechanism, params=job.params,
                                           release_key=f"service-job:{job.id}")
        report = (None if progress["report"] is None
                  else _report_from(progress["report"]))
        records = _records(d / f"input.{job.format}", job.format)
        header_written = progress["bytes"] > 0
        batch: list[tuple[int, dict]] = []
        for number, record in enumerate(records):
            if number < progress["records"]:
                continue
            batch.append((number, record))
            if len(batch) == BATCH:
                report = self._batch(job, release, batch, part, rejects, progress, report,
                                     header_written)
                header_written = True
                batch = []
        if batch:
            report = self._batch(job, release, batch, part, rejects, progress, report,
                                 header_written)
        out = d / f"output.{job.format}"
        os.replace(part, out)
        summary = {} if report is None else report.to_dict()
        summary.update(released=progress["released"], withheld=progress["withheld"],
                       rejected=progress["rejected"], release_id=release)
        _fsync_write(d / "report.json", json.dumps(summary, indent=1))
        job = self.load(job.id)
        job.state, job.finished = "done", time.time()
        job.records_done, job.released = progress["records"], progress["released"]
        job.withheld, job.rejected = progress["withheld"], progress["rejected"]
        self.save(job)

    def _batch(self, job: Job, release: str, batch, part: Path, rejects: Path, progress: dict,
               report, header_written: bool):
        texts = [str(record[f]) for _, record in batch for f in job.fields]
        bad = [i for i, (_, r) in enumerate(batch) for f in job.fields
               if not isinstance(r.get(f), str)]
        if bad:
            raise DPTextError(f"record {batch[bad[0]][0] + 1}: a field is not a string")
        results = self.privatize(job.mechanism, job.params, texts)
        n = len(job.fields)
        items, per_record = [], []
        for i, (number, record) in enumerate(batch):
            rs = results[i * n:(i + 1) * n]
            combined = PrivacyReport.combine([r.report for r in rs])
            unit = (str(record[job.unit_field]) if job.unit_field
                    else f"record:{job.id}:{number}")
            items.append((f"{job.id}:{number}", unit, combined.privacy_events()))
            per_record.append((number, record, rs, combined))
        decisions = self.ledger.reserve(release, items)  # charged before anything is written
        lines, reject_lines, allowed_ids = [], [], []
        for (number, record, rs, combined), decision in zip(per_record, decisions, strict=True):
            if not decision.allowed:
                progress["withheld"] += 1
                reject_lines.append(json.dumps({"record": number + 1, "reason": decision.reason},
                                               ensure_ascii=True) + "\n")
                continue
            if decision.charge_id is not None:
                allowed_ids.append(decision.charge_id)
            new = dict(record)
            for f, r in zip(job.fields, rs, strict=True):
                new[f] = r.text
            lines.append(new)
            report = combined if report is None else PrivacyReport.combine([report, combined])
            progress["released"] += 1
        with open(part, "ab") as f:
            if job.format == "jsonl":
                f.write("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in lines).encode())
            else:
                buf = io.StringIO(newline="")
                names = list(batch[0][1].keys())
                writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
                if not header_written:
                    writer.writeheader()
                writer.writerows(lines)
                f.write(buf.getvalue().encode())
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
        with open(rejects, "ab") as f:
            f.write("".join(reject_lines).encode())
            f.flush()
            os.fsync(f.fileno())
            rsize = f.tell()
        progress.update(records=batch[-1][0] + 1, bytes=size, rejects_bytes=rsize,
                        report=None if report is None else _report_state(report))
        _fsync_write(part.parent / "progress.json", json.dumps(progress))
        self.ledger.commit(release, allowed_ids)  # released only once the batch is durable
        job = self.load(job.id)
        job.records_done, job.released, job.withheld = (progress["records"],
                                                        progress["released"],
                                                        progress["withheld"])
        self.save(job)
        return report


def _guarantee_state(g: TokenGuarantee) -> list:
    return [g.kind.value, g.epsilon, g.scope, g.metric, g.diameter]


def _report_state(report: PrivacyReport) -> dict:
    """A running report as plain JSON (restored by :func:`_report_from` after a restart)."""
    return {"mechanism": report.mechanism, "per_token": _guarantee_state(report.per_token),
            "events": [[_guarantee_state(e.guarantee), e.count, e.reason]
                       for e in report.events],
            "records": report.records, "max_record_epsilon": report.max_record_epsilon}


def _report_from(state: dict) -> PrivacyReport:
    def guarantee(g: list) -> TokenGuarantee:
        return TokenGuarantee(GuaranteeKind(g[0]), g[1], g[2], g[3], g[4])

    return PrivacyReport(state["mechanism"], guarantee(state["per_token"]),
                         [TokenEvent(guarantee(g), c, r) for g, c, r in state["events"]],
                         records=state["records"],
                         max_record_epsilon=state["max_record_epsilon"])
