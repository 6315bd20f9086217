"""The unit of work every executor runs: privatize the chosen fields of one batch of records.

A :class:`BatchTask` holds only texts (never the records), so it is cheap to send to a worker
process or a Ray actor; :func:`run_batch` is a pure function of (mechanism, task, seed) and its
:class:`BatchOutput` is the same whichever process computed it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dptext.accounting.report import PrivacyReport
from dptext.corpus.aggregate import combine
from dptext.corpus.randomness import generator
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism


@dataclass
class BatchTask:
    """``texts[f][i]``: field ``f`` of the batch's ``i``-th privatizable record; ``keys[i]`` its
    record key (for a per-record retry); ``key`` names the batch (its randomness)."""

    batch_id: int
    key: str
    keys: list[str]
    texts: list[list[str]]


@dataclass
class BatchOutput:
    batch_id: int
    texts: list[list[str | None]]  # per field, per record (None: the record failed)
    reports: list[list[PrivacyReport | None]]  # per field, per record
    field_reports: list[PrivacyReport | None]  # per field, combined over the batch
    record_epsilon: list[float] | None  # per record, over its fields (None: one field)
    errors: dict[int, str] = field(default_factory=dict)  # record index -> reason


def _privatize_all(m: Mechanism, texts: list[list[str]], rng) -> list[list]:
    return [m.privatize_batch(column, rng=rng) if column else [] for column in texts]


def run_batch(m: Mechanism, task: BatchTask, seed: int | None, *, skip: bool) -> BatchOutput:
    """Privatize every field of the batch with the batch's generator (fields in order).

    If the mechanism refuses the batch (a ``DPTextError``) and ``skip`` is set, each record is
    retried alone with a generator derived from its own key, so the records that can be
    privatized are, deterministically, and the others carry the mechanism's reason.
    """
    n = len(task.keys)
    errors: dict[int, str] = {}
    try:
        results = _privatize_all(m, task.texts, generator(seed, task.key))
    except DPTextError as err:
        if not skip:
            raise DPTextError(f"record {task.keys[0]} or a later one of its batch: {err}"
                              ) from None
        results = [[None] * n for _ in task.texts]
        for i, key in enumerate(task.keys):
            try:
                one = _privatize_all(m, [[col[i]] for col in task.texts], generator(seed, key))
            except DPTextError as e:
                errors[i] = str(e)
                continue
            for col, res in zip(results, one, strict=True):
                col[i] = res[0]
    texts = [[None if r is None else r.text for r in col] for col in results]
    reports = [[None if r is None else r.report for r in col] for col in results]
    field_reports = []
    for col in reports:
        done = [r for r in col if r is not None]
        field_reports.append(combine(done) if done else None)
    epsilon = None  # one field: the field report's largest record is the record's epsilon
    if len(reports) > 1:
        epsilon = [0.0 if i in errors else sum(col[i].epsilon for col in reports)
                   for i in range(n)]
    return BatchOutput(task.batch_id, texts, reports, field_reports, epsilon, errors)
