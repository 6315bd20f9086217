"""``dptext ledger ...`` through its own argparse wiring (``add_commands``)."""

from __future__ import annotations

import argparse
import json
import sqlite3
import stat
from pathlib import Path

import pytest

from dptext.accounting.events import PrivacyEvent
from dptext.cli.ledger import register as add_commands
from dptext.errors import DPTextError
from dptext.ledger import Ledger

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def run(argv: list[str]) -> int:
    """What ``dptext.cli.main`` does with a registered command module."""
    p = argparse.ArgumentParser(prog="dptext")
    add_commands(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except DPTextError as err:
        print(f"dptext: error: {' '.join(str(err).split())}", file=__import__("sys").stderr)
        return 2


@pytest.fixture
def charged(tmp_path):
    path = tmp_path / "l.sqlite"
    assert run(["ledger", "init", "--ledger", str(path), "--delta", "1e-5"]) == 0
    assert run(["ledger", "budget", "--ledger", str(path), "--owner", "clinic", "--dataset",
                "notes", "--epsilon", "5"]) == 0
    ledger = Ledger(path)
    rid = ledger.open_release(owner="clinic", dataset="notes", mechanism="custext",
                              params={"epsilon": 1})
    ev = [PrivacyEvent("pure", 1.0, count=2)]
    ds = ledger.reserve(rid, [("n1", "Ada Lovelace", ev), ("n2", "Ada Lovelace", ev),
                              ("n3", "Ada Lovelace", ev), ("n4", "Alan Turing", ev)])
    ledger.commit(rid, [ds[0].charge_id, ds[3].charge_id])
    ledger.close()
    return path


def test_init_creates_a_ledger_and_a_private_secret(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    assert run(["ledger", "init", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "delta 1e-06" in out and "l.sqlite.key" in out
    key = tmp_path / "l.sqlite.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert run(["ledger", "init", "--ledger", str(path)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_init_in_the_data_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DPTEXT_LEDGER", raising=False)
    monkeypatch.setenv("DPTEXT_DATA", str(tmp_path / "data"))
    assert run(["ledger", "init"]) == 0
    assert (tmp_path / "data" / "ledger.sqlite").exists()
    assert run(["ledger", "verify"]) == 0
    assert "ledger OK: 0 entries" in capsys.readouterr().out


def test_show_spent_users_budget(charged, capsys):
    capsys.readouterr()
    assert run(["ledger", "show", "Ada Lovelace", "--ledger", str(charged), "--owner",
                "clinic", "--dataset", "notes"]) == 0
    out = capsys.readouterr().out
    # budget 5, charges of 2: the third note is withheld
    assert "epsilon 4, delta 0" in out and "1 released, 1 pending" in out
    assert "remaining  epsilon 1 " in out and "1 withheld" in out
    assert run(["ledger", "show", "Ada Lovelace", "--ledger", str(charged), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["epsilon_basic"], d["records"], d["pending"], d["withheld"]) == (4.0, 1, 1, 1)
    assert d["delta"] == 1e-5 and d["epsilon_pld"] <= 4.0 and len(d["history"]) == 3
    assert run(["ledger", "show", d["unit"], "--hashed", "--ledger", str(charged),
                "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon_basic"] == 4.0

    assert run(["ledger", "users", "--ledger", str(charged), "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(r["epsilon"], r["records"], r["pending"], r["withheld"]) for r in rows] == [
        (4.0, 1, 1, 1), (2.0, 1, 0, 0)]
    assert run(["ledger", "users", "--ledger", str(charged)]) == 0
    assert "Ada" not in capsys.readouterr().out

    assert run(["ledger", "spent", "--ledger", str(charged), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["units"], s["released"], s["pending"], s["max_epsilon"], s["median_epsilon"]) \
        == (2, 2, 1, 4.0, 2.0)
    assert run(["ledger", "spent", "--ledger", str(charged)]) == 0
    assert "budget owner 'clinic' dataset 'notes': epsilon 5" in capsys.readouterr().out

    assert run(["ledger", "budget", "--ledger", str(charged), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"owner": "clinic", "dataset": "notes", "epsilon": 5.0, "delta": 0.0}]
    assert run(["ledger", "budget", "--ledger", str(charged), "--epsilon", "3"]) == 2
    assert "needs --owner and --dataset" in capsys.readouterr().err


def test_export_and_verify(charged, tmp_path, capsys):
    out = tmp_path / "export.jsonl"
    assert run(["ledger", "export", "--ledger", str(charged), "-o", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    assert {e["kind"] for e in lines} == {"budget", "open", "batch", "commit"}
    rows = [c for e in lines if e["kind"] == "batch" for c in e["charges"]]
    assert [c["status"] for c in rows] == ["released", "pending", "withheld", "released"]
    assert all(c["events"] in e["events"] for e in lines if e["kind"] == "batch"
               for c in e["charges"])
    assert "Ada" not in out.read_text()
    assert run(["ledger", "export", "--ledger", str(charged), "-o", "/dev/null"]) == 0
    assert Path("/dev/null").is_char_device()  # written to, not replaced by a rename
    assert run(["ledger", "verify", "--ledger", str(charged)]) == 0
    assert f"ledger OK: {len(lines)} entries" in capsys.readouterr().out
    with sqlite3.connect(charged) as c:
        c.execute("DELETE FROM ledger_entries WHERE seq = 3")
    assert run(["ledger", "verify", "--ledger", str(charged)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entry 3 is missing" in err


def test_commands_never_create_a_ledger(tmp_path, capsys):
    path = tmp_path / "typo.sqlite"
    for cmd in (["show", "x"], ["users"], ["spent"], ["verify"], ["export"],
                ["budget", "--owner", "o", "--dataset", "d", "--epsilon", "1"]):
        assert run(["ledger", *cmd, "--ledger", str(path)]) == 2
        assert "no ledger at" in capsys.readouterr().err
    assert not path.exists()


def test_bad_numbers_are_argparse_errors(charged):
    with pytest.raises(SystemExit):
        run(["ledger", "budget", "--ledger", str(charged), "--owner", "o", "--dataset", "d",
             "--epsilon", "-1"])
    with pytest.raises(SystemExit):
        run(["ledger", "budget", "--ledger", str(charged), "--epsilon", "nan"])
