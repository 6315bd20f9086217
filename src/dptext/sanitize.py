"""``dptext.sanitize``: privatize a file (JSONL, CSV, plain text, Parquet) through a mechanism.

A thin wrapper over the corpus engine (:mod:`dptext.corpus`), which streams the input in
batches, commits the output in shards (an interrupted call continues where it stopped when
called again), and renames the output, its report (``OUTPUT.report.json``) and its provenance
manifest (``OUTPUT.provenance.json``) into place together.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from dptext.accounting.report import PrivacyReport
from dptext.corpus.sources import FORMATS, check_format, suffix_format
from dptext.mechanisms.base import Mechanism
from dptext.rng import RngLike

__all__ = ["FORMATS", "detect_format", "sanitize"]


def detect_format(path: str | os.PathLike, fmt: str | None) -> str:
    """``fmt`` if given (checked), else the format the suffix names (plain text otherwise)."""
    if check_format(fmt) is not None:
        return fmt
    return suffix_format(path) or "txt"


def _seed(rng: RngLike) -> int | None:
    if isinstance(rng, np.random.Generator):  # reproducible from the generator's state
        return int(rng.integers(0, 2**63))
    if rng is None:
        return None
    from dptext.rng import as_generator

    as_generator(rng)  # the same checks (and messages) as everywhere else
    return int(rng)


def sanitize(
    mechanism: Mechanism,
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    *,
    field: str | Sequence[str] = "text",
    fmt: str | None = None,
    rng: RngLike = None,
    progress: bool = False,
    keep: str | Sequence[str] = (),
    drop: str | Sequence[str] = (),
    hash: str | Sequence[str] = (),
    keep_other: bool = False,
    pseudonym_key: str | os.PathLike | None = None,
    **options,
) -> PrivacyReport:
    """Privatize every record of ``input_path`` into ``output_path``; returns the report.

    JSONL: ``field`` of each object is replaced; CSV: column ``field``; Parquet: column
    ``field``; anything else: each line is a text (line endings kept). ``field`` may name
    several fields (a list, or ``"a,b"``); each is privatized. ``rng``: an int seed (for
    experiments only) or a Generator (a seed is drawn from it) or None (OS entropy).
    Every other column must be named (:mod:`dptext.corpus.columns`): ``keep`` (released as is,
    reported as not protected), ``drop``, ``hash`` (keyed pseudonyms; the key from
    ``pseudonym_key``, ``$DPTEXT_PSEUDONYM_SECRET`` or beside a SQLite ledger), or
    ``keep_other=True``; an unnamed column is a one-line error before any work.
    Other keyword arguments are fields of :class:`dptext.corpus.CorpusJob` (``workers``,
    ``on_error``, ``report``, ...).
    """
    from dptext.corpus import CorpusJob, run
    from dptext.corpus.columns import ColumnPlan
    from dptext.corpus.columns import pseudonym_key as key_of

    fields = [f.strip() for f in field.split(",")] if isinstance(field, str) else list(field)
    ledger = options.get("ledger")
    key = key_of(pseudonym_key, ledger=ledger if isinstance(ledger, str) else None) \
        if hash else None
    columns = ColumnPlan.make(fields, keep=keep, drop=drop, hash=hash, keep_other=keep_other,
                              user_field=options.get("user_field"), key=key,
                              owner=options.get("owner"))
    job = CorpusJob(mechanism, os.fspath(input_path), os.fspath(output_path), fields=fields,
                    input_format=check_format(fmt), seed=_seed(rng), progress=progress,
                    columns=columns, **options)
    return run(job).report
