"""The short version of the fuzz/fault campaign (benchmarks/fuzz_campaign.py; issue 12): fuzzed
records through every word mechanism in every format, and every bad-input case through the CLI.
Targets: no crash, records in = out, no raw release, no letter in the glue, other fields
unchanged, every bad input a one-line error with nothing left behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import fuzz_campaign  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def test_fuzzed_records_through_every_mechanism(tmp_path):
    figures = fuzz_campaign.fuzz(tmp_path, 120, fuzz_campaign.tiny_space(), seed=11,
                                 long_words=False)
    assert figures["crashes"] == 0 and figures["errors"] == 0, figures["crash_details"]
    assert figures["runs"] == 24  # 6 mechanisms x (txt, jsonl, csv, csv with CR endings)
    assert figures["records_in"] == figures["records_out"] == 24 * 120
    assert figures["count_mismatches"] == 0
    assert figures["raw_releases"] == 0
    assert figures["letters_in_glue"] == 0
    assert figures["other_fields_changed"] == 0


def test_bad_inputs_give_one_line_errors(tmp_path):
    space_path = tmp_path / "space.npz"
    fuzz_campaign.tiny_space().save(space_path)
    figures = fuzz_campaign.bad_inputs(tmp_path, space_path)
    assert figures["cases"] >= 20
    assert figures["one_line_errors"] == figures["cases"], figures["failures"]
