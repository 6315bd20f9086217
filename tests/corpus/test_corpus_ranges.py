"""Byte ranges (dptext.corpus.ranges): the driver cuts plain-text and JSONL files without decoding
them, and a worker's range gives exactly the records, ordinals, line numbers and messages of the
readers in dptext.io (RecordReader) - on random files with every line-ending, blank-line and BOM
case, with blocks small enough that lines straddle them."""

from __future__ import annotations

import json
import random

import pytest

from dptext.corpus import CorpusJob, ranges
from dptext.corpus.driver import prepare
from dptext.corpus.records import RecordReader
from dptext.corpus.sources import Source
from dptext.errors import DPTextError


def _random_file(rnd: random.Random, fmt: str) -> str:
    parts = []
    if rnd.random() < 0.3:
        parts.append("\ufeff")
    for i in range(rnd.randint(0, 40)):
        end = rnd.choice(["\n", "\r\n"])
        if fmt == "jsonl":
            if rnd.random() < 0.15:  # blank for str.strip(), not all for bytes.strip()
                parts.append(rnd.choice(["", "  ", "\x1c", "\u3000", "\t", "\x85"]) + end)
            else:
                obj = {"text": "ab é" * rnd.randint(0, 30), "i": i}
                if rnd.random() < 0.1:
                    obj = {"i": i}  # no text field: a record with an error
                parts.append(rnd.choice(["", " "]) + json.dumps(obj, ensure_ascii=False) + end)
        else:
            parts.append("x é\r" * rnd.randint(0, 30) + rnd.choice([end, "\r\r\n"]))
    if parts and rnd.random() < 0.3:
        parts[-1] = parts[-1].rstrip("\r\n")  # the last line unterminated
    return "".join(parts)


def _fields(records):
    return [(r.ordinal, r.line, r.payload, r.texts, r.error, r.ending) for r in records]


@pytest.mark.parametrize("fmt", ["txt", "jsonl"])
def test_ranges_give_the_readers_records(fmt, tmp_path, monkeypatch):
    monkeypatch.setattr(ranges, "_BLOCK", 64)  # lines straddle blocks
    rnd = random.Random(fmt)
    for trial in range(150):
        path = tmp_path / f"f{trial}.{fmt}"
        path.write_text(_random_file(rnd, fmt), encoding="utf-8", newline="")
        want = list(RecordReader(Source(path, path.name, fmt), ["text"], max_record_bytes=40))
        size = rnd.randint(1, 7)
        cut = list(ranges.scan(path, fmt, size))
        got = [r for c in cut for r in ranges.read_range(str(path), fmt, c, ["text"], 40)]
        assert _fields(got) == _fields(want), trial
        assert all(c.records == size for c in cut[:-1])
        assert [c.ordinal for c in cut] == [want[i].ordinal for i in range(0, len(want), size)]
        if cut:  # the ranges tile the file from its first record (blank lines before it: none)
            assert cut[-1].end == path.stat().st_size
            assert all(a.end == b.start for a, b in zip(cut, cut[1:], strict=False))


def test_invalid_utf8_in_a_range_is_the_readers_error(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbro\xffken\n")
    with pytest.raises(DPTextError) as want:
        list(RecordReader(Source(path, path.name, "txt"), ["text"]))
    (cut,) = ranges.scan(path, "txt", 10)
    with pytest.raises(DPTextError) as got:
        ranges.read_range(str(path), "txt", cut, ["text"], 1000)
    assert str(got.value) == str(want.value) == f"{path}: line 3 is not valid UTF-8 (byte 4)"


def test_a_file_changed_under_the_worker_is_refused(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"}\n')
    (cut,) = ranges.scan(path, "jsonl", 10)
    path.write_text('{"text": "a"}\n\n')
    with pytest.raises(DPTextError, match="changed while it was read"):
        ranges.read_range(str(path), "jsonl", cut, ["text"], 1000)


def test_the_driver_hands_out_ranges_not_records(tmp_path):
    from dptext.mechanisms.registry import mechanism

    path = tmp_path / "in.txt"
    path.write_text("".join(f"line {i}\n" for i in range(10)))
    runner = prepare(CorpusJob(mechanism("custext", epsilon=1.0), str(path),
                               str(tmp_path / "out.txt"), batch_size=4))
    tasks = list(runner._batches(0))
    assert [t.records for t in tasks] == [None] * 3
    assert [(t.range.ordinal, t.range.records) for t in tasks] == [(1, 4), (5, 4), (9, 2)]
    assert [t.batch_id for t in runner._batches(2)] == [2]  # a resumed run skips batches
