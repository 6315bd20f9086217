"""The dry run for what stewards run (issue 45): ``--estimate`` with ``--entities`` runs
detection and releases and charges nothing (counts per category, records that would be
withheld, per-person charges), and with ``--ledger`` reads today's spend; per-record and
per-person output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["the", "patient", "was", "seen", "today", "and", "met", "called", "w1", "w2", "w3",
         "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11", "w12", "anna", "lee"]
SPACE = dict(words=WORDS, seed=45, dim=6, name="estimate-entities")  # the space fixture


def _cli(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache"), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


def test_estimate_with_entities_detects_and_charges_nothing(tmp_path, space):
    space.save(tmp_path / "space.npz")
    rows = [{"who": "a", "text": "Anna Lee was seen today, call 555-123-4567."},
            {"who": "a", "text": "Anna Lee called."},
            {"who": "b", "text": "the patient was seen today"},
            {"who": "c", "text": "Der Patient Hans Meier wurde heute in Berlin gesehen."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    r = _cli(tmp_path, "sanitize", "-m", "custext", "-p", "k=5", "-e", "1", "--space",
             str(tmp_path / "space.npz"), "--no-progress", "-i", "in.jsonl", "-o", "out.jsonl",
             "--user-field", "who", "--entities", "PHI", "--detector", "spacy",
             "--name-policy", "mechanism", "--consistent", "unit", "--estimate")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == \
        [p for p in before if p != "cache"]  # nothing written
    assert s["entities"] and s["charged"] is False and s["records"] == 4
    assert s["spans_by_category"]["PERSON"] == 2 and s["spans_by_category"]["PHONE_NUMBER"] == 1
    assert s["withheld_by_mechanism"] == {"language de": 1}  # the German note
    per = {p["unit"]: p for p in s["per_person"]}
    assert [x["record"].endswith(f"line {i + 1}") for i, x in enumerate(s["per_record"])] == \
        [True] * 4
    first, second = s["per_record"][0]["epsilon"], s["per_record"][1]["epsilon"]
    assert first > 0 and second == 0  # --consistent unit: Anna Lee drawn and charged once
    assert per["a"]["epsilon"] == first and per["b"]["epsilon"] == 0
    assert "detected" in r.stderr and "PERSON 2" in r.stderr


def test_estimate_reads_todays_spend_from_the_ledger(tmp_path, space):
    space.save(tmp_path / "space.npz")
    rows = [{"who": w, "text": " ".join(WORDS[8:8 + n])} for w, n in
            (("a", 4), ("b", 4), ("a", 4))]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    common = ["sanitize", "-m", "custext", "-p", "k=5", "-e", "1", "--space",
              str(tmp_path / "space.npz"), "--no-progress", "-i", "in.jsonl",
              "--user-field", "who", "--budget", "10", "--owner", "o", "--dataset", "d"]
    ledger = str(tmp_path / "l.sqlite")
    missing = _cli(tmp_path, *common, "--estimate", "--ledger", ledger)
    assert missing.returncode == 2 and "creates none" in missing.stderr
    real = _cli(tmp_path, *common, "-o", "out.jsonl", "--ledger", ledger, "--on-error", "skip")
    assert real.returncode == 0, real.stderr  # a: 4 + 4 = 8 of 10 spent, b: 4
    fresh = json.loads(_cli(tmp_path, *common, "--estimate").stdout)
    assert fresh["records_withheld"] == 0
    r = _cli(tmp_path, *common, "--estimate", "--ledger", ledger)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    per = {p["unit"]: p for p in s["per_person"]}
    assert per["a"]["budget_left_before"] == 2 and per["b"]["budget_left_before"] == 6
    assert s["records_withheld"] == 2  # a's two records no longer fit; b's fits in 6
    assert [x.get("withheld") for x in s["per_record"]] == \
        ["over the person's budget", None, "over the person's budget"]
