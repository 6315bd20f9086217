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

from dptext.cli import main
from dptext.errors import DPTextError
from dptext.training.run import STATE_FILE, TrainJob

TEXTS = [
    "Alice Smith moved to Boston last year. She likes the city and the people.",
    "The weather is good today. I will walk to the park with my dog.",
    "Microsoft hired Bob Jones in London. He works on new products.",
    "We had dinner at home. The food was very good and the time was nice.",
]


@pytest.fixture(scope="module", autouse=True)
def _single_thread(one_torch_thread):
    """One torch thread (tests/conftest.py)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "users.jsonl"
    rows = [{"user": f"u{i}", "text": TEXTS[(i + j) % 4]} for i in range(12) for j in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _job(data, **kw):
    base = dict(algo="uedp", data=data, rounds=5, z=1.0, q_u=0.5, q_e=0.5, q_s=0.5,
                vocab_size=300, max_len=10, seed=0, checkpoint_every=2,
                categories=["PERSON", "GPE", "ORG"])
    return TrainJob(**{**base, **kw})


class Killed(Exception):
    pass


def _kill_at(round_number):
    def on_round(row):
        if row["round"] == round_number:
            raise Killed
    return on_round


def _stable(rows):
    return [{k: v for k, v in r.items() if k not in ("seconds", "eval_seconds")} for r in rows]


def test_resumed_run_equals_the_uninterrupted_run(data, tmp_path):
    whole = _job(data).run(tmp_path / "whole")
    with pytest.raises(Killed):
        _job(data).run(tmp_path / "cut", on_round=_kill_at(3))
    cut = tmp_path / "cut"
    so_far = json.loads((cut / "metrics.json").read_text())
    assert not so_far["completed"] and [r["round"] for r in so_far["rounds"]] == [1, 2, 3]
    assert so_far["privacy"]["epsilon_spent"] == pytest.approx(so_far["rounds"][-1]["epsilon"])
    assert so_far["privacy"]["rounds_composed"] == 3
    state = cut / STATE_FILE
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    model = torch.load(cut / "checkpoint.pt", weights_only=True)
    assert model["round"] == 2 and "noise_rng" not in str(model.keys())
    resumed = _job(data).run(cut, resume=True)
    assert _stable(resumed["rounds"]) == _stable(whole["rounds"])
    a = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=True)
    b = torch.load(cut / "checkpoint.pt", weights_only=True)
    assert a["round"] == b["round"] == 5
    assert all(torch.equal(a["params"][k], b["params"][k]) for k in a["params"])
    assert not state.exists() and json.loads((cut / "metrics.json").read_text())["completed"]


def test_unseeded_run_resumes_with_its_private_seed(data, tmp_path):
    with pytest.raises(Killed):
        _job(data, seed=None, rounds=3).run(tmp_path, on_round=_kill_at(3))
    saved = torch.load(tmp_path / STATE_FILE, weights_only=True)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["config"]["seed"] is None  # the drawn seed is not published
    assert str(saved["seed"]) not in (tmp_path / "metrics.json").read_text()
    resumed = _job(data, seed=None, rounds=3).run(tmp_path, resume=True)
    # rounds 1-2 come from the checkpoint; round 3 is replayed with the same generators
    assert _stable(resumed["rounds"][:2]) == _stable(metrics["rounds"][:2])
    assert _stable(resumed["rounds"]) == _stable(metrics["rounds"])


def test_resume_refuses_other_settings_missing_state_and_stale_state(data, tmp_path):
    with pytest.raises(Killed):
        _job(data).run(tmp_path, on_round=_kill_at(3))
    with pytest.raises(DPTextError, match="q_u"):
        _job(data, q_u=0.4).run(tmp_path, resume=True)
    with pytest.raises(DPTextError, match="unfinished run"):
        _job(data).run(tmp_path)  # a fresh run would silently drop the checkpoint
    with pytest.raises(DPTextError, match="no unfinished run"):
        _job(data).run(tmp_path / "elsewhere", resume=True)
    # more rounds than before: allowed (the same noise multiplier, a longer run)
    longer = _job(data, rounds=6).run(tmp_path, resume=True)
    assert [r["round"] for r in longer["rounds"]] == [1, 2, 3, 4, 5, 6]


def test_cli_resume(data, tmp_path, capsys):
    argv = ["train", "--algo", "userdp", "--data", data, "--output", str(tmp_path),
            "--rounds", "2", "--q-u", "0.5", "--z", "1", "--vocab-size", "300", "--max-len",
            "10", "--seed", "1", "--no-progress", "--checkpoint-every", "1"]
    assert main(argv + ["--resume"]) == 2
    assert "no unfinished run" in capsys.readouterr().err
    assert main(argv) == 0
    assert not (tmp_path / STATE_FILE).exists()
