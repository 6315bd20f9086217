"""Every column accounted for (issue 31): each input column of a CSV, JSONL or Parquet file is
privatized (--field), kept (--keep, reported as released verbatim), dropped (--drop) or hashed
(--hash: a keyed pseudonym); an unnamed column is a one-line error before any work."""

from __future__ import annotations

import csv
import json
import stat

import numpy as np
import pytest

import dptext
from dptext.cli import main
from dptext.corpus.columns import ColumnPlan
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError

WORDS = ["anna", "was", "seen", "today", "bob", "called", "back", "jones", "smith", "dr"]


@pytest.fixture()
def space_file(tmp_path):
    rng = np.random.default_rng(0)
    space = EmbeddingSpace(WORDS, rng.standard_normal((len(WORDS), 8)).astype(np.float32),
                           name="columns-test")
    path = tmp_path / "space.npz"
    space.save(path)
    return path


@pytest.fixture()
def notes(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("patient_id,note,doctor\np1,anna was seen today,dr jones\n"
                    "p2,bob called back,dr smith\np1,anna called back,dr jones\n")
    return path


def _run(capsys, *args):
    code = main(["sanitize", "-m", "custext", "-e", "2", "--k", "3", "--seed", "1",
                 "--no-progress", *map(str, args)])
    out = capsys.readouterr()
    return code, out.err


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_an_unnamed_column_is_an_error_before_any_work(tmp_path, notes, space_file, capsys):
    out = tmp_path / "out.csv"
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "-o", out)
    assert code == 2
    assert "columns patient_id,doctor are not covered: name each with --field, --keep, " \
           "--drop or --hash" in err
    assert err.count("\n") == 1 and not out.exists()
    assert not (tmp_path / "out.csv.report.json").exists()
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--keep",
                     "doctor", "--drop", "doctor,patient_id", "-o", out)
    assert code == 2 and "column 'doctor' given to both --keep and --drop" in err
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--keep",
                     "nurse", "--keep-other", "-o", out)
    assert code == 2 and "no column nurse in the input" in err


def test_keep_drop_and_keep_other_are_reported(tmp_path, notes, space_file, capsys):
    out = tmp_path / "out.csv"
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--keep",
                     "doctor", "--drop", "patient_id", "-o", out)
    assert code == 0, err
    rows = _rows(out)
    assert list(rows[0]) == ["note", "doctor"]
    assert [r["doctor"] for r in rows] == ["dr jones", "dr smith", "dr jones"]
    report = json.loads((tmp_path / "out.csv.report.json").read_text())
    assert report["columns"] == {"privatized": ["note"],
                                 "released_verbatim_not_protected": ["doctor"],
                                 "dropped": ["patient_id"], "hashed": [], "keep_other": False}
    assert "doctor released verbatim, NOT protected" in err and "patient_id dropped" in err

    out2 = tmp_path / "out2.csv"
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--keep-other",
                     "-o", out2)
    assert code == 0, err
    report = json.loads((tmp_path / "out2.csv.report.json").read_text())
    assert report["columns"]["released_verbatim_not_protected"] == ["patient_id", "doctor"]
    assert "patient_id, doctor released verbatim, NOT protected" in err


def test_the_user_field_is_dropped_unless_kept_or_hashed(tmp_path, notes, space_file, capsys):
    out = tmp_path / "out.csv"
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--drop",
                     "doctor", "--user-field", "patient_id", "-o", out)
    assert code == 0, err
    assert list(_rows(out)[0]) == ["note"]
    # one line says that --hash keeps the linkage (issue 45)
    assert [line for line in err.splitlines() if "--hash patient_id keeps" in line] == [
        "  note               the person column 'patient_id' was dropped (the default): "
        "--hash patient_id keeps a person's records linkable by a keyed pseudonym"]
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--drop",
                     "doctor", "--user-field", "patient_id", "--keep", "patient_id", "-o",
                     tmp_path / "kept.csv")
    assert code == 0, err
    assert "--hash patient_id keeps" not in err
    assert [r["patient_id"] for r in _rows(tmp_path / "kept.csv")] == ["p1", "p2", "p1"]


def test_hash_is_stable_per_owner_and_differs_across_owners(tmp_path, notes, space_file,
                                                            capsys, monkeypatch):
    monkeypatch.delenv("DPTEXT_PSEUDONYM_SECRET", raising=False)
    key = tmp_path / "pseudonyms.key"
    common = ["--space", space_file, "-i", notes, "-f", "note", "--drop", "doctor", "--hash",
              "patient_id", "--pseudonym-key", key]
    ids = {}
    for name, owner in (("a", "clinic"), ("b", "clinic"), ("c", "other")):
        code, err = _run(capsys, *common, "--owner", owner, "-o", tmp_path / f"{name}.csv")
        assert code == 0, err
        ids[name] = [r["patient_id"] for r in _rows(tmp_path / f"{name}.csv")]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert ids["a"] == ids["b"]  # the same owner and key: the same pseudonyms, run after run
    assert ids["a"][0] == ids["a"][2] != ids["a"][1]  # p1 twice, p2 once
    assert not set(ids["a"]) & set(ids["c"])  # another owner: other pseudonyms
    assert not {"p1", "p2"} & set(ids["a"])
    code, err = _run(capsys, "--space", space_file, "-i", notes, "-f", "note", "--drop",
                     "doctor", "--hash", "patient_id", "-o", tmp_path / "d.csv")
    assert code == 2 and "--hash needs a pseudonym key" in err


def test_jsonl_keys_seen_late_are_rejects_or_errors(tmp_path, space_file, capsys):
    src = tmp_path / "notes.jsonl"
    lines = [{"id": i, "text": "anna was seen today"} for i in range(120)]
    lines.append({"id": 120, "text": "bob called back", "doctor": "dr smith"})
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, err = _run(capsys, "--space", space_file, "-i", src, "--keep", "id", "-o",
                     tmp_path / "out.jsonl", "--on-error", "skip")
    assert code == 0, err
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(out) == 120 and all("doctor" not in x for x in out)
    rejects = (tmp_path / "out.jsonl.rejects.jsonl").read_text()
    assert "doctor not covered" in rejects and "dr smith" not in rejects
    code, err = _run(capsys, "--space", space_file, "-i", src, "--keep", "id", "-o",
                     tmp_path / "fail.jsonl")
    assert code == 2 and "doctor not covered" in err and not (tmp_path / "fail.jsonl").exists()


def test_parquet_and_the_python_api_follow_the_same_rule(tmp_path, space_file):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    src = tmp_path / "notes.parquet"
    pq.write_table(pa.table({"pid": ["p1", "p2"], "note": ["anna was seen", "bob called"],
                             "doctor": ["dr jones", "dr smith"]}), src)
    space = EmbeddingSpace.load(space_file)
    m = dptext.mechanism("custext", epsilon=2, k=3, space=space)
    with pytest.raises(DPTextError, match="columns pid,doctor are not covered"):
        dptext.sanitize(m, src, tmp_path / "o.parquet", field="note", rng=1)
    assert not (tmp_path / "o.parquet").exists()
    dptext.sanitize(m, src, tmp_path / "o.parquet", field="note", drop="doctor", keep=["pid"],
                    rng=1)
    table = pq.read_table(tmp_path / "o.parquet")
    assert table.column_names == ["pid", "note"]
    assert table.column("pid").to_pylist() == ["p1", "p2"]


def test_the_plan_itself():
    plan = ColumnPlan.make("a,b", keep=["c"], hash="d", key=b"k" * 32, owner="o")
    assert plan.apply({"a": 1, "b": 2, "c": 3, "d": "x"})["d"] == plan.pseudonym("x")
    assert plan.pseudonym(None) is None and plan.pseudonym(5) == plan.pseudonym("5")
    with pytest.raises(DPTextError, match="has columns e not covered"):
        plan.apply({"a": 1, "e": 2})
    with pytest.raises(DPTextError, match="'a' given twice"):
        ColumnPlan.make(["a", "a"])


def test_consistent_unit_without_a_unit_field_is_refused_not_downgraded(tmp_path, capsys):
    """--consistent unit without --user-field would act per record: refused in one line,
    never silently downgraded (with one: tests/corpus/test_corpus_entities.py)."""
    src = tmp_path / "n.jsonl"
    src.write_text('{"pid": "p1", "text": "Anna Lee called."}\n')
    code = main(["sanitize", "-m", "custext", "-e", "2", "--entities", "PERSON",
                 "--consistent", "unit", "--keep", "pid", "-i", str(src), "-o",
                 str(tmp_path / "o.jsonl"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "--consistent unit needs a unit field: give --user-field" in err
    assert not (tmp_path / "o.jsonl").exists()
