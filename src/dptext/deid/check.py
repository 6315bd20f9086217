"""The leak check anyone can run on a release: ``dptext check --original IN --released OUT``.

Records are matched by position, or by ``id_field`` (a release from ``sanitize --check`` or
``--on-error skip`` lacks the withheld records). In each original record, every identifier the
detector finds (both engines, every rule recognizer, the user's patterns and deny list, the
residual net) and every number of four digits or more is looked up in the released record
(:func:`dptext.detect.leaks.survivors`: whole surface, name parts, digits only). The result
counts survivors per category and lists the records by index - never a value.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dptext.detect.entities import EntityDetector
from dptext.detect.leaks import survivors
from dptext.detect.residual import ResidualNet
from dptext.errors import DPTextError


def read_records(path: str | Path, fields: Sequence[str],
                 id_field: str | None = None) -> list[tuple[str | None, list[str]]]:
    """(id, texts of ``fields``) per record of a JSONL, CSV or text file (one record a
    line; a text file has one field)."""
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"{path}: no such file")
    suffix = p.suffix.lower()
    out: list[tuple[str | None, list[str]]] = []
    if suffix in (".jsonl", ".json", ".ndjson"):
        from dptext.io import read_json_objects

        for number, obj in read_json_objects(p):
            texts = []
            for f in fields:
                value = obj.get(f)
                if not isinstance(value, str):
                    raise DPTextError(f"{path}: line {number} has no string field {f!r}")
                texts.append(value)
            rid = obj.get(id_field) if id_field else None
            if id_field and rid is None:
                raise DPTextError(f"{path}: line {number} has no {id_field!r} field")
            out.append((None if rid is None else str(rid), texts))
    elif suffix == ".csv":
        with open(p, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            missing = [c for c in [*fields, *([id_field] if id_field else [])]
                       if c not in (reader.fieldnames or [])]
            if missing:
                raise DPTextError(f"{path}: no column {missing[0]!r} in the CSV header")
            for row in reader:
                out.append((row[id_field] if id_field else None, [row[c] for c in fields]))
    else:
        if id_field:
            raise DPTextError(f"{path}: --id-field needs a JSONL or CSV file")
        lines = p.read_text(encoding="utf-8").splitlines()
        out = [(None, [line]) for line in lines]
    return out


@dataclass
class CheckResult:
    """Survivors per category, the records (indices of the original) that leak, counts."""

    records: int = 0
    compared: int = 0
    missing: int = 0  # original records absent from the release (withheld): nothing leaked
    by_category: dict[str, int] = field(default_factory=dict)
    leaking_records: list[int] = field(default_factory=list)
    detected: list[list] = field(default_factory=list)  # per compared record, per field

    @property
    def leaks(self) -> int:
        return sum(self.by_category.values())

    def to_dict(self) -> dict:
        return {"records": self.records, "compared": self.compared, "missing": self.missing,
                "leaks": self.leaks, "by_category": dict(sorted(self.by_category.items())),
                "leaking_records": self.leaking_records}


def pair_records(original: list, released: list, id_field: str | None) -> Iterator[tuple]:
    """(index, original texts, released texts or None) - by id, or by position."""
    if id_field:
        by_id: dict[str, list[str]] = {}
        for rid, texts in released:
            by_id[rid] = texts
        for i, (rid, texts) in enumerate(original):
            yield i, texts, by_id.get(rid)
        return
    if len(original) != len(released):
        raise DPTextError(f"{len(original)} original records but {len(released)} released: "
                          "give --id-field to match them by a field both files carry")
    for i, (o, r) in enumerate(zip(original, released, strict=True)):
        yield i, o[1], r[1]


def check_records(pairs: Iterator[tuple], detector: EntityDetector,
                  residual: ResidualNet | None = None, batch: int = 64) -> CheckResult:
    """Run the leak check over ``(index, original texts, released texts)`` pairs."""
    result = CheckResult()
    todo: list[tuple[int, str, str]] = []

    def flush() -> None:
        found = detector.detect([o for _, o, _ in todo])
        for (i, o, r), ents in zip(todo, found, strict=True):
            if residual is not None:
                ents = list(ents) + residual.find(o, ents)
            result.detected.append(ents)
            left = survivors(o, r, ents)
            for s in left:
                result.by_category[s.category] = result.by_category.get(s.category, 0) + 1
            if left and (not result.leaking_records or result.leaking_records[-1] != i):
                result.leaking_records.append(i)
        todo.clear()

    for i, otexts, rtexts in pairs:
        result.records += 1
        if rtexts is None:
            result.missing += 1
            continue
        result.compared += 1
        for o, r in zip(otexts, rtexts, strict=True):
            todo.append((i, o, r))
        if len(todo) >= batch:
            flush()
    if todo:
        flush()
    return result


def format_result(result: CheckResult, max_leaks: int) -> str:
    lines = [f"leak check: {result.compared} records compared"
             + (f", {result.missing} absent from the release (withheld)" if result.missing
                else "")]
    if result.by_category:
        lines.append("  surviving identifiers per category:")
        for c, n in sorted(result.by_category.items()):
            lines.append(f"    {c:<16} {n}")
        shown = ", ".join(str(i) for i in result.leaking_records[:50])
        more = len(result.leaking_records) - 50
        lines.append(f"  records with a survivor ({len(result.leaking_records)}, by index from "
                     f"0): {shown}" + (f" and {more} more" if more > 0 else ""))
    verdict = "PASS" if result.leaks <= max_leaks else "FAIL"
    lines.append(f"  {verdict}: {result.leaks} surviving identifiers (--max-leaks {max_leaks})")
    return "\n".join(lines)


def result_json(result: CheckResult) -> str:
    return json.dumps(result.to_dict())
