"""One source for typical epsilon ranges and defaults: the mechanism's declaration
(``typical_epsilon``). The README table, docs/privacy.md, ``dptext mechanisms``,
``GET /v1/mechanisms`` (which the web page renders) must all say what it says, and a default
epsilon must lie inside the declared range."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from dptext.mechanisms.base import TypicalEpsilon
from dptext.mechanisms.registry import REQUIRED, parameters, registered

ROOT = Path(__file__).resolve().parents[2]


def _table_rows(text: str, first_header: str) -> dict[str, list[str]]:
    """Rows of the markdown table whose header starts with ``first_header``: name -> cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith(f"| {first_header} |"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        rows[cells[0].strip("`")] = cells
    return rows


def test_every_mechanism_declares_a_range_holding_its_default():
    for name, cls in registered().items():
        t = cls.typical_epsilon
        assert isinstance(t, TypicalEpsilon), name
        assert t.meaning and t.evidence, name
        default = parameters(cls)["epsilon"]
        if default != REQUIRED:
            assert t.contains(default), (name, default, t.text)


def test_range_text_and_membership():
    closed, open_ = TypicalEpsilon(1, 8, "m"), TypicalEpsilon(194, None, "m")
    assert closed.text == "1-8" and open_.text == "> 194"
    assert closed.contains(1) and closed.contains(8) and not closed.contains(8.5)
    assert open_.contains(194.5) and not open_.contains(194)


GLOVE = "glove-6b-50d"


def _glove_text(cls) -> str:
    """The GloVe cell: the declared range on glove-6b-50d, or n/a for a mechanism without one."""
    t = cls.typical_epsilon_spaces.get(GLOVE)
    return t.text if t is not None else "n/a (no word space)"


def test_readme_table_reads_the_declarations():
    rows = _table_rows((ROOT / "README.md").read_text("utf-8"), "name")
    assert set(rows) == set(registered())
    for name, cls in registered().items():
        *_, typical, on_glove = rows[name]
        assert typical.startswith(cls.typical_epsilon.text), (name, typical)
        assert on_glove.startswith(_glove_text(cls)), (name, on_glove)


def test_word_mechanisms_declare_a_glove_range():
    """Every word mechanism declares its range on the GloVe space as well (issue 34)."""
    from dptext.mechanisms.word import WordMechanism

    for name, cls in registered().items():
        if issubclass(cls, WordMechanism):
            assert isinstance(cls.typical_epsilon_spaces.get(GLOVE), TypicalEpsilon), name


def test_privacy_doc_table_reads_the_declarations():
    rows = _table_rows((ROOT / "docs" / "privacy.md").read_text("utf-8"),
                       "mechanism | typical epsilon")
    assert set(rows) == set(registered())
    for name, cls in registered().items():
        _, typical, on_glove, default = rows[name]
        assert typical == cls.typical_epsilon.text, name
        assert on_glove == _glove_text(cls), name
        declared = parameters(cls)["epsilon"]
        assert default == ("none: must be given" if declared == REQUIRED else f"{declared:g}")


def test_mechanisms_command_prints_the_declarations():
    out = subprocess.run([sys.executable, "-m", "dptext.cli", "mechanisms"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    blocks = re.split(r"\n(?=\S)", out.strip())
    by_name = {b.split()[0]: b for b in blocks}
    for name, cls in registered().items():
        t = cls.typical_epsilon
        assert f"typical epsilon: {t.text} ({t.evidence})" in by_name[name], name


def test_api_and_page_read_the_declarations(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from dptext.service.app import Settings, create_app

    app = create_app(Settings(ledger=str(tmp_path / "l.sqlite"), data_dir=tmp_path / "d"))
    client = TestClient(app)
    key = app.state.keys.create("o")
    got = client.get("/v1/mechanisms", headers={"Authorization": f"Bearer {key}"}).json()
    assert {m["name"] for m in got} == set(registered())
    for m in got:
        t = registered()[m["name"]].typical_epsilon
        assert m["typical_epsilon"] == t.text and m["epsilon_meaning"] == t.meaning
        assert m["typical_epsilon_range"] == t.to_dict()
    # the page has no ranges of its own: it shows what the API gives
    js = (ROOT / "src/dptext/service/static/app.js").read_text("utf-8")
    html = (ROOT / "src/dptext/service/static/index.html").read_text("utf-8")
    assert "m.typical_epsilon" in js
    for cls in registered().values():
        assert f"({cls.typical_epsilon.text})" not in js + html
