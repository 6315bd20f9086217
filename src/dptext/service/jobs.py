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
    # the columns that are not privatized (corpus/columns.py): each named once, or keep_other
    keep: list[str] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    hash: list[str] = field(default_factory=list)
    keep_other: bool = False
    entities: dict | None = None  # entity mode's options (service/entities.py), else None
    state: str = "queued"
    records_total: int = 0
    records_done: int = 0
    released: int = 0
    withheld: int = 0
    rejected: int = 0
    error: str | None = None
    created: float = field(default_factory=time.time)
    finished: float | None = None
    summary: str | None = None  # the plain text report (corpus/text_report.py), once done
    columns: dict | None = None  # the report's columns section, once done
    leak_check: dict | None = None  # entity mode: dptext.deid.check on the release, once done

    def public(self) -> dict:
        d = asdict(self)
        d["progress"] = (self.records_done / self.records_total) if self.records_total else 0.0
        return d


def _write(path: Path, data: str) -> None:
    from dptext.io import atomic_write

    with atomic_write(path, "w", durable=True, encoding="utf-8") as f:
        f.write(data)


def read_columns(path: Path, fmt: str, fields: list[str]) -> tuple[list[str], list, int]:
    """The columns of an uploaded file (the CSV header, the keys of the first JSONL records),
    the first record's values (for the page), and the number of records, read as the engine
    will read it (a file that does not parse is an error here, before any job)."""
    from dptext.corpus.columns import peek_columns
    from dptext.corpus.records import RecordReader
    from dptext.corpus.sources import expand

    source = expand(str(path), fmt)[0]
    reader = RecordReader(source, fields)
    columns = peek_columns(reader, fmt)
    first, total = None, 0
    for record in RecordReader(source, fields):
        total += 1
        if first is None:
            first = record.payload
    if isinstance(first, dict):
        examples = [first.get(c) for c in columns]
    elif isinstance(first, list):
        examples = list(first) + [None] * (len(columns) - len(first))
    else:
        examples = [None] * len(columns)
    return columns, examples, total


class JobStore:
    """Jobs of every owner under ``root``; ``run(job)`` works through a job in a thread."""

    def __init__(self, root: Path, *, mechanisms, ledger, max_per_owner: int,
                 pseudonym_key=None) -> None:
        """``mechanisms``: ``(name, params, entities=None) -> fitted Mechanism`` (the
        service's shared pool); ``ledger``: the service's :class:`~dptext.ledger.Ledger`;
        ``pseudonym_key``: ``() -> bytes`` - the key of hashed columns (made on first use)."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.mechanisms, self.ledger = mechanisms, ledger
        self.pseudonym_key = pseudonym_key
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
        """``output``, ``rejects``, ``report`` or ``html`` (the release report a reviewer
        reads, :mod:`dptext.corpus.report_html`) of a job (KeyError for anything else)."""
        name = {"output": f"output.{job.format}", "rejects": "rejects.jsonl",
                "report": "report.json", "html": "report.html"}[what]
        return self.dir(job.id) / name

    def scrub(self, message: str, job: Job, name: str = "the file") -> str:
        """``message`` without a path of the server (issue 47 N7): the upload's path becomes
        the client's file name, any other path under the data directory ``the job's files``."""
        for path, say in ((self.input_path(job), name), (self.dir(job.id), "the job's files"),
                          (self.root, "the job's files")):
            for form in {str(path), str(path.resolve())}:
                message = message.replace(form, say)
        return message

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
               fields: list[str], unit_field: str | None, fmt: str, data: bytes,
               keep: list[str] = (), drop: list[str] = (), hash: list[str] = (),
               keep_other: bool = False, entities: dict | None = None,
               name: str = "the file") -> Job:
        """Keep the upload and its job, after checking that the file parses and that every
        column is named (``name``: the client's file name, for the error message)."""
        if fmt not in FORMATS:
            raise DPTextError(f"a job file must be JSONL or CSV, got {fmt!r}")
        job = Job(id=secrets.token_hex(12), owner=owner, dataset=dataset, mechanism=mechanism,
                  params=params, fields=fields, unit_field=unit_field, format=fmt,
                  keep=list(keep), drop=list(drop), hash=list(hash), keep_other=keep_other,
                  entities=entities)
        plan = self.columns_plan(job)  # two roles for one column: an error before any write
        d = self.dir(job.id)
        d.mkdir(mode=0o700)
        path = self.input_path(job)
        path.write_bytes(data)
        try:  # check the file before accepting the job: parsable, every column named
            columns, _, job.records_total = read_columns(path, fmt, fields)
            if columns:
                plan.check(columns, name)
        except BaseException as err:
            import shutil

            shutil.rmtree(d, ignore_errors=True)
            if isinstance(err, DPTextError):  # the client's file name, never the server's path
                raise DPTextError(self.scrub(str(err), job, name)) from None
            raise
        self.save(job)
        return job

    def columns_plan(self, job: Job):
        """The job's :class:`~dptext.corpus.columns.ColumnPlan` (the pseudonym key mixed
        with the owner: one owner's pseudonyms are stable across its jobs, another owner's
        differ)."""
        from dptext.corpus.columns import ColumnPlan

        key = self.pseudonym_key() if job.hash and self.pseudonym_key is not None else None
        return ColumnPlan.make(job.fields, keep=job.keep, drop=job.drop, hash=job.hash,
                               keep_other=job.keep_other, user_field=job.unit_field, key=key,
                               owner=job.owner)

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
            job.state, job.error = "failed", " ".join(self.scrub(str(err), job).split())[:500]
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
            summary = json.loads(report.read_text(encoding="utf-8"))
            self._done(job, summary, None)
            return

        corpus_job = CorpusJob(
            mechanism=self.mechanisms(job.mechanism, job.params, entities=job.entities),
            input=str(self.input_path(job)), input_format=job.format,
            output=str(self.output_path(job, "output")),
            report=str(self.output_path(job, "report")),
            rejects=str(self.output_path(job, "rejects")),
            fields=list(job.fields), user_field=job.unit_field, on_error="skip",
            columns=self.columns_plan(job),
            ledger=self.ledger, owner=job.owner, dataset=job.dataset,
            parameters=job.params, spec=(job.mechanism, job.params),
            batch_size=BATCH_RECORDS, shard_records=SHARD_RECORDS,
            shard_seconds=SHARD_SECONDS, on_commit=committed)
        result = prepare(corpus_job).run()
        self._done(job, result.summary, result.report)

    def _done(self, job: Job, summary: dict, report) -> None:
        from dptext.corpus.text_report import (
            columns_line,
            counts_line,
            text_report,
            unit_column_line,
            units_line,
        )

        rejects = self.output_path(job, "rejects")
        if not rejects.exists():  # always downloadable, empty when nothing was left out
            _write(rejects, "")
        counts = {k: summary[k] for k in ("records_in", "records", "records_rejected",
                                          "records_withheld")}
        if report is not None:
            lines = text_report(report, summary, job.unit_field, counts)
        else:  # finished before a kill: the report object is gone, its file says the rest
            lines = [line for line in (units_line(summary, job.unit_field),
                                       columns_line(summary),
                                       unit_column_line(summary, job.unit_field),
                                       counts_line(counts)) if line]
        leak = self._leak_check(job) if job.entities is not None else None
        from dptext.corpus.report_html import write_report_html

        write_report_html(self.output_path(job, "report"), self.output_path(job, "html"),
                          output=self.output_path(job, "output"), rejects=rejects,
                          fields=job.fields, leak_check=leak)
        job = self.load(job.id)
        job.state, job.finished = "done", time.time()
        job.records_done = summary["records_in"]
        job.released, job.withheld = summary["records"], summary["records_withheld"]
        job.rejected = summary["records_rejected"]
        job.summary, job.columns = "\n".join(lines), summary.get("columns")
        job.leak_check = leak
        self.save(job)

    def _leak_check(self, job: Job) -> dict:
        """dptext.deid.check over the release: every identifier the detectors find in an
        uploaded record (the job's categories, recognizers, patterns, deny list, the residual
        net) looked up in its released record; records left out (rejects) are ``missing``."""
        from dptext.deid.check import check_records, read_records
        from dptext.detect.categories import resolve_categories
        from dptext.detect.entities import EntityDetector
        from dptext.detect.recognizers import (
            DenyListRecognizer,
            builtin_recognizers,
            parse_pattern,
        )
        from dptext.detect.residual import ResidualNet

        opts = job.entities
        user = [parse_pattern(p) for p in opts["patterns"]]
        if opts["deny_list"]:
            user.append(DenyListRecognizer("deny-list", "DENY_LIST", entries=opts["deny_list"]))
        allow = frozenset(opts["allow_list"])
        categories = resolve_categories(opts["entities"]) | frozenset(r.category for r in user)
        detector = EntityDetector(categories, opts["detector"],
                                  builtin_recognizers() + tuple(user), allow)
        original = read_records(self.input_path(job), job.fields)
        released = iter(read_records(self.output_path(job, "output"), job.fields))
        left_out = set()
        for line in self.output_path(job, "rejects").read_text(encoding="utf-8").splitlines():
            if line.strip():
                left_out.add(int(json.loads(line)["record"]) - 1)
        pairs = ((i, texts, None if i in left_out else next(released)[1])
                 for i, (_, texts) in enumerate(original))
        result = check_records(pairs, detector, ResidualNet(allow))
        return {"ran": True, "records": result.records, "compared": result.compared,
                "missing": result.missing, "leaks": result.leaks,
                "by_category": dict(sorted(result.by_category.items())),
                "leaking_records": result.leaking_records}

