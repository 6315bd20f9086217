"""Stream a file (JSONL, CSV or plain text lines) through a mechanism, atomically."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path

from dptext.accounting.report import PrivacyReport
from dptext.errors import DPTextError
from dptext.io import atomic_write, dumps_record, read_csv, read_json_objects, read_lines
from dptext.mechanisms.base import Mechanism
from dptext.rng import RngLike, as_generator

FORMATS = ("jsonl", "csv", "txt")
BATCH = 512


def detect_format(path: str | os.PathLike, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise DPTextError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
        return fmt
    suffix = Path(path).suffix.lower().lstrip(".")
    return {"jsonl": "jsonl", "ndjson": "jsonl", "csv": "csv"}.get(suffix, "txt")


def _jsonl_records(path, field: str) -> Iterator[tuple[dict, str]]:
    for number, obj in read_json_objects(path):
        if field not in obj:
            raise DPTextError(f"{path}: line {number} has no field {field!r}")
        if not isinstance(obj[field], str):
            raise DPTextError(f"{path}: line {number}: field {field!r} is not a string")
        yield obj, obj[field]


def _batches(items: Iterator, size: int = BATCH) -> Iterator[list]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def sanitize(
    mechanism: Mechanism,
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    *,
    field: str = "text",
    fmt: str | None = None,
    rng: RngLike = None,
    progress: bool = False,
) -> PrivacyReport:
    """Privatize every record of ``input_path`` into ``output_path``; returns the combined report.

    JSONL: ``field`` of each object is replaced. CSV: column ``field`` is replaced. Anything
    else: each line is a text (line endings kept). The output appears only when complete.
    """
    fmt = detect_format(input_path, fmt)
    gen = as_generator(rng)
    reports: list[PrivacyReport] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit=" records", desc=f"sanitize ({mechanism.name})")

    def run(texts: list[str]) -> list[str]:
        results = mechanism.privatize_batch(texts, rng=gen)
        reports.extend(r.report for r in results)
        if bar is not None:
            bar.update(len(texts))
        return [r.text for r in results]

    try:
        if fmt == "jsonl":
            with atomic_write(output_path, encoding="utf-8", newline="\n") as out:
                for batch in _batches(_jsonl_records(input_path, field)):
                    for (obj, _), new in zip(batch, run([t for _, t in batch]), strict=True):
                        obj[field] = new
                        out.write(dumps_record(obj) + "\n")
        elif fmt == "csv":
            header, rows = read_csv(input_path)  # strict: docs/reliability.md, "Input files"
            if field not in header:
                raise DPTextError(f"{input_path}: no column {field!r} in the CSV header")
            column = header.index(field)
            with atomic_write(output_path, encoding="utf-8", newline="") as out:
                writer = csv.writer(out)
                writer.writerow(header)
                for batch in _batches(fields for _, _, fields in rows):
                    for fields, new in zip(batch, run([r[column] for r in batch]), strict=True):
                        fields[column] = new
                        writer.writerow(fields)
        else:
            with atomic_write(output_path, encoding="utf-8", newline="") as out:
                for batch in _batches(line for _, line in read_lines(input_path)):
                    out.writelines(run(batch))
    finally:
        if bar is not None:
            bar.close()
    if not reports:
        return PrivacyReport(mechanism.name, mechanism.guarantee, [], records=0)
    return type(reports[0]).combine(reports)  # a subclass (e.g. DP-MLM add/delete) keeps its fields
