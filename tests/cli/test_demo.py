"""``dptext demo`` (``make demo``, issue 45): first a de-identified sample note with its report,
then the word-level mechanism."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["the", "patient", "was", "seen", "today", "and", "met", "her", "she", "told"]
SPACE = dict(words=WORDS, seed=11, dim=6, name="demo")  # the space fixture


def test_demo_shows_a_deidentified_note_first(tmp_path, space, capsys, monkeypatch):
    from dptext.cli import main

    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    space.save(tmp_path / "space.npz")
    assert main(["demo", "-m", "custext", "-p", "k=5", "--space", str(tmp_path / "space.npz"),
                 "--seed", "0"]) == 0
    out = capsys.readouterr().out
    first, second = out.index("1. De-identification"), out.index("2. The word-level")
    assert first < second
    part = out[first:second]
    released = part.split("ages up to 89 kept):\n", 1)[1].split("\nPrivacy report", 1)[0]
    for original in ("Marisol", "Ferndale", "Quigley", "5583920", "555-0142", "kyoung",
                     "03/04/2021", "April 18, 2021", "Kevin"):
        assert original not in released, (original, released)
    assert "a 67-year-old" in released and "Daughter " in released
    assert re.search(r"\(\d{3}\) \d{3}-\d{4}", released) and "Privacy report" in part
    assert "OUT.report.html" in part
