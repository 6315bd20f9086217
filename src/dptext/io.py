"""File input/output: UTF-8 line reading with clear errors, atomic writes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from dptext.errors import DPTextError


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it into place on success only."""
    path = Path(path)
    if not path.parent.is_dir():
        raise DPTextError(f"output directory does not exist: {path.parent}")
    if path.is_dir():
        raise DPTextError(f"output path is a directory: {path}")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            # mkstemp creates 0600; give the output the permissions a plain open() would
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            yield f
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_output_path(path: str | os.PathLike, *, what: str = "output") -> Path:
    """An output path that may be written: a regular file or a missing path in an existing
    directory (never a directory, a device, a FIFO or a socket)."""
    path = Path(path)
    if path.is_dir():
        raise DPTextError(f"{what} path is a directory: {path}")
    if path.exists() and not path.is_file():
        raise DPTextError(f"{what} path is not a regular file: {path}")
    if not path.parent.is_dir():
        raise DPTextError(f"{what} directory does not exist: {path.parent}")
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def open_input(path: str | os.PathLike) -> IO[bytes]:
    path = Path(path)
    if path.is_dir():
        raise DPTextError(f"input is a directory, not a file: {path}")
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise DPTextError(f"no such file: {path}") from None
    except OSError as err:
        raise DPTextError(f"cannot read {path}: {err.strerror}") from None


def read_lines(path: str | os.PathLike, *, strip_bom: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, decoded line with its line ending); non-UTF-8 bytes name the line.

    ``strip_bom``: drop a UTF-8 byte order mark at the start of the file (spreadsheet exports
    write one; it is not part of a JSON document or a CSV header).
    """
    with open_input(path) as f:
        for number, raw in enumerate(f, start=1):
            if strip_bom and number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DPTextError(
                    f"{path}: line {number} is not valid UTF-8 (byte {err.start + 1})"
                ) from None


def read_json_objects(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSONL file (a BOM is dropped);
    a line that is not a JSON object is a one-line error naming it."""
    import json

    for number, line in read_lines(path, strip_bom=True):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise DPTextError(f"{path}: line {number} is not valid JSON ({err.msg})") from None
        if not isinstance(obj, dict):
            raise DPTextError(f"{path}: line {number} is not a JSON object")
        yield number, obj
