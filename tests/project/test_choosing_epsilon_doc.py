"""docs/choosing-epsilon.md holds the tables benchmarks/choosing_epsilon.py makes (the yearly
table is recomputed here; the per-note table needs the default space, so only its header and
rows' mechanisms are checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from dptext.mechanisms.registry import registered

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("choosing_epsilon",
                                                  ROOT / "benchmarks" / "choosing_epsilon.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_yearly_table_is_the_scripts():
    doc = (ROOT / "docs" / "choosing-epsilon.md").read_text("utf-8")
    assert "\n".join(_script().yearly_table()) in doc


def test_the_per_note_table_covers_every_mechanism_but_dpprompt():
    doc = (ROOT / "docs" / "choosing-epsilon.md").read_text("utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    named = {line.split("`")[1] for line in rows}
    assert named >= set(registered()) - {"dpprompt"}
    assert "| mechanism | per-token epsilon | charged per token | 30 words" in doc
