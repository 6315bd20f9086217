"""Gold identifier annotations and the token-level scores measured against them.

Readers (:func:`read_gold`), each giving :class:`GoldRecord` (text, spans, id):

- JSONL of character spans: ``{"text": ..., "spans": [{"start": 0, "end": 4, "category":
  "NAME"}]}`` (``label`` or ``type`` may name the category; ``id`` is kept);
- JSONL of values without offsets (deidgate's Safe-Harbor seed notes): ``{"text": ...,
  "phi": [{"value": ..., "category": ...}]}`` - every occurrence of each value is a span;
- the i2b2 2014 XML format (``<TEXT>`` and ``<TAGS>`` with ``start``/``end`` character
  offsets; the category is the tag, e.g. ``NAME``, ``DATE``, ``ID``, ``CONTACT``): one file, or
  a directory of them (sorted by name).

Scores (:func:`score`): a *token* is a run of letters or digits; a gold token is one that
overlaps a gold span, a detected token one that overlaps a detected span. Recall per gold
category = its gold tokens that are detected / its gold tokens; precision per detected category
= its detected tokens inside any gold span / its detected tokens. Readability = the share of
non-identifier tokens released as they were (:func:`kept_tokens`).
"""

from __future__ import annotations

import difflib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dptext.errors import DPTextError

_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class GoldSpan:
    start: int
    end: int
    category: str


@dataclass
class GoldRecord:
    text: str
    spans: list[GoldSpan] = field(default_factory=list)
    id: str | None = None


def _check_spans(path, where: str, text: str, spans: list[GoldSpan]) -> None:
    for s in spans:
        if not (0 <= s.start < s.end <= len(text)):
            raise DPTextError(f"{path}: {where}: span {s.start}-{s.end} is outside the text "
                              f"({len(text)} characters)")


def read_i2b2(path: str | Path) -> GoldRecord:
    """One i2b2-format XML note (``<TEXT>`` and ``<TAGS>``)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise DPTextError(f"{path}: not i2b2 XML ({err})") from None
    text_el = root.find("TEXT")
    if text_el is None:
        raise DPTextError(f"{path}: no <TEXT> element (not the i2b2 format)")
    text = text_el.text or ""
    spans = []
    for tag in root.find("TAGS") if root.find("TAGS") is not None else []:
        try:
            spans.append(GoldSpan(int(tag.get("start")), int(tag.get("end")), tag.tag))
        except (TypeError, ValueError):
            raise DPTextError(f"{path}: tag {tag.tag} {tag.get('id')} has no integer "
                              "start/end") from None
    _check_spans(path, Path(path).name, text, spans)
    return GoldRecord(text, sorted(spans, key=lambda s: (s.start, s.end)), Path(path).stem)


def _from_values(text: str, phi: list) -> list[GoldSpan]:
    out = []
    for p in phi:
        value = p.get("value") if isinstance(p, dict) else None
        if not value:
            continue
        for m in re.finditer(re.escape(value), text):
            out.append(GoldSpan(m.start(), m.end(), str(p.get("category", "PHI")).upper()))
    return out


def read_gold_jsonl(path: str | Path) -> list[GoldRecord]:
    from dptext.io import read_json_objects

    out = []
    for number, obj in read_json_objects(path):
        text = obj.get("text")
        if not isinstance(text, str):
            raise DPTextError(f"{path}: line {number} has no \"text\" string")
        if isinstance(obj.get("spans"), list):
            spans = []
            for s in obj["spans"]:
                try:
                    cat = s.get("category") or s.get("label") or s.get("type") or "PHI"
                    spans.append(GoldSpan(int(s["start"]), int(s["end"]), str(cat).upper()))
                except (AttributeError, KeyError, TypeError, ValueError):
                    raise DPTextError(f"{path}: line {number}: each span needs integer "
                                      "\"start\" and \"end\"") from None
        elif isinstance(obj.get("phi"), list):
            spans = _from_values(text, obj["phi"])
        else:
            raise DPTextError(f"{path}: line {number} has neither \"spans\" (character "
                              "offsets) nor \"phi\" (values)")
        _check_spans(path, f"line {number}", text, spans)
        rid = obj.get("id")
        out.append(GoldRecord(text, sorted(spans, key=lambda s: (s.start, s.end)),
                              None if rid is None else str(rid)))
    return out


def read_gold(path: str | Path) -> list[GoldRecord]:
    """Gold records from a JSONL file, an i2b2 XML file, or a directory of i2b2 XML files."""
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*.xml"))
        if not files:
            raise DPTextError(f"{path}: no .xml files (i2b2 format) in the directory")
        return [read_i2b2(f) for f in files]
    if not p.is_file():
        raise DPTextError(f"{path}: no such file or directory")
    if p.suffix.lower() == ".xml":
        return [read_i2b2(p)]
    return read_gold_jsonl(p)


def tokens(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(text)]


def _overlapping(tok: tuple[int, int], spans: Sequence) -> list:
    a, b = tok
    return [s for s in spans if s.start < b and a < s.end]


def kept_tokens(original: str, released: str) -> list[bool]:
    """For each token of ``original``: whether it was released as it was, in place (the
    tokens of the longest matching blocks of the two token sequences)."""
    ot = [original[a:b] for a, b in tokens(original)]
    rt = [released[a:b] for a, b in tokens(released)]
    kept = [False] * len(ot)
    for block in difflib.SequenceMatcher(None, ot, rt, autojunk=False).get_matching_blocks():
        for i in range(block.a, block.a + block.size):
            kept[i] = True
    return kept


@dataclass
class Scores:
    """Token counts per category (:func:`score`), summed over records."""

    gold: dict[str, int] = field(default_factory=dict)
    found: dict[str, int] = field(default_factory=dict)  # gold tokens detected
    detected: dict[str, int] = field(default_factory=dict)
    correct: dict[str, int] = field(default_factory=dict)  # detected tokens inside gold
    verbatim: dict[str, int] = field(default_factory=dict)  # gold tokens kept in the release
    other: int = 0  # non-identifier tokens
    other_kept: int = 0
    records: int = 0

    def add(self, record: GoldRecord, detected: Sequence, released: str | None = None) -> None:
        self.records += 1
        kept = kept_tokens(record.text, released) if released is not None else None
        for i, tok in enumerate(tokens(record.text)):
            gold = _overlapping(tok, record.spans)
            found = _overlapping(tok, detected)
            for c in {g.category for g in gold}:
                self.gold[c] = self.gold.get(c, 0) + 1
                if found:
                    self.found[c] = self.found.get(c, 0) + 1
                if kept is not None and kept[i]:
                    self.verbatim[c] = self.verbatim.get(c, 0) + 1
            for c in {d.category for d in found}:
                self.detected[c] = self.detected.get(c, 0) + 1
                if gold:
                    self.correct[c] = self.correct.get(c, 0) + 1
            if not gold:
                self.other += 1
                self.other_kept += bool(kept is not None and kept[i])

    def recall(self, category: str | None = None) -> float:
        g = self.gold.get(category, 0) if category else sum(self.gold.values())
        f = self.found.get(category, 0) if category else sum(self.found.values())
        return f / g if g else float("nan")

    def precision(self, category: str | None = None) -> float:
        d = self.detected.get(category, 0) if category else sum(self.detected.values())
        c = self.correct.get(category, 0) if category else sum(self.correct.values())
        return c / d if d else float("nan")

    def verbatim_share(self, category: str | None = None) -> float:
        g = self.gold.get(category, 0) if category else sum(self.gold.values())
        v = self.verbatim.get(category, 0) if category else sum(self.verbatim.values())
        return v / g if g else float("nan")

    @property
    def readability(self) -> float:
        return self.other_kept / self.other if self.other else float("nan")

    def rows(self) -> list[dict]:
        """One row per gold category (recall, verbatim) and per detected category
        (precision), plus ``ALL``."""
        out = []
        for c in sorted(self.gold):
            out.append({"category": c, "gold_tokens": self.gold[c],
                        "recall": self.recall(c), "verbatim": self.verbatim_share(c)})
        out.append({"category": "ALL", "gold_tokens": sum(self.gold.values()),
                    "recall": self.recall(), "precision": self.precision(),
                    "verbatim": self.verbatim_share(), "readability": self.readability})
        return out

    def precision_rows(self) -> list[dict]:
        return [{"category": c, "detected_tokens": self.detected[c],
                 "precision": self.precision(c)} for c in sorted(self.detected)]


def score(records: Iterable[GoldRecord], detected: Iterable[Sequence],
          released: Iterable[str] | None = None) -> Scores:
    """Token scores of ``detected`` spans (objects with start, end, category; one list per
    record) against the gold; with ``released``, also the gold tokens kept verbatim and the
    readability."""
    s = Scores()
    rel = iter(released) if released is not None else None
    for record, found in zip(records, detected, strict=True):
        s.add(record, found, next(rel) if rel is not None else None)
    return s


def gold_to_jsonl(records: Iterable[GoldRecord]) -> str:
    """The records as JSONL of character spans (the first reader's format)."""
    return "".join(json.dumps({"id": r.id, "text": r.text,
                               "spans": [{"start": s.start, "end": s.end,
                                          "category": s.category} for s in r.spans]},
                              ensure_ascii=False) + "\n" for r in records)
