"""A refused ledger option leaves nothing behind: `--ledger` without `--owner`/`--dataset` is one
line and status 2, and neither the ledger file nor its key file is created (issue 47's campaign
noticed both were written before the refusal)."""

from __future__ import annotations

import pytest

from dptext.cli import main

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def test_ledger_without_owner_creates_no_file(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("id,note\n1,Anna Lee\n", encoding="utf-8")
    code = main(["sanitize", "--input", str(src), "--output", str(tmp_path / "out.csv"),
                 "--field", "note", "--keep", "id", "--ledger", str(tmp_path / "l.sqlite"),
                 "--seed", "0"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "dptext: error: --ledger needs --owner and --dataset"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
