"""``--consistent unit`` reports the draws made (issue 45: 30 reported where 6 were made): the
job's report counts each shared draw once, by the record that paid for it, as the ledger and
the per-person lines do."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["alice", "smith", "met", "the", "nurse", "in", "boston", "today", "bob", "jones"]
SPACE = dict(words=WORDS, seed=5, dim=6, name="unit-draws")  # the space fixture


@pytest.mark.parametrize("ledger", [False, True])
def test_the_report_counts_each_shared_draw_once(tmp_path, space, capsys, monkeypatch,
                                                 ledger):
    from dptext.cli import main

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    space.save(tmp_path / "space.npz")
    rows = [("p1", "Alice Smith met the nurse today"), ("p1", "Alice Smith met the nurse"),
            ("p2", "Alice Smith met the nurse"), ("p1", "Alice Smith met Bob Jones")]
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"who": w, "text": t}) + "\n" for w, t in rows), "utf-8")
    args = ["sanitize", "-m", "custext", "-p", "k=3", "-e", "2", "--space",
            str(tmp_path / "space.npz"), "--no-progress", "-i", str(tmp_path / "in.jsonl"),
            "-o", str(tmp_path / "out.jsonl"), "--user-field", "who", "--entities", "PERSON",
            "--detector", "spacy", "--name-policy", "mechanism", "--consistent", "unit",
            "--seed", "1"]
    if ledger:
        args += ["--ledger", str(tmp_path / "l.sqlite"), "--owner", "o", "--dataset", "d"]
    assert main(args) == 0
    report = json.loads((tmp_path / "out.jsonl.report.json").read_text("utf-8"))
    per_entity = report["spans_by_type"]["PERSON"]
    # the draws the report composes: one per word of each distinct (person, entity)
    entities = {(w, e) for w, t in rows for e in ("Alice Smith", "Bob Jones") if e in t}
    assert report["draws"] == 2 * len(entities), (report["draws"], per_entity)
    assert report["units"]["units"] == 2
    capsys.readouterr()
