"""Output formats: how one privatized record is written, and which conversions are allowed.

The output format follows ``--output-format`` or the output's suffix; a suffix that names a
format other than the input's is an error unless ``--output-format`` asks for the conversion
(a CSV written to ``x.jsonl`` must never silently stay CSV). JSON output is strict: no
``NaN``/``Infinity``, and U+2028, U+2029, U+0085 and lone surrogates are written as ``\\u``
escapes, so every reader splits records at ``\\n`` only and the round trip is lossless.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence

from dptext.corpus.columns import ColumnPlan
from dptext.corpus.records import TEXT_FIELD, Record
from dptext.corpus.sources import suffix_format
from dptext.errors import DPTextError

_UNSAFE_IN_JSON = re.compile("[\u2028\u2029\x85\ud800-\udfff]")
_LINE_BREAKS = re.compile("[\r\n]")  # what splits a record of dptext's text reader
#: conversions ``--output-format`` may ask for (the same format is always allowed)
CONVERSIONS = {("csv", "jsonl"), ("txt", "jsonl"), ("parquet", "jsonl"), ("jsonl", "txt"),
               ("csv", "txt"), ("parquet", "txt")}


def dumps_strict(obj) -> str:
    """One line of strict JSON (``ValueError`` for a non-finite number)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def output_format(output: str, input_fmt: str, requested: str | None) -> str:
    """The output format, or a one-line error for a mismatch nobody asked for."""
    if requested is not None:
        fmt = requested
    else:
        named = None if output == "-" else suffix_format(output)
        if named is not None and named != input_fmt:
            raise DPTextError(
                f"the output {output} names {named} but the input is {input_fmt}; name the "
                f"output .{input_fmt} or give --output-format {named} to convert"
            )
        fmt = input_fmt
    if fmt != input_fmt and (input_fmt, fmt) not in CONVERSIONS:
        raise DPTextError(f"cannot convert {input_fmt} input to {fmt} output")
    return fmt


class RecordWriter:
    """Encodes records of one input format into one output format (text formats; Parquet
    output is written by the shard writer from :meth:`row`)."""

    def __init__(self, input_fmt: str, output_fmt: str, fields: Sequence[str],
                 columns: ColumnPlan | None = None) -> None:
        self.input_fmt, self.output_fmt, self.fields = input_fmt, output_fmt, list(fields)
        self.columns = columns if input_fmt != "txt" else None
        if output_fmt == "txt" and input_fmt != "txt" and len(self.fields) != 1:
            raise DPTextError("plain-text output holds one field per line; give one --field")
        self.header: list[str] | None = None
        self._csv_cols: list[int] = []
        self._out_header: list[str] | None = None  # the CSV header as written (columns plan)
        self._out_cells: list = []  # (input index, converter or None) of each column written

    def set_header(self, header: list[str] | None, source_name: str) -> None:
        """The CSV header of the next source; every source must share the first's header."""
        if self.input_fmt != "csv" or header is None:
            return
        if self.header is None:
            if self.columns is not None:
                self.columns.check(header, source_name)
                self._out_header, self._out_cells = self.columns.csv_plan(header)
            self.header = list(header)
            self._csv_cols = [header.index(f) for f in self.fields]
        elif header != self.header:
            raise DPTextError(f"{source_name}: its CSV header differs from the first file's "
                              f"({','.join(header)} vs {','.join(self.header)})")

    def header_text(self) -> str:
        """What the output starts with (the CSV header line; nothing for other formats)."""
        if self.output_fmt == "csv" and self.header is not None:
            return self._csv_line(self._out_header if self.columns is not None else self.header)
        return ""

    @staticmethod
    def _csv_line(values: Sequence[str]) -> str:
        buf = io.StringIO()
        csv.writer(buf).writerow(values)
        return buf.getvalue()

    def row(self, record: Record, new: Sequence[str]) -> dict:
        """The record as a mapping with its fields replaced."""
        if self.input_fmt == "csv":
            row = dict(zip(self.header, record.payload, strict=True))
        elif self.input_fmt == "txt":
            row = {TEXT_FIELD: record.payload}
        else:
            row = dict(record.payload)
        for f, t in zip(self.fields, new, strict=True):
            row[f] = t
        return self.columns.apply(row) if self.columns is not None else row

    def encode(self, record: Record, new: Sequence[str]) -> str:
        """One output record as text; ``DPTextError`` (its reason) when it cannot be written."""
        out = self.output_fmt
        if out == "txt":
            text = _LINE_BREAKS.sub(" ", new[0])  # one record per line: a break would split it
            return text + (record.ending if self.input_fmt == "txt" else "\n")
        if out == "csv":
            values = list(record.payload)
            for c, t in zip(self._csv_cols, new, strict=True):
                values[c] = t
            if self.columns is not None:  # each column as its role says
                values = [values[i] if convert is None else convert(values[i])
                          for i, convert in self._out_cells]
            return self._csv_line(values)
        if self.input_fmt == "jsonl":
            obj = record.payload
            for f, t in zip(self.fields, new, strict=True):
                obj[f] = t
            if self.columns is not None:
                obj = self.columns.apply(obj)
        else:
            obj = self.row(record, new)
        try:
            return dumps_strict(obj) + "\n"
        except ValueError as err:  # NaN/Infinity (e.g. 1e400 parsed as inf)
            raise DPTextError(f"cannot be written as strict JSON ({err})") from None
        except TypeError as err:  # a Parquet value JSON has no type for (bytes, dates)
            raise DPTextError(f"cannot be written as JSON ({err})") from None
