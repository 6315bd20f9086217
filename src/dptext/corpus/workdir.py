"""The work directory of a job (``OUTPUT.partial/``): committed shards and their manifest.

``manifest.json`` is the only source of truth. It names the job (settings and the fingerprint
of every input file) and lists the committed shards: the batches each holds, its part file and
SHA-256, counts, the ledger charges it carries, the shared draws it paid for (``--consistent
unit``: a file named with its SHA-256), and the running report after it. A shard is
committed by fsyncing its files, renaming them into place and then replacing the manifest
(fsync, rename, fsync of the directory); anything in the directory that the manifest does not
list is debris of an interrupted shard and is deleted when the job continues.

A lock (``flock`` on ``lock``) keeps two runs from writing one job at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from pathlib import Path

from dptext.corpus.jobdir import FORMAT, MANIFEST, RELEASE, read_manifest
from dptext.corpus.paths import write_durably
from dptext.errors import DPTextError

#: ``--consistent unit``: the job's draw key (corpus/randomness.draw_key), mode 0600, kept for a
#: resume and removed with the work directory
DRAW_KEY = "draws.key"


def _dead(pid: str) -> bool:
    """Whether the process that wrote ``pid`` into the lock file is gone."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


class WorkDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = None

    # ------------------------------------------------------------------ lock
    #: how long to wait for the lock while the run that took it is dead (its worker processes,
    #: which a fork gave a copy of the lock until they close it, are then still exiting)
    DEAD_HOLDER_WAIT = 10.0

    def open(self) -> None:
        self.path.mkdir(exist_ok=True)
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.DEAD_HOLDER_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                if _dead(other) and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                os.close(fd)
                raise DPTextError(f"another dptext run (pid {other}) is writing this job "
                                  f"({self.path}); wait for it or stop it") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock = fd

    def lock_fds(self) -> tuple[int, ...]:
        """The lock's descriptor (a forked worker closes its copy: see executors.py)."""
        return () if self._lock is None else (self._lock,)

    def close(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def remove(self) -> None:
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    # ------------------------------------------------------------------ manifest
    def read(self) -> dict | None:
        return read_manifest(self.path)

    def read_release(self) -> dict | None:
        """``release.json``: the ledger release key of the run in this directory, written
        before its first charge (so a run killed before its first shard is continued, not
        left pending in a release nobody continues), with the job key it belongs to."""
        try:
            data = json.loads((self.path / RELEASE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("release_key") else None

    def write_release(self, release_key: str, job_key: str) -> None:
        write_durably(self.path / RELEASE,
                      json.dumps({"release_key": release_key, "job_key": job_key}).encode())

    def write(self, manifest: dict) -> None:
        manifest["format"] = FORMAT
        write_durably(self.path / MANIFEST, json.dumps(manifest, separators=(",", ":")).encode())

    def clean(self, manifest: dict | None) -> None:
        """Delete what the manifest does not list (an interrupted shard's files; everything
        when ``manifest`` is None)."""
        keep = {"lock", RELEASE} if manifest is None else {"lock", RELEASE, MANIFEST,
                                                           "units.sqlite", DRAW_KEY}
        if manifest is not None:
            for shard in manifest["shards"]:
                keep.update(n for n in (shard["part"], shard.get("rejects"),
                                        shard.get("charges"), shard.get("draws")) if n)
        for entry in os.scandir(self.path):
            if entry.name not in keep:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)


def changed_input(old: list[dict], new: list[dict]) -> str | None:
    """A one-line description of how the input differs from the interrupted run's, or None."""
    old_by = {f["name"]: f for f in old}
    new_by = {f["name"]: f for f in new}
    for name in old_by:
        if name not in new_by:
            return f"input file {name} is gone"
    for name in new_by:
        if name not in old_by:
            return f"input file {name} was added"
    for name, f in new_by.items():
        if f["sha256"] != old_by[name]["sha256"] or f["size"] != old_by[name]["size"]:
            return f"input file {name} changed"
    return None


def changed_settings(old: dict, new: dict) -> str | None:
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return key
    return None
