"""Pending charges of a job that will not continue: which provably never left, and voiding them.

A killed job leaves pending charges: records reserved (charged, counted against the budget)
whose output may or may not have been made durable. They are never wrong - the safe side - but
nothing reconciles them if the job is never run again. :func:`void_unreleased` looks at the
job's work directory (``OUTPUT.partial/``): its ``manifest.json`` or ``release.json`` names the
release key, which must be the release's; the charge files of its committed shards name every
charge whose record is in a durable shard. The release's pending charges outside them were
never written anywhere that survives (an interrupted shard's files are debris, deleted when the
job continues): those, and only those, are voided (:meth:`dptext.ledger.Ledger.void`), with the
reason and the operator in the chained entry. A pending charge inside a committed shard was
released (its shard is durable): it is never voided - rerunning the job commits it.
"""

from __future__ import annotations

import json
from pathlib import Path

from dptext.corpus.jobdir import MANIFEST, RELEASE
from dptext.corpus.workdir import WorkDir
from dptext.errors import DPTextError


def void_unreleased(ledger, release_id: str, workdir: str | Path, *, reason: str, by: str = "",
                    dry_run: bool = False) -> dict:
    """Void the pending charges of ``release_id`` that the job at ``workdir`` provably never
    released; returns ``{"voided": n, "kept": m, "removed_workdir": bool}`` (``kept``:
    pending charges in committed shards). The work directory is locked meanwhile (a running
    job is refused); one with no committed shard holds nothing released and is removed, so a
    rerun is a new release."""
    path = Path(workdir)
    if not (path / MANIFEST).is_file() and not (path / RELEASE).is_file():
        raise DPTextError(f"{path} is not a job's work directory (no {MANIFEST} or {RELEASE}): "
                          "nothing shows which charges left; nothing was voided")
    wd = WorkDir(path)
    wd.open()
    try:
        manifest = wd.read()
        key = (manifest or {}).get("release_key") or (wd.read_release() or {}).get(
            "release_key")
        if not key or ledger.release_of_key(key) != release_id:
            raise DPTextError(f"{path} is not the work directory of release {release_id} (its "
                              "release key names another release, or none): nothing was voided")
        committed: set[int] = set()
        for shard in (manifest or {}).get("shards", []):
            if shard.get("charges"):
                committed.update(json.loads((path / shard["charges"]).read_text(
                    encoding="utf-8")))
        pending = next((r["ids"] for r in ledger.pending_releases()
                        if r["release_id"] == release_id), [])
        voidable = [c for c in pending if c not in committed]
        kept = len(pending) - len(voidable)
        if dry_run:
            return {"voided": 0, "voidable": len(voidable), "kept": kept,
                    "removed_workdir": False}
        n = ledger.void(release_id, voidable, reason=reason, by=by) if voidable else 0
        empty = manifest is None or not manifest.get("shards")
    finally:
        wd.close()
    if empty and not dry_run:
        wd.remove()
    return {"voided": n, "voidable": len(voidable), "kept": kept, "removed_workdir": empty}
