"""Entity mode through the corpus engine (issue 31): ``--workers N`` and ``--engine ray`` give
the bytes of one process for a seed; ``--consistent unit`` draws once per distinct entity per
person (``--user-field``) across that person's records, in every worker; a draw of a record the
ledger withholds is charged to the next released record that shows it, never released free.

The fast tests use a regex name detector (no spaCy); the slow one runs the command line with
spaCy, one process against two workers and two Ray actors."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from dptext import EmbeddingSpace, mechanism, sanitize
from dptext.cli import main
from dptext.detect.entities import Entity, EntityDetector
from dptext.errors import DPTextError
from dptext.targeted import TargetedMechanism
from dptext.text import split_words

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

NAMES = ["Anna", "John", "Bob", "Kim"]
WORDS = ["anna", "john", "bob", "kim", "met", "waved", "smiled", "today", "lee", "ash",
         "rose", "mia", "tom", "eve", "max", "zoe"] + [f"w{i}" for i in range(24)]


class Names(EntityDetector):
    """PERSON = one of :data:`NAMES` (a test detector: no models to load)."""

    def detect(self, texts):
        return [[Entity(m.group().lower(), "PERSON", m.start(), m.end())
                 for m in re.finditer(r"\b(Anna|John|Bob|Kim)\b", t)] for t in texts]


@pytest.fixture
def space_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("space") / "space.npz"
    EmbeddingSpace(WORDS, np.random.default_rng(0).standard_normal((len(WORDS), 6)),
                   name="entities-tiny").save(path)
    return str(path)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))


def _targeted(space_path, consistent="unit", **kw):
    inner = mechanism("custext", epsilon=2, k=5, space=EmbeddingSpace.load(space_path))
    return TargetedMechanism(inner, entities=["PERSON"], detector=Names(),
                             consistent=consistent, **kw)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(path):
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _notes(n, seed=0):
    """``n`` records of 6 people; each names two of NAMES."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a, b = rng.choice(len(NAMES), 2, replace=False)
        out.append({"pid": f"u{rng.integers(6)}", "i": i,
                    "text": f"{NAMES[a]} met {NAMES[b]} today."})
    return out


# ------------------------------------------------------------------ the withheld draw
def test_a_withheld_records_draw_is_charged_to_the_next_released_record(tmp_path,
                                                                        space_path):
    """The audit's case: u1's record 0 (Anna, John: 4-DP) is over the budget of 3 and
    withheld; record 1 shows Anna's replacement - drawn for u1 - and must pay for it (the
    audit: 0 spent); record 3 then reuses it free and shows the same word."""
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "l.sqlite", secret="a test secret, 16+ bytes")
    src = _write(tmp_path / "in.jsonl", [
        {"pid": "u1", "text": "Anna met John."}, {"pid": "u1", "text": "Anna waved."},
        {"pid": "u2", "text": "Anna waved."}, {"pid": "u1", "text": "Anna smiled."}])
    out = tmp_path / "out.jsonl"
    report = sanitize(_targeted(space_path), src, out, user_field="pid", keep="pid",
                      ledger=ledger, owner="clinic", dataset="notes", budget=3.0, rng=0,
                      batch_size=2)
    rows = _rows(out)
    assert [r["pid"] for r in rows] == ["u1", "u2", "u1"]
    rejects = _rows(tmp_path / "out.jsonl.rejects.jsonl")
    assert [r["record"] for r in rejects] == [1] and "ledger" in rejects[0]["reason"]
    spent = ledger.spent("u1", owner="clinic", dataset="notes")
    assert spent.records == 2 and spent.epsilon_basic == pytest.approx(2.0)  # audit: 0
    assert ledger.spent("u2", owner="clinic", dataset="notes").epsilon_basic == \
        pytest.approx(2.0)
    assert split_words(rows[0]["text"])[1] == split_words(rows[2]["text"])[1]
    summary = json.loads((tmp_path / "out.jsonl.report.json").read_text())
    assert summary["units"]["units"] == 2 and summary["units"]["epsilon_max"] == \
        pytest.approx(2.0)
    assert report.consistent == "unit"


# ------------------------------------------------------------------ one draw per person
def _released_names(rows_in, rows_out):
    """(pid, name) -> the set of words its occurrences were replaced by."""
    seen: dict = {}
    by_i = {r["i"]: r for r in rows_out}
    for r in rows_in:
        if r["i"] not in by_i:
            continue
        old, new = split_words(r["text"])[1::2], split_words(by_i[r["i"]]["text"])[1::2]
        for pos in (0, 2):
            seen.setdefault((r["pid"], old[pos]), set()).add(new[pos].lower())
    return seen


def test_one_draw_per_entity_per_person_across_batches_and_workers(tmp_path, space_path):
    rows = _notes(48)
    src = _write(tmp_path / "in.jsonl", rows)
    outs = []
    for kw in ({}, {"workers": 2}):
        out = tmp_path / f"out{len(outs)}.jsonl"
        sanitize(_targeted(space_path), src, out, user_field="pid", keep="pid,i", rng=5,
                 batch_size=4, **kw)
        outs.append(out)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    r0, r1 = (json.loads((tmp_path / f"out{k}.jsonl.report.json").read_text())
              for k in (0, 1))
    assert r0 == r1
    released = _rows(outs[0])
    words = _released_names(rows, released)
    assert all(len(v) == 1 for v in words.values())  # one draw per (person, entity)
    # each person pays 2-DP once per distinct name across all their records
    distinct: dict = {}
    for (pid, _), _w in words.items():
        distinct[pid] = distinct.get(pid, 0) + 1
    assert r0["units"]["units"] == len(distinct)
    assert r0["units"]["epsilon_max"] == pytest.approx(2.0 * max(distinct.values()))
    assert r0["consistent"] == "unit"


def test_without_units_the_same_records_draw_per_record(tmp_path, space_path):
    """consistent="document" for contrast: a person's records draw afresh (and pay each)."""
    rows = _notes(24, seed=1)
    src = _write(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    sanitize(_targeted(space_path, consistent="document"), src, out, user_field="pid",
             keep="pid,i", rng=5, batch_size=4)
    summary = json.loads((tmp_path / "out.jsonl.report.json").read_text())
    per_person: dict = {}
    for r in rows:
        per_person[r["pid"]] = per_person.get(r["pid"], 0) + 4.0
    assert summary["units"]["epsilon_max"] == pytest.approx(max(per_person.values()))


def test_consistent_unit_needs_a_unit_field(tmp_path, space_path, capsys):
    src = _write(tmp_path / "in.jsonl", [{"pid": "u1", "text": "Anna waved."}])
    with pytest.raises(DPTextError, match="consistent= unit needs a unit field: give user_field="):
        sanitize(_targeted(space_path), src, tmp_path / "o.jsonl", keep="pid")
    code = main(["sanitize", "-m", "custext", "-e", "2", "--entities", "PERSON",
                 "--consistent", "unit", "-i", str(src), "--keep", "pid", "-o",
                 str(tmp_path / "o.jsonl"), "--no-progress", "--space", space_path])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "needs a unit field" in err and "--user-field" in err
    assert not (tmp_path / "o.jsonl").exists()
    assert main(["sanitize", "-m", "custext", "-e", "2", "--entities", "PERSON", "--consistent",
                 "unit", "--text", "Anna waved.", "--space", space_path]) == 2
    assert "one --text is one record" in capsys.readouterr().err


# ------------------------------------------------------------------ the command line, spaCy
@pytest.mark.slow
def test_cli_entities_workers_and_ray_give_the_bytes_of_one_process(tmp_path, space_path):
    """spaCy in each worker (loaded once there); --consistent unit per patient."""
    from dptext.deid.notes import generate_notes

    src = _write(tmp_path / "notes.jsonl", [
        {"patient": f"p{i % 5}", "note": r.text} for i, r in enumerate(generate_notes(24, 3))])
    runs = [[], ["--workers", "2"]]
    if shutil.which("ray") is not None or _has_ray():
        runs.append(["--engine", "ray", "--workers", "2"])
    outs = []
    for k, extra in enumerate(runs):
        out = tmp_path / f"o{k}.jsonl"
        assert main(["sanitize", "-m", "custext", "-e", "3", "--space", space_path, "-p", "k=5",
                     "-i", str(src), "-f", "note", "--user-field", "patient", "--entities",
                     "PERSON,GPE", "--consistent", "unit", "--seed", "1", "--batch-size", "4",
                     "--no-progress", "-o", str(out), *extra]) == 0
        outs.append(out)
    first = outs[0].read_bytes()
    report = (tmp_path / "o0.jsonl.report.json").read_text()
    for k in range(1, len(outs)):
        assert outs[k].read_bytes() == first, runs[k]
        assert (tmp_path / f"o{k}.jsonl.report.json").read_text() == report, runs[k]


def _has_ray() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True
