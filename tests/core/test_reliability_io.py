"""Input files that used to crash or silently change data (issue 12, "Inputs that crash or
silently change data"): each is now a one-line error naming the line/row, or a lossless round
trip; output JSONL is always strict JSON, one record per line."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dptext
from dptext import DPTextError, EmbeddingSpace
from dptext import io as dio
from dptext.sanitize import sanitize


@pytest.fixture(scope="module")
def mech():
    words = ["alice", "bob", "met", "in", "paris", "the", "a", "b", "x", "y"] + [
        f"w{i}" for i in range(30)]
    rng = np.random.default_rng(1)
    space = EmbeddingSpace(words, rng.standard_normal((len(words), 6)), name="io-test")
    return dptext.mechanism("custext", space=space, epsilon=2.0, k=5).fit(cache=False)


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


# ------------------------------------------------------------------------------ CSV
def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_csv_field_longer_than_the_csv_module_limit(tmp_path, mech):
    long = "alice " * 40_000  # 240,000 characters > 131,072
    src = write(tmp_path / "in.csv", f"id,text\n1,{long}\n2,bob\n")
    header, rows = dio.read_csv(src)
    rows = list(rows)
    assert header == ["id", "text"] and len(rows) == 2 and rows[0][2][1] == long
    sanitize(mech, src, tmp_path / "out.csv", rng=0, keep="id")
    out = list(csv.reader(open(tmp_path / "out.csv", newline="", encoding="utf-8")))
    assert len(out) == 3 and len(out[1][1].split()) == 40_000


@pytest.mark.parametrize("ending", ["\r", "\n", "\r\n"])
def test_csv_any_line_ending(tmp_path, mech, ending):
    src = write(tmp_path / "in.csv", ending.join(["id,text", "1,alice met bob",
                                                  '2,"in\rparis\r\nmulti\nline"', "3,bob"])
                + ending)
    header, rows = dio.read_csv(src)
    got = list(rows)
    assert [r[0] for r in got] == [1, 2, 3]
    assert [r[1] for r in got] == [2, 3, 7]  # first line of each record
    assert got[1][2][1] == "in\rparis\r\nmulti\nline"  # quoted line breaks kept exactly
    report = sanitize(mech, src, tmp_path / "out.csv", rng=0, keep="id")
    assert report.records == 3
    out = list(csv.reader(open(tmp_path / "out.csv", newline="", encoding="utf-8")))
    assert [r[0] for r in out] == ["id", "1", "2", "3"]


def test_csv_unterminated_quote_is_an_error_naming_the_row(tmp_path, mech):
    src = write(tmp_path / "in.csv", 'id,text\n1,alice\n2,"bob met\n3,paris\n4,x\n')
    with pytest.raises(DPTextError) as err:
        sanitize(mech, src, tmp_path / "out.csv", keep="id")
    msg = one_line(err)
    assert "CSV row 2 (line 3)" in msg and "quote is never closed" in msg
    assert not (tmp_path / "out.csv").exists()


def test_csv_duplicate_header_is_an_error(tmp_path, mech):
    src = write(tmp_path / "in.csv", "text,text\nalice,bob\n")
    with pytest.raises(DPTextError) as err:
        sanitize(mech, src, tmp_path / "out.csv")
    assert "repeats the column 'text' (columns 1 and 2)" in one_line(err)


@pytest.mark.parametrize(("row", "what"), [("2,bob", "fewer"), ("2,bob,x,surplus", "more")])
def test_csv_ragged_rows_are_errors(tmp_path, mech, row, what):
    src = write(tmp_path / "in.csv", f"id,text,extra\n1,alice,z\n{row}\n")
    with pytest.raises(DPTextError) as err:
        sanitize(mech, src, tmp_path / "out.csv", keep="id,extra")
    msg = one_line(err)
    assert "CSV row 2 (line 3)" in msg and f"{what} fields than the header (3 columns)" in msg


def test_csv_blank_lines_and_empty_file(tmp_path):
    header, rows = dio.read_csv(write(tmp_path / "a.csv", "id,text\n\n1,a\n\n2,b\n"))
    assert [(n, line) for n, line, _ in rows] == [(1, 3), (2, 5)]
    with pytest.raises(DPTextError, match="empty CSV"):
        dio.read_csv(write(tmp_path / "e.csv", ""))
    with pytest.raises(DPTextError, match="line 2 is not valid UTF-8"):
        list(dio.read_csv(write(tmp_path / "u.csv", b"id,text\n1,caf\xe9\n"))[1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "\r", "\n", "\r\n", "\xe9", ","]), max_size=30),
       st.integers(1, 5))
def test_physical_lines_across_chunk_boundaries(tmp_path_factory, parts, chunk):
    text = "".join(parts)
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(text.encode("utf-8"))
    expected = [m.group() for m in re.finditer(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)]
    old = dio._CHUNK
    dio._CHUNK = chunk
    try:
        got = list(dio.read_physical_lines(path))
    finally:
        dio._CHUNK = old
    assert [line for _, line in got] == expected
    assert [n for n, _ in got] == list(range(1, len(expected) + 1))


# ------------------------------------------------------------------------------ JSONL
def run_jsonl(tmp_path, mech, lines: list[str]) -> list[str]:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sanitize(mech, src, tmp_path / "out.jsonl", rng=0, keep_other=True)
    raw = (tmp_path / "out.jsonl").read_bytes().decode("utf-8")  # strict UTF-8
    return raw.split("\n")[:-1]


def test_jsonl_lone_surrogates_round_trip(tmp_path, mech):
    out = run_jsonl(tmp_path, mech, [r'{"text": "alice \ud800 bob", "id": "\udc00x"}'])
    assert len(out) == 1
    obj = json.loads(out[0])
    assert obj["id"] == "\udc00x"  # the other field, unchanged
    assert "\ud800" in obj["text"]  # not a letter: kept in the glue, written as an escape
    assert "\\udc00" in out[0] and "\\ud800" in out[0]


@pytest.mark.parametrize(("line", "needle"), [
    ('{"text": "a", "text": "b"}', "repeats the key 'text'"),
    ('{"text": "a", "n": 1e400}', "outside the range of a double"),
    ('{"text": "a", "n": NaN}', "NaN, which is not JSON"),
    ('{"text": "a", "n": -Infinity}', "-Infinity, which is not JSON"),
    ('{"text": "a", "n": ' + "9" * 5000 + "}", "cannot be read"),
    ('{"text": "a", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
])
def test_jsonl_defects_are_errors_naming_the_line(tmp_path, mech, line, needle):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "alice"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DPTextError) as err:
        sanitize(mech, src, tmp_path / "out.jsonl", keep_other=True)
    msg = one_line(err)
    assert "line 2" in msg and needle in msg
    assert not (tmp_path / "out.jsonl").exists()


def test_jsonl_output_escapes_line_separators(tmp_path, mech):
    records = [{"text": "alice\u2028met\u2029bob\u0085paris", "meta": "x\u2028y"},
               {"text": "bob", "n": 1.5, "big": 10**30}]
    out = run_jsonl(tmp_path, mech, [json.dumps(r, ensure_ascii=False) for r in records])
    assert len(out) == 2
    for line in out:
        assert not set(line) & {"\u2028", "\u2029", "\u0085", "\r"}
        dio.loads_record(line)  # strict: parses, no NaN
    joined = "\n".join(out)
    assert len(joined.splitlines()) == 2  # even str.splitlines (which splits on U+2028) agrees
    assert json.loads(out[0])["meta"] == "x\u2028y" and json.loads(out[1])["big"] == 10**30


def test_dumps_record_refuses_what_json_cannot_hold():
    assert dio.dumps_record({"a": [1, "\ud83d"]}) == '{"a": [1, "\\ud83d"]}'
    for bad in ({"x": float("nan")}, {"x": float("inf")}, {"x": {1, 2}}):
        with pytest.raises(DPTextError):
            dio.dumps_record(bad)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(DPTextError, match="nested too deeply"):
        dio.dumps_record(deep)


# ------------------------------------------------------------------------------ the store
def test_store_line_without_key_is_a_one_line_error(tmp_path):
    from dptext.evaluation.store import CellStore

    path = tmp_path / "cells.jsonl"
    path.write_text('{"key": "a", "v": 1}\n{"value": 2}\n', encoding="utf-8")
    with pytest.raises(DPTextError) as err:
        CellStore(path)
    assert "line 2 is not a finished cell" in one_line(err)
    path.write_text('{"key": "a"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DPTextError, match="line 2"):
        CellStore(path)


# ------------------------------------------------------------------ durable writes
def _fsyncs(monkeypatch) -> list[str]:
    """The kinds of what os.fsync is called on ("file" or "dir"), in order."""
    import stat

    seen, real = [], os.fsync

    def spy(fd):
        seen.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return seen


@pytest.mark.parametrize("durable", [False, True])
def test_atomic_write_replaces_only_on_success(tmp_path, monkeypatch, durable):
    target = write(tmp_path / "out.txt", "old\n")
    fsyncs = _fsyncs(monkeypatch)
    with pytest.raises(RuntimeError), dio.atomic_write(target, durable=durable) as f:
        f.write("half")
        raise RuntimeError("stopped")
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["out.txt"]
    assert fsyncs == []
    with dio.atomic_write(target, durable=durable) as f:
        f.write("new\n")
    assert target.read_text() == "new\n" and sorted(os.listdir(tmp_path)) == ["out.txt"]
    assert fsyncs == (["file", "dir"] if durable else [])  # the file, then the rename
    assert target.stat().st_mode & 0o777 == dio.file_mode()


def test_atomic_write_through_a_named_temporary(tmp_path):
    target, temp = tmp_path / "manifest.json", tmp_path / ".manifest.json.dptext-1.tmp"
    with pytest.raises(RuntimeError), dio.atomic_write(target, "wb", temp=temp) as f:
        f.write(b"{}")
        raise RuntimeError("stopped")
    assert not temp.exists() and not target.exists()
    with dio.atomic_write(target, "wb", durable=True, temp=temp) as f:
        f.write(b"{}")
    assert target.read_bytes() == b"{}" and not temp.exists()
    assert target.stat().st_mode & 0o777 == dio.file_mode()


def test_atomic_write_refuses_a_directory_or_a_missing_one(tmp_path):
    with pytest.raises(DPTextError, match="is a directory"), dio.atomic_write(tmp_path):
        pass
    with pytest.raises(DPTextError, match="does not exist"), \
            dio.atomic_write(tmp_path / "no" / "file"):
        pass


def test_staged_write_is_fsynced_in_place_or_removed(tmp_path, monkeypatch):
    fsyncs = _fsyncs(monkeypatch)
    part = tmp_path / ".out.dptext-1.tmp"
    with pytest.raises(RuntimeError), dio.staged_write(part) as f:
        f.write(b"half")
        raise RuntimeError("stopped")
    assert not part.exists() and fsyncs == []
    with dio.staged_write(part) as f:
        f.write(b"whole")
    assert part.read_bytes() == b"whole" and fsyncs == ["file"]
    assert part.stat().st_mode & 0o777 == dio.file_mode()


def test_atomic_write_can_keep_a_file_private(tmp_path):
    target = tmp_path / "state.pt"
    with dio.atomic_write(target, "wb", durable=True, permissions=0o600) as f:
        assert oct(os.fstat(f.fileno()).st_mode & 0o777) == oct(0o600)  # from its creation on
        f.write(b"generator state")
    assert target.stat().st_mode & 0o777 == 0o600 and target.read_bytes() == b"generator state"
