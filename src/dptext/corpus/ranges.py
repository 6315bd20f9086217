"""Byte ranges of line-based files: the driver cuts, the workers read.

For plain text and JSONL files the driver never decodes a record: :func:`scan` finds, with one
vectorized pass over the raw bytes, where every batch of ``batch_size`` records starts (its byte
offset, the ordinal of its first record and the line it is on), and a worker reads and decodes
its own range with :func:`read_range`. Both follow exactly the readers of :mod:`dptext.io` that
:class:`~dptext.corpus.records.RecordReader` uses, so a range gives the same records, with the
same ordinals, line numbers and messages:

* plain text (``read_lines``): a record per line split at ``\\n`` (a ``\\r`` stays in the line,
  and is then its ending); every line is a record, blank ones too; no byte order mark handling.
* JSONL (``read_json_objects``): a record per line that is not blank after ``str.strip()``; a
  UTF-8 byte order mark at the start of the file is dropped.

A batch's range runs from its first record to the next batch's first record (blank lines in
between belong to the earlier batch, which skips them); the last runs to the end of the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from dptext.corpus.records import Record, _texts_of, _too_large
from dptext.errors import DPTextError
from dptext.io import loads_record

RANGE_FORMATS = ("txt", "jsonl")
BOM = b"\xef\xbb\xbf"
_BLOCK = 8 << 20
_NL = ord("\n")


@dataclass(frozen=True, slots=True)
class Range:
    """One batch: bytes ``[start, end)`` of its source, ``records`` records from the
    ``ordinal``-th, the first on line ``line``."""

    start: int
    end: int
    ordinal: int
    line: int
    records: int


def _blank_json_line(raw: bytes) -> bool:
    """Whether ``read_json_objects`` skips this line (blank after ``str.strip()``)."""
    stripped = raw.strip()
    if not stripped:
        return True
    if stripped[0] < 0x80 and stripped[0] >= 0x20:
        return False  # an ASCII character str.strip() keeps: certainly not blank
    try:
        return not raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return False  # the worker reports the bad bytes


def scan(path: os.PathLike | str, fmt: str, batch_size: int) -> Iterator[Range]:
    """The batches of a plain-text or JSONL file, in order (constant memory: 8 MiB blocks)."""
    if fmt not in RANGE_FORMATS:
        raise ValueError(fmt)
    starts: list[tuple[int, int]] = []  # (offset, line) of this block's batch-starting records
    count = 0  # records so far
    line = 1  # number of the line that starts at `offset`
    offset = 0  # file offset of `carry`'s first byte
    carry = b""
    pending: tuple[int, int, int] | None = None  # (start, ordinal, line) of the open batch
    first = True
    with open(path, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            data = carry + block
            if not block:
                last = len(data)  # the final line, unterminated (or nothing)
            else:
                last = data.rfind(b"\n") + 1
                if last == 0:
                    carry = data
                    continue
            if last == 0:
                break
            arr = np.frombuffer(data, dtype=np.uint8, count=last)
            ends = np.flatnonzero(arr == _NL) + 1
            if not len(ends) or ends[-1] != last:
                ends = np.append(ends, last)
            line_starts = np.concatenate(([0], ends[:-1]))
            skip0 = 3 if first and fmt == "jsonl" and data.startswith(BOM) else 0
            if fmt == "txt":
                rec = np.arange(len(line_starts))
            else:
                heads = line_starts.copy()
                heads[0] += skip0
                ok = heads < ends
                ok &= arr[np.minimum(heads, last - 1)] == ord("{")
                rec_mask = ok.copy()
                for i in np.flatnonzero(~ok):  # not starting with "{": look closer (rare)
                    rec_mask[i] = not _blank_json_line(data[int(heads[i]):int(ends[i])])
                rec = np.flatnonzero(rec_mask)
            first = False
            n = len(rec)
            # records whose 0-based ordinal is a multiple of batch_size start a batch
            k = (-count) % batch_size
            for i in rec[k::batch_size]:
                starts.append((offset + int(line_starts[i]), line + int(i)))
            for j, (s, ln) in enumerate(starts):
                ordinal = count + k + j * batch_size + 1
                if pending is not None:
                    ps, po, pl = pending
                    yield Range(ps, s, po, pl, batch_size)
                pending = (s, ordinal, ln)
            starts.clear()
            count += n
            line += len(line_starts)
            offset += last
            carry = data[last:]
            if not block:
                break
    if pending is not None:
        ps, po, pl = pending
        yield Range(ps, offset, po, pl, count - po + 1)


def _decode_lines(where: str, raw: bytes, first_line: int, bom: bool) -> list[str]:
    """``raw`` split at ``\\n`` (each line with its ending) and decoded; a line that is not
    UTF-8 is the reader's one-line error."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        pieces = raw.split(b"\n")
        for n, piece in enumerate(pieces):
            if bom and n == 0 and piece.startswith(BOM):
                piece = piece[3:]
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DPTextError(f"{where}: line {first_line + n} is not valid UTF-8 "
                                  f"(byte {err.start + 1})") from None
        raise  # pragma: no cover - a split at \n cannot make valid pieces of invalid text
    if bom and text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        return [ln + "\n" for ln in lines]
    return [ln + "\n" for ln in lines[:-1]] + [lines[-1]]


def read_range(where: str, fmt: str, rng: Range, fields: Sequence[str], limit: int,
               fd: int | None = None) -> list[Record]:
    """The records of one range, as :class:`~dptext.corpus.records.RecordReader` gives them."""
    if fd is None:
        with open(where, "rb") as f:
            raw = os.pread(f.fileno(), rng.end - rng.start, rng.start)
    else:
        raw = os.pread(fd, rng.end - rng.start, rng.start)
    if len(raw) != rng.end - rng.start:
        raise DPTextError(f"{where} changed while it was read (it is shorter than before)")
    lines = _decode_lines(where, raw, rng.line, fmt == "jsonl" and rng.start == 0)
    out: list[Record] = []
    if fmt == "txt":
        for n, line in enumerate(lines, start=rng.line):
            body = line.rstrip("\r\n")
            texts = [body]
            error = _too_large(texts, limit)
            out.append(Record(n, n, body, texts, error and f"line {n}: {error}",
                              ending=line[len(body):]))
    else:
        ordinal = rng.ordinal
        for number, line in enumerate(lines, start=rng.line):
            if not line.strip():
                continue
            try:
                obj = loads_record(line)
            except json.JSONDecodeError as err:
                raise DPTextError(f"{where}: line {number} is not valid JSON ({err.msg})"
                                  ) from None
            except Exception as err:  # dptext.io's record defect (a duplicate key, 1e400...)
                raise DPTextError(f"{where}: line {number} {err}") from None
            if not isinstance(obj, dict):
                raise DPTextError(f"{where}: line {number} is not a JSON object")
            texts, error = _texts_of(lambda f, o=obj: (f in o, o.get(f)), fields, limit)
            out.append(Record(ordinal, number, obj, texts, error and f"line {number} {error}"))
            ordinal += 1
    if len(out) != rng.records:
        raise DPTextError(f"{where} changed while it was read (records {rng.ordinal} to "
                          f"{rng.ordinal + rng.records - 1} are not where they were)")
    return out
