"""Where a job keeps its files, and the reader of its work directory - for the engine and for
the callers that look at a job from outside it (``dptext sanitize`` after an interrupt, the
service's file jobs).

A job writing ``OUTPUT`` works in ``OUTPUT.partial/`` (:func:`workdir_of`) until it renames the
output, its report and rejects into place together and removes that directory; so

* a job is **interrupted** while the directory holds a ``manifest.json`` (:data:`MANIFEST`: the
  committed shards, their counts and the running report; :func:`read_manifest`,
  :func:`committed`) - running the same job again continues it;
* a job is **finished** when the output and report exist and the directory is gone
  (:func:`finished`) - running it again would be a new release, charged again.

Nobody outside :mod:`dptext.corpus.workdir` (the writer: lock, shards, clean-up) writes in the
directory; everyone reads it through this module.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from dptext.errors import DPTextError

WORKDIR_SUFFIX = ".partial"
MANIFEST = "manifest.json"
RELEASE = "release.json"
FORMAT = 1


def workdir_of(output: str | os.PathLike) -> Path:
    """The work directory of a job writing ``output`` (a file or an output directory)."""
    return Path(f"{output}{WORKDIR_SUFFIX}")


def read_manifest(workdir: str | os.PathLike) -> dict | None:
    """The manifest of a work directory; None when there is none (no shard committed yet, or
    no interrupted job). A manifest that cannot be read, or of another format, is a one-line
    error saying how to start again."""
    workdir = Path(workdir)
    path = workdir / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DPTextError(f"{path} is unreadable ({err}); remove {workdir} to start "
                          f"again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DPTextError(f"{path} was written by another dptext version; remove "
                          f"{workdir} to start again")
    return manifest


@dataclass(frozen=True)
class Committed:
    """What the committed shards of an interrupted job hold."""

    shards: int
    records_in: int
    records_out: int
    rejected: int
    withheld: int


def committed(output: str | os.PathLike) -> Committed | None:
    """The committed part of the interrupted job writing ``output``; None when there is no
    interrupted job (nothing committed, or the job finished)."""
    manifest = read_manifest(workdir_of(output))
    if manifest is None:
        return None
    counts = (manifest.get("aggregate") or {}).get("counts") or {}
    return Committed(len(manifest.get("shards") or ()), int(counts.get("records_in", 0)),
                     int(counts.get("records_out", 0)), int(counts.get("rejected", 0)),
                     int(counts.get("withheld", 0)))


def finished(output: str | os.PathLike, report: str | os.PathLike) -> bool:
    """Whether the job writing ``output`` (with its report at ``report``) has finished: both
    renamed into place and the work directory removed."""
    return Path(output).exists() and Path(report).is_file() and \
        not workdir_of(output).exists()
