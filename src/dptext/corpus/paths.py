"""Every path a job writes, checked before any work, and written as one commit.

A job writes the output, the report, the provenance manifest and (with ``--on-error skip``)
the rejects. Before anything is read or fitted: ``-`` means stdout; every other target must be
a regular file or missing (never a device, a FIFO, a socket, a directory or a symbolic link:
renaming over ``/dev/stdout`` replaced the system's link once), its directory must exist and
be writable, and no two of them, nor any of them and an input, may be the same file (by real
path and by inode, so ``./same.txt``, ``same.txt``, hard and symbolic links are all caught).

Temporary files are named ``.NAME.dptext-PID.tmp`` beside their target; a later run removes
those whose process is gone (a run killed with ``kill -9`` cannot clean up after itself).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from dptext.corpus.jobdir import workdir_of
from dptext.errors import DPTextError
from dptext.io import atomic_write

STDOUT = "-"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: Path, what: str, *, directory: bool = False) -> None:
    """``path`` may be (re)written by a rename: missing or a regular file (or, for an output
    directory, missing or a directory), in an existing, writable directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
        if not ok:
            if stat.S_ISDIR(st.st_mode):
                raise DPTextError(f"{what} {path} is a directory")
            hint = "; use - for stdout" if what == "--output" else ""
            raise DPTextError(f"{what} {path} is {_kind(st.st_mode)}, not a regular file: "
                              f"it is never replaced{hint}")
    parent = path.parent
    if not parent.is_dir():
        raise DPTextError(f"output directory does not exist: {parent} (for {what} {path})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DPTextError(f"cannot write in {parent} (for {what} {path})")


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (real path, or one inode through a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@dataclass
class OutputPlan:
    """The paths of one job. ``output`` is None for stdout; ``workdir`` holds the shards."""

    output: Path | None
    report: Path | None  # None: the report goes to stderr
    rejects: Path | None
    provenance: Path | None
    workdir: Path | None
    output_dir: bool = False

    @classmethod
    def make(cls, output: str, *, report: str | None, rejects: str | None,
             inputs: list[Path], output_dir: bool = False) -> OutputPlan:
        if output == STDOUT:
            if output_dir:
                raise DPTextError("--output-dir needs a directory path, not -")
            plan = cls(None, None if report in (None, STDOUT) else Path(report),
                       Path(rejects) if rejects else None, None, None)
        else:
            out = Path(output)
            plan = cls(out, Path(report or f"{output}.report.json"),
                       Path(rejects or f"{output}.rejects.jsonl"),
                       out / "_provenance.json" if output_dir
                       else Path(f"{output}.provenance.json"),
                       workdir_of(output), output_dir)
        plan.check(inputs)
        return plan

    def targets(self) -> list[tuple[str, Path]]:
        named = [("--output", self.output), ("--report", self.report),
                 ("--rejects", self.rejects), ("the provenance manifest", self.provenance),
                 ("the work directory", self.workdir)]
        return [(w, p) for w, p in named if p is not None]

    def check(self, inputs: list[Path]) -> None:
        for what, path in self.targets():
            if what == "the provenance manifest" and self.output_dir:
                continue  # inside the output directory, created with it
            check_target(path, what, directory=what == "the work directory"
                         or (what == "--output" and self.output_dir))
        targets = self.targets()
        for i, (what, path) in enumerate(targets):
            for src in inputs:
                if same_file(path, src):
                    raise DPTextError(f"{what} {path} is the input {src}: it would be "
                                      f"overwritten; write somewhere else")
                if src.is_dir() and _inside(path, src):
                    raise DPTextError(f"{what} {path} is inside the input directory {src}")
            for other_what, other in targets[i + 1:]:
                if same_file(path, other):
                    raise DPTextError(f"{what} and {other_what} are the same file ({path})")


def _inside(path: Path, directory: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(directory))
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ temporary files
def temp_beside(path: Path) -> Path:
    return path.parent / f".{path.name}.dptext-{os.getpid()}.tmp"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(path: Path) -> list[Path]:
    """Remove ``.NAME.dptext-PID.tmp`` files beside ``path`` whose process is gone."""
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.dptext-(\d+)\.tmp$")
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            m = pattern.match(entry.name)
            if m and (int(m.group(1)) == os.getpid() or not _alive(int(m.group(1)))):
                p = Path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    import shutil

                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
                removed.append(p)
    return removed


def write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through ``.NAME.dptext-PID.tmp``: fsync, rename, fsync the
    directory (:func:`dptext.io.atomic_write`)."""
    with atomic_write(path, "wb", durable=True, temp=temp_beside(path)) as f:
        f.write(data)
