"""pandas: privatize text columns of a DataFrame; ``df.dptext.privatize(...)`` too.

    >>> from dptext.integrations.pandas import privatize_frame
    >>> frame, report = privatize_frame(df, columns=["note"], mechanism="custext", epsilon=2)

A copy of the frame comes back with the columns privatized (missing values stay missing) and,
with ``report_column``, one report object per row. The aggregated report composes all rows
(one owner); with ``unit_column``, ``Release.units`` holds each unit's composition. Importing
this module registers the ``dptext`` DataFrame accessor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from dptext.errors import DPTextError
from dptext.integrations._records import (
    Release,
    aggregate,
    charge_ledger,
    check_columns,
    column_plan,
    privatize_records,
)
from dptext.integrations._spec import resolve, targeting
from dptext.mechanisms.base import Mechanism
from dptext.rng import RngLike, as_generator

__all__ = ["privatize_frame"]


def privatize_frame(df: pd.DataFrame, columns: Sequence[str] | str, *,
                    mechanism: str | Mechanism = "custext", unit_column: str | None = None,
                    report_column: str | None = None, rng: RngLike = None,
                    batch_size: int = 512, entities: Sequence[str] | str | None = None,
                    detector: str | None = None, pattern_policy: str | None = None,
                    surrogate_epsilon: float | None = None, consistent: str | None = None,
                    ledger: Any = None, owner: str | None = None,
                    dataset_name: str | None = None, keep: Sequence[str] | str = (),
                    drop: Sequence[str] | str = (), hash: Sequence[str] | str = (),
                    keep_other: bool = False, pseudonym_key: str | None = None,
                    **params: Any) -> Release:
    """Privatize ``columns`` of ``df`` (module docstring); ``frame, report = ...``.

    Every other column must be named, as on the command line (:mod:`dptext.corpus.columns`):
    ``keep`` (released as is; ``Release.columns`` lists it as not protected), ``drop``,
    ``hash`` (keyed pseudonyms, key from ``pseudonym_key`` or ``$DPTEXT_PSEUDONYM_SECRET``) or
    ``keep_other=True``; ``unit_column`` is dropped unless kept or hashed. An unnamed column
    is a one-line error naming it, before any work.

    ``mechanism``: a registered name built with ``params`` or an instance; ``entities`` (with
    ``detector``, ``pattern_policy``, ...) for entity-targeted sanitization. ``ledger``: see
    :mod:`dptext.integrations._records` (needs ``unit_column``, ``owner``, ``dataset_name``).
    """
    if not isinstance(df, pd.DataFrame):
        raise DPTextError(f"expected a pandas DataFrame, got {type(df).__name__}")
    names = check_columns(list(df.columns), columns)
    if unit_column is not None:
        check_columns(list(df.columns), [unit_column])
    plan = column_plan(df.columns, names, keep=keep, drop=drop, hash=hash,
                       keep_other=keep_other, unit_column=unit_column,
                       pseudonym_key=pseudonym_key, owner=owner, where="the DataFrame")
    targeted = targeting(entities, {"detector": detector, "pattern_policy": pattern_policy,
                                    "surrogate_epsilon": surrogate_epsilon,
                                    "consistent": consistent})
    _, mech = resolve(mechanism, params, targeted, portable=False)
    gen = as_generator(rng)
    values = {c: [None if _missing(v) else v for v in df[c].tolist()] for c in names}
    units = df[unit_column].tolist() if unit_column else None
    new: dict[str, list] = {c: [] for c in names}
    reports = []
    drawn: list | None = [] if ledger is not None else None  # settled once the ledger decided
    for start in range(0, len(df), batch_size):
        part = {c: v[start:start + batch_size] for c, v in values.items()}
        out, reps = privatize_records(mech, part, names, rng=gen, first_row=start,
                                      units=None if units is None
                                      else units[start:start + batch_size], drawn=drawn)
        for c in names:
            new[c] += out[c]
        reports += reps
    frame = df.copy()
    for c in names:
        frame[c] = pd.Series(new[c], index=df.index, dtype=object)
    if report_column:
        frame[report_column] = pd.Series(reports, index=df.index, dtype=object)
    withheld: list[int] = []
    if ledger is not None:
        allowed = charge_ledger(ledger, reports, units, [str(i) for i in df.index],
                                owner=owner, dataset=dataset_name,
                                mechanism=reports[0].mechanism if reports else mech.name,
                                params={**params, **(targeted or {})}, release_key=None)
        withheld = [i for i, ok in enumerate(allowed) if not ok]
        if drawn:  # consistent="unit": a withheld record's draws are not reused for free
            mech.settle([r for _, r in drawn], [allowed[i] for i, _ in drawn])
        for c in names + ([report_column] if report_column else []):
            frame.iloc[withheld, frame.columns.get_loc(c)] = None
        reports = [r for r, ok in zip(reports, allowed, strict=True) if ok]
        units = [u for u, ok in zip(units, allowed, strict=True) if ok]
    report, per_unit = aggregate(reports, mech, units)
    seen = [str(c) for c in df.columns]
    for c in df.columns:  # each column as its role says
        if (convert := plan.converter(str(c))) is not None:
            frame[c] = pd.Series([None if _missing(v) else convert(v) for v in df[c]],
                                 index=df.index, dtype=object)
    gone = set(plan.unwritten(seen))
    frame = frame.drop(columns=[c for c in df.columns if str(c) in gone])
    return Release(frame, report, per_unit, withheld, plan.describe(seen))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or value is pd.NA


@pd.api.extensions.register_dataframe_accessor("dptext")
class DPTextAccessor:
    """``df.dptext.privatize(columns, ...)``: :func:`privatize_frame` on this frame."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df

    def privatize(self, columns: Sequence[str] | str, **kwargs: Any) -> Release:
        return privatize_frame(self._df, columns, **kwargs)
