"""Column roles are a table that builds (issue 43): keep, drop and hash are classes of
corpus/columns.COLUMN_ROLES, and a role added to it is applied by the engine's writers (CSV and
JSONL), reported in the summary and the text report, with no other change."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from dptext import mechanism
from dptext.corpus import CorpusJob, run
from dptext.corpus.columns import COLUMN_ROLES, ColumnPlan, ColumnRole
from dptext.corpus.text_report import columns_line
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError

WORDS = ["anna", "was", "seen", "today", "bob", "called", "back", "w1", "w2", "w3"]
NOTES = "pid,note,ward\np1,anna was seen today,north\np2,bob called back,south\n"


class Upper(ColumnRole):
    """A test role: the value in capitals."""

    name = "upper"
    report_key, report_line = "capitalised", "in capitals"

    def converter(self, plan):
        return lambda v: None if v is None else str(v).upper()


@pytest.fixture
def upper(monkeypatch):
    monkeypatch.setitem(COLUMN_ROLES, "upper", Upper())


@pytest.fixture
def custext():
    rng = np.random.default_rng(0)
    space = EmbeddingSpace(WORDS, rng.standard_normal((len(WORDS), 6)).astype(np.float32),
                           name="roles-test")
    return mechanism("custext", epsilon=2, k=3, space=space)


def test_the_built_in_roles_apply_and_report():
    plan = ColumnPlan.make(["note"], keep="ward", drop="pid", hash="code", key=b"k" * 16,
                           owner="o")
    row = plan.apply({"pid": "p1", "note": "x", "ward": "north", "code": "c9"})
    assert list(row) == ["note", "ward", "code"] and row["ward"] == "north"
    assert row["code"] == plan.pseudonym("c9") and row["code"].startswith("p")
    header, cells = plan.csv_plan(["pid", "note", "ward", "code"])
    assert header == ["note", "ward", "code"] and [i for i, _ in cells] == [1, 2, 3]
    assert [f is not None for _, f in cells] == [False, False, True]
    assert plan.describe(["pid", "note", "ward", "code"]) == {
        "privatized": ["note"], "released_verbatim_not_protected": ["ward"],
        "dropped": ["pid"], "hashed": ["code"], "keep_other": False}
    with pytest.raises(DPTextError, match="--hash needs a pseudonym key"):
        ColumnPlan.make(["note"], hash="code")
    with pytest.raises(DPTextError, match="unknown column role 'upperr'"):
        ColumnPlan.make(["note"], upperr="ward")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_registered_role_is_applied_by_the_engine(tmp_path, custext, upper, fmt):
    src = tmp_path / f"notes.{fmt}"
    if fmt == "csv":
        src.write_text(NOTES)
    else:
        rows = list(csv.DictReader(NOTES.splitlines()))
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / f"out.{fmt}"
    plan = ColumnPlan.make(["note"], drop="pid", upper="ward")
    result = run(CorpusJob(custext, str(src), str(out), fields=["note"], seed=1,
                           columns=plan))
    if fmt == "csv":
        released = list(csv.DictReader(out.read_text().splitlines()))
    else:
        released = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["ward"] for r in released] == ["NORTH", "SOUTH"]
    assert all("pid" not in r for r in released)
    cols = result.summary["columns"]
    assert cols["capitalised"] == ["ward"] and cols["dropped"] == ["pid"]
    assert "ward in capitals" in columns_line(result.summary)
