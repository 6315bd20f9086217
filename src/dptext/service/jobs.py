"""File jobs: an uploaded JSONL or CSV file privatized in the background by the library's
corpus engine (:mod:`dptext.corpus`), with every record charged to its privacy unit in the
ledger before its output becomes durable, and resumed after a restart.

A job lives in its own directory (``<data>/jobs/<id>/``, the id random). The uploaded file is
stored as ``<id>.jsonl`` / ``<id>.csv`` whatever it was called, so no file name from a client
reaches the file system, and the engine's record keys (``<id>.jsonl#<n>``) - and, without a
unit field, the record-level privacy units - are unique to the job. ``job.json`` is the
job's state (what ``GET /v1/jobs/{id}`` shows). The engine commits the output in shards of
``SHARD_RECORDS`` records (or every ``SHARD_SECONDS``) in ``output.<fmt>.partial/`` with a
manifest; ``records_done`` is the number of records in committed shards. A server killed at any
point continues the job on restart from the last committed shard: the engine's release key is
derived from the job's identity, so the resumed run continues the same ledger release and
``reserve`` answers "already decided" for every record charged before the kill - no record is
charged twice, none is released uncharged (docs/scale.md, "Resume"). Records that cannot be
privatized (a field that is not a string) and records withheld by a unit's budget go to
``rejects.jsonl`` with the reason (``on_error="skip"``); the report is the engine's.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dptext.errors import DPTextError

FORMATS = ("jsonl", "csv")
STATES = ("queued", "running", "done", "failed")
BATCH_RECORDS = 64  # records per batch (one ledger transaction each)
SHARD_RECORDS = 256  # progress and resume granularity
SHARD_SECONDS = 2.0


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


def _write(path: Path, data: str) -> None:
    from dptext.corpus.paths import write_durably

    write_durably(path, data.encode("utf-8"))


def _count_records(path: Path, fmt: str, fields: list[str], unit_field: str | None) -> int:
    """Records in an uploaded file, read as the engine will read it; a record without a named
    field is an error before the job is accepted."""
    from dptext.corpus.records import RecordReader
    from dptext.corpus.sources import expand

    source = expand(str(path), fmt)[0]
    names = fields + ([unit_field] if unit_field else [])
    total = 0
    for record in RecordReader(source, names):  # a CSV without a named column fails here
        total += 1
        if isinstance(record.payload, dict):
            missing = [f for f in names if f not in record.payload]
            if missing:
                raise DPTextError(f"record {total} (line {record.line}) has no field "
                                  f"{missing[0]!r}")
    return total


class JobStore:
    """Jobs of every owner under ``root``; ``run(job)`` works through a job in a thread."""

    def __init__(self, root: Path, *, mechanisms, ledger, max_per_owner: int) -> None:
        """``mechanisms``: ``(name, params) -> fitted Mechanism`` (the service's shared
        pool); ``ledger``: the service's :class:`~dptext.ledger.Ledger`."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.mechanisms, self.ledger = mechanisms, ledger
        self.max_per_owner = max_per_owner
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    # ------------------------------------------------------------ state
    def dir(self, job_id: str) -> Path:
        if not job_id.isalnum():
            raise KeyError(job_id)
        return self.root / job_id

    def input_path(self, job: Job) -> Path:
        return self.dir(job.id) / f"{job.id}.{job.format}"

    def output_path(self, job: Job, what: str) -> Path:
        """``output``, ``rejects`` or ``report`` of a job (KeyError for anything else)."""
        name = {"output": f"output.{job.format}", "rejects": "rejects.jsonl",
                "report": "report.json"}[what]
        return self.dir(job.id) / name

    def load(self, job_id: str) -> Job:
        path = self.dir(job_id) / "job.json"
        if not path.is_file():
            raise KeyError(job_id)
        return Job(**json.loads(path.read_text(encoding="utf-8")))

    def save(self, job: Job) -> None:
        _write(self.dir(job.id) / "job.json", json.dumps(asdict(job)))

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
        path = self.input_path(job)
        path.write_bytes(data)
        try:  # check the file before accepting the job: parsable, fields present
            job.records_total = _count_records(path, fmt, fields, unit_field)
        except BaseException:
            import shutil

            shutil.rmtree(d, ignore_errors=True)
            raise
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
        from dptext.corpus import CorpusJob, prepare
        from dptext.corpus.jobdir import finished

        job.state = "running"
        self.save(job)

        def committed(counts: dict) -> None:  # after every durable shard
            j = self.load(job.id)
            j.records_done, j.released = counts["records_in"], counts["records_out"]
            j.withheld, j.rejected = counts["withheld"], counts["rejected"]
            self.save(j)

        output, report = self.output_path(job, "output"), self.output_path(job, "report")
        if finished(output, report):
            # the engine committed everything before a kill: finish the job, draw nothing
            self._done(job, json.loads(report.read_text(encoding="utf-8")))
            return

        corpus_job = CorpusJob(
            mechanism=self.mechanisms(job.mechanism, job.params),
            input=str(self.input_path(job)), input_format=job.format,
            output=str(self.output_path(job, "output")),
            report=str(self.output_path(job, "report")),
            rejects=str(self.output_path(job, "rejects")),
            fields=list(job.fields), user_field=job.unit_field, on_error="skip",
            ledger=self.ledger, owner=job.owner, dataset=job.dataset,
            parameters=job.params, spec=(job.mechanism, job.params),
            batch_size=BATCH_RECORDS, shard_records=SHARD_RECORDS,
            shard_seconds=SHARD_SECONDS, on_commit=committed)
        result = prepare(corpus_job).run()
        self._done(job, result.summary)

    def _done(self, job: Job, summary: dict) -> None:
        rejects = self.output_path(job, "rejects")
        if not rejects.exists():  # always downloadable, empty when nothing was left out
            _write(rejects, "")
        job = self.load(job.id)
        job.state, job.finished = "done", time.time()
        job.records_done = summary["records_in"]
        job.released, job.withheld = summary["records"], summary["records_withheld"]
        job.rejected = summary["records_rejected"]
        self.save(job)

