"""Hugging Face ``datasets``: privatize text columns with ``Dataset.map(batched=True)``.

    >>> from dptext.integrations.hf import privatize
    >>> ds, report = privatize(ds, columns=["title", "body"], mechanism="custext", epsilon=2)

Each record's fields are privatized in one pass and composed into the record's report, stored
as JSON in ``report_column`` (:func:`load_report` reads it back); the reports are aggregated
into one (all records, one owner) and, with ``unit_column``, per unit (``Release.units``). With
``num_proc`` > 1 every worker rebuilds the mechanism from its name and parameters and loads the
fitted tables from the disk cache (:class:`~dptext.integrations._spec.MechanismSpec`): the map
function that is pickled is a few hundred bytes. Randomness: fresh OS entropy per batch by
default; ``seed`` (experiments only) makes a run reproducible for the same ``batch_size`` and
``num_proc``. A ``ledger`` is charged per record and unit before the dataset is returned
(``owner``/``dataset_name`` name the budget); records it refuses are withheld (fields None).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from dptext.errors import DPTextError
from dptext.integrations._records import (
    Release,
    aggregate,
    charge_ledger,
    check_columns,
    column_plan,
    privatize_records,
)
from dptext.integrations._spec import MechanismSpec, resolve, targeting
from dptext.integrations._state import report_from_state, report_to_state
from dptext.mechanisms.base import Mechanism

__all__ = ["load_report", "privatize"]


def load_report(value: str):
    """The report stored in one row of the report column."""
    return report_from_state(value)


class _Privatizer:
    """The batched map function: carries a spec (rebuilt per process), never the tables."""

    def __init__(self, spec: MechanismSpec | None, mech: Mechanism | None, columns: list[str],
                 unit_column: str | None, report_column: str, seed: int | None,
                 tentative: bool = False) -> None:
        self.spec, self._mech = spec, mech
        # a ledger decides after the map: consistent="unit" draws stay tentative (a reuse in
        # another record pays for its draw; nothing is settled, the safe side)
        self.tentative = tentative
        self.columns, self.unit_column = columns, unit_column
        self.report_column, self.seed = report_column, seed

    def __getstate__(self) -> dict:
        state = dict(vars(self))
        if self.spec is not None:
            state["_mech"] = None  # workers rebuild it from the spec and the disk cache
        return state

    @property
    def mechanism(self) -> Mechanism:
        if self._mech is None:
            self._mech = self.spec.build()
        return self._mech

    def __call__(self, batch: dict, indices: list[int]) -> dict:
        import json

        rng = None if self.seed is None else np.random.default_rng([self.seed, indices[0]])
        units = batch[self.unit_column] if self.unit_column else None
        out, reports = privatize_records(self.mechanism, batch, self.columns, rng=rng,
                                         units=units, first_row=indices[0],
                                         drawn=[] if self.tentative else None)
        out[self.report_column] = [json.dumps(report_to_state(r)) for r in reports]
        return out


def privatize(dataset, columns: Sequence[str] | str, *, mechanism: str | Mechanism = "custext",
              unit_column: str | None = None, num_proc: int | None = None,
              batch_size: int = 256, report_column: str = "dp_report", seed: int | None = None,
              entities: Sequence[str] | str | None = None, detector: str | None = None,
              pattern_policy: str | None = None, surrogate_epsilon: float | None = None,
              consistent: str | None = None, ledger: Any = None, owner: str | None = None,
              dataset_name: str | None = None, keep: Sequence[str] | str = (),
              drop: Sequence[str] | str = (), hash: Sequence[str] | str = (),
              keep_other: bool = False, pseudonym_key: str | None = None,
              **params: Any) -> Release:
    """Privatize ``columns`` of ``dataset`` (module docstring); returns a :class:`Release`
    (``ds, report = privatize(...)``).

    ``mechanism``: a registered name built with ``params`` (``epsilon=2``, ``space=<path>``,
    ...), or an instance (one process only). ``entities`` (with ``detector``,
    ``pattern_policy``, ...): entity-targeted sanitization (:mod:`dptext.targeted`).
    Every other column must be named, as on the command line (:mod:`dptext.corpus.columns`):
    ``keep`` (released as is; ``Release.columns`` lists it as not protected), ``drop``,
    ``hash`` (keyed pseudonyms, key from ``pseudonym_key`` or ``$DPTEXT_PSEUDONYM_SECRET``) or
    ``keep_other=True``; ``unit_column`` is dropped unless kept or hashed. An unnamed column
    is a one-line error naming it, before any work.
    """
    from datasets import Dataset

    if not isinstance(dataset, Dataset):
        raise DPTextError(f"expected a datasets.Dataset (one split), got {type(dataset).__name__}")
    names = check_columns(dataset.column_names, columns)
    if unit_column is not None:
        check_columns(dataset.column_names, [unit_column])
    plan = column_plan(dataset.column_names, names, keep=keep, drop=drop, hash=hash,
                       keep_other=keep_other, unit_column=unit_column,
                       pseudonym_key=pseudonym_key, owner=owner, where="the dataset")
    if not report_column or not isinstance(report_column, str):
        raise DPTextError("report_column must name a column: the reports travel back in it")
    if num_proc is not None and (not isinstance(num_proc, int) or num_proc < 1):
        raise DPTextError(f"num_proc must be a positive integer, got {num_proc!r}")
    targeted = targeting(entities, {"detector": detector, "pattern_policy": pattern_policy,
                                    "surrogate_epsilon": surrogate_epsilon,
                                    "consistent": consistent})
    several = (num_proc or 1) > 1
    if several and (targeted or {}).get("consistent") == "unit":
        raise DPTextError("consistent='unit' remembers replacements in one process: "
                          "use num_proc=1")
    spec, mech = resolve(mechanism, params, targeted, portable=several)
    fn = _Privatizer(spec, mech, names, unit_column, report_column, seed,
                     tentative=ledger is not None)
    with _same_environ():
        out = dataset.map(fn, batched=True, batch_size=batch_size, with_indices=True,
                          num_proc=num_proc, load_from_cache_file=False,
                          new_fingerprint=uuid.uuid4().hex, desc="dptext privatize")
    reports = [report_from_state(s) for s in out[report_column]]
    units = out[unit_column] if unit_column else None
    withheld: list[int] = []
    if ledger is not None:
        allowed = charge_ledger(ledger, reports, units, [str(i) for i in range(len(out))],
                                owner=owner, dataset=dataset_name,
                                mechanism=reports[0].mechanism if reports else mech.name,
                                params={**params, **(targeted or {})}, release_key=None)
        withheld = [i for i, ok in enumerate(allowed) if not ok]
        if withheld:
            out = _withhold(out, names, report_column, set(withheld))
            keep = [i for i, ok in enumerate(allowed) if ok]
            reports = [reports[i] for i in keep]
            units = [units[i] for i in keep]
    report, per_unit = aggregate(reports, mech, units)
    seen = list(dataset.column_names)
    convert = {c: f for c in seen if (f := plan.converter(c)) is not None}  # by column role
    if convert:  # here, in this process: the key never travels to the map's workers
        out = out.map(lambda batch: {c: [f(v) for v in batch[c]] for c, f in convert.items()},
                      batched=True, load_from_cache_file=False,
                      new_fingerprint=uuid.uuid4().hex)
    gone = plan.unwritten(seen)
    if gone:
        out = out.remove_columns(gone)
    return Release(out, report, per_unit, withheld, plan.describe(seen))


@contextlib.contextmanager
def _same_environ():
    """``Dataset.map(num_proc>1)`` ends with ``os.environ = <a deep copy taken before>``
    (datasets 5.x, arrow_dataset.py): the process then has a new environ object, and whatever
    holds the old one (pytest's monkeypatch, any later restore) edits a dead copy. Put the
    original object back, with the contents the map left."""
    environ = os.environ
    try:
        yield
    finally:
        if os.environ is not environ:
            now = dict(os.environ)
            os.environ = environ  # noqa: B003 (the identity is the point; contents synced below)
            for key in set(environ) - set(now):
                del environ[key]
            environ.update(now)


def _withhold(ds, columns: list[str], report_column: str, rows: set[int]):
    def blank(batch, indices):
        for c in [*columns, report_column]:
            batch[c] = [None if i in rows else v for i, v in zip(indices, batch[c], strict=True)]
        return batch

    return ds.map(blank, batched=True, with_indices=True, load_from_cache_file=False,
                  new_fingerprint=uuid.uuid4().hex)
