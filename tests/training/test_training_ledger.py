"""`dptext train --ledger`: every training user is charged the run's (epsilon, delta) before
any model is written; a budget that one run would exceed stops it before it trains."""

from __future__ import annotations

import json

import pytest

from dptext.cli import main
from dptext.ledger import Ledger

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


@pytest.fixture()
def corpus_file(tmp_path):
    path = tmp_path / "users.jsonl"
    rows = [{"user": f"u{i}", "text": "The dog ran home. It was late and the night was cold."}
            for i in range(10) for _ in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _train(corpus_file, out, ledger, *extra):
    return main(["train", "--algo", "userdp", "--data", str(corpus_file), "--rounds", "2",
                 "--z", "1.5", "--q-u", "0.5", "--vocab-size", "100", "--max-len", "8",
                 "--seed", "0", "--no-progress", "--output", str(out), "--ledger", str(ledger),
                 "--owner", "lab", "--dataset", "forum", *extra])


def test_train_charges_every_training_user_once(corpus_file, tmp_path, capsys):
    ledger_path = tmp_path / "l.sqlite"
    Ledger(str(ledger_path)).close()
    assert _train(corpus_file, tmp_path / "run", ledger_path) == 0
    summary = json.loads((tmp_path / "run" / "metrics.json").read_text())
    charged = summary["ledger"]
    eps = summary["rounds"][-1]["epsilon"]
    assert charged["epsilon"] == pytest.approx(eps) and charged["users_charged"] == summary["users"]
    ledger = Ledger(str(ledger_path))
    spent = [ledger.spent(f"u{i}", owner="lab", dataset="forum") for i in range(10)]
    trained = [s for s in spent if s.records]
    assert len(trained) == summary["users"]  # the held-out users are not charged
    assert all(s.epsilon_basic == pytest.approx(eps, rel=1e-6) for s in trained)
    assert "charged" in capsys.readouterr().err


def test_a_budget_the_run_would_exceed_stops_it_before_training(corpus_file, tmp_path, capsys):
    ledger_path = tmp_path / "l.sqlite"
    ledger = Ledger(str(ledger_path))
    ledger.set_budget("lab", "forum", 0.01, 1e-3)
    code = _train(corpus_file, tmp_path / "run", ledger_path)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "would exceed their budget" in err and "nothing was trained" in err
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    assert all(ledger.spent(f"u{i}", owner="lab", dataset="forum").records == 0
               for i in range(10))


def test_a_run_without_a_guarantee_cannot_be_charged(corpus_file, tmp_path, capsys):
    code = main(["train", "--algo", "noiseless", "--data", str(corpus_file), "--rounds", "1",
                 "--output", str(tmp_path / "o"), "--ledger", str(tmp_path / "l.sqlite")])
    assert code == 2 and "no DP guarantee" in capsys.readouterr().err


def test_a_rerun_after_completion_is_charged_again(corpus_file, tmp_path):
    """Issue 32 (item 1, training): the release key was the run's fingerprint, so the same
    command after a completed run reopened its release, every user was 'already' charged
    and the new model left uncharged."""
    ledger_path = tmp_path / "l.sqlite"
    Ledger(str(ledger_path)).close()
    assert _train(corpus_file, tmp_path / "run", ledger_path) == 0
    first = json.loads((tmp_path / "run" / "metrics.json").read_text())
    eps = first["ledger"]["epsilon"]
    assert _train(corpus_file, tmp_path / "run", ledger_path) == 0
    second = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert second["ledger"]["release_id"] != first["ledger"]["release_id"]
    assert "release_key" not in second["ledger"]
    ledger = Ledger(str(ledger_path))
    trained = [s for s in (ledger.spent(f"u{i}", owner="lab", dataset="forum")
                           for i in range(10)) if s.records]
    assert len(trained) == first["users"]
    assert all(s.epsilon_basic == pytest.approx(2 * eps, rel=1e-6) and s.records == 2
               for s in trained)


def test_a_resumed_run_continues_its_release(tmp_path):
    """The other side of the rerun fix: a run killed after a checkpoint and resumed is one
    release, each user charged once (the key is kept in the private state file)."""
    from training_jobs import Killed, kill_at, write_users

    from dptext.training.run import TrainJob

    data = write_users(tmp_path / "users.jsonl")
    ledger_path = tmp_path / "l.sqlite"
    Ledger(str(ledger_path)).close()

    def job():
        return TrainJob(algo="userdp", data=data, rounds=3, z=1.5, q_u=0.5, vocab_size=100,
                        max_len=8, seed=0, checkpoint_every=1, ledger=str(ledger_path),
                        owner="lab", ledger_dataset="forum")

    with pytest.raises(Killed):
        job().run(tmp_path / "run", on_round=kill_at(2))
    done = job().run(tmp_path / "run", resume=True)
    ledger = Ledger(str(ledger_path))
    assert len(ledger.releases()) == 1
    trained = [s for s in (ledger.spent(f"u{i}", owner="lab", dataset="forum")
                           for i in range(12)) if s.records]
    assert len(trained) == done["users"] and all(s.records == 1 for s in trained)
