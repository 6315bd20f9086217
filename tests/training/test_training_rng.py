"""Where the DP training noise and the sampling coins come from (issue 12, "Randomness"): a numpy
Generator - PCG64 from OS entropy by default, ChaCha20 with ``secure_rng`` - never torch's
Mersenne Twister; its state travels in the private checkpoint so that a resumed run continues
it; ``device=`` runs the same code (issue 19 part 4)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from training_jobs import Killed, kill_at, stable, uedp_job, write_users

from dptext.cli.train import register
from dptext.errors import DPTextError
from dptext.rng import generator_state, is_secure, restore_generator, secure_generator
from dptext.training.federated import gaussian_release
from dptext.training.run import STATE_FILE
from dptext.training.tasks import ClassificationTask, classification_rows
from dptext.training.trainer import FederatedTrainer, TrainConfig, aggregate

GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="no CUDA GPU on this machine")


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # one torch thread (conftest.py)


def test_release_noise_is_the_numpy_generators_normals():
    gen = secure_generator(7)
    twin = restore_generator(generator_state(gen))
    total = {"a": torch.zeros(3, 4), "b": torch.ones(5)}
    out = gaussian_release(total, 2.0, 4.0, gen)
    np.testing.assert_allclose(out["a"].numpy(), (2.0 * twin.standard_normal((3, 4))) / 4.0,
                               rtol=1e-6)
    np.testing.assert_allclose(out["b"].numpy(), (1.0 + 2.0 * twin.standard_normal(5)) / 4.0,
                               rtol=1e-6)
    # the generator advanced by exactly what was drawn
    assert gen.random() == twin.random()


def test_secure_noise_has_the_right_standard_deviation():
    zeros = {"w": torch.zeros(1, 200_000)}
    config = TrainConfig(algo="uedp", z=1.5, beta=1.0, q_u=1.0, secure_rng=True)
    std = config.z * config.beta * config.privacy().sensitivity_factor
    out = aggregate(zeros, config, n_users=1, generator=secure_generator())["w"]
    n = out.numel()
    assert float(out.std()) == pytest.approx(std, rel=5 / math.sqrt(2 * n))
    assert abs(float(out.mean())) < 5 * std / math.sqrt(n)


def test_a_torch_generator_is_still_accepted_and_anything_else_refused():
    out = gaussian_release({"w": torch.zeros(10)}, 1.0, 1.0, torch.Generator().manual_seed(0))
    assert out["w"].shape == (10,)
    with pytest.raises(DPTextError, match="numpy or torch Generator"):
        gaussian_release({"w": torch.zeros(10)}, 1.0, 1.0, 3)


def _tiny_trainer(device="cpu", **config):
    from dptext.training.corpus import UserCorpus

    users = ("u0", "u1", "u2", "u3")
    sentences = tuple(f"s{i}" for i in range(8))
    owner = np.arange(8) % 4
    corpus = UserCorpus(users, sentences, owner, (), (), tuple(() for _ in sentences), None)
    g = torch.Generator().manual_seed(3)
    rows = classification_rows(torch.randn(8, 5, generator=g), torch.arange(8) % 3)
    task = ClassificationTask(5, 3, rows[:2])
    cfg = TrainConfig(**{"algo": "userdp", "rounds": 4, "q_u": 0.5, "z": 1.0, "beta": 0.1,
                         "users_per_chunk": 2, **config})
    return FederatedTrainer(corpus, rows, task, cfg, device=device)


@pytest.mark.parametrize("secure", [False, True])
def test_trainer_generators_are_numpy_and_secure_on_request(secure):
    trainer = _tiny_trainer(secure_rng=secure, seed=4)
    assert isinstance(trainer.noise_rng, np.random.Generator)
    assert is_secure(trainer.noise_rng) == secure and is_secure(trainer.rng) == secure
    # seeded: reproducible; the round's noise comes from noise_rng (a copy predicts it)
    again = _tiny_trainer(secure_rng=secure, seed=4)
    twin = restore_generator(generator_state(trainer.noise_rng))
    before = {k: v.clone() for k, v in trainer.params.items()}
    trainer.step()
    again.step()
    assert all(torch.equal(trainer.params[k], again.params[k]) for k in before)
    assert trainer.noise_rng.random() != twin.random()  # the noise advanced the generator


def test_unseeded_secure_trainers_get_fresh_keys():
    a, b = _tiny_trainer(secure_rng=True), _tiny_trainer(secure_rng=True)
    ka = a.noise_rng.bit_generator.state["state"]["keysetup"]
    kb = b.noise_rng.bit_generator.state["state"]["keysetup"]
    assert not np.array_equal(ka, kb)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_trainer_device_runs_the_same_rounds(device):
    ref, other = _tiny_trainer(seed=2), _tiny_trainer(device, seed=2)
    assert all(v.device.type == device for v in other.params.values())
    for _ in range(2):
        a, b = ref.step(), other.step()
        assert a["users"] == b["users"] and a["loss"] == pytest.approx(b["loss"], rel=1e-4)
    state = other.state_dict()
    assert all(v.device.type == "cpu" for v in state["params"].values())


def test_a_state_of_the_other_kind_is_refused():
    state = _tiny_trainer(secure_rng=False, seed=1).state_dict()
    with pytest.raises(DPTextError, match="secure_rng"):
        _tiny_trainer(secure_rng=True, seed=1).load_state_dict(state)


def test_state_dict_round_trips_the_secure_generators_through_torch_load(tmp_path):
    trainer = _tiny_trainer(secure_rng=True)
    trainer.step()
    torch.save(trainer.state_dict(), tmp_path / "s.pt")
    state = torch.load(tmp_path / "s.pt", weights_only=True)
    other = _tiny_trainer(secure_rng=True)
    other.load_state_dict(state)
    trainer.step()
    other.step()
    assert all(torch.equal(trainer.params[k], other.params[k]) for k in trainer.params)


# ----------------------------------------------------------------- TrainJob and CLI
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_users(tmp_path_factory.mktemp("data") / "users.jsonl")


def _job(data, **kw):
    """4 rounds, from the secure generator."""
    return uedp_job(data, **{"rounds": 4, "secure_rng": True, **kw})


@pytest.mark.slow
def test_seeded_secure_run_resumes_bit_for_bit(data, tmp_path):
    whole = _job(data).run(tmp_path / "whole")
    assert whole["noise_generator"] == "ChaCha20 (secure)"
    with pytest.raises(Killed):
        _job(data).run(tmp_path / "cut", on_round=kill_at(3))
    state = torch.load(tmp_path / "cut" / STATE_FILE, weights_only=True)
    assert "ChaCha" in state["trainer"]["noise_rng"]["bit_generator"]
    resumed = _job(data).run(tmp_path / "cut", resume=True)
    assert stable(resumed["rounds"]) == stable(whole["rounds"])
    a = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=True)["params"]
    b = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)["params"]
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_unseeded_secure_run_continues_its_checkpointed_generators(data, tmp_path):
    with pytest.raises(Killed):
        # a public population: the released count of a 12-user corpus can be a fraction of it
        # (the count-release path across a resume: test_training_denominator.py)
        _job(data, seed=None, population=20).run(tmp_path, on_round=kill_at(3))
    before = json.loads((tmp_path / "metrics.json").read_text())
    resumed = _job(data, seed=None, population=20).run(tmp_path, resume=True)
    # round 3 is replayed from the round-2 state: the same coins and noise, hence the same row
    assert stable(resumed["rounds"][:3]) == stable(before["rounds"])


def test_cli_secure_rng_and_device_options(data, tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    base = ["train", "--algo", "userdp", "--data", data, "--rounds", "1", "--q-u", "0.5",
            "--z", "1", "--vocab-size", "300", "--max-len", "10", "--no-progress"]
    args = parser.parse_args(base + ["--output", str(tmp_path / "a"), "--secure-rng",
                                     "--device", "auto"])
    assert args.func(args) == 0
    summary = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert summary["config"]["secure_rng"] is True
    args = parser.parse_args(base + ["--output", str(tmp_path / "b"), "--device", "tpu"])
    with pytest.raises(DPTextError, match="device must be one of") as err:
        args.func(args)
    assert "\n" not in str(err.value) and not (tmp_path / "b").exists()


@pytest.mark.skipif(GPU, reason="checks the error raised without a GPU")
def test_train_on_cuda_without_a_gpu_is_a_one_line_error(data, tmp_path):
    with pytest.raises(DPTextError, match="no CUDA GPU") as err:
        _job(data, device="cuda").run(tmp_path)
    assert "\n" not in str(err.value)


@needs_gpu
def test_training_on_the_gpu_matches_the_cpu(data, tmp_path):
    cpu = _job(data, rounds=2).run(tmp_path / "cpu")
    gpu = _job(data, rounds=2, device="cuda").run(tmp_path / "gpu")
    for a, b in zip(cpu["rounds"], gpu["rounds"], strict=True):
        assert a["users"] == b["users"] and a["loss"] == pytest.approx(b["loss"], rel=1e-3)
