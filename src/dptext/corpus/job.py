"""A corpus job and its identity: what to run (:class:`CorpusJob`), what it returned
(:class:`JobResult`), the failure that leaves committed shards in place (:class:`ResumableError`),
and the parameters and tables fingerprint that make a seeded job the same job on a rerun."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dptext.accounting.report import PrivacyReport
from dptext.corpus.records import MAX_RECORD_BYTES, TEXT_FIELD
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism
from dptext.mechanisms.word import WordMechanism

ON_ERROR = ("fail", "skip")
#: default --batch-size: word mechanisms that tabulate their output distribution (CusText,
#: SanText, ...: ~50 us a short record), those that search the space for every token (the
#: Laplace family: ~10 ms a record, so that 2 workers have batches to share on 800 records),
#: language-model mechanisms
WORD_BATCH, SEARCH_BATCH, LM_BATCH = 512, 64, 16
WORD_SHARD, LM_SHARD = 10_000, 64


class ResumableError(DPTextError):
    """A failure that leaves the committed shards in place (disk full, a worker killed)."""


@dataclass
class CorpusJob:
    """One sanitization job. ``output`` is a file path, a directory (``output_dir``) or ``-``
    (stdout); ``resume``: None continues a matching interrupted run if there is one, True
    requires one, False discards it. ``parameters``: the mechanism's parameters as given (for
    the job's identity and the provenance); ``spec``: (name, parameters) to rebuild a
    non-word mechanism in worker processes."""

    mechanism: Mechanism
    input: str
    output: str
    fields: Sequence[str] = (TEXT_FIELD,)
    input_format: str | None = None
    output_format: str | None = None
    output_dir: bool = False
    report: str | None = None
    rejects: str | None = None
    seed: int | None = None
    batch_size: int | None = None
    shard_records: int | None = None
    shard_seconds: float = 60.0
    workers: int = 1
    engine: str = "local"
    torch_threads: int | None = None  # None: this process's setting; workers get 1
    on_error: str = "fail"
    max_record_bytes: int = MAX_RECORD_BYTES
    resume: bool | None = None
    user_field: str | None = None
    # every column's role (a corpus.columns.ColumnPlan; the command line and dptext.sanitize()
    # always give one, so an unnamed column is an error there); None: every other column is
    # released as it is, and the report lists it as released verbatim, not protected
    columns: Any = None
    ledger: Any = None
    owner: str | None = None
    dataset: str | None = None
    budget: float | None = None
    budget_delta: float = 0.0
    once: bool = False  # with a ledger: refuse a job (settings and inputs) released before
    parameters: dict | None = None
    spec: tuple[str, dict] | None = None
    progress: bool = False
    log: Any = None  # a callable taking one line (progress without a terminal), or None
    on_commit: Any = None  # a callable given the job's counts after each committed shard


@dataclass
class JobResult:
    report: PrivacyReport
    summary: dict  # what the report file holds
    output: Path | None
    report_path: Path | None
    resumed_records: int = 0  # records committed by earlier runs of this job
    counts: dict = field(default_factory=dict)



def default_batch_size(m: Mechanism) -> int:
    """The batch size of a job that does not give one (part of a seeded job's identity)."""
    if not isinstance(m, WordMechanism):
        return LM_BATCH
    return WORD_BATCH if "distribution" in m.capabilities else SEARCH_BATCH


def _canonical(value: Any) -> Any:
    from dptext.embeddings import EmbeddingSpace

    if isinstance(value, EmbeddingSpace):
        return f"space:{value.name}:{value.fingerprint()}"
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, set | frozenset):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def mechanism_parameters(m: Mechanism, given: dict | None) -> dict:
    """The parameters to record: those given, else every declared parameter's value."""
    if given is not None:
        return _canonical(given)
    from dptext.mechanisms.registry import parameters

    out = {}
    for name in parameters(type(m)):
        if hasattr(m, name) and name != "space":
            out[name] = _canonical(getattr(m, name))
    return out


def tables_fingerprint(m: Mechanism) -> str | None:
    """A hash of what the fitted mechanism samples from (space and tables), or None."""
    if not isinstance(m, WordMechanism) or not m.is_fitted:
        return None
    import numpy as np

    from dptext.corpus.shared import fitted_tables

    h = hashlib.sha256(m.space.fingerprint().encode())
    for name, array in sorted(fitted_tables(m).items()):
        h.update(name.encode())
        h.update(np.ascontiguousarray(array))
    return "sha256:" + h.hexdigest()[:32]


def dptext_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dptext")
    except PackageNotFoundError:
        from dptext.version import __version__

        return __version__


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")

