"""``dptext check`` reads what it is given or says in one line why not: exit status 2 for bad
input, never 1 (1 means "leaks found"); issue 47 N5 (a binary file, a lone surrogate, a 50 MB
line gave a traceback and status 1) and issue 45 item 6 (a non-unique --id-field paired the
wrong records; a release with withheld records was refused though its rejects file lists
them)."""

from __future__ import annotations

import json

import pytest

from dptext.cli import main

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

ORIGINAL = ["Patient Anna Quillfeather (MRN 5583920) called.",
            "Nothing to hide here.",
            "Seen by Dr. Tobias Wrenfield on 03/14/2024."]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptext: error: ") and "\n" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize("case", ["binary", "escaped surrogate", "encoded surrogate",
                                  "50 MB line", "cut character"])
@pytest.mark.parametrize("side", ["original", "released"])
def test_unreadable_input_is_one_line_and_status_2(tmp_path, capsys, case, side):
    good = tmp_path / "good.txt"
    good.write_text("Nothing to hide here.\n", encoding="utf-8")
    bad = tmp_path / "bad.txt"
    if case == "binary":
        bad.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00" + bytes(range(256)) * 4)
    elif case == "escaped surrogate":
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"text": "Alice \\ud800 Bob"}\n', encoding="utf-8")
        good = _jsonl(tmp_path / "good.jsonl", [{"text": "Alice Bob"}])
    elif case == "encoded surrogate":
        bad.write_bytes(b"Alice \xed\xa0\x80 Bob\n")
    elif case == "50 MB line":
        with open(bad, "wb") as f:
            f.write(b"a" * (50 << 20) + b"\n")
    else:
        bad.write_bytes("Zoë".encode()[:-1])
    files = {"original": good, "released": good, side: bad}
    code = main(["check", "--original", str(files["original"]), "--released",
                 str(files["released"]), "--detector", "spacy"])
    assert code == 2
    assert str(bad.name) in _one_line_error(capsys)


def test_a_non_unique_id_field_is_refused(tmp_path, capsys):
    rows = [{"pid": "p1", "text": t} for t in ORIGINAL]  # one patient's three notes
    orig = _jsonl(tmp_path / "in.jsonl", rows)
    out = _jsonl(tmp_path / "out.jsonl", rows[:2])
    assert main(["check", "--original", str(orig), "--released", str(out), "--id-field",
                 "pid", "--detector", "spacy"]) == 2
    err = _one_line_error(capsys)
    assert "--id-field 'pid' is not unique ('p1' is on records 1 and 2)" in err


def test_the_rejects_file_beside_the_release_names_the_withheld_records(tmp_path, capsys):
    orig = _jsonl(tmp_path / "in.jsonl", [{"text": t} for t in ORIGINAL])
    # record 2 (1-based) withheld; record 3 released with a surviving name
    out = _jsonl(tmp_path / "out.jsonl", [
        {"text": "Patient [PERSON] ([MEDICAL_RECORD]) called."},
        {"text": "Seen by Dr. Wrenfield on [DATE]."}])
    rejects = tmp_path / "out.jsonl.rejects.jsonl"
    rejects.write_text(json.dumps({"source": "in.jsonl", "record": 2, "line": 2,
                                   "reason": "withheld: the leak check"}) + "\n")
    assert main(["check", "--original", str(orig), "--released", str(out), "--detector",
                 "spacy", "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["missing"] == 1 and got["compared"] == 2
    assert got["leaking_records"] == [2] and got["by_category"] == {"PERSON": 1}
    # a rejects file that does not account for the difference is still refused
    rejects.write_text("")
    assert main(["check", "--original", str(orig), "--released", str(out), "--detector",
                 "spacy"]) == 2
    assert "3 original records, 2 released" in _one_line_error(capsys)
    # --rejects names another file; a record number outside the original is refused
    other = tmp_path / "left.jsonl"
    other.write_text(json.dumps({"record": 9}) + "\n")
    assert main(["check", "--original", str(orig), "--released", str(out), "--rejects",
                 str(other), "--detector", "spacy"]) == 2
    assert "names record 9, not one of the 3 original records" in _one_line_error(capsys)
