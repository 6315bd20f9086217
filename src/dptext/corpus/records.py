"""Records out of a source: a thin layer over the line readers of :mod:`dptext.io`.

JSONL comes from :func:`dptext.io.read_json_objects`, plain text and CSV lines from
:func:`dptext.io.read_lines` (UTF-8 checked, line numbers in every message); CSV rows are split
here with :mod:`csv` in strict mode, Parquet is read with pyarrow (an optional extra). Each
record carries the texts of the chosen fields, or the reason it cannot be privatized (a missing
field, a non-string value, a ragged CSV row, a text above ``--max-record-bytes``): the engine
then fails or, with ``--on-error skip``, writes it to the rejects file. A file that cannot be
parsed at all (invalid JSON or UTF-8, an unterminated CSV quote) is an error either way.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dptext.corpus.sources import Source
from dptext.errors import DPTextError
from dptext.io import read_json_objects, read_lines, read_physical_lines

#: default of ``--max-record-bytes``: the UTF-8 size of the privatized fields of one record.
#: Word mechanisms need about 60 bytes of memory per input character while a record is
#: privatized, so 4 MiB of text costs about 250 MB at most.
MAX_RECORD_BYTES = 4 << 20
TEXT_FIELD = "text"  # the one field of a plain-text record


@dataclass(slots=True)
class Record:
    """One input record: its 1-based ``ordinal`` in the source, the ``line`` it starts on,
    the parsed ``payload`` (dict for JSONL/Parquet, list of values for CSV, the line without
    its ending for text), the ``texts`` of the privatized fields (in field order), and
    ``error``: why it cannot be privatized (None when it can)."""

    ordinal: int
    line: int
    payload: Any
    texts: list[str] | None
    error: str | None = None
    ending: str = ""


def _too_large(texts: Sequence[str], limit: int) -> str | None:
    total = 0
    for t in texts:
        n = len(t)
        total += n if n * 4 <= limit else len(t.encode("utf-8", "surrogatepass"))
    if total > limit:
        return (f"the privatized text is {total} bytes, over --max-record-bytes {limit} "
                f"(raise it if this record is meant to be one text)")
    return None


def _texts_of(get, fields: Sequence[str], limit: int) -> tuple[list[str] | None, str | None]:
    texts = []
    for f in fields:
        found, value = get(f)
        if not found:
            return None, f"has no field {f!r}"
        if not isinstance(value, str):
            kind = "null" if value is None else type(value).__name__
            return None, f"field {f!r} is not a string ({kind})"
        texts.append(value)
    return texts, _too_large(texts, limit)


class RecordReader:
    """Iterate the records of one source; ``header`` is the CSV header (after iteration
    starts), ``schema`` the Parquet schema."""

    def __init__(self, source: Source, fields: Sequence[str], *,
                 max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        self.source, self.fields, self.limit = source, list(fields), max_record_bytes
        self.header: list[str] | None = None
        self.schema = None
        self._where = "/dev/stdin" if source.path is None else str(source.path)

    def __iter__(self) -> Iterator[Record]:
        reader = {"jsonl": self._jsonl, "csv": self._csv, "txt": self._txt,
                  "parquet": self._parquet}[self.source.fmt]
        return reader()

    # ------------------------------------------------------------------ formats
    def _jsonl(self) -> Iterator[Record]:
        for ordinal, (number, obj) in enumerate(read_json_objects(self._where), start=1):
            texts, error = _texts_of(lambda f, o=obj: (f in o, o.get(f)), self.fields,
                                     self.limit)
            yield Record(ordinal, number, obj, texts, error and f"line {number} {error}")

    def _txt(self) -> Iterator[Record]:
        for number, line in read_lines(self._where):
            body = line.rstrip("\r\n")
            texts = [body]
            yield Record(number, number, body, texts,
                         (e := _too_large(texts, self.limit)) and f"line {number}: {e}",
                         ending=line[len(body):])

    def _csv(self) -> Iterator[Record]:
        # any line ending (\r\n, \n, a lone \r) through dptext.io; the csv module's own field
        # limit (131072 characters) would crash on a long field: the privatized fields are
        # checked against --max-record-bytes below instead
        lines = (line for _, line in read_physical_lines(self._where, strip_bom=True))
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        rows = csv.reader(lines, strict=True)
        where = self._where
        ordinal, start = 0, 1
        try:
            header = next(rows, None)
            if header is None:
                raise DPTextError(f"{where}: empty CSV file (no header)")
            self.header = header
            seen: dict[str, int] = {}
            for i, col in enumerate(header, start=1):
                if col in seen:
                    raise DPTextError(f"{where}: the CSV header repeats the column {col!r} "
                                      f"(columns {seen[col]} and {i}); each column needs its "
                                      f"own name")
                seen[col] = i
            missing = [f for f in self.fields if f not in seen]
            if missing:
                raise DPTextError(f"{where}: no column {missing[0]!r} in the CSV header")
            index = {c: i for i, c in enumerate(header)}
            cols = [index[f] for f in self.fields]
            start = rows.line_num + 1
            for row in rows:
                ordinal += 1
                end = rows.line_num  # the line the row ends on
                if not row:  # a blank line is not a record
                    ordinal -= 1
                    start = end + 1
                    continue
                at = f"CSV row {ordinal} (line {start})"
                if len(row) != len(header):
                    more = "more" if len(row) > len(header) else "fewer"
                    error = (f"{at} has {len(row)} fields, {more} fields than the header "
                             f"({len(header)} columns)")
                    yield Record(ordinal, start, row, None, error)
                else:
                    texts = [row[c] for c in cols]
                    e = _too_large(texts, self.limit)
                    yield Record(ordinal, start, row, texts, e and f"{at}: {e}")
                start = end + 1
        except csv.Error as err:
            message = str(err)
            if "unexpected end of data" in message:
                message = "a quote is never closed (the field would run to the end of file)"
            raise DPTextError(f"{where}: CSV row {ordinal + 1} (line {start}): {message}"
                              ) from None

    def _parquet(self) -> Iterator[Record]:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise DPTextError("reading Parquet needs pyarrow: pip install 'dptext[parquet]'"
                              ) from None
        try:
            f = pq.ParquetFile(self._where)
        except Exception as err:  # pyarrow raises its own error types for a bad file
            raise DPTextError(f"{self._where} is not a readable Parquet file ({err})") from None
        self.schema = f.schema_arrow
        seen: dict[str, int] = {}
        for i, col in enumerate(self.schema.names, start=1):
            if col in seen:  # a row as a dict would keep only the last of them (issue 47 N4)
                raise DPTextError(f"{self._where}: the Parquet schema repeats the column "
                                  f"{col!r} (columns {seen[col]} and {i}); each column needs "
                                  f"its own name")
            seen[col] = i
        missing = [c for c in self.fields if c not in self.schema.names]
        if missing:
            raise DPTextError(f"{self._where}: no column {missing[0]!r} in the Parquet schema")
        ordinal = 0
        for batch in f.iter_batches(batch_size=1024):
            for row in batch.to_pylist():
                ordinal += 1
                texts, error = _texts_of(lambda c, r=row: (c in r, r.get(c)), self.fields,
                                         self.limit)
                yield Record(ordinal, ordinal, row, texts, error and f"row {ordinal} {error}")
