"""What to read: ``--input`` as a file, a directory, a glob or ``-`` (stdin), each source with
its format, and a fingerprint of every file so a resumed job can tell that its input changed."""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from dptext.errors import DPTextError

FORMATS = ("jsonl", "csv", "txt", "parquet")
#: suffixes that name a format; any other suffix is read as plain text (one record per line)
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
            ".pq": "parquet", ".txt": "txt"}
STDIN = "-"


@dataclass(frozen=True)
class Source:
    """One input: ``path`` (None for stdin), the ``name`` used in record keys (the file name,
    or the path relative to the directory or the glob's directory), and its format. Record
    keys, hence a seeded run's randomness, do not depend on how the path was spelled."""

    path: Path | None
    name: str
    fmt: str
    given: str | None = None  # the path as given, where ``path`` was made absolute

    @property
    def shown(self) -> str:
        """How messages name the source (the path as given, or stdin)."""
        if self.given is not None:
            return self.given
        return "stdin" if self.path is None else str(self.path)

    def absolute(self) -> Source:
        """The same source with an absolute path (for workers in another directory: a Ray
        cluster's), named in messages as before."""
        if self.path is None or self.path.is_absolute():
            return self
        return dataclasses.replace(self, path=self.path.resolve(), given=self.shown)

    @property
    def is_stdin(self) -> bool:
        return self.path is None

    def fingerprint(self) -> dict:
        """Name, size, modification time and SHA-256 of the content (what a resume compares)."""
        if self.path is None:
            raise DPTextError("stdin cannot be fingerprinted (a piped input cannot be resumed)")
        st = self.path.stat()
        h = hashlib.sha256()
        with open(self.path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return {"name": self.name, "path": str(self.path.resolve()), "size": st.st_size,
                "mtime_ns": st.st_mtime_ns, "sha256": h.hexdigest()}


def check_format(fmt: str | None, what: str = "format") -> str | None:
    if fmt is not None and fmt not in FORMATS:
        raise DPTextError(f"unknown {what} {fmt!r}; choose one of {', '.join(FORMATS)}")
    return fmt


def suffix_format(path: str | os.PathLike) -> str | None:
    """The format a file name's suffix names, or None for any other suffix."""
    return SUFFIXES.get(Path(path).suffix.lower())


def _readable_file(path: Path) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise DPTextError(f"no such file: {path}") from None
    except OSError as err:
        raise DPTextError(f"cannot read {path}: {err.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise DPTextError(f"input is a directory, not a file: {path}")
    if not stat.S_ISREG(st.st_mode):
        raise DPTextError(f"input {path} is not a regular file; use --input - for a pipe")
    try:
        open(path, "rb").close()
    except OSError as err:
        raise DPTextError(f"cannot read {path}: {err.strerror}") from None


def expand(spec: str, fmt: str | None = None) -> list[Source]:
    """The sources ``--input`` names, in a fixed (sorted) order; every file checked readable.

    A directory means its regular files (hidden ones skipped, subdirectories not entered); a
    pattern with ``*``, ``?`` or ``[`` is a glob. All sources must have one format (``fmt``,
    else each file's suffix): a directory of mixed formats is an error naming two of them.
    """
    check_format(fmt, "input format")
    if spec == STDIN:
        return [Source(None, STDIN, fmt or "txt")]
    path = Path(spec)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if not p.name.startswith(".") and p.is_file())
        if not files:
            raise DPTextError(f"input directory {path} has no files")
        names = [p.name for p in files]
    elif any(c in spec for c in "*?[") and not path.exists():
        files = sorted(Path(p) for p in glob.glob(spec) if Path(p).is_file())
        if not files:
            raise DPTextError(f"no file matches the input pattern {spec!r}")
        literal = []  # the directory part of the pattern before its first wildcard
        for part in Path(spec).parts[:-1]:
            if any(c in part for c in "*?["):
                break
            literal.append(part)
        base = Path(*literal) if literal else Path(".")
        names = [os.path.relpath(p, base) for p in files]
    else:
        files, names = [path], [path.name]
    for p in files:
        _readable_file(p)
    sources = [Source(p, n, fmt or suffix_format(p) or "txt") for p, n in zip(files, names,
                                                                             strict=True)]
    kinds = {}
    for s in sources:
        kinds.setdefault(s.fmt, s.name)
    if len(kinds) > 1:
        (fa, na), (fb, nb) = list(kinds.items())[:2]
        raise DPTextError(
            f"input {spec} mixes formats: {na} is {fa}, {nb} is {fb}; give one format "
            f"(--input-format) or separate the files"
        )
    return sources
