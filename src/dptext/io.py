"""File input/output: UTF-8 line reading with clear errors, atomic and durable writes
(:func:`atomic_write`, :func:`staged_write`), strict JSONL and CSV records
(docs/reliability.md, "Input files").

Every defect of an input file is a one-line :class:`DPTextError` naming the line (JSONL) or
the row and line (CSV); nothing is merged, padded, overwritten or dropped silently:

* JSONL (one JSON object per ``\n``-terminated line; ``\r\n`` too): a duplicate key, ``NaN``/
  ``Infinity`` (not JSON), a number outside the double range (``1e400``), an integer of more
  than 4300 digits and nesting too deep to parse are errors naming the line. Lone surrogate
  escapes (``"\ud800"``) are kept and written back as the same escapes (lossless).
  :func:`dumps_record` writes strict JSON on one line: no NaN, and U+2028, U+2029, U+0085 and
  lone surrogates escaped, so no reader splits a record or fails to encode it.
* CSV (:func:`read_csv`): any line ending (``\r\n``, ``\n``, old-Mac ``\r``); fields of any
  length (the csv module's 131,072-character limit is lifted; bound records by size upstream);
  an unterminated quote, a repeated header name, or a row with more or fewer fields than the
  header are errors naming the row. Blank lines are not records (skipped, as by every CSV
  reader).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from dptext.errors import DPTextError


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *, durable: bool = False,
                 temp: str | os.PathLike | None = None, permissions: int | None = None,
                 **kwargs) -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it into place on success only
    (the one helper for every file that replaces another; ``kwargs`` go to ``open``).

    ``durable=True``: the file is fsynced before the rename and its directory after it, so
    the new file survives a power failure once the ``with`` block has returned. ``temp``: the
    temporary path to write (the corpus engine names its own so that a later run can remove
    what a killed one left: :func:`dptext.corpus.paths.temp_beside`); by default a fresh
    ``.NAME.XXXXXXXX.tmp``. The file gets the permissions a plain ``open()`` would give it, or
    ``permissions`` (``0o600``: readable by the owner only, from its creation on)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise DPTextError(f"output directory does not exist: {path.parent}")
    if path.is_dir():
        raise DPTextError(f"output path is a directory: {path}")
    if temp is None:
        import tempfile  # here, like csv below: shutil, random (a reading command needs neither)

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    else:
        tmp = os.fspath(temp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            # mkstemp creates 0600; give the output the permissions a plain open() would
            os.fchmod(f.fileno(), file_mode() if permissions is None else permissions)
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


@contextlib.contextmanager
def staged_write(path: str | os.PathLike, mode: str = "wb", **kwargs) -> Iterator[IO]:
    """Write ``path`` itself, flushed and fsynced on success (removed on failure), with a
    plain file's permissions: a file that a later rename puts in place, as the corpus engine's
    two-step commit does (:func:`dptext.corpus.shards.stage`, then ``apply_commit``)."""
    path = Path(path)
    try:
        with open(path, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(path, file_mode())
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make the renames in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_mode() -> int:
    """The mode a plain ``open()`` would give a new file."""
    return 0o666 & ~_umask()


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


class _RecordError(Exception):
    """A defect found inside json.loads (raised by our hooks), given its line by the caller."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _RecordError(f"repeats the key {key!r}")
            seen.add(key)
    return obj


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _RecordError(f"has the number {text[:40]} outside the range of a double")
    return value


def _no_constant(name: str):
    raise _RecordError(f"has {name}, which is not JSON")


def loads_record(line: str) -> Any:
    """Parse one JSON value strictly (see the module docstring); raises :class:`_RecordError`
    or ``json.JSONDecodeError`` (the caller names the line)."""
    try:
        return json.loads(line, object_pairs_hook=_no_duplicates, parse_float=_finite_float,
                          parse_constant=_no_constant)
    except RecursionError:
        raise _RecordError("is nested too deeply to parse") from None
    except ValueError as err:
        if isinstance(err, json.JSONDecodeError):
            raise
        raise _RecordError(f"cannot be read ({str(err).splitlines()[0]})") from None


def read_json_objects(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSONL file (a BOM is dropped);
    a line that is not a strict JSON object is a one-line error naming it."""
    for number, line in read_lines(path, strip_bom=True):
        if not line.strip():
            continue
        try:
            obj = loads_record(line)
        except json.JSONDecodeError as err:
            raise DPTextError(f"{path}: line {number} is not valid JSON ({err.msg})") from None
        except _RecordError as err:
            raise DPTextError(f"{path}: line {number} {err}") from None
        if not isinstance(obj, dict):
            raise DPTextError(f"{path}: line {number} is not a JSON object")
        yield number, obj


# Characters json.dumps(ensure_ascii=False) writes raw that break JSONL readers: line
# separators some split on (U+2028, U+2029, NEL) and lone surrogates (not encodable as UTF-8).
_UNSAFE_IN_JSONL = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps_record(obj: Any) -> str:
    """``obj`` as strict JSON on one line (no trailing newline): UTF-8 text as is, except
    U+2028/U+2029/U+0085 and lone surrogates, which are written as ``\\uXXXX`` escapes; NaN,
    infinities and values JSON cannot hold are a DPTextError."""
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise DPTextError("record is nested too deeply to write") from None
    except (TypeError, ValueError) as err:
        raise DPTextError(f"record cannot be written as JSON ({err})") from None
    return _UNSAFE_IN_JSONL.sub(_escape, text) if _UNSAFE_IN_JSONL.search(text) else text


# ------------------------------------------------------------------------------ CSV
_TERMINATOR = re.compile(rb"\r\n|\r|\n")
_CHUNK = 1 << 20


def read_physical_lines(path: str | os.PathLike, *, strip_bom: bool = False
                        ) -> Iterator[tuple[int, str]]:
    """(line number, decoded line with its terminator) for ``\r\n``, ``\n`` and lone ``\r``
    line endings alike; non-UTF-8 bytes name the line."""

    def decode(number: int, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DPTextError(
                f"{path}: line {number} is not valid UTF-8 (byte {err.start + 1})") from None

    number = 0
    pending = b""
    with open_input(path) as f:
        first = True
        while True:
            chunk = f.read(_CHUNK)
            if first and strip_bom and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            first = False
            data = pending + chunk
            if not chunk:
                if data:
                    number += 1
                    yield number, decode(number, data)
                return
            start = 0
            for m in _TERMINATOR.finditer(data):
                if m.group() == b"\r" and m.end() == len(data):
                    break  # a CR at the end of a chunk may be the first half of CRLF
                number += 1
                yield number, decode(number, data[start : m.end()])
                start = m.end()
            pending = data[start:]


def read_csv(path: str | os.PathLike) -> tuple[list[str], Iterator[tuple[int, int, list[str]]]]:
    """(header, rows) of a CSV file: each row as (row number, first line, fields), row 1 being
    the first after the header. The header is checked at once (present, no repeated name);
    the rows as they are read (exactly as many fields as the header, quotes closed)."""
    import csv

    csv.field_size_limit(min(sys.maxsize, 2**63 - 1))  # any field length: bound records upstream
    lines = (line for _, line in read_physical_lines(path, strip_bom=True))
    reader = csv.reader(lines, strict=True)

    def next_row(row_number: int) -> tuple[int, list[str]] | None:
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return None
            except csv.Error as err:
                what = "the header" if row_number == 0 else f"CSV row {row_number}"
                message = str(err)
                if "unexpected end of data" in message:
                    message = "a quote is never closed (the field would run to the end of file)"
                raise DPTextError(f"{path}: {what} (line {start}): {message}") from None
            if fields:  # blank lines are not records
                return start, fields

    first = next_row(0)
    if first is None:
        raise DPTextError(f"{path}: empty CSV file (no header)")
    header = first[1]
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        if name in seen:
            raise DPTextError(f"{path}: the CSV header repeats the column {name!r} (columns "
                              f"{seen[name]} and {i}); each column needs its own name")
        seen[name] = i

    def rows() -> Iterator[tuple[int, int, list[str]]]:
        number = 0
        while True:
            number += 1
            got = next_row(number)
            if got is None:
                return
            line, fields = got
            if len(fields) != len(header):
                more = "more" if len(fields) > len(header) else "fewer"
                raise DPTextError(
                    f"{path}: CSV row {number} (line {line}) has {len(fields)} fields, {more} "
                    f"fields than the header ({len(header)} columns)")
            yield number, line, fields

    return header, rows()
