"""The corpus engine's driver: read records, privatize their fields in batches, commit
shards, resume.

:class:`~dptext.corpus.job.CorpusJob` describes a job; :func:`run` runs it. The CLI
(``dptext sanitize``), the Python API (:func:`dptext.sanitize`) and other jobs all come here.

The order of one batch (docs/scale.md): records are cut into batches by the reader
(``batch_size`` consecutive records of one source; for plain text and JSONL as byte ranges the
driver never decodes); an executor's worker reads the batch, privatizes its texts with the
batch's own generator, encodes each record's output line (a record that cannot be written
strictly is rejected) and returns the bytes with the batch's report; in the driver, the ledger
reserves the records' charges and the fold (:mod:`dptext.corpus.fold`) keeps what is released
for the open shard (withheld records are rejected with the ledger's reason). A shard is
committed (fsync, rename, manifest: :mod:`dptext.corpus.shards`) every ``shard_records``
records or ``shard_seconds`` seconds; then the ledger commits its charges. The final output is
assembled from the shards and renamed into place together with the report, the provenance
manifest and the rejects.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from dptext.accounting.report import PrivacyReport
from dptext.corpus import budget as budget_mod
from dptext.corpus import charging
from dptext.corpus import shards as shards_mod
from dptext.corpus.aggregate import JobAggregate, UnitTotals
from dptext.corpus.columns import COLUMN_ROLES, plan_columns
from dptext.corpus.draws import job_draw_key, shared_draws
from dptext.corpus.executors import EXECUTORS, LOCAL, Executor, ExecutorSetup, engines
from dptext.corpus.fold import Fold
from dptext.corpus.job import (
    LM_SHARD,
    ON_ERROR,
    WORD_SHARD,
    CorpusJob,
    JobResult,
    ResumableError,
    default_batch_size,
    dptext_version,
    mechanism_parameters,
    now,
    tables_fingerprint,
)
from dptext.corpus.paths import (
    OutputPlan,
    remove_stale_temps,
)
from dptext.corpus.randomness import check_seed, seed_description
from dptext.corpus.ranges import RANGE_FORMATS, scan
from dptext.corpus.records import TEXT_FIELD, Record, RecordReader
from dptext.corpus.shards import Shard
from dptext.corpus.sources import Source, expand
from dptext.corpus.stream import run_stream
from dptext.corpus.work import BatchResult, BatchTask, JobLayout
from dptext.corpus.workdir import RELEASE, WorkDir, changed_input, changed_settings
from dptext.corpus.writers import RecordWriter, output_format
from dptext.errors import DPTextError, ParameterError
from dptext.mechanisms.word import WordMechanism
from dptext.targeted import TargetedMechanism


def prepare(job: CorpusJob) -> Driver:
    """Check everything about ``job`` that can be checked before any work (options, every
    input readable and of one format, every output path); ``.run()`` then runs it."""
    return Driver(job)


def run(job: CorpusJob) -> JobResult:
    """Run (or continue) ``job``; see the module docstring."""
    return Driver(job).run()


# ====================================================================== runner
class Driver:
    def __init__(self, job: CorpusJob) -> None:
        self.job = job
        j = job
        if isinstance(j.fields, str):
            j.fields = [f.strip() for f in j.fields.split(",")]
        self.fields = list(j.fields)
        if not self.fields or not all(isinstance(f, str) and f for f in self.fields):
            raise ParameterError("give at least one field name (`fields`)")
        dup = {f for f in self.fields if self.fields.count(f) > 1}
        if dup:
            raise DPTextError(f"field {sorted(dup)[0]!r} given twice: it can be privatized "
                              f"only once")
        if j.on_error not in ON_ERROR:
            raise ParameterError(f"`on_error` must be one of {', '.join(ON_ERROR)}, "
                                 f"got {j.on_error!r}")
        if j.engine not in engines():
            raise ParameterError(f"`engine` must be one of {', '.join(engines())}, got "
                                 f"{j.engine!r}")
        for name, value in (("workers", j.workers), ("batch_size", j.batch_size),
                            ("shard_records", j.shard_records),
                            ("max_record_bytes", j.max_record_bytes),
                            ("torch_threads", j.torch_threads)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise DPTextError(f"{name} must be an integer >= 1, got {value!r}")
        self.seed = check_seed(j.seed)
        self.skip = j.on_error == "skip"
        self.m = j.mechanism
        self.word = isinstance(self.m, WordMechanism)
        self.batch_size = j.batch_size or default_batch_size(self.m)
        self.shard_records = j.shard_records or (WORD_SHARD if self.word else LM_SHARD)

        self.sources = expand(j.input, j.input_format)
        self.in_fmt = self.sources[0].fmt
        if self.in_fmt == "txt":
            if self.fields != [TEXT_FIELD]:
                raise ParameterError(f"plain-text input has no fields (one record per line): "
                                     f"`fields` {','.join(self.fields)} cannot be honoured")
            if j.user_field:
                raise ParameterError("plain-text input has no fields: `user_field` cannot be "
                                     "honoured")
        if j.user_field and j.user_field in self.fields:
            raise ParameterError(f"`user_field` {j.user_field!r} is also a privatized field")
        self.out_fmt = output_format(j.output, self.in_fmt, j.output_format)
        self.columns, self.columns_seen = plan_columns(j, self.fields, self.in_fmt,
                                                       self.sources[0])
        self.writer = RecordWriter(self.in_fmt, self.out_fmt, self.fields, self.columns)
        if j.output == "-" and self.skip and not j.rejects:
            raise ParameterError("`on_error` skip with `output` - needs `rejects` FILE")
        inputs = [s.path for s in self.sources if s.path is not None]
        if j.input != "-" and Path(j.input).is_dir():
            inputs.append(Path(j.input))
        self.plan = OutputPlan.make(j.output, report=j.report, rejects=j.rejects,
                                    inputs=inputs, output_dir=j.output_dir)
        if j.output_dir and self.plan.output.is_dir() and any(self.plan.output.iterdir()) \
                and not (self.plan.output / "_provenance.json").is_file():
            raise ParameterError(f"`output_dir` {self.plan.output} exists and is not empty "
                                 f"(and is not a dptext output); give a new directory")
        if j.budget is not None and j.ledger is None:
            raise ParameterError("`budget` needs `ledger`")
        if j.once and j.ledger is None:
            raise ParameterError("`once` needs `ledger`")
        if j.ledger is not None and not (j.owner and j.dataset):
            raise ParameterError("`ledger` needs `owner` and `dataset`")
        self.units_tracked = j.user_field is not None or j.ledger is not None
        self.agg = JobAggregate(self.fields)
        # --consistent unit: one draw per entity per person, keyed (corpus/draws.py)
        self.draws = shared_draws(self.m, j.user_field)
        self.draw_key: bytes | None = None
        self.fold = Fold(self.fields, self.sources, self.out_fmt == "parquet", self.units_tracked,
                         self.draws)
        self.started = now()
        self.schema = None
        self._pending_in = 0
        self._pool = None  # what the executor started before the mechanism loaded, if anything

    # ------------------------------------------------------------------ identity
    def settings(self) -> dict:
        j = self.job
        return {
            "mechanism": self.m.name,
            "parameters": mechanism_parameters(self.m, j.parameters),
            "tables": tables_fingerprint(self.m),
            "fields": self.fields, "input_format": self.in_fmt, "output_format": self.out_fmt,
            "output_dir": j.output_dir, "batch_size": self.batch_size,
            "seed": seed_description(self.seed), "on_error": j.on_error,
            "max_record_bytes": j.max_record_bytes, "user_field": j.user_field,
            "columns": None if self.columns is None else {
                **{r: list(self.columns.columns(r)) for r in COLUMN_ROLES},
                "keep_other": self.columns.keep_other},
            "ledger": None if j.ledger is None else [j.owner, j.dataset],
        }

    # ------------------------------------------------------------------ reading
    def _batches(self, start: int) -> Iterator[BatchTask]:
        """The task of every batch from ``start`` on. Plain-text and JSONL files are cut into
        byte ranges without decoding them (the workers read their own ranges); other inputs
        are read here and their records travel in the tasks. Earlier batches are skipped."""
        batch_id = 0
        j = self.job
        for s_index, source in enumerate(self.sources):
            if source.fmt in RANGE_FORMATS and source.path is not None:
                for rng in scan(source.path, source.fmt, self.batch_size):
                    if batch_id >= start:
                        yield BatchTask(batch_id, s_index, range=rng)
                    batch_id += 1
                continue
            reader = RecordReader(source, self.fields, max_record_bytes=j.max_record_bytes)
            records: list[Record] = []
            header_done = False
            for record in reader:
                if not header_done:
                    self._note_header(reader, source)
                    header_done = True
                records.append(record)
                if len(records) == self.batch_size:
                    if batch_id >= start:
                        yield BatchTask(batch_id, s_index, records=records,
                                        header=self.writer.header)
                    batch_id += 1
                    records = []
            if not header_done:
                self._note_header(reader, source)
            if records:
                if batch_id >= start:
                    yield BatchTask(batch_id, s_index, records=records, header=self.writer.header)
                batch_id += 1

    def _note_header(self, reader: RecordReader, source: Source) -> None:
        self.writer.set_header(reader.header, source.name)
        if reader.schema is not None and self.schema is None:
            self.schema = reader.schema if self.columns is None \
                else self.columns.output_schema(reader.schema)

    # ------------------------------------------------------------------ executors
    def _layout(self) -> JobLayout:
        j = self.job
        if self.draws is not None and self.draw_key is None:  # streaming: no work directory
            self.draw_key = job_draw_key(None, self.seed)
        return JobLayout(self.sources, self.fields, self.in_fmt, self.out_fmt, self.seed,
                         self.skip, j.max_record_bytes, j.user_field,
                         ledger=j.ledger is not None, units=self.units_tracked,
                         columns=self.columns, draw_key=self.draw_key)

    def _executor_name(self) -> str:
        """The job's executor in :data:`~dptext.corpus.executors.EXECUTORS`: the local engine's
        ``inline`` (one worker) or ``process``, else the engine's own name."""
        j = self.job
        if j.engine != "local":
            return j.engine
        return LOCAL[0] if j.workers == 1 else LOCAL[1]

    def _setup(self, shared_dir: Path | None = None,
               close_fds: tuple[int, ...] = ()) -> ExecutorSetup:
        j = self.job
        return ExecutorSetup(self.m, None, j.workers, j.torch_threads, self.word, spec=j.spec,
                             shared_dir=shared_dir, close_fds=close_fds, started=self._pool,
                             before_fork=self._share_search)

    def _executor(self, shared_dir: Path | None, close_fds: tuple[int, ...] = ()) -> Executor:
        """The job's executor (built by name); ``close_fds``: the driver's descriptors a forked
        worker closes (the work directory's lock, which a worker must not hold if the driver
        dies)."""
        setup = self._setup(shared_dir, close_fds)
        setup.layout = self._layout()
        return EXECUTORS[self._executor_name()].build(setup)

    def _share_search(self) -> None:
        """Build a nearest-word search (the Laplace family's, on the CPU: a 78 MB matrix over
        the default space) here before forking, so that the workers share one copy of it
        instead of each building its own (about 0.3 s of CPU and 78 MB a worker)."""
        nearest = getattr(self.m, "nearest", None)
        if callable(nearest) and getattr(self.m, "device", "cpu") == "cpu":
            import numpy as np

            nearest(np.empty((0, self.m.space.dim)))

    def _start_pool(self) -> None:
        """Start what the executor starts before the mechanism loads (spawned worker
        processes import meanwhile; :meth:`Executor.prepare`)."""
        if self._pool is None:
            self._pool = EXECUTORS[self._executor_name()].prepare(self._setup())

    # ------------------------------------------------------------------ one batch
    def _charged(self, results: Iterator[BatchResult]) -> Iterator[tuple[BatchResult, Any]]:
        """Each batch result with its ledger decisions, reserved (in groups, in a writer
        thread: :mod:`dptext.corpus.charging`) before the batch is handed on to be written."""
        return charging.charged(results, self.ledger, draws=self.draws)

    def _process(self, out: BatchResult, shard: Shard, decisions: Sequence | None = None
                 ) -> bytes | list[dict]:
        """The bytes (or Parquet rows) of the batch to write: :class:`~dptext.corpus.fold.Fold`."""
        return self.fold(self.agg, out, shard, self.ledger, decisions)

    # ------------------------------------------------------------------ the run
    def run(self) -> JobResult:
        try:
            if self.plan.workdir is None:
                return self._run_stream()
            return self._run_sharded()
        finally:
            if self._pool is not None:
                self._pool.close()

    def _ledger_session(self, release_key: str | None, job_key: str | None = None):
        j = self.job
        if j.ledger is None:
            return None
        return budget_mod.LedgerSession(
            j.ledger, owner=j.owner, dataset=j.dataset, mechanism=self.m.name,
            params=mechanism_parameters(self.m, j.parameters), release_key=release_key,
            job_key=job_key, once=j.once, budget=j.budget, budget_delta=j.budget_delta)

    def _progress(self, initial: int):
        if not self.job.progress:
            return None
        from tqdm import tqdm

        return tqdm(unit=" records", desc=f"sanitize ({self.m.name})", initial=initial,
                    dynamic_ncols=True)

    def _fit(self) -> None:
        # a word mechanism is fitted here and shared with the workers; another one is fitted
        # where it runs: here when it runs inline, in each worker otherwise (attach)
        inline = self._executor_name() == "inline"
        if (self.word or inline) and not self.m.is_fitted:
            self.m.fit()
        elif isinstance(self.m, TargetedMechanism):  # its word mechanism is shared fitted
            inner = self.m.mechanism
            if isinstance(inner, WordMechanism) and not inner.is_fitted:
                inner.fit()

    def _per_token(self):
        try:
            return self.m.guarantee
        except Exception:  # an LM mechanism built only in the workers
            from dptext.accounting.events import GuaranteeKind, TokenGuarantee

            return TokenGuarantee(GuaranteeKind.NONE)

    # ---------------------------------------------------------- sharded (file output)
    def _run_sharded(self) -> JobResult:
        j, plan = self.job, self.plan
        wd = WorkDir(plan.workdir)
        wd.open()
        try:
            manifest = wd.read()
            if manifest is not None and manifest.get("state") == "committing":
                shards_mod.apply_commit(manifest["commit"])
                wd.remove()
                return self._result_from(manifest)
            for _, target in plan.targets():
                if target != plan.workdir:
                    remove_stale_temps(target)
            self._start_pool()
            self._fit()
            settings = self.settings()
            fingerprints = [s.fingerprint() for s in self.sources]
            if manifest is not None and j.resume is False:
                manifest = None
                wd.clean(None)
                (wd.path / RELEASE).unlink(missing_ok=True)  # --restart: a new release
            if manifest is not None:
                change = changed_input(manifest["inputs"], fingerprints)
                if change is not None:
                    raise DPTextError(
                        f"cannot resume {plan.workdir}: {change} since the interrupted run; "
                        f"restore it, or start again with --restart")
                key = changed_settings(manifest["settings"], settings)
                if key is not None:
                    raise DPTextError(
                        f"cannot resume {plan.workdir}: it was started with another {key}; "
                        f"rerun the same command to continue, or start again with --restart")
            elif j.resume:
                raise ParameterError(f"`resume`: there is no interrupted run of this job "
                                     f"({plan.workdir} has no manifest)")
            else:
                manifest = {"settings": settings, "inputs": fingerprints, "shards": [],
                            "next_batch": 0, "aggregate": None, "started": self.started,
                            "ledger_committed": 0, "header": None}
            wd.clean(manifest)
            if self.draws is not None:  # kept for a resume, never released
                self.draw_key = job_draw_key(wd.path, self.seed)
                for shard in manifest["shards"]:  # the draws the committed shards paid for
                    self.draws.add(shards_mod.read_paid(wd.path, shard))
            self.manifest = manifest
            if manifest["aggregate"] is not None:
                self.agg = JobAggregate.from_state(self.fields, manifest["aggregate"])
            if manifest.get("header") and self.in_fmt == "csv":
                self.writer.set_header(manifest["header"], self.sources[0].name)
            self.started = manifest["started"]
            self.units = UnitTotals(plan.workdir / "units.sqlite", j.user_field)
            self.units.keep_shards_below(len(manifest["shards"]))
            # the release: a resume continues the one its manifest names (a manifest of an
            # older dptext: the key it derived); any other run is a new release (issue 32)
            job_key = hashlib.sha256(json.dumps([settings, fingerprints], sort_keys=True)
                                     .encode()).hexdigest()
            if manifest.get("release_key"):
                self.ledger = self._ledger_session(manifest["release_key"])
            elif manifest["shards"] or manifest["next_batch"]:
                self.ledger = self._ledger_session(hashlib.sha256(json.dumps(
                    [settings, fingerprints, str(plan.output.resolve())],
                    sort_keys=True).encode()).hexdigest())
            else:  # a run killed before its first shard is continued (release.json)
                earlier = wd.read_release()
                adopt = earlier is not None and earlier.get("job_key") == job_key
                self.ledger = self._ledger_session(earlier["release_key"] if adopt else None,
                                                   job_key)
                if self.ledger is not None and not adopt:
                    wd.write_release(self.ledger.release_key, job_key)
            if self.ledger is not None:
                manifest["release_key"] = self.ledger.release_key
            self._commit_pending_charges(wd)
            resumed = self.agg.counts["records_in"]
            try:
                self._loop(wd)
                self._finish(wd)
            except DPTextError as err:
                if isinstance(err, ResumableError):
                    raise
                wd.remove()  # bad data: fixing it changes the input, so nothing to resume
                raise
            except OSError as err:
                raise self._resumable(err) from None
            return self._result_from(self.manifest, resumed)
        finally:
            if wd.path.is_dir() and not (wd.path / "manifest.json").is_file() and not (
                    wd.path / RELEASE).is_file():
                wd.remove()  # nothing was committed or charged: nothing to resume
            wd.close()

    def _resumable(self, err: OSError) -> ResumableError:
        done = len(self.manifest["shards"])
        records = self.agg.counts["records_in"]
        what = err.strerror or str(err)
        where = f" writing {err.filename}" if err.filename else ""
        return ResumableError(
            f"{what}{where}; {done} shards ({records} records) are saved in "
            f"{self.plan.workdir}: free space (or fix the cause) and rerun the same command "
            f"to continue")

    def _commit_pending_charges(self, wd: WorkDir) -> None:
        m = self.manifest
        if self.ledger is None:
            return
        for shard in m["shards"][m["ledger_committed"]:]:
            if shard.get("charges"):
                ids = json.loads((wd.path / shard["charges"]).read_text(encoding="utf-8"))
                self.ledger.commit(ids)
        if m["ledger_committed"] != len(m["shards"]):
            m["ledger_committed"] = len(m["shards"])
            wd.write(m)

    def _loop(self, wd: WorkDir) -> None:
        m = self.manifest
        shared_dir = wd.path / "shared"
        executor = None
        shard = None
        bar = None
        last_log = time.monotonic()
        try:
            # before the progress bar (tqdm's monitor thread would keep the workers from forking)
            executor = self._executor(shared_dir, close_fds=wd.lock_fds())
            bar = self._progress(self.agg.counts["records_in"])
            shard = self._new_shard(wd)
            for out, decisions in self._charged(executor.map(self._batches(m["next_batch"]))):
                payload = self._process(out, shard, decisions)
                if self.out_fmt == "parquet":
                    shard.rows.extend(payload)
                elif payload:
                    shard.write(payload)
                shard.batches += 1
                self._batch_done(out.records_in)
                if bar is not None:
                    bar.update(out.records_in)
                if (shard.records + shard.rejected >= self.shard_records
                        or time.monotonic() - shard.started >= self.job.shard_seconds):
                    self._commit_shard(wd, shard)
                    shard = self._new_shard(wd)
                    if self.job.log and time.monotonic() - last_log > 30:
                        last_log = time.monotonic()
                        self.job.log(f"dptext: {self.agg.counts['records_in']} records done, "
                                     f"committed in {len(m['shards'])} shards")
            if shard.batches:
                self._commit_shard(wd, shard)
            else:
                shard.discard()
            shard = None
        except BaseException:
            if shard is not None:
                shard.discard()
            raise
        finally:
            if bar is not None:
                bar.close()
            if executor is not None:
                executor.close()

    def _batch_done(self, n: int) -> None:
        self._pending_in += n

    def _new_shard(self, wd: WorkDir) -> Shard:
        index = len(self.manifest["shards"])
        return Shard(index, self.manifest["next_batch"], wd.path, self.out_fmt, self.schema)

    def _commit_shard(self, wd: WorkDir, shard: Shard) -> None:
        m = self.manifest
        entry = shards_mod.seal(shard, wd.path, self.out_fmt,
                                None if self.ledger is None else self.ledger.release_id)
        if shard.units:
            self.units.add(shard.index, shard.units)
        counts = self.agg.counts
        counts["records_in"] += self._pending_in
        counts["records_out"] += shard.records
        counts["rejected"] += shard.rejected
        counts["withheld"] += shard.withheld
        self._pending_in = 0
        m["shards"].append(entry)
        m["next_batch"] = shard.first_batch + shard.batches
        m["aggregate"] = self.agg.state()
        m["header"] = self.writer.header
        wd.write(m)  # the shard is committed
        if self.ledger is not None and shard.charges:
            self.ledger.commit(shard.charges)
        # written with the next manifest (the next shard's, or the job's end), not by a write
        # and an fsync of its own: a resume before that commits this shard's charges again
        # (_commit_pending_charges; commit is idempotent)
        m["ledger_committed"] = len(m["shards"])
        if self.job.on_commit is not None:
            self.job.on_commit(dict(counts))

    # ---------------------------------------------------------------- the commit
    def _summary(self) -> tuple[PrivacyReport, dict]:
        report = self.agg.report(self.m.name, self._per_token())
        summary = report.to_dict()
        counts = self.agg.counts
        summary.update({
            "records_in": counts["records_in"], "records_rejected": counts["rejected"],
            "records_withheld": counts["withheld"],
            "fields": {f: (r.to_dict() if r is not None else None)
                       for f, r in self.agg.per_field.items()},
        })
        if self.columns is not None:
            seen = self.columns_seen or list(self.writer.header or [])
            summary["columns"] = self.columns.describe(seen)
        if self.units_tracked:
            summary["units"] = self.units.summary()
        if getattr(self, "ledger", None) is not None:
            summary["ledger_release"] = self.ledger.release_id
        return report, summary

    def _provenance(self, summary: dict, output_sha: str | None) -> dict:
        j = self.job
        settings = self.manifest["settings"] if hasattr(self, "manifest") else self.settings()
        return {
            "dptext_version": dptext_version(), "mechanism": self.m.name,
            "parameters": settings["parameters"], "fitted_tables": settings["tables"],
            "seed": settings["seed"], "fields": self.fields,
            "input": self.manifest["inputs"] if hasattr(self, "manifest") else [],
            "input_format": self.in_fmt, "output_format": self.out_fmt,
            "output_sha256": output_sha, "batch_size": self.batch_size,
            "executor": {"engine": j.engine, "workers": j.workers},
            "ledger_release": summary.get("ledger_release"),
            "records": {k: summary[k] for k in ("records_in", "records", "records_rejected",
                                                 "records_withheld")},
            "tokens": {"total": summary["tokens_total"],
                       "privatized": summary["tokens_privatized"]},
            "started": self.started, "finished": now(),
        }

    def _finish(self, wd: WorkDir) -> None:
        def summarize() -> dict:
            self.report, self.summary_dict = self._summary()
            return self.summary_dict

        steps, summary = shards_mod.stage(
            self.plan, wd.path, self.manifest["shards"], self.writer.header_text().encode(),
            self.out_fmt, self.schema, summarize, self._provenance)
        self.manifest["state"] = "committing"
        self.manifest["commit"] = steps
        self.manifest["summary"] = summary
        wd.write(self.manifest)
        shards_mod.apply_commit(steps)
        wd.remove()

    def _result_from(self, manifest: dict, resumed: int = 0) -> JobResult:
        summary = manifest.get("summary") or getattr(self, "summary_dict", None)
        report = getattr(self, "report", None)
        if report is None:
            agg = JobAggregate.from_state(self.fields, manifest["aggregate"]) \
                if manifest.get("aggregate") else JobAggregate(self.fields)
            report = agg.report(self.m.name, self._per_token())
        return JobResult(report, summary, self.plan.output, self.plan.report, resumed,
                         {k: summary[k] for k in ("records_in", "records", "records_rejected",
                                                  "records_withheld")})

    # ---------------------------------------------------------- streaming (stdout)
    def _run_stream(self) -> JobResult:
        return run_stream(self)


__all__ = ["Driver", "prepare", "run"]
