"""`dptext train` checkpoints and --resume (issue 12, "Interruption"): a run killed after a
checkpoint and resumed gives the parameters and metrics of the uninterrupted seeded run, bit for
bit; metrics.json always holds the epsilon spent so far; the private training state (it holds
the noise generator's state) is owner-only, never in the released checkpoint, and deleted when
the run completes."""

from __future__ import annotations

import json
import stat

import pytest
import torch
from training_jobs import Killed, kill_at, stable, uedp_job, write_users

from dptext.cli import main
from dptext.errors import DPTextError
from dptext.training.run import STATE_FILE

# one torch thread (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_users(tmp_path_factory.mktemp("data") / "users.jsonl")


def test_resumed_run_equals_the_uninterrupted_run(data, tmp_path):
    whole = uedp_job(data).run(tmp_path / "whole")
    with pytest.raises(Killed):
        uedp_job(data).run(tmp_path / "cut", on_round=kill_at(3))
    cut = tmp_path / "cut"
    so_far = json.loads((cut / "metrics.json").read_text())
    assert not so_far["completed"] and [r["round"] for r in so_far["rounds"]] == [1, 2, 3]
    assert so_far["privacy"]["epsilon_spent"] == pytest.approx(so_far["rounds"][-1]["epsilon"])
    assert so_far["privacy"]["rounds_composed"] == 3
    state = cut / STATE_FILE
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    model = torch.load(cut / "checkpoint.pt", weights_only=True)
    assert model["round"] == 2 and "noise_rng" not in str(model.keys())
    resumed = uedp_job(data).run(cut, resume=True)
    assert stable(resumed["rounds"]) == stable(whole["rounds"])
    a = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=True)
    b = torch.load(cut / "checkpoint.pt", weights_only=True)
    assert a["round"] == b["round"] == 5
    assert all(torch.equal(a["params"][k], b["params"][k]) for k in a["params"])
    assert not state.exists() and json.loads((cut / "metrics.json").read_text())["completed"]


def test_unseeded_run_resumes_with_its_private_seed(data, tmp_path):
    with pytest.raises(Killed):
        uedp_job(data, seed=None, rounds=3, population=20).run(tmp_path, on_round=kill_at(3))
    saved = torch.load(tmp_path / STATE_FILE, weights_only=True)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["config"]["seed"] is None  # the drawn seed is not published
    assert str(saved["seed"]) not in (tmp_path / "metrics.json").read_text()
    resumed = uedp_job(data, seed=None, rounds=3, population=20).run(tmp_path, resume=True)
    # rounds 1-2 come from the checkpoint; round 3 is replayed with the same generators
    assert stable(resumed["rounds"][:2]) == stable(metrics["rounds"][:2])
    assert stable(resumed["rounds"]) == stable(metrics["rounds"])


def test_resume_refuses_other_settings_missing_state_and_stale_state(data, tmp_path):
    with pytest.raises(Killed):
        uedp_job(data).run(tmp_path, on_round=kill_at(3))
    with pytest.raises(DPTextError, match="q_u"):
        uedp_job(data, q_u=0.4).run(tmp_path, resume=True)
    with pytest.raises(DPTextError, match="unfinished run"):
        uedp_job(data).run(tmp_path)  # a fresh run would silently drop the checkpoint
    with pytest.raises(DPTextError, match="no unfinished run"):
        uedp_job(data).run(tmp_path / "elsewhere", resume=True)
    # more rounds than before: allowed (the same noise multiplier, a longer run)
    longer = uedp_job(data, rounds=6).run(tmp_path, resume=True)
    assert [r["round"] for r in longer["rounds"]] == [1, 2, 3, 4, 5, 6]


def test_cli_resume(data, tmp_path, capsys):
    argv = ["train", "--algo", "userdp", "--data", data, "--output", str(tmp_path),
            "--rounds", "2", "--q-u", "0.5", "--z", "1", "--vocab-size", "300", "--max-len",
            "10", "--seed", "1", "--no-progress", "--checkpoint-every", "1"]
    assert main(argv + ["--resume"]) == 2
    assert "no unfinished run" in capsys.readouterr().err
    assert main(argv) == 0
    assert not (tmp_path / STATE_FILE).exists()
