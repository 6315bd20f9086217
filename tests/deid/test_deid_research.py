"""De-identified records a researcher can use (issue 45): with ``dates="shift"``,
``ages="keep"`` and a person, every date of the person moves by one offset in every record
(intervals equal, formats kept, over the formats the recognizers find), the same name gets the
same surrogate in the column and in the note, a shared surname stays shared, and the command
line does it with ``--dates shift --ages keep --user-field``."""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dptext import mechanism
from dptext.targeted import TargetedMechanism
from dptext.targeted.dates import parse_date

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["the", "patient", "was", "seen", "today", "and", "met", "on", "admitted", "follow",
         "up", "with", "dr"]
SPACE = dict(words=WORDS, seed=45, dim=6, name="deid-research")  # the space fixture
FORMATS = ["2021-03-04", "03/04/2021", "3/4/21", "15.06.2010", "04-Mar-1950", "2019/03/04",
           "20190304", "March 3, 2024", "Mar. 3 2024", "3rd of March, 2024", "3 March 2024",
           "Monday, March 4, 2024", "June 15th", "March 3rd, 2024"]


def _spans(text: str, values: dict[str, str]):
    out = []
    for value, category in values.items():
        at = text.index(value)
        out.append(type("S", (), {"start": at, "end": at + len(value), "category": category})())
    return out


@pytest.fixture(scope="module")
def research(space, tmp_path_factory):
    os.environ.setdefault("DPTEXT_CACHE", str(tmp_path_factory.mktemp("cache")))
    m = mechanism("custext", epsilon=2, k=5, space=space)
    return TargetedMechanism(m, detector=None, dates="shift", ages="keep",
                             name_policy="surrogate", consistent="unit", unit_key=b"s" * 32)


def _date(text: str) -> dt.date:
    p = parse_date(text)
    return dt.date(p.year or 2000, p.month, p.day)


def test_every_date_of_a_person_moves_by_one_offset_in_its_own_format(research):
    texts, spans, units = [], [], []
    for i, value in enumerate(FORMATS):
        text = f"admitted on {value} and follow up on 2021-05-02"
        texts.append(text)
        spans.append(_spans(text, {value: "DATE", "2021-05-02": "DATE"}))
        units.append("p1" if i % 2 == 0 else "p2")
    out = research.privatize_spans(texts, spans, rng=0, units=units)
    shift = {}
    for r, unit, value in zip(out, units, FORMATS, strict=True):
        got = re.fullmatch(r"admitted on (.+) and follow up on (\d{4}-\d{2}-\d{2})", r.text)
        assert got, r.text
        new, follow = got.group(1), got.group(2)
        days = (_date(follow) - dt.date(2021, 5, 2)).days
        assert shift.setdefault(unit, days) == days  # one offset per person
        assert days % 7 == 0 and days != 0
        if value != "June 15th":
            assert (_date(new) - _date(value)).days == days, (value, new)
        assert re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "A", new)) == \
            re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "A", value)), (value, new)
    assert set(shift) == {"p1", "p2"}


def test_ages_kept_up_to_89_and_names_one_surrogate_per_person(research):
    texts = ["Mr. Brown (Hannah Brown), a 67 y/o, met Dr. Jones.", "Dr. Jones", "aged 95"]
    spans = [_spans(texts[0], {"Mr. Brown": "PERSON", "Hannah Brown": "PERSON",
                               "67 y/o": "AGE", "Dr. Jones": "PERSON"}),
             _spans(texts[1], {"Dr. Jones": "PERSON"}), _spans(texts[2], {"95": "AGE"})]
    for seed in range(5):
        out = [r.text for r in research.privatize_spans(texts, spans, rng=seed,
                                                        units=["p1"] * 3)]
        got = re.fullmatch(r"Mr\. (\S+) \((\S+) (\S+)\), a 67 y/o, met (Dr\. \S+)\.", out[0])
        assert got and got.group(1) == got.group(3), out
        assert out[1] == got.group(4) and out[2] == "aged 90+"
    other = research.privatize_spans([texts[1]], [spans[1]], rng=0, units=["p9"])[0].text
    assert other.startswith("Dr. ")  # another person: an independent draw
    assert research.privatize_spans([texts[1]], [spans[1]], rng=1, units=["p1"])[0].text \
        == out[1]  # the key and the person, not the call's generator


def test_a_shared_surname_stays_shared_within_a_record_without_a_unit(space, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    m = TargetedMechanism(mechanism("custext", epsilon=2, k=5, space=space), detector=None,
                          name_policy="surrogate")
    text = "Mr. Brown met Hannah Brown."
    spans = _spans(text, {"Mr. Brown": "PERSON", "Hannah Brown": "PERSON"})
    for seed in range(10):
        out = m.privatize_spans([text], [spans], rng=seed)[0].text
        got = re.fullmatch(r"Mr\. (\S+) met \S+ (\S+)\.", out)
        assert got and got.group(1) == got.group(2), out


def _cli(work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPTEXT_CACHE": str(work / "cache"), "OMP_NUM_THREADS": "1"}
    env.pop("DPTEXT_PSEUDONYM_SECRET", None)
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_command_line_shifts_a_persons_dates_and_links_column_and_note(tmp_path, space):
    space.save(tmp_path / "space.npz")
    rows = [("p1", "Seen on 03/04/2021 by Dr. Quorvath, a 67 y/o.", "Dr. Quorvath"),
            ("p1", "Follow-up April 18, 2021 with Dr. Quorvath.", "Dr. Quorvath"),
            ("p2", "Seen on 03/04/2021 by Dr. Quorvath.", "Dr. Quorvath")]
    with open(tmp_path / "notes.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["patient_id", "note", "doctor"])
        w.writerows(rows)
    common = ["sanitize", "-m", "custext", "-p", "k=5", "-e", "2", "--space",
              str(tmp_path / "space.npz"), "--no-progress", "-i", "notes.csv", "--field",
              "note", "--field", "doctor", "--user-field", "patient_id", "--hash",
              "patient_id", "--pseudonym-key", "k.key", "--entities", "PHI", "--detector",
              "spacy", "--dates", "shift", "--ages", "keep"]
    refused = _cli(tmp_path, *common, "-o", "x.csv")
    assert refused.returncode == 2 and "add --consistent unit" in refused.stderr
    r = _cli(tmp_path, *common, "--consistent", "unit", "-o", "out.csv")
    assert r.returncode == 0, r.stderr
    out = list(csv.DictReader(open(tmp_path / "out.csv", newline="")))
    assert (tmp_path / "out.csv.report.html").is_file()
    a = re.search(r"(\d\d/\d\d/\d{4})", out[0]["note"]).group(1)
    b = re.search(r"([A-Z][a-z]+ \d+, \d{4})", out[1]["note"]).group(1)
    assert (dt.datetime.strptime(b, "%B %d, %Y") - dt.datetime.strptime(a, "%m/%d/%Y")).days \
        == (dt.date(2021, 4, 18) - dt.date(2021, 3, 4)).days  # the interval, exactly
    assert a != "03/04/2021" and "67 y/o" in out[0]["note"]
    doctor = out[0]["doctor"]
    assert doctor.startswith("Dr. ") and "Quorvath" not in doctor
    assert out[1]["doctor"] == doctor and doctor in out[0]["note"] and doctor in out[1]["note"]
    again = _cli(tmp_path, *common, "--consistent", "unit", "-o", "again.csv")
    assert again.returncode == 0, again.stderr
    out2 = list(csv.DictReader(open(tmp_path / "again.csv", newline="")))
    assert out2[0]["note"].count(a) == 1  # one key: the same shift in every release


def test_the_leak_check_does_not_count_a_value_released_by_design(space, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    text = "a 67 y/o seen on March 3, 2024"
    spans = _spans(text, {"67 y/o": "AGE", "March 3, 2024": "DATE"})
    for dates, want in (("year", "a 67 y/o seen on 2024"), ("shift", None)):
        m = TargetedMechanism(mechanism("custext", epsilon=2, k=5, space=space),
                              detector=None, dates=dates, ages="keep", check=True)
        r = m.privatize_spans([text], [spans], rng=0)[0]
        assert r.report.withheld is None and r.text.startswith("a 67 y/o seen on ")
        assert want is None or r.text == want
    m = TargetedMechanism(mechanism("custext", epsilon=2, k=5, space=space), detector=None,
                          ages="placeholder", check=True)
    assert m.privatize_spans([text], [spans], rng=0)[0].text == "a [AGE] seen on [DATE]"
